import assert from "node:assert/strict";
import { WorkGate } from "./work_gate.ts";

/** Spins for `ms` (the gated work of the test). */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* work */ }
}

Deno.test("a work gate lets other callbacks run between slices of gated work", async () => {
  const gate = new WorkGate(4);
  const order: string[] = [];
  // Twenty 1 ms steps queued at once; a timer due now must get in before they all ran.
  const steps = Array.from({ length: 20 }, async (_, i) => {
    await gate.enter();
    busy(1);
    gate.spent(1);
    order.push(`step ${i}`);
  });
  const other = new Promise<void>((r) => setTimeout(() => (order.push("other"), r()), 0));
  await Promise.all([...steps, other]);
  const at = order.indexOf("other");
  assert.ok(at > 0 && at < 20, `the other callback ran at ${at}: ${order.join(", ")}`);
  // Steps still run in the order they entered.
  assert.deepEqual(order.filter((o) => o !== "other"), steps.map((_, i) => `step ${i}`));
  assert.ok(gate.deferred >= 15, `${gate.deferred} steps waited`);
});

Deno.test("a work gate under its budget lets every step run at once", async () => {
  const gate = new WorkGate(50);
  for (let i = 0; i < 10; i++) {
    await gate.enter();
    gate.spent(1);
  }
  assert.equal(gate.deferred, 0);
});
