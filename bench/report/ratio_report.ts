/**
 * What every report leads with for a run measured in rounds: the noise line
 * (when the machine passed a threshold), the paired transport ratios with
 * their intervals over rounds, the schedule in one line, and the CPU time per
 * request. Pure functions of the run record, shared by the terminal table,
 * Markdown and HTML.
 */
import { noiseLine } from "../record/rounds_summary.ts";
import type { BenchRun, RatioRecord } from "../record/schema.ts";
import { formatBytes, formatDuration, formatMultiple } from "../../lib/units.ts";

/** `1.38× [1.31 – 1.46]`. */
export function ratioWithInterval(r: Pick<RatioRecord, "ratio" | "interval">): string {
  return `${formatMultiple(r.ratio)} [${r.interval.lower.toFixed(2)} – ${
    r.interval.upper.toFixed(2)
  }]`;
}

/** The run's noise line, or undefined (quiet, or not measured in rounds). */
export function runNoiseLine(run: BenchRun): string | undefined {
  return noiseLine(run.rounds?.noise);
}

/** The schedule in one line, e.g. `60 interleaved rounds of 30 ms per arm …`. */
export function scheduleLine(run: BenchRun): string | undefined {
  const r = run.rounds;
  if (!r) return undefined;
  const ms = r.roundMs.length ? r.roundMs.reduce((a, b) => a + b, 0) / r.roundMs.length : 0;
  const arms = r.order[0]?.length ?? 0;
  const block = run.config.blockMs !== undefined
    ? `${+run.config.blockMs.toFixed(1)} ms`
    : `${Math.round((run.config.samples ?? 0) / Math.max(1, r.rounds))} requests`;
  return `${r.rounds} interleaved rounds (seed ${r.seed}, ${r.warmupRounds} discarded first): each round gives each of ${arms} arms a block of ${block} in a new random order; a round took ${
    Math.round(ms)
  } ms on average. Intervals resample rounds, not samples.`;
}

/** The run's paired ratios but the floor ones (transports, or the peers scenario's) as table cells. */
export function ratioTable(run: BenchRun): { header: string[]; body: string[][] } {
  const rows = (run.rounds?.ratios ?? []).filter((r) => r.kind !== "floor");
  return {
    header: ["ratio (paired rounds)", "size", "value [95 % CI]", "median of rounds", "round CV"],
    body: rows.map((r) => [
      r.label,
      r.sizeBytes !== undefined ? formatBytes(r.sizeBytes) : "–",
      ratioWithInterval(r),
      formatMultiple(r.medianOfRounds),
      `${(r.cv * 100).toFixed(1)} %`,
    ]),
  };
}

/** The paired multiple of a row (or floor) over its kernel floor, by the numerator's id. */
export function floorRatio(run: BenchRun, id: string): RatioRecord | undefined {
  return run.rounds?.ratios.find((r) => r.kind === "floor" && r.numerator === id);
}

/** CPU time per request of the client and server for each row that has it. */
export function cpuTable(run: BenchRun): { header: string[]; body: string[][] } {
  const rows = run.rows.filter((r) => r.extra?.clientCpuNsPerRequest !== undefined);
  return {
    header: ["CPU per request", "size", "client", "server", "latency median"],
    body: rows.map((r) => [
      r.transport,
      r.sizeBytes !== undefined ? formatBytes(r.sizeBytes) : "–",
      formatDuration(r.extra!.clientCpuNsPerRequest),
      r.extra!.serverCpuNsPerRequest !== undefined
        ? formatDuration(r.extra!.serverCpuNsPerRequest)
        : "–",
      formatDuration(r.estimate.median),
    ]),
  };
}

/** What the CPU figure answers, in one sentence. */
export const CPU_NOTE =
  "CPU per request is each process's run time over the arm's blocks divided by its requests: the cost of a request, which a busy machine moves far less than latency (latency answers how long a request waits; CPU answers how much machine it takes).";

/** The repeats of a `--runs N` run: each run's transport ratios, then their spread. */
export function repeatsTable(run: BenchRun): { header: string[]; body: string[][] } {
  const rep = run.repeats;
  if (!rep || rep.runs.length === 0) return { header: [], body: [] };
  const header = [
    "ratio",
    "size",
    ...rep.runs.map((_, i) => `run ${i + 1}`),
    "mean",
    "max dev.",
  ];
  const body = rep.spread.map((s) => {
    const size = rep.runs.flatMap((r) => r.ratios).find((r) => r.id === s.id)?.sizeBytes;
    return [
      s.label,
      size !== undefined ? formatBytes(size) : "–",
      ...rep.runs.map((r) => {
        const x = r.ratios.find((q) => q.id === s.id);
        return x ? ratioWithInterval(x) + (r.noisy ? " *" : "") : "–";
      }),
      formatMultiple(s.mean),
      `±${(s.maxDeviation * 100).toFixed(1)} %`,
    ];
  });
  return { header, body };
}
