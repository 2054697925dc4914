/**
 * {@linkcode MicrotaskDelay}: runs an action a fixed number of microtask hops
 * after it was asked for, once however often it was asked meanwhile. The
 * native transports send this way after handing out events, so that what the
 * receivers do at once in response (callers' next requests, handlers'
 * answers) is queued first and leaves in the same send.
 */
export class MicrotaskDelay {
  #hops: number;
  #run: () => void;
  /** Hops left before the pending run (0: none pending). */
  #left = 0;

  /** `hops` ≥ 1: the action runs in the `hops`-th microtask after {@linkcode request}. */
  constructor(hops: number, run: () => void) {
    this.#hops = hops;
    this.#run = run;
  }

  /** Asks for a run `hops` microtasks from now; a run already pending serves this request too. */
  request(): void {
    if (this.#left > 0) return;
    this.#left = this.#hops;
    queueMicrotask(this.#step);
  }

  #step = (): void => {
    if (--this.#left > 0) return queueMicrotask(this.#step);
    this.#run();
  };
}

/**
 * Resolves `hops` microtask hops from now, without a turn of the event loop.
 * A read loop awaits it before its next receive: Deno's UDP receive tries the
 * socket at once, and right after a datagram that try finds it empty (a
 * system call); made after the send that datagram leads to (a
 * {@linkcode MicrotaskDelay} of fewer hops), it no longer delays that send.
 */
export async function microtaskHops(hops: number): Promise<void> {
  for (let i = 0; i < hops; i++) await Promise.resolve();
}
