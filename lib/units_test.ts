import assert from "node:assert/strict";
import {
  formatBudgetUse,
  formatBytes,
  formatDuration,
  formatMultiple,
  formatRate,
  formatSignificant,
} from "./units.ts";

Deno.test("durations take the largest unit below them with three significant digits", () => {
  assert.equal(formatDuration(812), "812 ns");
  assert.equal(formatDuration(71_400), "71.4 µs");
  assert.equal(formatDuration(1.634e6), "1.63 ms");
  assert.equal(formatDuration(1.5e9), "1.50 s");
  assert.equal(formatDuration(NaN), "–");
});

Deno.test("sizes, rates and ratios keep their units; a bare figure has three significant digits", () => {
  assert.equal(formatBytes(256), "256 B");
  assert.equal(formatBytes(600 * 2 ** 20), "600 MiB");
  assert.equal(formatBytes(1.5 * 2 ** 20), "1.50 MiB");
  assert.equal(formatRate(56_000), "56.0k req/s");
  assert.equal(formatRate(412), "412 req/s");
  assert.equal(formatMultiple(1.3249), "1.32×");
  assert.deepEqual([812.4, 71.44, 4.081].map(formatSignificant), ["812", "71.4", "4.08"]);
  assert.equal(formatSignificant(Infinity), "–");
});

Deno.test("a budgeted run's time reads in whole seconds, and says over once the rounded time passes the budget", () => {
  assert.equal(formatBudgetUse(796_400, 900_000), "took 796 s of a 900 s budget");
  assert.equal(formatBudgetUse(900_400, 900_000), "took 900 s of a 900 s budget");
  assert.equal(formatBudgetUse(900_600, 900_000), "took 901 s, over its 900 s budget");
  assert.equal(formatBudgetUse(20_000, 1), "took 20 s, over its 0 s budget");
  assert.equal(formatBudgetUse(NaN, 900_000), "took –");
});
