import assert from "node:assert/strict";
import { repeatsRecord, runRepeated } from "./repeats.ts";
import { repeatsTable } from "../report/ratio_report.ts";
import type { BenchRun, RatioRecord } from "../record/schema.ts";

function ratio(id: string, value: number): RatioRecord {
  return {
    id,
    label: id.split("/").slice(0, 2).join(" ÷ "),
    kind: "transports",
    numerator: "n",
    denominator: "d",
    sizeBytes: 256,
    ratio: value,
    interval: { level: 0.95, lower: value * 0.97, upper: value * 1.03 },
    medianOfRounds: value,
    cv: 0.05,
    perRound: [value, value],
  };
}

function fakeRun(i: number, h3: number, noisy = false): BenchRun {
  return {
    startedAt: `run-${i}`,
    durationMs: 1000 + i,
    rows: [],
    rounds: {
      ratios: [ratio("h3/h2-tls/256", h3), ratio("h2-tls/h2c/256", 1.1), {
        ...ratio("rtt/h3/256/floor", 5),
        kind: "floor",
      }],
      noise: { noisy },
    },
  } as unknown as BenchRun;
}

Deno.test("repeats record each run's transport ratios and their largest deviation from the mean", () => {
  const rec = repeatsRecord([fakeRun(0, 1.2), fakeRun(1, 1.5, true), fakeRun(2, 1.2)]);
  assert.equal(rec.runs.length, 3);
  assert.deepEqual(rec.runs.map((r) => r.noisy), [false, true, false]);
  assert.deepEqual(rec.spread.map((s) => s.id), ["h3/h2-tls/256", "h2-tls/h2c/256"]);
  const h3 = rec.spread[0];
  assert.ok(Math.abs(h3.mean - 1.3) < 1e-12);
  assert.equal(h3.min, 1.2);
  assert.equal(h3.max, 1.5);
  assert.ok(Math.abs(h3.maxDeviation - 0.2 / 1.3) < 1e-12);
  assert.equal(rec.spread[1].maxDeviation, 0);
  const t = repeatsTable({ repeats: rec } as unknown as BenchRun);
  assert.deepEqual(t.header.slice(2, 5), ["run 1", "run 2", "run 3"]);
  assert.match(t.body[0][3], /^1\.50× \[.*\] \*$/, "the noisy run is marked");
});

Deno.test("runRepeated runs in turn with per-run options and returns the last run with repeats", async () => {
  const seen: number[] = [];
  const out = await runRepeated(3, { seed: 10 } as { seed: number; signal?: AbortSignal }, (o) => {
    seen.push(o.seed);
    return Promise.resolve(fakeRun(seen.length, 1 + seen.length / 10));
  }, { optionsFor: (i, b) => ({ ...b, seed: b.seed + i }) });
  assert.deepEqual(seen, [10, 11, 12]);
  assert.equal(out.startedAt, "run-3");
  assert.equal(out.repeats!.runs.length, 3);
  const single = await runRepeated(1, {}, () => Promise.resolve(fakeRun(0, 1)));
  assert.equal(single.repeats, undefined);
  await assert.rejects(runRepeated(0, {}, () => Promise.resolve(fakeRun(0, 1))), RangeError);
});
