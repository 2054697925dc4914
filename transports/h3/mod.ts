/**
 * HTTP/3 over QUIC for sbilab: a native shim on ngtcp2 + nghttp3 + GnuTLS
 * (native/*.c, one file per role, API in native/sbh3.h) loaded with
 * `Deno.dlopen`, and a server and client that implement the shared transport
 * contracts. The shim owns QUIC and HTTP/3
 * state; TypeScript owns the UDP socket (a `Deno.DatagramConn`, so readiness
 * comes from Deno's reactor on the main thread) and the timers (one
 * `setTimeout`). Each wake-up awaits one datagram through Deno, then one
 * synchronous `io()` call feeds it, drains the socket with recvmmsg, runs
 * due timers and sends all output with one sendmmsg on the same descriptor.
 */
import { shimVersion } from "./shim_version.ts";
import { loadH3Library } from "./loader.ts";
import { versionParts } from "../native/library.ts";

export { createNativeH3Server, type H3SbiServer, type H3ServerOptions } from "./server.ts";
export { createNativeH3Client, type H3ClientOptions, type H3SbiClient } from "./client.ts";
export { NATIVE_ERR } from "../native/errors.ts";
export { type H3CongestionControl, type H3QuicVersion } from "./h3_config.ts";
export type { H3DatagramStats } from "./h3_datagram_stats.ts";
export { H3Error } from "./h3_error.ts";
export { EMBEDDED_LIBRARY_URL, h3Available, H3LoadError } from "./loader.ts";

/** Versions of the shim and the libraries it runs on. */
export interface H3Versions {
  /** sbh3 shim version. */
  shim: string;
  /** ngtcp2 version. */
  ngtcp2: string;
  /** nghttp3 version. */
  nghttp3: string;
  /** GnuTLS version. */
  gnutls: string;
  /** Where the library was loaded from. */
  path: string;
}

/** Loads the native module and reports its versions; throws `H3LoadError` when unavailable. */
export async function h3Versions(): Promise<H3Versions> {
  const lib = await loadH3Library();
  const parts = versionParts(shimVersion(lib.symbols));
  return {
    shim: parts.sbh3 ?? "",
    ngtcp2: parts.ngtcp2 ?? "",
    nghttp3: parts.nghttp3 ?? "",
    gnutls: parts.gnutls ?? "",
    path: lib.path,
  };
}
