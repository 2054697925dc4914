// Test helpers for the flows: a pool whose clients call a handler directly.
import type { SbiHandler } from "../../handler/types.ts";
import type { ClientRequest, SbiClient } from "../../transports/types.ts";
import { directCall } from "../../tests/support.ts";
import type { ConnectionPool } from "./runner.ts";

/** A client that hands every request to `handler` without a transport. */
export function handlerClient(handler: SbiHandler): SbiClient {
  return {
    transport: "h2c",
    request: (r: ClientRequest) =>
      directCall(handler, r.method ?? "GET", r.path, r.headers ?? {}, r.body ?? new Uint8Array(0)),
    close: () => Promise.resolve(),
  };
}

/** A pool where every NF pair shares one direct client. */
export function directPool(handler: SbiHandler): ConnectionPool {
  const client = handlerClient(handler);
  return { client: () => Promise.resolve(client) };
}

/** Deterministic UUIDs: `00000000-0000-4000-8000-000000000001`, `…0002`, … (`tag` sets the first group). */
export function counterIds(tag = 0): () => string {
  let n = 0;
  const head = tag.toString(16).padStart(8, "0");
  return () => `${head}-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
}
