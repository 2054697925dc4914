/**
 * The terminal table: a pure function of a run record, so `lab report`
 * re-renders a saved run to exactly what `lab bench` printed.
 */
import { findFloor, floorMultiple, floorName } from "../record/floor_lookup.ts";
import type { BenchRun, FloorRow, ResultRow } from "../record/schema.ts";
import {
  formatBitRate,
  formatBytes,
  formatDuration,
  formatDurationWithInterval,
  formatMultiple,
  formatRate,
} from "../../lib/units.ts";
import { linkLines, migrationTable, percentileTable } from "./link_report.ts";
import { roundTripUnit, setupTable } from "./setup_report.ts";
import { stackLines } from "./stack_report.ts";
import {
  CPU_NOTE,
  cpuTable,
  floorRatio,
  ratioTable,
  repeatsTable,
  runNoiseLine,
  scheduleLine,
} from "./ratio_report.ts";
import { answerLines, legendLines, tcpFloorMultiple, warningLines } from "./answer.ts";
import type { RenderOptions } from "./report_sections.ts";

/** Lays out rows of cells as aligned columns (first column left, others right). */
export function layoutColumns(header: string[], body: string[][]): string {
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? "")].length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ").trimEnd();
  return [line(header), widths.map((w) => "─".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** `71.40 µs [70.92 – 72.03]`. */
export function medianWithCi(row: { estimate: ResultRow["estimate"] }): string {
  const e = row.estimate;
  return formatDurationWithInterval(e.median, e.medianCi.lower, e.medianCi.upper);
}

/** The row's multiple of its floor, with the paired interval over rounds when there is one. */
export function floorCell(run: BenchRun, row: ResultRow): string {
  const m = floorMultiple(run, row);
  if (m === undefined) return "–";
  const r = floorRatio(run, row.id);
  return `${formatMultiple(m)} ${row.floor}` +
    (r ? ` [${r.interval.lower.toFixed(2)} – ${r.interval.upper.toFixed(2)}]` : "");
}

/** The row's multiple of the kernel TCP floor: one reference for every transport. */
export function tcpCell(run: BenchRun, row: ResultRow): string {
  const m = tcpFloorMultiple(run, row);
  return m === undefined ? "–" : formatMultiple(m);
}

function throughput(row: ResultRow): string {
  if (row.bytesPerSecond !== undefined) return formatBitRate(row.bytesPerSecond);
  if (row.requestsPerSecond !== undefined) return formatRate(row.requestsPerSecond);
  return "–";
}

function outliers(row: { estimate: ResultRow["estimate"] }): string {
  const o = row.estimate.outliers;
  const mild = o.lowMild + o.highMild;
  const severe = o.lowSevere + o.highSevere;
  return `${mild}/${severe}`;
}

/** The floors as a table. */
export function renderFloors(run: BenchRun): string {
  if (run.floors.rows.length === 0) return run.floors.skipped ?? "No floors were measured.";
  const body = run.floors.rows.map((f: FloorRow) => {
    const kernel = findFloor(run.floors.rows, f.protocol, f.sizeBytes);
    return [
      floorName(f),
      formatBytes(f.sizeBytes),
      medianWithCi(f),
      formatDuration(f.estimate.p99),
      kernel ? formatMultiple(f.estimate.median / kernel.estimate.median) : "–",
      String(f.estimate.n),
    ];
  });
  return layoutColumns([
    "floor (ping-pong RTT)",
    "size",
    "median [95 % CI]",
    "p99",
    "× kernel",
    "n",
  ], body);
}

/** The result rows as a table (per-step rows of `flows` are left to the Markdown and HTML reports). */
export function renderRows(run: BenchRun): string {
  if (run.rows.length === 0) return "No rows were measured.";
  const rows = run.rows.filter((r) => r.step === undefined);
  const body = rows.map((r) => {
    return [
      r.link ? `${r.transport} · ${r.link}` : r.transport,
      r.stack ?? "–",
      r.label,
      medianWithCi(r),
      formatDuration(r.estimate.p99),
      floorCell(run, r),
      tcpCell(run, r),
      throughput(r),
      String(r.estimate.n),
      outliers(r),
      // responses with a status outside --ok, then requests without a response
      r.status ? `${r.failed ?? 0}/${r.errors}` : String(r.errors),
    ];
  });
  return layoutColumns(
    [
      "transport",
      "stack",
      "what one sample times",
      "median [95 % CI]",
      "p99",
      "× own floor",
      "× TCP floor",
      "rate",
      "n",
      "outl. m/s",
      rows.some((r) => r.status) ? "fail/err" : "err",
    ],
    body,
  );
}

/** The whole terminal report: heading, floors, rows, notes. */
export function renderTable(run: BenchRun, options: RenderOptions = {}): string {
  const c = run.config;
  const server = c.serverMode === "target"
    ? `target ${c.target}`
    : c.serverMode === "link"
    ? `across link ${c.link?.spec}`
    : c.serverMode === "process"
    ? "own process"
    : "in process";
  const plan = c.samples
    ? `${c.samples} samples`
    : `${c.sampleMs} ms sampling${run.rounds ? " per arm" : ""}`;
  const head = run.study
    ? `sbilab study · links ${run.study.links.map((l) => l.spec).join(", ")} · ${
      c.transports.join(", ")
    } · warm-up ${c.warmupMs} ms, at most ${run.study.samples} flows per side in a cell`
    : `sbilab bench · scenario ${c.scenario} · server ${server} · warm-up ${c.warmupMs} ms, ${plan}` +
      (c.delayMs ? ` · handler delay ${c.delayMs} ms` : "") +
      (c.quick ? " · QUICK: a check that everything runs, not figures to quote" : "");
  const noise = runNoiseLine(run);
  // A section that leads (the study's verdict) opens the report in place of a row's median.
  const lead: string[] = [];
  for (const section of (options.sections ?? []).filter((x) => x.lead)) {
    const content = section.render(run);
    if (!content) continue;
    lead.push(`${section.title}: ${content.summary}`, "");
    for (const g of content.grids ?? []) {
      lead.push(layoutColumns(g.header, g.body), ...(g.caption ? [g.caption] : []), "");
    }
  }
  const answer = lead.length ? lead : answerLines(run);
  const parts = [
    ...answer,
    ...(answer.length && !lead.length ? [""] : []),
    ...(noise ? [noise] : []),
    head,
  ];
  const ratios = ratioTable(run);
  if (ratios.body.length) parts.push("", layoutColumns(ratios.header, ratios.body));
  const repeats = repeatsTable(run);
  if (repeats.body.length) {
    parts.push("", `Repeats (${run.repeats!.runs.length} runs, each its own server process):`);
    parts.push(layoutColumns(repeats.header, repeats.body));
  }
  const schedule = scheduleLine(run);
  if (schedule) parts.push("", schedule);
  if (ratios.body.length || schedule) parts.push("");
  parts.push(...stackLines(run));
  if (run.rows.some((r) => r.step !== undefined)) {
    parts.push("Per-step latency rows are in the Markdown (--md) and HTML (--html) reports.");
  }
  const link = linkLines(run);
  if (link.length) parts.push(...link);
  parts.push("", renderFloors(run), "", renderRows(run));
  if (run.rows.length) parts.push(...legendLines(run).map((l) => `  ${l}`));
  const warnings = warningLines(run);
  if (warnings.length) parts.push("", ...warnings.map((w) => `warning: ${w}`));
  const cpu = cpuTable(run);
  if (cpu.body.length) parts.push("", layoutColumns(cpu.header, cpu.body), CPU_NOTE);
  const pct = percentileTable(run);
  if (pct.body.length) {
    parts.push("", "Per-request latency percentiles:", layoutColumns(pct.header, pct.body));
  }
  const setup = setupTable(run);
  if (setup.body.length) {
    parts.push(
      "",
      `Connection set-up, median time to the end of each phase (round trips: ${
        roundTripUnit(run)
      }):`,
      layoutColumns(setup.header, setup.body),
    );
  }
  const mig = migrationTable(run);
  if (mig.body.length) {
    parts.push("", "Client port change mid-run:", layoutColumns(mig.header, mig.body));
  }
  if (run.notes.length) parts.push("", ...run.notes.map((n) => `note: ${n}`));
  return parts.join("\n");
}
