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
  FLOW_ROUNDS,
  FLOW_STREAMS,
  flowsDesign,
  QUICK_FLOW_ROUNDS,
  STUDY_PLUGINS,
} from "./flows_scenario.ts";
import { JOURNEY } from "./flows/definitions.ts";
import {
  type BenchRun,
  type LinkRecord,
  type ResultRow,
  SCHEMA_VERSION,
} from "../bench/record/mod.ts";
import { DEFAULT_RULE } from "./verdict_rule.ts";
import { DEFAULT_DESIGN, fewestFlowsToDecide } from "./sequential.ts";
import { linkNeedMs, type LinkPlan, planLink } from "./link_plan.ts";

/** The study's links, in report order. `loopback` runs without a link. */
export const STUDY_LINKS = ["lan", "metro", "wan", "lossy"];
/** UE concurrencies of the full study and of `--quick`. */
export const STUDY_UES = [64, 256];
export const QUICK_UES = [64];
/**
 * Default budgets (ms). 75 minutes: the `wan` and `lossy` cells (which run
 * first and share the time by need) take their open journey cells towards a
 * sixth look (19,200 flows per side) and the warm-GET cells towards 8 × as
 * many, while `lan` and `metro` keep enough for their first looks; cells
 * decided earlier leave their time to the rest. At 256 UEs HTTP/2's slow
 * flows come in bursts (one RTO on the one connection holds every flow in
 * flight), so those cells need 10,000 to 25,000 journey flows per side and
 * warm-GET cells 60,000 to 125,000; a burst's share of the tail does not
 * shrink with a faster arrival rate (more flows in flight, longer bursts), so
 * time is what decides them. Six 60-minute runs with looks to 19,200 decided
 * 17 to 20 of the 20 `wan` and `lossy` cells (one all 20): what the open ones
 * lacked was 2 to 7 minutes of their link's share, which 75 minutes gives
 * each of the two links (about 34 minutes each instead of 27).
 */
export const STUDY_BUDGET_MS = 75 * 60_000;

/** The budget whose journey looks end at {@link STUDY_LAST_LOOK}. */
export const LOOK_BUDGET_MS = 40 * 60_000;
/** Most flows per side a cell of a {@link LOOK_BUDGET_MS} budget takes: the design's last look doubled. */
export const STUDY_LAST_LOOK = 2 * DEFAULT_DESIGN.looks.at(-1)!;

/**
 * Most flows per side a study's journey cells take: {@link STUDY_LAST_LOOK}
 * (9,600) in a 40-minute budget, doubled for each doubling of the budget
 * past it, counted up (the default 75 minutes, and anything up to 80, plan a
 * look at 19,200 that open cells reach as far as their time allows: a cell
 * whose time runs out between two looks takes the next one on the flows it
 * has), and halved for each halving below it, down to the design's second
 * look (a 20-minute study stops at 4,800, a 10-minute one at 2,400). Where
 * slow flows come in bursts, a p99 needs many more flows than independent
 * ones would (see `sequential.ts`); a longer budget is how a study decides
 * those cells, and a last look the budget cannot reach would leave its open
 * cells at the last one while the time went to the links after them (a
 * 60-minute run with looks to 9,600 gave its last 21 minutes to `lan` and
 * `metro`). Warm-GET cells take `WARM_GET_LOOK_FACTOR` (8) times as many,
 * planned to half that (`WARM_GET_PLAN_FACTOR`).
 */
export function studyMaxFlows(budgetMs: number): number {
  const looks = DEFAULT_DESIGN.looks;
  const doublings = Math.ceil(Math.log2(budgetMs / LOOK_BUDGET_MS) - 1e-9);
  return Math.max(looks[Math.min(1, looks.length - 1)], STUDY_LAST_LOOK * 2 ** doublings);
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
  /** Time budget for the whole matrix (ms). Default 75 min (4 min with `quick`). */
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

/** A link of the study: its text as given, and its spec (undefined for `loopback`). */
interface StudyLink {
  text: string;
  spec: ReturnType<typeof parseLinkSpec> | undefined;
}

/** A study's matrix, resolved from its options: what every link runs. */
interface StudyMatrix {
  quick: boolean;
  ues: number[];
  flows: string[];
  budgetMs: number;
  /** The links in the order given. */
  specs: StudyLink[];
  stacks: StackName[];
  transportsOf: Map<StackName, TransportName[]>;
  /** Rows per cell: the transports of every stack. */
  rowTransports: number;
  warmupMs: number;
  schedule: "interleaved" | "sequential";
  seed: number;
  rounds: number;
  design: ReturnType<typeof flowsDesign>;
  /** Most flows per side a cell takes (the design's last look). */
  maxFlows: number;
  /** Grid cells per child cell (a journey cell holds one grid cell per flow). */
  childCells: number[];
  /** Grid cells per link, every stack's. */
  perLink: number;
  progress: (label: string, fraction: number) => void;
  signal: AbortSignal | undefined;
}

/**
 * Resolves a study's options into its matrix: links (root needed for any but
 * loopback), stacks and their transports, UE levels, streams, budget, design.
 */
async function studyMatrix(options: StudyOptions): Promise<StudyMatrix> {
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
  const transportsOf = new Map<StackName, TransportName[]>();
  for (const st of stacks) {
    transportsOf.set(st, options.transports ?? await availableTransports(st));
  }
  const rowTransports = [...transportsOf.values()].reduce((n, ts) => n + ts.length, 0);
  const design = flowsDesign({ quick }, quick ? undefined : studyMaxFlows(budgetMs));
  const childCells = ues.flatMap(() => flows.map((f) => (f === "journey" ? JOURNEY.length : 1)));
  return {
    quick,
    ues,
    flows,
    budgetMs,
    specs,
    stacks,
    transportsOf,
    rowTransports,
    warmupMs: quick ? 300 : 1000,
    schedule: options.schedule ?? "interleaved",
    seed: options.seed ?? Math.floor(Math.random() * 2 ** 32),
    rounds: quick ? QUICK_FLOW_ROUNDS : FLOW_ROUNDS,
    design,
    maxFlows: design.looks.at(-1)!,
    childCells,
    perLink: childCells.reduce((a, b) => a + b, 0) * stacks.length,
    progress: options.onProgress ?? (() => {}),
    signal: options.signal,
  };
}

/** Where the study stands as it moves through links and cells; `report()` hands it on. */
class StudyTracker {
  /** Grid cells of the links already run. */
  cellsBefore = 0;
  /** Grid cells done in the current link. */
  inLink = 0;
  linkStart = Date.now();
  /** Time given to the current link (ms). */
  linkPlanMs = 0;
  /** What the links after the current one need (ms). */
  laterNeedMs = 0;
  label = "starting";

  constructor(
    readonly start: number,
    readonly budgetMs: number,
    readonly cellsPlanned: number,
    readonly onStudyProgress: ((p: StudyProgress) => void) | undefined,
  ) {}

  /** Hands the current progress to `onStudyProgress`. */
  report(): void {
    const elapsedMs = Date.now() - this.start;
    const leftMs = Math.min(
      Math.max(0, this.budgetMs - elapsedMs),
      Math.max(0, this.linkPlanMs - (Date.now() - this.linkStart)) + this.laterNeedMs,
    );
    this.onStudyProgress?.({
      cellsDone: Math.min(this.cellsPlanned, this.cellsBefore + this.inLink),
      cellsPlanned: this.cellsPlanned,
      elapsedMs,
      budgetMs: this.budgetMs,
      leftMs,
      label: this.label,
    });
  }
}

/** What the links' runs add up to. */
interface StudyTally {
  rows: ResultRow[];
  notes: string[];
  linkRecords: LinkRecord[];
  connections: NonNullable<BenchRun["connections"]>;
}

/**
 * Runs one link's cells on every stack (the link's `index` seeds its round
 * orders) and adds their rows, notes, the link's record and the connections
 * to `tally`; a stack whose run fails leaves a note and no rows.
 */
async function runLinkCells(
  link: StudyLink & { index: number },
  plan: LinkPlan,
  m: StudyMatrix,
  tracker: StudyTracker,
  tally: StudyTally,
): Promise<void> {
  const { stacks } = m;
  let recorded = false;
  for (const [stackIndex, st] of stacks.entries()) {
    const name = stacks.length > 1 ? `${link.text} (${st})` : link.text;
    tracker.label = name;
    tracker.report();
    const onChildLine = (line: string) => {
      const match = /cell (\d+)\/(\d+): ([^)]*)/.exec(line);
      if (!match) return;
      const k = Number(match[1]);
      tracker.inLink = stackIndex * (m.perLink / stacks.length) +
        m.childCells.slice(0, k - 1).reduce((a, b) => a + b, 0);
      tracker.label = `${name}: ${match[3]}`;
      tracker.report();
    };
    const bench = {
      scenario: "flows" as const,
      stack: st,
      transports: m.transportsOf.get(st)!,
      concurrency: m.ues,
      flows: m.flows,
      warmupMs: m.warmupMs,
      sampleMs: Math.round(plan.cellMs / stacks.length),
      samples: m.maxFlows,
      skipFloors: true,
      schedule: m.schedule,
      seed: m.seed + link.index,
      rounds: m.rounds,
      onProgress: (l: string, f: number) => {
        onChildLine(l);
        m.progress(`${name}: ${l}`, f);
      },
      signal: m.signal,
      plugins: STUDY_PLUGINS,
    };
    let run: BenchRun;
    try {
      run = link.spec
        ? await runBenchAcrossLink(link.spec, {
          ...bench,
          specText: link.text,
          onChildLine,
          childTimeoutMs: Math.max(300_000, 3 * plan.linkMs),
        })
        : await runBench(bench);
    } catch (err) {
      tally.notes.push(
        `${name}: the run failed (${
          (err as Error).message.split("\n")[0]
        }); its cells have no data.`,
      );
      if (link.spec && !recorded && st === stacks.at(-1)) {
        const { linkRecord } = await import("../bench/run/mod.ts");
        tally.linkRecords.push(linkRecord(link.spec, link.text, "relay"));
      }
      continue;
    }
    if (!recorded) {
      tally.linkRecords.push(run.config.link ?? loopbackRecord());
      recorded = true;
    }
    for (const r of run.rows) {
      tally.rows.push({ ...r, id: `${link.text}/${r.id}`, link: link.text, stack: r.stack ?? st });
    }
    for (const [t, c] of Object.entries(run.connections ?? {})) tally.connections[t] ??= c;
    for (const n of run.notes) {
      const note = `${name}: ${n}`;
      if (!tally.notes.includes(note)) tally.notes.push(note);
    }
  }
}

/** The study's run record: the matrix's configuration, its rows and notes, and the links run. */
async function studyRecord(
  m: StudyMatrix,
  tally: StudyTally,
  times: { start: number; elapsedMs: number; lastPlan: LinkPlan | undefined },
): Promise<BenchRun> {
  const { quick, ues, flows, budgetMs, stacks, design, maxFlows } = m;
  const { connections } = tally;
  const sampleMs = Math.round(times.lastPlan?.cellMs ?? 0);
  return {
    schema: SCHEMA_VERSION,
    startedAt: new Date(times.start).toISOString(),
    durationMs: times.elapsedMs,
    config: {
      scenario: "flows",
      stack: stacks[0],
      transports: m.transportsOf.get(stacks[0])!,
      sizes: [256],
      warmupMs: m.warmupMs,
      sampleMs,
      samples: maxFlows,
      quick,
      serverMode: m.specs.some((s) => s.spec) ? "link" : "process",
      delayMs: 0,
      concurrency: ues,
      flows,
      schedule: m.schedule,
      rounds: m.rounds,
      seed: m.seed,
    },
    environment: await collectEnvironment(),
    floors: {
      rows: [],
      skipped: "Floors are not measured by the study: the links' delays dominate every row " +
        "(lab link selftest measures a link itself).",
    },
    rows: tally.rows,
    notes: tally.notes,
    ...(Object.keys(connections).length ? { connections } : {}),
    study: {
      links: tally.linkRecords,
      ...(stacks.length > 1 ? { stacks } : {}),
      budgetMs,
      elapsedMs: times.elapsedMs,
      sampleMs,
      samples: maxFlows,
      rule: {
        ...DEFAULT_RULE,
        looks: [...design.looks],
        minSamples: fewestFlowsToDecide(design),
      },
    },
  };
}

/** Runs the study matrix and returns one run record (rows carry their link). */
export async function runStudy(options: StudyOptions = {}): Promise<BenchRun> {
  const m = await studyMatrix(options);
  const { budgetMs, design, maxFlows, specs } = m;
  const start = Date.now();
  const tally: StudyTally = { rows: [], notes: [], linkRecords: [], connections: {} };
  let lastPlan: LinkPlan | undefined;
  const rttOf = (s: StudyLink) => (s.spec ? configuredRttMs(s.spec) : 0);
  const tracker = new StudyTracker(
    start,
    budgetMs,
    m.perLink * specs.length,
    options.onStudyProgress,
  );
  const ticker = setInterval(() => tracker.report(), 5000);
  // The links the answer rests on (the longest RTTs) run first; time they leave goes to the rest.
  const display = specs.map((s) => s.text);
  specs.sort((a, b) => rttOf(b) - rttOf(a));
  const need = {
    transports: m.rowTransports,
    ues: m.ues,
    streams: m.flows,
    warmupMs: m.warmupMs,
    maxFlows,
    looks: design.looks.length,
  };
  try {
    for (const [i, s] of specs.entries()) {
      if (options.signal?.aborted) {
        tally.notes.push(`The study was interrupted before ${s.text}; its cells have no data.`);
        continue;
      }
      const plan = planLink(
        budgetMs - (Date.now() - start),
        specs.slice(i).map((r) => ({ rttMs: rttOf(r), loopback: !r.spec })),
        { ...need, firstLook: design.looks[0], minCellMs: m.quick ? 2000 : 5000 },
      );
      lastPlan = plan;
      tracker.linkStart = Date.now();
      tracker.linkPlanMs = plan.linkMs;
      tracker.laterNeedMs = plan.needMs - linkNeedMs({ rttMs: rttOf(s), loopback: !s.spec }, need);
      tracker.inLink = 0;
      await runLinkCells({ ...s, index: i }, plan, m, tracker, tally);
      tracker.cellsBefore += m.perLink;
      tracker.inLink = 0;
      tracker.report();
    }
  } finally {
    clearInterval(ticker);
  }
  tally.linkRecords.sort((a, b) => display.indexOf(a.spec) - display.indexOf(b.spec));
  const elapsedMs = Date.now() - start;
  if (elapsedMs > budgetMs) {
    tally.notes.push(
      `The matrix ${
        formatBudgetUse(elapsedMs, budgetMs)
      } (rows never go below their minimum sampling time).`,
    );
  }
  return await studyRecord(m, tally, { start, elapsedMs, lastPlan });
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
