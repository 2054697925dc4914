/**
 * The run record a load engine hands back, decoded from its binary result
 * (layout in load/native/sbl_load.h), with the latency histograms
 * merged into hdr-histogram-js (same bucket layout: lowest 1 ns, 2 significant
 * digits, so every bucket lands where the engine kept it: ≤ 0.78 % relative error).
 */
import * as hdr from "hdr-histogram-js";
import type { LoadProtocol } from "./plan.ts";

/** Kinds of failed requests, in the engine's order. */
export const ERROR_KINDS = [
  "connect",
  "tls",
  "protocol",
  "reset",
  "closed",
  "timeout",
  "other",
] as const;
/** One kind of failure. */
export type ErrorKind = typeof ERROR_KINDS[number];

/** Highest latency tracked: one hour in ns. */
export const HIST_HIGHEST_NS = 3_600e9;
/** Significant digits of the engines' histograms. */
export const HIST_DIGITS = 2;

/** Latency percentiles of one histogram, in ns (0 when empty). */
export interface LatencySummary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

/** Set-up times of one connection, ns from its start (null when never reached). */
export interface ConnectionTimes {
  connectNs: number | null;
  handshakeNs: number | null;
  firstByteNs: number | null;
  /** Responses completed on it (warm-up included). */
  requests: number;
  /** Why it failed, when it did. */
  error?: ErrorKind;
}

/** A finished run. */
export interface LoadResult {
  protocol: LoadProtocol;
  /** True when the plan was not carried out in full (failed connections, stop). */
  partial: boolean;
  /** True when it was stopped early. */
  stopped: boolean;
  /** Measured requests sent; equals completed plus the errors of requests. */
  sent: number;
  completed: number;
  /** Failed requests, plus one for each connection that never came up (nothing was sent on it). */
  errors: number;
  errorsByKind: Record<ErrorKind, number>;
  /** Responses by status code. */
  status: Record<string, number>;
  /** Bytes on the wire, whole run: TCP payload for h2 (TLS records included), UDP payload for h3. */
  bytesIn: number;
  bytesOut: number;
  /** Response body bytes of the measured requests. */
  bodyBytesIn: number;
  /** From the start of measuring to the last measured response, ns. */
  measuredNs: number;
  /** Completed per second of `measuredNs`. */
  reqPerSec: number;
  warmupCompleted: number;
  connectionsUp: number;
  connectionsFailed: number;
  /**
   * The smallest limit on concurrent request streams a server set over the
   * connections (h2 SETTINGS_MAX_CONCURRENT_STREAMS, h3 initial_max_streams_bidi);
   * absent when none was seen.
   */
  peerStreamLimit?: number;
  connections: ConnectionTimes[];
  /**
   * Requests that timed out; each counts in both latency summaries at
   * `timeoutNs` (a lower bound of what it would have taken).
   */
  timedOut: number;
  /** The per-request timeout, ns. */
  timeoutNs: number;
  /** Latency from each request's intended send time (open loop) — equal to `uncorrected` closed-loop. */
  latency: LatencySummary;
  /** Latency from each request's actual send time. */
  latencyUncorrected: LatencySummary;
  /** Both histograms, HdrHistogram compressed base64. */
  histograms: { corrected: string; uncorrected: string };
  /** The corrected histogram's non-empty buckets: [lowest value in the bucket (ns), count]. */
  latencyBuckets: [number, number][];
  /** The first failure's text, when there was one. */
  error?: string;
}

/** An empty histogram with the engines' layout. */
export function buildHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIST_HIGHEST_NS,
    numberOfSignificantValueDigits: HIST_DIGITS,
  });
}

/** Decodes the engine's (i64 value, u64 count) pairs. */
export function decodePairs(bytes: Uint8Array): [number, number][] {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: [number, number][] = [];
  for (let off = 0; off + 16 <= bytes.length; off += 16) {
    out.push([Number(v.getBigInt64(off, true)), Number(v.getBigUint64(off + 8, true))]);
  }
  return out;
}

/** Builds a histogram from (value, count) pairs. */
export function histogramFromPairs(pairs: [number, number][]): hdr.Histogram {
  const h = buildHistogram();
  for (const [value, count] of pairs) h.recordValueWithCount(value, count);
  return h;
}

/** Percentiles of a histogram, in ns. */
export function summarize(h: hdr.Histogram): LatencySummary {
  const count = h.totalCount;
  if (count === 0) return { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
  // a percentile is its bucket's highest value: never report one above the largest recorded
  const max = h.maxValue;
  const at = (p: number) => Math.min(max, h.getValueAtPercentile(p));
  return {
    count,
    min: h.minNonZeroValue,
    mean: h.mean,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max,
  };
}

const HEAD = 128;
const CONN_RECORD = 40;
const NONE = 0xffff_ffff_ffff_ffffn;

/** Decodes the engine's result record (without the histograms). */
export function decodeResult(
  bytes: Uint8Array,
): Omit<
  LoadResult,
  | "protocol"
  | "latency"
  | "latencyUncorrected"
  | "histograms"
  | "latencyBuckets"
  | "error"
  | "timedOut"
  | "timeoutNs"
> {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < HEAD || v.getUint32(0, true) !== 0x524c4253) {
    throw new TypeError("Malformed load result");
  }
  const u64 = (o: number) => Number(v.getBigUint64(o, true));
  const flags = v.getUint32(4, true);
  const nstatus = v.getUint32(8, true);
  const nconns = v.getUint32(12, true);
  const nkinds = v.getUint32(16, true);
  const errorsByKind = Object.fromEntries(ERROR_KINDS.map((k) => [k, 0])) as Record<
    ErrorKind,
    number
  >;
  let off = HEAD;
  for (let k = 0; k < nkinds; k++, off += 8) {
    errorsByKind[ERROR_KINDS[k] ?? "other"] += u64(off);
  }
  const status: Record<string, number> = {};
  for (let i = 0; i < nstatus; i++, off += 16) {
    const code = v.getUint32(off, true);
    status[code === 0 ? "other" : String(code)] = u64(off + 8);
  }
  const time = (o: number) => {
    const t = v.getBigUint64(o, true);
    return t === NONE ? null : Number(t);
  };
  const connections: ConnectionTimes[] = [];
  for (let i = 0; i < nconns; i++, off += CONN_RECORD) {
    const err = v.getUint32(off + 32, true);
    connections.push({
      connectNs: time(off),
      handshakeNs: time(off + 8),
      firstByteNs: time(off + 16),
      requests: u64(off + 24),
      ...(err ? { error: ERROR_KINDS[err - 1] ?? "other" } : {}),
    });
  }
  const completed = u64(32);
  const measuredNs = u64(72);
  // A connection that never came up sent nothing, so no request counted its
  // failure: count it once, under its kind, as h2load counts such requests errored.
  let neverUp = 0;
  for (const c of connections) {
    if (c.error === "connect" || c.error === "tls") {
      errorsByKind[c.error] += 1;
      neverUp++;
    }
  }
  const peerStreamLimit = u64(112);
  return {
    ...(peerStreamLimit > 0 ? { peerStreamLimit } : {}),
    partial: (flags & 1) !== 0,
    stopped: (flags & 2) !== 0,
    sent: u64(24),
    completed,
    errors: u64(40) + neverUp,
    errorsByKind,
    status,
    bytesIn: u64(48),
    bytesOut: u64(56),
    bodyBytesIn: u64(64),
    measuredNs,
    reqPerSec: measuredNs > 0 ? completed / (measuredNs / 1e9) : 0,
    warmupCompleted: u64(80),
    connectionsUp: u64(88),
    connectionsFailed: u64(96),
    connections,
  };
}
