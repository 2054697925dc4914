/**
 * The one place where HTTP/3 header lists meet the SBI types, both ways.
 */
import type { SbiHeaders, SbiRequest, SbiResponse } from "../../handler/types.ts";
import type { ClientResponse } from "../types.ts";
import type { HeaderList } from "../wire.ts";

/** Connection-specific fields HTTP/3 forbids (RFC 9114 §4.2). */
const FORBIDDEN = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
]);

function fields(headers: Record<string, string>, out: HeaderList): void {
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (FORBIDDEN.has(name) || name.startsWith(":") || name === "content-length") continue;
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
  let method = "";
  let target = "";
  const headers: SbiHeaders = {};
  for (const [name, value] of list) {
    if (name === ":method") method = value;
    else if (name === ":path") target = value;
    else if (!name.startsWith(":")) {
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
  }
  if (!method || !target.startsWith("/")) throw new SyntaxError("Request lacks :method or :path");
  const q = target.indexOf("?");
  return {
    method: method.toUpperCase(),
    path: q < 0 ? target : target.slice(0, q),
    query: new URLSearchParams(q < 0 ? "" : target.slice(q + 1)),
    headers,
    body,
  };
}

/** Builds the response header list a server sends. */
export function responseHeaderList(response: SbiResponse): HeaderList {
  const out: HeaderList = [[":status", String(response.status)]];
  fields(response.headers, out);
  const bodyless = response.status === 204 || response.status === 304;
  if (!bodyless) out.push(["content-length", String(response.body.length)]);
  return out;
}

/** Converts a received response into a `ClientResponse`; throws `SyntaxError` without `:status`. */
export function toClientResponse(list: HeaderList, body: Uint8Array): ClientResponse {
  let status = 0;
  const headers: SbiHeaders = {};
  for (const [name, value] of list) {
    if (name === ":status") status = Number(value);
    else if (!name.startsWith(":")) {
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
  }
  if (!Number.isInteger(status) || status < 100 || status > 999) {
    throw new SyntaxError("Response lacks :status");
  }
  return { status, headers, body };
}
