/**
 * The `Deno.dlopen` tables of the load engines (load/native/sbl_load.h).
 * Both modules export the same functions under their own prefix: `sbh2_load_*`
 * in the h2 module, `sbh3_load_*` in the h3 module. Only symbols: the C
 * prototypes are given once here for `<p>` = sbh2 / sbh3. Every call returns
 * at once (join is called only after progress reports the run done).
 *
 *   sbl_engine *<p>_load_new(const uint8_t *plan, uint32_t len);
 *   int <p>_load_start(sbl_engine *e);
 *   int <p>_load_progress(sbl_engine *e, uint8_t *buf, uint32_t cap);
 *   int <p>_load_stop(sbl_engine *e);
 *   int <p>_load_join(sbl_engine *e);
 *   int <p>_load_result(sbl_engine *e, uint8_t *buf, uint32_t cap);
 *   int <p>_load_histogram(sbl_engine *e, int kind, uint8_t *buf, uint32_t cap);
 *   int <p>_load_error(sbl_engine *e, uint8_t *buf, uint32_t cap);
 *   void <p>_load_free(sbl_engine *e);
 */

/** Symbol table of the h2 module's engine. */
export const H2_LOAD_SYMBOLS = {
  sbh2_load_new: { parameters: ["buffer", "u32"], result: "pointer" },
  sbh2_load_start: { parameters: ["pointer"], result: "i32" },
  sbh2_load_progress: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh2_load_stop: { parameters: ["pointer"], result: "i32" },
  sbh2_load_join: { parameters: ["pointer"], result: "i32" },
  sbh2_load_result: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh2_load_histogram: { parameters: ["pointer", "i32", "buffer", "u32"], result: "i32" },
  sbh2_load_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh2_load_free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Symbol table of the h3 module's engine. */
export const H3_LOAD_SYMBOLS = {
  sbh3_load_new: { parameters: ["buffer", "u32"], result: "pointer" },
  sbh3_load_start: { parameters: ["pointer"], result: "i32" },
  sbh3_load_progress: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh3_load_stop: { parameters: ["pointer"], result: "i32" },
  sbh3_load_join: { parameters: ["pointer"], result: "i32" },
  sbh3_load_result: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh3_load_histogram: { parameters: ["pointer", "i32", "buffer", "u32"], result: "i32" },
  sbh3_load_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  sbh3_load_free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;
