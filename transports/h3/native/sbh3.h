/*
 * sbh3: a small HTTP/3 shim over ngtcp2 0.12 + nghttp3 0.8 + GnuTLS.
 *
 * Bring your own I/O: the caller owns the UDP socket and the timers. It feeds
 * received datagrams in, pulls datagrams to send out until SBWIRE_ERR_DONE, asks
 * when the next timer is due, and polls finished HTTP messages and connection
 * events into its own buffers. Nothing here calls back into the caller.
 *
 * Functions return a count (>= 0) or a negative code from enum sbwire_error
 * (transports/native/sbwire.h, one numbering for both native modules).
 * SBWIRE_ERR_DONE means "nothing more to do" and is not a failure. Every _new
 * returns NULL on failure and every _free accepts NULL.
 *
 * Headers cross the boundary as one flat block and events as 32-byte records
 * with their payload, in the format transports/native/sbwire.h defines for
 * both native modules (little-endian). Pseudo-headers (":method", ":status",
 * ...) travel in the same block. Polls follow sbwire.h's one poll rule (the
 * records that fit). The HTTP/3 rules (limits, events) are the HTTP/3 layer's
 * both h3 modules link (transports/native/sbhttp3.h).
 */
#ifndef SBH3_H
#define SBH3_H

#include <stddef.h>
#include <stdint.h>

#include "../../native/sbwire.h"
#include "../../native/sbloop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this shim. */
#define SBH3_VERSION "0.1.0"

/* Size of the fixed part of an event record. */
#define SBH3_EVENT_HEADER_LEN SBWIRE_EVENT_HEADER_LEN


enum sbh3_event_type {
  /* Handshake completed (client; and server, with conn_id). */
  SBH3_EV_CONNECTED = SBWIRE_EV_CONNECTED,
  /* A complete request (server) or response (client): headers and body. */
  SBH3_EV_MESSAGE = SBWIRE_EV_MESSAGE,
  /* The peer reset a stream before its message completed; code = app error. */
  SBH3_EV_RESET = SBWIRE_EV_RESET,
  /* The connection closed; code = sbwire_error; see sbh3_conn_error for text. */
  SBH3_EV_CLOSED = SBWIRE_EV_CLOSED,
  /* The peer sent GOAWAY: open no new streams on this connection. */
  SBH3_EV_GOAWAY = SBWIRE_EV_GOAWAY,
  /* Server: a request body passed max_body; headers only. Reading stopped (STOP_SENDING, H3_NO_ERROR); answer it (413). */
  SBH3_EV_TOO_LARGE = SBWIRE_EV_TOO_LARGE,
  /* Client: the server refused 0-RTT; every request submitted so far is gone and must be submitted again. */
  SBH3_EV_EARLY_REJECTED = SBWIRE_EV_EARLY_REJECTED,
};

/* Bit in the code of a server MESSAGE event: the request arrived (at least partly) in 0-RTT. */
#define SBH3_MSG_EARLY 1 /* SBHTTP3_MSG_EARLY */




enum sbh3_cc {
  /* The host's TCP congestion controller (net.ipv4.tcp_congestion_control): bbr, reno, else CUBIC. */
  SBH3_CC_HOST = 0,
  SBH3_CC_RENO = 1,
  SBH3_CC_CUBIC = 2,
  SBH3_CC_BBR = 3,
  SBH3_CC_BBR2 = 4,
};

/* Counters of sbh3_conn_stats / sbh3_server_stats, as u64 in this order. */
enum sbh3_stat {
  SBH3_STAT_DGRAMS_SENT = 0,
  SBH3_STAT_BYTES_SENT = 1,
  /* Largest UDP payload sent so far. */
  SBH3_STAT_MAX_DGRAM_SENT = 2,
  SBH3_STAT_DGRAMS_RECV = 3,
  SBH3_STAT_BYTES_RECV = 4,
  /* Largest UDP payload received (and accepted) so far. */
  SBH3_STAT_MAX_DGRAM_RECV = 5,
  /* Received datagrams dropped because they exceeded the advertised max_udp_payload_size. */
  SBH3_STAT_DGRAMS_OVERSIZE = 6,
  /* The path's current largest payload: PMTUD's result, or the explicit size (0 for server totals). */
  SBH3_STAT_PATH_MAX_PAYLOAD = 7,
  /* The peer's max_udp_payload_size transport parameter (0 until known, and for server totals). */
  SBH3_STAT_PEER_MAX_PAYLOAD = 8,
  /* Response body bytes held now for open streams (see sbh3_config_set_send_queue). */
  SBH3_STAT_QUEUED_BYTES = 9,
  /* Retry packets sent (server) or received (client). */
  SBH3_STAT_RETRIES = 10,
  /* NEW_TOKEN tokens issued (server) or received (client). */
  SBH3_STAT_NEW_TOKENS = 11,
  /* 1-RTT key updates: ours when started, the peer's up to a PTO after it (when the next keys are derived). */
  SBH3_STAT_KEY_UPDATES = 12,
  /* Datagrams sent with an ECN codepoint (ECT(0) while ngtcp2's validation allows it), through sbh3_*_io. */
  SBH3_STAT_ECN_SENT = 13,
  /* Datagrams received with an ECN codepoint, reported to QUIC (through sbh3_*_io, the caller's own first datagram excluded). */
  SBH3_STAT_ECN_RECV = 14,
  /* The QUIC version in use (0 for server totals). */
  SBH3_STAT_VERSION = 15,
  SBH3_STAT_COUNT = 16,
};

typedef struct sbh3_config sbh3_config;
typedef struct sbh3_conn sbh3_conn;
typedef struct sbh3_server sbh3_server;
typedef struct sbh3_udp sbh3_udp;

/* Writes "sbh3/x ngtcp2/x nghttp3/x gnutls/x" into buf; returns its length. */
int sbh3_version(uint8_t *buf, size_t cap);

/* Creates a configuration for a client (is_server = 0) or a server. */
sbh3_config *sbh3_config_new(int is_server);
/* Releases the caller's reference; connections keep the config alive. */
void sbh3_config_free(sbh3_config *cfg);
/* Sets the own certificate chain and private key (PEM). */
int sbh3_config_set_cert(sbh3_config *cfg, const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len);
/* Adds trusted CA certificates (PEM, may hold several); returns how many. */
int sbh3_config_add_ca(sbh3_config *cfg, const uint8_t *pem, size_t len);
/* Sets peer verification (enum sbwire_tls_verify). Default: client PEER, server NONE. */
int sbh3_config_set_verify(sbh3_config *cfg, int mode);
/* Sets the idle timeout in ms (default 30000). */
int sbh3_config_set_idle_timeout(sbh3_config *cfg, uint32_t ms);
/* Sends datagrams up to this size (a path MTU the caller knows, 1200..65527) once the peer's limit is known; default 0: 1200, then PMTUD up to 1444. */
int sbh3_config_set_max_udp_payload(sbh3_config *cfg, uint32_t bytes);
/* Returns the explicit send size set above, or 0 when the default (PMTUD) applies. */
int sbh3_config_get_max_udp_payload(const sbh3_config *cfg);
/* Advertises max_udp_payload_size (1200..65527, default 65527) and drops received datagrams above it. */
int sbh3_config_set_max_recv_udp_payload(sbh3_config *cfg, uint32_t bytes);
/* Sets the congestion controller (enum sbh3_cc; default HOST: the same kind as the host's TCP). */
int sbh3_config_set_cc(sbh3_config *cfg, int algo);
/* Sets the handshake timeout in ms (default 5000). */
int sbh3_config_set_handshake_timeout(sbh3_config *cfg, uint32_t ms);
/* Server: bytes of response bodies held per connection and per endpoint (default 64 MiB, 256 MiB), and a stall period in ms: a connection holding bytes that gets under 16 KiB acknowledged in one period is closed with H3_EXCESSIVE_LOAD (default 30000). */
int sbh3_config_set_send_queue(sbh3_config *cfg, uint64_t conn_bytes, uint64_t total_bytes, uint32_t stall_ms);
/* Server: validate every new client address with a Retry first, and give each client a NEW_TOKEN that skips it next time (tokens bound to the client's address, Retry 10 s, NEW_TOKEN 1 h, keys rotated hourly). Default off. */
int sbh3_config_set_retry(sbh3_config *cfg, int on);
/* Client: a NEW_TOKEN (from sbh3_conn_token) to present in the first Initial of connections made from cfg (copied). */
int sbh3_config_set_token(sbh3_config *cfg, const uint8_t *token, size_t len);
/* QUIC versions by preference (1..4, v1 among them; ngtcp2 0.12 knows v1 and the v2 draft 0x709a50c4). A client starts with v1 and offers the rest; a server moves it to the first it prefers (RFC 9368). Default v1 alone. */
int sbh3_config_set_versions(sbh3_config *cfg, const uint32_t *versions, size_t n);
/* ECN (RFC 9000 §13.4) on sbh3_*_io: mark datagrams as ngtcp2's validation allows and report received marks (default on). */
int sbh3_config_set_ecn(sbh3_config *cfg, int on);
/* Sets the largest body accepted per stream in bytes (default 64 MiB). */
int sbh3_config_set_max_body(sbh3_config *cfg, uint64_t bytes);
/* Sets the largest header section accepted per message (RFC 9114 size: name + value + 32 per field; default 16384), advertised in SETTINGS; past it the stream is reset with H3_EXCESSIVE_LOAD. */
int sbh3_config_set_max_field_section(sbh3_config *cfg, uint64_t bytes);
/* Server: sends one TLS 1.3 session ticket per connection, valid lifetime_s seconds (0: none, the default); ticket keys rotate with that period. */
int sbh3_config_set_tickets(sbh3_config *cfg, uint32_t lifetime_s);
/* 0-RTT: a server accepts it (anti-replay window window_ms), a resuming client attempts it; on = 0 turns it off (the default). */
int sbh3_config_set_early_data(sbh3_config *cfg, int on, uint32_t window_ms);

/* Starts a client connection; server_name is verified (NUL-terminated), addresses are IP text. */
sbh3_conn *sbh3_conn_new_client(sbh3_config *cfg, const char *server_name, const char *local_ip, uint16_t local_port,
                                const char *remote_ip, uint16_t remote_port);
/* Frees a client connection and its streams. */
void sbh3_conn_free(sbh3_conn *conn);
/* Feeds one received datagram; returns the number of events ready to poll, or an error (the connection may now be closed). */
int sbh3_conn_recv(sbh3_conn *conn, const uint8_t *data, size_t len);
/* Writes the next datagram to send into out; returns its length or SBWIRE_ERR_DONE. */
int sbh3_conn_send(sbh3_conn *conn, uint8_t *out, size_t cap);
/* Returns ms until sbh3_conn_on_timeout is due, or SBWIRE_ERR_DONE if no timer is pending. */
int sbh3_conn_timeout_ms(sbh3_conn *conn);
/* The peer's initial_max_streams_bidi (its first credit for request streams); 0 before its transport parameters. */
uint64_t sbh3_conn_peer_max_streams_bidi(sbh3_conn *conn);
/* Runs expired timers (retransmission, ACK, idle); then call sbh3_conn_send. */
int sbh3_conn_on_timeout(sbh3_conn *conn);
/* Submits a request (header block + body, copied); returns its stream id or an error. */
int64_t sbh3_conn_request(sbh3_conn *conn, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len);
/* Abandons a stream (for example after a timeout): resets it with H3_REQUEST_CANCELLED. */
int sbh3_conn_cancel(sbh3_conn *conn, int64_t stream_id);
/* Writes the events that fit into buf (sbwire.h's poll rule); returns the bytes written or SBWIRE_ERR_DONE. */
int sbh3_conn_poll(sbh3_conn *conn, uint8_t *buf, size_t cap);
/* Starts a graceful close (CONNECTION_CLOSE with H3_NO_ERROR); then drain sbh3_conn_send. */
int sbh3_conn_shutdown(sbh3_conn *conn);
/* Writes why the connection closed (text) into buf; returns its length. */
int sbh3_conn_error(sbh3_conn *conn, uint8_t *buf, size_t cap);
/* Returns the number of request streams the connection still holds state for. */
int sbh3_conn_stream_count(sbh3_conn *conn);
/* Copies up to n counters (enum sbh3_stat) into out; returns how many. */
int sbh3_conn_stats(sbh3_conn *conn, uint64_t *out, size_t n);
/* Client: copies the last NEW_TOKEN the server gave into buf; its length, SBWIRE_ERR_DONE when none. */
int sbh3_conn_token(sbh3_conn *conn, uint8_t *buf, size_t cap);
/* Starts a 1-RTT key update; SBWIRE_ERR_STREAM_BLOCKED: not allowed yet (handshake unconfirmed, or the last update unacknowledged). */
int sbh3_conn_update_key(sbh3_conn *conn);
/* Offers a ticket from sbh3_conn_ticket (before the first send); with early data on, requests may follow at once (0-RTT). */
int sbh3_conn_resume(sbh3_conn *conn, const uint8_t *ticket, size_t len);
/* Moves the newest ticket the server sent (with its transport parameters) into buf; its length or SBWIRE_ERR_DONE. */
int sbh3_conn_ticket(sbh3_conn *conn, uint8_t *buf, size_t cap);
/* Returns the enum sbwire_tls_state bits of the connection. */
int sbh3_conn_tls_state(sbh3_conn *conn);
/* Writes one enum sbwire_tls_info text into buf (no NUL); returns its length. */
int sbh3_conn_tls_info(sbh3_conn *conn, int kind, uint8_t *buf, size_t cap);
/* Microseconds since the first response header was received (now), or SBWIRE_ERR_DONE before one. */
int64_t sbh3_conn_first_response_ago_us(sbh3_conn *conn);
/* Handshake (CRYPTO frame) bytes sent (sent = 1) or received (sent = 0) until the handshake completed. */
int64_t sbh3_conn_handshake_bytes(sbh3_conn *conn, int sent);
/* RFC 5705 / RFC 8446 §7.5 exporter: writes out_len (1 to 65535) bytes for label and context (may be empty); returns out_len,
 * SBWIRE_ERR_INVALID before the handshake completed, SBWIRE_ERR_CLOSED once the session failed or closed. */
int sbh3_conn_export(sbh3_conn *conn, const uint8_t *label, size_t label_len, const uint8_t *context, size_t context_len,
                     uint8_t *out, size_t out_len);

/* Creates a server endpoint bound (by the caller) to local_ip:local_port. */
sbh3_server *sbh3_server_new(sbh3_config *cfg, const char *local_ip, uint16_t local_port);
/* Frees the server and every connection it holds. */
void sbh3_server_free(sbh3_server *srv);
/* Feeds one datagram from ip:port; returns the connection id (> 0), SBWIRE_ERR_DONE, or an error. */
int sbh3_server_recv(sbh3_server *srv, const uint8_t *data, size_t len, const char *from_ip, uint16_t from_port);
/* Writes the next datagram into out and its destination into meta (u32 conn_id, u16 port, IP text NUL); returns length or DONE. */
int sbh3_server_send(sbh3_server *srv, uint8_t *out, size_t cap, uint8_t *meta, size_t meta_cap);
/* Returns ms until sbh3_server_on_timeout is due, or SBWIRE_ERR_DONE. */
int sbh3_server_timeout_ms(sbh3_server *srv);
/* Runs expired timers of every connection and frees connections that finished closing. */
int sbh3_server_on_timeout(sbh3_server *srv);
/* Writes the events of every connection that fit into buf (sbwire.h's poll rule); the bytes written or SBWIRE_ERR_DONE. */
int sbh3_server_poll(sbh3_server *srv, uint8_t *buf, size_t cap);
/* Sends a response on a request stream (header block + body, copied); SBWIRE_ERR_STREAM_BLOCKED: the send queue is full, retry after sbh3_server_io. */
int sbh3_server_respond(sbh3_server *srv, uint32_t conn_id, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len,
                        const uint8_t *body, size_t body_len);
/* Refuses a request with no answer: resets its stream with H3_EXCESSIVE_LOAD (its response found no room). */
int sbh3_server_refuse(sbh3_server *srv, uint32_t conn_id, int64_t stream_id);
/* Refuses new connections and sends GOAWAY on existing ones. */
int sbh3_server_shutdown(sbh3_server *srv);
/* Closes every connection with H3_NO_ERROR; then drain sbh3_server_send. */
int sbh3_server_close_all(sbh3_server *srv);
/* Returns the number of request streams not yet closed, over all connections. */
int sbh3_server_open_streams(sbh3_server *srv);
/* Returns the number of connections held (including closing ones). */
int sbh3_server_conn_count(sbh3_server *srv);
/* Copies up to n counters of connection conn_id (0: totals over every connection so far) into out. */
int sbh3_server_stats(sbh3_server *srv, uint32_t conn_id, uint64_t *out, size_t n);
/* Writes the peer of connection conn_id into meta (u32 conn_id, u16 port, IP text NUL, as sbh3_server_send). */
int sbh3_server_peer(sbh3_server *srv, uint32_t conn_id, uint8_t *meta, size_t meta_cap);
/* sbh3_conn_tls_state of connection conn_id. */
int sbh3_server_tls_state(sbh3_server *srv, uint32_t conn_id);
/* sbh3_conn_tls_info of connection conn_id. */
int sbh3_server_tls_info(sbh3_server *srv, uint32_t conn_id, int kind, uint8_t *buf, size_t cap);
/* sbh3_conn_handshake_bytes of connection conn_id. */
int64_t sbh3_server_handshake_bytes(sbh3_server *srv, uint32_t conn_id, int sent);
/* sbh3_conn_export on connection conn_id. */
int sbh3_server_export(sbh3_server *srv, uint32_t conn_id, const uint8_t *label, size_t label_len,
                       const uint8_t *context, size_t context_len, uint8_t *out, size_t out_len);

/*
 * Batched I/O on the caller's socket: the caller opens a nonblocking UDP
 * socket (for example through its runtime, whose event loop then reports
 * readiness), receives one datagram when it is readable and hands it to
 * sbh3_*_io, which feeds it, drains every further ready datagram (recvmmsg,
 * MSG_DONTWAIT), runs due timers and sends everything due in one sendmmsg,
 * where consecutive same-size datagrams to one peer share a message (UDP
 * segmentation offload; without kernel support, one datagram per message).
 * One wake-up costs one call whatever the number of datagrams. The shim
 * never closes the socket and does not block, except that a full send buffer
 * waits up to 15 ms per batch of 64 messages before the rest counts as lost.
 */

/* Wraps this process's UDP socket bound to exactly ip:port (found in /proc/self/fd); NULL when none or several. */
sbh3_udp *sbh3_udp_adopt(const char *ip, uint16_t port);
/* Frees the wrapper; the socket stays open (its owner closes it, after this). */
void sbh3_udp_free(sbh3_udp *u);
/* Connects the socket to ip:port, so an ICMP port unreachable surfaces as SBWIRE_ERR_REFUSED. */
int sbh3_udp_connect(sbh3_udp *u, const char *ip, uint16_t port);
/* Makes the socket waitable (opens the eventfd sbh3_udp_wake uses); idempotent. Call on the owner's
 * thread before the first sbh3_udp_wait: sockets that are never waited on keep no extra descriptor. */
int sbh3_udp_watch(sbh3_udp *u);
/* Waits up to timeout_ms (-1: no limit) for a datagram or an error on the socket, without reading it;
 * 1: ready, 0: timed out, SBWIRE_ERR_CLOSED: sbh3_udp_wake ended the wait. Safe to call on another thread
 * while the owner's thread runs the io calls; the owner frees the wrapper only after a pending wait returned. */
int sbh3_udp_wait(sbh3_udp *u, int timeout_ms);
/* Ends a pending sbh3_udp_wait (or the next one) with SBWIRE_ERR_CLOSED. */
int sbh3_udp_wake(sbh3_udp *u);
/* Records an ECONNREFUSED that the caller's own receive got; the next sbh3_conn_io reports SBWIRE_ERR_REFUSED. */
int sbh3_udp_refused(sbh3_udp *u);
/* Client: feeds data (len 0: none), receives every further ready datagram, runs due timers, sends all that is due; returns datagrams received. */
int sbh3_conn_io(sbh3_conn *conn, sbh3_udp *u, const uint8_t *data, size_t len);
/* Client: the receive half of sbh3_conn_io without data of the caller's: reads every ready datagram and sends
 * nothing, so that what it asks to send leaves with the caller's next requests; returns datagrams received. */
int sbh3_conn_drain(sbh3_conn *conn, sbh3_udp *u);
/* Client: the send half of sbh3_conn_io: runs due timers and sends all that is due, reading nothing (for a
 * connection that expects no datagram: nothing it sent awaits an answer); returns 0. */
int sbh3_conn_flush(sbh3_conn *conn, sbh3_udp *u);
/* Server: the same for every connection of the endpoint; data came from from_ip:from_port. */
int sbh3_server_io(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
                   uint16_t from_port);
/* Server: sbh3_server_io without the send, so that answers to what arrived leave with the next io in one batch. */
int sbh3_server_io_defer(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
                         uint16_t from_port);
/* Server: the send half of sbh3_server_io (due timers, then everything due in one batch), receiving nothing. */
int sbh3_server_flush(sbh3_server *srv, sbh3_udp *u);

/*
 * Module-owned I/O (transports/native/sbloop.h): the module opens the socket
 * itself and a thread of its own receives, runs the timers and sends; it
 * wakes JavaScript once per batch of events. While the loop runs, every
 * other call on the server or its socket is made under sbloop_lock, and
 * answers leave through sbloop_flush. Every datagram is read with its TOS
 * byte, so its ECN mark always reaches QUIC.
 */

/* Opens and binds a UDP socket of its own at ip:port (0: any free port); the wrapper closes it when freed. */
sbh3_udp *sbh3_udp_open(const char *ip, uint16_t port);
/* The socket's bound local port, or a negative sbwire_error. */
int sbh3_udp_port(sbh3_udp *u);
/* Datagrams received on the socket through the io calls and the loop so far (the caller's own receives not counted). */
int64_t sbh3_udp_received(sbh3_udp *u);
/* A loop that runs srv on u (which must outlive it) and calls wake when events wait; NULL on failure. Start it with sbloop_start. */
sbloop *sbh3_server_loop_new(sbh3_server *srv, sbh3_udp *u, void (*wake)(void));
/* A loop that runs the client connection conn on u (connected to its server; both must outlive it), calling wake
 * when events wait or datagrams came in while a request waits for stream credit; NULL on failure. */
sbloop *sbh3_conn_loop_new(sbh3_conn *conn, sbh3_udp *u, void (*wake)(void));

#ifdef __cplusplus
}
#endif

#endif /* SBH3_H */
