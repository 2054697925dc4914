/**
 * Whether two study runs reach the same verdict, cell by cell: the cells both
 * decided, how many carry the same label, and how many of those decided clear
 * of the threshold in both agree (a label at the threshold is the one a
 * repeat may well swap, see `repeatFlipChance`).
 */
import type { CellVerdict, StudyVerdict } from "./verdict.ts";
import { compactCell } from "./verdict_grid.ts";

/** Two runs' verdicts side by side. */
export interface VerdictAgreement {
  /** Cells decided in both runs, and how many got the same label. */
  decided: number;
  agree: number;
  /** Cells decided in both and clear of the threshold in both, and how many agree. */
  clear: number;
  clearAgree: number;
  /** Cells decided in both with different labels. */
  differ: { cell: string; a: string; b: string; atThreshold: boolean }[];
  /** Cells decided in one run only. */
  onlyA: number;
  onlyB: number;
}

const decided = (c: CellVerdict) => c.status === "material" || c.status === "not-material";
const key = (c: CellVerdict) => `${c.stack ?? ""}\n${c.link}\n${c.flow}\n${c.ues}`;
const name = (c: CellVerdict) =>
  `${c.flow} on ${c.link} at ${c.ues} UEs${c.stack ? ` (${c.stack})` : ""}`;

/** Compares the verdicts of a baseline A and a candidate B. */
export function verdictAgreement(a: StudyVerdict, b: StudyVerdict): VerdictAgreement {
  const inB = new Map(b.cells.map((c) => [key(c), c]));
  const out: VerdictAgreement = {
    decided: 0,
    agree: 0,
    clear: 0,
    clearAgree: 0,
    differ: [],
    onlyA: 0,
    onlyB: 0,
  };
  const seen = new Set<string>();
  for (const ca of a.cells) {
    const cb = inB.get(key(ca));
    seen.add(key(ca));
    if (!cb || !decided(cb)) {
      if (decided(ca)) out.onlyA++;
      continue;
    }
    if (!decided(ca)) {
      out.onlyB++;
      continue;
    }
    out.decided++;
    const same = ca.status === cb.status;
    if (same) out.agree++;
    const edge = Boolean(ca.atThreshold || cb.atThreshold);
    if (!edge) {
      out.clear++;
      if (same) out.clearAgree++;
    }
    if (!same) {
      out.differ.push({
        cell: name(ca),
        a: compactCell(ca),
        b: compactCell(cb),
        atThreshold: edge,
      });
    }
  }
  for (const cb of b.cells) if (!seen.has(key(cb)) && decided(cb)) out.onlyB++;
  return out;
}

const pct = (n: number, d: number) => (d ? `${Math.round((100 * n) / d)} %` : "–");

/** The comparison in a few lines. */
export function renderVerdictAgreement(x: VerdictAgreement): string {
  if (x.decided === 0) {
    return `Verdicts: no cell was decided in both runs (decided in A only: ${x.onlyA}, in B only: ${x.onlyB}).`;
  }
  const lines = [
    `Verdicts: the runs decided ${x.decided} cells in common and give ${x.agree} the same label ` +
    `(${pct(x.agree, x.decided)}); of the ${x.clear} decided clear of the threshold in both, ` +
    `${x.clearAgree} agree (${pct(x.clearAgree, x.clear)}). Decided in A only: ${x.onlyA}, ` +
    `in B only: ${x.onlyB}.`,
  ];
  if (x.differ.length) {
    const edge = x.differ.filter((d) => d.atThreshold).length;
    lines.push(
      `They differ in ${x.differ.length}` +
        (edge
          ? `, ${edge === x.differ.length ? "each" : `${edge} of them`} at the threshold ` +
            `(≈) in at least one run`
          : "") +
        ":",
      ...x.differ.map((d) => `  ${d.cell}: A ${d.a}, B ${d.b}`),
    );
  }
  return lines.join("\n");
}
