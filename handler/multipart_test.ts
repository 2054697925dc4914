import assert from "node:assert/strict";
import {
  buildMultipart,
  isMultipartRelated,
  multipartBoundary,
  parseMultipart,
} from "./multipart.ts";
import type { MultipartPart } from "./types.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CT = 'multipart/related; boundary="----b1"; type="application/json"';

Deno.test("parseMultipart splits a TS 29.500 style body into headers and bytes", () => {
  const body = encoder.encode(
    "preamble\r\n------b1\r\nContent-Type: application/json\r\n\r\n" +
      '{"n1":1}\r\n------b1\r\nContent-Type: application/vnd.3gpp.ngap\r\n' +
      "Content-Id: n2\r\n\r\n\u0000\u0001\r\n\u0002\r\n------b1--\r\nepilogue",
  );
  const parts = parseMultipart(body, CT);
  assert.equal(parts.length, 2);
  assert.deepEqual(parts[0].headers, { "content-type": "application/json" });
  assert.equal(decoder.decode(parts[0].body), '{"n1":1}');
  assert.deepEqual(parts[1].headers, {
    "content-type": "application/vnd.3gpp.ngap",
    "content-id": "n2",
  });
  assert.deepEqual([...parts[1].body], [0, 1, 13, 10, 2]);
});

Deno.test("buildMultipart output parses back to the same parts", () => {
  const parts: MultipartPart[] = [
    { headers: { "content-type": "application/json" }, body: encoder.encode("{}") },
    { headers: {}, body: new Uint8Array([255, 0, 13, 10, 45, 45]) },
    { headers: { "content-type": "text/plain" }, body: new Uint8Array(0) },
  ];
  const body = buildMultipart(parts, "sbi-boundary");
  assert.ok(decoder.decode(body).startsWith("--sbi-boundary\r\ncontent-type: application/json"));
  const back = parseMultipart(body, "multipart/related; boundary=sbi-boundary");
  assert.deepEqual(back.map((p) => p.headers), parts.map((p) => p.headers));
  assert.deepEqual(back.map((p) => [...p.body]), parts.map((p) => [...p.body]));
});

Deno.test("buildMultipart refuses a part that contains the boundary", () => {
  const part = { headers: {}, body: encoder.encode("x\r\n--bb y") };
  assert.throws(() => buildMultipart([part], "bb"), RangeError);
});

Deno.test("parseMultipart rejects bodies without boundary, closing delimiter or parts", () => {
  const cases: [string, string][] = [
    ["--b\r\n\r\nx\r\n--b--", "multipart/related"],
    ["no delimiter at all", "multipart/related; boundary=b"],
    ["--b\r\nContent-Type: a/b\r\n\r\nunterminated", "multipart/related; boundary=b"],
    ["--b--\r\n", "multipart/related; boundary=b"],
    ["--b\r\nno colon here\r\n\r\nx\r\n--b--", "multipart/related; boundary=b"],
    ["--bjunk\r\n\r\nx\r\n--b--", "multipart/related; boundary=b"],
  ];
  for (const [body, ct] of cases) {
    assert.throws(() => parseMultipart(encoder.encode(body), ct), SyntaxError, body);
  }
});

Deno.test("multipartBoundary reads quoted and bare values and rejects invalid ones", () => {
  assert.equal(multipartBoundary('multipart/related; boundary="a b"'), "a b");
  assert.equal(multipartBoundary("multipart/related;boundary=abc;type=x"), "abc");
  assert.throws(() => multipartBoundary('multipart/related; boundary="ends space "'), SyntaxError);
  assert.throws(
    () => multipartBoundary(`multipart/related; boundary=${"x".repeat(71)}`),
    SyntaxError,
  );
});

Deno.test("isMultipartRelated matches the media type only", () => {
  assert.ok(isMultipartRelated("Multipart/Related; boundary=x"));
  assert.ok(!isMultipartRelated("multipart/form-data; boundary=x"));
  assert.ok(!isMultipartRelated(undefined));
});
