import assert from "node:assert/strict";
import { formatSenderTimestamp, nextTraceparent, sbiRequestHeaders } from "./sbi_headers.ts";

Deno.test("sender timestamp has the TS 29.500 shape with milliseconds", () => {
  assert.equal(
    formatSenderTimestamp(Date.UTC(2019, 7, 4, 8, 49, 37, 845)),
    "Sun, 04 Aug 2019 08:49:37.845 GMT",
  );
  assert.equal(
    formatSenderTimestamp(Date.UTC(2026, 0, 1, 0, 0, 0, 7)),
    "Thu, 01 Jan 2026 00:00:00.007 GMT",
  );
});

Deno.test("traceparent keeps the caller's trace id and makes a new span id", () => {
  const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const next = nextTraceparent(parent);
  assert.match(next, /^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-01$/);
  assert.notEqual(next.split("-")[2], "00f067aa0ba902b7");
});

Deno.test("traceparent starts a new trace when the caller's is missing or invalid", () => {
  for (const bad of [undefined, "garbage", "00-" + "0".repeat(32) + "-00f067aa0ba902b7-01"]) {
    const t = nextTraceparent(bad);
    assert.match(t, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    assert.notEqual(t.split("-")[1], "0".repeat(32));
  }
  assert.notEqual(nextTraceparent().split("-")[1], nextTraceparent().split("-")[1]);
});

Deno.test("sbi headers add max-rsp-time, sender timestamp and an NF-typed user-agent", () => {
  const h = sbiRequestHeaders({ "Content-Type": "application/json" }, {
    timeoutMs: 1500,
    nfType: "AMF",
    now: () => Date.UTC(2026, 10, 29, 12, 0, 0, 5),
  });
  assert.equal(h["content-type"], "application/json");
  assert.equal(h["3gpp-sbi-max-rsp-time"], "1500");
  assert.equal(h["3gpp-sbi-sender-timestamp"], "Sun, 29 Nov 2026 12:00:00.005 GMT");
  assert.match(h["user-agent"], /^AMF-/);
  assert.match(h["traceparent"], /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
});

Deno.test("caller's user-agent and max-rsp-time win over the defaults", () => {
  const h = sbiRequestHeaders({ "User-Agent": "NRF-x", "3gpp-Sbi-Max-Rsp-Time": "20" }, {
    timeoutMs: 900,
  });
  assert.equal(h["user-agent"], "NRF-x");
  assert.equal(h["3gpp-sbi-max-rsp-time"], "20");
});
