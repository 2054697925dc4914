/**
 * `lab load`: h2load-style load from the native engines (h2c and h3), with
 * h2load's and oha's flags (defined in `load_options.ts`): check, run,
 * summarise, record, judge.
 */
import type { Command } from "commander";
import {
  asUsage,
  checkOutputPaths,
  exclusive,
  parseDuration,
  parseHeader,
  parseInteger,
  UsageError,
} from "./args.ts";
import {
  LOAD_EXIT_HELP,
  type LoadFlags,
  loadShape,
  parseStartAt,
  whichShard,
  withLoadOptions,
} from "./load_options.ts";
import {
  formatProgressLine,
  loadOutcome,
  renderLatencyHistogram,
  renderLoadSummary,
} from "../load/report.ts";
import {
  LOAD_SCHEMA,
  LoadEngine,
  type LoadPlan,
  type LoadProgress,
  type LoadRecord,
  type LoadResult,
  type LoadTarget,
  loadTarget,
  type ShardId,
  shardIntervalLog,
  shardLabel,
  shardPlan,
} from "../load/mod.ts";
import { clockEstimate } from "../lib/clock.ts";
import { createProgressLines } from "../lib/progress_lines.ts";
import { formatStatusCounts, parseStatusSet, type StatusSet } from "../lib/status_set.ts";
import { formatRate } from "../lib/units.ts";
import { raiseFdLimit } from "../transports/fd_limit.ts";
import { RequestError } from "./request_error.ts";
import { Interrupted } from "../lib/interrupt.ts";

/** Lines around the run record `--record-to-log` prints (`lab k8s collect` reads them). */
export const RECORD_BEGIN = "----- sbilab load record begin -----";
export const RECORD_END = "----- sbilab load record end -----";

const wallNow = () => performance.timeOrigin + performance.now();

async function readBody(data: string | undefined): Promise<Uint8Array | undefined> {
  if (data === undefined) return undefined;
  if (!data.startsWith("@")) return new TextEncoder().encode(data);
  try {
    return await Deno.readFile(data.slice(1));
  } catch {
    throw new UsageError(`Cannot read ${data.slice(1)}`);
  }
}

/** The target of `lab load`'s URL and flags; a bad URL or host fails as curl would (3, 6). */
async function targetOf(urlText: string, f: LoadFlags): Promise<LoadTarget> {
  const headers: Record<string, string> = {};
  for (const h of f.header) {
    const [name, value] = parseHeader(h);
    headers[name] = value;
  }
  const timeoutMs = parseDuration(f.timeout, "--timeout", { minMs: 1, maxMs: 3_600_000 });
  try {
    return await loadTarget(urlText, {
      h3: f.h3,
      method: f.method,
      headers,
      body: await readBody(f.data),
      nfType: f.nfType,
      timeoutMs,
    });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const msg = (err as Error).message;
    // curl's statuses: an unresolvable host 6, a malformed URL 3; a flag combination is usage
    if (/^Cannot resolve/.test(msg)) throw new RequestError("resolve", msg, { cause: err });
    if (/--h3/.test(msg)) throw new UsageError(msg);
    throw new RequestError("url", msg, { cause: err });
  }
}

/** The bytes of a PEM file given by a flag (undefined when not given); unreadable is usage. */
async function readPem(file: string | undefined): Promise<Uint8Array | undefined> {
  if (file === undefined) return undefined;
  try {
    return await Deno.readFile(file);
  } catch {
    throw new UsageError(`Cannot read ${file}`);
  }
}

/** A checked `lab load` run: what the engine runs and what the summary, record and exit need. */
interface LoadRun {
  /** The load's shape as the flags give it (the whole load, before sharding). */
  plan: Partial<LoadPlan>;
  /** What the engine runs: target, shape and TLS material, this shard's share when sharded. */
  full: LoadPlan;
  /** The statuses that count as a success. */
  ok: StatusSet;
  /** Failed or errored requests tolerated. */
  maxFailures: number;
  /** This run's shard, if any. */
  shard: ShardId | undefined;
  /** Wall-clock start of the measured phase (ms since the epoch), or null to start at once. */
  startAtMs: number | null;
  /** `h2c`, `h2-tls` or `h3`. */
  transport: string;
  /** The open loop's planned measured sends; undefined for a closed loop. */
  planned: number | undefined;
}

/**
 * Checks `lab load`'s URL and flags into a run, in the order a user meets
 * them (shape, TLS flags, statuses, output paths, target, shard, open files);
 * throws `UsageError` or `RequestError`.
 */
async function planLoad(urlText: string, f: LoadFlags): Promise<LoadRun> {
  const plan = loadShape(f);
  if (f.ca && f.insecure) throw exclusive("--ca", "-k");
  const ok = asUsage(() => parseStatusSet(f.ok), "--ok");
  const maxFailures = parseInteger(f.maxFailures, "--max-failures");
  await checkOutputPaths({ "--json": f.json });
  const target = await targetOf(urlText, f);
  if ((f.cert === undefined) !== (f.key === undefined)) {
    throw new UsageError("--cert and --key go together (mutual TLS)");
  }
  if (f.cert && !target.tls && target.protocol === "h2") {
    throw new UsageError("--cert needs TLS: an https:// URL");
  }
  const [caPem, certPem, keyPem] = [
    await readPem(f.ca),
    await readPem(f.cert),
    await readPem(f.key),
  ];
  const whole: LoadPlan = {
    ...target,
    ...plan,
    caPem,
    ...(certPem ? { certPem, keyPem } : {}),
    insecure: f.insecure ?? false,
  } as LoadPlan;
  const shard = whichShard(f);
  let full = whole;
  if (shard) {
    try {
      full = shardPlan(whole, shard);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (full.requests !== undefined && full.requests < full.connections!) {
    throw new UsageError(
      shard
        ? `shard ${
          shardLabel(shard)
        } gets ${full.requests} requests for ${full.connections} connections: every connection needs at least one request`
        : `-n ${full.requests} is below -c ${full.connections}: every connection needs at least one request`,
    );
  }
  const startAtMs = f.startAt !== undefined ? parseStartAt(f.startAt) : null;
  fitOpenFiles(full.connections ?? 1, full.protocol);
  const transport = full.protocol === "h3" ? "h3" : full.tls ? "h2-tls" : "h2c";
  // an open loop by duration plans rate × duration measured sends
  const planned = full.rate && full.durationMs !== undefined
    ? Math.floor(full.rate * full.durationMs / 1000)
    : full.rate && full.requests !== undefined
    ? full.requests
    : undefined;
  return { plan, full, ok, maxFailures, shard, startAtMs, transport, planned };
}

/**
 * Runs the engine until the plan is done or Ctrl-C, showing progress (a live
 * line on a terminal, else progress: lines) unless `--no-progress`; returns
 * the result and the wall-clock time the engine started.
 */
async function driveEngine(
  run: LoadRun,
  f: LoadFlags,
): Promise<{ result: LoadResult; t0: number }> {
  const { full, startAtMs } = run;
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  const shown = f.progress !== false && !f.quiet;
  const live = shown && Deno.stderr.isTerminal();
  // not on a terminal: progress: lines (the share of the planned requests or time)
  const lines = shown && !live ? createProgressLines({ rowName: "phase" }) : undefined;
  // progress: the share of planned requests, or of the planned time (never past 100 %)
  const share = full.requests !== undefined
    ? (p: LoadProgress) => p.completed / full.requests!
    : (p: LoadProgress) => p.elapsedNs / 1e6 / ((full.warmupMs ?? 0) + (full.durationMs ?? 1));
  const what = `${run.transport} ${run.plan.connections}×${full.streams}`;
  const behind = full.rate ? behindSchedule(full.rate) : undefined;
  const enc = new TextEncoder();
  let previous: LoadProgress | undefined;
  let lastDraw = 0;
  let result;
  let t0 = 0;
  try {
    using engine = await LoadEngine.create(full);
    if (startAtMs !== null) {
      // warm up just before the planned start, so the measured phase begins at it
      const at = startAtMs - (full.warmupMs ?? 0);
      // a timer may fire a fraction of a ms early: never start before the planned time
      while (wallNow() < at && !controller.signal.aborted) {
        await abortableSleep(Math.ceil(at - wallNow()), controller.signal);
      }
    }
    t0 = wallNow();
    engine.start();
    result = await engine.run({
      signal: controller.signal,
      onProgress: (p: LoadProgress) => {
        const late = behind?.(p);
        if (late) {
          if (live) Deno.stderr.writeSync(enc.encode("\r\x1b[2K"));
          console.error(late);
        }
        if (lines && (p.phase === "warm-up" || p.phase === "measure" || p.phase === "drain")) {
          lines.update(`${what}, ${p.phase}`, Math.min(1, share(p)));
        } else if (live) {
          if (p.elapsedNs - lastDraw < 250e6 && p.phase !== "done") return;
          lastDraw = p.elapsedNs;
          Deno.stderr.writeSync(enc.encode(`\r\x1b[2K${formatProgressLine(p, previous)}`));
          previous = p;
        }
      },
    });
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    if (live) Deno.stderr.writeSync(enc.encode("\r\x1b[2K"));
    lines?.stop(result !== undefined && !result.partial);
  }
  return { result, t0 };
}

/** The run record `--json` saves and `--record-to-log` prints (with the shard's window and clock). */
function loadRecord(
  urlText: string,
  run: LoadRun,
  result: LoadResult,
  outcome: ReturnType<typeof loadOutcome>,
  t0: number,
): LoadRecord {
  const { full, shard } = run;
  const startMs = t0 + (full.warmupMs ?? 0);
  const window = { startMs, endMs: startMs + result.measuredNs / 1e6 };
  return {
    schema: LOAD_SCHEMA,
    url: urlText,
    engine: "native",
    plan: {
      ...loadShapeOf(full),
      requests: full.requests,
      durationMs: full.durationMs,
      warmupMs: full.warmupMs,
      ok: run.ok.text,
    },
    result,
    outcome: {
      succeeded: outcome.succeeded,
      failed: outcome.failed,
      errors: outcome.errors,
      failedByStatus: outcome.failedByStatus,
    },
    ...(shard
      ? {
        shard: {
          ...shard,
          host: Deno.hostname(),
          startAtMs: run.startAtMs,
          window,
          clock: clockEstimate(),
          intervalLog: shardIntervalLog(result, window, shardLabel(shard)),
        },
      }
      : {}),
  };
}

/** The engine's connections, streams, threads and rate, as the summary and the record name them. */
function loadShapeOf(full: LoadPlan) {
  return {
    connections: full.connections!,
    streams: full.streams!,
    threads: full.threads!,
    rate: full.rate,
  };
}

async function load(urlText: string, f: LoadFlags): Promise<void> {
  const run = await planLoad(urlText, f);
  const { result, t0 } = await driveEngine(run, f);
  const outcome = loadOutcome(result, run.ok);
  console.log(
    renderLoadSummary(result, {
      ...loadShapeOf(run.full),
      ok: run.ok,
      transport: run.transport,
      planned: run.planned,
    }),
  );
  console.log(`\n${renderLatencyHistogram(result.latencyBuckets)}`);
  if (f.json || f.recordToLog) {
    const text = JSON.stringify(loadRecord(urlText, run, result, outcome, t0), null, 2) + "\n";
    if (f.json) {
      await Deno.writeTextFile(f.json, text);
      console.error(`wrote ${f.json}`);
    }
    if (f.recordToLog) console.log(`${RECORD_BEGIN}\n${text.trimEnd()}\n${RECORD_END}`);
  }
  judgeLoad(result, outcome, run.maxFailures);
}

/**
 * The run's exit: a run where no connection came up fails as curl would (7
 * refused, 35 TLS); failures past `--max-failures` fail (22 when every failure
 * is a response with a status outside the accepted set, else 1); a run cut
 * short says why. main.ts prints the one line.
 */
function judgeLoad(
  result: LoadResult,
  outcome: ReturnType<typeof loadOutcome>,
  maxFailures: number,
): void {
  const kinds = result.errorsByKind;
  if (result.connectionsUp === 0 && result.completed === 0) {
    const why = result.error ?? "no connection came up";
    if (kinds.connect > 0) throw new RequestError("connect", `${why} (partial results)`);
    if (kinds.tls > 0) throw new RequestError("tls", `${why} (partial results)`);
  }
  const failures = outcome.failed + outcome.errors;
  if (failures > maxFailures) {
    const parts = [
      outcome.failed ? `${formatStatusCounts(outcome.failedByStatus)}` : "",
      outcome.errors ? `${outcome.errors} without a response` : "",
    ].filter(Boolean).join(", ");
    const total = outcome.succeeded + failures;
    const msg = `${failures} of ${total} requests failed (${parts}; success is status ` +
      `${outcome.ok}); --max-failures ${maxFailures}`;
    if (outcome.errors === 0) throw new RequestError("http", msg);
    // every request without an answer, all timed out: curl's 28
    if (outcome.succeeded + outcome.failed === 0 && kinds.timeout === outcome.errors) {
      throw new RequestError("timeout", msg);
    }
    throw new Error(msg);
  }
  if (result.partial) {
    if (result.stopped) throw new Interrupted("SIGINT");
    throw new Error(
      `${result.error ?? "not every planned request was sent"} (partial results)`,
    );
  }
}

/** The open-file limit must hold every connection: raise the soft limit, or refuse. */
function fitOpenFiles(connections: number, protocol: string): void {
  const need = connections + FD_HEADROOM;
  const before = raiseFdLimitQuiet();
  if (!before) return;
  if (before.now.soft >= need) {
    if (before.was < need) {
      console.error(
        `raised the open-file soft limit from ${before.was} to ${before.now.soft} (hard limit ${before.now.hard})`,
      );
    }
    return;
  }
  throw new UsageError(
    `-c ${connections} needs about ${need} open files (one ${
      protocol === "h3" ? "UDP" : "TCP"
    } socket per connection) but the limit is ${before.now.soft} (hard ${before.now.hard}): ` +
      `lower -c or raise the limit (ulimit -n)`,
  );
}

/** Descriptors kept for the runtime beside the connections' sockets. */
const FD_HEADROOM = 64;

function raiseFdLimitQuiet() {
  const was = getSoftLimit();
  const now = raiseFdLimit();
  return now && was !== undefined ? { was, now } : undefined;
}

function getSoftLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(Deno.readTextFileSync("/proc/self/limits"));
    return m ? (m[1] === "unlimited" ? Number.MAX_SAFE_INTEGER : Number(m[1])) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Watches an open loop's sends against its schedule: returns a line, once,
 * when after the first half second of measuring fewer than 90 % of the sends
 * due by then were made (wrk2 and k6 say so as it happens).
 */
function behindSchedule(rate: number): (p: LoadProgress) => string | undefined {
  let measureFromNs: number | undefined;
  let sentAtStart = 0;
  let said = false;
  return (p) => {
    if (said || p.phase !== "measure") return undefined;
    if (measureFromNs === undefined) {
      measureFromNs = p.elapsedNs;
      sentAtStart = p.sent;
      return undefined;
    }
    const secs = (p.elapsedNs - measureFromNs) / 1e9;
    if (secs < 0.5) return undefined;
    const due = rate * secs;
    const sent = p.sent - sentAtStart;
    if (sent >= 0.9 * due) return undefined;
    said = true;
    return `open loop: behind schedule, ${formatRate(sent / secs)} sent of the ${
      formatRate(rate)
    } asked (sends that cannot be made by the end of -D are not made)`;
  };
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Adds `load`. */
export function registerLoadCommand(program: Command): void {
  withLoadOptions(
    program.command("load")
      .description(
        "load a server from the native engine (h2c, or h3 with --h3); h2load-like summary",
      )
      .argument("<url>", "http:// for h2c, https:// with --h3 for HTTP/3"),
  )
    .addHelpText("after", LOAD_EXIT_HELP)
    .action(async (url: string, flags: LoadFlags) => {
      await load(url, flags);
    });
}
