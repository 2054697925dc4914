/**
 * Opens the deno stack's HTTP/3 framing module (`libsbilab_dh3.so`: the one
 * HTTP/3 layer over streams the caller carries) through the native layer's
 * one loader: `SBILAB_DH3_LIB`, else the local build, else the copy
 * `deno compile --include` embedded at {@linkcode EMBEDDED_DH3_LIBRARY_URL}.
 * Failure raises {@linkcode Dh3LoadError}.
 */
import { type NativeLibrary, NativeLoadError, nativeModule } from "../native/library.ts";
import { type Sbdh3Symbols, SYMBOLS } from "./h3_symbols.ts";

/** Where `deno compile --include build/libsbilab_dh3.so` puts the library. */
export const EMBEDDED_DH3_LIBRARY_URL = new URL("../../build/libsbilab_dh3.so", import.meta.url);

/** Raised when the framing module cannot be found, built or opened. */
export class Dh3LoadError extends NativeLoadError {
  override readonly name = "Dh3LoadError";
}

const dh3 = nativeModule({
  envVar: "SBILAB_DH3_LIB",
  target: "dh3",
  embeddedUrl: EMBEDDED_DH3_LIBRARY_URL,
  symbols: SYMBOLS,
  what: "HTTP/3 framing module (deno stack)",
  error: (message, options) => new Dh3LoadError(message, options),
});

/** Opens the shim once per process; later calls share the result. */
export const loadDh3Library: () => Promise<NativeLibrary<typeof SYMBOLS>> = dh3.load;

/** The shim's and nghttp3's versions, e.g. `sbdh3 0.1.0, nghttp3 0.8.0`. */
export function dh3Version(symbols: Sbdh3Symbols): string {
  const p = symbols.sbdh3_version();
  return p ? new Deno.UnsafePointerView(p).getCString() : "unknown";
}
