/**
 * `rtt` in interleaved rounds: every transport × size and every floor is an
 * arm, all connections open and warm for the whole run, each round gives each
 * arm one short block in a new random order. Rows and floors come out with
 * their round series; the run's paired ratios and noise come with them.
 */
import { formatBytes } from "../../lib/units.ts";
import { MAX_OPERATIONS, sampleOperation, SamplingError } from "../measure/sampler.ts";
import { estimateSampleSet, Recorder, type SampleSet } from "../stats/recorder.ts";
import { createRng, estimate } from "../stats/stats.ts";
import { clusterMedian, cv, roundMedians } from "../stats/rounds_stats.ts";
import {
  type ArmRounds,
  type BlockResult,
  collectionsNote,
  roundCollector,
  type RoundsOutcome,
  runRounds,
} from "../measure/rounds.ts";
import type { MachineProbe } from "../measure/machine_probe.ts";
import { addedTimes, assessNoise, pairedRatios } from "../record/rounds_summary.ts";
import type { FloorRow, ResultRow, RoundSeries, RoundsRecord } from "../record/schema.ts";
import type { SbiClient } from "../../transports/types.ts";
import {
  floorFor,
  makeRow,
  requestLabel,
  rowRequest,
  type ScenarioContext,
  StatusTally,
} from "./context.ts";
import {
  addBareArms,
  addFloorArms,
  type BlockOf,
  type FloorArm,
  type FloorArms,
} from "./rtt_floor_arms.ts";
import { addStacksArms } from "./rtt_stacks_arms.ts";

/** How the rounds run. */
export interface RttRoundsOptions {
  /** Measured rounds. */
  rounds: number;
  /** Block per arm and round (ms). */
  blockMs: number;
  /** Rounds run first and discarded. */
  warmupRounds: number;
  /** Seed of the round orders. */
  seed: number;
  /** A fixed count of requests per block instead of the block time. */
  blockCount?: number;
  /** Floor sizes to measure in the rounds (empty: no floors). */
  floorSizes: number[];
  /** Sizes of the stacks-alone arms on the native stack (see `rtt_stacks_arms.ts`). Default none. */
  stacksSizes?: number[];
  /** Reads the machine around the transport blocks. */
  probe?: MachineProbe;
  /** CPU cores of the machine (for the load-average threshold). */
  cores: number;
}

/** What the interleaved rtt run gives back. */
export interface RttRoundsResult {
  rows: ResultRow[];
  floors: FloorRow[];
  rounds: RoundsRecord;
}

/** An arm's round series: per-round counts and medians, their CV, CPU time when measured. */
export function series(arm: ArmRounds): RoundSeries {
  // An empty block (a starved or failed one) has median 0: the reports skip such rounds.
  const medians = arm.samples.map((s) => (s.length ? roundMedians([s])[0] : 0));
  const cpu = (xs?: number[]) => xs?.map((s) => (Number.isFinite(s) ? Math.round(s * 1e9) : 0));
  return {
    counts: arm.samples.map((s) => s.length),
    medians,
    cv: cv(medians.filter((m) => m > 0)),
    ...(arm.clientCpuS ? { clientCpuNs: cpu(arm.clientCpuS) } : {}),
    ...(arm.serverCpuS ? { serverCpuNs: cpu(arm.serverCpuS) } : {}),
  };
}

/** Every sample of an arm's rounds, in round order. */
export function pooled(arm: ArmRounds): SampleSet {
  const rec = new Recorder();
  for (const block of arm.samples) for (const v of block) rec.record(v);
  return rec.finish();
}

/**
 * One block: operations one after another until `ms` have passed (at least
 * one), or exactly `count` when given; bounded by {@linkcode MAX_OPERATIONS}.
 * Throws `SamplingError` when more than a tenth (and at least 20) fail.
 */
export async function timedBlock(
  op: () => Promise<unknown>,
  ms: number,
  count: number | undefined,
  ctx: Pick<ScenarioContext, "clock" | "signal">,
): Promise<BlockResult> {
  const samples: number[] = [];
  let errors = 0;
  let first: unknown;
  const end = ctx.clock() + ms;
  const cap = Math.min(count ?? MAX_OPERATIONS, MAX_OPERATIONS);
  for (let i = 0; i < cap && !ctx.signal?.aborted; i++) {
    const t0 = ctx.clock();
    if (count === undefined && i > 0 && t0 >= end) break;
    try {
      await op();
      samples.push((ctx.clock() - t0) * 1e6);
    } catch (err) {
      first ??= err;
      if (++errors >= 20 && errors > (i + 1) * 0.1) {
        const msg = first instanceof Error ? first.message : String(first);
        throw new SamplingError(`${errors} of ${i + 1} requests failed; first: ${msg}`, {
          cause: first,
        });
      }
    }
  }
  return { samples, errors };
}

/** Cluster interval over rounds in place of the sample bootstrap's. */
export function withRoundInterval<T extends { estimate: ResultRow["estimate"] }>(
  item: T,
  arm: ArmRounds,
): T {
  const rounds = arm.samples.filter((s) => s.length > 0);
  if (rounds.length >= 2) item.estimate.medianCi = clusterMedian(rounds).interval;
  return item;
}

/** A transport arm: one transport at one size, and its responses by status. */
interface RowArm {
  id: string;
  transport: string;
  size: number;
  tally: StatusTally;
}

/** The arms of a run under construction, and what must be closed after it. */
interface Arms extends FloorArms {
  rowArms: RowArm[];
  clients: Map<string, SbiClient>;
}

/** Opens one client per transport and adds an arm per transport and size. */
async function addTransportArms(ctx: ScenarioContext, a: Arms, block: BlockOf): Promise<void> {
  for (const transport of ctx.transports) {
    const client = await ctx.openClient(transport);
    a.clients.set(transport, client);
    for (const size of ctx.sizes) {
      const id = `rtt/${transport}/${size}`;
      const tally = new StatusTally(ctx.ok);
      a.rowArms.push({ id, transport, size, tally });
      a.arms.push({
        id,
        block: block(() => rowRequest(ctx, client, size, tally)),
        measureCpu: true,
      });
    }
  }
}

/** The progress step of an interleaved run (plain progress lines count it as one row). */
export const ROUNDS_STEP = "interleaved rounds";

/** The warm-up's share of an interleaved run's time: warm-up ms against rounds × arms × block. */
export function warmShareOf(
  warmupMs: number,
  rounds: { rounds: number; blockMs: number; arms: number },
): number {
  const roundMs = rounds.rounds * rounds.blockMs * Math.max(1, rounds.arms);
  return warmupMs + roundMs > 0 ? warmupMs / (warmupMs + roundMs) : 0;
}

/** Progress of the whole interleaved run as one step whose share never goes back. */
function roundsProgress(ctx: ScenarioContext, a: Arms, options: RttRoundsOptions) {
  const warmShare = warmShareOf(ctx.plan.warmupMs * a.rowArms.length, {
    rounds: options.rounds + options.warmupRounds,
    blockMs: options.blockMs,
    arms: a.arms.length,
  });
  const step = (what: string, f: number) =>
    ctx.onProgress(`${ROUNDS_STEP} · ${what}`, Math.min(1, Math.max(0, f)));
  return {
    /** The warm-up of arm `i`: the first `warmShare` of the step. */
    warmUp: (what: string, i: number) => step(what, (warmShare * i) / a.rowArms.length),
    /** A round, `f` of the rounds done: the rest of the step. */
    round: (what: string, f: number) => step(what, warmShare + (1 - warmShare) * f),
  };
}

/** Each transport arm alone for the plan's warm-up (JIT, connection windows), before the rounds. */
async function warmUpAlone(
  ctx: ScenarioContext,
  a: Arms,
  progress: (what: string, i: number) => void,
): Promise<void> {
  for (const [i, arm] of a.rowArms.entries()) {
    if (ctx.signal?.aborted) break;
    progress(`warm-up ${arm.transport} ${formatBytes(arm.size)}`, i);
    const client = a.clients.get(arm.transport)!;
    await sampleOperation(
      () => rowRequest(ctx, client, arm.size, arm.tally),
      { warmupMs: ctx.plan.warmupMs, sampleMs: 0, samples: 0 },
      1,
      { clock: ctx.clock, signal: ctx.signal },
    ).catch((err) => {
      if (!/Only 0 successful/.test((err as Error).message)) throw err;
    });
  }
}

/** The rtt rows from the rounds, each with its round series and round interval. */
function rowsOf(ctx: ScenarioContext, rowArms: RowArm[], outcome: RoundsOutcome): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const a of rowArms) {
    const arm = outcome.arms[a.id];
    if (arm.samples.flat().length < 2) {
      ctx.notes.push(
        `rtt ${a.transport} ${requestLabel(ctx, a.size)}: no row, ${arm.errors} request(s) ` +
          "failed and fewer than 2 were timed.",
      );
      continue;
    }
    const s = series(arm);
    const n = s.counts.reduce((x, y) => x + y, 0);
    const elapsed = arm.elapsedMs.reduce((x, y) => x + y, 0);
    const extra: Record<string, number> = {};
    if (s.clientCpuNs) extra.clientCpuNsPerRequest = s.clientCpuNs.reduce((x, y) => x + y, 0) / n;
    if (s.serverCpuNs && ctx.endpoints.pid !== undefined) {
      extra.serverCpuNsPerRequest = s.serverCpuNs.reduce((x, y) => x + y, 0) / n;
    }
    const row = withRoundInterval(
      makeRow({
        id: a.id,
        scenario: "rtt",
        transport: a.transport,
        label: `${requestLabel(ctx, a.size)}, warm connection`,
        sizeBytes: a.size,
        concurrency: 1,
        floor: floorFor(a.transport),
        requestsPerSecond: n / (elapsed / 1000),
        errors: arm.errors,
        ...a.tally.fields(),
        ...(Object.keys(extra).length ? { extra } : {}),
      }, pooled(arm)),
      arm,
    );
    row.rounds = s;
    ctx.onRow(row);
    rows.push(row);
  }
  return rows;
}

/** The floors from the rounds, each with its round series and round interval. */
function floorsOf(floorArms: FloorArm[], outcome: RoundsOutcome): FloorRow[] {
  const floors: FloorRow[] = [];
  for (const f of floorArms) {
    const arm = outcome.arms[f.id];
    if (arm.samples.flat().length < 2) continue;
    const samples = pooled(arm);
    floors.push(withRoundInterval({
      source: f.source,
      protocol: f.protocol,
      sizeBytes: f.size,
      ...(f.transport !== undefined ? { transport: f.transport } : {}),
      // The sample bootstrap is replaced by the round interval below: a token resample count.
      estimate: samples.complete
        ? estimate(samples.samples, { resamples: 10 })
        : estimateSampleSet(samples),
      samples,
      rounds: series(arm),
    }, arm));
  }
  return floors;
}

/** The rounds record: schedule, order, machine readings, paired ratios and the noise verdict. */
function roundsRecord(
  ctx: ScenarioContext,
  options: RttRoundsOptions,
  outcome: RoundsOutcome,
  rows: ResultRow[],
  floors: FloorRow[],
): RoundsRecord {
  const ratios = pairedRatios(rows, floors);
  const added = addedTimes(rows, floors);
  // With the server elsewhere or in this process, "other processes" cannot be told apart.
  const serverOwnProcess = ctx.endpoints.pid !== undefined;
  if (!serverOwnProcess && ctx.endpoints.mode === "in-process") {
    ctx.notes.push(
      "The servers ran in this process: the client's CPU per request includes theirs.",
    );
  }
  const noise = assessNoise({
    machine: serverOwnProcess
      ? outcome.machine
      : outcome.machine.map((m) => ({ ...m, otherCores: 0 })),
    rows,
    floors,
    ratios,
    cores: options.cores,
  });
  return {
    rounds: outcome.order.length,
    blockMs: options.blockMs,
    warmupRounds: options.warmupRounds,
    seed: options.seed,
    order: outcome.order,
    roundMs: outcome.roundMs,
    machine: outcome.machine,
    ratios,
    ...(added.length ? { added } : {}),
    noise,
  };
}

/** Runs the rtt rows and the floors in interleaved rounds. */
export async function rttRounds(
  ctx: ScenarioContext,
  options: RttRoundsOptions,
): Promise<RttRoundsResult> {
  const a: Arms = { arms: [], rowArms: [], floorArms: [], clients: new Map(), echoes: [] };
  const block: BlockOf = (op) => (ms) => timedBlock(op, ms, options.blockCount, ctx);
  try {
    await addTransportArms(ctx, a, block);
    await addFloorArms(ctx, a, block, options.floorSizes);
    // The deno stack's rows stand over its bare runtime; the native stack's over its C stacks alone.
    if (ctx.config.stack === "deno") await addBareArms(ctx, a, block, options.floorSizes);
    else await addStacksArms(ctx, a, options.stacksSizes ?? [], options.blockCount);
    const progress = roundsProgress(ctx, a, options);
    await warmUpAlone(ctx, a, progress.warmUp);
    const collector = roundCollector(undefined, ctx.clock);
    const outcome = await runRounds(a.arms, {
      betweenRounds: collector.betweenRounds,
      rounds: options.rounds,
      blockMs: options.blockMs,
      warmupRounds: options.warmupRounds,
      rng: createRng(options.seed),
      probe: options.probe,
      clock: ctx.clock,
      onProgress: progress.round,
      signal: ctx.signal,
    });
    const note = collectionsNote(collector.done);
    if (note) ctx.notes.push(note);
    const rows = rowsOf(ctx, a.rowArms, outcome);
    const floors = floorsOf(a.floorArms, outcome);
    return { rows, floors, rounds: roundsRecord(ctx, options, outcome, rows, floors) };
  } finally {
    await Promise.allSettled(a.echoes.map((e) => e.close()));
  }
}
