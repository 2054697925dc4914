/**
 * The link selftest: UDP probes through an emulated link, compared with what
 * the spec configured. Each one-way delay within 0.5 ms or 5 % (whichever is larger),
 * the round trip within the sum of both, configured loss inside the measured 99 %
 * interval, rate within 10 %.
 *
 * @module
 */
import { ensureBuilt } from "../lib/native_build.ts";
import { type LinkBackend, openLink } from "./link.ts";
import type { RelayStats } from "./relay.ts";
import { formatLinkSpec, type LinkSpec } from "./link_spec.ts";
import { burstDesignEffect, jitterMedianMs, wilsonInterval, Z99 } from "./link_stats.ts";
import { median } from "../lib/median.ts";

/** IP size of one probe datagram: 32 bytes of payload + UDP + IPv4 headers. */
export const PROBE_IP_BYTES = 60;
/** UDP payload of one bulk datagram (IP size adds 28). */
export const BULK_PAYLOAD_BYTES = 1200;
/** UDP port of the echo side. */
const ECHO_PORT = 47000;

/** Options for {@link runSelftest}. */
export interface SelftestOptions {
  /** Probes to send. Default 10000. */
  packets?: number;
  /** Probes per second. Default 10000, or fewer so that probes use at most
   * 20 % of the smallest configured rate. */
  pps?: number;
  /** Length of the bulk burst that measures the rate, in ms. Default 1000. */
  bulkMs?: number;
  /** Link backend. Default `relay`. */
  backend?: LinkBackend;
  /** Relay random seed. Default: the spec's, else 1. */
  seed?: number;
}

/** How a selftest drives the probe (derived from the spec and options). */
export interface ProbePlan {
  packets: number;
  pps: number;
  drainMs: number;
  statTimeoutMs: number;
  /** Bulk sending rate in bit/s (IP bytes); 0 = no bulk burst. */
  bulkBps: number;
  bulkMs: number;
}

/** What `sbilab-linkprobe ping` prints. */
export interface ProbeResult {
  sent: number;
  received: number;
  send_errors: number;
  probe_ns: number;
  rtt_us: number[];
  up_us: number[];
  down_us: number[];
  bulk: { sent: number; sent_bytes: number; span_ns: number };
  echo: {
    received: number;
    unique: number;
    replied: number;
    bulk_packets: number;
    bulk_bytes: number;
    bulk_span_ns: number;
  } | null;
}

/** One configured-versus-measured comparison. */
export interface SelftestCheck {
  /** For example `rtt`, `up delay`, `down loss`, `up rate`. */
  name: string;
  /** `ms`, `share` (0..1) or `bit/s`. */
  unit: "ms" | "share" | "bit/s";
  /** The configured (expected) value. */
  configured: number;
  /** The measured value, if any. */
  measured?: number;
  /** Accepted range: around `configured` for delay and rate; for loss, the
   * 99 % interval around `measured` that must contain `configured`. */
  low?: number;
  high?: number;
  /** Verdict; undefined when the check does not apply (see `note`). */
  pass?: boolean;
  /** Why a check was not judged, or extra context. */
  note?: string;
}

/** The outcome of a selftest. */
export interface SelftestReport {
  /** The spec, canonical. */
  spec: string;
  /** Its profile name, if any. */
  profile?: string;
  /** How the probe ran. */
  plan: ProbePlan;
  /** Every comparison. */
  checks: SelftestCheck[];
  /** True when every judged check passed. */
  passed: boolean;
  /** Relay counters after the probes (relay backend only). */
  relay?: RelayStats;
}

/** Plans the probe for a spec (pure). */
export function probePlan(spec: LinkSpec, options: SelftestOptions = {}): ProbePlan {
  const packets = options.packets ?? 10000;
  if (!(Number.isInteger(packets) && packets >= 100 && packets <= 1_000_000)) {
    throw new RangeError(`Bad packet count ${packets} (expected 100..1000000)`);
  }
  const rates = [spec.up.rateBps, spec.down.rateBps].filter((r) => r > 0);
  const auto = rates.length
    ? Math.max(50, Math.min(10000, Math.floor((0.2 * Math.min(...rates)) / (PROBE_IP_BYTES * 8))))
    : 10000;
  const pps = options.pps ?? auto;
  if (!(Number.isInteger(pps) && pps >= 1 && pps <= 100000)) {
    throw new RangeError(`Bad probe rate ${pps} (expected 1..100000 per second)`);
  }
  const rttMs = spec.up.delayMs + spec.down.delayMs +
    2 * Math.max(spec.up.jitterMs, spec.down.jitterMs);
  const queueMs = Math.max(
    ...[spec.up, spec.down].map((d) => d.rateBps ? (d.queue * 1500 * 8 * 1000) / d.rateBps : 0),
  );
  const bulkMs = options.bulkMs ?? 1000;
  return {
    packets,
    pps,
    drainMs: Math.ceil(rttMs + 2 * queueMs + 500),
    statTimeoutMs: Math.ceil(rttMs + queueMs + 300),
    bulkBps: spec.up.rateBps > 0 && !spec.blackhole ? Math.round(spec.up.rateBps * 1.25) : 0,
    bulkMs,
  };
}

/** Accepted deviation of a delay: 0.5 ms or 5 %, whichever is larger. */
export function delayTolerance(ms: number): number {
  return Math.max(0.5, 0.05 * ms);
}

/** Compares a probe result with the spec (pure). */
export function judgeSelftest(
  spec: LinkSpec,
  plan: ProbePlan,
  result: ProbeResult,
): { checks: SelftestCheck[]; passed: boolean } {
  const checks: SelftestCheck[] = [];
  const spacingMs = 1000 / plan.pps;
  const oneWay = (d: LinkSpec["up"]) =>
    d.delayMs + jitterMedianMs(d.jitterMs, spacingMs) +
    (d.rateBps ? (PROBE_IP_BYTES * 8 * 1000) / d.rateBps : 0);
  const delayCheck = (
    name: string,
    expected: number,
    samplesUs: number[],
    tol = delayTolerance(expected),
  ): SelftestCheck => {
    const c: SelftestCheck = { name, unit: "ms", configured: expected };
    c.low = expected - tol;
    c.high = expected + tol;
    if (samplesUs.length === 0) return { ...c, pass: false, note: "no probe came back" };
    c.measured = median(samplesUs) / 1000;
    c.pass = c.measured >= c.low && c.measured <= c.high;
    const anyReorder = spec.up.reorder > 0 || spec.down.reorder > 0;
    if (anyReorder) {
      c.pass = undefined;
      c.note = "not judged: reordered packets skip the delay";
    }
    return c;
  };
  const up = oneWay(spec.up);
  const down = oneWay(spec.down);
  // A round trip crosses the link twice: each crossing keeps its own tolerance.
  checks.push(
    delayCheck("rtt", up + down, result.rtt_us, delayTolerance(up) + delayTolerance(down)),
  );
  checks.push(delayCheck("up delay", up, result.up_us));
  checks.push(delayCheck("down delay", down, result.down_us));

  const lossCheck = (name: string, d: LinkSpec["up"], n: number, lost: number): SelftestCheck => {
    const c: SelftestCheck = { name, unit: "share", configured: d.loss };
    if (n <= 0) return { ...c, pass: false, note: "no packets to count" };
    c.measured = lost / n;
    const effect = burstDesignEffect(d.burst);
    [c.low, c.high] = wilsonInterval(lost / effect, n / effect, Z99);
    if (spec.blackhole) c.note = "not judged: blackhole windows add loss";
    else if (d.dup > 0) c.note = "not judged: duplicates hide losses";
    else c.pass = d.loss >= c.low && d.loss <= c.high;
    if (effect > 1 && c.pass !== undefined) {
      c.note = `interval widened ${effect.toFixed(2)}x for bursts`;
    }
    return c;
  };
  if (result.echo) {
    const e = result.echo;
    checks.push(lossCheck("up loss", spec.up, result.sent, result.sent - e.unique));
    checks.push(lossCheck("down loss", spec.down, e.unique, e.unique - result.received));
  } else {
    for (const name of ["up loss", "down loss"]) {
      checks.push({
        name,
        unit: "share",
        configured: 0,
        pass: false,
        note: "echo side never answered",
      });
    }
  }

  if (spec.up.rateBps > 0) {
    const c: SelftestCheck = {
      name: "up rate",
      unit: "bit/s",
      configured: spec.up.rateBps,
      low: spec.up.rateBps * 0.9,
      high: spec.up.rateBps * 1.1,
    };
    const e = result.echo;
    if (spec.blackhole) c.note = "not judged: blackhole windows";
    else if (!e || e.bulk_packets < 10 || e.bulk_span_ns <= 0) {
      c.pass = false;
      c.note = "too few bulk packets arrived";
    } else {
      const bytesAfterFirst = e.bulk_bytes - e.bulk_bytes / e.bulk_packets;
      c.measured = (bytesAfterFirst * 8) / (e.bulk_span_ns / 1e9);
      c.pass = c.measured >= c.low! && c.measured <= c.high!;
    }
    checks.push(c);
  }
  if (spec.down.rateBps > 0) {
    checks.push({
      name: "down rate",
      unit: "bit/s",
      configured: spec.down.rateBps,
      note: "not measured: the bulk burst runs client to server",
    });
  }
  return { checks, passed: checks.every((c) => c.pass !== false) };
}

async function readFirstLine(stream: ReadableStream<Uint8Array>, ms: number): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  try {
    while (!text.includes("\n")) {
      const next = await Promise.race([reader.read(), timeout]);
      if (!next || next.done) break;
      text += next.value;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  return text.split("\n")[0];
}

/**
 * Opens a link for `spec`, runs the UDP probe through it (plus a bulk burst
 * when a rate is set), closes the link and judges the result. Needs root.
 */
export async function runSelftest(
  spec: LinkSpec,
  options: SelftestOptions = {},
): Promise<SelftestReport> {
  const plan = probePlan(spec, options);
  const probe = await ensureBuilt("linkprobe", { quiet: true });
  // Upper bound on the probe's own run time, to kill it if it hangs.
  const limitMs = (plan.packets / plan.pps) * 1000 + 2 * plan.drainMs + plan.bulkMs +
    40 * plan.statTimeoutMs + 10000;
  await using link = await openLink(spec, { backend: options.backend, seed: options.seed });
  const echo = link.exec("server", [
    probe,
    "echo",
    "--port",
    String(ECHO_PORT),
    "--max-seconds",
    String(Math.ceil(limitMs / 1000)),
  ], { stdout: "piped", stderr: "null" });
  const first = await readFirstLine(echo.stdout, 5000);
  if (!first.includes("listening")) throw new Error("Selftest echo side did not start");
  const ping = link.exec("client", [
    probe,
    "ping",
    "--host",
    link.serverAddr,
    "--port",
    String(ECHO_PORT),
    "--count",
    String(plan.packets),
    "--pps",
    String(plan.pps),
    "--drain-ms",
    String(plan.drainMs),
    "--stat-timeout-ms",
    String(plan.statTimeoutMs),
    "--bulk-bps",
    String(plan.bulkBps),
    "--bulk-ms",
    String(plan.bulkMs),
    "--bulk-size",
    String(BULK_PAYLOAD_BYTES),
  ], { stdout: "piped", stderr: "piped" });
  const killer = setTimeout(() => ping.kill("SIGKILL"), limitMs);
  const out = await ping.output().finally(() => clearTimeout(killer));
  const text = new TextDecoder().decode(out.stdout);
  let result: ProbeResult;
  try {
    result = JSON.parse(text);
  } catch {
    const err = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new Error(`Selftest probe failed: ${err || `exit ${out.code}`}`);
  }
  const relay = await link.stats();
  const { checks, passed } = judgeSelftest(spec, plan, result);
  return { spec: formatLinkSpec(spec), profile: spec.profile, plan, checks, passed, relay };
}
