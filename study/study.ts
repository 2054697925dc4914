/**
 * `lab study`: the follow-up the seed study asked for, end to end. It runs the
 * flows scenario (UE journeys and the warm GET) for every transport across
 * each link profile at a few UE concurrencies, fits the number of flows per
 * row to a time budget (re-planned before each link from the time really spent),
 * and returns one run record whose rows name their link. The verdict is a
 * pure function of that record (`verdict.ts`).
 */
import { configuredRttMs, parseLinkSpec } from "../linkemu/link_spec.ts";
import { hasNetAdmin } from "../linkemu/mod.ts";
import type { StackName, TransportName } from "../transports/types.ts";
import { runBench, runBenchAcrossLink } from "../bench/run/mod.ts";
import { collectEnvironment } from "../bench/measure/mod.ts";
import { formatBudgetUse } from "../lib/units.ts";
import {
  defaultArrivalRate,
  FLOW_ROUNDS,
  FLOW_STREAMS,
  flowsDesign,
  PER_REQUEST_MS,
  QUICK_FLOW_ROUNDS,
  requestsPerUe,
} from "./flows_scenario.ts";
import { JOURNEY, WARM_GET } from "./flows/definitions.ts";
import {
  type BenchRun,
  type LinkRecord,
  type ResultRow,
  SCHEMA_VERSION,
} from "../bench/record/mod.ts";
import { DEFAULT_RULE } from "./verdict.ts";
import { DEFAULT_DESIGN, fewestFlowsToDecide } from "./sequential.ts";
import { STUDY_PLUGINS } from "./flows_scenario.ts";

/** The study's links, in report order. `loopback` runs without a link. */
export const STUDY_LINKS = ["lan", "metro", "wan", "lossy"];
/** UE concurrencies of the full study and of `--quick`. */
export const STUDY_UES = [64, 256];
export const QUICK_UES = [64];
/**
 * Default budgets (ms). 30 minutes: the wan and lossy cells (which run first)
 * can each reach the design's last look (4,800 flows per side) within it while
 * lan and metro keep enough for their first look; cells decided earlier leave
 * their time to the rest.
 */
export const STUDY_BUDGET_MS = 30 * 60_000;

/**
 * Most flows per side a study's cells take: the design's last look (4,800) in
 * the default budget, doubled for each doubling of the budget past it (a
 * 1-hour study looks again at 9,600 flows) and halved for each halving below
 * it, down to the design's second look (a 15-minute study stops at 2,400).
 * Where slow flows come in bursts, a p99 needs many more flows than
 * independent ones would (see `sequential.ts`); a longer budget is how a study
 * decides those cells.
 */
export function studyMaxFlows(budgetMs: number): number {
  const looks = DEFAULT_DESIGN.looks;
  const doublings = Math.floor(Math.log2(budgetMs / STUDY_BUDGET_MS) + 1e-9);
  return Math.max(looks[Math.min(1, looks.length - 1)], looks.at(-1)! * 2 ** doublings);
}
export const QUICK_BUDGET_MS = 4 * 60_000;

/** Options of {@link runStudy}. */
export interface StudyOptions {
  /** Link specs (profiles or key=value lists), or `loopback`. Default {@link STUDY_LINKS}. */
  links?: string[];
  /** Implementation family of every row. Default `native` (or `SBILAB_STACK`). */
  stack?: StackName;
  /** Several families, each running the whole matrix within the one budget (overrides `stack`). */
  stacks?: StackName[];
  /** Transports. Default every available one on the stack. */
  transports?: TransportName[];
  /** UE concurrency levels. Default {@link STUDY_UES} ({@link QUICK_UES} with `quick`). */
  ues?: number[];
  /** Streams (`journey`, `warm-get`). Default both. */
  flows?: string[];
  /** Time budget for the whole matrix (ms). Default 30 min (4 min with `quick`). */
  budgetMs?: number;
  /** A smoke run: one UE level, short rows. Default false. */
  quick?: boolean;
  /**
   * `interleaved` (default): each cell's transports take turns in rounds of
   * short arrival blocks; `sequential`: one transport's blocks after another.
   */
  schedule?: "interleaved" | "sequential";
  /** Seed of the round orders. Default a random one (recorded in the run). */
  seed?: number;
  /** Progress of the current step (label, 0…1). */
  onProgress?: (label: string, fraction: number) => void;
  /** The matrix's progress: cells done of planned, time spent of the budget, time left. */
  onStudyProgress?: (p: StudyProgress) => void;
  /** Stops after the current link when aborted. */
  signal?: AbortSignal;
}

/** Where a study stands. */
export interface StudyProgress {
  /** Cells (link × flow × UE level, per stack) finished. */
  cellsDone: number;
  /** Cells planned. */
  cellsPlanned: number;
  /** Time since the start (ms). */
  elapsedMs: number;
  /** The budget (ms). */
  budgetMs: number;
  /** Estimated time left (ms): the current link's plan, then what the later links need, within the budget. */
  leftMs: number;
  /** What runs now. */
  label: string;
}

/** A progress line: "cells 12/40 · 5m10s of 15m00s · about 6m20s left · wan: journey × 64 UEs". */
export function progressLine(p: StudyProgress): string {
  const t = (ms: number) => {
    const s = Math.max(0, Math.round(ms / 1000));
    return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  };
  return `cells ${p.cellsDone}/${p.cellsPlanned} · ${t(p.elapsedMs)} of ${t(p.budgetMs)} · ` +
    `about ${t(p.leftMs)} left · ${p.label}`;
}

/** Parses a budget such as `10m`, `90s`, `1h` or a number of seconds into ms. */
export function parseBudget(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text.trim());
  const ms = m ? Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"]! : NaN;
  if (!(ms >= 10_000)) {
    throw new RangeError(`Invalid budget "${text}" (use e.g. 10m, 90s; at least 10 s)`);
  }
  return ms;
}

/** Fixed costs of one link (ms): opening it, starting the server, one child per transport. */
export function linkOverheadMs(transports: number, loopback: boolean): number {
  return (loopback ? 3000 : 6000) + transports * 4000;
}

/** What the study asks of one link. */
export interface LinkPlan {
  /** Average time per cell (UE level × stream) the link's run may spend (ms); decided cells leave theirs to the next. */
  cellMs: number;
  /** Time given to this link, its fixed costs included (ms). */
  linkMs: number;
  /** Time every link still to run needs to take each cell to its last look (ms). */
  needMs: number;
}

/** Inputs of {@link linkNeedMs} and {@link planLink}. */
export interface LinkPlanInput {
  /** Transports (rows) per cell. */
  transports: number;
  ues: number[];
  streams: string[];
  warmupMs: number;
  /** Most flows per side a cell takes (the design's last look). */
  maxFlows: number;
  /** Looks per cell: each waits for the flows in flight. Default 1. */
  looks?: number;
}

/**
 * Time one link needs to take each of its cells to its last look (ms): its
 * fixed costs, and per cell each transport's warm-up, its arrivals at the
 * default rate, and a drain of about two flows per look.
 */
export function linkNeedMs(link: { rttMs: number; loopback: boolean }, p: LinkPlanInput): number {
  let ms = linkOverheadMs(p.transports, link.loopback);
  for (const stream of p.streams) {
    const requests = requestsPerUe(stream === "journey" ? JOURNEY : [WARM_GET]);
    const flowMs = requests * (link.rttMs + PER_REQUEST_MS);
    for (const ues of p.ues) {
      const rate = defaultArrivalRate(ues, requests, link.rttMs);
      ms += p.transports * (p.warmupMs + (p.maxFlows / rate) * 1000) +
        (p.looks ?? 1) * 2 * flowMs;
    }
  }
  return ms;
}

/**
 * Plans the next link: it may take what it needs to take each cell to its
 * last look, as long as every link after it keeps enough to reach its first
 * look; time a link does not use (its cells decided early) goes to the links
 * after it. Cells never get less than `minCellMs`.
 */
export function planLink(
  remainingMs: number,
  links: { rttMs: number; loopback: boolean }[],
  p: LinkPlanInput & { minCellMs: number; firstLook: number },
): LinkPlan {
  const needs = links.map((l) => linkNeedMs(l, p));
  const firsts = links.map((l) => linkNeedMs(l, { ...p, maxFlows: p.firstLook, looks: 1 }));
  const reserve = firsts.slice(1).reduce((a, b) => a + b, 0);
  // A twentieth of what is left stays spare for what the estimate misses (a busy box).
  const spare = 0.95 * remainingMs;
  const linkMs = Math.min(needs[0], Math.max(firsts[0], spare - reserve), spare);
  const cells = p.ues.length * p.streams.length;
  const fixed = linkOverheadMs(p.transports, links[0].loopback);
  return {
    cellMs: Math.max(p.minCellMs, (linkMs - fixed) / cells),
    linkMs,
    needMs: needs.reduce((a, b) => a + b, 0),
  };
}

/** Runs the study matrix and returns one run record (rows carry their link). */
export async function runStudy(options: StudyOptions = {}): Promise<BenchRun> {
  const quick = options.quick ?? false;
  const links = options.links ?? STUDY_LINKS;
  const ues = options.ues ?? (quick ? QUICK_UES : STUDY_UES);
  const flows = options.flows ?? [...FLOW_STREAMS];
  const budgetMs = options.budgetMs ?? (quick ? QUICK_BUDGET_MS : STUDY_BUDGET_MS);
  const specs = links.map((l) => ({
    text: l,
    spec: l === "loopback" ? undefined : parseLinkSpec(l),
  }));
  if (specs.some((s) => s.spec) && !hasNetAdmin()) {
    throw new Deno.errors.PermissionDenied(
      "lab study crosses emulated links and needs root (CAP_NET_ADMIN); run it as root or use --links loopback",
    );
  }
  const { availableTransports, resolveStack } = await import("../transports/mod.ts");
  const stacks = options.stacks?.length
    ? [...new Set(options.stacks)]
    : [resolveStack(options.stack)];
  const stack = stacks[0];
  const transportsOf = new Map<StackName, TransportName[]>();
  for (const st of stacks) {
    transportsOf.set(st, options.transports ?? await availableTransports(st));
  }
  const transports = transportsOf.get(stack)!;
  const rowTransports = [...transportsOf.values()].reduce((n, ts) => n + ts.length, 0);
  const warmupMs = quick ? 300 : 1000;
  const schedule = options.schedule ?? "interleaved";
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32);
  const rounds = quick ? QUICK_FLOW_ROUNDS : FLOW_ROUNDS;
  const progress = options.onProgress ?? (() => {});
  const start = Date.now();
  const rows: ResultRow[] = [];
  const notes: string[] = [];
  const linkRecords: LinkRecord[] = [];
  const connections: NonNullable<BenchRun["connections"]> = {};
  let lastPlan: LinkPlan | undefined;
  const design = flowsDesign({ quick }, quick ? undefined : studyMaxFlows(budgetMs));
  const maxFlows = design.looks.at(-1)!;
  const rttOf = (s: (typeof specs)[number]) => (s.spec ? configuredRttMs(s.spec) : 0);
  // Progress: grid cells per child cell (a journey cell holds one grid cell per flow).
  const childCells = ues.flatMap(() => flows.map((f) => (f === "journey" ? JOURNEY.length : 1)));
  const perLink = childCells.reduce((a, b) => a + b, 0) * stacks.length;
  const cellsPlanned = perLink * specs.length;
  let cellsBefore = 0;
  let inLink = 0;
  let linkStart = Date.now();
  let linkPlanMs = 0;
  let laterNeedMs = 0;
  let label = "starting";
  const report = () => {
    const elapsedMs = Date.now() - start;
    const leftMs = Math.min(
      Math.max(0, budgetMs - elapsedMs),
      Math.max(0, linkPlanMs - (Date.now() - linkStart)) + laterNeedMs,
    );
    options.onStudyProgress?.({
      cellsDone: Math.min(cellsPlanned, cellsBefore + inLink),
      cellsPlanned,
      elapsedMs,
      budgetMs,
      leftMs,
      label,
    });
  };
  const ticker = setInterval(report, 5000);
  // The links the answer rests on (the longest RTTs) run first; time they leave goes to the rest.
  const display = specs.map((s) => s.text);
  specs.sort((a, b) => rttOf(b) - rttOf(a));
  try {
    for (const [i, s] of specs.entries()) {
      if (options.signal?.aborted) {
        notes.push(`The study was interrupted before ${s.text}; its cells have no data.`);
        continue;
      }
      const plan = planLink(
        budgetMs - (Date.now() - start),
        specs.slice(i).map((r) => ({ rttMs: rttOf(r), loopback: !r.spec })),
        {
          transports: rowTransports,
          ues,
          streams: flows,
          warmupMs,
          maxFlows,
          looks: design.looks.length,
          firstLook: design.looks[0],
          minCellMs: quick ? 2000 : 5000,
        },
      );
      lastPlan = plan;
      linkStart = Date.now();
      linkPlanMs = plan.linkMs;
      laterNeedMs = plan.needMs - linkNeedMs(
        { rttMs: rttOf(s), loopback: !s.spec },
        {
          transports: rowTransports,
          ues,
          streams: flows,
          warmupMs,
          maxFlows,
          looks: design.looks.length,
        },
      );
      inLink = 0;
      let recorded = false;
      for (const [stackIndex, st] of stacks.entries()) {
        const name = stacks.length > 1 ? `${s.text} (${st})` : s.text;
        label = name;
        report();
        const onChildLine = (line: string) => {
          const m = /cell (\d+)\/(\d+): ([^)]*)/.exec(line);
          if (!m) return;
          const k = Number(m[1]);
          inLink = stackIndex * (perLink / stacks.length) +
            childCells.slice(0, k - 1).reduce((a, b) => a + b, 0);
          label = `${name}: ${m[3]}`;
          report();
        };
        const bench = {
          scenario: "flows" as const,
          stack: st,
          transports: transportsOf.get(st)!,
          concurrency: ues,
          flows,
          warmupMs,
          sampleMs: Math.round(plan.cellMs / stacks.length),
          samples: maxFlows,
          skipFloors: true,
          schedule,
          seed: seed + i,
          rounds,
          onProgress: (l: string, f: number) => {
            onChildLine(l);
            progress(`${name}: ${l}`, f);
          },
          signal: options.signal,
          plugins: STUDY_PLUGINS,
        };
        let run: BenchRun;
        try {
          run = s.spec
            ? await runBenchAcrossLink(s.spec, {
              ...bench,
              specText: s.text,
              onChildLine,
              childTimeoutMs: Math.max(300_000, 3 * plan.linkMs),
            })
            : await runBench(bench);
        } catch (err) {
          notes.push(
            `${name}: the run failed (${
              (err as Error).message.split("\n")[0]
            }); its cells have no data.`,
          );
          if (s.spec && !recorded && st === stacks.at(-1)) {
            const { linkRecord } = await import("../bench/run/mod.ts");
            linkRecords.push(linkRecord(s.spec, s.text, "relay"));
          }
          continue;
        }
        if (!recorded) {
          linkRecords.push(run.config.link ?? loopbackRecord());
          recorded = true;
        }
        for (const r of run.rows) {
          rows.push({ ...r, id: `${s.text}/${r.id}`, link: s.text, stack: r.stack ?? st });
        }
        for (const [t, c] of Object.entries(run.connections ?? {})) connections[t] ??= c;
        for (const n of run.notes) {
          const note = `${name}: ${n}`;
          if (!notes.includes(note)) notes.push(note);
        }
      }
      cellsBefore += perLink;
      inLink = 0;
      report();
    }
  } finally {
    clearInterval(ticker);
  }
  linkRecords.sort((a, b) => display.indexOf(a.spec) - display.indexOf(b.spec));
  const elapsedMs = Date.now() - start;
  if (elapsedMs > budgetMs) {
    notes.push(
      `The matrix ${
        formatBudgetUse(elapsedMs, budgetMs)
      } (rows never go below their minimum sampling time).`,
    );
  }
  return {
    schema: SCHEMA_VERSION,
    startedAt: new Date(start).toISOString(),
    durationMs: elapsedMs,
    config: {
      scenario: "flows",
      stack,
      transports,
      sizes: [256],
      warmupMs,
      sampleMs: Math.round(lastPlan?.cellMs ?? 0),
      samples: maxFlows,
      quick,
      serverMode: specs.some((s) => s.spec) ? "link" : "process",
      delayMs: 0,
      concurrency: ues,
      flows,
      schedule,
      rounds,
      seed,
    },
    environment: await collectEnvironment(),
    floors: {
      rows: [],
      skipped: "Floors are not measured by the study: the links' delays dominate every row " +
        "(lab link selftest measures a link itself).",
    },
    rows,
    notes,
    ...(Object.keys(connections).length ? { connections } : {}),
    study: {
      links: linkRecords,
      ...(stacks.length > 1 ? { stacks } : {}),
      budgetMs,
      elapsedMs,
      sampleMs: Math.round(lastPlan?.cellMs ?? 0),
      samples: maxFlows,
      rule: {
        ...DEFAULT_RULE,
        looks: [...design.looks],
        minSamples: fewestFlowsToDecide(design),
      },
    },
  };
}

function loopbackRecord(): LinkRecord {
  const dir = {
    delayMs: 0,
    jitterMs: 0,
    loss: 0,
    burst: 0,
    rateBps: 0,
    queue: 0,
    reorder: 0,
    dup: 0,
  };
  return {
    spec: "loopback",
    resolved: "no emulated link",
    backend: "relay",
    rttMs: 0,
    up: dir,
    down: { ...dir },
  };
}
