/**
 * Picks the HTTP/2 client implementation: the native one (nghttp2 through
 * FFI) by default when its library loads, else the `fetch` one. The choice
 * comes from `ClientOptions.h2Client`, else `SBILAB_H2_CLIENT`, else that
 * default.
 */
import type { ClientOptions, SbiClient } from "../types.ts";
import { createFetchH2Client } from "./client.ts";
import { h2NativeAvailable } from "./loader.ts";
import { createNativeH2Client } from "./native_client.ts";

/** The HTTP/2 client implementations. */
export type H2ClientKind = "native" | "fetch";

/** Resolves which implementation a client with `options` gets; throws `RangeError` on a bad choice. */
export async function h2ClientKind(options: ClientOptions = {}): Promise<H2ClientKind> {
  const chosen = options.h2Client ?? Deno.env.get("SBILAB_H2_CLIENT") ?? "";
  if (chosen === "native" || chosen === "fetch") return chosen;
  if (chosen !== "") {
    throw new RangeError(`Unknown HTTP/2 client ${chosen} (choose native or fetch)`);
  }
  return (await h2NativeAvailable()) ? "native" : "fetch";
}

/**
 * Creates an HTTP/2 client for `http://host:port` (h2c) or `https://host:port`
 * (h2). An explicit `native` choice fails with `H2LoadError` when the
 * library is missing; the default falls back to `fetch`.
 */
export async function createH2Client(
  origin: string,
  options: ClientOptions = {},
): Promise<SbiClient> {
  return (await h2ClientKind(options)) === "native"
    ? await createNativeH2Client(origin, options)
    : await createFetchH2Client(origin, options);
}
