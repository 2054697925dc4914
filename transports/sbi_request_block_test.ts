import assert from "node:assert/strict";
import { SbiRequestBlock } from "./sbi_request_block.ts";
import { sbiRequestHeaders } from "./sbi_headers.ts";
import { decodeHeaderBlock, type HeaderList, RequestBlockWriter } from "./native/wire.ts";

const NOW = Date.UTC(2026, 11, 1, 14, 0, 0, 123);
const TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** The block as sbiRequestHeaders and RequestBlockWriter build it, field by field. */
function reference(
  method: string,
  path: string,
  headers: Record<string, string> | undefined,
  timeoutMs: number,
  bodyLength: number,
): HeaderList {
  const w = new RequestBlockWriter();
  const merged = sbiRequestHeaders(headers, { timeoutMs, nfType: "AMF", now: () => NOW });
  const n = w.encode(method, "https", "nrf.example:8443", path, merged, bodyLength);
  return decodeHeaderBlock(w.buffer.subarray(0, n));
}

/** A traceparent's span id (and trace id, unless the caller gave one) is new on every request. */
function maskSpan(list: HeaderList): HeaderList {
  return list.map(([n, v]) => {
    if (n !== "traceparent") return [n, v];
    const kept = v.slice(3, 35) === TRACE.slice(3, 35);
    return [n, `00-${kept ? "kept" : "new"}-span-${v.slice(-2)}`];
  });
}

const CASES: [string, string, Record<string, string> | undefined, number, number][] = [
  ["GET", "/nnrf-disc/v1/nf-instances?target-nf-type=SMF", undefined, 5000, 0],
  ["POST", "/nsmf-pdusession/v1/sm-contexts", { "Content-Type": "application/json" }, 250, 77],
  ["GET", "/x", { traceparent: TRACE, "User-Agent": "SMF-other/2" }, 1000, 0],
  ["PUT", "/x", { "3gpp-Sbi-Max-Rsp-Time": "9", "3gpp-sbi-sender-timestamp": "old" }, 30, 1],
  ["GET", "/x", { connection: "close", host: "h", ":path": "/evil", te: "gzip" }, 5000, 0],
  ["GET", "/x", { TE: "trailers", Accept: "a", accept: "b" }, 0.4, 0],
];

Deno.test("SBI request block writes the fields sbiRequestHeaders and the block writer give", () => {
  const block = new SbiRequestBlock({
    scheme: "https",
    authority: "nrf.example:8443",
    nfType: "AMF",
    now: () => NOW,
  });
  for (const [method, path, headers, timeoutMs, bodyLength] of CASES) {
    // twice: the second block comes from what the first one cached
    for (let i = 0; i < 2; i++) {
      const n = block.encode(method, path, headers, timeoutMs, bodyLength);
      const got = decodeHeaderBlock(block.buffer.subarray(0, n));
      assert.deepEqual(
        maskSpan(got),
        maskSpan(reference(method, path, headers, timeoutMs, bodyLength)),
        `${method} ${path} ${JSON.stringify(headers)}`,
      );
    }
  }
});

Deno.test("SBI request block keeps the caller's trace id, draws a new span and stamps each millisecond", () => {
  let now = NOW;
  const block = new SbiRequestBlock({ scheme: "http", authority: "a:1", now: () => now });
  const field = (list: HeaderList, name: string) => list.find(([n]) => n === name)?.[1];
  const decode = (n: number) => decodeHeaderBlock(block.buffer.subarray(0, n));
  const first = decode(block.encode("GET", "/x", { traceparent: TRACE }, 100, 0));
  const tp = field(first, "traceparent")!;
  assert.match(tp, /^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
  assert.notEqual(tp, TRACE);
  assert.equal(field(first, "3gpp-sbi-sender-timestamp"), "Tue, 01 Dec 2026 14:00:00.123 GMT");
  assert.equal(field(first, "user-agent"), "SMF-sbilab/0.1");
  assert.equal(field(first, "3gpp-sbi-max-rsp-time"), "100");
  now += 1;
  const second = decode(block.encode("GET", "/x", undefined, 100, 0));
  assert.equal(field(second, "3gpp-sbi-sender-timestamp"), "Tue, 01 Dec 2026 14:00:00.124 GMT");
  assert.notEqual(field(second, "traceparent")!.slice(3, 35), TRACE.slice(3, 35));
  assert.throws(() => block.encode("GET", "/x", { "x-bad": "a\r\nb" }, 100, 0), TypeError);
});
