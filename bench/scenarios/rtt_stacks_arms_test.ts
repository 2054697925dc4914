import assert from "node:assert/strict";
import type { LoadResult } from "../../load/mod.ts";
import { blockOfLoad, samplesOfHistogram } from "./rtt_stacks_arms.ts";

Deno.test("a stacks-alone block takes each request's time from the engine's histogram, at its bucket's middle", () => {
  // Below 256 ns buckets are 1 ns wide; 39 936 ns starts a bucket of [32 768, 65 536): 256 ns wide.
  assert.deepEqual(samplesOfHistogram([[100, 2], [39_936, 3]]), [
    100.5,
    100.5,
    40_064,
    40_064,
    40_064,
  ]);
  assert.deepEqual(samplesOfHistogram([]), []);
});

Deno.test("a stacks-alone block with no answer is empty when nothing failed, failed with the engine's reason otherwise", () => {
  const result = (fields: Partial<LoadResult>) =>
    ({ completed: 0, errors: 0, latencyBuckets: [], ...fields }) as unknown as LoadResult;
  assert.deepEqual(blockOfLoad(result({})), { samples: [], errors: 0 });
  assert.deepEqual(blockOfLoad(result({ errors: 2, error: "connection refused" })), {
    samples: [],
    errors: 2,
    problem: "connection refused",
  });
  assert.deepEqual(blockOfLoad(result({ error: "handshake failed" })), {
    samples: [],
    errors: 1,
    problem: "handshake failed",
  });
  assert.deepEqual(
    blockOfLoad(result({ completed: 2, errors: 1, latencyBuckets: [[49_920, 2]] })),
    { samples: [50_048, 50_048], errors: 1 },
  );
});
