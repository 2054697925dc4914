/**
 * The study's verdict: does HTTP/3 have a material advantage for NF-to-NF
 * traffic? A pure function of a run's flow rows, cell by cell, where a cell is
 * one link × flow × UE concurrency and every cell of the run is judged.
 *
 * A cell counts only when it is valid: the measuring side kept its open-loop
 * schedule and no process on the path (client, server, link relay) was
 * saturated while the cell's blocks ran. A valid cell is judged by the
 * sequential design of `sequential.ts` on its flow times in completion order:
 * HTTP/3 has a material advantage when its p99 flow time is at least 20 %
 * lower than that of the better HTTP/2 variant (h2c or h2 over TLS, whichever
 * has the lower p99) and its p99 interval lies wholly below that variant's; it
 * has none when even the intervals' most favourable ends give it less than
 * 20 %; otherwise the cell is undecided, with the flows that would decide it.
 */
import type { Interval } from "../bench/stats/mod.ts";
import {
  clusteredQuantileInterval,
  quantileInterval,
  tailDesignEffect,
} from "./quantile_interval.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "../bench/record/mod.ts";
import {
  DEFAULT_DESIGN,
  fewestFlowsToDecide,
  flowsDesign,
  judgeSequential,
  lookLevel,
  type SequentialDesign,
} from "./sequential.ts";

export { isFlowRow };
import { JOURNEY } from "./flows/definitions.ts";

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
  clusterFlows: DEFAULT_DESIGN.clusterFlows,
  powerReduction: DEFAULT_DESIGN.powerReduction,
  power: DEFAULT_DESIGN.power,
};

/** The sequential design a rule states. */
export function ruleDesign(rule: VerdictRule): SequentialDesign {
  return {
    looks: rule.looks ?? [rule.minSamples],
    level: rule.level,
    minReduction: rule.minReduction,
    ...(rule.clusterFlows ? { clusterFlows: rule.clusterFlows } : {}),
    ...(rule.powerReduction && rule.power
      ? { powerReduction: rule.powerReduction, power: rule.power }
      : {}),
  };
}

/** The rule's validity thresholds with their defaults (records may predate them). */
export function validityThresholds(rule: VerdictRule = DEFAULT_RULE) {
  return {
    maxCoreShare: rule.maxCoreShare ?? DEFAULT_RULE.maxCoreShare!,
    minOnTimeShare: rule.minOnTimeShare ?? DEFAULT_RULE.minOnTimeShare!,
    onTimeMs: rule.onTimeMs ?? DEFAULT_RULE.onTimeMs!,
  };
}

/** A cell's decision. */
export interface CellDecision {
  /**
   * `material` / `not-material` when a look decided, `undecided` when none
   * did yet, `no-data` when a side was not measured, `not-valid` when the
   * measurement itself did not hold (see `reason`).
   */
  status: "material" | "not-material" | "undecided" | "no-data" | "not-valid";
  /** 1 − h3 p99 / h2 p99, when both exist. */
  reduction?: number;
  /** Interval of the reduction (at the deciding look, or on all flows when undecided). */
  reductionCi?: { lower: number; upper: number };
  /** Why, in words. */
  reason: string;
  /** Undecided: about how many flows per side would decide it (Infinity: none foreseeable). */
  flowsToDecide?: number;
  /** Decided: flows per side at the look that decided. */
  decidedAt?: number;
  /** Completed flows per side behind the figures (the smaller side). */
  n?: number;
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
}

/** How many cells came out each way. */
export interface VerdictCounts {
  /** Every cell judged (planned cells without data included). */
  cells: number;
  material: number;
  notMaterial: number;
  undecided: number;
  notValid: number;
  noData: number;
}

/** The verdict of a run. */
export interface StudyVerdict {
  rule: VerdictRule;
  cells: CellVerdict[];
  /** When the run holds two or more stack families: cells both judged, and how many agree. */
  families?: { stacks: string[]; judged: number; agree: number; disagree: string[] };
  /** Cells where HTTP/3 has a material advantage. */
  material: number;
  /** Cells by outcome. */
  counts: VerdictCounts;
  /** Cells whose measurement did not hold, and why each (`<cell>: <reason>`). */
  notValid: string[];
  /** The answer, in one or two sentences. */
  summary: string;
}

/** The rule in words, for reports. */
export function ruleText(rule: VerdictRule = DEFAULT_RULE): string {
  const th = validityThresholds(rule);
  const design = ruleDesign(rule);
  const side = (lookLevel(design) * 100).toFixed(2);
  const looks = design.looks;
  return `A cell (link × flow × UE concurrency) is valid when, over each transport's blocks, no ` +
    `process on the path (client, server, link relay) had a thread busy ${th.maxCoreShare} of a ` +
    `core or more, and at least ${th.minOnTimeShare * 100} % of UE arrivals started within ` +
    `${th.onTimeMs} ms of their due time; other cells are shown as not valid. A valid cell is ` +
    `judged at ${looks.length === 1 ? "one look" : `up to ${looks.length} looks`}, when each ` +
    `side has completed ${looks.join(", ")} flows, and stops at the first look that decides. ` +
    `At a look each side's p99 gets a distribution-free order-statistic interval at ${side} %` +
    (design.clusterFlows
      ? `, widened by how much more than independent flows the two sides' slow flows come ` +
        `together (each side's share above its p99 compared across clusters of ` +
        `${design.clusterFlows}, ${design.clusterFlows * 2} and ${design.clusterFlows * 4} flows ` +
        `in completion order, both sides' clusters pooled)`
      : "") +
    `, and the two give an interval of the ratio of the p99s at ${side} % (MOVER, on the log ` +
    `scale), so that over all looks the ratio's intervals hold together with ` +
    `${rule.level * 100} % (Bonferroni). HTTP/3 has a material advantage when its p99 flow time ` +
    `is at least ${rule.minReduction * 100} % lower than that of the better HTTP/2 variant (h2c ` +
    `or h2 over TLS, whichever has the lower p99), the ratio's interval lies wholly below 1, and ` +
    `it lost no larger share of flows; it has none when even the interval's most favourable end ` +
    `gives it less than ${rule.minReduction * 100} %` +
    (design.powerReduction && design.power
      ? `, or when the look has the power: its interval narrow enough that a p99 ` +
        `${Math.round(design.powerReduction * 100)} % lower would have been called material with ` +
        `at least ${Math.round(design.power * 100)} % chance (so a true ` +
        `${Math.round(design.powerReduction * 100)} % advantage is called "no" in at most ` +
        `${Math.round((1 - design.power) * 100)} % of runs)`
      : "") +
    `. With equal p99s a cell is called material ` +
    `in at most ${((1 - rule.level) * 100).toFixed(0)} % of runs. Otherwise the cell is ` +
    `undecided, with about how many flows per side would decide it. No look comes before ` +
    `${fewestFlowsToDecide(design)} flows per side: with fewer not even the largest flow time ` +
    `bounds a p99 from above. Failed flows are counted in every cell, never dropped.`;
}

const ORDER = ["h2c", "h2-tls", "h3"];

/** Judges every cell of a run's flow rows. */
export function studyVerdict(run: BenchRun, rule?: VerdictRule): StudyVerdict {
  rule ??= run.study?.rule ?? DEFAULT_RULE;
  const design = run.study?.rule ? ruleDesign(rule) : flowsDesign(run.config, run.config.samples);
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
  // Cells name their stack only when the run compares stacks.
  const named = new Set([...cells.keys()].map((k) => k.split("\n")[0])).size > 1;
  const out: CellVerdict[] = [];
  for (const [key, rs] of cells) {
    const [stack, link, flow, ues] = key.split("\n");
    rs.sort((a, b) => ORDER.indexOf(a.transport) - ORDER.indexOf(b.transport));
    const transports: CellTransport[] = rs.map((r) => transportFigures(r, design));
    const share = (r: ResultRow) => {
      const failed = r.extra?.failed ?? r.errors;
      return failed / Math.max(1, failed + r.samples.count);
    };
    const place = { stack: named ? stack : undefined, link, flow, ues: Number(ues), transports };
    const h3 = rs.find((r) => r.transport === "h3");
    const h2s = rs.filter((r) => r.transport === "h2c" || r.transport === "h2-tls");
    const j = h3 && h2s.length
      ? judgeSequential(
        h3.samples.samples,
        h2s.map((r) => ({
          transport: r.transport,
          samples: r.samples.samples,
          failShare: share(r),
        })),
        { design, h3FailShare: share(h3) },
      )
      : undefined;
    if (!j) {
      const reason = !h3 && !h2s.length
        ? "no transport has flow times in this cell"
        : `${!h3 ? "HTTP/3" : "HTTP/2"} has no flow times in this cell`;
      out.push({ ...place, status: "no-data", reason });
      continue;
    }
    const figures = {
      bestH2: j.bestH2,
      h3P99: j.h3P99,
      h2P99: j.h2P99,
      reduction: j.reduction,
      reductionCi: j.reductionCi,
      n: j.n,
    };
    const invalid = cellInvalidity(transports, rule);
    if (invalid) {
      out.push({ ...place, ...figures, status: "not-valid", reason: invalid });
      continue;
    }
    out.push({
      ...place,
      ...figures,
      status: j.status,
      reason: j.reason,
      ...(j.decidedAt !== undefined ? { decidedAt: j.decidedAt } : {}),
      ...(j.flowsToDecide !== undefined ? { flowsToDecide: j.flowsToDecide } : {}),
    });
  }
  const count = (s: CellDecision["status"]) => out.filter((c) => c.status === s).length;
  const counts: VerdictCounts = {
    cells: out.length,
    material: count("material"),
    notMaterial: count("not-material"),
    undecided: count("undecided"),
    notValid: count("not-valid"),
    noData: count("no-data"),
  };
  const notValidCells = out.filter((c) => c.status === "not-valid");
  const notValid = notValidCells.map((c) =>
    `${cellName(c)}: ${c.reason.replace(/^not valid: /, "")}`
  );
  let summary = verdictSummary(out, counts, { quick: run.config.quick ?? false });
  const families = familyAgreement(out);
  if (families && families.judged > 0) {
    summary += ` The ${families.stacks.join(" and ")} families agree in ${families.agree} of the ` +
      `${families.judged} cells both decided` +
      (families.disagree.length ? ` (not in ${families.disagree.join(", ")})` : "") + ".";
  }
  return {
    rule,
    cells: out,
    material: counts.material,
    counts,
    notValid,
    summary,
    ...(families ? { families } : {}),
  };
}

/** "1,200": a whole number with thousands separated. */
function whole(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/**
 * The headline: decided cells first (material / not material), then the
 * undecided with the flows that would decide them, the not valid with why,
 * and the cells without data. Never counts an undecided cell as a "no". A
 * quick run that could not decide every cell says it is inconclusive.
 */
export function verdictSummary(
  cells: CellVerdict[],
  counts: VerdictCounts,
  options: { quick?: boolean } = {},
): string {
  if (counts.cells === 0) return "No flow cells were measured, so there is no verdict.";
  const decided = counts.material + counts.notMaterial;
  const open = counts.undecided + counts.notValid + counts.noData;
  const parts: string[] = [];
  if (counts.undecided) {
    const more = cells.filter((c) => c.status === "undecided")
      .map((c) => (c.flowsToDecide ?? Infinity) - (c.n ?? 0));
    const finite = more.filter(Number.isFinite).sort((a, b) => a - b);
    const need = finite.length
      ? finite.length === 1 || finite[0] === finite.at(-1)
        ? `about ${whole(finite[0])} more flows per side would decide ${
          counts.undecided === 1 ? "it" : "them"
        }`
        : `about ${whole(finite[0])} to ${whole(finite.at(-1)!)} more flows per side would decide ${
          finite.length === more.length ? "them" : `${finite.length} of them`
        }`
      : "no foreseeable number of flows decides them (the p99s sit about 20 % apart)";
    parts.push(`${counts.undecided} undecided (${need})`);
  }
  if (counts.notValid) {
    parts.push(
      `${counts.notValid} not valid (${
        whyNotValid(cells.filter((c) => c.status === "not-valid"))
      })`,
    );
  }
  if (counts.noData) parts.push(`${counts.noData} without data for a side`);
  const rest = parts.length ? `; of the other cells ${parts.join(", ")}` : "";
  if (decided === 0) {
    return `Inconclusive: none of the ${counts.cells} cells could be decided${
      parts.length ? ` (${parts.join(", ")})` : ""
    }, so this run says nothing either way.`;
  }
  let head: string;
  if (counts.material) {
    const where = cells.filter((c) => c.status === "material")
      .map((c) => `${c.flow} on ${c.link} at ${c.ues} UEs${c.stack ? ` (${c.stack})` : ""}`);
    const list = where.length <= 6 ? where.join(", ") : `${where.slice(0, 6).join(", ")}, …`;
    head = `HTTP/3 has a material advantage in ${counts.material} of the ${decided} decided ` +
      `cells (${list})${rest}.`;
  } else {
    head = `HTTP/3 has no material advantage in any of the ${decided} decided cells${rest}.`;
  }
  if (options.quick && open > 0) {
    return `Inconclusive (a quick run, ${open} of ${counts.cells} cells undecided or not ` +
      `valid): ${head}`;
  }
  if (counts.material) {
    return `${head} The study's condition for looking again at HTTP/3 is met there.`;
  }
  if (open === 0) {
    return `${head} On this evidence the recommendation to keep HTTP/2 for NF-to-NF traffic stands.`;
  }
  return `${head} The answer is not complete until the other cells are decided.`;
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
    if (c.reason.includes("schedule slipped")) {
      causes.add(
        c.reason.includes("while other processes used")
          ? "schedule slipped while other processes kept the machine busy"
          : "schedule slipped",
      );
    }
    for (const k of causes) counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k} in ${n}`).join(", ");
}

/** One transport's figures in a cell, from its flow row. */
function transportFigures(r: ResultRow, design: SequentialDesign): CellTransport {
  const x = r.extra ?? {};
  const cores: Record<string, number> = {};
  for (const p of [...PATH_PROCESSES, "others"]) {
    const v = x[`cpu:${p}`];
    if (typeof v === "number" && Number.isFinite(v)) cores[p] = v;
  }
  const level = lookLevel(design);
  const ci = r.samples.samples.length >= 1
    ? design.clusterFlows
      ? clusteredQuantileInterval(
        r.samples.samples,
        0.99,
        level,
        tailDesignEffect(r.samples.samples, 0.99, design.clusterFlows).effect,
      )
      : quantileInterval(r.samples.samples, 0.99, level)
    : undefined;
  return {
    transport: r.transport,
    p50: r.estimate.p50,
    p99: r.estimate.p99,
    n: r.estimate.n,
    failed: x.failed ?? r.errors,
    retries: x.retries ?? 0,
    ...(ci ? { p99Ci: { lower: ci.lower, upper: ci.upper, level } } : {}),
    ...(Object.keys(cores).length ? { cores } : {}),
    ...(typeof x.onTimeShare === "number" ? { onTimeShare: x.onTimeShare } : {}),
  };
}

/** Whether the stack families reach the same decision in each cell that every family decided. */
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
    const decided = cs.filter((c) => c.status === "material" || c.status === "not-material");
    if (decided.length < stacks.length) continue;
    judged++;
    if (new Set(decided.map((c) => c.status)).size === 1) agree++;
    else disagree.push(`${cs[0].flow} on ${cs[0].link} at ${cs[0].ues} UEs`);
  }
  return { stacks, judged, agree, disagree };
}
