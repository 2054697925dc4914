import assert from "node:assert/strict";
import { exceedsJsonDepth, jsonValueDepth } from "./json_depth.ts";

const enc = new TextEncoder();

Deno.test("exceedsJsonDepth counts objects and arrays and stops at the limit", () => {
  assert.equal(exceedsJsonDepth(enc.encode('{"a":[{"b":1}]}'), 3), false);
  assert.equal(exceedsJsonDepth(enc.encode('{"a":[{"b":1}]}'), 2), true);
  assert.equal(exceedsJsonDepth(enc.encode("[".repeat(100_000)), 64), true);
  assert.equal(exceedsJsonDepth(enc.encode("[[]] [[]]"), 2), false);
});

Deno.test("exceedsJsonDepth ignores brackets inside strings, escaped quotes included", () => {
  assert.equal(exceedsJsonDepth(enc.encode('{"a":"[[[[{{{{"}'), 1), false);
  assert.equal(exceedsJsonDepth(enc.encode('{"a":"\\"[[[["}'), 1), false);
  assert.equal(exceedsJsonDepth(enc.encode('{"a":"\\\\", "b":[[1]]}'), 2), true);
});

Deno.test("jsonValueDepth walks a 100,000-deep value without recursion", () => {
  assert.equal(jsonValueDepth(1), 0);
  assert.equal(jsonValueDepth({ a: [1, { b: [] }] }), 4);
  let deep: unknown = 0;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(jsonValueDepth(deep as never), 100_000);
});
