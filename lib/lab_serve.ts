/**
 * The one way to run `lab serve` from another part of sbilab (the benchmark,
 * the link runner, the interop cases, the tests): {@linkcode labServeArgs}
 * writes its command line from typed options, {@linkcode labServeCommand}
 * adds how to launch it (CPU pinning, an fd limit), and
 * {@linkcode startLabServe} starts it and waits for its listening lines.
 */
import { ROOT } from "./host.ts";
import { readListening } from "./listening.ts";
import type { TransportName } from "./transport_names.ts";
import { V8_FLAGS_ARG } from "./v8_flags.ts";

/** Resource limits `lab serve` takes as options; unset ones keep its defaults. */
export interface LabServeLimits {
  /** `--max-connections`: TCP connections per h2 listener. */
  maxConnections?: number;
  /** `--handshake-timeout` in ms. */
  handshakeTimeoutMs?: number;
  /** `--idle-timeout` in ms. */
  idleTimeoutMs?: number;
  /** `--stall-timeout` in ms. */
  stallTimeoutMs?: number;
  /** `--max-inflight-bodies` in bytes. */
  maxInflightBodies?: number;
  /** `--max-queued-responses` in bytes. */
  maxQueuedResponses?: number;
  /** `--max-body` in bytes. */
  maxBody?: number;
}

/** What `lab serve` serves, and where. */
export interface LabServeOptions {
  /** The transports to serve, each printing one listening line. */
  transports: readonly TransportName[];
  /** `--stack`. Default: lab serve's own (native, or `SBILAB_STACK`). */
  stack?: "native" | "deno";
  /** Address to bind. Default `127.0.0.1`. */
  host?: string;
  /** h2c TCP port. Default 0 (any free port). */
  h2cPort?: number;
  /** h2-tls TCP and h3 UDP port. Default 0 (any free port). */
  tlsPort?: number;
  /** Where the dev PKI is written (its `ca.pem` signs the server). Default: lab serve's own. */
  stateDir?: string;
  /** Server certificate and key files instead of the dev PKI. */
  cert?: string;
  key?: string;
  /** CA file for client certificates. */
  ca?: string;
  /** Require client certificates. Default false. */
  mtls?: boolean;
  /** Handler delay in ms. Default 0. */
  delayMs?: number;
  /**
   * h3 reads every datagram in the module (true, lab serve's default) or the first of each
   * wake-up through Deno (false: `--no-h3-exact-ecn`, the I/O shape the benchmarks measure).
   */
  h3ExactEcn?: boolean;
  /** Who does h3's I/O (`--h3-io`): Deno's reactor or the module's own thread. Default: lab serve's. */
  h3Io?: "runtime" | "module";
  /** Who does the native transports' I/O (`--io`; `h3Io` wins for h3). Default: lab serve's. */
  io?: "runtime" | "module";
  /** Resource limits. Default: lab serve's. */
  limits?: LabServeLimits;
  /** Further options exactly as written on the command line (for example `--h3-retry`). */
  extraArgs?: readonly string[];
}

const LIMIT_FLAGS: [keyof LabServeLimits, string][] = [
  ["maxConnections", "--max-connections"],
  ["handshakeTimeoutMs", "--handshake-timeout"],
  ["idleTimeoutMs", "--idle-timeout"],
  ["stallTimeoutMs", "--stall-timeout"],
  ["maxInflightBodies", "--max-inflight-bodies"],
  ["maxQueuedResponses", "--max-queued-responses"],
  ["maxBody", "--max-body"],
];

/** The arguments of `lab serve` (from `serve` on) for `o`. */
export function labServeArgs(o: LabServeOptions): string[] {
  if (o.transports.length === 0) throw new RangeError("lab serve needs at least one transport");
  const args = ["serve", "--transports", o.transports.join(",")];
  if (o.stack) args.push("--stack", o.stack);
  args.push("--host", o.host ?? "127.0.0.1");
  if (o.transports.includes("h2c")) args.push("--h2c-port", String(o.h2cPort ?? 0));
  if (o.transports.some((t) => t !== "h2c")) args.push("--tls-port", String(o.tlsPort ?? 0));
  if (o.stateDir) args.push("--state-dir", o.stateDir);
  if (o.cert) args.push("--cert", o.cert);
  if (o.key) args.push("--key", o.key);
  if (o.ca) args.push("--ca", o.ca);
  if (o.mtls) args.push("--mtls");
  if (o.delayMs) args.push("--delay-ms", String(o.delayMs));
  if (o.h3ExactEcn === false && o.transports.includes("h3")) args.push("--no-h3-exact-ecn");
  if (o.h3Io && o.transports.includes("h3")) args.push("--h3-io", o.h3Io);
  if (o.io) args.push("--io", o.io);
  for (const [field, flag] of LIMIT_FLAGS) {
    const v = o.limits?.[field];
    if (v !== undefined) args.push(flag, String(v));
  }
  return [...args, ...(o.extraArgs ?? [])];
}

/**
 * The command that runs `lab` from this checkout: `deno run … main.ts`, with
 * `v8Flags` as its V8 argument (default {@linkcode V8_FLAGS_ARG}).
 */
export function labCommand(v8Flags: string = V8_FLAGS_ARG): string[] {
  return [
    Deno.execPath(),
    "run",
    "-A",
    "--unstable-net",
    v8Flags,
    "--quiet",
    `${ROOT}/main.ts`,
  ];
}

/** How `lab serve` is launched. */
export interface LabServeLaunch {
  /** The command that runs `lab`. Default {@linkcode labCommand}. */
  lab?: readonly string[];
  /** Pin the server to this CPU (`taskset -c`). Default: not pinned. */
  cpu?: number;
  /** Start it under `ulimit -n` with this many descriptors. Default: the inherited limit. */
  nofile?: number;
}

/** The whole command line (program first) that launches `lab serve` for `o`. */
export function labServeCommand(o: LabServeOptions, launch: LabServeLaunch = {}): string[] {
  let argv = [...(launch.lab ?? labCommand()), ...labServeArgs(o)];
  if (launch.nofile !== undefined) {
    argv = ["sh", "-c", `ulimit -n ${launch.nofile} && exec "$@"`, "sh", ...argv];
  }
  if (launch.cpu !== undefined) argv = ["taskset", "-c", String(launch.cpu), ...argv];
  return argv;
}

/** Spawns a command line with stdin closed and stdout and stderr piped. */
export type Spawn = (argv: string[]) => Deno.ChildProcess;

/** The default {@linkcode Spawn}: a child of this process. */
export const spawnHere: Spawn = (argv) =>
  new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();

/** Options for {@linkcode startLabServe}. */
export interface StartLabServeOptions extends LabServeLaunch {
  /** How to spawn the command line (for example inside a network namespace). Default {@linkcode spawnHere}. */
  spawn?: Spawn;
  /** How long to wait for the listening lines, in ms. Default 30 000. */
  timeoutMs?: number;
  /** SIGTERM, then SIGKILL after this many ms when stopping. Default 5 000. */
  killAfterMs?: number;
}

/** A running `lab serve`. */
export interface LabServeProcess {
  /** Listener URL per transport, as its listening line printed it. */
  urls: Partial<Record<TransportName, string>>;
  /** Process id of `lab serve` (`taskset`, `sh -c 'exec …'` and `ip netns exec` become it). */
  pid: number;
  /** Resolves with the exit status once the process ended. */
  status: Promise<Deno.CommandStatus>;
  /** Whether the process still runs. */
  running(): boolean;
  /** Everything it wrote to stderr so far (complete once `stop` resolved). */
  stderr(): string;
  /** Resolves with the first stderr line matching `pattern`; rejects once stderr ends or after `timeoutMs` (default 10 000). */
  stderrLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM (SIGKILL after `killAfterMs`), then waits; idempotent; resolves with the exit status. */
  stop(): Promise<Deno.CommandStatus>;
}

/** Raised when `lab serve` ends or stays silent before printing every listening line. */
export class LabServeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LabServeError";
  }
}

/**
 * Starts `lab serve` for `o` and resolves once every transport printed its
 * listening line. On failure the process is stopped and the error names its
 * last stderr line.
 * @throws {LabServeError} when it exits or times out before listening
 */
export async function startLabServe(
  o: LabServeOptions,
  options: StartLabServeOptions = {},
): Promise<LabServeProcess> {
  const child = (options.spawn ?? spawnHere)(labServeCommand(o, options));
  let running = true;
  const status = child.status.finally(() => (running = false));
  let err = "";
  let stderrEnded = false;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write: (c) => {
        err += c;
        wake();
      },
    }),
  ).catch(() => {}).finally(() => {
    stderrEnded = true;
    wake();
  });
  const stderrLine = async (pattern: RegExp, timeoutMs = 10_000): Promise<string> => {
    const { promise: late, resolve: lateNow } = Promise.withResolvers<void>();
    const timer = setTimeout(lateNow, timeoutMs);
    let expired = false;
    late.then(() => (expired = true));
    try {
      for (;;) {
        const hit = err.split("\n").find((l) => pattern.test(l));
        if (hit !== undefined) return hit;
        if (expired || stderrEnded) {
          throw new Error(`No stderr line of lab serve matched ${pattern}:\n${err}`);
        }
        const { promise, resolve } = Promise.withResolvers<void>();
        waiters.add(resolve);
        await Promise.race([promise, late]);
        waiters.delete(resolve);
      }
    } finally {
      clearTimeout(timer);
    }
  };
  let stopping: Promise<Deno.CommandStatus> | undefined;
  const stop = () =>
    stopping ??= (async () => {
      if (running) {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
        const killer = setTimeout(() => {
          try {
            if (running) child.kill("SIGKILL");
          } catch { /* gone */ }
        }, options.killAfterMs ?? 5000);
        await status;
        clearTimeout(killer);
      }
      await stderrDone;
      return await status;
    })();
  let urls;
  try {
    urls = await readListening(child.stdout, o.transports, options.timeoutMs ?? 30_000);
  } catch (e) {
    await stop();
    const last = err.trim().split("\n").filter(Boolean).at(-1);
    throw new LabServeError(`${(e as Error).message}${last ? `: ${last}` : ""}`, { cause: e });
  }
  return {
    urls,
    pid: child.pid,
    status,
    running: () => running,
    stderr: () => err,
    stderrLine,
    stop,
  };
}
