/** `lab load`: h2load-style load from the native engines (h2c and h3), with h2load's and oha's flags. */
import { Command, CommanderError } from "commander";
import {
  asUsage,
  checkOutputPaths,
  exclusive,
  invalid,
  parseDuration,
  parseHeader,
  parseInteger,
  parseNumber,
  UsageError,
} from "./args.ts";
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
import { DEFAULT_OK, formatStatusCounts, parseStatusSet } from "../lib/status_set.ts";
import { formatRate } from "../lib/units.ts";
import { raiseFdLimit } from "../transports/fd_limit.ts";
import { RequestError } from "./request_error.ts";
import { Interrupted } from "../lib/interrupt.ts";

/** `lab load`'s options as commander hands them over. */
export interface LoadFlags {
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
  cert?: string;
  key?: string;
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
  ok: string;
  maxFailures: string;
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
export function parseStartAt(text: string): number {
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

/**
 * The shape of the load in `f` (-n or -D, -c, -m, -t, --warm-up, --rate),
 * checked; throws `UsageError` naming the flag.
 */
export function loadShape(f: LoadFlags): Partial<LoadPlan> {
  if ((f.requests === undefined) === (f.duration === undefined)) {
    throw new UsageError("Give either -n N or -D DURATION");
  }
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
  return plan;
}

async function load(urlText: string, f: LoadFlags): Promise<void> {
  const plan = loadShape(f);
  if (f.ca && f.insecure) throw exclusive("--ca", "-k");
  const ok = asUsage(() => parseStatusSet(f.ok), "--ok");
  const maxFailures = parseInteger(f.maxFailures, "--max-failures");
  await checkOutputPaths({ "--json": f.json });
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
    // curl's statuses: an unresolvable host 6, a malformed URL 3; a flag combination is usage
    if (/^Cannot resolve/.test(msg)) throw new RequestError("resolve", msg, { cause: err });
    if (/--h3/.test(msg)) throw new UsageError(msg);
    throw new RequestError("url", msg, { cause: err });
  }
  if ((f.cert === undefined) !== (f.key === undefined)) {
    throw new UsageError("--cert and --key go together (mutual TLS)");
  }
  if (f.cert && !target.tls && target.protocol === "h2") {
    throw new UsageError("--cert needs TLS: an https:// URL");
  }
  const readPem = async (file: string | undefined) => {
    if (file === undefined) return undefined;
    try {
      return await Deno.readFile(file);
    } catch {
      throw new UsageError(`Cannot read ${file}`);
    }
  };
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
  const what = `${transport} ${plan.connections}×${full.streams}`;
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
  const shape = {
    connections: full.connections!,
    streams: full.streams!,
    threads: full.threads!,
    rate: full.rate,
  };
  const outcome = loadOutcome(result, ok);
  console.log(renderLoadSummary(result, { ...shape, ok, transport, planned }));
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
        ok: ok.text,
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
  judgeLoad(result, outcome, maxFailures);
}

/**
 * The run's exit: a run where no connection came up fails as curl would (7
 * refused, 35 TLS); failures past `--max-failures` fail (22 when every failure
 * is a response with a status outside the accepted set, else 1); a run cut
 * short says why. main.ts prints the one line.
 */
function judgeLoad(
  result: Awaited<ReturnType<LoadEngine["run"]>>,
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

const LOAD_EXIT_HELP = `
A request succeeds when its status is in --ok (default 2xx and 3xx, as h2load
counts); other statuses fail, and requests without a response error.

Exit status (curl's where curl has one):
  0   every request succeeded (or failures within --max-failures)
  1   failures past --max-failures that include requests without a response,
      or a run cut short
  2   bad usage
  3   malformed URL
  6   could not resolve the host
  7   no connection came up (refused)
  22  failures past --max-failures, all of them responses with other statuses
  28  no request was answered: every one timed out (--timeout)
  35  no connection came up (TLS handshake failed)
  130 interrupted (Ctrl-C)`;

/** Adds `lab load`'s options to `cmd`: the one definition, which `lab k8s job` parses with too. */
function withLoadOptions(cmd: Command): Command {
  return cmd
    .option("-n, --requests <n>", "measured requests to send")
    .option("-D, --duration <time>", "send for this long instead (10s, 500ms, 2m; bare number = s)")
    .option("--warm-up <time>", "send for this long first without measuring (bare number = s)")
    .option("-c, --connections <n>", "connections", "1")
    .option("-m, --streams <n>", "requests in flight per connection", "1")
    .option("-t, --threads <n>", "engine threads (connections are shared out)", "1")
    .option(
      "--rate <req/s>",
      "open loop: send at this rate, latency from each intended send time; with -D, sends due after it are not made (the shortfall is reported)",
    )
    .option("--h3", "HTTP/3 over QUIC (https:// only)")
    .option("-X, --method <method>", "HTTP method (default GET, or POST with -d)")
    .option("-H, --header <line>", "extra header 'Name: value' (repeatable)", collect, [])
    .option("-d, --data <data>", "request body, or @FILE")
    .option("--ca <file>", "CA certificate to trust")
    .option("--cert <file>", "client certificate for mutual TLS (PEM)")
    .option("--key <file>", "client private key for mutual TLS (PEM)")
    .option("-k, --insecure", "do not verify the server's certificate")
    .option("--timeout <time>", "per-request timeout (500ms, 10s; bare number = ms)", "10000")
    .option("--nf-type <type>", "NF type in User-Agent", "SMF")
    .option(
      "--ok <statuses>",
      "statuses that count as a success: codes and classes, e.g. 200,201,204 or 2xx",
      DEFAULT_OK,
    )
    .option("--max-failures <n>", "failed or errored requests tolerated before exit non-zero", "0")
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
    .option("--record-to-log", "also print the run record between marker lines on stdout");
}

/**
 * Parses `lab load` options given as words (as `lab k8s job` passes them on
 * to each pod) with `lab load`'s own definition; throws `UsageError` for an
 * unknown or incomplete option or a stray argument.
 */
export function parseLoadOptions(args: string[]): LoadFlags {
  const cmd = withLoadOptions(new Command("load"))
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
  try {
    cmd.parse(args, { from: "user" });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    throw new UsageError(`lab load options: ${err.message.replace(/^error: /, "")}`);
  }
  if (cmd.args.length) {
    throw new UsageError(`lab load options: unexpected argument '${cmd.args[0]}'`);
  }
  return cmd.opts<LoadFlags>();
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
