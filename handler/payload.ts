/**
 * Deterministic JSON bodies of an exact byte size, for the `/nbench/v1/payload`
 * route. The body for a size is always the same bytes, whoever asks for it.
 */

/** Largest payload the benchmark route serves: 16 MiB. */
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;

/** Filler characters: printable ASCII that needs no escaping inside a JSON string. */
const FILLER = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

const OPEN = '{"p":"';
const CLOSE = '"}';
/** Smallest size that fits the `{"p":"…"}` shape. */
const OBJECT_MIN = OPEN.length + CLOSE.length;

/**
 * Builds the body of exactly `size` bytes. Always valid JSON:
 * - 1 byte: `0`;
 * - 2 to 7 bytes: an empty object padded with spaces, `{   }`;
 * - 8 bytes and more: `{"p":"abc…"}` with the filler alphabet repeated.
 *
 * @throws {RangeError} when `size` is not an integer in 1 … {@link MAX_PAYLOAD_BYTES}
 */
export function buildPayload(size: number): Uint8Array {
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAYLOAD_BYTES) {
    throw new RangeError(`Payload size must be an integer from 1 to ${MAX_PAYLOAD_BYTES}`);
  }
  const out = new Uint8Array(size);
  if (size === 1) {
    out[0] = 0x30; // "0"
    return out;
  }
  if (size < OBJECT_MIN) {
    out.fill(0x20);
    out[0] = 0x7b; // "{"
    out[size - 1] = 0x7d; // "}"
    return out;
  }
  const encoder = new TextEncoder();
  encoder.encodeInto(OPEN, out);
  const fillEnd = size - CLOSE.length;
  const first = Math.min(FILLER.length, fillEnd - OPEN.length);
  encoder.encodeInto(FILLER.slice(0, first), out.subarray(OPEN.length));
  // Double the filled region until the filler span is complete.
  let filled = first;
  while (OPEN.length + filled < fillEnd) {
    const n = Math.min(filled, fillEnd - OPEN.length - filled);
    out.copyWithin(OPEN.length + filled, OPEN.length, OPEN.length + n);
    filled += n;
  }
  encoder.encodeInto(CLOSE, out.subarray(fillEnd));
  return out;
}

/** Options for {@link createPayloadCache}. */
export interface PayloadCacheOptions {
  /**
   * Total bytes of bodies kept; the least recently used are dropped beyond it.
   * A single body larger than the budget is built but not kept. Default 64 MiB.
   */
  maxBytes?: number;
}

/** A size-keyed cache of payload bodies. */
export interface PayloadCache {
  /**
   * The body for `size` (see {@link buildPayload}). The returned bytes are
   * shared between callers and must not be modified.
   */
  get(size: number): Uint8Array;
  /** Bytes currently held. */
  readonly bytes: number;
}

/** Creates a cache so repeated sizes cost no allocation. */
export function createPayloadCache(options: PayloadCacheOptions = {}): PayloadCache {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const entries = new Map<number, Uint8Array>();
  let bytes = 0;
  return {
    get(size: number): Uint8Array {
      const hit = entries.get(size);
      if (hit !== undefined) {
        // Re-insert to mark as most recently used.
        entries.delete(size);
        entries.set(size, hit);
        return hit;
      }
      const body = buildPayload(size);
      if (size > maxBytes) return body;
      for (const [key, value] of entries) {
        if (bytes + size <= maxBytes) break;
        entries.delete(key);
        bytes -= value.length;
      }
      entries.set(size, body);
      bytes += size;
      return body;
    },
    get bytes() {
      return bytes;
    },
  };
}
