import assert from "node:assert/strict";
import { createHandler } from "../handler/mod.ts";
import type { ScenarioContext } from "../bench/scenarios/mod.ts";
import type { BenchRun, ResultRow, RunConfig } from "../bench/record/mod.ts";
import type { SbiClient, TransportName } from "../transports/types.ts";
import { handlerClient } from "./flows/_test_util.ts";
import type { PathProbe, PathReading } from "./flows/path_cpu.ts";
import { cellShareMs, flowsScenario } from "./flows_scenario.ts";
import { studyVerdict } from "./verdict.ts";
import { createRng } from "../bench/stats/mod.ts";

/**
 * A context whose clients call the handler directly and a probe that plays the
 * server process: its one thread runs `serverShare[t]` of the time while
 * transport t's requests are being sent. `blocks` lists each block's transport.
 */
function harness(
  serverShare: Partial<Record<TransportName, number>>,
  schedule?: "sequential",
  /** Answers the nth warm GET (from 1) with this status instead of the handler's, when set. */
  override?: (n: number) => number | undefined,
) {
  const handler = createHandler();
  let current: TransportName | undefined;
  const blocks: string[] = [];
  // Time moves only when the arrival loop sleeps (exactly as asked) and by 0.5 ms per request.
  let now = 0;
  const clock = () => now;
  const sleep = (ms: number) => {
    now += ms;
    return Promise.resolve();
  };
  let serverS = 0, clientS = 0, last = 0, reads = 0, gets = 0;
  const probe: PathProbe = {
    read(): PathReading {
      // Reads come in pairs around each measured block; the second names the block's transport.
      if (reads++ % 2 === 1) blocks.push(current!);
      const dt = (now - last) / 1000;
      last = now;
      serverS += (current ? serverShare[current] ?? 0.2 : 0) * dt;
      clientS += 0.3 * dt;
      return { atMs: now, threads: { client: { "1": clientS }, server: { "7": serverS } } };
    },
  };
  const config = {
    scenario: "flows",
    stack: "native",
    concurrency: [4],
    flows: ["warm-get"],
    rate: 400,
    rounds: 4,
    ...(schedule ? { schedule } : {}),
  } as unknown as RunConfig;
  const ctx: ScenarioContext = {
    endpoints: { urls: {}, mode: "in-process", close: async () => {} },
    transports: ["h2c", "h3"],
    sizes: [256],
    plan: { warmupMs: 10, sampleMs: 5000, samples: 16 },
    clock,
    config,
    notes: [],
    openClient(t): Promise<SbiClient> {
      const c = handlerClient(handler);
      return Promise.resolve({
        ...c,
        transport: t,
        request: (r) => {
          // The warm GETs are the blocks' load; heartbeats (PATCH) run in the background.
          if (r.path.startsWith("/nbench/")) current = t;
          now += 0.5;
          const status = r.path.startsWith("/nbench/") ? override?.(++gets) : undefined;
          if (status !== undefined) {
            return Promise.resolve({ status, headers: {}, body: new Uint8Array(0) });
          }
          return c.request(r);
        },
      });
    },
    onProgress: () => {},
    onRow: () => {},
  };
  return { ctx, probe, sleep, blocks };
}

const flowRows = (rows: ResultRow[]) => rows.filter((r) => r.flow === "warm-get" && !r.step);

Deno.test("flows interleaves the transports of a cell and marks a saturated server's cell not valid", async () => {
  const h = harness({ h2c: 0.3, h3: 0.97 });
  const rows = await flowsScenario(h.ctx, { probe: h.probe, sleep: h.sleep, rng: createRng(1) });
  const byT = Object.fromEntries(flowRows(rows).map((r) => [r.transport, r]));
  // 16 flows per journey row, so 128 warm GETs per transport (8×), in 4 rounds of 32.
  assert.equal(byT.h2c.samples.count, 128);
  assert.equal(byT.h3.samples.count, 128);
  assert.equal(byT.h3.extra!.rounds, 4);
  assert.ok(byT.h3.extra!["cpu:server"] > 0.9, `h3 server ${byT.h3.extra!["cpu:server"]}`);
  assert.ok(byT.h2c.extra!["cpu:server"] < 0.5, `h2c server ${byT.h2c.extra!["cpu:server"]}`);
  assert.equal(byT.h3.extra!.onTimeShare, 1);
  // Every round holds both transports once, in its own order.
  assert.equal(h.blocks.length, 8);
  for (let r = 0; r < 4; r++) {
    assert.deepEqual(
      [...h.blocks.slice(2 * r, 2 * r + 2)].sort(),
      ["h2c", "h3"],
      h.blocks.join(" "),
    );
  }
  const v = studyVerdict(
    { rows, config: h.ctx.config, floors: { rows: [] }, notes: [] } as unknown as BenchRun,
  );
  const cell = v.cells.find((c) => c.flow === "warm-get")!;
  assert.equal(cell.status, "not-valid");
  assert.match(cell.reason, /^not valid: server at 0\.9\d of a core \(h3\)$/);
  assert.match(
    v.summary,
    /^Inconclusive: none of the 1 cells could be decided \(1 not valid \(server saturated in 1\)\)/,
  );
  // CPU per request, as `lab bench` rows carry it: the client runs 0.3 of the time, and a
  // request comes every 2.5 ms (400 per s), so about 750 µs each.
  const perRequest = byT.h2c.extra!.clientCpuNsPerRequest;
  assert.ok(perRequest > 600_000 && perRequest < 1_000_000, `${perRequest} ns`);
});

Deno.test("flows on a quiet path keeps the cell valid; sequential runs one transport's blocks together", async () => {
  const h = harness({ h2c: 0.3, h3: 0.4 }, "sequential");
  const rows = await flowsScenario(h.ctx, { probe: h.probe, sleep: h.sleep, rng: createRng(2) });
  const v = studyVerdict(
    { rows, config: h.ctx.config, floors: { rows: [] }, notes: [] } as unknown as BenchRun,
  );
  const cell = v.cells.find((c) => c.flow === "warm-get")!;
  assert.notEqual(cell.status, "not-valid", cell.reason);
  assert.deepEqual(v.notValid, []);
  assert.deepEqual(h.blocks, ["h2c", "h2c", "h2c", "h2c", "h3", "h3", "h3", "h3"]);
});

Deno.test("flows keeps each step's answers by status and counts a status the step does not expect as failed", async () => {
  // every 4th warm GET is answered 404
  const h = harness({ h2c: 0.3, h3: 0.4 }, "sequential", (n) => (n % 4 === 0 ? 404 : undefined));
  const rows = await flowsScenario(h.ctx, { probe: h.probe, sleep: h.sleep, rng: createRng(3) });
  const steps = rows.filter((r) => r.flow === "warm-get" && r.step);
  assert.ok(steps.length > 0);
  let ok = 0, notFound = 0;
  for (const r of steps) {
    assert.deepEqual(Object.keys(r.status!).sort(), ["200", "404"], r.id);
    assert.equal(r.failed, r.status!["404"], r.id);
    assert.equal(r.errors, 0, `${r.id}: the 404s are failed answers, not errors`);
    ok += r.status!["200"];
    notFound += r.status!["404"];
  }
  // about a quarter of the counted warm GETs were answered 404
  assert.ok(notFound > 0 && ok >= 2 * notFound, `${ok} × 200, ${notFound} × 404`);
  // the flow's own row counts its failed flows
  for (const r of flowRows(rows)) assert.ok(r.errors > 0, r.id);
});

Deno.test("a cell's share of the run leaves every later cell its first look, and takes at least its own", () => {
  // Four cells: two long journeys (300 s to their last look, 80 s to their first), two GET cells
  // (20 s to their last look, 15 s to their first: mostly warm-up).
  const needs = [300_000, 20_000, 300_000, 20_000];
  const firsts = [80_000, 15_000, 80_000, 15_000];
  // Plenty of time: shares in proportion to the needs.
  assert.equal(cellShareMs(1_280_000, needs, firsts, 0), 600_000);
  // Tight: the first journey may not take what the three cells after it need for their first look.
  // (In proportion it would get 93.75 s, and leave the rest 106.25 s where they need 110 s.)
  assert.equal(cellShareMs(200_000, needs, firsts, 0), 200_000 - 110_000);
  // A cell before ran over and left less than the rest's first looks: each still gets its own.
  assert.equal(cellShareMs(50_000, needs, firsts, 2), 80_000);
  assert.equal(cellShareMs(5_000, needs, firsts, 3), 15_000);
  // The last cell takes what is left.
  assert.equal(cellShareMs(30_000, needs, firsts, 3), 30_000);
});
