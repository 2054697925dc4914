/** The judgement of a run's requests that `lab bench` and `lab study` end with. */
import type { BenchRun } from "../bench/record/mod.ts";
import { formatStatusCounts, isAccepted, type StatusSet } from "../lib/status_set.ts";
import { RequestError } from "./request_error.ts";

/**
 * Every row's requests judged by the accepted set: a summary line (succeeded,
 * failed with their statuses, errored), and the run fails when failures pass
 * `--max-failures` (22 when all are statuses, else 1) or when no row was measured.
 */
export function judgeRun(
  run: BenchRun,
  ok: StatusSet,
  maxFailures: number,
  rule = `status ${ok.text}`,
): void {
  const failedBy: Record<string, number> = {};
  let succeeded = 0, failed = 0, errors = 0;
  // a row without status counts is another view of a counted row's requests (rate's
  // uncorrected row, cold's phase rows, a flow's own row): its errors are that row's too
  for (const row of run.rows) {
    if (row.status === undefined) continue;
    errors += row.errors;
    const answers = Object.values(row.status).reduce((a, b) => a + b, 0);
    const bad = row.failed ?? 0;
    failed += bad;
    succeeded += answers - bad;
    if (bad === 0) continue;
    for (const [code, n] of Object.entries(row.status)) {
      if (!isAccepted(ok, code)) failedBy[code] = (failedBy[code] ?? 0) + n;
    }
  }
  if (run.rows.length === 0) {
    const why = run.notes.filter((n) => /no row|FAILED|not measured|cannot/i.test(n));
    throw new Error(
      `No rows were measured${why.length ? `: ${why.join(" ")}` : " (see the notes above)"}`,
    );
  }
  const counted = run.rows.some((r) => r.status !== undefined);
  if (!counted) return;
  const statuses = formatStatusCounts(
    Object.entries(failedBy).sort((a, b) => b[1] - a[1]),
  );
  console.log(
    `\nrequests: ${succeeded} succeeded, ${failed} failed${statuses ? ` (${statuses})` : ""}, ` +
      `${errors} error${errors === 1 ? "" : "s"} (success: ${rule})`,
  );
  if (failed + errors > maxFailures) {
    const rows = run.rows.filter((r) => (r.failed ?? 0) + r.errors > 0).length;
    const msg = `${failed + errors} request(s) failed in ${rows} of ${run.rows.length} rows (` +
      [statuses, errors ? `${errors} without a response` : ""].filter(Boolean).join(", ") +
      `; success is ${rule}); --max-failures ${maxFailures}`;
    if (errors === 0) throw new RequestError("http", msg);
    throw new Error(msg);
  }
}
