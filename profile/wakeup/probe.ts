/**
 * The wake-up probe's runs: timed rounds of every arm in a fresh random order
 * per round, and callgrind counts of each echo side's instructions per round
 * trip (two runs that differ only in their count; what both share cancels).
 * Returns plain records; report.ts renders them.
 */
import { createRng, roundOrders } from "../../bench/mod.ts";
import { perUnitByObject, readCallgrindFile } from "../callgrind.ts";
import { type Arm, type ArmPaths, type ArmRun, ARMS, runArm } from "./arms.ts";

/** What the probe runs. */
export interface ProbeOptions {
  /** Timed rounds; 0 runs none. */
  rounds: number;
  /** Round trips recorded per arm and round. */
  count: number;
  /** Datagram payload in bytes. */
  size: number;
  /** Round trips sent before each recorded loop. */
  warmUp: number;
  /** Datagrams in flight per sample, sent back to back (1: a ping-pong). */
  burst: number;
  /** Round trips of the larger callgrind run of each arm (the smaller sends a quarter); 0 runs none. */
  callgrindCount: number;
  /** Seed of the rounds' order. */
  seed: number;
  /** Called with one line per finished run. Default: nothing. */
  progress?: (line: string) => void;
}

/** One arm's results. */
export interface ArmResult {
  arm: Arm;
  /** Recorded burst times per round, ns (round-trip times when the burst is 1). */
  rounds: number[][];
  /** Peer summary and side counters of each round. */
  runs: Omit<ArmRun, "samples">[];
  /** Instructions per round trip by object file, from callgrind (when run). */
  instructions?: Record<string, number>;
  /** The callgrind runs' own peer summaries and side counters. */
  callgrindRuns?: Omit<ArmRun, "samples">[];
}

/** The probe's raw record. */
export interface ProbeRecord {
  options: Omit<ProbeOptions, "progress">;
  arms: ArmResult[];
}

async function callgrindArm(
  arm: Arm,
  paths: ArmPaths,
  o: ProbeOptions,
  dir: string,
): Promise<{ perRoundTrip: Record<string, number>; runs: Omit<ArmRun, "samples">[] }> {
  const counts = [Math.max(1, Math.floor(o.callgrindCount / 4)), o.callgrindCount];
  const maps: Map<string, number>[] = [];
  const runs: Omit<ArmRun, "samples">[] = [];
  for (const count of counts) {
    const file = `${dir}/${arm}-${count}.callgrind`;
    // No time limit under callgrind: both runs must send exactly their count.
    const r = await runArm(arm, paths, {
      count,
      size: o.size,
      warmUp: o.warmUp,
      burst: o.burst,
      maxMs: 3_600_000,
      callgrindOut: file,
    });
    runs.push({ peer: r.peer, side: r.side });
    maps.push(await readCallgrindFile(file));
    o.progress?.(`callgrind ${arm} ${count} round trips`);
  }
  return {
    perRoundTrip: Object.fromEntries(perUnitByObject(maps[0], counts[0], maps[1], counts[1])),
    runs,
  };
}

/** Runs the probe: the timed rounds first, then the callgrind runs. */
export async function runProbe(paths: ArmPaths, o: ProbeOptions): Promise<ProbeRecord> {
  const results = new Map<Arm, ArmResult>(
    ARMS.map((arm) => [arm, { arm, rounds: [], runs: [] }]),
  );
  for (
    const [i, order] of (o.rounds ? roundOrders(ARMS, o.rounds, createRng(o.seed)) : []).entries()
  ) {
    for (const arm of order) {
      const r = await runArm(arm, paths, {
        count: o.count,
        size: o.size,
        warmUp: o.warmUp,
        burst: o.burst,
        maxMs: 10_000,
      });
      const res = results.get(arm)!;
      res.rounds.push(r.samples);
      res.runs.push({ peer: r.peer, side: r.side });
    }
    o.progress?.(`round ${i + 1}/${o.rounds}: ${order.join(", ")}`);
  }
  if (o.callgrindCount > 0) {
    const dir = await Deno.makeTempDir({ prefix: "sbilab-wakeup-callgrind-" });
    try {
      for (const arm of ARMS) {
        const c = await callgrindArm(arm, paths, o, dir);
        const res = results.get(arm)!;
        res.instructions = c.perRoundTrip;
        res.callgrindRuns = c.runs;
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  const { progress: _, ...options } = o;
  return { options, arms: [...results.values()] };
}
