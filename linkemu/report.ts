/**
 * Text reporter for the link selftest: a pure function from a report record
 * to the lines the CLI prints.
 *
 * @module
 */
import type { SelftestCheck, SelftestReport } from "./selftest.ts";
import { formatBitRate, formatDuration, formatShare } from "../lib/units.ts";

/** One value in its unit, through the one unit formatter (a rate is in bits per second). */
function fmt(unit: SelftestCheck["unit"], v: number): string {
  return unit === "ms"
    ? formatDuration(v * 1e6)
    : unit === "share"
    ? formatShare(v)
    : formatBitRate(v / 8);
}

function row(c: SelftestCheck): string[] {
  const measured = c.measured === undefined ? "-" : fmt(c.unit, c.measured);
  let accepted = "-";
  if (c.low !== undefined && c.high !== undefined) {
    const range = `${fmt(c.unit, Math.max(0, c.low))} .. ${fmt(c.unit, c.high)}`;
    accepted = c.unit === "share" ? `99% CI ${range}` : range;
  }
  const verdict = c.pass === undefined ? "n/a" : c.pass ? "ok" : "FAIL";
  return [c.name, fmt(c.unit, c.configured), measured, accepted, verdict, c.note ?? ""];
}

/** Renders a selftest report as aligned text lines (no trailing newline). */
export function formatSelftestReport(report: SelftestReport): string {
  const p = report.plan;
  const head = `link selftest: ${report.profile ? `${report.profile} = ` : ""}${report.spec}` +
    ` (${p.packets} probes at ${p.pps}/s${p.bulkBps ? `, ${p.bulkMs} ms bulk burst` : ""})`;
  const rows = [
    ["check", "configured", "measured", "accepted", "result", ""],
    ...report.checks.map(row),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const lines = [
    head,
    ...rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()),
  ];
  if (report.relay) {
    const d = (name: string, c: typeof report.relay.up) =>
      `${name} in ${c.in} out ${c.out} lost ${c.dropLoss} queue-drop ${c.dropQueue}` +
      ` blackhole ${c.dropBlackhole} overflow ${c.dropOverflow}` +
      ` late mean ${formatDuration(c.lateMeanNs)} max ${formatDuration(c.lateMaxNs)}`;
    lines.push(`relay: ${d("up", report.relay.up)}`);
    lines.push(`relay: ${d("down", report.relay.down)}`);
  }
  lines.push(report.passed ? "PASS" : "FAIL");
  return lines.join("\n");
}
