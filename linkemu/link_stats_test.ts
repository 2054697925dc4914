import assert from "node:assert/strict";
import { burstDesignEffect, jitterMedianMs, wilsonInterval } from "./link_stats.ts";
import { median } from "../bench/stats/stats.ts";

Deno.test("wilsonInterval matches hand-computed 99 % bounds and contains the share", () => {
  // 20 losses in 1000 packets: p = 0.02, z = 2.5758
  const [lo, hi] = wilsonInterval(20, 1000);
  assert.ok(Math.abs(lo - 0.01137) < 0.0001, `low ${lo}`);
  assert.ok(Math.abs(hi - 0.03496) < 0.0001, `high ${hi}`);
  const [lo0, hi0] = wilsonInterval(0, 10000);
  assert.equal(lo0, 0);
  assert.ok(hi0 > 0 && hi0 < 0.001, `zero losses still give an upper bound, got ${hi0}`);
  // a smaller effective sample widens the interval
  const [loW, hiW] = wilsonInterval(10, 500);
  assert.ok(loW < lo && hiW > hi);
  assert.throws(() => wilsonInterval(5, 0), RangeError);
  assert.throws(() => wilsonInterval(6, 5), RangeError);
});

Deno.test("burstDesignEffect is 1 for independent losses and grows with the burst cap", () => {
  assert.equal(burstDesignEffect(1), 1);
  assert.equal(burstDesignEffect(3), 7 / 3);
  assert.throws(() => burstDesignEffect(0), RangeError);
});

Deno.test("jitterMedianMs agrees with a simulation of non-reordering jitter", () => {
  assert.equal(jitterMedianMs(0, 0.1), 0);
  // Widely spaced packets never wait for each other: median of U(-j, j) is 0.
  assert.ok(Math.abs(jitterMedianMs(2, 100)) < 1e-9);
  for (const [j, gap] of [[2, 0.1], [5, 1], [1, 0.5]]) {
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const extra: number[] = [];
    let last = -Infinity;
    for (let i = 0; i < 20000; i++) {
      const t = i * gap;
      const release = Math.max(t + (rand() * 2 - 1) * j, last);
      last = release;
      if (i > 100) extra.push(release - t);
    }
    const simulated = median(extra);
    const predicted = jitterMedianMs(j, gap);
    assert.ok(
      Math.abs(simulated - predicted) < 0.03 * j,
      `j=${j} gap=${gap}: ${simulated} vs ${predicted}`,
    );
  }
});
