/** A row's floor in a run record, and the row's multiple of it (pure). */
import type { BenchRun, FloorKind, FloorRow, FloorSource, ResultRow } from "./schema.ts";

/** The transports a bare runtime arm (deno stack) stands under. */
export const BARE_TRANSPORTS = ["h2c", "h2-tls", "h3"] as const;

/** One of {@linkcode BARE_TRANSPORTS}. */
export type BareTransport = typeof BARE_TRANSPORTS[number];

/** What a bare arm runs, in words, per transport. */
export const BARE_LABELS: Record<BareTransport, string> = {
  "h2c": "Deno's fetch → Deno's serve, h2c",
  "h2-tls": "Deno's fetch → Deno's serve, h2 over TLS",
  "h3": "a request on a QUIC stream of Deno's (quinn) → Deno's QUIC endpoint",
};

/** The kernel floor row for a protocol and size, if measured. */
export function findFloor(
  floors: readonly FloorRow[],
  protocol: FloorKind,
  sizeBytes: number | undefined,
  source: FloorSource = "kernel",
): FloorRow | undefined {
  return floors.find((f) =>
    f.source === source && f.protocol === protocol && f.sizeBytes === sizeBytes
  );
}

/** The bare runtime arm of a transport at a size (deno stack), if measured. */
export function findBareFloor(
  floors: readonly FloorRow[],
  transport: string,
  sizeBytes: number | undefined,
): FloorRow | undefined {
  return floors.find((f) =>
    f.source === "bare" && f.transport === transport && f.sizeBytes === sizeBytes
  );
}

/** The transports a stacks-alone arm can stand under (each a module of sbilab's in a C host). */
export const STACKS_TRANSPORTS = ["h2c", "h2-tls", "h3"] as const;

/** What a stacks-alone arm runs, per transport. */
export const STACKS_LABELS: Record<string, string> = {
  "h2c": "the native h2 engine → sbilab's h2 module in a C host, h2c",
  "h2-tls": "the native h2 engine → sbilab's h2 module in a C host, h2 over TLS",
  "h3": "the native h3 engine → sbilab's h3 module in a C host",
};

/** The stacks-alone arm of a transport at a size, if measured. */
export function findStacksFloor(
  floors: readonly FloorRow[],
  transport: string,
  sizeBytes: number | undefined,
): FloorRow | undefined {
  return floors.find((f) =>
    f.source === "stacks" && f.transport === transport && f.sizeBytes === sizeBytes
  );
}

/** Multiple of the row's bare runtime arm (deno stack), or undefined. */
export function bareMultiple(run: BenchRun, row: ResultRow): number | undefined {
  const f = findBareFloor(run.floors.rows, row.transport, row.sizeBytes);
  return f ? row.estimate.median / f.estimate.median : undefined;
}

/** A floor's name in a table: `kernel tcp`, `runtime udp`, `bare h2-tls`, `stacks alone h3`. */
export function floorName(f: Pick<FloorRow, "source" | "protocol" | "transport">): string {
  if (f.source === "bare") return `bare ${f.transport}`;
  if (f.source === "stacks") return `stacks alone ${f.transport}`;
  return `${f.source} ${f.protocol}`;
}

/** Multiple of the matching kernel floor, or undefined. */
export function floorMultiple(run: BenchRun, row: ResultRow): number | undefined {
  if (!row.floor) return undefined;
  const f = findFloor(run.floors.rows, row.floor, row.sizeBytes);
  return f ? row.estimate.median / f.estimate.median : undefined;
}
