/** Renders a soak report (pure functions of the `sbilab-soak/1` record). */
import type { SoakInterval, SoakReport, SoakSlice } from "./soak.ts";
import type { TransportName } from "../transports/types.ts";
import { formatBytes, formatDuration } from "../lib/units.ts";
import { formatStatusCounts } from "../lib/status_set.ts";

function ms(x: number | undefined): string {
  return x === undefined ? "–" : formatDuration(x * 1e6);
}

function cell(s: SoakSlice | undefined, seconds: number): string {
  if (!s) return "–";
  const skipped = s.skipped ? ` ${s.skipped} skipped` : "";
  const failed = s.failed ? ` ${s.failed} failed` : "";
  return `${(s.served / seconds).toFixed(0)}/s ${ms(s.p50)} ${
    ms(s.p99)
  }${failed} ${s.errors} err${skipped}`;
}

/** One line per interval: per transport rate, p50, p99, errors; then the server's RSS. */
export function renderSoakInterval(i: SoakInterval, intervalMs: number): string {
  const parts = Object.entries(i.transports).map(([t, s]) => `${t} ${cell(s, intervalMs / 1000)}`);
  const rss = i.rssBytes === undefined ? "rss –" : `rss ${formatBytes(i.rssBytes)}`;
  const stall = i.loadStallMs >= 100 ? `  |  load stalled ${i.loadStallMs} ms` : "";
  return `${i.t.toFixed(1).padStart(6)} s  ${parts.join("  |  ")}  |  ${rss}${stall}`;
}

/** The closing summary: per transport rate, p50, p99, errors; RSS start/peak/end; what the attackers did. */
export function renderSoakSummary(r: SoakReport): string {
  const lines = [
    `soak ${
      (r.durationMs / 1000).toFixed(0)
    } s, ${r.stack} stack, ${r.rate} req/s per transport, ${r.size} B GETs, attacks: ${
      r.attacks.join(", ") || "none"
    }`,
    "",
    "transport  served/s      p50      p99  served  failed  errors  skipped",
  ];
  for (
    const [t, s] of Object.entries(r.summary) as [
      TransportName,
      SoakReport["summary"][TransportName],
    ][]
  ) {
    if (!s) continue;
    lines.push(
      `${t.padEnd(9)} ${s.ratePerSecond.toFixed(1).padStart(9)} ${ms(s.p50).padStart(8)} ${
        ms(s.p99).padStart(8)
      } ${String(s.served).padStart(7)} ${String(s.failed ?? 0).padStart(7)} ${
        String(s.errors).padStart(7)
      } ${String(s.skipped).padStart(8)}`,
    );
  }
  const statuses = Object.entries(r.summary).filter(([, s]) => s?.status)
    .map(([t, s]) => `${t} ${formatStatusCounts(s!.status!) || "none"}`);
  if (statuses.length) lines.push(`status codes: ${statuses.join("; ")}`);
  if (r.rss) {
    const after = r.rss.after === undefined
      ? ""
      : `, ${formatBytes(r.rss.after)} once the attackers had left`;
    lines.push(
      "",
      `server RSS: start ${formatBytes(r.rss.start)}, peak ${formatBytes(r.rss.peak)}, end ${
        formatBytes(r.rss.end)
      }${after}`,
    );
  }
  const a = r.intervals.at(-1)?.attacks;
  if (a) {
    lines.push(
      `attackers: ${a.junkConnections} junk connections, ${a.junkDatagrams} junk datagrams, ` +
        `${a.idleOpened} idle connections (${a.idleClosed} closed by the server), ` +
        `${a.zeroWindowOpened} window-0 connections (${a.zeroWindowClosed} closed by the server), ` +
        `${a.resets} streams reset (${a.resetConnectionsClosed} connections ended by the server), ` +
        `${a.discoveries} discovery answers (${a.discoveriesRefused} refused), ` +
        `${a.handshakes} TLS ClientHellos and junk connections, ${a.initials} QUIC Initials and junk datagrams`,
    );
  }
  const stalls = r.intervals.filter((i) => i.loadStallMs >= 500).length;
  if (stalls > 0) {
    lines.push(
      `load generator: its own process stalled for 0.5 s or more in ${stalls} of ${r.intervals.length} intervals (sends skipped then are not server errors)`,
    );
  }
  lines.push(r.serverAlive ? "server: running at the end" : "server: EXITED during the soak");
  const b = r.bounds;
  lines.push(
    `bounds: p99 ≤ ${b.p99Ms} ms, RSS growth ≤ ${formatBytes(b.rssGrowthBytes)}, ` +
      `≤ ${formatBytes(b.rssAfterBytes)} above the start after the attackers left, ` +
      `≤ ${b.errorShare * 100} % failed: ` +
      (r.crossed.length ? `CROSSED: ${r.crossed.join("; ")}` : "held"),
  );
  return lines.join("\n");
}
