/**
 * The misbehaving clients a soak runs beside its steady load, each a bounded
 * loop on loopback that stops with its signal: junk bytes (TCP and UDP), idle
 * connections held open, HTTP/2 clients that ask for a different size near
 * 16 MiB on every stream with window 0 and never read, rapid resets (HEADERS
 * then RST_STREAM), a discovery flood (large NF profiles registered, then
 * the largest discovery answers asked by readers and by window-0 clients),
 * and a flood of TLS ClientHellos, QUIC Initials and junk from a process of
 * its own (handshake_flood.ts).
 */
import * as h2 from "./h2_frames.ts";
import { createClient } from "../transports/mod.ts";
import type { FloodCounts } from "./handshake_flood.ts";

/** The attacks a soak can run. */
export const ATTACKS = [
  "junk",
  "idle",
  "zero-window",
  "resets",
  "discovery",
  "handshakes",
] as const;
/** One attack's name. */
export type AttackName = (typeof ATTACKS)[number];

/** What the attackers did, counted. */
export interface AttackCounts {
  /** TCP connections that sent random bytes. */
  junkConnections: number;
  /** Random UDP datagrams sent to the h3 port. */
  junkDatagrams: number;
  /** Idle connections opened. */
  idleOpened: number;
  /** Idle connections the server closed. */
  idleClosed: number;
  /** Window-0 connections opened (each asks for 16 MiB on many streams). */
  zeroWindowOpened: number;
  /** Window-0 connections the server closed. */
  zeroWindowClosed: number;
  /** Streams opened and reset at once. */
  resets: number;
  /** Connections the server ended while they were being used for rapid resets. */
  resetConnectionsClosed: number;
  /** Discovery answers the flood's readers got (each up to 2000 kB). */
  discoveries: number;
  /** Discovery requests refused (503, reset) or failed. */
  discoveriesRefused: number;
  /** TLS ClientHellos and junk connections sent by the handshake flood. */
  handshakes: number;
  /** QUIC Initials and junk datagrams sent by the handshake flood. */
  initials: number;
}

/** Where to attack. */
export interface AttackTargets {
  /** TCP port of h2c, if served. */
  h2cPort?: number;
  /** TCP port of h2-tls, if served. */
  tlsPort?: number;
  /** UDP port of h3, if served. */
  h3Port?: number;
}

/** Options of {@linkcode runAttackers}. */
export interface AttackOptions {
  /** Which attacks. Default all of {@linkcode ATTACKS}. */
  attacks?: readonly AttackName[];
  /** Idle connections to hold. Default 200. */
  idleConnections?: number;
  /** Window-0 connections to hold. Default 20. */
  zeroWindowConnections?: number;
  /** Streams each window-0 connection asks for. Default 100. */
  zeroWindowStreams?: number;
  /** NF profiles of about 60 KB the discovery flood registers first. Default 256. */
  discoveryProfiles?: number;
  /** TLS connections the handshake flood keeps in flight. Default 256. */
  handshakeParallel?: number;
}

const LOCAL = "127.0.0.1";

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const id = setTimeout(done, ms);
    function done() {
      clearTimeout(id);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Reads and discards until the peer closes; resolves then (or when `conn` is closed here). */
async function drain(conn: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(16384);
  try {
    while ((await conn.read(buf)) !== null) { /* discard */ }
  } catch {
    // reset, or closed here
  }
}

/** Holds connections that were closed here, to tell them from the server's closes. */
class Held {
  #conns = new Set<Deno.Conn>();
  #closing = false;

  add(conn: Deno.Conn, onServerClose: () => void, watch = drain(conn)): void {
    this.#conns.add(conn);
    watch.then(() => {
      if (this.#closing || !this.#conns.delete(conn)) return;
      closeQuietly(conn);
      onServerClose();
    });
  }

  get size(): number {
    return this.#conns.size;
  }

  closeAll(): void {
    this.#closing = true;
    for (const c of this.#conns) closeQuietly(c);
    this.#conns.clear();
  }
}

async function junk(t: AttackTargets, n: AttackCounts, signal: AbortSignal): Promise<void> {
  const udp = t.h3Port
    ? Deno.listenDatagram({ transport: "udp", hostname: LOCAL, port: 0 })
    : undefined;
  try {
    while (!signal.aborted) {
      for (const port of [t.h2cPort, t.tlsPort]) {
        if (!port) continue;
        try {
          const c = await Deno.connect({ hostname: LOCAL, port });
          await writeAll(c, crypto.getRandomValues(new Uint8Array(4096))).catch(() => {});
          closeQuietly(c);
          n.junkConnections++;
        } catch {
          // refused while the server is at a limit: that is its answer
        }
      }
      if (udp && t.h3Port) {
        for (let i = 0; i < 50; i++) {
          await udp.send(crypto.getRandomValues(new Uint8Array(1200)), {
            transport: "udp",
            hostname: LOCAL,
            port: t.h3Port,
          });
          n.junkDatagrams++;
        }
      }
      await sleep(200, signal);
    }
  } finally {
    udp?.close();
  }
}

async function idle(
  t: AttackTargets,
  n: AttackCounts,
  signal: AbortSignal,
  target: number,
): Promise<void> {
  const held = new Held();
  const ports = [t.h2cPort, t.tlsPort].filter((p): p is number => p !== undefined);
  try {
    while (!signal.aborted && ports.length > 0) {
      for (let i = 0; held.size < target && i < target; i++) {
        try {
          const c = await Deno.connect({ hostname: LOCAL, port: ports[i % ports.length] });
          n.idleOpened++;
          held.add(c, () => n.idleClosed++);
        } catch {
          break;
        }
      }
      await sleep(500, signal);
    }
  } finally {
    held.closeAll();
  }
}

/** Sizes the window-0 attacker asks, each different: just under 16 MiB, counting down. */
let nextSize = 0;
function distinctPayloadPath(): string {
  const size = 16 * 1024 * 1024 - 1 - (nextSize++ % 1_000_000);
  return `/nbench/v1/payload?size=${size}`;
}

async function zeroWindow(
  t: AttackTargets,
  n: AttackCounts,
  signal: AbortSignal,
  target: number,
  streams: number,
): Promise<void> {
  if (!t.h2cPort) return;
  const held = new Held();
  const authority = `${LOCAL}:${t.h2cPort}`;
  try {
    while (!signal.aborted) {
      while (held.size < target) {
        let c: Deno.Conn;
        try {
          c = await Deno.connect({ hostname: LOCAL, port: t.h2cPort });
        } catch {
          break;
        }
        const frames = [h2.PREFACE, h2.settingsFrame([[h2.SETTING.INITIAL_WINDOW_SIZE, 0]])];
        // Every stream a size never asked before: no cached answer helps the server.
        for (let i = 0; i < streams; i++) {
          const block = h2.requestBlock("GET", distinctPayloadPath(), authority);
          frames.push(h2.headersFrame(1 + 2 * i, block));
        }
        try {
          for (const f of frames) await writeAll(c, f);
        } catch {
          closeQuietly(c);
          break;
        }
        n.zeroWindowOpened++;
        // Reads (the kernel's window stays open) but never sends WINDOW_UPDATE.
        held.add(c, () => n.zeroWindowClosed++);
      }
      await sleep(1000, signal);
    }
  } finally {
    held.closeAll();
  }
}

async function resets(t: AttackTargets, n: AttackCounts, signal: AbortSignal): Promise<void> {
  if (!t.h2cPort) return;
  const block = h2.requestBlock("GET", "/nbench/v1/payload?size=256", `${LOCAL}:${t.h2cPort}`);
  while (!signal.aborted) {
    let c: Deno.Conn;
    try {
      c = await Deno.connect({ hostname: LOCAL, port: t.h2cPort });
    } catch {
      await sleep(200, signal);
      continue;
    }
    let open = true;
    const watch = drain(c).then(() => (open = false));
    try {
      await writeAll(c, h2.PREFACE);
      await writeAll(c, h2.settingsFrame([]));
      // Bounded: 100 streams per 100 ms, until the server ends the connection or the soak ends.
      for (let stream = 1; open && !signal.aborted && stream < 2 ** 31 - 200;) {
        const batch: Uint8Array[] = [];
        for (let i = 0; i < 100; i++, stream += 2) {
          batch.push(h2.headersFrame(stream, block), h2.rstStreamFrame(stream));
        }
        const all = new Uint8Array(batch.reduce((s, b) => s + b.length, 0));
        let off = 0;
        for (const b of batch) {
          all.set(b, off);
          off += b.length;
        }
        await writeAll(c, all);
        n.resets += 100;
        await sleep(100, signal);
      }
    } catch {
      // the server ended the connection mid-write
    }
    if (!open && !signal.aborted) n.resetConnectionsClosed++;
    closeQuietly(c);
    await watch;
  }
}

const DISCOVERY = "/nnrf-disc/v1/nf-instances?target-nf-type=AMF&requester-nf-type=SMF";

/** Registers `profiles` NF profiles of about 60 KB each over h2c; resolves once all are in. */
async function registerProfiles(
  port: number,
  profiles: number,
  signal: AbortSignal,
): Promise<void> {
  const client = await createClient("h2c", `http://${LOCAL}:${port}`, { timeoutMs: 10_000 });
  try {
    const pad = "x".repeat(60_000);
    for (let i = 0; i < profiles && !signal.aborted; i++) {
      const id = crypto.randomUUID();
      const body = JSON.stringify({ nfInstanceId: id, nfType: "AMF", nfStatus: "REGISTERED", pad });
      await client.request({
        method: "PUT",
        path: `/nnrf-nfm/v1/nf-instances/${id}`,
        headers: { "content-type": "application/json" },
        body: new TextEncoder().encode(body),
      });
    }
  } finally {
    await client.close().catch(() => {});
  }
}

async function discovery(
  t: AttackTargets,
  n: AttackCounts,
  signal: AbortSignal,
  profiles: number,
): Promise<void> {
  if (!t.h2cPort) return;
  const port = t.h2cPort;
  // The profiles go in while the readers already ask: the answers grow up to their bound.
  const registering = registerProfiles(port, profiles, signal).catch(() => {});
  const held = new Held();
  const block = h2.requestBlock("GET", `${DISCOVERY}&max-payload-size=2000`, `${LOCAL}:${port}`);
  const readers = Array.from({ length: 4 }, async () => {
    const client = await createClient("h2c", `http://${LOCAL}:${port}`, { timeoutMs: 10_000 });
    try {
      // Bounded by the signal.
      while (!signal.aborted) {
        try {
          const res = await client.request({
            method: "GET",
            path: `${DISCOVERY}&max-payload-size=2000`,
          });
          if (res.status === 200) n.discoveries++;
          else n.discoveriesRefused++;
        } catch {
          n.discoveriesRefused++;
          await sleep(50, signal);
        }
      }
    } finally {
      await client.close().catch(() => {});
    }
  });
  try {
    // Window-0 readers asking the same: 2 connections × 100 streams, renewed when closed.
    while (!signal.aborted) {
      while (held.size < 2) {
        let c: Deno.Conn;
        try {
          c = await Deno.connect({ hostname: LOCAL, port });
        } catch {
          break;
        }
        const frames = [h2.PREFACE, h2.settingsFrame([[h2.SETTING.INITIAL_WINDOW_SIZE, 0]])];
        for (let i = 0; i < 100; i++) frames.push(h2.headersFrame(1 + 2 * i, block));
        try {
          await writeAll(c, concat(frames));
        } catch {
          closeQuietly(c);
          break;
        }
        held.add(c, () => {});
      }
      await sleep(1000, signal);
    }
  } finally {
    held.closeAll();
    await Promise.allSettled([...readers, registering]);
  }
}

/**
 * The handshake flood in a process of its own (so that its work is not the
 * soak's): it prints its running counts once a second; they land in `n`.
 */
async function handshakes(
  t: AttackTargets,
  n: AttackCounts,
  signal: AbortSignal,
  parallel: number,
): Promise<void> {
  if ((!t.tlsPort && !t.h3Port) || signal.aborted) return;
  const script = new URL("./handshake_flood.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-net",
      script,
      String(t.tlsPort ?? 0),
      String(t.h3Port ?? 0),
      String(parallel),
      "0",
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const stop = () => {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
  };
  signal.addEventListener("abort", stop, { once: true });
  const base = { handshakes: n.handshakes, initials: n.initials };
  try {
    let text = "";
    // Bounded by the child, which ends at the signal.
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const lines = text.split("\n");
      text = lines.pop()!;
      for (const line of lines) {
        try {
          const c = JSON.parse(line) as FloodCounts;
          n.handshakes = base.handshakes + c.hellos + c.junk;
          n.initials = base.initials + c.initials + c.datagrams;
        } catch {
          // not a count line
        }
      }
    }
  } finally {
    signal.removeEventListener("abort", stop);
    stop();
    await child.status;
  }
}

/** Runs the attacks against `targets` until `signal` aborts; resolves once everything is closed. */
export async function runAttackers(
  targets: AttackTargets,
  counts: AttackCounts,
  signal: AbortSignal,
  options: AttackOptions = {},
): Promise<void> {
  const want = new Set(options.attacks ?? ATTACKS);
  const loops: Promise<void>[] = [];
  if (want.has("junk")) loops.push(junk(targets, counts, signal));
  if (want.has("idle")) loops.push(idle(targets, counts, signal, options.idleConnections ?? 200));
  if (want.has("zero-window")) {
    loops.push(
      zeroWindow(
        targets,
        counts,
        signal,
        options.zeroWindowConnections ?? 20,
        options.zeroWindowStreams ?? 100,
      ),
    );
  }
  if (want.has("resets")) loops.push(resets(targets, counts, signal));
  if (want.has("discovery")) {
    loops.push(discovery(targets, counts, signal, options.discoveryProfiles ?? 256));
  }
  if (want.has("handshakes")) {
    loops.push(handshakes(targets, counts, signal, options.handshakeParallel ?? 256));
  }
  await Promise.allSettled(loops);
}

/** Counters all at zero. */
export function noAttacks(): AttackCounts {
  return {
    junkConnections: 0,
    junkDatagrams: 0,
    idleOpened: 0,
    idleClosed: 0,
    zeroWindowOpened: 0,
    zeroWindowClosed: 0,
    resets: 0,
    resetConnectionsClosed: 0,
    discoveries: 0,
    discoveriesRefused: 0,
    handshakes: 0,
    initials: 0,
  };
}
