/**
 * The peers scenario's names and pairs: the id of an arm (loader, server,
 * size, shape), and the paired ratios of the pairs it reports.
 */
import type { RatioRecord, ResultRow } from "../record/schema.ts";
import { ratioRecord } from "../record/rounds_summary.ts";
import type { Shape } from "./peer_loaders.ts";

/**
 * A ratio the scenario reports: `num ÷ den` of two arms' time per request
 * (`time`), or of their req/s (`rate`, the inverse of the times' ratio).
 */
export interface PeerPair {
  label: string;
  num: string;
  den: string;
  measure: "time" | "rate";
}

/** `1 stream`, `64 streams`, `8 × 64 streams`. */
export function shapeText({ connections, streams }: Shape): string {
  const s = `${streams} stream${streams > 1 ? "s" : ""}`;
  return connections === 1 ? s : `${connections} × ${s}`;
}

function slug(text: string): string {
  return text.replace(/[^a-z0-9]+/gi, "-").replace(/-$/, "");
}

/** The id of an arm and of its row. */
export function peerId(loader: string, server: string, size: number, shape: Shape): string {
  const key = shape.connections === 1
    ? String(shape.streams)
    : `${shape.connections}x${shape.streams}`;
  return `peers/${slug(loader)}/${slug(server)}/${size}/${key}`;
}

/**
 * The paired ratios of `pairs` among `rows` (rows with round series); a pair
 * whose arms are missing or short of rounds is left out. A `rate` ratio is
 * the denominator's time over the numerator's, named numerator ÷ denominator.
 */
export function peerRatios(
  rows: readonly ResultRow[],
  pairs: readonly PeerPair[],
  size: number,
): RatioRecord[] {
  const out: RatioRecord[] = [];
  for (const p of pairs) {
    const num = rows.find((r) => r.id === p.num);
    const den = rows.find((r) => r.id === p.den);
    if (!num || !den) continue;
    const fields = {
      id: `peers/${slug(p.label)}`,
      label: p.label,
      kind: "peers" as const,
      sizeBytes: size,
    };
    const rec = p.measure === "time"
      ? ratioRecord(num, den, fields)
      : ratioRecord(den, num, fields);
    if (!rec) continue;
    out.push({ ...rec, numerator: num.id, denominator: den.id });
  }
  return out;
}
