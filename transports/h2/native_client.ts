/**
 * The native HTTP/2 client: nghttp2 (through the sbh2 shim, native/sbh2.c)
 * owns the HTTP/2 state, TypeScript owns the socket. h2c speaks with prior
 * knowledge over `Deno.connect`; h2 over TLS uses `Deno.connectTls` with ALPN
 * h2 and refuses any other protocol. One connection per origin carries every
 * request (a new stream each).
 *
 * Each wake-up of the read loop is one `read()` into a reused buffer, one
 * `recv()` that feeds all of it, one `poll()` that hands over every finished
 * response, and one send pass. Requests submitted in the same turn of the
 * event loop leave in one `write()`. A timed-out request resets its stream
 * (RST_STREAM CANCEL). A failed or reset connection rejects its requests with
 * `TransportError`; the next request opens a new connection.
 */
import { parseOrigin } from "../origin.ts";
import { type ResolvedTls, resolveTls } from "../tls.ts";
import { sbiRequestHeaders } from "../sbi_headers.ts";
import {
  type ClientOptions,
  type ClientRequest,
  type ClientResponse,
  type SbiClient,
  TimeoutError,
  TransportError,
  type TransportName,
} from "../types.ts";
import { H2_ERR, H2_EVENT, H2Conn, h2ErrorName } from "./ffi.ts";
import { decodeResponseBlock, RequestBlockWriter } from "../wire.ts";
import { loadH2Library } from "./loader.ts";
import { applyNoDelay } from "./nodelay.ts";
import type { Sbh2Symbols } from "./symbols.ts";

const DEFAULT_TIMEOUT_MS = 5000;
const IO_BUFFER = 256 * 1024;

/** Extra options of the native HTTP/2 client. */
export interface NativeH2ClientOptions extends ClientOptions {
  /** Receive window per stream and for the connection, in bytes. Default 16 MiB. */
  windowBytes?: number;
  /** Largest response body accepted. Default 64 MiB. */
  maxBodyBytes?: number;
}

interface Pending {
  resolve(r: ClientResponse): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

type Socket = Deno.TcpConn | Deno.TlsConn;

/** One TCP or TLS connection and its HTTP/2 session. */
class Session {
  #sock: Socket;
  #h2: H2Conn;
  #label: string;
  #pending = new Map<number, Pending>();
  #in = new Uint8Array(IO_BUFFER);
  #out = new Uint8Array(IO_BUFFER);
  #flushQueued = false;
  /** Output may be pending that the running write loop has not pulled yet. */
  #dirty = false;
  #writing: Promise<void> | undefined;
  #reading: Promise<void>;
  #closing: Promise<void> | undefined;
  /** No new requests: closed, failed or told to go away. */
  unusable = false;
  #dead = false;
  #onEvent = this.#event.bind(this);
  #scheduled = () => {
    this.#flushQueued = false;
    this.#flush();
  };

  constructor(sock: Socket, h2: H2Conn, label: string) {
    this.#sock = sock;
    this.#h2 = h2;
    this.#label = label;
    this.#reading = this.#readLoop();
    this.#flush(); // client preface and SETTINGS
  }

  /** Submits one request; the caller's timer is already running. */
  submit(block: Uint8Array, blockLength: number, body: Uint8Array | undefined, p: Pending): number {
    if (this.#dead) throw new TransportError(`${this.#label} failed: connection is closed`);
    const id = this.#h2.request(block, blockLength, body);
    if (id < 0) {
      if (id === H2_ERR.INVALID) throw new TypeError("Invalid request header block");
      this.unusable = true;
      throw new TransportError(
        `${this.#label} failed: rejected by the session (${h2ErrorName(id)})`,
      );
    }
    this.#pending.set(id, p);
    this.#dirty = true;
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(this.#scheduled);
    }
    return id;
  }

  /** Forgets a timed-out stream and resets it. */
  cancel(id: number): void {
    if (!this.#pending.delete(id) || this.#dead) return;
    this.#h2.cancel(id);
    this.#dirty = true;
    this.#flush();
  }

  /** Writes all pending output; one write per pass, passes repeat while output remains. */
  #flush(): void {
    if (this.#dead) return;
    if (this.#writing) {
      this.#dirty = true; // the running write loop pulls it
      return;
    }
    this.#dirty = false;
    const n = this.#h2.send(this.#out);
    if (n === 0) return;
    this.#writing = this.#writeLoop(n);
  }

  async #writeLoop(n: number): Promise<void> {
    try {
      while (n > 0 && !this.#dead) {
        let off = 0;
        while (off < n) off += await this.#sock.write(this.#out.subarray(off, n));
        // A short send drained the session: call again only if a request or
        // cancel came in while the write was pending (or the buffer was full).
        const more = this.#dirty || n === this.#out.length;
        this.#dirty = false;
        n = this.#dead || !more ? 0 : this.#h2.send(this.#out);
      }
    } catch (err) {
      this.#fail(this.#error("write failed", err));
    } finally {
      this.#writing = undefined;
    }
  }

  async #readLoop(): Promise<void> {
    try {
      for (;;) {
        const n = await this.#sock.read(this.#in);
        if (this.#dead) return;
        if (n === null) {
          this.#fail(new TransportError(`${this.#label} failed: connection closed by the server`));
          return;
        }
        const ready = this.#h2.recv(this.#in, n);
        if (ready !== 0) this.#h2.poll(this.#onEvent, ready > 0 ? ready : Infinity);
        if (this.#dead) return;
        this.#flush();
        if (this.unusable && this.#pending.size === 0) {
          void this.close();
          return;
        }
      }
    } catch (err) {
      this.#fail(this.#error("read failed", err));
    }
  }

  #error(what: string, err: unknown): TransportError {
    const msg = err instanceof Error ? err.message : String(err);
    return new TransportError(`${this.#label} failed: ${what}: ${msg}`, { cause: err });
  }

  #event(
    type: number,
    id: number,
    code: number,
    block: Uint8Array,
    body: Uint8Array,
    owned: boolean,
  ): void {
    switch (type) {
      case H2_EVENT.MESSAGE: {
        const p = this.#pending.get(id);
        if (!p) return;
        this.#pending.delete(id);
        let head;
        try {
          head = decodeResponseBlock(block);
        } catch (err) {
          p.reject(this.#error("sent a malformed response", err));
          return;
        }
        if (head.status === 0) {
          p.reject(new TransportError(`${this.#label} failed: response lacks :status`));
          return;
        }
        p.resolve({
          status: head.status,
          headers: head.headers,
          body: owned ? body : body.slice(),
        });
        return;
      }
      case H2_EVENT.RESET: {
        const p = this.#pending.get(id);
        if (!p) return;
        this.#pending.delete(id);
        p.reject(
          new TransportError(
            `${this.#label} failed: stream reset by the server (error 0x${code.toString(16)})`,
          ),
        );
        return;
      }
      case H2_EVENT.GOAWAY:
        this.unusable = true;
        return;
      case H2_EVENT.CLOSED: {
        const text = this.#h2.errorText() || "connection closed";
        const what = code === H2_ERR.PROTO ? "protocol error" : "connection closed";
        this.#fail(new TransportError(`${this.#label} failed: ${what}: ${text}`));
        return;
      }
    }
  }

  /** Rejects every pending request and shuts the connection; the session frees itself. */
  #fail(err: Error): void {
    if (this.#dead) return;
    this.unusable = true;
    this.#dead = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(err);
    void this.close();
  }

  /** Streams the shim still holds state for. */
  get streamCount(): number {
    return this.#h2.streamCount();
  }

  /** Sends GOAWAY (best effort), closes the socket, waits for both loops, frees the session. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (!this.#dead) {
      this.#h2.shutdown();
      await this.#writing?.catch(() => {});
      const n = this.#h2.send(this.#out);
      if (n > 0) {
        await Promise.race([
          this.#sock.write(this.#out.subarray(0, n)).catch(() => 0),
          new Promise((r) => setTimeout(r, 100)),
        ]);
      }
      this.#fail(new TransportError(`${this.#label} failed: client is closed`));
    }
    try {
      this.#sock.close();
    } catch {
      // already closed
    }
    await this.#reading;
    await this.#writing?.catch(() => {});
    this.#h2.close();
  }
}

function stripBrackets(host: string): string {
  return host.replace(/^\[|\]$/g, "");
}

class NativeH2Client implements SbiClient {
  readonly transport: TransportName;
  #origin: URL;
  #options: NativeH2ClientOptions;
  #sym: Sbh2Symbols;
  #tls: ResolvedTls | undefined;
  #scheme: string;
  #authority: string;
  #label: string;
  #writer = new RequestBlockWriter();
  #session: Session | undefined;
  #connecting: Promise<Session> | undefined;
  #closed = false;

  constructor(origin: URL, options: NativeH2ClientOptions, sym: Sbh2Symbols, tls?: ResolvedTls) {
    this.transport = origin.protocol === "https:" ? "h2-tls" : "h2c";
    this.#origin = origin;
    this.#options = options;
    this.#sym = sym;
    this.#tls = tls;
    this.#scheme = origin.protocol === "https:" ? "https" : "http";
    this.#authority = origin.host;
    this.#label = `${this.transport} request to ${origin.host}`;
  }

  async #connect(): Promise<Session> {
    const hostname = stripBrackets(this.#origin.hostname);
    const port = Number(this.#origin.port || (this.transport === "h2-tls" ? 443 : 80));
    let sock: Socket;
    try {
      if (this.transport === "h2c") {
        const tcp = await Deno.connect({ hostname, port });
        tcp.setNoDelay(true);
        sock = tcp;
      } else {
        const tls = this.#tls!;
        const tlsConn = await Deno.connectTls({
          hostname,
          port,
          alpnProtocols: ["h2"],
          caCerts: tls.caPem.length ? tls.caPem : undefined,
          ...(tls.certPem && tls.keyPem ? { cert: tls.certPem, key: tls.keyPem } : {}),
        });
        sock = tlsConn;
        let alpn: string | null;
        try {
          alpn = (await tlsConn.handshake()).alpnProtocol;
        } catch (err) {
          tlsConn.close();
          throw err;
        }
        if (alpn !== "h2") {
          tlsConn.close();
          throw new TransportError(
            `${this.#label} failed: the server did not negotiate HTTP/2 over TLS (ALPN ${
              alpn ?? "none"
            })`,
          );
        }
        applyNoDelay({ remotePort: port });
      }
    } catch (err) {
      if (err instanceof TransportError) throw err;
      const msg = err instanceof Error ? err.message : String(err);
      throw new TransportError(`${this.#label} failed: ${msg}`, { cause: err });
    }
    let h2: H2Conn;
    try {
      h2 = new H2Conn(this.#sym, {
        windowBytes: this.#options.windowBytes,
        maxBodyBytes: this.#options.maxBodyBytes,
      });
    } catch (err) {
      sock.close();
      throw new TransportError(`${this.#label} failed: ${(err as Error).message}`, { cause: err });
    }
    return new Session(sock, h2, this.#label);
  }

  #sessionFor(): Session | Promise<Session> {
    if (this.#session && !this.#session.unusable) return this.#session;
    if (this.#connecting) return this.#connecting;
    const old = this.#session;
    this.#session = undefined;
    if (old) void old.close();
    this.#connecting = this.#connect().then(
      (s) => {
        this.#connecting = undefined;
        if (this.#closed) {
          void s.close();
          throw new TransportError("Client is closed");
        }
        this.#session = s;
        return s;
      },
      (err) => {
        this.#connecting = undefined;
        throw err;
      },
    );
    return this.#connecting;
  }

  request(req: ClientRequest): Promise<ClientResponse> {
    if (this.#closed) return Promise.reject(new TransportError("Client is closed"));
    const path = req.path;
    if (typeof path !== "string" || !path.startsWith("/")) {
      return Promise.reject(new TypeError(`Request path must start with /: ${path}`));
    }
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const headers = sbiRequestHeaders(req.headers, { timeoutMs, nfType: this.#options.nfType });
    const body = req.body && req.body.length > 0 ? req.body : undefined;
    const method = (req.method ?? "GET").toUpperCase();
    const { promise, resolve, reject } = Promise.withResolvers<ClientResponse>();
    let settled = false;
    let session: Session | undefined;
    let streamId = -1;
    const p: Pending = {
      resolve: (r) => {
        if (settled) return;
        settled = true;
        clearTimeout(p.timer);
        resolve(r);
      },
      reject: (e) => {
        if (settled) return;
        settled = true;
        clearTimeout(p.timer);
        reject(e);
      },
      timer: setTimeout(() => {
        if (settled) return;
        settled = true;
        if (session && streamId >= 0) session.cancel(streamId);
        reject(new TimeoutError(timeoutMs));
      }, timeoutMs),
    };
    const start = (s: Session) => {
      if (settled) return;
      session = s;
      try {
        const w = this.#writer;
        const len = w.encode(
          method,
          this.#scheme,
          this.#authority,
          path,
          headers,
          body?.length ?? 0,
        );
        streamId = s.submit(w.buffer, len, body, p);
      } catch (err) {
        p.reject(err as Error);
      }
    };
    const s = this.#sessionFor();
    if (s instanceof Session) start(s);
    else s.then(start, (err) => p.reject(err));
    return promise;
  }

  /** Streams the current connection's shim state still holds (for tests). */
  get openStreams(): number {
    return this.#session?.streamCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const s = this.#session ??
      (this.#connecting ? await this.#connecting.catch(() => undefined) : undefined);
    this.#session = undefined;
    await s?.close();
  }
}

/**
 * Creates a native HTTP/2 client for `http://host:port` (h2c) or
 * `https://host:port` (h2); throws `H2LoadError` when the library is missing.
 */
export async function createNativeH2Client(
  origin: string,
  options: NativeH2ClientOptions = {},
): Promise<SbiClient> {
  const url = parseOrigin(origin);
  let tls: ResolvedTls | undefined;
  if (url.protocol === "https:") {
    tls = await resolveTls(options.tls ?? {});
    if (tls.insecure && Deno.env.get("SBILAB_TLS_INSECURE") !== "1") {
      throw new TypeError(
        "The h2 client skips verification only under deno run --unsafely-ignore-certificate-errors (lab request -k does this); pass the server's CA instead",
      );
    }
    if (tls.serverName && tls.serverName !== url.hostname) {
      throw new TypeError(
        "The h2 client verifies the URL's host name; serverName is not supported",
      );
    }
  }
  const lib = await loadH2Library();
  return new NativeH2Client(url, options, lib.symbols, tls);
}
