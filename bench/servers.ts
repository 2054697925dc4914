/**
 * Where the benchmark sends its requests: servers started in their own
 * process (`lab serve`, the default), in this process, or a target elsewhere.
 */
import { onServerCpu, placement } from "./affinity.ts";
import type { TlsMaterial } from "../transports/tls.ts";
import type { SbiServer, StackName, TransportName } from "../transports/types.ts";
import { ROOT } from "../lib/host.ts";
import { readListening } from "../lib/listening.ts";

/** Endpoints to benchmark and how to trust them. */
export interface Endpoints {
  /** Base URL per transport. */
  urls: Partial<Record<TransportName, string>>;
  /** Client TLS material for h2-tls and h3. */
  tls?: TlsMaterial;
  /** How the servers run. */
  mode: "process" | "in-process" | "target";
  /** Process id of the server when it runs in its own process (for its CPU use). */
  pid?: number;
  /** Stops whatever was started. Idempotent. */
  close(): Promise<void>;
}

/** Raised when the servers cannot be started or the target is unusable. */
export class ServerSetupError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ServerSetupError";
  }
}

/** Options for {@linkcode startServers}. */
export interface StartOptions {
  /** Implementation family. Default `native`. */
  stack?: StackName;
  /** Handler delay in ms passed to the server. Default 0. */
  delayMs?: number;
  /** Start in this process instead of spawning `lab serve`. Default false. */
  inProcess?: boolean;
  /** Seconds to wait for `lab serve` to print its listeners. Default 60. */
  startTimeoutS?: number;
}

/** Starts servers for `transports` on loopback. */
export async function startServers(
  transports: TransportName[],
  options: StartOptions = {},
): Promise<Endpoints> {
  const stack = options.stack ?? "native";
  return options.inProcess
    ? await startInProcess(transports, stack, options.delayMs ?? 0)
    : await startProcess(transports, stack, options.delayMs ?? 0, options.startTimeoutS ?? 60);
}

async function startInProcess(
  transports: TransportName[],
  stack: StackName,
  delayMs: number,
): Promise<Endpoints> {
  const { createHandler } = await import("../handler/mod.ts");
  const { createServer } = await import("../transports/mod.ts");
  const { createDevPki } = await import("../transports/pki.ts");
  const pki = await createDevPki();
  const handler = createHandler({ delayMs });
  const servers: SbiServer[] = [];
  const urls: Endpoints["urls"] = {};
  try {
    for (const t of transports) {
      const s = await createServer(t, handler, {
        stack,
        hostname: "127.0.0.1",
        port: 0,
        tls: t === "h2c" ? undefined : { cert: pki.serverCertPem, key: pki.serverKeyPem },
      });
      servers.push(s);
      urls[t] = s.url;
    }
  } catch (err) {
    await Promise.allSettled(servers.map((s) => s.close()));
    throw new ServerSetupError(`Cannot start servers in process: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let closed = false;
  return {
    urls,
    tls: { ca: pki.caCertPem },
    mode: "in-process",
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled(servers.map((s) => s.close()));
    },
  };
}

async function startProcess(
  transports: TransportName[],
  stack: StackName,
  delayMs: number,
  timeoutS: number,
): Promise<Endpoints> {
  const stateDir = await Deno.makeTempDir({ prefix: "sbilab-bench-" });
  const args = [
    "run",
    "-A",
    "--unstable-net",
    `${ROOT}/main.ts`,
    "serve",
    "--stack",
    stack,
    "--transports",
    transports.join(","),
    "--host",
    "127.0.0.1",
    "--h2c-port",
    "0",
    "--tls-port",
    "0",
    "--state-dir",
    stateDir,
    "--delay-ms",
    String(delayMs),
  ];
  let child: Deno.ChildProcess;
  try {
    const [cmd, cmdArgs] = onServerCpu(await placement(), Deno.execPath(), args);
    child = new Deno.Command(cmd, {
      args: cmdArgs,
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).spawn();
  } catch (err) {
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    throw new ServerSetupError(`Cannot spawn lab serve: ${(err as Error).message}`, { cause: err });
  }
  let closed = false;
  const status = child.status;
  const stderrText = new Response(child.stderr).text();
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      child.kill("SIGTERM");
    } catch {
      // already exited
    }
    const killer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // gone
      }
    }, 5000);
    await status;
    clearTimeout(killer);
    await stderrText.catch(() => "");
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
  };
  let urls: Endpoints["urls"];
  try {
    // Rejects when lab serve exits first (stdout ends) or after the timeout; drains stdout after.
    urls = await readListening(child.stdout, transports, timeoutS * 1000);
  } catch (err) {
    // stdout ends a moment before the exit status arrives: wait for it, briefly.
    let exited = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      status.then(() => (exited = true)),
      new Promise((r) => (timer = setTimeout(r, 1000))),
    ]);
    clearTimeout(timer);
    await close();
    const lines = (await stderrText.catch(() => "")).trim().split("\n").filter(Boolean);
    throw new ServerSetupError(
      exited
        ? `lab serve exited before listening: ${lines.at(-1) ?? "no message"}`
        : `lab serve printed no listener within ${timeoutS} s`,
      { cause: err },
    );
  }
  return {
    urls,
    tls: { ca: { path: `${stateDir}/ca.pem` } },
    mode: "process",
    pid: child.pid,
    close,
  };
}

/** Options for {@linkcode targetEndpoints}. */
export interface TargetOptions {
  /** CA file to trust for https targets. */
  caFile?: string;
  /** Skip certificate verification. */
  insecure?: boolean;
}

/**
 * Endpoints for a server elsewhere: an `http://` URL serves h2c; an
 * `https://` URL serves h2-tls and, on the same port over UDP, h3.
 */
export function targetEndpoints(
  target: string,
  transports: TransportName[],
  options: TargetOptions = {},
): Endpoints {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ServerSetupError(`Invalid --target URL: ${target}`);
  }
  const origin = url.origin;
  const urls: Endpoints["urls"] = {};
  for (const t of transports) {
    if (t === "h2c" && url.protocol !== "http:") {
      throw new ServerSetupError(`Transport h2c needs an http:// target, got ${origin}`);
    }
    if (t !== "h2c" && url.protocol !== "https:") {
      throw new ServerSetupError(`Transport ${t} needs an https:// target, got ${origin}`);
    }
    urls[t] = origin;
  }
  const tls: TlsMaterial | undefined = url.protocol === "https:"
    ? {
      ca: options.caFile ? { path: options.caFile } : undefined,
      insecure: options.insecure ?? false,
    }
    : undefined;
  return { urls, tls, mode: "target", close: async () => {} };
}

/** Default transports for a target URL: h2c for http, h2-tls for https. */
export function defaultTargetTransports(target: string): TransportName[] {
  return target.startsWith("https:") ? ["h2-tls"] : ["h2c"];
}
