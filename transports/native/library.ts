/**
 * Opens one of the project's native modules, in this order:
 * 1. an environment override (a path to a built library);
 * 2. the local build (`ensureBuilt(target)`, rebuilt when its sources change);
 * 3. an embedded copy: `deno compile --include build/<lib>.so` puts the file
 *    at the caller's `embeddedUrl`; it is copied to a temporary file (dlopen
 *    cannot read the compiled binary's virtual file system) and opened.
 * Shared by the h2 client module and the h3 module; each keeps its own error
 * class and caches the result.
 */
import { ensureBuilt } from "../../lib/native_build.ts";

/** What to open and how to report failure. */
export interface NativeLibrarySpec<S extends Deno.ForeignLibraryInterface> {
  /** Environment variable holding an override path, e.g. `SBILAB_H3_LIB`. */
  envVar: string;
  /** Native target name in `native_targets.ts`, e.g. `h3`. */
  target: string;
  /** Where `deno compile --include` puts the library. */
  embeddedUrl: URL;
  /** The `Deno.dlopen` symbol table. */
  symbols: S;
  /** What the module is, for messages: e.g. `HTTP/3 module`. */
  what: string;
  /** Builds the caller's error type from a one-line message. */
  error: (message: string, options?: ErrorOptions) => Error;
}

/** An opened library. */
export interface NativeLibrary<S extends Deno.ForeignLibraryInterface> {
  /** The raw symbols; never leave the transport folder that opened them. */
  symbols: Deno.DynamicLibrary<S>["symbols"];
  /** Path the library was opened from. */
  path: string;
}

function open<S extends Deno.ForeignLibraryInterface>(path: string, symbols: S): NativeLibrary<S> {
  return { symbols: Deno.dlopen(path, symbols).symbols, path };
}

async function openEmbedded<S extends Deno.ForeignLibraryInterface>(
  spec: NativeLibrarySpec<S>,
): Promise<NativeLibrary<S>> {
  const bytes = await Deno.readFile(spec.embeddedUrl);
  // a private folder: the module looks for libraries in lib/ beside itself first
  const dir = await Deno.makeTempDir({ prefix: `sbilab_${spec.target}_` });
  const tmp = `${dir}/${spec.target}.so`;
  try {
    await Deno.writeFile(tmp, bytes, { mode: 0o700 });
    return open(tmp, spec.symbols);
  } finally {
    // The mapping stays valid after the name is gone.
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Opens the library; throws `spec.error(...)` with one line and the attempts as `cause`. */
export async function openNativeLibrary<S extends Deno.ForeignLibraryInterface>(
  spec: NativeLibrarySpec<S>,
): Promise<NativeLibrary<S>> {
  const env = Deno.env.get(spec.envVar);
  if (env) {
    try {
      return open(env, spec.symbols);
    } catch (err) {
      throw spec.error(`Cannot open ${spec.envVar}=${env}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  const attempts: unknown[] = [];
  try {
    return open(await ensureBuilt(spec.target, { quiet: true }), spec.symbols);
  } catch (err) {
    attempts.push(err);
  }
  try {
    return await openEmbedded(spec);
  } catch (err) {
    attempts.push(err);
  }
  const first = attempts[0] as Error;
  throw spec.error(`${spec.what} unavailable: ${first?.message ?? "unknown error"}`, {
    cause: attempts,
  });
}
