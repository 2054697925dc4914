import assert from "node:assert/strict";
import {
  MEMORY_GROWTH_TARGET_BYTES,
  type MemoryReadings,
  memoryRun,
  memorySide,
  renderMemoryRun,
} from "./memory_growth.ts";

const MiB = 1024 * 1024;

function readings(pid: number, mib: [number, number][], peakMiB: number): MemoryReadings {
  return {
    pid,
    process: "deno",
    samples: mib.map(([requests, m]) => ({ requests, rssBytes: m * MiB })),
    peakBytes: peakMiB * MiB,
  };
}

// A client whose heap settles after the first step, and a server that grows by 2 MiB every 10k.
const client = readings(101, [[0, 50], [10_000, 53], [20_000, 53], [25_000, 52.5]], 60);
const server = readings(202, [[0, 80], [10_000, 82], [20_000, 84], [25_000, 85]], 85);

function run() {
  return memoryRun({
    transport: "h2c",
    stack: "native",
    server: "sbilab",
    sizeBytes: 256,
    streams: 1,
    warmup: 2000,
    requests: 25_000,
    errors: 0,
    pinned: true,
    sides: [
      { title: "client (sbilab SBI client)", readings: client },
      { title: "server (sbilab)", readings: server },
    ],
  });
}

Deno.test("memorySide takes growth from the sample after the warm-up to the last, and per step", () => {
  const s = memorySide("server (sbilab)", server);
  assert.equal(s.afterWarmupBytes, 80 * MiB);
  assert.equal(s.endBytes, 85 * MiB);
  assert.equal(s.growthBytes, 5 * MiB);
  assert.equal(s.peakBytes, 85 * MiB);
  // the short last step (5k requests) shows its own growth, not one scaled to 10k
  assert.deepEqual(s.steps.map((x) => [x.fromRequests, x.toRequests, x.growthBytes / MiB]), [
    [0, 10_000, 2],
    [10_000, 20_000, 2],
    [20_000, 25_000, 1],
  ]);
  // exactly the target is not under it
  assert.equal(s.underTarget, false);
  assert.equal(memorySide("server (sbilab)", server, 5 * MiB + 1).underTarget, true);
  const c = memorySide("client (sbilab SBI client)", client);
  assert.equal(c.growthBytes, 2.5 * MiB);
  assert.equal(c.underTarget, true);
  assert.deepEqual(c.steps.map((x) => x.growthBytes / MiB), [3, 0, -0.5]);
});

Deno.test("memorySide refuses one sample, unordered samples and sizes that are not sizes", () => {
  assert.throws(() => memorySide("client", readings(1, [[0, 50]], 50)), {
    name: "RangeError",
    message: "client: memory needs at least two samples",
  });
  assert.throws(
    () => memorySide("client", readings(1, [[0, 50], [10_000, 51], [10_000, 52]], 52)),
    /sample 2 does not come after sample 1/,
  );
  assert.throws(
    () => memorySide("client", readings(1, [[0, 50], [10_000, NaN]], 52)),
    /sample 1 has no valid size/,
  );
});

Deno.test("the memory record names each side's growth and verdict and survives JSON", () => {
  const r = run();
  assert.equal(r.targetBytes, MEMORY_GROWTH_TARGET_BYTES);
  const back = JSON.parse(JSON.stringify(r));
  assert.deepEqual(back, r);
  assert.deepEqual(
    back.sides.map((
      s: { title: string; pid: number; growthBytes: number; underTarget: boolean },
    ) => [
      s.title,
      s.pid,
      s.growthBytes,
      s.underTarget,
    ]),
    [["client (sbilab SBI client)", 101, 2.5 * MiB, true], [
      "server (sbilab)",
      202,
      5 * MiB,
      false,
    ]],
  );
  assert.equal(renderMemoryRun(back), renderMemoryRun(r));
});

Deno.test("renderMemoryRun prints each side's RSS, growth, peak and verdict, then each step's growth", () => {
  const text = renderMemoryRun(run());
  assert.match(text, /^memory of one warm connection: h2c on the native stack, .*25000 requests/m);
  assert.match(
    text,
    /^client \(sbilab SBI client\)\s+101 deno\s+50 MiB\s+52\.5 MiB\s+\+2\.50 MiB\s+60 MiB\s+yes$/m,
  );
  assert.match(text, /^server \(sbilab\)\s+202 deno\s+80 MiB\s+85 MiB\s+\+5 MiB\s+85 MiB\s+NO$/m);
  assert.match(text, /^0–10k\s+\+3 MiB\s+\+2 MiB$/m);
  assert.match(text, /^10k–20k\s+±0 B\s+\+2 MiB$/m);
  assert.match(text, /^20k–25k\s+-512 KiB\s+\+1 MiB$/m);
  assert.match(
    text,
    /^target: RSS growth over 25000 requests under 5 MiB per side: client \+2\.50 MiB under, server \+5 MiB NOT under$/m,
  );
  assert.doesNotMatch(text, /failed/);
  assert.match(renderMemoryRun({ ...run(), errors: 3 }), /^3 of 25000 requests failed/m);
});
