import assert from "node:assert/strict";
import {
  LOOK_BUDGET_MS,
  parseBudget,
  progressLine,
  STUDY_BUDGET_MS,
  studyMaxFlows,
} from "./study.ts";
import { checkDesign, DEFAULT_DESIGN, fewestFlowsToDecide, flowsDesign } from "./sequential.ts";

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
  assert.equal(STUDY_BUDGET_MS, 75 * 60_000);
  assert.equal(LOOK_BUDGET_MS, 40 * 60_000);
  // The default plans a sixth look, at 19,200.
  assert.equal(studyMaxFlows(STUDY_BUDGET_MS), 19200);
  assert.deepEqual(flowsDesign({}, studyMaxFlows(STUDY_BUDGET_MS)).looks, [
    600,
    1200,
    2400,
    4800,
    9600,
    19200,
  ]);
  assert.equal(studyMaxFlows(40 * 60_000), 9600);
  // A budget between doublings plans the next look up: its open cells go as far as their time allows.
  assert.equal(studyMaxFlows(41 * 60_000), 19200);
  assert.equal(studyMaxFlows(60 * 60_000), 19200);
  assert.equal(studyMaxFlows(80 * 60_000), 19200);
  assert.equal(studyMaxFlows(81 * 60_000), 38400);
  // A shorter budget halves it, down to the second look.
  assert.equal(studyMaxFlows(20 * 60_000), 4800);
  assert.equal(studyMaxFlows(30 * 60_000), 9600);
  assert.equal(studyMaxFlows(15 * 60_000), 4800);
  assert.equal(studyMaxFlows(10 * 60_000), 2400);
  assert.equal(studyMaxFlows(5 * 60_000), 1200);
  assert.equal(studyMaxFlows(60_000), 1200);
  assert.deepEqual(flowsDesign({}, 9600).looks, [600, 1200, 2400, 4800, 9600]);
  assert.deepEqual(flowsDesign({}, 7000).looks, [600, 1200, 2400, 4800]);
  assert.deepEqual(flowsDesign({}, 2400).looks, [600, 1200, 2400]);
  // Five looks share the error: each look's level is stricter, and so is the fewest flows a look needs.
  assert.ok(fewestFlowsToDecide(flowsDesign({}, 9600)) > fewestFlowsToDecide(DEFAULT_DESIGN));
  checkDesign(flowsDesign({}, 9600));
});
