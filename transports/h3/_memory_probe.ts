/**
 * Memory probe for the h3 robustness tests, run in a child process so its
 * resident size reflects this workload alone (a `deno test` process also holds
 * every other test module's garbage). Start it with `--v8-flags=--expose-gc`:
 * each reading follows a full garbage collection.
 *
 * Modes (first argument):
 * - `requests N`: after 1,000 warm-up requests, N sequential 1 KiB echo POSTs
 *   on one connection, a reading every N/10 requests;
 * - `datagrams N`: after 2,000 warm-up datagrams, N random, truncated and
 *   corrupted datagrams at the server port in bursts of 16 with a real
 *   request after each burst, a reading about every N/10 datagrams; the
 *   first and last readings are taken after half-open connections were reaped.
 *
 * Prints one JSON line ({@linkcode MemoryReport}) on stdout and nothing else.
 */
import { createHandler } from "../../handler/mod.ts";
import { createDevPki } from "../pki.ts";
import { H3ClientConn, H3Config } from "./ffi.ts";
import { loadH3Library } from "./loader.ts";
import { createH3Client, createH3Server } from "./mod.ts";

/** One reading: resident size and V8 heap after a full GC, at `done` units of work. */
export interface MemoryReading {
  /** Requests or datagrams done since warm-up. */
  done: number;
  /** Resident set size in bytes. */
  rss: number;
  /** V8 heap in use in bytes. */
  heapUsed: number;
  /** V8 heap reserved in bytes. */
  heapTotal: number;
  /** C heap in use (glibc `mallinfo2`: in-use chunks plus mmapped ones) in bytes; -1 elsewhere. */
  malloc: number;
}

/** What the probe prints. */
export interface MemoryReport {
  /** Readings, the first right after warm-up. */
  readings: MemoryReading[];
  /** Connections the server held at the end (after reaping half-open ones). */
  serverConnections: number;
  /** Request streams the server's shim still held at the end. */
  serverStreams: number;
  /** Request streams the client's shim still held at the end. */
  clientStreams: number;
  /** Datagrams the server handed to its shim, real ones included. */
  serverDatagrams: number;
  /** Failures of the workload (wrong lengths, errors), as text. */
  failures: string[];
}

interface Diagnostics {
  connectionCount: number;
  openStreams: number;
  datagramsReceived: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

/** glibc's allocator statistics: the shim, ngtcp2, nghttp3 and GnuTLS allocate with it. */
function openMallinfo(): (() => number) | null {
  try {
    const lib = Deno.dlopen(
      "libc.so.6",
      {
        // struct mallinfo2 mallinfo2(void); ten size_t fields
        mallinfo2: { parameters: [], result: { struct: Array(10).fill("usize") } },
      } as const,
    );
    return () => {
      const v = new BigUint64Array(lib.symbols.mallinfo2().buffer);
      return Number(v[7] + v[4]); // uordblks (in use) + hblkhd (mmapped)
    };
  } catch {
    return null;
  }
}
const mallocInUse = openMallinfo();

function reading(done: number): MemoryReading {
  if (!gc) throw new Error("Run with --v8-flags=--expose-gc");
  gc();
  gc();
  const m = Deno.memoryUsage();
  return {
    done,
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    malloc: mallocInUse?.() ?? -1,
  };
}

/** Waits (bounded) until `ok()` holds; the shim has no event for "state freed". */
async function settle(ok: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!ok() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** A real first datagram (client Initial) from a fresh shim connection, to mutate. */
async function realInitial(port: number): Promise<Uint8Array> {
  const { symbols } = await loadH3Library();
  using config = new H3Config(symbols, false, { verifyPeer: false });
  using conn = new H3ClientConn(symbols, config, {
    serverName: "localhost",
    localIp: "127.0.0.1",
    localPort: 9,
    remoteIp: "127.0.0.1",
    remotePort: port,
  });
  const out = new Uint8Array(65536);
  const n = conn.send(out);
  return out.slice(0, n);
}

function badDatagram(i: number, initial: Uint8Array): Uint8Array {
  switch (i % 4) {
    case 0: // random bytes, random length (including 0)
      return crypto.getRandomValues(new Uint8Array(Math.floor(Math.random() * 1500)));
    case 1: // a real Initial cut short
      return initial.slice(0, Math.floor(Math.random() * initial.length));
    case 2: { // a real Initial with a few bits flipped
      const d = initial.slice();
      for (let k = 0; k < 3; k++) d[Math.floor(Math.random() * d.length)] ^= 1 << (k + 1);
      return d;
    }
    default: { // short-header packets with random connection ids
      const d = crypto.getRandomValues(new Uint8Array(40 + Math.floor(Math.random() * 60)));
      d[0] = (d[0] & 0x3f) | 0x40;
      return d;
    }
  }
}

async function run(mode: string, n: number): Promise<MemoryReport> {
  const pki = await createDevPki();
  const server = await createH3Server(createHandler(), {
    tls: { cert: pki.serverCertPem, key: pki.serverKeyPem },
  });
  const client = await createH3Client(server.url, { tls: { ca: pki.caCertPem } });
  const sd = server as unknown as Diagnostics;
  const cd = client as unknown as Diagnostics;
  const failures: string[] = [];
  const readings: MemoryReading[] = [];
  const step = mode === "datagrams"
    ? Math.max(1000, Math.round(n / 10000) * 1000)
    : Math.max(1, Math.floor(n / 10));
  try {
    if (mode === "requests") {
      const body = new Uint8Array(1024).fill(7);
      const one = async (i: number) => {
        const res = await client.request({ method: "POST", path: "/nbench/v1/echo", body });
        if (res.body.length !== body.length && failures.length < 10) {
          failures.push(`request ${i} returned ${res.body.length} bytes`);
        }
      };
      for (let i = 0; i < 1000; i++) await one(-i);
      readings.push(reading(0));
      for (let i = 1; i <= n; i++) {
        await one(i);
        if (i % step === 0) readings.push(reading(i));
      }
    } else if (mode === "datagrams") {
      const sock = Deno.listenDatagram({ transport: "udp", hostname: "127.0.0.1", port: 0 });
      const to: Deno.NetAddr = { transport: "udp", hostname: "127.0.0.1", port: server.port };
      try {
        const initial = await realInitial(server.port);
        // Bursts stay far below the socket's receive buffer, and the real request after
        // each one queues behind it, so every bad datagram reaches the shim.
        const burst = async (from: number, count: number) => {
          for (let i = from; i < from + count; i++) {
            await sock.send(badDatagram(i, initial), to);
            if ((i - from) % 16 === 15 || i === from + count - 1) {
              // A real request between bursts proves the server still serves.
              const res = await client.request({ path: "/nbench/v1/payload?size=64" });
              if (res.body.length !== 64) failures.push(`served ${res.body.length} bytes at ${i}`);
            }
          }
        };
        for (let i = 0; i < 2000; i += 1000) await burst(-2000 + i, 1000);
        // Connections started by corrupted Initials end at the 5 s handshake timeout:
        // the first and the last reading are taken once they are gone.
        await settle(() => sd.connectionCount <= 1, 8000);
        readings.push(reading(0));
        for (let i = 0; i < n; i += 1000) {
          await burst(i, Math.min(1000, n - i));
          if (i + 1000 < n && (i + 1000) % step === 0) readings.push(reading(i + 1000));
        }
      } finally {
        sock.close();
      }
      await settle(() => sd.connectionCount <= 1, 8000);
      readings.push(reading(n));
      const res = await client.request({ path: "/nbench/v1/payload?size=16384" });
      if (res.body.length !== 16384) failures.push(`served ${res.body.length} of 16384 bytes`);
    } else {
      throw new TypeError(`Unknown mode ${mode}`);
    }
    await settle(() => sd.openStreams === 0 && cd.openStreams === 0, 2000);
    return {
      readings,
      serverConnections: sd.connectionCount,
      serverStreams: sd.openStreams,
      clientStreams: cd.openStreams,
      serverDatagrams: sd.datagramsReceived,
      failures,
    };
  } finally {
    await client.close();
    await server.close();
  }
}

if (import.meta.main) {
  const report = await run(Deno.args[0] ?? "requests", Number(Deno.args[1] ?? 10000));
  console.log(JSON.stringify(report));
}
