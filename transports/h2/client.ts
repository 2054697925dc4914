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
 * through Deno's `write()`. A turn that submits many (the callers of a batch
 * of answers) sends every 16th at once, so the server starts on them while
 * the rest of the batch is handed out. A timed-out request resets its stream
 * (RST_STREAM CANCEL). A failed or reset connection rejects its requests with
 * `TransportError`; the next request opens a new connection.
 *
 * With `io: "module"` (or `SBILAB_NATIVE_IO=module`) the module owns the
 * socket instead: it connects, and its own I/O thread reads into the session,
 * runs the TLS handshake, writes, and wakes JavaScript once per batch of
 * answers or connection events (`client_module_session.ts`,
 * native/sbh2_client_loop.c). Requests, answers and errors are the same.
 */
import { type ClientLimits, resolveClientLimits } from "../client_limits.ts";
import { parseOrigin } from "../origin.ts";
import { type ResolvedTls, resolveTls, type TlsConnectionInfo } from "../tls.ts";
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
import { ClientCore, type PendingRequest, requestTimeoutMs, timedRequest } from "../client_core.ts";
import { H2Conn, sbh2Versions } from "./ffi.ts";
import { loadH2Library } from "./loader.ts";
import type { Sbh2Symbols } from "./symbols.ts";
import { sharedTicketCache, type TicketCache } from "../ticket_cache.ts";
import { SetupRecorder } from "../setup_timings.ts";
import { H2Tls, H2TlsConfig } from "./tls_ffi.ts";
import { runTlsHandshake, type TlsPump } from "./tls_handshake.ts";
import { IO_BUFFER, Session } from "./client_session.ts";
import { ModuleSession } from "./client_module_session.ts";
import { type IoLoopStats, type NativeIo, nativeIo } from "../native/io_loop.ts";

/** Extra options of the native HTTP/2 client. */
export interface NativeH2ClientOptions extends ClientOptions {
  /** Receive window per stream and for the connection, in bytes. Default 16 MiB. */
  windowBytes?: number;
  /**
   * Who connects, reads and writes the socket: `runtime`, Deno's sockets, or
   * `module`, the h2 module's own I/O thread, which also runs the TLS
   * handshake and wakes JavaScript only for answers and connection events.
   * Default: the `SBILAB_NATIVE_IO` environment variable, else `runtime`.
   */
  io?: NativeIo;
}

/** One connection of either I/O. */
type H2Session = Session | ModuleSession;

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
  /**
   * The counters of the current connection's I/O thread (`io: "module"`);
   * undefined on the runtime path and before a connection opened.
   */
  ioStats(): IoLoopStats | undefined;
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
  #core: ClientCore<H2Session> = new ClientCore(() => this.#connect(), {
    onClosing: () => {
      this.#opening?.abort(new TransportError("Client is closed"));
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
  /** A connection the module's thread is opening (`io: "module"`). */
  #opening: ModuleSession | undefined;
  #io: NativeIo;

  constructor(origin: URL, options: NativeH2ClientOptions, sym: Sbh2Symbols, tls?: ResolvedTls) {
    this.transport = origin.protocol === "https:" ? "h2-tls" : "h2c";
    this.#origin = origin;
    this.#options = options;
    this.#limits = resolveClientLimits(options);
    this.#sym = sym;
    this.#io = nativeIo(options.io);
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

  #connect(): Promise<H2Session> {
    return this.#io === "module" ? this.#connectModule() : this.#connectRuntime();
  }

  /**
   * Opens a connection on the module's own I/O thread: it connects and, over
   * TLS, runs the handshake (bounded by `handshakeTimeoutMs`, cut short by
   * `close()`); fails with the runtime path's messages.
   */
  async #connectModule(): Promise<ModuleSession> {
    const hostname = stripBrackets(this.#origin.hostname);
    const port = Number(this.#origin.port || (this.transport === "h2-tls" ? 443 : 80));
    const setup = new SetupRecorder();
    let h2: H2Conn | undefined;
    let tls: H2Tls | undefined;
    let s: ModuleSession;
    const cache = this.#ticketCache;
    const key = this.#ticketKey;
    try {
      h2 = new H2Conn(this.#sym, {
        windowBytes: this.#options.windowBytes,
        maxBodyBytes: this.#limits.maxBodyBytes,
        maxHeaderListBytes: this.#limits.maxHeaderSectionBytes,
      });
      if (this.#tlsConfig) {
        tls = new H2Tls(this.#sym, this.#tlsConfig, this.#serverName, cache?.take(key));
      }
      s = new ModuleSession(
        this.#sym,
        h2,
        this.#label,
        setup,
        hostname,
        port,
        tls,
        tls && cache && ((t) => cache.put(key, t)),
      );
    } catch (err) {
      h2?.close();
      tls?.close();
      if (err instanceof TransportError) throw err;
      const msg = err instanceof Error ? err.message : String(err);
      throw new TransportError(`${this.#label} failed: ${msg}`, { cause: err });
    }
    const limit = this.#limits.handshakeTimeoutMs;
    const timer = tls
      ? setTimeout(() => {
        s.abort(
          new TransportError(`${this.#label} failed: TLS handshake timed out after ${limit} ms`),
        );
      }, limit)
      : undefined;
    this.#opening = s;
    try {
      await s.ready;
      return s;
    } catch (err) {
      await s.close();
      throw err;
    } finally {
      clearTimeout(timer);
      this.#opening = undefined;
    }
  }

  async #connectRuntime(): Promise<Session> {
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
    let session: H2Session | undefined;
    let streamId = -1;
    const t = timedRequest(timeoutMs, () => {
      if (session && streamId >= 0) session.cancel(streamId);
    });
    const s = this.#core.session();
    if (!(s instanceof Promise)) {
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
    s: H2Session,
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

  async #tlsSession(): Promise<H2Session> {
    if (this.transport !== "h2-tls") throw new TypeError("h2c has no TLS connection");
    if (this.#core.closed) throw new TransportError("Client is closed");
    return await this.#core.session();
  }

  async tlsInfo(): Promise<TlsConnectionInfo> {
    const info = (await this.#tlsSession()).tlsInfo();
    if (!info) throw new TransportError(`${this.#label} failed: the TLS session ended`);
    return info;
  }

  ioStats(): IoLoopStats | undefined {
    const s = this.#core.current ?? this.#core.last;
    return s instanceof ModuleSession ? s.ioStats() : undefined;
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
