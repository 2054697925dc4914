/**
 * Open-loop arrivals with a cap on how many are in flight: arrival i is due at
 * start + i / rate whatever happened to earlier ones. When the cap is reached
 * the arrival waits for a slot, and its job still receives its due time, so
 * whoever measures from it counts the wait (coordinated omission corrected).
 * Bounded by a duration and a count.
 */
import { setImmediate } from "node:timers";
import { type Clock, defaultClock } from "../../bench/measure/mod.ts";

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
  /** Waits `ms`; default a timer (or an immediate below 2 ms). */
  sleep?: (ms: number) => Promise<void>;
  /** Stops issuing arrivals when aborted (jobs in flight finish). */
  signal?: AbortSignal;
  /** Lateness (ms) of the loop's own wake-up behind a due time that still counts as on time. Default 2. */
  onTimeMs?: number;
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
   * A wait for a free UE slot is not counted against it: that wait is the
   * system under test queueing, and the flow's time already includes it;
   * this counts whether the measuring side kept its schedule.
   */
  onTime: number;
}

/**
 * Starts `job(dueMs, index)` for each arrival; `job` must not reject (it
 * records its own failures). Resolves when every job has finished.
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
  const sleep = options.sleep ??
    ((ms: number) => new Promise<void>((r) => (ms >= 2 ? setTimeout(r, ms - 1) : setImmediate(r))));
  const maxCount = options.maxCount ?? Number.MAX_SAFE_INTEGER;
  const pending = new Set<Promise<void>>();
  let slotFreed: (() => void) | undefined;
  let lagSum = 0;
  let lagMax = 0;
  let waited = 0;
  let onTime = 0;
  const onTimeMs = options.onTimeMs ?? 2;
  const start = clock();
  let i = 0;
  for (; i < maxCount && !options.signal?.aborted; i++) {
    const due = start + (i * 1000) / rate;
    if (due > start + durationMs) break;
    while (clock() < due && !options.signal?.aborted) await sleep(due - clock());
    if (clock() - due <= onTimeMs) onTime++;
    if (pending.size >= maxInFlight) {
      waited++;
      while (pending.size >= maxInFlight) await new Promise<void>((r) => (slotFreed = r));
    }
    const lag = clock() - due;
    lagSum += lag;
    lagMax = Math.max(lagMax, lag);
    const p: Promise<void> = job(due, i).catch(() => {}).finally(() => {
      pending.delete(p);
      slotFreed?.();
    });
    pending.add(p);
  }
  await Promise.all(pending);
  return {
    started: i,
    elapsedMs: clock() - start,
    meanLagMs: i ? lagSum / i : 0,
    maxLagMs: lagMax,
    waitedForSlot: waited,
    onTime,
  };
}
