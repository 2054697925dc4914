/**
 * The native load engines: one inside the h2 module and one inside the h3
 * module, driven by a plan, keeping latency histograms, status counts, errors
 * by kind, bytes and per-connection set-up times in C.
 */
export {
  LoadEngine,
  LoadEngineError,
  type LoadPhase,
  type LoadProgress,
  runLoad,
} from "./engine.ts";
export type { RunOptions } from "./engine.ts";
export { encodePlan, type LoadPlan, type LoadProtocol } from "./plan.ts";
export {
  buildHistogram,
  type ConnectionTimes,
  decodePairs,
  ERROR_KINDS,
  type ErrorKind,
  histogramFromPairs,
  type LatencySummary,
  type LoadResult,
  summarize,
} from "./result.ts";
export { type LoadTarget, loadTarget, type TargetOptions } from "./target.ts";
export {
  MAX_SHARDS,
  parseShard,
  shardFromIndexEnv,
  type ShardId,
  shardLabel,
  shardPlan,
  shareOf,
} from "./shard.ts";
export {
  LOAD_SCHEMA,
  type LoadRecord,
  type MergeInfo,
  type MergeOptions,
  mergeShards,
  type RecordPlan,
  renderMergeSummary,
  type ShardInfo,
  shardIntervalLog,
  ShardMergeError,
} from "./shard_record.ts";
export { type LogInterval, readIntervalLog, writeIntervalLog } from "./interval_log.ts";
