/**
 * The runner: `runBench` resolves the options, starts the servers, measures
 * the floors, runs a scenario and assembles the run record; `runRepeated`
 * repeats whole runs; `runBenchAcrossLink` runs one across an emulated link.
 * The top room of bench/: it may import every other room.
 */
export {
  type AcrossLinkOptions,
  LINK_RECORD_ENV,
  LINK_RELAY_PID_ENV,
  LINK_SERVER_PID_ENV,
  linkContextFromEnv,
  linkRecord,
  runBenchAcrossLink,
} from "./across_link.ts";
export { type RepeatOptions, repeatsRecord, runRepeated } from "./repeats.ts";
export type { BenchOptions, ScenarioPlugin } from "./options.ts";
export { DEFAULT_SIZES, engineFor, NATIVE_SCENARIOS } from "./resolve.ts";
export { runBench } from "./run_bench.ts";
