/**
 * The HTML report's charts that show a run's shape rather than its medians:
 * an HdrHistogram-style percentile plot (x = 1/(1−p) on a log axis, so the
 * tail gets the room), p99 against req/s for the concurrency and capacity
 * scenarios, latency per round (drift), CPU time per request of each side,
 * and the transport ratios with their intervals, per run and across runs.
 * Each returns Chart.js configurations (JSON only), pure functions of a run.
 */
import type { BenchRun, ResultRow } from "../record/schema.ts";
import { formatBytes } from "../../lib/units.ts";
import { transportName } from "./answer.ts";

/** One chart on the page: its canvas id, heading and Chart.js configuration (JSON only). */
export interface ChartSpec {
  id: string;
  title: string;
  /** Canvas height in px. */
  height: number;
  /** Axes whose ticks are durations in ns (the page formats them). */
  durationAxes: string[];
  /** Axes whose ticks are percentiles written as 1/(1−p) (the page labels them `p99`, …). */
  percentileAxes?: string[];
  config: Record<string, unknown>;
}

const COLORS: Record<string, string> = { "h2c": "#1f77b4", "h2-tls": "#ff7f0e", "h3": "#2ca02c" };
/** A transport's colour in every chart. */
export const color = (t: string): string => COLORS[t] ?? "#7f7f7f";
/** Transports in report order. */
export const ORDER = ["h2c", "h2-tls", "h3"];

/** A flow row's UE count, or `background` for rows no UE drives (the NFs' heartbeats). */
export function uesOf(r: ResultRow): string {
  return r.concurrency !== undefined ? `${r.concurrency} UEs` : "background";
}

/** Rows in the report's transport order. */
export function sortRows(rows: ResultRow[]): ResultRow[] {
  return [...rows].sort((a, b) => ORDER.indexOf(a.transport) - ORDER.indexOf(b.transport));
}

/** Percentiles the plot marks, as fractions; the last point is the sample maximum. */
const PCTS = [0, 0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 0.99999];

/**
 * Percentile points of a row: x = 1/(1−p) (1 at the median's left end, 100 at
 * p99, 1000 at p99.9), y = the latency (ns). Stops at the last percentile the
 * samples can show (1/(1−p) ≤ n).
 */
export function percentilePoints(row: ResultRow): { x: number; y: number }[] {
  const asc = Float64Array.from(row.samples.samples).sort();
  const n = asc.length;
  if (n === 0) return [];
  const out: { x: number; y: number }[] = [];
  for (const p of PCTS) {
    const x = 1 / (1 - p);
    if (x > n) break;
    out.push({ x, y: asc[Math.min(n - 1, Math.ceil(p * n) - (p === 0 ? 0 : 1))] });
  }
  return out;
}

const cellTitle = (r: ResultRow) =>
  r.scenario === "flows"
    ? `${r.flow}${r.link ? ` · ${r.link}` : ""} · ${uesOf(r)}`
    : `${r.scenario} · ${r.label}`;

/** One percentile plot per cell (rows that differ only by transport), at most `limit`. */
export function percentileCharts(rows: ResultRow[], limit = 24): ChartSpec[] {
  const cells = new Map<string, ResultRow[]>();
  for (const r of rows) cells.set(cellTitle(r), [...(cells.get(cellTitle(r)) ?? []), r]);
  const out: ChartSpec[] = [];
  for (const [title, rs] of cells) {
    if (out.length >= limit) break;
    const sets = sortRows(rs).map((r) => ({ r, pts: percentilePoints(r) }))
      .filter((s) => s.pts.length > 1);
    if (sets.length === 0) continue;
    out.push({
      id: `pct-${out.length}`,
      title: `Latency by percentile (tail to the right): ${title}`,
      height: 260,
      durationAxes: ["y"],
      percentileAxes: ["x"],
      config: {
        type: "scatter",
        data: {
          datasets: sets.map(({ r, pts }) => ({
            label: transportName(r.transport),
            data: pts,
            showLine: true,
            pointRadius: 2,
            borderWidth: 2,
            borderColor: color(r.transport),
            backgroundColor: color(r.transport),
          })),
        },
        options: {
          scales: {
            x: { type: "logarithmic", min: 1, title: { display: true, text: "percentile" } },
            y: { type: "logarithmic", title: { display: true, text: "latency" } },
          },
        },
      },
    });
  }
  return out;
}

/** p99 against req/s, one line per transport and size (concurrency and capacity rows). */
export function p99RateCharts(run: BenchRun): ChartSpec[] {
  const rows = run.rows.filter((r) =>
    (r.scenario === "concurrency" || r.scenario === "capacity") &&
    r.requestsPerSecond !== undefined && r.estimate.n > 0
  );
  if (rows.length === 0) return [];
  const series = new Map<string, ResultRow[]>();
  for (const r of sortRows(rows)) {
    const key = `${transportName(r.transport)}${
      r.sizeBytes !== undefined ? ` · ${formatBytes(r.sizeBytes)}` : ""
    }${r.scenario === "capacity" ? " (capacity)" : ""}`;
    series.set(key, [...(series.get(key) ?? []), r]);
  }
  return [{
    id: "p99-rate",
    title: "p99 against requests per second (each point one load level; down and right is better)",
    height: 300,
    durationAxes: ["y"],
    config: {
      type: "scatter",
      data: {
        datasets: [...series].map(([label, rs]) => ({
          label,
          data: [...rs].sort((a, b) => (a.concurrency ?? 0) - (b.concurrency ?? 0)).map((r) => ({
            x: r.requestsPerSecond!,
            y: r.estimate.p99,
            n: r.concurrency ?? null,
          })),
          showLine: true,
          pointRadius: 4,
          borderWidth: 2,
          borderColor: color(rs[0].transport),
          backgroundColor: color(rs[0].transport),
        })),
      },
      options: {
        scales: {
          x: { title: { display: true, text: "req/s" }, beginAtZero: true },
          y: { type: "logarithmic", title: { display: true, text: "p99" } },
        },
      },
    },
  }];
}

/** The median of each round's block per row, one chart per size: drift shows as a slope. */
export function driftCharts(run: BenchRun): ChartSpec[] {
  const rows = run.rows.filter((r) => r.rounds && r.rounds.medians.length >= 2);
  const sizes = [...new Set(rows.map((r) => r.sizeBytes))];
  return sizes.map((size, i) => {
    const rs = sortRows(rows.filter((r) => r.sizeBytes === size));
    const n = Math.max(...rs.map((r) => r.rounds!.medians.length));
    return {
      id: `drift-${i}`,
      title: `Latency over the run: median of each round's block${
        size !== undefined ? `, ${formatBytes(size)}` : ""
      }`,
      height: 260,
      durationAxes: ["y"],
      config: {
        type: "line",
        data: {
          labels: Array.from({ length: n }, (_, k) => String(k + 1)),
          datasets: rs.map((r) => ({
            label: `${transportName(r.transport)}${r.stack ? ` (${r.stack})` : ""}`,
            data: r.rounds!.medians,
            borderColor: color(r.transport),
            backgroundColor: color(r.transport),
            borderWidth: 2,
            pointRadius: 1,
          })),
        },
        options: {
          scales: {
            x: { title: { display: true, text: "round" } },
            y: { type: "logarithmic", title: { display: true, text: "median of the round" } },
          },
        },
      },
    };
  });
}

/** CPU time per request of the client and the server, per row that has it. */
export function cpuCharts(run: BenchRun): ChartSpec[] {
  const rows = sortRows(run.rows.filter((r) => r.extra?.clientCpuNsPerRequest !== undefined));
  if (rows.length === 0) return [];
  const label = (r: ResultRow) =>
    `${transportName(r.transport)}${
      r.sizeBytes !== undefined ? ` ${formatBytes(r.sizeBytes)}` : ""
    }`;
  return [{
    id: "cpu",
    title: "CPU time per request: client (solid) and server (light), stacked",
    height: Math.max(180, 50 + rows.length * 28),
    durationAxes: ["x"],
    config: {
      type: "bar",
      data: {
        labels: rows.map(label),
        datasets: [{
          label: "client",
          data: rows.map((r) => r.extra!.clientCpuNsPerRequest),
          backgroundColor: rows.map((r) => color(r.transport)),
          stack: "cpu",
        }, {
          label: "server",
          data: rows.map((r) => r.extra!.serverCpuNsPerRequest ?? null),
          backgroundColor: rows.map((r) => `${color(r.transport)}77`),
          stack: "cpu",
        }],
      },
      options: {
        indexAxis: "y",
        scales: {
          x: { stacked: true, title: { display: true, text: "CPU per request" } },
          y: { stacked: true, ticks: { autoSkip: false } },
        },
      },
    },
  }];
}

/**
 * The transport ratios with their 95 % intervals: this run's, and with
 * `--runs` every run's side by side, so their agreement is seen.
 */
export function ratioCharts(run: BenchRun): ChartSpec[] {
  const own = (run.rounds?.ratios ?? []).filter((r) => r.kind === "transports");
  const runs = run.repeats?.runs.length ? run.repeats.runs.map((r) => r.ratios) : [own];
  const ids = [...new Set(runs.flat().filter((r) => r.kind === "transports").map((r) => r.id))];
  if (ids.length === 0) return [];
  const first = (id: string) => runs.flat().find((r) => r.id === id)!;
  const labels = ids.map((id) => {
    const r = first(id);
    return `${r.label}${r.sizeBytes !== undefined ? ` · ${formatBytes(r.sizeBytes)}` : ""}`;
  });
  const numerator = (id: string) => id.split("/")[0];
  const datasets: Record<string, unknown>[] = runs.flatMap((ratios, i) => {
    const pick = (id: string) => ratios.find((r) => r.id === id);
    const name = runs.length > 1 ? `run ${i + 1}` : "this run";
    return [{
      label: `${name}: 95 % interval`,
      data: ids.map((id) => {
        const r = pick(id);
        return r ? [r.interval.lower, r.interval.upper] : null;
      }),
      backgroundColor: ids.map((id) => `${color(numerator(id))}${i % 2 ? "99" : ""}`),
      borderColor: ids.map((id) => color(numerator(id))),
      borderWidth: 1,
      grouped: runs.length > 1,
    }, {
      label: `${name}: ratio`,
      data: ids.map((id) => {
        const r = pick(id);
        return r ? [r.ratio * 0.996, r.ratio * 1.004] : null;
      }),
      backgroundColor: "#222",
      grouped: runs.length > 1,
    }];
  });
  if (runs.length > 1) {
    datasets.push({
      label: `across the ${runs.length} runs: lowest to highest ratio`,
      data: ids.map((id) => {
        const sp = run.repeats!.spread.find((x) => x.id === id);
        return sp ? [sp.min, Math.max(sp.max, sp.min * 1.002)] : null;
      }),
      backgroundColor: "#555",
      borderColor: ids.map((id) => color(numerator(id))),
      borderWidth: 2,
    });
  }
  return [{
    id: "ratio-intervals",
    title: runs.length > 1
      ? `Transport ratios with their 95 % intervals, each of ${runs.length} runs (1 = equal; left of 1 the numerator is faster)`
      : "Transport ratios with their 95 % intervals (1 = equal; left of 1 the numerator is faster)",
    height: Math.max(180, 50 + ids.length * runs.length * 18),
    durationAxes: [],
    config: {
      type: "bar",
      data: {
        labels,
        datasets,
      },
      options: {
        indexAxis: "y",
        scales: {
          x: { type: "logarithmic", title: { display: true, text: "ratio (× the denominator)" } },
          y: { ticks: { autoSkip: false } },
        },
      },
    },
  }];
}
