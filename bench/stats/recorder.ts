/**
 * Bounded-memory sample recording. Every value goes into an HDR histogram
 * (3 significant digits); the raw values are kept as long as there are at
 * most `maxSamples` of them, after which a seeded uniform reservoir of that
 * size stands in for them (for the bootstrap, MAD and outlier counts).
 */
import * as hdr from "hdr-histogram-js";
import { createRng, type Estimate, estimate } from "./stats.ts";

/** Default number of raw samples kept before switching to the reservoir. */
export const DEFAULT_MAX_SAMPLES = 100_000;

/** What a finished recording holds, ready for JSON. */
export interface SampleSet {
  /** Number of values recorded. */
  count: number;
  /** True when `samples` holds every recorded value (in recording order). */
  complete: boolean;
  /** All values (complete) or a uniform reservoir of them. */
  samples: number[];
  /** The HDR histogram of every value, compressed base64 (values rounded to integers). */
  histogram: string;
}

/** Options for {@linkcode Recorder}. */
export interface RecorderOptions {
  /** Raw samples kept before switching to a reservoir. Default {@linkcode DEFAULT_MAX_SAMPLES}. */
  maxSamples?: number;
  /** Seed of the reservoir's PRNG. Default 1. */
  seed?: number;
}

/** Records non-negative values (nanoseconds) with bounded memory. */
export class Recorder {
  #hist = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600e9,
    numberOfSignificantValueDigits: 3,
  });
  #samples: number[] = [];
  #count = 0;
  #max: number;
  #rng: () => number;

  constructor(options: RecorderOptions = {}) {
    this.#max = options.maxSamples ?? DEFAULT_MAX_SAMPLES;
    if (!(Number.isInteger(this.#max) && this.#max >= 2)) {
      throw new RangeError(`maxSamples must be an integer ≥ 2, got ${this.#max}`);
    }
    this.#rng = createRng(options.seed ?? 1);
  }

  /** Number of values recorded so far. */
  get count(): number {
    return this.#count;
  }

  /** Records one value; throws `RangeError` on a negative or non-finite value. */
  record(value: number): void {
    if (!(Number.isFinite(value) && value >= 0)) {
      throw new RangeError(`Cannot record ${value}: values must be finite and ≥ 0`);
    }
    this.#hist.recordValue(Math.max(1, Math.round(value)));
    this.#count++;
    if (this.#samples.length < this.#max) {
      this.#samples.push(value);
    } else {
      const j = Math.floor(this.#rng() * this.#count);
      if (j < this.#max) this.#samples[j] = value;
    }
  }

  /** The raw values kept so far, in recording order (every value while `count` ≤ `maxSamples`). */
  values(): readonly number[] {
    return this.#samples;
  }

  /** Freezes the recording into a serialisable sample set. */
  finish(): SampleSet {
    return {
      count: this.#count,
      complete: this.#count === this.#samples.length,
      samples: this.#samples.slice(),
      histogram: hdr.encodeIntoCompressedBase64(this.#hist),
    };
  }
}

/**
 * Estimates a sample set: from the raw values when complete; otherwise
 * percentiles, mean, stddev, min and max come from the histogram and the
 * median's CI, MAD and outliers from the reservoir.
 */
export function estimateSampleSet(set: SampleSet): Estimate {
  const e = estimate(set.samples);
  if (set.complete) return e;
  const h = hdr.decodeFromCompressedBase64(set.histogram);
  return {
    ...e,
    n: set.count,
    mean: h.mean,
    stddev: h.stdDeviation,
    median: h.getValueAtPercentile(50),
    p50: h.getValueAtPercentile(50),
    p90: h.getValueAtPercentile(90),
    p99: h.getValueAtPercentile(99),
    p999: h.getValueAtPercentile(99.9),
    min: h.minNonZeroValue,
    max: h.maxValue,
  };
}
