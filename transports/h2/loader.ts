/**
 * Opens the h2 module (`libsbilab_h2.so`: the HTTP/2 client, server and load
 * engine) through the native layer's one loader: `SBILAB_H2_LIB`, else the
 * local build, else the copy `deno compile --include` embedded at
 * {@linkcode EMBEDDED_H2_LIBRARY_URL}. Failure raises {@linkcode H2LoadError}
 * with a one-line message and the attempts as `cause`.
 */
import { type NativeLibrary, NativeLoadError, nativeModule } from "../native/library.ts";
import { SYMBOLS } from "./symbols.ts";

/** Where `deno compile --include build/libsbilab_h2.so` puts the library. */
export const EMBEDDED_H2_LIBRARY_URL = new URL("../../build/libsbilab_h2.so", import.meta.url);

/** Raised when the native HTTP/2 module cannot be found, built or opened. */
export class H2LoadError extends NativeLoadError {
  override readonly name = "H2LoadError";
}

/** The opened module; its raw symbols never leave `transports/` (the load engine excepted). */
export type H2Library = NativeLibrary<typeof SYMBOLS>;

const h2 = nativeModule({
  envVar: "SBILAB_H2_LIB",
  target: "h2",
  embeddedUrl: EMBEDDED_H2_LIBRARY_URL,
  symbols: SYMBOLS,
  what: "Native HTTP/2 module",
  error: (message, options) => new H2LoadError(message, options),
});

/** Loads the module once per process; later calls share the result. */
export const loadH2Library: () => Promise<H2Library> = h2.load;

/** True when the module loads on this machine. */
export const h2NativeAvailable: () => Promise<boolean> = h2.available;
