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
};

typedef struct sbh2_server sbh2_server;
typedef struct sbh2_sconn sbh2_sconn;

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

#ifdef __cplusplus
}
#endif

#endif /* SBH2_SERVER_H */
