/**
 * The one `Deno.dlopen` table of the sbh2 module (native/sbh2.h and the load
 * engine linked into it), which every user of the module opens it with. Only symbols:
 * every entry carries its C prototype. Every call is short and never blocks,
 * so all are synchronous.
 */
import { loadEngineSymbols } from "../native/load_engine_symbols.ts";
import { IO_LOOP_SYMBOLS } from "../native/io_loop_symbols.ts";

/** Symbol table for `Deno.dlopen`. */
export const SYMBOLS = {
  // int sbh2_version(uint8_t *buf, uint32_t cap);
  sbh2_version: { parameters: ["buffer", "u32"], result: "i32" },
  // sbh2_conn *sbh2_conn_new(uint32_t window, uint32_t max_body);
  sbh2_conn_new: { parameters: ["u32", "u32"], result: "pointer" },
  // void sbh2_conn_free(sbh2_conn *conn);
  sbh2_conn_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_conn_set_max_header_list(sbh2_conn *conn, uint32_t bytes);
  sbh2_conn_set_max_header_list: { parameters: ["pointer", "u32"], result: "i32" },
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
  // int sbh2_conn_shutdown(sbh2_conn *conn);
  sbh2_conn_shutdown: { parameters: ["pointer"], result: "i32" },
  // int sbh2_conn_error(sbh2_conn *conn, uint8_t *buf, uint32_t cap);
  sbh2_conn_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_conn_stream_count(sbh2_conn *conn);
  sbh2_conn_stream_count: { parameters: ["pointer"], result: "i32" },
  // ---- server side (native/sbh2_server.h) ----
  // sbh2_server *sbh2_server_new(void);
  sbh2_server_new: { parameters: [], result: "pointer" },
  // void sbh2_server_free(sbh2_server *srv);
  sbh2_server_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_server_set_max_streams(sbh2_server *srv, uint64_t streams);
  sbh2_server_set_max_streams: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_header_list(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_max_header_list: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_body(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_max_body: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_window(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_window: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_idle_timeout(sbh2_server *srv, uint64_t ms);
  sbh2_server_set_idle_timeout: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_settings_timeout(sbh2_server *srv, uint64_t ms);
  sbh2_server_set_settings_timeout: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_resets(sbh2_server *srv, uint64_t resets);
  sbh2_server_set_max_resets: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_reset_rate(sbh2_server *srv, uint64_t per_second);
  sbh2_server_set_reset_rate: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_continuations(sbh2_server *srv, uint64_t frames);
  sbh2_server_set_max_continuations: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_queued(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_max_queued: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_stall_timeout(sbh2_server *srv, uint64_t ms);
  sbh2_server_set_stall_timeout: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_buffered(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_max_buffered: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_server_set_max_queued_total(sbh2_server *srv, uint64_t bytes);
  sbh2_server_set_max_queued_total: { parameters: ["pointer", "u64"], result: "i32" },
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
  // int sbh2_sconn_refuse(sbh2_sconn *conn, int32_t stream_id);
  sbh2_sconn_refuse: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh2_sconn_tick(sbh2_sconn *conn);
  sbh2_sconn_tick: { parameters: ["pointer"], result: "i32" },
  // int sbh2_sconn_shutdown(sbh2_sconn *conn);
  sbh2_sconn_shutdown: { parameters: ["pointer"], result: "i32" },
  // int64_t sbh2_sconn_stat(sbh2_sconn *conn, int stat);
  sbh2_sconn_stat: { parameters: ["pointer", "i32"], result: "i64" },
  // int sbh2_sconn_error(sbh2_sconn *conn, uint8_t *buf, uint32_t cap);
  sbh2_sconn_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },

  // int sbh2_conn_recv_tls(sbh2_conn *conn, sbh2_tls *tls, const uint8_t *in, uint32_t in_len);
  sbh2_conn_recv_tls: { parameters: ["pointer", "pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_conn_send_tls(sbh2_conn *conn, sbh2_tls *tls, uint8_t *out, uint32_t cap);
  sbh2_conn_send_tls: { parameters: ["pointer", "pointer", "buffer", "u32"], result: "i32" },

  // int sbh2_sconn_recv_tls(sbh2_sconn *conn, sbh2_tls *tls, const uint8_t *in, uint32_t in_len);
  sbh2_sconn_recv_tls: { parameters: ["pointer", "pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_sconn_send_tls(sbh2_sconn *conn, sbh2_tls *tls, uint8_t *out, uint32_t cap);
  sbh2_sconn_send_tls: { parameters: ["pointer", "pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_sconn_send_fd(sbh2_sconn *conn, sbh2_tls *tls, int fd, uint8_t *out, uint32_t cap);
  sbh2_sconn_send_fd: { parameters: ["pointer", "pointer", "i32", "buffer", "u32"], result: "i32" },

  // ---- TLS record layer (native/sbh2_tls.h) ----
  // sbh2_tls_config *sbh2_tls_config_new(int is_server);
  sbh2_tls_config_new: { parameters: ["i32"], result: "pointer" },
  // void sbh2_tls_config_free(sbh2_tls_config *cfg);
  sbh2_tls_config_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_tls_config_set_cert(sbh2_tls_config *cfg, const uint8_t *cert, uint32_t cert_len, const uint8_t *key, uint32_t key_len);
  sbh2_tls_config_set_cert: {
    parameters: ["pointer", "buffer", "u32", "buffer", "u32"],
    result: "i32",
  },
  // int sbh2_tls_config_add_ca(sbh2_tls_config *cfg, const uint8_t *pem, uint32_t len);
  sbh2_tls_config_add_ca: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_tls_config_set_verify(sbh2_tls_config *cfg, int mode);
  sbh2_tls_config_set_verify: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh2_tls_config_set_tickets(sbh2_tls_config *cfg, uint32_t lifetime_s);
  sbh2_tls_config_set_tickets: { parameters: ["pointer", "u32"], result: "i32" },
  // sbh2_tls *sbh2_tls_new(sbh2_tls_config *cfg, const char *server_name, const uint8_t *ticket, uint32_t ticket_len);
  sbh2_tls_new: { parameters: ["pointer", "buffer", "buffer", "u32"], result: "pointer" },
  // void sbh2_tls_free(sbh2_tls *tls);
  sbh2_tls_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_tls_recv(sbh2_tls *tls, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap);
  sbh2_tls_recv: { parameters: ["pointer", "buffer", "u32", "buffer", "u32"], result: "i32" },
  // int sbh2_tls_send(sbh2_tls *tls, const uint8_t *in, uint32_t in_len, uint8_t *out, uint32_t cap);
  sbh2_tls_send: { parameters: ["pointer", "buffer", "u32", "buffer", "u32"], result: "i32" },
  // int sbh2_tls_shutdown(sbh2_tls *tls);
  sbh2_tls_shutdown: { parameters: ["pointer"], result: "i32" },
  // int sbh2_tls_state(sbh2_tls *tls);
  sbh2_tls_state: { parameters: ["pointer"], result: "i32" },
  // int sbh2_tls_info(sbh2_tls *tls, int kind, uint8_t *buf, uint32_t cap);
  sbh2_tls_info: { parameters: ["pointer", "i32", "buffer", "u32"], result: "i32" },
  // int sbh2_tls_handshake_bytes(sbh2_tls *tls, int sent);
  sbh2_tls_handshake_bytes: { parameters: ["pointer", "i32"], result: "i32" },
  // int sbh2_tls_export(sbh2_tls *tls, const uint8_t *label, uint32_t label_len, const uint8_t *context, uint32_t context_len, uint8_t *out, uint32_t out_len);
  sbh2_tls_export: {
    parameters: ["pointer", "buffer", "u32", "buffer", "u32", "buffer", "u32"],
    result: "i32",
  },
  // int sbh2_tls_ticket(sbh2_tls *tls, uint8_t *buf, uint32_t cap);
  sbh2_tls_ticket: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_tls_error(sbh2_tls *tls, uint8_t *buf, uint32_t cap);
  sbh2_tls_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },

  // ---- module-owned I/O of the h2c server (native/sbh2_loop.c) ----
  // sbh2_listener *sbh2_listener_open(const char *ip, uint16_t port);
  sbh2_listener_open: { parameters: ["buffer", "u16"], result: "pointer" },
  // void sbh2_listener_free(sbh2_listener *ls);
  sbh2_listener_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_listener_set_max_connections(sbh2_listener *ls, uint64_t conns);
  sbh2_listener_set_max_connections: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_listener_set_stall_timeout(sbh2_listener *ls, uint64_t ms);
  sbh2_listener_set_stall_timeout: { parameters: ["pointer", "u64"], result: "i32" },
  // int sbh2_listener_port(sbh2_listener *ls);
  sbh2_listener_port: { parameters: ["pointer"], result: "i32" },
  // sbloop *sbh2_server_loop_new(sbh2_server *srv, sbh2_listener *ls, void (*wake)(void));
  sbh2_server_loop_new: { parameters: ["pointer", "pointer", "function"], result: "pointer" },
  // int sbh2_listener_poll(sbh2_listener *ls, uint8_t *buf, uint32_t cap);
  sbh2_listener_poll: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_listener_respond(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body, uint32_t body_len, uint32_t token);
  sbh2_listener_respond: {
    parameters: ["pointer", "u32", "i32", "buffer", "u32", "buffer", "u32", "u32"],
    result: "i32",
  },
  // int sbh2_listener_refuse(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id);
  sbh2_listener_refuse: { parameters: ["pointer", "u32", "i32"], result: "i32" },
  // int sbh2_listener_shutdown(sbh2_listener *ls);
  sbh2_listener_shutdown: { parameters: ["pointer"], result: "i32" },
  // int64_t sbh2_listener_stat(sbh2_listener *ls, int stat);
  sbh2_listener_stat: { parameters: ["pointer", "i32"], result: "i64" },
  // int sbh2_listener_set_tls(sbh2_listener *ls, sbh2_tls_config *cfg);
  sbh2_listener_set_tls: { parameters: ["pointer", "pointer"], result: "i32" },
  // sbh2_tls *sbh2_listener_tls(sbh2_listener *ls, uint32_t conn_id);
  sbh2_listener_tls: { parameters: ["pointer", "u32"], result: "pointer" },

  // ---- module-owned I/O of the client (native/sbh2_client_loop.c) ----
  // sbh2_csock *sbh2_csock_open(const char *host, uint16_t port);
  sbh2_csock_open: { parameters: ["buffer", "u16"], result: "pointer" },
  // void sbh2_csock_free(sbh2_csock *cs);
  sbh2_csock_free: { parameters: ["pointer"], result: "void" },
  // int sbh2_csock_state(sbh2_csock *cs);
  sbh2_csock_state: { parameters: ["pointer"], result: "i32" },
  // int sbh2_csock_error(sbh2_csock *cs, uint8_t *buf, uint32_t cap);
  sbh2_csock_error: { parameters: ["pointer", "buffer", "u32"], result: "i32" },
  // int sbh2_csock_port(sbh2_csock *cs);
  sbh2_csock_port: { parameters: ["pointer"], result: "i32" },
  // sbloop *sbh2_conn_loop_new(sbh2_conn *conn, sbh2_tls *tls, sbh2_csock *cs, void (*wake)(void));
  sbh2_conn_loop_new: {
    parameters: ["pointer", "pointer", "pointer", "function"],
    result: "pointer",
  },

  // ---- the I/O loop linked into the module (transports/native/sbloop.h) ----
  ...IO_LOOP_SYMBOLS,

  // ---- the load engine linked into the module (load/native/sbl_load.h) ----
  ...loadEngineSymbols("sbh2"),
} as const satisfies Deno.ForeignLibraryInterface;

/** The opened library's symbols. */
export type Sbh2Symbols = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
