import assert from "node:assert/strict";
import { logNormal } from "./_test_flows.ts";
import { studyVerdict } from "./verdict.ts";
import { renderVerdictAgreement, verdictAgreement } from "./verdict_compare.ts";
import { estimate } from "../bench/stats/mod.ts";
import type { BenchRun, ResultRow } from "../bench/record/mod.ts";

function row(transport: string, link: string, samples: number[]): ResultRow {
  return {
    id: `flows/${transport}/registration/8/${link}`,
    scenario: "flows",
    transport,
    label: "x",
    concurrency: 8,
    estimate: estimate(samples),
    samples: { count: samples.length, complete: true, samples, histogram: "" },
    errors: 0,
    extra: { failed: 0 },
    flow: "registration",
    link,
  } as ResultRow;
}

/** One run of three cells: wan with h3's p99 20 % lower, lossy half, metro equal; `seed` varies the flows. */
function run(seed: number, wanSeed: number): BenchRun {
  const rows = [
    row("h2c", "wan", logNormal(wanSeed, 4800, 100)),
    row("h3", "wan", logNormal(wanSeed + 100, 4800, 80)),
    row("h2c", "lossy", logNormal(seed, 4800, 100)),
    row("h3", "lossy", logNormal(seed + 100, 4800, 50)),
    row("h2c", "metro", logNormal(seed + 200, 4800, 100)),
    row("h3", "metro", logNormal(seed + 300, 4800, 100)),
  ];
  return { rows, config: {}, floors: { rows: [] }, notes: [] } as unknown as BenchRun;
}

Deno.test("two runs' verdicts compare cell by cell: labels that differ at the threshold are told apart from clear ones", () => {
  // The wan cell's true change is 20 %: one run calls it material, the other no, both marked ≈.
  const a = studyVerdict(run(2, 3)), b = studyVerdict(run(5, 2));
  const wan = (v: typeof a) => v.cells.find((c) => c.link === "wan")!;
  assert.equal(wan(a).status, "material");
  assert.equal(wan(b).status, "not-material");
  assert.ok(wan(a).atThreshold && wan(b).atThreshold);
  const x = verdictAgreement(a, b);
  assert.deepEqual(
    { decided: x.decided, agree: x.agree, clear: x.clear, clearAgree: x.clearAgree },
    { decided: 3, agree: 2, clear: 2, clearAgree: 2 },
  );
  assert.equal(x.differ.length, 1);
  assert.equal(x.differ[0].cell, "registration on wan at 8 UEs");
  assert.match(x.differ[0].a, /MATERIAL≈$/);
  assert.match(x.differ[0].b, /no≈$/);
  const text = renderVerdictAgreement(x);
  assert.match(text, /decided 3 cells in common and give 2 the same label \(67 %\)/);
  assert.match(text, /of the 2 decided clear of the threshold in both, 2 agree \(100 %\)/);
  assert.match(text, /differ in 1, each at the threshold/);
  // The same run against itself agrees everywhere; a run missing a cell counts it as one-sided.
  const self = verdictAgreement(a, a);
  assert.equal(self.agree, 3);
  assert.equal(self.differ.length, 0);
  const fewer = studyVerdict({
    ...run(2, 3),
    rows: run(2, 3).rows.filter((r) => r.link !== "metro"),
  } as BenchRun);
  const y = verdictAgreement(a, fewer);
  assert.equal(y.decided, 2);
  assert.equal(y.onlyA, 1);
});
