/**
 * Text reports of one native load run (`lab load`): the live progress line, an
 * h2load-like summary and a latency histogram chart. Pure functions of the
 * run record; only the CLI prints them.
 */
import type { ConnectionTimes, LatencySummary, LoadProgress, LoadResult } from "./mod.ts";
import { formatBytes, formatDuration, formatRate } from "../lib/units.ts";
import {
  DEFAULT_OK,
  formatStatusCounts,
  parseStatusSet,
  type StatusSet,
  tallyStatuses,
} from "../lib/status_set.ts";

/** How the run was set up, for the headline. */
export interface LoadShape {
  connections: number;
  streams: number;
  threads: number;
  /** Open-loop rate, req/s; 0 or absent for closed loop. */
  rate?: number;
  /** The statuses that count as a success. Default 2xx and 3xx. */
  ok?: StatusSet;
  /** The transport's name in the headline (`h2c`, `h2-tls`, `h3`). Default the result's protocol. */
  transport?: string;
  /** Measured requests the plan meant to send (open loop: rate × duration); absent when unknown. */
  planned?: number;
}

/** How a run's requests ended: succeeded (an accepted status), failed (another status), errored. */
export interface LoadOutcome {
  succeeded: number;
  /** Responses whose status is outside the accepted set. */
  failed: number;
  /** Requests with no response (connect, reset, timeout, …). */
  errors: number;
  /** The failed responses by status, most frequent first. */
  failedByStatus: [string, number][];
  /** The accepted set, as written (`2xx,3xx`). */
  ok: string;
}

/** Sorts a run's requests into succeeded, failed and errored by the accepted set. */
export function loadOutcome(
  r: LoadResult,
  ok: StatusSet = parseStatusSet(DEFAULT_OK),
): LoadOutcome {
  const t = tallyStatuses(r.status, ok);
  return {
    succeeded: t.succeeded,
    failed: t.failed,
    errors: r.errors,
    failedByStatus: t.failedByStatus,
    ok: ok.text,
  };
}

/**
 * An open loop's shortfall: `reached 11.4k of 100k req/s; 62,920 sends not made`,
 * or undefined when the rate was kept (at least 95 % of it, every planned send made).
 */
export function rateShortfall(r: LoadResult, rate: number, planned?: number): string | undefined {
  const missing = planned !== undefined ? Math.max(0, planned - r.sent) : 0;
  // a send or two lost at the schedule's very end is the clock's grain, not a shortfall
  if (r.reqPerSec >= 0.95 * rate && missing <= 1 + 0.005 * (planned ?? 0)) return undefined;
  return `reached ${formatRate(r.reqPerSec).replace(/ req\/s$/, "")} of ${formatRate(rate)}` +
    (missing > 0 ? `; ${missing.toLocaleString("en-US")} sends not made` : "");
}

/** One progress line (no newline), e.g. `  3.2 s  measure  41.2k req/s  128456 done  0 errors  64 in flight`. */
export function formatProgressLine(p: LoadProgress, previous?: LoadProgress): string {
  let rate = "";
  if (previous && p.elapsedNs > previous.elapsedNs) {
    const dt = (p.elapsedNs - previous.elapsedNs) / 1e9;
    rate = `  ${formatRate((p.completed - previous.completed) / dt)}`;
  }
  const t = (p.elapsedNs / 1e9).toFixed(1).padStart(6);
  return `${t} s  ${p.phase.padEnd(7)}${rate}  ${p.completed} done  ${p.errors} errors  ` +
    `${p.inFlight} in flight  ${p.connectionsUp} conns up` +
    (p.connectionsFailed ? `  ${p.connectionsFailed} failed` : "");
}

function row(label: string, s: LatencySummary): string {
  const cells = [s.min, s.mean, s.p50, s.p90, s.p99, s.p999, s.max].map((v) =>
    (s.count > 0 ? formatDuration(v) : "–").padStart(10)
  );
  return `  ${label.padEnd(12)}${cells.join("")}`;
}

function spread(label: string, values: number[]): string {
  if (!values.length) return `  ${label.padEnd(12)}${"–".padStart(10)}`;
  const min = Math.min(...values);
  const max = Math.max(...values);
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return `  ${label.padEnd(12)}${
    [min, mean, max].map((v) => formatDuration(v).padStart(10)).join("")
  }`;
}

/** The summary after a run. */
export function renderLoadSummary(r: LoadResult, shape: LoadShape): string {
  const secs = r.measuredNs / 1e9;
  const loop = shape.rate ? `open loop at ${formatRate(shape.rate)}` : "closed loop";
  const out = loadOutcome(r, shape.ok);
  const failed = out.failed
    ? `${out.failed} failed (${formatStatusCounts(out.failedByStatus)})`
    : "0 failed";
  const lines = [
    `${r.partial ? "PARTIAL: " : ""}finished in ${secs.toFixed(2)} s, ${
      formatRate(r.reqPerSec)
    }, ` +
    `${formatBytes(secs > 0 ? r.bytesIn / secs : 0)}/s in ` +
    `(${shape.transport ?? r.protocol}, ${shape.connections} conn × ${shape.streams} streams, ` +
    `${shape.threads} thread${shape.threads === 1 ? "" : "s"}, ${loop})`,
    `requests: ${r.sent} sent, ${r.completed} completed: ${out.succeeded} succeeded, ${failed}, ` +
    `${r.errors} error${r.errors === 1 ? "" : "s"}` +
    (r.warmupCompleted ? ` (+${r.warmupCompleted} in warm-up)` : "") +
    ` (success: status ${out.ok})`,
    `status codes: ${Object.entries(r.status).map(([k, v]) => `${v} × ${k}`).join(", ") || "none"}`,
  ];
  const short = shape.rate ? rateShortfall(r, shape.rate, shape.planned) : undefined;
  if (short) lines.push(`open loop: ${short}`);
  const errs = Object.entries(r.errorsByKind).filter(([, v]) => v > 0);
  if (errs.length) lines.push(`errors: ${errs.map(([k, v]) => `${v} ${k}`).join(", ")}`);
  lines.push(
    `traffic on the wire (${r.protocol === "h3" ? "UDP" : "TCP"} payload): ${
      formatBytes(r.bytesIn)
    } in, ${formatBytes(r.bytesOut)} out, ${formatBytes(r.bodyBytesIn)} of response bodies`,
    "",
    `  ${"latency".padEnd(12)}${
      ["min", "mean", "p50", "p90", "p99", "p99.9", "max"].map((h) => h.padStart(10)).join("")
    }`,
  );
  if (shape.rate) {
    lines.push(row("intended", r.latency), row("uncorrected", r.latencyUncorrected));
  } else {
    lines.push(row("request", r.latency));
  }
  if (r.timedOut > 0) {
    lines.push(
      `  (${r.timedOut} timed-out request${r.timedOut === 1 ? "" : "s"} counted at ${
        formatDuration(r.timeoutNs)
      }, their timeout)`,
    );
  }
  const conns = r.connections;
  const pick = (f: (c: ConnectionTimes) => number | null) =>
    conns.map(f).filter((v): v is number => v !== null);
  lines.push(
    "",
    `  ${"connections".padEnd(12)}${["min", "mean", "max"].map((h) => h.padStart(10)).join("")}` +
      `   (${r.connectionsUp} up, ${r.connectionsFailed} failed)`,
    spread("connect", pick((c) => c.connectNs)),
    spread("handshake", pick((c) => c.handshakeNs)),
    spread("first byte", pick((c) => c.firstByteNs)),
  );
  if (r.error) lines.push("", `first error: ${r.error}`);
  return lines.join("\n");
}

/** A latency histogram chart: log-spaced bins between the fastest and slowest response. */
export function renderLatencyHistogram(buckets: [number, number][], bins = 12, width = 40): string {
  const total = buckets.reduce((n, [, c]) => n + c, 0);
  if (!total) return "latency histogram: no responses";
  const lo = Math.max(1, buckets[0][0]);
  const hi = Math.max(lo + 1, buckets[buckets.length - 1][0]);
  const edges = Array.from({ length: bins }, (_, i) => lo * Math.pow(hi / lo, (i + 1) / bins));
  const counts = new Array(bins).fill(0);
  for (const [v, c] of buckets) {
    let i = edges.findIndex((e) => v <= e);
    if (i < 0) i = bins - 1;
    counts[i] += c;
  }
  const top = Math.max(...counts);
  const lines = ["latency histogram (≤ upper edge):"];
  for (let i = 0; i < bins; i++) {
    const bar = "■".repeat(Math.round((counts[i] / top) * width));
    const share = ((counts[i] / total) * 100).toFixed(1).padStart(5);
    lines.push(
      `  ${formatDuration(edges[i]).padStart(9)} ${share} % ${
        String(counts[i]).padStart(9)
      } |${bar}`,
    );
  }
  return lines.join("\n");
}
