/**
 * The study's verdict: does HTTP/3 have a material advantage for NF-to-NF
 * traffic? A pure function of a run's flow rows, cell by cell, where a cell is
 * one link × flow × UE concurrency and every cell of the run is judged.
 *
 * The rule, in one sentence: HTTP/3 has a material advantage in a cell when
 * its p99 flow time is at least 20 % lower than that of the better HTTP/2
 * variant (h2c or h2 over TLS, whichever has the lower p99), the 95 %
 * percentile-bootstrap interval of the p99 difference excludes zero, HTTP/3
 * lost no larger share of flows than that HTTP/2 variant, and each side
 * completed at least 100 flows (with fewer, a p99 is just the maximum).
 */
import { compareQuantiles, type Interval } from "../bench/stats.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "../bench/schema.ts";

export { isFlowRow };
import { JOURNEY } from "./flows/definitions.ts";

/** Parameters of the rule. */
export interface VerdictRule {
  /** Smallest relative p99 reduction that counts (0.2 = 20 %). */
  minReduction: number;
  /** Confidence level of the bootstrap interval. */
  level: number;
  /** Bootstrap resamples. */
  resamples: number;
  /** Fewest completed flows per side for a p99 to mean more than the maximum. */
  minSamples: number;
}

/** The rule the study states. */
export const DEFAULT_RULE: VerdictRule = {
  minReduction: 0.2,
  level: 0.95,
  resamples: 1000,
  minSamples: 100,
};

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
}

/** A cell's decision. */
export interface CellDecision {
  /** `material`, `not-material`, or `no-data` when a side was not measured. */
  status: "material" | "not-material" | "no-data";
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
  if (!excludesZero) reasons.push("the interval of the difference includes zero");
  if (f.n < rule.minSamples) {
    reasons.push(`too few flows for a p99 (${f.n} < ${rule.minSamples})`);
  }
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
  /** The answer, in one or two sentences. */
  summary: string;
}

/** The rule in words, for reports. */
export function ruleText(rule: VerdictRule = DEFAULT_RULE): string {
  return `HTTP/3 has a material advantage in a cell (link × flow × UE concurrency) when its p99 ` +
    `flow time is at least ${rule.minReduction * 100} % lower than that of the better HTTP/2 ` +
    `variant (h2c or h2 over TLS, whichever has the lower p99), the ${rule.level * 100} % ` +
    `bootstrap interval of the p99 difference (${rule.resamples} resamples) excludes zero, ` +
    `HTTP/3 lost no larger share of flows, and each side completed at least ${rule.minSamples} ` +
    `flows (fewer make the p99 the maximum). Failed flows are counted in every cell, never dropped.`;
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
    const transports: CellTransport[] = rs.map((r) => ({
      transport: r.transport,
      p50: r.estimate.p50,
      p99: r.estimate.p99,
      n: r.estimate.n,
      failed: r.extra?.failed ?? r.errors,
      retries: r.extra?.retries ?? 0,
    }));
    const share = (r: ResultRow) => {
      const failed = r.extra?.failed ?? r.errors;
      return failed / (failed + r.samples.count);
    };
    const h3 = rs.find((r) => r.transport === "h3");
    const h2 = rs.filter((r) => r.transport === "h2c" || r.transport === "h2-tls")
      .sort((a, b) => a.estimate.p99 - b.estimate.p99)[0];
    let diffCi: Interval | undefined;
    if (h3 && h2) {
      diffCi = compareQuantiles(h2.samples.samples, h3.samples.samples, 0.99, {
        level: rule.level,
        resamples: rule.resamples,
      }).differenceCi;
    }
    const decision = judgeCell({
      h3P99: h3?.estimate.p99,
      h2P99: h2?.estimate.p99,
      diffCi,
      h3FailShare: h3 ? share(h3) : 0,
      h2FailShare: h2 ? share(h2) : 0,
      n: Math.min(h3?.samples.count ?? 0, h2?.samples.count ?? 0),
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
  let summary: string;
  if (out.length === 0) {
    summary = "No flow cells were measured, so there is no verdict.";
  } else if (noData === out.length) {
    summary = `None of the ${out.length} cells has flow times for both HTTP/3 and HTTP/2, ` +
      "so there is no verdict.";
  } else if (material === 0) {
    summary = `HTTP/3 has no material advantage in any of the ${out.length} cells` +
      (noData ? ` (${noData} without data for one side)` : "") +
      ": on this evidence the recommendation to keep HTTP/2 for NF-to-NF traffic stands.";
  } else {
    const where = out.filter((c) => c.status === "material")
      .map((c) => `${c.flow} on ${c.link} at ${c.ues} UEs`).join(", ");
    summary = `HTTP/3 has a material advantage in ${material} of ${out.length} cells (${where}): ` +
      "the study's condition for looking again at HTTP/3 is met there.";
  }
  const families = familyAgreement(out);
  if (families && families.judged > 0) {
    summary += ` The ${families.stacks.join(" and ")} families agree in ${families.agree} of the ` +
      `${families.judged} cells both could judge` +
      (families.disagree.length ? ` (not in ${families.disagree.join(", ")})` : "") + ".";
  }
  return { rule, cells: out, material, summary, ...(families ? { families } : {}) };
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
    const decided = cs.filter((c) => c.status !== "no-data");
    if (decided.length < stacks.length) continue;
    judged++;
    if (new Set(decided.map((c) => c.status)).size === 1) agree++;
    else disagree.push(`${cs[0].flow} on ${cs[0].link} at ${cs[0].ues} UEs`);
  }
  return { stacks, judged, agree, disagree };
}
