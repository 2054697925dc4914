/**
 * The one place where HTTP/3 header lists meet the SBI types, both ways.
 */
import type { SbiRequest, SbiResponse } from "../../handler/types.ts";
import { type ClientResponse, TransportError } from "../types.ts";
import {
  decodeResponseBlock,
  DROPPED_FIELDS,
  type HeaderList,
  requestFromHeaderList,
  type ResponseHead,
  responseHeadFromList,
} from "../native/wire.ts";

function fields(headers: Record<string, string>, out: HeaderList): void {
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (DROPPED_FIELDS.has(name) || name.startsWith(":")) continue;
    out.push([name, v]);
  }
}

/** Builds the request header list a client sends (content-length when there is a body). */
export function requestHeaderList(
  method: string,
  authority: string,
  path: string,
  headers: Record<string, string>,
  bodyLength: number,
): HeaderList {
  if (!path.startsWith("/")) throw new TypeError(`Request path must start with "/": ${path}`);
  const out: HeaderList = [
    [":method", method.toUpperCase()],
    [":scheme", "https"],
    [":authority", authority],
    [":path", path],
  ];
  fields(headers, out);
  if (bodyLength > 0) out.push(["content-length", String(bodyLength)]);
  return out;
}

/** Converts a received request (header list and body) into an `SbiRequest`; throws `SyntaxError` if malformed. */
export function toSbiRequest(list: HeaderList, body: Uint8Array): SbiRequest {
  return requestFromHeaderList(list, body);
}

/** Builds the response header list a server sends. */
export function responseHeaderList(response: SbiResponse): HeaderList {
  const out: HeaderList = [[":status", String(response.status)]];
  fields(response.headers, out);
  const bodyless = response.status === 204 || response.status === 304;
  if (!bodyless) out.push(["content-length", String(response.body.length)]);
  return out;
}

/**
 * Converts a received response into a `ClientResponse`: the one HTTP/3 response
 * decoder, used by both HTTP/3 clients. A response without a valid `:status`
 * ({@linkcode responseHeadFromList}) is a protocol error: throws `TransportError`
 * "Malformed HTTP/3 response: …" with the `SyntaxError` as its cause.
 */
export function toClientResponse(list: HeaderList, body: Uint8Array): ClientResponse {
  return fromHead(responseHeadFromList, list, body);
}

/**
 * {@linkcode toClientResponse} for a header block in the native modules' wire
 * format, decoded straight into the response's fields (no list in between),
 * by the same rule and with the same error.
 */
export function toClientResponseFromBlock(block: Uint8Array, body: Uint8Array): ClientResponse {
  return fromHead(decodeResponseBlock, block, body);
}

function fromHead<T>(decode: (from: T) => ResponseHead, from: T, body: Uint8Array): ClientResponse {
  try {
    const { status, headers } = decode(from);
    return { status, headers, body };
  } catch (err) {
    throw new TransportError(`Malformed HTTP/3 response: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
