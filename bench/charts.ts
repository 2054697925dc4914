/** ASCII charts (asciichart) drawn from a run record. */
import asciichart from "asciichart";
import type { BenchRun } from "./schema.ts";
import { formatDuration } from "./units.ts";

const PERCENTILES: [string, "p50" | "p90" | "p99" | "p999"][] = [
  ["p50", "p50"],
  ["p90", "p90"],
  ["p99", "p99"],
  ["p99.9", "p999"],
];

function scale(values: number[]): { div: number; unit: string } {
  const max = Math.max(...values);
  if (max >= 1e6) return { div: 1e6, unit: "ms" };
  if (max >= 1e3) return { div: 1e3, unit: "µs" };
  return { div: 1, unit: "ns" };
}

/** Latency percentiles per row as horizontal bars (one block per row). */
export function renderPercentileBars(run: BenchRun, width = 50): string {
  const rows = run.rows.filter((r) => r.scenario !== "peers");
  if (rows.length === 0) return "";
  const max = Math.max(...rows.map((r) => r.estimate.p999));
  const lines = ["Latency percentiles (bar length ∝ time, common scale):"];
  for (const r of rows) {
    lines.push(`  ${r.transport} · ${r.label}`);
    for (const [name, key] of PERCENTILES) {
      const v = r.estimate[key];
      const n = Math.max(1, Math.round((v / max) * width));
      lines.push(`    ${name.padEnd(5)} ${"█".repeat(n)} ${formatDuration(v)}`);
    }
  }
  return lines.join("\n");
}

/** Percentile curves (p50 → p99.9) per transport with asciichart, for the first size
 * (`rtt`, or `hol` across a link, where the tail is the point). */
export function renderPercentileChart(run: BenchRun): string {
  const rows = run.rows.filter((r) =>
    (r.scenario === "rtt" || r.scenario === "hol") && r.sizeBytes === run.config.sizes[0]
  );
  if (rows.length === 0) return "";
  const series = rows.map((r) => PERCENTILES.map(([, k]) => r.estimate[k]));
  const { div, unit } = scale(series.flat());
  const plot = asciichart.plot(series.map((s) => s.map((v) => v / div)), {
    height: 8,
    colors: [],
    format: (x: number) => x.toFixed(1).padStart(8),
  });
  const legend = rows.map((r, i) => `series ${i + 1} = ${r.transport}`).join(", ");
  return `Latency (${unit}) at p50, p90, p99, p99.9 — ${legend}\n${plot}`;
}

/** Concurrency curve: req/s against the in-flight level, one series per transport. */
export function renderConcurrencyChart(run: BenchRun): string {
  const rows = run.rows.filter((r) =>
    r.scenario === "concurrency" && r.requestsPerSecond !== undefined
  );
  if (rows.length === 0) return "";
  const transports = [...new Set(rows.map((r) => r.transport))];
  const series = transports.map((t) =>
    rows.filter((r) => r.transport === t).map((r) => r.requestsPerSecond!)
  );
  const levels = rows.filter((r) => r.transport === transports[0]).map((r) => r.concurrency);
  const plot = asciichart.plot(series.map((s) => s.map((v) => v / 1000)), {
    height: 8,
    format: (x: number) => x.toFixed(1).padStart(8),
  });
  return `Throughput (k req/s) at ${levels.join(", ")} in flight — ${
    transports.map((t, i) => `series ${i + 1} = ${t}`).join(", ")
  }\n${plot}`;
}

/** Every chart that applies to the run, or an empty string. */
export function renderCharts(run: BenchRun): string {
  return [renderPercentileChart(run), renderConcurrencyChart(run), renderPercentileBars(run)]
    .filter(Boolean).join("\n\n");
}
