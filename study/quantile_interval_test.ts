import assert from "node:assert/strict";
import {
  binomialCdf,
  minSamplesForQuantile,
  pooledTailDesignEffect,
  quantileInterval,
  quantileRanks,
  tailDesignEffect,
} from "./quantile_interval.ts";
import { createRng } from "../bench/stats/mod.ts";

Deno.test("binomialCdf matches a hand-computed binomial and ends at 1", () => {
  const c = binomialCdf(3, 0.5);
  [0.125, 0.5, 0.875, 1].forEach((want, k) => assert.ok(Math.abs(c[k] - want) < 1e-12, `k=${k}`));
  const p99 = binomialCdf(1000, 0.99);
  assert.ok(Math.abs(p99[1000] - 1) < 1e-9);
  assert.ok(Math.abs(p99[999] - (1 - 0.99 ** 1000)) < 1e-9);
});

Deno.test("with 100 flows the p99 has no upper end at 95 %; the minimum count gets one", () => {
  const r = quantileRanks(100, 0.99, 0.95);
  assert.equal(r.upper, 101);
  const min = minSamplesForQuantile(0.99, 0.95);
  assert.equal(min, 368);
  assert.ok(quantileRanks(min, 0.99, 0.95).upper <= min);
  assert.equal(quantileRanks(min - 1, 0.99, 0.95).upper, min);
});

Deno.test("the median's order-statistic interval is the textbook one and covers at its level", () => {
  // n = 20, 95 %: ranks 6 and 15 (coverage 0.9586).
  const r = quantileRanks(20, 0.5, 0.95);
  assert.equal(r.lower, 6);
  assert.equal(r.upper, 15);
  assert.ok(Math.abs(r.coverage - 0.9586) < 1e-4);
});

Deno.test("the p99 interval covers the true p99 of an exponential at about its level", () => {
  const rng = createRng(7);
  const trueP99 = -Math.log(0.01);
  let covered = 0;
  const trials = 400;
  for (let t = 0; t < trials; t++) {
    const xs = Array.from({ length: 2000 }, () => -Math.log(1 - rng()));
    const ci = quantileInterval(xs, 0.99, 0.95);
    if (ci.lower <= trueP99 && trueP99 <= ci.upper) covered++;
  }
  const share = covered / trials;
  assert.ok(share >= 0.92 && share <= 0.995, `coverage ${share}`);
});

Deno.test("the pooled design effect gives a side that saw no burst the other's, and independent flows about 1", () => {
  const rng = createRng(11);
  const calm = () => Array.from({ length: 2400 }, () => -Math.log(1 - rng()));
  // Six bursts of 20 consecutive flows, each flow 10× slower: the tail is six episodes.
  const stalled = calm();
  for (let b = 0; b < 6; b++) for (let i = 0; i < 20; i++) stalled[b * 400 + 100 + i] *= 10;
  const own = tailDesignEffect(stalled, 0.99, 50).effect;
  assert.ok(own > 3, `bursty side ${own}`);
  const quiet = calm();
  assert.ok(tailDesignEffect(quiet, 0.99, 50).effect < 3);
  const pooled = pooledTailDesignEffect([quiet, stalled], 0.99, 50).effect;
  assert.ok(pooled > own / 3 && pooled < own, `pooled ${pooled}, bursty side ${own}`);
  // Independent sides: pooled over twice the clusters, the estimate stays nearer 1 than the larger side's.
  let pooledSum = 0, maxSum = 0;
  for (let t = 0; t < 40; t++) {
    const a = calm(), b = calm();
    pooledSum += pooledTailDesignEffect([a, b], 0.99, 50).effect;
    maxSum += Math.max(tailDesignEffect(a, 0.99, 50).effect, tailDesignEffect(b, 0.99, 50).effect);
  }
  assert.ok(pooledSum < maxSum, `pooled ${pooledSum / 40}, larger side ${maxSum / 40}`);
  assert.ok(pooledSum / 40 < 1.6, `pooled ${pooledSum / 40}`);
});
