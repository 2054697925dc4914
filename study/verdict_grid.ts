/**
 * The verdict drawn as a grid a person reads at a glance: one row per link ×
 * UE level, one column per flow (and per stack family, side by side), each
 * cell HTTP/3's p99 change against the better HTTP/2 with its interval,
 * marked by its decision. The terminal and Markdown print it compactly; the
 * HTML report opens with it.
 */
import type { CellVerdict, StudyVerdict } from "./verdict.ts";

/** One grid row: a link at one UE level. */
export interface GridRow {
  link: string;
  ues: number;
  /** One entry per column (undefined: the cell was not planned). */
  cells: (CellVerdict | undefined)[];
}

/** The grid's shape and cells. */
export interface VerdictGrid {
  /** Columns: flow × stack, in report order. */
  columns: { flow: string; stack?: string }[];
  rows: GridRow[];
  /** Stack families (one unless the run compared families). */
  stacks: string[];
}

const FLOW_ORDER = ["registration", "pdu-session", "handover", "service-request", "warm-get"];
const LINK_ORDER = ["loopback", "lan", "metro", "wan", "lossy"];

function orderOf(list: string[], x: string): number {
  const i = list.indexOf(x);
  return i < 0 ? list.length : i;
}

/** Lays the verdict's cells out as a grid; `links` gives the row order (default lan, metro, wan, lossy). */
export function verdictGrid(v: StudyVerdict, links?: string[]): VerdictGrid {
  const linkOrder = links ?? LINK_ORDER;
  const stacks = [...new Set(v.cells.map((c) => c.stack ?? ""))];
  const flows = [...new Set(v.cells.map((c) => c.flow))]
    .sort((a, b) => orderOf(FLOW_ORDER, a) - orderOf(FLOW_ORDER, b));
  const columns = flows.flatMap((flow) =>
    stacks.map((s) => ({ flow, ...(stacks.length > 1 ? { stack: s } : {}) }))
  );
  const places = [...new Set(v.cells.map((c) => `${c.link}\n${c.ues}`))]
    .map((k) => ({ link: k.split("\n")[0], ues: Number(k.split("\n")[1]) }))
    .sort((a, b) =>
      orderOf(linkOrder, a.link) - orderOf(linkOrder, b.link) ||
      a.link.localeCompare(b.link) || a.ues - b.ues
    );
  const rows = places.map((p) => ({
    ...p,
    cells: columns.map((col) =>
      v.cells.find((c) =>
        c.link === p.link && c.ues === p.ues && c.flow === col.flow &&
        (stacks.length === 1 || (c.stack ?? "") === col.stack)
      )
    ),
  }));
  return { columns, rows, stacks: stacks.filter(Boolean) };
}

/** A signed percentage: "−31 %", "+4 %". */
export function signedPct(x: number, digits = 0): string {
  if (!Number.isFinite(x)) return x > 0 ? "+∞" : "−∞";
  const v = (x * 100).toFixed(digits);
  if (Number(v) === 0) return "0 %";
  return `${x < 0 ? "−" : "+"}${v.replace("-", "")} %`;
}

/** HTTP/3's p99 change against the better HTTP/2 (−0.31 = 31 % lower), and its interval. */
export function cellChange(
  c: CellVerdict,
): { change: number; lower: number; upper: number } | undefined {
  if (c.reduction === undefined) return undefined;
  return {
    change: -c.reduction,
    lower: c.reductionCi ? -c.reductionCi.upper : NaN,
    upper: c.reductionCi ? -c.reductionCi.lower : NaN,
  };
}

/** The short mark of a decision. */
export const MARKS: Record<CellVerdict["status"], string> = {
  "material": "MATERIAL",
  "not-material": "no",
  "undecided": "undecided",
  "not-valid": "INVALID",
  "no-data": "no data",
};

/** The mark after a decision whose interval reaches across the threshold. */
export const THRESHOLD_MARK = "≈";

/**
 * One cell in a few characters: "−31 % MATERIAL", "+4 % no", "−21 % MATERIAL≈"
 * (decided, at the threshold), "−12 % undecided", "INVALID".
 */
export function compactCell(c: CellVerdict | undefined): string {
  if (!c) return "";
  if (c.status === "no-data") return "–";
  if (c.status === "not-valid") return "INVALID";
  const ch = cellChange(c);
  const mark = `${MARKS[c.status]}${c.atThreshold ? THRESHOLD_MARK : ""}`;
  return ch ? `${signedPct(ch.change)} ${mark}` : mark;
}

/** The grid as table cells for the terminal and Markdown. */
export function gridTable(grid: VerdictGrid): { header: string[]; body: string[][] } {
  const header = [
    "link",
    "UEs",
    ...grid.columns.map((c) => (c.stack ? `${c.flow} (${c.stack})` : c.flow)),
  ];
  const body = grid.rows.map((r) => [r.link, String(r.ues), ...r.cells.map(compactCell)]);
  return { header, body };
}

/** What the grid's marks mean, in one line. */
export const GRID_LEGEND =
  "Each cell: HTTP/3's p99 flow time against the better HTTP/2 (− = HTTP/3 faster) and the " +
  "decision: MATERIAL (at least 20 % lower, the interval of the change below 0), no (decided: less than 20 %), " +
  "≈ after either (at the threshold: the label rests on which side of 20 % the estimate fell, " +
  "and another run may well give the other one; read the change), " +
  "undecided (more flows needed), INVALID (the measurement did not hold), – (no data).";

const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function cellTitle(c: CellVerdict): string {
  const where = `${c.flow} on ${c.link} at ${c.ues} UEs${c.stack ? ` (${c.stack})` : ""}`;
  const extra = c.status === "undecided" && c.flowsToDecide !== undefined
    ? Number.isFinite(c.flowsToDecide)
      ? `; about ${
        Math.round(c.flowsToDecide).toLocaleString("en-US")
      } flows per side would decide it`
      : "; no foreseeable number of flows decides it"
    : c.decidedAt
    ? `; decided at ${c.decidedAt} flows per side${
      c.flipChance !== undefined
        ? `; another run would give the other label about ${
          Math.round(c.flipChance * 100)
        } % of the time`
        : ""
    }`
    : "";
  return `${where}: ${c.reason}${extra}${c.bestH2 ? ` (against ${c.bestH2})` : ""}`;
}

function htmlCell(c: CellVerdict | undefined): string {
  if (!c) return `<td class="cell none" data-status="none"></td>`;
  const ch = cellChange(c);
  const main = c.status === "no-data" ? "–" : ch ? signedPct(ch.change) : "";
  const interval = ch && !Number.isNaN(ch.lower) && c.status !== "no-data"
    ? `<span class="ci">[${signedPct(ch.lower)}, ${signedPct(ch.upper)}]</span>`
    : "";
  let tag: string = MARKS[c.status];
  if (c.status === "undecided" && c.flowsToDecide !== undefined) {
    tag = Number.isFinite(c.flowsToDecide)
      ? `undecided · ~${Math.round(c.flowsToDecide).toLocaleString("en-US")} flows`
      : "undecided";
  }
  if (c.status === "not-valid") tag = "invalid";
  if (c.status === "material") tag = "material";
  if (c.status === "not-material") tag = "not material";
  if (c.atThreshold) tag += " · at the threshold";
  const edge = c.atThreshold ? " at-threshold" : "";
  return `<td class="cell ${c.status}${edge}" data-status="${c.status}"${
    c.atThreshold ? ` data-threshold="reached"` : ""
  } title="${esc(cellTitle(c))}">` +
    `<span class="change">${esc(main)}</span>${interval}<span class="tag">${esc(tag)}</span></td>`;
}

/** The grid as an HTML table (styles in {@link GRID_CSS}). */
export function gridHtml(grid: VerdictGrid): string {
  const multi = grid.stacks.length > 1;
  const flows = [...new Set(grid.columns.map((c) => c.flow))];
  const head1 =
    `<tr><th rowspan="${multi ? 2 : 1}">link</th><th rowspan="${multi ? 2 : 1}">UEs</th>` +
    flows.map((f) => `<th${multi ? ` colspan="${grid.stacks.length}"` : ""}>${esc(f)}</th>`).join(
      "",
    ) +
    "</tr>";
  const head2 = multi
    ? `<tr>${grid.columns.map((c) => `<th class="stack">${esc(c.stack ?? "")}</th>`).join("")}</tr>`
    : "";
  const body = grid.rows.map((r, i) => {
    const first = i === 0 || grid.rows[i - 1].link !== r.link;
    const span = grid.rows.filter((x) => x.link === r.link).length;
    return `<tr>${first ? `<th class="link" rowspan="${span}">${esc(r.link)}</th>` : ""}` +
      `<th class="ues">${r.ues}</th>${r.cells.map(htmlCell).join("")}</tr>`;
  }).join("");
  return `<table class="verdict-grid"><thead>${head1}${head2}</thead><tbody>${body}</tbody></table>` +
    `<p class="legend">${esc(GRID_LEGEND)} Hover a cell for its reason.</p>`;
}

/** Styles of the grid. */
export const GRID_CSS = `
table.verdict-grid { border-collapse: separate; border-spacing: 3px; margin: .5em 0; }
table.verdict-grid th { font-weight: 600; padding: 2px 6px; }
table.verdict-grid td.cell { min-width: 7.5em; padding: 4px 6px; text-align: center; border-radius: 4px; vertical-align: middle; }
td.cell span { display: block; }
td.cell .change { font-size: 1.15em; font-weight: 700; }
td.cell .ci, td.cell .tag { font-size: .78em; }
td.cell.material { background: #1a9850; color: #fff; }
td.cell.not-material { background: #d9d9d9; color: #222; }
td.cell.material.at-threshold { background: #a6d96a; color: #111; }
td.cell.not-material.at-threshold { background: #f0f0f0; color: #222; outline: 2px solid #a6d96a; outline-offset: -3px; }
td.cell.undecided { background: #fee08b; color: #222; outline: 2px dashed #b8860b; outline-offset: -3px; }
td.cell.not-valid { background: repeating-linear-gradient(45deg, #f4a582, #f4a582 6px, #fbd5c0 6px, #fbd5c0 12px); color: #222; }
td.cell.no-data, td.cell.none { background: #fff; color: #888; border: 1px solid #ddd; }
p.legend { font-size: .85em; color: #444; }
`;
