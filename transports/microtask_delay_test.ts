import assert from "node:assert/strict";
import { MicrotaskDelay } from "./microtask_delay.ts";

/** Records `tag` at each of the next `n` microtask hops, as "tag1", "tag2", … */
function ticks(log: string[], tag: string, n: number): void {
  let i = 0;
  const step = () => {
    log.push(`${tag}${++i}`);
    if (i < n) queueMicrotask(step);
  };
  queueMicrotask(step);
}

Deno.test("a microtask delay runs its action in the n-th hop, once for every request made meanwhile", async () => {
  const log: string[] = [];
  const delay = new MicrotaskDelay(3, () => log.push("run"));
  ticks(log, "t", 4);
  delay.request();
  delay.request();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(log, ["t1", "t2", "t3", "run", "t4"]);
  // a request after the run schedules the next one
  log.length = 0;
  delay.request();
  ticks(log, "u", 3);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(log, ["u1", "u2", "run", "u3"]);
});
