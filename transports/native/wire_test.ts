import assert from "node:assert/strict";
import {
  decodeHeaderBlock,
  decodeRequestBlock,
  decodeResponseBlock,
  encodeHeaderBlock,
  EVENT_HEADER_LEN,
  type HeaderList,
  parseQuery,
  readEventRecord,
  RequestBlockWriter,
  ResponseBlockWriter,
} from "./wire.ts";

Deno.test("header block round-trips names and values, including Latin-1 bytes and empty values", () => {
  const list: HeaderList = [[":status", "200"], ["x-empty", ""], ["x-latin1", "grüße\xff"], [
    "a",
    "b",
  ]];
  const block = encodeHeaderBlock(list);
  assert.deepEqual(decodeHeaderBlock(block), list);
  // 8 bytes of lengths per field, then one byte per character
  assert.equal(block.length, list.reduce((n, [k, v]) => n + 8 + k.length + v.length, 0));
  // little-endian lengths, whatever the host
  assert.deepEqual([...block.subarray(0, 8)], [7, 0, 0, 0, 3, 0, 0, 0]);
});

Deno.test("header block encoding refuses characters above U+00FF and CR/LF in values", () => {
  assert.throws(() => encodeHeaderBlock([["x", "✓"]]), TypeError);
  assert.throws(() => encodeHeaderBlock([["x", "a\r\nb: c"]]), TypeError);
  assert.throws(() => encodeHeaderBlock([["bad name", "v"]]), TypeError);
});

Deno.test("header block decoding rejects a truncated block", () => {
  const block = encodeHeaderBlock([["content-type", "application/json"]]);
  assert.throws(() => decodeHeaderBlock(block.subarray(0, block.length - 1)), SyntaxError);
  assert.throws(() => decodeHeaderBlock(block.subarray(0, 5)), SyntaxError);
});

Deno.test("request writer drops connection fields and adds content-length; the server side reads it back", () => {
  const w = new RequestBlockWriter();
  const n = w.encode("post", "http", "h:1", "/a/b?x=1&y=2", {
    "Content-Type": "application/json",
    "Connection": "close",
    "Host": "evil",
    "X-Twice": "1",
  }, 5);
  const body = new Uint8Array([1, 2, 3, 4, 5]);
  const req = decodeRequestBlock(w.buffer.subarray(0, n), body);
  assert.equal(req.method, "POST");
  assert.equal(req.path, "/a/b");
  assert.equal(req.query.get("y"), "2");
  assert.deepEqual(req.headers, {
    "content-type": "application/json",
    "x-twice": "1",
    "content-length": "5",
  });
  assert.equal(req.body, body);
  assert.throws(
    () => decodeRequestBlock(encodeHeaderBlock([[":method", "GET"]]), body),
    SyntaxError,
  );
});

Deno.test("response writer puts :status first and content-length last, none for 204", () => {
  const w = new ResponseBlockWriter();
  const body = new Uint8Array(3);
  let n = w.encode({ status: 201, headers: { "content-type": "x/y", "location": "/l" }, body });
  assert.deepEqual(decodeHeaderBlock(w.buffer.subarray(0, n)), [
    [":status", "201"],
    ["content-type", "x/y"],
    ["location", "/l"],
    ["content-length", "3"],
  ]);
  const head = decodeResponseBlock(w.buffer.subarray(0, n));
  assert.equal(head.status, 201);
  assert.equal(head.headers["location"], "/l");
  n = w.encode({ status: 204, headers: {}, body: new Uint8Array(0) });
  assert.deepEqual(decodeHeaderBlock(w.buffer.subarray(0, n)), [[":status", "204"]]);
});

Deno.test("event records are read little-endian at their offsets", () => {
  const b = new Uint8Array(2 * EVENT_HEADER_LEN);
  const v = new DataView(b.buffer);
  v.setUint32(32, 2, true);
  v.setUint32(36, 7, true);
  v.setBigInt64(40, -1n, true);
  v.setBigInt64(48, 413n, true);
  v.setUint32(56, 10, true);
  v.setUint32(60, 20, true);
  assert.deepEqual(readEventRecord(v, 32), {
    type: 2,
    connId: 7,
    streamId: -1,
    code: 413,
    headerLength: 10,
    bodyLength: 20,
  });
  // i64 fields are read whole, not by their low 32 bits
  v.setBigInt64(40, 2n ** 40n + 3n, true);
  v.setBigInt64(48, -(2n ** 33n), true);
  const into = readEventRecord(v, 0);
  assert.equal(readEventRecord(v, 32, into), into);
  assert.equal(into.streamId, 2 ** 40 + 3);
  assert.equal(into.code, -(2 ** 33));
});

Deno.test("repeated and nearly equal header values decode to their own strings", () => {
  // "aqplication/json" differs only in a byte the intern table's hash skips: same slot, other string
  const values = [
    "application/json",
    "application/jsoN",
    "aqplication/json",
    "application/json",
    "",
    "a".repeat(200),
  ];
  for (let round = 0; round < 3; round++) {
    const list: HeaderList = values.map((v, i) => [`x-${i}`, v]);
    assert.deepEqual(decodeHeaderBlock(encodeHeaderBlock(list)), list);
  }
});

Deno.test("query parsing gives the pairs URLSearchParams gives, for plain, empty, repeated, encoded and non-ASCII queries", () => {
  for (
    const q of [
      "",
      "size=256",
      "a=1&b=2&a=3",
      "a&b=",
      "&&a=1&&",
      "=x",
      "a=b=c",
      "x=%41+b",
      "%zz=1",
      "é=ü",
      "k=v&",
    ]
  ) {
    assert.deepEqual([...parseQuery(q)], [...new URLSearchParams(q)], JSON.stringify(q));
  }
});
