/**
 * One timer for a shim's next deadline, shared by the h3 client and server.
 * It is re-armed only when the deadline moves earlier (by more than 1 ms); a
 * timer that fires early because the deadline moved later simply runs the
 * owner's cheap I/O pass, which re-arms it.
 */
export class DeadlineTimer {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #at = Infinity;
  #fire: () => void;

  /** `fire` runs when the timer expires. */
  constructor(fire: () => void) {
    this.#fire = fire;
  }

  /** Arms the timer `ms` from now; a negative `ms` means nothing is due. */
  arm(ms: number): void {
    if (ms < 0) return;
    const at = performance.now() + ms;
    if (this.#timer !== undefined) {
      if (this.#at <= at + 1) return;
      clearTimeout(this.#timer);
    }
    this.#at = at;
    this.#timer = setTimeout(this.#onTimer, ms);
  }

  /** True when the timer is armed for a time already past (the event loop has not run it yet). */
  overdue(): boolean {
    return this.#timer !== undefined && performance.now() >= this.#at;
  }

  /** Stops the timer. Idempotent. */
  cancel(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }

  #onTimer = (): void => {
    this.#timer = undefined;
    this.#at = Infinity;
    this.#fire();
  };
}
