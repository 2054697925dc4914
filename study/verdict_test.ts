import assert from "node:assert/strict";
import { DEFAULT_RULE, judgeCell, sideLevel, studyVerdict } from "./verdict.ts";
import { quantileRanks } from "./quantile_interval.ts";
import { compareQuantiles, estimate } from "../bench/stats/mod.ts";
import type { BenchRun, ResultRow } from "../bench/record/mod.ts";

const base = {
  h2P99: 100,
  h3FailShare: 0,
  h2FailShare: 0,
  n: DEFAULT_RULE.minSamples,
};

Deno.test("judgeCell: a p99 exactly 20 % lower with an interval below zero is material", () => {
  const d = judgeCell({ ...base, h3P99: 80, diffCi: { lower: -30, upper: -1 } });
  assert.equal(d.status, "material");
  assert.ok(Math.abs(d.reduction! - 0.2) < 1e-12);
});

Deno.test("judgeCell: 19.9 % lower is not material even with a clear interval", () => {
  const d = judgeCell({ ...base, h3P99: 80.1, diffCi: { lower: -30, upper: -1 } });
  assert.equal(d.status, "not-material");
  assert.match(d.reason, /only 19\.9 % lower \(needs 20\.0 %\)/);
});

Deno.test("judgeCell: an interval touching or straddling zero is not material", () => {
  for (const upper of [0, 5]) {
    const d = judgeCell({ ...base, h3P99: 50, diffCi: { lower: -80, upper } });
    assert.equal(d.status, "not-material", `upper ${upper}`);
    assert.match(d.reason, /includes zero/);
  }
  const justBelow = judgeCell({ ...base, h3P99: 50, diffCi: { lower: -80, upper: -1e-9 } });
  assert.equal(justBelow.status, "material");
});

Deno.test("judgeCell: HTTP/3 slower is never material, and losing more flows voids an advantage", () => {
  const slower = judgeCell({ ...base, h3P99: 150, diffCi: { lower: 20, upper: 80 } });
  assert.equal(slower.status, "not-material");
  assert.match(slower.reason, /50\.0 % higher/);
  const lossier = judgeCell({
    ...base,
    h3P99: 50,
    diffCi: { lower: -60, upper: -40 },
    h3FailShare: 0.02,
    h2FailShare: 0.01,
  });
  assert.equal(lossier.status, "not-material");
  assert.match(lossier.reason, /lost more flows/);
  const equalLoss = judgeCell({
    ...base,
    h3P99: 50,
    diffCi: { lower: -60, upper: -40 },
    h3FailShare: 0.01,
    h2FailShare: 0.01,
  });
  assert.equal(equalLoss.status, "material");
});

Deno.test("judgeCell: the fewest flows are those whose p99 interval has an upper end", () => {
  const min = DEFAULT_RULE.minSamples;
  // The rule's minimum and the interval agree: one flow fewer and the interval is unbounded above.
  assert.ok(quantileRanks(min, 0.99, sideLevel(DEFAULT_RULE.level)).upper <= min);
  assert.equal(quantileRanks(min - 1, 0.99, sideLevel(DEFAULT_RULE.level)).upper, min);
  const clear = { ...base, h3P99: 50, diffCi: { lower: -60, upper: -40 } };
  assert.equal(judgeCell({ ...clear, n: min }).status, "material");
  const few = judgeCell({ ...clear, n: 100 });
  assert.equal(few.status, "not-material");
  assert.match(few.reason, new RegExp(`too few flows for a p99 \\(100 < ${min}: .*2nd largest`));
});

Deno.test("judgeCell: a cell that is not valid is never material, however clear", () => {
  const d = judgeCell({
    ...base,
    h3P99: 50,
    diffCi: { lower: -60, upper: -40 },
    invalid: "not valid: server at 0.97 of a core (h3)",
  });
  assert.equal(d.status, "not-valid");
  assert.equal(d.reason, "not valid: server at 0.97 of a core (h3)");
});

Deno.test("judgeCell: a cell without one side is kept as no-data", () => {
  const d = judgeCell({ h2P99: 100, h3FailShare: 0, h2FailShare: 0, n: 0 });
  assert.equal(d.status, "no-data");
  assert.match(d.reason, /HTTP\/3 has no flow times/);
});

/** Samples spread evenly over [lo, hi]. */
function spread(lo: number, hi: number, n = 500): number[] {
  return Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
}

function row(
  transport: string,
  link: string,
  samples: number[],
  failed = 0,
  measured: Record<string, number> = {},
): ResultRow {
  return {
    id: `flows/${transport}/registration/8`,
    scenario: "flows",
    transport,
    label: "x",
    concurrency: 8,
    estimate: estimate(samples),
    samples: { count: samples.length, complete: true, samples, histogram: "" },
    errors: failed,
    extra: { failed, ...measured },
    flow: "registration",
    link,
  };
}

function run(rows: ResultRow[]): BenchRun {
  return { rows, config: {}, floors: { rows: [] }, notes: [] } as unknown as BenchRun;
}

Deno.test("compareQuantiles: the p99 difference interval brackets the true difference", () => {
  const c = compareQuantiles(spread(100, 200), spread(50, 100), 0.99);
  assert.ok(Math.abs(c.difference - (c.candidate - c.baseline)) < 1e-9);
  assert.ok(c.differenceCi.lower < c.difference && c.difference < c.differenceCi.upper);
  assert.ok(c.differenceCi.upper < 0);
});

Deno.test("studyVerdict compares HTTP/3 with the better HTTP/2 variant in every cell", () => {
  const v = studyVerdict(run([
    // wan: h2-tls is the better h2 (p99 ≈ 150), h3 ≈ 99: material.
    row("h2c", "wan", spread(100, 300)),
    row("h2-tls", "wan", spread(100, 150)),
    row("h3", "wan", spread(50, 100)),
    // lan: h3 ≈ 10 % better than h2c only: not material.
    row("h2c", "lan", spread(100, 200)),
    row("h3", "lan", spread(90, 180)),
    // lossy: h3 alone (h2 rows lost): no-data, still listed.
    row("h3", "lossy", spread(50, 100)),
  ]));
  assert.equal(v.cells.length, 3);
  const byLink = Object.fromEntries(v.cells.map((c) => [c.link, c]));
  assert.equal(byLink.wan.bestH2, "h2-tls");
  assert.equal(byLink.wan.status, "material");
  assert.deepEqual(byLink.wan.transports.map((t) => t.transport), ["h2c", "h2-tls", "h3"]);
  assert.equal(byLink.lan.status, "not-material");
  assert.equal(byLink.lossy.status, "no-data");
  assert.equal(v.material, 1);
  assert.match(
    v.summary,
    /material advantage in 1 of 3 valid cells \(registration on wan at 8 UEs\)/,
  );
  assert.equal(DEFAULT_RULE.minReduction, 0.2);
});

Deno.test("studyVerdict says HTTP/2 stands when no cell is material", () => {
  const v = studyVerdict(run([
    row("h2c", "metro", spread(100, 200)),
    row("h3", "metro", spread(100, 200)),
  ]));
  assert.equal(v.material, 0);
  assert.match(v.summary, /no material advantage in any of the 1 valid cells/);
});

Deno.test("studyVerdict gives no verdict when no cell has both sides", () => {
  const v = studyVerdict(
    run([row("h2c", "wan", spread(100, 200)), row("h2-tls", "lan", spread(1, 2))]),
  );
  assert.equal(v.cells.length, 2);
  assert.ok(v.cells.every((c) => c.status === "no-data"));
  assert.match(v.summary, /None of the 2 cells has flow times for both HTTP\/3 and HTTP\/2/);
});

Deno.test("studyVerdict never mixes stacks in one cell", () => {
  const native = (t: string, s: number[]): ResultRow => ({ ...row(t, "wan", s), stack: "native" });
  const deno = (t: string, s: number[]): ResultRow => ({ ...row(t, "wan", s), stack: "deno" });
  const v = studyVerdict(run([
    native("h2c", spread(100, 200)),
    native("h3", spread(50, 100)),
    deno("h2c", spread(10, 20)),
  ]));
  assert.equal(v.cells.length, 2);
  const n = v.cells.find((c) => c.stack === "native")!;
  assert.equal(n.status, "material");
  assert.equal(n.bestH2, "h2c");
  assert.equal(v.cells.find((c) => c.stack === "deno")!.status, "no-data");
});

Deno.test("two stack families agree where both judged a cell the same way and say where not", async () => {
  const { familyAgreement } = await import("./verdict.ts");
  const cell = (stack: string, flow: string, status: "material" | "not-material" | "no-data") =>
    ({
      stack,
      link: "wan",
      flow,
      ues: 16,
      status,
      reason: "",
      transports: [],
    }) as unknown as Parameters<typeof familyAgreement>[0][number];
  const f = familyAgreement([
    cell("native", "registration", "not-material"),
    cell("deno", "registration", "not-material"),
    cell("native", "pdu-session", "material"),
    cell("deno", "pdu-session", "not-material"),
    cell("native", "warm-get", "not-material"),
    cell("deno", "warm-get", "no-data"),
  ]);
  assert.deepEqual(f, {
    stacks: ["native", "deno"],
    judged: 2,
    agree: 1,
    disagree: ["pdu-session on wan at 16 UEs"],
  });
  assert.equal(familyAgreement([cell("native", "registration", "material")]), undefined);
});

const QUIET = { "cpu:client": 0.4, "cpu:server": 0.3, "cpu:relay": 0.2, onTimeShare: 1 };

Deno.test("a study cell with a saturated server is marked not valid and counted apart", () => {
  const v = studyVerdict(run([
    // wan: a clear HTTP/3 advantage, but the server was busy 0.97 of a core during h3's blocks.
    row("h2c", "wan", spread(100, 300), 0, QUIET),
    row("h3", "wan", spread(50, 100), 0, { ...QUIET, "cpu:server": 0.97 }),
    // lan: the same figures on a quiet machine stay valid and material.
    row("h2c", "lan", spread(100, 300), 0, QUIET),
    row("h3", "lan", spread(50, 100), 0, QUIET),
    // metro: the client fell behind its arrivals.
    row("h2c", "metro", spread(100, 300), 0, QUIET),
    row("h3", "metro", spread(50, 100), 0, { ...QUIET, onTimeShare: 0.8 }),
  ]));
  const byLink = Object.fromEntries(v.cells.map((c) => [c.link, c]));
  assert.equal(byLink.wan.status, "not-valid");
  assert.equal(byLink.wan.reason, "not valid: server at 0.97 of a core (h3)");
  assert.equal(byLink.lan.status, "material");
  assert.equal(byLink.metro.status, "not-valid");
  assert.match(byLink.metro.reason, /schedule slipped: 80\.0 % of arrivals within 2 ms \(h3\)/);
  assert.equal(v.material, 1);
  assert.deepEqual(v.notValid, [
    "registration on wan at 8 UEs: server at 0.97 of a core (h3)",
    "registration on metro at 8 UEs: schedule slipped: 80.0 % of arrivals within 2 ms (h3)",
  ]);
  assert.match(v.summary, /material advantage in 1 of 1 valid cells/);
  assert.match(
    v.summary,
    /2 of 3 cells were not valid and are not counted \(server saturated in 1, schedule slipped in 1\)/,
  );
});

Deno.test("a cell just under the saturation threshold stays valid", () => {
  const v = studyVerdict(run([
    row("h2c", "wan", spread(100, 300), 0, { ...QUIET, "cpu:relay": 0.89 }),
    row("h3", "wan", spread(50, 100), 0, { ...QUIET, "cpu:client": 0.89, onTimeShare: 0.95 }),
  ]));
  assert.equal(v.cells[0].status, "material");
  assert.deepEqual(v.notValid, []);
  assert.doesNotMatch(v.summary, /not valid/);
});

Deno.test("the p99 difference interval is unbounded when the flows cannot bound a p99", () => {
  const v = studyVerdict(run([
    row("h2c", "wan", spread(100, 300, 100)),
    row("h3", "wan", spread(50, 100, 100)),
  ]));
  const c = v.cells[0];
  assert.equal(c.diffCi!.upper, Infinity);
  assert.equal(c.status, "not-material");
  assert.match(c.reason, /too few flows/);
});
