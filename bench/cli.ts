/**
 * The `bench` and `report` commands. This module and the reporters are the
 * only parts of `bench/` that write to the console.
 */
import type { Command } from "commander";
import { parseStack, type StackName, type TransportName } from "../transports/types.ts";
import { runBench } from "./run.ts";
import { parseRun, type ScenarioName, SCENARIOS } from "./schema.ts";
import { parseSize } from "./units.ts";
import { createProgress } from "./progress.ts";
import { writeReports } from "./reporters.ts";
import { compareRuns, renderComparison } from "./compare.ts";
import { renderTable } from "./table.ts";
import { renderCharts } from "./charts.ts";
import { linkContextFromEnv, runBenchAcrossLink } from "./across_link.ts";
import { parseLinkSpec } from "../linkemu/link_spec.ts";
import type { LinkBackend } from "../linkemu/link.ts";

/** Raised for bad command-line input; the CLI prints its message and exits 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

function list(text: string, what: string): string[] {
  const items = text.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new UsageError(`No ${what} given`);
  return items;
}

function number(text: string, what: string, min: number): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < min || text.trim() === "") {
    throw new UsageError(`Invalid ${what} "${text}" (need a number ≥ ${min})`);
  }
  return n;
}

function integer(text: string, what: string, min: number): number {
  const n = number(text, what, min);
  if (!Number.isInteger(n)) {
    throw new UsageError(`Invalid ${what} "${text}" (need a whole number ≥ ${min})`);
  }
  return n;
}

/** Options as commander hands them over. */
interface BenchFlags {
  scenario: string;
  stack?: string;
  mtu?: string;
  transports?: string;
  sizes?: string;
  warmup?: string;
  time?: string;
  samples?: string;
  quick?: boolean;
  inProcess?: boolean;
  target?: string;
  ca?: string;
  insecure?: boolean;
  delayMs?: string;
  rate?: string;
  concurrency?: string;
  streams?: string;
  link?: string;
  linkBackend?: string;
  floors?: boolean;
  json?: string;
  md?: string;
  csv?: string;
  charts?: boolean;
}

async function bench(flags: BenchFlags): Promise<void> {
  if (!(SCENARIOS as readonly string[]).includes(flags.scenario)) {
    throw new UsageError(
      `Unknown scenario ${flags.scenario} (choose from ${SCENARIOS.join(", ")})`,
    );
  }
  let stack: StackName | undefined;
  if (flags.stack !== undefined) {
    try {
      stack = parseStack(flags.stack);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  let transports: TransportName[] | undefined;
  if (flags.transports) {
    const { parseTransports } = await import("../transports/mod.ts");
    try {
      transports = parseTransports(flags.transports);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  let sizes: number[] | undefined;
  if (flags.sizes) {
    try {
      sizes = list(flags.sizes, "size").map(parseSize);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (flags.target) {
    try {
      const u = new URL(flags.target);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
    } catch {
      throw new UsageError(
        `Invalid --target ${flags.target} (use http://host:port or https://host:port)`,
      );
    }
    if (flags.inProcess) throw new UsageError("--target and --in-process exclude each other");
  }
  let link: ReturnType<typeof parseLinkSpec> | undefined;
  if (flags.link !== undefined) {
    if (flags.target) throw new UsageError("--link and --target exclude each other");
    if (flags.inProcess) throw new UsageError("--link and --in-process exclude each other");
    try {
      link = parseLinkSpec(flags.link);
    } catch (err) {
      throw new UsageError(`Invalid --link ${flags.link}: ${(err as Error).message}`);
    }
  }
  if (
    flags.linkBackend !== undefined &&
    !["relay", "netem", "veth"].includes(flags.linkBackend)
  ) {
    throw new UsageError(`Invalid --link-backend ${flags.linkBackend} (use relay, netem or veth)`);
  }
  let mtu: number | undefined;
  if (flags.mtu !== undefined) {
    mtu = integer(flags.mtu, "--mtu", 1280);
    if (mtu > 65535) throw new UsageError(`Invalid --mtu ${flags.mtu} (need 1280 … 65535)`);
    if (flags.target) throw new UsageError("--mtu and --target exclude each other");
    if (flags.inProcess) throw new UsageError("--mtu and --in-process exclude each other");
    if (link === undefined) {
      // A plain veth pair: nothing but the MTU differs from loopback.
      link = parseLinkSpec("lan");
      flags.linkBackend ??= "veth";
      flags.link = "lan";
    }
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  const progress = createProgress();
  try {
    const options = {
      scenario: flags.scenario as ScenarioName,
      stack,
      transports,
      sizes,
      warmupMs: flags.warmup !== undefined ? number(flags.warmup, "--warmup", 0) * 1000 : undefined,
      sampleMs: flags.time !== undefined ? number(flags.time, "--time", 0.05) * 1000 : undefined,
      samples: flags.samples !== undefined ? integer(flags.samples, "--samples", 2) : undefined,
      quick: flags.quick,
      inProcess: flags.inProcess,
      target: flags.target,
      caFile: flags.ca,
      insecure: flags.insecure,
      delayMs: flags.delayMs !== undefined ? number(flags.delayMs, "--delay-ms", 0) : undefined,
      rate: flags.rate !== undefined ? number(flags.rate, "--rate", 0.001) : undefined,
      concurrency: flags.concurrency
        ? list(flags.concurrency, "concurrency level").map((c) =>
          integer(c, "concurrency level", 1)
        )
        : undefined,
      streams: flags.streams !== undefined ? integer(flags.streams, "--streams", 1) : undefined,
      skipFloors: flags.floors === false,
      onProgress: progress.update,
      signal: controller.signal,
    };
    const run = link
      ? await runBenchAcrossLink(link, {
        ...options,
        specText: flags.link,
        backend: (flags.linkBackend ?? "relay") as LinkBackend,
        mtu,
      })
      : await runBench({ ...options, ...linkContextFromEnv() });
    progress.stop();
    console.log(renderTable(run));
    if (flags.charts !== false) {
      const charts = renderCharts(run);
      if (charts) console.log(`\n${charts}`);
    }
    const written = await writeReports(run, { json: flags.json, md: flags.md, csv: flags.csv });
    for (const w of written) console.error(`wrote ${w}`);
  } finally {
    progress.stop();
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

async function readRun(path: string) {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new UsageError(`Cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return parseRun(text, path);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function report(
  a: string,
  b: string | undefined,
  flags: {
    failOnRegression?: boolean;
    threshold: string;
    md?: string;
    csv?: string;
    charts?: boolean;
  },
): Promise<number> {
  const base = await readRun(a);
  if (!b) {
    console.log(renderTable(base));
    if (flags.charts !== false) {
      const charts = renderCharts(base);
      if (charts) console.log(`\n${charts}`);
    }
    const written = await writeReports(base, { md: flags.md, csv: flags.csv });
    for (const w of written) console.error(`wrote ${w}`);
    return 0;
  }
  const threshold = number(flags.threshold, "--threshold", 0) / 100;
  const cand = await readRun(b);
  const cmp = compareRuns(base, cand, { noiseThreshold: threshold });
  console.log(renderComparison(cmp));
  if (flags.failOnRegression && cmp.rows.some((r) => r.verdict === "regressed")) {
    console.error(
      `error: ${
        cmp.rows.filter((r) => r.verdict === "regressed").length
      } row(s) regressed beyond ${flags.threshold} %`,
    );
    return 1;
  }
  return 0;
}

/** Adds `bench` and `report` to the program. Errors become one line on stderr and exit codes 1/2. */
export function registerBenchCommands(program: Command): void {
  program
    .command("bench")
    .description("benchmark the transports against the machine's floors")
    .option("--scenario <name>", `one of ${SCENARIOS.join(", ")}`, "rtt")
    .option(
      "--stack <stack>",
      "native (nghttp2 + ngtcp2, GnuTLS; default) or deno (Deno.serve + fetch, h2 only)",
    )
    .option("--transports <list>", "comma-separated transports (default: every available one)")
    .option("--sizes <list>", "body sizes, e.g. 256,16K (default 256,16K; bulk 1M,16M)")
    .option("--warmup <seconds>", "warm-up per row (default 3, quick 0.3)")
    .option("--time <seconds>", "sampling time per row (default 5, quick 0.7)")
    .option("--samples <n>", "samples per row instead of a sampling time (bounded by 60 s)")
    .option("--quick", "a run of a few seconds")
    .option("--in-process", "run the servers in this process instead of their own")
    .option("--target <url>", "benchmark a server elsewhere (floors are skipped)")
    .option("--ca <file>", "CA certificate to trust for an https target")
    .option("-k, --insecure", "do not verify an https target's certificate")
    .option("--delay-ms <ms>", "handler delay passed to the server", undefined)
    .option("--rate <req/s>", "open-loop rate for --scenario rate (default 1000)")
    .option(
      "--concurrency <list>",
      "in-flight levels for --scenario concurrency (default 1,8,64,256)",
    )
    .option("--streams <n>", "concurrent streams on one connection for --scenario hol (default 16)")
    .option(
      "--link <spec>",
      "run across an emulated link: a profile (lan, wan, lossy, …) or key=value list; needs root",
    )
    .option(
      "--link-backend <backend>",
      "how the link's namespaces are joined: relay (default), netem, or veth (no impairment)",
    )
    .option(
      "--mtu <bytes>",
      "run across two namespaces with this MTU (alone: a plain veth pair, e.g. 1500); needs root",
    )
    .option("--no-floors", "skip the floor measurements")
    .option("--no-charts", "do not print ASCII charts")
    .option("--json <file>", "save the run as JSON (re-render with lab report)")
    .option("--md <file>", "write a Markdown report")
    .option("--csv <file>", "write the rows as CSV")
    .action(async (flags: BenchFlags) => {
      await runAction(() => bench(flags).then(() => 0));
    });
  program
    .command("report")
    .description("re-render a saved run, or compare a baseline A with a candidate B")
    .argument("<a.json>", "saved run (the baseline when comparing)")
    .argument("[b.json]", "candidate run to compare with the baseline")
    .option("--fail-on-regression", "exit 1 when a row got slower beyond the threshold")
    .option("--threshold <percent>", "noise threshold in percent", "2")
    .option("--md <file>", "write a Markdown report of A")
    .option("--csv <file>", "write A's rows as CSV")
    .option("--no-charts", "do not print ASCII charts")
    .action(async (a: string, b: string | undefined, flags) => {
      await runAction(() => report(a, b, flags));
    });
}

async function runAction(fn: () => Promise<number>): Promise<void> {
  let code: number;
  try {
    code = await fn();
  } catch (err) {
    const e = err as Error;
    console.error(`error: ${e.message.split("\n")[0]}`);
    code = err instanceof UsageError || err instanceof RangeError || err instanceof SyntaxError
      ? 2
      : 1;
  }
  if (code !== 0) Deno.exit(code);
}
