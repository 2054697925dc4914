/**
 * HTTP/3 framing for one QUIC connection of Deno's own (quinn): a safe
 * wrapper over the sbdh3 shim. {@linkcode H3Framing} owns one native handle;
 * the caller feeds it the bytes of every stream, pulls what each stream must
 * send, and polls complete messages. Failures are {@linkcode H3FramingError}.
 */
import { freedMessage, NATIVE_ERR, NativeError, nativeErrorName } from "../native/errors.ts";
import { decodeHeaderBlock, HeaderBlockWriter, type HeaderList } from "../native/wire.ts";
import { EventPoller } from "../native/event_poller.ts";
import type { Sbdh3Symbols } from "./h3_symbols.ts";
import { DEFAULT_MAX_HEADER_SECTION_BYTES } from "../server_limits.ts";

/** HTTP/3 error codes (RFC 9114 §8.1) the deno stack closes streams and connections with. */
export const H3_CODE = {
  NO_ERROR: 0x100,
  GENERAL_PROTOCOL_ERROR: 0x101,
  INTERNAL_ERROR: 0x102,
  EXCESSIVE_LOAD: 0x107,
  REQUEST_CANCELLED: 0x10c,
} as const;

/** A failure of the HTTP/3 layer; `code` is the shim's, `h3Code` the HTTP/3 error to close with. */
export class H3FramingError extends NativeError {
  /** The HTTP/3 error code to close the connection with. */
  readonly h3Code: number;
  constructor(message: string, code: number, h3Code: number = H3_CODE.INTERNAL_ERROR) {
    super(code, message);
    this.name = "H3FramingError";
    this.h3Code = h3Code;
  }
}

/** One polled event. */
export interface FramingEvent {
  /** One of `WIRE_EVENT`: MESSAGE, RESET, GOAWAY or TOO_LARGE. */
  readonly type: number;
  readonly streamId: number;
  /** RESET: the HTTP/3 error code. */
  readonly code: number;
  /** The header block as the wire format carries it (a copy, owned by the event). */
  readonly block: Uint8Array;
  /** The header fields of {@linkcode block}, decoded when first read. */
  readonly headers: HeaderList;
  readonly body: Uint8Array;
}

/** An event whose header block is decoded only when its fields are asked for. */
class PolledEvent implements FramingEvent {
  readonly type: number;
  readonly streamId: number;
  readonly code: number;
  readonly block: Uint8Array;
  readonly body: Uint8Array;
  #headers: HeaderList | undefined;
  constructor(type: number, streamId: number, code: number, block: Uint8Array, body: Uint8Array) {
    this.type = type;
    this.streamId = streamId;
    this.code = code;
    this.block = block;
    this.body = body;
  }
  get headers(): HeaderList {
    return this.#headers ??= decodeHeaderBlock(this.block);
  }
}

/** Bytes one stream must send. */
export interface StreamChunk {
  streamId: number;
  bytes: Uint8Array;
  /** The stream ends after these bytes. */
  fin: boolean;
}

const EMPTY = new Uint8Array(0);
const WRITE_CAP = 64 * 1024;

/** The HTTP/3 layer of one connection. */
export class H3Framing {
  #sym: Sbdh3Symbols;
  #handle: Deno.PointerValue;
  #out = new Uint8Array(WRITE_CAP);
  #outCap = BigInt(WRITE_CAP);
  #meta = new Uint8Array(16);
  #metaView = new DataView(this.#meta.buffer);
  /** Encodes the header lists given to {@linkcode request} and {@linkcode respond}. */
  #writer = new HeaderBlockWriter();
  /** The native layer's one event reader; a failed poll is an H3FramingError. */
  #poller = new EventPoller({
    bufferBytes: 64 * 1024,
    error: (code) => this.#error(code, "poll"),
  });

  /**
   * Creates the layer: `server` side or client, with a body limit and a
   * header-section limit in bytes (name + value + 32 per field; default
   * {@linkcode DEFAULT_MAX_HEADER_SECTION_BYTES}).
   */
  constructor(
    symbols: Sbdh3Symbols,
    server: boolean,
    options: { maxBodyBytes: number; maxFieldSectionBytes?: number },
  ) {
    this.#sym = symbols;
    this.#handle = symbols.sbdh3_conn_new(
      server ? 1 : 0,
      BigInt(options.maxBodyBytes),
      BigInt(options.maxFieldSectionBytes ?? DEFAULT_MAX_HEADER_SECTION_BYTES),
    );
    if (!this.#handle) throw new H3FramingError("Cannot create the HTTP/3 layer", NATIVE_ERR.NOMEM);
  }

  #live(): Deno.PointerValue {
    if (!this.#handle) {
      throw new H3FramingError(freedMessage("The HTTP/3 layer"), NATIVE_ERR.CLOSED);
    }
    return this.#handle;
  }

  #check(rv: number, what: string): void {
    if (rv < 0) throw this.#error(rv, what);
  }

  #error(rv: number, what: string): H3FramingError {
    const h3 = rv === NATIVE_ERR.PROTO
      ? Number(this.#sym.sbdh3_conn_error_code(this.#live()))
      : H3_CODE.INTERNAL_ERROR;
    return new H3FramingError(
      `HTTP/3 ${what} failed (${nativeErrorName(rv)})`,
      rv,
      h3 || H3_CODE.GENERAL_PROTOCOL_ERROR,
    );
  }

  /** Server: how many client request streams QUIC allows at once. */
  setMaxStreams(n: number): void {
    this.#check(this.#sym.sbdh3_conn_set_max_streams(this.#live(), BigInt(n)), "stream limit");
  }

  /** Binds our control and QPACK encoder/decoder streams. */
  bind(control: number, encoder: number, decoder: number): void {
    this.#check(
      this.#sym.sbdh3_conn_bind(this.#live(), BigInt(control), BigInt(encoder), BigInt(decoder)),
      "bind",
    );
  }

  /**
   * Feeds bytes that arrived on `streamId`; `fin` when the peer ended the
   * stream. Returns how many events are ready to {@linkcode poll}.
   */
  read(streamId: number, bytes: Uint8Array, fin: boolean): number {
    const rv = this.#sym.sbdh3_conn_read(
      this.#live(),
      BigInt(streamId),
      bytes,
      BigInt(bytes.length),
      fin ? 1 : 0,
    );
    this.#check(rv, "read");
    return rv;
  }

  /** Everything due to send now, per stream, in order. */
  drain(): StreamChunk[] {
    const out: StreamChunk[] = [];
    const h = this.#live();
    const view = this.#metaView;
    for (;;) {
      const n = Number(this.#sym.sbdh3_conn_write(h, this.#out, this.#outCap, this.#meta));
      if (n === NATIVE_ERR.DONE) return out;
      this.#check(n, "write");
      out.push({
        streamId: Number(view.getBigInt64(0, true)),
        bytes: n ? this.#out.slice(0, n) : EMPTY,
        fin: view.getUint32(8, true) === 1,
      });
    }
  }

  /** Client: submits a request on the bidirectional stream `streamId`. */
  request(streamId: number, headers: HeaderList, body: Uint8Array): void {
    const w = this.#encode(headers);
    this.requestBlock(streamId, w.buffer, w.length, body);
  }

  /** Client: submits a request whose header block is the first `length` bytes of `block` (copied). */
  requestBlock(streamId: number, block: Uint8Array, length: number, body: Uint8Array): void {
    this.#check(
      this.#sym.sbdh3_conn_request(
        this.#live(),
        BigInt(streamId),
        block,
        BigInt(length),
        body,
        BigInt(body.length),
      ),
      "request",
    );
  }

  /** Server: submits the response on `streamId`. */
  respond(streamId: number, headers: HeaderList, body: Uint8Array): void {
    const w = this.#encode(headers);
    this.respondBlock(streamId, w.buffer, w.length, body);
  }

  /** Server: submits the response on `streamId`, its header block the first `length` bytes of `block` (copied). */
  respondBlock(streamId: number, block: Uint8Array, length: number, body: Uint8Array): void {
    this.#check(
      this.#sym.sbdh3_conn_respond(
        this.#live(),
        BigInt(streamId),
        block,
        BigInt(length),
        body,
        BigInt(body.length),
      ),
      "respond",
    );
  }

  #encode(headers: HeaderList): HeaderBlockWriter {
    const w = this.#writer;
    w.reset();
    for (const [n, v] of headers) w.field(n, v);
    return w;
  }

  /** Every event ready now; `expected` (what {@linkcode read} returned) saves asking past the last. */
  poll(expected = Infinity): FramingEvent[] {
    const h = this.#live();
    const out: FramingEvent[] = [];
    this.#poller.poll(
      (buf, cap) => Number(this.#sym.sbdh3_conn_poll(h, buf, BigInt(cap))),
      (type, streamId, code, block, body, owned) =>
        out.push(
          new PolledEvent(
            type,
            streamId,
            code,
            block.slice(),
            owned || body.length === 0 ? body : body.slice(),
          ),
        ),
      expected,
    );
    return out;
  }

  /** QUIC closed `streamId` (both ways, or reset with `appError`): the layer forgets it. */
  closeStream(streamId: number, appError = 0): void {
    if (!this.#handle) return;
    this.#check(
      this.#sym.sbdh3_conn_close_stream(this.#handle, BigInt(streamId), BigInt(appError)),
      "stream close",
    );
  }

  /** Server: GOAWAY; no new requests after it. */
  shutdown(): void {
    this.#check(this.#sym.sbdh3_conn_shutdown(this.#live()), "shutdown");
  }

  /** Streams with a message in progress or queued. */
  get streamCount(): number {
    return this.#handle ? this.#sym.sbdh3_conn_stream_count(this.#handle) : 0;
  }

  /** Frees the native layer. Idempotent. */
  close(): void {
    if (!this.#handle) return;
    this.#sym.sbdh3_conn_free(this.#handle);
    this.#handle = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
