import assert from "node:assert/strict";
import { flowRecorder, tally } from "./flows_cell.ts";
import { DEFAULT_MAX_SAMPLES, Recorder } from "../bench/stats/mod.ts";

Deno.test("a cell keeps every flow time in completion order past a recorder's default reservoir size", () => {
  const flows = DEFAULT_MAX_SAMPLES + 53_600;
  const t = tally(flows);
  const r = flowRecorder(t, "warm-get");
  for (let i = 0; i < flows; i++) r.record(i);
  const kept = r.values();
  assert.equal(kept.length, flows);
  // The looks take each side's first n flows: position i must hold the i-th flow.
  assert.ok(kept.every((v, i) => v === i));
  assert.equal(r.finish().complete, true);
  assert.equal(flowRecorder(t, "warm-get"), r);
  // What a default recorder does with as many: a reservoir whose first values are no longer the first flows.
  const plain = new Recorder();
  for (let i = 0; i < flows; i++) plain.record(i);
  assert.equal(plain.finish().complete, false);
  assert.ok(plain.values().slice(0, 4800).some((v, i) => v !== i));
});
