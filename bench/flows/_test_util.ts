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

/** Deterministic UUID-shaped ids: the prefix in hex, then a counter. */
export function counterIds(prefix = "id"): () => string {
  // UUID-shaped (the NRF accepts only UUID nfInstanceIds), deterministic per prefix.
  const tag = Array.from(new TextEncoder().encode(prefix.slice(0, 4)), (b) => b.toString(16))
    .join("").padEnd(8, "0");
  let n = 0;
  return () => `${tag}-0000-4000-8000-${String(++n).padStart(12, "0")}`;
}
