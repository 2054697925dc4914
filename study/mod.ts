/**
 * The study: SBI call flows between NFs, the matrix of flows × links ×
 * transports × UE concurrency, and the verdict rule that says whether HTTP/3
 * changes a flow's tail materially. It runs on the benchmark below it and
 * adds its verdict to the benchmark's reports as a section.
 */
export { runStudy, type StudyOptions } from "./study.ts";
export { linkNeedMs, planLink } from "./link_plan.ts";
export { type CellVerdict, type StudyVerdict, studyVerdict, verdictSummary } from "./verdict.ts";
export { DEFAULT_RULE, ruleText, type VerdictRule } from "./verdict_rule.ts";
export { type FlowDefinition, FLOWS, type FlowStep, JOURNEY } from "./flows/definitions.ts";
export { type FlowOutcome, runFlow, runStep } from "./flows/runner.ts";
export { flowsPlugin, flowsScenario, STUDY_PLUGINS } from "./flows_scenario.ts";
export { STUDY_SECTIONS, verdictSection } from "./verdict_section.ts";
export { DEFAULT_DESIGN, judgeSequential, lookAt, type SequentialDesign } from "./sequential.ts";
export { gridTable, verdictGrid } from "./verdict_grid.ts";
