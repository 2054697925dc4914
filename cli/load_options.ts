/**
 * `lab load`'s options: the one definition of its flags (which `lab k8s job`
 * parses pod arguments with too), and the checks that turn them into a load's
 * shape, its shard and its start time.
 */
import { Command, CommanderError } from "commander";
import { invalid, parseDuration, parseInteger, parseNumber, UsageError } from "./args.ts";
import { type LoadPlan, parseShard, shardFromIndexEnv, type ShardId } from "../load/mod.ts";
import { DEFAULT_OK } from "../lib/status_set.ts";

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
/** The shard to run: `--shard I/N`, else `JOB_COMPLETION_INDEX` with `--shard-count` or SBILAB_SHARD_COUNT. */
export function whichShard(f: LoadFlags): ShardId | undefined {
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

/** `10s`, `500ms`, or a bare number of seconds (h2load's -D), in ms. */
function duration(text: string, flag: string): number {
  return parseDuration(text, flag, { bare: "s" });
}

/** Commander's collector for a repeatable option. */
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

/** `lab load --help`'s closing text: what counts as success, and the exit statuses. */
export const LOAD_EXIT_HELP = `
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
export function withLoadOptions(cmd: Command): Command {
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
