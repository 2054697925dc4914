/** `lab load`: h2load-style load from the native engines (h2c and h3), with h2load's and oha's flags. */
import type { Command } from "commander";
import {
  exclusive,
  invalid,
  parseDuration,
  parseHeader,
  parseInteger,
  parseNumber,
  UsageError,
} from "./args.ts";
import { formatProgressLine, renderLatencyHistogram, renderLoadSummary } from "../load/report.ts";
import {
  LOAD_SCHEMA,
  LoadEngine,
  type LoadPlan,
  type LoadProgress,
  type LoadRecord,
  loadTarget,
  parseShard,
  shardFromIndexEnv,
  type ShardId,
  shardIntervalLog,
  shardLabel,
  shardPlan,
} from "../load/mod.ts";
import { clockEstimate } from "../lib/clock.ts";
import { createProgressLines } from "../lib/progress_lines.ts";

interface LoadFlags {
  requests?: string;
  duration?: string;
  warmUp?: string;
  connections: string;
  streams: string;
  threads: string;
  rate?: string;
  h3?: boolean;
  method?: string;
  header: string[];
  data?: string;
  ca?: string;
  insecure?: boolean;
  timeout: string;
  nfType: string;
  json?: string;
  progress?: boolean;
  shard?: string;
  shardCount?: string;
  startAt?: string;
  recordToLog?: boolean;
  quiet?: boolean;
}

/** Env var with the shard count when the shard comes from `JOB_COMPLETION_INDEX`. */
export const SHARD_COUNT_ENV = "SBILAB_SHARD_COUNT";
/** Lines around the run record `--record-to-log` prints (`lab k8s collect` reads them). */
export const RECORD_BEGIN = "----- sbilab load record begin -----";
export const RECORD_END = "----- sbilab load record end -----";

/** The shard to run: `--shard I/N`, else `JOB_COMPLETION_INDEX` with `--shard-count` or SBILAB_SHARD_COUNT. */
function whichShard(f: LoadFlags): ShardId | undefined {
  try {
    if (f.shard !== undefined) return parseShard(f.shard);
    const index = Deno.env.get("JOB_COMPLETION_INDEX");
    if (index === undefined) return undefined;
    const countText = f.shardCount ?? Deno.env.get(SHARD_COUNT_ENV);
    if (countText === undefined) {
      throw new RangeError(
        `JOB_COMPLETION_INDEX is set: give the shard count (--shard-count or ${SHARD_COUNT_ENV})`,
      );
    }
    return shardFromIndexEnv(index, parseInteger(countText, "--shard-count", { min: 1 }));
  } catch (err) {
    if (err instanceof RangeError) throw new UsageError(err.message);
    throw err;
  }
}

/** `--start-at`: an ISO time or ms since the epoch. */
function parseStartAt(text: string): number {
  const t = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(t)) throw invalid("--start-at", "an ISO time or ms since the epoch", text);
  return t;
}

const wallNow = () => performance.timeOrigin + performance.now();

/** `10s`, `500ms`, or a bare number of seconds (h2load's -D), in ms. */
function duration(text: string, flag: string): number {
  return parseDuration(text, flag, { bare: "s" });
}

async function readBody(data: string | undefined): Promise<Uint8Array | undefined> {
  if (data === undefined) return undefined;
  if (!data.startsWith("@")) return new TextEncoder().encode(data);
  try {
    return await Deno.readFile(data.slice(1));
  } catch {
    throw new UsageError(`Cannot read ${data.slice(1)}`);
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function load(urlText: string, f: LoadFlags): Promise<void> {
  if ((f.requests === undefined) === (f.duration === undefined)) {
    throw new UsageError("Give either -n N or -D DURATION");
  }
  if (f.ca && f.insecure) throw exclusive("--ca", "-k");
  const connections = parseInteger(f.connections, "-c", { min: 1, max: 100_000 });
  const plan: Partial<LoadPlan> = {
    connections,
    streams: parseInteger(f.streams, "-m", { min: 1, max: 100_000 }),
    threads: Math.min(parseInteger(f.threads, "-t", { min: 1, max: 64 }), connections),
    ...(f.requests !== undefined
      ? { requests: parseInteger(f.requests, "-n", { min: 1, max: 2 ** 50 }) }
      : {}),
    ...(f.duration !== undefined ? { durationMs: duration(f.duration, "-D") } : {}),
    ...(f.warmUp !== undefined ? { warmupMs: duration(f.warmUp, "--warm-up") } : {}),
  };
  if (plan.durationMs === 0) throw invalid("-D", "longer than 0", f.duration!);
  if (f.rate !== undefined) plan.rate = parseNumber(f.rate, "--rate", { above: 0 });
  const headers: Record<string, string> = {};
  for (const h of f.header) {
    const [name, value] = parseHeader(h);
    headers[name] = value;
  }
  const timeoutMs = parseDuration(f.timeout, "--timeout", { minMs: 1, maxMs: 3_600_000 });
  let target;
  try {
    target = await loadTarget(urlText, {
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
    // a bad URL or flag combination is a usage error; an unresolvable host is not
    throw /^Cannot resolve/.test(msg) ? err : new UsageError(msg);
  }
  let caPem: Uint8Array | undefined;
  if (f.ca) {
    try {
      caPem = await Deno.readFile(f.ca);
    } catch {
      throw new UsageError(`Cannot read ${f.ca}`);
    }
  }
  const whole: LoadPlan = { ...target, ...plan, caPem, insecure: f.insecure ?? false } as LoadPlan;
  const shard = whichShard(f);
  let full = whole;
  if (shard) {
    try {
      full = shardPlan(whole, shard);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const startAtMs = f.startAt !== undefined ? parseStartAt(f.startAt) : null;

  const controller = new AbortController();
  const onSignal = () => controller.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  const shown = f.progress !== false && !f.quiet;
  const live = shown && Deno.stderr.isTerminal();
  // not on a terminal: progress: lines (the share of the planned requests or time)
  const lines = shown && !live ? createProgressLines({ rowName: "phase" }) : undefined;
  const planned = full.requests !== undefined
    ? (p: LoadProgress) => p.completed / full.requests!
    : (p: LoadProgress) => p.elapsedNs / 1e6 / ((full.warmupMs ?? 0) + (full.durationMs ?? 1));
  const what = `${full.protocol} ${connections}×${full.streams}`;
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
      onProgress: lines
        ? (p: LoadProgress) => {
          if (p.phase === "warm-up" || p.phase === "measure" || p.phase === "drain") {
            lines.update(`${what}, ${p.phase}`, planned(p));
          }
        }
        : live
        ? (p: LoadProgress) => {
          if (p.elapsedNs - lastDraw < 250e6 && p.phase !== "done") return;
          lastDraw = p.elapsedNs;
          Deno.stderr.writeSync(enc.encode(`\r\x1b[2K${formatProgressLine(p, previous)}`));
          previous = p;
        }
        : undefined,
    });
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    if (live) Deno.stderr.writeSync(enc.encode("\r\x1b[2K"));
    lines?.stop(result !== undefined && !result.partial);
  }
  const shape = {
    connections: full.connections!,
    streams: full.streams!,
    threads: full.threads!,
    rate: full.rate,
  };
  console.log(renderLoadSummary(result, shape));
  console.log(`\n${renderLatencyHistogram(result.latencyBuckets)}`);
  if (f.json || f.recordToLog) {
    const startMs = t0 + (full.warmupMs ?? 0);
    const window = { startMs, endMs: startMs + result.measuredNs / 1e6 };
    const record: LoadRecord = {
      schema: LOAD_SCHEMA,
      url: urlText,
      engine: "native",
      plan: {
        ...shape,
        requests: full.requests,
        durationMs: full.durationMs,
        warmupMs: full.warmupMs,
      },
      result,
      ...(shard
        ? {
          shard: {
            ...shard,
            host: Deno.hostname(),
            startAtMs,
            window,
            clock: clockEstimate(),
            intervalLog: shardIntervalLog(result, window, shardLabel(shard)),
          },
        }
        : {}),
    };
    const text = JSON.stringify(record, null, 2) + "\n";
    if (f.json) {
      await Deno.writeTextFile(f.json, text);
      console.error(`wrote ${f.json}`);
    }
    if (f.recordToLog) console.log(`${RECORD_BEGIN}\n${text.trimEnd()}\n${RECORD_END}`);
  }
  if (result.partial) {
    // main.ts prints this one line and exits 1; the summary above is the partial result.
    throw new Error(`${result.error ?? "the run was stopped"} (partial results)`);
  }
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
  program.command("load")
    .description("load a server from the native engine (h2c, or h3 with --h3); h2load-like summary")
    .argument("<url>", "http:// for h2c, https:// with --h3 for HTTP/3")
    .option("-n, --requests <n>", "measured requests to send")
    .option("-D, --duration <time>", "send for this long instead (10s, 500ms, 2m; bare number = s)")
    .option("--warm-up <time>", "send for this long first without measuring (bare number = s)")
    .option("-c, --connections <n>", "connections", "1")
    .option("-m, --streams <n>", "requests in flight per connection", "1")
    .option("-t, --threads <n>", "engine threads (connections are shared out)", "1")
    .option("--rate <req/s>", "open loop: send at this rate, latency from each intended send time")
    .option("--h3", "HTTP/3 over QUIC (https:// only)")
    .option("-X, --method <method>", "HTTP method (default GET, or POST with -d)")
    .option("-H, --header <line>", "extra header 'Name: value' (repeatable)", collect, [])
    .option("-d, --data <data>", "request body, or @FILE")
    .option("--ca <file>", "CA certificate to trust")
    .option("-k, --insecure", "do not verify the server's certificate")
    .option("--timeout <time>", "per-request timeout (500ms, 10s; bare number = ms)", "10000")
    .option("--nf-type <type>", "NF type in User-Agent", "SMF")
    .option("--json <file>", "save the run record as JSON")
    .option(
      "--no-progress",
      "no progress (a live line on a terminal, else progress: lines on stderr)",
    )
    .option("-q, --quiet", "the same as --no-progress")
    .option("--shard <I/N>", "run shard I (from 0) of N: its share of connections, -n and --rate")
    .option(
      "--shard-count <n>",
      `shard count when the shard index comes from JOB_COMPLETION_INDEX (or ${SHARD_COUNT_ENV})`,
    )
    .option("--start-at <time>", "start measuring at this wall-clock time (ISO, or ms since epoch)")
    .option("--record-to-log", "also print the run record between marker lines on stdout")
    .action(async (url: string, flags: LoadFlags) => {
      await load(url, flags);
    });
}
