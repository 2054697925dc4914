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

Deno.test("deadline timer does nothing for a negative deadline and stops on cancel", async () => {
  let fired = 0;
  const t = new DeadlineTimer(() => fired++);
  t.arm(-1);
  t.arm(5);
  t.cancel();
  t.cancel();
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fired, 0);
});
