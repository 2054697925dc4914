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
