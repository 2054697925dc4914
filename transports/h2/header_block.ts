/**
 * The flat header block the sbh2 shim exchanges (native/sbh2.h): for each
 * field a u32 name length and a u32 value length (little-endian), then the
 * name and value bytes. Names and values are byte strings (Latin-1), as in
 * `fetch`'s `Headers`; a character above U+00FF is a `TypeError`.
 *
 * Requests are written into one reusable buffer, so encoding allocates
 * nothing per request; responses decode straight to a status and a record.
 */
import type { SbiHeaders } from "../../handler/types.ts";

/** Connection-specific fields HTTP/2 forbids (RFC 9113 §8.2.2), and ones the writer sets itself. */
const DROPPED = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

/** Writes request header blocks into a buffer it reuses. */
export class RequestBlockWriter {
  /** The block of the last {@linkcode encode}, in its first `length` bytes. */
  buffer = new Uint8Array(4096);
  #view = new DataView(this.buffer.buffer);
  #off = 0;

  #reserve(n: number): void {
    if (this.#off + n <= this.buffer.length) return;
    let cap = this.buffer.length * 2;
    while (cap < this.#off + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buffer.subarray(0, this.#off));
    this.buffer = next;
    this.#view = new DataView(next.buffer);
  }

  #field(name: string, value: string): void {
    const nl = name.length, vl = value.length;
    this.#reserve(8 + nl + vl);
    const b = this.buffer;
    this.#view.setUint32(this.#off, nl, true);
    this.#view.setUint32(this.#off + 4, vl, true);
    let o = this.#off + 8;
    for (let i = 0; i < nl; i++) {
      const c = name.charCodeAt(i);
      // lower-case ASCII letters; anything outside token characters is refused
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
    this.#off = 0;
    this.#field(":method", method);
    this.#field(":scheme", scheme);
    this.#field(":authority", authority);
    this.#field(":path", path);
    for (const name in headers) {
      const lower = name.toLowerCase();
      if (DROPPED.has(lower) || lower.charCodeAt(0) === 0x3a) continue;
      if (lower === "te" && headers[name].toLowerCase() !== "trailers") continue;
      this.#field(lower, headers[name]);
    }
    if (bodyLength > 0) this.#field("content-length", String(bodyLength));
    return this.#off;
  }
}

function latin1(b: Uint8Array, start: number, end: number): string {
  if (end - start < 64) {
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(b[i]);
    return s;
  }
  return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
}

/** A decoded response head. */
export interface ResponseHead {
  /** `:status`, or 0 when missing or malformed. */
  status: number;
  /** Regular fields, lower-case names; repeated fields joined with ", ". */
  headers: SbiHeaders;
}

/** Decodes a response header block; throws `SyntaxError` when it is truncated. */
export function decodeResponseBlock(block: Uint8Array): ResponseHead {
  const v = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const headers: SbiHeaders = {};
  let status = 0;
  let off = 0;
  while (off < block.length) {
    if (block.length - off < 8) throw new SyntaxError("Truncated header block");
    const nl = v.getUint32(off, true);
    const vl = v.getUint32(off + 4, true);
    off += 8;
    if (nl + vl > block.length - off) throw new SyntaxError("Truncated header block");
    const name = latin1(block, off, off + nl);
    const value = latin1(block, off + nl, off + nl + vl);
    off += nl + vl;
    if (name === ":status") {
      const n = Number(value);
      status = /^\d{3}$/.test(value) ? n : 0;
    } else if (name.charCodeAt(0) !== 0x3a) {
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
  }
  return { status, headers };
}
