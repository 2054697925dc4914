/**
 * The interleaved round runner. Every arm (a transport × size, a floor) is
 * held ready for the whole run; each round gives every arm one short block,
 * in a new random order, so whatever the machine does in a given second
 * lands on every arm alike (Abedi & Brecht, ICPE 2017). It never writes to
 * the console and reads the machine only through an injected probe.
 */
import type { MachineProbe, MachineSnapshot } from "./machine_probe.ts";
import type { Rng } from "../stats/rounds_stats.ts";
import { shuffled } from "../stats/rounds_stats.ts";
import { type Clock, defaultClock } from "./sampler.ts";

/** Default number of measured rounds. */
export const DEFAULT_ROUNDS = 60;
/** Default length of one arm's block (ms). */
export const DEFAULT_BLOCK_MS = 30;
/** Default rounds run first and thrown away. */
export const DEFAULT_WARMUP_ROUNDS = 2;

/** What one block of an arm gave. */
export interface BlockResult {
  /** Durations of the block's successful operations (ns), in order. */
  samples: number[];
  /** Failed operations. */
  errors: number;
}

/** One arm of a run. */
export interface RoundArm {
  /** Stable id (the row's or floor's id). */
  id: string;
  /** Runs one block of about `ms` milliseconds. */
  block(ms: number): Promise<BlockResult>;
  /** Charge the client's and server's CPU time of each block to this arm. Default false. */
  measureCpu?: boolean;
}

/** Options of {@linkcode runRounds}. */
export interface RoundsOptions {
  /** Measured rounds. Default {@linkcode DEFAULT_ROUNDS}. */
  rounds?: number;
  /** Block length per arm and round (ms). Default {@linkcode DEFAULT_BLOCK_MS}. */
  blockMs?: number;
  /** Rounds run first and discarded. Default {@linkcode DEFAULT_WARMUP_ROUNDS}. */
  warmupRounds?: number;
  /** Random source of the orders (seeded by the caller). */
  rng: Rng;
  /** Reads the machine around CPU-measured blocks. Default none. */
  probe?: MachineProbe;
  /** Clock. Default `performance.now`. */
  clock?: Clock;
  /** Progress (0…1). */
  onProgress?: (label: string, fraction: number) => void;
  /** Stops after the current block. */
  signal?: AbortSignal;
  /**
   * Runs before every round (the discarded ones too), outside its blocks and its round time: the
   * benchmark collects the client's garbage here ({@linkcode roundCollector}). Default none.
   */
  betweenRounds?: () => void | Promise<void>;
}

/** Everything an arm gave over the measured rounds. */
export interface ArmRounds {
  /** Samples of each round's block (ns). */
  samples: number[][];
  /** Failed operations over all rounds. */
  errors: number;
  /** Wall time of each round's block (ms). */
  elapsedMs: number[];
  /** Client CPU time of each block (s), when measured. */
  clientCpuS?: number[];
  /** Server CPU time of each block (s), when measured. */
  serverCpuS?: number[];
}

/** What the machine did during one round's CPU-measured blocks. */
export interface RoundMachine {
  /** Steal time ÷ all CPU time. */
  stealShare: number;
  /** CPU busy outside the client and the server, in cores. */
  otherCores: number;
  /** One-minute load average at the round's end. */
  load1: number;
}

/** The outcome of a run of rounds. */
export interface RoundsOutcome {
  /** Arm ids in the order each measured round ran them. */
  order: string[][];
  /** Per arm, its blocks. */
  arms: Record<string, ArmRounds>;
  /** Wall time of each measured round (ms). */
  roundMs: number[];
  /** Per measured round, what the machine did (absent without a probe). */
  machine: RoundMachine[];
}

/** Runs `arms` in interleaved rounds. */
export async function runRounds(
  arms: readonly RoundArm[],
  options: RoundsOptions,
): Promise<RoundsOutcome> {
  const rounds = options.rounds ?? DEFAULT_ROUNDS;
  const blockMs = options.blockMs ?? DEFAULT_BLOCK_MS;
  const warmupRounds = options.warmupRounds ?? DEFAULT_WARMUP_ROUNDS;
  const clock = options.clock ?? defaultClock;
  if (!(Number.isInteger(rounds) && rounds >= 2)) {
    throw new RangeError(`Rounds must be a whole number ≥ 2, got ${rounds}`);
  }
  if (!(Number.isInteger(warmupRounds) && warmupRounds >= 0)) {
    throw new RangeError(`Warm-up rounds must be a whole number ≥ 0, got ${warmupRounds}`);
  }
  if (!(blockMs > 0 && blockMs <= 10_000)) {
    throw new RangeError(`Block must be in (0, 10000] ms, got ${blockMs}`);
  }
  if (arms.length === 0) throw new RangeError("No arms to run");
  if (new Set(arms.map((a) => a.id)).size !== arms.length) {
    throw new RangeError("Arm ids must be unique");
  }
  const out: RoundsOutcome = { order: [], arms: {}, roundMs: [], machine: [] };
  for (const a of arms) {
    out.arms[a.id] = {
      samples: [],
      errors: 0,
      elapsedMs: [],
      ...(a.measureCpu && options.probe ? { clientCpuS: [], serverCpuS: [] } : {}),
    };
  }
  const total = warmupRounds + rounds;
  for (let r = 0; r < total && !options.signal?.aborted; r++) {
    const measured = r >= warmupRounds;
    const order = shuffled(arms, options.rng);
    await options.betweenRounds?.();
    const roundStart = clock();
    let steal = 0, all = 0, other = 0, wall = 0, load1 = 0;
    const done: { arm: RoundArm; res: BlockResult; ms: number; cpu?: MachineSnapshot }[] = [];
    for (const arm of order) {
      if (options.signal?.aborted) break;
      const probe = arm.measureCpu && measured ? options.probe : undefined;
      const before = await probe?.snapshot("start");
      const t0 = clock();
      const res = await arm.block(blockMs);
      const t1 = clock();
      const after = before && await probe?.snapshot("end");
      if (!measured) continue;
      const d = before && after ? delta(before, after) : undefined;
      done.push({ arm, res, ms: t1 - t0, cpu: d });
      if (d) {
        steal += d.stealS;
        all += d.totalS;
        // Summed unclamped: /proc/stat counts in 10 ms ticks, so one block's reading may dip below zero.
        other += d.busyS - d.clientS - d.serverS;
        wall += (t1 - t0) / 1000;
        load1 = d.load1;
      }
    }
    // An interrupted round is dropped whole, so every arm keeps the same rounds.
    if (!measured || options.signal?.aborted) continue;
    for (const { arm, res, ms, cpu } of done) {
      const rec = out.arms[arm.id];
      rec.samples.push(res.samples);
      rec.errors += res.errors;
      rec.elapsedMs.push(ms);
      rec.clientCpuS?.push(cpu ? cpu.clientS : NaN);
      rec.serverCpuS?.push(cpu ? cpu.serverS : NaN);
    }
    out.order.push(order.map((a) => a.id));
    out.roundMs.push(clock() - roundStart);
    if (all > 0 && wall > 0) {
      out.machine.push({ stealShare: steal / all, otherCores: Math.max(0, other / wall), load1 });
    }
    options.onProgress?.(
      r < warmupRounds
        ? `discarded round ${r + 1} of ${warmupRounds}`
        : `round ${r + 1 - warmupRounds} of ${rounds}`,
      (r + 1) / total,
    );
  }
  return out;
}

/** This process's collector when V8 exposes it (`--expose-gc`, which `deno task bench` passes). */
export function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? gc as () => void : undefined;
}

/** What {@linkcode roundCollector} did. */
export interface Collections {
  /** Full collections run between rounds. */
  count: number;
  /** Their wall time (ms), spent outside every block and round time. */
  ms: number;
}

/**
 * A {@linkcode RoundsOptions.betweenRounds} hook that runs a full garbage
 * collection of this process before each round, when `gc` is given (by
 * default the exposed collector; without `--expose-gc` it does nothing).
 * Collected before each round, the client's heap starts every round from
 * what is live (it grows by 2–3 MB over a round of the default schedule),
 * and traced runs met no full collection of V8's own during the rounds; a
 * round much longer than the default may still meet one.
 */
export function roundCollector(
  gc: (() => void) | undefined = exposedGc(),
  clock: Clock = defaultClock,
): { betweenRounds: () => void; done: Collections } {
  const done: Collections = { count: 0, ms: 0 };
  return {
    done,
    betweenRounds: () => {
      if (!gc) return;
      const t0 = clock();
      gc();
      done.ms += clock() - t0;
      done.count++;
    },
  };
}

/** The run's note on the collections between rounds, or none when there were none. */
export function collectionsNote(done: Collections): string | undefined {
  if (done.count === 0) return undefined;
  return `The client ran a full garbage collection before each round, outside the timed blocks ` +
    `(${done.count}, ${Math.round(done.ms)} ms in all): its CPU per request leaves them out.`;
}

function delta(a: MachineSnapshot, b: MachineSnapshot): MachineSnapshot {
  return {
    busyS: b.busyS - a.busyS,
    stealS: b.stealS - a.stealS,
    totalS: b.totalS - a.totalS,
    clientS: b.clientS - a.clientS,
    serverS: b.serverS - a.serverS,
    load1: b.load1,
  };
}
