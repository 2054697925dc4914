/**
 * Large response bodies handed to `Deno.serve` as pull streams. A `Uint8Array`
 * body is copied whole into the runtime when the response starts, so a client
 * that opens many streams and never reads (HTTP/2 window 0) makes the server
 * hold every body: 16 MiB on 200 streams grew one server by 3 GB. Pulled in
 * chunks, a body is only copied as the peer's window lets the runtime send it;
 * the chunks held for all streams of the process are bounded by a
 * {@linkcode ByteBudget}, and a body nobody pulls for `stallTimeoutMs` is
 * errored and its `onStall` runs. The runtime only notices an errored body
 * when it next reads it, which a peer with window 0 never lets it do, so the
 * server closes that connection from `onStall`: `Deno.serve` offers no way to
 * reset one stream.
 */
import type { ByteBudget } from "../byte_budget.ts";

/** Bodies up to this size go to the runtime whole (the common SBI case stays on the fast path). */
export const STREAM_THRESHOLD = 64 * 1024;
/** Bytes per chunk of a streamed body. */
export const CHUNK_BYTES = 64 * 1024;

interface Active {
  lastPull: number;
  fail: (err: Error) => void;
  onStall?: () => void;
}

/** Makes streamed bodies and resets the ones that stall. */
export class ResponseBodies {
  readonly budget: ByteBudget;
  readonly stallTimeoutMs: number;
  /** Streams reset because the peer did not read. */
  stalled = 0;
  #active = new Set<Active>();

  constructor(budget: ByteBudget, stallTimeoutMs: number) {
    this.budget = budget;
    this.stallTimeoutMs = stallTimeoutMs;
  }

  /** Streams being sent now. */
  get active(): number {
    return this.#active.size;
  }

  /**
   * A pull stream over `bytes` (not copied); `onEnd` runs once when it is done,
   * cancelled or stalled, and `onStall` when nobody pulled it for the stall timeout.
   * `reserved` bytes of the budget were taken for the whole body before it was
   * built: its chunks take no more, and the reservation goes back at the end.
   */
  stream(
    bytes: Uint8Array,
    onEnd: () => void,
    onStall?: () => void,
    reserved = 0,
  ): ReadableStream<Uint8Array> {
    let off = 0;
    let held = 0;
    let ended = false;
    const budget = this.budget;
    const chunked = reserved === 0;
    const set = this.#active;
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const end = () => {
      if (ended) return;
      ended = true;
      budget.release(held + reserved);
      held = 0;
      set.delete(entry);
      onEnd();
    };
    const entry: Active = {
      lastPull: Date.now(),
      onStall,
      fail: (err) => {
        if (ended) return;
        end();
        controller.error(err);
      },
    };
    set.add(entry);
    return new ReadableStream<Uint8Array>({
      start(c) {
        controller = c;
      },
      async pull(c) {
        entry.lastPull = Date.now();
        // The chunk handed over before has been taken by the runtime.
        budget.release(held);
        held = 0;
        if (off >= bytes.length) {
          end();
          c.close();
          return;
        }
        const n = Math.min(CHUNK_BYTES, bytes.length - off);
        // Bounded by the stall sweep, which ends the stream.
        while (chunked && !budget.take(n)) {
          if (ended) return;
          await new Promise((r) => setTimeout(r, 5));
        }
        if (ended) {
          if (chunked) budget.release(n);
          return;
        }
        if (chunked) held = n;
        c.enqueue(bytes.subarray(off, off + n));
        off += n;
      },
      cancel() {
        end();
      },
    }, { highWaterMark: 0 });
  }

  /** Errors every stream not pulled for `stallTimeoutMs`; returns how many. */
  sweep(now = Date.now()): number {
    let n = 0;
    for (const a of [...this.#active]) {
      if (now - a.lastPull > this.stallTimeoutMs) {
        a.fail(new Error(`Peer read nothing for ${this.stallTimeoutMs} ms`));
        a.onStall?.();
        n++;
      }
    }
    this.stalled += n;
    return n;
  }
}
