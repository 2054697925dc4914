/** `lab report merge`: shard records of one load run into one run record, rendered like `lab load`'s. */
import type { Command } from "commander";
import { asUsage, checkOutputPaths, UsageError } from "./args.ts";
import { DEFAULT_OK, parseStatusSet } from "../lib/status_set.ts";
import {
  type LoadRecord,
  mergeShards,
  renderMergeSummary,
  ShardMergeError,
  writeIntervalLog,
} from "../load/mod.ts";
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

/** Adds `report merge` (under `lab report`, which re-renders bench runs, when it is registered first). */
export function registerReportCommands(program: Command): void {
  const report = program.commands.find((c) => c.name() === "report") ??
    program.command("report").description("work with saved run records");
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
