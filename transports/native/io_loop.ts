/**
 * {@linkcode IoLoop}: a native module's own I/O thread (transports/native/sbloop.h)
 * as JavaScript drives it. The thread reads the module's sockets, runs its
 * timers and does the protocol work; when that left events (complete requests,
 * closes) it calls `onWake` through a `Deno.UnsafeCallback.threadSafe`
 * callback, once per batch, and waits until it has returned. Every other call
 * into the module is made under the loop's lock ({@linkcode guardedSymbols});
 * answers leave through {@linkcode IoLoop.flush}, on JavaScript's thread.
 *
 * While any loop's thread runs, an uncaught error or unhandled rejection that
 * nothing else handled ends the process itself: the error as Deno prints it,
 * then exit status 1. Left to Deno, the isolate would be torn down while the
 * thread may still call into it (a segmentation fault).
 */
import type { IoLoopSymbols } from "./io_loop_symbols.ts";

/** Counters of the loop (enum sbloop_stat). */
export interface IoLoopStats {
  /** Times the thread left its wait. */
  wakeups: number;
  /** Of those, for a readable socket. */
  readable: number;
  /** Times JavaScript was woken: one per batch of events. */
  calls: number;
  /** Sends the thread made itself (nothing for JavaScript). */
  flushes: number;
  /** Times a flush moved the thread's next timer earlier. */
  kicks: number;
}

const WAKE = { parameters: [], result: "void" } as const;

/** How a transport's I/O is done: by Deno's sockets (`runtime`) or by the module's own thread (`module`). */
export type NativeIo = "runtime" | "module";

/** The environment variable that picks {@linkcode NativeIo} for servers and clients that do not say. */
export const NATIVE_IO_ENV = "SBILAB_NATIVE_IO";

/** `text` as a {@linkcode NativeIo}; throws a one-line TypeError otherwise. */
export function parseNativeIo(text: string, what = "the I/O"): NativeIo {
  if (text === "runtime" || text === "module") return text;
  throw new TypeError(`${what} must be "runtime" or "module", not "${text}"`);
}

/** `explicit`, else `SBILAB_NATIVE_IO`, else `runtime`; throws on an unknown value. */
export function nativeIo(explicit?: NativeIo): NativeIo {
  if (explicit) return explicit;
  let v: string | undefined;
  try {
    v = Deno.env.get(NATIVE_IO_ENV);
  } catch {
    v = undefined; // no env permission: the default
  }
  return v === undefined || v === "" ? "runtime" : parseNativeIo(v, NATIVE_IO_ENV);
}

/** Loops whose thread may be running. */
const running = new Set<IoLoop>();
let exitGuard = false;

/**
 * Ends the process for an error nobody handled while a loop runs, as Deno
 * would (its message, status 1), but through `Deno.exit`, which leaves the
 * isolate standing for the loops' threads.
 */
function exitOnUncaught(event: Event, error: unknown, what: string): void {
  if (event.defaultPrevented || running.size === 0) return;
  event.preventDefault();
  console.error(`error: ${what} ${Deno.inspect(error)}`);
  Deno.exit(1);
}

function guardExit(): void {
  if (exitGuard) return;
  exitGuard = true;
  globalThis.addEventListener(
    "error",
    (e) => exitOnUncaught(e, (e as ErrorEvent).error, "Uncaught"),
  );
  globalThis.addEventListener(
    "unhandledrejection",
    (e) => exitOnUncaught(e, (e as PromiseRejectionEvent).reason, "Uncaught (in promise)"),
  );
}

export class IoLoop {
  #sym: IoLoopSymbols;
  #ptr: Deno.PointerValue;
  #wake: Deno.UnsafeCallback<typeof WAKE>;
  #stopping: Promise<void> | undefined;
  #stopped = false;
  /** The counters at the stop (the loop is freed then). */
  #final: IoLoopStats | undefined;

  /**
   * Makes the wake-up callback, asks `create` for the loop with its pointer
   * (null: failure, reported as `what`), and starts the thread.
   */
  constructor(
    sym: IoLoopSymbols,
    create: (wake: Deno.PointerValue) => Deno.PointerValue,
    onWake: () => void,
    what: string,
  ) {
    this.#sym = sym;
    this.#wake = Deno.UnsafeCallback.threadSafe(WAKE, () => {
      if (!this.#stopped) onWake();
    });
    const ptr = create(this.#wake.pointer);
    if (ptr === null) {
      this.#wake.close();
      throw new Error(`Cannot start the I/O thread of ${what}`);
    }
    this.#ptr = ptr;
    if (sym.sbloop_start(ptr) !== 0) {
      sym.sbloop_free(ptr);
      this.#wake.close();
      throw new Error(`Cannot start the I/O thread of ${what}`);
    }
    guardExit();
    running.add(this);
  }

  /** Takes the loop's lock (recursive); nothing once the loop is freed (its thread is gone then). */
  lock(): void {
    if (!this.#final) this.#sym.sbloop_lock(this.#ptr);
  }

  unlock(): void {
    if (!this.#final) this.#sym.sbloop_unlock(this.#ptr);
  }

  /** Sends everything due, on this thread, under the lock; the thread re-reads its next timer if needed. */
  flush(): void {
    if (!this.#stopped) this.#sym.sbloop_flush(this.#ptr);
  }

  stats(): IoLoopStats {
    if (this.#final) return this.#final;
    const c = new BigUint64Array(5);
    this.#sym.sbloop_stats(this.#ptr, new Uint8Array(c.buffer), 5);
    const n = (i: number) => Number(c[i]);
    return { wakeups: n(0), readable: n(1), calls: n(2), flushes: n(3), kicks: n(4) };
  }

  /**
   * Stops the thread (off this thread: it may be waiting for a wake-up this
   * event loop runs meanwhile), then frees the loop and the callback. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#stopped = true;
      await this.#sym.sbloop_stop(this.#ptr);
      running.delete(this);
      this.#final = this.stats();
      this.#sym.sbloop_free(this.#ptr);
      this.#wake.close();
    })();
    return this.#stopping;
  }
}

/**
 * `sym` with every function whose name matches `pattern` called under
 * `loop`'s lock, so JavaScript and the loop's thread never touch the module's
 * state at once; other entries are passed through.
 */
export function guardedSymbols<S extends object>(sym: S, loop: IoLoop, pattern: RegExp): S {
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(sym)) {
    if (typeof f !== "function" || !pattern.test(name)) {
      out[name] = f;
      continue;
    }
    out[name] = (...args: unknown[]) => {
      loop.lock();
      try {
        return f(...args);
      } finally {
        loop.unlock();
      }
    };
  }
  return out as S;
}
