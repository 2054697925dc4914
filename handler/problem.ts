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
  429: "Too Many Requests",
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

/**
 * The 413 for a request body over `maxBytes`: thrown by the handler, and
 * answered by a transport that stopped reading the body at its own limit, so
 * both give the same bytes.
 */
export function payloadTooLarge(maxBytes: number): ProblemError {
  return new ProblemError(413, {
    cause: "PAYLOAD_TOO_LARGE",
    detail: `Request body exceeds ${maxBytes} bytes`,
  });
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
