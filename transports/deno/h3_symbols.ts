/**
 * The `Deno.dlopen` table of the sbdh3 shim (native/sbdh3.h): HTTP/3 framing
 * and QPACK on nghttp3 over the streams of Deno's QUIC. Only symbols.
 */
export const SYMBOLS = {
  /** const char *sbdh3_version(void) */
  sbdh3_version: { parameters: [], result: "pointer" },
  /** sbdh3_conn *sbdh3_conn_new(int server, uint64_t max_body, uint64_t max_field_section) */
  sbdh3_conn_new: { parameters: ["i32", "u64", "u64"], result: "pointer" },
  /** void sbdh3_conn_free(sbdh3_conn *c) */
  sbdh3_conn_free: { parameters: ["pointer"], result: "void" },
  /** int sbdh3_conn_set_max_streams(sbdh3_conn *c, uint64_t n) */
  sbdh3_conn_set_max_streams: { parameters: ["pointer", "u64"], result: "i32" },
  /** int sbdh3_conn_bind(sbdh3_conn *c, int64_t control, int64_t qpack_encoder, int64_t qpack_decoder) */
  sbdh3_conn_bind: { parameters: ["pointer", "i64", "i64", "i64"], result: "i32" },
  /** int sbdh3_conn_read(sbdh3_conn *c, int64_t stream_id, const uint8_t *data, size_t len, int fin) */
  sbdh3_conn_read: { parameters: ["pointer", "i64", "buffer", "usize", "i32"], result: "i32" },
  /** int64_t sbdh3_conn_write(sbdh3_conn *c, uint8_t *out, size_t cap, uint8_t *meta) */
  sbdh3_conn_write: { parameters: ["pointer", "buffer", "usize", "buffer"], result: "i64" },
  /** int sbdh3_conn_request(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len) */
  sbdh3_conn_request: {
    parameters: ["pointer", "i64", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  /** int sbdh3_conn_respond(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len) */
  sbdh3_conn_respond: {
    parameters: ["pointer", "i64", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  /** int64_t sbdh3_conn_poll(sbdh3_conn *c, uint8_t *buf, size_t cap) */
  sbdh3_conn_poll: { parameters: ["pointer", "buffer", "usize"], result: "i64" },
  /** int sbdh3_conn_close_stream(sbdh3_conn *c, int64_t stream_id, uint64_t app_error) */
  sbdh3_conn_close_stream: { parameters: ["pointer", "i64", "u64"], result: "i32" },
  /** int sbdh3_conn_shutdown(sbdh3_conn *c) */
  sbdh3_conn_shutdown: { parameters: ["pointer"], result: "i32" },
  /** uint64_t sbdh3_conn_error_code(sbdh3_conn *c) */
  sbdh3_conn_error_code: { parameters: ["pointer"], result: "u64" },
  /** int sbdh3_conn_stream_count(sbdh3_conn *c) */
  sbdh3_conn_stream_count: { parameters: ["pointer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The opened symbols. */
export type Sbdh3Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
