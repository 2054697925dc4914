/**
 * The resource limits every server applies, stated once: their defaults,
 * {@linkcode resolveServerLimits} that turns a server's options into the
 * numbers in force, and the table `lab serve --help` prints. The native h2
 * server, the h3 server and the deno servers all start from the same
 * resolved record, in every mode (`lab serve`, in-process, library use).
 */
import { DEFAULT_MAX_BODY_BYTES } from "../handler/handler.ts";
import {
  type ByteBudget,
  DEFAULT_BODY_BUDGET_BYTES,
  DEFAULT_RESPONSE_BUDGET_BYTES,
} from "./byte_budget.ts";

/**
 * Largest header section of one message, bytes, counted as RFC 9113 and
 * RFC 9114 do (name + value + 32 per field): the h2 module's header list
 * cap, and the same on h3 (one HTTP message, one bound, whatever carries it).
 */
export const DEFAULT_MAX_HEADER_SECTION_BYTES = 16384;

/** The limits in force on one server, every field resolved. */
export interface ServerLimits {
  /** Largest request body, bytes; a larger one is answered 413. */
  maxBodyBytes: number;
  /** Largest request header section (name + value + 32 per field), bytes, advertised in SETTINGS; a larger one resets its stream. */
  maxHeaderSectionBytes: number;
  /** TCP connections one listener holds at once (h3 has no cap of its own). */
  maxConnections: number;
  /** A connection must be ready for requests this long after it arrived, ms. */
  handshakeTimeoutMs: number;
  /** A connection with nothing in flight and no input for this long is closed, ms. */
  idleTimeoutMs: number;
  /** A response the peer reads none of for this long is reset (or its connection closed), ms. */
  stallTimeoutMs: number;
  /** Lifetime of TLS 1.3 session tickets and period of their key rotation, s (0: no tickets). */
  ticketLifetimeSeconds: number;
  /** Request-body bytes held at once (the body budget's ceiling); beyond it 503. */
  maxInflightBodyBytes: number;
  /** Response bytes queued for peers that do not read (the response budget's ceiling). */
  maxQueuedResponseBytes: number;
  /** How long `close()` waits for in-flight requests before closing connections, ms. */
  drainMs: number;
}

/** Defaults of {@linkcode ServerLimits}, the same on every stack and transport. */
export const DEFAULT_SERVER_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  maxHeaderSectionBytes: DEFAULT_MAX_HEADER_SECTION_BYTES,
  maxConnections: 4096,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  stallTimeoutMs: 30_000,
  ticketLifetimeSeconds: 3600,
  maxInflightBodyBytes: DEFAULT_BODY_BUDGET_BYTES,
  maxQueuedResponseBytes: DEFAULT_RESPONSE_BUDGET_BYTES,
  drainMs: 2000,
});

/** The options {@linkcode resolveServerLimits} reads (a subset of `ServerOptions`). */
export interface ServerLimitOptions {
  maxBodyBytes?: number;
  maxHeaderSectionBytes?: number;
  maxConnections?: number;
  handshakeTimeoutMs?: number;
  idleTimeoutMs?: number;
  stallTimeoutMs?: number;
  ticketLifetimeSeconds?: number;
  drainMs?: number;
  /** Its limit is `maxInflightBodyBytes`. */
  bodyBudget?: ByteBudget;
  /** Its limit is `maxQueuedResponseBytes`. */
  responseBudget?: ByteBudget;
}

/** Fields that may be 0 (0 meaning "none"). */
const ZERO_ALLOWED = new Set<keyof ServerLimits>(["ticketLifetimeSeconds", "drainMs"]);

/**
 * The limits a server's options ask for, unset fields taking
 * {@linkcode DEFAULT_SERVER_LIMITS}. Throws `RangeError` for a value that is
 * not a positive safe integer (0 allowed for the ticket lifetime and drain).
 */
export function resolveServerLimits(options: ServerLimitOptions = {}): ServerLimits {
  const d = DEFAULT_SERVER_LIMITS;
  const limits: ServerLimits = {
    maxBodyBytes: options.maxBodyBytes ?? d.maxBodyBytes,
    maxHeaderSectionBytes: options.maxHeaderSectionBytes ?? d.maxHeaderSectionBytes,
    maxConnections: options.maxConnections ?? d.maxConnections,
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? d.handshakeTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs ?? d.idleTimeoutMs,
    stallTimeoutMs: options.stallTimeoutMs ?? d.stallTimeoutMs,
    ticketLifetimeSeconds: options.ticketLifetimeSeconds ?? d.ticketLifetimeSeconds,
    maxInflightBodyBytes: options.bodyBudget?.limit ?? d.maxInflightBodyBytes,
    maxQueuedResponseBytes: options.responseBudget?.limit ?? d.maxQueuedResponseBytes,
    drainMs: options.drainMs ?? d.drainMs,
  };
  for (const [name, value] of Object.entries(limits) as [keyof ServerLimits, number][]) {
    const least = ZERO_ALLOWED.has(name) ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < least) {
      throw new RangeError(`Invalid ${name}: ${value}`);
    }
  }
  return limits;
}

/** One row of the limits table: the `lab serve` option, what it limits, its value. */
export interface ServerLimitRow {
  /** The field of {@linkcode ServerLimits}. */
  name: keyof ServerLimits;
  /** The `lab serve` option that sets it. */
  option: string;
  /** The unit of the value: `bytes`, `ms`, `s` or `count`. */
  unit: "bytes" | "ms" | "s" | "count";
  /** The value in force. */
  value: number;
}

const OPTIONS: [keyof ServerLimits, string, ServerLimitRow["unit"]][] = [
  ["maxBodyBytes", "--max-body", "bytes"],
  ["maxConnections", "--max-connections", "count"],
  ["handshakeTimeoutMs", "--handshake-timeout", "ms"],
  ["idleTimeoutMs", "--idle-timeout", "ms"],
  ["stallTimeoutMs", "--stall-timeout", "ms"],
  ["ticketLifetimeSeconds", "--ticket-lifetime", "s"],
  ["maxInflightBodyBytes", "--max-inflight-bodies", "bytes"],
  ["maxQueuedResponseBytes", "--max-queued-responses", "bytes"],
];

/** The limits as rows, in the order `lab serve --help` prints them (drain is not an option). */
export function serverLimitRows(limits: ServerLimits): ServerLimitRow[] {
  return OPTIONS.map(([name, option, unit]) => ({ name, option, unit, value: limits[name] }));
}
