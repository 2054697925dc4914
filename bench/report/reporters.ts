/**
 * Reporters: each turns a finished run into one output. They share one
 * interface with lifecycle hooks (a reporter may also follow the run live),
 * and every rendering is a pure function of the run record.
 */
import { renderCsv } from "./csv.ts";
import { renderMarkdown } from "./markdown.ts";
import type { BenchRun, FloorRow, ResultRow, RunConfig } from "../record/schema.ts";
import type { RenderOptions } from "./report_sections.ts";

/** One output of a benchmark. */
export interface Reporter {
  /** Short name for messages. */
  readonly name: string;
  /** The run starts. */
  start?(config: RunConfig): void;
  /** A floor finished. */
  floor?(floor: FloorRow): void;
  /** A row finished. */
  row?(row: ResultRow): void;
  /** The run finished; returns the path written, if any. */
  finish(run: BenchRun): Promise<string | undefined>;
}

/** Serialises a run (stable key order, two-space indent). */
export function serializeRun(run: BenchRun): string {
  return JSON.stringify(run, null, 2) + "\n";
}

/** Writes a rendering of the run to a file on finish. */
export function fileReporter(
  name: string,
  path: string,
  render: (run: BenchRun) => string,
): Reporter {
  return {
    name,
    async finish(run) {
      try {
        await Deno.writeTextFile(path, render(run));
      } catch (err) {
        throw new Error(`Cannot write ${name} to ${path}: ${(err as Error).message}`, {
          cause: err,
        });
      }
      return path;
    },
  };
}

/** Files to write. */
export interface ReportFiles {
  /** JSON run record. */
  json?: string;
  /** Markdown report. */
  md?: string;
  /** CSV of the rows. */
  csv?: string;
  /** Self-contained HTML report with charts. */
  html?: string;
}

/** The file reporters for the given paths (the HTML one reads its chart library first). */
export async function fileReporters(
  files: ReportFiles,
  options: RenderOptions = {},
): Promise<Reporter[]> {
  const out: Reporter[] = [];
  if (files.json) out.push(fileReporter("JSON", files.json, serializeRun));
  if (files.md) out.push(fileReporter("Markdown", files.md, (run) => renderMarkdown(run, options)));
  if (files.csv) out.push(fileReporter("CSV", files.csv, (run) => renderCsv(run, options)));
  if (files.html) {
    const { renderHtml } = await import("./html.ts");
    const { loadChartLibrary } = await import("./chart_library.ts");
    const lib = await loadChartLibrary();
    out.push(fileReporter("HTML", files.html, (run) => renderHtml(run, lib, options)));
  }
  return out;
}

/** Runs every file reporter's finish hook; returns the paths written. */
export async function writeReports(
  run: BenchRun,
  files: ReportFiles,
  options: RenderOptions = {},
): Promise<string[]> {
  const written: string[] = [];
  for (const r of await fileReporters(files, options)) {
    const p = await r.finish(run);
    if (p) written.push(p);
  }
  return written;
}
