/**
 * The HTML report's charts of whole rows: latency CDFs per cell, the medians
 * with their intervals, concurrency curves, and flow-time bars per link.
 */
import { type BenchRun, isFlowRow, type ResultRow } from "../record/schema.ts";
import { type ChartSpec, color, ORDER, sortRows, uesOf } from "./html_charts.ts";

/** The link a row crossed (loopback when none). */
export const linkOf = (run: BenchRun, r: ResultRow) =>
  r.link ?? run.config.link?.spec ?? "loopback";

/** Cumulative distribution points (ns, fraction) of a row's samples, at most ~120 points. */
export function cdfPoints(row: ResultRow): { x: number; y: number }[] {
  const asc = Float64Array.from(row.samples.samples).sort();
  if (asc.length === 0) return [];
  const ps = [...Array.from({ length: 100 }, (_, i) => i / 100), 0.995, 0.999, 1];
  return ps.map((p) => {
    const i = Math.min(asc.length - 1, Math.round(p * (asc.length - 1)));
    return { x: asc[i], y: (i + 1) / asc.length };
  });
}

/** The rows a chart of per-row figures shows: flow-time rows for flows, else every row. */
export function mainRows(run: BenchRun): ResultRow[] {
  return run.rows.filter((r) => r.scenario !== "peers" && (r.scenario !== "flows" || isFlowRow(r)));
}

/** Groups rows into cells (everything but the transport) for the CDF charts. */
function cells(run: BenchRun): Map<string, ResultRow[]> {
  const out = new Map<string, ResultRow[]>();
  for (const r of mainRows(run)) {
    const title = r.scenario === "flows"
      ? `${r.flow} · ${linkOf(run, r)} · ${uesOf(r)}`
      : `${r.scenario} · ${r.label}`;
    out.set(title, [...(out.get(title) ?? []), r]);
  }
  return out;
}

/** One latency CDF per cell (everything but the transport), at most 48. */
export function cdfCharts(run: BenchRun): ChartSpec[] {
  const specs: ChartSpec[] = [];
  for (const [title, rows] of cells(run)) {
    if (specs.length >= 48) break;
    specs.push({
      id: `cdf-${specs.length}`,
      title: `Latency CDF: ${title}`,
      height: 260,
      durationAxes: ["x"],
      config: {
        type: "scatter",
        data: {
          datasets: sortRows(rows).map((r) => ({
            label: r.transport,
            data: cdfPoints(r),
            showLine: true,
            pointRadius: 0,
            borderWidth: 2,
            borderColor: color(r.transport),
            backgroundColor: color(r.transport),
          })),
        },
        options: {
          scales: {
            x: { type: "logarithmic", title: { display: true, text: "time" } },
            y: { min: 0, max: 1, title: { display: true, text: "fraction ≤ time" } },
          },
        },
      },
    });
  }
  return specs;
}

/** How a row is named in charts and tables: link, flow and UEs for flows, else transport and label. */
export function rowName(run: BenchRun, r: ResultRow): string {
  return r.scenario === "flows"
    ? `${linkOf(run, r)} · ${r.flow} · ${uesOf(r)} · ${r.transport}`
    : `${r.transport} · ${r.label}`;
}

/** The median of every row with its 95 % bootstrap interval, in one chart. */
export function medianChart(run: BenchRun): ChartSpec[] {
  const rows = mainRows(run);
  if (rows.length === 0) return [];
  const labels = rows.map((r) => rowName(run, r));
  return [{
    id: "medians",
    title: "Median with its 95 % bootstrap interval, per row",
    height: Math.max(160, 40 + rows.length * 22),
    durationAxes: ["x"],
    config: {
      type: "bar",
      data: {
        labels,
        datasets: [{
          label: "95 % interval of the median",
          data: rows.map((r) => [r.estimate.medianCi.lower, r.estimate.medianCi.upper]),
          backgroundColor: rows.map((r) => `${color(r.transport)}66`),
          borderColor: rows.map((r) => color(r.transport)),
          borderWidth: 1,
          grouped: false,
        }, {
          label: "median",
          data: rows.map((r) => [r.estimate.median * 0.99, r.estimate.median * 1.01]),
          backgroundColor: "#222",
          grouped: false,
          barPercentage: 0.9,
        }],
      },
      options: {
        indexAxis: "y",
        scales: {
          x: { type: "logarithmic", title: { display: true, text: "time" } },
          y: { ticks: { autoSkip: false } },
        },
      },
    },
  }];
}

/** Concurrency curves: req/s against in-flight requests, and p99 flow time against UEs. */
export function concurrencyCharts(run: BenchRun): ChartSpec[] {
  const out: ChartSpec[] = [];
  const conc = run.rows.filter((r) => r.scenario === "concurrency" && r.requestsPerSecond);
  if (conc.length) {
    const levels = [...new Set(conc.map((r) => r.concurrency!))].sort((a, b) => a - b);
    const transports = ORDER.filter((t) => conc.some((r) => r.transport === t));
    out.push({
      id: "concurrency",
      title: "Concurrency curve: requests per second against requests in flight",
      height: 280,
      durationAxes: [],
      config: {
        type: "line",
        data: {
          labels: levels.map(String),
          datasets: transports.map((t) => ({
            label: t,
            data: levels.map((l) =>
              conc.find((r) => r.transport === t && r.concurrency === l)?.requestsPerSecond ?? null
            ),
            borderColor: color(t),
            backgroundColor: color(t),
          })),
        },
        options: {
          scales: {
            x: { title: { display: true, text: "in flight" } },
            y: { title: { display: true, text: "req/s" }, beginAtZero: true },
          },
        },
      },
    });
  }
  const flows = run.rows.filter(isFlowRow);
  const levels = [...new Set(flows.map((r) => r.concurrency ?? 1))].sort((a, b) => a - b);
  for (const flow of [...new Set(flows.map((r) => r.flow!))]) {
    const rs = flows.filter((r) => r.flow === flow);
    const series = [...new Set(rs.map((r) => `${linkOf(run, r)}\n${r.transport}`))];
    out.push({
      id: `ues-${out.length}`,
      title: `Concurrency curve: p99 ${flow} time against UEs in flight`,
      height: 280,
      durationAxes: ["y"],
      config: {
        type: "line",
        data: {
          labels: levels.map(String),
          datasets: series.map((s) => {
            const [link, t] = s.split("\n");
            return {
              label: `${t} · ${link}`,
              data: levels.map((l) =>
                rs.find((r) =>
                  linkOf(run, r) === link && r.transport === t && (r.concurrency ?? 1) === l
                )?.estimate.p99 ?? null
              ),
              borderColor: color(t),
              backgroundColor: color(t),
            };
          }),
        },
        options: {
          scales: {
            x: { title: { display: true, text: "UEs in flight" } },
            y: { type: "logarithmic", title: { display: true, text: "p99 flow time" } },
          },
        },
      },
    });
  }
  return out;
}

/** The power of ten at or below half the smallest p50 of `rows` (ns), so even that bar has height. */
function decadeBelow(rows: ResultRow[]): number {
  const least = Math.min(...rows.map((r) => r.estimate.p50).filter((v) => v > 0));
  return Number.isFinite(least) ? 10 ** Math.floor(Math.log10(least / 2)) : 1;
}

/** Flow time per link, p50 and p99 bars per transport, one chart per flow and UE level. */
export function flowBarCharts(run: BenchRun): ChartSpec[] {
  const flows = run.rows.filter(isFlowRow);
  const out: ChartSpec[] = [];
  const links = [...new Set(flows.map((r) => linkOf(run, r)))];
  for (const flow of [...new Set(flows.map((r) => r.flow!))]) {
    for (const ues of [...new Set(flows.map((r) => r.concurrency ?? 1))]) {
      const rs = flows.filter((r) => r.flow === flow && (r.concurrency ?? 1) === ues);
      if (rs.length === 0) continue;
      const transports = ORDER.filter((t) => rs.some((r) => r.transport === t));
      const pick = (l: string, t: string) =>
        rs.find((r) => linkOf(run, r) === l && r.transport === t);
      out.push({
        id: `bars-${out.length}`,
        title: `Flow time per link: ${flow}, ${ues} UEs (p50 light, p99 dark)`,
        height: 300,
        durationAxes: ["y"],
        config: {
          type: "bar",
          data: {
            labels: links,
            datasets: transports.flatMap((t) => [{
              label: `${t} p50`,
              data: links.map((l) => pick(l, t)?.estimate.p50 ?? null),
              backgroundColor: `${color(t)}66`,
              stack: t,
              grouped: true,
            }, {
              label: `${t} p99`,
              data: links.map((l) => pick(l, t)?.estimate.p99 ?? null),
              backgroundColor: color(t),
              stack: `${t}-p99`,
            }]),
          },
          options: {
            scales: {
              // Bars start at the axis minimum: a decade below the smallest value shows every bar.
              y: {
                type: "logarithmic",
                min: decadeBelow(rs),
                title: { display: true, text: "flow time" },
              },
            },
          },
        },
      });
    }
  }
  return out;
}
