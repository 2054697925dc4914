/**
 * The saved run record: its schema and version, the parser that checks a
 * file, and the pure summaries and lookups built from it (ratios over paired
 * rounds, the noise assessment, a row's floor, the peers' ratio labels, the
 * cold scenario's modes and phases). No I/O; imports bench/stats/ and lib/,
 * and transports/ for types.
 */
export {
  type AddedRecord,
  type BenchRun,
  type EngineName,
  type Environment,
  type FloorKind,
  type FloorRow,
  type FloorSource,
  isFlowRow,
  type LinkRecord,
  type NoiseRecord,
  parseRun,
  type RatioRecord,
  READABLE_SCHEMAS,
  type RepeatsRecord,
  type ResultRow,
  type RoundSeries,
  type RoundsRecord,
  type RunConfig,
  type ScenarioName,
  SCENARIOS,
  type Schedule,
  SCHEMA_VERSION,
  type StudyRecord,
} from "./schema.ts";
export {
  addedTimes,
  assessNoise,
  NOISE_THRESHOLDS,
  noiseLine,
  pairedRatios,
  stacksRatios,
} from "./rounds_summary.ts";
export {
  BARE_LABELS,
  BARE_TRANSPORTS,
  bareMultiple,
  type BareTransport,
  findBareFloor,
  findFloor,
  findStacksFloor,
  floorMultiple,
  floorName,
  STACKS_LABELS,
  STACKS_TRANSPORTS,
} from "./floor_lookup.ts";
export { PEER_RATIOS } from "./peer_ratios.ts";
export { SETUP_PHASES, type SetupMode, setupModes, type SetupPhase } from "./setup_modes.ts";
