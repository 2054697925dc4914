import assert from "node:assert/strict";
import { renderLoadSummary } from "./report.ts";
import type { LatencySummary, LoadResult } from "./result.ts";

const empty: LatencySummary = {
  count: 0,
  min: 0,
  mean: 0,
  p50: 0,
  p90: 0,
  p99: 0,
  p999: 0,
  max: 0,
};

function refused(): LoadResult {
  return {
    protocol: "h2",
    partial: true,
    stopped: false,
    sent: 0,
    completed: 0,
    errors: 1,
    errorsByKind: { connect: 1, tls: 0, protocol: 0, reset: 0, closed: 0, timeout: 0, other: 0 },
    status: {},
    bytesIn: 0,
    bytesOut: 0,
    bodyBytesIn: 0,
    measuredNs: 0,
    reqPerSec: 0,
    warmupCompleted: 0,
    connectionsUp: 0,
    connectionsFailed: 1,
    connections: [{
      connectNs: null,
      handshakeNs: null,
      firstByteNs: null,
      requests: 0,
      error: "connect",
    }],
    latency: empty,
    latencyUncorrected: empty,
    histograms: { corrected: "", uncorrected: "" },
    latencyBuckets: [],
    timedOut: 0,
    timeoutNs: 10e9,
    error: "connection 0: connect: Connection refused",
  };
}

Deno.test("the load summary of a refused connection counts the error and shows no latency", () => {
  const text = renderLoadSummary(refused(), { connections: 1, streams: 1, threads: 1 });
  assert.match(
    text,
    /0 sent, 0 completed: 0 succeeded, 0 failed, 1 error \(success: status 2xx,3xx\)$/m,
  );
  assert.match(text, /^errors: 1 connect$/m);
  const latency = text.split("\n").find((l) => /^\s+request\s/.test(l))!;
  assert.doesNotMatch(latency, /ns|µs|ms/, latency);
  assert.equal(latency.match(/–/g)?.length, 7);
});

Deno.test("the load summary names the wire bytes it counts per protocol", () => {
  const h2 = renderLoadSummary(refused(), { connections: 1, streams: 1, threads: 1 });
  assert.match(h2, /traffic on the wire \(TCP payload\)/);
  const h3 = renderLoadSummary({ ...refused(), protocol: "h3" }, {
    connections: 1,
    streams: 1,
    threads: 1,
  });
  assert.match(h3, /traffic on the wire \(UDP payload\)/);
});
