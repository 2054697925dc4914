/**
 * A minimal ProblemDetails response for failures a transport detects before
 * the handler runs (body too large, handler crash). Shared by every server.
 */
import type { SbiResponse } from "../handler/types.ts";

/** Builds an `application/problem+json` response with a TS 29.571 `cause`. */
export function transportProblem(status: number, title: string, cause: string): SbiResponse {
  const body = new TextEncoder().encode(JSON.stringify({ title, status, cause }));
  return { status, headers: { "content-type": "application/problem+json" }, body };
}
