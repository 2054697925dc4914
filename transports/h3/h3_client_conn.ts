/**
 * {@linkcode H3ClientConn}: one client QUIC connection of the native HTTP/3
 * module (requests, events, timers, datagram I/O on an {@linkcode H3Socket},
 * tickets and tokens, TLS info and the exporter).
 */
import type { Sbh3Symbols } from "./symbols.ts";
import type { TlsConnectionInfo } from "../tls.ts";
import { encodeHeaderBlock, type HeaderList } from "../native/wire.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { exportKeyingMaterial, readTlsInfo, type TlsSessionCalls } from "../native/tls_session.ts";
import { check, H3Error, h3Freed } from "./h3_error.ts";
import { type H3Event, h3EventPoller, H3EventReader } from "./h3_event.ts";
import type { EventHandler } from "../native/event_poller.ts";
import { type H3DatagramStats, readStats } from "./h3_datagram_stats.ts";
import type { H3Config } from "./h3_config.ts";
import type { H3Socket } from "./h3_socket.ts";
import { cstr, EMPTY } from "./_ffi_util.ts";
import { guardedSymbols, type IoLoop } from "../native/io_loop.ts";

const decoder = new TextDecoder();

/** Addresses of a client connection. */
export interface ClientAddresses {
  /** Name verified against the server certificate (and sent as SNI unless an IP). */
  serverName: string;
  /** Local IP and port of the UDP socket. */
  localIp: string;
  localPort: number;
  /** Server IP and port. */
  remoteIp: string;
  remotePort: number;
}

/** One client QUIC connection. */
export class H3ClientConn {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #poller = h3EventPoller();
  #events = new H3EventReader(this.#poller);
  #poll = (b: Uint8Array, cap: number) =>
    this.#sym.sbh3_conn_poll(this.#ptr, b as Uint8Array<ArrayBuffer>, BigInt(cap));

  constructor(sym: Sbh3Symbols, config: H3Config, addr: ClientAddresses) {
    this.#sym = sym;
    const ptr = sym.sbh3_conn_new_client(
      config.pointer,
      cstr(addr.serverName),
      cstr(addr.localIp),
      addr.localPort,
      cstr(addr.remoteIp),
      addr.remotePort,
    );
    if (ptr === null) {
      throw new H3Error(
        NATIVE_ERR.INVALID,
        `Cannot start an HTTP/3 connection to ${addr.remoteIp}:${addr.remotePort}`,
      );
    }
    this.#ptr = ptr;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw h3Freed("HTTP/3 connection");
    return this.#ptr;
  }

  /** The module's handle (for the I/O loop that runs it). */
  get pointer(): Deno.PointerValue {
    return this.#live();
  }

  /**
   * From now on every call into the connection is made under `loop`'s lock:
   * its thread runs the connection beside this one. Freeing stays unguarded
   * (the loop is stopped first).
   */
  guard(loop: IoLoop): void {
    this.#sym = guardedSymbols(this.#sym, loop, /^sbh3_conn_(?!free$)/);
  }

  /** Feeds one datagram; returns the events ready to poll or a negative code (the connection reports CLOSED as an event). */
  recv(data: Uint8Array): number {
    return this.#sym.sbh3_conn_recv(
      this.#live(),
      data as Uint8Array<ArrayBuffer>,
      BigInt(data.length),
    );
  }

  /** Writes the next datagram into `out`; returns its length or 0 when there is none. */
  send(out: Uint8Array): number {
    const n = this.#sym.sbh3_conn_send(
      this.#live(),
      out as Uint8Array<ArrayBuffer>,
      BigInt(out.length),
    );
    if (n === NATIVE_ERR.DONE) return 0;
    return check(n, "send");
  }

  /** Milliseconds until {@linkcode onTimeout} is due, or -1 when no timer is pending. */
  timeoutMs(): number {
    if (this.#ptr === null) return -1;
    const n = this.#sym.sbh3_conn_timeout_ms(this.#ptr);
    return n < 0 ? -1 : n;
  }

  /** Runs expired timers. */
  onTimeout(): void {
    this.#sym.sbh3_conn_on_timeout(this.#live());
  }

  /** Submits a request; returns the stream id, or -1 when no stream can be opened yet. */
  request(headers: HeaderList, body: Uint8Array): number {
    const hb = encodeHeaderBlock(headers);
    return this.requestBlock(hb, hb.length, body);
  }

  /**
   * Opens a request stream with a header block already encoded (the first
   * `length` bytes of `block`, copied before this returns) and `body`;
   * returns the stream id, or -1 when no stream is available yet.
   */
  requestBlock(block: Uint8Array, length: number, body: Uint8Array): number {
    const n = this.#sym.sbh3_conn_request(
      this.#live(),
      block as Uint8Array<ArrayBuffer>,
      BigInt(length),
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(body.length),
    );
    const id = Number(n);
    if (id === NATIVE_ERR.STREAM_BLOCKED) return -1;
    return check(id, "request");
  }

  /** Resets a stream the caller gave up on. */
  cancel(streamId: number): void {
    if (this.#ptr !== null) this.#sym.sbh3_conn_cancel(this.#ptr, BigInt(streamId));
  }

  /** Returns the next event, or null. */
  poll(): H3Event | null {
    this.#live();
    return this.#events.read(this.#poll);
  }

  /**
   * Hands every pending event to `handler`, its header block and body as
   * views into a reused buffer (valid during the call; `bodyOwned` bodies
   * excepted); returns how many. Not mixed with {@linkcode poll}, which
   * holds events it read ahead.
   */
  pollEach(handler: EventHandler): number {
    this.#live();
    return this.#poller.poll(this.#poll, handler);
  }

  /** Starts a graceful close; drain {@linkcode send} afterwards. */
  shutdown(): void {
    if (this.#ptr !== null) this.#sym.sbh3_conn_shutdown(this.#ptr);
  }

  /** Why the connection closed, as text (empty while open). */
  errorText(): string {
    if (this.#ptr === null) return "";
    const b = new Uint8Array(512);
    const n = this.#sym.sbh3_conn_error(this.#ptr, b, BigInt(b.length));
    return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
  }

  /**
   * Feeds `first` (a datagram the caller received, if any), receives every
   * further datagram ready on `sock`, runs due timers and sends all that is
   * due, in one call; returns how many datagrams came in.
   */
  io(sock: H3Socket, first?: Uint8Array): number {
    return this.#sym.sbh3_conn_io(
      this.#live(),
      sock.pointer,
      (first ?? EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(first ? first.length : 0),
    );
  }

  /**
   * The receive half of {@linkcode io}: reads every datagram ready on `sock`
   * and sends nothing (what that asks to send waits for the next `io()`);
   * returns how many came in.
   */
  drain(sock: H3Socket): number {
    return this.#sym.sbh3_conn_drain(this.#live(), sock.pointer);
  }

  /**
   * The send half of {@linkcode io}: runs due timers and sends all that is
   * due, reading nothing from `sock` (what is there waits for the next read).
   */
  flush(sock: H3Socket): void {
    this.#sym.sbh3_conn_flush(this.#live(), sock.pointer);
  }

  /** The last NEW_TOKEN the server gave this connection, or null. */
  token(): Uint8Array | null {
    if (this.#ptr === null) return null;
    const b = new Uint8Array(512);
    const n = this.#sym.sbh3_conn_token(this.#ptr, b, BigInt(b.length));
    return n > 0 ? b.slice(0, n) : null;
  }

  /** Starts a 1-RTT key update; false when not allowed yet (handshake unconfirmed, last update unacknowledged). */
  updateKey(): boolean {
    const rc = this.#sym.sbh3_conn_update_key(this.#live());
    if (rc === NATIVE_ERR.STREAM_BLOCKED) return false;
    check(rc, "update_key");
    return true;
  }

  /** Datagram counters and path sizes of this connection (null once freed). */
  stats(): H3DatagramStats | null {
    if (this.#ptr === null) return null;
    return readStats((out, n) => this.#sym.sbh3_conn_stats(this.#ptr, out, n));
  }

  /** Offers a ticket from {@linkcode takeTicket} (before the first send); throws `H3Error` when refused. */
  resume(ticket: Uint8Array): void {
    check(
      this.#sym.sbh3_conn_resume(
        this.#live(),
        ticket as Uint8Array<ArrayBuffer>,
        BigInt(ticket.length),
      ),
      "resume",
    );
  }

  /** The newest ticket the server sent, taken (it is offered once), or undefined. */
  takeTicket(): Uint8Array | undefined {
    if (this.#ptr === null) return undefined;
    let buf = new Uint8Array(8192);
    let n = this.#sym.sbh3_conn_ticket(this.#ptr, buf, BigInt(buf.length));
    if (n === NATIVE_ERR.BUFFER_TOO_SHORT) {
      buf = new Uint8Array(65536);
      n = this.#sym.sbh3_conn_ticket(this.#ptr, buf, BigInt(buf.length));
    }
    return n > 0 ? buf.slice(0, n) : undefined;
  }

  /** Milliseconds since this connection's first response header arrived, or undefined before one. */
  firstResponseAgoMs(): number | undefined {
    if (this.#ptr === null) return undefined;
    const us = Number(this.#sym.sbh3_conn_first_response_ago_us(this.#ptr));
    return us < 0 ? undefined : us / 1000;
  }

  /** The `TLS_STATE` bits (`../native/tls_session.ts`) (0 once freed). */
  tlsState(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_conn_tls_state(this.#ptr);
  }

  #tls: TlsSessionCalls = {
    state: () => this.#sym.sbh3_conn_tls_state(this.#ptr),
    text: (kind, b) => this.#sym.sbh3_conn_tls_info(this.#ptr, kind, b, BigInt(b.length)),
    handshakeBytes: (sent) => Number(this.#sym.sbh3_conn_handshake_bytes(this.#ptr, sent)),
    exporter: (l, c, cLen, out) =>
      this.#sym.sbh3_conn_export(
        this.#ptr,
        l,
        BigInt(l.length),
        c,
        BigInt(cLen),
        out,
        BigInt(out.length),
      ),
  };

  /** What the handshake negotiated; null before it completed or once freed (see `../native/tls_session.ts`). */
  tlsInfo(): TlsConnectionInfo | null {
    return readTlsInfo(this.#ptr === null ? null : this.#tls);
  }

  /** RFC 5705 / RFC 8446 §7.5 exporter; throws `RangeError` before the handshake completed or once freed. */
  exportKeyingMaterial(label: string, context: Uint8Array | undefined, length: number): Uint8Array {
    return exportKeyingMaterial(this.#ptr === null ? null : this.#tls, label, context, length);
  }

  /** Request streams the shim still holds state for (0 once freed). */
  streamCount(): number {
    return this.#ptr === null ? 0 : Math.max(0, this.#sym.sbh3_conn_stream_count(this.#ptr));
  }

  /** Frees the connection. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_conn_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
