import assert from "node:assert/strict";
import { compareRuns, renderComparison } from "./compare.ts";
import { createRng, estimate } from "../stats/stats.ts";
import { clusterMedian, cv, roundMedians } from "../stats/rounds_stats.ts";
import { assessNoise, pairedRatios } from "../record/rounds_summary.ts";
import { type BenchRun, type ResultRow, SCHEMA_VERSION } from "../record/schema.ts";

/**
 * A synthetic run in rounds: h2c, h2-tls and h3 at 256 B. `machine` scales the
 * whole run (a VM that is faster or slower today), each round has its own
 * shared factor, and `h3Cost` is h3's true cost over h2-tls.
 */
function syntheticRun(seed: number, machine: number, h3Cost = 1.3): BenchRun {
  const rng = createRng(seed);
  const z = () => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const rounds = 30;
  const base: Record<string, number> = { h2c: 100, "h2-tls": 110, h3: 110 * h3Cost };
  const blocks: Record<string, number[][]> = { h2c: [], "h2-tls": [], h3: [] };
  for (let i = 0; i < rounds; i++) {
    const shared = Math.exp(0.05 * z());
    for (const t of Object.keys(base)) {
      const own = Math.exp(0.02 * z());
      blocks[t].push(
        Array.from({ length: 40 }, () => base[t] * machine * shared * own * Math.exp(0.15 * z())),
      );
    }
  }
  const rows: ResultRow[] = Object.entries(blocks).map(([t, b]) => {
    const flat = b.flat();
    const medians = roundMedians(b);
    const e = estimate(flat, { resamples: 10 });
    e.medianCi = clusterMedian(b, { resamples: 300 }).interval;
    return {
      id: `native/rtt/${t}/256`,
      scenario: "rtt",
      transport: t,
      label: "GET 256 B, warm connection",
      sizeBytes: 256,
      estimate: e,
      samples: { count: flat.length, complete: true, samples: flat, histogram: "" },
      errors: 0,
      rounds: { counts: b.map((r) => r.length), medians, cv: cv(medians) },
    };
  });
  const ratios = pairedRatios(rows, [], { resamples: 300 });
  return {
    schema: SCHEMA_VERSION,
    startedAt: "2026-12-01T00:00:00Z",
    durationMs: 1,
    config: {
      scenario: "rtt",
      transports: ["h2c", "h2-tls", "h3"],
      sizes: [256],
      warmupMs: 0,
      sampleMs: 0,
      quick: false,
      serverMode: "process",
      delayMs: 0,
      schedule: "interleaved",
    },
    environment: {} as BenchRun["environment"],
    floors: { rows: [] },
    rows,
    notes: [],
    rounds: {
      rounds,
      blockMs: 30,
      warmupRounds: 0,
      seed,
      order: [],
      roundMs: [],
      machine: [],
      ratios,
      noise: assessNoise({ machine: [], rows, floors: [], ratios, cores: 2 }),
    },
  };
}

Deno.test("comparing two runs of the same code reports no regression, in rows or ratios", () => {
  for (const seed of [1, 11, 21]) {
    const cmp = compareRuns(syntheticRun(seed, 1), syntheticRun(seed + 1, 1));
    assert.equal(cmp.method, "rounds");
    for (const r of [...cmp.rows, ...cmp.ratios]) {
      assert.ok(["within noise", "no change"].includes(r.verdict), `${r.id}: ${r.verdict}`);
    }
    assert.equal(cmp.ratios.length, 2);
    assert.match(renderComparison(cmp), /rounds resampled on their own/);
  }
});

Deno.test("a machine 5 % slower in run B moves the rows but not the ratios; repeats' spread covers the rows", () => {
  const a = syntheticRun(1, 1);
  const b = syntheticRun(2, 1.05);
  const cmp = compareRuns(a, b);
  for (const r of cmp.ratios) {
    assert.ok(["within noise", "no change"].includes(r.verdict), `${r.id}: ${r.verdict}`);
  }
  // Absolute times did move: a single run cannot tell the machine from the code.
  assert.ok(cmp.rows.some((r) => r.verdict === "regressed"));
  a.repeats = {
    runs: [],
    spread: [{ id: "h2-tls/h2c/256", label: "", mean: 1.1, min: 1, max: 1.2, maxDeviation: 0.1 }],
  };
  for (const r of compareRuns(a, b).rows) {
    assert.ok(["within noise", "no change"].includes(r.verdict), `${r.id}: ${r.verdict}`);
  }
});

Deno.test("comparing runs in rounds flags h3 getting 25 % dearer, in its row and its ratio", () => {
  const a = syntheticRun(3, 1);
  const b = syntheticRun(4, 1, 1.3 * 1.25);
  const cmp = compareRuns(a, b);
  const h3 = cmp.rows.find((r) => r.transport === "h3")!;
  assert.equal(h3.verdict, "regressed");
  assert.ok(h3.changeCi!.lower > 0.1 && h3.changeCi!.upper < 0.4, JSON.stringify(h3.changeCi));
  const ratio = cmp.ratios.find((r) => r.id === "h3/h2-tls/256")!;
  assert.equal(ratio.verdict, "regressed");
  assert.ok(Math.abs(ratio.change - 0.25) < 0.06, String(ratio.change));
  const tls = cmp.ratios.find((r) => r.id === "h2-tls/h2c/256")!;
  assert.notEqual(tls.verdict, "regressed");
});

Deno.test("the spread of repeated runs raises the comparison's noise threshold", () => {
  const a = syntheticRun(5, 1);
  const b = syntheticRun(6, 1);
  a.repeats = {
    runs: [],
    spread: [{
      id: "h3/h2-tls/256",
      label: "h3 ÷ h2-tls",
      mean: 1.3,
      min: 1.2,
      max: 1.4,
      maxDeviation: 0.08,
    }],
  };
  assert.equal(compareRuns(a, b, { noiseThreshold: 0.02 }).noiseThreshold, 0.08);
  assert.equal(compareRuns(a, b, { noiseThreshold: 0.1 }).noiseThreshold, 0.1);
});
