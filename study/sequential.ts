/**
 * The study's sequential decision: a cell (link × flow × UE concurrency) is
 * judged at a few planned looks, when each side (HTTP/3 and the better HTTP/2)
 * has completed at least a look's number of flows, and stops at the first look
 * that decides it; its unspent time goes to the cells still open.
 *
 * At each look each p99 gets a distribution-free order-statistic interval,
 * widened when its side's slow flows come in bursts (a stalled connection
 * holds every flow on it, so a side's tail is worth fewer independent flows:
 * `clusteredQuantileInterval`), and the two combine into an interval of the
 * ratio h3 p99 ÷ h2 p99 (`ratioInterval`). The looks share the error
 * (Bonferroni, unequally): each look before the last holds its interval at
 * `interimLevel` (99.5 %: 0.25 % at each end), and the last holds what they
 * leave of 1 − level at each end (`oneSided`: 3.75 % an end with six looks,
 * a 92.5 % interval), so over all looks of a cell the chance that an upper
 * end misses is at most 1 − level, and so is the chance that a lower end
 * does. Each decision rests on one end (material on the upper, "no" on the
 * lower), and a true change cannot be both zero and past the threshold, so
 * each kind of wrong call stays within 1 − level (split between the ends, as
 * records before `oneSided` were, the last look held 97.5 % and each kind of
 * wrong call half of that). Early looks decide the clear cells; the last,
 * where the cells whose slow flows come in bursts are decided, gets the
 * widest share (an equal split gave it 99.2 % and left those cells needing
 * about 1.4 times the flows).
 * Hence:
 * - **material**: HTTP/3's p99 is at least `minReduction` lower and the
 *   ratio's interval lies wholly below 1. With equal p99s this needs an
 *   interval to miss, so a cell is wrongly called material with probability at
 *   most 1 − level (5 %), however many looks it takes.
 * - **not material**: even the ratio interval's lower end gives HTTP/3 a
 *   reduction below `minReduction` (a true material advantage is called so at
 *   most 1 − level); or, at the last look, the look has the power: its
 *   interval is narrow enough that a p99 `powerReduction` lower (30 %) would
 *   have been called material with chance `power` (80 %) or more, and it was
 *   not. A true 30 % reduction
 *   is then called "not material" at most 1 − power of the time (the classic
 *   β). Without the second way a cell whose true change sits near the
 *   threshold (an 18 % lower p99 with an interval of 8 to 32 %) stays open
 *   however many flows it gets.
 * - **undecided** otherwise, with an estimate of the flows per side that would
 *   decide it if the p99s and their burstiness stayed where they are.
 * No look is taken before each side has enough flows for both ends of its
 * interval (a p99's upper end needs a flow above it).
 */
import { errorFunction, probit } from "simple-statistics";
import type { Interval } from "../bench/stats/mod.ts";
import { quantileSorted } from "../lib/median.ts";
import {
  clusteredQuantileInterval,
  minSamplesForQuantile,
  pooledTailDesignEffect,
} from "./quantile_interval.ts";

/** When and how strictly cells are judged. */
export interface SequentialDesign {
  /** Completed flows per side at which a cell is judged, ascending; the last is the most a cell takes. */
  looks: readonly number[];
  /** Chance that all intervals of all looks of a cell hold together (0.95). */
  level: number;
  /**
   * Level of each look's interval before the last (0.995); the last look's
   * holds what they leave of 1 − level (see {@link lookLevel}). Omitted: every
   * look holds 1 − (1 − level) / looks.
   */
  interimLevel?: number;
  /**
   * The levels above are each end's: a look's interval misses above with at
   * most half its share of the error, below with at most the other half —
   * unless `oneSided`, when each end holds the whole share (the interval is
   * two-sided at 1 − 2 × share). Each decision rests on one end only
   * (material on the upper, "not material" on the lower), and a cell's true
   * change cannot be both at or past the threshold and at zero, so each kind
   * of wrong decision still happens in at most 1 − level of runs.
   */
  oneSided?: boolean;
  /** Smallest relative p99 reduction that counts (0.2 = 20 %). */
  minReduction: number;
  /**
   * Flows per cluster when the flows of a side are not independent (slow flows
   * come in bursts): each p99 interval is widened by the burstiness of its side's
   * tail ({@link clusteredQuantileInterval}). Omitted: flows taken as independent.
   */
  clusterFlows?: number;
  /**
   * A look whose interval would catch a p99 this much lower (0.3 = 30 %) as
   * material with chance {@link power} has the power to call a cell that is
   * not material "not material". Omitted: only the interval's best end does.
   */
  powerReduction?: number;
  /** Chance a powered look calls a true {@link powerReduction} material (0.8). */
  power?: number;
  /**
   * Flows per side from which a look may decide by the power (see
   * {@link hasPower}); a design extended past it keeps looking, by the power
   * too, at its later looks. Omitted, or past the last look: the last look only.
   */
  powerFrom?: number;
  /**
   * A cell whose time or flows ran out between two looks takes the next look
   * on the flows it has (see {@link judgeSequential}). Omitted: the flows past
   * the last look reached are not judged.
   */
  endLook?: boolean;
}

/**
 * The default design: four looks, each twice the last, the first at the
 * fewest flows that bound a p99 from above at the per-look level, the last at
 * 4,800 flows per side: HTTP/2's p99 over a lossy link rests on stall
 * episodes of 5 to 20 flows, and on the study's runs 4,800 flows per side
 * decided 9 of its 11 valid `wan` and `lossy` cells where 2,400 decided 7 or 8
 * of 20. The power decides from 4,800 flows on: a longer study (more looks,
 * `flowsDesign`) still lets a cell near the threshold end there, and takes
 * the cells whose slow flows come in long bursts on to later looks.
 */
export const DEFAULT_DESIGN: SequentialDesign = {
  looks: [600, 1200, 2400, 4800],
  level: 0.95,
  interimLevel: 0.995,
  oneSided: true,
  minReduction: 0.2,
  clusterFlows: 50,
  powerReduction: 0.3,
  power: 0.8,
  powerFrom: 4800,
  endLook: true,
};

/**
 * How many times a journey cell's flows a warm-GET cell takes at each look.
 * A warm GET is one request where a journey step is one of 19, so its flows
 * cost a twentieth of the time; and its tail is burstier: at 64 UEs one lost
 * segment holds every GET on the connection, so the study's warm-GET cells
 * on `wan` were worth 1 independent flow in 30 to 50, where journey cells were
 * worth 1 in 2 to 15, and on `lossy` at 256 UEs HTTP/2's warm-GET tail rests
 * on a few connection-wide stalls: four 60-minute runs left that cell open at
 * four times the journey's looks (76,800 flows per side) in three.
 */
export const WARM_GET_LOOK_FACTOR = 8;

/**
 * How many times a journey cell's flows the study plans a warm-GET cell's
 * time for: half its last look. Most warm-GET cells decide by then; one still
 * open takes its last look with the time the cells after it leave (the last
 * cell of a link: what its link has left), so planning for it would take that
 * time from the journey cells before it, which need it more.
 */
export const WARM_GET_PLAN_FACTOR = WARM_GET_LOOK_FACTOR / 2;

/** The factor of a stream's looks over the design's (1 but for the warm GET). */
export function streamLookFactor(stream: string): number {
  return stream === "warm-get" ? WARM_GET_LOOK_FACTOR : 1;
}

/** The factor of a stream's planned flows over the design's last look (1 but for the warm GET). */
export function streamPlanFactor(stream: string): number {
  return stream === "warm-get" ? WARM_GET_PLAN_FACTOR : 1;
}

/** A design with its looks (and the power's first look) taken `factor` times. */
export function scaledDesign(design: SequentialDesign, factor: number): SequentialDesign {
  if (factor === 1) return design;
  return {
    ...design,
    looks: design.looks.map((l) => l * factor),
    ...(design.powerFrom !== undefined ? { powerFrom: design.powerFrom * factor } : {}),
  };
}

/** The design `--quick` judges with: one look, at the fewest flows a single look needs. */
export const QUICK_DESIGN: SequentialDesign = { ...DEFAULT_DESIGN, looks: [450] };

/**
 * The looks of a design taken to `maxFlows` flows per side: the design's own
 * looks up to it, then the last one doubled while it fits (a longer run keeps
 * judging its open cells instead of stopping at the default's last look).
 */
export function extendedLooks(looks: readonly number[], maxFlows: number): number[] {
  const out = looks.filter((l) => l <= maxFlows);
  if (out.length === 0) return [looks[0]];
  while (out.at(-1)! * 2 <= maxFlows) out.push(out.at(-1)! * 2);
  return out;
}

/** The design a run judges with: the default (or quick) looks, taken to the run's flow count. */
export function flowsDesign(config: { quick?: boolean }, samples?: number): SequentialDesign {
  const base = config.quick ? QUICK_DESIGN : DEFAULT_DESIGN;
  if (samples === undefined) return base;
  return { ...base, looks: extendedLooks(base.looks, samples) };
}

/** What {@link lookLevel} reads of a design. */
export type LookLevels = Pick<SequentialDesign, "looks" | "level" | "interimLevel" | "oneSided">;

/**
 * Level of look `index`'s interval of the p99 ratio (and of each side's p99
 * interval it is built from); default the last look: 1 − 2 × its error at
 * one end ({@link lookEndError}). With `interimLevel` each look before the
 * last holds it and the last the rest of the error; without it the looks
 * share the error equally.
 */
export function lookLevel(design: LookLevels, index = design.looks.length - 1): number {
  return 1 - 2 * lookEndError(design, index);
}

/**
 * The chance that look `index`'s interval misses at one given end. Split
 * between the ends, it is half the look's share of 1 − level; `oneSided`, the
 * looks before the last keep their interim level's half and the last holds
 * the rest of 1 − level at each end.
 */
function lookEndError(design: LookLevels, index = design.looks.length - 1): number {
  const k = Math.max(1, design.looks.length);
  const ends = design.oneSided ? 1 : 2;
  if (design.interimLevel === undefined) return (1 - design.level) / k / ends;
  if (index < k - 1) return (1 - design.interimLevel) / 2;
  return (1 - design.level) / ends - (k - 1) * (1 - design.interimLevel) / 2;
}

/** The two-sided normal quantile z of look `index`'s level (default the last look). */
function lookZ(design: LookLevels, index?: number): number {
  return probit(1 - lookEndError(design, index));
}

/**
 * Fewest flows per side on which look `index` (default the last, the most
 * lenient) can decide: a p99's upper end needs a flow above it.
 */
export function fewestFlowsToDecide(design: LookLevels, index?: number): number {
  return minSamplesForQuantile(0.99, lookLevel(design, index));
}

/**
 * Checks a design: looks ascending, each at or above the fewest flows its
 * level allows, and (with `interimLevel`) the earlier looks leaving the last
 * at least an interim look's error at each end (at 99.5 %, 0.25 % an end: at
 * most twenty looks in 5 % an end, ten when the ends split the 5 %).
 */
export function checkDesign(design: SequentialDesign): void {
  if (design.looks.length === 0) throw new RangeError("A design needs at least one look");
  if (
    design.interimLevel !== undefined &&
    !(lookLevel(design) <= design.interimLevel && design.interimLevel < 1)
  ) {
    throw new RangeError(
      `${design.looks.length} looks at ${design.interimLevel} leave the last look less error ` +
        `than each of them (1 − ${design.level} in all)`,
    );
  }
  design.looks.forEach((n, i) => {
    const min = fewestFlowsToDecide(design, i);
    if (!(Number.isInteger(n) && n >= min && (i === 0 || n > design.looks[i - 1]))) {
      throw new RangeError(
        `Looks must be ascending whole numbers, look ${
          i + 1
        } at least ${min} flows, got ${design.looks}`,
      );
    }
  });
}

/** A look's outcome. */
export type LookStatus = "material" | "not-material" | "undecided";

/** The figures of one look. */
export interface LookFigures {
  /** HTTP/3's p99 and its interval at the look's level. */
  h3P99: number;
  h3Ci: Interval;
  /** The better HTTP/2's p99 and its interval. */
  h2P99: number;
  h2Ci: Interval;
  /** Completed flows behind the smaller side. */
  n: number;
  /** How many times fewer independent flows the sides' bursts make them worth (1: none). */
  designEffect?: number;
  /** Share of flows each side lost (0…1). Default 0. */
  h3FailShare?: number;
  h2FailShare?: number;
}

/** What a look decided. */
export interface LookDecision {
  status: LookStatus;
  /** 1 − h3 p99 ÷ h2 p99. */
  reduction: number;
  /** Interval of the reduction from the intervals' ends (−∞…1). */
  reductionCi: { lower: number; upper: number };
  /** Why, in words. */
  reason: string;
  /** For an undecided cell: about how many flows per side would decide it (Infinity: none). */
  flowsToDecide?: number;
  /** For a decided cell: about how often a repeat would give the other label ({@link repeatFlipChance}). */
  flipChance?: number;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
/**
 * An end of the interval of HTTP/3's p99 change, given as a reduction (r is a
 * change of −r), signed: "−21.7 %", "+0.4 %"; an unbounded end is "+∞".
 */
export function changeEnd(reduction: number): string {
  if (reduction === -Infinity) return "+∞";
  const x = -reduction * 100;
  return `${x < 0 ? "−" : "+"}${Math.abs(x).toFixed(1)} %`;
}

/**
 * Where a look's interval of the reduction puts it, or that it has no upper
 * bound yet: then, when the flows came in bursts, how many independent flows
 * they were worth against the fewest a look needs.
 */
function reductionRange(
  ci: { lower: number; upper: number },
  f: Pick<LookFigures, "n" | "designEffect">,
  design: SequentialDesign,
  index?: number,
): string {
  // Spoken as the change of HTTP/3's p99, as the report's interval column.
  if (ci.lower > -9.99) {
    return `the change between ${changeEnd(ci.upper)} and ${changeEnd(ci.lower)}`;
  }
  const effect = f.designEffect ?? 1;
  if (!(effect > 1.05)) return "its interval still unbounded (too few independent flows)";
  const worth = Math.max(1, Math.round(f.n / effect));
  return `its interval still unbounded: slow flows came in bursts, so ${f.n} flows per side ` +
    `were worth about ${worth} independent ones (a p99 needs ${
      fewestFlowsToDecide(design, index)
    })`;
}

/**
 * Decides look `index` (default the last) from its intervals, which are at
 * that look's level (see the module's doc for the rule).
 */
export function decideLook(
  f: LookFigures,
  design: SequentialDesign = DEFAULT_DESIGN,
  index?: number,
): LookDecision {
  const d = decideByRule(f, design, index);
  const flip = repeatFlipChance(f, d.status, design, index);
  return flip === undefined ? d : { ...d, flipChance: flip };
}

function decideByRule(f: LookFigures, design: SequentialDesign, index?: number): LookDecision {
  const reduction = 1 - f.h3P99 / f.h2P99;
  const ratio = ratioInterval(f);
  const reductionCi = { lower: 1 - ratio.upper, upper: 1 - ratio.lower };
  const min = fewestFlowsToDecide(design, index);
  const flowsToDecide = () => flowsThatWouldDecide(f, design, index);
  if (f.n < min) {
    return {
      status: "undecided",
      reduction,
      reductionCi,
      reason: `${f.n} flows per side; a look needs at least ${min}`,
      flowsToDecide: Math.max(design.looks.find((l) => l >= min) ?? min, flowsToDecide()),
    };
  }
  const lostMore = (f.h3FailShare ?? 0) > (f.h2FailShare ?? 0);
  if (reductionCi.upper < design.minReduction) {
    return {
      status: "not-material",
      reduction,
      reductionCi,
      reason: reduction >= 0
        ? `p99 ${pct(reduction)} lower, at most ${pct(reductionCi.upper)}`
        : `p99 ${pct(-reduction)} higher`,
    };
  }
  if (reduction >= design.minReduction - 1e-12 && ratio.upper < 1) {
    if (lostMore) {
      return {
        status: "not-material",
        reduction,
        reductionCi,
        reason: `p99 ${pct(reduction)} lower but HTTP/3 lost more flows (${
          pct(f.h3FailShare!)
        } vs ${pct(f.h2FailShare ?? 0)})`,
      };
    }
    return {
      status: "material",
      reduction,
      reductionCi,
      reason: `p99 ${pct(reduction)} lower, at least ${pct(Math.max(0, reductionCi.lower))}`,
    };
  }
  if (hasPower(f, design, index)) {
    return {
      status: "not-material",
      reduction,
      reductionCi,
      reason: `p99 ${reduction >= 0 ? `${pct(reduction)} lower` : `${pct(-reduction)} higher`}, ` +
        `${reductionRange(reductionCi, f, design, index)}; ` +
        `a ${Math.round(design.powerReduction! * 100)} % lower p99 would have shown as material ` +
        `with at least ${Math.round(design.power! * 100)} % chance`,
    };
  }
  const more = flowsToDecide();
  return {
    status: "undecided",
    reduction,
    reductionCi,
    reason: `p99 ${reduction >= 0 ? `${pct(reduction)} lower` : `${pct(-reduction)} higher`}, ` +
      `${reductionRange(reductionCi, f, design, index)}`,
    flowsToDecide: more,
  };
}

/**
 * About how often a repeat of a decided look (the same cell, as many flows)
 * would give the other label: the repeat's estimate of the log ratio is taken
 * as normal around this one's with twice its variance (both are estimates; the
 * spread is the interval's half on the threshold's side ÷ z at the look's
 * level), and the label turns when that estimate falls on the other side of
 * `minReduction`. Near the threshold the label rests on which side the
 * estimate fell, so two runs disagree there about as often as they agree: on
 * two default runs the six cells whose labels differed all sat within a few
 * points of 20 %. Undefined for a look that is undecided, or "not material"
 * with the estimate past the threshold (HTTP/3 lost more flows).
 */
export function repeatFlipChance(
  f: LookFigures,
  status: LookStatus,
  design: SequentialDesign,
  index?: number,
): number | undefined {
  if (status === "undecided" || !(f.h3P99 > 0 && f.h2P99 > 0)) return undefined;
  const r = Math.log(f.h3P99 / f.h2P99), floor = Math.log(1 - design.minReduction);
  const past = r <= floor + 1e-12;
  if ((status === "material") !== past) return undefined;
  const ratio = ratioInterval(f);
  const half = past ? Math.log(ratio.upper) - r : r - Math.log(ratio.lower);
  if (!Number.isFinite(half)) return 0.5;
  const sd = (half / lookZ(design, index)) * Math.SQRT2;
  if (!(sd > 0)) return 0;
  return 1 - normalCdf(Math.abs(r - floor) / sd);
}

/**
 * Chance of the other label on a repeat from which a decision is marked as at
 * the threshold. Seeded trials (the tests) find the estimate high below 20 %
 * (decisions put at 10 to 20 % differed from a repeat in 5 to 7 % of pairs)
 * and about right above (20 to 30 %: 16 to 23 %).
 */
export const THRESHOLD_FLIP_CHANCE = 0.2;

/** The standard normal distribution function. */
function normalCdf(x: number): number {
  return 0.5 * (1 + errorFunction(x / Math.SQRT2));
}

/**
 * The widest upper half of a look's log-ratio interval that still calls a
 * true p99 `powerReduction` lower material with chance `power`: the estimate
 * of the log ratio is taken as normal with the spread its interval's upper
 * half implies (half ÷ z at the look's level), and material needs it below
 * both −half (the interval under 1) and log(1 − minReduction). Undefined when
 * the design asks for no power.
 */
export function widestPoweredHalf(design: SequentialDesign, index?: number): number | undefined {
  if (design.powerReduction === undefined || design.power === undefined) return undefined;
  const z = lookZ(design, index), zp = probit(design.power);
  const truth = -Math.log(1 - design.powerReduction);
  const floor = -Math.log(1 - design.minReduction);
  // P(estimate < −max(half, floor)) = Φ((truth − max(half, floor)) · z / half) ≥ power.
  const fits = (half: number) => (truth - Math.max(half, floor)) * z / half >= zp;
  let lo = 0, hi = truth;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Flows per side from which a look may decide by the power. */
export function powerFromFlows(design: Pick<SequentialDesign, "looks" | "powerFrom">): number {
  return Math.min(design.powerFrom ?? Infinity, design.looks.at(-1)!);
}

/**
 * Whether a look has the power (see {@link widestPoweredHalf}): it comes at
 * or after the design's `powerFrom` look (default the last), and its interval
 * is narrow enough. Not earlier: an early look may not yet have seen the
 * stall episodes that make HTTP/2's tail (on a lossy run, one HTTP/2 side's
 * p99 rose from 280 to 331 ms between 1,200 and 2,400 flows), and a "no"
 * stops the cell for good. A true `powerReduction` is called "no" by a
 * powered look at most 1 − `power` of the time; a cell left open at the
 * first powered look was not material there either, so a later one adds
 * little to it (the design's trials measure it).
 */
export function hasPower(f: LookFigures, design: SequentialDesign, index?: number): boolean {
  const widest = widestPoweredHalf(design, index);
  if (widest === undefined || !(f.h3P99 > 0 && f.h2P99 > 0)) return false;
  if (f.n < powerFromFlows(design)) return false;
  const half = Math.log(ratioInterval(f).upper / (f.h3P99 / f.h2P99));
  return Number.isFinite(half) && half <= widest;
}

/**
 * Interval of the ratio h3 p99 ÷ h2 p99 at the look's level, from each side's
 * interval at that level by the method of variance estimates recovery
 * (MOVER, Zou & Donner 2008) on the log scale: each end of the ratio combines
 * the distances of the two sides' matching ends from their p99s in
 * quadrature, so the asymmetry of a p99's interval (its upper end is the far
 * one) carries over. An end a side cannot bound leaves the ratio unbounded
 * on that side.
 */
export function ratioInterval(f: LookFigures): { lower: number; upper: number } {
  const down = (p: number, ci: Interval) => (ci.lower > 0 ? Math.log(p / ci.lower) : Infinity);
  const up = (p: number, ci: Interval) =>
    Number.isFinite(ci.upper) ? Math.log(ci.upper / p) : Infinity;
  const r = Math.log(f.h3P99 / f.h2P99);
  const lo = r - Math.hypot(down(f.h3P99, f.h3Ci), up(f.h2P99, f.h2Ci));
  const hi = r + Math.hypot(up(f.h3P99, f.h3Ci), down(f.h2P99, f.h2Ci));
  return { lower: Math.exp(lo), upper: Math.exp(hi) };
}

/**
 * About how many flows per side would decide the cell if both p99s and their
 * burstiness stayed where they are: the ratio interval's width on the log
 * scale shrinks as 1/√n, and a later look's level (the last's, where open
 * cells end) scales it by its z over look `index`'s (default the last).
 */
export function flowsThatWouldDecide(
  f: LookFigures,
  design: SequentialDesign,
  index?: number,
): number {
  const min = fewestFlowsToDecide(design);
  if (!(f.h3P99 > 0 && f.h2P99 > 0)) return Infinity;
  const r = Math.log(f.h3P99 / f.h2P99);
  const ratio = ratioInterval(f);
  const scale = lookZ(design) / lookZ(design, index);
  const above = (Math.log(ratio.upper) - r) * scale, below = (r - Math.log(ratio.lower)) * scale;
  if (!(Number.isFinite(above) && Number.isFinite(below))) {
    // A side worth too few independent flows to bound its p99: at least enough flows for that.
    const atLeast = Math.ceil(min * (f.designEffect ?? 1));
    if (atLeast <= f.n || atLeast > 10 * (design.looks.at(-1) ?? min)) return Infinity;
    return design.looks.find((l) => l >= atLeast) ?? atLeast;
  }
  const floor = Math.log(1 - design.minReduction);
  // Material once the upper end falls below 1 (with the p99 at least minReduction lower);
  // not material once the lower end rises above 1 − minReduction.
  const s = r <= floor + 1e-12 ? -r / above : (r - floor) / below;
  let need = s > 0 ? Math.max(min, Math.ceil(Math.max(f.n, 1) / (s * s))) : Infinity;
  // Or the flows at which the interval's upper half narrows to the powered width (judged from
  // the design's powerFrom look on).
  const widest = widestPoweredHalf(design);
  if (widest !== undefined) {
    const powered = Math.ceil(Math.max(f.n, 1) * (above / widest) ** 2);
    need = Math.min(need, Math.max(min, powerFromFlows(design), powered));
  }
  if (!Number.isFinite(need)) return Infinity;
  // Near the threshold the estimate runs off to millions: past ten times the last look no run
  // within reach decides it, and a figure would only mislead.
  if (need > 10 * (design.looks.at(-1) ?? min)) return Infinity;
  // Cells are judged at looks only: the first look with at least that many flows, past those
  // the cell has (scaled to the last look's level, an interim look's interval can ask for fewer).
  return design.looks.find((l) => l >= need && l > f.n) ?? Math.max(need, f.n + 1);
}

/**
 * Look `options.index` (default the last) on raw flow times (ns or ms, any
 * order): p99s, intervals at that look's level, and the decision.
 */
export function lookAt(
  h3: ArrayLike<number>,
  h2: ArrayLike<number>,
  options: {
    design?: SequentialDesign;
    index?: number;
    h3FailShare?: number;
    h2FailShare?: number;
  } = {},
): LookDecision & LookFigures {
  const design = options.design ?? DEFAULT_DESIGN;
  const side = lookLevel(design, options.index);
  const a = Float64Array.from(h3).sort(), b = Float64Array.from(h2).sort();
  // Bursts of slow flows widen both intervals alike, by one design effect measured on both
  // sides' flows in completion order: with equal p99s both sides come from one law, and a side
  // that saw no burst this time is not thereby free of them. Pooled, the estimate rests on the
  // clusters of both sides (the larger of two noisy estimates would overstate the bursts).
  const effect = design.clusterFlows
    ? pooledTailDesignEffect([h3, h2], 0.99, design.clusterFlows).effect
    : 1;
  const ia = clusteredQuantileInterval(a, 0.99, side, effect);
  const ib = clusteredQuantileInterval(b, 0.99, side, effect);
  const f: LookFigures = {
    h3P99: quantileSorted(a, 0.99),
    h3Ci: { lower: ia.lower, upper: ia.upper, level: side },
    h2P99: quantileSorted(b, 0.99),
    h2Ci: { lower: ib.lower, upper: ib.upper, level: side },
    n: Math.min(a.length, b.length),
    designEffect: effect,
    h3FailShare: options.h3FailShare,
    h2FailShare: options.h2FailShare,
  };
  return { ...f, ...decideLook(f, design, options.index) };
}

/** The next look at or above `n` flows per side, or undefined past the last. */
export function nextLook(design: SequentialDesign, n: number): number | undefined {
  return design.looks.find((l) => l > n);
}

/** One HTTP/2 variant's flow times for {@link judgeSequential}. */
export interface H2Side {
  transport: string;
  /** Completed flow times in completion order. */
  samples: ArrayLike<number>;
  /** Share of its flows lost (0…1). Default 0. */
  failShare?: number;
}

/** A cell's sequential judgement. */
export interface SequentialJudgement extends LookDecision, LookFigures {
  /** The HTTP/2 variant compared with (the lower p99 at the deciding or last look). */
  bestH2: string;
  /** Flows per side at the look that decided (undefined: undecided). */
  decidedAt?: number;
  /** Looks taken. */
  looksTaken: number;
}

/**
 * Judges a cell from its flow times in completion order: look L uses each
 * side's first L flows, the better HTTP/2 is the variant with the lower p99
 * there, and the first look that decides is the decision. With `ended` (the
 * cell's time or flows ran out, a stop that does not depend on its flow
 * times), a look the design still has in hand is taken on all the flows
 * there are: the design's count of looks and each look's level stay, so
 * the Bonferroni bound holds, and a budget that ends a few flows short of a
 * look does not throw the look away. An undecided cell is described on all
 * its flows (with the flows that would decide it). A pure function of the
 * samples, so the run and its report agree.
 */
export function judgeSequential(
  h3: ArrayLike<number>,
  h2: H2Side[],
  options: { design?: SequentialDesign; h3FailShare?: number; ended?: boolean } = {},
): SequentialJudgement | undefined {
  const design = options.design ?? DEFAULT_DESIGN;
  if (h2.length === 0 || h3.length === 0 || h2.some((s) => s.samples.length === 0)) {
    return undefined;
  }
  const slice = (x: ArrayLike<number>, n: number) =>
    Array.prototype.slice.call(x, 0, n) as number[];
  const best = (n: number) => {
    let pick = h2[0], p = Infinity;
    for (const s of h2) {
      const q = quantileSorted(Float64Array.from(slice(s.samples, n)).sort(), 0.99);
      if (q < p) [pick, p] = [s, q];
    }
    return pick;
  };
  let taken = 0;
  for (const look of design.looks) {
    if (h3.length < look || h2.some((s) => s.samples.length < look)) break;
    taken++;
    const b = best(look);
    const d = lookAt(slice(h3, look), slice(b.samples, look), {
      design,
      index: taken - 1,
      h3FailShare: options.h3FailShare,
      h2FailShare: b.failShare,
    });
    if (d.status !== "undecided") {
      return { ...d, bestH2: b.transport, decidedAt: look, looksTaken: taken };
    }
  }
  const n = Math.min(h3.length, ...h2.map((s) => s.samples.length));
  const b = best(n);
  // All the flows, at the level of the look in hand (the last, once every look is taken).
  const d = lookAt(slice(h3, n), slice(b.samples, n), {
    design,
    index: Math.min(taken, design.looks.length - 1),
    h3FailShare: options.h3FailShare,
    h2FailShare: b.failShare,
  });
  if (d.status === "undecided") return { ...d, bestH2: b.transport, looksTaken: taken };
  // The cell has ended with a look in hand: all its flows are that look.
  if (options.ended && design.endLook && taken < design.looks.length) {
    return { ...d, bestH2: b.transport, decidedAt: n, looksTaken: taken + 1 };
  }
  // All flows would decide, but they are not a planned look: the next look would take it.
  const next = nextLook(design, n);
  const { flipChance: _, ...figures } = d;
  return {
    ...figures,
    status: "undecided",
    reason: `${d.reason} on ${n} flows, short of the next look`,
    flowsToDecide: next ?? Infinity,
    bestH2: b.transport,
    looksTaken: taken,
  };
}
