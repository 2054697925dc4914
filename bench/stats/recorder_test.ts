import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { estimateSampleSet, Recorder } from "./recorder.ts";

Deno.test("recorder keeps every sample while under its cap", () => {
  const r = new Recorder({ maxSamples: 10 });
  for (const v of [5, 1, 3]) r.record(v * 1000);
  const set = r.finish();
  assertEquals(set.count, 3);
  assertEquals(set.complete, true);
  assertEquals(set.samples, [5000, 1000, 3000]);
  assertEquals(estimateSampleSet(set).median, 3000);
});

Deno.test("recorder bounds memory with a reservoir and estimates from the histogram", () => {
  const r = new Recorder({ maxSamples: 500 });
  for (let i = 1; i <= 20_000; i++) r.record(i * 1000);
  const set = r.finish();
  assertEquals(set.count, 20_000);
  assertEquals(set.complete, false);
  assertEquals(set.samples.length, 500);
  const e = estimateSampleSet(set);
  assertEquals(e.n, 20_000);
  // Exact median 10 000 500; the histogram keeps 3 significant digits (0.1 %).
  assert(Math.abs(e.median - 10_000_500) / 10_000_500 < 0.002, `median ${e.median}`);
  assert(Math.abs(e.p99 - 19_800_000) / 19_800_000 < 0.002, `p99 ${e.p99}`);
  assertEquals(e.max >= 19_990_000, true);
  // The reservoir is a uniform sample: its median lies near the true one.
  assert(e.medianCi.lower > 8_000_000 && e.medianCi.upper < 12_000_000);
});

Deno.test("recorder rejects negative and non-finite values", () => {
  const r = new Recorder();
  let threw = 0;
  for (const bad of [-1, NaN, Infinity]) {
    try {
      r.record(bad);
    } catch (e) {
      if (e instanceof RangeError) threw++;
    }
  }
  assertEquals(threw, 3);
  assertEquals(r.count, 0);
});
