/**
 * The run record `lab load --json` writes, with what a shard adds (its
 * identity, window, clock estimate and an HdrHistogram interval log), and
 * {@linkcode mergeShards}: N shard records into one run record, histograms
 * added exactly (same bucket layout), counts and errors summed by kind.
 */
import * as hdr from "hdr-histogram-js";
import type { ClockEstimate } from "../lib/clock.ts";
import {
  buildHistogram,
  type ErrorKind,
  type LatencySummary,
  type LoadResult,
  summarize,
} from "./result.ts";
import { writeIntervalLog } from "./interval_log.ts";

/** Record schema name. */
export const LOAD_SCHEMA = "sbilab-load/1";

/** What a shard adds to its run record. */
export interface ShardInfo {
  index: number;
  count: number;
  /** Host name of the machine (a pod's name on Kubernetes). */
  host: string;
  /** Planned start of the measured phase (ms since the epoch), when one was given. */
  startAtMs: number | null;
  /** Measured phase, ms since the epoch on this machine's clock. */
  window: { startMs: number; endMs: number };
  /** The kernel's clock estimate, or null where it cannot be read. */
  clock: ClockEstimate | null;
  /** Both latency histograms over the window as an HdrHistogram interval log (tags `corrected`, `uncorrected`). */
  intervalLog: string;
}

/** How the run was planned (as the record keeps it). */
export interface RecordPlan {
  connections: number;
  streams: number;
  threads: number;
  /** Open-loop rate, req/s; absent for closed loop. */
  rate?: number;
  requests?: number;
  durationMs?: number;
  warmupMs?: number;
  /** The statuses that counted as a success (`2xx,3xx`); absent in records written before. */
  ok?: string;
}

/** A merged run's shards and why it is partial. */
export interface MergeInfo {
  shards: {
    index: number;
    host: string;
    window: { startMs: number; endMs: number };
    completed: number;
    errors: number;
    reqPerSec: number;
    partial: boolean;
    lateMs: number;
  }[];
  /** The shards missing from the merge (no record), by index. */
  missing: number[];
  /** Where every shard measured. */
  commonWindow: { startMs: number; endMs: number };
  /** From the first shard's start to the last one's end. */
  unionWindow: { startMs: number; endMs: number };
  /** One line per reason the run is partial (empty when whole). */
  reasons: string[];
}

/** A run record: one `lab load`, one shard of one, or a merge. */
export interface LoadRecord {
  schema: typeof LOAD_SCHEMA;
  url: string;
  engine: string;
  plan: RecordPlan;
  result: LoadResult;
  /** Requests by outcome under `plan.ok`: succeeded, failed (other statuses, by status), errored. */
  outcome?: {
    succeeded: number;
    failed: number;
    errors: number;
    failedByStatus: [string, number][];
  };
  shard?: ShardInfo;
  merge?: MergeInfo;
}

/** The interval log of one shard's result over its window. */
export function shardIntervalLog(
  result: LoadResult,
  window: { startMs: number; endMs: number },
  label: string,
): string {
  const { startMs, endMs } = window;
  return writeIntervalLog([{
    startMs,
    endMs,
    histograms: {
      corrected: hdr.decodeFromCompressedBase64(result.histograms.corrected),
      uncorrected: hdr.decodeFromCompressedBase64(result.histograms.uncorrected),
    },
  }], `sbilab shard ${label}, ${result.protocol}, latency in ns`);
}

/** Raised when shard records cannot be merged (windows apart, plans apart); the CLI shows its one line. */
export class ShardMergeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShardMergeError";
  }
}

/** Options for {@linkcode mergeShards}. */
export interface MergeOptions {
  /** A shard whose measured phase starts more than this after the planned start (or the first shard's) ran late, ms. Default 250. */
  lateMs?: number;
}

function decodeChecked(text: string, what: string): hdr.Histogram {
  const h = hdr.decodeFromCompressedBase64(text);
  const ref = buildHistogram();
  if (
    h.numberOfSignificantValueDigits !== ref.numberOfSignificantValueDigits ||
    h.highestTrackableValue !== ref.highestTrackableValue
  ) {
    throw new ShardMergeError(`${what} has another bucket layout; cannot add it exactly`);
  }
  return h;
}

const fmtTime = (ms: number) => new Date(ms).toISOString();

/**
 * The merged histogram's summary with the shards' exact extremes: the
 * compressed form keeps buckets, so a decoded histogram's min and max are its
 * buckets' edges, while each shard's summary kept the recorded ones.
 */
function mergedSummary(h: hdr.Histogram, parts: LatencySummary[]): LatencySummary {
  const s = summarize(h);
  const seen = parts.filter((p) => p.count > 0);
  if (!s.count || !seen.length) return s;
  const min = Math.min(...seen.map((p) => p.min));
  const max = Math.max(...seen.map((p) => p.max));
  const at = (p: number) => Math.min(max, h.getValueAtPercentile(p));
  return { ...s, min, max, p50: at(50), p90: at(90), p99: at(99), p999: at(99.9) };
}

/**
 * The records as shards of one run, in shard order: each a shard record of
 * the same count, target and protocol, none given twice.
 */
function checkedShards(
  records: LoadRecord[],
): { shards: LoadRecord[]; seen: Map<number, LoadRecord>; count: number | undefined } {
  if (!records.length) throw new ShardMergeError("No shard records to merge");
  const count = records[0].shard?.count;
  const seen = new Map<number, LoadRecord>();
  for (const r of records) {
    if (r.schema !== LOAD_SCHEMA || !r.shard) {
      throw new ShardMergeError("A record is not a shard of a load run (no shard field)");
    }
    if (r.shard.count !== count) {
      throw new ShardMergeError(`Shards of ${count} and of ${r.shard.count} cannot be merged`);
    }
    if (r.result.protocol !== records[0].result.protocol || r.url !== records[0].url) {
      throw new ShardMergeError(`Shard ${r.shard.index}/${count} ran another target or protocol`);
    }
    if (seen.has(r.shard.index)) {
      throw new ShardMergeError(`Shard ${r.shard.index}/${count} was given twice`);
    }
    seen.set(r.shard.index, r);
  }
  const shards = [...seen.values()].sort((a, b) => a.shard!.index - b.shard!.index);
  return { shards, seen, count };
}

/**
 * The shards' common window (every shard measuring; they must overlap), their
 * union, and the reference start a shard's lateness is measured from (the
 * earliest planned start, else the union's start).
 */
function shardWindows(shards: LoadRecord[], count: number | undefined) {
  const win = (r: LoadRecord) => r.shard!.window;
  const common = {
    startMs: Math.max(...shards.map((r) => win(r).startMs)),
    endMs: Math.min(...shards.map((r) => win(r).endMs)),
  };
  if (common.endMs <= common.startMs) {
    const lastStart = shards.reduce((a, b) => (win(b).startMs > win(a).startMs ? b : a));
    const firstEnd = shards.reduce((a, b) => (win(b).endMs < win(a).endMs ? b : a));
    throw new ShardMergeError(
      `Shard windows do not overlap: shard ${firstEnd.shard!.index}/${count} ended at ${
        fmtTime(win(firstEnd).endMs)
      }, shard ${lastStart.shard!.index}/${count} started at ${fmtTime(win(lastStart).startMs)}`,
    );
  }
  const union = {
    startMs: Math.min(...shards.map((r) => win(r).startMs)),
    endMs: Math.max(...shards.map((r) => win(r).endMs)),
  };
  const planned = shards.map((r) => r.shard!.startAtMs).filter((t): t is number => t !== null);
  const reference = planned.length ? Math.min(...planned) : union.startMs;
  return { common, union, reference };
}

/** Merges shard records into one run record; throws {@linkcode ShardMergeError} when they cannot be. */
export function mergeShards(records: LoadRecord[], options: MergeOptions = {}): LoadRecord {
  const { shards, seen, count } = checkedShards(records);
  const late = options.lateMs ?? 250;
  const { common, union, reference } = shardWindows(shards, count);

  const corrected = buildHistogram();
  const uncorrected = buildHistogram();
  const buckets = new Map<number, number>();
  const errorsByKind = {} as Record<ErrorKind, number>;
  const status: Record<string, number> = {};
  const sum = { sent: 0, completed: 0, errors: 0, bytesIn: 0, bytesOut: 0, bodyBytesIn: 0 };
  let warmupCompleted = 0, connectionsUp = 0, connectionsFailed = 0, reqPerSec = 0;
  const reasons: string[] = [];
  const infos: MergeInfo["shards"] = [];
  for (const r of shards) {
    const res = r.result, s = r.shard!, label = `${s.index}/${count}`;
    corrected.add(decodeChecked(res.histograms.corrected, `Shard ${label}`));
    uncorrected.add(decodeChecked(res.histograms.uncorrected, `Shard ${label}`));
    for (const [v, c] of res.latencyBuckets) buckets.set(v, (buckets.get(v) ?? 0) + c);
    for (const [k, v] of Object.entries(res.errorsByKind)) {
      errorsByKind[k as ErrorKind] = (errorsByKind[k as ErrorKind] ?? 0) + v;
    }
    for (const [k, v] of Object.entries(res.status)) status[k] = (status[k] ?? 0) + v;
    for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += res[k];
    warmupCompleted += res.warmupCompleted;
    connectionsUp += res.connectionsUp;
    connectionsFailed += res.connectionsFailed;
    reqPerSec += res.reqPerSec;
    const lateBy = s.window.startMs - reference;
    if (res.partial) reasons.push(`shard ${label} (${s.host}) failed: ${res.error ?? "stopped"}`);
    if (lateBy > late) {
      reasons.push(`shard ${label} (${s.host}) started ${(lateBy / 1000).toFixed(3)} s late`);
    }
    infos.push({
      index: s.index,
      host: s.host,
      window: s.window,
      completed: res.completed,
      errors: res.errors,
      reqPerSec: res.reqPerSec,
      partial: res.partial,
      lateMs: Math.max(0, lateBy),
    });
  }
  const missing = Array.from({ length: count! }, (_, i) => i).filter((i) => !seen.has(i));
  for (const i of missing) reasons.unshift(`shard ${i}/${count} sent no record`);
  const first = shards[0];
  const partial = reasons.length > 0;
  const latencyBuckets = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const result: LoadResult = {
    protocol: first.result.protocol,
    partial,
    stopped: shards.some((r) => r.result.stopped),
    ...sum,
    errorsByKind,
    status,
    measuredNs: Math.round((union.endMs - union.startMs) * 1e6),
    // every shard ran through the common window: the rates add there
    reqPerSec,
    warmupCompleted,
    connectionsUp,
    connectionsFailed,
    connections: shards.flatMap((r) => r.result.connections),
    timedOut: shards.reduce((n, r) => n + (r.result.timedOut ?? 0), 0),
    timeoutNs: Math.max(...shards.map((r) => r.result.timeoutNs ?? 0)),
    latency: mergedSummary(corrected, shards.map((r) => r.result.latency)),
    latencyUncorrected: mergedSummary(uncorrected, shards.map((r) => r.result.latencyUncorrected)),
    histograms: {
      corrected: hdr.encodeIntoCompressedBase64(corrected),
      uncorrected: hdr.encodeIntoCompressedBase64(uncorrected),
    },
    latencyBuckets,
    ...(partial ? { error: reasons.join("; ") } : {}),
  };
  const plans = shards.map((r) => r.plan);
  const add = (f: (p: RecordPlan) => number | undefined) =>
    plans.every((p) => f(p) === undefined) ? undefined : plans.reduce((n, p) => n + (f(p) ?? 0), 0);
  return {
    schema: LOAD_SCHEMA,
    url: first.url,
    engine: first.engine,
    plan: {
      connections: add((p) => p.connections)!,
      streams: first.plan.streams,
      threads: add((p) => p.threads)!,
      rate: add((p) => p.rate || undefined),
      requests: add((p) => p.requests),
      durationMs: first.plan.durationMs,
      warmupMs: first.plan.warmupMs,
    },
    result,
    merge: { shards: infos, missing, commonWindow: common, unionWindow: union, reasons },
  };
}

/** The merged run's shard table and the reasons it is partial, as text. */
export function renderMergeSummary(m: MergeInfo): string {
  const secs = (m.commonWindow.endMs - m.commonWindow.startMs) / 1000;
  const lines = [
    `shards: ${m.shards.length} merged${
      m.missing.length ? `, ${m.missing.length} missing` : ""
    }; ` +
    `common window ${secs.toFixed(3)} s from ${fmtTime(m.commonWindow.startMs)}`,
  ];
  for (const s of m.shards) {
    lines.push(
      `  shard ${String(s.index).padStart(3)}  ${s.host.padEnd(20)} ${
        String(s.completed).padStart(10)
      } completed ${String(s.errors).padStart(6)} errors  ${
        s.reqPerSec.toFixed(0).padStart(9)
      } req/s` +
        `  start +${s.lateMs.toFixed(0)} ms${s.partial ? "  FAILED" : ""}`,
    );
  }
  for (const r of m.reasons) lines.push(`partial: ${r}`);
  return lines.join("\n");
}
