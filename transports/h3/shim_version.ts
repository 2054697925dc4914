/** The version text of the native HTTP/3 module. */
import type { Sbh3Symbols } from "./symbols.ts";
import { check } from "./h3_error.ts";

const decoder = new TextDecoder();

/** Reads the shim and library versions: `sbh3/x ngtcp2/x nghttp3/x gnutls/x`. */
export function shimVersion(sym: Sbh3Symbols): string {
  const b = new Uint8Array(256);
  const n = check(sym.sbh3_version(b, BigInt(b.length)), "version");
  return decoder.decode(b.subarray(0, n));
}
