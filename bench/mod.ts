/**
 * The benchmark: a runner that measures the transports and the machine's
 * floors in one run (in interleaved rounds for `rtt`), pure statistics (over
 * samples and over rounds), scenarios, and reporters (terminal table and
 * bars, JSON, Markdown, CSV, HTML) that are pure functions of the saved run
 * record, plus run-to-run comparison. Higher layers (the study) add their
 * own report sections and scenarios.
 */
export { type BenchOptions, DEFAULT_SIZES, runBench } from "./run.ts";
export {
  type BenchRun,
  type FloorRow,
  parseRun,
  type ResultRow,
  type RunConfig,
  type ScenarioName,
  SCENARIOS,
  SCHEMA_VERSION,
} from "./schema.ts";
export {
  bootstrapMedianCi,
  compareMedians,
  compareQuantiles,
  type Estimate,
  estimate,
  mad,
  mean,
  median,
  quantile,
  stddev,
  tukeyOutliers,
} from "./stats.ts";
export {
  betweenRoundCv,
  clusterMedian,
  drift,
  pairedRatio,
  roundOrders,
  unpairedRatio,
} from "./rounds_stats.ts";
export { DEFAULT_BLOCK_MS, DEFAULT_ROUNDS, type RoundArm, runRounds } from "./rounds.ts";
export { assessNoise, NOISE_THRESHOLDS, noiseLine, pairedRatios } from "./rounds_summary.ts";
export { repeatsRecord, runRepeated } from "./repeats.ts";
export { estimateSampleSet, Recorder, type SampleSet } from "./recorder.ts";
export { type Clock, sampleOpenLoop, sampleOperation, type SamplingPlan } from "./sampler.ts";
export { renderTable } from "./table.ts";
export { renderCharts } from "./charts.ts";
export { observations, renderMarkdown } from "./markdown.ts";
export { renderCsv } from "./csv.ts";
export { compareRuns, renderComparison, type RunComparison } from "./compare.ts";
export { fileReporters, type Reporter, serializeRun, writeReports } from "./reporters.ts";
export { type ChartLibrary, loadChartLibrary, renderHtml } from "./html.ts";
export type { RenderOptions, ReportSection, SectionContent } from "./report_sections.ts";
