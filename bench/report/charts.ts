/**
 * Terminal charts drawn from a run record: horizontal bars on a common scale,
 * each labelled with its value, so a few figures read as figures (the HTML
 * report, `--html`, has the plotted charts).
 */
import { type BenchRun, isFlowRow, type ResultRow } from "../record/schema.ts";
import { formatDuration, formatRate } from "../../lib/units.ts";

const PERCENTILES: [string, "p50" | "p90" | "p99" | "p999"][] = [
  ["p50", "p50"],
  ["p90", "p90"],
  ["p99", "p99"],
  ["p99.9", "p999"],
];

const ORDER = ["h2c", "h2-tls", "h3"];

function bar(value: number, max: number, width: number): string {
  return "█".repeat(Math.max(1, Math.round((value / max) * width)));
}

/** Latency percentiles per row as horizontal bars (one block per row; per-step rows left out). */
export function renderPercentileBars(run: BenchRun, width = 50): string {
  const rows = run.rows.filter((r) => r.scenario !== "peers" && r.step === undefined);
  if (rows.length === 0) return "";
  const max = Math.max(...rows.map((r) => r.estimate.p999));
  const lines = ["Latency percentiles (bar length ∝ time, common scale):"];
  for (const r of rows) {
    lines.push(`  ${r.link ? `${r.link} · ` : ""}${r.transport} · ${r.label}`);
    for (const [name, key] of PERCENTILES) {
      const v = r.estimate[key];
      lines.push(`    ${name.padEnd(5)} ${bar(v, max, width)} ${formatDuration(v)}`);
    }
  }
  return lines.join("\n");
}

/** Requests per second at each in-flight level, one bar per transport (concurrency scenario). */
export function renderConcurrencyBars(run: BenchRun, width = 50): string {
  const rows = run.rows.filter((r) =>
    r.scenario === "concurrency" && r.requestsPerSecond !== undefined
  );
  if (rows.length === 0) return "";
  const max = Math.max(...rows.map((r) => r.requestsPerSecond!));
  const levels = [...new Set(rows.map((r) => r.concurrency ?? 1))].sort((a, b) => a - b);
  const pad = Math.max(...rows.map((r) => r.transport.length));
  const lines = ["Throughput by requests in flight (bar length ∝ req/s):"];
  for (const level of levels) {
    lines.push(`  ${level} in flight`);
    for (const r of rows.filter((r) => (r.concurrency ?? 1) === level)) {
      lines.push(
        `    ${r.transport.padEnd(pad)} ${bar(r.requestsPerSecond!, max, width)} ${
          formatRate(r.requestsPerSecond!)
        }`,
      );
    }
  }
  return lines.join("\n");
}

/** p50 and p99 flow time per flow × UE level × link, one bar per transport. */
export function renderFlowBars(run: BenchRun, width = 46): string {
  const rows = run.rows.filter(isFlowRow);
  if (rows.length === 0) return "";
  const linkOf = (r: ResultRow) => r.link ?? run.config.link?.spec ?? "loopback";
  const lines = ["Flow time by link (p50 ▒, p99 █; bar length ∝ time, common scale per flow):"];
  for (const flow of [...new Set(rows.map((r) => r.flow!))]) {
    const rs = rows.filter((r) => r.flow === flow);
    const max = Math.max(...rs.map((r) => r.estimate.p99));
    for (const ues of [...new Set(rs.map((r) => r.concurrency ?? 1))]) {
      lines.push(`  ${flow}, ${ues} UEs`);
      for (const link of [...new Set(rs.map(linkOf))]) {
        const cell = rs.filter((r) => linkOf(r) === link && (r.concurrency ?? 1) === ues)
          .sort((a, b) => ORDER.indexOf(a.transport) - ORDER.indexOf(b.transport));
        for (const r of cell) {
          const p50 = Math.max(1, Math.round((r.estimate.p50 / max) * width));
          const p99 = Math.max(p50, Math.round((r.estimate.p99 / max) * width));
          lines.push(
            `    ${link.padEnd(8)} ${r.transport.padEnd(6)} ${"▒".repeat(p50)}${
              "█".repeat(p99 - p50)
            } ${formatDuration(r.estimate.p50)} / ${formatDuration(r.estimate.p99)}`,
          );
        }
      }
    }
  }
  return lines.join("\n");
}

/** Every chart that applies to the run, or an empty string. */
export function renderCharts(run: BenchRun): string {
  const flows = renderFlowBars(run);
  return [flows, renderConcurrencyBars(run), flows ? "" : renderPercentileBars(run)]
    .filter(Boolean).join("\n\n");
}
