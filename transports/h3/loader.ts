/**
 * Finds and opens the sbh3 native library, in this order:
 * 1. `SBILAB_H3_LIB`: path to a built `libsbilab_h3.so`;
 * 2. the local build (`ensureBuilt("h3")`, rebuilt when its sources change);
 * 3. an embedded copy: `deno compile --include build/libsbilab_h3.so` puts the
 *    file at {@linkcode EMBEDDED_LIBRARY_URL}; it is copied to a temporary file
 *    (dlopen cannot read the compiled binary's virtual file system) and opened.
 * Failure raises {@linkcode H3LoadError} with a one-line message and the
 * attempts as `cause`.
 */
import { openNativeLibrary } from "../native/library.ts";
import { type Sbh3Symbols, SYMBOLS } from "./symbols.ts";

/** Where `deno compile --include build/libsbilab_h3.so` puts the library. */
export const EMBEDDED_LIBRARY_URL = new URL("../../build/libsbilab_h3.so", import.meta.url);

/** Raised when the native HTTP/3 module cannot be found, built or opened. */
export class H3LoadError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "H3LoadError";
  }
}

/** An opened library. */
export interface H3Library {
  /** The raw symbols; never leave `transports/h3/`. */
  symbols: Sbh3Symbols;
  /** Path the library was opened from. */
  path: string;
}

let loading: Promise<H3Library> | undefined;

function load(): Promise<H3Library> {
  return openNativeLibrary({
    envVar: "SBILAB_H3_LIB",
    target: "h3",
    embeddedUrl: EMBEDDED_LIBRARY_URL,
    symbols: SYMBOLS,
    what: "HTTP/3 module",
    error: (message, options) => new H3LoadError(message, options),
  });
}

/** Loads the library once per process; later calls share the result. */
export function loadH3Library(): Promise<H3Library> {
  loading ??= load().catch((err) => {
    loading = undefined;
    throw err;
  });
  return loading;
}
