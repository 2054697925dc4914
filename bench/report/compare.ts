/**
 * Comparison of two saved runs, row by row (matched by id), and for runs in
 * rounds their paired ratios too (the figures noise moves least).
 *
 * Runs in rounds are compared at the level of rounds: each run's rounds are
 * resampled on their own (a cluster bootstrap), and a change counts only when
 * its interval excludes zero, it exceeds the noise threshold, and the two
 * runs' own intervals do not overlap, so two runs of the same code on a
 * machine that moved between them read as "within noise", not a regression.
 * The threshold is at least what a repeated run (`--runs`) showed as its
 * spread. Runs without rounds fall back to a bootstrap over samples.
 * Every row times something, so slower = worse.
 */
import { compareMedians, type Interval } from "../stats/stats.ts";
import type { BenchRun, RatioRecord, ResultRow } from "../record/schema.ts";
import { roundsOf } from "../record/rounds_summary.ts";
import { clusterMedian, unpairedRatio } from "../stats/rounds_stats.ts";
import { layoutColumns } from "./table.ts";
import { formatBytes, formatDuration, formatPercent } from "../../lib/units.ts";
import { ratioWithInterval, runNoiseLine } from "./ratio_report.ts";

/** Verdict on one row. */
export type Verdict =
  | "regressed"
  | "improved"
  | "within noise"
  | "no change"
  | "only in A"
  | "only in B";

/** One compared row. */
export interface RowComparison {
  id: string;
  transport: string;
  label: string;
  baseMedian?: number;
  candidateMedian?: number;
  /** Relative change B/A − 1. */
  change?: number;
  changeCi?: Interval;
  pValue?: number;
  verdict: Verdict;
}

/** A comparison of two runs. */
export interface RunComparison {
  /** The threshold used (the asked one, raised to the repeats' spread or either run's stated noise). */
  noiseThreshold: number;
  /**
   * How far the machine itself moved between the runs: the largest relative
   * change of a kernel floor measured in both (0 without floors). A row's
   * change counts only when it stays beyond the threshold once its own
   * floor's move is divided out; the ratios cancel the machine by pairing.
   */
  machineShift: number;
  /** `rounds` when both runs were measured in rounds, else `samples`. */
  method: "rounds" | "samples";
  /** The paired ratios of both runs, compared (runs in rounds only). */
  ratios: RatioComparison[];
  rows: RowComparison[];
  /** Each run's noise line, when its machine was noisy. */
  noise: { a?: string; b?: string };
  /** Which runs were `--quick` (named in the report; they never gate). */
  quick?: { a: boolean; b: boolean };
}

/** One paired ratio in both runs. */
export interface RatioComparison {
  id: string;
  label: string;
  sizeBytes?: number;
  base: RatioRecord;
  candidate: RatioRecord;
  /** Relative change of the ratio, B/A − 1. */
  change: number;
  verdict: Verdict;
}

/** Options of {@linkcode compareRuns}. */
export interface CompareOptions {
  /** Relative change below which a significant difference counts as noise. Default 0.02. */
  noiseThreshold?: number;
  /** Significance level of the bootstrap test. Default 0.05. */
  alpha?: number;
}

/** Compares candidate `b` against baseline `a`. */
export function compareRuns(a: BenchRun, b: BenchRun, options: CompareOptions = {}): RunComparison {
  const asked = options.noiseThreshold ?? 0.02;
  const alpha = options.alpha ?? 0.05;
  if (!(asked >= 0)) throw new RangeError(`Noise threshold must be ≥ 0, got ${asked}`);
  const spread = Math.max(
    0,
    ...[a, b].flatMap((r) => r.repeats?.spread.map((s) => s.maxDeviation) ?? []),
  );
  // a change counts only beyond the larger of the two runs' own stated noise ("expect ±N %")
  const stated = Math.max(0, ...[a, b].map((r) => statedNoise(r)));
  const threshold = Math.max(asked, spread, stated);
  const machineShift = floorShift(a, b);
  const rounds = a.rounds !== undefined && b.rounds !== undefined;
  const byId = new Map(b.rows.map((r) => [r.id, r]));
  const rows: RowComparison[] = [];
  for (const ra of a.rows) {
    const rb = byId.get(ra.id);
    if (!rb) {
      rows.push({
        id: ra.id,
        transport: ra.transport,
        label: ra.label,
        baseMedian: ra.estimate.median,
        verdict: "only in A",
      });
      continue;
    }
    byId.delete(ra.id);
    rows.push(compareRow(ra, rb, threshold, alpha, rounds, ownFloorShift(a, b, ra)));
  }
  for (const rb of byId.values()) {
    rows.push({
      id: rb.id,
      transport: rb.transport,
      label: rb.label,
      candidateMedian: rb.estimate.median,
      verdict: "only in B",
    });
  }
  const ratios: RatioComparison[] = [];
  for (const qa of a.rounds?.ratios ?? []) {
    if (qa.kind !== "transports") continue;
    const qb = b.rounds?.ratios.find((q) => q.id === qa.id);
    if (!qb) continue;
    const change = qb.ratio / qa.ratio - 1;
    const overlap = qa.interval.lower <= qb.interval.upper &&
      qb.interval.lower <= qa.interval.upper;
    ratios.push({
      id: qa.id,
      label: qa.label,
      sizeBytes: qa.sizeBytes,
      base: qa,
      candidate: qb,
      change,
      verdict: overlap
        ? change === 0 ? "no change" : "within noise"
        : Math.abs(change) <= threshold
        ? "within noise"
        : change > 0
        ? "regressed"
        : "improved",
    });
  }
  return {
    noiseThreshold: threshold,
    machineShift,
    method: rounds ? "rounds" : "samples",
    ratios,
    rows,
    noise: { a: runNoiseLine(a), b: runNoiseLine(b) },
    quick: { a: a.config.quick === true, b: b.config.quick === true },
  };
}

/** The spread a run said a repeat should fall within (its "expect ±N %"), as a share; 0 when quiet. */
export function statedNoise(run: BenchRun): number {
  const n = run.rounds?.noise;
  return n?.noisy ? Math.max(1, Math.ceil(n.expectPercent)) / 100 : 0;
}

/**
 * Why two saved runs cannot be compared (different schemas, a bench run and a
 * study, different scenarios), or undefined when they can.
 */
export function incomparable(a: BenchRun, b: BenchRun): string | undefined {
  if (a.schema !== b.schema) return `A has schema ${a.schema} and B ${b.schema}`;
  const kind = (r: BenchRun) => (r.study ? "a lab study run" : "a lab bench run");
  if (kind(a) !== kind(b)) return `A is ${kind(a)} and B is ${kind(b)}`;
  if (a.config.scenario !== b.config.scenario) {
    return `A ran --scenario ${a.config.scenario} and B --scenario ${b.config.scenario}`;
  }
  return undefined;
}

/** The largest relative change of a kernel floor between two runs (0 when none matches). */
export function floorShift(a: BenchRun, b: BenchRun): number {
  let shift = 0;
  for (const fa of a.floors.rows) {
    if (fa.source !== "kernel") continue;
    const fb = b.floors.rows.find((f) =>
      f.source === fa.source && f.protocol === fa.protocol && f.sizeBytes === fa.sizeBytes
    );
    if (fb && fa.estimate.median > 0) {
      shift = Math.max(shift, Math.abs(fb.estimate.median / fa.estimate.median - 1));
    }
  }
  return shift;
}

/**
 * How the row's own kernel floor moved between the runs, B/A − 1, and how
 * uncertain that move is (the two floors' relative interval half-widths
 * added); zero without a floor in both runs.
 */
function ownFloorShift(a: BenchRun, b: BenchRun, row: ResultRow): { shift: number; slack: number } {
  const none = { shift: 0, slack: 0 };
  if (!row.floor) return none;
  const pick = (r: BenchRun) =>
    r.floors.rows.find((f) =>
      f.source === "kernel" && f.protocol === row.floor && f.sizeBytes === row.sizeBytes
    );
  const fa = pick(a), fb = pick(b);
  if (!fa || !fb || !(fa.estimate.median > 0) || !(fb.estimate.median > 0)) return none;
  const half = (e: ResultRow["estimate"]) => (e.medianCi.upper - e.medianCi.lower) / 2 / e.median;
  return {
    shift: fb.estimate.median / fa.estimate.median - 1,
    slack: half(fa.estimate) + half(fb.estimate),
  };
}

/** Rows and ratios that regressed: what `--fail-on-regression` counts. */
export function regressions(cmp: RunComparison): string[] {
  return [
    ...cmp.ratios.filter((r) => r.verdict === "regressed").map((r) =>
      `${r.label}${r.sizeBytes !== undefined ? ` ${formatBytes(r.sizeBytes)}` : ""}`
    ),
    ...cmp.rows.filter((r) => r.verdict === "regressed").map((r) => `${r.transport} ${r.label}`),
  ];
}

/** The comparison's verdict in one sentence, for the top of the report. */
export function comparisonAnswer(cmp: RunComparison): string {
  const bad = regressions(cmp);
  const better = [...cmp.ratios, ...cmp.rows].filter((r) => r.verdict === "improved").length;
  if (bad.length === 0 && better === 0) {
    return "No change: no row or ratio moved beyond both its interval and the noise threshold.";
  }
  const parts: string[] = [];
  if (bad.length) {
    parts.push(
      `${bad.length} regressed (${bad.slice(0, 3).join("; ")}${bad.length > 3 ? "; …" : ""})`,
    );
  }
  if (better) parts.push(`${better} improved`);
  return `${parts.join(", ")}: each beyond its interval and the noise threshold.`;
}

function compareRow(
  ra: ResultRow,
  rb: ResultRow,
  threshold: number,
  alpha: number,
  rounds: boolean,
  machine: { shift: number; slack: number },
): RowComparison {
  // Prefer the exact medians of the estimates (from the histogram for long runs).
  const change = rb.estimate.median / ra.estimate.median - 1;
  let changeCi: Interval;
  let pValue: number | undefined;
  let separate = true;
  if (
    rounds && ra.rounds && rb.rounds && ra.rounds.counts.length >= 2 &&
    rb.rounds.counts.length >= 2
  ) {
    const keep = (x: number[][]) => x.filter((r) => r.length > 0);
    const a = keep(roundsOf(ra.samples, ra.rounds));
    const b = keep(roundsOf(rb.samples, rb.rounds));
    const u = unpairedRatio(b, a, { level: 1 - alpha });
    changeCi = { level: 1 - alpha, lower: u.interval.lower - 1, upper: u.interval.upper - 1 };
    // Each run's own interval over its rounds (recomputed, so both come from the same method).
    const ia = clusterMedian(a, { level: 1 - alpha }).interval;
    const ib = clusterMedian(b, { level: 1 - alpha }).interval;
    separate = ia.upper < ib.lower || ib.upper < ia.lower;
  } else {
    const cmp = compareMedians(ra.samples.samples, rb.samples.samples, { level: 1 - alpha });
    changeCi = cmp.changeCi;
    pValue = cmp.pValue;
  }
  const significant = changeCi.lower > 0 || changeCi.upper < 0;
  let verdict: Verdict = "no change";
  if (significant) {
    // The change left once the machine's own move (the row's kernel floor) is taken out.
    // The floor's move is itself uncertain: its intervals' half-widths widen the threshold.
    const beyondMachine = (1 + change) / (1 + machine.shift) - 1;
    verdict = !separate || Math.abs(change) <= threshold ||
        Math.abs(beyondMachine) <= threshold + machine.slack ||
        Math.sign(beyondMachine) !== Math.sign(change)
      ? "within noise"
      : change > 0
      ? "regressed"
      : "improved";
  }
  return {
    id: ra.id,
    transport: ra.transport,
    label: ra.label,
    baseMedian: ra.estimate.median,
    candidateMedian: rb.estimate.median,
    change,
    changeCi,
    pValue,
    verdict,
  };
}

/** The comparison as a terminal table. */
export function renderComparison(cmp: RunComparison): string {
  const body = cmp.rows.map((r) => [
    r.transport,
    r.label,
    r.baseMedian === undefined ? "–" : formatDuration(r.baseMedian),
    r.candidateMedian === undefined ? "–" : formatDuration(r.candidateMedian),
    r.change === undefined ? "–" : formatPercent(r.change),
    r.changeCi ? `[${formatPercent(r.changeCi.lower)}, ${formatPercent(r.changeCi.upper)}]` : "–",
    r.verdict,
  ]);
  const how = cmp.method === "rounds"
    ? "each run's rounds resampled on their own"
    : "bootstrap over samples";
  const head = `Comparison, B against baseline A (${how}, noise threshold ${
    (cmp.noiseThreshold * 100).toFixed(1)
  } %${
    cmp.machineShift > cmp.noiseThreshold
      ? `; the kernel floors moved up to ${
        (cmp.machineShift * 100).toFixed(1)
      } % between the runs, so each row's change is also read over its floor's`
      : ""
  })`;
  const parts = [comparisonAnswer(cmp), "", head, ""];
  const quick = [cmp.quick?.a ? "A" : "", cmp.quick?.b ? "B" : ""].filter(Boolean);
  if (quick.length) {
    parts.push(
      `${quick.join(" and ")} ${quick.length > 1 ? "were quick runs" : "was a quick run"} ` +
        "(--quick): a smoke test, not a measurement; it never gates --fail-on-regression.",
      "",
    );
  }
  if (cmp.noise.a) parts.push(`A: ${cmp.noise.a}`);
  if (cmp.noise.b) parts.push(`B: ${cmp.noise.b}`);
  if (cmp.noise.a || cmp.noise.b) parts.push("");
  if (cmp.ratios.length) {
    parts.push(
      layoutColumns(
        ["ratio (paired rounds)", "size", "A", "B", "change", "verdict"],
        cmp.ratios.map((r) => [
          r.label,
          r.sizeBytes !== undefined ? formatBytes(r.sizeBytes) : "–",
          ratioWithInterval(r.base),
          ratioWithInterval(r.candidate),
          formatPercent(r.change),
          r.verdict,
        ]),
      ),
      "",
    );
  }
  parts.push(
    layoutColumns(
      ["transport", "row", "A median", "B median", "change", "95 % CI", "verdict"],
      body,
    ),
  );
  return parts.join("\n");
}
