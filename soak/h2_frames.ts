/**
 * Raw HTTP/2 frames for the misbehaving clients of the soak and the hardening
 * tests (zero-window readers, rapid resets): the connection preface, SETTINGS,
 * HEADERS with a literal-only HPACK block, RST_STREAM and WINDOW_UPDATE. Only
 * what those clients send; nothing here parses.
 */

/** The client connection preface (RFC 9113 §3.4). */
export const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, WINDOW_UPDATE: 8 } as const;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;

/** SETTINGS identifiers used here. */
export const SETTING = { MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4 } as const;

function frame(type: number, flags: number, stream: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  out[0] = payload.length >>> 16;
  out[1] = (payload.length >>> 8) & 0xff;
  out[2] = payload.length & 0xff;
  out[3] = type;
  out[4] = flags;
  new DataView(out.buffer).setUint32(5, stream & 0x7fffffff);
  out.set(payload, 9);
  return out;
}

/** A SETTINGS frame with the given identifier/value pairs. */
export function settingsFrame(values: [number, number][]): Uint8Array {
  const p = new Uint8Array(6 * values.length);
  const v = new DataView(p.buffer);
  values.forEach(([id, value], i) => {
    v.setUint16(6 * i, id);
    v.setUint32(6 * i + 2, value);
  });
  return frame(FRAME.SETTINGS, 0, 0, p);
}

/** An empty SETTINGS frame with the ACK flag. */
export function settingsAck(): Uint8Array {
  return frame(FRAME.SETTINGS, 0x1, 0, new Uint8Array(0));
}

function hpackInt(value: number, prefixBits: number, first: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

/** An HPACK block of literal fields without indexing, no Huffman coding. */
export function hpackLiterals(fields: [string, string][]): Uint8Array {
  const enc = new TextEncoder();
  const out: number[] = [];
  for (const [name, value] of fields) {
    const n = enc.encode(name);
    const v = enc.encode(value);
    out.push(0x00, ...hpackInt(n.length, 7, 0), ...n, ...hpackInt(v.length, 7, 0), ...v);
  }
  return new Uint8Array(out);
}

/** A HEADERS frame carrying a whole request header block; `endStream` for a request without body. */
export function headersFrame(stream: number, block: Uint8Array, endStream = true): Uint8Array {
  return frame(FRAME.HEADERS, END_HEADERS | (endStream ? END_STREAM : 0), stream, block);
}

/** A request header block for `method path` on `authority` (scheme http or https). */
export function requestBlock(
  method: string,
  path: string,
  authority: string,
  scheme = "http",
): Uint8Array {
  return hpackLiterals([
    [":method", method],
    [":scheme", scheme],
    [":authority", authority],
    [":path", path],
  ]);
}

/** An RST_STREAM frame with error code `code` (8 = CANCEL). */
export function rstStreamFrame(stream: number, code = 8): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, code);
  return frame(FRAME.RST_STREAM, 0, stream, p);
}

/** A WINDOW_UPDATE frame. */
export function windowUpdateFrame(stream: number, increment: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, increment & 0x7fffffff);
  return frame(FRAME.WINDOW_UPDATE, 0, stream, p);
}

/** A DATA frame. */
export function dataFrame(stream: number, payload: Uint8Array, endStream = false): Uint8Array {
  return frame(FRAME.DATA, endStream ? END_STREAM : 0, stream, payload);
}
