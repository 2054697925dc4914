// Helpers shared by the handler's tests: build requests, read responses.
import type { SbiHandler, SbiRequest, SbiResponse } from "./types.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Builds an SbiRequest from a method, a path with query and optional body/headers. */
export function request(
  method: string,
  target: string,
  init: { body?: string | Uint8Array; headers?: Record<string, string> } = {},
): SbiRequest {
  const url = new URL(target, "http://sbi.test");
  const body = typeof init.body === "string" ? encoder.encode(init.body) : init.body;
  return {
    method,
    path: url.pathname,
    query: url.searchParams,
    headers: init.headers ?? {},
    body: body ?? new Uint8Array(0),
  };
}

/** Sends a request through a handler. */
export function send(
  handler: SbiHandler,
  method: string,
  target: string,
  init: { body?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<SbiResponse> {
  return handler(request(method, target, init));
}

/** The response body as text. */
export function text(response: SbiResponse): string {
  return decoder.decode(response.body);
}

/** The response body parsed as JSON. */
export function json(response: SbiResponse): Record<string, unknown> {
  return JSON.parse(text(response));
}
