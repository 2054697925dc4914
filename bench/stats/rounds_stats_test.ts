import assert from "node:assert/strict";
import { createRng } from "./stats.ts";
import {
  betweenRoundCv,
  clusterMedian,
  drift,
  pairedDifference,
  pairedRatio,
  type Rng,
  roundOrders,
  shuffled,
  splitRounds,
} from "./rounds_stats.ts";

/** Standard normal draws (Box–Muller) from a seeded source. */
function normal(rng: Rng): () => number {
  return () => {
    const u = 1 - rng();
    const v = rng();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
}

/** The machine factor of the drift tests: 1 over the first half, rising to 1.4 over the second. */
function machine(t: number): number {
  return t < 0.5 ? 1 : 1 + 0.8 * (t - 0.5);
}

/**
 * Two arms: A (base 100 µs) and B (true ratio 1.4 × A), each sample scaled by
 * the machine factor at its moment `t` in [0, 1) and by log-normal noise.
 */
function sampleAt(base: number, t: number, z: () => number): number {
  return base * machine(t) * Math.exp(0.1 * z());
}

const TRUE_RATIO = 1.4;

Deno.test("sequential blocks under a drifting machine give a biased ratio, interleaved rounds recover it", () => {
  const z = normal(createRng(7));
  const rounds = 40;
  const perBlock = 100;
  // Sequential: A during the first half of the run, B during the second.
  const seqA: number[][] = [[]];
  const seqB: number[][] = [[]];
  const total = rounds * perBlock;
  for (let k = 0; k < total; k++) seqA[0].push(sampleAt(100, (0.5 * k) / total, z));
  for (let k = 0; k < total; k++) {
    seqB[0].push(sampleAt(100 * TRUE_RATIO, 0.5 + (0.5 * k) / total, z));
  }
  const seqRatio = (seqB[0].sort((a, b) => a - b)[total / 2]) /
    (seqA[0].sort((a, b) => a - b)[total / 2]);
  // Interleaved: each round gives both arms a block, in a random order.
  const orders = roundOrders(["A", "B"], rounds, createRng(11));
  const a: number[][] = [];
  const b: number[][] = [];
  for (const [i, order] of orders.entries()) {
    for (const [slot, arm] of order.entries()) {
      const block: number[] = [];
      for (let k = 0; k < perBlock; k++) {
        const t = (i + (slot * perBlock + k) / (2 * perBlock)) / rounds;
        block.push(sampleAt(arm === "A" ? 100 : 100 * TRUE_RATIO, t, z));
      }
      (arm === "A" ? a : b).push(block);
    }
  }
  const r = pairedRatio(b, a, { rng: createRng(3) });
  // The sequential ratio carries the drift (about 1.4 × 1.2 = 1.68).
  assert.ok(seqRatio > TRUE_RATIO * 1.12, `sequential ratio ${seqRatio}`);
  assert.ok(
    r.interval.lower <= TRUE_RATIO && TRUE_RATIO <= r.interval.upper,
    `interleaved ${r.ratio} [${r.interval.lower}, ${r.interval.upper}]`,
  );
  assert.ok(Math.abs(r.ratio / TRUE_RATIO - 1) < 0.02, `interleaved ratio ${r.ratio}`);
  assert.ok(seqRatio > r.interval.upper, "the sequential ratio lies outside the paired interval");
  // The arms themselves drifted by about +30 % from the first quarter to the last.
  const d = drift(a.map((blk) => blk.slice().sort((x, y) => x - y)[perBlock / 2]));
  assert.ok(d > 0.2 && d < 0.4, `drift ${d}`);
});

Deno.test("paired ratio is exact on noiseless data, whatever the machine did per round", () => {
  const factors = [1, 1.3, 0.9, 2, 1.1, 1.7];
  const a = factors.map((f) => [100 * f, 101 * f, 99 * f]);
  const b = factors.map((f) => [125 * f, 126.25 * f, 123.75 * f]);
  const r = pairedRatio(b, a, { resamples: 200 });
  assert.ok(Math.abs(r.ratio - 1.25) < 1e-12, String(r.ratio));
  assert.ok(Math.abs(r.interval.lower - 1.25) < 1e-12, String(r.interval.lower));
  assert.ok(Math.abs(r.interval.upper - 1.25) < 1e-12, String(r.interval.upper));
  assert.ok(r.perRound.every((x) => Math.abs(x - 1.25) < 1e-12));
  assert.ok(r.cv < 1e-12);
});

Deno.test("paired difference holds the true difference when both arms shift together per round", () => {
  // Each round adds the same machine delay to both arms: it cancels in the paired difference.
  const shifts = [0, 30, -5, 80, 10, 55, 3, 20];
  const rng = createRng(7);
  const a = shifts.map((s) => [0, 1, 2].map(() => 100 + s + rng() * 4));
  const b = shifts.map((s) => [0, 1, 2].map(() => 140 + s + rng() * 4));
  const d = pairedDifference(b, a, { resamples: 400 });
  assert.ok(d.interval.lower <= 40 && 40 <= d.interval.upper, JSON.stringify(d));
  assert.ok(Math.abs(d.difference - 40) < 4, String(d.difference));
  assert.equal(d.rounds, shifts.length);
  // The arms' own medians move by far more than the difference's interval is wide.
  const spread = clusterMedian(a, { resamples: 400 }).interval;
  assert.ok(d.interval.upper - d.interval.lower < spread.upper - spread.lower);
  assert.throws(() => pairedDifference([[1], [2]], [[1], [2], [3]]), RangeError);
});

/**
 * One synthetic run: per round, a machine factor shared by both arms, a factor
 * of each arm's own, and per-sample noise, all log-normal with median 1, so
 * the population medians are exactly `base` and the ratio exactly `ratio`.
 */
function syntheticRun(seed: number, rounds: number, perRound: number, ratio: number) {
  const z = normal(createRng(seed));
  const a: number[][] = [];
  const b: number[][] = [];
  for (let i = 0; i < rounds; i++) {
    const shared = Math.exp(0.05 * z());
    const fa = Math.exp(0.03 * z());
    const fb = Math.exp(0.03 * z());
    a.push(Array.from({ length: perRound }, () => 100 * shared * fa * Math.exp(0.2 * z())));
    b.push(Array.from({ length: perRound }, () => 100 * ratio * shared * fb * Math.exp(0.2 * z())));
  }
  return { a, b };
}

Deno.test("cluster intervals cover the true median and ratio at about their nominal 95 % rate", () => {
  const trials = 200;
  let medianHits = 0;
  let ratioHits = 0;
  let naiveHits = 0;
  for (let t = 0; t < trials; t++) {
    const { a, b } = syntheticRun(1000 + t, 30, 20, 1.2);
    const m = clusterMedian(a, { resamples: 400, rng: createRng(t) });
    if (m.interval.lower <= 100 && 100 <= m.interval.upper) medianHits++;
    const r = pairedRatio(b, a, { resamples: 400, rng: createRng(t + 1) });
    if (r.interval.lower <= 1.2 && 1.2 <= r.interval.upper) ratioHits++;
    // Treating every sample as independent (one round per sample) is what over-states certainty.
    const naive = clusterMedian(a.flat().map((x) => [x]), { resamples: 200, rng: createRng(t) });
    if (naive.interval.lower <= 100 && 100 <= naive.interval.upper) naiveHits++;
  }
  const median = medianHits / trials;
  const ratio = ratioHits / trials;
  assert.ok(median >= 0.88 && median <= 0.99, `median coverage ${median}`);
  assert.ok(ratio >= 0.88 && ratio <= 0.99, `ratio coverage ${ratio}`);
  assert.ok(naiveHits / trials < 0.86, `sample-level coverage ${naiveHits / trials}`);
});

Deno.test("cluster median uses every sample and its interval is seeded", () => {
  const rounds = [[1, 2, 3], [4, 5, 6, 7], [8, 9]];
  const m = clusterMedian(rounds, { rng: createRng(5), resamples: 100 });
  assert.equal(m.median, 5);
  assert.equal(m.n, 9);
  assert.equal(m.rounds, 3);
  const again = clusterMedian(rounds, { rng: createRng(5), resamples: 100 });
  assert.deepEqual(again.interval, m.interval);
  assert.ok(m.interval.lower < 5 && m.interval.upper > 5);
});

Deno.test("round orders are seeded shuffles that hold every arm once", () => {
  const arms = ["a", "b", "c", "d", "e"];
  const orders = roundOrders(arms, 50, createRng(9));
  assert.equal(orders.length, 50);
  for (const o of orders) assert.deepEqual(o.slice().sort(), arms);
  assert.deepEqual(roundOrders(arms, 50, createRng(9)), orders);
  // Each arm leads a round now and then (a fixed order would always lead with "a").
  const leaders = new Set(orders.map((o) => o[0]));
  assert.equal(leaders.size, arms.length);
  assert.deepEqual(shuffled([], createRng(1)), []);
});

Deno.test("between-round CV and drift read the per-round medians", () => {
  assert.equal(betweenRoundCv([[10, 10], [10, 10]]), 0);
  const cv = betweenRoundCv([[9], [11]]);
  assert.ok(Math.abs(cv - Math.SQRT2 / 10) < 1e-12, String(cv));
  assert.ok(Math.abs(drift([10, 10, 10, 10, 12, 12, 12, 12]) - 0.2) < 1e-12);
});

Deno.test("round statistics reject input they cannot use", () => {
  assert.throws(() => clusterMedian([[1, 2]]), RangeError);
  assert.throws(() => clusterMedian([[1], []]), RangeError);
  assert.throws(() => clusterMedian([[1], [NaN]]), RangeError);
  assert.throws(() => pairedRatio([[1], [2]], [[1], [2], [3]]), RangeError);
  assert.throws(() => pairedRatio([[1], [2]], [[0], [0]]), RangeError);
  assert.throws(() => roundOrders(["a"], 0, Math.random), RangeError);
  assert.throws(() => splitRounds([1, 2, 3], [1, 1]), RangeError);
  assert.deepEqual(splitRounds([1, 2, 3], [1, 0, 2]), [[1], [], [2, 3]]);
});
