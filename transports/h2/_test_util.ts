/**
 * Test helpers for the native h2 module: whether its library loads (else a
 * skip message naming the Debian package), servers on loopback, a relay
 * that reports the HTTP/2 frame types a client sends, a count of the
 * HEADERS frames a socket holds unread, and OpenSSL's `s_client` with the
 * dev PKI as files.
 */
import { findTool } from "../../lib/host.ts";
import { h2NativeAvailable } from "./loader.ts";
import { libc } from "../../lib/libc.ts";

/** Null when the native client tests can run, else why they are skipped. */
export const H2_NATIVE_SKIP: string | null = (await h2NativeAvailable())
  ? null
  : "native h2 module unavailable: apt-get install -y libnghttp2-dev libgnutls28-dev gcc";

if (H2_NATIVE_SKIP) {
  // CI installs every package: a missing module there is a failure, not a skip.
  if (Deno.env.get("CI")) throw new Error(`In CI: ${H2_NATIVE_SKIP}`);
  console.warn(`skipping native h2 tests: ${H2_NATIVE_SKIP}`);
}

/** A TCP server on loopback that runs `serve` on each accepted connection. */
export interface RawServer {
  port: number;
  close(): Promise<void>;
}

/** Accepts connections and hands each to `serve`; `close()` stops and closes everything. */
export function rawServer(serve: (conn: Deno.TcpConn) => Promise<void>): RawServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.TcpConn>();
  const tasks: Promise<void>[] = [];
  const accepting = (async () => {
    try {
      for await (const c of listener) {
        conns.add(c);
        tasks.push(serve(c).catch(() => {}).finally(() => conns.delete(c)));
      }
    } catch {
      // listener closed
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close: async () => {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      await accepting;
      await Promise.all(tasks);
    },
  };
}

/** HTTP/2 frame type numbers (RFC 9113 §6). */
export const FRAME = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
};

/** A frame a client sent: type, stream id and, for RST_STREAM, the error code. */
export interface SeenFrame {
  type: number;
  streamId: number;
  errorCode?: number;
}

/**
 * A relay between a client and `targetPort` that parses the client's
 * direction into frames (after the 24-byte preface) and records them.
 */
export function frameRelay(
  targetPort: number,
): RawServer & { frames: SeenFrame[]; changed(): Promise<void> } {
  const frames: SeenFrame[] = [];
  let wake = Promise.withResolvers<void>();
  const server = rawServer(async (client) => {
    const upstream = await Deno.connect({ hostname: "127.0.0.1", port: targetPort });
    const back = upstream.readable.pipeTo(client.writable).catch(() => {});
    let buf = new Uint8Array(0);
    let prefaceLeft = 24;
    const writer = upstream.writable.getWriter();
    try {
      for await (const chunk of client.readable) {
        await writer.write(chunk);
        const next = new Uint8Array(buf.length + chunk.length);
        next.set(buf);
        next.set(chunk, buf.length);
        buf = next;
        if (prefaceLeft > 0) {
          const k = Math.min(prefaceLeft, buf.length);
          buf = buf.subarray(k);
          prefaceLeft -= k;
        }
        while (prefaceLeft === 0 && buf.length >= 9) {
          const len = (buf[0] << 16) | (buf[1] << 8) | buf[2];
          if (buf.length < 9 + len) break;
          const v = new DataView(buf.buffer, buf.byteOffset);
          const f: SeenFrame = { type: buf[3], streamId: v.getUint32(5) & 0x7fffffff };
          if (f.type === FRAME.RST_STREAM) f.errorCode = v.getUint32(9);
          frames.push(f);
          buf = buf.subarray(9 + len);
        }
        wake.resolve();
        wake = Promise.withResolvers<void>();
      }
    } finally {
      await writer.close().catch(() => {});
      await back;
    }
  });
  return { ...server, frames, changed: () => wake.promise };
}

/** HTTP/2 frame flags used by the raw client. */
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PRIORITY: 0x20 };

/** HTTP/2 error codes (RFC 9113 §7) the tests look for. */
export const H2_CODE = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  STREAM_CLOSED: 5,
  CANCEL: 8,
  ENHANCE_YOUR_CALM: 0xb,
};

/** Builds one frame. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const f = new Uint8Array(9 + payload.length);
  const v = new DataView(f.buffer);
  v.setUint32(0, payload.length << 8);
  f[3] = type;
  f[4] = flags;
  v.setUint32(5, streamId & 0x7fffffff);
  f.set(payload, 9);
  return f;
}

/** A SETTINGS frame with the given (id, value) pairs. */
export function settingsFrame(entries: [number, number][] = []): Uint8Array {
  const p = new Uint8Array(6 * entries.length);
  const v = new DataView(p.buffer);
  entries.forEach(([id, value], i) => {
    v.setUint16(6 * i, id);
    v.setUint32(6 * i + 2, value);
  });
  return frame(FRAME.SETTINGS, 0, 0, p);
}

/** An RST_STREAM frame. */
export function rstFrame(streamId: number, code: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, code);
  return frame(FRAME.RST_STREAM, 0, streamId, p);
}

/** An HPACK string length: 7-bit prefix integer, no Huffman (RFC 7541 §5.1). */
function hpackLength(n: number): number[] {
  if (n < 127) return [n];
  const out = [127];
  n -= 127;
  while (n >= 128) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** HPACK literal field without indexing, new name, no Huffman. */
export function hpackLiteral(name: string, value: string): number[] {
  const enc = new TextEncoder();
  return [
    0,
    ...hpackLength(name.length),
    ...enc.encode(name),
    ...hpackLength(value.length),
    ...enc.encode(value),
  ];
}

/** An HPACK request header block: GET (or `method`), http, `path`, authority localhost. */
export function requestBlock(
  path: string,
  method = "GET",
  extra: [string, string][] = [],
): number[] {
  return [
    ...hpackLiteral(":method", method),
    0x86, // :scheme http (static table 6)
    ...hpackLiteral(":path", path),
    ...hpackLiteral(":authority", "localhost"),
    ...extra.flatMap(([n, v]) => hpackLiteral(n, v)),
  ];
}

/** A received frame. */
export interface RawFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Uint8Array;
}

/**
 * A hand-driven HTTP/2 client connection for misbehaving on purpose: writes
 * raw bytes, records every frame the server sends, ACKs the server's SETTINGS
 * (unless told not to) and notes when the server closes the connection.
 */
export class RawH2Client {
  readonly frames: RawFrame[] = [];
  #conn: Deno.Conn;
  #ended = Promise.withResolvers<void>();
  #wake = Promise.withResolvers<void>();
  #resumed = Promise.withResolvers<void>();
  closedByServer = false;
  readonly done: Promise<void>;

  private constructor(conn: Deno.Conn, ackSettings: boolean, paused: boolean) {
    this.#conn = conn;
    if (!paused) this.#resumed.resolve();
    this.done = this.#read(ackSettings);
  }

  /**
   * Connects (over TLS with ALPN h2 when `tlsCa` names the CA to trust);
   * sends the preface and `settings` unless `preface` is false. A `paused`
   * client reads nothing until {@linkcode RawH2Client.resume}.
   */
  static async open(
    port: number,
    options: {
      preface?: boolean;
      settings?: [number, number][];
      ackSettings?: boolean;
      tlsCa?: string;
      paused?: boolean;
    } = {},
  ): Promise<RawH2Client> {
    const conn = options.tlsCa === undefined
      ? await Deno.connect({ hostname: "127.0.0.1", port })
      : await Deno.connectTls({
        hostname: "127.0.0.1",
        port,
        caCerts: [options.tlsCa],
        alpnProtocols: ["h2"],
      });
    if (options.preface ?? true) {
      // written before the reader starts, so that its ACK of the server's SETTINGS cannot
      // land ahead of them (a server that sends SETTINGS at once would see no preface first)
      const preface = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      const bytes = new Uint8Array([...preface, ...settingsFrame(options.settings ?? [])]);
      for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
    }
    return new RawH2Client(conn, options.ackSettings ?? true, options.paused ?? false);
  }

  async #read(ackSettings: boolean): Promise<void> {
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(65536);
    try {
      await this.#resumed.promise;
      for (;;) {
        const n = await this.#conn.read(chunk);
        if (n === null) {
          this.closedByServer = true;
          break;
        }
        const next = new Uint8Array(buf.length + n);
        next.set(buf);
        next.set(chunk.subarray(0, n), buf.length);
        buf = next;
        while (buf.length >= 9) {
          const len = (buf[0] << 16) | (buf[1] << 8) | buf[2];
          if (buf.length < 9 + len) break;
          const f: RawFrame = {
            type: buf[3],
            flags: buf[4],
            streamId: new DataView(buf.buffer, buf.byteOffset + 5).getUint32(0) & 0x7fffffff,
            payload: buf.slice(9, 9 + len),
          };
          this.frames.push(f);
          if (ackSettings && f.type === FRAME.SETTINGS && !(f.flags & FLAG.ACK)) {
            await this.write(frame(FRAME.SETTINGS, FLAG.ACK, 0)).catch(() => {});
          }
          buf = buf.subarray(9 + len);
        }
        this.#wake.resolve();
        this.#wake = Promise.withResolvers<void>();
      }
    } catch {
      this.closedByServer = true; // reset
    } finally {
      this.#wake.resolve();
      this.#ended.resolve();
    }
  }

  /** Starts reading (of a client opened `paused`). */
  resume(): void {
    this.#resumed.resolve();
  }

  /** Writes raw bytes; false when the server already closed. */
  async write(bytes: Uint8Array): Promise<boolean> {
    try {
      let off = 0;
      while (off < bytes.length) off += await this.#conn.write(bytes.subarray(off));
      return true;
    } catch {
      return false;
    }
  }

  /** Error code of the server's GOAWAY, if it sent one. */
  get goawayCode(): number | undefined {
    const g = this.frames.find((f) => f.type === FRAME.GOAWAY);
    return g ? new DataView(g.payload.buffer).getUint32(4) : undefined;
  }

  /** Resolves once `done()` holds or the connection ended; rejects after `timeoutMs`. */
  async until(done: () => boolean, timeoutMs = 5000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!done()) {
      if (this.closedByServer) return;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error("timed out waiting for the server");
      let t: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.#wake.promise,
        new Promise((r) => t = setTimeout(r, left)),
      ]);
      clearTimeout(t);
    }
  }

  /** Waits for the server to close the connection; rejects after `timeoutMs`. */
  async closed(timeoutMs = 5000): Promise<void> {
    let t: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#ended.promise,
      new Promise((_, reject) =>
        t = setTimeout(() => reject(new Error("server did not close the connection")), timeoutMs)
      ),
    ]);
    clearTimeout(t);
  }

  /** Closes our side and waits for the reader. */
  async close(): Promise<void> {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
    this.#resumed.resolve(); // a paused reader wakes to the closed socket and ends
    await this.done;
  }
}

/** The largest flow-control window (RFC 9113 §6.9.1). */
const MAX_WINDOW = 0x7fffffff;

/**
 * Opens a client that reads nothing until resumed, with the stream and
 * connection windows at their largest (so only TCP holds the server back),
 * and asks for `path` (GET) on stream 1. Over TLS when `tlsCa` is given.
 */
export async function openNonReading(
  port: number,
  path: string,
  tlsCa?: string,
): Promise<RawH2Client> {
  const raw = await RawH2Client.open(port, {
    settings: [[4, /* INITIAL_WINDOW_SIZE */ MAX_WINDOW]],
    ackSettings: false,
    paused: true,
    tlsCa,
  });
  const increment = new Uint8Array(4);
  new DataView(increment.buffer).setUint32(0, MAX_WINDOW - 65535);
  const block = new Uint8Array(requestBlock(path));
  const ok = await raw.write(
    new Uint8Array([
      // the server's SETTINGS went out at accept (over TLS: with the handshake), unread yet
      ...frame(FRAME.SETTINGS, FLAG.ACK, 0),
      ...frame(FRAME.WINDOW_UPDATE, 0, 0, increment),
      ...frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, block),
    ]),
  );
  if (!ok) throw new Error("the server closed the connection before the request");
  return raw;
}

/** The DATA payload a client received on stream `id`, whole once END_STREAM is among its frames. */
export function streamBody(raw: RawH2Client, id: number): Uint8Array {
  const data = raw.frames.filter((f) => f.type === FRAME.DATA && f.streamId === id);
  const out = new Uint8Array(data.reduce((n, f) => n + f.payload.length, 0));
  let off = 0;
  for (const f of data) {
    out.set(f.payload, off);
    off += f.payload.length;
  }
  return out;
}

/** Whether stream `id` ended (a frame of it with END_STREAM, or its reset). */
export function streamEnded(raw: RawH2Client, id: number): boolean {
  return raw.frames.some((f) =>
    f.streamId === id &&
    (f.type === FRAME.RST_STREAM ||
      ((f.type === FRAME.DATA || f.type === FRAME.HEADERS) && (f.flags & FLAG.END_STREAM) !== 0))
  );
}

/** Null when `openssl` is installed, else why the OpenSSL interop tests are skipped. */
export const OPENSSL_SKIP: string | null = findTool("openssl")
  ? null
  : "apt-get install -y openssl";

if (OPENSSL_SKIP) console.log(`skipping OpenSSL interop tests: ${OPENSSL_SKIP}`);

/**
 * Runs `openssl s_client -connect 127.0.0.1:<port>` with `args`, writing
 * `stdin` (else none); returns stdout and stderr together. Killed after 15 s.
 */
export async function sClient(port: number, args: string[], stdin?: string): Promise<string> {
  const child = new Deno.Command("openssl", {
    args: ["s_client", "-connect", `127.0.0.1:${port}`, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(15_000),
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
}

/** PEM text of a dev PKI, as {@linkcode withPemFiles} writes it. */
export interface PemSet {
  caCertPem: string;
  serverCertPem: string;
  serverKeyPem: string;
  clientCertPem: string;
  clientKeyPem: string;
}

/**
 * Writes `ca.pem`, `server.pem`, `server-key.pem`, `client.pem` and
 * `client-key.pem` into a temporary folder for tools that read files, runs
 * `fn` with it, and removes it.
 */
export async function withPemFiles<T>(pki: PemSet, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sbilab_tls_" });
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, pki.caCertPem);
    await Deno.writeTextFile(`${dir}/server.pem`, pki.serverCertPem);
    await Deno.writeTextFile(`${dir}/server-key.pem`, pki.serverKeyPem);
    await Deno.writeTextFile(`${dir}/client.pem`, pki.clientCertPem);
    await Deno.writeTextFile(`${dir}/client-key.pem`, pki.clientKeyPem);
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `openssl s_client` arguments for ALPN h2, the dev CA and the dev client certificate in `dir`. */
export function sClientMtlsArgs(dir: string): string[] {
  return [
    "-alpn",
    "h2",
    "-CAfile",
    `${dir}/ca.pem`,
    "-verify_return_error",
    "-cert",
    `${dir}/client.pem`,
    "-key",
    `${dir}/client-key.pem`,
  ];
}

const MSG_PEEK = 0x2;
const MSG_DONTWAIT = 0x40;
/** Bytes of the client connection preface ("PRI * HTTP/2.0…"). */
export const CLIENT_PREFACE_LEN = 24;

/**
 * HEADERS frames the socket `fd` holds unread, counted from byte `skip` (a
 * server's socket: {@linkcode CLIENT_PREFACE_LEN}); peeked, so the bytes stay
 * queued. Reads at most 256 KiB.
 */
export function headersQueued(fd: number, skip = 0): number {
  const buf = new Uint8Array(256 * 1024);
  const n = libc().recv(fd, buf, buf.length, MSG_PEEK | MSG_DONTWAIT);
  let count = 0;
  for (let off = skip; off + 9 <= n;) {
    const len = (buf[off] << 16) | (buf[off + 1] << 8) | buf[off + 2];
    if (buf[off + 3] === FRAME.HEADERS) count++;
    off += 9 + len;
  }
  return count;
}

/** Waits (at most 2 s) until `fd` holds `n` HEADERS frames past `skip`; returns how many it holds. */
export async function waitForHeaders(fd: number, n: number, skip = 0): Promise<number> {
  for (let i = 0; i < 200 && headersQueued(fd, skip) < n; i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  return headersQueued(fd, skip);
}
