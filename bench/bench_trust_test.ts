/**
 * Trust tests: the benchmark measures a known delay as that delay, its JSON
 * round-trips to the same reports, and comparison tells a real regression
 * from noise. They run real servers in process on loopback.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { runBench } from "./run/run_bench.ts";
import { type BenchRun, parseRun, type ResultRow } from "./record/schema.ts";
import { serializeRun } from "./report/reporters.ts";
import { renderTable } from "./report/table.ts";
import { renderCsv } from "./report/csv.ts";
import { renderMarkdown } from "./report/markdown.ts";
import { compareRuns } from "./report/compare.ts";
import { estimateSampleSet, Recorder } from "./stats/recorder.ts";

Deno.test("a handler delay of 100 ms is measured as 100 ms within 5 %", async () => {
  const run = await runBench({
    inProcess: true,
    transports: ["h2c", "h2-tls"],
    sizes: [256],
    delayMs: 100,
    warmupMs: 100,
    samples: 20,
    rounds: 4,
    skipFloors: true,
  });
  assertEquals(run.rows.length, 2);
  for (const row of run.rows) {
    const ms = row.estimate.median / 1e6;
    assert(ms >= 100 && ms <= 105, `${row.transport} measured ${ms} ms for a 100 ms delay`);
    assertEquals(row.estimate.n, 20);
  }
});

Deno.test("the rtt rounds run the exposed collector once before each round and say so in the run's notes", async () => {
  const g = globalThis as { gc?: () => void };
  const exposed = g.gc;
  let calls = 0;
  g.gc = () => void calls++;
  try {
    const run = await runBench({
      inProcess: true,
      transports: ["h2c"],
      sizes: [256],
      warmupMs: 50,
      samples: 6,
      rounds: 3,
      skipFloors: true,
    });
    // 3 measured rounds and the 2 discarded before them.
    assertEquals(run.rounds?.rounds, 3);
    assertEquals(calls, 5);
    assert(
      run.notes.some((n) =>
        /full garbage collection before each round.*\(5, \d+ ms in all\)/.test(n)
      ),
      run.notes.join(" | "),
    );
  } finally {
    if (exposed) g.gc = exposed;
    else delete g.gc;
  }
});

let shared: BenchRun | undefined;
async function quickRun(): Promise<BenchRun> {
  shared ??= await runBench({
    inProcess: true,
    transports: ["h2c"],
    sizes: [256],
    warmupMs: 50,
    sampleMs: 300,
  });
  return shared;
}

Deno.test("a saved run re-renders to the same table, CSV and Markdown", async () => {
  const run = await quickRun();
  assert(
    run.floors.rows.some((f) => f.source === "kernel" && f.protocol === "tcp"),
    "no kernel TCP floor",
  );
  // Measured in rounds: each row and floor keeps its rounds, and the h2c row has a paired floor ratio.
  assertEquals(run.config.schedule, "interleaved");
  assertEquals(run.rows[0].rounds?.counts.length, run.rounds?.rounds);
  assert(run.rounds!.ratios.some((r) => r.kind === "floor" && r.numerator === run.rows[0].id));
  // The stacks alone ran in the same rounds (the native engine → the h2 module in its C host),
  // and the report gives sbilab's own time per request over them with a paired interval.
  const stacks = run.floors.rows.find((f) => f.source === "stacks" && f.transport === "h2c");
  assert(stacks, `no stacks-alone h2c arm; notes: ${run.notes.join(" ")}`);
  assertEquals(stacks.rounds?.counts.length, run.rounds?.rounds);
  const added = run.rounds!.added?.find((a) => a.row === run.rows[0].id);
  assert(added && Number.isFinite(added.addedNs) && added.interval.lower < added.interval.upper);
  assert(
    /sbilab's own time over the stacks alone .* per h2c request at 256 B/.test(renderTable(run)),
  );
  const back = parseRun(serializeRun(run));
  assertEquals(renderTable(back), renderTable(run));
  assertEquals(renderCsv(back), renderCsv(run));
  assertEquals(renderMarkdown(back), renderMarkdown(run));
  assert(/× tcp/.test(renderTable(run)), "the h2c row shows no multiple of the TCP floor");
});

function scaled(row: ResultRow, factor: number): ResultRow {
  const rec = new Recorder();
  for (const s of row.samples.samples) rec.record(s * factor);
  const samples = rec.finish();
  return { ...row, samples, estimate: estimateSampleSet(samples) };
}

Deno.test("comparison flags a planted regression and ignores a 0.5 % one, over rounds and over samples", async () => {
  // the run's own stated noise ("expect ±N %") would raise the threshold on a busy machine
  // (a comparison test of its own covers that): here only the intervals are under test
  const measured = await quickRun();
  const run: BenchRun = measured.rounds
    ? {
      ...measured,
      rounds: { ...measured.rounds, noise: { ...measured.rounds.noise, noisy: false } },
    }
    : measured;
  // Only the row's own intervals are under test: without its kernel floor the machine's move (the
  // floor's shift and its interval's slack, which on a busy box can pass 50 %) is left out; a test
  // in answer_test.ts covers that correction.
  const row = { ...run.rows[0], floor: undefined };
  // Over rounds the interval holds the machine's round-to-round noise, which on a busy VM is
  // tens of percent: plant a doubling there, and 50 % over samples (rounds stripped).
  const withRows = (r: BenchRun, rows: ResultRow[]) => ({ ...r, rows });
  const planted = (factor: number, rounds: boolean) => {
    const base = withRows(run, [rounds ? row : { ...row, rounds: undefined }]);
    const s = scaled(base.rows[0], factor);
    return compareRuns(rounds ? base : { ...base, rounds: undefined }, {
      ...(rounds ? run : { ...run, rounds: undefined }),
      rows: [s],
    }).rows[0];
  };
  for (const [rounds, big] of [[true, 2], [false, 1.5]] as const) {
    assertEquals(planted(big, rounds).verdict, "regressed", `rounds ${rounds}`);
    assertEquals(planted(1 / big, rounds).verdict, "improved", `rounds ${rounds}`);
    assert(["within noise", "no change"].includes(planted(1.005, rounds).verdict));
  }
  assertEquals(
    compareRuns(withRows(run, [row]), withRows(run, [row])).rows[0].verdict,
    "no change",
  );
});

Deno.test("a table row shows its median as a multiple of the matching floor", async () => {
  const run = structuredClone(await quickRun());
  const floor = run.floors.rows.find((f) => f.source === "kernel" && f.protocol === "tcp")!;
  floor.estimate.median = run.rows[0].estimate.median / 4;
  assert(renderTable(run).includes("4.00× tcp"));
});

Deno.test("parseRun rejects a wrong schema version and non-JSON with one-line messages", () => {
  for (
    const [text, re] of [
      ["not json", /not valid JSON/],
      [JSON.stringify({ schema: "sbilab-bench/0", rows: [] }), /has schema "sbilab-bench\/0"/],
      [JSON.stringify({ schema: "sbilab-bench/1" }), /missing rows/],
    ] as const
  ) {
    try {
      parseRun(text, "x.json");
      assert(false, "no error");
    } catch (err) {
      assert(
        err instanceof SyntaxError && re.test(err.message) && !err.message.includes("\n"),
        String(err),
      );
    }
  }
});
