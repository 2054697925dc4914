/**
 * Pure statistics over duration samples. Every function checks its input
 * (at least the documented number of finite samples) and throws `RangeError`
 * otherwise; nothing here reads a clock or writes anywhere.
 *
 * Conventions:
 * - quantiles interpolate linearly between order statistics (Hyndman & Fan
 *   type 7, the default of R and NumPy): h = (n − 1)·p;
 * - the standard deviation is the sample one (divides by n − 1);
 * - MAD is the raw median absolute deviation from the median (no 1.4826 scale);
 * - Tukey fences are Q1/Q3 ∓ 1.5·IQR (mild) and ∓ 3·IQR (severe);
 * - the confidence interval of the median is a percentile bootstrap driven by
 *   a seeded PRNG, so the same samples and seed give the same interval.
 */
import { median, quantile, quantileSorted, sorted } from "../../lib/median.ts";

export { median, quantile, quantileSorted, sorted };

/** Counts of samples outside Tukey's fences. */
export interface OutlierCounts {
  /** Below Q1 − 3·IQR. */
  lowSevere: number;
  /** In [Q1 − 3·IQR, Q1 − 1.5·IQR). */
  lowMild: number;
  /** In (Q3 + 1.5·IQR, Q3 + 3·IQR]. */
  highMild: number;
  /** Above Q3 + 3·IQR. */
  highSevere: number;
}

/** A confidence interval. */
export interface Interval {
  /** Confidence level, e.g. 0.95. */
  level: number;
  /** Lower bound. */
  lower: number;
  /** Upper bound. */
  upper: number;
}

/** Every estimate of one sample set, as a plain serialisable record (same unit as the samples). */
export interface Estimate {
  /** Number of samples the estimate describes. */
  n: number;
  mean: number;
  stddev: number;
  median: number;
  /** Median absolute deviation from the median (unscaled). */
  mad: number;
  min: number;
  max: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  /** Bootstrap confidence interval of the median. */
  medianCi: Interval;
  /** Tukey outlier counts. */
  outliers: OutlierCounts;
}

/** Options for {@linkcode estimate} and the bootstrap functions. */
export interface BootstrapOptions {
  /** Number of bootstrap resamples. Default 1000. */
  resamples?: number;
  /** PRNG seed. Default 0x5b1. */
  seed?: number;
  /** Confidence level. Default 0.95. */
  level?: number;
}

function check(samples: ArrayLike<number>, min: number, what: string): void {
  if (samples.length < min) {
    throw new RangeError(`${what} needs at least ${min} samples, got ${samples.length}`);
  }
  for (let i = 0; i < samples.length; i++) {
    if (!Number.isFinite(samples[i])) {
      throw new RangeError(`${what} got a non-finite sample at index ${i}`);
    }
  }
}

/** Arithmetic mean. */
export function mean(samples: ArrayLike<number>): number {
  check(samples, 1, "mean");
  let s = 0;
  for (let i = 0; i < samples.length; i++) s += samples[i];
  return s / samples.length;
}

/** Sample standard deviation (n − 1 in the denominator); needs two samples. */
export function stddev(samples: ArrayLike<number>): number {
  check(samples, 2, "stddev");
  const m = mean(samples);
  let s = 0;
  for (let i = 0; i < samples.length; i++) s += (samples[i] - m) ** 2;
  return Math.sqrt(s / (samples.length - 1));
}

/** Median absolute deviation from the median, unscaled. */
export function mad(samples: ArrayLike<number>): number {
  check(samples, 1, "mad");
  const m = median(samples);
  const dev = new Float64Array(samples.length);
  for (let i = 0; i < samples.length; i++) dev[i] = Math.abs(samples[i] - m);
  return median(dev);
}

/** Counts Tukey outliers (1.5 and 3 IQR fences); needs two samples. */
export function tukeyOutliers(samples: ArrayLike<number>): OutlierCounts {
  check(samples, 2, "tukeyOutliers");
  const asc = sorted(samples);
  const q1 = quantileSorted(asc, 0.25);
  const q3 = quantileSorted(asc, 0.75);
  const iqr = q3 - q1;
  const out: OutlierCounts = { lowSevere: 0, lowMild: 0, highMild: 0, highSevere: 0 };
  for (const x of asc) {
    if (x < q1 - 3 * iqr) out.lowSevere++;
    else if (x < q1 - 1.5 * iqr) out.lowMild++;
    else if (x > q3 + 3 * iqr) out.highSevere++;
    else if (x > q3 + 1.5 * iqr) out.highMild++;
  }
  return out;
}

/** A small seeded PRNG (mulberry32) returning floats in [0, 1). */
export function createRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal draw from the uniform `rng` (Box–Muller, one of the pair). */
function normalDraw(rng: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
}

/** A Gamma(shape, 1) draw for shape ≥ 1 (Marsaglia & Tsang, ACM TOMS 26(3), 2000). */
function gammaDraw(shape: number, rng: () => number): number {
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number, v: number;
    do {
      x = normalDraw(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng();
    if (u < 1 - 0.0331 * x * x * x * x) return d * v;
    if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/**
 * Type-7 quantile `p` of one bootstrap resample of ascending samples, drawn in
 * O(1) from the order statistics rather than by drawing n indices. A resample
 * draws index ⌊u·n⌋ for n uniforms u, a map that keeps order, so its k-th
 * smallest index is ⌊U₍ₖ₎·n⌋ with U₍ₖ₎ ~ Beta(k, n − k + 1); the next order
 * statistic is the least of the n − k uniforms above U₍ₖ₎. The resample's
 * quantile has exactly the law of the index-drawing bootstrap's, at a cost that
 * does not grow with n (a study row holds up to 150,000 flows).
 */
function resampleQuantile(asc: Float64Array, rng: () => number, p: number): number {
  const n = asc.length;
  const h = (n - 1) * p;
  const rank = Math.floor(h); // 0-based: the (rank + 1)-th smallest
  const x = gammaDraw(rank + 1, rng);
  const u = x / (x + gammaDraw(n - rank, rng));
  const at = (v: number) => asc[Math.min(n - 1, Math.floor(v * n))];
  if (h === rank || rank + 1 >= n) return at(u);
  const next = u + (1 - u) * (1 - Math.pow(1 - rng(), 1 / (n - rank - 1)));
  return at(u) + (h - rank) * (at(next) - at(u));
}

/** Bootstrap distribution of quantile `p`: `resamples` quantiles of resamples, ascending. */
export function bootstrapQuantiles(
  samples: ArrayLike<number>,
  p: number,
  options: BootstrapOptions = {},
): Float64Array {
  check(samples, 2, "bootstrap");
  if (!(p >= 0 && p <= 1)) throw new RangeError(`Quantile ${p} is outside [0, 1]`);
  const resamples = options.resamples ?? 1000;
  if (!(Number.isInteger(resamples) && resamples >= 10)) {
    throw new RangeError(`Bootstrap needs an integer number of resamples ≥ 10, got ${resamples}`);
  }
  const rng = createRng(options.seed ?? 0x5b1);
  const asc = sorted(samples);
  const out = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) out[b] = resampleQuantile(asc, rng, p);
  out.sort();
  return out;
}

/** Bootstrap distribution of the median: `resamples` medians of resamples, ascending. */
export function bootstrapMedians(
  samples: ArrayLike<number>,
  options: BootstrapOptions = {},
): Float64Array {
  return bootstrapQuantiles(samples, 0.5, options);
}

/** Percentile-bootstrap confidence interval of the median. */
export function bootstrapMedianCi(
  samples: ArrayLike<number>,
  options: BootstrapOptions = {},
): Interval {
  const level = options.level ?? 0.95;
  if (!(level > 0 && level < 1)) {
    throw new RangeError(`Confidence level ${level} is outside (0, 1)`);
  }
  const dist = bootstrapMedians(samples, options);
  const alpha = (1 - level) / 2;
  return {
    level,
    lower: quantileSorted(dist, alpha),
    upper: quantileSorted(dist, 1 - alpha),
  };
}

/** Every estimate of a sample set; needs at least two finite samples. */
export function estimate(samples: ArrayLike<number>, options: BootstrapOptions = {}): Estimate {
  check(samples, 2, "estimate");
  const asc = sorted(samples);
  return {
    n: asc.length,
    mean: mean(asc),
    stddev: stddev(asc),
    median: quantileSorted(asc, 0.5),
    mad: mad(asc),
    min: asc[0],
    max: asc[asc.length - 1],
    p50: quantileSorted(asc, 0.5),
    p90: quantileSorted(asc, 0.9),
    p99: quantileSorted(asc, 0.99),
    p999: quantileSorted(asc, 0.999),
    medianCi: bootstrapMedianCi(asc, options),
    outliers: tukeyOutliers(asc),
  };
}

/** Checked, sorted inputs of a two-sample bootstrap, with the seeded PRNG. */
function twoSamples(
  baseline: ArrayLike<number>,
  candidate: ArrayLike<number>,
  what: string,
  options: BootstrapOptions,
) {
  check(baseline, 2, `${what} baseline`);
  check(candidate, 2, `${what} candidate`);
  const a = sorted(baseline);
  const b = sorted(candidate);
  return {
    resamples: options.resamples ?? 1000,
    level: options.level ?? 0.95,
    rng: createRng(options.seed ?? 0x5b1),
    a,
    b,
  };
}

/** Result of {@linkcode compareMedians}. */
export interface MedianComparison {
  /** Median of the baseline. */
  baseline: number;
  /** Median of the candidate. */
  candidate: number;
  /** Relative change candidate/baseline − 1. */
  change: number;
  /** Bootstrap confidence interval of the relative change. */
  changeCi: Interval;
  /** Fraction of bootstrap changes on the other side of zero from the point change (two-sided, a p-value stand-in). */
  pValue: number;
}

/**
 * Bootstrap test of the difference of medians: resamples both sets
 * independently and reports the relative change with its confidence interval.
 */
export function compareMedians(
  baseline: ArrayLike<number>,
  candidate: ArrayLike<number>,
  options: BootstrapOptions = {},
): MedianComparison {
  const { resamples, level, rng, a, b } = twoSamples(
    baseline,
    candidate,
    "compareMedians",
    options,
  );
  const ma = quantileSorted(a, 0.5);
  const mb = quantileSorted(b, 0.5);
  if (ma === 0) throw new RangeError("compareMedians needs a non-zero baseline median");
  const change = mb / ma - 1;
  const dist = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) {
    dist[i] = resampleQuantile(b, rng, 0.5) / resampleQuantile(a, rng, 0.5) - 1;
  }
  dist.sort();
  let opposite = 0;
  for (const d of dist) if (change >= 0 ? d <= 0 : d >= 0) opposite++;
  const alpha = (1 - level) / 2;
  return {
    baseline: ma,
    candidate: mb,
    change,
    changeCi: { level, lower: quantileSorted(dist, alpha), upper: quantileSorted(dist, 1 - alpha) },
    pValue: Math.min(1, (2 * opposite) / resamples),
  };
}

/** Result of {@linkcode compareQuantiles}. */
export interface QuantileComparison {
  /** Quantile of the baseline. */
  baseline: number;
  /** Quantile of the candidate. */
  candidate: number;
  /** candidate − baseline. */
  difference: number;
  /** Percentile-bootstrap confidence interval of the difference. */
  differenceCi: Interval;
}

/**
 * Bootstrap of the difference of one quantile (for example p99) between two
 * sample sets: resamples each independently and reports candidate − baseline
 * with its confidence interval.
 */
export function compareQuantiles(
  baseline: ArrayLike<number>,
  candidate: ArrayLike<number>,
  p: number,
  options: BootstrapOptions = {},
): QuantileComparison {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`Quantile ${p} is outside [0, 1]`);
  const { resamples, level, rng, a, b } = twoSamples(
    baseline,
    candidate,
    "compareQuantiles",
    options,
  );
  if (!(Number.isInteger(resamples) && resamples >= 10)) {
    throw new RangeError(`Bootstrap needs an integer number of resamples ≥ 10, got ${resamples}`);
  }
  const qa = quantileSorted(a, p);
  const qb = quantileSorted(b, p);
  const dist = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) {
    dist[i] = resampleQuantile(b, rng, p) - resampleQuantile(a, rng, p);
  }
  dist.sort();
  const alpha = (1 - level) / 2;
  return {
    baseline: qa,
    candidate: qb,
    difference: qb - qa,
    differenceCi: {
      level,
      lower: quantileSorted(dist, alpha),
      upper: quantileSorted(dist, 1 - alpha),
    },
  };
}
