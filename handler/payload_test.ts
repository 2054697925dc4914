import assert from "node:assert/strict";
import { buildPayload, createPayloadCache, MAX_PAYLOAD_BYTES } from "./payload.ts";

const decoder = new TextDecoder();

for (const size of [1, 2, 3, 7, 8, 9, 63, 64, 65, 255, 256, 16384, 1024 * 1024]) {
  Deno.test(`buildPayload(${size}) is exactly ${size} bytes of valid ASCII JSON`, () => {
    const body = buildPayload(size);
    assert.equal(body.length, size);
    assert.ok(body.every((b) => b >= 0x20 && b < 0x7f), "printable ASCII only");
    JSON.parse(decoder.decode(body));
  });
}

Deno.test("buildPayload at 16 MiB is valid JSON of exactly 16 MiB", () => {
  const body = buildPayload(MAX_PAYLOAD_BYTES);
  assert.equal(body.length, 16 * 1024 * 1024);
  const parsed = JSON.parse(decoder.decode(body));
  assert.equal(parsed.p.length, MAX_PAYLOAD_BYTES - 8);
});

Deno.test("buildPayload uses the documented shapes for tiny and small sizes", () => {
  assert.equal(decoder.decode(buildPayload(1)), "0");
  assert.equal(decoder.decode(buildPayload(2)), "{}");
  assert.equal(decoder.decode(buildPayload(5)), "{   }");
  assert.equal(decoder.decode(buildPayload(8)), '{"p":""}');
  assert.equal(decoder.decode(buildPayload(12)), '{"p":"abcd"}');
});

Deno.test("buildPayload filler repeats its 64-character alphabet in order", () => {
  const value = JSON.parse(decoder.decode(buildPayload(8 + 200))).p as string;
  assert.equal(value.length, 200);
  for (let i = 64; i < 200; i++) assert.equal(value[i], value[i - 64]);
  assert.equal(new Set(value.slice(0, 64)).size, 64);
});

Deno.test("buildPayload is deterministic", () => {
  assert.deepEqual(buildPayload(5000), buildPayload(5000));
});

Deno.test("buildPayload rejects 0, negatives, fractions, NaN and 16 MiB + 1", () => {
  for (const bad of [0, -1, 1.5, NaN, MAX_PAYLOAD_BYTES + 1]) {
    assert.throws(() => buildPayload(bad), RangeError, String(bad));
  }
});

Deno.test("payload cache returns the same bytes object for a repeated size", () => {
  const cache = createPayloadCache();
  const first = cache.get(256);
  assert.equal(cache.get(256), first);
  assert.equal(cache.bytes, 256);
});

Deno.test("payload cache drops least recently used bodies beyond its budget", () => {
  const cache = createPayloadCache({ maxBytes: 300 });
  const a = cache.get(100);
  cache.get(150);
  cache.get(100); // a is now the most recent
  cache.get(120); // evicts 150
  assert.equal(cache.bytes, 220);
  assert.equal(cache.get(100), a);
  const big = cache.get(400); // over budget: built, not kept
  assert.equal(big.length, 400);
  assert.equal(cache.bytes, 220);
  assert.notEqual(cache.get(400), big);
});

Deno.test("payload cache drops the oldest bodies first, however many must go", () => {
  const cache = createPayloadCache({ maxBytes: 300 });
  const a = cache.get(100);
  const b = cache.get(90);
  const c = cache.get(80);
  cache.get(90); // order of use: 100, 80, 90
  const d = cache.get(200); // 100 and 80 go, 90 stays
  assert.equal(cache.bytes, 290);
  assert.equal(cache.get(90), b); // order of use: 200, 90
  assert.equal(cache.get(200), d); // order of use: 90, 200
  assert.notEqual(cache.get(80), c); // built again: 90 goes
  assert.equal(cache.bytes, 280);
  assert.notEqual(cache.get(100), a); // built again: 200 goes
  assert.equal(cache.bytes, 180);
});
