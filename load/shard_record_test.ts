import assert from "node:assert/strict";
import * as hdr from "hdr-histogram-js";
import { buildHistogram, ERROR_KINDS, type LoadResult, summarize } from "./result.ts";
import {
  LOAD_SCHEMA,
  type LoadRecord,
  mergeShards,
  shardIntervalLog,
  ShardMergeError,
} from "./shard_record.ts";
import { readIntervalLog } from "./interval_log.ts";

/** A shard record whose histograms hold `values` (ns), over [startMs, startMs + 10 s]. */
function shard(
  index: number,
  count: number,
  values: number[],
  startMs: number,
  over = {},
): LoadRecord {
  const h = buildHistogram();
  const u = buildHistogram();
  for (const v of values) {
    h.recordValue(v);
    u.recordValue(Math.max(1, Math.round(v / 2)));
  }
  const buckets = new Map<number, number>();
  for (const v of values) {
    const low = (h as unknown as { lowestEquivalentValue(v: number): number })
      .lowestEquivalentValue(v);
    buckets.set(low, (buckets.get(low) ?? 0) + 1);
  }
  const errorsByKind = Object.fromEntries(
    ERROR_KINDS.map((k) => [k, 0]),
  ) as LoadResult["errorsByKind"];
  errorsByKind.timeout = index;
  const result: LoadResult = {
    protocol: "h2",
    partial: false,
    stopped: false,
    sent: values.length + index,
    completed: values.length,
    errors: index,
    errorsByKind,
    status: { "200": values.length },
    bytesIn: 1000,
    bytesOut: 500,
    bodyBytesIn: 100,
    measuredNs: 10e9,
    reqPerSec: values.length / 10,
    warmupCompleted: 5,
    connectionsUp: 2,
    connectionsFailed: 0,
    connections: [],
    latency: summarize(h),
    latencyUncorrected: summarize(u),
    histograms: {
      corrected: hdr.encodeIntoCompressedBase64(h),
      uncorrected: hdr.encodeIntoCompressedBase64(u),
    },
    latencyBuckets: [...buckets.entries()].sort((a, b) => a[0] - b[0]),
    timedOut: 0,
    timeoutNs: 10e9,
    ...over,
  };
  const window = { startMs, endMs: startMs + 10_000 };
  return {
    schema: LOAD_SCHEMA,
    url: "http://10.0.0.1:80/x",
    engine: "native",
    plan: { connections: 2, streams: 4, threads: 1, durationMs: 10_000 },
    result,
    shard: {
      index,
      count,
      host: `box${index}`,
      startAtMs: 1_000_000,
      window,
      clock: null,
      intervalLog: shardIntervalLog(result, window, `${index}/${count}`),
    },
  };
}

/** Deterministic spread-out latencies (ns), different per shard. */
function values(seed: number, n: number): number[] {
  let x = seed * 7919 + 1;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 20_000 + (x % 5_000_000) * (seed + 1);
  });
}

Deno.test("merged percentiles equal those of one histogram fed every shard's values", () => {
  const all = [0, 1, 2, 3].map((i) => values(i, 2000 + i * 300));
  const run = mergeShards(all.map((v, i) => shard(i, 4, v, 1_000_000 + i * 3)));
  const one = buildHistogram();
  for (const v of all.flat()) one.recordValue(v);
  assert.deepEqual(run.result.latency, summarize(one));
  assert.equal(run.result.completed, all.flat().length);
  assert.equal(run.result.errors, 0 + 1 + 2 + 3);
  assert.equal(run.result.errorsByKind.timeout, 6);
  assert.equal(run.result.status["200"], all.flat().length);
  assert.equal(run.result.latencyBuckets.reduce((n, [, c]) => n + c, 0), all.flat().length);
  assert.equal(run.result.partial, false);
  assert.deepEqual(run.merge!.reasons, []);
  // the rates add over the common window
  assert.equal(run.result.reqPerSec, all.flat().length / 10);
  assert.deepEqual(run.merge!.commonWindow, { startMs: 1_000_009, endMs: 1_010_000 });
  assert.equal(run.plan.connections, 8);
});

Deno.test("a missing, failed or late shard makes the merged run partial, naming it", () => {
  const v = values(1, 100);
  const run = mergeShards([
    shard(0, 4, v, 1_000_000),
    shard(1, 4, v, 1_000_000, { partial: true, error: "connection reset" }),
    shard(3, 4, v, 1_002_000),
  ]);
  assert.equal(run.result.partial, true);
  assert.deepEqual(run.merge!.missing, [2]);
  assert.deepEqual(run.merge!.reasons, [
    "shard 2/4 sent no record",
    "shard 1/4 (box1) failed: connection reset",
    "shard 3/4 (box3) started 2.000 s late",
  ]);
});

Deno.test("shards whose windows do not overlap are refused with one line", () => {
  const v = values(1, 10);
  assert.throws(
    () => mergeShards([shard(0, 2, v, 1_000_000), shard(1, 2, v, 1_020_000)]),
    (err: Error) =>
      err instanceof ShardMergeError && !err.message.includes("\n") &&
      /^Shard windows do not overlap: shard 0\/2 ended at .*, shard 1\/2 started at /.test(
        err.message,
      ),
  );
  assert.throws(
    () => mergeShards([shard(0, 2, v, 1_000_000), shard(0, 2, v, 1_000_000)]),
    /Shard 0\/2 was given twice/,
  );
  assert.throws(
    () => mergeShards([shard(0, 2, v, 1e6), shard(0, 3, v, 1e6)]),
    /Shards of 2 and of 3/,
  );
});

Deno.test("a shard's interval log is a HistogramLogWriter log HistogramLogReader reads back", () => {
  const v = values(2, 500);
  const rec = shard(1, 4, v, 1_700_000_000_000);
  const log = rec.shard!.intervalLog;
  assert.match(log, /^#\[Histogram log format version 1\.3\]$/m);
  assert.match(log, /^#\[StartTime: 1700000000\.000 \(seconds since epoch\), /m);
  assert.match(log, /^#\[BaseTime: 1700000000\.000 \(seconds since epoch\)\]$/m);
  assert.match(
    log,
    /^"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"$/m,
  );
  assert.doesNotMatch(log, /\n\n/, "no blank lines");
  const read = readIntervalLog(log);
  assert.deepEqual(read.map((r) => r.tag), ["corrected", "uncorrected"]);
  assert.equal(read[0].startSec, 1_700_000_000);
  assert.equal(read[0].endSec, 1_700_000_010);
  // the compressed form keeps buckets: the same count, mean and percentiles (min and max are bucket edges)
  const { min: _a, max: _b, p999: _c, ...back } = summarize(read[0].histogram);
  const { min: _d, max: _e, p999: _f, ...kept } = rec.result.latency;
  assert.deepEqual(back, kept);
});
