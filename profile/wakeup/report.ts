/** The wake-up probe's report: pure functions over a {@linkcode ProbeRecord}. */
import { clusterMedian, pairedRatio } from "../../bench/mod.ts";
import { formatDurationWithInterval } from "../../lib/units.ts";
import { byPart, PART_TITLES, PARTS } from "../callgrind.ts";
import type { Arm } from "./arms.ts";
import type { ArmResult, ProbeRecord } from "./probe.ts";

/** What each arm is, in one phrase. */
const ARM_LABELS: Record<Arm, string> = {
  callback: "ring + thread-safe callback",
  wait: "ring + non-blocking FFI wait",
  doorbell: "ring + Unix-socket doorbell",
  deno: "Deno.listenDatagram",
  kernel: "kernel (C echo)",
};

const int = (n: number) => Math.round(n).toLocaleString("en");
const ratio = (r: { ratio: number; interval: { lower: number; upper: number } }) =>
  `${r.ratio.toFixed(2)}× [${r.interval.lower.toFixed(2)}–${r.interval.upper.toFixed(2)}]`;

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i ? c.padStart(w[i]) : c.padEnd(w[i]))).join("  ");
  return [line(head), ...rows.map(line)].join("\n");
}

function timedTable(arms: ArmResult[], burst: number): string | undefined {
  const byArm = new Map(arms.map((a) => [a.arm, a]));
  const deno = byArm.get("deno")!;
  const kernel = byArm.get("kernel")!;
  if (deno.rounds.length < 2) return undefined;
  const rows = arms.map((a) => {
    const m = clusterMedian(a.rounds);
    const all = a.rounds.flat();
    const mean = all.reduce((s, v) => s + v, 0) / all.length;
    return [
      `${a.arm} (${ARM_LABELS[a.arm]})`,
      formatDurationWithInterval(m.median, m.interval.lower, m.interval.upper),
      int(burst * 1e9 / mean),
      a.arm === "deno" ? "1" : ratio(pairedRatio(a.rounds, deno.rounds)),
      a.arm === "kernel" ? "1" : ratio(pairedRatio(a.rounds, kernel.rounds)),
    ];
  });
  const what = burst === 1 ? "round trip" : `burst of ${burst} datagrams`;
  return [
    `Time per ${what}, median of ${deno.rounds.length} interleaved rounds × ${
      deno.rounds[0].length
    } [95 % cluster-bootstrap interval]; ratios paired by round:`,
    table([
      "arm",
      burst === 1 ? "median RTT" : "median burst",
      "datagrams/s",
      "÷ Deno UDP",
      "÷ kernel",
    ], rows),
  ].join("\n");
}

function instructionTable(arms: ArmResult[], count: number, burst: number): string | undefined {
  const measured = arms.filter((a) => a.instructions);
  if (!measured.length) return undefined;
  const rows = measured.map((a) => {
    const perDatagram = Object.fromEntries(
      Object.entries(a.instructions!).map(([k, v]) => [k, v / burst]),
    );
    const g = byPart(Object.entries(perDatagram));
    return [a.arm, int(g.total), ...PARTS.map((p) => int(g[p]))];
  });
  return [
    `Instructions per datagram answered by the echo side's process, all threads (callgrind, ${
      Math.floor(count / 4)
    } vs ${count} ${burst === 1 ? "round trips" : `bursts of ${burst}`}):`,
    table(["arm", "total", ...PARTS.map((p) => PART_TITLES[p])], rows),
  ].join("\n");
}

function checkTable(arms: ArmResult[]): string {
  const rows = arms.map((a) => {
    const runs = [...a.runs, ...(a.callgrindRuns ?? [])];
    const sum = (f: (r: typeof runs[number]) => number) =>
      runs.reduce((s, r) => s + (f(r) || 0), 0);
    const hasRing = a.arm !== "deno" && a.arm !== "kernel";
    return [
      a.arm,
      int(sum((r) => r.peer.sent)),
      int(sum((r) => r.peer.answered)),
      int(sum((r) => r.peer.stray + r.peer.wrong)),
      hasRing ? `${int(sum((r) => r.side.ect0))} / ${int(sum((r) => r.side.received))}` : "–",
      hasRing ? (sum((r) => r.side.batches) / sum((r) => r.side.received)).toFixed(2) : "–",
      hasRing ? (sum((r) => r.side.wakeups) / sum((r) => r.side.batches)).toFixed(2) : "–",
    ];
  });
  return [
    "Every datagram answered once, and the marks read (every run of each arm):",
    table(
      [
        "arm",
        "sent",
        "answered",
        "stray/wrong",
        "ECT(0) read / read",
        "batches/datagram",
        "wake-ups/batch",
      ],
      rows,
    ),
  ].join("\n");
}

/** The report: the timed table, the instruction table, the checks. */
export function renderProbe(record: ProbeRecord): string {
  return [
    timedTable(record.arms, record.options.burst),
    instructionTable(record.arms, record.options.callgrindCount, record.options.burst),
    checkTable(record.arms),
  ].filter(Boolean).join("\n\n");
}
