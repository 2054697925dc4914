import assert from "node:assert/strict";
import { createProgressLines } from "./progress_lines.ts";

function recorder() {
  const lines: string[] = [];
  let t = 0;
  const p = createProgressLines({ write: (l) => lines.push(l), now: () => t, intervalMs: 1000 });
  return { lines, p, at: (ms: number) => (t = ms) };
}

Deno.test("progress lines name the row and the run's share, one per new row", () => {
  const { lines, p, at } = recorder();
  p.setRows(4);
  p.update("h2c 256 B", 0);
  at(10);
  p.update("h2-tls 256 B", 0);
  at(20);
  p.update("h3 256 B", 0.6);
  p.stop();
  assert.deepEqual(lines, [
    "progress: 0 % (row 1/4, h2c 256 B)",
    "progress: 25 % (row 2/4, h2-tls 256 B)",
    "progress: 65 % (row 3/4, h3 256 B)",
    "progress: 100 % done (3 rows)",
  ]);
});

Deno.test("progress lines within a row come at most once per interval, and only when the share moved", () => {
  const { lines, p, at } = recorder();
  p.update("h2c 16 KiB", 0);
  for (let ms = 1; ms <= 5000; ms++) {
    at(ms);
    p.update("h2c 16 KiB", ms < 2500 ? ms / 5000 : 0.5);
  }
  // 0 ms, then 1000 and 2000 ms; from 2500 ms on the share stands still at 50 %
  assert.deepEqual(lines, [
    "progress: 0 % (row 1, h2c 16 KiB)",
    "progress: 20 % (row 1, h2c 16 KiB)",
    "progress: 40 % (row 1, h2c 16 KiB)",
    "progress: 50 % (row 1, h2c 16 KiB)",
  ]);
});

Deno.test("progress lines say nothing after stop, and stop says nothing when nothing ran", () => {
  const { lines, p } = recorder();
  p.stop();
  p.update("late", 0.5);
  p.stop();
  assert.deepEqual(lines, []);
});

Deno.test("progress lines of a run that did not complete end where it stopped, not at 100 %", () => {
  const { lines, p } = recorder();
  p.setRows(2);
  p.update("h2c", 0.5);
  p.stop(false);
  assert.deepEqual(lines, [
    "progress: 25 % (row 1/2, h2c)",
    "progress: stopped at 25 % (row 1/2, h2c)",
  ]);
});

Deno.test("progress lines call a row what the command calls it", () => {
  const lines: string[] = [];
  const p = createProgressLines({ write: (l) => lines.push(l), now: () => 0, rowName: "case" });
  p.setRows(2);
  p.update("handshake pass", 1);
  p.stop();
  assert.deepEqual(lines, [
    "progress: 50 % (case 1/2, handshake pass)",
    "progress: 100 % done (1 case)",
  ]);
});

Deno.test("progress lines keep the steps of one row (interleaved rounds) in that row, never a new one", () => {
  let t = 0;
  const lines: string[] = [];
  const p = createProgressLines({ write: (l) => lines.push(l), now: () => t, intervalMs: 1000 });
  p.update("interleaved rounds · warm-up h2c 256 B", 0);
  t = 500;
  p.update("interleaved rounds · warm-up h3 256 B", 0.1);
  t = 1500;
  p.update("interleaved rounds · round 1 of 10", 0.3);
  t = 3000;
  p.update("interleaved rounds · round 9 of 10", 0.9);
  p.stop();
  assert.deepEqual(lines, [
    "progress: 0 % (row 1, interleaved rounds · warm-up h2c 256 B)",
    "progress: 30 % (row 1, interleaved rounds · round 1 of 10)",
    "progress: 90 % (row 1, interleaved rounds · round 9 of 10)",
    "progress: 100 % done (1 row)",
  ]);
});
