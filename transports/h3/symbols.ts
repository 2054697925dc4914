/**
 * The one `Deno.dlopen` table of the sbh3 module (native/sbh3.h and the load
 * engine linked into it), which every user of the module opens it with. Only symbols:
 * every entry carries its C prototype. All calls are short and never block,
 * so they are all synchronous: readiness comes from Deno's own reactor (the
 * socket is a `Deno.DatagramConn`), never from a thread of the shim's.
 */
import { loadEngineSymbols } from "../native/load_engine_symbols.ts";
import { IO_LOOP_SYMBOLS } from "../native/io_loop_symbols.ts";

/** Symbol table for `Deno.dlopen`. */
export const SYMBOLS = {
  // int sbh3_version(uint8_t *buf, size_t cap);
  sbh3_version: { parameters: ["buffer", "usize"], result: "i32" },

  // sbh3_config *sbh3_config_new(int is_server);
  sbh3_config_new: { parameters: ["i32"], result: "pointer" },
  // void sbh3_config_free(sbh3_config *cfg);
  sbh3_config_free: { parameters: ["pointer"], result: "void" },
  // int sbh3_config_set_cert(sbh3_config *cfg, const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len);
  sbh3_config_set_cert: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  // int sbh3_config_add_ca(sbh3_config *cfg, const uint8_t *pem, size_t len);
  sbh3_config_add_ca: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_config_set_verify(sbh3_config *cfg, int mode);
  sbh3_config_set_verify: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh3_config_set_idle_timeout(sbh3_config *cfg, uint32_t ms);
  sbh3_config_set_idle_timeout: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_config_set_max_udp_payload(sbh3_config *cfg, uint32_t bytes);
  sbh3_config_set_max_udp_payload: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_config_get_max_udp_payload(const sbh3_config *cfg);
  sbh3_config_get_max_udp_payload: { parameters: ["pointer"], result: "i32" },
  // int sbh3_config_set_max_recv_udp_payload(sbh3_config *cfg, uint32_t bytes);
  sbh3_config_set_max_recv_udp_payload: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_config_set_handshake_timeout(sbh3_config *cfg, uint32_t ms);
  sbh3_config_set_handshake_timeout: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_config_set_send_queue(sbh3_config *cfg, uint64_t conn_bytes, uint64_t total_bytes, uint32_t stall_ms);
  sbh3_config_set_send_queue: { parameters: ["pointer", "u64", "u64", "u32"], result: "i32" },
  // int sbh3_config_set_retry(sbh3_config *cfg, int on);
  sbh3_config_set_retry: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh3_config_set_token(sbh3_config *cfg, const uint8_t *token, size_t len);
  sbh3_config_set_token: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_config_set_versions(sbh3_config *cfg, const uint32_t *versions, size_t n);
  sbh3_config_set_versions: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_config_set_ecn(sbh3_config *cfg, int on);
  sbh3_config_set_ecn: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh3_config_set_cc(sbh3_config *cfg, int algo);
  sbh3_config_set_cc: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh3_config_set_max_body(sbh3_config *cfg, uint64_t bytes);
  sbh3_config_set_max_body: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh3_config_set_max_field_section(sbh3_config *cfg, uint64_t bytes);
  sbh3_config_set_max_field_section: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh3_config_set_tickets(sbh3_config *cfg, uint32_t lifetime_s);
  sbh3_config_set_tickets: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_config_set_early_data(sbh3_config *cfg, int on, uint32_t window_ms);
  sbh3_config_set_early_data: { parameters: ["pointer", "i32", "u32"], result: "i32" },

  // sbh3_conn *sbh3_conn_new_client(sbh3_config *cfg, const char *server_name, const char *local_ip,
  //                                 uint16_t local_port, const char *remote_ip, uint16_t remote_port);
  sbh3_conn_new_client: {
    parameters: ["pointer", "buffer", "buffer", "u16", "buffer", "u16"],
    result: "pointer",
  },
  // void sbh3_conn_free(sbh3_conn *conn);
  sbh3_conn_free: { parameters: ["pointer"], result: "void" },
  // int sbh3_conn_recv(sbh3_conn *conn, const uint8_t *data, size_t len);
  sbh3_conn_recv: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_send(sbh3_conn *conn, uint8_t *out, size_t cap);
  sbh3_conn_send: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_timeout_ms(sbh3_conn *conn);
  sbh3_conn_timeout_ms: { parameters: ["pointer"], result: "i32" },
  // int sbh3_conn_on_timeout(sbh3_conn *conn);
  sbh3_conn_on_timeout: { parameters: ["pointer"], result: "i32" },
  // int64_t sbh3_conn_request(sbh3_conn *conn, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len);
  sbh3_conn_request: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
    result: "i64",
  },
  // int sbh3_conn_cancel(sbh3_conn *conn, int64_t stream_id);
  sbh3_conn_cancel: { parameters: ["pointer", "i64"], result: "i32" },
  // int sbh3_conn_poll(sbh3_conn *conn, uint8_t *buf, size_t cap);
  sbh3_conn_poll: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_shutdown(sbh3_conn *conn);
  sbh3_conn_shutdown: { parameters: ["pointer"], result: "i32" },
  // int sbh3_conn_error(sbh3_conn *conn, uint8_t *buf, size_t cap);
  sbh3_conn_error: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_stream_count(sbh3_conn *conn);
  sbh3_conn_stream_count: { parameters: ["pointer"], result: "i32" },
  // int sbh3_conn_token(sbh3_conn *conn, uint8_t *buf, size_t cap);
  sbh3_conn_token: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_update_key(sbh3_conn *conn);
  sbh3_conn_update_key: { parameters: ["pointer"], result: "i32" },
  // int sbh3_conn_stats(sbh3_conn *conn, uint64_t *out, size_t n);
  sbh3_conn_stats: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_resume(sbh3_conn *conn, const uint8_t *ticket, size_t len);
  sbh3_conn_resume: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_ticket(sbh3_conn *conn, uint8_t *buf, size_t cap);
  sbh3_conn_ticket: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_tls_state(sbh3_conn *conn);
  sbh3_conn_tls_state: { parameters: ["pointer"], result: "i32" },
  // int sbh3_conn_tls_info(sbh3_conn *conn, int kind, uint8_t *buf, size_t cap);
  sbh3_conn_tls_info: { parameters: ["pointer", "i32", "buffer", "usize"], result: "i32" },
  // int64_t sbh3_conn_first_response_ago_us(sbh3_conn *conn);
  sbh3_conn_first_response_ago_us: { parameters: ["pointer"], result: "i64" },
  // int64_t sbh3_conn_handshake_bytes(sbh3_conn *conn, int sent);
  sbh3_conn_handshake_bytes: { parameters: ["pointer", "i32"], result: "i64" },
  // int sbh3_conn_export(sbh3_conn *conn, const uint8_t *label, size_t label_len, const uint8_t *context,
  //                      size_t context_len, uint8_t *out, size_t out_len);
  sbh3_conn_export: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },

  // sbh3_server *sbh3_server_new(sbh3_config *cfg, const char *local_ip, uint16_t local_port);
  sbh3_server_new: { parameters: ["pointer", "buffer", "u16"], result: "pointer" },
  // void sbh3_server_free(sbh3_server *srv);
  sbh3_server_free: { parameters: ["pointer"], result: "void" },
  // int sbh3_server_recv(sbh3_server *srv, const uint8_t *data, size_t len, const char *from_ip, uint16_t from_port);
  sbh3_server_recv: { parameters: ["pointer", "buffer", "usize", "buffer", "u16"], result: "i32" },
  // int sbh3_server_send(sbh3_server *srv, uint8_t *out, size_t cap, uint8_t *meta, size_t meta_cap);
  sbh3_server_send: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  // int sbh3_server_timeout_ms(sbh3_server *srv);
  sbh3_server_timeout_ms: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_on_timeout(sbh3_server *srv);
  sbh3_server_on_timeout: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_poll(sbh3_server *srv, uint8_t *buf, size_t cap);
  sbh3_server_poll: { parameters: ["pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_server_respond(sbh3_server *srv, uint32_t conn_id, int64_t stream_id, const uint8_t *hdrs,
  //                         size_t hdrs_len, const uint8_t *body, size_t body_len);
  sbh3_server_respond: {
    parameters: ["pointer", "u32", "i64", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  // int sbh3_server_refuse(sbh3_server *srv, uint32_t conn_id, int64_t stream_id);
  sbh3_server_refuse: { parameters: ["pointer", "u32", "i64"], result: "i32" },
  // int sbh3_server_shutdown(sbh3_server *srv);
  sbh3_server_shutdown: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_close_all(sbh3_server *srv);
  sbh3_server_close_all: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_open_streams(sbh3_server *srv);
  sbh3_server_open_streams: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_conn_count(sbh3_server *srv);
  sbh3_server_conn_count: { parameters: ["pointer"], result: "i32" },
  // int sbh3_server_stats(sbh3_server *srv, uint32_t conn_id, uint64_t *out, size_t n);
  sbh3_server_stats: { parameters: ["pointer", "u32", "buffer", "usize"], result: "i32" },
  // int sbh3_server_peer(sbh3_server *srv, uint32_t conn_id, uint8_t *meta, size_t meta_cap);
  sbh3_server_peer: { parameters: ["pointer", "u32", "buffer", "usize"], result: "i32" },
  // int sbh3_server_tls_state(sbh3_server *srv, uint32_t conn_id);
  sbh3_server_tls_state: { parameters: ["pointer", "u32"], result: "i32" },
  // int sbh3_server_tls_info(sbh3_server *srv, uint32_t conn_id, int kind, uint8_t *buf, size_t cap);
  sbh3_server_tls_info: { parameters: ["pointer", "u32", "i32", "buffer", "usize"], result: "i32" },
  // int64_t sbh3_server_handshake_bytes(sbh3_server *srv, uint32_t conn_id, int sent);
  sbh3_server_handshake_bytes: { parameters: ["pointer", "u32", "i32"], result: "i64" },
  // int sbh3_server_export(sbh3_server *srv, uint32_t conn_id, const uint8_t *label, size_t label_len,
  //                        const uint8_t *context, size_t context_len, uint8_t *out, size_t out_len);
  sbh3_server_export: {
    parameters: ["pointer", "u32", "buffer", "usize", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
  // int sbh3_conn_io(sbh3_conn *conn, sbh3_udp *u, const uint8_t *data, size_t len);
  sbh3_conn_io: { parameters: ["pointer", "pointer", "buffer", "usize"], result: "i32" },
  // int sbh3_conn_drain(sbh3_conn *conn, sbh3_udp *u);
  sbh3_conn_drain: { parameters: ["pointer", "pointer"], result: "i32" },
  // int sbh3_conn_flush(sbh3_conn *conn, sbh3_udp *u);
  sbh3_conn_flush: { parameters: ["pointer", "pointer"], result: "i32" },
  // int sbh3_server_io(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
  //                    uint16_t from_port);
  sbh3_server_io: {
    parameters: ["pointer", "pointer", "buffer", "usize", "buffer", "u16"],
    result: "i32",
  },
  // int sbh3_server_io_defer(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
  //                          uint16_t from_port);
  sbh3_server_io_defer: {
    parameters: ["pointer", "pointer", "buffer", "usize", "buffer", "u16"],
    result: "i32",
  },
  // int sbh3_server_flush(sbh3_server *srv, sbh3_udp *u);
  sbh3_server_flush: { parameters: ["pointer", "pointer"], result: "i32" },

  // sbh3_udp *sbh3_udp_adopt(const char *ip, uint16_t port);
  sbh3_udp_adopt: { parameters: ["buffer", "u16"], result: "pointer" },
  // void sbh3_udp_free(sbh3_udp *u);
  sbh3_udp_free: { parameters: ["pointer"], result: "void" },
  // int sbh3_udp_connect(sbh3_udp *u, const char *ip, uint16_t port);
  sbh3_udp_connect: { parameters: ["pointer", "buffer", "u16"], result: "i32" },
  // int sbh3_udp_watch(sbh3_udp *u);
  sbh3_udp_watch: { parameters: ["pointer"], result: "i32" },
  // int sbh3_udp_wait(sbh3_udp *u, int timeout_ms);  (on a blocking thread: it waits in poll())
  sbh3_udp_wait: { parameters: ["pointer", "i32"], result: "i32", nonblocking: true },
  // int sbh3_udp_wake(sbh3_udp *u);
  sbh3_udp_wake: { parameters: ["pointer"], result: "i32" },
  // int sbh3_udp_refused(sbh3_udp *u);
  sbh3_udp_refused: { parameters: ["pointer"], result: "i32" },
  // sbh3_udp *sbh3_udp_open(const char *ip, uint16_t port);
  sbh3_udp_open: { parameters: ["buffer", "u16"], result: "pointer" },
  // int sbh3_udp_port(sbh3_udp *u);
  sbh3_udp_port: { parameters: ["pointer"], result: "i32" },
  // int64_t sbh3_udp_received(sbh3_udp *u);
  sbh3_udp_received: { parameters: ["pointer"], result: "i64" },
  // sbloop *sbh3_server_loop_new(sbh3_server *srv, sbh3_udp *u, void (*wake)(void));
  sbh3_server_loop_new: { parameters: ["pointer", "pointer", "function"], result: "pointer" },
  // sbloop *sbh3_conn_loop_new(sbh3_conn *conn, sbh3_udp *u, void (*wake)(void));
  sbh3_conn_loop_new: { parameters: ["pointer", "pointer", "function"], result: "pointer" },

  // ---- the I/O loop linked into the module (transports/native/sbloop.h) ----
  ...IO_LOOP_SYMBOLS,

  // ---- the load engine linked into the module (load/native/sbl_load.h) ----
  ...loadEngineSymbols("sbh3"),
} as const satisfies Deno.ForeignLibraryInterface;

/** The opened library's symbols. */
export type Sbh3Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
