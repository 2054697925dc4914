/**
 * The study's verdict as a report section: the summary sentence, the rule,
 * the matrix's budget, the cell table, and each flow-time row's cell in CSV.
 */
import type { ReportSection } from "../bench/report/mod.ts";
import type { BenchRun, ResultRow } from "../bench/record/mod.ts";
import { isFlowRow, ruleText, studyVerdict } from "./verdict.ts";
import { verdictTable } from "./verdict_table.ts";

function applies(run: BenchRun): boolean {
  return run.study !== undefined || run.rows.some(isFlowRow);
}

function cellOf(run: BenchRun, r: ResultRow) {
  if (!isFlowRow(r)) return undefined;
  const link = r.link ?? run.config.link?.spec ?? "loopback";
  return studyVerdict(run).cells.find((c) =>
    c.link === link && c.flow === r.flow && c.ues === (r.concurrency ?? 1) &&
    (c.stack ?? "") === (r.stack ?? run.config.stack ?? "")
  );
}

/** The verdict section of a study (or of any run with flow rows). */
export const verdictSection: ReportSection = {
  id: "verdict",
  title: "Verdict",
  render(run) {
    if (!applies(run)) return undefined;
    const v = studyVerdict(run);
    const notes = [`Rule: ${ruleText(v.rule)}`];
    if (run.study) {
      notes.push(
        `The matrix took ${(run.study.elapsedMs / 1000).toFixed(0)} s of a ${
          (run.study.budgetMs / 1000).toFixed(0)
        } s budget, with ${run.study.samples} UE arrivals per row (at most ${
          (run.study.sampleMs / 1000).toFixed(1)
        } s each).`,
      );
    }
    return { summary: v.summary, notes, table: verdictTable(v) };
  },
  csvColumns: ["cell_verdict", "cell_h3_p99_reduction"],
  csvCells(run, row) {
    if (!applies(run)) return [undefined, undefined];
    const c = cellOf(run, row);
    return [c?.status, c?.reduction];
  },
};

/** Every section the study adds to reports. */
export const STUDY_SECTIONS: readonly ReportSection[] = [verdictSection];
