import assert from "node:assert/strict";
import { assessNoise, noiseLine, pairedRatios, roundsOf } from "./rounds_summary.ts";
import { estimate } from "../stats/stats.ts";
import { createRng } from "../stats/stats.ts";
import { cv, roundMedians } from "../stats/rounds_stats.ts";
import type { FloorRow, ResultRow, RoundMachineRecord } from "./schema.ts";

/** An arm's rounds: per-round block of `n` samples around `base × factor(i)`, with small noise. */
function blocks(base: number, factor: (i: number) => number, seed: number, rounds = 24, n = 30) {
  const rng = createRng(seed);
  return Array.from(
    { length: rounds },
    (_, i) => Array.from({ length: n }, () => base * factor(i) * (0.95 + 0.1 * rng())),
  );
}

function series(b: number[][]) {
  const medians = roundMedians(b);
  return { counts: b.map((r) => r.length), medians, cv: cv(medians) };
}

function row(transport: string, size: number, b: number[][]): ResultRow {
  const flat = b.flat();
  return {
    id: `rtt/${transport}/${size}`,
    scenario: "rtt",
    transport,
    label: "GET",
    sizeBytes: size,
    floor: transport === "h3" ? "udp" : "tcp",
    estimate: estimate(flat, { resamples: 10 }),
    samples: { count: flat.length, complete: true, samples: flat, histogram: "" },
    errors: 0,
    rounds: series(b),
  };
}

function floor(protocol: "tcp" | "udp", size: number, b: number[][]): FloorRow {
  const flat = b.flat();
  return {
    source: "kernel",
    protocol,
    sizeBytes: size,
    estimate: estimate(flat, { resamples: 10 }),
    samples: { count: flat.length, complete: true, samples: flat, histogram: "" },
    rounds: series(b),
  };
}

/** A run of three transports and two floors; `contended(i)` says whether round i shared its CPU. */
function run(contended: (i: number) => boolean) {
  const slow = (i: number) => (contended(i) ? 1.6 : 1);
  const rows = [
    row("h2c", 256, blocks(100, slow, 1)),
    row("h2-tls", 256, blocks(120, slow, 2)),
    row("h3", 256, blocks(150, slow, 3)),
  ];
  const floors = [floor("tcp", 256, blocks(30, slow, 4)), floor("udp", 256, blocks(28, slow, 5))];
  const machine: RoundMachineRecord[] = Array.from({ length: 24 }, (_, i) => ({
    stealShare: 0.001,
    otherCores: contended(i) ? 0.9 : 0.02,
    load1: contended(i) ? 3.4 : 1.9,
  }));
  const ratios = pairedRatios(rows, floors, { resamples: 200 });
  return { rows, floors, machine, ratios, cores: 2 };
}

Deno.test("noise detector flags a run whose second half shared the server's CPU", () => {
  const noise = assessNoise(run((i) => i >= 12));
  assert.equal(noise.noisy, true);
  assert.ok(noise.reasons.some((r) => r.startsWith("other processes used")), noise.reasons.join());
  assert.ok(noise.reasons.some((r) => r.startsWith("load average reached")), noise.reasons.join());
  assert.ok(
    noise.reasons.some((r) => /kernel tcp floor .* drifted \+60 %/.test(r)),
    noise.reasons.join(),
  );
  assert.ok(noise.expectPercent >= 50, String(noise.expectPercent));
  const line = noiseLine(noise)!;
  assert.match(line, /^this machine was noisy: .*; expect ±\d+ %$/);
});

Deno.test("noise detector stays quiet on a steady run", () => {
  const r = run(() => false);
  const noise = assessNoise(r);
  assert.equal(noise.noisy, false, noise.reasons.join("; "));
  assert.equal(noiseLine(noise), undefined);
  assert.ok(noise.expectPercent < 5, String(noise.expectPercent));
  assert.ok(Math.abs(noise.floorDrift["floor/kernel/tcp/256"]) < 0.05);
});

Deno.test("paired ratios cover both transport pairs per size and every row over its floor", () => {
  const r = run(() => false);
  const ids = r.ratios.map((x) => x.id);
  assert.deepEqual(ids.slice(0, 2), ["h3/h2-tls/256", "h2-tls/h2c/256"]);
  assert.ok(ids.includes("rtt/h3/256/floor"));
  const h3 = r.ratios.find((x) => x.id === "h3/h2-tls/256")!;
  assert.ok(Math.abs(h3.ratio - 1.25) < 0.02, String(h3.ratio));
  assert.ok(h3.interval.lower <= 1.25 && h3.interval.upper >= 1.25);
  // Against the UDP floor, not the TCP one.
  const fl = r.ratios.find((x) => x.id === "rtt/h3/256/floor")!;
  assert.equal(fl.denominator, "floor/kernel/udp/256");
  assert.ok(Math.abs(fl.ratio - 150 / 28) < 0.2, String(fl.ratio));
});

Deno.test("rounds fall back to per-round medians when only a reservoir was kept", () => {
  const s = { counts: [2, 2], medians: [5, 7], cv: 0 };
  assert.deepEqual(roundsOf({ count: 4, complete: false, samples: [1, 9], histogram: "" }, s), [
    [5],
    [7],
  ]);
  assert.deepEqual(
    roundsOf({ count: 4, complete: true, samples: [1, 2, 3, 4], histogram: "" }, s),
    [[1, 2], [3, 4]],
  );
});

Deno.test("noise line counts many noisy arms and names the worst instead of listing them", () => {
  const jumpy = (k: number) => (i: number) => (i % 2 ? 1 + 0.4 * k : 1);
  const rows = Array.from({ length: 9 }, (_, k) => row(`arm${k}`, 256, blocks(100, jumpy(k), k)));
  const noise = assessNoise({ rows, floors: [], machine: [], ratios: [], cores: 2 });
  const cvReason = noise.reasons.find((r) => r.startsWith("round-to-round CV"))!;
  // arm0 is steady; the eight others jump, arm8 the most.
  assert.match(
    cvReason,
    /^round-to-round CV above 15\.0 % in 8 of 9 arms \(worst arm8 256 B \d+\.\d %\)$/,
  );
  const few = assessNoise({
    rows: rows.slice(0, 3),
    floors: [],
    machine: [],
    ratios: [],
    cores: 2,
  });
  assert.match(
    few.reasons.join(),
    /^round-to-round CV arm1 256 B \d+\.\d %, arm2 256 B \d+\.\d %$/,
  );
});

function bare(transport: string, size: number, b: number[][]): FloorRow {
  return { ...floor(transport === "h3" ? "udp" : "tcp", size, b), source: "bare", transport };
}

Deno.test("a deno-stack run gives each row its multiple of its own bare runtime arm", () => {
  const even = () => 1;
  const rows = [
    row("h2c", 256, blocks(150, even, 1)),
    row("h2-tls", 256, blocks(200, even, 2)),
    row("h3", 256, blocks(300, even, 3)),
  ];
  const floors = [
    floor("tcp", 256, blocks(30, even, 4)),
    floor("udp", 256, blocks(28, even, 5)),
    bare("h2c", 256, blocks(100, even, 6)),
    bare("h2-tls", 256, blocks(100, even, 7)),
    bare("h3", 256, blocks(200, even, 8)),
  ];
  const ratios = pairedRatios(rows, floors, { resamples: 200 });
  const runtime = ratios.filter((r) => r.kind === "runtime");
  assert.deepEqual(runtime.map((r) => [r.numerator, r.denominator]), [
    ["rtt/h2c/256", "floor/bare/h2c/256"],
    ["rtt/h2-tls/256", "floor/bare/h2-tls/256"],
    ["rtt/h3/256", "floor/bare/h3/256"],
  ]);
  const by = Object.fromEntries(runtime.map((r) => [r.numerator, r.ratio]));
  assert.ok(Math.abs(by["rtt/h2c/256"] - 1.5) < 0.05, String(by["rtt/h2c/256"]));
  assert.ok(Math.abs(by["rtt/h2-tls/256"] - 2) < 0.06, String(by["rtt/h2-tls/256"]));
  assert.ok(Math.abs(by["rtt/h3/256"] - 1.5) < 0.05, String(by["rtt/h3/256"]));
  for (const r of runtime) assert.ok(r.interval.lower <= r.ratio && r.ratio <= r.interval.upper);
  // each bare arm also stands over the kernel floor of its protocol
  const overKernel = ratios.find((r) => r.numerator === "floor/bare/h3/256");
  assert.equal(overKernel?.denominator, "floor/kernel/udp/256");
  assert.ok(Math.abs(overKernel!.ratio - 200 / 28) < 0.3, String(overKernel?.ratio));
  // a row over its kernel floor is still the kernel's, whatever bare arms stand beside it
  assert.equal(
    ratios.find((r) => r.id === "rtt/h2c/256/floor")?.denominator,
    "floor/kernel/tcp/256",
  );
  // the noise line names the bare arms' CV by their own ids
  const noise = assessNoise({ machine: [], rows, floors, ratios, cores: 2 });
  assert.ok("floor/bare/h2-tls/256" in noise.armCv, Object.keys(noise.armCv).join());
});

Deno.test("a native run (no bare arms) has no runtime ratios", () => {
  const ratios = run(() => false).ratios;
  assert.equal(ratios.filter((r) => r.kind === "runtime").length, 0);
  assert.ok(ratios.some((r) => r.kind === "floor"));
});
