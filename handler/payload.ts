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

/** A cached body, linked in order of use. */
interface CachedBody {
  size: number;
  body: Uint8Array;
  older: CachedBody | null;
  newer: CachedBody | null;
}

/**
 * Creates a cache so repeated sizes cost no allocation. The order of use is a
 * list through the entries, so a hit only relinks them: the `Map` is written
 * only when a body comes or goes. (Re-inserting a hit into the `Map` would
 * make it rebuild its hash table every few hits, and once that table has
 * lived long enough to be in the old generation, each rebuild is a new table
 * there: about 150 bytes per request that only a full collection frees.)
 */
export function createPayloadCache(options: PayloadCacheOptions = {}): PayloadCache {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const entries = new Map<number, CachedBody>();
  let oldest: CachedBody | null = null;
  let newest: CachedBody | null = null;
  let bytes = 0;
  const unlink = (e: CachedBody) => {
    if (e.older) e.older.newer = e.newer;
    else oldest = e.newer;
    if (e.newer) e.newer.older = e.older;
    else newest = e.older;
    e.older = e.newer = null;
  };
  const link = (e: CachedBody) => {
    e.older = newest;
    if (newest) newest.newer = e;
    else oldest = e;
    newest = e;
  };
  return {
    get(size: number): Uint8Array {
      const hit = entries.get(size);
      if (hit !== undefined) {
        if (hit !== newest) {
          unlink(hit);
          link(hit);
        }
        return hit.body;
      }
      const body = buildPayload(size);
      if (size > maxBytes) return body;
      while (oldest && bytes + size > maxBytes) {
        const drop: CachedBody = oldest;
        unlink(drop);
        entries.delete(drop.size);
        bytes -= drop.size;
      }
      const entry: CachedBody = { size, body, older: null, newer: null };
      link(entry);
      entries.set(size, entry);
      bytes += size;
      return body;
    },
    get bytes() {
      return bytes;
    },
  };
}
