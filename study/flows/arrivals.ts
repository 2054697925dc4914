/**
 * Open-loop arrivals with a cap on how many are in flight: arrival i is due at
 * start + i / rate whatever happened to earlier ones. When the cap is reached
 * the arrival waits for a slot, and its job still receives its due time, so
 * whoever measures from it counts the wait (coordinated omission corrected).
 * Bounded by a duration and a count.
 *
 * The loop costs what a client's timer costs: it sets one timer for the next
 * due time, and when the timer fires it measures how late it woke (a second
 * timer only when the first fired early, never more). Arrivals already due
 * start in the same turn without a timer. It never spins. An arrival due
 * less than {@link START_EARLY_MS} ahead starts at once (no timer wakes that
 * soon), and its job is given the time it really started, so its flow is
 * never timed shorter than it took.
 */
import { type Clock, defaultClock } from "../../bench/measure/mod.ts";

/** Most timer wake-ups the loop spends on one arrival (the second only when the first fired early). */
export const MAX_WAKEUPS_PER_ARRIVAL = 2;

/**
 * An arrival due less than this ahead (ms) starts at once rather than on a
 * timer, and the default timer aims half of it before the due time: a loop
 * woken a little late by a busy machine still starts on time. Starting early
 * costs nothing, since a job started early is timed from when it started.
 */
export const START_EARLY_MS = 1;
/** About how late a Deno timer fires behind what it was asked (ms), measured on the lab's VMs. */
export const TIMER_LATE_MS = 1.2;

/** Options for {@link runArrivals}. */
export interface ArrivalOptions {
  /** Arrivals per second (> 0). */
  rate: number;
  /** Most jobs in flight at once (≥ 1). */
  maxInFlight: number;
  /** No arrival is due later than this after the start (ms). */
  durationMs: number;
  /** At most this many arrivals. Default unbounded (the duration bounds them). */
  maxCount?: number;
  /** Clock in ms. Default `performance.now`. */
  clock?: Clock;
  /** Waits about `ms` (one timer). Default `setTimeout`, aimed {@link TIMER_LATE_MS} and half of {@link START_EARLY_MS} sooner. */
  sleep?: (ms: number) => Promise<void>;
  /** Stops issuing arrivals when aborted (jobs in flight finish). */
  signal?: AbortSignal;
  /** Lateness (ms) of the loop's own wake-up behind a due time that still counts as on time. Default 2. */
  onTimeMs?: number;
  /**
   * Resolve once the last arrival has started, not when its job ends; the
   * jobs' end is `drained`. Lets a caller start the next block while this
   * one's last flows finish. Default false.
   */
  detach?: boolean;
}

/** What the arrival loop did. */
export interface ArrivalResult {
  /** Jobs started. */
  started: number;
  /** From the start to the last job's end (ms). */
  elapsedMs: number;
  /** Mean lateness of a job's start behind its due time (ms), slot waits included. */
  meanLagMs: number;
  /** Worst lateness (ms). */
  maxLagMs: number;
  /** Arrivals that had to wait for a free slot. */
  waitedForSlot: number;
  /**
   * Arrivals the loop itself reached within `onTimeMs` of their due time.
   * A wait for a free UE slot is not counted against it, nor against the
   * arrivals that fell due while the loop waited (their lateness is counted
   * from when the slot came free): that wait is the system under test
   * queueing, and the flows' times already include it; this counts whether
   * the measuring side kept its schedule.
   */
  onTime: number;
  /** Timer wake-ups the loop spent (at most {@link MAX_WAKEUPS_PER_ARRIVAL} per arrival). */
  wakeups: number;
  /** Resolves when every job has finished. */
  drained: Promise<void>;
}

const timerSleep = (ms: number) =>
  new Promise<void>((r) =>
    setTimeout(r, Math.max(0, Math.round(ms - TIMER_LATE_MS - START_EARLY_MS / 2)))
  );

/**
 * Starts `job(dueMs, index)` for each arrival (`dueMs` is the due time, or
 * the start when it started early); `job` must not reject (it
 * records its own failures). Resolves when every job has finished (with
 * `detach`, when the last has started).
 */
export async function runArrivals(
  job: (dueMs: number, index: number) => Promise<void>,
  options: ArrivalOptions,
): Promise<ArrivalResult> {
  const { rate, maxInFlight, durationMs } = options;
  if (!(rate > 0 && Number.isFinite(rate))) throw new RangeError(`Rate must be > 0, got ${rate}`);
  if (!(Number.isInteger(maxInFlight) && maxInFlight >= 1)) {
    throw new RangeError(`maxInFlight must be a whole number ≥ 1, got ${maxInFlight}`);
  }
  const clock = options.clock ?? defaultClock;
  const sleep = options.sleep ?? timerSleep;
  const maxCount = options.maxCount ?? Number.MAX_SAFE_INTEGER;
  let inFlight = 0;
  let allDone: (() => void) | undefined;
  let slotFreed: (() => void) | undefined;
  const finished = () => {
    inFlight--;
    const s = slotFreed;
    slotFreed = undefined;
    s?.();
    if (inFlight === 0) allDone?.();
  };
  let lagSum = 0;
  let lagMax = 0;
  let waited = 0;
  let onTime = 0;
  let wakeups = 0;
  // When the loop last came out of a wait for a slot: lateness before it is the system's queueing.
  let unblocked = -Infinity;
  const onTimeMs = options.onTimeMs ?? 2;
  const start = clock();
  let i = 0;
  for (; i < maxCount && !options.signal?.aborted; i++) {
    const due = start + (i * 1000) / rate;
    if (due > start + durationMs) break;
    // One timer for the due time; a second only if it fired early. Never a spin.
    for (let w = 0; w < MAX_WAKEUPS_PER_ARRIVAL; w++) {
      const early = due - clock();
      if (!(early >= START_EARLY_MS) || options.signal?.aborted) break;
      wakeups++;
      await sleep(early);
    }
    if (clock() - Math.max(due, unblocked) <= onTimeMs) onTime++;
    if (inFlight >= maxInFlight) {
      waited++;
      while (inFlight >= maxInFlight) await new Promise<void>((r) => (slotFreed = r));
      unblocked = clock();
    }
    const lag = Math.max(0, clock() - due);
    lagSum += lag;
    lagMax = Math.max(lagMax, lag);
    inFlight++;
    job(Math.min(due, clock()), i).catch(() => {}).finally(finished);
  }
  const drained = inFlight > 0 ? new Promise<void>((r) => (allDone = r)) : Promise.resolve();
  if (!options.detach) await drained;
  return {
    drained,
    started: i,
    elapsedMs: clock() - start,
    meanLagMs: i ? lagSum / i : 0,
    maxLagMs: lagMax,
    waitedForSlot: waited,
    onTime,
    wakeups,
  };
}
