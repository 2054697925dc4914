/**
 * The headers a real SBI client adds to every request (TS 29.500 §5.2.2,
 * §5.2.3): W3C `traceparent`, `3gpp-Sbi-Sender-Timestamp`,
 * `3gpp-Sbi-Max-Rsp-Time` and a `User-Agent` that starts with the NF type.
 * Shared by every transport's client so they send identical headers.
 */

/** Options for {@linkcode sbiRequestHeaders}. */
export interface SbiHeaderOptions {
  /** NF type named in `User-Agent`. Default `SMF`. */
  nfType?: string;
  /** Request timeout in ms, sent as `3gpp-Sbi-Max-Rsp-Time`. Required. */
  timeoutMs: number;
  /** Clock in ms since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** Product token after the NF type in `User-Agent`. */
export const USER_AGENT_PRODUCT = "sbilab/0.1";

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function pad(n: number, w = 2): string {
  return String(n).padStart(w, "0");
}

/** Formats a time as TS 29.500 `3gpp-Sbi-Sender-Timestamp` (RFC 7231 date with milliseconds). */
export function formatSenderTimestamp(ms: number): string {
  const d = new Date(ms);
  return `${DAYS[d.getUTCDay()]}, ${pad(d.getUTCDate())} ${
    MONTHS[d.getUTCMonth()]
  } ${d.getUTCFullYear()} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${
      pad(d.getUTCMilliseconds(), 3)
    } GMT`;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const randomPool = new Uint8Array(4096);
let poolOffset = randomPool.length;

/** Takes `bytes` random bytes from a refilled pool (one syscall per 4 KiB); returns where they start. */
function takeRandom(bytes: number): number {
  if (poolOffset + bytes > randomPool.length) {
    crypto.getRandomValues(randomPool);
    poolOffset = 0;
  }
  const start = poolOffset;
  poolOffset += bytes;
  return start;
}

/** `bytes` random bytes as lower-case hex. */
function hex(bytes: number): string {
  const start = takeRandom(bytes);
  let out = "";
  for (let i = start; i < start + bytes; i++) out += HEX[randomPool[i]];
  return out;
}

const HEX_DIGITS = new TextEncoder().encode("0123456789abcdef");

/**
 * Writes `bytes` random bytes as lower-case hex ASCII into `out` from `offset`,
 * from the same pool as the trace ids {@linkcode nextTraceparent} makes.
 */
export function randomHexInto(out: Uint8Array, offset: number, bytes: number): void {
  const start = takeRandom(bytes);
  for (let i = start; i < start + bytes; i++) {
    const b = randomPool[i];
    out[offset++] = HEX_DIGITS[b >> 4];
    out[offset++] = HEX_DIGITS[b & 15];
  }
}

let lastStampMs = -1;
let lastStamp = "";

function senderTimestamp(ms: number): string {
  if (ms !== lastStampMs) {
    lastStampMs = ms;
    lastStamp = formatSenderTimestamp(ms);
  }
  return lastStamp;
}

/** Returns a W3C traceparent: keeps the trace id of `parent` when valid, with a new span id. */
export function nextTraceparent(parent?: string): string {
  const m = parent ? TRACEPARENT.exec(parent.trim().toLowerCase()) : null;
  if (m && m[2] !== "0".repeat(32)) return `00-${m[2]}-${hex(8)}-${m[4]}`;
  return `00-${hex(16)}-${hex(8)}-01`;
}

/**
 * Merges the caller's headers (names lower-cased) with the SBI headers. The
 * caller's `traceparent` keeps its trace id; a caller's `user-agent` or
 * `3gpp-sbi-max-rsp-time` wins over the defaults.
 */
export function sbiRequestHeaders(
  headers: Record<string, string> | undefined,
  options: SbiHeaderOptions,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v;
  out["traceparent"] = nextTraceparent(out["traceparent"]);
  out["3gpp-sbi-sender-timestamp"] = senderTimestamp((options.now ?? Date.now)());
  out["3gpp-sbi-max-rsp-time"] ??= String(Math.max(1, Math.round(options.timeoutMs)));
  out["user-agent"] ??= `${options.nfType ?? "SMF"}-${USER_AGENT_PRODUCT}`;
  return out;
}
