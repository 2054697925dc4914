/**
 * The `Deno.dlopen` table of the sbh2 shim (native/sbh2.h). Only symbols:
 * every entry carries its C prototype. Every call is short and never blocks,
 * so all are synchronous.
 */

/** Symbol table for `Deno.dlopen`. */
export const SYMBOLS = {
  // int sbh2_version(uint8_t *buf, uint32_t cap);
  sbh2_version: { parameters: ["buffer", "u32"], result: "i32" },
  // sbh2_conn *sbh2_conn_new(uint32_t window, uint32_t max_body);
  sbh2_conn_new: { parameters: ["u32", "u32"], result: "pointer" },
  // void sbh2_conn_free(sbh2_conn *conn);
  sbh2_conn_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_conn_recv(sbh2_conn *conn, const uint8_t *data, uint32_t len);
  sbh2_conn_recv: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_conn_send(sbh2_conn *conn, uint8_t *out, uint32_t cap);
  sbh2_conn_send: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int32_t sbh2_conn_request(sbh2_conn *conn, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body, uint32_t body_len);
  sbh2_conn_request: {
    parameters: ["pointer", "buffer", "u32", "buffer", "u32"],
    result: "i32",
  },
  // int sbh2_conn_cancel(sbh2_conn *conn, int32_t stream_id);
  sbh2_conn_cancel: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh2_conn_poll(sbh2_conn *conn, uint8_t *buf, uint32_t cap);
  sbh2_conn_poll: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_conn_close(sbh2_conn *conn);
  sbh2_conn_close: { parameters: ["pointer"], result: "i32" },
  // int sbh2_conn_error(sbh2_conn *conn, uint8_t *buf, uint32_t cap);
  sbh2_conn_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_conn_stream_count(sbh2_conn *conn);
  sbh2_conn_stream_count: { parameters: ["pointer"], result: "i32" },
  // ---- server side (native/sbh2_server.h) ----
  // sbh2_server *sbh2_server_new(void);
  sbh2_server_new: { parameters: [], result: "pointer" },
  // void sbh2_server_free(sbh2_server *srv);
  sbh2_server_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_server_set(sbh2_server *srv, int option, uint64_t value);
  sbh2_server_set: { parameters: ["pointer", "i32", "u64"], result: "i32" },
  // sbh2_sconn *sbh2_sconn_new(sbh2_server *srv);
  sbh2_sconn_new: { parameters: ["pointer"], result: "pointer" },
  // void sbh2_sconn_free(sbh2_sconn *conn);
  sbh2_sconn_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_sconn_recv(sbh2_sconn *conn, const uint8_t *data, uint32_t len);
  sbh2_sconn_recv: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_sconn_poll(sbh2_sconn *conn, uint8_t *buf, uint32_t cap);
  sbh2_sconn_poll: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_sconn_respond(sbh2_sconn *conn, int32_t stream_id, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body, uint32_t body_len, uint32_t token);
  sbh2_sconn_respond: {
    parameters: ["pointer", "i32", "buffer", "u32", "buffer", "u32", "u32"],
    result: "i32",
  },
  // int sbh2_sconn_send(sbh2_sconn *conn, uint8_t *out, uint32_t cap);
  sbh2_sconn_send: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_sconn_tick(sbh2_sconn *conn);
  sbh2_sconn_tick: { parameters: ["pointer"], result: "i32" },
  // int sbh2_sconn_shutdown(sbh2_sconn *conn);
  sbh2_sconn_shutdown: { parameters: ["pointer"], result: "i32" },
  // int64_t sbh2_sconn_stat(sbh2_sconn *conn, int stat);
  sbh2_sconn_stat: { parameters: ["pointer", "i32"], result: "i64" },
  // int sbh2_sconn_error(sbh2_sconn *conn, uint8_t *buf, uint32_t cap);
  sbh2_sconn_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** The opened library's symbols. */
export type Sbh2Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
