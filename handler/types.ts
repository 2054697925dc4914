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
  /** Who sent it, as the transport authenticated the peer (undefined when it did not). */
  peer?: SbiPeer;
  /**
   * Takes room for `bytes` of response body from the server's response
   * budget (and its connection's share) before the handler builds it: false
   * when there is none, and then the handler must not build the body but
   * answer {@linkcode REFUSED}. The room is the server's until the transport
   * lets go of the response. Absent outside a server (no budget applies).
   */
  reserve?: (bytes: number) => boolean;
}

/**
 * The sender of a request as the transport authenticated it, for example by
 * mutual TLS. It comes from the connection, never from a header, so a client
 * cannot claim another identity by sending one.
 */
export interface SbiPeer {
  /** Subject (RFC 4514, e.g. `CN=smf1.example`) of the client certificate verified under mutual TLS. */
  subject?: string;
}

/** A response as the handler produces it. */
export interface SbiResponse {
  /** HTTP status code. */
  status: number;
  /** Response headers, lower-case names. */
  headers: SbiHeaders;
  /** Response body bytes (empty when none). */
  body: Uint8Array;
  /**
   * Set on {@linkcode REFUSED} alone: the server had no room for the answer,
   * so the transport resets the stream (HTTP/2 RST_STREAM ENHANCE_YOUR_CALM,
   * HTTP/3 H3_EXCESSIVE_LOAD) instead of answering.
   */
  refused?: true;
}

/** The answer to a request whose response could not be reserved: its stream is reset. */
export const REFUSED: Readonly<SbiResponse> = Object.freeze({
  status: 503,
  headers: Object.freeze({}) as SbiHeaders,
  body: new Uint8Array(0),
  refused: true,
});

/** The handler signature every transport serves. */
export type SbiHandler = (request: SbiRequest) => Promise<SbiResponse>;

/**
 * One invalid parameter in a ProblemDetails (TS 29.571 §5.2.4.1 `InvalidParam`).
 *
 * `param` is a JSON Pointer for a body attribute, `"query <name>"` for a query
 * parameter, `"header <name>"` for a header and `"{name}"` for a path variable.
 */
export interface InvalidParam {
  /** Which parameter is wrong, encoded as described above. */
  param: string;
  /** Human-readable reason. */
  reason?: string;
}

/** An error body sent as `application/problem+json` (TS 29.571 `ProblemDetails`). */
export interface ProblemDetails {
  /** Short summary of the problem type (the HTTP reason phrase here). */
  title?: string;
  /** The HTTP status code, repeated in the body. */
  status: number;
  /** Human-readable explanation of this occurrence. */
  detail?: string;
  /** URI reference of the resource the request addressed. */
  instance?: string;
  /** Application error cause (TS 29.500 table 5.2.7.2-1 and API-specific tables). */
  cause?: string;
  /** The parameters that made the request fail. */
  invalidParams?: InvalidParam[];
}
