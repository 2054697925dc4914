/**
 * The one place where HTTP/2 (web `Request`/`Response`) meets the SBI types.
 */
import type { SbiHeaders, SbiRequest, SbiResponse } from "../../handler/types.ts";
import type { ClientResponse } from "../types.ts";
import { BodyBudgetError, type ByteBudget } from "../byte_budget.ts";

export { BodyBudgetError };

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

/**
 * Reads a stream into one buffer as it arrives, stopping with
 * {@linkcode BodyTooLargeError} past `limit` and with {@linkcode BodyBudgetError}
 * when `budget` has no room. The bytes of a returned body stay taken from
 * `budget`: the caller releases `body.length` when it no longer holds it.
 */
export async function readBody(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
  budget?: ByteBudget,
): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let err: Error | undefined;
      if (total + value.length > limit) err = new BodyTooLargeError(limit);
      else if (budget && !budget.take(value.length)) err = new BodyBudgetError(budget.limit);
      if (err) {
        budget?.release(total);
        await reader.cancel().catch(() => {});
        throw err;
      }
      total += value.length;
      chunks.push(value);
    }
  } catch (err) {
    if (!(err instanceof BodyTooLargeError || err instanceof BodyBudgetError)) {
      budget?.release(total);
    }
    throw err;
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

/**
 * Converts a server-side `Request` into an `SbiRequest`, reading the body as
 * {@linkcode readBody} does (the body's bytes stay taken from `budget`).
 */
export async function toSbiRequest(
  request: Request,
  maxBodyBytes: number,
  budget?: ByteBudget,
): Promise<SbiRequest> {
  const url = new URL(request.url);
  return {
    method: request.method.toUpperCase(),
    path: url.pathname,
    query: url.searchParams,
    headers: headersToRecord(request.headers),
    body: await readBody(request.body, maxBodyBytes, budget),
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
export async function toClientResponse(
  response: Response,
  maxBodyBytes = Infinity,
): Promise<ClientResponse> {
  const headers = headersToRecord(response.headers);
  // A declared length within the limit is read whole: hyper fails a body that does not match its
  // content-length, so it cannot grow past the limit, and one read costs less than a reader's
  // loop. Without a declared length (or over the limit) the body streams and stops at the limit.
  const declared = Number(headers["content-length"] ?? NaN);
  const body = declared >= 0 && declared <= maxBodyBytes
    ? await response.bytes()
    : await readBody(response.body, maxBodyBytes);
  return { status: response.status, headers, body };
}
