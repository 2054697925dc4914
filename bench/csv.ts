/** CSV of the rows (one line per row, durations in ns), a pure function of a run. */
import { floorMultiple } from "./floors.ts";
import type { BenchRun } from "./schema.ts";
import type { RenderOptions } from "./report_sections.ts";

const COLUMNS = [
  "id",
  "scenario",
  "stack",
  "transport",
  "engine",
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
  "link",
  "flow",
  "step",
  "failed",
  "retries",
];

function cell(v: unknown): string {
  if (v === undefined || v === null) return "";
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * Renders the rows as CSV with a header line; each section of `options` adds
 * its own columns (the study adds each flow-time row's cell verdict).
 */
export function renderCsv(run: BenchRun, options: RenderOptions = {}): string {
  const sections = (options.sections ?? []).filter((s) => s.csvColumns?.length);
  const lines = [[...COLUMNS, ...sections.flatMap((s) => s.csvColumns!)].join(",")];
  const linkOf = (r: BenchRun["rows"][number]) => r.link ?? run.config.link?.spec ?? "loopback";
  for (const r of run.rows) {
    const e = r.estimate;
    lines.push(
      [
        r.id,
        r.scenario,
        r.stack,
        r.transport,
        r.engine ?? "sbi",
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
        r.scenario === "flows" ? linkOf(r) : r.link,
        r.flow,
        r.step,
        r.extra?.failed,
        r.extra?.retries,
        ...sections.flatMap((s) => s.csvCells?.(run, r) ?? []),
      ].map(cell).join(","),
    );
  }
  return lines.join("\n") + "\n";
}
