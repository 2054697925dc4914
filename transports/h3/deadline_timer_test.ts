import assert from "node:assert/strict";
import { DeadlineTimer, type TimerClock } from "./deadline_timer.ts";

/** A clock that moves only when the test says so. */
class ManualClock implements TimerClock {
  #now = 0;
  #next = 1;
  #timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): number {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + ms, fn });
    return id;
  }

  clearTimeout(id: unknown): void {
    this.#timers.delete(id as number);
  }

  /** Timers still pending. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves the clock forward by `ms`, running each timer due on the way at its own time. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= end).sort((a, b) =>
        a[1].at - b[1].at
      );
      if (due.length === 0) break;
      const [id, t] = due[0];
      this.#timers.delete(id);
      this.#now = t.at;
      t.fn();
    }
    this.#now = end;
  }
}

Deno.test("deadline timer fires once, at the earliest deadline, and ignores later ones", () => {
  const clock = new ManualClock();
  const firedAt: number[] = [];
  const t = new DeadlineTimer(() => firedAt.push(clock.now()), clock);
  t.arm(50);
  t.arm(5); // earlier: re-armed
  t.arm(40); // later: ignored
  assert.equal(clock.pending, 1, "one timer for the three deadlines");
  clock.advance(4);
  assert.deepEqual(firedAt, []);
  clock.advance(1);
  assert.deepEqual(firedAt, [5]);
  clock.advance(100);
  assert.deepEqual(firedAt, [5], "the 40 and 50 ms deadlines did not fire");
});

Deno.test("deadline timer keeps its timer for a deadline less than 1 ms earlier", () => {
  const clock = new ManualClock();
  const firedAt: number[] = [];
  const t = new DeadlineTimer(() => firedAt.push(clock.now()), clock);
  t.arm(10);
  t.arm(9.5);
  clock.advance(20);
  assert.deepEqual(firedAt, [10]);
  // Once fired it arms again.
  t.arm(3);
  clock.advance(3);
  assert.deepEqual(firedAt, [10, 23]);
});

Deno.test("deadline timer arms nothing for a negative deadline", () => {
  const clock = new ManualClock();
  let fired = 0;
  const t = new DeadlineTimer(() => fired++, clock);
  t.arm(-1);
  assert.equal(clock.pending, 0);
  clock.advance(1000);
  assert.equal(fired, 0);
});

Deno.test("a negative deadline leaves an armed timer alone", () => {
  const clock = new ManualClock();
  let fired = 0;
  const t = new DeadlineTimer(() => fired++, clock);
  t.arm(5);
  t.arm(-1);
  clock.advance(5);
  assert.equal(fired, 1);
});

Deno.test("deadline timer stops on cancel, and cancel is idempotent", () => {
  const clock = new ManualClock();
  let fired = 0;
  const t = new DeadlineTimer(() => fired++, clock);
  t.arm(5);
  t.cancel();
  t.cancel();
  assert.equal(clock.pending, 0);
  clock.advance(100);
  assert.equal(fired, 0);
});

Deno.test("deadline timer on the system clock fires once for a deadline due now, and again when armed again", async () => {
  let fired = 0;
  let done = Promise.withResolvers<void>();
  const t = new DeadlineTimer(() => {
    fired++;
    done.resolve();
  });
  t.arm(0);
  t.arm(0); // the same deadline: still one timer
  await done.promise;
  assert.equal(fired, 1);
  done = Promise.withResolvers<void>();
  t.arm(0);
  await done.promise;
  assert.equal(fired, 2, "a fired timer can be armed again");
  t.cancel();
});
