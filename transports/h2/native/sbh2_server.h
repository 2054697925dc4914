/*
 * sbh2 server side: one nghttp2 server session per accepted connection.
 *
 * Bring your own I/O, as the client: the caller owns the socket (or a TLS
 * layer in front of it), feeds the bytes it read with sbh2_sconn_recv, polls
 * complete requests as events (transports/native/sbwire.h), answers them with
 * sbh2_sconn_respond and writes what sbh2_sconn_send produces (or has
 * sbh2_sconn_send_fd, in sbh2_tls.h, send it on the socket while the kernel
 * takes it without waiting). Many requests per recv and many responses per
 * send; nothing here calls back into the caller and nothing here touches a
 * socket.
 *
 * Response bodies are written by nghttp2's no-copy path: DATA frames are
 * built straight into the caller's output buffer from the body. A body is
 * either copied once at respond (token 0) or lent: the caller keeps it alive
 * and unchanged until a RELEASED event carrying its token.
 *
 * Limits (one setter each, sbh2_server_set_<limit>, with a default): concurrent streams, header
 * list size, CONTINUATION frames, request body size (the request still
 * arrives, as a TOO_LARGE event with code 413, so the caller answers it),
 * request body bytes buffered by all connections of a server (a body that
 * does not fit arrives as TOO_LARGE with code 503), peer stream resets
 * (rapid reset), response bytes queued while the peer's window is closed (per
 * connection and per server), and the settings, idle and stall timers.
 * Timers run when the caller calls sbh2_sconn_tick; the clock is
 * CLOCK_MONOTONIC.
 *
 * Return values follow sbh2.h: a count (>= 0) or a negative enum sbwire_error (transports/native/sbwire.h).
 */
#ifndef SBH2_SERVER_H
#define SBH2_SERVER_H

#include "sbh2.h"
#include "../../native/sbloop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A request whose body exceeded the server's max_body (SBWIRE_TOO_LARGE_BODY) or did not fit in its max_buffered
   (SBWIRE_TOO_LARGE_BUDGET) arrives as a TOO_LARGE event: headers only, body dropped. */

/* Counters of one connection (sbh2_sconn_stat). */
enum sbh2_stat {
  /* Requests delivered as MESSAGE events. */
  SBH2_STAT_REQUESTS = 1,
  /* Streams the peer reset. */
  SBH2_STAT_PEER_RESETS = 2,
  /* Streams this side reset (limits, stalls, queue cap). */
  SBH2_STAT_LOCAL_RESETS = 3,
  /* Response body bytes queued and not yet written. */
  SBH2_STAT_QUEUED_BYTES = 4,
  /* Streams held (open, or with an unpolled event). */
  SBH2_STAT_STREAMS = 5,
  /* Request body bytes counted against the max_buffered limit by all connections of this server now. */
  SBH2_STAT_BUFFERED = 6,
  /* Response body bytes queued and not yet written by all connections of this server. */
  SBH2_STAT_QUEUED_TOTAL = 7,
  /* Events ready to poll (a stream reset before it was polled may still count). */
  SBH2_STAT_EVENTS = 8,
  /* sbh2_listener_stat only: connections the listener holds now. */
  SBH2_STAT_CONNECTIONS = 9,
  /* sbh2_listener_stat only: accepts that failed (EMFILE and the like) so far. */
  SBH2_STAT_ACCEPT_ERRORS = 10,
  /* sbh2_listener_stat only: idle connections closed to let new ones in (at the cap or the fd limit). */
  SBH2_STAT_ROOM_MADE = 11,
  /* sbh2_listener_stat only: sends the kernel did not take whole (the rest waited for the socket). */
  SBH2_STAT_BLOCKED_WRITES = 12,
};

typedef struct sbh2_server sbh2_server;
typedef struct sbh2_sconn sbh2_sconn;
typedef struct sbh2_listener sbh2_listener;

/* Creates the limits shared by a server's connections, all at their defaults. */
sbh2_server *sbh2_server_new(void);
/* Drops the caller's reference; connections keep theirs. */
void sbh2_server_free(sbh2_server *srv);
/* The setters below change a limit for connections created afterwards; each returns 0, or SBWIRE_ERR_INVALID for a
   NULL server, 0 or a value out of range. */
/* SETTINGS_MAX_CONCURRENT_STREAMS, at most 2^31-1; default 100. */
int sbh2_server_set_max_streams(sbh2_server *srv, uint64_t streams);
/* Largest request header list (RFC 9113 size: name + value + 32 per field), bytes; default 16384. */
int sbh2_server_set_max_header_list(sbh2_server *srv, uint64_t bytes);
/* Largest request body, bytes; default 32 MiB. */
int sbh2_server_set_max_body(sbh2_server *srv, uint64_t bytes);
/* Receive window of each stream, 65535..2^31-1 bytes (the connection's is 16 times that, at most 2^31-1); default
   1 MiB. */
int sbh2_server_set_window(sbh2_server *srv, uint64_t bytes);
/* Close a connection without open streams after this long without input, ms; default 60000. */
int sbh2_server_set_idle_timeout(sbh2_server *srv, uint64_t ms);
/* Close a connection whose preface and SETTINGS (or ACK of ours) are this late, ms; default 10000. */
int sbh2_server_set_settings_timeout(sbh2_server *srv, uint64_t ms);
/* Peer stream resets allowed in a burst before GOAWAY ENHANCE_YOUR_CALM; default 200. */
int sbh2_server_set_max_resets(sbh2_server *srv, uint64_t resets);
/* Peer stream resets forgiven per second (refill of the burst); default 50. */
int sbh2_server_set_reset_rate(sbh2_server *srv, uint64_t per_second);
/* CONTINUATION frames allowed after one HEADERS frame; default 8. */
int sbh2_server_set_max_continuations(sbh2_server *srv, uint64_t frames);
/* Response body bytes queued per connection; a response beyond it is reset (ENHANCE_YOUR_CALM); default 64 MiB. */
int sbh2_server_set_max_queued(sbh2_server *srv, uint64_t bytes);
/* Reset streams whose queued response made no progress for this long, ms; default 10000. */
int sbh2_server_set_stall_timeout(sbh2_server *srv, uint64_t ms);
/* Request body bytes buffered at once by all connections of this server (a declared content-length counts whole);
   a body that does not fit arrives as TOO_LARGE with code 503; default 256 MiB. */
int sbh2_server_set_max_buffered(sbh2_server *srv, uint64_t bytes);
/* Response body bytes queued by all connections of this server; a response beyond it while its peer's window is
   closed is reset (ENHANCE_YOUR_CALM), as for max_queued; default 256 MiB. */
int sbh2_server_set_max_queued_total(sbh2_server *srv, uint64_t bytes);

/* Starts a server session for one accepted connection (server SETTINGS queued). */
sbh2_sconn *sbh2_sconn_new(sbh2_server *srv);
/* Frees the session, its streams and lent references (no RELEASED events follow). */
void sbh2_sconn_free(sbh2_sconn *conn);
/* Feeds received bytes; returns the number of events ready to poll, or an error (then send drains and reports CLOSED). */
int sbh2_sconn_recv(sbh2_sconn *conn, const uint8_t *data, uint32_t len);
/* Writes every ready event that fits into buf; returns the bytes written or SBWIRE_ERR_DONE. */
int sbh2_sconn_poll(sbh2_sconn *conn, uint8_t *buf, uint32_t cap);
/* Answers a request: header block copied; body copied when token is 0, else lent until RELEASED with token. */
int sbh2_sconn_respond(sbh2_sconn *conn, int32_t stream_id, const uint8_t *hdrs, uint32_t hdrs_len,
                       const uint8_t *body, uint32_t body_len, uint32_t token);
/* Refuses a request with no answer: RST_STREAM ENHANCE_YOUR_CALM (its response found no room). */
int sbh2_sconn_refuse(sbh2_sconn *conn, int32_t stream_id);
/* Writes pending output into out (cap >= 16 KiB + 9); returns its length, DONE when idle, CLOSED when finished. */
int sbh2_sconn_send(sbh2_sconn *conn, uint8_t *out, uint32_t cap);
/* Runs the settings, idle and stall timers; returns ms until the next is due, or CLOSED when finished. */
int sbh2_sconn_tick(sbh2_sconn *conn);
/* Starts a graceful close: GOAWAY NO_ERROR, in-flight streams finish, then send reports CLOSED. */
int sbh2_sconn_shutdown(sbh2_sconn *conn);
/* Returns one enum sbh2_stat counter. */
int64_t sbh2_sconn_stat(sbh2_sconn *conn, int stat);
/* Writes why the connection closed (text) into buf; returns its length. */
int sbh2_sconn_error(sbh2_sconn *conn, uint8_t *buf, uint32_t cap);

/*
 * Module-owned I/O (sbh2_loop.c, transports/native/sbloop.h): the
 * module opens the listening socket itself and a thread of its own accepts,
 * reads every connection into its session, runs the timers (settings, idle,
 * stall, and a stall of TCP writes), writes output (what the kernel does not
 * take waits for the socket) and closes finished connections. JavaScript
 * polls one event stream over all connections (sbh2_listener_poll): each
 * record carries its connection id (never 0) at offset 4; CONNECTED opens a
 * connection (over TLS once its handshake completed, code 1; its body is the
 * peer's address, "host port"), CLOSED ends it (its unanswered requests are
 * gone, its lent bodies no longer referenced, no RELEASED follows; code
 * SBWIRE_ERR_TLS when its TLS handshake failed, with "host port reason" in
 * the body), and a CLOSED with conn_id 0 reports a failed accept (code
 * SBWIRE_ERR_SOCKET, the reason as text in the body; the loop retries after
 * a pause). TLS: sbh2_listener_set_tls in sbh2_tls.h. At the connection cap
 * (or out of descriptors) the idlest connection without streams is closed
 * with GOAWAY to let the new one in; without one the new one is closed.
 * While the loop runs, every call on the listener is made under sbloop_lock
 * and answers leave through sbloop_flush.
 */

/* Opens a listening TCP socket of its own at ip:port (0: any free port), non-blocking; NULL on failure. */
sbh2_listener *sbh2_listener_open(const char *ip, uint16_t port);
/* Closes the listening socket and every connection, freeing their sessions (stop its loop first). */
void sbh2_listener_free(sbh2_listener *ls);
/* Connections held at once; default 4096. */
int sbh2_listener_set_max_connections(sbh2_listener *ls, uint64_t conns);
/* Close a connection whose pending output the kernel took none of for this long, ms; default 30000. */
int sbh2_listener_set_stall_timeout(sbh2_listener *ls, uint64_t ms);
/* The listening socket's bound port, or a negative sbwire_error. */
int sbh2_listener_port(sbh2_listener *ls);
/* A loop that serves ls with srv's limits and calls wake when events wait; NULL on failure. Start it with sbloop_start. */
sbloop *sbh2_server_loop_new(sbh2_server *srv, sbh2_listener *ls, void (*wake)(void));
/* Writes every ready event of every connection that fits into buf (records carry their conn_id); bytes or DONE. */
int sbh2_listener_poll(sbh2_listener *ls, uint8_t *buf, uint32_t cap);
/* sbh2_sconn_respond on connection conn_id; NOT_FOUND when it is gone. */
int sbh2_listener_respond(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id, const uint8_t *hdrs,
                          uint32_t hdrs_len, const uint8_t *body, uint32_t body_len, uint32_t token);
/* sbh2_sconn_refuse on connection conn_id; NOT_FOUND when it is gone. */
int sbh2_listener_refuse(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id);
/* Stops accepting (the listening socket closes) and starts a graceful close of every connection (GOAWAY). */
int sbh2_listener_shutdown(sbh2_listener *ls);
/* One enum sbh2_stat counter: a connection's summed over every connection, or the listener's own. */
int64_t sbh2_listener_stat(sbh2_listener *ls, int stat);

#ifdef __cplusplus
}
#endif

#endif /* SBH2_SERVER_H */
