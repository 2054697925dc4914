/**
 * The deno stack: what a Deno-based NF would see. HTTP/2 servers on
 * `Deno.serve` (h2c with prior knowledge, h2 over TLS with a mutual-TLS front)
 * and the client on `fetch`, both on hyper and rustls; HTTP/3 on Deno's QUIC
 * (quinn) under the one HTTP/3 layer the native h3 module links too. The
 * reference beside the native stack.
 */
export {
  createDenoH2cServer,
  createDenoH2TlsServer,
  type DenoSbiServer,
  type H2ServerOptions,
} from "./server.ts";
export {
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  type GuardCounts,
} from "./conn_guard.ts";
export { createDenoH2Client } from "./client.ts";
export { createDenoH3Server, type QuinnH3ServerOptions } from "./h3_server.ts";
export { createDenoH3Client } from "./h3_client.ts";
export { Dh3LoadError, EMBEDDED_DH3_LIBRARY_URL, loadDh3Library } from "./h3_loader.ts";
export { H3_CODE, H3FramingError } from "./h3_framing.ts";
