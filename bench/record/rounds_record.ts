/**
 * The parts of a run record that interleaved rounds and repeated runs add:
 * per-arm round series, paired ratios, the machine's readings, the noise
 * assessment and the spread of repeats (see `schema.ts` for the whole record).
 */
import type { Interval } from "../stats/stats.ts";

/**
 * An arm's blocks in an interleaved run: `samples.samples` holds the values in
 * round order, `counts[i]` of them from round i.
 */
export interface RoundSeries {
  /** Samples of each round. */
  counts: number[];
  /** Median of each round's block (ns). */
  medians: number[];
  /** Between-round coefficient of variation of those medians. */
  cv: number;
  /** Client CPU time of each round's block (ns), when measured. */
  clientCpuNs?: number[];
  /** Server CPU time of each round's block (ns), when measured. */
  serverCpuNs?: number[];
}

/** A ratio between two arms of one run, paired by round. */
export interface RatioRecord {
  /** Stable key, e.g. `h3/h2-tls/256`. */
  id: string;
  /** What the ratio compares, in words (e.g. `h3 ÷ h2-tls`). */
  label: string;
  /**
   * `transports` (one transport over another), `floor` (a row over its kernel
   * floor), `peers` (the peers scenario: our side over a reference tool),
   * `runtime` (a deno-stack row over its bare runtime arm) or `stacks` (one
   * transport's stacks-alone arm over another's: the transports without sbilab
   * or a runtime around them).
   */
  kind: "transports" | "floor" | "peers" | "runtime" | "stacks";
  /** Row or floor id of the numerator and of the denominator. */
  numerator: string;
  denominator: string;
  /** Body size both arms moved. */
  sizeBytes?: number;
  /** Ratio of the pooled medians. */
  ratio: number;
  /** Paired cluster-bootstrap interval (rounds resampled for both arms). */
  interval: Interval;
  /** Median of the per-round ratios. */
  medianOfRounds: number;
  /** Between-round CV of the per-round ratios. */
  cv: number;
  /** Per-round ratio of the block medians. */
  perRound: number[];
}

/**
 * What sbilab adds to a request over the stacks alone: a row's median minus
 * its transport's stacks-alone arm's at the same size, paired by round.
 */
export interface AddedRecord {
  /** Stable key, e.g. `rtt/h2c/256/added`. */
  id: string;
  /** The row's transport. */
  transport: string;
  /** Body size both arms moved. */
  sizeBytes?: number;
  /** Row id (minuend) and floor id of the stacks-alone arm (subtrahend). */
  row: string;
  stacks: string;
  /** Row median − stacks-alone median (ns). */
  addedNs: number;
  /** Paired cluster-bootstrap interval of that difference (ns). */
  interval: Interval;
}

/** Per-round reading of the machine during the CPU-measured blocks. */
export interface RoundMachineRecord {
  /** Steal time ÷ all CPU time. */
  stealShare: number;
  /** CPU busy outside the client and server processes, in cores. */
  otherCores: number;
  /** One-minute load average at the round's end. */
  load1: number;
}

/** The machine's noise over a run, and whether it passed the stated thresholds. */
export interface NoiseRecord {
  /** True when one of the figures passed its threshold. */
  noisy: boolean;
  /** One phrase per figure over its threshold (e.g. `steal 3.1 % of CPU time`). */
  reasons: string[];
  /** The spread (± %) a repeat of the run's ratios should be expected within. */
  expectPercent: number;
  /** Mean steal share over the run. */
  stealShare?: number;
  /** Mean CPU of other processes (cores), and its worst round. */
  otherCores?: number;
  otherCoresMax?: number;
  /** Highest one-minute load average seen. */
  load1Max?: number;
  /** Drift of each kernel floor, last quarter of rounds ÷ first quarter − 1 (floor id → drift). */
  floorDrift: Record<string, number>;
  /** Between-round CV per arm (row or floor id → CV). */
  armCv: Record<string, number>;
  /** The thresholds the figures were held to. */
  thresholds: NoiseThresholds;
}

/** Thresholds of the noise line. */
export interface NoiseThresholds {
  /** Steal share of CPU time. */
  stealShare: number;
  /** Mean CPU of other processes, cores. */
  otherCores: number;
  /** Load average above the machine's core count by this much. */
  loadAboveCores: number;
  /** |Kernel floor drift|. */
  floorDrift: number;
  /** Between-round CV of a transport arm. */
  armCv: number;
}

/** How an interleaved run was scheduled, what the machine did, and the paired ratios. */
export interface RoundsRecord {
  /** Measured rounds. */
  rounds: number;
  /** Block length per arm and round (ms). */
  blockMs: number;
  /** Rounds run first and discarded. */
  warmupRounds: number;
  /** Seed of the round orders. */
  seed: number;
  /** Arm ids in the order each round ran them. */
  order: string[][];
  /** Wall time of each round (ms). */
  roundMs: number[];
  /** What the machine did in each round (empty without /proc). */
  machine: RoundMachineRecord[];
  /** The paired ratios, transports first. */
  ratios: RatioRecord[];
  /** sbilab's own time per request over the stacks alone, per row (runs that measured them). */
  added?: AddedRecord[];
  /** The noise assessment. */
  noise: NoiseRecord;
}

/** `lab bench --runs N`: every run's ratios and their spread. */
export interface RepeatsRecord {
  /** Each run in order: when it started and its transport ratios. */
  runs: { startedAt: string; durationMs: number; ratios: RatioRecord[]; noisy: boolean }[];
  /** Per ratio id: mean, min, max and the largest deviation from the mean (relative). */
  spread: {
    id: string;
    label: string;
    mean: number;
    min: number;
    max: number;
    maxDeviation: number;
  }[];
}
