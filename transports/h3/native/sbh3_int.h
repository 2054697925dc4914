/*
 * sbh3 internals shared by its source files (not part of the API; see sbh3.h): the connection,
 * server and configuration structures and the helpers each role calls. Nothing here leaves the
 * shared object (hidden visibility).
 *
 * One file per role; calls between them run one way only (no file calls a file that calls it):
 *
 *   sbh3_udp.c     batched socket I/O (sbh3_*_io)   calls server, conn, common
 *   sbh3_server.c  the server endpoint              calls conn, tls, common
 *   sbh3_client.c  the client connection's API      calls conn, tls, common
 *   sbh3_conn.c    one QUIC + HTTP/3 connection     calls tls, common
 *   sbh3_tls.c     GnuTLS sessions, tickets, 0-RTT  calls common
 *   sbh3_common.c  clock, addresses, configuration  calls none of them
 *
 * Every file may call the HTTP/3 layer (transports/native/sbhttp3.c), which calls none of them.
 *
 * Where a lower file needs a higher one's work, the higher file supplies it: the server sets its
 * own handshake_completed callback (conn_handshake_completed, then a NEW_TOKEN).
 */
#ifndef SBH3_INT_H
#define SBH3_INT_H

#include "sbh3.h"
#include "../../native/sbhttp3.h"

#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <gnutls/gnutls.h>

#define HIDDEN __attribute__((visibility("hidden")))

#define SCID_LEN 18
#define MAX_CIDS 16
#define MAX_PKT 1452
#define MAX_UDP 65527
#define STATELESS_QUEUE 32
#define STATELESS_PER_SEC 64
#define MAX_CONNS 1024
/* Handshakes in progress at once past which a client without a token proves its address first (Retry). */
#define MAX_HANDSHAKES 32
#define ERRMSG_LEN 256
/* Internal reason passed to conn_fail for a close we started ourselves. */
#define LOCAL_CLOSE 1
/* Stream bytes a connection holding queued response bytes must get acknowledged per stall period. */
#define STALL_MIN_ACKED 16384
/* Lifetimes of Retry tokens and NEW_TOKEN tokens, and how often the key that seals them changes. */
#define RETRY_TOKEN_TTL (10 * NGTCP2_SECONDS)
#define REGULAR_TOKEN_TTL (3600 * NGTCP2_SECONDS)
#define TOKEN_KEY_TTL (3600 * NGTCP2_SECONDS)

/* The HTTP/3 layer's buffer, event, queue and stream (transports/native/sbhttp3.h). */
typedef sbhttp3_buf buf_t;
typedef sbhttp3_event event_t;
typedef sbhttp3_evq evq_t;
typedef sbhttp3_stream stream_t;

struct sbh3_config {
  int refs;
  int is_server;
  int verify;
  int has_cert;
  gnutls_certificate_credentials_t cred;
  uint32_t idle_ms;
  uint64_t max_body;
  uint64_t max_field_section;    /* largest header section received (RFC 9114 size) */
  uint32_t max_udp_payload;      /* explicit send size (0: start at 1200 and discover the path MTU) */
  uint32_t max_recv_udp_payload; /* advertised max_udp_payload_size; larger datagrams are dropped */
  uint32_t handshake_ms;         /* handshake timeout */
  uint64_t max_conn_queued;      /* response body bytes queued per connection */
  uint64_t max_total_queued;     /* response body bytes queued per server endpoint */
  uint32_t stall_ms;             /* a connection whose queued bytes see no ACK this long is closed */
  int retry;                     /* server: validate addresses with Retry, hand out NEW_TOKEN */
  int no_ecn;                    /* neither mark datagrams nor report the marks received */
  buf_t token;                   /* client: a NEW_TOKEN to present in the first Initial */
  uint32_t versions[4];          /* QUIC versions by preference (default v1 alone) */
  size_t nversions;
  int cc;                        /* enum sbh3_cc */
  uint32_t ticket_lifetime;      /* server: seconds a session ticket is valid (0: no tickets) */
  gnutls_datum_t ticket_key;     /* server: master key of the rotating ticket keys */
  int early_data;                /* server: accept 0-RTT; client: attempt it when resuming */
  gnutls_anti_replay_t anti_replay; /* server, with early_data: ClientHello replay check */
  struct replay_db *replay;      /* its bounded store of recent ClientHellos */
};

struct sbh3_conn {
  sbh3_config *cfg;
  sbh3_server *srv;
  struct sbh3_conn *next;
  uint32_t id;
  ngtcp2_conn *qc;
  sbhttp3 h3;        /* the HTTP/3 layer (its session exists once keys allow it) */
  gnutls_session_t tls;
  ngtcp2_crypto_conn_ref ref;
  ngtcp2_path_storage ps;
  ngtcp2_connection_close_error ccerr;
  /* Server: request streams closed since the last MAX_STREAMS credit (see credit_request_stream). */
  size_t uncredited_streams;
  /* Client: a request found no stream credit (sbh3_conn_request said STREAM_BLOCKED): its loop wakes the
   * caller when datagrams come in, which may carry MAX_STREAMS. */
  int want_credit;
  evq_t own_q;
  evq_t *q;
  int closed;
  int close_pending;
  uint8_t close_pkt[MAX_PKT];
  size_t close_len;
  uint64_t close_deadline;
  size_t burst;      /* datagrams written in this pass */
  size_t burst_max;  /* this pass's budget, set by its first datagram */
  uint64_t paced_at; /* when the last pass stopped at its budget (0: it ran out of data or window) */
  uint64_t pace_due; /* when that pass's pacing allowed the next one */
  uint64_t pace_waived; /* pacing pauses this pass wrote through, ns (each under PACE_WAIVE_NS in all) */
  int drain_expired; /* this pass already ran the expiry handler once it had written everything */
  ngtcp2_cid cids[MAX_CIDS];
  size_t ncids;
  uint64_t st[SBH3_STAT_COUNT]; /* counters of enum sbh3_stat (the path fields are read live) */
  uint64_t queued;              /* response body bytes held for this connection's open streams */
  uint64_t progress_at;         /* start of the current stall period (see conn_expire) */
  uint64_t acked;               /* stream bytes acknowledged in the current stall period */
  int key_derivations;          /* update_key calls: the first prepares the keys, each later one follows an update */
  int own_update;               /* we started the last key update (already counted) */
  buf_t token;                  /* client: the last NEW_TOKEN received */
  char errmsg[ERRMSG_LEN];
  char *server_name; /* kept for the session's lifetime: GnuTLS may refer to it */
  int early_attempt; /* client: 0-RTT was attempted */
  buf_t ticket;      /* client: newest ticket with the server's transport parameters */
  uint64_t hs_sent, hs_recv; /* CRYPTO bytes each way until the handshake completed (tickets excluded) */
  int in_handshake;          /* server: counted in srv->handshaking (see conn_handshake_begin) */
};

typedef struct {
  uint8_t data[MAX_PKT];
  size_t len;
  ngtcp2_sockaddr_union addr;
} stateless_pkt_t;

struct sbh3_server {
  sbh3_config *cfg;
  ngtcp2_sockaddr_union local;
  ngtcp2_socklen local_len;
  sbh3_conn *conns;
  sbh3_conn *cursor;
  size_t nconns;
  uint32_t next_id;
  evq_t q;
  stateless_pkt_t sq[STATELESS_QUEUE];
  size_t sq_head, sq_count;
  uint64_t sr_window;
  uint32_t sr_count;
  uint8_t secret[32];
  uint8_t token_keys[2][32]; /* Retry and NEW_TOKEN keys: current, previous */
  uint64_t token_key_at;     /* when the current key was made */
  int shutting_down;
  uint64_t st[SBH3_STAT_COUNT]; /* counters over every connection so far */
  uint64_t queued;              /* response body bytes held over all connections */
  size_t handshaking;           /* connections in their handshake: begun, neither completed nor closed nor freed */
};

/* ---- common.c ---- */

/* Monotonic clock in ns. */
HIDDEN uint64_t now_ns(void);
/* Parses IP text and a port into *su; 0 or -1. */
HIDDEN int parse_addr(ngtcp2_sockaddr_union *su, ngtcp2_socklen *len, const char *ip, uint16_t port);
/* Fills dest with random bytes. */
HIDDEN void rand_bytes(uint8_t *dest, size_t len);
/* Drops one reference to cfg, freeing it with the last. */
HIDDEN void config_unref(sbh3_config *cfg);
/* ngtcp2's controller for enum sbh3_cc (HOST resolved from the kernel's TCP setting). */
HIDDEN ngtcp2_cc_algo cc_algo(int cc);
/* Milliseconds from now until deadline (ns), or SBWIRE_ERR_DONE for none. */
HIDDEN int deadline_to_ms(uint64_t deadline);

/* ---- conn.c ---- */

/* Records why c closed (the first reason wins). */
HIDDEN void set_err(sbh3_conn *c, const char *fmt, const char *detail);
/* Counts a datagram of n bytes in the SENT or RECV counters of c and its server. */
HIDDEN void conn_count(sbh3_conn *c, int base, size_t n);
/* Remembers a connection id that routes to c (server). */
HIDDEN void cid_add(sbh3_conn *c, const ngtcp2_cid *cid);
/* sbwire_error for an ngtcp2 error. */
HIDDEN int map_liberr(int rv);
/* Marks c closed for reason rv, prepares CONNECTION_CLOSE when one is due, posts CLOSED. */
HIDDEN void conn_fail(sbh3_conn *c, int rv);
/* Closes c with an H3 error code (an application close once established); why is kept as its error text. */
HIDDEN void close_locally(sbh3_conn *c, uint64_t app_code, const char *why);
/* ngtcp2 callbacks for a client or a server connection. */
HIDDEN void fill_callbacks(ngtcp2_callbacks *cb, int is_server);
/* Counts server connection c in its server's handshakes until it completes, closes or is freed (whichever is first). */
HIDDEN void conn_handshake_begin(sbh3_conn *c);
/* ngtcp2 handshake_completed: TLS follow-ups (a server's ticket, a client's refused 0-RTT), then CONNECTED. */
HIDDEN int conn_handshake_completed(ngtcp2_conn *qc, void *user_data);
/* Creates the HTTP/3 session and its control and QPACK streams; 0 or -1. */
HIDDEN int setup_http(sbh3_conn *c);
/* ngtcp2 settings and local transport parameters from cfg. */
HIDDEN void fill_settings(ngtcp2_settings *s, ngtcp2_transport_params *p, const sbh3_config *cfg);
/* Allocates a connection holding a reference to cfg. */
HIDDEN sbh3_conn *conn_alloc(sbh3_config *cfg);
/* Frees c, its streams and its sessions. */
HIDDEN void conn_destroy(sbh3_conn *c);
/* Feeds one received datagram to c; returns ngtcp2's result. */
HIDDEN int conn_read(sbh3_conn *c, const ngtcp2_path *path, const uint8_t *data, size_t len, uint8_t ecn, uint64_t now);
/* Writes c's next datagram into out and its ECN codepoint into *ecn (may be NULL); its length, SBWIRE_ERR_DONE or an error. */
HIDDEN int conn_write(sbh3_conn *c, uint8_t *out, size_t cap, uint64_t now, uint8_t *ecn);
/* When c's next timer is due (ns), UINT64_MAX for none. */
HIDDEN uint64_t conn_deadline(sbh3_conn *c);
/* Runs c's expired timers. */
HIDDEN void conn_expire(sbh3_conn *c, uint64_t now);
/* Copies counters (with c's live path fields when c is given) into out; how many. */
HIDDEN int stats_copy(const uint64_t *st, sbh3_conn *c, uint64_t queued, uint64_t *out, size_t n);

/* ---- client.c ---- */

/* Test drivers only (never set in the library): edits a new client's transport parameters, to send invalid ones. */
HIDDEN extern void (*client_params_hook)(ngtcp2_transport_params *params);

/* ---- tls.c ---- */

/* Creates c's TLS session (server_name: client only); 0 or -1. */
HIDDEN int tls_init(sbh3_conn *c, const char *server_name);
/* Client, before the first flight: offers a ticket from sbh3_conn_ticket and reads the server's transport parameters kept in it into *p; 0 or an error. */
HIDDEN int tls_resume(sbh3_conn *c, const uint8_t *ticket, size_t len, ngtcp2_transport_params *p);
/* ngtcp2: received CRYPTO data, counted until the handshake completes, then handed to GnuTLS. */
HIDDEN int tls_recv_crypto_data(ngtcp2_conn *qc, ngtcp2_crypto_level level, uint64_t offset, const uint8_t *data,
                                size_t len, void *user_data);
/* enum sbwire_tls_state bits of c. */
HIDDEN int tls_state(sbh3_conn *c);
/* Writes one enum sbwire_tls_info text of c into buf; its length. */
HIDDEN int tls_info(sbh3_conn *c, int kind, uint8_t *buf, size_t cap);
/* Exporter of c; out_len or an error. */
HIDDEN int tls_export(sbh3_conn *c, const uint8_t *label, size_t label_len, const uint8_t *context, size_t context_len,
                      uint8_t *out, size_t out_len);

/* ---- server.c ---- */

/* The server connection with this id, or NULL. */
HIDDEN sbh3_conn *server_find_id(sbh3_server *srv, uint32_t id);

/* Feeds one datagram from a socket address to the server; see sbh3_server_recv. */
HIDDEN int server_recv_from(sbh3_server *srv, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *from,
                            ngtcp2_socklen fromlen, uint8_t ecn);
/* Writes the server's next datagram into out and its destination into *to; length or DONE. */
HIDDEN int server_write(sbh3_server *srv, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                        uint32_t *conn_id, uint8_t *ecn);

#endif /* SBH3_INT_H */
