/** The Markdown report, shaped like a short study; a pure function of a run. */
import { stackLines } from "./stack_report.ts";
import {
  CPU_NOTE,
  cpuTable,
  ratioTable,
  ratioWithInterval,
  repeatsTable,
  runNoiseLine,
  scheduleLine,
} from "./ratio_report.ts";
import {
  BARE_LABELS,
  type BareTransport,
  findBareFloor,
  findFloor,
  floorMultiple,
  floorName,
  STACKS_LABELS,
} from "../record/floor_lookup.ts";
import { floorCell, medianWithCi, tcpCell } from "./table.ts";
import { answerLines, legendLines, warningLines } from "./answer.ts";
import { linkLines, linkObservations, migrationTable, percentileTable } from "./link_report.ts";
import { setupTable } from "./setup_report.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "../record/schema.ts";
import {
  pluginSections,
  type RenderOptions,
  type ReportSection,
  reportTitle,
  type SectionContent,
} from "./report_sections.ts";
import {
  formatBitRate,
  formatBytes,
  formatDuration,
  formatMultiple,
  formatRate,
} from "../../lib/units.ts";

/** Observations computed from the numbers, one sentence each. */
export function observations(run: BenchRun): string[] {
  const out: string[] = [];
  const rtt = run.rows.filter((r) => r.scenario === "rtt");
  const pick = (t: string, size: number) =>
    rtt.find((r) => r.transport === t && r.sizeBytes === size);
  const overlap = (a: ResultRow, b: ResultRow) =>
    a.estimate.medianCi.lower <= b.estimate.medianCi.upper &&
    b.estimate.medianCi.lower <= a.estimate.medianCi.upper;
  const relative = (a: ResultRow, b: ResultRow, size: number) => {
    const paired = run.rounds?.ratios.find((r) =>
      r.kind === "transports" && r.numerator === a.id && r.denominator === b.id
    );
    if (paired) {
      const pct = Math.abs(paired.ratio - 1) * 100;
      const word = paired.ratio >= 1 ? "slower" : "faster";
      const noise = paired.interval.lower <= 1 && paired.interval.upper >= 1
        ? ", an interval that holds 1, so this is within the noise"
        : "";
      return `${a.transport} is ${pct.toFixed(0)} % ${word} than ${b.transport} at ${
        formatBytes(size)
      } (paired over ${paired.perRound.length} rounds: ${ratioWithInterval(paired)}${noise}).`;
    }
    const ratio = a.estimate.median / b.estimate.median;
    const pct = Math.abs(ratio - 1) * 100;
    const word = ratio >= 1 ? "slower" : "faster";
    const ci = overlap(a, b)
      ? " (the confidence intervals overlap, so this is within the noise)"
      : "";
    return `${a.transport} is ${pct.toFixed(0)} % ${word} than ${b.transport} at ${
      formatBytes(size)
    } ` +
      `(${formatDuration(a.estimate.median)} vs ${formatDuration(b.estimate.median)})${ci}.`;
  };
  for (const size of run.config.sizes) {
    const h2c = pick("h2c", size), tls = pick("h2-tls", size), h3 = pick("h3", size);
    if (tls && h2c) out.push(relative(tls, h2c, size));
    if (h3 && tls) out.push(relative(h3, tls, size));
    for (const r of [h2c, tls, h3]) {
      const m = r && floorMultiple(run, r);
      if (r && m !== undefined) {
        out.push(
          `${r.transport} at ${formatBytes(size)} takes ${
            formatMultiple(m)
          } the kernel ${r.floor?.toUpperCase()} ping-pong floor.`,
        );
      }
    }
  }
  const sizes = run.config.sizes;
  if (sizes.length >= 2) {
    for (const t of run.config.transports) {
      const small = pick(t, sizes[0]), big = pick(t, sizes[sizes.length - 1]);
      if (small && big) {
        out.push(
          `On ${t}, ${formatBytes(big.sizeBytes!)} costs ${
            formatDuration(big.estimate.median - small.estimate.median)
          } more than ${formatBytes(small.sizeBytes!)} per request.`,
        );
      }
    }
  }
  for (const r of run.rows) {
    const b = findBareFloor(run.floors.rows, r.transport, r.sizeBytes);
    if (!b || r.scenario !== "rtt") continue;
    const paired = run.rounds?.ratios.find((q) => q.kind === "runtime" && q.numerator === r.id);
    out.push(
      `${r.transport} at ${formatBytes(b.sizeBytes)} takes ${
        paired ? ratioWithInterval(paired) : formatMultiple(r.estimate.median / b.estimate.median)
      } its bare runtime (${BARE_LABELS[b.transport as BareTransport] ?? b.transport}).`,
    );
  }
  for (const f of run.floors.rows.filter((f) => f.source === "runtime")) {
    const k = findFloor(run.floors.rows, f.protocol, f.sizeBytes);
    if (k) {
      out.push(
        `Deno's own ${f.protocol.toUpperCase()} ping-pong at ${formatBytes(f.sizeBytes)} is ${
          formatMultiple(f.estimate.median / k.estimate.median)
        } the kernel floor.`,
      );
    }
  }
  const conc = run.rows.filter((r) => r.scenario === "concurrency");
  for (const t of new Set(conc.map((r) => r.transport))) {
    const rs = conc.filter((r) => r.transport === t);
    const best = rs.reduce((
      a,
      b,
    ) => ((a.requestsPerSecond ?? 0) >= (b.requestsPerSecond ?? 0) ? a : b));
    const one = rs.find((r) => r.concurrency === 1);
    out.push(
      `${t} peaks at ${
        formatRate(best.requestsPerSecond ?? NaN)
      } with ${best.concurrency} in flight` +
        (one
          ? ` (${
            formatMultiple((best.requestsPerSecond ?? 0) / (one.requestsPerSecond ?? 1))
          } its rate at 1).`
          : "."),
    );
  }
  const rate = run.rows.filter((r) => r.scenario === "rate");
  for (const t of new Set(rate.map((r) => r.transport))) {
    const c = rate.find((r) => r.transport === t && r.id.endsWith("/corrected"));
    const u = rate.find((r) => r.transport === t && r.id.endsWith("/uncorrected"));
    if (c && u) {
      out.push(
        `At ${run.config.rate} req/s on ${t}, p99 is ${
          formatDuration(c.estimate.p99)
        } from the intended send time and ${
          formatDuration(u.estimate.p99)
        } from the actual send (coordinated omission hides ${
          formatDuration(Math.max(0, c.estimate.p99 - u.estimate.p99))
        }).`,
      );
    }
  }
  out.push(...linkObservations(run));
  return out;
}

function cellRow(cells: string[]): string {
  return `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`;
}

/** A Markdown table. */
function mdTable(t: { header: string[]; body: string[][] }): string[] {
  return [cellRow(t.header), cellRow(t.header.map(() => "---")), ...t.body.map(cellRow)];
}

/** Where the server ran, in words. */
function serverPlace(run: BenchRun): string {
  const c = run.config;
  return c.serverMode === "target"
    ? `at ${c.target}`
    : c.serverMode === "link"
    ? "in the server namespace of an emulated link, client in the client namespace"
    : c.serverMode === "process"
    ? "in its own process"
    : "in the benchmark's process";
}

/**
 * The title, then a leading section (the study's verdict) or the answer, the
 * run's facts, the quick-run and noise lines.
 */
function headSection(run: BenchRun, sections: AddedSection[]): string[] {
  const c = run.config;
  const lines = [`# ${reportTitle(run)}`, ""];
  const leads = sections.filter((x) => x.section.lead);
  lines.push(...leads.flatMap(sectionLines));
  // A report that opens with its section's answer does not open with a row's median too.
  const answer = leads.length ? [] : answerLines(run);
  if (answer.length) lines.push(...answer.map((a) => `**${a}**`), "");
  lines.push(
    `Run ${run.startedAt}, ${(run.durationMs / 1000).toFixed(1)} s; server ${
      serverPlace(run)
    }; warm-up ${c.warmupMs} ms then ${
      c.samples ? `${c.samples} samples` : `${c.sampleMs} ms`
    } per ${run.rounds ? "arm, in rounds" : "row"}` +
      (c.delayMs ? `; handler delay ${c.delayMs} ms` : "") + ".",
    "",
  );
  if (c.quick) {
    lines.push(
      "> **Quick run**: few rounds and short blocks, a check that everything runs, not figures to quote.",
      "",
    );
  }
  const noise = runNoiseLine(run);
  if (noise) lines.push(`> **${noise[0].toUpperCase()}${noise.slice(1)}.**`, "");
  return lines;
}

/** The paired ratios, the repeats, the schedule's rule and the stack. */
function ratiosSection(run: BenchRun): string[] {
  const lines: string[] = [];
  const ratios = ratioTable(run);
  if (ratios.body.length) lines.push("## Ratios", "", ...mdTable(ratios), "");
  const repeats = repeatsTable(run);
  if (repeats.body.length) {
    lines.push(
      `## Repeats`,
      "",
      `${
        run.repeats!.runs.length
      } runs, each with its own server process (\\* a run that was noisy):`,
      "",
      ...mdTable(repeats),
      "",
    );
  }
  const schedule = scheduleLine(run);
  if (schedule) lines.push(schedule, "");
  lines.push("## Stack", "", "```", ...stackLines(run), "```", "");
  return lines;
}

/** An added section with its content for the run. */
type AddedSection = { section: ReportSection; content: SectionContent };

/** One added section: its heading, summary, grids, notes and table. */
function sectionLines({ section, content: c }: AddedSection): string[] {
  const lines = [`## ${section.title}`, "", `**${c.summary}**`, ""];
  for (const g of c.grids ?? []) {
    lines.push(cellRow(g.header), cellRow(g.header.map(() => "---")), ...g.body.map(cellRow), "");
    if (g.caption) lines.push(g.caption, "");
  }
  for (const n of c.notes) lines.push(n, "");
  lines.push(...mdTable(c.table), "");
  return lines;
}

/** The sections a higher layer adds that do not lead the report. */
function addedSections(sections: AddedSection[]): string[] {
  return sections.filter((x) => !x.section.lead).flatMap(sectionLines);
}

/** The rows with their legend, the warnings and the CPU per request. */
function resultsSection(run: BenchRun): string[] {
  const lines = ["## Results", ""];
  lines.push(
    cellRow([
      "transport",
      "stack",
      "what one sample times",
      "median [95 % CI]",
      "p90",
      "p99",
      "p99.9",
      "× own floor",
      "× TCP floor",
      "rate",
      "n",
    ]),
  );
  lines.push(cellRow(Array(11).fill("---")));
  for (const r of run.rows.filter((r) => r.step === undefined)) {
    lines.push(cellRow([
      r.link ? `${r.transport} (${r.link})` : r.transport,
      r.stack ?? "–",
      r.label,
      medianWithCi(r),
      formatDuration(r.estimate.p90),
      formatDuration(r.estimate.p99),
      formatDuration(r.estimate.p999),
      floorCell(run, r),
      tcpCell(run, r),
      r.bytesPerSecond !== undefined
        ? formatBitRate(r.bytesPerSecond)
        : r.requestsPerSecond !== undefined
        ? formatRate(r.requestsPerSecond)
        : "–",
      String(r.estimate.n),
    ]));
  }
  if (run.rows.length) lines.push("", ...legendLines(run).map((l) => `- ${l}`));
  const warnings = warningLines(run, { all: true });
  if (warnings.length) lines.push("", ...warnings.map((w) => `> **Warning:** ${w}`));
  const cpu = cpuTable(run);
  if (cpu.body.length) lines.push("", ...mdTable(cpu), "", CPU_NOTE);
  return lines;
}

/** The per-step rows of a flows run. */
function stepsSection(run: BenchRun): string[] {
  const stepRows = run.rows.filter((r) => r.step !== undefined);
  if (!stepRows.length) return [];
  const lines = ["", "### Per-step latency", ""];
  lines.push(cellRow(["transport", "flow", "step", "median [95 % CI]", "p99", "n", "failed"]));
  lines.push(cellRow(Array(7).fill("---")));
  for (const r of stepRows) {
    lines.push(cellRow([
      r.link ? `${r.transport} (${r.link})` : r.transport,
      `${r.flow}${r.concurrency ? `, ${r.concurrency} UEs` : ""}`,
      r.label,
      medianWithCi(r),
      formatDuration(r.estimate.p99),
      String(r.estimate.n),
      String(r.errors),
    ]));
  }
  return lines;
}

/** The percentiles, the connection set-up and the port change, where the run has them. */
function detailSections(run: BenchRun): string[] {
  const lines: string[] = [];
  for (
    const [title, t] of [
      ["Per-request latency percentiles", percentileTable(run)],
      ["Connection set-up (median to the end of each phase)", setupTable(run)],
      ["Client port change mid-run", migrationTable(run)],
    ] as const
  ) {
    if (t.body.length) lines.push("", `### ${title}`, "", ...mdTable(t));
  }
  const link = linkLines(run);
  if (link.length) lines.push("", "## Link", "", "```", ...link, "```");
  return lines;
}

/** The floors, or why there are none. */
function floorsSection(run: BenchRun): string[] {
  const lines = ["", "## Floors", ""];
  if (run.floors.rows.length === 0) {
    lines.push(run.floors.skipped ?? "No floors were measured.");
    return lines;
  }
  lines.push("Ping-pong round trip of the same payload between two processes on loopback.", "");
  const stacks = new Set(
    run.floors.rows.filter((f) => f.source === "stacks").map((f) => f.transport ?? ""),
  );
  if (stacks.size) {
    lines.push(
      `The stacks alone are a GET of the same size instead, timed per request, one at a time: ${
        [...stacks].map((t) => STACKS_LABELS[t] ?? t).join("; ")
      } (no runtime on either side).`,
      "",
    );
  }
  lines.push(cellRow(["floor", "size", "median [95 % CI]", "p99", "n"]));
  lines.push(cellRow(Array(5).fill("---")));
  for (const f of run.floors.rows) {
    lines.push(
      cellRow([
        floorName(f),
        formatBytes(f.sizeBytes),
        medianWithCi(f),
        formatDuration(f.estimate.p99),
        String(f.estimate.n),
      ]),
    );
  }
  return lines;
}

/** Observations, notes, the method and the environment. */
function closingSections(run: BenchRun): string[] {
  const env = run.environment;
  const lines: string[] = [];
  const obs = observations(run);
  if (obs.length) lines.push("", "## Observations", "", ...obs.map((o) => `- ${o}`));
  if (run.notes.length) lines.push("", "## Notes", "", ...run.notes.map((n) => `- ${n}`));
  lines.push("", "## Method", "");
  lines.push(
    "- Medians with a 95 % percentile-bootstrap confidence interval (1000 resamples, fixed seed).",
    "- Percentiles interpolate between order statistics; outliers are counted with Tukey's 1.5 and 3 IQR fences.",
    "- × own floor is the row's median over the kernel ping-pong median of the same size (TCP for h2c and h2-TLS, UDP for h3); × TCP floor divides every row by the TCP one, so it compares across transports.",
  );
  if (run.rows.some(isFlowRow)) {
    lines.push(
      "- Flows: UEs arrive open loop at a fixed rate with a cap on UEs in flight; the journey's first flow is timed from the UE's intended arrival (coordinated omission corrected), later flows from their first request; one connection per NF pair; failed flows and retries are counted in every row (docs/flows.md).",
      "- The p99 difference of a cell is bootstrapped by resampling both sides independently (1000 resamples, fixed seed).",
    );
  }
  lines.push("", "## Environment", "");
  lines.push(
    `- CPU: ${env.cpuModel}, ${env.cores} cores; kernel ${env.kernel}; ${env.os}; host ${env.hostname}`,
    `- Deno ${env.deno}, V8 ${env.v8}, TypeScript ${env.typescript}`,
    `- Libraries: ${
      Object.entries(env.libraries).map(([k, v]) => `${k} ${v}`).join(", ") || "unknown"
    }`,
    `- Git revision: ${env.gitRevision}`,
    `- Schema: ${run.schema}`,
  );
  return lines;
}

/** Renders the Markdown report, one section after another. */
export function renderMarkdown(run: BenchRun, options: RenderOptions = {}): string {
  // Each section renders once (the study's verdict judges every cell).
  const sections = pluginSections(run, options);
  const lines = [
    ...headSection(run, sections),
    ...ratiosSection(run),
    ...addedSections(sections),
    ...resultsSection(run),
    ...stepsSection(run),
    ...detailSections(run),
    ...floorsSection(run),
    ...closingSections(run),
  ];
  return lines.join("\n") + "\n";
}
