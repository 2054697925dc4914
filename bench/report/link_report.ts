/**
 * The parts of a report that belong to runs across an emulated link and to
 * the `hol` and `migration` scenarios: the link description, the latency
 * percentile table, the migration table, and observations comparing HTTP/2
 * with HTTP/3. Pure functions of a run record (terminal and Markdown).
 */
import type { BenchRun, LinkDirectionRecord, ResultRow } from "../record/schema.ts";
import {
  formatBitRate,
  formatBytes,
  formatDuration,
  formatMultiple,
  formatShare,
} from "../../lib/units.ts";

function direction(d: LinkDirectionRecord): string {
  const parts = [`delay ${d.delayMs} ms`];
  if (d.jitterMs) parts.push(`jitter ±${d.jitterMs} ms`);
  parts.push(`loss ${formatShare(d.loss)}${d.burst > 1 ? ` (bursts ≤ ${d.burst})` : ""}`);
  if (d.rateBps) parts.push(`rate ${formatBitRate(d.rateBps / 8)}, queue ${d.queue} packets`);
  if (d.reorder) parts.push(`reorder ${formatShare(d.reorder)}`);
  if (d.dup) parts.push(`dup ${formatShare(d.dup)}`);
  return parts.join(", ");
}

/** The link a run crossed, in lines (empty when it crossed none). */
export function linkLines(run: BenchRun): string[] {
  const l = run.config.link;
  if (!l) return [];
  const lines = [
    `link ${l.spec} = ${l.resolved} · ${l.backend} backend` +
    (l.mtu !== undefined ? ` · MTU ${l.mtu} B` : "") + ` · configured RTT ${l.rttMs} ms` +
    (l.blackhole ? ` · blackhole ${l.blackhole.onMs} ms on / ${l.blackhole.offMs} ms off` : ""),
    `  up (client → server):   ${direction(l.up)}`,
    `  down (server → client): ${direction(l.down)}`,
  ];
  if (l.counters) {
    for (const [name, c] of [["up", l.counters.up], ["down", l.counters.down]] as const) {
      const lost = c.dropLoss + c.dropQueue + c.dropBlackhole;
      lines.push(
        `  relay ${name.padEnd(4)} ${c.in} packets in, ${c.out} out, ${lost} dropped` +
          (c.in
            ? ` (${
              formatShare(lost / c.in)
            }: loss ${c.dropLoss}, queue ${c.dropQueue}, blackhole ${c.dropBlackhole})`
            : ""),
      );
    }
  }
  return lines;
}

/** Rows that show latency percentiles in their own table. */
export function percentileRows(run: BenchRun): ResultRow[] {
  return run.rows.filter((r) => r.scenario === "hol");
}

/** Header and cells of the percentile table (p50, p90, p99, p99.9, max). */
export function percentileTable(run: BenchRun): { header: string[]; body: string[][] } {
  return {
    header: ["transport", "what one sample times", "p50", "p90", "p99", "p99.9", "max", "n", "err"],
    body: percentileRows(run).map((r) => [
      r.transport,
      r.label,
      formatDuration(r.estimate.p50),
      formatDuration(r.estimate.p90),
      formatDuration(r.estimate.p99),
      formatDuration(r.estimate.p999),
      formatDuration(r.estimate.max),
      String(r.estimate.n),
      String(r.errors),
    ]),
  };
}

/** Header and cells of the migration table. */
export function migrationTable(run: BenchRun): { header: string[]; body: string[][] } {
  const rows = run.rows.filter((r) => r.scenario === "migration");
  const ms = (v: number | undefined) => (v === undefined ? "–" : formatDuration(v * 1e6));
  return {
    header: [
      "transport",
      "gap around the change",
      "longest interval",
      "errors after",
      "client replaced",
      "same connection",
      "done before/after",
      "median latency",
    ],
    body: rows.map((r) => {
      const x = r.extra ?? {};
      return [
        r.transport,
        ms(x.gapMs) + (x.recovered === 0 ? " (never recovered)" : ""),
        ms(x.maxIntervalMs),
        String(x.errorsAfterChange ?? "–"),
        String(x.reopened ?? "–"),
        x.sameConnection === undefined ? "–" : x.sameConnection ? "yes" : "no (reconnected)",
        `${x.completedBefore ?? "–"}/${x.completedAfter ?? "–"}`,
        formatDuration(r.estimate.median),
      ];
    }),
  };
}

/** Sentences comparing HTTP/2 with HTTP/3 in `hol`, `cold` and `migration` rows. */
export function linkObservations(run: BenchRun): string[] {
  const out: string[] = [];
  const where = run.config.link ? ` across ${run.config.link.spec}` : "";
  const hol = run.rows.filter((r) => r.scenario === "hol");
  for (const size of new Set(hol.map((r) => r.sizeBytes))) {
    const h3 = hol.find((r) => r.transport === "h3" && r.sizeBytes === size);
    for (const h2 of hol.filter((r) => r.transport !== "h3" && r.sizeBytes === size)) {
      if (!h3) continue;
      const ratio = (k: "p50" | "p99" | "p999") => formatMultiple(h3.estimate[k] / h2.estimate[k]);
      out.push(
        `hol${where}, ${
          formatBytes(size ?? 0)
        } × ${h3.concurrency} streams: h3/${h2.transport} = ` +
          `${ratio("p50")} at p50, ${ratio("p99")} at p99, ${ratio("p999")} at p99.9 ` +
          `(p99 ${formatDuration(h3.estimate.p99)} vs ${formatDuration(h2.estimate.p99)}).`,
      );
    }
  }
  const cold = run.rows.filter((r) => r.scenario === "cold" && r.id.endsWith("/full/total"));
  const h3c = cold.find((r) => r.transport === "h3");
  for (const h2 of cold.filter((r) => r.transport !== "h3")) {
    if (!h3c) continue;
    const rtt = run.config.link?.rttMs;
    const inRtts = (
      r: ResultRow,
    ) => (rtt ? ` = ${(r.estimate.median / 1e6 / rtt).toFixed(2)} RTT` : "");
    out.push(
      `cold${where}: a new h3 client's first response takes ${formatDuration(h3c.estimate.median)}${
        inRtts(h3c)
      }, ` +
        `${h2.transport}'s ${formatDuration(h2.estimate.median)}${
          inRtts(h2)
        } (h3/${h2.transport} = ` +
        `${formatMultiple(h3c.estimate.median / h2.estimate.median)} at the median).`,
    );
  }
  for (const r of run.rows.filter((r) => r.scenario === "migration")) {
    const x = r.extra ?? {};
    out.push(
      `migration${where}: ${r.transport} went ${
        formatDuration((x.gapMs ?? NaN) * 1e6)
      } without a response around ` +
        `the port change, with ${
          x.errorsAfterChange ?? 0
        } failed request(s) after it and the client replaced ` +
        `${x.reopened ?? 0} time(s)` +
        (x.sameConnection === undefined
          ? ""
          : x.sameConnection
          ? "; it kept its connection"
          : "; it connected again") +
        (x.recovered === 0 ? "; it never recovered." : "."),
    );
  }
  return out;
}
