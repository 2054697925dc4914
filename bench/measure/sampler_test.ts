import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import { sampleOpenLoop, sampleOperation, SamplingError } from "./sampler.ts";

/** A fake clock that each operation advances by a scripted amount. */
function fakeClock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

Deno.test("sampleOperation times each call with the injected clock and stops at the sample count", async () => {
  const c = fakeClock();
  const costs = [1, 2, 3];
  let i = 0;
  const r = await sampleOperation(
    async () => {
      c.advance(costs[i++ % 3]);
      await Promise.resolve();
    },
    { warmupMs: 5, sampleMs: 1e6, samples: 6 },
    1,
    { clock: c.now },
  );
  assertEquals(r.samples.count, 6);
  // Warm-up consumed calls until 5 ms had passed (1+2+3 = 6 ms: three calls), so sampling starts at cost 1.
  assertEquals(r.samples.samples, [1e6, 2e6, 3e6, 1e6, 2e6, 3e6]);
  assertEquals(r.errors, 0);
});

Deno.test("sampleOperation is bounded by time when no count is given", async () => {
  const c = fakeClock();
  const r = await sampleOperation(
    async () => {
      c.advance(10);
      await Promise.resolve();
    },
    { warmupMs: 0, sampleMs: 100 },
    1,
    { clock: c.now },
  );
  assertEquals(r.samples.count, 10);
});

Deno.test("sampleOperation gives up with the first error when most calls fail", async () => {
  const c = fakeClock();
  await rejects(
    sampleOperation(
      async () => {
        c.advance(1);
        await Promise.resolve();
        throw new Error("connection refused");
      },
      { warmupMs: 0, sampleMs: 1000 },
      1,
      { clock: c.now },
    ),
    (e: unknown) => e instanceof SamplingError && /first: connection refused/.test(e.message),
  );
});

Deno.test("open loop charges a stall to every request that was due during it", async () => {
  // 1000 req/s for 100 ms; request 10 stalls 50 ms. The operation itself
  // takes 0 ms otherwise. Requests 11…59 were due during the stall and are
  // sent late by the fake scheduler, so corrected latencies must exceed
  // uncorrected ones.
  const c = fakeClock();
  let n = 0;
  const r = await sampleOpenLoop(
    async () => {
      if (n++ === 10) c.advance(50);
      await Promise.resolve();
    },
    1000,
    { warmupMs: 0, sampleMs: 100 },
    {
      clock: c.now,
      sleep: async (ms) => {
        c.advance(Math.max(ms, 0.001));
        await Promise.resolve();
      },
    },
  );
  assertEquals(r.completed, 100);
  const corr = r.corrected.samples.slice().sort((a, b) => a - b);
  const unc = r.uncorrected.samples.slice().sort((a, b) => a - b);
  // Uncorrected: one 50 ms sample, the rest 0. Corrected: ~49 samples delayed by up to 50 ms.
  assertEquals(unc.filter((x) => x > 1e6).length, 1);
  assert(corr.filter((x) => x > 1e6).length >= 40, "the stall is hidden from corrected latency");
});
