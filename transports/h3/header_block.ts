/**
 * The flat header block the shim exchanges: for each field a u32 name length,
 * a u32 value length (little-endian), then the name and value bytes.
 */

/** Header fields in order, names lower-case, pseudo-headers first. */
export type HeaderList = [name: string, value: string][];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Serialises header fields into one block. */
export function encodeHeaderBlock(headers: HeaderList): Uint8Array<ArrayBuffer> {
  let cap = 0;
  for (const [n, v] of headers) cap += 8 + n.length * 3 + v.length * 3;
  const out = new Uint8Array(cap);
  const view = new DataView(out.buffer);
  let off = 0;
  for (const [n, v] of headers) {
    const nw = encoder.encodeInto(n, out.subarray(off + 8)).written;
    const vw = encoder.encodeInto(v, out.subarray(off + 8 + nw)).written;
    view.setUint32(off, nw, true);
    view.setUint32(off + 4, vw, true);
    off += 8 + nw + vw;
  }
  return out.subarray(0, off);
}

/** Parses a header block; throws `SyntaxError` when it is truncated. */
export function decodeHeaderBlock(block: Uint8Array): HeaderList {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength);
  const out: HeaderList = [];
  let off = 0;
  while (off < block.length) {
    if (block.length - off < 8) throw new SyntaxError("Truncated header block");
    const nl = view.getUint32(off, true);
    const vl = view.getUint32(off + 4, true);
    off += 8;
    if (nl + vl > block.length - off) throw new SyntaxError("Truncated header block");
    out.push([
      decoder.decode(block.subarray(off, off + nl)),
      decoder.decode(block.subarray(off + nl, off + nl + vl)),
    ]);
    off += nl + vl;
  }
  return out;
}
