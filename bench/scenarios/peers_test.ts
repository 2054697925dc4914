import assert from "node:assert/strict";
import { parseH2loadOutput, PeerError } from "./peer_loaders.ts";
import { peerId, peerRatios } from "./peer_pairs.ts";
import { estimate } from "../stats/stats.ts";
import { cv, roundMedians } from "../stats/rounds_stats.ts";
import type { ResultRow } from "../record/schema.ts";

/** A peers row whose round i has the one sample `perRound[i]` (ns per request). */
function peerRow(id: string, perRound: number[]): ResultRow {
  const medians = roundMedians(perRound.map((v) => [v]));
  return {
    id,
    scenario: "peers",
    transport: id,
    label: "GET",
    sizeBytes: 256,
    estimate: estimate(perRound, { resamples: 10 }),
    samples: { count: perRound.length, complete: true, samples: perRound, histogram: "" },
    errors: 0,
    rounds: { counts: perRound.map(() => 1), medians, cv: cv(medians) },
  };
}

Deno.test("peer ratios pair rounds: a req/s ratio is the inverse of the times' ratio", () => {
  const shape = { connections: 1, streams: 1 };
  const ref = peerId("h2load", "nghttpd", 256, shape);
  const ours = peerId("h2load", "sbilab h2c", 256, shape);
  const client = peerId("sbilab client", "nghttpd", 256, shape);
  // Rounds 3 and 4 were slow for every arm alike; ours takes 1.25× nghttpd's time throughout.
  const slow = [1, 1, 1.8, 1.8, 1, 1];
  const rows = [
    peerRow(ref, slow.map((s) => 40_000 * s)),
    peerRow(ours, slow.map((s) => 50_000 * s)),
    peerRow(client, slow.map((s) => 60_000 * s)),
  ];
  const [rate, time] = peerRatios(rows, [
    { label: "server", num: ours, den: ref, measure: "rate" },
    { label: "client", num: client, den: ref, measure: "time" },
    { label: "absent", num: peerId("x", "y", 256, shape), den: ref, measure: "time" },
  ], 256);
  assert.equal(rate.kind, "peers");
  assert.equal(rate.numerator, ours);
  assert.equal(rate.denominator, ref);
  assert.ok(Math.abs(rate.ratio - 0.8) < 1e-9, String(rate.ratio));
  // Paired: the slow rounds cancel, so every per-round ratio is the same and the interval is tight.
  assert.ok(rate.perRound.every((r) => Math.abs(r - 0.8) < 1e-9), rate.perRound.join());
  assert.ok(rate.interval.lower > 0.79 && rate.interval.upper < 0.81);
  assert.ok(Math.abs(time.ratio - 1.5) < 1e-9, String(time.ratio));
  assert.equal(time.id, "peers/client");
});

Deno.test("peer ids name loader, server, size and shape", () => {
  assert.equal(
    peerId("sbilab native engine", "sbilab h2c (native stack)", 256, {
      connections: 8,
      streams: 64,
    }),
    "peers/sbilab-native-engine/sbilab-h2c-native-stack/256/8x64",
  );
  assert.equal(
    peerId("h2load", "nghttpd", 256, { connections: 1, streams: 64 }),
    "peers/h2load/nghttpd/256/64",
  );
});

Deno.test("h2load's summary is read, and an unreadable one is an error", () => {
  const s = parseH2loadOutput(
    "finished in 301.12ms, 17552.33 req/s, 5.02MB/s\n" +
      "requests: 5285 total, 5285 started, 5285 done, 5280 succeeded, 5 failed, 5 errored, 0 timeout\n",
  );
  assert.deepEqual(s, { reqPerSec: 17552.33, succeeded: 5280, failed: 5 });
  assert.throws(() => parseH2loadOutput("connect: Connection refused"), PeerError);
});
