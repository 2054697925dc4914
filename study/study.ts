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
import {
  defaultArrivalRate,
  FLOW_ROUNDS,
  FLOW_STREAMS,
  QUICK_FLOW_ROUNDS,
  requestsPerUe,
  WARM_GET_SAMPLE_FACTOR,
} from "./flows_scenario.ts";
import { JOURNEY, WARM_GET } from "./flows/definitions.ts";
import {
  type BenchRun,
  type LinkRecord,
  type ResultRow,
  SCHEMA_VERSION,
} from "../bench/record/mod.ts";
import { DEFAULT_RULE } from "./verdict.ts";
import { STUDY_PLUGINS } from "./flows_scenario.ts";

/** The study's links, in report order. `loopback` runs without a link. */
export const STUDY_LINKS = ["lan", "metro", "wan", "lossy"];
/** UE concurrencies of the full study and of `--quick`. */
export const STUDY_UES = [16, 64];
export const QUICK_UES = [16];
/** Default budgets (ms). */
export const STUDY_BUDGET_MS = 10 * 60_000;
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
  /** Time budget for the whole matrix (ms). Default 10 min (4 min with `quick`). */
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
  /** Stops after the current link when aborted. */
  signal?: AbortSignal;
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

/** Flows per row the planner tries, most first. */
const SAMPLE_TARGETS = [1000, 600, 400, 300, 200, 150, 100, 60, 40, 30];

/** What the study asks of each row. */
export interface RowPlan {
  /** UE arrivals (flows) per row. */
  samples: number;
  /** Longest sampling time of a row (ms), whatever the count. */
  sampleMs: number;
  /** Estimated time of the links still to run (ms). */
  estimateMs: number;
}

/**
 * Picks the largest number of flows per row whose estimated time fits nine
 * tenths of the remaining budget. A row takes `samples / rate` (its default
 * arrival rate on that link; five times the samples for the warm GET) capped
 * at `sampleMs`, plus its warm-up and, per round, the flows still in
 * flight when a block's arrivals stop (about one journey); each link adds its
 * fixed costs. When even the smallest target does not fit, rows get that target
 * and a cap that shares out what is left (at least `minMs`).
 */
export function planRows(p: {
  remainingMs: number;
  links: { rttMs: number; loopback: boolean }[];
  transports: number;
  ues: number[];
  streams: string[];
  warmupMs: number;
  minMs: number;
  maxMs: number;
  maxSamples?: number;
  /** Blocks per row (each ends with its flows in flight draining). Default 1. */
  rounds?: number;
}): RowPlan {
  const rows: { rate: number; tailMs: number; factor: number }[] = [];
  let fixed = 0;
  for (const l of p.links) {
    fixed += linkOverheadMs(p.transports, l.loopback);
    for (const stream of p.streams) {
      const requests = requestsPerUe(stream === "journey" ? JOURNEY : [WARM_GET]);
      for (const ues of p.ues) {
        const rate = defaultArrivalRate(ues, requests, l.rttMs, 5);
        const tailMs = (p.rounds ?? 1) * requests * (l.rttMs + 5);
        const factor = stream === "journey" ? 1 : WARM_GET_SAMPLE_FACTOR;
        for (let t = 0; t < p.transports; t++) rows.push({ rate, tailMs, factor });
      }
    }
  }
  const estimate = (samples: number, capMs: number) =>
    fixed +
    rows.reduce(
      (ms, r) =>
        ms + p.warmupMs + r.tailMs + Math.min(capMs, ((samples * r.factor) / r.rate) * 1000),
      0,
    );
  for (const samples of SAMPLE_TARGETS.filter((n) => n <= (p.maxSamples ?? Infinity))) {
    const ms = estimate(samples, p.maxMs);
    // A tenth of the budget is kept for what the estimate misses (process starts on a busy box).
    if (ms <= 0.9 * p.remainingMs) return { samples, sampleMs: p.maxMs, estimateMs: ms };
  }
  const samples = SAMPLE_TARGETS.at(-1)!;
  const variable = p.remainingMs - fixed -
    rows.reduce((ms, r) => ms + p.warmupMs + r.tailMs, 0);
  const sampleMs = Math.max(p.minMs, rows.length ? variable / rows.length : p.minMs);
  return { samples, sampleMs, estimateMs: estimate(samples, sampleMs) };
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
  let lastPlan: RowPlan | undefined;
  const rttOf = (s: (typeof specs)[number]) => (s.spec ? configuredRttMs(s.spec) : 0);
  for (const [i, s] of specs.entries()) {
    if (options.signal?.aborted) {
      notes.push(`The study was interrupted before ${s.text}; its cells have no data.`);
      continue;
    }
    const plan = planRows({
      remainingMs: budgetMs - (Date.now() - start),
      links: specs.slice(i).map((r) => ({ rttMs: rttOf(r), loopback: !r.spec })),
      transports: rowTransports,
      ues,
      streams: flows,
      warmupMs,
      minMs: quick ? 500 : 1000,
      maxMs: 60_000,
      maxSamples: quick ? 100 : undefined,
      rounds,
    });
    lastPlan = plan;
    let recorded = false;
    for (const st of stacks) {
      const label = stacks.length > 1 ? `${s.text} (${st})` : s.text;
      const bench = {
        scenario: "flows" as const,
        stack: st,
        transports: transportsOf.get(st)!,
        concurrency: ues,
        flows,
        warmupMs,
        sampleMs: Math.round(plan.sampleMs),
        samples: plan.samples,
        skipFloors: true,
        schedule,
        seed: seed + i,
        rounds,
        onProgress: (l: string, f: number) => progress(`${label}: ${l}`, f),
        signal: options.signal,
        plugins: STUDY_PLUGINS,
      };
      let run: BenchRun;
      try {
        run = s.spec
          ? await runBenchAcrossLink(s.spec, {
            ...bench,
            specText: s.text,
            childTimeoutMs: Math.max(120_000, 3 * plan.estimateMs),
          })
          : await runBench(bench);
      } catch (err) {
        notes.push(
          `${label}: the run failed (${
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
        const note = `${label}: ${n}`;
        if (!notes.includes(note)) notes.push(note);
      }
    }
  }
  const elapsedMs = Date.now() - start;
  if (elapsedMs > budgetMs) {
    notes.push(
      `The matrix took ${(elapsedMs / 1000).toFixed(0)} s, over its budget of ${
        (budgetMs / 1000).toFixed(0)
      } s (rows never go below their minimum sampling time).`,
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
      sampleMs: Math.round(lastPlan?.sampleMs ?? 0),
      samples: lastPlan?.samples,
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
      sampleMs: Math.round(lastPlan?.sampleMs ?? 0),
      samples: lastPlan?.samples ?? 0,
      rule: { ...DEFAULT_RULE },
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
