/**
 * Pure statistics for the link selftest: binomial intervals and the delay
 * that jitter-without-reordering is expected to add (medians come from
 * bench/stats/stats.ts).
 *
 * @module
 */

/** Two-sided 99 % standard normal quantile. */
export const Z99 = 2.5758293035489;

/**
 * Wilson score interval for a binomial share: `k` successes in `n` trials.
 * `n` may be fractional (an effective sample size). Returns `[low, high]`.
 */
export function wilsonInterval(k: number, n: number, z = Z99): [number, number] {
  if (!(n > 0) || k < 0 || k > n) throw new RangeError(`Bad binomial count ${k} of ${n}`);
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  // At the edges the bounds are exactly 0 and 1 (rounding would leave 1e-20).
  return [k === 0 ? 0 : Math.max(0, centre - half), k === n ? 1 : Math.min(1, centre + half)];
}

/**
 * How much burst losses (lengths uniform in 1..burst) widen the variance of a
 * loss count compared with independent losses: E[L²]/E[L] = (2B+1)/3. Divide
 * the sample size by it before taking a binomial interval.
 */
export function burstDesignEffect(burst: number): number {
  if (!(burst >= 1)) throw new RangeError(`Bad burst length ${burst}`);
  return (2 * burst + 1) / 3;
}

/**
 * Median extra one-way delay (ms) that uniform jitter in ±`jitterMs` adds when
 * packets spaced `spacingMs` apart may not overtake each other: each packet
 * leaves at the latest of its own and every earlier packet's release. The
 * delay exceeds `x` only if some packet k places back drew more than
 * `x + k·spacing`, so P(extra ≤ x) = Π_k F(x + k·spacing) with F the jitter's
 * distribution function; this returns the x where that product is ½.
 */
export function jitterMedianMs(jitterMs: number, spacingMs: number): number {
  if (jitterMs <= 0) return 0;
  if (!(spacingMs > 0)) return jitterMs;
  const cdf = (y: number) => Math.min(1, Math.max(0, (y + jitterMs) / (2 * jitterMs)));
  const below = (x: number) => {
    let p = 1;
    for (let k = 0; x + k * spacingMs < jitterMs && k < 1e6; k++) p *= cdf(x + k * spacingMs);
    return p;
  };
  let lo = -jitterMs;
  let hi = jitterMs;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (below(mid) < 0.5) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
