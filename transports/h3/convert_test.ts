import assert from "node:assert/strict";
import { decodeResponseBlock, encodeHeaderBlock, type HeaderList } from "../native/wire.ts";
import { TransportError } from "../types.ts";
import {
  requestHeaderList,
  responseHeaderList,
  toClientResponse,
  toClientResponseFromBlock,
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
  // the native client's decoder reads the wire block by the same rules: repeated fields joined
  const list: HeaderList = [[":status", "200"], ["vary", "a"], ["x-y", "1"], ["vary", "b"]];
  const fromBlock = toClientResponseFromBlock(encodeHeaderBlock(list), body);
  assert.deepEqual(fromBlock, toClientResponse(list, body));
  assert.deepEqual(fromBlock.headers, { vary: "a, b", "x-y": "1" });
  assert.equal(fromBlock.body, body);
  assert.throws(
    () => toClientResponse([["x", "y"]], body),
    (err: unknown) =>
      err instanceof TransportError && err.cause instanceof SyntaxError &&
      err.message ===
        "Malformed HTTP/3 response: Response lacks a valid :status (three digits from 100; got none)",
  );
});

Deno.test("h3 and h2 response decoders share one :status rule: three digits from 100, anything else is one protocol error", () => {
  const cases: [string | undefined, number][] = [
    ["200", 200],
    ["999", 999],
    ["099", 0],
    [" 200", 0],
    ["2e2", 0],
    ["20", 0],
    ["abc", 0],
    ["", 0],
    [undefined, 0],
  ];
  for (const [value, want] of cases) {
    const list: HeaderList = value === undefined ? [["x", "y"]] : [[":status", value]];
    const label = JSON.stringify(value ?? null);
    const h2 = () => decodeResponseBlock(encodeHeaderBlock(list));
    const h3 = () => toClientResponse(list, new Uint8Array());
    const h3Block = () => toClientResponseFromBlock(encodeHeaderBlock(list), new Uint8Array());
    if (want) {
      assert.equal(h2().status, want, `h2 ${label}`);
      assert.equal(h3().status, want, `h3 ${label}`);
      assert.equal(h3Block().status, want, `h3 block ${label}`);
      continue;
    }
    const got = value === undefined ? "none" : JSON.stringify(value);
    const message = `Response lacks a valid :status (three digits from 100; got ${got})`;
    assert.throws(
      h2,
      (err: unknown) => err instanceof SyntaxError && err.message === message,
      `h2 ${label}`,
    );
    for (const [f, what] of [[h3, "h3"], [h3Block, "h3 block"]] as const) {
      assert.throws(
        f,
        (err: unknown) =>
          err instanceof TransportError && err.cause instanceof SyntaxError &&
          err.message === `Malformed HTTP/3 response: ${message}`,
        `${what} ${label}`,
      );
    }
  }
});
