/**
 * Reports, each a pure function of a saved run record: the terminal table and
 * bars, Markdown, CSV, HTML with charts, and run-to-run comparison, behind one
 * `Reporter` interface; higher layers add sections through `RenderOptions`.
 * Only `reporters.ts` writes files (and `chart_library.ts` reads Chart.js). Imports bench/record/, bench/stats/ and
 * lib/ (transports/ for types), never the runner or the scenarios.
 */
export { answerLines, transportName } from "./answer.ts";
export { renderCharts } from "./charts.ts";
export {
  type CompareOptions,
  compareRuns,
  incomparable,
  regressions,
  renderComparison,
  type RunComparison,
  statedNoise,
} from "./compare.ts";
export { renderCsv } from "./csv.ts";
export { type ChartLibrary, loadChartLibrary } from "./chart_library.ts";
export { renderHtml } from "./html.ts";
export { observations, renderMarkdown } from "./markdown.ts";
export {
  type RenderOptions,
  type ReportSection,
  reportTitle,
  type SectionContent,
} from "./report_sections.ts";
export {
  fileReporters,
  type Reporter,
  type ReportFiles,
  serializeRun,
  writeReports,
} from "./reporters.ts";
export { layoutColumns, renderTable } from "./table.ts";
