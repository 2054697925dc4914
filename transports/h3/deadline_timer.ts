/**
 * One timer for a shim's next deadline, shared by the h3 client and server.
 * It is re-armed only when the deadline moves earlier (by more than 1 ms); a
 * timer that fires early because the deadline moved later simply runs the
 * owner's cheap I/O pass, which re-arms it.
 */
/** The clock a {@linkcode DeadlineTimer} reads and schedules on. */
export interface TimerClock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Runs `fn` once after `ms`; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending `setTimeout` by its handle. */
  clearTimeout(handle: unknown): void;
}

/** The runtime's clock: `performance.now()` and the global timers. */
export const SYSTEM_CLOCK: TimerClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export class DeadlineTimer {
  #timer: unknown;
  #at = Infinity;
  #fire: () => void;
  #clock: TimerClock;

  /** `fire` runs when the timer expires; `clock` defaults to {@linkcode SYSTEM_CLOCK}. */
  constructor(fire: () => void, clock: TimerClock = SYSTEM_CLOCK) {
    this.#fire = fire;
    this.#clock = clock;
  }

  /** Arms the timer `ms` from now; a negative `ms` means nothing is due. */
  arm(ms: number): void {
    if (ms < 0) return;
    const at = this.#clock.now() + ms;
    if (this.#timer !== undefined) {
      if (this.#at <= at + 1) return;
      this.#clock.clearTimeout(this.#timer);
    }
    this.#at = at;
    this.#timer = this.#clock.setTimeout(this.#onTimer, ms);
  }

  /** True when the timer is armed for a time already past (the event loop has not run it yet). */
  overdue(): boolean {
    return this.#timer !== undefined && performance.now() >= this.#at;
  }

  /** Stops the timer. Idempotent. */
  cancel(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Infinity;
  }

  #onTimer = (): void => {
    this.#timer = undefined;
    this.#at = Infinity;
    this.#fire();
  };
}
