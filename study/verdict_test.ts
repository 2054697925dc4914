import assert from "node:assert/strict";
import { logNormal } from "./_test_flows.ts";
import { studyVerdict } from "./verdict.ts";
import { DEFAULT_RULE, ruleDesign } from "./verdict_rule.ts";
import { verdictSection } from "./verdict_section.ts";
import { gridHtml, gridTable, verdictGrid } from "./verdict_grid.ts";
import { verdictTable } from "./verdict_table.ts";
import { compareQuantiles, createRng, estimate, shuffled } from "../bench/stats/mod.ts";
import type { BenchRun, ResultRow } from "../bench/record/mod.ts";

/**
 * Samples spread evenly over [lo, hi], in a seeded random order: flows complete in no order of
 * their times, so no burst of slow ones widens the intervals.
 */
function spread(lo: number, hi: number, n = 600): number[] {
  return shuffled(
    Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1)),
    createRng(n),
  );
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
  assert.equal(byLink.wan.decidedAt, 600);
  assert.match(
    v.summary,
    /material advantage in 1 of the 2 decided cells \(registration on wan at 8 UEs\); of the other cells 1 without data for a side/,
  );
  assert.equal(DEFAULT_RULE.minReduction, 0.2);
});

Deno.test("studyVerdict says HTTP/2 stands only when every cell is decided and none is material", () => {
  const v = studyVerdict(run([
    row("h2c", "metro", spread(100, 200)),
    row("h3", "metro", spread(100, 200)),
  ]));
  assert.equal(v.material, 0);
  assert.match(v.summary, /no material advantage in any of the 1 decided cells\. On this evidence/);
});

Deno.test("studyVerdict gives no verdict when no cell has both sides", () => {
  const v = studyVerdict(
    run([row("h2c", "wan", spread(100, 200)), row("h2-tls", "lan", spread(1, 2))]),
  );
  assert.equal(v.cells.length, 2);
  assert.ok(v.cells.every((c) => c.status === "no-data"));
  assert.match(v.summary, /^Inconclusive: none of the 2 cells could be decided \(2 without data/);
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
  // One stack alone: its cells do not name it.
  const one = studyVerdict(run([native("h2c", spread(100, 200)), native("h3", spread(50, 100))]));
  assert.deepEqual(one.cells.map((c) => c.stack), [undefined]);
  assert.doesNotMatch(one.summary, /native/);
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
  assert.equal(v.counts.notValid, 2);
  assert.match(
    v.summary,
    /material advantage in 1 of the 1 decided cells \(registration on lan at 8 UEs\); of the other cells 2 not valid \(server saturated in 1, schedule slipped in 1\)/,
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

Deno.test("a cell with too few flows for a look is undecided, never a no", () => {
  const v = studyVerdict(run([
    row("h2c", "wan", spread(100, 300, 100)),
    row("h3", "wan", spread(50, 100, 100)),
  ]));
  const c = v.cells[0];
  // No side can bound its p99 from above: HTTP/3 could be any amount slower.
  assert.equal(c.reductionCi!.lower, -Infinity);
  assert.equal(c.status, "undecided");
  assert.equal(c.flowsToDecide, 600);
  assert.match(
    v.summary,
    /^Inconclusive: none of the 1 cells could be decided \(1 undecided \(about 500 more flows per side would decide it\)\)/,
  );
});

Deno.test("the headline counts decided, undecided and invalid cells apart, and a quick run says inconclusive", () => {
  const rows = [
    // lan: decided, not material (equal).
    row("h2c", "lan", spread(100, 200)),
    row("h3", "lan", spread(100, 200)),
    // metro: decided, material.
    row("h2c", "metro", spread(100, 300)),
    row("h3", "metro", spread(50, 100)),
    // wan: h3 about 20 % lower with wide tails: undecided at 600 flows.
    row("h2c", "wan", [...spread(100, 200, 590), ...spread(400, 1000, 10)]),
    row("h3", "wan", [...spread(80, 160, 590), ...spread(320, 800, 10)]),
    // lossy: the client saturated.
    row("h2c", "lossy", spread(100, 300), 0, { ...QUIET, "cpu:client": 0.97 }),
    row("h3", "lossy", spread(50, 100), 0, QUIET),
  ];
  const v = studyVerdict(run(rows));
  const byLink = Object.fromEntries(v.cells.map((c) => [c.link, c.status]));
  assert.deepEqual(byLink, {
    lan: "not-material",
    metro: "material",
    wan: "undecided",
    lossy: "not-valid",
  });
  assert.deepEqual(v.counts, {
    cells: 4,
    material: 1,
    notMaterial: 1,
    undecided: 1,
    notValid: 1,
    noData: 0,
  });
  assert.match(
    v.summary,
    /^HTTP\/3 has a material advantage in 1 of the 2 decided cells \(registration on metro at 8 UEs\); of the other cells 1 undecided \(about [\d,]+ more flows per side would decide it\), 1 not valid \(client saturated in 1\)\./,
  );
  assert.doesNotMatch(v.summary, /valid cells/);
  const quick = studyVerdict({ ...run(rows), config: { quick: true } } as unknown as BenchRun);
  assert.match(
    quick.summary,
    /^Inconclusive \(a quick run, \d of 4 cells undecided or not valid\)/,
  );
  // A quick run whose cells all have too few flows says so first.
  const few = studyVerdict({
    ...run([row("h2c", "wan", spread(100, 300, 200)), row("h3", "wan", spread(50, 100, 200))]),
    config: { quick: true },
  } as unknown as BenchRun);
  assert.match(few.summary, /^Inconclusive: none of the 1 cells could be decided/);
  assert.doesNotMatch(few.summary, /HTTP\/2 .*stands/);
});

Deno.test("a study is judged at the looks its record states (a quick study's single look)", () => {
  const rows = [row("h2c", "wan", spread(100, 300, 450)), row("h3", "wan", spread(50, 100, 450))];
  const study = (looks: number[]) =>
    ({
      ...run(rows),
      config: { quick: true, flows: ["registration"], concurrency: [8] },
      study: {
        links: [{ spec: "wan" }],
        rule: { ...DEFAULT_RULE, looks, minSamples: 435 },
      },
    }) as unknown as BenchRun;
  assert.equal(studyVerdict(study([450])).cells[0].status, "material");
  assert.equal(studyVerdict(study([450])).cells[0].decidedAt, 450);
  // The full design's first look (600) is out of reach of 450 flows.
  assert.equal(studyVerdict(study([600, 1000, 1600, 2400])).cells[0].status, "undecided");
});

Deno.test("a study's warm-GET cells are judged at their stream's looks, journeys at theirs", () => {
  const warm = (transport: string, samples: number[]) => ({
    ...row(transport, "wan", samples),
    id: `flows/${transport}/warm-get/8`,
    flow: "warm-get",
  });
  const rows = [
    warm("h2c", spread(100, 300, 2000)),
    warm("h3", spread(50, 100, 2000)),
    row("h2c", "wan", spread(100, 300, 2000)),
    row("h3", "wan", spread(50, 100, 2000)),
  ];
  const study = (rule: typeof DEFAULT_RULE) =>
    ({
      ...run(rows),
      config: { flows: ["journey", "warm-get"], concurrency: [8] },
      study: { links: [{ spec: "wan" }], rule },
    }) as unknown as BenchRun;
  const cellOf = (v: ReturnType<typeof studyVerdict>, flow: string) =>
    v.cells.find((c) => c.flow === flow)!;
  // The rule's warm-GET factor (8): its first look is at 4,800 flows, out of reach of 2,000, so
  // the cell, ended, takes that look on the flows it has; the journey decides at a planned look.
  const now = studyVerdict(study(DEFAULT_RULE));
  assert.deepEqual(ruleDesign(DEFAULT_RULE, "warm-get").looks, [4800, 9600, 19200, 38400]);
  assert.equal(cellOf(now, "warm-get").status, "material");
  assert.equal(cellOf(now, "warm-get").decidedAt, 2000);
  const journey = cellOf(now, "registration");
  assert.equal(journey.status, "material");
  assert.ok([600, 1200].includes(journey.decidedAt!), `${journey.decidedAt}`);
  // A record written before the factor judges the warm GET at the journey's looks, as it did.
  const { lookFactors: _, ...before } = DEFAULT_RULE;
  assert.equal(cellOf(studyVerdict(study(before)), "warm-get").decidedAt, journey.decidedAt);
  assert.deepEqual(ruleDesign(before, "warm-get").looks, DEFAULT_RULE.looks);
  // A record of the factor 4 keeps its looks.
  const four = { ...DEFAULT_RULE, lookFactors: { "warm-get": 4 } };
  assert.deepEqual(ruleDesign(four, "warm-get").looks, [2400, 4800, 9600, 19200]);
});

Deno.test("the verdict section says the matrix's time against its budget, and over when it passed it", () => {
  const rows = [row("h2c", "wan", spread(100, 300, 450)), row("h3", "wan", spread(50, 100, 450))];
  const notes = (elapsedMs: number) =>
    verdictSection.render({
      ...run(rows),
      config: { flows: ["registration"], concurrency: [8] },
      study: {
        links: [{ spec: "wan" }],
        rule: { ...DEFAULT_RULE },
        budgetMs: 900_000,
        elapsedMs,
        samples: 2400,
      },
    } as unknown as BenchRun)?.notes ?? [];
  assert.ok(
    notes(880_200).includes(
      "The matrix took 880 s of a 900 s budget; a cell took at most 2400 flows per side.",
    ),
    notes(880_200).join("\n"),
  );
  assert.ok(
    notes(931_000).includes(
      "The matrix took 931 s, over its 900 s budget; a cell took at most 2400 flows per side.",
    ),
    notes(931_000).join("\n"),
  );
});

Deno.test("a decision at the threshold is marked in the headline, the grid and the table; clear ones are not", () => {
  const v = studyVerdict(run([
    // wan: h3's p99 about 20 % lower: decided, the label resting on the estimate's side of 20 %.
    row("h2c", "wan", logNormal(2, 4800, 100)),
    row("h3", "wan", logNormal(102, 4800, 78)),
    // lossy: half the p99: material, clear of the threshold.
    row("h2c", "lossy", logNormal(2, 4800, 100)),
    row("h3", "lossy", logNormal(102, 4800, 50)),
    // metro: equal p99s: no, clear of it.
    row("h2c", "metro", logNormal(1, 4800, 100)),
    row("h3", "metro", logNormal(101, 4800, 100)),
  ]));
  const by = Object.fromEntries(v.cells.map((c) => [c.link, c]));
  assert.equal(by.wan.status, "material");
  assert.equal(by.wan.atThreshold, true);
  assert.ok(by.wan.flipChance! >= 0.2 && by.wan.flipChance! <= 0.5, `${by.wan.flipChance}`);
  assert.equal(by.lossy.status, "material");
  assert.equal(by.lossy.atThreshold, undefined);
  assert.ok(by.lossy.flipChance! < 0.05, `${by.lossy.flipChance}`);
  assert.equal(by.metro.status, "not-material");
  assert.equal(by.metro.atThreshold, undefined);
  assert.match(
    v.summary,
    /material advantage in 2 of the 3 decided cells \([^)]*\); 1 of the 3 decided sit at the 20 % threshold \(≈/,
  );
  const grid = gridTable(verdictGrid(v, ["metro", "wan", "lossy"]));
  assert.deepEqual(grid.body.map((r) => r[2].replace(/^\S+ % /, "")), [
    "no",
    "MATERIAL≈",
    "MATERIAL",
  ]);
  const html = gridHtml(verdictGrid(v));
  assert.equal(html.match(/data-threshold="reached"/g)?.length, 1);
  assert.match(html, /material · at the threshold/);
  const table = verdictTable(v);
  const wanRow = table.body.find((r) => r[0] === "wan")!;
  assert.match(
    wanRow.at(-1)!,
    /^MATERIAL, at the threshold \(another run would give the other label about \d+ % of the time\)/,
  );
  // Without the threshold cell the headline has nothing to mark.
  const clear = studyVerdict(run([
    row("h2c", "lossy", logNormal(2, 4800, 100)),
    row("h3", "lossy", logNormal(102, 4800, 50)),
  ]));
  assert.doesNotMatch(clear.summary, /threshold/);
});

Deno.test("a cell whose record kept a reservoir of its flows, not every one in order, is not valid and says why", () => {
  const h2 = row("h2c", "lossy", spread(100, 300, 2000));
  const h3 = row("h3", "lossy", spread(50, 100, 2000));
  // The same flows, told apart only by whether the record kept them all in order.
  const ordered = studyVerdict(run([h2, h3])).cells[0];
  assert.equal(ordered.status, "material");
  const reservoir = { ...h3, samples: { ...h3.samples, count: 150_000, complete: false } };
  const v = studyVerdict(run([h2, reservoir]));
  const cell = v.cells[0];
  assert.equal(cell.status, "not-valid");
  assert.equal(cell.decidedAt, undefined);
  assert.match(
    cell.reason,
    /^not valid: the record kept a sample of its flows, 2000 of 150000 \(h3\), not every flow in completion order/,
  );
  assert.equal(v.counts.notValid, 1);
  assert.match(v.summary, /flows not kept in order in 1/);
});
