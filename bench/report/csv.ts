/** CSV of the rows (one line per row, durations in ns), a pure function of a run. */
import { floorMultiple } from "../record/floor_lookup.ts";
import type { BenchRun } from "../record/schema.ts";
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
  "rounds",
  "round_cv",
  "client_cpu_ns_per_request",
  "server_cpu_ns_per_request",
  "ratio",
  "ratio_ci_lower",
  "ratio_ci_upper",
  "ratio_median_of_rounds",
  "numerator",
  "denominator",
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
  const extra = sections.map((s) => s.csvCells?.(run));
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
        r.rounds?.counts.length,
        r.rounds?.cv,
        r.extra?.clientCpuNsPerRequest,
        r.extra?.serverCpuNsPerRequest,
        ...sections.flatMap((s, i) => extra[i]?.(r) ?? s.csvColumns!.map(() => undefined)),
      ].map(cell).join(","),
    );
  }
  // The paired ratios of a run in rounds, one line each (scenario `ratio`).
  const at = (name: string) => COLUMNS.indexOf(name);
  for (const q of run.rounds?.ratios ?? []) {
    const cells: unknown[] = COLUMNS.map(() => undefined);
    cells[at("id")] = `ratio/${q.id}`;
    cells[at("scenario")] = "ratio";
    cells[at("label")] = q.label;
    cells[at("size_bytes")] = q.sizeBytes;
    cells[at("rounds")] = q.perRound.length;
    cells[at("round_cv")] = q.cv;
    cells[at("ratio")] = q.ratio;
    cells[at("ratio_ci_lower")] = q.interval.lower;
    cells[at("ratio_ci_upper")] = q.interval.upper;
    cells[at("ratio_median_of_rounds")] = q.medianOfRounds;
    cells[at("numerator")] = q.numerator;
    cells[at("denominator")] = q.denominator;
    lines.push(cells.map(cell).join(","));
  }
  return lines.join("\n") + "\n";
}
