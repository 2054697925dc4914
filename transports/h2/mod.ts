/**
 * HTTP/2 transports: h2c (prior knowledge, the TS 29.500 production path) and
 * h2 over TLS. Servers on `Deno.serve`, and a native h2c server on nghttp2
 * through FFI; clients on nghttp2 through FFI (native, the default) or on
 * `fetch` (fallback).
 */
export {
  createH2cServer,
  createH2TlsServer,
  DEFAULT_STALL_TIMEOUT_MS,
  type H2ServerOptions,
} from "./server.ts";
export {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  type GuardCounts,
} from "./conn_guard.ts";
export { createH2Client, type H2ClientKind, h2ClientKind } from "./select_client.ts";
export { createFetchH2Client } from "./client.ts";
export { createNativeH2Client, type NativeH2ClientOptions } from "./native_client.ts";
export {
  createNativeH2cServer,
  type NativeH2Server,
  type NativeH2ServerOptions,
} from "./native_server.ts";
export { EMBEDDED_H2_LIBRARY_URL, H2LoadError, h2NativeAvailable } from "./loader.ts";
export { applyNoDelay, tcpSocketsNoDelay } from "./nodelay.ts";

/** Which h2 client this process uses, with versions or the reason it fell back (for `lab doctor`). */
export async function h2ClientInfo(): Promise<string> {
  const { loadH2Library } = await import("./loader.ts");
  const { sbh2Version } = await import("./ffi.ts");
  const { h2ClientKind } = await import("./select_client.ts");
  const kind = await h2ClientKind();
  try {
    const lib = await loadH2Library();
    return `${kind} client; ${sbh2Version(lib.symbols)} at ${lib.path}`;
  } catch (err) {
    return `${kind} client; native module unavailable: ${(err as Error).message.split("\n")[0]}`;
  }
}
