import assert from "node:assert/strict";
import { encodePlan, type LoadPlan } from "./plan.ts";

const base: LoadPlan = {
  protocol: "h2",
  host: "127.0.0.1",
  port: 8080,
  headers: [[":method", "GET"], [":path", "/"]],
  requests: 100,
};

Deno.test("load plan encodes the limits' largest values", () => {
  const rec = encodePlan({ ...base, connections: 1000, streams: 4194, warmupMs: 2 ** 36 });
  const v = new DataView(rec.buffer);
  assert.equal(v.getUint32(8, true), 1000);
  assert.equal(v.getUint32(12, true), 4194);
  assert.equal(v.getBigUint64(40, true), 2n ** 36n * 1_000_000n);
});

Deno.test("load plan refuses more request slots than the engine allocates", () => {
  assert.throws(
    () => encodePlan({ ...base, connections: 100_000, streams: 100 }),
    /connections × streams must be at most 4194304/,
  );
});

Deno.test("load plan refuses times whose deadlines would wrap in the engine", () => {
  assert.throws(() => encodePlan({ ...base, warmupMs: 2 ** 40 }), /warm-up must be at most/);
  assert.throws(
    () => encodePlan({ ...base, requests: undefined, durationMs: 1e15 }),
    /duration must be at most/,
  );
});

Deno.test("load plan refuses a rate so low that its schedule outlasts the engine's clock", () => {
  assert.throws(() => encodePlan({ ...base, rate: 1e-300 }), /rate 1e-300 is too low/);
  assert.throws(() => encodePlan({ ...base, requests: 1e9, rate: 1e-3 }), /too low/);
  assert.ok(encodePlan({ ...base, rate: 1 }).length > 80);
});
