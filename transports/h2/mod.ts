/**
 * HTTP/2 transports: h2c (prior knowledge, the TS 29.500 production path) and
 * h2 over TLS. Servers on `Deno.serve`; clients on nghttp2 through FFI
 * (native, the default) or on `fetch` (fallback).
 */
export { createH2cServer, createH2TlsServer, type H2ServerOptions } from "./server.ts";
export { createH2Client, type H2ClientKind, h2ClientKind } from "./select_client.ts";
export { createFetchH2Client } from "./client.ts";
export { createNativeH2Client, type NativeH2ClientOptions } from "./native_client.ts";
export { EMBEDDED_H2_LIBRARY_URL, H2LoadError, h2NativeAvailable } from "./loader.ts";
export { applyNoDelay, tcpSocketsNoDelay } from "./nodelay.ts";
