/*
 * sbh3: HTTP/3 over QUIC for sbilab, on ngtcp2 0.12 + nghttp3 0.8 + GnuTLS.
 * See sbh3.h for the contract. Written for this project; the shape of the
 * ngtcp2/nghttp3 glue follows the libraries' documented 0.12/0.8 API.
 */
#define _GNU_SOURCE
#include "sbh3.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "../../native/sb_tls.h"

#define SCID_LEN 18
#define MAX_CIDS 16
#define MAX_PKT 1452
#define MAX_UDP 65527
/* Datagram size used towards a loopback peer when none is configured (loopback MTU is 64 KiB). */
#define LOOPBACK_UDP 16384
#define STATELESS_QUEUE 32
#define STATELESS_PER_SEC 64
#define MAX_CONNS 1024
#define ERRMSG_LEN 256
/* Internal reason passed to conn_fail for a close we started ourselves. */
#define LOCAL_CLOSE 1

/* One priority string for h3 and h2 over TLS (transports/native/sb_tls.h). */
static const char PRIORITY[] = SB_TLS_PRIORITY;

/* ---- small helpers ---------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
} buf_t;

static int buf_reserve(buf_t *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int buf_append(buf_t *b, const void *data, size_t n) {
  if (n == 0) return 0;
  if (buf_reserve(b, n) != 0) return -1;
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return 0;
}

static void buf_free(buf_t *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_addr(ngtcp2_sockaddr_union *su, ngtcp2_socklen *len, const char *ip, uint16_t port) {
  if (!ip) return -1;
  memset(su, 0, sizeof(*su));
  if (strchr(ip, ':')) {
    su->in6.sin6_family = AF_INET6;
    su->in6.sin6_port = htons(port);
    if (inet_pton(AF_INET6, ip, &su->in6.sin6_addr) != 1) return -1;
    *len = sizeof(su->in6);
  } else {
    su->in.sin_family = AF_INET;
    su->in.sin_port = htons(port);
    if (inet_pton(AF_INET, ip, &su->in.sin_addr) != 1) return -1;
    *len = sizeof(su->in);
  }
  return 0;
}

/* Writes u32 conn_id, u16 port, IP text + NUL into meta. */
static int write_meta(uint8_t *meta, size_t cap, uint32_t conn_id, const ngtcp2_sockaddr *sa) {
  char ip[INET6_ADDRSTRLEN];
  uint16_t port;
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    port = ntohs(in6->sin6_port);
  } else {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    port = ntohs(in->sin_port);
  }
  size_t iplen = strlen(ip);
  if (cap < 6 + iplen + 1) return -1;
  memcpy(meta, &conn_id, 4);
  memcpy(meta + 4, &port, 2);
  memcpy(meta + 6, ip, iplen + 1);
  return 0;
}

static void rand_bytes(uint8_t *dest, size_t len) {
  if (gnutls_rnd(GNUTLS_RND_NONCE, dest, len) != 0) {
    /* gnutls_rnd does not fail in practice; keep the output defined anyway. */
    for (size_t i = 0; i < len; i++) dest[i] = (uint8_t)random();
  }
}

/* ---- events ----------------------------------------------------------- */

typedef struct event {
  struct event *next;
  uint32_t type, conn_id;
  int64_t stream_id, code;
  buf_t hdr, body;
} event_t;

typedef struct {
  event_t *head, *tail;
} evq_t;

static event_t *evq_push(evq_t *q, uint32_t type, uint32_t conn_id, int64_t stream_id, int64_t code) {
  event_t *e = calloc(1, sizeof(*e));
  if (!e) return NULL;
  e->type = type;
  e->conn_id = conn_id;
  e->stream_id = stream_id;
  e->code = code;
  if (q->tail) q->tail->next = e;
  else q->head = e;
  q->tail = e;
  return e;
}

static void event_free(event_t *e) {
  buf_free(&e->hdr);
  buf_free(&e->body);
  free(e);
}

static void evq_clear(evq_t *q) {
  event_t *e = q->head;
  while (e) {
    event_t *n = e->next;
    event_free(e);
    e = n;
  }
  q->head = q->tail = NULL;
}

static int evq_poll(evq_t *q, uint8_t *out, size_t cap) {
  event_t *e = q->head;
  if (!e) return SBH3_ERR_DONE;
  uint64_t need = SBH3_EVENT_HEADER_LEN + e->hdr.len + e->body.len;
  if (need > cap || need > INT32_MAX) {
    if (cap >= 8) memcpy(out, &need, 8);
    return SBH3_ERR_BUFFER_TOO_SHORT;
  }
  uint32_t hl = (uint32_t)e->hdr.len, bl = (uint32_t)e->body.len;
  memcpy(out, &e->type, 4);
  memcpy(out + 4, &e->conn_id, 4);
  memcpy(out + 8, &e->stream_id, 8);
  memcpy(out + 16, &e->code, 8);
  memcpy(out + 24, &hl, 4);
  memcpy(out + 28, &bl, 4);
  if (hl) memcpy(out + SBH3_EVENT_HEADER_LEN, e->hdr.p, hl);
  if (bl) memcpy(out + SBH3_EVENT_HEADER_LEN + hl, e->body.p, bl);
  q->head = e->next;
  if (!q->head) q->tail = NULL;
  event_free(e);
  return (int)need;
}

/* ---- config ----------------------------------------------------------- */

struct sbh3_config {
  int refs;
  int is_server;
  int verify;
  int has_cert;
  gnutls_certificate_credentials_t cred;
  uint32_t idle_ms;
  uint64_t max_body;
  uint32_t max_udp_payload;
  int cc; /* enum sbh3_cc */
};

sbh3_config *sbh3_config_new(int is_server) {
  sbh3_config *cfg = calloc(1, sizeof(*cfg));
  if (!cfg) return NULL;
  if (gnutls_certificate_allocate_credentials(&cfg->cred) != 0) {
    free(cfg);
    return NULL;
  }
  cfg->refs = 1;
  cfg->is_server = is_server ? 1 : 0;
  cfg->verify = is_server ? SBH3_VERIFY_NONE : SBH3_VERIFY_PEER;
  cfg->idle_ms = 30000;
  cfg->max_body = 64ull << 20;
  cfg->max_udp_payload = 0;
  return cfg;
}

static void config_unref(sbh3_config *cfg) {
  if (!cfg || --cfg->refs > 0) return;
  gnutls_certificate_free_credentials(cfg->cred);
  free(cfg);
}

void sbh3_config_free(sbh3_config *cfg) { config_unref(cfg); }

int sbh3_config_set_cert(sbh3_config *cfg, const uint8_t *cert, size_t cert_len, const uint8_t *key, size_t key_len) {
  if (!cfg || !cert || !key || cert_len > UINT32_MAX || key_len > UINT32_MAX) return SBH3_ERR_INVALID;
  gnutls_datum_t c = {(unsigned char *)cert, (unsigned int)cert_len};
  gnutls_datum_t k = {(unsigned char *)key, (unsigned int)key_len};
  if (gnutls_certificate_set_x509_key_mem(cfg->cred, &c, &k, GNUTLS_X509_FMT_PEM) < 0) return SBH3_ERR_TLS;
  cfg->has_cert = 1;
  return 0;
}

int sbh3_config_add_ca(sbh3_config *cfg, const uint8_t *pem, size_t len) {
  if (!cfg || !pem || len > UINT32_MAX) return SBH3_ERR_INVALID;
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned int)len};
  int n = gnutls_certificate_set_x509_trust_mem(cfg->cred, &d, GNUTLS_X509_FMT_PEM);
  if (n <= 0) return SBH3_ERR_TLS;
  return n;
}

int sbh3_config_set_verify(sbh3_config *cfg, int mode) {
  if (!cfg || (mode != SBH3_VERIFY_NONE && mode != SBH3_VERIFY_PEER)) return SBH3_ERR_INVALID;
  cfg->verify = mode;
  return 0;
}

int sbh3_config_set_idle_timeout(sbh3_config *cfg, uint32_t ms) {
  if (!cfg || ms == 0) return SBH3_ERR_INVALID;
  cfg->idle_ms = ms;
  return 0;
}

int sbh3_config_set_max_udp_payload(sbh3_config *cfg, uint32_t bytes) {
  if (!cfg || bytes < 1200 || bytes > MAX_UDP) return SBH3_ERR_INVALID;
  cfg->max_udp_payload = bytes;
  return 0;
}

int sbh3_config_set_cc(sbh3_config *cfg, int algo) {
  if (!cfg || algo < SBH3_CC_HOST || algo > SBH3_CC_BBR2) return SBH3_ERR_INVALID;
  cfg->cc = algo;
  return 0;
}

/*
 * The host's TCP congestion controller, so that h3 and h2 cross a lossy link under the same
 * kind of controller: loss-based CUBIC collapses to a few Mbit/s at 2 % random loss and 50 ms,
 * where the kernel's BBR (this lab's hosts) keeps its rate. Unknown or unreadable: CUBIC.
 */
static int host_cc(void) {
  char name[32] = {0};
  FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "r");
  if (f) {
    if (!fgets(name, sizeof(name), f)) name[0] = 0;
    fclose(f);
  }
  name[strcspn(name, "\n")] = 0;
  if (strcmp(name, "bbr") == 0) return SBH3_CC_BBR;
  if (strcmp(name, "reno") == 0) return SBH3_CC_RENO;
  return SBH3_CC_CUBIC;
}

static ngtcp2_cc_algo cc_algo(int cc) {
  switch (cc == SBH3_CC_HOST ? host_cc() : cc) {
  case SBH3_CC_RENO: return NGTCP2_CC_ALGO_RENO;
  case SBH3_CC_BBR: return NGTCP2_CC_ALGO_BBR;
  case SBH3_CC_BBR2: return NGTCP2_CC_ALGO_BBR2;
  default: return NGTCP2_CC_ALGO_CUBIC;
  }
}

int sbh3_config_set_max_body(sbh3_config *cfg, uint64_t bytes) {
  if (!cfg || bytes == 0) return SBH3_ERR_INVALID;
  cfg->max_body = bytes;
  return 0;
}

/* ---- connections ------------------------------------------------------ */

typedef struct stream {
  struct stream *prev, *next;
  int64_t id;
  buf_t hdr, body;   /* received message, moved into an event when complete */
  uint8_t *out;      /* body being sent, kept until the stream closes */
  size_t out_len;
  int done;          /* message event posted */
  int aborted;       /* body too large: the rest is dropped */
} stream_t;

struct sbh3_conn {
  sbh3_config *cfg;
  sbh3_server *srv;
  struct sbh3_conn *next;
  uint32_t id;
  ngtcp2_conn *qc;
  nghttp3_conn *hc;
  gnutls_session_t tls;
  ngtcp2_crypto_conn_ref ref;
  ngtcp2_path_storage ps;
  ngtcp2_connection_close_error ccerr;
  evq_t own_q;
  evq_t *q;
  stream_t *streams;
  int nstreams;
  int closed;
  int goaway;
  int close_pending;
  uint8_t close_pkt[MAX_PKT];
  size_t close_len;
  uint64_t close_deadline;
  size_t burst;      /* datagrams written in this pass */
  size_t burst_max;  /* this pass's budget, set by its first datagram */
  uint64_t paced_at; /* when the last pass stopped at its budget (0: it ran out of data or window) */
  uint64_t pace_due; /* when that pass's pacing allowed the next one */
  ngtcp2_cid cids[MAX_CIDS];
  size_t ncids;
  char errmsg[ERRMSG_LEN];
  char *server_name; /* kept for the session's lifetime: GnuTLS may refer to it */
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
  int shutting_down;
};

static void set_err(sbh3_conn *c, const char *fmt, const char *detail) {
  if (c->errmsg[0]) return;
  snprintf(c->errmsg, sizeof(c->errmsg), fmt, detail ? detail : "");
}

static stream_t *stream_find(sbh3_conn *c, int64_t id) {
  for (stream_t *s = c->streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

static stream_t *stream_new(sbh3_conn *c, int64_t id) {
  stream_t *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->id = id;
  s->next = c->streams;
  if (c->streams) c->streams->prev = s;
  c->streams = s;
  c->nstreams++;
  return s;
}

static void stream_free(sbh3_conn *c, stream_t *s) {
  if (s->prev) s->prev->next = s->next;
  else c->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  c->nstreams--;
  buf_free(&s->hdr);
  buf_free(&s->body);
  free(s->out);
  free(s);
}

static void cid_add(sbh3_conn *c, const ngtcp2_cid *cid) {
  if (c->ncids < MAX_CIDS) c->cids[c->ncids++] = *cid;
}

static void cid_remove(sbh3_conn *c, const ngtcp2_cid *cid) {
  for (size_t i = 0; i < c->ncids; i++) {
    if (ngtcp2_cid_eq(&c->cids[i], cid)) {
      c->cids[i] = c->cids[--c->ncids];
      return;
    }
  }
}

static int map_liberr(int rv) {
  switch (rv) {
  case NGTCP2_ERR_CRYPTO:
    return SBH3_ERR_TLS;
  case NGTCP2_ERR_IDLE_CLOSE:
    return SBH3_ERR_IDLE;
  case NGTCP2_ERR_DRAINING:
  case NGTCP2_ERR_CLOSING:
    return SBH3_ERR_CLOSED;
  case NGTCP2_ERR_NOMEM:
    return SBH3_ERR_NOMEM;
  default:
    return SBH3_ERR_PROTO;
  }
}

/* Describes why the peer closed the connection. */
static void describe_peer_close(sbh3_conn *c) {
  ngtcp2_connection_close_error e;
  ngtcp2_conn_get_connection_close_error(c->qc, &e);
  char detail[160];
  if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
      e.error_code <= 0x1ff) {
    snprintf(detail, sizeof(detail), "TLS alert %u (%s)", (unsigned)(e.error_code - 0x100),
             gnutls_alert_get_strname((gnutls_alert_description_t)(e.error_code - 0x100))
                 ? gnutls_alert_get_strname((gnutls_alert_description_t)(e.error_code - 0x100))
                 : "unknown");
  } else {
    snprintf(detail, sizeof(detail), "%s error 0x%llx",
             e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport",
             (unsigned long long)e.error_code);
  }
  set_err(c, "Peer closed the connection: %s", detail);
}

/* Marks the connection closed, prepares CONNECTION_CLOSE when one is due, posts CLOSED. */
static void conn_fail(sbh3_conn *c, int rv) {
  if (c->closed) return;
  c->closed = 1;
  uint64_t now = now_ns();
  int code = rv == LOCAL_CLOSE ? SBH3_ERR_CLOSED : map_liberr(rv);
  if (rv == NGTCP2_ERR_DRAINING) {
    describe_peer_close(c);
    /* A peer closing during the handshake with a TLS alert is a TLS failure. */
    ngtcp2_connection_close_error e;
    ngtcp2_conn_get_connection_close_error(c->qc, &e);
    if (e.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT && e.error_code >= 0x100 &&
        e.error_code <= 0x1ff)
      code = SBH3_ERR_TLS;
  } else if (rv == NGTCP2_ERR_IDLE_CLOSE) {
    set_err(c, "Connection idle timeout%s", "");
  } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
    set_err(c, "Handshake timed out%s", "");
  } else if (rv == NGTCP2_ERR_DROP_CONN) {
    set_err(c, "Connection dropped%s", "");
  } else {
    if (rv == NGTCP2_ERR_CRYPTO) {
      unsigned status = 0;
      if (c->tls) status = gnutls_session_get_verify_cert_status(c->tls);
      if (status) {
        gnutls_datum_t out = {0};
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
          set_err(c, "TLS handshake failed: %s", (const char *)out.data);
          gnutls_free(out.data);
        }
      }
      uint8_t alert = ngtcp2_conn_get_tls_alert(c->qc);
      set_err(c, "TLS handshake failed: %s",
              gnutls_alert_get_strname((gnutls_alert_description_t)alert)
                  ? gnutls_alert_get_strname((gnutls_alert_description_t)alert)
                  : "alert");
      if (c->ccerr.error_code == 0)
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&c->ccerr, alert, NULL, 0);
    } else if (rv != LOCAL_CLOSE && c->ccerr.error_code == 0 &&
               c->ccerr.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT) {
      ngtcp2_connection_close_error_set_transport_error_liberr(&c->ccerr, rv, NULL, 0);
    }
    if (rv != LOCAL_CLOSE) set_err(c, "QUIC error: %s", ngtcp2_strerror(rv));
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->qc, NULL, &pi, c->close_pkt, sizeof(c->close_pkt),
                                                        &c->ccerr, now);
    if (n > 0) {
      c->close_len = (size_t)n;
      c->close_pending = 1;
    }
  }
  c->close_deadline = now + 3 * ngtcp2_conn_get_pto(c->qc);
  if (rv == NGTCP2_ERR_IDLE_CLOSE || rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT)
    c->close_deadline = now;
  evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, code);
}

/* ---- nghttp3 callbacks ------------------------------------------------ */

static void consume(sbh3_conn *c, int64_t stream_id, size_t n) {
  ngtcp2_conn_extend_max_stream_offset(c->qc, stream_id, n);
  ngtcp2_conn_extend_max_offset(c->qc, n);
}

static int h3_stream_close(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  sbh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (s) {
    if (!s->done && !c->srv) evq_push(c->q, SBH3_EV_RESET, c->id, stream_id, (int64_t)app_error_code);
    stream_free(c, s);
  }
  if (c->srv && ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(c->qc, 1);
  return 0;
}

static int h3_recv_data(nghttp3_conn *hc, int64_t stream_id, const uint8_t *data, size_t len, void *user_data,
                        void *stream_user_data) {
  (void)hc;
  sbh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  consume(c, stream_id, len);
  if (!s || s->aborted) return 0;
  if (s->body.len + len > c->cfg->max_body) {
    s->aborted = 1;
    buf_free(&s->body);
    ngtcp2_conn_shutdown_stream(c->qc, stream_id, NGHTTP3_H3_EXCESSIVE_LOAD);
    return 0;
  }
  if (buf_append(&s->body, data, len) != 0) return NGHTTP3_ERR_NOMEM;
  return 0;
}

static int h3_deferred_consume(nghttp3_conn *hc, int64_t stream_id, size_t n, void *user_data,
                               void *stream_user_data) {
  (void)hc;
  (void)stream_user_data;
  consume(user_data, stream_id, n);
  return 0;
}

static int h3_begin_headers(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  sbh3_conn *c = user_data;
  if (!c->srv || stream_user_data) return 0;
  stream_t *s = stream_new(c, stream_id);
  if (!s) return NGHTTP3_ERR_NOMEM;
  nghttp3_conn_set_stream_user_data(hc, stream_id, s);
  return 0;
}

static int h3_recv_header(nghttp3_conn *hc, int64_t stream_id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  (void)flags;
  sbh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (!s) return 0;
  nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
  uint32_t nl = (uint32_t)n.len, vl = (uint32_t)v.len;
  if (buf_reserve(&s->hdr, 8 + nl + vl) != 0) return NGHTTP3_ERR_NOMEM;
  buf_append(&s->hdr, &nl, 4);
  buf_append(&s->hdr, &vl, 4);
  buf_append(&s->hdr, n.base, nl);
  buf_append(&s->hdr, v.base, vl);
  if (token == NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH && vl < 20) {
    char tmp[24];
    memcpy(tmp, v.base, vl);
    tmp[vl] = 0;
    unsigned long long cl = strtoull(tmp, NULL, 10);
    if (cl <= c->cfg->max_body && s->body.cap < cl) buf_reserve(&s->body, (size_t)cl);
  }
  return 0;
}

static int h3_stop_sending(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  ngtcp2_conn_shutdown_stream_read(c->qc, stream_id, app_error_code);
  return 0;
}

static int h3_end_stream(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  (void)hc;
  sbh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (!s || s->done || s->aborted) return 0;
  event_t *e = evq_push(c->q, SBH3_EV_MESSAGE, c->id, stream_id, 0);
  if (!e) return NGHTTP3_ERR_NOMEM;
  e->hdr = s->hdr;
  e->body = s->body;
  memset(&s->hdr, 0, sizeof(s->hdr));
  memset(&s->body, 0, sizeof(s->body));
  s->done = 1;
  return 0;
}

static int h3_reset_stream(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  ngtcp2_conn_shutdown_stream_write(c->qc, stream_id, app_error_code);
  return 0;
}

static int h3_shutdown(nghttp3_conn *hc, int64_t id, void *user_data) {
  (void)hc;
  (void)id;
  sbh3_conn *c = user_data;
  if (!c->srv && !c->goaway) {
    c->goaway = 1;
    evq_push(c->q, SBH3_EV_GOAWAY, c->id, -1, 0);
  }
  return 0;
}

static nghttp3_ssize h3_read_body(nghttp3_conn *hc, int64_t stream_id, nghttp3_vec *vec, size_t veccnt,
                                  uint32_t *pflags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  (void)veccnt;
  (void)user_data;
  stream_t *s = stream_user_data;
  vec[0].base = s->out;
  vec[0].len = s->out_len;
  *pflags |= NGHTTP3_DATA_FLAG_EOF;
  return 1;
}

static int setup_http(sbh3_conn *c) {
  if (c->hc) return 0;
  if (ngtcp2_conn_get_max_local_streams_uni(c->qc) < 3) return -1;
  nghttp3_callbacks cb = {
      .stream_close = h3_stream_close,
      .recv_data = h3_recv_data,
      .deferred_consume = h3_deferred_consume,
      .begin_headers = h3_begin_headers,
      .recv_header = h3_recv_header,
      .stop_sending = h3_stop_sending,
      .end_stream = h3_end_stream,
      .reset_stream = h3_reset_stream,
      .shutdown = h3_shutdown,
  };
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  int rv = c->srv ? nghttp3_conn_server_new(&c->hc, &cb, &settings, nghttp3_mem_default(), c)
                  : nghttp3_conn_client_new(&c->hc, &cb, &settings, nghttp3_mem_default(), c);
  if (rv != 0) return -1;
  if (c->srv) {
    const ngtcp2_transport_params *p = ngtcp2_conn_get_local_transport_params(c->qc);
    nghttp3_conn_set_max_client_streams_bidi(c->hc, p->initial_max_streams_bidi);
  }
  int64_t ctrl, enc, dec;
  if (ngtcp2_conn_open_uni_stream(c->qc, &ctrl, NULL) != 0) return -1;
  if (nghttp3_conn_bind_control_stream(c->hc, ctrl) != 0) return -1;
  if (ngtcp2_conn_open_uni_stream(c->qc, &enc, NULL) != 0) return -1;
  if (ngtcp2_conn_open_uni_stream(c->qc, &dec, NULL) != 0) return -1;
  if (nghttp3_conn_bind_qpack_streams(c->hc, enc, dec) != 0) return -1;
  return 0;
}

/* ---- ngtcp2 callbacks ------------------------------------------------- */

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) { return ((sbh3_conn *)ref->user_data)->qc; }

static int q_recv_stream_data(ngtcp2_conn *qc, uint32_t flags, int64_t stream_id, uint64_t offset,
                              const uint8_t *data, size_t len, void *user_data, void *stream_user_data) {
  (void)qc;
  (void)offset;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (!c->hc) return 0;
  nghttp3_ssize n = nghttp3_conn_read_stream(c->hc, stream_id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
  if (n < 0) {
    ngtcp2_connection_close_error_set_application_error(&c->ccerr, nghttp3_err_infer_quic_app_error_code((int)n),
                                                        NULL, 0);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  consume(c, stream_id, (size_t)n);
  return 0;
}

static int q_acked_stream_data_offset(ngtcp2_conn *qc, int64_t stream_id, uint64_t offset, uint64_t len,
                                      void *user_data, void *stream_user_data) {
  (void)qc;
  (void)offset;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (c->hc && nghttp3_conn_add_ack_offset(c->hc, stream_id, len) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

static int q_stream_close(ngtcp2_conn *qc, uint32_t flags, int64_t stream_id, uint64_t app_error_code,
                          void *user_data, void *stream_user_data) {
  (void)qc;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = NGHTTP3_H3_NO_ERROR;
  if (!c->hc) return 0;
  int rv = nghttp3_conn_close_stream(c->hc, stream_id, app_error_code);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) {
    if (c->srv && ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_bidi(c->qc, 1);
    else if (!ngtcp2_is_bidi_stream(stream_id)) ngtcp2_conn_extend_max_streams_uni(c->qc, 1);
    return 0;
  }
  if (rv != 0) {
    ngtcp2_connection_close_error_set_application_error(&c->ccerr, nghttp3_err_infer_quic_app_error_code(rv), NULL,
                                                        0);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

static int q_stream_reset(ngtcp2_conn *qc, int64_t stream_id, uint64_t final_size, uint64_t app_error_code,
                          void *user_data, void *stream_user_data) {
  (void)qc;
  (void)final_size;
  (void)app_error_code;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (c->hc && nghttp3_conn_shutdown_stream_read(c->hc, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

static int q_stream_stop_sending(ngtcp2_conn *qc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                                 void *stream_user_data) {
  return q_stream_reset(qc, stream_id, 0, app_error_code, user_data, stream_user_data);
}

static int q_extend_max_stream_data(ngtcp2_conn *qc, int64_t stream_id, uint64_t max_data, void *user_data,
                                    void *stream_user_data) {
  (void)qc;
  (void)max_data;
  (void)stream_user_data;
  sbh3_conn *c = user_data;
  if (c->hc && nghttp3_conn_unblock_stream(c->hc, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

static int q_extend_max_remote_streams_bidi(ngtcp2_conn *qc, uint64_t max_streams, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  if (c->hc) nghttp3_conn_set_max_client_streams_bidi(c->hc, max_streams);
  return 0;
}

static void q_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx) {
  (void)ctx;
  rand_bytes(dest, len);
}

static int q_get_new_connection_id(ngtcp2_conn *qc, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                                   void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  rand_bytes(cid->data, cidlen);
  cid->datalen = cidlen;
  static uint8_t client_secret[32];
  const uint8_t *secret = c->srv ? c->srv->secret : client_secret;
  if (ngtcp2_crypto_generate_stateless_reset_token(token, secret, 32, cid) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  if (c->srv) cid_add(c, cid);
  return 0;
}

static int q_remove_connection_id(ngtcp2_conn *qc, const ngtcp2_cid *cid, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  if (c->srv) cid_remove(c, cid);
  return 0;
}

static int q_handshake_completed(ngtcp2_conn *qc, void *user_data) {
  (void)qc;
  sbh3_conn *c = user_data;
  if (!c->srv) evq_push(c->q, SBH3_EV_CONNECTED, c->id, -1, 0);
  return 0;
}

static int q_recv_rx_key(ngtcp2_conn *qc, ngtcp2_crypto_level level, void *user_data) {
  (void)qc;
  if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION) return 0;
  return setup_http(user_data) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int q_recv_tx_key(ngtcp2_conn *qc, ngtcp2_crypto_level level, void *user_data) {
  return q_recv_rx_key(qc, level, user_data);
}

static void fill_callbacks(ngtcp2_callbacks *cb, int is_server) {
  memset(cb, 0, sizeof(*cb));
  if (is_server) {
    cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    cb->recv_tx_key = q_recv_tx_key;
    cb->extend_max_remote_streams_bidi = q_extend_max_remote_streams_bidi;
    cb->remove_connection_id = q_remove_connection_id;
  } else {
    cb->client_initial = ngtcp2_crypto_client_initial_cb;
    cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
    cb->recv_rx_key = q_recv_rx_key;
  }
  cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb->handshake_completed = q_handshake_completed;
  cb->encrypt = ngtcp2_crypto_encrypt_cb;
  cb->decrypt = ngtcp2_crypto_decrypt_cb;
  cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb->recv_stream_data = q_recv_stream_data;
  cb->acked_stream_data_offset = q_acked_stream_data_offset;
  cb->stream_close = q_stream_close;
  cb->rand = q_rand;
  cb->get_new_connection_id = q_get_new_connection_id;
  cb->update_key = ngtcp2_crypto_update_key_cb;
  cb->stream_reset = q_stream_reset;
  cb->extend_max_stream_data = q_extend_max_stream_data;
  cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb->stream_stop_sending = q_stream_stop_sending;
  cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

static int is_loopback(const ngtcp2_sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
  return 0;
}

static void fill_settings(ngtcp2_settings *s, ngtcp2_transport_params *p, const sbh3_config *cfg,
                          const ngtcp2_sockaddr *remote) {
  ngtcp2_settings_default(s);
  s->initial_ts = now_ns();
  s->max_window = 24u << 20;
  s->max_stream_window = 16u << 20;
  s->handshake_timeout = 5 * NGTCP2_SECONDS;
  s->cc_algo = cc_algo(cfg->cc);
  uint32_t udp = cfg->max_udp_payload ? cfg->max_udp_payload : is_loopback(remote) ? LOOPBACK_UDP : 0;
  if (udp) {
    /* A known path MTU (loopback, a lab link): use it from the first packet. */
    s->max_tx_udp_payload_size = udp;
    s->no_tx_udp_payload_size_shaping = 1;
  }
  ngtcp2_transport_params_default(p);
  /*
   * 16 MiB per request stream and per connection, as the h2 client's windows: with 1 MiB a 1 MiB
   * body (plus its framing) outgrew the stream window, and its last bytes waited a round trip for
   * MAX_STREAM_DATA (measured: +39 ms per 1 MiB GET at 50 ms RTT).
   */
  p->initial_max_stream_data_bidi_local = 16u << 20;
  p->initial_max_stream_data_bidi_remote = 16u << 20;
  p->initial_max_stream_data_uni = 1u << 20;
  p->initial_max_data = 16u << 20;
  p->initial_max_streams_bidi = 128;
  p->initial_max_streams_uni = 3;
  p->max_idle_timeout = (uint64_t)cfg->idle_ms * NGTCP2_MILLISECONDS;
  p->active_connection_id_limit = 7;
}

static int tls_init(sbh3_conn *c, const char *server_name) {
  const sbh3_config *cfg = c->cfg;
  unsigned flags = (cfg->is_server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_END_OF_EARLY_DATA;
  if (gnutls_init(&c->tls, flags) != 0) return -1;
  if (gnutls_priority_set_direct(c->tls, PRIORITY, NULL) != 0) return -1;
  int rv = cfg->is_server ? ngtcp2_crypto_gnutls_configure_server_session(c->tls)
                          : ngtcp2_crypto_gnutls_configure_client_session(c->tls);
  if (rv != 0) return -1;
  c->ref.get_conn = get_conn;
  c->ref.user_data = c;
  gnutls_session_set_ptr(c->tls, &c->ref);
  if (gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, cfg->cred) != 0) return -1;
  gnutls_datum_t alpn = {(unsigned char *)"h3", 2};
  unsigned alpn_flags = GNUTLS_ALPN_MANDATORY | (cfg->is_server ? GNUTLS_ALPN_SERVER_PRECEDENCE : 0);
  if (gnutls_alpn_set_protocols(c->tls, &alpn, 1, alpn_flags) != 0) return -1;
  if (cfg->is_server) {
    if (cfg->verify == SBH3_VERIFY_PEER) {
      gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_REQUIRE);
      gnutls_session_set_verify_cert(c->tls, NULL, 0);
    }
  } else {
    if (server_name && *server_name) {
      struct in6_addr tmp;
      int numeric = inet_pton(AF_INET, server_name, &tmp) == 1 || inet_pton(AF_INET6, server_name, &tmp) == 1;
      if (!numeric) gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, server_name, strlen(server_name));
    }
    if (cfg->verify == SBH3_VERIFY_PEER) {
      if (!server_name || !*server_name) return -1;
      c->server_name = strdup(server_name);
      if (!c->server_name) return -1;
      gnutls_session_set_verify_cert(c->tls, c->server_name, 0);
    }
  }
  ngtcp2_conn_set_tls_native_handle(c->qc, c->tls);
  return 0;
}

static void conn_destroy(sbh3_conn *c) {
  if (!c) return;
  while (c->streams) stream_free(c, c->streams);
  nghttp3_conn_del(c->hc);
  ngtcp2_conn_del(c->qc);
  if (c->tls) gnutls_deinit(c->tls);
  free(c->server_name);
  evq_clear(&c->own_q);
  config_unref(c->cfg);
  free(c);
}

static sbh3_conn *conn_alloc(sbh3_config *cfg) {
  sbh3_conn *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->cfg = cfg;
  cfg->refs++;
  c->q = &c->own_q;
  ngtcp2_path_storage_zero(&c->ps);
  ngtcp2_connection_close_error_default(&c->ccerr);
  return c;
}

/*
 * Datagrams one write pass may send: ngtcp2's send quantum (at least 10), scaled up when this
 * pass comes later than pacing asked for. The caller's timer has millisecond steps and wakes
 * 1-2 ms after a sub-millisecond deadline, so a fixed quantum per pass sent at about half the
 * pacing rate (measured: 45 datagrams every 2.15 ms against a 497 Mbit/s rate). The scale is
 * elapsed over planned interval, capped at 4, so the average rate follows ngtcp2's pacing.
 */
static size_t pass_budget(sbh3_conn *c, size_t max_payload, uint64_t now) {
  size_t quantum = ngtcp2_conn_get_send_quantum(c->qc) / max_payload;
  if (quantum < 10) quantum = 10;
  if (!c->paced_at || c->pace_due <= c->paced_at || now <= c->pace_due) return quantum;
  uint64_t planned = c->pace_due - c->paced_at, elapsed = now - c->paced_at;
  if (elapsed >= 4 * planned) return 4 * quantum;
  return (size_t)((double)quantum * (double)elapsed / (double)planned);
}

/* Writes one datagram for c into out; returns its length, SBH3_ERR_DONE, or an error. */
static int conn_write(sbh3_conn *c, uint8_t *out, size_t cap, uint64_t now) {
  if (c->close_pending) {
    c->close_pending = 0;
    if (cap < c->close_len) return SBH3_ERR_BUFFER_TOO_SHORT;
    memcpy(out, c->close_pkt, c->close_len);
    return (int)c->close_len;
  }
  if (c->closed) return SBH3_ERR_DONE;
  size_t max_payload = ngtcp2_conn_get_max_tx_udp_payload_size(c->qc);
  if (cap < max_payload) return SBH3_ERR_BUFFER_TOO_SHORT;
  if (c->burst == 0) c->burst_max = pass_budget(c, max_payload, now);
  if (c->burst >= c->burst_max) {
    ngtcp2_conn_update_pkt_tx_time(c->qc, now);
    c->burst = 0;
    c->paced_at = now;
    c->pace_due = ngtcp2_conn_get_expiry(c->qc);
    return SBH3_ERR_DONE;
  }
  for (;;) {
    int64_t sid = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize nvec = 0;
    if (c->hc && ngtcp2_conn_get_max_data_left(c->qc)) {
      nvec = nghttp3_conn_writev_stream(c->hc, &sid, &fin, vec, 16);
      if (nvec < 0) {
        ngtcp2_connection_close_error_set_application_error(
            &c->ccerr, nghttp3_err_infer_quic_app_error_code((int)nvec), NULL, 0);
        conn_fail(c, NGTCP2_ERR_INTERNAL);
        return conn_write(c, out, cap, now);
      }
    }
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
    ngtcp2_ssize ndatalen = -1;
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->qc, NULL, &pi, out, max_payload, &ndatalen, flags, sid,
                                               (const ngtcp2_vec *)vec, (size_t)nvec, now);
    if (n < 0) {
      switch (n) {
      case NGTCP2_ERR_STREAM_DATA_BLOCKED:
        nghttp3_conn_block_stream(c->hc, sid);
        continue;
      case NGTCP2_ERR_STREAM_SHUT_WR:
        nghttp3_conn_shutdown_stream_write(c->hc, sid);
        continue;
      case NGTCP2_ERR_WRITE_MORE:
        if (nghttp3_conn_add_write_offset(c->hc, sid, (size_t)ndatalen) != 0) {
          conn_fail(c, NGTCP2_ERR_INTERNAL);
          return conn_write(c, out, cap, now);
        }
        continue;
      default:
        conn_fail(c, (int)n);
        return conn_write(c, out, cap, now);
      }
    }
    if (ndatalen >= 0 && nghttp3_conn_add_write_offset(c->hc, sid, (size_t)ndatalen) != 0) {
      conn_fail(c, NGTCP2_ERR_INTERNAL);
      return conn_write(c, out, cap, now);
    }
    if (n == 0) {
      ngtcp2_conn_update_pkt_tx_time(c->qc, now);
      c->burst = 0;
      c->paced_at = 0;
      return SBH3_ERR_DONE;
    }
    c->burst++;
    return (int)n;
  }
}

static uint64_t conn_deadline(sbh3_conn *c) {
  if (c->closed) return c->srv ? c->close_deadline : UINT64_MAX;
  return ngtcp2_conn_get_expiry(c->qc);
}

static int deadline_to_ms(uint64_t deadline) {
  if (deadline == UINT64_MAX) return SBH3_ERR_DONE;
  uint64_t now = now_ns();
  if (deadline <= now) return 0;
  uint64_t ms = (deadline - now + 999999) / 1000000;
  return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

static void conn_expire(sbh3_conn *c, uint64_t now) {
  if (c->closed) return;
  if (ngtcp2_conn_get_expiry(c->qc) > now) return;
  int rv = ngtcp2_conn_handle_expiry(c->qc, now);
  if (rv != 0) conn_fail(c, rv);
}

/* Parses a flat header block into a freshly allocated nv array. */
static int parse_headers(const uint8_t *p, size_t len, nghttp3_nv **pnv, size_t *pn) {
  size_t n = 0, off = 0;
  while (off < len) {
    uint32_t nl, vl;
    if (len - off < 8) return -1;
    memcpy(&nl, p + off, 4);
    memcpy(&vl, p + off + 4, 4);
    off += 8;
    if (nl == 0 || (uint64_t)nl + vl > len - off) return -1;
    off += (size_t)nl + vl;
    n++;
  }
  nghttp3_nv *nv = calloc(n ? n : 1, sizeof(*nv));
  if (!nv) return -2;
  off = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t nl, vl;
    memcpy(&nl, p + off, 4);
    memcpy(&vl, p + off + 4, 4);
    off += 8;
    nv[i].name = (uint8_t *)p + off;
    nv[i].namelen = nl;
    nv[i].value = (uint8_t *)p + off + nl;
    nv[i].valuelen = vl;
    nv[i].flags = NGHTTP3_NV_FLAG_NONE;
    off += (size_t)nl + vl;
  }
  *pnv = nv;
  *pn = n;
  return 0;
}

static int copy_body(stream_t *s, const uint8_t *body, size_t len) {
  if (len == 0) return 0;
  s->out = malloc(len);
  if (!s->out) return -1;
  memcpy(s->out, body, len);
  s->out_len = len;
  return 0;
}

/* ---- client API -------------------------------------------------------- */

int sbh3_version(uint8_t *buf, size_t cap) {
  if (!buf) return SBH3_ERR_INVALID;
  int n = snprintf((char *)buf, cap, "sbh3/%s ngtcp2/%s nghttp3/%s gnutls/%s", SBH3_VERSION,
                   ngtcp2_version(0)->version_str, nghttp3_version(0)->version_str, gnutls_check_version(NULL));
  if (n < 0) return SBH3_ERR_INTERNAL;
  if ((size_t)n >= cap) return SBH3_ERR_BUFFER_TOO_SHORT;
  return n;
}

sbh3_conn *sbh3_conn_new_client(sbh3_config *cfg, const char *server_name, const char *local_ip, uint16_t local_port,
                                const char *remote_ip, uint16_t remote_port) {
  if (!cfg || cfg->is_server) return NULL;
  sbh3_conn *c = conn_alloc(cfg);
  if (!c) return NULL;
  if (parse_addr(&c->ps.local_addrbuf, &c->ps.path.local.addrlen, local_ip, local_port) != 0 ||
      parse_addr(&c->ps.remote_addrbuf, &c->ps.path.remote.addrlen, remote_ip, remote_port) != 0) {
    conn_destroy(c);
    return NULL;
  }
  ngtcp2_cid scid, dcid;
  scid.datalen = 17;
  rand_bytes(scid.data, scid.datalen);
  dcid.datalen = 18;
  rand_bytes(dcid.data, dcid.datalen);
  ngtcp2_callbacks cb;
  fill_callbacks(&cb, 0);
  ngtcp2_settings settings;
  ngtcp2_transport_params params;
  fill_settings(&settings, &params, cfg, &c->ps.remote_addrbuf.sa);
  if (ngtcp2_conn_client_new(&c->qc, &dcid, &scid, &c->ps.path, NGTCP2_PROTO_VER_V1, &cb, &settings, &params, NULL,
                             c) != 0) {
    conn_destroy(c);
    return NULL;
  }
  if (tls_init(c, server_name) != 0) {
    conn_destroy(c);
    return NULL;
  }
  return c;
}

void sbh3_conn_free(sbh3_conn *conn) {
  if (!conn || conn->srv) return;
  conn_destroy(conn);
}

int sbh3_conn_recv(sbh3_conn *c, const uint8_t *data, size_t len) {
  if (!c || !data || c->srv) return SBH3_ERR_INVALID;
  if (c->closed) return SBH3_ERR_CLOSED;
  ngtcp2_pkt_info pi = {0};
  int rv = ngtcp2_conn_read_pkt(c->qc, &c->ps.path, &pi, data, len, now_ns());
  if (rv != 0) {
    conn_fail(c, rv);
    return map_liberr(rv);
  }
  return 0;
}

int sbh3_conn_send(sbh3_conn *c, uint8_t *out, size_t cap) {
  if (!c || !out || c->srv) return SBH3_ERR_INVALID;
  return conn_write(c, out, cap, now_ns());
}

int sbh3_conn_timeout_ms(sbh3_conn *c) {
  if (!c) return SBH3_ERR_INVALID;
  return deadline_to_ms(conn_deadline(c));
}

int sbh3_conn_on_timeout(sbh3_conn *c) {
  if (!c || c->srv) return SBH3_ERR_INVALID;
  if (c->closed) return SBH3_ERR_CLOSED;
  conn_expire(c, now_ns());
  return c->closed ? SBH3_ERR_CLOSED : 0;
}

int64_t sbh3_conn_request(sbh3_conn *c, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body, size_t body_len) {
  if (!c || c->srv || !hdrs || (body_len && !body)) return SBH3_ERR_INVALID;
  if (c->closed || c->goaway) return SBH3_ERR_CLOSED;
  if (!c->hc) return SBH3_ERR_STREAM_BLOCKED;
  nghttp3_nv *nv;
  size_t n;
  int rv = parse_headers(hdrs, hdrs_len, &nv, &n);
  if (rv != 0) return rv == -2 ? SBH3_ERR_NOMEM : SBH3_ERR_INVALID;
  int64_t sid;
  rv = ngtcp2_conn_open_bidi_stream(c->qc, &sid, NULL);
  if (rv != 0) {
    free(nv);
    return rv == NGTCP2_ERR_STREAM_ID_BLOCKED ? SBH3_ERR_STREAM_BLOCKED : SBH3_ERR_INTERNAL;
  }
  stream_t *s = stream_new(c, sid);
  if (!s || copy_body(s, body, body_len) != 0) {
    free(nv);
    if (s) stream_free(c, s);
    ngtcp2_conn_shutdown_stream(c->qc, sid, NGHTTP3_H3_INTERNAL_ERROR);
    return SBH3_ERR_NOMEM;
  }
  nghttp3_data_reader dr = {.read_data = h3_read_body};
  rv = nghttp3_conn_submit_request(c->hc, sid, nv, n, body_len ? &dr : NULL, s);
  free(nv);
  if (rv != 0) {
    stream_free(c, s);
    ngtcp2_conn_shutdown_stream(c->qc, sid, NGHTTP3_H3_INTERNAL_ERROR);
    return rv == NGHTTP3_ERR_INVALID_ARGUMENT ? SBH3_ERR_INVALID : SBH3_ERR_INTERNAL;
  }
  return sid;
}

int sbh3_conn_cancel(sbh3_conn *c, int64_t stream_id) {
  if (!c) return SBH3_ERR_INVALID;
  if (c->closed) return SBH3_ERR_CLOSED;
  stream_t *s = stream_find(c, stream_id);
  if (!s) return SBH3_ERR_NOT_FOUND;
  s->done = 1; /* the caller gave up on it: no RESET event */
  if (ngtcp2_conn_shutdown_stream(c->qc, stream_id, NGHTTP3_H3_REQUEST_CANCELLED) != 0) return SBH3_ERR_NOT_FOUND;
  return 0;
}

int sbh3_conn_poll(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf || cap < 8) return SBH3_ERR_INVALID;
  return evq_poll(c->q, buf, cap);
}

/* Closes c with H3_NO_ERROR: an established connection sends an application close, else it is just dropped. */
static void close_locally(sbh3_conn *c, const char *why) {
  ngtcp2_connection_close_error_set_application_error(&c->ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
  set_err(c, "%s", why);
  if (ngtcp2_conn_get_handshake_completed(c->qc)) {
    conn_fail(c, LOCAL_CLOSE);
  } else {
    c->closed = 1;
    c->close_deadline = now_ns();
    evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, SBH3_ERR_CLOSED);
  }
}

int sbh3_conn_close(sbh3_conn *c) {
  if (!c) return SBH3_ERR_INVALID;
  if (c->closed) return SBH3_ERR_CLOSED;
  close_locally(c, "Connection closed locally");
  return 0;
}

int sbh3_conn_error(sbh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf || cap == 0) return SBH3_ERR_INVALID;
  size_t n = strlen(c->errmsg);
  if (n >= cap) n = cap - 1;
  memcpy(buf, c->errmsg, n);
  buf[n] = 0;
  return (int)n;
}

int sbh3_conn_stream_count(sbh3_conn *c) {
  if (!c) return SBH3_ERR_INVALID;
  return c->nstreams;
}

/* ---- server API -------------------------------------------------------- */

sbh3_server *sbh3_server_new(sbh3_config *cfg, const char *local_ip, uint16_t local_port) {
  if (!cfg || !cfg->is_server || !cfg->has_cert) return NULL;
  sbh3_server *srv = calloc(1, sizeof(*srv));
  if (!srv) return NULL;
  if (parse_addr(&srv->local, &srv->local_len, local_ip, local_port) != 0) {
    free(srv);
    return NULL;
  }
  srv->cfg = cfg;
  cfg->refs++;
  srv->next_id = 1;
  rand_bytes(srv->secret, sizeof(srv->secret));
  return srv;
}

static void server_unlink(sbh3_server *srv, sbh3_conn *c) {
  sbh3_conn **pp = &srv->conns;
  while (*pp && *pp != c) pp = &(*pp)->next;
  if (*pp) *pp = c->next;
  if (srv->cursor == c) srv->cursor = c->next;
  srv->nconns--;
}

void sbh3_server_free(sbh3_server *srv) {
  if (!srv) return;
  while (srv->conns) {
    sbh3_conn *c = srv->conns;
    srv->conns = c->next;
    conn_destroy(c);
  }
  evq_clear(&srv->q);
  config_unref(srv->cfg);
  free(srv);
}

static sbh3_conn *server_find(sbh3_server *srv, const uint8_t *dcid, size_t dcidlen) {
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    for (size_t i = 0; i < c->ncids; i++)
      if (c->cids[i].datalen == dcidlen && memcmp(c->cids[i].data, dcid, dcidlen) == 0) return c;
  return NULL;
}

static sbh3_conn *server_find_id(sbh3_server *srv, uint32_t id) {
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

/* Token bucket for packets sent without a connection (version negotiation, stateless reset). */
static int stateless_allowed(sbh3_server *srv) {
  uint64_t now = now_ns();
  if (now - srv->sr_window >= NGTCP2_SECONDS) {
    srv->sr_window = now;
    srv->sr_count = 0;
  }
  if (srv->sr_count >= STATELESS_PER_SEC || srv->sq_count >= STATELESS_QUEUE) return 0;
  srv->sr_count++;
  return 1;
}

static stateless_pkt_t *stateless_slot(sbh3_server *srv, const ngtcp2_sockaddr_union *to) {
  stateless_pkt_t *p = &srv->sq[(srv->sq_head + srv->sq_count) % STATELESS_QUEUE];
  p->addr = *to;
  return p;
}

static void send_version_negotiation(sbh3_server *srv, const ngtcp2_version_cid *vc, const ngtcp2_sockaddr_union *to) {
  if (!stateless_allowed(srv)) return;
  stateless_pkt_t *p = stateless_slot(srv, to);
  uint32_t sv[2] = {0x1a2a3a4au, NGTCP2_PROTO_VER_V1};
  uint8_t r;
  rand_bytes(&r, 1);
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(p->data, sizeof(p->data), r, vc->scid, vc->scidlen, vc->dcid,
                                                        vc->dcidlen, sv, 2);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
}

static void send_stateless_reset(sbh3_server *srv, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *to) {
  /* Short header: 1 byte, then our DCID. Answer only with something smaller than what came in. */
  if (len < 1 + SCID_LEN + 22 || !stateless_allowed(srv)) return;
  ngtcp2_cid cid;
  ngtcp2_cid_init(&cid, data + 1, SCID_LEN);
  uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
  if (ngtcp2_crypto_generate_stateless_reset_token(token, srv->secret, sizeof(srv->secret), &cid) != 0) return;
  size_t total = len - 1 < 43 ? len - 1 : 43;
  size_t randlen = total - 1 - NGTCP2_STATELESS_RESET_TOKENLEN;
  uint8_t rnd[64];
  rand_bytes(rnd, randlen);
  stateless_pkt_t *p = stateless_slot(srv, to);
  ngtcp2_ssize n = ngtcp2_pkt_write_stateless_reset(p->data, sizeof(p->data), token, rnd, randlen);
  if (n <= 0) return;
  p->len = (size_t)n;
  srv->sq_count++;
}

static sbh3_conn *server_accept(sbh3_server *srv, const ngtcp2_pkt_hd *hd, const ngtcp2_sockaddr_union *from,
                                ngtcp2_socklen fromlen) {
  sbh3_conn *c = conn_alloc(srv->cfg);
  if (!c) return NULL;
  c->srv = srv;
  c->q = &srv->q;
  c->id = srv->next_id++;
  if (srv->next_id == 0) srv->next_id = 1;
  memcpy(&c->ps.local_addrbuf, &srv->local, sizeof(srv->local));
  c->ps.path.local.addrlen = srv->local_len;
  memcpy(&c->ps.remote_addrbuf, from, sizeof(*from));
  c->ps.path.remote.addrlen = fromlen;
  ngtcp2_cid scid;
  scid.datalen = SCID_LEN;
  rand_bytes(scid.data, scid.datalen);
  ngtcp2_callbacks cb;
  fill_callbacks(&cb, 1);
  ngtcp2_settings settings;
  ngtcp2_transport_params params;
  fill_settings(&settings, &params, srv->cfg, &from->sa);
  settings.token = hd->token;
  params.original_dcid = hd->dcid;
  params.stateless_reset_token_present = 1;
  if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, srv->secret, sizeof(srv->secret),
                                                   &scid) != 0 ||
      ngtcp2_conn_server_new(&c->qc, &hd->scid, &scid, &c->ps.path, hd->version, &cb, &settings, &params, NULL, c) !=
          0 ||
      tls_init(c, NULL) != 0) {
    conn_destroy(c);
    return NULL;
  }
  cid_add(c, &scid);
  cid_add(c, &hd->dcid);
  c->next = srv->conns;
  srv->conns = c;
  srv->nconns++;
  return c;
}

/* Feeds one datagram from a socket address; see sbh3_server_recv. */
static int server_recv_from(sbh3_server *srv, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *fromp,
                            ngtcp2_socklen fromlen) {
  ngtcp2_sockaddr_union from = *fromp;
  if (len == 0) return SBH3_ERR_PROTO;
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, SCID_LEN);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    if (len >= NGTCP2_MAX_UDP_PAYLOAD_SIZE) send_version_negotiation(srv, &vc, &from);
    return SBH3_ERR_DONE;
  }
  if (rv != 0) return SBH3_ERR_PROTO;
  sbh3_conn *c = server_find(srv, vc.dcid, vc.dcidlen);
  int fresh = 0;
  if (!c) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, data, len) != 0) {
      if (!(data[0] & 0x80)) send_stateless_reset(srv, data, len, &from);
      return SBH3_ERR_PROTO;
    }
    if (srv->shutting_down || srv->nconns >= MAX_CONNS) return SBH3_ERR_CLOSED;
    c = server_accept(srv, &hd, &from, fromlen);
    if (!c) return SBH3_ERR_NOMEM;
    fresh = 1;
  }
  if (c->closed) return SBH3_ERR_CLOSED;
  ngtcp2_path path = c->ps.path;
  path.remote.addr = (ngtcp2_sockaddr *)&from;
  path.remote.addrlen = fromlen;
  ngtcp2_pkt_info pi = {0};
  rv = ngtcp2_conn_read_pkt(c->qc, &path, &pi, data, len, now_ns());
  if (rv != 0) {
    if (fresh) {
      /* The first packet did not make a connection: forget it without a trace. */
      server_unlink(srv, c);
      conn_destroy(c);
      return SBH3_ERR_PROTO;
    }
    conn_fail(c, rv);
    return map_liberr(rv);
  }
  memcpy(&c->ps.remote_addrbuf, &from, sizeof(from));
  c->ps.path.remote.addrlen = fromlen;
  return (int)c->id;
}

int sbh3_server_recv(sbh3_server *srv, const uint8_t *data, size_t len, const char *from_ip, uint16_t from_port) {
  if (!srv || !data) return SBH3_ERR_INVALID;
  ngtcp2_sockaddr_union from;
  ngtcp2_socklen fromlen;
  if (parse_addr(&from, &fromlen, from_ip, from_port) != 0) return SBH3_ERR_INVALID;
  return server_recv_from(srv, data, len, &from, fromlen);
}

/* Writes the next datagram of any connection into out, its destination into *to; returns length or DONE. */
static int server_write(sbh3_server *srv, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                        uint32_t *conn_id) {
  if (srv->sq_count) {
    stateless_pkt_t *p = &srv->sq[srv->sq_head];
    if (cap < p->len) return SBH3_ERR_BUFFER_TOO_SHORT;
    memcpy(out, p->data, p->len);
    *to = &p->addr;
    *conn_id = 0;
    srv->sq_head = (srv->sq_head + 1) % STATELESS_QUEUE;
    srv->sq_count--;
    return (int)p->len;
  }
  for (size_t i = 0; i < srv->nconns; i++) {
    if (!srv->cursor) srv->cursor = srv->conns;
    sbh3_conn *c = srv->cursor;
    if (!c) break;
    int n = conn_write(c, out, cap, now);
    if (n > 0) {
      *to = &c->ps.remote_addrbuf;
      *conn_id = c->id;
      return n;
    }
    if (n != SBH3_ERR_DONE) return n;
    srv->cursor = c->next;
  }
  return SBH3_ERR_DONE;
}

int sbh3_server_send(sbh3_server *srv, uint8_t *out, size_t cap, uint8_t *meta, size_t meta_cap) {
  if (!srv || !out || !meta) return SBH3_ERR_INVALID;
  if (meta_cap < 6 + INET6_ADDRSTRLEN) return SBH3_ERR_BUFFER_TOO_SHORT;
  const ngtcp2_sockaddr_union *to;
  uint32_t id;
  int n = server_write(srv, out, cap, now_ns(), &to, &id);
  if (n < 0) return n;
  write_meta(meta, meta_cap, id, &to->sa);
  return n;
}

int sbh3_server_timeout_ms(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  uint64_t min = UINT64_MAX;
  for (sbh3_conn *c = srv->conns; c; c = c->next) {
    uint64_t d = conn_deadline(c);
    if (d < min) min = d;
  }
  return deadline_to_ms(min);
}

int sbh3_server_on_timeout(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  uint64_t now = now_ns();
  sbh3_conn *c = srv->conns;
  while (c) {
    sbh3_conn *next = c->next;
    conn_expire(c, now);
    if (c->closed && !c->close_pending && c->close_deadline <= now) {
      server_unlink(srv, c);
      conn_destroy(c);
    }
    c = next;
  }
  return 0;
}

int sbh3_server_poll(sbh3_server *srv, uint8_t *buf, size_t cap) {
  if (!srv || !buf || cap < 8) return SBH3_ERR_INVALID;
  return evq_poll(&srv->q, buf, cap);
}

int sbh3_server_respond(sbh3_server *srv, uint32_t conn_id, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len,
                        const uint8_t *body, size_t body_len) {
  if (!srv || !hdrs || (body_len && !body)) return SBH3_ERR_INVALID;
  sbh3_conn *c = server_find_id(srv, conn_id);
  if (!c) return SBH3_ERR_NOT_FOUND;
  if (c->closed) return SBH3_ERR_CLOSED;
  stream_t *s = stream_find(c, stream_id);
  if (!s || !s->done || s->out) return SBH3_ERR_NOT_FOUND;
  nghttp3_nv *nv;
  size_t n;
  int rv = parse_headers(hdrs, hdrs_len, &nv, &n);
  if (rv != 0) return rv == -2 ? SBH3_ERR_NOMEM : SBH3_ERR_INVALID;
  if (copy_body(s, body, body_len) != 0) {
    free(nv);
    return SBH3_ERR_NOMEM;
  }
  nghttp3_data_reader dr = {.read_data = h3_read_body};
  rv = nghttp3_conn_submit_response(c->hc, stream_id, nv, n, body_len ? &dr : NULL);
  free(nv);
  if (rv != 0) {
    free(s->out);
    s->out = NULL;
    s->out_len = 0;
    return rv == NGHTTP3_ERR_INVALID_ARGUMENT ? SBH3_ERR_INVALID : SBH3_ERR_INTERNAL;
  }
  return 0;
}

int sbh3_server_shutdown(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  srv->shutting_down = 1;
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (c->hc && !c->closed) nghttp3_conn_submit_shutdown_notice(c->hc);
  return 0;
}

int sbh3_server_close_all(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  srv->shutting_down = 1;
  for (sbh3_conn *c = srv->conns; c; c = c->next) {
    if (c->closed) continue;
    close_locally(c, "Server closed");
  }
  return 0;
}

int sbh3_server_open_streams(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  int n = 0;
  for (sbh3_conn *c = srv->conns; c; c = c->next)
    if (!c->closed) n += c->nstreams;
  return n;
}

int sbh3_server_conn_count(sbh3_server *srv) {
  if (!srv) return SBH3_ERR_INVALID;
  return (int)srv->nconns;
}

/* ---- the caller's UDP socket, batched I/O ------------------------------ */

/* Datagrams moved per recvmmsg/sendmmsg call, and bytes of the send batch. */
#define IO_BATCH 64
#define IO_SEND_BYTES (256 * 1024)
/* Datagrams received per sbh3_*_io call at most, so one busy peer cannot starve the caller. */
#define IO_RECV_MAX 1024
#define IO_RECV_BYTES 65536

/* Datagrams one sendmsg may carry with UDP generic segmentation offload, and their bytes. */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000

struct sbh3_udp {
  int fd;         /* the caller's socket: never closed here */
  int connected;
  int refused;    /* a send or the caller's receive saw ECONNREFUSED (which clears the socket's pending error) */
  int no_gso;     /* the kernel refused UDP_SEGMENT once: one datagram per message from then on */
  uint8_t *rbuf;  /* IO_BATCH receive slots of IO_RECV_BYTES */
  uint8_t *sbuf;  /* the send batch */
  struct mmsghdr msgs[IO_BATCH];
  struct iovec iov[IO_BATCH];
  ngtcp2_sockaddr_union addrs[IO_BATCH];
  /* Send side: message i carries nsegs[i] datagrams of seg[i] bytes (the last may be shorter). */
  uint16_t seg[IO_BATCH];
  uint16_t nsegs[IO_BATCH];
  union {
    char buf[CMSG_SPACE(sizeof(uint16_t))];
    struct cmsghdr align;
  } ctrl[IO_BATCH];
};

/* True when fd is a UDP socket bound to exactly *want. */
static int udp_bound_to(int fd, const ngtcp2_sockaddr_union *want) {
  int type = 0, proto = 0;
  socklen_t ol = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol) != 0 || type != SOCK_DGRAM) return 0;
  ol = sizeof(proto);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &ol) != 0 || proto != IPPROTO_UDP) return 0;
  ngtcp2_sockaddr_union sa;
  socklen_t len = sizeof(sa);
  if (getsockname(fd, &sa.sa, &len) != 0 || sa.sa.sa_family != want->sa.sa_family) return 0;
  if (sa.sa.sa_family == AF_INET6)
    return sa.in6.sin6_port == want->in6.sin6_port &&
           memcmp(&sa.in6.sin6_addr, &want->in6.sin6_addr, sizeof(sa.in6.sin6_addr)) == 0;
  return sa.in.sin_port == want->in.sin_port && sa.in.sin_addr.s_addr == want->in.sin_addr.s_addr;
}

sbh3_udp *sbh3_udp_adopt(const char *ip, uint16_t port) {
  ngtcp2_sockaddr_union want;
  ngtcp2_socklen wantlen;
  if (port == 0 || parse_addr(&want, &wantlen, ip, port) != 0) return NULL;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return NULL;
  int found = -1, matches = 0, dfd = dirfd(d);
  for (struct dirent *e; (e = readdir(d));) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == dfd) continue;
    if (udp_bound_to((int)fd, &want)) {
      found = (int)fd;
      matches++;
    }
  }
  closedir(d);
  if (matches != 1) return NULL;
  sbh3_udp *u = calloc(1, sizeof(*u));
  if (!u) return NULL;
  u->fd = found;
  u->rbuf = malloc((size_t)IO_BATCH * IO_RECV_BYTES);
  u->sbuf = malloc(IO_SEND_BYTES);
  if (!u->rbuf || !u->sbuf) {
    sbh3_udp_free(u);
    return NULL;
  }
  int sz = 4 << 20; /* the kernel caps it at net.core.[rw]mem_max */
  setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
  return u;
}

void sbh3_udp_free(sbh3_udp *u) {
  if (!u) return;
  free(u->rbuf);
  free(u->sbuf);
  free(u);
}

int sbh3_udp_connect(sbh3_udp *u, const char *ip, uint16_t port) {
  if (!u) return SBH3_ERR_INVALID;
  ngtcp2_sockaddr_union sa;
  ngtcp2_socklen salen;
  if (parse_addr(&sa, &salen, ip, port) != 0) return SBH3_ERR_INVALID;
  if (connect(u->fd, &sa.sa, salen) != 0) return SBH3_ERR_SOCKET;
  u->connected = 1;
  return 0;
}

int sbh3_udp_refused(sbh3_udp *u) {
  if (!u) return SBH3_ERR_INVALID;
  u->refused = 1;
  return 0;
}

/* Receives up to IO_BATCH ready datagrams; returns how many, 0 when none, or -errno. */
static int udp_recv_batch(sbh3_udp *u) {
  for (int i = 0; i < IO_BATCH; i++) {
    u->iov[i].iov_base = u->rbuf + (size_t)i * IO_RECV_BYTES;
    u->iov[i].iov_len = IO_RECV_BYTES;
    memset(&u->msgs[i].msg_hdr, 0, sizeof(u->msgs[i].msg_hdr));
    u->msgs[i].msg_hdr.msg_iov = &u->iov[i];
    u->msgs[i].msg_hdr.msg_iovlen = 1;
    u->msgs[i].msg_hdr.msg_name = &u->addrs[i];
    u->msgs[i].msg_hdr.msg_namelen = sizeof(u->addrs[i]);
  }
  int n;
  do n = recvmmsg(u->fd, u->msgs, IO_BATCH, MSG_DONTWAIT, NULL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
  return n;
}

/* Sends message i's datagrams one sendmsg each (after the kernel refused UDP_SEGMENT). */
static void udp_send_split(sbh3_udp *u, int i) {
  struct msghdr h = u->msgs[i].msg_hdr;
  struct iovec v;
  uint8_t *p = u->iov[i].iov_base;
  size_t left = u->iov[i].iov_len;
  h.msg_control = NULL;
  h.msg_controllen = 0;
  h.msg_iov = &v;
  h.msg_iovlen = 1;
  while (left) {
    v.iov_base = p;
    v.iov_len = left < u->seg[i] ? left : u->seg[i];
    if (sendmsg(u->fd, &h, MSG_DONTWAIT) < 0 && errno == ECONNREFUSED) u->refused = 1;
    p += v.iov_len;
    left -= v.iov_len;
  }
}

/* Sends the first n prepared messages; a full socket buffer waits briefly, then the rest count as lost. */
static void udp_send_batch(sbh3_udp *u, int n) {
  for (int i = 0; i < n; i++) {
    struct msghdr *h = &u->msgs[i].msg_hdr;
    if (u->nsegs[i] > 1) {
      h->msg_control = u->ctrl[i].buf;
      h->msg_controllen = sizeof(u->ctrl[i].buf);
      struct cmsghdr *cm = CMSG_FIRSTHDR(h);
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      memcpy(CMSG_DATA(cm), &u->seg[i], sizeof(uint16_t));
    }
  }
  int off = 0, tries = 0;
  while (off < n) {
    int r = sendmmsg(u->fd, u->msgs + off, (unsigned)(n - off), MSG_DONTWAIT);
    if (r > 0) {
      off += r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && tries++ < 3) {
      struct pollfd p = {.fd = u->fd, .events = POLLOUT};
      poll(&p, 1, 5);
      continue;
    }
    /* No segmentation offload on this path: send this message's datagrams one by one, and never batch again. */
    if (r < 0 && u->nsegs[off] > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
      u->no_gso = 1;
      udp_send_split(u, off++);
      continue;
    }
    /* ECONNREFUSED is the ICMP error of an earlier datagram: keep it for io; skip this message. */
    if (r < 0 && errno == ECONNREFUSED) u->refused = 1;
    off++;
  }
}

/*
 * Adds len bytes at data (to `to`, NULL on a connected socket) to the batch of *n messages. A
 * datagram that directly follows the previous message's bytes, goes to the same peer and is no
 * longer than its segments joins that message (UDP_SEGMENT: the kernel splits it), as long as
 * every earlier segment was full-size; otherwise it starts a new message. Returns 1 when the
 * batch is full.
 */
static int udp_add(sbh3_udp *u, int *n, uint8_t *data, size_t len, const ngtcp2_sockaddr_union *to) {
  int i = *n - 1;
  if (i >= 0 && !u->no_gso) {
    struct iovec *v = &u->iov[i];
    const ngtcp2_sockaddr_union *prev = u->msgs[i].msg_hdr.msg_name;
    int same_peer = to ? prev && memcmp(prev, to, u->msgs[i].msg_hdr.msg_namelen) == 0 : !prev;
    if (same_peer && (uint8_t *)v->iov_base + v->iov_len == data && len <= u->seg[i] &&
        v->iov_len == (size_t)u->seg[i] * u->nsegs[i] && u->nsegs[i] < GSO_MAX_SEGS &&
        v->iov_len + len <= GSO_MAX_BYTES) {
      v->iov_len += len;
      u->nsegs[i]++;
      return 0;
    }
  }
  i = (*n)++;
  u->iov[i].iov_base = data;
  u->iov[i].iov_len = len;
  u->seg[i] = (uint16_t)len;
  u->nsegs[i] = 1;
  memset(&u->msgs[i].msg_hdr, 0, sizeof(u->msgs[i].msg_hdr));
  u->msgs[i].msg_hdr.msg_iov = &u->iov[i];
  u->msgs[i].msg_hdr.msg_iovlen = 1;
  if (to) {
    u->addrs[i] = *to;
    u->msgs[i].msg_hdr.msg_name = &u->addrs[i];
    u->msgs[i].msg_hdr.msg_namelen =
        to->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  }
  return *n == IO_BATCH;
}

/* Marks a client connection refused by the peer's host (ICMP port unreachable). */
static void conn_refused(sbh3_conn *c) {
  if (c->closed) return;
  c->closed = 1;
  c->close_deadline = now_ns();
  set_err(c, "Connection refused: nothing listens at the server's UDP port%s", "");
  evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, SBH3_ERR_REFUSED);
}

int sbh3_conn_io(sbh3_conn *c, sbh3_udp *u, const uint8_t *data, size_t len) {
  if (!c || !u || c->srv) return SBH3_ERR_INVALID;
  int got = 0;
  if (u->refused && u->connected) {
    u->refused = 0;
    conn_refused(c);
  }
  if (data && len && !c->closed) {
    got = 1;
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(c->qc, &c->ps.path, &pi, data, len, now_ns());
    if (rv != 0) conn_fail(c, rv);
  }
  while (!c->closed && got < IO_RECV_MAX) {
    int n = udp_recv_batch(u);
    if (n == -ECONNREFUSED) {
      conn_refused(c);
      break;
    }
    if (n <= 0) break;
    got += n;
    uint64_t now = now_ns();
    for (int i = 0; i < n && !c->closed; i++) {
      ngtcp2_pkt_info pi = {0};
      int rv = ngtcp2_conn_read_pkt(c->qc, &c->ps.path, &pi, u->iov[i].iov_base, u->msgs[i].msg_len, now);
      if (rv != 0) conn_fail(c, rv);
    }
    if (n < IO_BATCH) break;
  }
  conn_expire(c, now_ns());
  uint64_t now = now_ns();
  size_t used = 0;
  int nmsg = 0;
  for (;;) {
    size_t cap = IO_SEND_BYTES - used;
    int n = cap ? conn_write(c, u->sbuf + used, cap, now) : SBH3_ERR_BUFFER_TOO_SHORT;
    if (n > 0) {
      int full = udp_add(u, &nmsg, u->sbuf + used, (size_t)n, u->connected ? NULL : &c->ps.remote_addrbuf);
      used += (size_t)n;
      if (!full) continue;
    }
    if (nmsg) udp_send_batch(u, nmsg);
    if (n == SBH3_ERR_DONE || (n < 0 && n != SBH3_ERR_BUFFER_TOO_SHORT)) break;
    if (n == SBH3_ERR_BUFFER_TOO_SHORT && nmsg == 0) break;
    used = 0;
    nmsg = 0;
  }
  if (u->refused && u->connected) {
    u->refused = 0;
    conn_refused(c);
  }
  return got;
}

int sbh3_server_io(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
                   uint16_t from_port) {
  if (!srv || !u) return SBH3_ERR_INVALID;
  int got = 0;
  if (data && len) {
    ngtcp2_sockaddr_union from;
    ngtcp2_socklen fromlen;
    if (parse_addr(&from, &fromlen, from_ip, from_port) != 0) return SBH3_ERR_INVALID;
    server_recv_from(srv, data, len, &from, fromlen);
    got = 1;
  }
  while (got < IO_RECV_MAX) {
    int n = udp_recv_batch(u);
    if (n <= 0) break;
    got += n;
    for (int i = 0; i < n; i++) {
      server_recv_from(srv, u->iov[i].iov_base, u->msgs[i].msg_len, &u->addrs[i],
                       (ngtcp2_socklen)u->msgs[i].msg_hdr.msg_namelen);
    }
    if (n < IO_BATCH) break;
  }
  sbh3_server_on_timeout(srv);
  uint64_t now = now_ns();
  size_t used = 0;
  int nmsg = 0;
  for (;;) {
    size_t cap = IO_SEND_BYTES - used;
    const ngtcp2_sockaddr_union *to = NULL;
    uint32_t id;
    int n = cap ? server_write(srv, u->sbuf + used, cap, now, &to, &id) : SBH3_ERR_BUFFER_TOO_SHORT;
    if (n > 0) {
      int full = udp_add(u, &nmsg, u->sbuf + used, (size_t)n, to);
      used += (size_t)n;
      if (!full) continue;
    }
    if (nmsg) udp_send_batch(u, nmsg);
    if (n == SBH3_ERR_DONE || (n < 0 && n != SBH3_ERR_BUFFER_TOO_SHORT)) break;
    if (n == SBH3_ERR_BUFFER_TOO_SHORT && nmsg == 0) break;
    used = 0;
    nmsg = 0;
  }
  return got;
}
