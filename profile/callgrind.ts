/**
 * Instructions per request from two callgrind runs of the same client that
 * differ only in how many requests they sent: everything both runs share
 * (start-up, warm-up, shut-down) cancels, and what is left, divided by the
 * difference in requests, is one request's instructions, per object file
 * (the runtime binary with V8's generated code, the sbilab module, nghttp2,
 * GnuTLS, libc, ...). Pure functions over `callgrind_annotate` text.
 */

/** Instructions (Ir) per object file, as `callgrind_annotate --threshold=100` lists them. */
export function parseAnnotate(text: string): Map<string, number> {
  const out = new Map<string, number>();
  let total = 0;
  const line = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?)(?:\s+\[([^\]]+)\])?\s*$/;
  for (const l of text.split("\n")) {
    const m = line.exec(l);
    if (!m) continue;
    const ir = Number(m[1].replaceAll(",", ""));
    if (m[2] === "PROGRAM TOTALS") {
      total = ir;
      continue;
    }
    const object = m[3] ? m[3].replace(/^.*\//, "") : "(unknown object)";
    out.set(object, (out.get(object) ?? 0) + ir);
  }
  if (!total) throw new SyntaxError("No PROGRAM TOTALS line in the callgrind_annotate output");
  let listed = 0;
  for (const v of out.values()) listed += v;
  if (total > listed) {
    out.set("(below threshold)", (out.get("(below threshold)") ?? 0) + total - listed);
  }
  return out;
}

/** One object's instructions per request. */
export interface ObjectCost {
  object: string;
  perRequest: number;
}

/**
 * Instructions per request by object: (`large` − `small`) ÷ (`largeN` −
 * `smallN`), largest first; objects under 0.5 % of the total are summed into
 * one row.
 */
export function perRequestByObject(
  small: Map<string, number>,
  smallN: number,
  large: Map<string, number>,
  largeN: number,
): ObjectCost[] {
  if (!(largeN > smallN)) throw new RangeError("The larger run must send more requests");
  const rows: ObjectCost[] = [];
  for (const object of new Set([...small.keys(), ...large.keys()])) {
    const d = (large.get(object) ?? 0) - (small.get(object) ?? 0);
    rows.push({ object, perRequest: d / (largeN - smallN) });
  }
  const total = rows.reduce((s, r) => s + r.perRequest, 0);
  const big = rows.filter((r) => Math.abs(r.perRequest) >= 0.005 * total);
  const rest = rows.filter((r) => !big.includes(r)).reduce((s, r) => s + r.perRequest, 0);
  big.sort((a, b) => b.perRequest - a.perRequest);
  if (rest) big.push({ object: "(other objects)", perRequest: rest });
  return big;
}

/** The table: object, instructions per request, share. */
export function renderObjectCosts(title: string, rows: ObjectCost[]): string {
  const total = rows.reduce((s, r) => s + r.perRequest, 0);
  const width = Math.max(6, ...rows.map((r) => r.object.length));
  return [
    `${title}: ${Math.round(total).toLocaleString("en")} instructions per request`,
    `${"object".padEnd(width)}  ${"instr/request".padStart(13)}  share`,
    ...rows.map((r) =>
      `${r.object.padEnd(width)}  ${Math.round(r.perRequest).toLocaleString("en").padStart(13)}  ${
        (r.perRequest / total * 100).toFixed(1).padStart(5)
      } %`
    ),
  ].join("\n");
}
