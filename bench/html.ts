/**
 * The HTML report: one self-contained file (no network) with the verdict,
 * the rows and charts drawn by Chart.js, whose UMD build is read from
 * node_modules at report time and inlined. The page is a pure function of a
 * run record and the library text.
 *
 * Charts: latency CDFs per transport (one per cell), the median with its 95 %
 * interval per row, the concurrency curve (req/s against in-flight requests,
 * or p99 flow time against UEs), and flow-time bars per link.
 */
import {
  CPU_NOTE,
  cpuTable,
  ratioTable,
  repeatsTable,
  runNoiseLine,
  scheduleLine,
} from "./ratio_report.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "./schema.ts";
import { formatBytes, formatDuration, formatDurationSource, formatRate } from "../lib/units.ts";
import type { RenderOptions } from "./report_sections.ts";
import { medianWithCi, renderFloors } from "./table.ts";
import { answerLines, warningLines } from "./answer.ts";
import { stackLines } from "./stack_report.ts";
import {
  type ChartSpec,
  color,
  cpuCharts,
  driftCharts,
  ORDER,
  p99RateCharts,
  percentileCharts,
  ratioCharts,
  uesOf,
} from "./html_charts.ts";

/** A chart library's browser build, to be inlined. */
export interface ChartLibrary {
  name: string;
  version: string;
  /** The UMD bundle's source text. */
  source: string;
}

/** Reads Chart.js's UMD build from node_modules; throws with a one-line hint when missing. */
export async function loadChartLibrary(): Promise<ChartLibrary> {
  // Importing the package makes Deno install it on first use (nodeModulesDir "auto").
  try {
    await import("chart.js");
  } catch {
    // The ESM entry may not evaluate outside a browser; the file below is what is needed.
  }
  const entry = new URL(import.meta.resolve("chart.js"));
  const dist = new URL("./chart.umd.min.js", entry);
  const pkg = new URL("../package.json", entry);
  try {
    const [source, meta] = await Promise.all([
      Deno.readTextFile(dist),
      Deno.readTextFile(pkg).then((t) => JSON.parse(t) as { version: string }),
    ]);
    return { name: "Chart.js", version: meta.version, source };
  } catch (err) {
    throw new Error(
      `Cannot read Chart.js from ${dist.pathname} (${(err as Error).message}); run deno install`,
      { cause: err },
    );
  }
}

function esc(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!,
  );
}

const linkOf = (run: BenchRun, r: ResultRow) => r.link ?? run.config.link?.spec ?? "loopback";

function sortRows(rows: ResultRow[]): ResultRow[] {
  return [...rows].sort((a, b) => ORDER.indexOf(a.transport) - ORDER.indexOf(b.transport));
}

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
function mainRows(run: BenchRun): ResultRow[] {
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

function cdfCharts(run: BenchRun): ChartSpec[] {
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

function rowName(run: BenchRun, r: ResultRow): string {
  return r.scenario === "flows"
    ? `${linkOf(run, r)} · ${r.flow} · ${uesOf(r)} · ${r.transport}`
    : `${r.transport} · ${r.label}`;
}

function medianChart(run: BenchRun): ChartSpec[] {
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

function concurrencyCharts(run: BenchRun): ChartSpec[] {
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

function flowBarCharts(run: BenchRun): ChartSpec[] {
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

function table(header: string[], body: string[][]): string {
  return `<table><thead><tr>${
    header.map((h) => `<th>${esc(h)}</th>`).join("")
  }</tr></thead><tbody>${
    body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join("")}</tr>`).join("")
  }</tbody></table>`;
}

function rowsTable(run: BenchRun, rows: ResultRow[]): string {
  return table(
    ["row", "median [95 % CI]", "p90", "p99", "p99.9", "n", "failed", "retries", "rate"],
    rows.map((r) => [
      r.step ? `${rowName(run, r)} · ${r.label}` : rowName(run, r),
      medianWithCi(r),
      formatDuration(r.estimate.p90),
      formatDuration(r.estimate.p99),
      formatDuration(r.estimate.p999),
      String(r.estimate.n),
      String(r.extra?.failed ?? r.errors),
      String(r.extra?.retries ?? 0),
      r.requestsPerSecond !== undefined ? formatRate(r.requestsPerSecond) : "–",
    ]),
  );
}

/** Serialises a value for a `<script type="application/json">` block. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, "\\u003c");
}

/** The body sizes the run's rows measured (the config may list sizes a scenario did not use). */
export function measuredSizes(run: BenchRun): number[] {
  const sizes = new Set(run.rows.map((r) => r.sizeBytes).filter((s) => s !== undefined));
  return sizes.size ? [...sizes].sort((a, b) => a - b) : run.config.sizes;
}

/** Renders the report page. */
export function renderHtml(
  run: BenchRun,
  lib: ChartLibrary,
  options: RenderOptions = {},
): string {
  const charts = [
    ...ratioCharts(run),
    ...flowBarCharts(run),
    ...percentileCharts(mainRows(run)),
    ...cdfCharts(run),
    ...p99RateCharts(run),
    ...driftCharts(run),
    ...cpuCharts(run),
    ...medianChart(run),
    ...concurrencyCharts(run),
  ];
  const env = run.environment;
  const parts: string[] = [];
  const title = run.study
    ? "sbilab study: SBI call flows across links"
    : `sbilab benchmark: ${run.config.scenario}`;
  parts.push(`<h1>${esc(title)}</h1>`);
  const sectionHtml = (section: NonNullable<RenderOptions["sections"]>[number]) => {
    const c = section.render(run);
    if (!c) return undefined;
    const out = [
      `<section id="${esc(section.id)}"><h2>${esc(section.title)}</h2>` +
      `<p class="verdict">${esc(c.summary)}</p>`,
    ];
    if (c.html) out.push(c.html);
    for (const n of c.notes) out.push(`<p class="rule">${esc(n)}</p>`);
    // A section that draws its own answer keeps its full table one click away.
    out.push(
      c.html
        ? `<details><summary>Every ${
          esc(section.title.toLowerCase())
        } row (${c.table.body.length})</summary>${table(c.table.header, c.table.body)}</details>`
        : table(c.table.header, c.table.body),
      "</section>",
    );
    return out.join("");
  };
  const leads = (options.sections ?? []).filter((s) => s.lead);
  let led = false;
  for (const section of leads) {
    const h = sectionHtml(section);
    if (h) parts.push(h), led = true;
  }
  // A report that opens with its section's answer does not open with a row's median too.
  const answer = led ? [] : answerLines(run);
  if (answer.length) {
    parts.push(
      `<section id="answer">${
        answer.map((a) => `<p class="verdict answer">${esc(a)}</p>`).join("")
      }</section>`,
    );
  }
  if (run.config.quick) {
    parts.push(
      `<p class="quick"><strong>Quick run</strong>: few rounds and short blocks, a check that everything runs, not a measurement to quote.</p>`,
    );
  }
  const warnings = warningLines(run);
  if (warnings.length) {
    const list = `<ul class="warnings">${
      warnings.map((w) => `<li><strong>Warning:</strong> ${esc(w)}</li>`).join("")
    }</ul>`;
    // Under a report that opens with its answer, the warnings fold under their count.
    parts.push(
      leads.length
        ? `<details class="warnings"><summary>${warnings.length} warning${
          warnings.length === 1 ? "" : "s"
        }</summary>${list}</details>`
        : list,
    );
  }
  parts.push(
    `<p class="meta">Run ${esc(run.startedAt)}, ${(run.durationMs / 1000).toFixed(1)} s` +
      (run.study
        ? ` (budget ${
          (run.study.budgetMs / 1000).toFixed(0)
        } s, at most ${run.study.samples} flows per side in a cell)`
        : "") +
      `; transports ${esc(run.config.transports.join(", "))}; ${
        esc(env.cpuModel)
      }, ${env.cores} cores; ` +
      `Deno ${esc(env.deno)}; git ${esc(env.gitRevision)}; charts by ${esc(lib.name)} ${
        esc(lib.version)
      }.</p>`,
  );
  const noise = runNoiseLine(run);
  if (noise) parts.push(`<p class="noise"><strong>${esc(noise)}</strong></p>`);
  parts.push(
    `<section id="context"><h2>Stack, TLS and floors</h2><pre>${
      esc([...stackLines(run), "", renderFloors(run)].join("\n"))
    }</pre></section>`,
  );
  const ratios = ratioTable(run);
  if (ratios.body.length) {
    parts.push(`<section id="ratios"><h2>Ratios</h2>${table(ratios.header, ratios.body)}`);
    const schedule = scheduleLine(run);
    if (schedule) parts.push(`<p class="rule">${esc(schedule)}</p>`);
    parts.push("</section>");
  }
  const repeats = repeatsTable(run);
  if (repeats.body.length) {
    parts.push(
      `<section id="repeats"><h2>Repeats</h2><p>${
        run.repeats!.runs.length
      } runs, each with its own server process (* a run that was noisy).</p>${
        table(repeats.header, repeats.body)
      }</section>`,
    );
  }
  for (const section of options.sections ?? []) {
    if (section.lead) continue;
    const h = sectionHtml(section);
    if (h) parts.push(h);
  }
  parts.push(`<section id="charts"><h2>Charts</h2><div class="grid">`);
  for (const c of charts) {
    const wide = c.id === "medians" || c.id === "ratio-intervals" ? " wide" : "";
    parts.push(
      `<figure class="chart${wide}"><figcaption>${esc(c.title)}</figcaption>` +
        `<div style="height:${c.height}px"><canvas id="${c.id}" role="img" aria-label="${
          esc(c.title)
        }"></canvas></div></figure>`,
    );
  }
  parts.push(`</div></section>`);
  const main = mainRows(run);
  parts.push(`<section id="rows"><h2>Rows</h2>${rowsTable(run, main)}`);
  const cpu = cpuTable(run);
  if (cpu.body.length) parts.push(table(cpu.header, cpu.body), `<p>${esc(CPU_NOTE)}</p>`);
  parts.push("</section>");
  const steps = run.rows.filter((r) => r.step !== undefined);
  if (steps.length) {
    parts.push(`<section id="steps"><h2>Per-step latency</h2>${rowsTable(run, steps)}</section>`);
  }
  const links = run.study?.links ?? (run.config.link ? [run.config.link] : []);
  if (links.length) {
    parts.push(
      `<section id="links"><h2>Links</h2>${
        table(
          ["link", "configured", "RTT", "packets in (up/down)", "dropped by loss (up/down)"],
          links.map((l) => [
            l.spec,
            l.resolved,
            `${l.rttMs} ms`,
            l.counters ? `${l.counters.up.in} / ${l.counters.down.in}` : "–",
            l.counters ? `${l.counters.up.dropLoss} / ${l.counters.down.dropLoss}` : "–",
          ]),
        )
      }</section>`,
    );
  }
  if (run.notes.length) {
    parts.push(
      `<section id="notes"><h2>Notes</h2><ul>${
        run.notes.map((n) => `<li>${esc(n)}</li>`).join("")
      }</ul></section>`,
    );
  }
  parts.push(
    `<p class="meta">Sizes: ${esc(measuredSizes(run).map(formatBytes).join(", "))}; schema ${
      esc(run.schema)
    }. Every figure above is computed from the saved run.</p>`,
  );
  const library = lib.source.replace(/<\/script/gi, "<\\/script");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1400px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta { color: #555; } .noise { color: #a40; } .quick { background: #fff3cd; padding: 4px 8px; }
.answer { font-size: 18px; } .warnings { color: #8a3b00; } pre { font-size: 12px; background: #f8f8f8; padding: 8px; overflow-x: auto; } .verdict { font-size: 16px; font-weight: 600; } .rule { color: #444; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: right; } th { background: #f4f4f4; }
td:first-child, th:first-child, #verdict td:last-child { text-align: left; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 16px; }
figure.chart { margin: 0; border: 1px solid #eee; padding: 8px; } figure.wide { grid-column: 1 / -1; }
figcaption { font-weight: 600; margin-bottom: 4px; }
</style>
<script>${library}</script>
</head>
<body>
${parts.join("\n")}
<script type="application/json" id="sbilab-charts">${scriptJson(charts)}</script>
<script>
${formatDurationSource()}
(function () {
  var specs = JSON.parse(document.getElementById("sbilab-charts").textContent);
  var drawn = [];
  specs.forEach(function (spec) {
    var config = spec.config;
    config.options = Object.assign({ animation: false, maintainAspectRatio: false, responsive: true }, config.options);
    config.options.plugins = Object.assign({ legend: { position: "bottom" } }, config.options.plugins);
    config.options.scales = config.options.scales || {};
    (spec.percentileAxes || []).forEach(function (axis) {
      var scale = config.options.scales[axis] = config.options.scales[axis] || {};
      var names = { 1: "min", 2: "p50", 10: "p90", 100: "p99", 1000: "p99.9", 10000: "p99.99", 100000: "p99.999" };
      scale.ticks = Object.assign({}, scale.ticks, {
        callback: function (v) { return names[Math.round(Number(v))] || ""; }
      });
    });
    spec.durationAxes.forEach(function (axis) {
      var scale = config.options.scales[axis] = config.options.scales[axis] || {};
      var log = scale.type === "logarithmic";
      scale.ticks = Object.assign({}, scale.ticks, {
        callback: function (v) {
          var x = Number(v);
          if (!log) return formatDuration(x);
          // Label 1, 2 and 5 of each decade only, so labels never overlap.
          var mantissa = Math.round(x / Math.pow(10, Math.floor(Math.log10(x))) * 1000) / 1000;
          return mantissa === 1 || mantissa === 2 || mantissa === 5 ? formatDuration(x) : "";
        }
      });
    });
    config.options.plugins.tooltip = {
      callbacks: {
        label: function (ctx) {
          var raw = ctx.raw;
          var durY = spec.durationAxes.indexOf("y") >= 0;
          var value = Array.isArray(raw)
            ? raw.map(spec.durationAxes.length ? formatDuration : function (x) { return x.toFixed(3) + "×"; }).join(" – ")
            : raw && typeof raw === "object" && durY
            ? formatDuration(raw.y) + (spec.percentileAxes
              ? " at p" + String(+(100 * (1 - 1 / raw.x)).toFixed(3))
              : " at " + Math.round(raw.x) + " req/s" + (raw.n ? ", " + raw.n + " in flight" : ""))
            : raw && typeof raw === "object" ? formatDuration(raw.x) + " (" + (raw.y * 100).toFixed(1) + " %)"
            : spec.durationAxes.length ? formatDuration(raw) : String(raw);
          return ctx.dataset.label + ": " + value;
        }
      }
    };
    var chart = new Chart(document.getElementById(spec.id), config);
    drawn.push({
      id: spec.id,
      datasets: chart.data.datasets.length,
      points: chart.data.datasets.reduce(function (n, d) {
        return n + d.data.filter(function (x) { return x !== null; }).length;
      }, 0)
    });
  });
  window.sbilabCharts = drawn;
  document.body.setAttribute("data-charts", String(drawn.length));
})();
</script>
</body>
</html>
`;
}
