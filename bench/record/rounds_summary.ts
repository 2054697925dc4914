/**
 * What an interleaved run concludes, as pure functions of its rows, floors and
 * machine readings: the paired ratios (h3 ÷ h2-tls and h2-tls ÷ h2c per size,
 * the same for the stacks alone, each row over its kernel floor), sbilab's
 * own time per request over the stacks alone, and the noise assessment behind
 * the report's "this machine was noisy" line.
 */
import { findBareFloor, findFloor, findStacksFloor } from "./floor_lookup.ts";
import {
  drift,
  pairedDifference,
  pairedRatio,
  type RoundBootstrapOptions,
  splitRounds,
} from "../stats/rounds_stats.ts";
import type {
  AddedRecord,
  FloorRow,
  NoiseRecord,
  NoiseThresholds,
  RatioRecord,
  ResultRow,
  RoundMachineRecord,
  RoundSeries,
} from "./schema.ts";
import type { SampleSet } from "../stats/recorder.ts";
import { formatBytes } from "../../lib/units.ts";

/**
 * The thresholds of the noise line, and why:
 * - steal above 2 % of CPU time: the hypervisor took that much from the run's CPUs;
 * - other processes above 0.15 of a core during the transport blocks: the run has two
 *   processes on two CPUs, so a sixth of a core elsewhere is a neighbour that competes;
 * - a load average more than 1 above the core count: runnable work queued behind the run;
 * - a kernel floor that moved by more than 10 % from the first quarter of rounds to the
 *   last: the machine itself changed speed during the run;
 * - a transport arm whose per-round median varies by more than 15 % between rounds
 *   (a starting value, to be calibrated on a quiet VM).
 */
export const NOISE_THRESHOLDS: NoiseThresholds = {
  stealShare: 0.02,
  otherCores: 0.15,
  loadAboveCores: 1,
  floorDrift: 0.10,
  armCv: 0.15,
};

/** The pairs every report compares: numerator over denominator, per size. */
export const TRANSPORT_PAIRS: readonly [string, string][] = [
  ["h3", "h2-tls"],
  ["h2-tls", "h2c"],
];

/**
 * An arm's samples grouped by round. When the sample set kept every value, the
 * rounds hold them; otherwise (a reservoir stood in) each round is its median.
 */
export function roundsOf(samples: SampleSet, series: RoundSeries): number[][] {
  if (samples.complete && samples.samples.length === series.counts.reduce((a, b) => a + b, 0)) {
    return splitRounds(samples.samples, series.counts);
  }
  return series.medians.map((m) => [m]);
}

type Arm = { id: string; samples: SampleSet; rounds?: RoundSeries };

/** Paired ratio of two arms measured in the same rounds, as a record; undefined without rounds. */
export function ratioRecord(
  num: Arm,
  den: Arm,
  fields: Pick<RatioRecord, "id" | "label" | "kind" | "sizeBytes">,
  options: RoundBootstrapOptions = {},
): RatioRecord | undefined {
  if (!num.rounds || !den.rounds) return undefined;
  if (num.rounds.counts.length !== den.rounds.counts.length) return undefined;
  if (num.rounds.counts.length < 2) return undefined;
  const a = roundsOf(num.samples, num.rounds);
  const b = roundsOf(den.samples, den.rounds);
  // A round where an arm got no samples (an aborted block) is dropped from both sides.
  const keep = a.map((r, i) => r.length > 0 && b[i].length > 0);
  const ak = a.filter((_, i) => keep[i]);
  const bk = b.filter((_, i) => keep[i]);
  if (ak.length < 2) return undefined;
  const r = pairedRatio(ak, bk, options);
  return {
    ...fields,
    numerator: num.id,
    denominator: den.id,
    ratio: r.ratio,
    interval: r.interval,
    medianOfRounds: r.medianOfRounds,
    cv: r.cv,
    perRound: r.perRound,
  };
}

/**
 * The ratios a report leads with: per size, each pair of
 * {@linkcode TRANSPORT_PAIRS} present; then each row over its kernel floor and
 * each runtime floor over the kernel one.
 */
export function pairedRatios(
  rows: readonly ResultRow[],
  floors: readonly FloorRow[],
  options: RoundBootstrapOptions = {},
): RatioRecord[] {
  const out: RatioRecord[] = [];
  const sizes = [...new Set(rows.map((r) => r.sizeBytes))];
  for (const size of sizes) {
    for (const [n, d] of TRANSPORT_PAIRS) {
      const num = rows.find((r) => r.transport === n && r.sizeBytes === size);
      const den = rows.find((r) => r.transport === d && r.sizeBytes === size);
      if (!num || !den) continue;
      const rec = ratioRecord(num, den, {
        id: `${n}/${d}/${size}`,
        label: `${n} ÷ ${d}`,
        kind: "transports",
        sizeBytes: size,
      }, options);
      if (rec) out.push(rec);
    }
  }
  for (const r of rows) {
    const f = r.floor && findFloor(floors, r.floor, r.sizeBytes);
    if (!f) continue;
    const rec = ratioRecord(r, floorArm(f), {
      id: `${r.id}/floor`,
      label: `${r.transport} ÷ kernel ${r.floor}`,
      kind: "floor",
      sizeBytes: r.sizeBytes,
    }, options);
    if (rec) out.push(rec);
  }
  out.push(...stacksRatios(floors, options));
  for (const f of floors.filter((f) => f.source !== "kernel")) {
    const k = findFloor(floors, f.protocol, f.sizeBytes);
    if (!k) continue;
    const name = f.source === "bare"
      ? `bare ${f.transport}`
      : f.source === "stacks"
      ? `stacks alone ${f.transport}`
      : "runtime";
    const rec = ratioRecord(floorArm(f), floorArm(k), {
      id: `${floorId(f)}/floor`,
      label: `${name} ${f.protocol} ÷ kernel ${f.protocol}`,
      kind: "floor",
      sizeBytes: f.sizeBytes,
    }, options);
    if (rec) out.push(rec);
  }
  for (const r of rows) {
    const b = findBareFloor(floors, r.transport, r.sizeBytes);
    if (!b) continue;
    const rec = ratioRecord(r, floorArm(b), {
      id: `${r.id}/bare`,
      label: `${r.transport} ÷ bare runtime`,
      kind: "runtime",
      sizeBytes: r.sizeBytes,
    }, options);
    if (rec) out.push(rec);
  }
  return out;
}

/**
 * The stacks alone's transport pairs, per size: those of
 * {@linkcode TRANSPORT_PAIRS} whose arms were measured, and h3 ÷ h2c when
 * h3 ÷ h2-tls was not (a run without an h2-over-TLS stacks-alone arm).
 */
export function stacksRatios(
  floors: readonly FloorRow[],
  options: RoundBootstrapOptions = {},
): RatioRecord[] {
  const out: RatioRecord[] = [];
  const stacks = floors.filter((f) => f.source === "stacks");
  for (const size of [...new Set(stacks.map((f) => f.sizeBytes))]) {
    const pairs = [...TRANSPORT_PAIRS];
    if (!findStacksFloor(stacks, "h2-tls", size)) pairs.push(["h3", "h2c"]);
    for (const [n, d] of pairs) {
      const num = findStacksFloor(stacks, n, size);
      const den = findStacksFloor(stacks, d, size);
      if (!num || !den) continue;
      const rec = ratioRecord(floorArm(num), floorArm(den), {
        id: `stacks/${n}/${d}/${size}`,
        label: `stacks alone ${n} ÷ ${d}`,
        kind: "stacks",
        sizeBytes: size,
      }, options);
      if (rec) out.push(rec);
    }
  }
  return out;
}

/**
 * sbilab's own time per request: each row's median minus its transport's
 * stacks-alone arm at the same size, paired by round (rows and arms with at
 * least two shared rounds).
 */
export function addedTimes(
  rows: readonly ResultRow[],
  floors: readonly FloorRow[],
  options: RoundBootstrapOptions = {},
): AddedRecord[] {
  const out: AddedRecord[] = [];
  for (const r of rows) {
    const f = findStacksFloor(floors, r.transport, r.sizeBytes);
    if (!f || !r.rounds || !f.rounds) continue;
    if (r.rounds.counts.length !== f.rounds.counts.length) continue;
    const a = roundsOf(r.samples, r.rounds);
    const b = roundsOf(f.samples, f.rounds);
    const keep = a.map((x, i) => x.length > 0 && b[i].length > 0);
    const ak = a.filter((_, i) => keep[i]);
    const bk = b.filter((_, i) => keep[i]);
    if (ak.length < 2) continue;
    const d = pairedDifference(ak, bk, options);
    out.push({
      id: `${r.id}/added`,
      transport: r.transport,
      ...(r.sizeBytes !== undefined ? { sizeBytes: r.sizeBytes } : {}),
      row: r.id,
      stacks: floorId(f),
      addedNs: d.difference,
      interval: d.interval,
    });
  }
  return out;
}

/**
 * The stable id of a floor, e.g. `floor/kernel/tcp/256`, or, for an arm of one
 * transport, `floor/bare/h2c/256` and `floor/stacks/h3/256`.
 */
export function floorId(
  f: Pick<FloorRow, "source" | "protocol" | "sizeBytes" | "transport">,
): string {
  if (f.source === "bare" || f.source === "stacks") {
    return `floor/${f.source}/${f.transport}/${f.sizeBytes}`;
  }
  return `floor/${f.source}/${f.protocol}/${f.sizeBytes}`;
}

function floorArm(f: FloorRow): Arm {
  return { id: floorId(f), samples: f.samples, rounds: f.rounds };
}

function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/** What {@linkcode assessNoise} reads. */
export interface NoiseInput {
  /** Per-round machine readings (may be empty). */
  machine: readonly RoundMachineRecord[];
  /** Rows with their round series. */
  rows: readonly ResultRow[];
  /** Floors with their round series. */
  floors: readonly FloorRow[];
  /** The paired ratios of the run. */
  ratios: readonly RatioRecord[];
  /** CPU cores of the machine. */
  cores: number;
}

/** Noisy arms the noise line names one by one; more are counted, with the worst named. */
const MAX_NAMED_ARMS = 6;

/** Half-width (relative) of a ratio's interval: the larger side. */
export function halfWidth(r: Pick<RatioRecord, "ratio" | "interval">): number {
  return Math.max(r.interval.upper / r.ratio - 1, 1 - r.interval.lower / r.ratio);
}

/**
 * Names the run's noise: every figure against {@linkcode NOISE_THRESHOLDS}
 * (or the given ones). `expectPercent` is the widest transport ratio's
 * interval half-width, or the largest kernel floor drift when that is larger.
 */
export function assessNoise(
  input: NoiseInput,
  thresholds: NoiseThresholds = NOISE_THRESHOLDS,
): NoiseRecord {
  const reasons: string[] = [];
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const signed = (x: number) => `${x >= 0 ? "+" : "−"}${(Math.abs(x) * 100).toFixed(0)} %`;
  const m = input.machine;
  const stealShare = m.length ? mean(m.map((r) => r.stealShare)) : undefined;
  const other = m.map((r) => r.otherCores);
  const otherCores = m.length ? mean(other) : undefined;
  const otherCoresMax = m.length ? Math.max(...other) : undefined;
  const load1Max = m.length ? Math.max(...m.map((r) => r.load1)) : undefined;
  if (stealShare !== undefined && stealShare > thresholds.stealShare) {
    reasons.push(`steal ${pct(stealShare)} of CPU time`);
  }
  if (otherCores !== undefined && otherCores > thresholds.otherCores) {
    reasons.push(`other processes used ${otherCores.toFixed(2)} of a core`);
  }
  if (load1Max !== undefined && load1Max > input.cores + thresholds.loadAboveCores) {
    reasons.push(`load average reached ${load1Max.toFixed(1)} on ${input.cores} cores`);
  }
  const floorDrift: Record<string, number> = {};
  let worstDrift = 0;
  for (const f of input.floors) {
    const medians = f.rounds?.medians.filter((m) => m > 0) ?? [];
    if (medians.length < 4) continue;
    const d = drift(medians);
    floorDrift[floorId(f)] = d;
    if (f.source !== "kernel") continue;
    worstDrift = Math.max(worstDrift, Math.abs(d));
    if (Math.abs(d) > thresholds.floorDrift) {
      reasons.push(
        `kernel ${f.protocol} floor at ${formatBytes(f.sizeBytes)} drifted ${signed(d)}`,
      );
    }
  }
  const armCv: Record<string, number> = {};
  for (const f of input.floors) if (f.rounds) armCv[floorId(f)] = f.rounds.cv;
  const noisyArms: { name: string; cv: number }[] = [];
  let withRounds = 0;
  for (const r of input.rows) {
    if (!r.rounds) continue;
    withRounds++;
    armCv[r.id] = r.rounds.cv;
    if (r.rounds.cv > thresholds.armCv) {
      noisyArms.push({ name: `${r.transport} ${formatBytes(r.sizeBytes ?? 0)}`, cv: r.rounds.cv });
    }
  }
  if (noisyArms.length > MAX_NAMED_ARMS) {
    const worst = noisyArms.reduce((a, b) => (b.cv > a.cv ? b : a));
    reasons.push(
      `round-to-round CV above ${
        pct(thresholds.armCv)
      } in ${noisyArms.length} of ${withRounds} arms (worst ${worst.name} ${pct(worst.cv)})`,
    );
  } else if (noisyArms.length) {
    reasons.push(
      `round-to-round CV ${noisyArms.map((a) => `${a.name} ${pct(a.cv)}`).join(", ")}`,
    );
  }
  const widest = Math.max(
    0,
    ...input.ratios.filter((r) => r.kind === "transports" || r.kind === "peers").map(halfWidth),
  );
  return {
    noisy: reasons.length > 0,
    reasons,
    expectPercent: Math.max(widest, worstDrift) * 100,
    stealShare,
    otherCores,
    otherCoresMax,
    load1Max,
    floorDrift,
    armCv,
    thresholds,
  };
}

/** The report's noise line, or undefined on a quiet run. */
export function noiseLine(noise: NoiseRecord | undefined): string | undefined {
  if (!noise?.noisy) return undefined;
  return `this machine was noisy: ${noise.reasons.join("; ")}; expect ±${
    Math.max(1, Math.ceil(noise.expectPercent))
  } %`;
}
