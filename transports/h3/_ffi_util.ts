/** Argument helpers the h3 wrappers share (private to this folder). */

const encoder = new TextEncoder();

/** `s` as a NUL-terminated UTF-8 C string. */
export function cstr(s: string): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(s.length * 3 + 1);
  const { written } = encoder.encodeInto(s, b);
  return b.subarray(0, written + 1) as Uint8Array<ArrayBuffer>;
}

/** A one-byte buffer passed where a call takes a pointer and a zero length (and as an empty C string). */
export const EMPTY = new Uint8Array(1);
