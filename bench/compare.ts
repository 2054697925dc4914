/**
 * Comparison of two saved runs, row by row (matched by id): a bootstrap test
 * of the median difference, and a noise threshold below which a significant
 * change is still called noise. Every row times something, so slower = worse.
 */
import { compareMedians, type Interval } from "./stats.ts";
import type { BenchRun } from "./schema.ts";
import { layoutColumns } from "./table.ts";
import { formatDuration, formatPercent } from "../lib/units.ts";

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
  noiseThreshold: number;
  rows: RowComparison[];
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
  const threshold = options.noiseThreshold ?? 0.02;
  const alpha = options.alpha ?? 0.05;
  if (!(threshold >= 0)) throw new RangeError(`Noise threshold must be ≥ 0, got ${threshold}`);
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
    const cmp = compareMedians(ra.samples.samples, rb.samples.samples, { level: 1 - alpha });
    // Prefer the exact medians of the estimates (from the histogram for long runs).
    const change = rb.estimate.median / ra.estimate.median - 1;
    const significant = cmp.changeCi.lower > 0 || cmp.changeCi.upper < 0;
    let verdict: Verdict = "no change";
    if (significant) {
      verdict = change > threshold
        ? "regressed"
        : change < -threshold
        ? "improved"
        : "within noise";
    }
    rows.push({
      id: ra.id,
      transport: ra.transport,
      label: ra.label,
      baseMedian: ra.estimate.median,
      candidateMedian: rb.estimate.median,
      change,
      changeCi: cmp.changeCi,
      pValue: cmp.pValue,
      verdict,
    });
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
  return { noiseThreshold: threshold, rows };
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
  const head = `Comparison, B against baseline A (bootstrap test of the median, noise threshold ${
    (cmp.noiseThreshold * 100).toFixed(1)
  } %)`;
  return `${head}\n\n${
    layoutColumns(
      ["transport", "row", "A median", "B median", "change", "95 % CI", "verdict"],
      body,
    )
  }`;
}
