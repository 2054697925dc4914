/** The wake-up probe library's symbols (bench/native/wakeup/wakeup.h): the `Deno.dlopen` table only. */
export const WAKEUP_SYMBOLS = {
  /** wk_t *wk_new(uint16_t port, int mode) */
  wk_new: { parameters: ["u16", "i32"], result: "pointer" },
  /** int wk_port(const wk_t *w) */
  wk_port: { parameters: ["pointer"], result: "i32" },
  /** void *wk_ring(wk_t *w) */
  wk_ring: { parameters: ["pointer"], result: "pointer" },
  /** int wk_ring_bytes(void) */
  wk_ring_bytes: { parameters: [], result: "i32" },
  /** int wk_set_callback(wk_t *w, void (*cb)(void)) */
  wk_set_callback: { parameters: ["pointer", "function"], result: "i32" },
  /** int wk_set_doorbell(wk_t *w, const char *path) */
  wk_set_doorbell: { parameters: ["pointer", "buffer"], result: "i32" },
  /** int wk_start(wk_t *w) */
  wk_start: { parameters: ["pointer"], result: "i32" },
  /** int wk_wait(wk_t *w), on a blocking thread of the runtime */
  wk_wait: { parameters: ["pointer"], result: "i32", nonblocking: true },
  /** void wk_kick(wk_t *w) */
  wk_kick: { parameters: ["pointer"], result: "void" },
  /** void wk_stats(const wk_t *w, uint64_t *out) */
  wk_stats: { parameters: ["pointer", "buffer"], result: "void" },
  /** void wk_stop(wk_t *w) */
  wk_stop: { parameters: ["pointer"], result: "void" },
  /** void wk_free(wk_t *w) */
  wk_free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;
