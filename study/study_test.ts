import assert from "node:assert/strict";
import {
  linkNeedMs,
  parseBudget,
  planLink,
  progressLine,
  STUDY_BUDGET_MS,
  studyMaxFlows,
} from "./study.ts";
import { checkDesign, DEFAULT_DESIGN, fewestFlowsToDecide, flowsDesign } from "./sequential.ts";

const LINKS = [
  { rttMs: 50, loopback: false },
  { rttMs: 50, loopback: false },
  { rttMs: 5, loopback: false },
  { rttMs: 0, loopback: false },
];
const BASE = {
  transports: 3,
  ues: [64, 256],
  streams: ["journey", "warm-get"],
  warmupMs: 1000,
  maxFlows: 2400,
  looks: 4,
  firstLook: 600,
  minCellMs: 5000,
};

Deno.test("a link with a longer RTT needs more time for the same flows", () => {
  const wan = linkNeedMs(LINKS[0], BASE), lan = linkNeedMs(LINKS[3], BASE);
  assert.ok(wan > lan, `${wan} vs ${lan}`);
  assert.ok(linkNeedMs(LINKS[0], { ...BASE, maxFlows: 600 }) < wan);
});

Deno.test("planLink gives a link what it needs when the budget allows, and keeps the later links' first look", () => {
  const need = linkNeedMs(LINKS[0], BASE);
  const roomy = planLink(60 * 60_000, LINKS, BASE);
  assert.equal(roomy.linkMs, need);
  const firsts = LINKS.slice(1).reduce(
    (ms, l) => ms + linkNeedMs(l, { ...BASE, maxFlows: 600, looks: 1 }),
    0,
  );
  const own = linkNeedMs(LINKS[0], { ...BASE, maxFlows: 600, looks: 1 });
  // What is left after the later links' first looks, but never less than its own first look.
  const tight = planLink(need / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tight.linkMs - Math.max(own, need - firsts)) < 1e-6, JSON.stringify(tight));
  const tighter = planLink((firsts + 2 * own) / 0.95, LINKS, BASE);
  assert.ok(Math.abs(tighter.linkMs - 2 * own) < 1e-6, JSON.stringify(tighter));
  // The last link takes whatever is left, up to its need.
  const last = planLink(30_000, LINKS.slice(3), BASE);
  assert.equal(last.linkMs, 0.95 * 30_000);
  assert.equal(last.cellMs, BASE.minCellMs);
});

Deno.test("progress lines say cells done of planned, time spent of the budget and time left", () => {
  assert.equal(
    progressLine({
      cellsDone: 12,
      cellsPlanned: 40,
      elapsedMs: 310_000,
      budgetMs: 900_000,
      leftMs: 380_400,
      label: "wan: cell 3/4: journey × 256 UEs",
    }),
    "cells 12/40 · 5m10s of 15m00s · about 6m20s left · wan: cell 3/4: journey × 256 UEs",
  );
});

Deno.test("parseBudget reads minutes, seconds and hours and refuses less than 10 s", () => {
  assert.equal(parseBudget("10m"), 600_000);
  assert.equal(parseBudget("90s"), 90_000);
  assert.equal(parseBudget("90"), 90_000);
  assert.equal(parseBudget("1h"), 3_600_000);
  for (const bad of ["5s", "ten", "-1m", ""]) assert.throws(() => parseBudget(bad), RangeError);
});

Deno.test("a longer budget takes cells to more flows: the last look doubles with each doubling of the budget", () => {
  assert.equal(studyMaxFlows(STUDY_BUDGET_MS), 4800);
  assert.equal(studyMaxFlows(59 * 60_000), 4800);
  assert.equal(studyMaxFlows(60 * 60_000), 9600);
  // A shorter budget halves it, down to the second look.
  assert.equal(studyMaxFlows(15 * 60_000), 2400);
  assert.equal(studyMaxFlows(10 * 60_000), 1200);
  assert.equal(studyMaxFlows(60_000), 1200);
  assert.deepEqual(flowsDesign({}, 9600).looks, [600, 1200, 2400, 4800, 9600]);
  assert.deepEqual(flowsDesign({}, 7000).looks, [600, 1200, 2400, 4800]);
  assert.deepEqual(flowsDesign({}, 2400).looks, [600, 1200, 2400]);
  // Five looks share the error: each look's level is stricter, and so is the fewest flows a look needs.
  assert.ok(fewestFlowsToDecide(flowsDesign({}, 9600)) > fewestFlowsToDecide(DEFAULT_DESIGN));
  checkDesign(flowsDesign({}, 9600));
});
