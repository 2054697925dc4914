/**
 * The one reader of polled events for both native modules: it calls a
 * module's poll function into a reused buffer and hands every event record
 * in it (read by {@linkcode readEventRecord}, the wire format's reader) to a
 * handler, without decoding the header block or copying the body.
 */
import { EVENT_HEADER_LEN, type EventRecord, readEventRecord } from "./wire.ts";
import { NATIVE_ERR, nativeErrorName } from "./errors.ts";

/**
 * Receives one polled event. `block` holds the header block and `body` the
 * body; both are views into a buffer reused by the next poll unless
 * `bodyOwned` is true (then `body` belongs to the receiver). `connId` is the
 * server connection id where the module has one, else 0.
 */
export type EventHandler = (
  type: number,
  streamId: number,
  code: number,
  block: Uint8Array,
  body: Uint8Array,
  bodyOwned: boolean,
  connId: number,
) => void;

/** The body handed over for every event without one (no view of the buffer is made for it). */
const NO_BODY = new Uint8Array(0);

/** A module's poll call bound to one session: writes events into `buf`, returns bytes or a code. */
export type PollCall = (buf: Uint8Array<ArrayBuffer>, cap: number) => number;

/** Options for {@linkcode EventPoller}. */
export interface EventPollerOptions {
  /** Size of the reused buffer; a larger event gets a buffer of its own. Default 256 KiB. */
  bufferBytes?: number;
  /** Builds the error thrown for a failed poll. Default: a `RangeError` naming the code. */
  error?: (code: number) => Error;
}

/**
 * Polls events into a reused buffer and hands each to a handler. `DONE` and
 * `CLOSED` end a poll. An event larger than the buffer (`BUFFER_TOO_SHORT`,
 * with the size needed at offset 0) is polled into a buffer of its own, so its
 * body is handed over without a copy (`bodyOwned`). One poller can serve many
 * sessions: it is used synchronously.
 */
export class EventPoller {
  #buf: Uint8Array<ArrayBuffer>;
  #view: DataView;
  #record = {} as EventRecord;
  #error: (code: number) => Error;

  constructor(options: EventPollerOptions = {}) {
    this.#buf = new Uint8Array(options.bufferBytes ?? 256 * 1024);
    this.#view = new DataView(this.#buf.buffer);
    this.#error = options.error ??
      ((code) => new RangeError(`Native poll failed: ${nativeErrorName(code)}`));
  }

  /** Calls `poll` until `expected` events were handed over or none is left; returns how many were. */
  poll(poll: PollCall, handler: EventHandler, expected = Infinity): number {
    let count = 0;
    while (count < expected) {
      const n = poll(this.#buf, this.#buf.length);
      if (n === NATIVE_ERR.DONE || n === NATIVE_ERR.CLOSED) break;
      if (n === NATIVE_ERR.BUFFER_TOO_SHORT) {
        const own = new Uint8Array(Number(this.#view.getBigUint64(0, true)));
        const m = poll(own, own.length);
        if (m < 0) throw this.#error(m);
        count += this.#dispatch(own, new DataView(own.buffer), m, handler, true);
        continue;
      }
      if (n < 0) throw this.#error(n);
      count += this.#dispatch(this.#buf, this.#view, n, handler, false);
    }
    return count;
  }

  #dispatch(
    buf: Uint8Array,
    view: DataView,
    length: number,
    handler: EventHandler,
    owned: boolean,
  ): number {
    const r = this.#record;
    let off = 0;
    let count = 0;
    while (off < length) {
      readEventRecord(view, off, r);
      const hs = off + EVENT_HEADER_LEN, he = hs + r.headerLength, end = he + r.bodyLength;
      handler(
        r.type,
        r.streamId,
        r.code,
        buf.subarray(hs, he),
        r.bodyLength === 0 ? NO_BODY : buf.subarray(he, end),
        owned,
        r.connId,
      );
      off = end;
      count++;
    }
    return count;
  }
}
