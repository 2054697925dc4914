/**
 * The `Deno.dlopen` entries of the load engine (load/native/sbl_load.h) that
 * both native modules link in and export under their own prefix: `sbh2_load_*`
 * in the h2 module, `sbh3_load_*` in the h3 module. Each module's one symbol
 * table (`transports/h2/symbols.ts`, `transports/h3/symbols.ts`) spreads
 * {@linkcode loadEngineSymbols} in; {@linkcode loadEngineCalls} picks them back
 * out of the opened module for the engine in `load/`. Every call returns at
 * once (join is called only after progress reports the run done).
 */

/** The engine's entries without their prefix, C prototypes for `<p>` = sbh2 / sbh3. */
const ENGINE = {
  // sbl_engine *<p>_load_new(const uint8_t *plan, uint32_t len);
  new: { parameters: ["buffer", "u32"], result: "pointer" },
  // int <p>_load_start(sbl_engine *e);
  start: { parameters: ["pointer"], result: "i32" },
  // int <p>_load_progress(sbl_engine *e, uint8_t *buf, uint32_t cap);
  progress: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int <p>_load_stop(sbl_engine *e);
  stop: { parameters: ["pointer"], result: "i32" },
  // int <p>_load_join(sbl_engine *e);
  join: { parameters: ["pointer"], result: "i32" },
  // int <p>_load_result(sbl_engine *e, uint8_t *buf, uint32_t cap);
  result: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int <p>_load_histogram(sbl_engine *e, int kind, uint8_t *buf, uint32_t cap);
  histogram: { parameters: ["pointer", "i32", "buffer", "u32"], result: "i32" },
  // int <p>_load_error(sbl_engine *e, uint8_t *buf, uint32_t cap);
  error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // void <p>_load_free(sbl_engine *e);
  free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

type Engine = typeof ENGINE;

/** The engine's entries under a module's prefix. */
export type LoadEngineSymbols<P extends string> = {
  readonly [K in keyof Engine as `${P}_load_${K & string}`]: Engine[K];
};

/** The engine's calls in an opened module, without their prefix. */
export type LoadEngineCalls = {
  readonly [K in keyof Engine]: Deno.StaticForeignSymbol<Engine[K]>;
};

/** The engine's `Deno.dlopen` entries under `prefix` (`sbh2`, `sbh3`). */
export function loadEngineSymbols<P extends string>(prefix: P): LoadEngineSymbols<P> {
  return Object.fromEntries(
    Object.entries(ENGINE).map(([name, def]) => [`${prefix}_load_${name}`, def]),
  ) as LoadEngineSymbols<P>;
}

/** The engine's calls out of a module opened with {@linkcode loadEngineSymbols}`(prefix)` in its table. */
export function loadEngineCalls<P extends string>(
  symbols: Deno.StaticForeignLibraryInterface<LoadEngineSymbols<P>>,
  prefix: P,
): LoadEngineCalls {
  const all = symbols as unknown as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(ENGINE).map((name) => [name, all[`${prefix}_load_${name}`]]),
  ) as unknown as LoadEngineCalls;
}
