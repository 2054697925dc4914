/**
 * HTTP/2 on the native stack: h2c (prior knowledge, the TS 29.500 production
 * path) and h2 over TLS, servers and clients on nghttp2 through FFI, with TLS
 * 1.3 from GnuTLS. The deno stack's HTTP/2 lives in `../deno/`.
 */
export { createNativeH2Client, type NativeH2Client, type NativeH2ClientOptions } from "./client.ts";
export { sharedTicketCache, TicketCache } from "../ticket_cache.ts";
export {
  createNativeH2cServer,
  createNativeH2TlsServer,
  type NativeH2Server,
  type NativeH2ServerOptions,
} from "./server.ts";
export { EMBEDDED_H2_LIBRARY_URL, H2LoadError, h2NativeAvailable } from "./loader.ts";
export { applyNoDelay, tcpSocketsNoDelay } from "../native/nodelay.ts";

/** The native h2 module's versions and path, or why it does not load (for `lab doctor`). */
export async function h2ModuleInfo(): Promise<string> {
  const { loadH2Library } = await import("./loader.ts");
  const { sbh2Version } = await import("./ffi.ts");
  try {
    const lib = await loadH2Library();
    return `${sbh2Version(lib.symbols)} at ${lib.path}`;
  } catch (err) {
    return `unavailable: ${(err as Error).message.split("\n")[0]}`;
  }
}
