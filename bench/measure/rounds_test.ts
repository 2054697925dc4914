import assert from "node:assert/strict";
import { collectionsNote, roundCollector, runRounds } from "./rounds.ts";
import { createRng } from "../stats/stats.ts";
import type { MachineProbe, MachineSnapshot } from "./machine_probe.ts";

/** A scripted machine: every snapshot advances the counters by what the test says a block did. */
function scriptedProbe(perBlock: Partial<MachineSnapshot>): MachineProbe & { calls: number } {
  const now: MachineSnapshot = {
    busyS: 0,
    stealS: 0,
    totalS: 0,
    clientS: 0,
    serverS: 0,
    load1: 0.5,
  };
  const probe = {
    calls: 0,
    snapshot() {
      // Odd calls close a block: the block's use lands between the two readings.
      if (probe.calls++ % 2 === 1) {
        for (const k of Object.keys(perBlock) as (keyof MachineSnapshot)[]) {
          if (k !== "load1") now[k] += perBlock[k]!;
        }
        now.load1 = perBlock.load1 ?? now.load1;
      }
      return Promise.resolve({ ...now });
    },
  };
  return probe;
}

/** A clock that moves 5 ms per reading, so each block lasts 5 ms. */
function steppingClock() {
  let t = 0;
  return () => (t += 5);
}

Deno.test("round runner gives every arm one block per round in a fresh order and drops warm-up rounds", async () => {
  const calls: string[] = [];
  const arms = ["a", "b", "c", "d"].map((id) => ({
    id,
    block: (ms: number) => {
      calls.push(id);
      return Promise.resolve({ samples: [ms * 1000, ms * 1000 + 1], errors: 0 });
    },
  }));
  const out = await runRounds(arms, { rounds: 20, blockMs: 7, warmupRounds: 3, rng: createRng(4) });
  assert.equal(calls.length, 23 * 4);
  assert.equal(out.order.length, 20);
  for (const o of out.order) assert.deepEqual(o.slice().sort(), ["a", "b", "c", "d"]);
  assert.ok(new Set(out.order.map((o) => o.join())).size > 10, "orders differ between rounds");
  for (const id of ["a", "b", "c", "d"]) {
    assert.equal(out.arms[id].samples.length, 20);
    assert.deepEqual(out.arms[id].samples[0], [7000, 7001]);
  }
  // The recorded orders are the ones that ran (after the 12 warm-up calls).
  assert.deepEqual(calls.slice(12), out.order.flat());
});

Deno.test("round runner charges each measured block's CPU to its arm and names the rest other processes", async () => {
  const probe = scriptedProbe({
    clientS: 0.004,
    serverS: 0.003,
    busyS: 0.008, // 1 ms of someone else's CPU per 5 ms block: 0.2 of a core
    stealS: 0.0005,
    totalS: 0.02,
    load1: 2.5,
  });
  const arms = [
    { id: "t", block: () => Promise.resolve({ samples: [1, 2], errors: 0 }), measureCpu: true },
    { id: "floor", block: () => Promise.resolve({ samples: [1, 2], errors: 1 }) },
  ];
  const out = await runRounds(arms, {
    rounds: 5,
    blockMs: 10,
    warmupRounds: 1,
    rng: createRng(1),
    probe,
    clock: steppingClock(),
  });
  assert.equal(probe.calls, 10, "two readings per measured CPU block, none in warm-up");
  assert.deepEqual(out.arms.t.clientCpuS!.map((x) => +x.toFixed(6)), [
    0.004,
    0.004,
    0.004,
    0.004,
    0.004,
  ]);
  assert.deepEqual(out.arms.t.serverCpuS!.map((x) => +x.toFixed(6)), [
    0.003,
    0.003,
    0.003,
    0.003,
    0.003,
  ]);
  assert.equal(out.arms.floor.clientCpuS, undefined);
  assert.equal(out.arms.floor.errors, 5);
  assert.equal(out.machine.length, 5);
  for (const m of out.machine) {
    assert.ok(Math.abs(m.otherCores - 0.2) < 1e-9, String(m.otherCores));
    assert.ok(Math.abs(m.stealShare - 0.025) < 1e-9, String(m.stealShare));
    assert.equal(m.load1, 2.5);
  }
});

Deno.test("round runner stops at an abort and rejects a schedule it cannot run", async () => {
  const controller = new AbortController();
  let n = 0;
  const arms = [{
    id: "x",
    block: () => {
      if (++n === 4) controller.abort();
      return Promise.resolve({ samples: [1, 2], errors: 0 });
    },
  }];
  const out = await runRounds(arms, {
    rounds: 100,
    warmupRounds: 0,
    rng: createRng(1),
    signal: controller.signal,
  });
  assert.equal(n, 4);
  assert.equal(out.order.length, 3, "the interrupted round is not recorded");
  await assert.rejects(runRounds(arms, { rounds: 1, rng: createRng(1) }), RangeError);
  await assert.rejects(runRounds([], { rng: createRng(1) }), RangeError);
  await assert.rejects(runRounds([arms[0], arms[0]], { rng: createRng(1) }), RangeError);
  await assert.rejects(runRounds(arms, { blockMs: 0, rng: createRng(1) }), RangeError);
});

Deno.test("round runner collects garbage before every round, discarded ones too, never inside a block nor in the round's time", async () => {
  let now = 0;
  const clock = () => now;
  const events: string[] = [];
  let inBlock = false;
  // A full collection that takes 40 ms of the (fake) clock, and notes whether a block was running.
  const gc = () => {
    events.push(inBlock ? "gc inside a block" : "gc");
    now += 40;
  };
  const collector = roundCollector(gc, clock);
  const arms = ["a", "b", "c"].map((id) => ({
    id,
    block: async () => {
      inBlock = true;
      events.push(id);
      now += 5;
      await Promise.resolve();
      inBlock = false;
      return { samples: [5e6], errors: 0 };
    },
  }));
  const out = await runRounds(arms, {
    rounds: 6,
    warmupRounds: 2,
    rng: createRng(3),
    clock,
    betweenRounds: collector.betweenRounds,
  });
  assert.ok(!events.includes("gc inside a block"));
  // Each round opens with one collection, then its three blocks.
  assert.equal(events.length, 8 * 4);
  for (let r = 0; r < 8; r++) {
    assert.equal(events[r * 4], "gc");
    assert.deepEqual(events.slice(r * 4 + 1, r * 4 + 4).sort(), ["a", "b", "c"]);
  }
  assert.deepEqual(collector.done, { count: 8, ms: 320 });
  // The rounds and blocks keep their own time: 3 blocks of 5 ms, none of the collections' 40 ms.
  assert.deepEqual(out.roundMs, [15, 15, 15, 15, 15, 15]);
  for (const id of ["a", "b", "c"]) assert.deepEqual(out.arms[id].elapsedMs, [5, 5, 5, 5, 5, 5]);
  assert.match(
    collectionsNote(collector.done)!,
    /before each round, outside the timed blocks \(8, 320 ms in all\)/,
  );
});

Deno.test("without an exposed collector the rounds collect nothing and the run carries no note", async () => {
  const collector = roundCollector(undefined);
  const arms = [{ id: "x", block: () => Promise.resolve({ samples: [1, 2], errors: 0 }) }];
  await runRounds(arms, { rounds: 3, rng: createRng(1), betweenRounds: collector.betweenRounds });
  assert.deepEqual(collector.done, { count: 0, ms: 0 });
  assert.equal(collectionsNote(collector.done), undefined);
});
