/**
 * One timer structure for every pending request of a process, as a native
 * client keeps it: requests wait in one FIFO lane per timeout value (their
 * deadlines are then in order, so a lane's head is its earliest), and a
 * single system timer is armed for the earliest head. Adding a request costs
 * a list append, settling it an unlink; neither sets nor clears the system
 * timer unless the earliest deadline moves earlier. A timer that fires early
 * (the request it was armed for was answered) expires nothing and re-arms for
 * the next head. While nothing waits the timer stays armed but unreferenced,
 * so it keeps no process alive.
 */

/** Where time comes from and how the one timer is set; injected in tests. */
export interface TimerClock {
  /** Milliseconds on a clock that never goes back. */
  now(): number;
  /** Calls `fire` once after `ms`; returns a handle for {@linkcode clear}. */
  set(fire: () => void, ms: number): unknown;
  /** Cancels a timer {@linkcode set} returned. */
  clear(handle: unknown): void;
  /** Whether the timer keeps the process alive (default: it does). */
  ref?(handle: unknown, on: boolean): void;
}

/** The process's monotonic clock and `setTimeout`. */
export const SYSTEM_CLOCK: TimerClock = {
  now: () => performance.now(),
  set: (fire, ms) => setTimeout(fire, ms),
  clear: (handle) => clearTimeout(handle as number),
  ref: (handle, on) => on ? Deno.refTimer(handle as number) : Deno.unrefTimer(handle as number),
};

/** A request in a lane; subclasses say what expiry does. */
export abstract class TimerEntry {
  /** When it expires, on the clock of its {@linkcode RequestTimers}. */
  deadline = 0;
  prev: TimerEntry | null = null;
  next: TimerEntry | null = null;
  lane: Lane | null = null;
  /** Runs once when the deadline passes before the entry was removed. */
  abstract expire(): void;
}

/** The entries of one timeout value, oldest (earliest deadline) first. */
class Lane {
  head: TimerEntry | null = null;
  tail: TimerEntry | null = null;
}

/** See the module comment. */
export class RequestTimers {
  #clock: TimerClock;
  #lanes = new Map<number, Lane>();
  #count = 0;
  #handle: unknown = undefined;
  #armedAt = Infinity;

  constructor(clock: TimerClock = SYSTEM_CLOCK) {
    this.#clock = clock;
  }

  /** Entries waiting. */
  get size(): number {
    return this.#count;
  }

  /** True while the one system timer is armed. */
  get armed(): boolean {
    return this.#handle !== undefined;
  }

  /** Starts `entry`'s timeout of `ms` milliseconds from now. */
  add(entry: TimerEntry, ms: number): void {
    if (entry.lane) this.remove(entry);
    const deadline = this.#clock.now() + ms;
    entry.deadline = deadline;
    let lane = this.#lanes.get(ms);
    if (!lane) this.#lanes.set(ms, lane = new Lane());
    entry.lane = lane;
    entry.prev = lane.tail;
    entry.next = null;
    if (lane.tail) lane.tail.next = entry;
    else lane.head = entry;
    lane.tail = entry;
    if (deadline < this.#armedAt) this.#arm(deadline);
    else if (this.#count === 0) this.#clock.ref?.(this.#handle, true);
    this.#count++;
  }

  /** Stops `entry`'s timeout (it was answered or failed); nothing when it is not waiting. */
  remove(entry: TimerEntry): void {
    const lane = entry.lane;
    if (!lane) return;
    if (entry.prev) entry.prev.next = entry.next;
    else lane.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    else lane.tail = entry.prev;
    entry.prev = entry.next = entry.lane = null;
    // The timer stays armed (it fires early and finds nothing); with nothing waiting it keeps
    // no process alive.
    if (--this.#count === 0 && this.#handle !== undefined) this.#clock.ref?.(this.#handle, false);
  }

  #arm(at: number): void {
    if (this.#handle !== undefined) this.#clock.clear(this.#handle);
    this.#armedAt = at;
    this.#handle = this.#clock.set(this.#fire, Math.max(0, Math.ceil(at - this.#clock.now())));
  }

  #fire = (): void => {
    this.#handle = undefined;
    this.#armedAt = Infinity;
    const now = this.#clock.now();
    const expired: TimerEntry[] = [];
    let next = Infinity;
    for (const [ms, lane] of this.#lanes) {
      while (lane.head && lane.head.deadline <= now) {
        const e = lane.head;
        this.remove(e);
        expired.push(e);
      }
      if (lane.head) next = Math.min(next, lane.head.deadline);
      else this.#lanes.delete(ms);
    }
    if (next < Infinity && next < this.#armedAt) this.#arm(next);
    for (const e of expired) e.expire();
  };
}

/** The timers every client of this process shares. */
export const sharedRequestTimers: RequestTimers = new RequestTimers();
