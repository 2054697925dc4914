/**
 * Statistics, pure: estimates of a sample set (quantiles, bootstrap intervals,
 * outliers, comparisons), statistics over interleaved rounds, and the recorder
 * that holds a row's samples. No I/O and no `Deno` here; the room imports
 * only lib/ and an npm histogram, nothing of bench's other rooms.
 */
export {
  bootstrapMedianCi,
  bootstrapMedians,
  bootstrapQuantiles,
  compareMedians,
  compareQuantiles,
  createRng,
  type Estimate,
  estimate,
  type Interval,
  mad,
  mean,
  median,
  type MedianComparison,
  quantile,
  type QuantileComparison,
  stddev,
  tukeyOutliers,
} from "./stats.ts";
export {
  betweenRoundCv,
  clusterMedian,
  cv,
  drift,
  type PairedDifference,
  pairedDifference,
  pairedRatio,
  type Rng,
  roundMedians,
  roundOrders,
  shuffled,
  splitRounds,
  unpairedRatio,
} from "./rounds_stats.ts";
export {
  DEFAULT_MAX_SAMPLES,
  estimateSampleSet,
  Recorder,
  type RecorderOptions,
  type SampleSet,
} from "./recorder.ts";
