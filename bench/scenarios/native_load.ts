/**
 * Scenario rows from the native load engines (`--engine native`): plans built
 * from the run's endpoints, engine progress mapped to the runner's progress,
 * the engine's histogram turned into a row's sample set, and the CPU each side
 * used while a row ran (to say which side saturated).
 */
import type { TransportName } from "../../transports/types.ts";
import { resolveTls } from "../../transports/tls.ts";
import {
  type LoadPlan,
  type LoadResult,
  loadTarget,
  runLoad,
  type TargetOptions,
} from "../../load/mod.ts";
import * as hdr from "hdr-histogram-js";
import { DEFAULT_OK, parseStatusSet, tallyStatuses } from "../../lib/status_set.ts";
import type { SampleSet } from "../stats/recorder.ts";
import type { ResultRow } from "../record/schema.ts";
import { makeRow, type ScenarioContext } from "./context.ts";

/** Which request path drives a row. */
export type Engine = "native" | "sbi";

/** Transports the native engines can load today. */
export const NATIVE_TRANSPORTS: readonly TransportName[] = ["h2c", "h2-tls", "h3"];

/** Quantiles kept as a row's stand-in for raw samples (the engine keeps only a histogram). */
const QUANTILES = 1000;

/** What a row asks of the engine, beyond the target. */
export interface NativeRowPlan extends TargetOptions {
  /** Path and query of every request. */
  path: string;
  connections?: number;
  streams?: number;
  rate?: number;
  /** Measured time in ms (default: the run's sampling time). */
  durationMs?: number;
  /** Warm-up in ms (default: the run's warm-up). */
  warmupMs?: number;
  /** Requests instead of a duration. */
  requests?: number;
  /** Most requests per connection. */
  requestsPerConnection?: number;
}

/** CPU seconds (user + system) of a process so far; NaN when unreadable. */
export function processCpuSeconds(pid: number | "self"): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[11], [12] are utime and stime (the 14th and 15th of the whole line), in ticks of 1/100 s
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Builds the plan of one row from the run's endpoints; undefined when the engine cannot load the transport. */
export async function nativePlan(
  ctx: ScenarioContext,
  transport: TransportName,
  row: NativeRowPlan,
): Promise<LoadPlan | undefined> {
  if (!NATIVE_TRANSPORTS.includes(transport)) return undefined;
  const base = ctx.endpoints.urls[transport];
  if (!base) throw new RangeError(`No endpoint for transport ${transport}`);
  const url = new URL(row.path, base.replace("//localhost", "//127.0.0.1"));
  const target = await loadTarget(url.href, { ...row, h3: transport === "h3" });
  const tls = transport === "h2c" ? undefined : await resolveTls(ctx.endpoints.tls ?? {});
  const { path: _p, ...rest } = row;
  const plan: LoadPlan = {
    ...target,
    connections: rest.connections ?? 1,
    streams: rest.streams ?? 1,
    rate: rest.rate,
    ...(rest.requests !== undefined
      ? { requests: rest.requests }
      : { durationMs: rest.durationMs ?? ctx.plan.sampleMs }),
    warmupMs: rest.warmupMs ?? ctx.plan.warmupMs,
    requestsPerConnection: rest.requestsPerConnection,
  };
  if (tls) {
    plan.insecure = tls.insecure;
    plan.caPem = new TextEncoder().encode(tls.caPem.join("\n"));
    if (tls.serverName) plan.serverName = tls.serverName;
  }
  return plan;
}

/** A finished native row: the engine's result and the CPU share (of one core) each side used. */
export interface NativeRun {
  result: LoadResult;
  clientCpu: number;
  serverCpu: number;
  /** Responses whose status was outside the run's accepted set. */
  failed: number;
}

/** Runs one plan with progress and abort wired to the run, measuring both sides' CPU. */
export async function runNative(
  ctx: ScenarioContext,
  label: string,
  plan: LoadPlan,
): Promise<NativeRun> {
  const total = (plan.warmupMs ?? 0) + (plan.durationMs ?? 0);
  const pid = ctx.endpoints.pid;
  const c0 = processCpuSeconds("self"), s0 = pid ? processCpuSeconds(pid) : NaN;
  const t0 = performance.now();
  const result = await runLoad(plan, {
    signal: ctx.signal,
    intervalMs: 100,
    onProgress: (p) => {
      const f = total > 0
        ? p.elapsedNs / 1e6 / total
        : p.completed / Math.max(1, plan.requests ?? 1);
      ctx.onProgress(label, Math.min(1, f));
    },
  });
  const wall = (performance.now() - t0) / 1000;
  const clientCpu = (processCpuSeconds("self") - c0) / wall;
  const serverCpu = pid ? (processCpuSeconds(pid) - s0) / wall : NaN;
  const failed = tallyStatuses(result.status, ctx.ok ?? parseStatusSet(DEFAULT_OK)).failed;
  return { result, clientCpu, serverCpu, failed };
}

/** A row's sample set from the engine: the histogram, with evenly spaced quantiles standing in for raw samples. */
export function nativeSampleSet(result: LoadResult, kind: "corrected" | "uncorrected"): SampleSet {
  const histogram = result.histograms[kind];
  const h = hdr.decodeFromCompressedBase64(histogram);
  const n = Math.min(QUANTILES, h.totalCount);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) samples.push(h.getValueAtPercentile(((i + 0.5) / n) * 100));
  return { count: h.totalCount, complete: false, samples, histogram };
}

/** The fields every native row adds to its `extra` figures. */
export function nativeExtra(run: NativeRun): Record<string, number> {
  const out: Record<string, number> = {
    clientCpu: run.clientCpu,
    sent: run.result.sent,
    partial: run.result.partial ? 1 : 0,
  };
  if (Number.isFinite(run.serverCpu)) out.serverCpu = run.serverCpu;
  return out;
}

/** A row from a native run: the engine, its rate, errors, statuses, figures and histogram filled in. */
export function nativeRow(
  fields: Omit<
    ResultRow,
    "estimate" | "samples" | "errors" | "engine" | "requestsPerSecond" | "status" | "failed"
  >,
  run: NativeRun,
  kind: "corrected" | "uncorrected" = "corrected",
): ResultRow {
  return makeRow({
    ...fields,
    engine: "native",
    requestsPerSecond: run.result.reqPerSec,
    errors: run.result.errors,
    // one run seen two ways (rate's corrected and uncorrected rows): its requests count once
    ...(kind === "corrected" ? { status: { ...run.result.status }, failed: run.failed } : {}),
    extra: { ...fields.extra, ...nativeExtra(run) },
  }, nativeSampleSet(run.result, kind));
}

/** A note for rows the native engine could not run. */
export function nativeSkipNote(scenario: string, transport: TransportName): string {
  return `${scenario} ${transport}: no row, the native engine cannot load ${transport} yet (use --engine sbi).`;
}
