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
 * 20 %, or when the last look had the power to show a 30 % lower p99 and did not;
 * otherwise the cell is undecided, with the flows that would decide it.
 */
import {
  clusteredQuantileInterval,
  quantileInterval,
  tailDesignEffect,
} from "./quantile_interval.ts";
import { type BenchRun, isFlowRow, type ResultRow } from "../bench/record/mod.ts";
import {
  flowsDesign,
  judgeSequential,
  lookLevel,
  scaledDesign,
  type SequentialDesign,
  streamLookFactor,
  THRESHOLD_FLIP_CHANCE,
} from "./sequential.ts";

export { isFlowRow };
import { JOURNEY, WARM_GET } from "./flows/definitions.ts";
import {
  cellInvalidity,
  type CellTransport,
  DEFAULT_RULE,
  PATH_PROCESSES,
  ruleDesign,
  type VerdictRule,
} from "./verdict_rule.ts";

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
  /** Decided: about how often a repeat would give the other label (see `repeatFlipChance`). */
  flipChance?: number;
  /**
   * Decided so near the threshold that a repeat would give the other label
   * about one time in five or more: the label rests on which side of it the
   * estimate fell.
   */
  atThreshold?: boolean;
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

const ORDER = ["h2c", "h2-tls", "h3"];

/** What the reason of a cell whose record lost its flows' order says. */
const UNORDERED = "kept a sample of its flows";

/** Judges every cell of a run's flow rows. */
export function studyVerdict(run: BenchRun, rule?: VerdictRule): StudyVerdict {
  rule ??= run.study?.rule ?? DEFAULT_RULE;
  // Each stream's looks: a study states them in its rule; other runs judge by the design of their day.
  const designOf = (flow: string): SequentialDesign => {
    const stream = flow === WARM_GET.name ? "warm-get" : "journey";
    return run.study?.rule
      ? ruleDesign(rule, stream)
      : scaledDesign(flowsDesign(run.config, run.config.samples), streamLookFactor(stream));
  };
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
    const design = designOf(flow);
    const transports: CellTransport[] = rs.map((r) => transportFigures(r, design));
    const share = (r: ResultRow) => {
      const failed = r.extra?.failed ?? r.errors;
      return failed / Math.max(1, failed + r.samples.count);
    };
    const place = { stack: named ? stack : undefined, link, flow, ues: Number(ues), transports };
    const h3 = rs.find((r) => r.transport === "h3");
    const h2s = rs.filter((r) => r.transport === "h2c" || r.transport === "h2-tls");
    // A look takes each side's first n flows: a row that kept a reservoir of its flows has lost them.
    const sampled = [h3, ...h2s].filter((r) => r && !r.samples.complete) as ResultRow[];
    if (h3 && h2s.length && sampled.length) {
      const kept = sampled.map((r) =>
        `${r.samples.samples.length} of ${r.samples.count} (${r.transport})`
      );
      out.push({
        ...place,
        status: "not-valid",
        reason: `not valid: the record ${UNORDERED}, ${kept.join(", ")}, ` +
          "not every flow in completion order, so its looks cannot be taken",
      });
      continue;
    }
    const j = h3 && h2s.length
      ? judgeSequential(
        h3.samples.samples,
        h2s.map((r) => ({
          transport: r.transport,
          samples: r.samples.samples,
          failShare: share(r),
        })),
        // A record holds each cell's flows at its end.
        { design, h3FailShare: share(h3), ended: true },
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
      ...(j.status !== "undecided" && j.flipChance !== undefined
        ? {
          flipChance: j.flipChance,
          ...(j.flipChance >= THRESHOLD_FLIP_CHANCE ? { atThreshold: true } : {}),
        }
        : {}),
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
  let summary = verdictSummary(out, counts, {
    quick: run.config.quick ?? false,
    threshold: rule.minReduction,
  });
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
 * quick run that could not decide every cell says it is inconclusive. Decided
 * cells whose interval reaches across the threshold (`threshold`, default
 * 20 %) are counted apart: their labels are the ones another run may swap.
 */
export function verdictSummary(
  cells: CellVerdict[],
  counts: VerdictCounts,
  options: { quick?: boolean; threshold?: number } = {},
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
  const edge = cells.filter((c) => c.atThreshold && c.status !== "not-valid");
  const edgeText = edge.length
    ? `; ${edge.length} of the ${decided} decided sit at the ${
      Math.round((options.threshold ?? 0.2) * 100)
    } % threshold (≈: another run may well give the other label)`
    : "";
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
      `cells (${list})${edgeText}${rest}.`;
  } else {
    head =
      `HTTP/3 has no material advantage in any of the ${decided} decided cells${edgeText}${rest}.`;
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
    if (c.reason.includes(UNORDERED)) causes.add("flows not kept in order");
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
