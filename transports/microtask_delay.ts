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
