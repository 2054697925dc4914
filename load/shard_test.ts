import assert from "node:assert/strict";
import { parseShard, shardFromIndexEnv, shardPlan, shareOf } from "./shard.ts";
import type { LoadPlan } from "./plan.ts";

const plan: LoadPlan = {
  protocol: "h2",
  host: "10.0.0.1",
  port: 80,
  headers: [[":method", "GET"]],
  connections: 10,
  streams: 8,
  threads: 4,
  requests: 1003,
  rate: 1000,
};

Deno.test("shards of a plan add up to the plan, the first shards taking the remainder", () => {
  for (const n of [1, 2, 3, 4, 7, 10]) {
    const parts = Array.from({ length: n }, (_, index) => shardPlan(plan, { index, count: n }));
    assert.equal(parts.reduce((s, p) => s + p.connections!, 0), 10, `connections over ${n}`);
    assert.equal(parts.reduce((s, p) => s + p.requests!, 0), 1003, `requests over ${n}`);
    assert.ok(Math.abs(parts.reduce((s, p) => s + p.rate!, 0) - 1000) < 1e-9, `rate over ${n}`);
    // the remainder goes to the lowest indexes, never more than one apart
    const c = parts.map((p) => p.connections!);
    assert.deepEqual(c, [...c].sort((a, b) => b - a));
    assert.ok(c[0] - c.at(-1)! <= 1);
    for (const p of parts) {
      assert.equal(p.streams, 8);
      assert.ok(p.threads! <= p.connections!);
    }
  }
  assert.deepEqual([0, 1, 2].map((index) => shareOf(10, { index, count: 3 })), [4, 3, 3]);
});

Deno.test("a plan is refused when a shard would get no connection or no request", () => {
  assert.throws(
    () => shardPlan(plan, { index: 0, count: 11 }),
    /11 shards need at least 11 connections/,
  );
  assert.throws(
    () => shardPlan({ ...plan, connections: 20, requests: 5 }, { index: 0, count: 8 }),
    /8 shards need at least 8 requests/,
  );
});

Deno.test("shard identities parse from I/N and from Kubernetes' completion index", () => {
  assert.deepEqual(parseShard("2/4"), { index: 2, count: 4 });
  assert.throws(() => parseShard("4/4"), /index must be 0-3/);
  assert.throws(() => parseShard("1-4"), /I\/N/);
  assert.deepEqual(shardFromIndexEnv("3", 8), { index: 3, count: 8 });
  assert.equal(shardFromIndexEnv(undefined, 8), undefined);
  assert.throws(() => shardFromIndexEnv("x", 8), /JOB_COMPLETION_INDEX/);
});
