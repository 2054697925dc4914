/*
 * sbl_load: the protocol-neutral part of the native load engines (the h2
 * engine in load/native/sbl_h2.c and the h3 engine in
 * load/native/sbl_h3.c share it).
 *
 * A plan goes in as one binary record; the engine opens its own sockets,
 * runs one epoll loop per worker thread, issues requests closed-loop (every
 * connection keeps `streams` requests in flight) or open-loop (at a rate,
 * each request timed from its intended send time), and keeps per-request
 * latency in histograms, status counts, errors by kind, bytes and
 * per-connection set-up times. The caller polls progress and reads results;
 * nothing calls back into it.
 *
 * Plan record (little-endian like every record in transports/native/sbwire.h;
 * offsets in bytes):
 *   0 u32 magic SBL_PLAN_MAGIC   4 u32 flags (SBL_PLAN_*)    8 u32 conns
 *  12 u32 streams per conn      16 u32 threads              20 u32 port
 *  24 u64 requests (0: by time) 32 u64 duration ns          40 u64 warm-up ns
 *  48 u64 request timeout ns    56 f64 rate (req/s, 0: closed loop)
 *  64 u64 connect timeout ns    72 u32 max response body    76 u32 requests per connection (0: no cap)
 *  80 then five blobs, each u32 length + bytes: host (IP text), server name,
 *     request header block (sbwire.h), request body, CA PEM; then, for mutual
 *     TLS, two more: the client's certificate chain PEM and its private key PEM
 *     (both or neither; a plan that ends after the CA has no client certificate).
 * Limits the engine checks (it refuses the plan otherwise): conns and streams
 * 1..100000 with conns x streams <= SBL_MAX_SLOTS, threads <= SBL_MAX_THREADS,
 * every time <= SBL_MAX_TIME_NS, a finite rate whose schedule (one interval, and
 * a request count's whole span) stays within SBL_MAX_TIME_NS.
 *
 * Result record (sbl_engine_result): a 128-byte head
 *   0 u32 magic SBL_RESULT_MAGIC  4 u32 flags (SBL_RES_*)  8 u32 status entries  12 u32 conns
 *  16 u32 error kinds (SBL_ERRK_COUNT)  20 u32 reserved
 *  24 u64 sent  32 u64 completed  40 u64 errors  48 u64 bytes in  56 u64 bytes out
 *  64 u64 body bytes in  72 u64 measured ns (measure start to last completion)
 *  80 u64 warm-up requests completed  88 u64 conns up  96 u64 conns failed
 * 104 u64 first-send spread ns (reserved)
 * 112 u64 the smallest limit on concurrent request streams a peer set over the connections
 *     (h2 SETTINGS_MAX_CONCURRENT_STREAMS, h3 initial_max_streams_bidi), 0 when none was seen
 * 120..127 reserved
 * then u64 errors[error kinds], then per status (u32 code, u32 0, u64 count),
 * then per connection (i64 connect ns, i64 handshake ns, i64 first byte ns,
 * u64 requests, i32 error kind or 0, u32 0): times from the connection's start, -1 when never reached.
 *
 * Progress record (sbl_engine_progress), 64 bytes: u64 sent, completed,
 * errors, elapsed ns, in flight, phase (SBL_PHASE_*), conns up, conns failed.
 */
#ifndef SBL_LOAD_H
#define SBL_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "sbl_hist.h"
#include "../../transports/native/sbwire.h"

#define SBL_PLAN_MAGIC 0x504c4253u   /* "SBLP" */
#define SBL_RESULT_MAGIC 0x524c4253u /* "SBLR" */
#define SBL_PLAN_HEAD 80
#define SBL_RESULT_HEAD 128
#define SBL_PROGRESS_LEN 64
#define SBL_CONN_RECORD 40
#define SBL_MAX_SLOTS (1u << 22)       /* request slots (conns x streams) a plan may ask for */
#define SBL_MAX_THREADS 64
#define SBL_MAX_TIME_NS (1ull << 56)   /* about 834 days: sums of times from now cannot wrap */

/* Plan flags. */
#define SBL_PLAN_TLS 1u      /* h2 over TLS (the h3 engine always uses TLS) */
#define SBL_PLAN_INSECURE 2u /* do not verify the server */

/* Result flags. */
#define SBL_RES_PARTIAL 1u /* the run did not complete its plan (failed connections, stop, or an open-loop backlog left unsent a request timeout after the schedule ended) */
#define SBL_RES_STOPPED 2u /* sbl_engine_stop ended it */

/*
 * Errors: the modules' one enum sbwire_error (transports/native/sbwire.h). A call in the wrong
 * state (started twice, results asked for before the run ended) is SBWIRE_ERR_INVALID.
 */

/* Kinds of failed requests and connections (index into the errors array). */
enum sbl_errk {
  SBL_ERRK_CONNECT = 0, /* connection refused, unreachable or timed out */
  SBL_ERRK_TLS = 1,     /* TLS / QUIC handshake failed */
  SBL_ERRK_PROTO = 2,   /* the peer broke the protocol */
  SBL_ERRK_RESET = 3,   /* the stream was reset */
  SBL_ERRK_CLOSED = 4,  /* the connection closed with the request in flight */
  SBL_ERRK_TIMEOUT = 5, /* no complete response within the request timeout */
  SBL_ERRK_OTHER = 6,
  SBL_ERRK_COUNT = 7,
};

enum sbl_phase {
  SBL_PHASE_IDLE = 0,
  SBL_PHASE_WARMUP = 1,
  SBL_PHASE_MEASURE = 2,
  SBL_PHASE_DRAIN = 3,
  SBL_PHASE_DONE = 4,
};

/* Which latency histogram to read. */
enum sbl_hist_kind {
  SBL_HIST_CORRECTED = 0,   /* from each request's intended send time */
  SBL_HIST_UNCORRECTED = 1, /* from each request's actual send time */
};

typedef struct sbl_engine sbl_engine;
typedef struct sbl_worker sbl_worker;
typedef struct sbl_conn sbl_conn;
typedef struct sbl_req sbl_req;

/* The decoded plan; blobs point into the engine's own copy. */
typedef struct sbl_plan {
  uint32_t flags, conns, streams, threads, port, max_body, per_conn;
  uint64_t requests, duration_ns, warmup_ns, timeout_ns, connect_timeout_ns;
  double rate;
  const char *host, *sni;
  const uint8_t *hdrs, *body, *ca, *cert, *key;
  uint32_t hdrs_len, body_len, ca_len, cert_len, key_len;
} sbl_plan;

/* One request in flight (a slot of its connection). */
struct sbl_req {
  uint64_t intended, sent;
  uint64_t rx; /* response body bytes so far (protocols that stream it) */
  int64_t stream_id;
  uint32_t body_off;
  int status;
  uint8_t measured, busy;
};

/* What the engine keeps per connection; a protocol's connection embeds it first. */
struct sbl_conn {
  sbl_worker *w;
  int fd, idx;
  uint8_t up, dead, registered, watch_out;
  uint8_t dirty; /* output waits: the end of the next dispatch flushes it (with the requests it issues) */
  int err_kind;
  uint64_t t_start, t_connect, t_handshake, t_first_byte, requests, issued;
  uint64_t timer_ns; /* protocol timer deadline, 0 = none */
  int inflight, blocked;
  uint32_t peer_limit; /* the peer's limit on concurrent request streams, 0 = not known yet */
  sbl_req *slots;
};

/* A protocol: h2 (TCP, optional TLS) or h3 (QUIC). Every function runs on the worker's thread. */
typedef struct sbl_proto {
  size_t conn_size;
  /* Creates per-worker state (for example a TLS config); NULL plus an error text on failure. */
  void *(*worker_new)(sbl_worker *w, const sbl_plan *p, char *err, size_t errcap);
  void (*worker_free)(void *state);
  /* Opens the socket and starts connecting; 0 or a negative sbl_errk-style failure (the engine marks it failed). */
  int (*conn_open)(sbl_conn *c);
  /* Handles readiness of c->fd. */
  void (*conn_io)(sbl_conn *c, uint32_t events);
  /* Runs the protocol timer (c->timer_ns passed). */
  void (*conn_timer)(sbl_conn *c);
  /* Submits one request; 0, or 1 when the connection cannot take it now (try later). */
  int (*conn_submit)(sbl_conn *c, sbl_req *r);
  /* Sends whatever the submits produced. */
  void (*conn_flush)(sbl_conn *c);
  /* Abandons a request that timed out. */
  void (*conn_cancel)(sbl_conn *c, sbl_req *r);
  /* Frees the connection's protocol state and closes its socket. */
  void (*conn_free)(sbl_conn *c);
  /* The peer's limit on concurrent request streams, 0 when not known (yet); NULL = never known. */
  uint32_t (*conn_stream_limit)(sbl_conn *c);
} sbl_proto;

/* ---- the engine's API (each module wraps these as <prefix>_load_*) ---- */

/* Decodes the plan and creates an idle engine; NULL on a malformed plan or no memory. */
sbl_engine *sbl_engine_new(const sbl_proto *proto, const uint8_t *plan, uint32_t len);
/* Starts the worker threads; 0 or SBWIRE_ERR_INVALID / SBWIRE_ERR_NOMEM. */
int sbl_engine_start(sbl_engine *e);
/* Writes the progress record (SBL_PROGRESS_LEN bytes); returns its length. */
int sbl_engine_progress(sbl_engine *e, uint8_t *buf, uint32_t cap);
/* Asks the workers to stop issuing and end (the result is marked stopped and partial). */
int sbl_engine_stop(sbl_engine *e);
/* Waits for the workers (after progress says DONE this returns at once); 0 or SBWIRE_ERR_INVALID. */
int sbl_engine_join(sbl_engine *e);
/* Writes the result record; returns its length (with buf NULL: the size needed) or SBWIRE_ERR_BUFFER_TOO_SHORT. */
int sbl_engine_result(sbl_engine *e, uint8_t *buf, uint32_t cap);
/* Writes the (value, count) pairs of one latency histogram (enum sbl_hist_kind); returns bytes (buf NULL: size needed). */
int sbl_engine_histogram(sbl_engine *e, int kind, uint8_t *buf, uint32_t cap);
/* Writes the first failure's text (empty when none); returns its length. */
int sbl_engine_error(sbl_engine *e, uint8_t *buf, uint32_t cap);
/* Stops and joins the workers if needed, then frees everything. */
void sbl_engine_free(sbl_engine *e);

/*
 * Defines a module's exported engine API over its protocol table: prefix##_load_new (an idle
 * engine from a plan record; NULL on a bad plan), _start, _progress (the 64-byte record), _stop
 * (end early), _join, _result (buf NULL: size needed), _histogram ((value, count) pairs), _error
 * (the first failure's text) and _free (stops, joins, frees). transports/native/load_engine_symbols.ts
 * lists them for Deno.dlopen.
 */
#define SBL_DEFINE_LOAD_API(prefix, proto)                                                                 \
  sbl_engine *prefix##_load_new(const uint8_t *plan, uint32_t len) { return sbl_engine_new(&(proto), plan, len); } \
  int prefix##_load_start(sbl_engine *e) { return sbl_engine_start(e); }                                  \
  int prefix##_load_progress(sbl_engine *e, uint8_t *buf, uint32_t cap) { return sbl_engine_progress(e, buf, cap); } \
  int prefix##_load_stop(sbl_engine *e) { return sbl_engine_stop(e); }                                    \
  int prefix##_load_join(sbl_engine *e) { return sbl_engine_join(e); }                                    \
  int prefix##_load_result(sbl_engine *e, uint8_t *buf, uint32_t cap) { return sbl_engine_result(e, buf, cap); } \
  int prefix##_load_histogram(sbl_engine *e, int kind, uint8_t *buf, uint32_t cap) {                     \
    return sbl_engine_histogram(e, kind, buf, cap);                                                       \
  }                                                                                                       \
  int prefix##_load_error(sbl_engine *e, uint8_t *buf, uint32_t cap) { return sbl_engine_error(e, buf, cap); } \
  void prefix##_load_free(sbl_engine *e) { sbl_engine_free(e); }

/* ---- what protocols call back into the engine ---- */

/* Returns the plan. */
const sbl_plan *sbl_worker_plan(const sbl_worker *w);
/* Returns the protocol state made by worker_new. */
void *sbl_worker_state(const sbl_worker *w);
/* Monotonic clock in ns. */
uint64_t sbl_now(void);
/* Sets which readiness c->fd is watched for (EPOLLIN always, EPOLLOUT when want_out). */
void sbl_conn_watch(sbl_conn *c, int want_out);
/* The transport connected (TCP) / finished its handshake: requests may now be submitted. */
void sbl_conn_connected(sbl_conn *c);
void sbl_conn_handshaken(sbl_conn *c);
/* Counts bytes moved on the wire. */
void sbl_conn_bytes(sbl_conn *c, uint64_t in, uint64_t out);
/* A response arrived completely. */
void sbl_req_done(sbl_conn *c, sbl_req *r, int status, uint64_t body_bytes);
/* The first byte of a response arrived (sets the connection's first-byte time once). */
void sbl_conn_first_byte(sbl_conn *c);
/* A request failed with an sbl_errk. */
void sbl_req_failed(sbl_conn *c, sbl_req *r, int kind);
/* The connection failed or closed: every request in flight fails with kind; text goes to the error log. */
void sbl_conn_failed(sbl_conn *c, int kind, const char *text);
/* Finds the request in flight with this stream id (h3); NULL when none. */
sbl_req *sbl_conn_find(sbl_conn *c, int64_t stream_id);

#endif /* SBL_LOAD_H */
