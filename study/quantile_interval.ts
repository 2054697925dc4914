/**
 * Distribution-free intervals for a quantile from order statistics. With n
 * independent samples, the number B of samples below the q-quantile is
 * binomial (n, q), so [X(l), X(u)] (the l-th and u-th smallest) covers the
 * quantile with probability P(l ≤ B < u), whatever the distribution. With
 * few samples no rank u ≤ n reaches the level and the interval has no upper
 * end: 100 flows cannot bound a p99 from above (the p99 is then the second
 * largest value, and the largest is only a 63 % upper bound).
 */

/** Ranks (1-based) of an order-statistic interval and its exact coverage. */
export interface QuantileRanks {
  /** Rank of the lower end; 0 when no sample bounds the quantile from below. */
  lower: number;
  /** Rank of the upper end; n + 1 when no sample bounds it from above. */
  upper: number;
  /** P(X(lower) ≤ quantile ≤ X(upper)) under any continuous distribution. */
  coverage: number;
}

/** A quantile's interval in sample units; an end no sample supports is ∓Infinity. */
export interface QuantileInterval {
  lower: number;
  upper: number;
  /** Exact coverage of the ranks used. */
  coverage: number;
  /** Samples behind it. */
  n: number;
}

function checkArgs(n: number, q: number, level: number): void {
  if (!(Number.isInteger(n) && n >= 1)) {
    throw new RangeError(`n must be a whole number ≥ 1, got ${n}`);
  }
  if (!(q > 0 && q < 1)) throw new RangeError(`Quantile must be in (0, 1), got ${q}`);
  if (!(level > 0 && level < 1)) throw new RangeError(`Level must be in (0, 1), got ${level}`);
}

/** P(B ≤ k) for k = 0…n, B ~ binomial(n, p), computed in logs (no underflow at p = 0.99). */
export function binomialCdf(n: number, p: number): Float64Array {
  const logFact = new Float64Array(n + 1);
  for (let i = 1; i <= n; i++) logFact[i] = logFact[i - 1] + Math.log(i);
  const lp = Math.log(p), lq = Math.log1p(-p);
  const cdf = new Float64Array(n + 1);
  let acc = 0;
  for (let k = 0; k <= n; k++) {
    acc += Math.exp(logFact[n] - logFact[k] - logFact[n - k] + k * lp + (n - k) * lq);
    cdf[k] = Math.min(1, acc);
  }
  return cdf;
}

/**
 * The narrowest equal-tailed order-statistic ranks for the q-quantile of n
 * samples at `level`: lower = the largest l with P(B < l) ≤ α/2, upper = the
 * smallest u with P(B < u) ≥ 1 − α/2 (each tail holds at most α/2).
 */
export function quantileRanks(n: number, q: number, level: number): QuantileRanks {
  checkArgs(n, q, level);
  const tail = (1 - level) / 2;
  const cdf = binomialCdf(n, q);
  // P(B < r) = cdf[r - 1] (0 for r = 0 and r = 1 − 1 = 0 handled by the guard).
  const below = (r: number) => (r <= 0 ? 0 : cdf[Math.min(r - 1, n)]);
  let lower = 0;
  for (let r = 1; r <= n; r++) {
    if (below(r) <= tail) lower = r;
    else break;
  }
  let upper = n + 1;
  for (let r = Math.max(1, lower); r <= n; r++) {
    if (below(r) >= 1 - tail) {
      upper = r;
      break;
    }
  }
  const top = upper > n ? 1 : below(upper);
  return { lower, upper, coverage: top - below(lower) };
}

/** The order-statistic interval of the q-quantile of `samples` (any order) at `level`. */
export function quantileInterval(
  samples: ArrayLike<number>,
  q: number,
  level: number,
): QuantileInterval {
  const asc = Float64Array.from(samples).sort();
  const r = quantileRanks(asc.length, q, level);
  return {
    lower: r.lower >= 1 ? asc[r.lower - 1] : -Infinity,
    upper: r.upper <= asc.length ? asc[r.upper - 1] : Infinity,
    coverage: r.coverage,
    n: asc.length,
  };
}

/** Fewest samples whose q-quantile interval at `level` has an upper end (a sample above it). */
export function minSamplesForQuantile(q: number, level: number): number {
  checkArgs(1, q, level);
  // The largest sample bounds the quantile from above at 1 − qⁿ; it must reach 1 − α/2.
  return Math.ceil(Math.log((1 - level) / 2) / Math.log(q));
}

/** How clustered samples widen a quantile's interval ({@link tailDesignEffect}). */
export interface TailDesignEffect {
  /** Variance of the tail share across clusters ÷ what independent samples would give (≥ 1). */
  effect: number;
  /** Cluster size (samples) at which the effect was largest. */
  clusterSize: number;
  /** Independent samples the clustered ones are worth: n ÷ effect. */
  effectiveN: number;
}

/** Fewest clusters a variance between clusters is taken from. */
export const MIN_CLUSTERS = 8;

/**
 * The design effect (Kish) of samples that arrive in bursts, for the
 * q-quantile: the samples, in the order they were taken, are cut into
 * consecutive clusters of `clusterSize`, 2 × and 4 × that (each with at least
 * {@link MIN_CLUSTERS} clusters), and in each cut the share of every cluster
 * above the pooled quantile is compared with the binomial share. When slow
 * samples come together (a stalled connection holds every flow on it), the
 * shares vary between clusters more than independent samples allow, and the
 * samples are worth fewer independent ones. The largest effect over the cuts
 * is taken (a burst longer than a cluster shows at the larger cuts), never
 * below 1: independent samples keep their exact order-statistic interval.
 */
export function tailDesignEffect(
  samplesInOrder: ArrayLike<number>,
  q: number,
  clusterSize: number,
): TailDesignEffect {
  return pooledTailDesignEffect([samplesInOrder], q, clusterSize);
}

/** One cut's sum of squared deviations of the clusters' tail counts, and its binomial share. */
function tailDeviations(
  samplesInOrder: ArrayLike<number>,
  q: number,
): ((m: number) => { observed: number; binomial: number } | undefined) | undefined {
  const n = samplesInOrder.length;
  if (n === 0) return undefined;
  const asc = Float64Array.from(samplesInOrder).sort();
  // The quantile's order statistic: the tail is every sample above it.
  const cut = asc[Math.min(n - 1, Math.ceil(q * n) - 1)];
  const above = new Uint8Array(n);
  let tail = 0;
  for (let i = 0; i < n; i++) if (samplesInOrder[i] > cut) (above[i] = 1, tail++);
  const p = tail / n;
  if (p <= 0) return undefined;
  return (m) => {
    const k = Math.floor(n / m);
    if (k < MIN_CLUSTERS) return undefined;
    // Whole clusters of m; the remainder joins the last one.
    let sum = 0;
    for (let c = 0; c < k; c++) {
      const end = c === k - 1 ? n : (c + 1) * m;
      let y = 0;
      for (let i = c * m; i < end; i++) y += above[i];
      sum += (y - p * (end - c * m)) ** 2;
    }
    // The clusters' variance of the tail count (a ratio estimate over k clusters) against n p (1 − p).
    return { observed: (k / (k - 1)) * sum, binomial: n * p * (1 - p) };
  };
}

/**
 * {@link tailDesignEffect} of several samples taken under one law (the two
 * sides of a comparison under equal quantiles): each side is cut into
 * clusters and compared with its own quantile, and the clusters' deviations
 * of every side are pooled before the ratio is taken. Pooled, a side whose
 * run happened to see no burst shares the other's, and the estimate rests on
 * twice the clusters of either side alone.
 */
export function pooledTailDesignEffect(
  sides: ArrayLike<number>[],
  q: number,
  clusterSize: number,
): TailDesignEffect {
  const n = sides.reduce((a, s) => a + s.length, 0);
  checkArgs(Math.max(1, n), q, 0.5);
  if (!(Number.isInteger(clusterSize) && clusterSize >= 1)) {
    throw new RangeError(`Cluster size must be a whole number ≥ 1, got ${clusterSize}`);
  }
  let best = { effect: 1, clusterSize, effectiveN: n };
  const cuts = sides.map((s) => tailDeviations(s, q)).filter((d) => d !== undefined);
  if (cuts.length === 0) return best;
  for (let m = clusterSize; m <= 4 * clusterSize; m *= 2) {
    let observed = 0, binomial = 0;
    for (const d of cuts) {
      const r = d(m);
      if (r) (observed += r.observed, binomial += r.binomial);
    }
    if (binomial <= 0) continue;
    const effect = observed / binomial;
    if (effect > best.effect) best = { effect, clusterSize: m, effectiveN: n / effect };
  }
  return best;
}

/**
 * The q-quantile's interval for samples worth `effect` times fewer
 * independent ones (a design effect, {@link tailDesignEffect}): the exact
 * order-statistic ranks of {@link quantileRanks} for the effective number of
 * samples, scaled back to the samples' ranks outward (the lower rank down,
 * the upper up). With an effect of 1 it is {@link quantileInterval}; with a
 * larger one it is wider, and has no upper end when the samples are worth too
 * few to bound the quantile.
 */
export function clusteredQuantileInterval(
  samples: ArrayLike<number>,
  q: number,
  level: number,
  effect: number,
): QuantileInterval {
  if (!(effect >= 1)) throw new RangeError(`A design effect must be ≥ 1, got ${effect}`);
  if (effect === 1) return quantileInterval(samples, q, level);
  const asc = Float64Array.from(samples).sort();
  const n = asc.length;
  const m = Math.max(1, Math.floor(n / effect));
  const r = quantileRanks(m, q, level);
  const scale = n / m;
  const lower = r.lower >= 1 ? Math.max(1, Math.floor(r.lower * scale)) : 0;
  const upper = r.upper <= m ? Math.min(n, Math.ceil(r.upper * scale)) : n + 1;
  return {
    lower: lower >= 1 ? asc[lower - 1] : -Infinity,
    upper: upper <= n ? asc[upper - 1] : Infinity,
    coverage: r.coverage,
    n,
  };
}
