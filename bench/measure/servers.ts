/**
 * Where the benchmark sends its requests: servers started in their own
 * process (`lab serve`, the default), in this process, or a target elsewhere.
 */
import { placement } from "./affinity.ts";
import type { TlsMaterial } from "../../transports/tls.ts";
import type { SbiServer, StackName, TransportName } from "../../transports/types.ts";
import { labCommand, startLabServe } from "../../lib/lab_serve.ts";
import { V8_FLAGS_ARG } from "../../lib/v8_flags.ts";

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
  /**
   * The `deno run` V8 argument of the spawned `lab serve`. Default {@linkcode V8_FLAGS_ARG}, as
   * `lab serve` runs on its own (the soak's server); the benchmark passes its own
   * (`BENCH_V8_FLAGS_ARG`, without the memory reducer).
   */
  v8Flags?: string;
}

/** Starts servers for `transports` on loopback. */
export async function startServers(
  transports: TransportName[],
  options: StartOptions = {},
): Promise<Endpoints> {
  const stack = options.stack ?? "native";
  return options.inProcess
    ? await startInProcess(transports, stack, options.delayMs ?? 0)
    : await startProcess(
      transports,
      stack,
      options.delayMs ?? 0,
      options.startTimeoutS ?? 60,
      options.v8Flags ?? V8_FLAGS_ARG,
    );
}

async function startInProcess(
  transports: TransportName[],
  stack: StackName,
  delayMs: number,
): Promise<Endpoints> {
  const { createHandler } = await import("../../handler/mod.ts");
  const { createServer } = await import("../../transports/mod.ts");
  const { createDevPki } = await import("../../transports/pki.ts");
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
  v8Flags: string,
): Promise<Endpoints> {
  const stateDir = await Deno.makeTempDir({ prefix: "sbilab-bench-" });
  let server;
  try {
    server = await startLabServe({ transports, stack, stateDir, delayMs, h3ExactEcn: false }, {
      lab: labCommand(v8Flags),
      cpu: (await placement())?.server,
      timeoutMs: timeoutS * 1000,
    });
  } catch (err) {
    await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    throw new ServerSetupError(`Cannot start lab serve: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let closed = false;
  return {
    urls: server.urls,
    tls: { ca: { path: `${stateDir}/ca.pem` } },
    mode: "process",
    pid: server.pid,
    async close() {
      if (closed) return;
      closed = true;
      await server.stop();
      await Deno.remove(stateDir, { recursive: true }).catch(() => {});
    },
  };
}

/** Options for {@linkcode targetEndpoints}. */
export interface TargetOptions {
  /** CA file to trust for https targets. */
  caFile?: string;
  /** Skip certificate verification. */
  insecure?: boolean;
  /** Where h3 listens when not at the target's own port (`--target-h3`). Default the target. */
  h3Target?: string;
}

/**
 * The transports of a `--target`: one URL (`http://` for h2c, `https://` for
 * the TLS transports), or a comma-separated list of `transport=url` pairs
 * naming each transport's own listener (`h2c=http://a:1,h3=https://a:2`).
 * Returns the per-transport URLs of a list, undefined for one URL.
 */
export function parseTargetList(
  target: string,
): Partial<Record<TransportName, string>> | undefined {
  if (!/^[a-z0-9-]+=/.test(target)) return undefined;
  const out: Partial<Record<TransportName, string>> = {};
  for (const part of target.split(",")) {
    const eq = part.indexOf("=");
    const t = part.slice(0, eq).trim();
    if (eq < 1 || !["h2c", "h2-tls", "h3"].includes(t)) {
      throw new ServerSetupError(`Invalid --target entry ${part} (use transport=url)`);
    }
    out[t as TransportName] = part.slice(eq + 1).trim();
  }
  return out;
}

/**
 * Endpoints for a server elsewhere: an `http://` URL serves h2c; an
 * `https://` URL serves h2-tls and, on the same port over UDP, h3 (or at
 * `options.h3Target`); a `transport=url` list names each transport's listener.
 */
export function targetEndpoints(
  target: string,
  transports: TransportName[],
  options: TargetOptions = {},
): Endpoints {
  const list = parseTargetList(target);
  const urls: Endpoints["urls"] = {};
  let h3Url: URL | undefined;
  if (options.h3Target !== undefined) {
    try {
      h3Url = new URL(options.h3Target);
    } catch {
      throw new ServerSetupError(`Invalid --target-h3 URL: ${options.h3Target}`);
    }
    if (h3Url.protocol !== "https:") {
      throw new ServerSetupError(`--target-h3 needs an https:// URL, got ${h3Url.origin}`);
    }
  }
  let https = h3Url !== undefined;
  for (const t of transports) {
    if (t === "h3" && h3Url) {
      urls[t] = h3Url.origin;
      continue;
    }
    const text = list ? list[t] : target;
    if (text === undefined) throw new ServerSetupError(`--target names no URL for ${t}`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new ServerSetupError(`Invalid --target URL: ${text}`);
    }
    const origin = url.origin;
    if (t === "h2c" && url.protocol !== "http:") {
      throw new ServerSetupError(`Transport h2c needs an http:// target, got ${origin}`);
    }
    if (t !== "h2c" && url.protocol !== "https:") {
      throw new ServerSetupError(`Transport ${t} needs an https:// target, got ${origin}`);
    }
    https ||= url.protocol === "https:";
    urls[t] = origin;
  }
  const tls: TlsMaterial | undefined = https
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
