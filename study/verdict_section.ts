/**
 * The study's verdict as a report section: the summary sentence and the grid
 * first (HTML reports open with them), then the rule, the matrix's budget, the
 * cell table, and each flow-time row's cell in CSV.
 */
import type { ReportSection } from "../bench/report/mod.ts";
import type { BenchRun, ResultRow } from "../bench/record/mod.ts";
import { type CellVerdict, isFlowRow, studyVerdict } from "./verdict.ts";
import { ruleText } from "./verdict_rule.ts";
import { verdictTable } from "./verdict_table.ts";
import { formatBudgetUse } from "../lib/units.ts";
import { GRID_CSS, GRID_LEGEND, gridHtml, gridTable, verdictGrid } from "./verdict_grid.ts";

function applies(run: BenchRun): boolean {
  return run.study !== undefined || run.rows.some(isFlowRow);
}

/** The cell of each flow-time row of `run`, judged once for the whole run. */
function cellsOf(run: BenchRun): (r: ResultRow) => CellVerdict | undefined {
  const { cells } = studyVerdict(run);
  return (r) => {
    if (!isFlowRow(r)) return undefined;
    const link = r.link ?? run.config.link?.spec ?? "loopback";
    return cells.find((c) =>
      c.link === link && c.flow === r.flow && c.ues === (r.concurrency ?? 1) &&
      (c.stack ?? "") === (r.stack ?? run.config.stack ?? "")
    );
  };
}

/** The link order of a run's grid: the study's links as given, else first appearance. */
export function gridLinks(run: BenchRun): string[] | undefined {
  return run.study?.links.map((l) => l.spec);
}

/** The verdict section of a study (or of any run with flow rows). */
export const verdictSection: ReportSection = {
  id: "verdict",
  title: "Verdict",
  lead: true,
  render(run) {
    if (!applies(run)) return undefined;
    const v = studyVerdict(run);
    const grid = verdictGrid(v, gridLinks(run));
    const notes = [`Rule: ${ruleText(v.rule)}`];
    if (run.study) {
      notes.push(
        `The matrix ${
          formatBudgetUse(run.study.elapsedMs, run.study.budgetMs)
        }; a cell took at most ${run.study.samples} flows per side.`,
      );
    }
    return {
      summary: v.summary,
      notes,
      grids: [{ ...gridTable(grid), caption: GRID_LEGEND }],
      html: `<style>${GRID_CSS}</style>${gridHtml(grid)}`,
      table: verdictTable(v),
    };
  },
  csvColumns: ["cell_verdict", "cell_h3_p99_reduction"],
  csvCells(run) {
    if (!applies(run)) return () => [undefined, undefined];
    const cellOf = cellsOf(run);
    return (row) => {
      const c = cellOf(row);
      return [c?.status, c?.reduction];
    };
  },
};

/** Every section the study adds to reports. */
export const STUDY_SECTIONS: readonly ReportSection[] = [verdictSection];
