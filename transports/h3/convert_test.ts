import assert from "node:assert/strict";
import { decodeResponseBlock, encodeHeaderBlock } from "../native/wire.ts";
import {
  requestHeaderList,
  responseHeaderList,
  toClientResponse,
  toSbiRequest,
} from "./convert.ts";

Deno.test("h3 convert builds pseudo-headers first and drops connection-specific fields", () => {
  const list = requestHeaderList("post", "127.0.0.1:7778", "/a?b=1", {
    "Content-Type": "application/json",
    Connection: "keep-alive",
    Host: "x",
  }, 3);
  assert.deepEqual(list, [
    [":method", "POST"],
    [":scheme", "https"],
    [":authority", "127.0.0.1:7778"],
    [":path", "/a?b=1"],
    ["content-type", "application/json"],
    ["content-length", "3"],
  ]);
  assert.throws(() => requestHeaderList("GET", "h", "nope", {}, 0), TypeError);
});

Deno.test("h3 convert turns a received request into an SbiRequest with path and query split", () => {
  const body = new Uint8Array([1, 2, 3]);
  const req = toSbiRequest([
    [":method", "put"],
    [":scheme", "https"],
    [":authority", "h"],
    [":path", "/nnrf-nfm/v1/nf-instances/1?x=2&y=3"],
    ["accept", "a"],
    ["accept", "b"],
  ], body);
  assert.equal(req.method, "PUT");
  assert.equal(req.path, "/nnrf-nfm/v1/nf-instances/1");
  assert.equal(req.query.get("y"), "3");
  assert.deepEqual(req.headers, { accept: "a, b" });
  assert.equal(req.body, body);
  assert.throws(() => toSbiRequest([[":method", "GET"]], body), SyntaxError);
});

Deno.test("h3 convert sets content-length on responses except 204 and 304", () => {
  const body = new Uint8Array(5);
  assert.deepEqual(responseHeaderList({ status: 201, headers: { "Content-Type": "x/y" }, body }), [
    [":status", "201"],
    ["content-type", "x/y"],
    ["content-length", "5"],
  ]);
  assert.deepEqual(responseHeaderList({ status: 204, headers: {}, body: new Uint8Array(0) }), [[
    ":status",
    "204",
  ]]);
  const res = toClientResponse(
    [[":status", "404"], ["content-type", "application/problem+json"]],
    body,
  );
  assert.equal(res.status, 404);
  assert.deepEqual(res.headers, { "content-type": "application/problem+json" });
  assert.throws(() => toClientResponse([["x", "y"]], body), SyntaxError);
});

Deno.test("h3 and h2 clients read :status by one rule: three digits from 100, anything else is no status", () => {
  const cases: [string, number][] = [
    ["200", 200],
    ["999", 999],
    ["099", 0],
    [" 200", 0],
    ["2e2", 0],
    ["20", 0],
    ["abc", 0],
  ];
  for (const [value, want] of cases) {
    const h2 = decodeResponseBlock(encodeHeaderBlock([[":status", value]])).status;
    assert.equal(h2, want, `h2 ${JSON.stringify(value)}`);
    const h3 = () => toClientResponse([[":status", value]], new Uint8Array());
    if (want) assert.equal(h3().status, want);
    else assert.throws(h3, SyntaxError, `h3 ${JSON.stringify(value)}`);
  }
});
