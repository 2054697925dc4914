/**
 * A junk-handshake flood for the soak and the hardening tests: real TLS ClientHellos (one
 * recorded from Deno's own TLS client, then replayed, so the server does a
 * full handshake's first flight for each while the flood costs almost
 * nothing), random bytes on the TLS port, QUIC Initials replayed from fresh
 * source ports and random datagrams on the h3 port. Every loop is bounded and
 * stops with its signal.
 */

const LOCAL = "127.0.0.1";

/** Records the first flight a TLS client sends (its ClientHello), with ALPN h2. */
export async function recordClientHello(): Promise<Uint8Array> {
  const listener = Deno.listen({ hostname: LOCAL, port: 0 });
  try {
    const client = Deno.connectTls({
      hostname: LOCAL,
      port: listener.addr.port,
      alpnProtocols: ["h2"],
    }).catch(() => undefined);
    const conn = await listener.accept();
    const buf = new Uint8Array(16384);
    const n = await conn.read(buf);
    conn.close();
    (await client)?.close();
    if (n === null) throw new Error("The TLS client sent no ClientHello");
    return buf.slice(0, n);
  } finally {
    listener.close();
  }
}

/** Records the first datagram a QUIC client sends (an Initial with its ClientHello), ALPN h3. */
export async function recordQuicInitial(): Promise<Uint8Array> {
  const udp = Deno.listenDatagram({ transport: "udp", hostname: LOCAL, port: 0 });
  // A client endpoint of its own, closed after the first datagram: the dial ends with it.
  const endpoint = new Deno.QuicEndpoint({ hostname: LOCAL, port: 0 });
  try {
    const port = (udp.addr as Deno.NetAddr).port;
    const dialing = Promise.resolve(Deno.connectQuic({
      hostname: LOCAL,
      port,
      alpnProtocols: ["h3"],
      serverName: "localhost",
      endpoint,
    })).catch(() => undefined);
    const [bytes] = await udp.receive();
    endpoint.close();
    await dialing;
    return bytes;
  } finally {
    endpoint.close();
    udp.close();
  }
}

/** What the flood did. */
export interface FloodCounts {
  /** TLS connections that sent a ClientHello. */
  hellos: number;
  /** TCP connections that sent random bytes. */
  junk: number;
  /** QUIC Initials replayed. */
  initials: number;
  /** Random UDP datagrams. */
  datagrams: number;
}

/** Options of {@linkcode floodHandshakes}. */
export interface FloodOptions {
  /** TLS (TCP) port to flood. */
  tlsPort?: number;
  /** h3 (UDP) port to flood. */
  h3Port?: number;
  /** Connections in flight at once on the TLS port. Default 64. */
  parallel?: number;
  /** Stops the flood. */
  signal: AbortSignal;
  /** Where to count (read it while the flood runs). Default a new record. */
  counts?: FloodCounts;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** One TLS-port connection: a ClientHello (or random bytes), read the answer, close; cut short when `signal` aborts. */
async function hit(port: number, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
  let c: Deno.Conn | undefined;
  const cut = () => {
    try {
      c?.close();
    } catch { /* closed */ }
  };
  signal.addEventListener("abort", cut, { once: true });
  try {
    c = await Deno.connect({ hostname: LOCAL, port });
    if (signal.aborted) return;
    await writeAll(c, bytes);
    // Wait for the server's first flight (or its close), so that the work is done.
    await c.read(new Uint8Array(16384));
  } catch {
    // refused, reset, or cut short: that is an answer too
  } finally {
    signal.removeEventListener("abort", cut);
    cut();
  }
}

/**
 * Floods until `signal` aborts: `parallel` loops of ClientHellos (every
 * fourth connection random bytes instead) at the TLS port, and replayed
 * Initials plus random datagrams at the h3 port. Resolves with the counts.
 */
export async function floodHandshakes(options: FloodOptions): Promise<FloodCounts> {
  const counts: FloodCounts = options.counts ?? { hellos: 0, junk: 0, initials: 0, datagrams: 0 };
  const { signal } = options;
  const loops: Promise<void>[] = [];
  if (options.tlsPort) {
    const port = options.tlsPort;
    const hello = await recordClientHello();
    for (let i = 0; i < (options.parallel ?? 64); i++) {
      loops.push((async () => {
        // Bounded by the signal.
        for (let k = 0; !signal.aborted; k++) {
          if (k % 4 === 3) {
            counts.junk++;
            await hit(port, crypto.getRandomValues(new Uint8Array(517)), signal);
          } else {
            counts.hellos++;
            await hit(port, hello, signal);
          }
        }
      })());
    }
  }
  if (options.h3Port) {
    const port = options.h3Port;
    const initial = await recordQuicInitial();
    loops.push((async () => {
      const target = { transport: "udp" as const, hostname: LOCAL, port };
      // Bounded by the signal; one fresh source port per round of Initials.
      while (!signal.aborted) {
        const udp = Deno.listenDatagram({ transport: "udp", hostname: LOCAL, port: 0 });
        try {
          for (let i = 0; i < 16; i++) {
            await udp.send(initial, target);
            counts.initials++;
            await udp.send(crypto.getRandomValues(new Uint8Array(1200)), target);
            counts.datagrams++;
          }
        } finally {
          udp.close();
        }
        await new Promise((r) => setTimeout(r, 1));
      }
    })());
  }
  await Promise.all(loops);
  return counts;
}

/**
 * The flood as a process of its own: `handshake_flood.ts TLS_PORT H3_PORT
 * PARALLEL MS` (port 0: none; MS 0: until SIGTERM or SIGINT). Prints its
 * running counts as one JSON line a second, and once more at the end.
 */
if (import.meta.main) {
  const [tlsPort, h3Port, parallel, ms] = Deno.args.map(Number);
  const ac = new AbortController();
  if (ms > 0) setTimeout(() => ac.abort(), ms);
  const stop = () => ac.abort();
  Deno.addSignalListener("SIGTERM", stop);
  Deno.addSignalListener("SIGINT", stop);
  const counts: FloodCounts = { hellos: 0, junk: 0, initials: 0, datagrams: 0 };
  const ticker = setInterval(() => console.log(JSON.stringify(counts)), 1000);
  await floodHandshakes({
    tlsPort: tlsPort || undefined,
    h3Port: h3Port || undefined,
    parallel,
    signal: ac.signal,
    counts,
  });
  clearInterval(ticker);
  console.log(JSON.stringify(counts));
  Deno.removeSignalListener("SIGTERM", stop);
  Deno.removeSignalListener("SIGINT", stop);
}
