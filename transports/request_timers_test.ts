import assert from "node:assert/strict";
import { RequestTimers, type TimerClock, TimerEntry } from "./request_timers.ts";
import { PendingStreams, timedRequest } from "./client_core.ts";
import { type ClientResponse, TimeoutError } from "./types.ts";

/** A clock that moves only when told, running the timers set on it in deadline order. */
class FakeClock implements TimerClock {
  t = 0;
  #timers = new Map<number, { at: number; fire: () => void }>();
  #id = 0;
  /** Most system timers armed at once. */
  maxArmed = 0;
  /** System timers set so far. */
  sets = 0;
  /** Timers that keep the process alive (not unreferenced). */
  #unref = new Set<number>();
  referenced(): number {
    return [...this.#timers.keys()].filter((id) => !this.#unref.has(id)).length;
  }
  ref(handle: unknown, on: boolean): void {
    if (on) this.#unref.delete(handle as number);
    else this.#unref.add(handle as number);
  }
  now(): number {
    return this.t;
  }
  set(fire: () => void, ms: number): unknown {
    this.sets++;
    this.#timers.set(++this.#id, { at: this.t + ms, fire });
    this.maxArmed = Math.max(this.maxArmed, this.#timers.size);
    return this.#id;
  }
  clear(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  /** Runs every timer due up to `to`, each at its own time, then stands at `to`. */
  advance(to: number): void {
    for (;;) {
      let first: [number, { at: number; fire: () => void }] | undefined;
      for (const e of this.#timers) if (!first || e[1].at < first[1].at) first = e;
      if (!first || first[1].at > to) break;
      this.#timers.delete(first[0]);
      this.t = first[1].at;
      first[1].fire();
    }
    this.t = to;
  }
}

class Probe extends TimerEntry {
  expiredAt: number[] = [];
  constructor(private clock: FakeClock) {
    super();
  }
  expire(): void {
    this.expiredAt.push(this.clock.now());
  }
}

const ok: ClientResponse = { status: 200, headers: {}, body: new Uint8Array(0) };

Deno.test("request timers expire each entry at its deadline with one system timer", () => {
  const clock = new FakeClock();
  const timers = new RequestTimers(clock);
  const a = new Probe(clock), b = new Probe(clock), c = new Probe(clock);
  timers.add(a, 100);
  clock.advance(10);
  timers.add(b, 30); // earlier than a: the timer moves to 40
  timers.add(c, 100);
  timers.remove(b); // answered: the timer fires early at 40, expires nothing, re-arms
  clock.advance(99);
  assert.deepEqual([a.expiredAt, b.expiredAt, c.expiredAt], [[], [], []]);
  clock.advance(200);
  assert.deepEqual([a.expiredAt, c.expiredAt], [[100], [110]]);
  assert.equal(b.expiredAt.length, 0);
  assert.equal(clock.maxArmed, 1);
  assert.equal(timers.size, 0);
  assert(!timers.armed);
});

Deno.test("request timers set no system timer per request when requests are answered one by one", () => {
  const clock = new FakeClock();
  const timers = new RequestTimers(clock);
  for (let i = 0; i < 1000; i++) {
    const p = new Probe(clock);
    timers.add(p, 5000);
    assert.equal(clock.referenced(), 1, "a waiting request keeps the process alive");
    clock.advance(clock.t + 3);
    timers.remove(p);
    assert.equal(clock.referenced(), 0, "nothing waits: the timer keeps nothing alive");
  }
  // the first timer fires early at 5000, finds nothing and is not set again
  clock.advance(20_000);
  assert.ok(clock.sets <= 2, `${clock.sets} system timers for 1000 requests`);
  assert(!timers.armed);
});

Deno.test("10,000 pending requests with mixed timeouts: each late one times out on time, the rest are answered", async () => {
  const clock = new FakeClock();
  const timers = new RequestTimers(clock);
  const table = new PendingStreams();
  const TIMEOUTS = [5, 20, 100, 1000, 5000, 37];
  const N = 10_000;
  const timedOutAt = new Map<number, number>();
  const requests: { id: number; start: number; timeout: number; answered: boolean }[] = [];
  const promises: Promise<ClientResponse>[] = [];
  // events by time: a request starts every 0.1 ms (10 per ms); every third one is answered
  // at half its timeout, the others never
  const answers = new Map<number, number[]>();
  for (let i = 0; i < N; i++) {
    const start = Math.floor(i / 10), timeout = TIMEOUTS[i % TIMEOUTS.length];
    const answered = i % 3 === 0;
    requests.push({ id: i, start, timeout, answered });
    if (answered) {
      const at = start + Math.floor(timeout / 2);
      answers.set(at, [...(answers.get(at) ?? []), i]);
    }
  }
  const times = [...new Set([...requests.map((r) => r.start), ...answers.keys()])].sort((a, b) =>
    a - b
  );
  let next = 0;
  for (const t of times) {
    clock.advance(t);
    for (const id of answers.get(t) ?? []) table.take(id)?.resolve(ok);
    while (next < N && requests[next].start === t) {
      const id = next++;
      const r = timedRequest(requests[id].timeout, () => {
        timedOutAt.set(id, clock.now());
        table.delete(id); // as a session resets the stream
      }, timers);
      table.add(id, r.pending);
      promises.push(r.promise);
    }
  }
  clock.advance(10_000);
  const results = await Promise.allSettled(promises);
  for (const r of requests) {
    const got = results[r.id];
    if (r.answered) {
      assert.equal(got.status, "fulfilled", `request ${r.id} was answered`);
      assert(!timedOutAt.has(r.id));
    } else {
      assert.equal(got.status, "rejected", `request ${r.id} timed out`);
      assert((got as PromiseRejectedResult).reason instanceof TimeoutError);
      assert.equal(timedOutAt.get(r.id), r.start + r.timeout, `request ${r.id} timed out on time`);
    }
  }
  assert.equal(timedOutAt.size, requests.filter((r) => !r.answered).length);
  assert.equal(clock.maxArmed, 1, "one system timer for all pending requests");
  assert.equal(table.size, 0);
  assert.equal(timers.size, 0);
  assert(!timers.armed);
});
