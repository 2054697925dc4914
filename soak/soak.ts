/**
 * The soak: a steady open-loop load on every transport for a chosen time
 * while the attackers of attackers.ts run beside it, against `lab serve` in
 * its own process. Each interval records, per transport, what was served,
 * the errors and the latency percentiles, and the server's resident size;
 * after the attackers left, the size is read once more. The run is held to
 * bounds (p99, RSS growth and return, failed share): the report names each
 * one crossed. The result is a plain record (`sbilab-soak/1`); soak_report.ts
 * renders it.
 */
import {
  createClient,
  type SbiClient,
  type StackName,
  type TransportName,
} from "../transports/mod.ts";
import { startServers } from "../bench/measure/mod.ts";
import { quantile } from "../bench/stats/mod.ts";
import { formatBytes, formatDuration } from "../lib/units.ts";
import {
  type AttackCounts,
  type AttackName,
  ATTACKS,
  noAttacks,
  runAttackers,
} from "./attackers.ts";
import { readProcMemory } from "../lib/proc_status.ts";
import {
  countStatus,
  DEFAULT_OK,
  isAccepted,
  parseStatusSet,
  type StatusSet,
} from "../lib/status_set.ts";

/** Options of {@linkcode runSoak}. */
export interface SoakOptions {
  /** Server implementation family `lab serve` runs. Default `native`. */
  stack?: StackName;
  /** Transports to load. */
  transports: TransportName[];
  /** How long to run, in ms. */
  durationMs: number;
  /** Length of one reporting interval in ms. Default 1000. */
  intervalMs?: number;
  /** Requests per second on each transport (open loop). Default 200. */
  rate?: number;
  /** Body size of the steady GETs. Default 256. */
  size?: number;
  /** Attacks to run beside the load. Default all; `[]` for none. */
  attacks?: readonly AttackName[];
  /** Called after every interval (for progress output). Default none. */
  onInterval?: (interval: SoakInterval) => void;
  /** Stops the soak early. Default none. */
  signal?: AbortSignal;
  /** Bounds the soak checks; a crossed one is named in the report's `crossed`. Default {@linkcode DEFAULT_SOAK_BOUNDS}. */
  bounds?: Partial<SoakBounds>;
  /** The statuses that count as a success. Default 2xx and 3xx. */
  ok?: StatusSet;
}

/** What a soak holds the server to. */
export interface SoakBounds {
  /** Highest p99 of any transport's steady load over the whole run, ms. */
  p99Ms: number;
  /** Most the server's RSS may grow from its first sample to its peak, bytes. */
  rssGrowthBytes: number;
  /** Most it may stay above its first sample once the attackers left, bytes. */
  rssAfterBytes: number;
  /** Highest share of the steady load's requests that may fail. */
  errorShare: number;
}

/**
 * The default bounds: p99 under 1 s, RSS growth under 512 MiB (the 64 MiB
 * response budget, the 64 MiB payload cache, the NF profiles the discovery
 * flood registers and the runtime's own slack), back within 256 MiB of the
 * start after the attackers left, and at most 1 % of the steady requests
 * failed.
 */
export const DEFAULT_SOAK_BOUNDS: Readonly<SoakBounds> = Object.freeze({
  p99Ms: 1000,
  rssGrowthBytes: 512 * 1024 * 1024,
  rssAfterBytes: 256 * 1024 * 1024,
  errorShare: 0.01,
});

/** One transport in one interval. */
export interface SoakSlice {
  /** Answers with an accepted status and the right size. */
  served: number;
  /** Requests without an answer, and accepted answers of the wrong size. */
  errors: number;
  /** Answers whose status is outside the accepted set (absent in reports written before). */
  failed?: number;
  /** Answers by status (absent in reports written before). */
  status?: Record<string, number>;
  /**
   * Sends skipped: the load generator fell more than 0.5 s behind its schedule
   * (its own process stalled) or 256 requests were already in flight.
   */
  skipped: number;
  /** Latency percentiles of the served requests, in ms (undefined when none). */
  p50?: number;
  p99?: number;
}

/** One interval of the soak. */
export interface SoakInterval {
  /** End of the interval, seconds since the start. */
  t: number;
  /** The server's resident set size at the end of the interval, bytes. */
  rssBytes?: number;
  /** Longest stall of the soak's own event loop in the interval, ms (load and attackers share it). */
  loadStallMs: number;
  /** Per transport. */
  transports: Partial<Record<TransportName, SoakSlice>>;
  /** Attack counters so far. */
  attacks: AttackCounts;
}

/** A whole soak. */
export interface SoakReport {
  schema: "sbilab-soak/1";
  /** The servers' stack. */
  stack: StackName;
  /** ISO time of the start. */
  startedAt: string;
  durationMs: number;
  intervalMs: number;
  rate: number;
  size: number;
  attacks: AttackName[];
  intervals: SoakInterval[];
  /** Over the whole run, per transport. */
  summary: Partial<Record<TransportName, SoakSlice & { ratePerSecond: number }>>;
  /**
   * Resident size of the server: first, highest and last sample under the
   * attacks, and once the attackers had left and a few seconds passed, bytes.
   */
  rss?: { start: number; peak: number; end: number; after?: number };
  /** Whether the server was still running at the end. */
  serverAlive: boolean;
  /** The bounds held to. */
  bounds: SoakBounds;
  /** Each bound crossed, in words (empty when the server held). */
  crossed: string[];
}

/** How long after the attackers left the server's RSS is read again, ms. */
const SETTLE_MS = 5000;

/** The bounds `report` crossed, in words. */
export function crossedBounds(report: Omit<SoakReport, "crossed">): string[] {
  const b = report.bounds;
  const out: string[] = [];
  const ms = (x: number) => formatDuration(x * 1e6);
  if (!report.serverAlive) out.push("the server exited");
  for (const [t, s] of Object.entries(report.summary)) {
    if (!s) continue;
    if (s.p99 !== undefined && s.p99 > b.p99Ms) {
      out.push(`${t}: p99 ${ms(s.p99)} is over ${ms(b.p99Ms)}`);
    }
    const asked = s.served + s.errors;
    if (asked > 0 && s.errors / asked > b.errorShare) {
      out.push(`${t}: ${s.errors} of ${asked} requests failed (over ${b.errorShare * 100} %)`);
    }
    if (s.served === 0) out.push(`${t}: nothing served`);
  }
  const r = report.rss;
  if (r && r.peak - r.start > b.rssGrowthBytes) {
    out.push(`RSS grew by ${formatBytes(r.peak - r.start)}, over ${formatBytes(b.rssGrowthBytes)}`);
  }
  if (r?.after !== undefined && r.after - r.start > b.rssAfterBytes) {
    out.push(
      `RSS stayed ${
        formatBytes(r.after - r.start)
      } above its start after the attackers left, over ${formatBytes(b.rssAfterBytes)}`,
    );
  }
  return out;
}

/** Most requests in flight per transport before a send counts as an error. */
const MAX_IN_FLIGHT = 256;

function rssOf(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : readProcMemory(pid)?.rssBytes;
}

/** What one transport's load counted over a stretch of time. */
interface Counts {
  served: number;
  errors: number;
  skipped: number;
  failed: number;
  status: Record<string, number>;
}

function zero(): Counts {
  return { served: 0, errors: 0, skipped: 0, failed: 0, status: {} };
}

function addCounts(to: Counts, c: Counts): void {
  to.served += c.served;
  to.errors += c.errors;
  to.skipped += c.skipped;
  to.failed += c.failed;
  for (const [k, n] of Object.entries(c.status)) to.status[k] = (to.status[k] ?? 0) + n;
}

function slice(latencies: number[], c: Counts): SoakSlice {
  const base = { ...c, status: { ...c.status } };
  if (latencies.length === 0) return base;
  return { ...base, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

/** One transport's steady load: the interval's figures (taken once), every latency, and when it has stopped. */
interface SteadyLoad {
  take(): [number[], Counts];
  all: number[];
  done: Promise<void>;
}

/** Drives one transport at `rate` req/s; returns a function that takes the interval's figures. */
function steadyLoad(
  client: SbiClient,
  path: string,
  size: number,
  rate: number,
  signal: AbortSignal,
  ok: StatusSet,
): SteadyLoad {
  let lat: number[] = [];
  const all: number[] = [];
  let c = zero();
  let inFlight = 0;
  const start = performance.now();
  let sent = 0;
  const pending = new Set<Promise<void>>();
  const one = async () => {
    inFlight++;
    const t0 = performance.now();
    try {
      const res = await client.request({ method: "GET", path });
      countStatus(c.status, res.status);
      if (!isAccepted(ok, res.status)) {
        c.failed++;
      } else if (res.body.length === size) {
        const ms = performance.now() - t0;
        lat.push(ms);
        all.push(ms);
        c.served++;
      } else c.errors++;
    } catch {
      c.errors++;
    } finally {
      inFlight--;
    }
  };
  const done = (async () => {
    // Bounded by the signal (the soak's duration).
    while (!signal.aborted) {
      const due = Math.floor(((performance.now() - start) / 1000) * rate);
      // Fallen behind (this process stalled): skip, rather than send a burst nobody scheduled.
      const behind = due - sent - Math.ceil(rate / 2);
      if (behind > 0) {
        c.skipped += behind;
        sent += behind;
      }
      for (; sent < due; sent++) {
        if (inFlight >= MAX_IN_FLIGHT) {
          c.skipped++;
          continue;
        }
        const p = one();
        pending.add(p);
        p.finally(() => pending.delete(p));
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.allSettled([...pending]);
  })();
  return {
    take() {
      const out: [number[], Counts] = [lat, c];
      lat = [];
      c = zero();
      return out;
    },
    all,
    done,
  };
}

/** What the soak reads at each interval: the server's memory, each transport's load, the attacks' counts. */
interface IntervalSources {
  pid: number | undefined;
  loads: Map<TransportName, SteadyLoad>;
  /** Each transport's counts over the whole run, added to at every interval. */
  totals: Map<TransportName, Counts>;
  attacks: AttackCounts;
}

/**
 * Takes an interval every `intervalMs` until `durationMs` passed, the signal
 * aborted or the server's process is gone (`alive` false). Also measures the
 * soak's own event loop: a late 20 ms tick is a stall of this process, not
 * of the server.
 */
async function sampleIntervals(
  from: IntervalSources,
  timing: { intervalMs: number; durationMs: number; onInterval?: (interval: SoakInterval) => void },
  signal: AbortSignal,
): Promise<{ intervals: SoakInterval[]; alive: boolean }> {
  const intervals: SoakInterval[] = [];
  let alive = true;
  const t0 = performance.now();
  const end = t0 + timing.durationMs;
  let stall = 0;
  let tick = performance.now();
  const lagTimer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - tick - 20);
    tick = now;
  }, 20);
  try {
    for (let next = t0 + timing.intervalMs; !signal.aborted; next += timing.intervalMs) {
      const wait = Math.min(next, end) - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const interval: SoakInterval = {
        t: Math.round(performance.now() - t0) / 1000,
        rssBytes: rssOf(from.pid),
        loadStallMs: Math.round(Math.max(0, stall)),
        transports: {},
        attacks: { ...from.attacks },
      };
      stall = 0;
      for (const [t, load] of from.loads) {
        const [lat, counts] = load.take();
        interval.transports[t] = slice(lat, counts);
        addCounts(from.totals.get(t)!, counts);
      }
      intervals.push(interval);
      timing.onInterval?.(interval);
      if (interval.rssBytes === undefined && from.pid !== undefined) alive = false;
      if (performance.now() >= end || !alive) break;
    }
  } finally {
    clearInterval(lagTimer);
  }
  return { intervals, alive };
}

/** Each transport's whole run: its latencies and counts, and what it served per second. */
function summarise(
  loads: Map<TransportName, SteadyLoad>,
  totals: Map<TransportName, Counts>,
  durationMs: number,
): SoakReport["summary"] {
  const summary: SoakReport["summary"] = {};
  for (const [t, load] of loads) {
    const sum = totals.get(t)!;
    summary[t] = { ...slice(load.all, sum), ratePerSecond: sum.served / (durationMs / 1000) };
  }
  return summary;
}

/** The server's RSS at the first interval, its peak, the last and `after` the attackers left; none without samples. */
function rssSummary(intervals: SoakInterval[], after: number | undefined): SoakReport["rss"] {
  const samples = intervals.map((i) => i.rssBytes).filter((x): x is number => x !== undefined);
  if (!samples.length) return undefined;
  return {
    start: samples[0],
    peak: Math.max(...samples),
    end: samples.at(-1)!,
    ...(after === undefined ? {} : { after }),
  };
}

/** Runs a soak against a `lab serve` it starts; resolves with the report. */
export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const intervalMs = options.intervalMs ?? 1000;
  const rate = options.rate ?? 200;
  const size = options.size ?? 256;
  const attacks = [...(options.attacks ?? ATTACKS)];
  const bounds: SoakBounds = { ...DEFAULT_SOAK_BOUNDS, ...options.bounds };
  const startedAt = new Date().toISOString();
  const stack = options.stack ?? "native";
  const servers = await startServers(options.transports, { stack });
  const controller = new AbortController();
  const stop = () => controller.abort();
  options.signal?.addEventListener("abort", stop, { once: true });
  const clients = new Map<TransportName, SbiClient>();
  const totals = new Map<TransportName, Counts>();
  const ok = options.ok ?? parseStatusSet(DEFAULT_OK);
  const counts = noAttacks();
  try {
    for (const t of options.transports) {
      clients.set(
        t,
        await createClient(t, servers.urls[t]!, { tls: servers.tls, timeoutMs: 5000 }),
      );
      totals.set(t, zero());
    }
    const port = (t: TransportName) =>
      servers.urls[t] ? Number(new URL(servers.urls[t]!).port) : undefined;
    const attacking = attacks.length === 0 ? Promise.resolve() : runAttackers(
      { h2cPort: port("h2c"), tlsPort: port("h2-tls"), h3Port: port("h3") },
      counts,
      controller.signal,
      { attacks },
    );
    const path = `/nbench/v1/payload?size=${size}`;
    const loads = new Map(
      options.transports.map((
        t,
      ) => [t, steadyLoad(clients.get(t)!, path, size, rate, controller.signal, ok)]),
    );
    const sampled = await sampleIntervals(
      { pid: servers.pid, loads, totals, attacks: counts },
      { intervalMs, durationMs: options.durationMs, onInterval: options.onInterval },
      controller.signal,
    );
    const intervals = sampled.intervals;
    let alive = sampled.alive;
    controller.abort();
    await Promise.all([...loads.values()].map((l) => l.done));
    await attacking;
    alive &&= rssOf(servers.pid) !== undefined;
    // Memory comes back once the attackers left: read it again after a pause.
    let after: number | undefined;
    if (alive && attacks.length > 0) {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      after = rssOf(servers.pid);
    }
    const report: Omit<SoakReport, "crossed"> = {
      schema: "sbilab-soak/1",
      stack,
      startedAt,
      durationMs: options.durationMs,
      intervalMs,
      rate,
      size,
      attacks,
      intervals,
      summary: summarise(loads, totals, options.durationMs),
      rss: rssSummary(intervals, after),
      serverAlive: alive,
      bounds,
    };
    return { ...report, crossed: crossedBounds(report) };
  } finally {
    controller.abort();
    options.signal?.removeEventListener("abort", stop);
    await Promise.allSettled([...clients.values()].map((c) => c.close()));
    await servers.close();
  }
}
