/**
 * Opens one of the project's native modules, in this order:
 * 1. an environment override (a path to a built library);
 * 2. the local build (`ensureBuilt(target)`, rebuilt when its sources change);
 * 3. an embedded copy: `deno compile --include build/<lib>.so` puts the file
 *    at the caller's `embeddedUrl`; it is copied to a temporary file (dlopen
 *    cannot read the compiled binary's virtual file system) and opened.
 * Each module's loader (`transports/h2/loader.ts`, `transports/h3/loader.ts`)
 * is one {@linkcode nativeModule} call with its name, override, embedded URL,
 * symbol table and error class; the load engines and `lab doctor` go through
 * those loaders too, so each module is opened once per process with one table.
 * Apart from libc (`libc.ts`), this file is the only place that calls `Deno.dlopen`.
 */
import { ensureBuilt } from "../../lib/native_build.ts";

/** Raised when a native module cannot be found, built or opened; each module names its own subclass. */
export class NativeLoadError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NativeLoadError";
  }
}

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

/** A native module's loader: opens it once per process and shares the result. */
export interface NativeModule<S extends Deno.ForeignLibraryInterface> {
  /** Opens the module (first call) or returns the opened one; a failure is retried next call. */
  load(): Promise<NativeLibrary<S>>;
  /** True when the module opens on this machine. */
  available(): Promise<boolean>;
}

/** The loader of one native module, for its `loader.ts`. */
export function nativeModule<S extends Deno.ForeignLibraryInterface>(
  spec: NativeLibrarySpec<S>,
): NativeModule<S> {
  let loading: Promise<NativeLibrary<S>> | undefined;
  const load = () => {
    loading ??= openNativeLibrary(spec).catch((err) => {
      loading = undefined;
      throw err;
    });
    return loading;
  };
  return {
    load,
    available: () => load().then(() => true, () => false),
  };
}

/**
 * The version of a system shared library (`libngtcp2.so.9`) through its
 * `<name>_version(0)` call, whose result starts with (int age, int
 * version_num, const char *version_str) in nghttp2, ngtcp2 and nghttp3;
 * `present` when it reports none, undefined when it cannot be opened.
 */
export function systemLibraryVersion(soname: string, versionFn: string): string | undefined {
  try {
    const lib = Deno.dlopen(soname, { [versionFn]: { parameters: ["i32"], result: "pointer" } });
    try {
      const p = lib.symbols[versionFn](0) as Deno.PointerValue;
      if (!p) return "present";
      const str = new Deno.UnsafePointerView(p).getPointer(8);
      return str ? Deno.UnsafePointerView.getCString(str) : "present";
    } finally {
      lib.close();
    }
  } catch {
    return undefined;
  }
}

/** The parts of a module's version text `sbh3/0.1.0 ngtcp2/0.12.1 ...`, by name. */
export function versionParts(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/(\S+?)\/(\S+)/g)) out[m[1]] = m[2];
  return out;
}
