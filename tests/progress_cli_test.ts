/**
 * Long commands show progress when stderr is a pipe: plain `progress:` lines,
 * a bounded number of them, and none with `--quiet`.
 */
import assert from "node:assert/strict";
import { runLab, startLabServe } from "./support.ts";

const LINE = /^progress: \d{1,3} % \((row|phase) \d+(\/\d+)?, .+\)$/;

function progressLines(stderr: string): string[] {
  return stderr.split("\n").filter((l) => l.startsWith("progress: "));
}

Deno.test("lab load and lab bench print progress: lines on a pipe, and none with --quiet", async () => {
  const state = await Deno.makeTempDir();
  const srv = await startLabServe({ transports: ["h2c"], stateDir: state });
  const origin = srv.urls["h2c"]!;
  const url = `${origin}/nbench/v1/payload?size=16`;
  try {
    const load = await runLab(["load", "-D", "1s", "--warm-up", "200ms", url]);
    assert.equal(load.code, 0, load.stderr);
    const lines = progressLines(load.stderr);
    assert.ok(lines.length >= 2, `a line per phase and a closing line:\n${load.stderr}`);
    assert.ok(lines.length <= 6, `bounded (one per phase, then one per 2 s):\n${load.stderr}`);
    for (const l of lines.slice(0, -1)) assert.match(l, LINE);
    assert.match(lines[0], /phase 1, h2c 1×1, warm-up\)$/);
    assert.ok(lines.some((l) => /measure\)$/.test(l)), load.stderr);
    assert.equal(lines.at(-1), "progress: 100 % done (2 phases)");
    assert.ok(!load.stderr.includes("\x1b["), "no terminal escapes on a pipe");

    const quiet = await runLab(["load", "-q", "-n", "50", url]);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.deepEqual(progressLines(quiet.stderr), []);

    const args = ["bench", "--target", origin, "--transports", "h2c", "--sizes", "256"];
    const timing = ["--no-floors", "--warm-up", "100ms", "--time", "300ms", "--samples", "20"];
    const bench = await runLab([...args, ...timing]);
    assert.equal(bench.code, 0, bench.stderr);
    const rows = progressLines(bench.stderr);
    assert.ok(rows.length >= 2, bench.stderr);
    assert.match(
      rows[0],
      /^progress: \d+ % \(row 1(\/\d+)?, interleaved rounds · warm-up h2c 256 B\)$/,
    );
    assert.match(rows.at(-1)!, /^progress: 100 % done \(1 row\)$/);
    // one row for the whole interleaved run, its share never going back
    const shares = rows.slice(0, -1).map((l) => Number(/^progress: (\d+) %/.exec(l)![1]));
    for (const l of rows.slice(0, -1)) assert.match(l, /\(row 1, interleaved rounds · /);
    for (let i = 1; i < shares.length; i++) {
      assert.ok(shares[i] >= shares[i - 1], rows.join("\n"));
    }
    const benchQuiet = await runLab([...args, ...timing, "--quiet"]);
    assert.equal(benchQuiet.code, 0, benchQuiet.stderr);
    assert.deepEqual(progressLines(benchQuiet.stderr), []);
  } finally {
    await srv.stop();
    await Deno.remove(state, { recursive: true });
  }
});
