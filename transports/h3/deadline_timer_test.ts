import assert from "node:assert/strict";
import { DeadlineTimer } from "./deadline_timer.ts";

Deno.test("deadline timer fires once for the earliest deadline and ignores later ones", async () => {
  let fired = 0;
  const done = Promise.withResolvers<void>();
  const t = new DeadlineTimer(() => {
    fired++;
    done.resolve();
  });
  t.arm(50);
  t.arm(5); // earlier: re-armed
  t.arm(40); // later: ignored
  const t0 = performance.now();
  await done.promise;
  const elapsed = performance.now() - t0;
  assert.ok(elapsed < 40, `fired after ${elapsed.toFixed(1)} ms, the 5 ms deadline was not taken`);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(fired, 1);
});

Deno.test("deadline timer arms nothing for a negative deadline", async () => {
  let fired = 0;
  const t = new DeadlineTimer(() => fired++);
  t.arm(-1);
  // Nothing can be awaited for an event that must not happen: wait past when it would have.
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fired, 0);
  t.cancel();
});

Deno.test("a negative deadline leaves an armed timer alone", async () => {
  const done = Promise.withResolvers<void>();
  const t = new DeadlineTimer(() => done.resolve());
  t.arm(5);
  t.arm(-1);
  const guard = setTimeout(() => done.reject(new Error("the 5 ms deadline never fired")), 1000);
  await done.promise;
  clearTimeout(guard);
});

Deno.test("deadline timer stops on cancel, and cancel is idempotent", async () => {
  let fired = 0;
  const t = new DeadlineTimer(() => fired++);
  t.arm(5);
  t.cancel();
  t.cancel();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fired, 0);
});
