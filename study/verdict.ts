/**
 * The study's verdict: does HTTP/3 have a material advantage for NF-to-NF
 * traffic? A pure function of a run's flow rows, cell by cell, where a cell is
 * one link × flow × UE concurrency and every cell of the run is judged.
 *
 * A cell counts only when it is valid: the measuring side kept its open-loop
 * schedule and no process on the path (client, server, link relay) was
 * saturated while the cell's blocks ran. The rule, in one sentence: HTTP/3
 * has a material advantage in a valid cell when its p99 flow time is at least
 * 20 % lower than that of the better HTTP/2 variant (h2c or h2 over TLS,
 * whichever has the lower p99), HTTP/3's order-statistic interval of its p99
 * lies wholly below that variant's (so the difference's interval excludes
 * zero), HTTP/3 lost no larger share of flows, and each side completed
 * enough flows for its p99 interval to have an upper end.
 */
import type { Interval } from "../bench/stats/mod.ts";
import { minSamplesForQuantile, quantileInterval } from "./quantile_interval.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "../bench/record/mod.ts";

export { isFlowRow };
import { JOURNEY } from "./flows/definitions.ts";

/** Parameters of the rule. */
export interface VerdictRule {
  /** Smallest relative p99 reduction that counts (0.2 = 20 %). */
  minReduction: number;
  /**
   * Joint confidence level of the two p99 intervals: each side's interval is
   * taken at √level, so both cover their p99 together with at least `level`.
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
}

/** The level of each side's p99 interval for a joint `level`. */
export function sideLevel(level: number): number {
  return Math.sqrt(level);
}

/** The rule the study states. */
export const DEFAULT_RULE: VerdictRule = {
  minReduction: 0.2,
  level: 0.95,
  resamples: 1000,
  minSamples: minSamplesForQuantile(0.99, sideLevel(0.95)),
  maxCoreShare: 0.9,
  minOnTimeShare: 0.95,
  onTimeMs: 2,
};

/** The rule's validity thresholds with their defaults (records may predate them). */
export function validityThresholds(rule: VerdictRule = DEFAULT_RULE) {
  return {
    maxCoreShare: rule.maxCoreShare ?? DEFAULT_RULE.maxCoreShare!,
    minOnTimeShare: rule.minOnTimeShare ?? DEFAULT_RULE.minOnTimeShare!,
    onTimeMs: rule.onTimeMs ?? DEFAULT_RULE.onTimeMs!,
  };
}

/** The figures one decision needs. */
export interface CellFigures {
  /** HTTP/3's p99 flow time (ns), when measured. */
  h3P99?: number;
  /** The better HTTP/2 variant's p99 (ns), when measured. */
  h2P99?: number;
  /** Interval of h3 p99 − h2 p99 (ns). */
  diffCi?: { lower: number; upper: number };
  /** Share of HTTP/3's flows that failed (0…1). */
  h3FailShare: number;
  /** Share of the HTTP/2 variant's flows that failed (0…1). */
  h2FailShare: number;
  /** Completed flows behind the smaller of the two p99s. */
  n: number;
  /** Why the cell is not valid (a saturated process, a slipped schedule), when it is not. */
  invalid?: string;
}

/** A cell's decision. */
export interface CellDecision {
  /**
   * `material`, `not-material`, `no-data` when a side was not measured, or
   * `not-valid` when the measurement itself did not hold (see `reason`).
   */
  status: "material" | "not-material" | "no-data" | "not-valid";
  /** 1 − h3 p99 / h2 p99, when both exist. */
  reduction?: number;
  /** Why, in words. */
  reason: string;
}

/** Applies the rule to one cell's figures. */
export function judgeCell(f: CellFigures, rule: VerdictRule = DEFAULT_RULE): CellDecision {
  if (f.h3P99 === undefined || f.h2P99 === undefined || f.diffCi === undefined) {
    const reason = f.h3P99 === undefined && f.h2P99 === undefined
      ? "no transport has flow times in this cell"
      : `${f.h3P99 === undefined ? "HTTP/3" : "HTTP/2"} has no flow times in this cell`;
    return { status: "no-data", reason };
  }
  if (!(f.h2P99 > 0)) return { status: "no-data", reason: "HTTP/2 p99 is zero" };
  const reduction = 1 - f.h3P99 / f.h2P99;
  if (f.invalid) return { status: "not-valid", reduction, reason: f.invalid };
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const excludesZero = f.diffCi.upper < 0 || f.diffCi.lower > 0;
  const reasons: string[] = [];
  if (!(reduction >= rule.minReduction - 1e-12)) {
    reasons.push(
      reduction >= 0
        ? `p99 only ${pct(reduction)} lower (needs ${pct(rule.minReduction)})`
        : `p99 ${pct(-reduction)} higher`,
    );
  }
  if (f.n < rule.minSamples) {
    reasons.push(
      `too few flows for a p99 (${f.n} < ${rule.minSamples}: with ${f.n} flows the p99 is the ${
        ordinalFromTop(f.n)
      } largest value and no flow bounds it from above)`,
    );
  } else if (!excludesZero) reasons.push("the interval of the difference includes zero");
  if (f.h3FailShare > f.h2FailShare) {
    reasons.push(`HTTP/3 lost more flows (${pct(f.h3FailShare)} vs ${pct(f.h2FailShare)})`);
  }
  if (reasons.length === 0) {
    return {
      status: "material",
      reduction,
      reason: `p99 ${pct(reduction)} lower, interval excludes zero`,
    };
  }
  return { status: "not-material", reduction, reason: reasons.join("; ") };
}

/** "largest", "2nd", "3rd"… : the p99's rank counted from the top of n values (type 7). */
function ordinalFromTop(n: number): string {
  const fromTop = n - Math.floor(0.99 * (n - 1));
  if (fromTop <= 1) return "1st";
  const suffix = fromTop === 2 ? "nd" : fromTop === 3 ? "rd" : "th";
  return `${fromTop}${suffix}`;
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

/** One judged cell. */
export interface CellVerdict extends CellDecision {
  /** The stack the cell ran on, when the rows name one (cells never mix stacks). */
  stack?: string;
  /** Link spec, or `loopback`. */
  link: string;
  flow: string;
  ues: number;
  /** Every transport measured in the cell, in report order. */
  transports: CellTransport[];
  /** The HTTP/2 variant HTTP/3 is compared with. */
  bestH2?: string;
  h3P99?: number;
  h2P99?: number;
  diffCi?: Interval;
}

/** The verdict of a run. */
export interface StudyVerdict {
  rule: VerdictRule;
  cells: CellVerdict[];
  /** When the run holds two or more stack families: cells both judged, and how many agree. */
  families?: { stacks: string[]; judged: number; agree: number; disagree: string[] };
  /** Cells where HTTP/3 has a material advantage. */
  material: number;
  /** Cells whose measurement did not hold, and why each (`<cell>: <reason>`). */
  notValid: string[];
  /** The answer, in one or two sentences. */
  summary: string;
}

/** The rule in words, for reports. */
export function ruleText(rule: VerdictRule = DEFAULT_RULE): string {
  const th = validityThresholds(rule);
  const side = (sideLevel(rule.level) * 100).toFixed(1);
  return `A cell (link × flow × UE concurrency) is valid when, over each transport's blocks, no ` +
    `process on the path (client, server, link relay) had a thread busy ${th.maxCoreShare} of a ` +
    `core or more, and at least ${th.minOnTimeShare * 100} % of UE arrivals started within ` +
    `${th.onTimeMs} ms of their due time; other cells are shown as not valid and judged apart. ` +
    `HTTP/3 has a material advantage in a valid cell when its p99 ` +
    `flow time is at least ${rule.minReduction * 100} % lower than that of the better HTTP/2 ` +
    `variant (h2c or h2 over TLS, whichever has the lower p99), HTTP/3's p99 interval lies ` +
    `wholly below that variant's (distribution-free order-statistic intervals at ${side} % each, ` +
    `${rule.level * 100} % together, so the interval of the difference excludes zero), ` +
    `HTTP/3 lost no larger share of flows, and each side completed at least ${rule.minSamples} ` +
    `flows: with fewer not even the largest flow time bounds a p99 from above at ${side} % ` +
    `(with 100 flows the p99 is the second largest value). Failed flows are counted in every ` +
    `cell, never dropped.`;
}

const ORDER = ["h2c", "h2-tls", "h3"];

/** Judges every cell of a run's flow rows. */
export function studyVerdict(run: BenchRun, rule: VerdictRule = DEFAULT_RULE): StudyVerdict {
  const rows = run.rows.filter(isFlowRow);
  const linkOf = (r: ResultRow) => r.link ?? run.config.link?.spec ?? "loopback";
  const cells = new Map<string, ResultRow[]>();
  for (const r of rows) {
    const key = `${r.stack ?? run.config.stack ?? ""}\n${linkOf(r)}\n${r.flow}\n${
      r.concurrency ?? 1
    }`;
    cells.set(key, [...(cells.get(key) ?? []), r]);
  }
  // A study plans its cells; one where no transport completed flows is still judged (no-data).
  if (run.study) {
    const flows = (run.config.flows ?? []).flatMap((s) =>
      s === "journey" ? JOURNEY.map((f) => f.name) : [s]
    );
    for (const stack of run.study.stacks ?? [run.config.stack ?? ""]) {
      for (const link of run.study.links) {
        for (const ues of run.config.concurrency ?? []) {
          for (const flow of flows) {
            const key = `${stack}\n${link.spec}\n${flow}\n${ues}`;
            if (!cells.has(key)) cells.set(key, []);
          }
        }
      }
    }
  }
  const out: CellVerdict[] = [];
  for (const [key, rs] of cells) {
    const [stack, link, flow, ues] = key.split("\n");
    rs.sort((a, b) => ORDER.indexOf(a.transport) - ORDER.indexOf(b.transport));
    const transports: CellTransport[] = rs.map((r) => transportFigures(r, rule));
    const share = (r: ResultRow) => {
      const failed = r.extra?.failed ?? r.errors;
      return failed / (failed + r.samples.count);
    };
    const h3 = rs.find((r) => r.transport === "h3");
    const h2 = rs.filter((r) => r.transport === "h2c" || r.transport === "h2-tls")
      .sort((a, b) => a.estimate.p99 - b.estimate.p99)[0];
    let diffCi: Interval | undefined;
    const ciOf = (r: ResultRow) => transports.find((t) => t.transport === r.transport)?.p99Ci;
    const h3Ci = h3 && ciOf(h3), h2Ci = h2 && ciOf(h2);
    if (h3Ci && h2Ci) {
      // Both intervals hold together at `level`, so this holds at least as often.
      diffCi = {
        lower: h3Ci.lower - h2Ci.upper,
        upper: h3Ci.upper - h2Ci.lower,
        level: rule.level,
      };
    }
    const invalid = cellInvalidity(transports, rule);
    const decision = judgeCell({
      h3P99: h3?.estimate.p99,
      h2P99: h2?.estimate.p99,
      diffCi,
      h3FailShare: h3 ? share(h3) : 0,
      h2FailShare: h2 ? share(h2) : 0,
      n: Math.min(h3?.samples.count ?? 0, h2?.samples.count ?? 0),
      invalid,
    }, rule);
    out.push({
      ...decision,
      stack: stack || undefined,
      link,
      flow,
      ues: Number(ues),
      transports,
      bestH2: h2?.transport,
      h3P99: h3?.estimate.p99,
      h2P99: h2?.estimate.p99,
      diffCi,
    });
  }
  const material = out.filter((c) => c.status === "material").length;
  const noData = out.filter((c) => c.status === "no-data").length;
  const notValidCells = out.filter((c) => c.status === "not-valid");
  const notValid = notValidCells.map((c) =>
    `${cellName(c)}: ${c.reason.replace(/^not valid: /, "")}`
  );
  const valid = out.length - notValidCells.length;
  let summary: string;
  if (out.length === 0) {
    summary = "No flow cells were measured, so there is no verdict.";
  } else if (notValidCells.length === out.length) {
    summary = `None of the ${out.length} cells is valid (${whyNotValid(notValidCells)}), ` +
      "so there is no verdict: the rows timed this machine, not the transports.";
  } else if (noData + notValidCells.length === out.length) {
    summary = `None of the ${out.length} cells has flow times for both HTTP/3 and HTTP/2, ` +
      "so there is no verdict.";
  } else if (material === 0) {
    summary = `HTTP/3 has no material advantage in any of the ${valid} valid cells` +
      (noData ? ` (${noData} without data for one side)` : "") +
      ": on this evidence the recommendation to keep HTTP/2 for NF-to-NF traffic stands.";
  } else {
    const where = out.filter((c) => c.status === "material")
      .map((c) => `${c.flow} on ${c.link} at ${c.ues} UEs`).join(", ");
    summary =
      `HTTP/3 has a material advantage in ${material} of ${valid} valid cells (${where}): ` +
      "the study's condition for looking again at HTTP/3 is met there.";
  }
  if (notValidCells.length && notValidCells.length < out.length) {
    summary += ` ${notValidCells.length} of ${out.length} cells were not valid and are not ` +
      `counted (${whyNotValid(notValidCells)}).`;
  }
  const families = familyAgreement(out);
  if (families && families.judged > 0) {
    summary += ` The ${families.stacks.join(" and ")} families agree in ${families.agree} of the ` +
      `${families.judged} cells both could judge` +
      (families.disagree.length ? ` (not in ${families.disagree.join(", ")})` : "") + ".";
  }
  return { rule, cells: out, material, notValid, summary, ...(families ? { families } : {}) };
}

function cellName(c: CellVerdict): string {
  return `${c.flow} on ${c.link} at ${c.ues} UEs${c.stack ? ` (${c.stack})` : ""}`;
}

/** "server saturated in 2, schedule slipped in 1": the causes of not-valid cells, counted. */
function whyNotValid(cells: CellVerdict[]): string {
  const counts = new Map<string, number>();
  for (const c of cells) {
    const causes = new Set<string>();
    for (const p of PATH_PROCESSES) {
      if (new RegExp(`\\b${p} at `).test(c.reason)) causes.add(`${p} saturated`);
    }
    if (c.reason.includes("schedule slipped")) causes.add("schedule slipped");
    for (const k of causes) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k} in ${n}`).join(", ");
}

/** One transport's figures in a cell, from its flow row. */
function transportFigures(r: ResultRow, rule: VerdictRule): CellTransport {
  const x = r.extra ?? {};
  const cores: Record<string, number> = {};
  for (const p of [...PATH_PROCESSES, "others"]) {
    const v = x[`cpu:${p}`];
    if (typeof v === "number" && Number.isFinite(v)) cores[p] = v;
  }
  const ci = r.samples.samples.length >= 1
    ? quantileInterval(r.samples.samples, 0.99, sideLevel(rule.level))
    : undefined;
  return {
    transport: r.transport,
    p50: r.estimate.p50,
    p99: r.estimate.p99,
    n: r.estimate.n,
    failed: x.failed ?? r.errors,
    retries: x.retries ?? 0,
    ...(ci ? { p99Ci: { lower: ci.lower, upper: ci.upper, level: sideLevel(rule.level) } } : {}),
    ...(Object.keys(cores).length ? { cores } : {}),
    ...(typeof x.onTimeShare === "number" ? { onTimeShare: x.onTimeShare } : {}),
  };
}

/** Whether the stack families reach the same decision in each cell that every family judged. */
export function familyAgreement(cells: CellVerdict[]): StudyVerdict["families"] {
  const stacks = [...new Set(cells.map((c) => c.stack ?? ""))];
  if (stacks.length < 2) return undefined;
  const byCell = new Map<string, CellVerdict[]>();
  for (const c of cells) {
    const key = `${c.link}\n${c.flow}\n${c.ues}`;
    byCell.set(key, [...(byCell.get(key) ?? []), c]);
  }
  let judged = 0, agree = 0;
  const disagree: string[] = [];
  for (const cs of byCell.values()) {
    const decided = cs.filter((c) => c.status !== "no-data" && c.status !== "not-valid");
    if (decided.length < stacks.length) continue;
    judged++;
    if (new Set(decided.map((c) => c.status)).size === 1) agree++;
    else disagree.push(`${cs[0].flow} on ${cs[0].link} at ${cs[0].ues} UEs`);
  }
  return { stacks, judged, agree, disagree };
}
