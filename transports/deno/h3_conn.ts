/**
 * One HTTP/3 connection on Deno's QUIC (quinn, rustls): the streams of a
 * `Deno.QuicConn` joined to an {@linkcode H3Framing}. It opens and binds the
 * three unidirectional streams HTTP/3 needs, feeds every byte that arrives on
 * any stream to the framing layer, writes what the layer has for each stream
 * in order (each stream's own writer queues its bytes, so a slow stream
 * never holds up the others), and forgets a stream once both its directions
 * are done. The server and client add their roles on top.
 */
import { WIRE_EVENT } from "../native/wire.ts";
import {
  type FramingEvent,
  H3_CODE,
  H3Framing,
  H3FramingError,
  type StreamChunk,
} from "./h3_framing.ts";

/** HTTP/3 error codes used here (RFC 9114 §8.1). */
export { H3_CODE };

const EMPTY = new Uint8Array(0);

/** Bytes one read of a stream may bring (each read buffer's size). */
const READ_BUFFER_BYTES = 64 * 1024;
/** Read buffers a connection keeps for its next reads. */
const READ_POOL_MAX = 8;

interface StreamState {
  writer?: WritableStreamDefaultWriter<Uint8Array>;
  reader?: ReadableStreamDefaultReader<Uint8Array> | ReadableStreamBYOBReader;
  readDone: boolean;
  writeDone: boolean;
  /** The writer was told to close after what it holds. */
  closing: boolean;
  /** A write or the close failed: nothing more is handed to the writer. */
  failed: boolean;
  /** Bytes handed to the writer and not yet written. */
  queued: number;
}

/** What the connection tells its owner. */
export interface H3ConnHooks {
  /** Events the framing layer produced (messages, resets, GOAWAY, too large). */
  onEvents(events: FramingEvent[]): void;
  /** The connection ended: closed by either side, failed, or timed out. */
  onClosed(reason: string): void;
  /** Stream `id` is done both ways (or was given up): nothing of it is held any more. */
  onStreamClosed?(id: number): void;
}

/** An HTTP/3 connection over one `Deno.QuicConn`. */
export class QuicH3Conn {
  readonly quic: Deno.QuicConn;
  readonly framing: H3Framing;
  #hooks: H3ConnHooks;
  #streams = new Map<number, StreamState>();
  #dead = false;
  #reason = "";
  /**
   * Read buffers, reused: a stream's bytes are read into one of these (a BYOB
   * read) and handed to the framing layer, which copies them, so the buffer
   * goes back for the next read. The default reader would allocate a fresh
   * 64 KiB chunk for every read of every stream, and the young generation
   * fills with them.
   */
  #pool: ArrayBuffer[] = [];
  #written = 0;

  private constructor(quic: Deno.QuicConn, framing: H3Framing, hooks: H3ConnHooks) {
    this.quic = quic;
    this.framing = framing;
    this.#hooks = hooks;
  }

  /** Opens our control and QPACK streams, binds them, and starts reading the peer's streams. */
  static async open(
    quic: Deno.QuicConn,
    framing: H3Framing,
    hooks: H3ConnHooks,
    options: { server: boolean },
  ): Promise<QuicH3Conn> {
    const c = new QuicH3Conn(quic, framing, hooks);
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const send = await quic.createUnidirectionalStream();
      const id = Number(send.id);
      ids.push(id);
      c.#streams.set(id, c.#state({ writer: send.getWriter() }));
    }
    framing.bind(ids[0], ids[1], ids[2]);
    void c.#acceptUni();
    if (options.server) void c.#acceptBidi();
    void quic.closed.then(
      (info) => c.#die(info.reason || `closed with code ${info.closeCode}`),
      (err) => c.#die((err as Error).message),
    );
    c.flush();
    return c;
  }

  #state(parts: Partial<StreamState>): StreamState {
    return {
      readDone: false,
      writeDone: false,
      closing: false,
      failed: false,
      queued: 0,
      ...parts,
    };
  }

  /** True once the connection can carry nothing more. */
  get dead(): boolean {
    return this.#dead;
  }

  /** Why it died, once dead. */
  get reason(): string {
    return this.#reason;
  }

  /** Request streams open now. */
  get openStreams(): number {
    return this.#streams.size - 3;
  }

  /** Bytes written to streams so far (it stops moving while the peer reads nothing). */
  get writtenBytes(): number {
    return this.#written;
  }

  /** Bytes handed to streams and not yet written (the peer may not be reading). */
  get queuedBytes(): number {
    let n = 0;
    for (const s of this.#streams.values()) n += s.queued;
    return n;
  }

  async #acceptUni(): Promise<void> {
    try {
      for await (const recv of this.quic.incomingUnidirectionalStreams) {
        const id = Number(recv.id);
        const s = this.#state({ writeDone: true });
        this.#streams.set(id, s);
        void this.#read(id, s, recv);
      }
    } catch {
      // the connection ended; #die runs from `closed`
    }
  }

  async #acceptBidi(): Promise<void> {
    try {
      for await (const bidi of this.quic.incomingBidirectionalStreams) {
        this.adopt(bidi);
      }
    } catch {
      // the connection ended
    }
  }

  /** Takes a bidirectional stream (the peer's, or one the client opened); returns its id. */
  adopt(bidi: Deno.QuicBidirectionalStream): number {
    const id = Number(bidi.writable.id);
    const s = this.#state({ writer: bidi.writable.getWriter() });
    this.#streams.set(id, s);
    void this.#read(id, s, bidi.readable);
    return id;
  }

  async #read(id: number, s: StreamState, readable: ReadableStream<Uint8Array>): Promise<void> {
    let byob: ReadableStreamBYOBReader | undefined;
    try {
      byob = readable.getReader({ mode: "byob" });
    } catch {
      // not a byte stream: the default reader
    }
    const reader = byob ?? readable.getReader();
    s.reader = reader;
    try {
      for (;;) {
        let value: Uint8Array | undefined, done: boolean;
        if (byob) {
          const buf = this.#pool.pop() ?? new ArrayBuffer(READ_BUFFER_BYTES);
          ({ value, done } = await byob.read(new Uint8Array(buf)));
          if (value && !done && !this.#dead && !s.readDone) this.#feed(id, value, false);
          if (value && this.#pool.length < READ_POOL_MAX) {
            this.#pool.push(value.buffer as ArrayBuffer);
          }
        } else {
          ({ value, done } = await (reader as ReadableStreamDefaultReader<Uint8Array>).read());
          if (value && !done && !this.#dead && !s.readDone) this.#feed(id, value, false);
        }
        // A stream given up (cancel, stopReading) reads as done: nghttp3 has forgotten it.
        if (this.#dead || s.readDone) return;
        if (done) {
          this.#feed(id, EMPTY, true);
          break;
        }
      }
    } catch {
      // reset by the peer, or cancelled by us
      if (!this.#dead) this.#closeStream(id, H3_CODE.REQUEST_CANCELLED);
      return;
    } finally {
      s.readDone = true;
    }
    this.#settle(id, s);
  }

  #feed(id: number, bytes: Uint8Array, fin: boolean): void {
    let ready;
    try {
      ready = this.framing.read(id, bytes, fin);
    } catch (err) {
      const code = err instanceof H3FramingError ? err.h3Code : H3_CODE.INTERNAL_ERROR;
      this.close(code, `HTTP/3 error on stream ${id}: ${(err as Error).message}`);
      return;
    }
    // most reads complete no message: nothing to poll, only what is due to write
    if (ready > 0) this.pump(ready);
    else this.flush();
  }

  /**
   * Hands out the framing layer's events (`expected` of them when the caller
   * knows how many are ready), then writes what is due.
   */
  pump(expected = Infinity): void {
    if (this.#dead) return;
    let events;
    try {
      events = this.framing.poll(expected);
    } catch (err) {
      this.close(H3_CODE.INTERNAL_ERROR, (err as Error).message);
      return;
    }
    if (events.length) this.#hooks.onEvents(events);
    this.flush();
  }

  /** Writes every chunk the framing layer has, each to its stream's writer. */
  flush(): void {
    if (this.#dead) return;
    let chunks: StreamChunk[];
    try {
      chunks = this.framing.drain();
    } catch (err) {
      this.close(H3_CODE.INTERNAL_ERROR, (err as Error).message);
      return;
    }
    for (const c of chunks) this.#write(c);
  }

  /**
   * Hands a chunk to its stream's writer at once. The writer keeps the order
   * of its writes and of the close after them, so nothing waits on a promise
   * chain of its own before the next write or the close is handed over.
   */
  #write(c: StreamChunk): void {
    const s = this.#streams.get(c.streamId);
    if (!s?.writer || s.writeDone || s.closing || s.failed) return;
    const w = s.writer;
    const n = c.bytes.length;
    if (n) {
      s.queued += n;
      w.write(c.bytes).then(() => {
        s.queued -= n;
        this.#written += n;
      }, () => this.#writeFailed(c.streamId, s));
    }
    if (c.fin) {
      s.closing = true;
      w.close().then(() => {
        s.writeDone = true;
        this.#settle(c.streamId, s);
      }, () => this.#writeFailed(c.streamId, s));
    }
  }

  /** A write or the close failed (reset, cancelled, connection gone): the sending side is done. */
  #writeFailed(id: number, s: StreamState): void {
    if (s.failed) return;
    s.failed = true;
    s.queued = 0;
    s.writeDone = true;
    this.#settle(id, s);
  }

  #settle(id: number, s: StreamState): void {
    if (!s.readDone || !s.writeDone || !this.#streams.has(id)) return;
    this.#closeStream(id, H3_CODE.NO_ERROR);
  }

  #closeStream(id: number, code: number): void {
    if (!this.#streams.delete(id)) return;
    this.#hooks.onStreamClosed?.(id);
    try {
      this.framing.closeStream(id, code);
    } catch {
      // a stream nghttp3 no longer knows
    }
    this.pump();
  }

  /** Gives up stream `id` both ways with `code` (a timed-out request, a body over the limit). */
  cancel(id: number, code: number = H3_CODE.REQUEST_CANCELLED): void {
    const s = this.#streams.get(id);
    if (!s) return;
    s.reader?.cancel(code).catch(() => {});
    s.writer?.abort(code).catch(() => {});
    s.readDone = s.writeDone = true;
    this.#closeStream(id, code);
  }

  /** Stops reading stream `id` (STOP_SENDING) but keeps its sending side, for an early answer. */
  stopReading(id: number): void {
    const s = this.#streams.get(id);
    if (!s || s.readDone) return;
    s.reader?.cancel(H3_CODE.NO_ERROR).catch(() => {});
    s.readDone = true;
  }

  #die(reason: string): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#reason = reason;
    this.#streams.clear();
    this.framing.close();
    this.#hooks.onClosed(reason);
  }

  /** Closes the QUIC connection with an HTTP/3 code. Idempotent. */
  close(code: number = H3_CODE.NO_ERROR, reason = ""): void {
    if (this.#dead) return;
    try {
      this.quic.close({ closeCode: code, reason });
    } catch {
      // already closed
    }
    this.#die(reason || "closed");
  }
}

/** True for the event types that settle a request stream. */
export function settlesStream(e: FramingEvent): boolean {
  return e.type === WIRE_EVENT.MESSAGE || e.type === WIRE_EVENT.RESET ||
    e.type === WIRE_EVENT.TOO_LARGE;
}
