/**
 * The wire format the native modules (sbh2, sbh3) exchange with TypeScript
 * through FFI buffers, defined once for both in `transports/native/sbwire.h`:
 *
 * - a header block: for each field a u32 name length and a u32 value length,
 *   then the name and value bytes;
 * - an event record: 32 bytes (u32 type, u32 conn id, i64 stream id, i64
 *   code, u32 header length, u32 body length), then the header block and body.
 *
 * Every integer is little-endian. Names and values are byte strings, as in
 * `fetch`'s `Headers`: one character per byte (Latin-1); a character above
 * U+00FF, CR, LF or NUL in a value is a `TypeError`. Writers reuse one
 * buffer, so encoding allocates nothing per message.
 */
import type { SbiHeaders, SbiRequest, SbiResponse } from "../../handler/types.ts";

/** Header fields in order, names lower-case, pseudo-headers first. */
export type HeaderList = [name: string, value: string][];

/** Size of the fixed part of an event record. */
export const EVENT_HEADER_LEN = 32;

/** Event types (enum sbwire_event_type). */
export const WIRE_EVENT = {
  CONNECTED: 1,
  MESSAGE: 2,
  RESET: 3,
  CLOSED: 4,
  GOAWAY: 5,
  RELEASED: 6,
  /** Server: a request body passed a limit; headers only; `code` is the status to answer ({@linkcode TOO_LARGE}). */
  TOO_LARGE: 7,
  /** Client: the server refused 0-RTT; what was submitted early must be submitted again. */
  EARLY_REJECTED: 8,
} as const;

/** Codes of a TOO_LARGE event (enum sbwire_too_large): the status the server answers. */
export const TOO_LARGE = {
  /** The body passed the server's body limit. */
  BODY: 413,
  /** The body did not fit in the server's budget for request bodies held at once. */
  BUDGET: 503,
} as const;

/** The fixed part of one event record. */
export interface EventRecord {
  /** One of {@linkcode WIRE_EVENT}. */
  type: number;
  /** Server connection id where the module has one, else 0. */
  connId: number;
  /** Stream id, -1 for connection events. */
  streamId: number;
  /** Per type: protocol error code, module error code, status or token. */
  code: number;
  /** Bytes of header block after the record. */
  headerLength: number;
  /** Bytes of body after the header block. */
  bodyLength: number;
}

/** Reads a little-endian i64 as a number (exact within ±2^53, which every field stays in). */
function readI64(view: DataView, offset: number): number {
  return view.getUint32(offset, true) + view.getInt32(offset + 4, true) * 0x1_0000_0000;
}

/**
 * Reads the event record at `offset` of `view`, into `into` when given (a
 * reader that polls often reuses one record) or else into a new one.
 */
export function readEventRecord(
  view: DataView,
  offset: number,
  into: EventRecord = {} as EventRecord,
): EventRecord {
  into.type = view.getUint32(offset, true);
  into.connId = view.getUint32(offset + 4, true);
  into.streamId = readI64(view, offset + 8);
  into.code = readI64(view, offset + 16);
  into.headerLength = view.getUint32(offset + 24, true);
  into.bodyLength = view.getUint32(offset + 28, true);
  return into;
}

/**
 * Fields a writer never copies from the caller: the connection-specific ones
 * HTTP/2 and HTTP/3 forbid (RFC 9113 §8.2.2, RFC 9114 §4.2), `host` (the
 * authority travels as `:authority`) and `content-length` (set from the body).
 */
export const DROPPED_FIELDS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

/** Writes header blocks into a buffer it reuses. */
export class HeaderBlockWriter {
  /** The block written since the last {@linkcode reset}, in its first {@linkcode length} bytes. */
  buffer: Uint8Array<ArrayBuffer> = new Uint8Array(4096);
  #view = new DataView(this.buffer.buffer);
  #off = 0;

  /** Bytes written since the last {@linkcode reset}. */
  get length(): number {
    return this.#off;
  }

  /** Starts a new block. */
  reset(): void {
    this.#off = 0;
  }

  #reserve(n: number): void {
    if (this.#off + n <= this.buffer.length) return;
    let cap = this.buffer.length * 2;
    while (cap < this.#off + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buffer.subarray(0, this.#off));
    this.buffer = next;
    this.#view = new DataView(next.buffer);
  }

  /** Appends fields a writer of this kind encoded before (a block or a part of one). */
  append(encoded: Uint8Array): void {
    this.#reserve(encoded.length);
    this.buffer.set(encoded, this.#off);
    this.#off += encoded.length;
  }

  /** Appends one field; upper-case ASCII letters in the name are lowered. */
  field(name: string, value: string): void {
    const nl = name.length, vl = value.length;
    this.#reserve(8 + nl + vl);
    const b = this.buffer;
    this.#view.setUint32(this.#off, nl, true);
    this.#view.setUint32(this.#off + 4, vl, true);
    let o = this.#off + 8;
    for (let i = 0; i < nl; i++) {
      const c = name.charCodeAt(i);
      // anything outside token characters is refused; ':' only leads a pseudo-header
      if (c <= 0x20 || c >= 0x7f || c === 0x3a && i > 0) {
        throw new TypeError(`Invalid header name: ${name}`);
      }
      b[o++] = c >= 0x41 && c <= 0x5a ? c + 32 : c;
    }
    for (let i = 0; i < vl; i++) {
      const c = value.charCodeAt(i);
      if (c > 0xff || c === 0x0a || c === 0x0d || c === 0) {
        throw new TypeError(`Invalid value for header ${name}`);
      }
      b[o++] = c;
    }
    this.#off = o;
  }

  /** Appends `headers` minus connection-specific fields, pseudo-headers and `content-length`. */
  fields(headers: Record<string, string>): void {
    for (const name in headers) {
      const lower = name.toLowerCase();
      if (DROPPED_FIELDS.has(lower) || lower.charCodeAt(0) === 0x3a) continue;
      if (lower === "te" && headers[name].toLowerCase() !== "trailers") continue;
      this.field(lower, headers[name]);
    }
  }
}

/** Writes request header blocks into a buffer it reuses. */
export class RequestBlockWriter extends HeaderBlockWriter {
  /**
   * Encodes the pseudo-headers, then `headers` (connection-specific fields
   * and caller pseudo-headers dropped), then `content-length` when the body
   * is not empty; returns the block's length.
   */
  encode(
    method: string,
    scheme: string,
    authority: string,
    path: string,
    headers: Record<string, string>,
    bodyLength: number,
  ): number {
    this.reset();
    this.field(":method", method);
    this.field(":scheme", scheme);
    this.field(":authority", authority);
    this.field(":path", path);
    this.fields(headers);
    if (bodyLength > 0) this.field("content-length", String(bodyLength));
    return this.length;
  }
}

/** Writes response header blocks into a buffer it reuses. */
export class ResponseBlockWriter extends HeaderBlockWriter {
  /**
   * Encodes `:status`, the response's headers (connection-specific fields
   * dropped) and `content-length` (except for 204 and 304); returns the
   * block's length.
   */
  encode(response: SbiResponse): number {
    this.reset();
    this.field(":status", String(response.status));
    this.fields(response.headers);
    if (response.status !== 204 && response.status !== 304) {
      this.field("content-length", String(response.body.length));
    }
    return this.length;
  }
}

/** Serialises header fields into a new block (names taken as given, lower-case letters expected). */
export function encodeHeaderBlock(headers: HeaderList): Uint8Array<ArrayBuffer> {
  const w = new HeaderBlockWriter();
  for (const [n, v] of headers) w.field(n, v);
  return w.buffer.slice(0, w.length);
}

/**
 * Short strings seen before, by a hash of some of their bytes: header names
 * and most values repeat from message to message, and a hit (checked byte by byte)
 * costs a tenth of building the string again. The table is direct-mapped:
 * a slot holds the last string whose hash fell on it, so values that never
 * repeat (trace ids, timestamps) only displace one entry each, nothing is
 * cleared, and the hash stays a small integer (a 32-bit key of a `Map` is a
 * heap number, allocated on every lookup). Each entry is built flat in one
 * call (a string grown character by character is a rope of one node per
 * character). A hit is checked against a copy of the entry's bytes, not the
 * string's characters: a string used as a property key (every header name)
 * becomes a thin string pointing to its internalized copy, and optimized code
 * reads such a string's characters at several times the cost of a byte.
 * Values that are new in every message by definition (a `traceparent`, a
 * sender timestamp) are not put in: kept there until displaced, they would
 * outlive a request and be promoted to the old generation (about 55 bytes a
 * request on the h2c server) that only a full collection frees.
 */
const INTERN_MAX_LEN = 96;
const INTERN_SLOTS = 1024;
const interned: string[] = new Array<string>(INTERN_SLOTS).fill("");
/** The bytes of `interned[slot]`, at `slot * INTERN_MAX_LEN`. */
const internedBytes = new Uint8Array(INTERN_SLOTS * INTERN_MAX_LEN);

function flatLatin1(b: Uint8Array, start: number, end: number): string {
  return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
}

function latin1(b: Uint8Array, start: number, end: number): string {
  const len = end - start;
  if (len > INTERN_MAX_LEN) return flatLatin1(b, start, end);
  // the length and at most nine bytes spread over the string pick the slot (a hit is
  // compared in full, so hashing every byte would only read them twice)
  let h = len;
  const step = (len >>> 3) + 1;
  for (let i = start; i < end; i += step) h = Math.imul(h ^ b[i], 0x01000193);
  if (len > 0) h = Math.imul(h ^ b[end - 1], 0x01000193);
  const slot = (h ^ (h >>> 16)) & (INTERN_SLOTS - 1);
  const at = slot * INTERN_MAX_LEN;
  if (interned[slot].length === len) {
    let i = 0;
    while (i < len && internedBytes[at + i] === b[start + i]) i++;
    if (i === len) return interned[slot];
  }
  const s = flatLatin1(b, start, end);
  interned[slot] = s;
  for (let i = 0; i < len; i++) internedBytes[at + i] = b[start + i];
  return s;
}

/**
 * The field cursor of the block decoders: {@linkcode nextField} reads the
 * field at an offset into these (no closure, no view or list per block).
 * Decoding is synchronous, so one cursor serves every decoder.
 */
let fieldName = "";
let fieldValue = "";

function u32le(b: Uint8Array, off: number): number {
  return (b[off] | b[off + 1] << 8 | b[off + 2] << 16 | b[off + 3] << 24) >>> 0;
}

/**
 * Reads the field at `off` of `block` into the cursor (its value only when
 * `value` says so, else ""); returns the offset of the next field. Throws
 * `SyntaxError` when the block is truncated.
 */
function nextField(block: Uint8Array, off: number, value: (name: string) => boolean): number {
  if (block.length - off < 8) throw new SyntaxError("Truncated header block");
  const nl = u32le(block, off);
  const vl = u32le(block, off + 4);
  off += 8;
  if (nl + vl > block.length - off) throw new SyntaxError("Truncated header block");
  const name = latin1(block, off, off + nl);
  fieldName = name;
  fieldValue = !value(name)
    ? ""
    : name === "traceparent" || name === "3gpp-sbi-sender-timestamp"
    ? flatLatin1(block, off + nl, off + nl + vl)
    : latin1(block, off + nl, off + nl + vl);
  return off + nl + vl;
}

const everyValue = (): boolean => true;

/** Parses a header block; throws `SyntaxError` when it is truncated. */
export function decodeHeaderBlock(block: Uint8Array): HeaderList {
  const out: HeaderList = [];
  for (let off = 0; off < block.length;) {
    off = nextField(block, off, everyValue);
    out.push([fieldName, fieldValue]);
  }
  return out;
}

function addField(headers: SbiHeaders, name: string, value: string): void {
  headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
}

/** A decoded response head. */
export interface ResponseHead {
  /** `:status`, three digits from 100 to 999 ({@linkcode parseStatus}). */
  status: number;
  /** Regular fields, lower-case names; repeated fields joined with ", ". */
  headers: SbiHeaders;
}

/** The values a response head keeps: `:status` and every regular field. */
const responseValue = (name: string): boolean => name.charCodeAt(0) !== 0x3a || name === ":status";

/** The status a `:status` value names: three digits, 100 to 999; 0 for anything else. Every client reads it so. */
export function parseStatus(value: string): number {
  return /^[1-9]\d\d$/.test(value) ? Number(value) : 0;
}

/**
 * The one rule of every response decoder: a response without a valid `:status`
 * is a protocol error, thrown as `SyntaxError` with one message.
 */
function checkedHead(raw: string | undefined, headers: SbiHeaders): ResponseHead {
  const status = raw === undefined ? 0 : parseStatus(raw);
  if (status === 0) {
    const got = raw === undefined ? "none" : JSON.stringify(raw);
    throw new SyntaxError(`Response lacks a valid :status (three digits from 100; got ${got})`);
  }
  return { status, headers };
}

/** Decodes a response header block (HTTP/2); throws `SyntaxError` when it is truncated or lacks a valid `:status`. */
export function decodeResponseBlock(block: Uint8Array): ResponseHead {
  const headers: SbiHeaders = {};
  let status: string | undefined;
  for (let off = 0; off < block.length;) {
    off = nextField(block, off, responseValue);
    const name = fieldName, value = fieldValue;
    if (name === ":status") status = value;
    else if (name.charCodeAt(0) !== 0x3a) addField(headers, name, value);
  }
  return checkedHead(status, headers);
}

/** Reads a decoded response header list (HTTP/3) by the same rule; throws `SyntaxError` without a valid `:status`. */
export function responseHeadFromList(list: HeaderList): ResponseHead {
  const headers: SbiHeaders = {};
  let status: string | undefined;
  for (const [name, value] of list) {
    if (name === ":status") status = value;
    else if (name.charCodeAt(0) !== 0x3a) addField(headers, name, value);
  }
  return checkedHead(status, headers);
}

/**
 * Parses a query string as `URLSearchParams` does: a query with no `%` and
 * no `+` needs no decoding, so its pairs are cut out here (half the cost of
 * the runtime's parser, which serves the rest).
 */
export function parseQuery(query: string): URLSearchParams {
  if (query.length === 0) return new URLSearchParams();
  if (query.includes("%") || query.includes("+")) return new URLSearchParams(query);
  const out = new URLSearchParams();
  let start = 0;
  while (start <= query.length) {
    let end = query.indexOf("&", start);
    if (end < 0) end = query.length;
    if (end > start) {
      const eq = query.indexOf("=", start);
      if (eq >= 0 && eq < end) out.append(query.slice(start, eq), query.slice(eq + 1, end));
      else out.append(query.slice(start, end), "");
    }
    start = end + 1;
  }
  return out;
}

/** Builds an `SbiRequest`; throws `SyntaxError` without `:method` or a `:path` starting with "/". */
function buildRequest(
  method: string,
  target: string,
  headers: SbiHeaders,
  body: Uint8Array,
): SbiRequest {
  if (!method || target.charCodeAt(0) !== 0x2f) {
    throw new SyntaxError("Request lacks :method or :path");
  }
  const q = target.indexOf("?");
  return {
    method: method.toUpperCase(),
    path: q < 0 ? target : target.slice(0, q),
    query: parseQuery(q < 0 ? "" : target.slice(q + 1)),
    headers,
    body,
  };
}

/** The values a request keeps: `:method`, `:path` and every regular field. */
const requestValue = (name: string): boolean =>
  name.charCodeAt(0) !== 0x3a || name === ":method" || name === ":path";

/**
 * Decodes a request header block and its body into an `SbiRequest`; throws
 * `SyntaxError` when the block is truncated or lacks `:method` or a `:path`
 * starting with "/". Repeated fields are joined with ", ".
 */
export function decodeRequestBlock(block: Uint8Array, body: Uint8Array): SbiRequest {
  const headers: SbiHeaders = {};
  let method = "";
  let target = "";
  for (let off = 0; off < block.length;) {
    off = nextField(block, off, requestValue);
    const name = fieldName;
    if (name === ":method") method = fieldValue;
    else if (name === ":path") target = fieldValue;
    else if (name.charCodeAt(0) !== 0x3a) addField(headers, name, fieldValue);
  }
  return buildRequest(method, target, headers, body);
}

/** The same as {@linkcode decodeRequestBlock} for fields already decoded into a list. */
export function requestFromHeaderList(list: HeaderList, body: Uint8Array): SbiRequest {
  const headers: SbiHeaders = {};
  let method = "";
  let target = "";
  for (const [name, value] of list) {
    if (name === ":method") method = value;
    else if (name === ":path") target = value;
    else if (name.charCodeAt(0) !== 0x3a) addField(headers, name, value);
  }
  return buildRequest(method, target, headers, body);
}
