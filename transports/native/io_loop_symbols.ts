/**
 * The `Deno.dlopen` entries of the I/O loop (transports/native/sbloop.h) that
 * a native module links in when it owns its sockets. A module's symbol table
 * spreads {@linkcode IO_LOOP_SYMBOLS} in; `io_loop.ts` drives them.
 */
export const IO_LOOP_SYMBOLS = {
  // int sbloop_start(sbloop *l);
  sbloop_start: { parameters: ["pointer"], result: "i32" },
  // int sbloop_lock(sbloop *l);
  sbloop_lock: { parameters: ["pointer"], result: "i32" },
  // int sbloop_unlock(sbloop *l);
  sbloop_unlock: { parameters: ["pointer"], result: "i32" },
  // int sbloop_flush(sbloop *l);
  sbloop_flush: { parameters: ["pointer"], result: "i32" },
  // int sbloop_stop(sbloop *l);  (on a blocking thread: the loop's thread may be waiting for its wake-up)
  sbloop_stop: { parameters: ["pointer"], result: "i32", nonblocking: true },
  // int sbloop_stats(sbloop *l, uint64_t *out, int n);
  sbloop_stats: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  // void sbloop_free(sbloop *l);
  sbloop_free: { parameters: ["pointer"], result: "void" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The loop's entries in an opened module. */
export type IoLoopSymbols = {
  [K in keyof typeof IO_LOOP_SYMBOLS]: Deno.DynamicLibrary<typeof IO_LOOP_SYMBOLS>["symbols"][K];
};
