import assert from "node:assert/strict";
import { MAX_WAKEUPS_PER_ARRIVAL, runArrivals, START_EARLY_MS } from "./arrivals.ts";

/** A clock that only moves when the loop sleeps or a job finishes. */
function fakeTime() {
  let now = 0;
  return {
    clock: () => now,
    sleep: (ms: number) => {
      now += ms;
      return Promise.resolve();
    },
    advance: (ms: number) => void (now += ms),
  };
}

Deno.test("arrivals are due at start + i/rate and each job gets its own due time", async () => {
  const t = fakeTime();
  const dues: number[] = [];
  const r = await runArrivals((due) => {
    dues.push(due);
    return Promise.resolve();
  }, { rate: 100, maxInFlight: 4, durationMs: 50, clock: t.clock, sleep: t.sleep });
  assert.deepEqual(dues, [0, 10, 20, 30, 40, 50]);
  assert.equal(r.started, 6);
  assert.equal(r.waitedForSlot, 0);
  assert.equal(r.maxLagMs, 0);
});

Deno.test("an arrival that waits for a UE slot keeps its due time and is counted", async () => {
  const t = fakeTime();
  const started: { due: number; at: number }[] = [];
  const releases: (() => void)[] = [];
  const run = runArrivals((due) => {
    started.push({ due, at: t.clock() });
    return new Promise<void>((resolve) => releases.push(resolve));
  }, { rate: 1000, maxInFlight: 1, durationMs: 1, clock: t.clock, sleep: t.sleep });
  // The first job holds the only slot; the second (due at 1 ms) must wait for it.
  for (let i = 0; i < 50; i++) await Promise.resolve();
  assert.equal(started.length, 1);
  t.advance(5);
  releases[0]();
  for (let i = 0; i < 50 && started.length < 2; i++) await new Promise((r) => setTimeout(r, 0));
  assert.equal(started.length, 2);
  releases[1]();
  const r = await run;
  assert.deepEqual(started, [{ due: 0, at: 0 }, { due: 1, at: 6 }]);
  assert.equal(r.waitedForSlot, 1);
  assert.equal(r.maxLagMs, 5);
  // Waiting 5 ms for a slot is the system queueing, not the loop falling behind.
  assert.equal(r.onTime, 2);
});

Deno.test("arrivals that fall due while the loop waits for a slot are not late on the loop's account", async () => {
  const t = fakeTime();
  const started: { due: number; at: number }[] = [];
  let release: (() => void) | undefined;
  const run = runArrivals((due, i) => {
    started.push({ due, at: t.clock() });
    // The first flow holds the only slot for 10 ms (a stalled connection); the rest end at once.
    return i === 0 ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
  }, { rate: 1000, maxInFlight: 1, durationMs: 6, clock: t.clock, sleep: t.sleep, onTimeMs: 2 });
  for (let i = 0; i < 50; i++) await Promise.resolve();
  assert.equal(started.length, 1);
  t.advance(10);
  release!();
  const r = await run;
  // Arrivals 1…6 were due at 1…6 ms and started at 11 ms or after, each timed from its due time.
  assert.deepEqual(started.map((s) => s.due), [0, 1, 2, 3, 4, 5, 6]);
  assert.ok(started.slice(1).every((s) => s.at >= 11), JSON.stringify(started));
  assert.ok(r.maxLagMs >= 10);
  // The loop itself went on as soon as the slot came free: every arrival is on time.
  assert.equal(r.onTime, 7);
});

Deno.test("arrivals are bounded by count and reject bad rates", async () => {
  const t = fakeTime();
  let n = 0;
  const r = await runArrivals(() => Promise.resolve(void n++), {
    rate: 1e6,
    maxInFlight: 8,
    durationMs: 60_000,
    maxCount: 7,
    clock: t.clock,
    sleep: t.sleep,
  });
  assert.equal(n, 7);
  assert.equal(r.started, 7);
  await assert.rejects(
    runArrivals(() => Promise.resolve(), { rate: 0, maxInFlight: 1, durationMs: 1 }),
    RangeError,
  );
});

Deno.test("an arrival the loop itself reaches late is not on time", async () => {
  const t = fakeTime();
  // The loop oversleeps by 5 ms on every third wait (a busy event loop), by 0 otherwise.
  let waits = 0;
  const sleep = (ms: number) => {
    t.advance(ms + (++waits % 3 === 0 ? 5 : 0));
    return Promise.resolve();
  };
  const r = await runArrivals(() => Promise.resolve(), {
    rate: 100,
    maxInFlight: 4,
    durationMs: 90,
    clock: t.clock,
    sleep,
    onTimeMs: 2,
  });
  assert.ok(r.started >= 5, `${r.started} started`);
  assert.ok(r.onTime < r.started && r.onTime > 0, `${r.onTime} of ${r.started} on time`);
  assert.ok(r.maxLagMs > 2);
  const steady = fakeTime();
  const s = await runArrivals(() => Promise.resolve(), {
    rate: 100,
    maxInFlight: 1,
    durationMs: 90,
    clock: steady.clock,
    sleep: steady.sleep,
  });
  assert.equal(s.onTime, s.started);
});

Deno.test("the loop sets at most two timers per arrival and none for arrivals already due", async () => {
  const t = fakeTime();
  // A timer that fires early (at a third of what was asked) never makes the loop spin.
  const calls: number[] = [];
  const early = (ms: number) => {
    calls.push(ms);
    t.advance(ms / 3);
    return Promise.resolve();
  };
  const dues: { due: number; at: number }[] = [];
  const r = await runArrivals((due) => {
    dues.push({ due, at: t.clock() });
    return Promise.resolve();
  }, { rate: 100, maxInFlight: 4, durationMs: 200, clock: t.clock, sleep: early });
  assert.equal(r.started, 21);
  assert.equal(r.wakeups, calls.length);
  assert.ok(r.wakeups <= MAX_WAKEUPS_PER_ARRIVAL * r.started, `${r.wakeups} wake-ups`);
  assert.equal(MAX_WAKEUPS_PER_ARRIVAL, 2);
  // A job started early (the timer fired early twice) is given the time it really started.
  dues.forEach((d, i) => {
    assert.equal(d.due, d.at);
    assert.ok(d.at <= i * 10 && d.at > i * 10 - 10, `arrival ${i} at ${d.at}`);
  });

  // An arrival less than START_EARLY_MS ahead starts at once, without a timer.
  const soon = fakeTime();
  const given: number[] = [];
  const q = await runArrivals((due) => Promise.resolve(void given.push(due)), {
    rate: 2000,
    maxInFlight: 8,
    durationMs: 2,
    clock: soon.clock,
    sleep: soon.sleep,
  });
  assert.equal(START_EARLY_MS, 1);
  assert.equal(q.started, 5);
  // Arrival 1 (due 0.5) starts at 0; arrival 2 (due 1) waits on a timer; and so on.
  assert.deepEqual(given, [0, 0, 1, 1, 2]);
  assert.equal(q.wakeups, 2);

  // A loop that overslept 35 ms starts the arrivals it missed at once, without timers.
  const late = fakeTime();
  let first = true;
  const oversleep = (ms: number) => {
    late.advance(ms + (first ? 35 : 0));
    first = false;
    return Promise.resolve();
  };
  const s = await runArrivals(() => Promise.resolve(), {
    rate: 100,
    maxInFlight: 8,
    durationMs: 100,
    clock: late.clock,
    sleep: oversleep,
  });
  assert.equal(s.started, 11);
  // Arrivals 2, 3 and 4 (due at 20, 30, 40 ms) were already due when the first timer fired at 45.
  assert.equal(s.wakeups, s.started - 1 - 3);
  // Arrival 1 (due 10, reached at 45) and the three behind it were late; the rest on time.
  assert.equal(s.onTime, s.started - 4);
  assert.equal(s.maxLagMs, 35);
});

Deno.test("a detached block returns when its last arrival starts and drains later", async () => {
  const t = fakeTime();
  const releases: (() => void)[] = [];
  const r = await runArrivals(
    () => new Promise<void>((resolve) => releases.push(resolve)),
    { rate: 100, maxInFlight: 8, durationMs: 30, clock: t.clock, sleep: t.sleep, detach: true },
  );
  assert.equal(r.started, 4);
  assert.equal(releases.length, 4);
  let drained = false;
  r.drained.then(() => (drained = true));
  releases.slice(0, 3).forEach((f) => f());
  await Promise.resolve();
  assert.equal(drained, false);
  releases[3]();
  await r.drained;
  assert.equal(drained, true);
});
