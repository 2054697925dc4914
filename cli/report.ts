/**
 * `lab report`: re-renders a saved bench or study run (or shows a `lab load`
 * record), compares a baseline with a candidate, and (`lab report merge`)
 * merges the shard records of one load run into one run record, rendered
 * like `lab load`'s.
 */
import type { Command } from "commander";
import { asUsage, checkOutputPaths, parseNumber, UsageError } from "./args.ts";
import { DEFAULT_OK, parseStatusSet } from "../lib/status_set.ts";
import {
  LOAD_SCHEMA,
  type LoadRecord,
  mergeShards,
  renderMergeSummary,
  ShardMergeError,
  writeIntervalLog,
} from "../load/mod.ts";
import { parseRun } from "../bench/record/mod.ts";
import {
  compareRuns,
  incomparable,
  regressions,
  renderCharts,
  renderComparison,
  renderTable,
  writeReports,
} from "../bench/report/mod.ts";
import { STUDY_SECTIONS } from "../study/mod.ts";
import * as hdr from "hdr-histogram-js";
import { renderLatencyHistogram, renderLoadSummary } from "../load/report.ts";

interface MergeFlags {
  output?: string;
  md?: string;
  html?: string;
  lateMs: string;
}

/** The terminal text of a merged run: `lab load`'s summary, its histogram chart, then the shards. */
export function renderMergedRun(run: LoadRecord): string {
  const ok = asUsage(() => parseStatusSet(run.plan.ok ?? DEFAULT_OK), "ok");
  const shape = { ...run.plan, rate: run.plan.rate, ok };
  return [
    renderLoadSummary(run.result, shape),
    "",
    renderLatencyHistogram(run.result.latencyBuckets),
    "",
    renderMergeSummary(run.merge!),
  ].join("\n");
}

function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"]/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!,
  );
}

async function readRecord(path: string): Promise<LoadRecord> {
  let text;
  try {
    text = await Deno.readTextFile(path);
  } catch {
    throw new UsageError(`Cannot read ${path}`);
  }
  try {
    return JSON.parse(text) as LoadRecord;
  } catch {
    throw new UsageError(`${path} is not JSON`);
  }
}

async function merge(files: string[], f: MergeFlags): Promise<void> {
  const lateMs = Number(f.lateMs);
  if (!(lateMs >= 0)) throw new UsageError(`--late-ms must be ≥ 0, got ${f.lateMs}`);
  await checkOutputPaths({ "-o": f.output, "--md": f.md, "--html": f.html });
  const records = await Promise.all(files.map(readRecord));
  let run: LoadRecord;
  try {
    run = mergeShards(records, { lateMs });
  } catch (err) {
    if (err instanceof ShardMergeError) throw new UsageError(err.message);
    throw err;
  }
  const w = run.merge!.unionWindow;
  const text = renderMergedRun(run);
  console.log(text);
  const withLog = {
    ...run,
    intervalLog: writeIntervalLog([{
      startMs: w.startMs,
      endMs: w.endMs,
      histograms: {
        corrected: hdr.decodeFromCompressedBase64(run.result.histograms.corrected),
        uncorrected: hdr.decodeFromCompressedBase64(run.result.histograms.uncorrected),
      },
    }], `sbilab merged run of ${run.merge!.shards.length} shards, latency in ns`),
  };
  if (f.output) {
    await Deno.writeTextFile(f.output, JSON.stringify(withLog, null, 2) + "\n");
    console.error(`wrote ${f.output}`);
  }
  if (f.md) {
    await Deno.writeTextFile(
      f.md,
      `# Load run: ${run.url}, ${run.merge!.shards.length} shards\n\n\`\`\`text\n${text}\n\`\`\`\n`,
    );
    console.error(`wrote ${f.md}`);
  }
  if (f.html) {
    await Deno.writeTextFile(
      f.html,
      `<!doctype html><meta charset="utf-8"><title>Load run</title>\n<h1>Load run: ${
        escapeHtml(run.url)
      }</h1>\n<pre>${escapeHtml(text)}</pre>\n`,
    );
    console.error(`wrote ${f.html}`);
  }
  if (run.result.partial) {
    // main.ts prints this one line and exits 1; the files above hold the partial run.
    throw new Error(`partial run: ${run.merge!.reasons.join("; ")}`);
  }
}

async function readText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new UsageError(`Cannot read ${path}: ${(err as Error).message}`);
  }
}

/** The `lab load` record in `text`, or undefined when it is something else. */
function loadRecordIn(text: string): LoadRecord | undefined {
  try {
    const data = JSON.parse(text);
    return data?.schema === LOAD_SCHEMA ? data as LoadRecord : undefined;
  } catch {
    return undefined;
  }
}

async function readRun(path: string) {
  const text = await readText(path);
  if (loadRecordIn(text)) {
    throw new UsageError(
      `${path} is a lab load record (${LOAD_SCHEMA}): lab report ${path} shows it alone, ` +
        "lab report merge joins shard records; lab report A B compares bench and study runs",
    );
  }
  try {
    return parseRun(text, path);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `lab report load.json`: the load record's summary and histogram, as `lab load` printed them. */
function renderLoadRecord(record: LoadRecord): string {
  const ok = asUsage(() => parseStatusSet(record.plan.ok ?? DEFAULT_OK), "ok");
  const transport = record.result.protocol === "h3"
    ? "h3"
    : record.url.startsWith("https:")
    ? "h2-tls"
    : "h2c";
  return [
    `lab load record: ${record.url}`,
    renderLoadSummary(record.result, { ...record.plan, ok, transport }),
    "",
    renderLatencyHistogram(record.result.latencyBuckets),
  ].join("\n");
}

async function reportRuns(
  a: string,
  b: string | undefined,
  flags: {
    failOnRegression?: boolean;
    threshold: string;
    md?: string;
    csv?: string;
    html?: string;
    charts?: boolean;
  },
): Promise<void> {
  await checkOutputPaths({ "--md": flags.md, "--csv": flags.csv, "--html": flags.html });
  if (!b) {
    const load = loadRecordIn(await readText(a));
    if (load) {
      if (flags.md || flags.csv || flags.html) {
        throw new UsageError(`${a} is a lab load record: --md, --csv and --html render bench runs`);
      }
      console.log(renderLoadRecord(load));
      return;
    }
  }
  const base = await readRun(a);
  if (!b) {
    console.log(renderTable(base, { sections: STUDY_SECTIONS }));
    if (flags.charts !== false) {
      const charts = renderCharts(base);
      if (charts) console.log(`\n${charts}`);
    }
    const written = await writeReports(
      base,
      { md: flags.md, csv: flags.csv, html: flags.html },
      { sections: STUDY_SECTIONS },
    );
    for (const w of written) console.error(`wrote ${w}`);
    return;
  }
  const threshold = parseNumber(flags.threshold, "--threshold") / 100;
  const cand = await readRun(b);
  const why = incomparable(base, cand);
  if (why) throw new UsageError(`Cannot compare ${a} with ${b}: ${why}`);
  const cmp = compareRuns(base, cand, { noiseThreshold: threshold });
  console.log(renderComparison(cmp));
  if (base.study && cand.study) {
    const { studyVerdict } = await import("../study/verdict.ts");
    const { renderVerdictAgreement, verdictAgreement } = await import(
      "../study/verdict_compare.ts"
    );
    console.log(
      `\n${renderVerdictAgreement(verdictAgreement(studyVerdict(base), studyVerdict(cand)))}`,
    );
  }
  const regressed = regressions(cmp);
  const quick = [base.config.quick ? a : "", cand.config.quick ? b : ""].filter(Boolean);
  if (flags.failOnRegression && regressed.length > 0 && quick.length) {
    console.error(
      `not gating: ${quick.join(" and ")} ${
        quick.length > 1 ? "were quick runs" : "was a quick run"
      } (--quick measures too little to gate on)`,
    );
    return;
  }
  if (flags.failOnRegression && regressed.length > 0) {
    throw new Error(
      `${regressed.length} row(s) or ratio(s) regressed beyond their interval and the noise threshold`,
    );
  }
}

/** Adds `lab report` (re-render, compare) and `lab report merge`. */
export function registerReportCommands(program: Command): void {
  const report = program
    .command("report")
    .description("re-render a saved run, or compare a baseline A with a candidate B")
    .argument("<a.json>", "saved run (the baseline when comparing), or a lab load record to show")
    .argument("[b.json]", "candidate run to compare with the baseline")
    .option(
      "--fail-on-regression",
      "exit 1 when a row or ratio got worse beyond its interval and the threshold",
    )
    .option("--threshold <percent>", "noise threshold in percent", "2")
    .option("--md <file>", "write a Markdown report of A")
    .option("--csv <file>", "write A's rows as CSV")
    .option("--html <file>", "write A as a self-contained HTML report with charts")
    .option("--no-charts", "do not print the terminal bar charts")
    .action(async (a: string, b: string | undefined, flags) => {
      await reportRuns(a, b, flags);
    });
  report.command("merge")
    .description("merge shard records of one `lab load --shard` run (histograms added exactly)")
    .argument("<files...>", "shard records (lab load --shard I/N --json FILE)")
    .option("-o, --output <file>", "write the merged run record (JSON)")
    .option("--md <file>", "also write the summary as Markdown")
    .option("--html <file>", "also write the summary as HTML")
    .option(
      "--late-ms <ms>",
      "a shard starting later than this after the planned start ran late",
      "250",
    )
    .action(async (files: string[], flags: MergeFlags) => {
      await merge(files, flags);
    });
}
