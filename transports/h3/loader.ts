/**
 * Opens the h3 module (`libsbilab_h3.so`: the HTTP/3 client, server and load
 * engine) through the native layer's one loader: `SBILAB_H3_LIB`, else the
 * local build, else the copy `deno compile --include` embedded at
 * {@linkcode EMBEDDED_LIBRARY_URL}. Failure raises {@linkcode H3LoadError}
 * with a one-line message and the attempts as `cause`.
 */
import { type NativeLibrary, NativeLoadError, nativeModule } from "../native/library.ts";
import { SYMBOLS } from "./symbols.ts";

/** Where `deno compile --include build/libsbilab_h3.so` puts the library. */
export const EMBEDDED_LIBRARY_URL = new URL("../../build/libsbilab_h3.so", import.meta.url);

/** Raised when the native HTTP/3 module cannot be found, built or opened. */
export class H3LoadError extends NativeLoadError {
  override readonly name = "H3LoadError";
}

/** The opened module; its raw symbols never leave `transports/` (the load engine excepted). */
export type H3Library = NativeLibrary<typeof SYMBOLS>;

const h3 = nativeModule({
  envVar: "SBILAB_H3_LIB",
  target: "h3",
  embeddedUrl: EMBEDDED_LIBRARY_URL,
  symbols: SYMBOLS,
  what: "HTTP/3 module",
  error: (message, options) => new H3LoadError(message, options),
});

/** Loads the module once per process; later calls share the result. */
export const loadH3Library: () => Promise<H3Library> = h3.load;

/** True when the module loads on this machine. */
export const h3Available: () => Promise<boolean> = h3.available;
