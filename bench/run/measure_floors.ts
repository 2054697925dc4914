/**
 * The runner's floors step: before the scenario, on a quiet machine, the
 * kernel and runtime round trips over TCP and UDP at the run's sizes (an
 * interleaved `rtt` run measures them inside its rounds instead).
 */
import {
  FloorError,
  MAX_FLOOR_BYTES,
  measureKernelFloor,
  measureRuntimeFloor,
} from "../measure/floors.ts";
import { type Clock, defaultClock, type SamplingPlan } from "../measure/sampler.ts";
import type { FloorRow } from "../record/schema.ts";
import type { BenchOptions } from "./options.ts";
import type { ResolvedRun } from "./resolve.ts";

/** The floors measured before the scenario, or why there are none. */
export interface FloorsStep {
  rows: FloorRow[];
  skipped?: string;
}

/** Why the run has no floors of its own (target, on request), if it has none. */
function skippedBecause(options: BenchOptions): string | undefined {
  if (options.target) {
    return "Floors were skipped: the server runs elsewhere (--target), so loopback floors do not apply.";
  }
  if (options.skipFloors) return "Floors were skipped on request.";
  if (options.request) {
    return "Floors were skipped: a given request (--path) has no body size a floor could match.";
  }
  return undefined;
}

/** Measures the floors a sequential run needs; failures become notes in `run.notes`. */
export async function measureFloors(run: ResolvedRun, options: BenchOptions): Promise<FloorsStep> {
  const skipped = skippedBecause(options);
  // Interleaved, the floors are measured inside the rounds, beside the transports.
  if (skipped !== undefined || run.interleaved) return { rows: [], skipped };
  const { plan, quick, sizes } = run;
  const clock: Clock = options.clock ?? defaultClock;
  const progress = options.onProgress ?? (() => {});
  const floorPlan: SamplingPlan = {
    warmupMs: Math.min(plan.warmupMs, quick ? 100 : 500),
    sampleMs: Math.min(plan.sampleMs, quick ? 300 : 2000),
    samples: plan.samples,
  };
  const floorSizes = run.scenario === "rtt" ? sizes : [sizes[0]];
  const usable = floorSizes.filter((s) => s <= MAX_FLOOR_BYTES);
  const rows: FloorRow[] = [];
  for (const size of usable.length ? usable : [256]) {
    for (const protocol of ["tcp", "udp"] as const) {
      for (const source of ["kernel", "runtime"] as const) {
        if (options.signal?.aborted) break;
        progress(`floor ${source} ${protocol} ${size} B`, 0);
        try {
          const f = source === "kernel"
            ? await measureKernelFloor(protocol, size, floorPlan)
            : await measureRuntimeFloor(protocol, size, floorPlan, clock);
          rows.push(f);
          options.onFloor?.(f);
        } catch (err) {
          if (!(err instanceof FloorError || (err as Error).name === "NativeBuildError")) {
            throw err;
          }
          run.notes.push(
            `The ${source} ${protocol} floor at ${size} B was not measured: ${
              (err as Error).message
            }.`,
          );
        }
        progress(`floor ${source} ${protocol} ${size} B`, 1);
      }
    }
  }
  return { rows };
}
