/**
 * The native HTTP/2 client: nghttp2 (through the sbh2 shim, native/sbh2.c)
 * owns the HTTP/2 state, TypeScript owns the socket. h2c speaks with prior
 * knowledge over `Deno.connect`; h2 over TLS runs GnuTLS inside the same
 * module (native/sbh2_tls.c, the TLS library and settings of h3) over a
 * plain `Deno.connect` socket with TCP_NODELAY, with ALPN h2 and no other
 * protocol. One connection per origin carries every request (a new stream
 * each). TLS 1.3 tickets are kept per origin in memory and offered on the
 * next connection; the connection's keying-material exporter and what it
 * negotiated are available through {@linkcode NativeH2Client}.
 *
 * Each wake-up of the read loop is one `read()` into a reused buffer, one
 * `recv()` that feeds all of it (over TLS: decrypted and fed in the same
 * native call), one `poll()` that hands over every finished response, and
 * one send pass. Requests submitted in the same turn of the
 * event loop leave in one `send()` on the socket's fd, made at once (no
 * promise) while the kernel takes the bytes; what it does not take goes
 * through Deno's `write()`. A timed-out request resets its stream
 * (RST_STREAM CANCEL). A failed or reset connection rejects its requests with
 * `TransportError`; the next request opens a new connection.
 */
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
import { parseOrigin } from "../origin.ts";
import {
  type KeyingMaterialExporter,
  type ResolvedTls,
  resolveTls,
  type TlsConnectionInfo,
} from "../tls.ts";
import { SbiRequestBlock } from "../sbi_request_block.ts";
import {
  type ClientOptions,
  type ClientRequest,
  type ClientResponse,
  type ConnectionInfo,
  type SbiClient,
  type SetupTimings,
  TransportError,
  type TransportName,
} from "../types.ts";
import {
  ClientCore,
  type PendingRequest,
  PendingStreams,
  requestTimeoutMs,
  timedRequest,
} from "../client_core.ts";
import { H2_EVENT, H2Conn, sbh2Versions } from "./ffi.ts";
import { NATIVE_ERR, nativeErrorName } from "../native/errors.ts";
import { decodeResponseBlock } from "../native/wire.ts";
import { loadH2Library } from "./loader.ts";
import { socketFd, tcpMaxSegment } from "../native/nodelay.ts";
import { libc } from "../../lib/libc.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { sharedTicketCache, type TicketCache } from "../ticket_cache.ts";
import { SetupRecorder } from "../setup_timings.ts";
import { H2Tls, H2TlsConfig } from "./tls_ffi.ts";
import { TLS_STATE } from "../native/tls_session.ts";
import { runTlsHandshake, type TlsPump } from "./tls_handshake.ts";

const IO_BUFFER = 256 * 1024;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;

/** Extra options of the native HTTP/2 client. */
export interface NativeH2ClientOptions extends ClientOptions {
  /** Receive window per stream and for the connection, in bytes. Default 16 MiB. */
  windowBytes?: number;
}

/** The native h2 client: an {@linkcode SbiClient} that also shows its TLS connection. */
export interface NativeH2Client extends SbiClient {
  /**
   * h2 over TLS: what the current connection negotiated (connecting first if
   * none is open). Rejects with `TransportError` when the connection fails and
   * with `TypeError` on h2c.
   */
  tlsInfo(): Promise<TlsConnectionInfo>;
  /**
   * h2 over TLS: the RFC 5705 exporter of the current connection (connecting
   * first if none is open); see {@linkcode KeyingMaterialExporter}.
   */
  exportKeyingMaterial(
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Promise<Uint8Array>;
}

/** One TCP connection (with TLS inside the module, or not) and its HTTP/2 session. */
class Session implements KeyingMaterialExporter {
  #sock: Deno.TcpConn;
  #h2: H2Conn;
  #tls: H2Tls | undefined;
  #onTicket: ((ticket: Uint8Array) => void) | undefined;
  #label: string;
  #setup: SetupRecorder;
  #pending = new PendingStreams();
  #in = new Uint8Array(IO_BUFFER);
  #out = new Uint8Array(IO_BUFFER);
  /** The socket's fd, for writes that need no promise; undefined where it cannot be found. */
  #fd: number | undefined;
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

  /** The connection's TCP maximum segment size, read once (undefined where it cannot be read). */
  get tcpMss(): number | undefined {
    if (!this.#mssRead) {
      this.#mssRead = true;
      this.#mss = tcpMaxSegment({ localPort: (this.#sock.localAddr as Deno.NetAddr).port });
    }
    return this.#mss;
  }
  #mss: number | undefined;
  #mssRead = false;

  constructor(
    sock: Deno.TcpConn,
    h2: H2Conn,
    label: string,
    setup: SetupRecorder,
    tls?: H2Tls,
    onTicket?: (ticket: Uint8Array) => void,
  ) {
    this.#setup = setup;
    this.#sock = sock;
    this.#h2 = h2;
    this.#label = label;
    this.#tls = tls;
    this.#onTicket = onTicket;
    this.#fd = socketFd(sock.localAddr as Deno.NetAddr, sock.remoteAddr as Deno.NetAddr);
    this.#reading = this.#readLoop();
    this.#flush(); // client preface and SETTINGS
  }

  /** Pulls pending output (encrypted over TLS) into `out`; returns its length. */
  #pull(out: Uint8Array): number {
    if (!this.#tls) return this.#h2.send(out);
    const n = this.#h2.sendTls(this.#tls, out);
    if (n < 0) {
      this.#fail(new TransportError(`${this.#label} failed: ${this.#tls.errorText()}`));
      return 0;
    }
    return n;
  }

  /** The set-up phases of this connection's first request, once its response is complete. */
  setupTimings(): SetupTimings | undefined {
    return this.#setup.timings();
  }

  /** What the TLS handshake negotiated (undefined on h2c, and once the TLS session is gone). */
  tlsInfo(): TlsConnectionInfo | undefined {
    // A session the peer failed after its handshake (an mTLS server refusing the client's
    // certificate does so after the client's Finished) has nothing to report.
    return this.#tls?.info() ?? undefined;
  }

  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    if (!this.#tls || this.#dead) throw new RangeError("No TLS connection is open");
    return this.#tls.exportKeyingMaterial(label, context, length);
  }

  /** Hands a ticket that arrived to the cache (once per connection). */
  #checkTicket(): void {
    if (!this.#onTicket || !(this.#tls!.state() & TLS_STATE.TICKET)) return;
    const t = this.#tls!.takeTicket();
    if (t) {
      this.#onTicket(t);
      this.#onTicket = undefined;
    }
  }

  /** Submits one request; the caller's timer is already running. */
  submit(
    block: Uint8Array,
    blockLength: number,
    body: Uint8Array | undefined,
    p: PendingRequest,
  ): number {
    if (this.#dead) throw new TransportError(`${this.#label} failed: connection is closed`);
    const id = this.#h2.request(block, blockLength, body);
    if (id < 0) {
      if (id === NATIVE_ERR.INVALID) throw new TypeError("Invalid request header block");
      this.unusable = true;
      throw new TransportError(
        `${this.#label} failed: rejected by the session (${nativeErrorName(id)})`,
      );
    }
    this.#pending.add(id, p);
    this.#setup.requestSent();
    this.#dirty = true;
    this.#scheduleFlush();
    return id;
  }

  /** Flushes once the current turn of the event loop has submitted what it will. */
  #scheduleFlush(): void {
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(this.#scheduled);
    }
  }

  /** Forgets a timed-out stream and resets it. */
  cancel(id: number): void {
    if (!this.#pending.delete(id) || this.#dead) return;
    this.#h2.cancel(id);
    this.#dirty = true;
    this.#flush();
  }

  /**
   * Writes all pending output: straight into the socket while the kernel
   * takes it (one `send` that never waits, no promise), the rest through
   * Deno's write; passes repeat while output remains.
   */
  #flush(): void {
    if (this.#dead) return;
    if (this.#writing) {
      this.#dirty = true; // the running write loop pulls it
      return;
    }
    for (;;) {
      this.#dirty = false;
      const n = this.#pull(this.#out);
      if (n === 0 || this.#dead) return;
      const sent = this.#sendNow(n);
      if (sent < n) {
        this.#writing = this.#writeLoop(sent, n);
        return;
      }
      if (n < this.#out.length) return; // a short pull drained the session
    }
  }

  /** Bytes of `out[0, n)` the kernel took at once; 0 when it would wait or fails (Deno's write then says why). */
  #sendNow(n: number): number {
    // #dead is checked by the caller: the socket (and so the fd) is still open.
    if (this.#fd === undefined) return 0;
    const k = libc().send(this.#fd, this.#out, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    return k > 0 ? k : 0;
  }

  async #writeLoop(off: number, n: number): Promise<void> {
    try {
      while (n > 0 && !this.#dead) {
        while (off < n) off += await this.#sock.write(this.#out.subarray(off, n));
        off = 0;
        // A short send drained the session: call again only if a request or
        // cancel came in while the write was pending (or the buffer was full).
        const more = this.#dirty || n === this.#out.length;
        this.#dirty = false;
        n = this.#dead || !more ? 0 : this.#pull(this.#out);
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
        this.#setup.received();
        let ready: number;
        if (this.#tls) {
          ready = this.#h2.recvTls(this.#tls, this.#in, n);
          if (ready === NATIVE_ERR.TLS) {
            this.#fail(new TransportError(`${this.#label} failed: ${this.#tls.errorText()}`));
            return;
          }
          if (this.#onTicket) this.#checkTicket();
        } else {
          ready = this.#h2.recv(this.#in, n);
        }
        if (ready !== 0) this.#h2.poll(this.#onEvent, ready > 0 ? ready : Infinity);
        if (this.#dead) return;
        // What the input asks to send (acknowledgements, window updates) leaves with the
        // requests the callers submit when their responses resolve: one pass for both.
        this.#scheduleFlush();
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
        const p = this.#pending.take(id);
        if (!p) return;
        this.#setup.responseComplete();
        let head;
        try {
          head = decodeResponseBlock(block);
        } catch (err) {
          p.reject(this.#error("sent a malformed response", err));
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
        const p = this.#pending.take(id);
        if (!p) return;
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
        const what = code === NATIVE_ERR.PROTO ? "protocol error" : "connection closed";
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
    this.#pending.rejectAll(err);
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
      let n = this.#pull(this.#out);
      if (this.#tls && n < this.#out.length) {
        this.#tls.closeNotify();
        n += this.#pull(this.#out.subarray(n));
      }
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
    this.#tls?.close();
  }
}

function stripBrackets(host: string): string {
  return host.replace(/^\[|\]$/g, "");
}

class Client implements NativeH2Client {
  readonly transport: TransportName;
  #origin: URL;
  #options: NativeH2ClientOptions;
  #limits: ClientLimits;
  #sym: Sbh2Symbols;
  #tlsConfig: H2TlsConfig | undefined;
  #serverName: string;
  #ticketCache: TicketCache | undefined;
  #ticketKey: string;
  #scheme: string;
  #authority: string;
  #label: string;
  #block: SbiRequestBlock;
  #core: ClientCore<Session> = new ClientCore(() => this.#connect(), {
    onClosing: () => {
      try {
        this.#handshaking?.close(); // a handshake in progress ends now
      } catch {
        // already closed
      }
    },
    onDetach: () => this.connectionInfo(), // keep what the report will ask for
  });
  /** The socket of a TLS handshake in progress. */
  #handshaking: Deno.TcpConn | undefined;

  constructor(origin: URL, options: NativeH2ClientOptions, sym: Sbh2Symbols, tls?: ResolvedTls) {
    this.transport = origin.protocol === "https:" ? "h2-tls" : "h2c";
    this.#origin = origin;
    this.#options = options;
    this.#limits = resolveClientLimits(options);
    this.#sym = sym;
    this.#serverName = tls?.serverName ?? stripBrackets(origin.hostname);
    if (tls) this.#tlsConfig = H2TlsConfig.create(sym, tls, "client");
    this.#ticketCache = tls && options.resumption !== false
      ? options.ticketCache ?? sharedTicketCache
      : undefined;
    // A ticket is only offered where the same trust and identity obtained it.
    this.#ticketKey = tls
      ? [origin.origin, this.#serverName, tls.insecure, ...tls.caPem, tls.certPem ?? ""].join("\n")
      : "";
    this.#scheme = origin.protocol === "https:" ? "https" : "http";
    this.#authority = origin.host;
    this.#label = `${this.transport} request to ${origin.host}`;
    this.#block = new SbiRequestBlock({
      scheme: this.#scheme,
      authority: this.#authority,
      nfType: options.nfType,
    });
  }

  async #connect(): Promise<Session> {
    const hostname = stripBrackets(this.#origin.hostname);
    const port = Number(this.#origin.port || (this.transport === "h2-tls" ? 443 : 80));
    let sock: Deno.TcpConn;
    const setup = new SetupRecorder();
    try {
      sock = await Deno.connect({ hostname, port });
      setup.connected();
      sock.setNoDelay(true);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      throw new TransportError(`${this.#label} failed: ${msg}`, { cause: err });
    }
    let h2: H2Conn | undefined;
    let tls: H2Tls | undefined;
    try {
      h2 = new H2Conn(this.#sym, {
        windowBytes: this.#options.windowBytes,
        maxBodyBytes: this.#limits.maxBodyBytes,
        maxHeaderListBytes: this.#limits.maxHeaderSectionBytes,
      });
      if (this.#tlsConfig) {
        const cache = this.#ticketCache;
        const ticket = cache?.take(this.#ticketKey);
        tls = new H2Tls(this.#sym, this.#tlsConfig, this.#serverName, ticket);
        const buffers = { in: new Uint8Array(IO_BUFFER), out: new Uint8Array(IO_BUFFER) };
        const pump = {
          recv: (d: Uint8Array, n: number) => h2!.recvTls(tls!, d, n),
          send: (out: Uint8Array) => h2!.sendTls(tls!, out),
        };
        await this.#handshake(sock, tls, pump, buffers);
        setup.tlsDone();
        const key = this.#ticketKey;
        return new Session(sock, h2, this.#label, setup, tls, cache && ((t) => cache.put(key, t)));
      }
      return new Session(sock, h2, this.#label, setup);
    } catch (err) {
      try {
        sock.close();
      } catch {
        // closed by the handshake timer or by close()
      }
      h2?.close();
      tls?.close();
      if (err instanceof TransportError) throw err;
      const msg = err instanceof Error ? err.message : String(err);
      throw new TransportError(`${this.#label} failed: ${msg}`, { cause: err });
    }
  }

  /** Runs the TLS handshake, bounded by `handshakeTimeoutMs` and cut short by `close()`. */
  async #handshake(
    sock: Deno.TcpConn,
    tls: H2Tls,
    pump: TlsPump,
    buffers: { in: Uint8Array; out: Uint8Array },
  ): Promise<void> {
    const limit = this.#limits.handshakeTimeoutMs;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      sock.close(); // the pending read fails
    }, limit);
    this.#handshaking = sock;
    try {
      await runTlsHandshake(sock, tls, pump, this.#label, buffers);
    } catch (err) {
      if (timedOut) {
        throw new TransportError(
          `${this.#label} failed: TLS handshake timed out after ${limit} ms`,
        );
      }
      if (this.#core.closed) throw new TransportError("Client is closed");
      throw err;
    } finally {
      clearTimeout(timer);
      this.#handshaking = undefined;
    }
  }

  request(req: ClientRequest): Promise<ClientResponse> {
    if (this.#core.closed) return Promise.reject(new TransportError("Client is closed"));
    const path = req.path;
    if (typeof path !== "string" || !path.startsWith("/")) {
      return Promise.reject(new TypeError(`Request path must start with /: ${path}`));
    }
    const timeoutMs = requestTimeoutMs(req, this.#options);
    const body = req.body && req.body.length > 0 ? req.body : undefined;
    const method = req.method ?? "GET";
    let session: Session | undefined;
    let streamId = -1;
    const t = timedRequest(timeoutMs, () => {
      if (session && streamId >= 0) session.cancel(streamId);
    });
    const s = this.#core.session();
    if (s instanceof Session) {
      session = s;
      streamId = this.#submit(s, method, path, req, timeoutMs, body, t.pending);
    } else {
      s.then((s) => {
        if (t.settled()) return;
        session = s;
        streamId = this.#submit(s, method, path, req, timeoutMs, body, t.pending);
      }, (err) => t.pending.reject(err));
    }
    return t.promise;
  }

  /** Encodes and submits one request on `s`; returns its stream id, or -1 once `p` is rejected. */
  #submit(
    s: Session,
    method: string,
    path: string,
    req: ClientRequest,
    timeoutMs: number,
    body: Uint8Array | undefined,
    p: PendingRequest,
  ): number {
    try {
      const b = this.#block;
      const len = b.encode(method, path, req.headers, timeoutMs, body?.length ?? 0);
      if (req.onRequestHeaders !== undefined) req.onRequestHeaders(b.sentHeaders(len));
      return s.submit(b.buffer, len, body, p);
    } catch (err) {
      p.reject(err as Error);
      return -1;
    }
  }

  /** Streams the current connection's shim state still holds (for tests). */
  get openStreams(): number {
    return this.#core.openStreams;
  }

  async #tlsSession(): Promise<Session> {
    if (this.transport !== "h2-tls") throw new TypeError("h2c has no TLS connection");
    if (this.#core.closed) throw new TransportError("Client is closed");
    return await this.#core.session();
  }

  async tlsInfo(): Promise<TlsConnectionInfo> {
    const info = (await this.#tlsSession()).tlsInfo();
    if (!info) throw new TransportError(`${this.#label} failed: the TLS session ended`);
    return info;
  }

  setupTimings(): SetupTimings | undefined {
    return (this.#core.current ?? this.#core.last)?.setupTimings();
  }

  /**
   * What the connection runs on (libraries, negotiated TLS, TCP MSS), for
   * reports: the open one, else the last one (kept after close); undefined
   * before any opened.
   */
  connectionInfo(): ConnectionInfo | undefined {
    const s = this.#core.current;
    if (!s) return this.#lastInfo;
    const v = sbh2Versions(this.#sym);
    let tls;
    try {
      tls = s.tlsInfo();
    } catch {
      return this.#lastInfo; // the handshake has not completed (or failed): nothing negotiated
    }
    return this.#lastInfo = {
      stack: "native",
      implementation: `nghttp2 ${v.nghttp2}`,
      tcpMssBytes: s.tcpMss,
      tls: tls
        ? {
          library: `GnuTLS ${v.gnutls}`,
          version: tls.version,
          suite: tls.cipherSuite,
          group: tls.group,
          resumed: tls.resumed,
        }
        : undefined,
    };
  }

  async exportKeyingMaterial(
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Promise<Uint8Array> {
    return (await this.#tlsSession()).exportKeyingMaterial(label, context, length);
  }

  #lastInfo: ConnectionInfo | undefined;

  async close(): Promise<void> {
    if (this.#core.closed) return;
    await this.#core.close();
    this.#tlsConfig?.close();
  }
}

/**
 * Creates a native HTTP/2 client for `http://host:port` (h2c) or
 * `https://host:port` (h2); throws `H2LoadError` when the library is missing.
 */
export async function createNativeH2Client(
  origin: string,
  options: NativeH2ClientOptions = {},
): Promise<NativeH2Client> {
  const url = parseOrigin(origin);
  const tls = url.protocol === "https:" ? await resolveTls(options.tls ?? {}) : undefined;
  const lib = await loadH2Library();
  return new Client(url, options, lib.symbols, tls);
}
