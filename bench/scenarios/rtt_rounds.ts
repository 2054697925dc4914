/**
 * `rtt` in interleaved rounds: every transport × size and every floor is an
 * arm, all connections open and warm for the whole run, each round gives each
 * arm one short block in a new random order. Rows and floors come out with
 * their round series; the run's paired ratios and noise come with them.
 */
import { formatBytes } from "../../lib/units.ts";
import { MAX_OPERATIONS, sampleOperation, SamplingError } from "../sampler.ts";
import { estimateSampleSet, Recorder, type SampleSet } from "../recorder.ts";
import { createRng, estimate } from "../stats.ts";
import { clusterMedian, cv, roundMedians } from "../rounds_stats.ts";
import { FloorError, kernelPingPong, openRuntimeEcho, type RuntimeEcho } from "../floors.ts";
import { type ArmRounds, type BlockResult, type RoundArm, runRounds } from "../rounds.ts";
import type { MachineProbe } from "../machine_probe.ts";
import { assessNoise, floorId, pairedRatios } from "../rounds_summary.ts";
import type { FloorKind, FloorRow, ResultRow, RoundSeries, RoundsRecord } from "../schema.ts";
import type { SbiClient } from "../../transports/types.ts";
import {
  floorFor,
  makeRow,
  requestLabel,
  rowRequest,
  type ScenarioContext,
  StatusTally,
} from "./context.ts";

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

/** Runs the rtt rows and the floors in interleaved rounds. */
export async function rttRounds(
  ctx: ScenarioContext,
  options: RttRoundsOptions,
): Promise<RttRoundsResult> {
  const clients = new Map<string, SbiClient>();
  const echoes: RuntimeEcho[] = [];
  const arms: RoundArm[] = [];
  const rowArms: { id: string; transport: string; size: number; tally: StatusTally }[] = [];
  const floorArms: {
    id: string;
    source: "kernel" | "runtime";
    protocol: FloorKind;
    size: number;
  }[] = [];
  const block = (op: () => Promise<unknown>) => (ms: number) =>
    timedBlock(op, ms, options.blockCount, ctx);
  try {
    for (const transport of ctx.transports) {
      const client = await ctx.openClient(transport);
      clients.set(transport, client);
      for (const size of ctx.sizes) {
        const id = `rtt/${transport}/${size}`;
        const tally = new StatusTally(ctx.ok);
        rowArms.push({ id, transport, size, tally });
        arms.push({
          id,
          block: block(() => rowRequest(ctx, client, size, tally)),
          measureCpu: true,
        });
      }
    }
    for (const size of options.floorSizes) {
      for (const protocol of ["tcp", "udp"] as const) {
        const kid = floorId({ source: "kernel", protocol, sizeBytes: size });
        try {
          await kernelPingPong(protocol, size, 50, 100, 10, 0); // built and runnable
          floorArms.push({ id: kid, source: "kernel", protocol, size });
          arms.push({
            id: kid,
            // A block on a starved machine may record few round trips, or fail: the round keeps
            // what it got (an empty block drops that round from this floor's ratios).
            block: (ms) =>
              kernelPingPong(protocol, size, 1_000_000, ms, 50, 0).then(
                (samples) => ({ samples, errors: 0 }),
                (err) => {
                  if (!(err instanceof FloorError)) throw err;
                  return { samples: [], errors: 1 };
                },
              ),
          });
        } catch (err) {
          if (!(err instanceof FloorError || (err as Error).name === "NativeBuildError")) throw err;
          ctx.notes.push(
            `The kernel ${protocol} floor at ${size} B was not measured: ${
              (err as Error).message
            }.`,
          );
        }
        const rid = floorId({ source: "runtime", protocol, sizeBytes: size });
        try {
          const echo = await openRuntimeEcho(protocol, size);
          echoes.push(echo);
          floorArms.push({ id: rid, source: "runtime", protocol, size });
          arms.push({ id: rid, block: block(() => echo.roundTrip()) });
        } catch (err) {
          if (!(err instanceof FloorError)) throw err;
          ctx.notes.push(
            `The runtime ${protocol} floor at ${size} B was not measured: ${
              (err as Error).message
            }.`,
          );
        }
      }
    }
    // Warm-up: each transport arm alone for the plan's warm-up first (JIT, connection windows), then discarded rounds.
    const warmEach = ctx.plan.warmupMs;
    // One progress step for the whole interleaved run: the warm-up's share of its time first,
    // then the rounds', so the share never goes back and a round is not taken for a row.
    const warmShare = warmShareOf(warmEach * rowArms.length, {
      rounds: options.rounds + options.warmupRounds,
      blockMs: options.blockMs,
      arms: arms.length,
    });
    const step = (what: string, f: number) =>
      ctx.onProgress(`${ROUNDS_STEP} · ${what}`, Math.min(1, Math.max(0, f)));
    for (const [i, a] of rowArms.entries()) {
      if (ctx.signal?.aborted) break;
      step(`warm-up ${a.transport} ${formatBytes(a.size)}`, (warmShare * i) / rowArms.length);
      const client = clients.get(a.transport)!;
      await sampleOperation(
        () => rowRequest(ctx, client, a.size, a.tally),
        { warmupMs: warmEach, sampleMs: 0, samples: 0 },
        1,
        { clock: ctx.clock, signal: ctx.signal },
      ).catch((err) => {
        if (!/Only 0 successful/.test((err as Error).message)) throw err;
      });
    }
    const outcome = await runRounds(arms, {
      rounds: options.rounds,
      blockMs: options.blockMs,
      warmupRounds: options.warmupRounds,
      rng: createRng(options.seed),
      probe: options.probe,
      clock: ctx.clock,
      onProgress: (what, f) => step(what, warmShare + (1 - warmShare) * f),
      signal: ctx.signal,
    });
    const rows: ResultRow[] = [];
    for (const a of rowArms) {
      const arm = outcome.arms[a.id];
      if (arm.samples.flat().length < 2) {
        ctx.notes.push(
          `rtt ${a.transport} ${requestLabel(ctx, a.size)}: no row, ${arm.errors} request(s) ` +
            "failed without a response and fewer than 2 were timed.",
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
    const floors: FloorRow[] = [];
    for (const f of floorArms) {
      const arm = outcome.arms[f.id];
      if (arm.samples.flat().length < 2) continue;
      const samples = pooled(arm);
      floors.push(withRoundInterval({
        source: f.source,
        protocol: f.protocol,
        sizeBytes: f.size,
        // The sample bootstrap is replaced by the round interval below: a token resample count.
        estimate: samples.complete
          ? estimate(samples.samples, { resamples: 10 })
          : estimateSampleSet(samples),
        samples,
        rounds: series(arm),
      }, arm));
    }
    const ratios = pairedRatios(rows, floors);
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
      rows,
      floors,
      rounds: {
        rounds: outcome.order.length,
        blockMs: options.blockMs,
        warmupRounds: options.warmupRounds,
        seed: options.seed,
        order: outcome.order,
        roundMs: outcome.roundMs,
        machine: outcome.machine,
        ratios,
        noise,
      },
    };
  } finally {
    await Promise.allSettled(echoes.map((e) => e.close()));
  }
}
