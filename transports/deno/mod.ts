/**
 * The deno stack: what a Deno-based NF would see. HTTP/2 servers on
 * `Deno.serve` (h2c with prior knowledge, h2 over TLS with a mutual-TLS front)
 * and the client on `fetch`, both on hyper and rustls. The reference beside
 * the native stack.
 */
export {
  createH2cServer,
  createH2TlsServer,
  type DenoSbiServer,
  type H2ServerOptions,
} from "./server.ts";
export {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  type GuardCounts,
} from "./conn_guard.ts";
export { createFetchH2Client } from "./client.ts";
