/**
 * The SBI message model shared by every transport. Plain data: no Deno APIs,
 * no sockets, so the handler can be called directly in tests.
 */

/** Header map with lower-case names. */
export type SbiHeaders = Record<string, string>;

/** One part of a `multipart/related` body (TS 29.500 §6.1). */
export interface MultipartPart {
  /** Part headers with lower-case names (at least `content-type`). */
  headers: SbiHeaders;
  /** Part body bytes. */
  body: Uint8Array;
}

/** A request as the handler sees it, whatever transport carried it. */
export interface SbiRequest {
  /** Upper-case HTTP method. */
  method: string;
  /** Path without the query string, percent-decoded segments untouched. */
  path: string;
  /** Query parameters. */
  query: URLSearchParams;
  /** Request headers, lower-case names (pseudo-headers excluded). */
  headers: SbiHeaders;
  /** Request body bytes (empty when none). */
  body: Uint8Array;
  /** Parsed parts when the body is `multipart/related`, else undefined. */
  parts?: MultipartPart[];
}

/** A response as the handler produces it. */
export interface SbiResponse {
  /** HTTP status code. */
  status: number;
  /** Response headers, lower-case names. */
  headers: SbiHeaders;
  /** Response body bytes (empty when none). */
  body: Uint8Array;
}

/** The handler signature every transport serves. */
export type SbiHandler = (request: SbiRequest) => Promise<SbiResponse>;
