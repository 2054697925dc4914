/** A row's floor in a run record, and the row's multiple of it (pure). */
import type { BenchRun, FloorKind, FloorRow, ResultRow } from "./schema.ts";

/** The kernel floor row for a protocol and size, if measured. */
export function findFloor(
  floors: readonly FloorRow[],
  protocol: FloorKind,
  sizeBytes: number | undefined,
  source: "kernel" | "runtime" = "kernel",
): FloorRow | undefined {
  return floors.find((f) =>
    f.source === source && f.protocol === protocol && f.sizeBytes === sizeBytes
  );
}

/** Multiple of the matching kernel floor, or undefined. */
export function floorMultiple(run: BenchRun, row: ResultRow): number | undefined {
  if (!row.floor) return undefined;
  const f = findFloor(run.floors.rows, row.floor, row.sizeBytes);
  return f ? row.estimate.median / f.estimate.median : undefined;
}
