import assert from "node:assert/strict";
import { decodeHeaderBlock, encodeHeaderBlock, type HeaderList } from "./header_block.ts";

Deno.test("header block round-trips names and values, including non-ASCII and empty values", () => {
  const list: HeaderList = [[":status", "200"], ["x-empty", ""], ["x-utf8", "grüße ✓"], ["a", "b"]];
  const block = encodeHeaderBlock(list);
  assert.deepEqual(decodeHeaderBlock(block), list);
  // name length + value length prefixes: 8 bytes per field plus the UTF-8 bytes
  const bytes = list.reduce((n, [k, v]) => n + 8 + new TextEncoder().encode(k + v).length, 0);
  assert.equal(block.length, bytes);
});

Deno.test("header block decoding rejects a truncated block", () => {
  const block = encodeHeaderBlock([["content-type", "application/json"]]);
  assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 1)), SyntaxError);
  assert.throws(() => decodeHeaderBlock(block.subarray(0, 5)), SyntaxError);
});
