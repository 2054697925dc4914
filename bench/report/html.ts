/**
 * The HTML report: one self-contained file (no network) with the verdict,
 * the rows and charts drawn by Chart.js, whose UMD build is read from
 * node_modules at report time and inlined. The page is a pure function of a
 * run record and the library text, built one section at a time.
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
import type { BenchRun, ResultRow } from "../record/schema.ts";
import { formatBudgetUse, formatBytes, formatDuration, formatRate } from "../../lib/units.ts";
import {
  pluginSections,
  type RenderOptions,
  type ReportSection,
  reportTitle,
  type SectionContent,
} from "./report_sections.ts";
import { medianWithCi, renderFloors } from "./table.ts";
import { answerLines, warningLines } from "./answer.ts";
import { stackLines } from "./stack_report.ts";
import {
  type ChartSpec,
  cpuCharts,
  driftCharts,
  p99RateCharts,
  percentileCharts,
  ratioCharts,
} from "./html_charts.ts";
import {
  cdfCharts,
  concurrencyCharts,
  flowBarCharts,
  mainRows,
  medianChart,
  rowName,
} from "./html_row_charts.ts";
import { esc, htmlPage, table } from "./html_page.ts";
import type { ChartLibrary } from "./chart_library.ts";

export { type ChartLibrary, loadChartLibrary } from "./chart_library.ts";
export { cdfPoints } from "./html_row_charts.ts";

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

/** The body sizes the run's rows measured (the config may list sizes a scenario did not use). */
export function measuredSizes(run: BenchRun): number[] {
  const sizes = new Set(run.rows.map((r) => r.sizeBytes).filter((s) => s !== undefined));
  return sizes.size ? [...sizes].sort((a, b) => a - b) : run.config.sizes;
}

/** Every chart of the report, in page order. */
function reportCharts(run: BenchRun): ChartSpec[] {
  return [
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
}

/** An added section: its sentence, its own HTML, its notes, its table (folded when it draws its answer). */
function sectionHtml(section: ReportSection, c: SectionContent): string {
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
}

/**
 * The title, then a leading section (the study's verdict) or the answer, the
 * quick-run and warning lines (folded under their count below a leading
 * section), the run's facts and its noise.
 */
function headSection(run: BenchRun, lib: ChartLibrary, options: RenderOptions): string[] {
  const env = run.environment;
  const parts = [`<h1>${esc(reportTitle(run))}</h1>`];
  const leads = pluginSections(run, options).filter((x) => x.section.lead);
  for (const { section, content } of leads) parts.push(sectionHtml(section, content));
  // A report that opens with its section's answer does not open with a row's median too.
  const answer = leads.length ? [] : answerLines(run);
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
    parts.push(
      leads.length
        ? `<details class="warnings"><summary>${warnings.length} warning${
          warnings.length === 1 ? "" : "s"
        }</summary>${list}</details>`
        : list,
    );
  }
  parts.push(
    `<p class="meta">Run ${esc(run.startedAt)}, ` +
      (run.study
        ? `${
          formatBudgetUse(run.durationMs, run.study.budgetMs)
        }, at most ${run.study.samples} flows per side in a cell`
        : `${(run.durationMs / 1000).toFixed(1)} s`) +
      `; transports ${esc(run.config.transports.join(", "))}; ${
        esc(env.cpuModel)
      }, ${env.cores} cores; ` +
      `Deno ${esc(env.deno)}; git ${esc(env.gitRevision)}; charts by ${esc(lib.name)} ${
        esc(lib.version)
      }.</p>`,
  );
  const noise = runNoiseLine(run);
  if (noise) parts.push(`<p class="noise"><strong>${esc(noise)}</strong></p>`);
  return parts;
}

/** The stack, TLS and floors, as the terminal shows them. */
function contextSection(run: BenchRun): string[] {
  return [
    `<section id="context"><h2>Stack, TLS and floors</h2><pre>${
      esc([...stackLines(run), "", renderFloors(run)].join("\n"))
    }</pre></section>`,
  ];
}

/** The paired ratios with the schedule's rule, then the repeats. */
function ratiosSection(run: BenchRun): string[] {
  const parts: string[] = [];
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
  return parts;
}

/** The sections a higher layer adds (the study's verdict). */
function addedSections(run: BenchRun, options: RenderOptions): string[] {
  const parts: string[] = [];
  for (const { section, content } of pluginSections(run, options)) {
    if (!section.lead) parts.push(sectionHtml(section, content));
  }
  return parts;
}

/** One canvas per chart, drawn by the page's script. */
function chartsSection(charts: ChartSpec[]): string[] {
  const parts = [`<section id="charts"><h2>Charts</h2><div class="grid">`];
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
  return parts;
}

/** The rows with the CPU per request, then the per-step rows of a flows run. */
function rowsSection(run: BenchRun): string[] {
  const parts = [`<section id="rows"><h2>Rows</h2>${rowsTable(run, mainRows(run))}`];
  const cpu = cpuTable(run);
  if (cpu.body.length) parts.push(table(cpu.header, cpu.body), `<p>${esc(CPU_NOTE)}</p>`);
  parts.push("</section>");
  const steps = run.rows.filter((r) => r.step !== undefined);
  if (steps.length) {
    parts.push(`<section id="steps"><h2>Per-step latency</h2>${rowsTable(run, steps)}</section>`);
  }
  return parts;
}

/** The links crossed, the notes, and the closing line. */
function tailSection(run: BenchRun): string[] {
  const parts: string[] = [];
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
  return parts;
}

/** Renders the report page. */
export function renderHtml(
  run: BenchRun,
  lib: ChartLibrary,
  options: RenderOptions = {},
): string {
  const charts = reportCharts(run);
  const parts = [
    ...headSection(run, lib, options),
    ...contextSection(run),
    ...ratiosSection(run),
    ...addedSections(run, options),
    ...chartsSection(charts),
    ...rowsSection(run),
    ...tailSection(run),
  ];
  return htmlPage(reportTitle(run), parts, charts, lib);
}
