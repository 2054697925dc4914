/**
 * The study's rule: its parameters and default, the sequential design it
 * states, when a cell's measurement holds (no process on the path saturated,
 * the arrivals on schedule), and the rule in words.
 */
import type { Interval } from "../bench/stats/mod.ts";
import {
  DEFAULT_DESIGN,
  fewestFlowsToDecide,
  lookLevel,
  powerFromFlows,
  scaledDesign,
  type SequentialDesign,
  WARM_GET_LOOK_FACTOR,
} from "./sequential.ts";

/** Parameters of the rule. */
export interface VerdictRule {
  /** Smallest relative p99 reduction that counts (0.2 = 20 %). */
  minReduction: number;
  /**
   * Confidence level that holds over all looks of a cell: each look's interval
   * of the p99 ratio (and each side's p99 interval it is built from) is taken
   * at 1 − (1 − level) / looks.
   */
  level: number;
  /** Bootstrap resamples (kept for records written before order-statistic intervals). */
  resamples: number;
  /** Fewest completed flows per side: below it a p99's interval has no upper end. */
  minSamples: number;
  /** A process whose busiest thread ran at least this share of one core saturated the cell. */
  maxCoreShare?: number;
  /** Fewest arrivals, as a share, that must start within `onTimeMs` of their due time. */
  minOnTimeShare?: number;
  /** Lateness (ms) of an arrival's start behind its due time that still counts as on time. */
  onTimeMs?: number;
  /**
   * Flows per side at which a cell is judged (the sequential design's looks);
   * `level` holds over all of them. Records without it had one look at `minSamples`.
   */
  looks?: number[];
  /**
   * Level of each look's interval before the last (the design's
   * `interimLevel`); the last holds the rest of 1 − `level`. Records without
   * it split the error equally between the looks.
   */
  interimLevel?: number;
  /**
   * Each end of a look's interval holds the look's whole share of the error
   * (the design's `oneSided`); records without it split it between the ends.
   */
  oneSided?: boolean;
  /**
   * Flows per cluster by which each side's burstiness is measured (the
   * design's `clusterFlows`); records without it took flows as independent.
   */
  clusterFlows?: number;
  /**
   * A look that would call a p99 this much lower material with chance `power`
   * decides a cell that is not material (the design's `powerReduction`);
   * records without it decided "not material" by the interval's best end only.
   */
  powerReduction?: number;
  /** Chance a powered look calls a true `powerReduction` material. */
  power?: number;
  /**
   * A cell whose time ran out between two looks takes the next look on the
   * flows it has (the design's `endLook`); records without it did not.
   */
  endLook?: boolean;
  /**
   * Flows per side from which a look may decide by the power (the design's
   * `powerFrom`); records without it did so at the last look only.
   */
  powerFrom?: number;
  /**
   * Streams judged at a multiple of the journey's looks (the warm GET, whose
   * flows are cheap and whose tail is burstier); records without it judged
   * every stream at the same looks.
   */
  lookFactors?: Record<string, number>;
}

/** The rule the study states. */
export const DEFAULT_RULE: VerdictRule = {
  minReduction: DEFAULT_DESIGN.minReduction,
  level: DEFAULT_DESIGN.level,
  resamples: 1000,
  minSamples: fewestFlowsToDecide(DEFAULT_DESIGN),
  maxCoreShare: 0.9,
  minOnTimeShare: 0.95,
  onTimeMs: 2,
  looks: [...DEFAULT_DESIGN.looks],
  interimLevel: DEFAULT_DESIGN.interimLevel,
  oneSided: DEFAULT_DESIGN.oneSided,
  clusterFlows: DEFAULT_DESIGN.clusterFlows,
  powerReduction: DEFAULT_DESIGN.powerReduction,
  power: DEFAULT_DESIGN.power,
  endLook: DEFAULT_DESIGN.endLook,
  powerFrom: DEFAULT_DESIGN.powerFrom,
  lookFactors: { "warm-get": WARM_GET_LOOK_FACTOR },
};

/** The sequential design a rule states, for a stream's cells (its looks scaled by its factor). */
export function ruleDesign(rule: VerdictRule, stream?: string): SequentialDesign {
  const design: SequentialDesign = {
    looks: rule.looks ?? [rule.minSamples],
    level: rule.level,
    minReduction: rule.minReduction,
    ...(rule.interimLevel !== undefined ? { interimLevel: rule.interimLevel } : {}),
    ...(rule.oneSided ? { oneSided: true } : {}),
    ...(rule.clusterFlows ? { clusterFlows: rule.clusterFlows } : {}),
    ...(rule.powerReduction && rule.power
      ? { powerReduction: rule.powerReduction, power: rule.power }
      : {}),
    ...(rule.endLook ? { endLook: true } : {}),
    ...(rule.powerFrom ? { powerFrom: rule.powerFrom } : {}),
  };
  return scaledDesign(design, (stream && rule.lookFactors?.[stream]) || 1);
}

/** The rule's validity thresholds with their defaults (records may predate them). */
export function validityThresholds(rule: VerdictRule = DEFAULT_RULE) {
  return {
    maxCoreShare: rule.maxCoreShare ?? DEFAULT_RULE.maxCoreShare!,
    minOnTimeShare: rule.minOnTimeShare ?? DEFAULT_RULE.minOnTimeShare!,
    onTimeMs: rule.onTimeMs ?? DEFAULT_RULE.onTimeMs!,
  };
}

/** One transport's figures in a cell. */
export interface CellTransport {
  transport: string;
  p50: number;
  p99: number;
  /** Completed flows. */
  n: number;
  /** Failed flows. */
  failed: number;
  /** Retried requests. */
  retries: number;
  /** Order-statistic interval of the p99 at the rule's per-side level (∓Infinity: unbounded). */
  p99Ci?: Interval;
  /**
   * Busiest thread's share of one core per process on the path over its
   * blocks, when measured; `others`: cores busy outside those processes.
   */
  cores?: Record<string, number>;
  /** Share of arrivals that started within the rule's on-time window, when measured. */
  onTimeShare?: number;
}

/** The processes a flow row's `extra` may name (`cpu:<process>`), in report order. */
export const PATH_PROCESSES = ["client", "server", "relay"] as const;

/** One reason a transport's measurement in a cell does not hold. */
export interface Invalidity {
  /** The saturated process, or `schedule` when the arrivals slipped. */
  cause: (typeof PATH_PROCESSES)[number] | "schedule";
  /** How bad: the core share, or the share of arrivals that were late. */
  severity: number;
  /** In words, without the transport. */
  text: string;
}

/** Why one transport's measurement does not hold (empty when it holds or was not measured). */
export function invalidity(t: CellTransport, rule: VerdictRule = DEFAULT_RULE): Invalidity[] {
  const th = validityThresholds(rule);
  const out: Invalidity[] = [];
  for (const p of PATH_PROCESSES) {
    const share = t.cores?.[p];
    if (share !== undefined && share >= th.maxCoreShare) {
      out.push({ cause: p, severity: share, text: `${p} at ${share.toFixed(2)} of a core` });
    }
  }
  if (t.onTimeShare !== undefined && t.onTimeShare < th.minOnTimeShare) {
    out.push({
      cause: "schedule",
      severity: 1 - t.onTimeShare,
      text: `schedule slipped: ${
        (t.onTimeShare * 100).toFixed(1)
      } % of arrivals within ${th.onTimeMs} ms`,
    });
  }
  return out;
}

/**
 * A cell's reason for not being valid, or undefined when it is valid: each
 * cause once, in the words of the transport where it was worst, naming the
 * others it also hit ("server at 0.97 of a core (h3; also h2c)").
 */
export function cellInvalidity(
  transports: CellTransport[],
  rule: VerdictRule = DEFAULT_RULE,
): string | undefined {
  const byCause = new Map<string, { worst: Invalidity; transport: string; others: string[] }>();
  for (const t of transports) {
    for (const w of invalidity(t, rule)) {
      const seen = byCause.get(w.cause);
      if (!seen) byCause.set(w.cause, { worst: w, transport: t.transport, others: [] });
      else if (w.severity > seen.worst.severity) {
        seen.others.push(seen.transport);
        seen.worst = w;
        seen.transport = t.transport;
      } else seen.others.push(t.transport);
    }
  }
  if (byCause.size === 0) return undefined;
  const parts = [...byCause.values()].map((c) =>
    `${c.worst.text} (${c.transport}${c.others.length ? `; also ${c.others.join(", ")}` : ""})`
  );
  const others = Math.max(0, ...transports.map((t) => t.cores?.others ?? 0));
  const busy = others >= 0.5 ? ` while other processes used ${others.toFixed(2)} of a core` : "";
  return `not valid: ${parts.join("; ")}${busy}`;
}

/** The rule in words, for reports. */
export function ruleText(rule: VerdictRule = DEFAULT_RULE): string {
  const th = validityThresholds(rule);
  const design = ruleDesign(rule);
  const looks = design.looks;
  const pctOf = (level: number) => `${(level * 100).toFixed(2).replace(/\.?0+$/, "")} %`;
  // One level for every look, or the earlier looks' and the last's.
  const side = design.interimLevel !== undefined && looks.length > 1
    ? `${pctOf(lookLevel(design, 0))} (${pctOf(lookLevel(design))} at the last look)`
    : pctOf(lookLevel(design));
  return `A cell (link × flow × UE concurrency) is valid when, over each transport's blocks, no ` +
    `process on the path (client, server, link relay) had a thread busy ${th.maxCoreShare} of a ` +
    `core or more, and at least ${th.minOnTimeShare * 100} % of UE arrivals started within ` +
    `${th.onTimeMs} ms of their due time; other cells are shown as not valid. A valid cell is ` +
    `judged at ${looks.length === 1 ? "one look" : `up to ${looks.length} looks`}, when each ` +
    `side has completed ${looks.join(", ")} flows` +
    Object.entries(rule.lookFactors ?? {}).map(([stream, k]) =>
      ` (${stream} cells, whose flows are one request each, ${k} times as many)`
    ).join("") +
    `, and stops at the first look that decides` +
    (design.endLook && looks.length > 1
      ? `; a cell whose time runs out between two looks takes its next look on the flows it has`
      : "") +
    `. ` +
    `At a look each side's p99 gets a distribution-free order-statistic interval at ${side}` +
    (design.clusterFlows
      ? `, widened by how much more than independent flows the two sides' slow flows come ` +
        `together (each side's share above its p99 compared across clusters of ` +
        `${design.clusterFlows}, ${design.clusterFlows * 2} and ${design.clusterFlows * 4} flows ` +
        `in completion order, both sides' clusters pooled)`
      : "") +
    `, and the two give an interval of the ratio of the p99s at the same level (MOVER, on the ` +
    `log scale), so that over all looks ${
      design.oneSided ? "each end of the ratio's intervals holds" : "the ratio's intervals hold"
    } together with ${rule.level * 100} % (Bonferroni${
      design.interimLevel !== undefined && looks.length > 1
        ? `: the earlier looks take a small share of the error each, the last the rest`
        : ""
    }${
      design.oneSided
        ? `; each decision rests on one end, material on the upper, "no" on the lower`
        : ""
    }). HTTP/3 has a material advantage when its p99 flow time ` +
    `is at least ${rule.minReduction * 100} % lower than that of the better HTTP/2 variant (h2c ` +
    `or h2 over TLS, whichever has the lower p99), the ratio's interval lies wholly below 1, and ` +
    `it lost no larger share of flows; it has none when even the interval's most favourable end ` +
    `gives it less than ${rule.minReduction * 100} %` +
    (design.powerReduction && design.power
      ? `, or when a look ${
        powerFromFlows(design) < looks.at(-1)!
          ? `at or after ${powerFromFlows(design)} flows`
          : "at the last planned number of flows"
      } has the power: its interval narrow enough that a p99 ` +
        `${Math.round(design.powerReduction * 100)} % lower would have been called material with ` +
        `at least ${Math.round(design.power * 100)} % chance (so a true ` +
        `${Math.round(design.powerReduction * 100)} % advantage is called "no" in at most ` +
        `${Math.round((1 - design.power) * 100)} % of runs)`
      : "") +
    `. With equal p99s a cell is called material ` +
    `in at most ${((1 - rule.level) * 100).toFixed(0)} % of runs. Otherwise the cell is ` +
    `undecided, with about how many flows per side would decide it. No look comes before ` +
    `${fewestFlowsToDecide(design, 0)} flows per side: with fewer not even the largest flow time ` +
    `bounds a p99 from above. Failed flows are counted in every cell, never dropped.`;
}
