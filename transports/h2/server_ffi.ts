/**
 * Safe wrappers over the sbh2 server symbols (native/sbh2_server.h):
 * {@linkcode H2ServerLimits} owns the limits shared by a server's connections
 * and {@linkcode H2ServerConn} one connection's nghttp2 server session. Each
 * owns its handle in a `#private` field; `close()` is idempotent and frees
 * it, and `Symbol.dispose` calls `close()`. Negative return codes are numbers
 * from {@linkcode NATIVE_ERR}. Once freed, `pointer` and a connection's I/O
 * calls throw `NativeError` `CLOSED`, as every wrapper's do; `shutdown` and
 * the readers stay quiet.
 */
import type { Sbh2Symbols } from "./symbols.ts";
import type { H2Tls, H2TlsConfig } from "./tls_ffi.ts";
import type { TlsSessionCalls } from "../native/tls_session.ts";
import { freedError, NATIVE_ERR, NativeError, nativeErrorName } from "../native/errors.ts";
import type { EventHandler, EventPoller } from "../native/event_poller.ts";
import { guardedSymbols, type IoLoop } from "../native/io_loop.ts";

/** Limits of the native HTTP/2 server (one setter each in the shim); each has a default in the shim. */
export interface H2ServerLimitOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS. Default 100. */
  maxConcurrentStreams?: number;
  /** Largest request header list (name + value + 32 bytes per field). Default 16384. */
  maxHeaderListBytes?: number;
  /** Largest request body; a larger one is answered 413. Default 32 MiB. */
  maxBodyBytes?: number;
  /** Receive window of each stream (the connection's is 16 times that). Default 1 MiB. */
  windowBytes?: number;
  /** Close a connection without open streams after this long without input, ms. Default 60000. */
  idleTimeoutMs?: number;
  /** Close a connection whose preface and SETTINGS (or ACK of ours) are this late, ms. Default 10000. */
  settingsTimeoutMs?: number;
  /** Peer stream resets allowed in a burst before GOAWAY ENHANCE_YOUR_CALM. Default 200. */
  maxResets?: number;
  /** Peer stream resets forgiven per second. Default 50. */
  resetsPerSecond?: number;
  /** CONTINUATION frames allowed after one HEADERS frame. Default 8. */
  maxContinuations?: number;
  /** Response body bytes queued per connection while the peer's window is closed. Default 64 MiB. */
  maxQueuedBytes?: number;
  /** Reset streams whose queued response made no progress for this long, ms. Default 10000. */
  stallTimeoutMs?: number;
  /**
   * Request-body bytes buffered at once by all connections of the server, a
   * declared content-length counted whole as the headers arrive; a body that
   * does not fit is dropped and its request arrives as a TOO_LARGE event
   * with code 503. Default 256 MiB.
   */
  maxBufferedBodyBytes?: number;
  /**
   * Response body bytes queued by all connections of the server; a response
   * beyond it while its peer's window is closed is reset, as for
   * `maxQueuedBytes`. Default 256 MiB.
   */
  maxServerQueuedBytes?: number;
}

/** The shim's setter of each limit (sbh2_server_set_<limit>). */
const SETTERS = {
  maxConcurrentStreams: "sbh2_server_set_max_streams",
  maxHeaderListBytes: "sbh2_server_set_max_header_list",
  maxBodyBytes: "sbh2_server_set_max_body",
  windowBytes: "sbh2_server_set_window",
  idleTimeoutMs: "sbh2_server_set_idle_timeout",
  settingsTimeoutMs: "sbh2_server_set_settings_timeout",
  maxResets: "sbh2_server_set_max_resets",
  resetsPerSecond: "sbh2_server_set_reset_rate",
  maxContinuations: "sbh2_server_set_max_continuations",
  maxQueuedBytes: "sbh2_server_set_max_queued",
  stallTimeoutMs: "sbh2_server_set_stall_timeout",
  maxBufferedBodyBytes: "sbh2_server_set_max_buffered",
  maxServerQueuedBytes: "sbh2_server_set_max_queued_total",
} as const satisfies Record<keyof H2ServerLimitOptions, keyof Sbh2Symbols>;

/** Counters of one connection (enum sbh2_stat). */
export const H2_STAT = {
  REQUESTS: 1,
  PEER_RESETS: 2,
  LOCAL_RESETS: 3,
  QUEUED_BYTES: 4,
  STREAMS: 5,
  /** Request-body bytes buffered by all connections of the server (not a per-connection sum). */
  BUFFERED: 6,
  /** Response body bytes queued by all connections of the server (not a per-connection sum). */
  QUEUED_TOTAL: 7,
  /** Events ready to poll. */
  EVENTS: 8,
  /** Listener only: connections held now. */
  CONNECTIONS: 9,
  /** Listener only: accepts that failed so far. */
  ACCEPT_ERRORS: 10,
  /** Listener only: idle connections closed to let new ones in. */
  ROOM_MADE: 11,
  /** Listener only: sends the kernel did not take whole. */
  BLOCKED_WRITES: 12,
} as const;

const decoder = new TextDecoder();
const EMPTY = new Uint8Array(1);

/** The limits every connection of one server starts with. */
export class H2ServerLimits {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;

  /** Throws `RangeError` for a value the shim refuses (0, negative, out of range). */
  constructor(sym: Sbh2Symbols, options: H2ServerLimitOptions = {}) {
    this.#sym = sym;
    const ptr = sym.sbh2_server_new();
    if (ptr === null) throw new NativeError(NATIVE_ERR.NOMEM, "Cannot create HTTP/2 server limits");
    this.#ptr = ptr;
    for (const [name, setter] of Object.entries(SETTERS)) {
      const value = options[name as keyof H2ServerLimitOptions];
      if (value === undefined) continue;
      if (!Number.isSafeInteger(value) || value <= 0 || sym[setter](ptr, BigInt(value)) < 0) {
        this.close();
        throw new RangeError(`Invalid ${name}: ${value}`);
      }
    }
  }

  /** The native handle, for {@linkcode H2ServerConn}. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("HTTP/2 server limits");
    return this.#ptr;
  }

  /** Drops this reference; connections keep their own. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_server_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** One accepted connection's HTTP/2 server session: bytes in, events, responses, bytes out. */
export class H2ServerConn {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;
  #poll = (b: Uint8Array<ArrayBuffer>, cap: number) =>
    this.#ptr === null ? NATIVE_ERR.CLOSED : this.#sym.sbh2_sconn_poll(this.#ptr, b, cap);

  constructor(sym: Sbh2Symbols, limits: H2ServerLimits) {
    this.#sym = sym;
    const ptr = sym.sbh2_sconn_new(limits.pointer);
    if (ptr === null) {
      throw new NativeError(NATIVE_ERR.NOMEM, "Cannot create an HTTP/2 server session");
    }
    this.#ptr = ptr;
  }

  /** False once freed. */
  get open(): boolean {
    return this.#ptr !== null;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("HTTP/2 server connection");
    return this.#ptr;
  }

  /** Feeds received bytes; returns the number of events ready, or a negative code. */
  recv(data: Uint8Array<ArrayBuffer>, length: number): number {
    return this.#sym.sbh2_sconn_recv(this.#live(), data, length);
  }

  /**
   * Feeds received TLS ciphertext through `tls` straight into the session;
   * returns the number of events ready (0 while the handshake runs), or a
   * negative code (`TLS`: see the TLS session's error text; `CLOSED` after
   * the peer's close_notify).
   */
  recvTls(tls: H2Tls, data: Uint8Array<ArrayBuffer>, length: number): number {
    return this.#sym.sbh2_sconn_recv_tls(this.#live(), tls.pointer, data, length);
  }

  /**
   * Writes TLS ciphertext into `out`: handshake records, then the session's
   * output encrypted; returns its length, DONE, or CLOSED once the session
   * finished and close_notify went out.
   */
  sendTls(tls: H2Tls, out: Uint8Array<ArrayBuffer>): number {
    return this.#sym.sbh2_sconn_send_tls(this.#live(), tls.pointer, out, out.length);
  }

  /** Hands ready events to `handler` through `poller` until `expected` (the count recv returned) were handed over; returns how many. */
  poll(poller: EventPoller, handler: EventHandler, expected = Infinity): number {
    this.#live();
    return poller.poll(this.#poll, handler, expected);
  }

  /**
   * Answers stream `streamId` with the first `blockLength` bytes of `block`
   * and `body`: copied when `token` is 0, else lent until a RELEASED event
   * with `token`. Returns 0 or a negative code (the stream is gone, or it was
   * reset because the peer reads nothing); then nothing is lent.
   */
  respond(
    streamId: number,
    block: Uint8Array<ArrayBuffer>,
    blockLength: number,
    body: Uint8Array,
    token: number,
  ): number {
    return this.#sym.sbh2_sconn_respond(
      this.#live(),
      streamId,
      block,
      blockLength,
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      body.length,
      token,
    );
  }

  /** Resets a delivered request's stream with ENHANCE_YOUR_CALM instead of answering it; 0 or a negative code. */
  refuse(streamId: number): number {
    return this.#sym.sbh2_sconn_refuse(this.#live(), streamId);
  }

  /** Writes pending output into `out`; returns its length, or DONE / CLOSED (finished: close the socket). */
  send(out: Uint8Array<ArrayBuffer>): number {
    return this.#sym.sbh2_sconn_send(this.#live(), out, out.length);
  }

  /**
   * Sends pending output (through `tls` when given) on the connected socket
   * `fd` while the kernel takes all of it without waiting; returns how many
   * bytes it left at the start of `out` for the caller to write (the kernel
   * would wait, or send failed), DONE when everything went out, CLOSED once
   * the session finished and its last bytes went out, or another negative
   * code of the pull.
   */
  sendFd(tls: H2Tls | undefined, fd: number, out: Uint8Array<ArrayBuffer>): number {
    return this.#sym.sbh2_sconn_send_fd(this.#live(), tls?.pointer ?? null, fd, out, out.length);
  }

  /** Runs the shim's timers; returns ms until the next is due, or CLOSED when the connection is finished. */
  tick(): number {
    return this.#sym.sbh2_sconn_tick(this.#live());
  }

  /** Starts a graceful close (GOAWAY NO_ERROR); in-flight streams finish, then send reports CLOSED. */
  shutdown(): void {
    if (this.#ptr !== null) this.#sym.sbh2_sconn_shutdown(this.#ptr);
  }

  /** One counter from {@linkcode H2_STAT} (0 once freed). */
  stat(which: number): number {
    if (this.#ptr === null) return 0;
    const v = Number(this.#sym.sbh2_sconn_stat(this.#ptr, which));
    if (v < 0) throw new NativeError(v, `HTTP/2 stat failed: ${nativeErrorName(v)}`);
    return v;
  }

  /** Why the connection closed, as text (empty while open). */
  errorText(): string {
    if (this.#ptr === null) return "";
    const b = new Uint8Array(256);
    const n = this.#sym.sbh2_sconn_error(this.#ptr, b, b.length);
    return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
  }

  /** Frees the session (lent bodies are no longer referenced afterwards). Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_sconn_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * The h2c listening socket the module owns (`io: "module"`), with every
 * connection it accepted: its I/O thread ({@linkcode IoLoop}) reads and writes
 * them; this side polls one event stream over all of them and answers by
 * connection id. Once {@linkcode H2Listener.guard}ed, every call is made under
 * the loop's lock. `close()` frees the socket and every connection (stop the
 * loop first); idempotent.
 */
export class H2Listener {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;
  #loop: IoLoop | undefined;
  #poll = (b: Uint8Array<ArrayBuffer>, cap: number) =>
    this.#ptr === null ? NATIVE_ERR.CLOSED : this.#sym.sbh2_listener_poll(this.#ptr, b, cap);

  /** Opens the socket at `hostname`:`port` (0: any free port); throws `Error` when it cannot. */
  constructor(sym: Sbh2Symbols, hostname: string, port: number) {
    this.#sym = sym;
    this.#ptr = sym.sbh2_listener_open(new TextEncoder().encode(`${hostname}\0`), port);
    if (this.#ptr === null) throw new Error(`Cannot listen on ${hostname}:${port} (module I/O)`);
  }

  /** The native handle, for the loop that runs it. */
  get pointer(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("HTTP/2 listener");
    return this.#ptr;
  }

  /** From now on every call (but `close`) is made under `loop`'s lock. */
  guard(loop: IoLoop): void {
    this.#loop = loop;
    this.#sym = guardedSymbols(this.#sym, loop, /^sbh2_listener_(?!free$)/);
  }

  /** Runs every connection accepted from now on over TLS with `config` (which must outlive this listener). */
  setTls(config: H2TlsConfig): void {
    if (this.#sym.sbh2_listener_set_tls(this.pointer, config.pointer) !== 0) {
      throw new RangeError("Cannot set the listener's TLS configuration");
    }
  }

  /**
   * The calls on connection `connId`'s TLS session (`../native/tls_session.ts`),
   * each made under the loop's lock; once the connection is gone they answer
   * as for a closed session.
   */
  tlsCalls(connId: number): TlsSessionCalls {
    const sym = this.#sym;
    const on = (f: (tls: Deno.PointerValue) => number, gone: number): number => {
      if (this.#ptr === null) return gone;
      this.#loop?.lock();
      try {
        const tls = sym.sbh2_listener_tls(this.#ptr, connId);
        return tls === null ? gone : f(tls);
      } finally {
        this.#loop?.unlock();
      }
    };
    return {
      state: () => on((t) => sym.sbh2_tls_state(t), NATIVE_ERR.CLOSED),
      text: (kind, buf) => on((t) => sym.sbh2_tls_info(t, kind, buf, buf.length), 0),
      handshakeBytes: (sent) => on((t) => sym.sbh2_tls_handshake_bytes(t, sent), 0),
      exporter: (l, c, cLen, out) =>
        on((t) => sym.sbh2_tls_export(t, l, l.length, c, cLen, out, out.length), NATIVE_ERR.CLOSED),
    };
  }

  /** Sets the connection cap and the TCP write stall timeout; throws `RangeError` for a value the module refuses. */
  configure(maxConnections: number, stallTimeoutMs: number): void {
    const p = this.pointer;
    if (this.#sym.sbh2_listener_set_max_connections(p, BigInt(maxConnections)) !== 0) {
      throw new RangeError(`Invalid maxConnections: ${maxConnections}`);
    }
    if (this.#sym.sbh2_listener_set_stall_timeout(p, BigInt(stallTimeoutMs)) !== 0) {
      throw new RangeError(`Invalid stallTimeoutMs: ${stallTimeoutMs}`);
    }
  }

  /** The bound port. */
  get port(): number {
    const n = this.#sym.sbh2_listener_port(this.pointer);
    if (n < 0) throw new NativeError(n, `HTTP/2 listener port: ${nativeErrorName(n)}`);
    return n;
  }

  /** Hands every ready event of every connection to `handler` (with its connection id); returns how many. */
  poll(poller: EventPoller, handler: EventHandler): number {
    if (this.#ptr === null) return 0;
    return poller.poll(this.#poll, handler);
  }

  /** {@linkcode H2ServerConn.respond} on connection `connId`; `NOT_FOUND` once it is gone. */
  respond(
    connId: number,
    streamId: number,
    block: Uint8Array<ArrayBuffer>,
    blockLength: number,
    body: Uint8Array,
    token: number,
  ): number {
    if (this.#ptr === null) return NATIVE_ERR.CLOSED;
    return this.#sym.sbh2_listener_respond(
      this.#ptr,
      connId,
      streamId,
      block,
      blockLength,
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      body.length,
      token,
    );
  }

  /** {@linkcode H2ServerConn.refuse} on connection `connId`. */
  refuse(connId: number, streamId: number): number {
    if (this.#ptr === null) return NATIVE_ERR.CLOSED;
    return this.#sym.sbh2_listener_refuse(this.#ptr, connId, streamId);
  }

  /** Stops accepting (the socket closes) and sends every connection GOAWAY at the next flush. */
  shutdown(): void {
    if (this.#ptr !== null) this.#sym.sbh2_listener_shutdown(this.#ptr);
  }

  /** One counter from {@linkcode H2_STAT} summed over the connections, or a listener counter (0 once freed). */
  stat(which: number): number {
    if (this.#ptr === null) return 0;
    const v = Number(this.#sym.sbh2_listener_stat(this.#ptr, which));
    if (v < 0) throw new NativeError(v, `HTTP/2 listener stat failed: ${nativeErrorName(v)}`);
    return v;
  }

  /** Closes the socket and every connection; idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_listener_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
