/** CSV of the rows (one line per row, durations in ns), a pure function of a run. */
import { floorMultiple } from "./table.ts";
import type { BenchRun } from "./schema.ts";

const COLUMNS = [
  "id",
  "scenario",
  "stack",
  "transport",
  "label",
  "size_bytes",
  "concurrency",
  "n",
  "median_ns",
  "ci_lower_ns",
  "ci_upper_ns",
  "mean_ns",
  "stddev_ns",
  "mad_ns",
  "min_ns",
  "max_ns",
  "p50_ns",
  "p90_ns",
  "p99_ns",
  "p999_ns",
  "floor",
  "floor_multiple",
  "requests_per_second",
  "bytes_per_second",
  "errors",
  "outliers_mild",
  "outliers_severe",
];

function cell(v: unknown): string {
  if (v === undefined || v === null) return "";
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Renders the rows as CSV with a header line. */
export function renderCsv(run: BenchRun): string {
  const lines = [COLUMNS.join(",")];
  for (const r of run.rows) {
    const e = r.estimate;
    lines.push(
      [
        r.id,
        r.scenario,
        r.stack,
        r.transport,
        r.label,
        r.sizeBytes,
        r.concurrency,
        e.n,
        e.median,
        e.medianCi.lower,
        e.medianCi.upper,
        e.mean,
        e.stddev,
        e.mad,
        e.min,
        e.max,
        e.p50,
        e.p90,
        e.p99,
        e.p999,
        r.floor,
        floorMultiple(run, r),
        r.requestsPerSecond,
        r.bytesPerSecond,
        r.errors,
        e.outliers.lowMild + e.outliers.highMild,
        e.outliers.lowSevere + e.outliers.highSevere,
      ].map(cell).join(","),
    );
  }
  return lines.join("\n") + "\n";
}
