/** The verdict as table cells, shared by the terminal, Markdown and CSV reporters. */
import { formatDuration } from "../lib/units.ts";
import type { CellVerdict, StudyVerdict } from "./verdict.ts";
import { changeEnd } from "./sequential.ts";

const TRANSPORTS = ["h2c", "h2-tls", "h3"];

function p99Of(c: CellVerdict, t: string): string {
  const x = c.transports.find((r) => r.transport === t);
  return x ? formatDuration(x.p99) : "–";
}

function failedOf(c: CellVerdict): string {
  return TRANSPORTS.map((t) => {
    const x = c.transports.find((r) => r.transport === t);
    return x ? `${x.failed}/${x.n + x.failed}` : "–";
  }).join(" · ");
}

/** One row per cell: link, flow, UEs, p99 per transport, the comparison and the decision. */
export function verdictTable(v: StudyVerdict): { header: string[]; body: string[][] } {
  // A stack column only when the run mixes stacks.
  const stacks = new Set(v.cells.map((c) => c.stack)).size > 1;
  const header = [
    ...(stacks ? ["stack"] : []),
    "link",
    "flow",
    "UEs",
    ...TRANSPORTS.map((t) => `${t} p99`),
    "h3 vs better h2",
    "interval of the change",
    "flows per side",
    "failed h2c · h2-tls · h3",
    "verdict",
    ...(stacks ? ["families agree"] : []),
  ];
  // Families side by side: the cells of one link, flow and UE count next to each other.
  const cells = stacks
    ? [...v.cells].sort((a, b) =>
      `${a.link}\n${a.flow}\n${String(a.ues).padStart(6)}\n${a.stack}`.localeCompare(
        `${b.link}\n${b.flow}\n${String(b.ues).padStart(6)}\n${b.stack}`,
      )
    )
    : v.cells;
  const agreeOf = (c: CellVerdict): string => {
    const peers = v.cells.filter((o) => o.link === c.link && o.flow === c.flow && o.ues === c.ues);
    if (peers.some((o) => o.status !== "material" && o.status !== "not-material")) return "–";
    return new Set(peers.map((o) => o.status)).size === 1 ? "yes" : "NO";
  };
  const body = cells.map((c) => [
    ...(stacks ? [c.stack ?? "–"] : []),
    c.link,
    c.flow,
    String(c.ues),
    ...TRANSPORTS.map((t) => p99Of(c, t)),
    c.reduction === undefined
      ? "–"
      : `${c.reduction >= 0 ? "−" : "+"}${Math.abs(c.reduction * 100).toFixed(1)} % vs ${c.bestH2}`,
    c.reductionCi ? `[${changeEnd(c.reductionCi.upper)}, ${changeEnd(c.reductionCi.lower)}]` : "–",
    c.n === undefined ? "–" : c.decidedAt ? `${c.n} (decided)` : String(c.n),
    failedOf(c),
    c.atThreshold
      ? `${c.status === "material" ? "MATERIAL" : "no"}, at the threshold (another run would ` +
        `give the other label about ${Math.round((c.flipChance ?? 0) * 100)} % of the time): ` +
        c.reason
      : c.status === "material"
      ? `MATERIAL: ${c.reason}`
      : c.status === "not-valid"
      ? c.reason
      : c.status === "no-data"
      ? `no data: ${c.reason}`
      : c.status === "undecided"
      ? `undecided: ${c.reason}${
        c.flowsToDecide !== undefined && Number.isFinite(c.flowsToDecide)
          ? `; ~${Math.round(c.flowsToDecide)} flows per side would decide it`
          : ""
      }`
      : `no: ${c.reason}`,
    ...(stacks ? [agreeOf(c)] : []),
  ]);
  return { header, body };
}
