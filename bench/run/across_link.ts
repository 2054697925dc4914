/**
 * `lab bench --link SPEC`: one benchmark run across an emulated link. It
 * opens the link once, serves every transport from one `lab serve` in the
 * link's server namespace, runs `lab bench --target …` for each transport in
 * the client namespace, and merges the per-transport runs into one record
 * whose config names the link (spec, configured values, relay counters).
 *
 * The children learn about the link through two environment variables (see
 * {@linkcode linkContextFromEnv}): the link record, and the relay's pid so
 * `--scenario migration` can ask the relay to move the client to a new port.
 * Floors are skipped: the link's configured delay dominates every row, and
 * `lab link selftest` measures the link itself.
 */
import { openLink } from "../../linkemu/link.ts";
import { configuredRttMs, formatLinkSpec, type LinkSpec } from "../../linkemu/link_spec.ts";
import type { Link, LinkBackend } from "../../linkemu/link.ts";
import type { RelayStats } from "../../linkemu/relay.ts";
import { DEV_PKI_FILES } from "../../transports/pki.ts";
import type { TransportName } from "../../transports/types.ts";
import { collectEnvironment } from "../measure/environment.ts";
import type { BenchOptions } from "./options.ts";
import {
  type BenchRun,
  type LinkRecord,
  parseRun,
  type ResultRow,
  SCHEMA_VERSION,
} from "../record/schema.ts";
import { labCommand, startLabServe } from "../../lib/lab_serve.ts";

/** Environment variable holding the JSON link record a child run crosses. */
export const LINK_RECORD_ENV = "SBILAB_LINK_RECORD";
/** Environment variable holding the link relay's pid (for `migration`, and its CPU). */
export const LINK_RELAY_PID_ENV = "SBILAB_LINK_RELAY_PID";
/** Environment variable holding the pid of the `lab serve` across the link (for its CPU). */
export const LINK_SERVER_PID_ENV = "SBILAB_LINK_SERVER_PID";

/** Options of {@linkcode runBenchAcrossLink}: those of `runBench` plus the link's. */
export interface AcrossLinkOptions extends BenchOptions {
  /** The spec as the user wrote it (recorded as is). Default: the formatted spec. */
  specText?: string;
  /** `relay`, `netem` or `veth` (plain veth, no impairment). Default `relay`. */
  backend?: LinkBackend;
  /** MTU of both ends of the link, in bytes. Default: the backend's (1500). */
  mtu?: number;
  /** How to start `lab` (argv prefix). Default: this Deno running the repository's `main.ts`. */
  lab?: string[];
  /** Kill a per-transport child after this many ms. Default 900000 (15 min). */
  childTimeoutMs?: number;
  /** Each line a child writes on stderr (its progress lines among them), as it comes. */
  onChildLine?: (line: string) => void;
}

/** Reads a stream's lines as they come, handing each to `onLine`; resolves with all the text. */
async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<string> {
  let all = "";
  let pending = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    all += chunk;
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const l of lines) onLine(l);
  }
  if (pending) onLine(pending);
  return all;
}

/** The link record of a spec (pure). */
export function linkRecord(
  spec: LinkSpec,
  specText: string,
  backend: LinkBackend,
  mtu?: number,
): LinkRecord {
  const dir = (d: LinkSpec["up"]) => ({
    delayMs: d.delayMs,
    jitterMs: d.jitterMs,
    loss: d.loss,
    burst: d.burst,
    rateBps: d.rateBps,
    queue: d.queue,
    reorder: d.reorder,
    dup: d.dup,
  });
  return {
    spec: specText,
    resolved: formatLinkSpec(spec),
    backend,
    mtu,
    rttMs: configuredRttMs(spec),
    up: dir(spec.up),
    down: dir(spec.down),
    blackhole: spec.blackhole ? { ...spec.blackhole } : undefined,
  };
}

/** What a child `lab bench` learns from its environment: the link it crosses and how to rebind. */
export function linkContextFromEnv(): Pick<BenchOptions, "link" | "rebind"> {
  const out: Pick<BenchOptions, "link" | "rebind"> = {};
  const record = Deno.env.get(LINK_RECORD_ENV);
  if (record) {
    try {
      out.link = JSON.parse(record) as LinkRecord;
    } catch {
      throw new SyntaxError(`${LINK_RECORD_ENV} is not valid JSON`);
    }
  }
  const pid = Number(Deno.env.get(LINK_RELAY_PID_ENV));
  if (Number.isInteger(pid) && pid > 1) {
    out.rebind = () => {
      Deno.kill(pid, "SIGUSR2");
      return Promise.resolve();
    };
  }
  return out;
}

/** The `lab bench` arguments a child gets for the options the user gave. */
export function childArgs(
  options: BenchOptions,
  transport: TransportName | TransportName[],
  url: string,
  json: string,
  ca?: string,
): string[] {
  const args = [
    "bench",
    "--scenario",
    options.scenario ?? "rtt",
    "--target",
    url,
    "--transports",
    [transport].flat().join(","),
  ];
  if (options.schedule) args.push("--schedule", options.schedule);
  if (options.seed !== undefined) args.push("--seed", String(options.seed));
  if (options.rounds !== undefined) args.push("--rounds", String(options.rounds));
  if (options.stack) args.push("--stack", options.stack);
  if (ca) args.push("--ca", ca);
  if (options.sizes) args.push("--sizes", options.sizes.join(","));
  if (options.warmupMs !== undefined) args.push("--warm-up", String(options.warmupMs / 1000));
  if (options.sampleMs !== undefined) args.push("--time", String(options.sampleMs / 1000));
  if (options.samples !== undefined) args.push("--samples", String(options.samples));
  if (options.quick) args.push("--quick");
  if (options.rate !== undefined) args.push("--rate", String(options.rate));
  if (options.concurrency) args.push("--concurrency", options.concurrency.join(","));
  if (options.streams !== undefined) args.push("--streams", String(options.streams));
  if (options.flows) args.push("--flows", options.flows.join(","));
  if (options.engine) args.push("--engine", options.engine);
  if (options.p99BoundMs !== undefined) args.push("--p99", String(options.p99BoundMs));
  args.push("--no-floors", "--no-charts", "--json", json);
  return args;
}

function countersOf(stats: RelayStats | undefined): LinkRecord["counters"] {
  if (!stats) return undefined;
  const c = (d: RelayStats["up"]) => ({
    in: d.in,
    out: d.out,
    dropLoss: d.dropLoss,
    dropQueue: d.dropQueue,
    dropBlackhole: d.dropBlackhole,
  });
  return { up: c(stats.up), down: c(stats.down) };
}

/**
 * Runs the benchmark across a link opened for `spec` and returns one merged
 * run. A transport whose child run fails is left out with a note; when every
 * transport fails the error of the first is thrown. Needs root.
 */
export async function runBenchAcrossLink(
  spec: LinkSpec,
  options: AcrossLinkOptions = {},
): Promise<BenchRun> {
  if (options.target) throw new RangeError("--link and --target exclude each other");
  if (options.inProcess) throw new RangeError("--link and --in-process exclude each other");
  if (options.scenario === "peers") throw new RangeError("The peers scenario cannot cross a link");
  const wallStart = Date.now();
  const backend = options.backend ?? "relay";
  const specText = options.specText ?? formatLinkSpec(spec);
  const record = linkRecord(spec, specText, backend, options.mtu);
  if (options.scenario === "migration" && backend !== "relay") {
    throw new RangeError(
      "The migration scenario needs --link-backend relay (it rebinds the client's port)",
    );
  }
  const { availableTransports, resolveStack } = await import("../../transports/mod.ts");
  const stack = resolveStack(options.stack);
  const transports = options.transports ?? await availableTransports(stack);
  const lab = options.lab ?? labCommand();
  const progress = options.onProgress ?? (() => {});
  const children: ChildRuns = { runs: [], rows: [], notes: [] };
  const tmp = await Deno.makeTempDir({ prefix: "sbilab-bench-link-" });
  // Ctrl-C: the interrupt closes the link and ends the process; this removes the files at exit.
  const removeTmp = () => {
    try {
      Deno.removeSync(tmp, { recursive: true });
    } catch { /* already gone */ }
  };
  globalThis.addEventListener("unload", removeTmp);
  let counters: LinkRecord["counters"];
  try {
    progress(`opening link ${specText}`, 0);
    await using link = await openLink(spec, { backend, mtu: options.mtu });
    // Serves in the link's server namespace; the link kills it when it closes.
    const { urls, pid: serverPid } = await startLabServe({
      transports,
      stack,
      host: link.serverAddr,
      stateDir: tmp,
      delayMs: options.delayMs,
      h3ExactEcn: false,
    }, {
      lab,
      timeoutMs: 60_000,
      spawn: (argv) =>
        link.exec("server", argv, { stdin: "null", stdout: "piped", stderr: "piped" }),
    }).catch((err) => {
      throw new Error(`In the link's server namespace: ${err.message}`, { cause: err });
    });
    const env: Record<string, string> = { [LINK_RECORD_ENV]: JSON.stringify(record) };
    if (link.relayPid) env[LINK_RELAY_PID_ENV] = String(link.relayPid);
    env[LINK_SERVER_PID_ENV] = String(serverPid);
    // flows interleaves its transports inside one child: one child for all, one target list.
    const together = options.scenario === "flows" && options.schedule !== "sequential";
    const groups: TransportName[][] = together ? [transports] : transports.map((t) => [t]);
    for (const [i, group] of groups.entries()) {
      if (options.signal?.aborted) break;
      progress(`${group.join(",")} across ${specText}`, i / groups.length);
      await runChild({ link, lab, options, urls, tmp, env }, group, children);
    }
    counters = countersOf(await link.stats());
  } finally {
    globalThis.removeEventListener("unload", removeTmp);
    removeTmp();
  }
  return await mergedRun(children, { wallStart, transports, record, counters, specText }, options);
}

/** What the child runs across the link gave: their runs, rows and notes, and the first failure. */
interface ChildRuns {
  runs: BenchRun[];
  rows: ResultRow[];
  notes: string[];
  firstError?: Error;
}

/** What every child run shares: the open link, how to start `lab`, the servers and the files. */
interface ChildSetting {
  link: Link;
  lab: string[];
  options: AcrossLinkOptions;
  urls: Partial<Record<TransportName, string>>;
  tmp: string;
  env: Record<string, string>;
}

/** Runs `lab bench --target` for `group` in the client namespace and adds what it gave to `out`. */
async function runChild(
  setting: ChildSetting,
  group: TransportName[],
  out: ChildRuns,
): Promise<void> {
  const { link, lab, options, urls, tmp, env } = setting;
  const transport = group.join(",");
  const json = `${tmp}/${group.join("_")}.json`;
  const ca = group.every((t) => t === "h2c") ? undefined : `${tmp}/${DEV_PKI_FILES.ca}`;
  const target = group.length === 1
    ? urls[group[0]]!
    : group.map((t) => `${t}=${urls[t]}`).join(",");
  const child = link.exec("client", [
    ...lab,
    ...childArgs(options, group, target, json, ca),
  ], {
    env,
    stdout: "null",
    stderr: "piped",
  });
  const killer = setTimeout(() => child.kill("SIGKILL"), options.childTimeoutMs ?? 900_000);
  // Each line as it comes (the study reads the child's progress from it), all of it for errors.
  const stderr = readLines(child.stderr, options.onChildLine ?? (() => {}));
  const [status, errText] = await Promise.all([child.status, stderr]).finally(() =>
    clearTimeout(killer)
  );
  const result = { success: status.success, code: status.code, signal: status.signal };
  if (!result.success) {
    const lines = errText.trim().split("\n");
    const why = (lines.at(-1) || `exit ${result.code ?? result.signal}`).replace(/^error: /, "");
    out.firstError ??= new Error(`${transport} across the link failed: ${why}`);
    out.notes.push(`${transport} was not measured: its run across the link failed (${why}).`);
    return;
  }
  const run = parseRun(await Deno.readTextFile(json), `${transport} run`);
  out.runs.push(run);
  for (const row of run.rows) {
    out.rows.push(row);
    options.onRow?.(row);
  }
  for (const n of run.notes) if (!out.notes.includes(n)) out.notes.push(n);
}

/** What the merged record takes beside the child runs. */
interface MergeParts {
  wallStart: number;
  transports: TransportName[];
  record: LinkRecord;
  counters: LinkRecord["counters"];
  specText: string;
}

/** One run record of the child runs, its config naming the link. */
async function mergedRun(
  children: ChildRuns,
  parts: MergeParts,
  options: AcrossLinkOptions,
): Promise<BenchRun> {
  const { runs, rows, notes, firstError } = children;
  const { wallStart, transports, record, counters, specText } = parts;
  if (runs.length === 0) throw firstError ?? new Error("No transport was measured across the link");
  if (options.signal?.aborted) notes.push("The run was interrupted; rows may be incomplete.");
  const base = runs[0];
  const connections: BenchRun["connections"] = {};
  for (const r of runs) Object.assign(connections, r.connections ?? {});
  return {
    schema: SCHEMA_VERSION,
    startedAt: new Date(wallStart).toISOString(),
    durationMs: Date.now() - wallStart,
    config: {
      ...base.config,
      transports,
      serverMode: "link",
      target: undefined,
      delayMs: options.delayMs ?? 0,
      link: { ...record, counters },
    },
    environment: await collectEnvironment(),
    floors: {
      rows: [],
      skipped: `Floors were skipped: the run crossed the emulated link ${specText} ` +
        `(configured RTT ${record.rttMs} ms); lab link selftest --link ${specText} measures the link itself.`,
    },
    rows,
    connections,
    notes,
  };
}
