import assert from "node:assert/strict";
import { migrationFigures } from "./migration.ts";

Deno.test("migrationFigures measures the longest silence from the last response before the change", () => {
  // Responses every 50 ms, the change at 1000, a stall until 1400, then every 50 ms again.
  const before = Array.from({ length: 20 }, (_, i) => 50 + i * 50); // 50 … 1000
  const after = [1400, 1450, 1700, 1750];
  const f = migrationFigures([...after, ...before], [1010, 1200, 100], 1000.5, 0, 1800);
  assert.equal(f.completedBefore, 20);
  assert.equal(f.completedAfter, 4);
  assert.equal(f.gapMs, 400); // 1000 → 1400 beats 1450 → 1700 (250)
  assert.equal(f.maxIntervalMs, 400);
  assert.equal(f.errorsBefore, 1);
  assert.equal(f.errorsAfterChange, 2);
  assert.equal(f.recovered, 1);
});

Deno.test("migrationFigures reports a transport that never answers after the change as not recovered", () => {
  const f = migrationFigures([100, 200, 300], [], 350, 0, 2000);
  assert.equal(f.recovered, 0);
  assert.equal(f.gapMs, 1700);
  assert.equal(f.completedAfter, 0);
});
