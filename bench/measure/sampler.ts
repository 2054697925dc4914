/**
 * The sampling loops: warm-up, then timed samples of an async operation, with
 * an injected clock. Every loop is bounded by a count and by time.
 */
import { setImmediate } from "node:timers";
import { Recorder, type SampleSet } from "../stats/recorder.ts";

/** A monotonic clock in milliseconds (fractions allowed). */
export type Clock = () => number;

/** The default clock. */
export const defaultClock: Clock = () => performance.now();

/** How long to warm up and sample. */
export interface SamplingPlan {
  /** Warm-up time in ms (results discarded). */
  warmupMs: number;
  /** Sampling time in ms; with `samples` set it is only the upper bound. */
  sampleMs: number;
  /** Stop after this many samples, if given. */
  samples?: number;
}

/** Hard cap on the operations of any one loop, whatever the plan says. */
export const MAX_OPERATIONS = 5_000_000;

/** Raised when too many operations of a loop fail; the message names the first failure. */
export class SamplingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SamplingError";
  }
}

/** Outcome of a sampling loop. */
export interface SamplingResult {
  /** Durations of successful operations (ns). */
  samples: SampleSet;
  /** Failed operations during sampling. */
  errors: number;
  /** Wall time of the sampling phase (ms). */
  elapsedMs: number;
}

/** Options for the loops. */
export interface LoopOptions {
  /** Clock. Default `performance.now`. */
  clock?: Clock;
  /** Called with the fraction done (0…1) now and then. */
  onProgress?: (fraction: number) => void;
  /** Stops the loop early when aborted. */
  signal?: AbortSignal;
}

class ErrorBudget {
  errors = 0;
  first?: unknown;
  constructor(private attemptsRef: () => number) {}
  fail(err: unknown): void {
    this.errors++;
    this.first ??= err;
    const attempts = this.attemptsRef();
    if (this.errors >= 20 && this.errors > attempts * 0.1) {
      const msg = this.first instanceof Error ? this.first.message : String(this.first);
      throw new SamplingError(`${this.errors} of ${attempts} requests failed; first: ${msg}`, {
        cause: this.first,
      });
    }
  }
}

/**
 * Runs `workers` concurrent loops of `op` (each waits for its previous call),
 * first for the warm-up, then recording each call's duration. With one worker
 * this is the closed-loop round trip.
 */
export async function sampleOperation(
  op: () => Promise<unknown>,
  plan: SamplingPlan,
  workers = 1,
  options: LoopOptions = {},
): Promise<SamplingResult> {
  const clock = options.clock ?? defaultClock;
  const total = plan.warmupMs + plan.sampleMs;
  const start = clock();
  const warmEnd = start + plan.warmupMs;
  let attempts = 0;
  const budget = new ErrorBudget(() => attempts);
  let stopped = false;
  const progress = () => options.onProgress?.(Math.min(1, (clock() - start) / total));

  // Warm-up.
  let warmOps = 0;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (!stopped && warmOps < MAX_OPERATIONS && clock() < warmEnd && !options.signal?.aborted) {
      warmOps++;
      attempts++;
      try {
        await op();
      } catch (err) {
        budget.fail(err);
      }
    }
  }));
  attempts = 0;
  budget.errors = 0;
  budget.first = undefined;

  // Sampling.
  const recorder = new Recorder();
  const cap = Math.min(plan.samples ?? MAX_OPERATIONS, MAX_OPERATIONS);
  const sampleStart = clock();
  const sampleEnd = sampleStart + plan.sampleMs;
  let started = 0;
  let lastProgress = sampleStart;
  try {
    await Promise.all(Array.from({ length: workers }, async () => {
      while (!stopped && started < cap && clock() < sampleEnd && !options.signal?.aborted) {
        started++;
        attempts++;
        const t0 = clock();
        try {
          await op();
          const t1 = clock();
          recorder.record((t1 - t0) * 1e6);
          if (t1 - lastProgress > 100) {
            lastProgress = t1;
            progress();
          }
        } catch (err) {
          budget.fail(err);
        }
      }
    }));
  } catch (err) {
    stopped = true;
    throw err;
  }
  const elapsedMs = clock() - sampleStart;
  if (recorder.count < 2) {
    const why = budget.first instanceof Error ? `: ${budget.first.message}` : "";
    throw new SamplingError(
      `Only ${recorder.count} successful samples in ${Math.round(elapsedMs)} ms${why}`,
    );
  }
  options.onProgress?.(1);
  return { samples: recorder.finish(), errors: budget.errors, elapsedMs };
}

/** Outcome of an open-loop run. */
export interface OpenLoopResult {
  /** Latency from each request's intended send time (ns): coordinated omission corrected. */
  corrected: SampleSet;
  /** Latency from the actual send time (ns): what a closed-loop tool would report. */
  uncorrected: SampleSet;
  /** Failed requests. */
  errors: number;
  /** Requests not sent because `maxInFlight` was reached (counted as failures). */
  dropped: number;
  /** Wall time of the sampling phase (ms). */
  elapsedMs: number;
  /** Requests completed. */
  completed: number;
  /** Mean lateness of the sender itself (actual − intended send), ms. */
  meanSendLagMs: number;
  /** Worst lateness of the sender, ms. */
  maxSendLagMs: number;
}

/**
 * Open loop: request i is due at start + i/rate. Each is sent as soon as it is
 * due (never waiting for earlier replies); its latency is timed both from its
 * due time and from the moment it was actually sent. Bounded by
 * `plan.sampleMs`, `plan.samples` and `maxInFlight`.
 */
export async function sampleOpenLoop(
  op: () => Promise<unknown>,
  rate: number,
  plan: SamplingPlan,
  options: LoopOptions & { maxInFlight?: number; sleep?: (ms: number) => Promise<void> } = {},
): Promise<OpenLoopResult> {
  if (!(rate > 0 && Number.isFinite(rate))) throw new RangeError(`Rate must be > 0, got ${rate}`);
  const clock = options.clock ?? defaultClock;
  // Timers fire a millisecond or more late; below 2 ms the sender yields to
  // the event loop instead, so its own lateness does not pose as latency.
  const sleep = options.sleep ??
    ((ms: number) => new Promise<void>((r) => (ms >= 2 ? setTimeout(r, ms - 1) : setImmediate(r))));
  const maxInFlight = options.maxInFlight ?? 4096;
  // Warm-up as a short closed loop.
  if (plan.warmupMs > 0) {
    await sampleOperation(op, { warmupMs: plan.warmupMs, sampleMs: 0, samples: 0 }, 1, {
      clock,
      signal: options.signal,
    }).catch((err) => {
      if (!(err instanceof SamplingError && /Only 0 successful/.test(err.message))) throw err;
    });
  }
  const corrected = new Recorder({ seed: 2 });
  const uncorrected = new Recorder({ seed: 3 });
  const total = Math.min(
    Math.floor((plan.sampleMs / 1000) * rate),
    plan.samples ?? MAX_OPERATIONS,
    MAX_OPERATIONS,
  );
  let inFlight = 0;
  let errors = 0;
  let dropped = 0;
  let firstError: unknown;
  let lagSum = 0;
  let lagMax = 0;
  let sentCount = 0;
  const pending = new Set<Promise<void>>();
  const start = clock();
  let next = 0;
  while (next < total && !options.signal?.aborted) {
    const now = clock();
    // Send everything that is due.
    while (next < total && start + (next * 1000) / rate <= now) {
      const due = start + (next * 1000) / rate;
      next++;
      if (inFlight >= maxInFlight) {
        dropped++;
        continue;
      }
      inFlight++;
      const sent = clock();
      sentCount++;
      lagSum += sent - due;
      lagMax = Math.max(lagMax, sent - due);
      const p = op().then(
        () => {
          const done = clock();
          corrected.record((done - due) * 1e6);
          uncorrected.record((done - sent) * 1e6);
        },
        (err) => {
          errors++;
          firstError ??= err;
        },
      ).finally(() => {
        inFlight--;
        pending.delete(p);
      });
      pending.add(p);
    }
    if (clock() > start + plan.sampleMs * 2 + 1000) break; // sender fell hopelessly behind
    const wait = start + (next * 1000) / rate - clock();
    await sleep(Math.max(0, wait));
  }
  await Promise.all(pending);
  const elapsedMs = clock() - start;
  if (corrected.count < 2) {
    const why = firstError instanceof Error ? `: ${firstError.message}` : "";
    throw new SamplingError(`Only ${corrected.count} requests completed at ${rate} req/s${why}`);
  }
  options.onProgress?.(1);
  return {
    corrected: corrected.finish(),
    uncorrected: uncorrected.finish(),
    errors,
    dropped,
    elapsedMs,
    completed: corrected.count,
    meanSendLagMs: sentCount ? lagSum / sentCount : 0,
    maxSendLagMs: lagMax,
  };
}
