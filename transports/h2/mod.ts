/**
 * HTTP/2 transports: h2c (prior knowledge, the TS 29.500 production path) and
 * h2 over TLS, on `Deno.serve` and `fetch`.
 */
export { createH2cServer, createH2TlsServer, type H2ServerOptions } from "./server.ts";
export { createH2Client } from "./client.ts";
export { applyNoDelay, tcpSocketsNoDelay } from "./nodelay.ts";
