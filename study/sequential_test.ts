import assert from "node:assert/strict";
import {
  checkDesign,
  decideLook,
  DEFAULT_DESIGN,
  fewestFlowsToDecide,
  flowsDesign,
  flowsThatWouldDecide,
  judgeSequential,
  lookAt,
  lookLevel,
  powerFromFlows,
  scaledDesign,
  type SequentialDesign,
  streamLookFactor,
  streamPlanFactor,
  THRESHOLD_FLIP_CHANCE,
} from "./sequential.ts";
import { createRng } from "../bench/stats/mod.ts";

/** Standard normal draws (Box–Muller) from a seeded source. */
function normal(rng: () => number): number {
  let u = 0;
  while (u === 0) u = rng();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
}

/** n log-normal flow times (median `scale` ms, shape σ): p99 = scale · e^(2.326 σ). */
function flowTimes(rng: () => number, n: number, scale: number, sigma: number): number[] {
  return Array.from({ length: n }, () => scale * Math.exp(sigma * normal(rng)));
}

/** Runs the design on synthetic cells: h3's flow times are h2's scaled by `ratio`. */
function trials(
  design: SequentialDesign,
  ratio: number,
  sigma: number,
  count: number,
  seed: number,
) {
  const rng = createRng(seed);
  const n = design.looks.at(-1)!;
  const out = {
    material: 0,
    "not-material": 0,
    undecided: 0,
    fewest: Infinity,
    /** Cells decided at each look. */
    at: {} as Record<number, number>,
  };
  for (let t = 0; t < count; t++) {
    const h2c = flowTimes(rng, n, 100, sigma);
    const h2tls = flowTimes(rng, n, 100, sigma);
    const h3 = flowTimes(rng, n, 100 * ratio, sigma);
    const j = judgeSequential(h3, [
      { transport: "h2c", samples: h2c },
      { transport: "h2-tls", samples: h2tls },
    ], { design })!;
    out[j.status]++;
    if (j.decidedAt !== undefined) {
      out.fewest = Math.min(out.fewest, j.decidedAt);
      out.at[j.decidedAt] = (out.at[j.decidedAt] ?? 0) + 1;
    }
  }
  return out;
}

Deno.test("with equal p99s the design calls a cell material in at most its stated error rate", () => {
  const alpha = 1 - DEFAULT_DESIGN.level;
  for (const sigma of [0.2, 0.5, 1]) {
    const r = trials(DEFAULT_DESIGN, 1, sigma, 300, 11 + sigma * 10);
    assert.ok(r.material / 300 <= alpha, `σ ${sigma}: ${r.material} of 300 material`);
    // The same flows, judged with a design that ignores the looks' shared error, would not be safer.
    assert.ok(r.fewest >= fewestFlowsToDecide(DEFAULT_DESIGN), `decided at ${r.fewest}`);
  }
  // Equal p99s with a narrow tail are decided: not material.
  const narrow = trials(DEFAULT_DESIGN, 1, 0.2, 100, 5);
  assert.ok(narrow["not-material"] >= 90, JSON.stringify(narrow));
});

Deno.test("a true 30 % p99 reduction is called material in at least 80 % of cells at the planned sizes", () => {
  // Log-normal σ = 0.5: p99 3.2× the median, a wider tail than the study's wan flows show.
  const r = trials(DEFAULT_DESIGN, 0.7, 0.5, 200, 21);
  assert.ok(r.material / 200 >= 0.8, JSON.stringify(r));
  // A powered look calls it "not material" at most 1 − power of the time.
  assert.ok(r["not-material"] / 200 <= 1 - DEFAULT_DESIGN.power!, JSON.stringify(r));
  assert.ok(r.fewest >= DEFAULT_DESIGN.looks[0]);
});

Deno.test("a cell whose true change sits near the threshold is decided, not left open", () => {
  // An 18 % lower p99: "not material" by the interval's best end would need millions of flows;
  // a look with the power to catch a 30 % reduction decides it.
  const r = trials(DEFAULT_DESIGN, 0.82, 0.5, 100, 31);
  assert.ok(r.undecided <= 10, JSON.stringify(r));
  assert.ok(r["not-material"] > r.material, JSON.stringify(r));
  // Without the power rule the same cells stay open.
  const strict = trials({ ...DEFAULT_DESIGN, power: undefined }, 0.82, 0.5, 100, 31);
  assert.ok(strict.undecided >= 50, JSON.stringify(strict));
});

Deno.test("the design never decides a cell on fewer flows than a look allows", () => {
  // Four looks share 5 % at each end: the first three hold their intervals at 99.5 % (0.25 % at
  // each end, 597 flows for an upper end), the last what they leave at each end, 4.25 %: 91.5 %
  // two-sided (315 flows).
  const min = fewestFlowsToDecide(DEFAULT_DESIGN, 0);
  assert.deepEqual([0, 1, 2, 3].map((i) => lookLevel(DEFAULT_DESIGN, i).toFixed(6)), [
    "0.995000",
    "0.995000",
    "0.995000",
    "0.915000",
  ]);
  assert.equal(min, 597);
  assert.equal(fewestFlowsToDecide(DEFAULT_DESIGN), 315);
  // Split between the ends (records made so), the last look held 96.5 % (403 flows).
  const split = { ...DEFAULT_DESIGN, oneSided: undefined };
  assert.equal(lookLevel(split, 0), 0.995);
  assert.ok(Math.abs(lookLevel(split) - 0.965) < 1e-12);
  assert.equal(fewestFlowsToDecide(split), 403);
  assert.ok(DEFAULT_DESIGN.looks[0] >= min);
  const rng = createRng(3);
  // HTTP/3 ten times faster, but one flow short of what each look's level needs: undecided,
  // whatever the data.
  for (const index of [0, 3]) {
    const need = fewestFlowsToDecide(DEFAULT_DESIGN, index);
    const few = lookAt(flowTimes(rng, need - 1, 10, 0.1), flowTimes(rng, need - 1, 100, 0.1), {
      index,
    });
    assert.equal(few.status, "undecided");
    assert.equal(few.h3Ci.upper, Infinity);
    const enough = lookAt(flowTimes(rng, need, 10, 0.1), flowTimes(rng, need, 100, 0.1), {
      index,
    });
    assert.equal(enough.status, "material");
  }
  // 599 flows per side: short of the first look, so not judged even though a look could decide.
  const h3 = flowTimes(rng, 599, 10, 0.1), h2 = flowTimes(rng, 599, 100, 0.1);
  // (Flows taken as independent: the first look's 600 leave no room for a design effect.)
  const design = { ...DEFAULT_DESIGN, clusterFlows: undefined };
  const j = judgeSequential(h3, [{ transport: "h2c", samples: h2 }], { design })!;
  assert.equal(j.status, "undecided");
  assert.equal(j.looksTaken, 0);
  assert.equal(j.flowsToDecide, 600);
  // At the first look it is decided, on exactly that look's flows.
  const k = judgeSequential([...h3, 10], [{ transport: "h2c", samples: [...h2, 100] }], {
    design,
  })!;
  assert.equal(k.status, "material");
  assert.equal(k.decidedAt, 600);
  // A design whose first look comes before the fewest flows is refused, and so is one whose
  // earlier looks leave the last less error than each of them at an end (0.25 % each: 21 looks
  // in 5 %; split between the ends, 11 looks).
  assert.throws(() => checkDesign({ ...DEFAULT_DESIGN, looks: [400, 1000] }), RangeError);
  const doubling = (length: number) => Array.from({ length }, (_, i) => 600 * 2 ** i);
  checkDesign({ ...DEFAULT_DESIGN, looks: doubling(20) });
  assert.throws(() => checkDesign({ ...DEFAULT_DESIGN, looks: doubling(21) }), RangeError);
  checkDesign({ ...split, looks: doubling(10) });
  assert.throws(() => checkDesign({ ...split, looks: doubling(11) }), RangeError);
  // Without an interim level the looks share the error equally, as records before it did.
  const equal = { ...split, interimLevel: undefined };
  assert.ok(Math.abs(lookLevel(equal, 0) - (1 - 0.05 / 4)) < 1e-12);
  assert.equal(fewestFlowsToDecide(equal), 505);
  checkDesign(DEFAULT_DESIGN);
});

Deno.test("a cell that ends between two looks takes its next look on the flows it has, within the error rate", () => {
  const rng = createRng(41);
  const h2Side = (x: number[]) => [{ transport: "h2c", samples: x }];
  let extra = 0, equalMaterial = 0;
  for (let t = 0; t < 200; t++) {
    // Time ran out somewhere between the third look (2,400) and the last (4,800).
    const n = 2401 + Math.floor(rng() * 2398);
    const ratio = t % 2 ? 1 : 0.75;
    const h3 = flowTimes(rng, n, 100 * ratio, 0.5), h2 = flowTimes(rng, n, 100, 0.5);
    const open = judgeSequential(h3, h2Side(h2))!;
    const ended = judgeSequential(h3, h2Side(h2), { ended: true })!;
    if (open.decidedAt !== undefined) {
      // Decided at a planned look: the end changes nothing.
      assert.deepEqual(ended, open);
      continue;
    }
    assert.equal(open.looksTaken, 3);
    const all = lookAt(h3, h2);
    if (all.status === "undecided") {
      assert.equal(ended.status, "undecided");
      continue;
    }
    // Not ended, flows that would decide are no look: undecided, with no chance of a label flip.
    assert.equal(open.status, "undecided");
    assert.equal(open.flipChance, undefined);
    // The look in hand, on all n flows: decided as a look on them decides, never by the power
    // (that is the last planned look's).
    extra++;
    assert.equal(ended.status, all.status);
    assert.equal(ended.decidedAt, n);
    assert.equal(ended.looksTaken, 4);
    assert.doesNotMatch(ended.reason, /would have shown as material/);
    if (ratio === 1 && ended.status === "material") equalMaterial++;
  }
  assert.ok(extra > 0, "some cells were decided by the look in hand");
  assert.ok(equalMaterial / 100 <= 1 - DEFAULT_DESIGN.level, `${equalMaterial} of 100`);
  // No look in hand once every look is taken: a design of one look does not take a second.
  const h3 = flowTimes(rng, 900, 10, 0.1), h2 = flowTimes(rng, 900, 100, 0.1);
  const one = { ...DEFAULT_DESIGN, looks: [600] };
  const past = judgeSequential(h3, h2Side(h2), { design: one, ended: true })!;
  assert.equal(past.decidedAt, 600);
  const slow = flowTimes(rng, 900, 100, 0.1);
  const tie = judgeSequential(slow, h2Side(h2), {
    design: { ...one, powerReduction: undefined },
    ended: true,
  })!;
  assert.notEqual(tie.decidedAt, 900);
  // A record without the rule field keeps its old reading.
  const early = flowTimes(rng, 599, 10, 0.1), early2 = flowTimes(rng, 599, 100, 0.1);
  // (Flows taken as independent: 599 flows bound a p99 only without a design effect above 1.)
  const now = { ...DEFAULT_DESIGN, clusterFlows: undefined };
  const old = { ...now, endLook: undefined };
  assert.equal(
    judgeSequential(early, h2Side(early2), { design: old, ended: true })!.status,
    "undecided",
  );
  assert.equal(
    judgeSequential(early, h2Side(early2), { design: now, ended: true })!.decidedAt,
    599,
  );
});

Deno.test("a look decides material at 20 % with the ratio's interval below 1, not material below 20 % at its best end", () => {
  const f = {
    h3P99: 80,
    h3Ci: { lower: 75, upper: 85, level: 0.99 },
    h2P99: 100,
    h2Ci: { lower: 95, upper: 105, level: 0.99 },
    n: 1000,
  };
  assert.equal(decideLook(f).status, "material");
  // The ends combine in quadrature on the log scale (MOVER): 80 % of 100 with these intervals
  // gives a ratio of at most exp(ln 0.8 + √(ln(85/80)² + ln(100/95)²)) = 0.866.
  assert.ok(
    Math.abs(
      1 - decideLook(f).reductionCi.lower -
        0.8 * Math.exp(Math.hypot(Math.log(85 / 80), Math.log(100 / 95))),
    ) < 1e-12,
  );
  // HTTP/3's upper end far enough out that the ratio's interval reaches 1: undecided.
  const wide = decideLook({ ...f, h3Ci: { ...f.h3Ci, upper: 105 } });
  assert.equal(wide.status, "undecided");
  // Its reason gives the interval as the report's column does: the change of HTTP/3's p99,
  // signed, the lower end first (here from well below zero to above it).
  const said = wide.reason.match(/the change between ([−+])(\d+\.\d) % and ([−+])(\d+\.\d) %/);
  assert.ok(said, wide.reason);
  const [, s1, v1, s2, v2] = said;
  const lo = (s1 === "−" ? -1 : 1) * Number(v1) / 100;
  const hi = (s2 === "−" ? -1 : 1) * Number(v2) / 100;
  assert.ok(lo < 0 && hi > 0, wide.reason);
  assert.ok(Math.abs(lo - -wide.reductionCi.upper) < 0.0005, wide.reason);
  assert.ok(Math.abs(hi - -wide.reductionCi.lower) < 0.0005, wide.reason);
  // A side without an upper end leaves the ratio unbounded above: undecided.
  const open = decideLook({ ...f, h3Ci: { ...f.h3Ci, upper: Infinity } });
  assert.equal(open.status, "undecided");
  assert.equal(open.reductionCi.lower, -Infinity);
  assert.match(open.reason, /^p99 20\.0 % lower, its interval still unbounded/);
  assert.doesNotMatch(open.reason, /999/);
  // Bursts: it says what the flows were worth against what a p99 needs.
  const bursty = decideLook({
    ...f,
    h3Ci: { ...f.h3Ci, upper: Infinity },
    n: 9150,
    designEffect: 37,
  });
  assert.match(
    bursty.reason,
    /unbounded: slow flows came in bursts, so 9150 flows per side were worth about 247 independent ones \(a p99 needs 315\)$/,
  );
  // 20 % lower but HTTP/3 lost more flows: decided, not material.
  const lossier = decideLook({ ...f, h3FailShare: 0.02, h2FailShare: 0.01 });
  assert.equal(lossier.status, "not-material");
  // Even the ratio's lower end, 0.95 · exp(−√(ln(95/90)² + ln(105/100)²)) = 0.88, gives 12 %: not material.
  const small = decideLook({ ...f, h3P99: 95, h3Ci: { lower: 90, upper: 100, level: 0.99 } });
  assert.equal(small.status, "not-material");
  assert.ok(small.reductionCi.upper < 0.2);
  // HTTP/3 slower: not material.
  const slower = decideLook({ ...f, h3P99: 130, h3Ci: { lower: 120, upper: 140, level: 0.99 } });
  assert.equal(slower.status, "not-material");
  assert.match(slower.reason, /30\.0 % higher/);
});

Deno.test("an undecided cell says about how many flows would decide it, and they do", () => {
  const rng = createRng(9);
  // h3 30 % faster with a wide tail: 400 flows per side leave it undecided.
  const h3 = flowTimes(rng, 20_000, 70, 0.8), h2 = flowTimes(rng, 20_000, 100, 0.8);
  const d = lookAt(h3.slice(0, 400), h2.slice(0, 400));
  assert.equal(d.status, "undecided", d.reason);
  assert.ok(d.flowsToDecide! > 400 && Number.isFinite(d.flowsToDecide!), `${d.flowsToDecide}`);
  const more = Math.ceil(d.flowsToDecide! * 1.5);
  const later = lookAt(h3.slice(0, more), h2.slice(0, more));
  assert.equal(later.status, "material", `${more} flows: ${later.reason}`);
});

Deno.test("the flows that would decide an open cell are always more than it has", () => {
  // A tie whose interval of the change reaches just past 20 % at the 2,400 look, taken on the
  // 1,650 flows a cell had when its time ran out: scaled to the last look's level, those flows
  // would have sufficed, but the cell was judged undecided on them, so the estimate is a later look.
  const study = flowsDesign({}, 19200);
  const half = 0.25 / Math.SQRT2;
  const side = { lower: 100 * Math.exp(-half), upper: 100 * Math.exp(half), level: 0.995 };
  const f = { h3P99: 100, h3Ci: side, h2P99: 100, h2Ci: side, n: 1650 };
  const d = decideLook(f, study, 2);
  assert.equal(d.status, "undecided", d.reason);
  assert.equal(d.flowsToDecide, 2400);
});

Deno.test("an estimate of flows past ten times the last look is no estimate; near the threshold the power decides", () => {
  const ci = (p: number, w: number) => ({ lower: p * (1 - w), upper: p * (1 + w), level: 0.99 });
  const at = (h3P99: number, w: number) =>
    flowsThatWouldDecide(
      { h3P99, h3Ci: ci(h3P99, w), h2P99: 100, h2Ci: ci(100, w), n: 600 },
      DEFAULT_DESIGN,
    );
  // 40 % lower: a planned look decides it.
  assert.ok(DEFAULT_DESIGN.looks.includes(at(60, 0.1)), `${at(60, 0.1)}`);
  // Just short of 20 % lower with wide intervals, "not material" by the interval's best end needs
  // millions of flows; the interval narrowing to the powered width needs a few thousand.
  const near = at(80.1, 0.3);
  assert.ok(
    Number.isFinite(near) && near > 600 && near <= 10 * DEFAULT_DESIGN.looks.at(-1)!,
    `${near}`,
  );
  const last = DEFAULT_DESIGN.looks.at(-1)!;
  assert.ok(near >= last, `${near}: the power is judged at the last look`);
  const narrowed = (w: number, n: number) => ({
    h3P99: 80.1,
    h3Ci: ci(80.1, w),
    h2P99: 100,
    h2Ci: ci(100, w),
    n,
  });
  assert.equal(decideLook(narrowed(0.3, 600)).status, "undecided");
  // As narrow at an early look: still open (a "no" there could come before the bursts).
  const narrow = 0.3 * Math.sqrt(600 / near);
  assert.equal(decideLook(narrowed(narrow, 600)).status, "undecided");
  const powered = decideLook(narrowed(narrow, last));
  assert.equal(powered.status, "not-material", powered.reason);
  assert.match(
    powered.reason,
    /a 30 % lower p99 would have shown as material with at least 80 % chance/,
  );
  // Intervals too wide for any run within reach: no estimate.
  assert.equal(at(80.1, 0.99), Infinity);
});

/**
 * Flow times whose slow ones come in bursts, as over one TCP connection a lost segment stalls
 * every flow on it: in completion order, each cluster of 50 flows is stalled with chance
 * `burst`, and then 30 of its flows take `stall` times longer.
 */
function burstyFlowTimes(rng: () => number, n: number, burst: number, stall: number): number[] {
  const out = flowTimes(rng, n, 100, 0.2);
  for (let c = 0; c < n; c += 50) {
    if (rng() < burst) { for (let i = c; i < Math.min(n, c + 30); i++) out[i] *= stall; }
  }
  return out;
}

Deno.test("when slow flows come in bursts, equal p99s are still called material in at most the stated error rate", () => {
  const alpha = 1 - DEFAULT_DESIGN.level;
  const count = 300;
  const run = (design: SequentialDesign) => {
    const rng = createRng(77);
    let material = 0;
    for (let t = 0; t < count; t++) {
      // Both sides from one law: a stalled cluster in 10 % of clusters, its stalled flows 3× slower.
      const j = judgeSequential(burstyFlowTimes(rng, 2400, 0.1, 3), [
        { transport: "h2c", samples: burstyFlowTimes(rng, 2400, 0.1, 3) },
      ], { design })!;
      if (j.status === "material") material++;
    }
    return material;
  };
  const clustered = run(DEFAULT_DESIGN);
  assert.ok(clustered / count <= alpha, `${clustered} of ${count} material`);
  // Taken as independent, the same flows give intervals far too narrow: the bursts decide.
  const independent = run({ ...DEFAULT_DESIGN, clusterFlows: undefined });
  assert.ok(independent / count > 2 * alpha, `independent: ${independent} of ${count} material`);
});

Deno.test("when slow flows come in bursts, a true 30 % reduction is called not material in at most the stated error rate", () => {
  const alpha = 1 - DEFAULT_DESIGN.level;
  const count = 200;
  const run = (design: SequentialDesign) => {
    const rng = createRng(79);
    let wrong = 0;
    for (let t = 0; t < count; t++) {
      const h3 = burstyFlowTimes(rng, 2400, 0.1, 3).map((x) => 0.7 * x);
      const j = judgeSequential(h3, [
        { transport: "h2c", samples: burstyFlowTimes(rng, 2400, 0.1, 3) },
      ], { design })!;
      if (j.status === "not-material") wrong++;
    }
    return wrong;
  };
  const clustered = run(DEFAULT_DESIGN);
  assert.ok(clustered / count <= alpha, `${clustered} of ${count} not material`);
  const independent = run({ ...DEFAULT_DESIGN, clusterFlows: undefined });
  assert.ok(
    independent / count > 2 * alpha,
    `independent: ${independent} of ${count} not material`,
  );
});

Deno.test("the last look holds most of the error: bursty cells left open by an equal split decide there, within the error rates", () => {
  // The default study's six looks to 19,200: the first five at 99.5 %, the last at 92.5 %
  // (3.75 % at each end; an equal split holds each at 98.3 %, 0.83 % at each end).
  const study = flowsDesign({}, 19200);
  assert.deepEqual(study.looks, [600, 1200, 2400, 4800, 9600, 19200]);
  assert.ok(Math.abs(lookLevel(study) - 0.925) < 1e-12);
  const equalSplit = { ...study, interimLevel: undefined };
  assert.ok(Math.abs(lookLevel(equalSplit) - (1 - 2 * 0.05 / 6)) < 1e-12);
  const count = 100;
  const run = (design: SequentialDesign, ratio: number) => {
    const rng = createRng(91);
    const out = { material: 0, "not-material": 0, undecided: 0 };
    for (let t = 0; t < count; t++) {
      // A stalled cluster in 3 % of clusters: HTTP/2's p99 rests on a few dozen episodes.
      const h3 = burstyFlowTimes(rng, 19200, 0.03, 3).map((x) => ratio * x);
      const j = judgeSequential(h3, [
        { transport: "h2c", samples: burstyFlowTimes(rng, 19200, 0.03, 3) },
      ], { design })!;
      out[j.status]++;
    }
    return out;
  };
  const alpha = 1 - study.level;
  const equal = run(study, 1), equalBySplit = run(equalSplit, 1);
  const better = run(study, 0.7), betterBySplit = run(equalSplit, 0.7);
  // Equal p99s: material in at most 5 %; a true 30 % reduction: "no" in at most 1 − power.
  assert.ok(equal.material / count <= alpha, JSON.stringify(equal));
  assert.ok(better["not-material"] / count <= 1 - study.power!, JSON.stringify(better));
  // Fewer cells left open, both ways.
  assert.ok(equal.undecided < equalBySplit.undecided, JSON.stringify([equal, equalBySplit]));
  assert.ok(better.undecided < betterBySplit.undecided, JSON.stringify([better, betterBySplit]));
  assert.ok(better.material > betterBySplit.material, JSON.stringify([better, betterBySplit]));
});

Deno.test("a longer study's design lets the power decide from its powerFrom look on, within the stated error rates", () => {
  // The default study: five looks to 9,600 flows, the power from 4,800 on.
  const study = flowsDesign({}, 9600);
  assert.deepEqual(study.looks, [600, 1200, 2400, 4800, 9600]);
  assert.equal(powerFromFlows(study), 4800);
  const alpha = 1 - study.level;
  const equal = trials(study, 1, 0.5, 200, 41);
  assert.ok(equal.material / 200 <= alpha, JSON.stringify(equal));
  const better = trials(study, 0.7, 0.5, 200, 43);
  assert.ok(better.material / 200 >= 0.8, JSON.stringify(better));
  assert.ok(better["not-material"] / 200 <= 1 - study.power!, JSON.stringify(better));
  // Near the threshold the power ends the cell at 4,800 flows, not 9,600 (a look in hand).
  const near = trials(study, 0.82, 0.5, 100, 31);
  assert.ok(near.undecided <= 10, JSON.stringify(near));
  assert.ok((near.at[4800] ?? 0) > 2 * (near.at[9600] ?? 0), JSON.stringify(near));
  // Without powerFrom the same design waits for its last look to use the power.
  const late = { ...study, powerFrom: undefined };
  assert.equal(powerFromFlows(late), 9600);
});

Deno.test("the power never decides before its first powered look", () => {
  // An 18 % lower p99 on narrow tails: powered, but only from the powerFrom look on.
  const f = {
    h3P99: 82,
    h3Ci: { lower: 80, upper: 84, level: 0.99 },
    h2P99: 100,
    h2Ci: { lower: 98, upper: 102, level: 0.99 },
  };
  const design = { ...DEFAULT_DESIGN, looks: [600, 1200, 2400, 4800, 9600], powerFrom: 2400 };
  assert.equal(decideLook({ ...f, n: 1200 }, design).status, "undecided");
  assert.equal(decideLook({ ...f, n: 2400 }, design).status, "not-material");
  assert.equal(
    decideLook({ ...f, n: 2400 }, { ...design, powerFrom: undefined }).status,
    "undecided",
  );
  assert.equal(
    decideLook({ ...f, n: 9600 }, { ...design, powerFrom: undefined }).status,
    "not-material",
  );
  // A powerFrom past the design's last look means the last look (a short study's design).
  assert.equal(powerFromFlows({ looks: [600, 1200], powerFrom: 4800 }), 1200);
});

Deno.test("warm-GET cells are judged at eight times the journey's looks, the power too, and planned to half the last", () => {
  const warm = scaledDesign(flowsDesign({}, 9600), streamLookFactor("warm-get"));
  assert.deepEqual(warm.looks, [4800, 9600, 19200, 38400, 76800]);
  assert.equal(warm.powerFrom, 38400);
  assert.equal(lookLevel(warm), lookLevel(flowsDesign({}, 9600)));
  assert.equal(scaledDesign(DEFAULT_DESIGN, streamLookFactor("registration")), DEFAULT_DESIGN);
  assert.equal(streamPlanFactor("warm-get") * 2, streamLookFactor("warm-get"));
  assert.equal(streamPlanFactor("journey"), 1);
  checkDesign(warm);
});

Deno.test("two runs of a cell disagree on its label where a run marks it at the threshold, rarely elsewhere", () => {
  // Pairs of independent runs of one cell, its true change from none to a 40 % lower p99.
  const rng = createRng(4242);
  const one = (ratio: number) =>
    judgeSequential(flowTimes(rng, 4800, 100 * ratio, 0.5), [
      { transport: "h2c", samples: flowTimes(rng, 4800, 100, 0.5) },
    ])!;
  const marked = (j: { flipChance?: number }) => (j.flipChance ?? 0) >= THRESHOLD_FLIP_CHANCE;
  let clearPairs = 0, clearDiffer = 0, differ = 0, differMarked = 0, lowFlip = 0, lowDiffer = 0;
  const atThreshold = { decided: 0, marked: 0, differ: 0, pairs: 0 };
  for (const ratio of [1, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6]) {
    for (let t = 0; t < 60; t++) {
      const a = one(ratio), b = one(ratio);
      if (a.status === "undecided" || b.status === "undecided") continue;
      const same = a.status === b.status;
      if (!same) differ++;
      if (!same && (marked(a) || marked(b))) differMarked++;
      if (!marked(a) && !marked(b)) {
        clearPairs++;
        if (!same) clearDiffer++;
      }
      for (const x of [a, b]) {
        if ((x.flipChance ?? 1) < 0.1) {
          lowFlip++;
          if (!same) lowDiffer++;
        }
      }
      if (ratio === 0.8) {
        atThreshold.pairs++;
        atThreshold.decided += 2;
        atThreshold.marked += Number(marked(a)) + Number(marked(b));
        if (!same) atThreshold.differ++;
      }
    }
  }
  const figures = JSON.stringify({
    clearPairs,
    clearDiffer,
    differ,
    differMarked,
    lowFlip,
    lowDiffer,
    atThreshold,
  });
  // A true change of exactly 20 %: the label is a coin toss, and the mark says so.
  assert.ok(atThreshold.differ / atThreshold.pairs >= 0.2, figures);
  assert.ok(atThreshold.marked / atThreshold.decided >= 0.75, figures);
  // Labels that differ carry the mark in at least one run; unmarked pairs agree.
  assert.ok(differMarked / differ >= 0.85, figures);
  assert.ok(clearDiffer / clearPairs <= 0.03, figures);
  // A decision put under 10 % differs from its repeat in at most 5 % of pairs.
  assert.ok(lowDiffer / lowFlip <= 0.05, figures);
});
