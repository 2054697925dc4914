import {
  deepStrictEqual as assertEquals,
  ok as assert,
  throws as assertThrows,
} from "node:assert/strict";
import {
  bootstrapMedianCi,
  bootstrapQuantiles,
  compareMedians,
  createRng,
  estimate,
  mad,
  median,
  quantile,
  stddev,
  tukeyOutliers,
} from "./stats.ts";

const close = (a: number, b: number, eps = 1e-9) =>
  assert(Math.abs(a - b) <= eps, `expected ${b}, got ${a}`);

// Hand-computed on [2, 4, 4, 4, 5, 5, 7, 9]: mean 5, Σ(x−5)² = 32 → s = √(32/7);
// median (4+5)/2; |x − 4.5| sorted = .5 .5 .5 .5 .5 2.5 2.5 4.5 → MAD .5;
// p90: h = 6.3 → 7 + .3·2; Q1 (h = 1.75) = 4, Q3 (h = 5.25) = 5.5, IQR 1.5 →
// mild fence 7.75 < 9 ≤ 10 = severe fence: one high mild outlier.
const FIXED = [9, 4, 2, 5, 4, 7, 4, 5];

Deno.test("estimate matches hand-computed values on fixed samples", () => {
  const e = estimate(FIXED);
  assertEquals(e.n, 8);
  close(e.mean, 5);
  close(e.stddev, Math.sqrt(32 / 7));
  close(e.median, 4.5);
  close(e.p50, 4.5);
  close(e.mad, 0.5);
  close(e.min, 2);
  close(e.max, 9);
  close(e.p90, 7.6);
  close(e.p99, 8.86);
  close(e.p999, 8.986);
  assertEquals(e.outliers, { lowSevere: 0, lowMild: 0, highMild: 1, highSevere: 0 });
  assert(e.medianCi.lower <= 4.5 && e.medianCi.upper >= 4.5);
});

Deno.test("Tukey counting separates mild from severe outliers", () => {
  // Q1 = 2, Q3 = 4, IQR 2: 100 > 4 + 3·2 is severe; −3 < 2 − 3 is mild (≥ −4).
  assertEquals(tukeyOutliers([1, 2, 3, 4, 100]), {
    lowSevere: 0,
    lowMild: 0,
    highMild: 0,
    highSevere: 1,
  });
  assertEquals(tukeyOutliers([-3, 2, 2, 3, 4, 4]), {
    lowSevere: 0,
    lowMild: 1,
    highMild: 0,
    highSevere: 0,
  });
});

Deno.test("quantile interpolates between order statistics", () => {
  close(quantile([10, 20, 30, 40], 0.5), 25);
  close(quantile([10, 20, 30, 40], 1 / 3), 20);
  close(quantile([10, 20, 30, 40], 0), 10);
  close(median([3, 1, 2]), 2);
  close(mad([1, 1, 2, 2, 4, 6, 9]), 1);
});

Deno.test("statistics reject too few samples, NaN and bad quantiles", () => {
  assertThrows(() => estimate([1]), RangeError);
  assertThrows(() => stddev([1]), RangeError);
  assertThrows(() => estimate([1, NaN, 3]), RangeError);
  assertThrows(() => quantile([1, 2], 1.5), RangeError);
  assertThrows(() => median([]), RangeError);
  assertThrows(() => bootstrapMedianCi([1, 2, 3], { level: 1 }), RangeError);
});

Deno.test("bootstrap CI of the median of [1, 3] spans the only possible medians 1…3", () => {
  // A resample of two values has median 1 (p ¼), 2 (p ½) or 3 (p ¼), so the 2.5 % and
  // 97.5 % quantiles of 1000 resampled medians are 1 and 3.
  const ci = bootstrapMedianCi([1, 3], { seed: 7 });
  assertEquals([ci.lower, ci.upper], [1, 3]);
  const constant = bootstrapMedianCi([5, 5, 5, 5]);
  assertEquals([constant.lower, constant.upper], [5, 5]);
});

/** Quantile `p` of resamples drawn the plain way: n indices with replacement, sorted. */
function plainResamples(asc: number[], p: number, count: number, seed: number): number[] {
  const rng = createRng(seed);
  const n = asc.length;
  const out: number[] = [];
  for (let b = 0; b < count; b++) {
    const draw = Array.from({ length: n }, () => asc[Math.floor(rng() * n)]).sort((x, y) => x - y);
    out.push(quantile(draw, p));
  }
  return out.sort((x, y) => x - y);
}

/** Largest gap between the empirical CDFs of two ascending sets (two-sample Kolmogorov–Smirnov D). */
function ksDistance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let i = 0, j = 0, d = 0;
  while (i < a.length && j < b.length) {
    const x = Math.min(a[i], b[j]);
    while (i < a.length && a[i] <= x) i++;
    while (j < b.length && b[j] <= x) j++;
    d = Math.max(d, Math.abs(i / a.length - j / b.length));
  }
  return d;
}

Deno.test("a resample's quantile has the law of drawing n indices with replacement", () => {
  // 20,000 draws a side: D above 0.02 has p < 0.001 when the laws are equal. Off-by-one order
  // statistics (Beta(k, n − k) for Beta(k, n − k + 1)) or a lost interpolation move D well past it.
  const rng = createRng(11);
  const skewed = Array.from({ length: 10 }, () => Math.exp(rng() * 3)).sort((x, y) => x - y);
  const tail = Array.from({ length: 150 }, () => Math.exp(rng() * 3)).sort((x, y) => x - y);
  for (const [asc, p] of [[skewed, 0.5], [skewed, 0.25], [tail, 0.99], [tail, 0.5]] as const) {
    const fast = bootstrapQuantiles(asc, p, { resamples: 20_000, seed: 5 });
    const plain = plainResamples(asc, p, 20_000, 6);
    const d = ksDistance(fast, plain);
    assert(d < 0.02, `n ${asc.length}, p ${p}: KS distance ${d.toFixed(4)} between the two draws`);
  }
  // The law is not the identity: a different quantile's draws are far away.
  const other = plainResamples(tail, 0.9, 20_000, 6);
  assert(ksDistance(bootstrapQuantiles(tail, 0.99, { resamples: 20_000 }), other) > 0.5);
});

Deno.test("the bootstrap interval of a median of 150,000 samples has the width theory gives", () => {
  // Uniform on [1000, 1100]: the median's standard error is 1 / (2 f(m) √n) = 100 / (2 √150000)
  // ≈ 0.129, so a 95 % interval spans about 2 · 1.96 · 0.129 ≈ 0.506.
  const rng = createRng(3);
  const big = Array.from({ length: 150_000 }, () => 1000 + rng() * 100);
  const ci = bootstrapMedianCi(big);
  const width = ci.upper - ci.lower;
  assert(width > 0.4 && width < 0.62, `95 % interval ${ci.lower}…${ci.upper}, width ${width}`);
  assert(ci.lower < 1050 && ci.upper > 1050, `interval misses the true median 1050`);
});

Deno.test("bootstrap CI is reproducible for a seed and narrows with more samples", () => {
  const rng = createRng(42);
  const small = Array.from({ length: 50 }, () => 100 + rng() * 10);
  const large = Array.from({ length: 5000 }, () => 100 + rng() * 10);
  assertEquals(bootstrapMedianCi(small, { seed: 3 }), bootstrapMedianCi(small, { seed: 3 }));
  const ws = bootstrapMedianCi(small);
  const wl = bootstrapMedianCi(large);
  assert(wl.upper - wl.lower < ws.upper - ws.lower);
  assert(wl.lower < 105 && wl.upper > 105, `CI ${wl.lower}…${wl.upper} misses the true median 105`);
});

Deno.test("compareMedians finds a planted 20 % shift and not a 0.5 % one", () => {
  const rng = createRng(9);
  const base = Array.from({ length: 2000 }, () => 100 + rng() * 20);
  const slower = base.map((x) => x * 1.2);
  const tiny = base.map((x) => x * 1.005);
  const big = compareMedians(base, slower);
  close(big.change, 0.2, 1e-9);
  assert(big.changeCi.lower > 0.15 && big.changeCi.upper < 0.25);
  assert(big.pValue < 0.05);
  const small = compareMedians(base, tiny);
  close(small.change, 0.005, 1e-9);
  assert(small.changeCi.upper < 0.02, `CI upper ${small.changeCi.upper} reaches the 2 % threshold`);
});
