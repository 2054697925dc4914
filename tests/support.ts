/**
 * Shared helpers for the cross-transport, interop and CLI tests: start one
 * server per transport around a fresh handler, find tools, pick free ports.
 */
import { createHandler, type HandlerOptions } from "../handler/mod.ts";
import type { SbiHandler, SbiRequest } from "../handler/types.ts";
import {
  availableTransports,
  createClient,
  createServer,
  type SbiClient,
  type SbiServer,
  type StackName,
  STACKS,
  type TransportName,
} from "../transports/mod.ts";
import { createDevPki, type DevPki } from "../transports/pki.ts";
import {
  labCommand,
  type LabServeOptions,
  type LabServeProcess,
  startLabServe as startServe,
} from "../lib/lab_serve.ts";
import { findTool } from "../lib/host.ts";
import { startGtlsServer as startPeerGtlsServer } from "../interop/peers.ts";

export { findTool, freePort, freeUdpPort, ROOT, waitForPort } from "../lib/host.ts";

let pkiPromise: Promise<DevPki> | undefined;
/** One dev PKI shared by every test in the process. */
export function testPki(): Promise<DevPki> {
  return pkiPromise ??= createDevPki();
}

/**
 * Resolves once `cond()` holds, checking every 10 ms; throws naming `what`
 * after `ms` (default 5 s). For state that offers no event to await (a
 * server's connection count); await the event where there is one.
 */
export async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) {
      throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * `ignore` flag for a test needing `what`: false when it is there; else a
 * skip that names the Debian packages to install, except in CI (env `CI`
 * set), which installs everything, so there a missing one throws.
 */
export function skipWithout(present: boolean, what: string, packages: string): boolean {
  if (present) return false;
  const why = `${what} not found (apt-get install ${packages})`;
  if (Deno.env.get("CI")) throw new Error(`In CI: ${why}`);
  console.warn(`skipping: ${why}`);
  return true;
}

/** `ignore` flag for a test needing `tool` (see {@linkcode skipWithout}). */
export function needsTool(tool: string, pkg: string): boolean {
  return skipWithout(findTool(tool) !== undefined, tool, pkg);
}

/** Transports to run cross-transport tests on; in CI a missing h3 is an error, not a skip. */
export async function testTransports(stack: StackName = "native"): Promise<TransportName[]> {
  const available = await availableTransports(stack);
  if (stack === "native") {
    const missing = [
      ...(available.includes("h2c")
        ? []
        : ["h2 (apt-get install libnghttp2-dev libgnutls28-dev gcc)"]),
      ...(available.includes("h3") ? [] : [
        "h3 (apt-get install libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev)",
      ]),
    ];
    if (missing.length && Deno.env.get("CI")) {
      throw new Error(`Native transports unavailable in CI: ${missing.join(", ")}`);
    }
    if (missing.length) {
      console.warn(`skipping native ${missing.join(" and ")}: module unavailable`);
    }
  }
  return available;
}

/** Every (stack, transport) pair usable here: the native stack's, then the deno stack's. */
export async function testTargets(): Promise<{ stack: StackName; transport: TransportName }[]> {
  const out: { stack: StackName; transport: TransportName }[] = [];
  for (const stack of STACKS) {
    for (const transport of await testTransports(stack)) out.push({ stack, transport });
  }
  return out;
}

/** A server and a client for one transport. */
export interface Pair {
  transport: TransportName;
  server: SbiServer;
  client: SbiClient;
  close(): Promise<void>;
}

/** Starts `transport` around `handler` (default: a fresh handler) and connects a client. */
export async function startPair(
  transport: TransportName,
  options: {
    handler?: SbiHandler;
    handlerOptions?: HandlerOptions;
    timeoutMs?: number;
    /** Stack of server and client. Default `native`. */
    stack?: StackName;
  } = {},
): Promise<Pair> {
  const pki = await testPki();
  const handler = options.handler ?? createHandler(options.handlerOptions);
  const server = await createServer(transport, handler, {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    stack: options.stack,
  });
  const client = await createClient(transport, server.url, {
    stack: options.stack,
    tls: { ca: pki.caCertPem },
    timeoutMs: options.timeoutMs,
  });
  return {
    transport,
    server,
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

/** Runs a command to completion with a time bound; returns exit code and output. */
export async function runTool(
  cmd: string,
  args: string[],
  timeoutMs = 20_000,
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const child = new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", stdin: "null" })
    .spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  try {
    const out = await child.output();
    return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

/** A POST of `body` to the handler's echo route, as a client request. */
export function echoPost(body: Uint8Array) {
  return {
    method: "POST",
    path: "/nbench/v1/echo",
    headers: { "content-type": "application/octet-stream" },
    body,
  };
}

/** The handler's own answer, called directly, for comparison. */
export function directCall(
  handler: SbiHandler,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string> = {},
  body: Uint8Array = new Uint8Array(0),
) {
  const url = new URL(pathAndQuery, "http://direct");
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return handler({ method, path: url.pathname, query: url.searchParams, headers: lower, body });
}

/** A `lab serve` child process with its dev PKI folder. */
export interface LabServe extends LabServeProcess {
  /** The dev PKI folder (its `ca.pem` signs the server). */
  stateDir: string;
}

/**
 * Starts `lab serve` for `options` in a child process (under `ulimit -n` when
 * `nofile` is given) and waits for its listening lines; bounded by 30 s. The
 * dev PKI goes to a fresh folder unless `options.stateDir` names one; a
 * folder made here is removed by `stop`.
 */
export async function startLabServe(
  options: LabServeOptions,
  launch: {
    /** Limit of open files for the server. */
    nofile?: number;
    /** The command that runs `lab` (default: this checkout's main.ts under this Deno). */
    lab?: readonly string[];
    /** SIGKILL this long after `stop`'s SIGTERM. Default 5 000 ms. */
    killAfterMs?: number;
  } = {},
): Promise<LabServe> {
  const own = options.stateDir === undefined;
  const stateDir = options.stateDir ?? await Deno.makeTempDir({ prefix: "sbilab-test-" });
  const removeOwn = () => own ? Deno.remove(stateDir, { recursive: true }).catch(() => {}) : {};
  let srv: LabServeProcess;
  try {
    srv = await startServe({ ...options, stateDir }, {
      nofile: launch.nofile,
      lab: launch.lab,
      killAfterMs: launch.killAfterMs,
    });
  } catch (err) {
    await removeOwn();
    throw err;
  }
  return {
    ...srv,
    stateDir,
    stop: async () => {
      const status = await srv.stop();
      await removeOwn();
      return status;
    },
  };
}

/** Resident set size of a process in bytes, from /proc. */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  if (!m) throw new Error(`No VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** Runs the `lab` CLI as a user would (stdin closed), killed after `timeoutMs`. */
export async function runLab(
  args: string[],
  timeoutMs = 30_000,
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const [cmd, ...prefix] = labCommand();
  const child = new Deno.Command(cmd, {
    args: [...prefix, ...args],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

/** A handler that records every request it ran, around `inner` (default: a fresh handler). */
export function recordingHandler(
  inner: SbiHandler = createHandler(),
): { handler: SbiHandler; calls: SbiRequest[] } {
  const calls: SbiRequest[] = [];
  return {
    calls,
    handler: (req) => {
      calls.push(req);
      return inner(req);
    },
  };
}

/**
 * Starts ngtcp2's example server (`gtlsserver`, package ngtcp2-server) serving
 * `files` from a temporary folder, through the one starter
 * (`interop/peers.ts`: a free UDP port of 127.0.0.1, `pki`'s server
 * certificate, resolved once it answers). `stop()` ends it and removes its folders.
 */
export async function startGtlsServer(
  pki: DevPki,
  files: Record<string, Uint8Array>,
): Promise<{ port: number; stop(): Promise<void> }> {
  const docs = await Deno.makeTempDir();
  for (const [name, data] of Object.entries(files)) await Deno.writeFile(`${docs}/${name}`, data);
  let peer;
  try {
    peer = await startPeerGtlsServer(pki, { extra: ["-d", docs] });
  } catch (err) {
    await Deno.remove(docs, { recursive: true });
    throw err;
  }
  return {
    port: peer.port,
    stop: async () => {
      await peer.close();
      await Deno.remove(docs, { recursive: true });
    },
  };
}
