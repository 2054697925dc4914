/**
 * Giving the C heap back to the system once a burst is over. The native
 * modules (nghttp2, ngtcp2, nghttp3, GnuTLS) and the bodies of V8's
 * ArrayBuffers allocate with glibc's malloc, which keeps what is freed for
 * reuse; a server that answered an attack would hold its peak for good:
 *
 * - glibc maps a block of 128 KiB or more on its own and unmaps it when it is
 *   freed, but raises that threshold to the largest such block freed so far
 *   (up to 32 MiB). After one 16 MiB response body was freed, every body below
 *   16 MiB came from the heap, and the heap keeps what was freed below its
 *   top. {@linkcode mapLargeAllocations} fixes the threshold at
 *   {@linkcode LARGE_ALLOCATION_BYTES}, which also ends the raising;
 * - smaller blocks freed between live ones (sessions, TLS buffers, discovery
 *   answers) leave whole free pages inside the heap, which glibc's
 *   `malloc_trim(0)` hands back. {@linkcode HeapReturn} runs it after
 *   connections closed, at most once every {@linkcode TRIM_GAP_MS}.
 *
 * Measured on the native h2c server (`lab serve`, 40 bodies of distinct sizes
 * from 8 down to 4 MiB, the client gone, a full garbage collection): its
 * resident size stayed 143 MiB above the start with glibc's defaults and 60
 * MiB above with the fixed threshold (the 64 MiB payload cache). Under a soak
 * with every attacker, 121 MiB of the main heap were free and not returned;
 * `malloc_trim(0)` gave back 113 MiB of them. A trim took 2 ms with nothing
 * to return and 21 ms returning 150 MiB of a 320 MiB heap cut in 64 KiB
 * pieces: at the gap of {@linkcode TRIM_GAP_MS}, at most about 1 % of a core.
 *
 * Linux with glibc only; elsewhere both do nothing.
 */
import { libc } from "../lib/libc.ts";

/** Allocations of this size and more are mapped on their own and unmapped when freed: 1 MiB. */
export const LARGE_ALLOCATION_BYTES = 1024 * 1024;
/** Least time between two trims of the heap, ms. */
export const TRIM_GAP_MS = 2000;

/** glibc's `mallopt` parameter for the mapping threshold (malloc.h). */
const M_MMAP_THRESHOLD = -3;

let mapped = false;

/**
 * Makes glibc map every allocation of {@linkcode LARGE_ALLOCATION_BYTES} or
 * more on its own, for the rest of the process (servers call it when they
 * start). Returns whether the setting is in force: false where there is no
 * glibc or no permission to load it.
 */
export function mapLargeAllocations(): boolean {
  if (mapped) return true;
  try {
    mapped = libc().mallopt(M_MMAP_THRESHOLD, LARGE_ALLOCATION_BYTES) === 1;
  } catch {
    return false; // no glibc (or no FFI permission): the allocator's defaults stay
  }
  return mapped;
}

/** glibc's `malloc_trim(0)`; nothing where there is no glibc. */
function mallocTrim(): void {
  try {
    libc().malloc_trim(0n);
  } catch {
    // no glibc: nothing to trim
  }
}

/** Options of {@linkcode HeapReturn}. */
export interface HeapReturnOptions {
  /** Least time between two trims, ms. Default {@linkcode TRIM_GAP_MS}. */
  gapMs?: number;
  /** Hands free memory back. Default glibc's `malloc_trim(0)`. */
  trim?: () => void;
  /** The clock, ms. Default `performance.now`. */
  now?: () => number;
  /** Runs `fn` after `ms`, never keeping the process alive. Default an unref'd `setTimeout`. */
  schedule?: (fn: () => void, ms: number) => void;
}

/**
 * Trims the heap after memory was freed: at once when the last trim is
 * `gapMs` ago, else once that time has come; one trim waits at most, however
 * many connections close meanwhile.
 */
export class HeapReturn {
  #gapMs: number;
  #trim: () => void;
  #now: () => number;
  #schedule: (fn: () => void, ms: number) => void;
  #last = -Infinity;
  #pending = false;
  /** Trims run so far. */
  trims = 0;

  /** Throws `RangeError` for a gap that is not a finite number ≥ 0. */
  constructor(options: HeapReturnOptions = {}) {
    const gapMs = options.gapMs ?? TRIM_GAP_MS;
    if (!Number.isFinite(gapMs) || gapMs < 0) throw new RangeError(`Invalid trim gap ${gapMs} ms`);
    this.#gapMs = gapMs;
    this.#trim = options.trim ?? mallocTrim;
    this.#now = options.now ?? (() => performance.now());
    this.#schedule = options.schedule ?? ((fn, ms) => Deno.unrefTimer(setTimeout(fn, ms)));
  }

  /** Whether a trim waits for its turn. */
  get pending(): boolean {
    return this.#pending;
  }

  /** Memory was freed (a connection closed): trims now or at the next allowed time. */
  released(): void {
    if (this.#pending) return;
    const wait = this.#last + this.#gapMs - this.#now();
    if (wait <= 0) {
      this.#run();
      return;
    }
    this.#pending = true;
    this.#schedule(() => {
      this.#pending = false;
      this.#run();
    }, wait);
  }

  #run(): void {
    this.#last = this.#now();
    this.trims++;
    this.#trim();
  }
}

/** The process's one {@linkcode HeapReturn}, shared by its servers. */
export const defaultHeapReturn: HeapReturn = new HeapReturn();
