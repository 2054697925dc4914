/**
 * The peers an interop run talks to: our h3 server in this process, ngtcp2's
 * `gtlsserver` (package ngtcp2-server) as a child, and ngtcp2's `gtlsclient`
 * (package ngtcp2-client) run once per check.
 */
import { createHandler } from "../handler/mod.ts";
import { findTool, freeUdpPort } from "../lib/host.ts";
import { onInterrupt } from "../lib/interrupt.ts";
import { DEV_PKI_FILES, type DevPki, writeDevPki } from "../transports/pki.ts";
import type { H3DatagramStats } from "../transports/h3/h3_datagram_stats.ts";
import { createNativeH3Client } from "../transports/h3/client.ts";
import { createNativeH3Server, type H3ServerOptions } from "../transports/h3/server.ts";
import { createDenoH3Server } from "../transports/deno/h3_server.ts";

/** A server the checks can reach. */
export interface ServerPeer {
  /** `https://host:port`. */
  origin: string;
  host: string;
  port: number;
  /** The path that returns `size` bytes. */
  pathFor(size: number): string;
  /** Our server's counters (undefined for other servers). */
  datagramStats(): H3DatagramStats | undefined;
  close(): Promise<void>;
}

/** sbilab's payload path: `size` bytes. */
export function sbilabPath(size: number): string {
  return `/nbench/v1/payload?size=${size}`;
}

/** gtlsserver's generated-content path: `size` bytes. */
export function gtlsPath(size: number): string {
  return `/${size}`;
}

/** GnuTLS priority that leaves ChaCha20-Poly1305 as the only TLS 1.3 cipher. */
export const CHACHA20_ONLY = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305";

/** Starts our h3 server on 127.0.0.1 with `pki`'s server certificate. */
export async function startOurServer(
  pki: DevPki,
  options: Omit<H3ServerOptions, "tls"> = {},
): Promise<ServerPeer> {
  const server = await createNativeH3Server(createHandler(), {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
    ...options,
  });
  return {
    origin: server.url,
    host: "127.0.0.1",
    port: server.port,
    pathFor: sbilabPath,
    datagramStats: () => server.datagramStats() ?? undefined,
    close: () => server.close(),
  };
}

/** Starts the deno stack's h3 server (Deno's QUIC, quinn) on 127.0.0.1 with `pki`'s server certificate. */
export async function startOurQuinnServer(pki: DevPki): Promise<ServerPeer> {
  const server = await createDenoH3Server(createHandler(), {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  });
  return {
    origin: server.url,
    host: "127.0.0.1",
    port: server.port,
    pathFor: sbilabPath,
    datagramStats: () => undefined,
    close: () => server.close(),
  };
}

/** An HTTP/3 server process started by {@linkcode startH3Process}. */
export interface H3Process {
  /** `https://127.0.0.1:port`. */
  origin: string;
  port: number;
  /** Stops the process, waits for it and removes its files. */
  close(): Promise<void>;
}

/** Options of {@linkcode startH3Process}. */
export interface H3ProcessOptions {
  /** The server's name in messages, e.g. `gtlsserver`. */
  name: string;
  /** Certificates the process finds in its directory (as {@linkcode DEV_PKI_FILES}). */
  pki: DevPki;
  /** The path awaited until it answers. */
  readyPath: string;
  /** Turns the command line into the one spawned (for example pinned to a CPU). Default: as is. */
  command?: (exe: string, args: string[]) => [string, string[]];
}

/**
 * Starts the HTTP/3 server whose command line `argv(dir, port)` gives
 * (`dir` holds the PKI's files, `port` is a free UDP port of 127.0.0.1);
 * resolves once it answers `readyPath` (bounded: 5 s). An interrupt (Ctrl-C)
 * takes the child and its files along.
 * @throws {Error} when `argv` throws (a tool not installed) or it never answers
 */
export async function startH3Process(
  argv: (dir: string, port: number) => [string, string[]],
  options: H3ProcessOptions,
): Promise<H3Process> {
  const dir = await Deno.makeTempDir({ prefix: "sbilab-h3-peer-" });
  const port = freeUdpPort();
  let cmd: string, cmdArgs: string[];
  try {
    await writeDevPki(dir, options.pki);
    [cmd, cmdArgs] = (options.command ?? ((e, a) => [e, a]))(...argv(dir, port));
  } catch (err) {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw err;
  }
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  // Interrupted (Ctrl-C): take the child and its files along before the process ends.
  const unregister = onInterrupt(async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  });
  const close = async () => {
    unregister();
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const origin = `https://127.0.0.1:${port}`;
  // Until it has bound, a request fails at once (ICMP port unreachable).
  const client = await createNativeH3Client(origin, { tls: { insecure: true }, timeoutMs: 500 });
  let up = false;
  try {
    for (let i = 0; i < 100 && !up; i++) {
      up = await client.request({ path: options.readyPath }).then(() => true, () => false);
      if (!up) await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await client.close();
  }
  if (!up) {
    await close();
    throw new Error(`${options.name} did not answer within 5 s`);
  }
  return { origin, port, close };
}

/** Options of {@linkcode startGtlsServer}. */
export interface GtlsServerOptions {
  /** More gtlsserver flags, e.g. `--ciphers` or `-d DIR` (serve a directory). Default none. */
  extra?: string[];
  /** The path awaited until it answers. Default `/1` (generated content). */
  readyPath?: string;
  /** See {@linkcode H3ProcessOptions.command}. Default: as is. */
  command?: (exe: string, args: string[]) => [string, string[]];
}

/**
 * gtlsserver's command line: the executable (found on the PATH), `-q`,
 * `extra` flags, the address to bind, then the key and certificate files.
 * @throws {Error} when gtlsserver is not installed
 */
export function gtlsServerCommand(
  host: string,
  port: number,
  files: { key: string; cert: string },
  extra: string[] = [],
): [string, string[]] {
  const exe = findTool("gtlsserver");
  if (!exe) throw new Error("gtlsserver not found: apt-get install ngtcp2-server");
  return [exe, ["-q", ...extra, host, String(port), files.key, files.cert]];
}

/**
 * Starts `gtlsserver` on a free UDP port of 127.0.0.1 with `pki`'s server
 * certificate; resolves once it answers (bounded: 5 s). The one starter of
 * gtlsserver on this host: interop, the peers scenario and the fuzz capture.
 * @throws {Error} when gtlsserver is not installed or never answers
 */
export async function startGtlsServer(
  pki: DevPki,
  options: GtlsServerOptions = {},
): Promise<ServerPeer> {
  const p = await startH3Process((dir, port) =>
    gtlsServerCommand("127.0.0.1", port, {
      key: `${dir}/${DEV_PKI_FILES.serverKey}`,
      cert: `${dir}/${DEV_PKI_FILES.serverCert}`,
    }, options.extra), {
    name: "gtlsserver",
    pki,
    readyPath: options.readyPath ?? gtlsPath(1),
    command: options.command,
  });
  return {
    origin: p.origin,
    host: "127.0.0.1",
    port: p.port,
    pathFor: gtlsPath,
    datagramStats: () => undefined,
    close: p.close,
  };
}

/** What one gtlsclient run left behind. */
export interface GtlsClientRun {
  code: number;
  /** Its stderr. */
  stderr: string;
  /** Sizes of the downloaded files by name. */
  files: Map<string, number>;
}

/**
 * Runs `gtlsclient` against `host`:`port` for `urls` with `flags`, saving
 * downloads in a temporary folder; bounded by `timeoutMs`.
 * @throws {Error} when gtlsclient is not installed
 */
export async function runGtlsClient(
  host: string,
  port: number,
  urls: string[],
  options: { flags?: string[]; timeoutMs?: number } = {},
): Promise<GtlsClientRun> {
  const exe = findTool("gtlsclient");
  if (!exe) throw new Error("gtlsclient not found: apt-get install ngtcp2-client");
  const dir = await Deno.makeTempDir({ prefix: "sbilab-interop-" });
  try {
    const args = [
      ...(options.flags ?? ["-q"]),
      "--exit-on-all-streams-close",
      "--download",
      dir,
      host,
      String(port),
      ...urls,
    ];
    const out = await new Deno.Command(exe, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
    }).output();
    const files = new Map<string, number>();
    for await (const e of Deno.readDir(dir)) {
      files.set(e.name, (await Deno.stat(`${dir}/${e.name}`)).size);
    }
    const stderr = new TextDecoder().decode(out.stderr);
    return { code: out.code, stderr, files };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
