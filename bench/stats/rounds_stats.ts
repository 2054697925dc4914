/**
 * Statistics over interleaved rounds: pure functions, no clock, no I/O.
 *
 * A run measures several arms (transport × size, and the floors) in rounds;
 * each round gives every arm one short block of samples, in a new random
 * order. Samples of one block share the machine's state of that moment, so
 * they are not independent: the unit of replication is the round. Hence:
 *
 * - an arm's median uses every sample, but its interval comes from a cluster
 *   bootstrap that resamples whole rounds (Kalibera & Jones, ISMM 2013);
 * - a ratio between two arms resamples the same rounds for both (a paired
 *   bootstrap), so a round in which the machine was slow enters numerator and
 *   denominator together and cancels, as it did in the measurement;
 * - the between-round coefficient of variation says how much an arm's
 *   per-round median moved during the run.
 *
 * The ratio's point value is the ratio of the two pooled medians (the same
 * medians the rows print, so the ratio agrees with the table), not the median
 * of per-round ratios: a median of R ratios moves between order statistics
 * under resampling, which makes its percentile interval lumpy and short at the
 * round counts a run can afford, while the pooled ratio is a smooth function
 * of the rounds it is built from. The per-round ratios are still returned,
 * for their spread and for a reader who wants them.
 *
 * Percentile intervals from R resampled clusters are too narrow by about
 * √((R − 1) / R) (the bootstrap's plug-in variance); they are widened by that
 * factor around the point value (on the log scale for ratios).
 */
import { createRng, type Interval, quantileSorted, sorted } from "./stats.ts";

/** A random source returning floats in [0, 1). */
export type Rng = () => number;

/** Options of the round bootstraps. */
export interface RoundBootstrapOptions {
  /** Number of bootstrap resamples. Default 1000. */
  resamples?: number;
  /** Confidence level. Default 0.95. */
  level?: number;
  /** Random source. Default a seeded PRNG (seed 0x5b1), so results repeat. */
  rng?: Rng;
}

/** Returns a new random order of `items` (Fisher–Yates with the given random source). */
export function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** The order of every round: `rounds` independent shuffles of `arms`. */
export function roundOrders<T>(arms: readonly T[], rounds: number, rng: Rng): T[][] {
  if (!(Number.isInteger(rounds) && rounds >= 1)) {
    throw new RangeError(`Rounds must be a whole number ≥ 1, got ${rounds}`);
  }
  return Array.from({ length: rounds }, () => shuffled(arms, rng));
}

function checkRounds(rounds: readonly ArrayLike<number>[], what: string, min = 2): void {
  if (rounds.length < min) {
    throw new RangeError(`${what} needs at least ${min} rounds, got ${rounds.length}`);
  }
  for (const [i, r] of rounds.entries()) {
    if (r.length < 1) throw new RangeError(`${what}: round ${i} has no samples`);
    for (let j = 0; j < r.length; j++) {
      if (!Number.isFinite(r[j])) {
        throw new RangeError(`${what}: round ${i} has a non-finite sample at index ${j}`);
      }
    }
  }
}

/** Every sample of every round, ascending, with the round each came from. */
interface Pooled {
  values: Float64Array;
  round: Uint32Array;
  perRound: Uint32Array;
}

function pool(rounds: readonly ArrayLike<number>[]): Pooled {
  let n = 0;
  for (const r of rounds) n += r.length;
  const pairs = new Array<[number, number]>(n);
  let k = 0;
  for (const [i, r] of rounds.entries()) {
    for (let j = 0; j < r.length; j++) pairs[k++] = [r[j], i];
  }
  pairs.sort((a, b) => a[0] - b[0]);
  return {
    values: Float64Array.from(pairs, (p) => p[0]),
    round: Uint32Array.from(pairs, (p) => p[1]),
    perRound: Uint32Array.from(rounds, (r) => r.length),
  };
}

/** Type-7 median of the pooled samples when round i is taken `weights[i]` times. */
function weightedMedian(p: Pooled, weights: Uint32Array): number {
  let total = 0;
  for (let i = 0; i < weights.length; i++) total += weights[i] * p.perRound[i];
  const h = (total - 1) * 0.5;
  const loRank = Math.floor(h);
  const hiRank = Math.min(loRank + 1, total - 1);
  let seen = 0;
  let lo = NaN;
  for (let j = 0; j < p.values.length; j++) {
    seen += weights[p.round[j]];
    if (Number.isNaN(lo) && seen > loRank) lo = p.values[j];
    if (seen > hiRank) return lo + (h - loRank) * (p.values[j] - lo);
  }
  return lo;
}

function drawRounds(weights: Uint32Array, rng: Rng): void {
  const r = weights.length;
  weights.fill(0);
  for (let i = 0; i < r; i++) weights[Math.floor(rng() * r)]++;
}

function settings(options: RoundBootstrapOptions) {
  const resamples = options.resamples ?? 1000;
  const level = options.level ?? 0.95;
  if (!(Number.isInteger(resamples) && resamples >= 10)) {
    throw new RangeError(`Bootstrap needs an integer number of resamples ≥ 10, got ${resamples}`);
  }
  if (!(level > 0 && level < 1)) {
    throw new RangeError(`Confidence level ${level} is outside (0, 1)`);
  }
  return { resamples, level, rng: options.rng ?? createRng(0x5b1) };
}

/** Percentile interval of `dist` (ascending), widened by √(R/(R−1)) around `point`. */
function widened(
  dist: Float64Array,
  point: number,
  level: number,
  rounds: number,
  log: boolean,
): Interval {
  const alpha = (1 - level) / 2;
  const f = Math.sqrt(rounds / (rounds - 1));
  const lo = quantileSorted(dist, alpha);
  const hi = quantileSorted(dist, 1 - alpha);
  if (log) {
    const lp = Math.log(point);
    return {
      level,
      lower: Math.exp(lp - (lp - Math.log(lo)) * f),
      upper: Math.exp(lp + (Math.log(hi) - lp) * f),
    };
  }
  return { level, lower: point - (point - lo) * f, upper: point + (hi - point) * f };
}

/** An arm's median over all its samples with an interval from resampled rounds. */
export interface RoundMedian {
  /** Median of every sample of every round. */
  median: number;
  /** Cluster-bootstrap interval of that median (rounds resampled). */
  interval: Interval;
  /** Number of rounds. */
  rounds: number;
  /** Number of samples. */
  n: number;
}

/** Median of an arm's samples with a cluster-bootstrap interval over its rounds (≥ 2). */
export function clusterMedian(
  rounds: readonly ArrayLike<number>[],
  options: RoundBootstrapOptions = {},
): RoundMedian {
  checkRounds(rounds, "clusterMedian");
  const { resamples, level, rng } = settings(options);
  const p = pool(rounds);
  const weights = new Uint32Array(rounds.length).fill(1);
  const median = weightedMedian(p, weights);
  const dist = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    drawRounds(weights, rng);
    dist[b] = weightedMedian(p, weights);
  }
  dist.sort();
  return {
    median,
    interval: widened(dist, median, level, rounds.length, false),
    rounds: rounds.length,
    n: p.values.length,
  };
}

/** A ratio of two arms' medians, paired by round. */
export interface PairedRatio {
  /** Median of the numerator's samples ÷ median of the denominator's. */
  ratio: number;
  /** Paired cluster-bootstrap interval of the ratio (the same rounds for both arms). */
  interval: Interval;
  /** Per-round ratio of the two arms' block medians, in round order. */
  perRound: number[];
  /** Median of the per-round ratios. */
  medianOfRounds: number;
  /** Between-round coefficient of variation of the per-round ratios. */
  cv: number;
  /** Number of rounds. */
  rounds: number;
}

/**
 * Ratio `numerator ÷ denominator` of two arms measured in the same rounds
 * (round i of one is round i of the other), with a paired cluster-bootstrap
 * interval. Needs two or more rounds, the same count on both sides, positive
 * medians.
 */
export function pairedRatio(
  numerator: readonly ArrayLike<number>[],
  denominator: readonly ArrayLike<number>[],
  options: RoundBootstrapOptions = {},
): PairedRatio {
  checkRounds(numerator, "pairedRatio numerator");
  checkRounds(denominator, "pairedRatio denominator");
  if (numerator.length !== denominator.length) {
    throw new RangeError(
      `pairedRatio needs the same rounds on both sides, got ${numerator.length} and ${denominator.length}`,
    );
  }
  const { resamples, level, rng } = settings(options);
  const pn = pool(numerator);
  const pd = pool(denominator);
  const weights = new Uint32Array(numerator.length).fill(1);
  const dn = weightedMedian(pd, weights);
  if (!(dn > 0) || !(weightedMedian(pn, weights) > 0)) {
    throw new RangeError("pairedRatio needs positive medians");
  }
  const ratio = weightedMedian(pn, weights) / dn;
  const dist = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    drawRounds(weights, rng);
    dist[b] = weightedMedian(pn, weights) / weightedMedian(pd, weights);
  }
  dist.sort();
  const perRound = numerator.map((r, i) => medianOf(r) / medianOf(denominator[i]));
  return {
    ratio,
    interval: widened(dist, ratio, level, numerator.length, true),
    perRound,
    medianOfRounds: quantileSorted(sorted(perRound), 0.5),
    cv: cv(perRound),
    rounds: numerator.length,
  };
}

/** A difference of two arms' medians, paired by round. */
export interface PairedDifference {
  /** Median of the numerator's samples − median of the denominator's. */
  difference: number;
  /** Paired cluster-bootstrap interval of the difference (the same rounds for both arms). */
  interval: Interval;
  /** Number of rounds. */
  rounds: number;
}

/**
 * Difference `minuend − subtrahend` of two arms' medians measured in the same
 * rounds, with a paired cluster-bootstrap interval: the same resampling as
 * {@linkcode pairedRatio}, on the linear scale. Needs two or more rounds and
 * the same count on both sides.
 */
export function pairedDifference(
  minuend: readonly ArrayLike<number>[],
  subtrahend: readonly ArrayLike<number>[],
  options: RoundBootstrapOptions = {},
): PairedDifference {
  checkRounds(minuend, "pairedDifference minuend");
  checkRounds(subtrahend, "pairedDifference subtrahend");
  if (minuend.length !== subtrahend.length) {
    throw new RangeError(
      `pairedDifference needs the same rounds on both sides, got ${minuend.length} and ${subtrahend.length}`,
    );
  }
  const { resamples, level, rng } = settings(options);
  const pa = pool(minuend);
  const pb = pool(subtrahend);
  const weights = new Uint32Array(minuend.length).fill(1);
  const difference = weightedMedian(pa, weights) - weightedMedian(pb, weights);
  const dist = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    drawRounds(weights, rng);
    dist[b] = weightedMedian(pa, weights) - weightedMedian(pb, weights);
  }
  dist.sort();
  return {
    difference,
    interval: widened(dist, difference, level, minuend.length, false),
    rounds: minuend.length,
  };
}

function medianOf(xs: ArrayLike<number>): number {
  return quantileSorted(sorted(xs), 0.5);
}

/** Coefficient of variation (sample stddev ÷ mean) of values; 0 for fewer than two. */
export function cv(values: readonly number[]): number {
  if (values.length < 2) return 0;
  let s = 0;
  for (const v of values) s += v;
  const m = s / values.length;
  let q = 0;
  for (const v of values) q += (v - m) ** 2;
  return m === 0 ? 0 : Math.sqrt(q / (values.length - 1)) / Math.abs(m);
}

/** Median of each round's block. */
export function roundMedians(rounds: readonly ArrayLike<number>[]): number[] {
  checkRounds(rounds, "roundMedians", 1);
  return rounds.map(medianOf);
}

/** Between-round coefficient of variation of an arm: CV of its per-round medians. */
export function betweenRoundCv(rounds: readonly ArrayLike<number>[]): number {
  return cv(roundMedians(rounds));
}

/**
 * Relative drift of an arm over the run: median of its last `share` of rounds
 * ÷ median of its first `share` − 1 (share default 0.25, at least one round each).
 */
export function drift(medians: readonly number[], share = 0.25): number {
  if (medians.length < 2) {
    throw new RangeError(`drift needs at least 2 rounds, got ${medians.length}`);
  }
  if (!(share > 0 && share <= 0.5)) {
    throw new RangeError(`drift share ${share} is outside (0, 0.5]`);
  }
  const k = Math.max(1, Math.floor(medians.length * share));
  const first = medianOf(medians.slice(0, k));
  const last = medianOf(medians.slice(-k));
  return first === 0 ? 0 : last / first - 1;
}

/**
 * Splits samples recorded in round order into rounds of the given sizes
 * (the layout a row keeps in JSON: samples in order, plus per-round counts).
 */
export function splitRounds(samples: ArrayLike<number>, counts: readonly number[]): number[][] {
  let total = 0;
  for (const c of counts) {
    if (!(Number.isInteger(c) && c >= 0)) throw new RangeError(`Round count ${c} is invalid`);
    total += c;
  }
  if (total !== samples.length) {
    throw new RangeError(`Round counts add to ${total}, but there are ${samples.length} samples`);
  }
  const out: number[][] = [];
  let k = 0;
  for (const c of counts) {
    out.push(Array.from({ length: c }, (_, j) => samples[k + j]));
    k += c;
  }
  return out;
}

/** A ratio between the same arm in two independent runs. */
export interface UnpairedRatio {
  /** Median of `b`'s samples ÷ median of `a`'s. */
  ratio: number;
  /** Interval from resampling each run's rounds independently. */
  interval: Interval;
}

/**
 * Ratio `b ÷ a` of one arm's medians in two independent runs (a baseline and a
 * candidate), each run's rounds resampled on their own: the comparison that
 * `lab report A B` makes. Needs two or more rounds on each side.
 */
export function unpairedRatio(
  b: readonly ArrayLike<number>[],
  a: readonly ArrayLike<number>[],
  options: RoundBootstrapOptions = {},
): UnpairedRatio {
  checkRounds(a, "unpairedRatio baseline");
  checkRounds(b, "unpairedRatio candidate");
  const { resamples, level, rng } = settings(options);
  const pa = pool(a);
  const pb = pool(b);
  const wa = new Uint32Array(a.length).fill(1);
  const wb = new Uint32Array(b.length).fill(1);
  const ma = weightedMedian(pa, wa);
  if (!(ma > 0)) throw new RangeError("unpairedRatio needs a positive baseline median");
  const ratio = weightedMedian(pb, wb) / ma;
  const dist = new Float64Array(resamples);
  for (let i = 0; i < resamples; i++) {
    drawRounds(wa, rng);
    drawRounds(wb, rng);
    dist[i] = weightedMedian(pb, wb) / weightedMedian(pa, wa);
  }
  dist.sort();
  // Widened by the smaller side's round count (the conservative choice).
  return { ratio, interval: widened(dist, ratio, level, Math.min(a.length, b.length), true) };
}
