/**
 * {@linkcode H3ServerEndpoint}: the native HTTP/3 module's server side, which
 * demultiplexes datagrams to the connections it creates, hands over their
 * requests as events and sends responses.
 */
import type { Sbh3Symbols } from "./symbols.ts";
import type { TlsConnectionInfo } from "../tls.ts";
import { encodeHeaderBlock, type HeaderList } from "../native/wire.ts";
import { NATIVE_ERR } from "../native/errors.ts";
import { exportKeyingMaterial, readTlsInfo, type TlsSessionCalls } from "../native/tls_session.ts";
import { check, H3Error, h3Freed } from "./h3_error.ts";
import { h3EventPoller } from "./h3_event.ts";
import type { EventHandler } from "../native/event_poller.ts";
import { type H3DatagramStats, readStats } from "./h3_datagram_stats.ts";
import type { H3Config } from "./h3_config.ts";
import type { H3Socket } from "./h3_socket.ts";
import { cstr, EMPTY } from "./_ffi_util.ts";
import { guardedSymbols, type IoLoop } from "../native/io_loop.ts";

const decoder = new TextDecoder();

/** Where a server datagram goes. */
export type Destination = Deno.NetAddr;

/** A server endpoint: demultiplexes datagrams to connections it creates. */
export class H3ServerEndpoint {
  #sym: Sbh3Symbols;
  #ptr: Deno.PointerValue;
  #events = h3EventPoller();
  #meta = new Uint8Array(64);
  #metaView = new DataView(this.#meta.buffer);
  #ipCache = new Map<string, Uint8Array<ArrayBuffer>>();
  #dstCache = new Map<number, Destination>();
  #poll = (b: Uint8Array, cap: number) =>
    this.#sym.sbh3_server_poll(this.#ptr, b as Uint8Array<ArrayBuffer>, BigInt(cap));

  constructor(sym: Sbh3Symbols, config: H3Config, localIp: string, localPort: number) {
    this.#sym = sym;
    const ptr = sym.sbh3_server_new(config.pointer, cstr(localIp), localPort);
    if (ptr === null) {
      throw new H3Error(
        NATIVE_ERR.INVALID,
        `Cannot create an HTTP/3 server on ${localIp}:${localPort}`,
      );
    }
    this.#ptr = ptr;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw h3Freed("HTTP/3 server");
    return this.#ptr;
  }

  /** The module's handle (for the I/O loop that runs it). */
  get pointer(): Deno.PointerValue {
    return this.#live();
  }

  /**
   * From now on every call into the server is made under `loop`'s lock: its
   * thread runs the server beside this one. Freeing stays unguarded (the loop
   * is stopped first).
   */
  guard(loop: IoLoop): void {
    this.#sym = guardedSymbols(this.#sym, loop, /^sbh3_server_(?!free$)/);
  }

  #ip(hostname: string): Uint8Array<ArrayBuffer> {
    let b = this.#ipCache.get(hostname);
    if (!b) {
      if (this.#ipCache.size > 1024) this.#ipCache.clear();
      b = cstr(hostname);
      this.#ipCache.set(hostname, b);
    }
    return b;
  }

  /** Feeds one datagram; returns the connection id (> 0) or a negative code. */
  recv(data: Uint8Array, hostname: string, port: number): number {
    return this.#sym.sbh3_server_recv(
      this.#live(),
      data as Uint8Array<ArrayBuffer>,
      BigInt(data.length),
      this.#ip(hostname),
      port,
    );
  }

  /** Writes the next datagram into `out`; returns its length and destination, or null. */
  send(out: Uint8Array): { length: number; connId: number; to: Destination } | null {
    const n = this.#sym.sbh3_server_send(
      this.#live(),
      out as Uint8Array<ArrayBuffer>,
      BigInt(out.length),
      this.#meta,
      BigInt(this.#meta.length),
    );
    if (n === NATIVE_ERR.DONE) return null;
    check(n, "send");
    const connId = this.#metaView.getUint32(0, true);
    const port = this.#metaView.getUint16(4, true);
    let to = connId ? this.#dstCache.get(connId) : undefined;
    if (!to || to.port !== port) {
      const end = this.#meta.indexOf(0, 6);
      to = { transport: "udp", hostname: decoder.decode(this.#meta.subarray(6, end)), port };
      if (connId) this.#dstCache.set(connId, to);
    }
    return { length: n, connId, to };
  }

  /**
   * Feeds `first` from `from` (a datagram the caller received, if any),
   * receives every further datagram ready on `sock`, runs due timers and sends
   * all that is due for every connection, in one call; returns how many
   * datagrams came in.
   */
  io(sock: H3Socket, first?: Uint8Array, from?: Deno.NetAddr): number {
    const ok = first !== undefined && from !== undefined;
    return this.#sym.sbh3_server_io(
      this.#live(),
      sock.pointer,
      (ok ? first : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(ok ? first.length : 0),
      ok ? this.#ip(from.hostname) : EMPTY,
      ok ? from.port : 0,
    );
  }

  /**
   * The receive half of {@linkcode io}: feeds `first`, drains every further
   * ready datagram and runs due timers, but sends nothing; the next `io()`
   * sends it all (answers to what arrived included) in one batch.
   */
  ioDeferSend(sock: H3Socket, first: Uint8Array, from: Deno.NetAddr): number {
    return this.#sym.sbh3_server_io_defer(
      this.#live(),
      sock.pointer,
      first as Uint8Array<ArrayBuffer>,
      BigInt(first.length),
      this.#ip(from.hostname),
      from.port,
    );
  }

  /**
   * {@linkcode ioDeferSend} without a datagram of the caller's: receives
   * every datagram ready on `sock` and runs due timers, sending nothing;
   * returns how many came in.
   */
  drain(sock: H3Socket): number {
    return this.#sym.sbh3_server_io_defer(
      this.#live(),
      sock.pointer,
      EMPTY as Uint8Array<ArrayBuffer>,
      0n,
      EMPTY as Uint8Array<ArrayBuffer>,
      0,
    );
  }

  /** The send half of {@linkcode io}: runs due timers and sends everything due in one batch. */
  flush(sock: H3Socket): void {
    this.#sym.sbh3_server_flush(this.#live(), sock.pointer);
  }

  /** Forgets the cached destination of a closed connection. */
  forget(connId: number): void {
    this.#dstCache.delete(connId);
  }

  /** Milliseconds until {@linkcode onTimeout} is due, or -1. */
  timeoutMs(): number {
    if (this.#ptr === null) return -1;
    const n = this.#sym.sbh3_server_timeout_ms(this.#ptr);
    return n < 0 ? -1 : n;
  }

  /** Runs expired timers and frees finished connections. */
  onTimeout(): void {
    this.#sym.sbh3_server_on_timeout(this.#live());
  }

  /**
   * Hands every pending event of any connection to `handler`, its header
   * block and body as views into a reused buffer (valid during the call;
   * `bodyOwned` bodies excepted); returns how many.
   */
  pollEach(handler: EventHandler): number {
    this.#live();
    return this.#events.poll(this.#poll, handler);
  }

  /** Sends a response; returns 0 or a negative code (for example when the stream is gone). */
  respond(connId: number, streamId: number, headers: HeaderList, body: Uint8Array): number {
    const hb = encodeHeaderBlock(headers);
    return this.respondBlock(connId, streamId, hb, hb.length, body);
  }

  /**
   * Sends a response whose header block (the wire format's) is the first
   * `blockLength` bytes of `block`, copied at once (a reused writer's buffer
   * will do); returns 0 or a negative code, as {@linkcode respond}.
   */
  respondBlock(
    connId: number,
    streamId: number,
    block: Uint8Array,
    blockLength: number,
    body: Uint8Array,
  ): number {
    return this.#sym.sbh3_server_respond(
      this.#live(),
      connId,
      BigInt(streamId),
      block as Uint8Array<ArrayBuffer>,
      BigInt(blockLength),
      (body.length ? body : EMPTY) as Uint8Array<ArrayBuffer>,
      BigInt(body.length),
    );
  }

  /** Resets a request's stream with H3_EXCESSIVE_LOAD instead of answering it; 0 or a negative code. */
  refuse(connId: number, streamId: number): number {
    return this.#sym.sbh3_server_refuse(this.#live(), connId, BigInt(streamId));
  }

  /** Refuses new connections and sends GOAWAY. */
  shutdown(): void {
    this.#sym.sbh3_server_shutdown(this.#live());
  }

  /** Closes every connection with H3_NO_ERROR; drain {@linkcode send} afterwards. */
  closeAll(): void {
    this.#sym.sbh3_server_close_all(this.#live());
  }

  /** Request streams not yet closed. */
  openStreams(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_server_open_streams(this.#ptr);
  }

  /** Counters of connection `connId`, or with 0 totals over every connection so far; null when unknown. */
  stats(connId = 0): H3DatagramStats | null {
    if (this.#ptr === null) return null;
    return readStats((out, n) => this.#sym.sbh3_server_stats(this.#ptr, connId, out, n));
  }

  /** The peer address of connection `connId`, or null when it is gone. */
  peer(connId: number): Deno.NetAddr | null {
    if (this.#ptr === null) return null;
    const meta = new Uint8Array(64);
    if (this.#sym.sbh3_server_peer(this.#ptr, connId, meta, BigInt(meta.length)) < 0) return null;
    const port = new DataView(meta.buffer).getUint16(4, true);
    const end = meta.indexOf(0, 6);
    return { transport: "udp", hostname: decoder.decode(meta.subarray(6, end)), port };
  }

  /** The TLS calls of connection `connId`, or null once the server is freed. */
  #tls(connId: number): TlsSessionCalls | null {
    const ptr = this.#ptr;
    if (ptr === null) return null;
    const sym = this.#sym;
    return {
      state: () => sym.sbh3_server_tls_state(ptr, connId),
      text: (kind, b) => sym.sbh3_server_tls_info(ptr, connId, kind, b, BigInt(b.length)),
      handshakeBytes: (sent) => Number(sym.sbh3_server_handshake_bytes(ptr, connId, sent)),
      exporter: (l, c, cLen, out) =>
        sym.sbh3_server_export(
          ptr,
          connId,
          l,
          BigInt(l.length),
          c,
          BigInt(cLen),
          out,
          BigInt(out.length),
        ),
    };
  }

  /** What connection `connId`'s handshake negotiated; null before it completed or when it is gone. */
  tlsInfo(connId: number): TlsConnectionInfo | null {
    return readTlsInfo(this.#tls(connId));
  }

  /** The exporter of connection `connId`; throws `RangeError` when it is gone or not established. */
  exportKeyingMaterial(
    connId: number,
    label: string,
    context: Uint8Array | undefined,
    length: number,
  ): Uint8Array {
    return exportKeyingMaterial(this.#tls(connId), label, context, length);
  }

  /** Connections held, including closing ones. */
  connCount(): number {
    return this.#ptr === null ? 0 : this.#sym.sbh3_server_conn_count(this.#ptr);
  }

  /** Frees the server and all its connections. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh3_server_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
