import assert from "node:assert/strict";
import { HeapReturn, LARGE_ALLOCATION_BYTES, mapLargeAllocations } from "./heap_return.ts";

/** A HeapReturn on a clock the test moves and a scheduler it runs by hand. */
function manual(gapMs = 2000) {
  let now = 0;
  let trims = 0;
  const waiting: { fn: () => void; ms: number }[] = [];
  const heap = new HeapReturn({
    gapMs,
    trim: () => trims++,
    now: () => now,
    schedule: (fn, ms) => waiting.push({ fn, ms }),
  });
  return {
    heap,
    trims: () => trims,
    waiting,
    advance: (ms: number) => (now += ms),
  };
}

Deno.test("HeapReturn trims at once when the last trim is a gap ago", () => {
  const m = manual();
  m.heap.released();
  assert.equal(m.trims(), 1);
  assert.equal(m.waiting.length, 0);
  m.advance(2000);
  m.heap.released();
  assert.equal(m.trims(), 2);
  assert.equal(m.heap.trims, 2);
});

Deno.test("HeapReturn keeps one trim waiting for the rest of the gap, however many connections close", () => {
  const m = manual();
  m.heap.released();
  m.advance(500);
  for (let i = 0; i < 100; i++) m.heap.released();
  assert.equal(m.trims(), 1, "trimmed again within the gap");
  assert.equal(m.waiting.length, 1);
  assert.equal(m.waiting[0].ms, 1500);
  assert.ok(m.heap.pending);
  m.advance(1500);
  m.waiting[0].fn();
  assert.equal(m.trims(), 2);
  assert.ok(!m.heap.pending);
  // the next release waits a whole gap after that trim
  m.heap.released();
  assert.equal(m.trims(), 2);
  assert.equal(m.waiting.at(-1)!.ms, 2000);
});

Deno.test("HeapReturn refuses a gap that is negative or not finite", () => {
  assert.throws(() => new HeapReturn({ gapMs: -1 }), RangeError);
  assert.throws(() => new HeapReturn({ gapMs: NaN }), RangeError);
  assert.throws(() => new HeapReturn({ gapMs: Infinity }), RangeError);
});

Deno.test({
  name: "mapLargeAllocations puts glibc's mapping threshold in force on Linux",
  ignore: Deno.build.os !== "linux",
  fn: () => {
    assert.equal(mapLargeAllocations(), true);
    assert.equal(mapLargeAllocations(), true, "a second call keeps it");
    assert.equal(LARGE_ALLOCATION_BYTES, 1024 * 1024);
  },
});

Deno.test("HeapReturn's default trim runs glibc's malloc_trim without failing", () => {
  const heap = new HeapReturn({ gapMs: 0 });
  heap.released();
  heap.released();
  assert.equal(heap.trims, 2);
  assert.ok(!heap.pending);
});
