/**
 * The one place where HTTP/2 (web `Request`/`Response`) meets the SBI types.
 */
import type { SbiHeaders, SbiRequest, SbiResponse } from "../../handler/types.ts";
import type { ClientResponse } from "../types.ts";

/** Lower-cases a `Headers` object into a plain record. */
export function headersToRecord(headers: Headers): SbiHeaders {
  const out: SbiHeaders = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** Raised when a request body is larger than the server accepts. */
export class BodyTooLargeError extends RangeError {
  constructor(limit: number) {
    super(`Request body exceeds ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** Reads a stream into one buffer, stopping with {@linkcode BodyTooLargeError} past `limit`. */
export async function readBody(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > limit) {
        await reader.cancel().catch(() => {});
        throw new BodyTooLargeError(limit);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  if (chunks.length === 1) return chunks[0];
  const body = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    body.set(c, off);
    off += c.length;
  }
  return body;
}

/** Converts a server-side `Request` into an `SbiRequest`. */
export async function toSbiRequest(request: Request, maxBodyBytes: number): Promise<SbiRequest> {
  const url = new URL(request.url);
  return {
    method: request.method.toUpperCase(),
    path: url.pathname,
    query: url.searchParams,
    headers: headersToRecord(request.headers),
    body: await readBody(request.body, maxBodyBytes),
  };
}

/** Converts an `SbiResponse` into a web `Response`. */
export function fromSbiResponse(response: SbiResponse): Response {
  const noBody = response.status === 204 || response.status === 304 || response.body.length === 0;
  return new Response(noBody ? null : response.body as Uint8Array<ArrayBuffer>, {
    status: response.status,
    headers: response.headers,
  });
}

/** Converts a client-side `Response` into a `ClientResponse`. */
export async function toClientResponse(response: Response): Promise<ClientResponse> {
  return {
    status: response.status,
    headers: headersToRecord(response.headers),
    body: new Uint8Array(await response.arrayBuffer()),
  };
}
