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

/** Deterministic ids: `prefix-0001`, `prefix-0002`, … */
export function counterIds(prefix = "id"): () => string {
  let n = 0;
  return () => `${prefix}-${String(++n).padStart(4, "0")}`;
}
