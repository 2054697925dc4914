/**
 * Repeated runs (`lab bench --runs N`): N runs in turn, each with its own
 * server process and connections, and what their ratios say about
 * reproducibility. The client process (and its JIT) is shared between runs.
 */
import type { BenchRun, RatioRecord, RepeatsRecord } from "../record/schema.ts";

/** The repeats of `runs` (in order): every run's transport (or peers) ratios and their spread. */
export function repeatsRecord(runs: readonly BenchRun[]): RepeatsRecord {
  if (runs.length === 0) throw new RangeError("repeatsRecord needs at least one run");
  const ratiosOf = (r: BenchRun): RatioRecord[] =>
    (r.rounds?.ratios ?? []).filter((q) => q.kind !== "floor");
  const ids: { id: string; label: string }[] = [];
  for (const r of runs) {
    for (const q of ratiosOf(r)) if (!ids.some((x) => x.id === q.id)) ids.push(q);
  }
  return {
    runs: runs.map((r) => ({
      startedAt: r.startedAt,
      durationMs: r.durationMs,
      ratios: ratiosOf(r),
      noisy: r.rounds?.noise.noisy ?? false,
    })),
    spread: ids.map(({ id, label }) => {
      const values = runs.flatMap((r) =>
        ratiosOf(r).filter((q) => q.id === id).map((q) => q.ratio)
      );
      const mean = values.reduce((a, b) => a + b, 0) / values.length;
      return {
        id,
        label,
        mean,
        min: Math.min(...values),
        max: Math.max(...values),
        maxDeviation: Math.max(...values.map((v) => Math.abs(v / mean - 1))),
      };
    }),
  };
}

/** Options of {@linkcode runRepeated}. */
export interface RepeatOptions<O> {
  /** Called before run `i` (0-based) starts. */
  onRun?: (i: number, n: number) => void;
  /** The options of run `i`, from the shared ones (default: the same for every run). */
  optionsFor?: (i: number, base: O) => O;
}

/**
 * Runs `runOne` `n` times in turn and returns the last run's record with
 * `repeats` filled in from all of them. Stops early (with what it has) when
 * `signal` is aborted.
 */
export async function runRepeated<O extends { signal?: AbortSignal }>(
  n: number,
  base: O,
  runOne: (options: O) => Promise<BenchRun>,
  options: RepeatOptions<O> = {},
): Promise<BenchRun> {
  if (!(Number.isInteger(n) && n >= 1)) {
    throw new RangeError(`Runs must be a whole number ≥ 1, got ${n}`);
  }
  const runs: BenchRun[] = [];
  for (let i = 0; i < n; i++) {
    if (i > 0 && base.signal?.aborted) break;
    options.onRun?.(i, n);
    runs.push(await runOne(options.optionsFor ? options.optionsFor(i, base) : base));
  }
  const last = runs[runs.length - 1];
  return n > 1 ? { ...last, repeats: repeatsRecord(runs) } : last;
}
