/**
 * ProblemDetails responses (TS 29.571) and the error a route throws to send one.
 */
import type { InvalidParam, ProblemDetails, SbiHeaders, SbiResponse } from "./types.ts";

/** Media type of every error body. */
export const PROBLEM_JSON = "application/problem+json";

/** Reason phrases used as ProblemDetails `title`, by status code. */
const TITLES: Readonly<Record<number, string>> = {
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  411: "Length Required",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  425: "Too Early",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** Reason phrase for a status code, `"Error"` for one this module does not know. */
export function statusTitle(status: number): string {
  return TITLES[status] ?? "Error";
}

/** Fields of a problem besides its status. */
export interface ProblemInit {
  /** Application error cause. Default none. */
  cause?: string;
  /** Explanation of this occurrence. Default none. */
  detail?: string;
  /** Parameters at fault. Default none. */
  invalidParams?: InvalidParam[];
  /** Resource the request addressed. Default none. */
  instance?: string;
  /** Extra response headers (lower-case names), for example `allow`. Default none. */
  headers?: SbiHeaders;
}

/**
 * Thrown by a route to answer with a ProblemDetails; the handler catches it and
 * turns it into a response. Any other exception becomes a 500 `SYSTEM_FAILURE`.
 */
export class ProblemError extends Error {
  /** HTTP status code. */
  readonly status: number;
  /** Everything else that goes into the response. */
  readonly init: ProblemInit;

  constructor(status: number, init: ProblemInit = {}) {
    super(init.detail ?? statusTitle(status));
    this.name = "ProblemError";
    this.status = status;
    this.init = init;
  }

  /** The response this error stands for. */
  toResponse(): SbiResponse {
    return problemResponse(this.status, this.init);
  }
}

const encoder = new TextEncoder();

/**
 * The ProblemDetails object for a status. Keys come in a fixed order so equal
 * problems encode to equal bytes.
 */
export function problemDetails(status: number, init: ProblemInit = {}): ProblemDetails {
  const body: ProblemDetails = { title: statusTitle(status), status };
  if (init.detail !== undefined) body.detail = init.detail;
  if (init.instance !== undefined) body.instance = init.instance;
  if (init.cause !== undefined) body.cause = init.cause;
  if (init.invalidParams !== undefined && init.invalidParams.length > 0) {
    body.invalidParams = init.invalidParams.map((p) =>
      p.reason === undefined ? { param: p.param } : { param: p.param, reason: p.reason }
    );
  }
  return body;
}

/** An `application/problem+json` response. */
export function problemResponse(status: number, init: ProblemInit = {}): SbiResponse {
  return {
    status,
    headers: { ...init.headers, "content-type": PROBLEM_JSON },
    body: encoder.encode(JSON.stringify(problemDetails(status, init))),
  };
}

/**
 * The one 413 answer for a request body over `limitBytes`, whoever notices it:
 * the handler, or a transport while the body streams in. Equal limits give
 * equal bytes on every transport.
 */
export function bodyTooLarge(limitBytes: number): SbiResponse {
  return problemResponse(413, {
    cause: "PAYLOAD_TOO_LARGE",
    detail: `Request body exceeds ${limitBytes} bytes`,
  });
}

/**
 * The 431 for a request header section over `limitBytes` (RFC 9114 §4.2.2), for
 * a transport that cannot reset the stream instead (the deno stack's h3).
 */
export function headerSectionTooLarge(limitBytes: number): SbiResponse {
  return problemResponse(431, {
    cause: "INVALID_MSG_FORMAT",
    detail: `Request header section exceeds ${limitBytes} bytes`,
  });
}

/** The 400 a transport sends for a request it cannot turn into an SBI request. */
export function unreadableRequest(): SbiResponse {
  return problemResponse(400, { cause: "INVALID_MSG_FORMAT", detail: "Unreadable request" });
}

/** The 500 for an exception, with no details on the wire (the handler sends the same). */
export function systemFailure(): SbiResponse {
  return problemResponse(500, { cause: "SYSTEM_FAILURE", detail: "Internal error" });
}

/** The 503 for a request refused because the process is at a resource limit. */
export function overloaded(detail: string): SbiResponse {
  return problemResponse(503, { cause: "NF_CONGESTION", detail });
}

/**
 * The 425 Too Early (RFC 8470 §5.2) for a request that arrived in TLS early
 * data (0-RTT) and is not safe to run before the handshake completes: a
 * replay of it would run it again. The client may send it again once the
 * handshake is done. TS 29.500 defines no cause for 425; this one names it.
 */
export function tooEarly(): SbiResponse {
  return problemResponse(425, {
    cause: "TOO_EARLY",
    detail: "Request received in early data; send it again after the handshake",
  });
}
