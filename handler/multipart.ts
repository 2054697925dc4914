/**
 * `multipart/related` bodies (RFC 2387, TS 29.500 §6.1) parsed into parts and
 * built from parts, working on bytes so binary parts survive untouched.
 */
import type { MultipartPart, SbiHeaders } from "./types.ts";

const CRLF = new Uint8Array([13, 10]);
const encoder = new TextEncoder();
const latin1 = new TextDecoder("latin1");

/** Whether a content-type names `multipart/related`. */
export function isMultipartRelated(contentType: string | undefined): boolean {
  return contentType !== undefined &&
    contentType.split(";")[0].trim().toLowerCase() === "multipart/related";
}

/**
 * The `boundary` parameter of a content-type, unquoted.
 *
 * @throws {SyntaxError} when there is none or it is not a valid RFC 2046 boundary
 */
export function multipartBoundary(contentType: string): string {
  const match = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]+))/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  if (boundary === undefined) throw new SyntaxError("Multipart content-type lacks a boundary");
  if (!/^[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]$/.test(boundary)) {
    throw new SyntaxError("Multipart boundary is not valid");
  }
  return boundary;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = haystack.length - needle.length;
  outer: for (let i = haystack.indexOf(first, from); i !== -1 && i <= last;) {
    for (let j = 1; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) {
        i = haystack.indexOf(first, i + 1);
        continue outer;
      }
    }
    return i;
  }
  return -1;
}

function parseHeaders(block: Uint8Array): SbiHeaders {
  const headers: SbiHeaders = {};
  if (block.length === 0) return headers;
  for (const line of latin1.decode(block).split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new SyntaxError("Multipart part has a malformed header line");
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(name)) {
      throw new SyntaxError("Multipart part has an invalid header name");
    }
    headers[name] = line.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * Splits a `multipart/related` body into its parts. The preamble and epilogue
 * are ignored; part bodies are views into `body`.
 *
 * @throws {SyntaxError} when the content-type has no valid boundary, the body
 * has no closing delimiter, or a part's headers are malformed
 */
export function parseMultipart(body: Uint8Array, contentType: string): MultipartPart[] {
  const boundary = multipartBoundary(contentType);
  const dash = encoder.encode(`--${boundary}`);
  const delimiter = encoder.encode(`\r\n--${boundary}`);

  // The first delimiter may start the body or follow a preamble line.
  let at: number;
  if (indexOf(body, dash, 0) === 0) at = 0;
  else {
    const found = indexOf(body, delimiter, 0);
    if (found === -1) throw new SyntaxError("Multipart body has no boundary delimiter");
    at = found + 2;
  }

  const parts: MultipartPart[] = [];
  for (;;) {
    let cursor = at + dash.length;
    if (body[cursor] === 0x2d && body[cursor + 1] === 0x2d) {
      if (parts.length === 0) throw new SyntaxError("Multipart body has no parts");
      return parts;
    }
    // Transport padding (spaces, tabs) may follow the delimiter before CRLF.
    while (body[cursor] === 0x20 || body[cursor] === 0x09) cursor++;
    if (body[cursor] !== CRLF[0] || body[cursor + 1] !== CRLF[1]) {
      throw new SyntaxError("Multipart boundary delimiter is not followed by CRLF");
    }
    const start = cursor + 2;
    const next = indexOf(body, delimiter, start);
    if (next === -1) throw new SyntaxError("Multipart body has no closing delimiter");
    const part = body.subarray(start, next);
    let headerEnd: number;
    let bodyStart: number;
    if (part.length === 0) {
      headerEnd = 0;
      bodyStart = 0;
    } else if (part[0] === 13 && part[1] === 10) {
      headerEnd = 0;
      bodyStart = 2;
    } else {
      headerEnd = indexOf(part, encoder.encode("\r\n\r\n"), 0);
      if (headerEnd === -1) throw new SyntaxError("Multipart part has no end of headers");
      bodyStart = headerEnd + 4;
    }
    parts.push({
      headers: parseHeaders(part.subarray(0, headerEnd)),
      body: part.subarray(bodyStart),
    });
    at = next + 2;
  }
}

/**
 * Encodes parts as a `multipart/related` body for `boundary`. Header names are
 * written as given; the caller sets the matching content-type
 * (`multipart/related; boundary=…`).
 *
 * @throws {RangeError} when a part body contains the delimiter
 */
export function buildMultipart(parts: MultipartPart[], boundary: string): Uint8Array {
  multipartBoundary(`multipart/related; boundary="${boundary}"`);
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const chunks: Uint8Array[] = [];
  parts.forEach((part, i) => {
    if (indexOf(part.body, delimiter.subarray(2), 0) !== -1) {
      throw new RangeError(`Multipart part ${i} contains the boundary`);
    }
    const head = Object.entries(part.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("");
    chunks.push(encoder.encode(`${i === 0 ? "" : "\r\n"}--${boundary}\r\n${head}\r\n`), part.body);
  });
  chunks.push(encoder.encode(`\r\n--${boundary}--\r\n`));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
