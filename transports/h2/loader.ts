/**
 * Finds and opens the sbh2 native library, in this order:
 * 1. `SBILAB_H2_LIB`: path to a built `libsbilab_h2.so`;
 * 2. the local build (`ensureBuilt("h2")`, rebuilt when its sources change);
 * 3. an embedded copy: `deno compile --include build/libsbilab_h2.so` puts the
 *    file at {@linkcode EMBEDDED_H2_LIBRARY_URL}; it is copied to a temporary
 *    file (dlopen cannot read the compiled binary's virtual file system) and opened.
 * Failure raises {@linkcode H2LoadError} with a one-line message and the
 * attempts as `cause`.
 */
import { openNativeLibrary } from "../native/library.ts";
import { type Sbh2Symbols, SYMBOLS } from "./symbols.ts";

/** Where `deno compile --include build/libsbilab_h2.so` puts the library. */
export const EMBEDDED_H2_LIBRARY_URL = new URL("../../build/libsbilab_h2.so", import.meta.url);

/** Raised when the native HTTP/2 client library cannot be found, built or opened. */
export class H2LoadError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "H2LoadError";
  }
}

/** An opened library. */
export interface H2Library {
  /** The raw symbols; never leave `transports/h2/`. */
  symbols: Sbh2Symbols;
  /** Path the library was opened from. */
  path: string;
}

let loading: Promise<H2Library> | undefined;

function load(): Promise<H2Library> {
  return openNativeLibrary({
    envVar: "SBILAB_H2_LIB",
    target: "h2",
    embeddedUrl: EMBEDDED_H2_LIBRARY_URL,
    symbols: SYMBOLS,
    what: "Native HTTP/2 client",
    error: (message, options) => new H2LoadError(message, options),
  });
}

/** Loads the library once per process; later calls share the result. */
export function loadH2Library(): Promise<H2Library> {
  loading ??= load().catch((err) => {
    loading = undefined;
    throw err;
  });
  return loading;
}

/** True when the native library loads on this machine. */
export async function h2NativeAvailable(): Promise<boolean> {
  try {
    await loadH2Library();
    return true;
  } catch {
    return false;
  }
}
