/**
 * The limits every client applies, stated once beside the servers' (see
 * `server_limits.ts`): their defaults, {@linkcode resolveClientLimits} that
 * turns a client's options into the numbers in force, and the rows of the
 * client table in docs/limits.md. The native h2 and h3 clients and the deno
 * stack's clients all start from the same resolved record.
 */
import { DEFAULT_MAX_HEADER_SECTION_BYTES } from "./server_limits.ts";

/** The limits in force on one client, every field resolved. */
export interface ClientLimits {
  /** A connection whose TLS (or QUIC) handshake is not done by then fails, ms. */
  handshakeTimeoutMs: number;
  /** Largest response body accepted, bytes; a larger one fails its request. */
  maxBodyBytes: number;
  /** Largest response header section (name + value + 32 per field), bytes, advertised in SETTINGS where the stack can. */
  maxHeaderSectionBytes: number;
}

/** Defaults of {@linkcode ClientLimits}, the same for every client of every stack. */
export const DEFAULT_CLIENT_LIMITS: Readonly<ClientLimits> = Object.freeze({
  handshakeTimeoutMs: 10_000,
  maxBodyBytes: 64 * 1024 * 1024,
  maxHeaderSectionBytes: DEFAULT_MAX_HEADER_SECTION_BYTES,
});

/** The options {@linkcode resolveClientLimits} reads (a subset of `ClientOptions`). */
export interface ClientLimitOptions {
  handshakeTimeoutMs?: number;
  maxBodyBytes?: number;
  maxHeaderSectionBytes?: number;
}

/**
 * The limits a client's options ask for, unset fields taking
 * {@linkcode DEFAULT_CLIENT_LIMITS}. Throws `RangeError` for a value that is
 * not a positive safe integer.
 */
export function resolveClientLimits(options: ClientLimitOptions = {}): ClientLimits {
  const d = DEFAULT_CLIENT_LIMITS;
  const limits: ClientLimits = {
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? d.handshakeTimeoutMs,
    maxBodyBytes: options.maxBodyBytes ?? d.maxBodyBytes,
    maxHeaderSectionBytes: options.maxHeaderSectionBytes ?? d.maxHeaderSectionBytes,
  };
  for (const [name, value] of Object.entries(limits) as [keyof ClientLimits, number][]) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new RangeError(`Invalid ${name}: ${value}`);
    }
  }
  return limits;
}

/** One row of the client limits table. */
export interface ClientLimitRow {
  /** The field of {@linkcode ClientLimits} (the `ClientOptions` field that sets it). */
  name: keyof ClientLimits;
  /** The unit of the value. */
  unit: "bytes" | "ms";
  /** The value in force. */
  value: number;
  /** What happens past it, on every stack unless it says otherwise. */
  past: string;
}

const ROWS: [keyof ClientLimits, ClientLimitRow["unit"], string][] = [
  [
    "handshakeTimeoutMs",
    "ms",
    "the connection attempt fails with `TransportError` (deno h2 on `fetch`: bounded by the request's timeout)",
  ],
  ["maxBodyBytes", "bytes", "the request fails with `TransportError` and its stream is reset"],
  [
    "maxHeaderSectionBytes",
    "bytes",
    "the request fails with `TransportError` (deno h2 on `fetch`: hyper's own cap)",
  ],
];

/** The limits as rows, in the order docs/limits.md lists them. */
export function clientLimitRows(limits: ClientLimits): ClientLimitRow[] {
  return ROWS.map(([name, unit, past]) => ({ name, unit, value: limits[name], past }));
}

/** The client table of docs/limits.md, rendered from {@linkcode clientLimitRows}. */
export function clientLimitsTable(limits: ClientLimits = resolveClientLimits()): string {
  const lines = clientLimitRows(limits).map((r) =>
    `| \`${r.name}\` | ${r.value} ${r.unit} | ${r.past} |`
  );
  return [
    "| `ClientOptions` field | default | what happens past it |",
    "| --- | --- | --- |",
    ...lines,
  ]
    .join("\n");
}
