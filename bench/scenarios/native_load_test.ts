import assert from "node:assert/strict";
import { engineFor, runBench } from "../run/run_bench.ts";
import { stepVerdict } from "./capacity.ts";
import type { NativeRun } from "./native_load.ts";
import type { LoadResult } from "../../load/mod.ts";
import { H3_SKIP } from "../../transports/h3/_test_util.ts";

Deno.test("engineFor: native by default for load scenarios, sbi for the others, refusals", () => {
  for (const s of ["concurrency", "rate", "bulk", "capacity"] as const) {
    assert.equal(engineFor(s), "native");
  }
  for (const s of ["rtt", "cold", "hol", "migration", "peers"] as const) {
    assert.equal(engineFor(s), "sbi");
  }
  assert.equal(engineFor("concurrency", "sbi"), "sbi");
  assert.equal(engineFor("hol", "native"), "native");
  assert.equal(engineFor("cold", "native"), "native");
  assert.throws(() => engineFor("rtt", "native"), /SBI client only/);
  assert.throws(() => engineFor("capacity", "sbi"), /needs the native engine/);
});

function run(fields: Partial<LoadResult>, failed = 0): NativeRun {
  const latency = { count: 100, min: 1, mean: 1, p50: 1, p90: 1, p99: 5e6, p999: 1, max: 1 };
  return {
    result: { errors: 0, partial: false, reqPerSec: 1000, latency, ...fields } as LoadResult,
    clientCpu: 0.1,
    serverCpu: 0.2,
    failed,
  };
}

Deno.test("capacity steps pass only without errors or failed statuses, under the p99 bound and at the rate", () => {
  assert.equal(stepVerdict(run({}), 1000, 10e6), null);
  assert.match(stepVerdict(run({}, 500), 1000, 10e6)!, /500 failed statuses/);
  assert.match(stepVerdict(run({ errors: 2 }), 1000, 10e6)!, /2 errors/);
  assert.match(stepVerdict(run({ partial: true }), 1000, 10e6)!, /errors/);
  assert.match(
    stepVerdict(run({ latency: { ...run({}).result.latency, p99: 11e6 } }), 1000, 10e6)!,
    /p99 11.0 ms/,
  );
  assert.match(stepVerdict(run({ reqPerSec: 900 }), 1000, 10e6)!, /only 900 req\/s/);
});

Deno.test({
  name: "lab bench concurrency on the native engine gives engine-tagged rows without errors",
  fn: async () => {
    const transports = H3_SKIP ? ["h2c" as const] : ["h2c" as const, "h3" as const];
    const r = await runBench({
      scenario: "concurrency",
      transports,
      concurrency: [1, 16],
      quick: true,
      inProcess: true,
      skipFloors: true,
      warmupMs: 100,
      sampleMs: 400,
    });
    assert.equal(r.config.engine, "native");
    assert.equal(r.rows.length, transports.length * 2);
    for (const row of r.rows) {
      assert.equal(row.engine, "native");
      assert.equal(row.errors, 0, row.id);
      assert.ok(row.estimate.n > 10 && row.requestsPerSecond! > 0, row.id);
      assert.ok(row.estimate.p50 <= row.estimate.p99);
      assert.match(row.id, /^native\/concurrency\/native\//); // stack / scenario / engine
    }
    assert.ok(r.notes.some((n) => /CPU per process/.test(n)));
  },
});

Deno.test("lab bench capacity finds a passing rate per transport within its time bound", async () => {
  const t0 = performance.now();
  const r = await runBench({
    scenario: "capacity",
    transports: ["h2c"],
    quick: true,
    inProcess: true,
    skipFloors: true,
    p99BoundMs: 250,
  });
  assert.ok(performance.now() - t0 < 30_000);
  assert.equal(r.config.p99BoundMs, 250);
  assert.equal(r.rows.length, 1);
  const row = r.rows[0];
  assert.equal(row.scenario, "capacity");
  assert.equal(row.engine, "native");
  assert.ok(row.extra!.targetRate >= 1000, `rate ${row.extra!.targetRate}`);
  assert.ok(row.estimate.p99 <= 250e6);
  assert.ok(r.notes.some((n) => /^capacity h2c: 1000 /.test(n)));
});
