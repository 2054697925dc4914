/*
 * sbh2: a small HTTP/2 client shim over nghttp2 1.52.
 *
 * Bring your own I/O: the caller owns the TCP (or TLS) connection. It feeds
 * received bytes in, pulls bytes to write out, submits requests and polls
 * finished responses and connection events into its own buffers. Nothing
 * here calls back into the caller.
 *
 * Functions return a count (>= 0) or a negative code from enum sbwire_error
 * (transports/native/sbwire.h, one numbering for both native modules).
 * SBWIRE_ERR_DONE means "nothing more to do" and is not a failure. Every _new
 * returns NULL on failure and every _free accepts NULL.
 *
 * Lengths and capacities are uint32_t: no single buffer, body or event
 * reaches 4 GiB, and 32-bit arguments cross Deno's FFI without BigInt.
 *
 * Headers cross the boundary as one flat block and events as 32-byte
 * records with their payload, in the format transports/native/sbwire.h
 * defines for both native modules (little-endian). The client's conn_id
 * field is 0. One poll writes as many whole events as fit, back to back.
 *
 * The server side (one nghttp2 server session per accepted connection) is
 * declared in sbh2_server.h.
 */
#ifndef SBH2_H
#define SBH2_H

#include <stddef.h>
#include <stdint.h>

#include "../../native/sbwire.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this shim. */
#define SBH2_VERSION "0.1.0"

/* Size of the fixed part of an event record. */
#define SBH2_EVENT_HEADER_LEN SBWIRE_EVENT_HEADER_LEN
/* Default cap of a response header list, bytes (sbh2_server_set_max_header_list's default is the same). */
#define SBH2_MAX_HEADER_LIST 16384


enum sbh2_event_type {
  /* A complete response (client) or request (server): headers and body. */
  SBH2_EV_MESSAGE = SBWIRE_EV_MESSAGE,
  /* The stream ended before its response completed; code = HTTP/2 error code. */
  SBH2_EV_RESET = SBWIRE_EV_RESET,
  /* The connection can carry nothing more; code = sbwire_error; see sbh2_conn_error. */
  SBH2_EV_CLOSED = SBWIRE_EV_CLOSED,
  /* The peer sent GOAWAY: open no new streams; code = last stream id it will process. */
  SBH2_EV_GOAWAY = SBWIRE_EV_GOAWAY,
  /* Server: a lent response body is no longer referenced; code = the caller's token. */
  SBH2_EV_RELEASED = SBWIRE_EV_RELEASED,
};

typedef struct sbh2_conn sbh2_conn;

/* Writes "sbh2/x nghttp2/x gnutls/x" into buf; returns its length. */
int sbh2_version(uint8_t *buf, uint32_t cap);

/* Starts a client session (prior knowledge: preface + SETTINGS queued) with the given receive windows and body limit. */
sbh2_conn *sbh2_conn_new(uint32_t window, uint32_t max_body);
/* Frees the session and every stream it holds. */
void sbh2_conn_free(sbh2_conn *conn);
/* Sets the largest response header list (RFC 9113 size: name + value + 32 per field; default 16384) and advertises it
   in SETTINGS; a response past it is reset (CANCEL) and reported as RESET. */
int sbh2_conn_set_max_header_list(sbh2_conn *conn, uint32_t bytes);
/* Feeds received bytes; returns the number of events ready to poll, or an error (then a CLOSED event is queued). */
int sbh2_conn_recv(sbh2_conn *conn, const uint8_t *data, uint32_t len);
/* Writes pending output into out (as much as fits); returns its length, or SBWIRE_ERR_DONE when nothing is pending. */
int sbh2_conn_send(sbh2_conn *conn, uint8_t *out, uint32_t cap);
/* Submits a request (header block copied, body copied); returns its stream id or an error. */
int32_t sbh2_conn_request(sbh2_conn *conn, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body, uint32_t body_len);
/* Abandons a stream (for example after a timeout): RST_STREAM with CANCEL; no event follows for it. */
int sbh2_conn_cancel(sbh2_conn *conn, int32_t stream_id);
/* Writes every ready event that fits into buf; returns the bytes written or SBWIRE_ERR_DONE. */
int sbh2_conn_poll(sbh2_conn *conn, uint8_t *buf, uint32_t cap);
/* Starts a graceful close (GOAWAY with NO_ERROR); then drain sbh2_conn_send. */
int sbh2_conn_shutdown(sbh2_conn *conn);
/* Writes why the connection closed (text) into buf; returns its length. */
int sbh2_conn_error(sbh2_conn *conn, uint8_t *buf, uint32_t cap);
/* Returns the number of streams the shim still holds state for (open or with an unpolled event). */
int sbh2_conn_stream_count(sbh2_conn *conn);

#ifdef __cplusplus
}
#endif

#endif /* SBH2_H */
