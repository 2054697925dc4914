/**
 * Which HTTP statuses count as a success: the one rule `lab load`, `lab bench`,
 * `lab soak` and the study judge responses by. A response whose status is in
 * the accepted set succeeded; any other response failed, as h2load counts it
 * (h2load: 2xx and 3xx succeed). Pure functions.
 */

/** An accepted set: exact codes and whole classes (2 for 2xx). */
export interface StatusSet {
  /** Exact codes, e.g. 200, 201, 204. */
  codes: number[];
  /** Whole classes by first digit, e.g. 2 for 2xx. */
  classes: number[];
  /** How it was written (for reports): `2xx,3xx`. */
  text: string;
}

/** The default accepted set: 2xx and 3xx, as h2load's "succeeded". */
export const DEFAULT_OK = "2xx,3xx";

/**
 * Parses `200,201,204`, `2xx` or a mix (`2xx,404`). Throws a one-line
 * `RangeError` on anything else.
 */
export function parseStatusSet(text: string = DEFAULT_OK): StatusSet {
  const codes: number[] = [];
  const classes: number[] = [];
  const items = text.split(",").map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) {
    throw new RangeError(`Expected statuses like 200,204 or 2xx, got "${text}"`);
  }
  for (const item of items) {
    const cls = /^([1-5])xx$/i.exec(item);
    if (cls) {
      classes.push(Number(cls[1]));
    } else if (/^[1-5]\d\d$/.test(item)) {
      codes.push(Number(item));
    } else {
      throw new RangeError(`Expected statuses like 200,204 or 2xx, got "${item}"`);
    }
  }
  return { codes, classes, text: items.join(",") };
}

/** True when `status` (a number, or a status-count key such as "404") is in the set. */
export function isAccepted(set: StatusSet, status: number | string): boolean {
  const n = typeof status === "number" ? status : Number(status);
  if (!Number.isInteger(n) || n < 100 || n > 599) return false;
  return set.codes.includes(n) || set.classes.includes(Math.floor(n / 100));
}

/** Responses split by the accepted set. */
export interface StatusTally {
  /** Responses with an accepted status. */
  succeeded: number;
  /** Responses with any other status. */
  failed: number;
  /** The failed responses by status, most frequent first. */
  failedByStatus: [string, number][];
}

/** Splits status counts (`{"200": 98, "404": 2}`) by the accepted set. */
export function tallyStatuses(status: Record<string, number>, set: StatusSet): StatusTally {
  let succeeded = 0, failed = 0;
  const bad: [string, number][] = [];
  for (const [code, n] of Object.entries(status)) {
    if (n <= 0) continue;
    if (isAccepted(set, code)) {
      succeeded += n;
    } else {
      failed += n;
      bad.push([code, n]);
    }
  }
  bad.sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return { succeeded, failed, failedByStatus: bad };
}

/** `100 × 404, 3 × 500` (empty string for none). */
export function formatStatusCounts(counts: [string, number][] | Record<string, number>): string {
  const list = Array.isArray(counts) ? counts : Object.entries(counts);
  return list.map(([k, v]) => `${v} × ${k}`).join(", ");
}

/** Adds one response's status to a count record. */
export function countStatus(counts: Record<string, number>, status: number): void {
  const key = String(status);
  counts[key] = (counts[key] ?? 0) + 1;
}
