/**
 * Safe wrapper over the sbh2 symbols: {@linkcode H2Conn} owns one native
 * client session in a `#private` field; `close()` is idempotent and frees it,
 * and `Symbol.dispose` calls `close()`. Negative return codes of the shim are
 * numbers from {@linkcode NATIVE_ERR}; `DONE` becomes 0 or "no event". Once
 * freed, its I/O calls throw `NativeError` `CLOSED`, as every wrapper's do;
 * `cancel`, `shutdown` and the readers stay quiet.
 */
import type { Sbh2Symbols } from "./symbols.ts";
import type { H2Tls } from "./tls_ffi.ts";
import { WIRE_EVENT } from "../native/wire.ts";
import { freedError, NATIVE_ERR, NativeError, nativeErrorName } from "../native/errors.ts";
import { type EventHandler, EventPoller } from "../native/event_poller.ts";
import { versionParts } from "../native/library.ts";
import { guardedSymbols, type IoLoop } from "../native/io_loop.ts";

/** Event types (enum sbwire_event_type). */
export const H2_EVENT = WIRE_EVENT;

/** Options for {@linkcode H2Conn}. */
export interface H2ConnOptions {
  /** Receive window of each stream and of the connection, in bytes. Default 16 MiB. */
  windowBytes?: number;
  /** Largest response body accepted; a larger one resets its stream. Default 64 MiB. */
  maxBodyBytes?: number;
  /** Largest response header list (name + value + 32 per field), advertised in SETTINGS. Default 16384. */
  maxHeaderListBytes?: number;
}

const decoder = new TextDecoder();

/** One HTTP/2 client session: bytes in, bytes out, requests and events. */
export class H2Conn {
  #sym: Sbh2Symbols;
  #ptr: Deno.PointerValue;
  #events = new EventPoller({
    error: (code) => new NativeError(code, `HTTP/2 poll failed: ${nativeErrorName(code)}`),
  });
  #poll = (b: Uint8Array<ArrayBuffer>, cap: number) =>
    this.#ptr === null ? NATIVE_ERR.CLOSED : this.#sym.sbh2_conn_poll(this.#ptr, b, cap);

  constructor(sym: Sbh2Symbols, options: H2ConnOptions = {}) {
    this.#sym = sym;
    const ptr = sym.sbh2_conn_new(
      options.windowBytes ?? 16 * 1024 * 1024,
      Math.min(options.maxBodyBytes ?? 64 * 1024 * 1024, 0xffffffff),
    );
    if (ptr === null) throw new NativeError(NATIVE_ERR.NOMEM, "Cannot create an HTTP/2 session");
    this.#ptr = ptr;
    const list = options.maxHeaderListBytes;
    if (
      list !== undefined && list !== 16384 && sym.sbh2_conn_set_max_header_list(ptr, list) !== 0
    ) {
      sym.sbh2_conn_free(ptr);
      throw new RangeError(`Invalid maxHeaderListBytes: ${list}`);
    }
  }

  /** False once freed. */
  get open(): boolean {
    return this.#ptr !== null;
  }

  #live(): Deno.PointerValue {
    if (this.#ptr === null) throw freedError("HTTP/2 connection");
    return this.#ptr;
  }

  /** The module's handle (for the I/O loop that runs it). */
  get pointer(): Deno.PointerValue {
    return this.#live();
  }

  /**
   * From now on every call into the session is made under `loop`'s lock: its
   * thread runs the session beside this one. Freeing stays unguarded (the loop
   * is stopped first).
   */
  guard(loop: IoLoop): void {
    this.#sym = guardedSymbols(this.#sym, loop, /^sbh2_conn_(?!free$)/);
  }

  /** Feeds received bytes; returns the number of events ready, or a negative code. */
  recv(data: Uint8Array, length = data.length): number {
    return this.#sym.sbh2_conn_recv(this.#live(), data as Uint8Array<ArrayBuffer>, length);
  }

  /** Writes pending output into `out`; returns its length (0 when nothing is pending). */
  send(out: Uint8Array): number {
    const n = this.#sym.sbh2_conn_send(this.#live(), out as Uint8Array<ArrayBuffer>, out.length);
    return n > 0 ? n : 0;
  }

  /**
   * Feeds received TLS ciphertext through `tls` straight into the session (no
   * plaintext crosses into JavaScript); returns the number of events ready, 0
   * while the handshake runs, or a negative code (`TLS`: see the session's
   * error text).
   */
  recvTls(tls: H2Tls, data: Uint8Array, length = data.length): number {
    return this.#sym.sbh2_conn_recv_tls(
      this.#live(),
      tls.pointer,
      data as Uint8Array<ArrayBuffer>,
      length,
    );
  }

  /**
   * Writes TLS ciphertext into `out`: handshake records, then (once
   * established) the session's pending output encrypted. Returns its length
   * (0 when nothing is pending) or a negative code.
   */
  sendTls(tls: H2Tls, out: Uint8Array): number {
    const n = this.#sym.sbh2_conn_send_tls(
      this.#live(),
      tls.pointer,
      out as Uint8Array<ArrayBuffer>,
      out.length,
    );
    return n === NATIVE_ERR.DONE ? 0 : n;
  }

  /**
   * Submits a request whose header block is the first `blockLength` bytes of
   * `block`; returns the stream id or a negative code.
   */
  request(block: Uint8Array, blockLength: number, body: Uint8Array | undefined): number {
    return this.#sym.sbh2_conn_request(
      this.#live(),
      block as Uint8Array<ArrayBuffer>,
      blockLength,
      (body ?? block) as Uint8Array<ArrayBuffer>,
      body ? body.length : 0,
    );
  }

  /** Resets a stream the caller gave up on (RST_STREAM CANCEL); no event follows for it. */
  cancel(streamId: number): void {
    if (this.#ptr !== null) this.#sym.sbh2_conn_cancel(this.#ptr, streamId);
  }

  /**
   * Hands ready events to `handler` until `expected` were handed over (the
   * count {@linkcode recv} returned) or none is left; returns how many.
   */
  poll(handler: EventHandler, expected = Infinity): number {
    this.#live();
    return this.#events.poll(this.#poll, handler, expected);
  }

  /** Starts a graceful close (GOAWAY); drain {@linkcode send} afterwards. */
  shutdown(): void {
    if (this.#ptr !== null) this.#sym.sbh2_conn_shutdown(this.#ptr);
  }

  /** Why the connection closed, as text (empty while open). */
  errorText(): string {
    if (this.#ptr === null) return "";
    const b = new Uint8Array(256);
    const n = this.#sym.sbh2_conn_error(this.#ptr, b, b.length);
    return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
  }

  /** Streams the shim still holds state for (0 once freed). */
  streamCount(): number {
    return this.#ptr === null ? 0 : Math.max(0, this.#sym.sbh2_conn_stream_count(this.#ptr));
  }

  /** Frees the session. Idempotent. */
  close(): void {
    if (this.#ptr !== null) {
      this.#sym.sbh2_conn_free(this.#ptr);
      this.#ptr = null;
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** The module's library versions, parsed from {@linkcode sbh2Version} (cached per process). */
export function sbh2Versions(sym: Sbh2Symbols): { sbh2: string; nghttp2: string; gnutls: string } {
  if (!versions) {
    const p = versionParts(sbh2Version(sym));
    versions = {
      sbh2: p.sbh2 ?? "unknown",
      nghttp2: p.nghttp2 ?? "unknown",
      gnutls: p.gnutls ?? "unknown",
    };
  }
  return versions;
}
let versions: { sbh2: string; nghttp2: string; gnutls: string } | undefined;

/** The module's version text, `sbh2/x nghttp2/x gnutls/x`. */
export function sbh2Version(sym: Sbh2Symbols): string {
  const b = new Uint8Array(128);
  const n = sym.sbh2_version(b, b.length);
  return n > 0 ? decoder.decode(b.subarray(0, n)) : "";
}
