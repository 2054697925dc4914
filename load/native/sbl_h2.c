/*
 * sbh2_load: the HTTP/2 load engine. nghttp2 client sessions on the engine's
 * own non-blocking TCP sockets, h2c with prior knowledge or h2 over TLS
 * through the module's TLS layer (sbh2_tls.h), driven by the shared worker
 * loop in transports/native/sbl_load.c. Per request nothing is copied but the
 * request body; responses are counted, not kept.
 */
#define _GNU_SOURCE
#include "sbl_load.h"
#include "../../transports/native/sbwire.h"
#include "../../transports/h2/native/sbh2_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF_LEN 65536
#define WBUF_LEN 65536
#define READS_PER_WAKE 8
#define WINDOW ((1 << 30) - 1)
#define PLAIN_LEN 65536

typedef struct h2_worker {
  nghttp2_session_callbacks *cbs;
  nghttp2_nv *nva;
  size_t nvlen;
  const sbl_plan *plan;
  sbh2_tls_config *tls; /* NULL for h2c */
  uint8_t rbuf[RBUF_LEN];
  uint8_t plain[PLAIN_LEN]; /* decrypted input, or encrypted output */
} h2_worker;

typedef struct h2_conn {
  sbl_conn base;
  nghttp2_session *s;
  sbh2_tls *tls;
  uint8_t *wbuf;
  size_t wlen, woff, wcap;
  int connected, goaway;
} h2_conn;

static h2_worker *state_of(sbl_conn *c) { return sbl_worker_state(c->w); }

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *ud) {
  (void)flags;
  (void)ud;
  if (f->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7) != 0) return 0;
  sbl_req *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!r) return 0;
  int st = 0;
  for (size_t i = 0; i < valuelen && i < 3; i++) st = st * 10 + (value[i] - '0');
  if (st >= 200 || r->status == 0) r->status = st; /* a final status replaces 1xx */
  return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *ud) {
  (void)flags;
  (void)data;
  (void)ud;
  sbl_req *r = nghttp2_session_get_stream_user_data(s, id);
  if (r) r->rx += len;
  return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
  (void)s;
  h2_conn *h = ud;
  if (f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) sbl_conn_first_byte(&h->base);
  if (f->hd.type == NGHTTP2_GOAWAY) h->goaway = 1;
  return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
  h2_conn *h = ud;
  sbl_req *r = nghttp2_session_get_stream_user_data(s, id);
  if (!r || !r->busy) return 0;
  nghttp2_session_set_stream_user_data(s, id, NULL);
  if (code == NGHTTP2_NO_ERROR && r->status > 0) sbl_req_done(&h->base, r, r->status, r->rx);
  else sbl_req_failed(&h->base, r, SBL_ERRK_RESET);
  return 0;
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *ud) {
  (void)s;
  (void)id;
  (void)ud;
  sbl_req *r = src->ptr;
  h2_conn *h = ud;
  const sbl_plan *p = state_of(&h->base)->plan;
  size_t left = p->body_len - r->body_off;
  if (len > left) len = left;
  memcpy(buf, p->body + r->body_off, len);
  r->body_off += (uint32_t)len;
  if (r->body_off == p->body_len) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)len;
}

static void *h2_worker_new(sbl_worker *w, const sbl_plan *p, char *err, size_t errcap) {
  (void)w;
  h2_worker *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->plan = p;
  if (p->flags & SBL_PLAN_TLS) {
    st->tls = sbh2_tls_config_new(0);
    const char *why = !st->tls ? "cannot create a TLS configuration"
                      : p->ca_len && sbh2_tls_config_add_ca(st->tls, p->ca, p->ca_len) <= 0
                          ? "no CA certificate could be read"
                      : p->cert_len && sbh2_tls_config_set_cert(st->tls, p->cert, p->cert_len, p->key, p->key_len) < 0
                          ? "the client certificate or key could not be read"
                          : NULL;
    if (!why) {
      sbh2_tls_config_set_verify(st->tls, (p->flags & SBL_PLAN_INSECURE) ? SBWIRE_TLS_VERIFY_NONE : SBWIRE_TLS_VERIFY_PEER);
    } else {
      snprintf(err, errcap, "%s", why);
      sbh2_tls_config_free(st->tls);
      free(st);
      return NULL;
    }
  }
  long n = sbwire_count_fields(p->hdrs, p->hdrs_len);
  st->nva = n > 0 ? calloc((size_t)n, sizeof(nghttp2_nv)) : NULL;
  if (!st->nva || nghttp2_session_callbacks_new(&st->cbs) != 0) {
    free(st->nva);
    sbh2_tls_config_free(st->tls);
    free(st);
    snprintf(err, errcap, n > 0 ? "out of memory" : "malformed request header block");
    return NULL;
  }
  for (size_t off = 0; off < p->hdrs_len;) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(p->hdrs, &off, &name, &nl, &value, &vl);
    nghttp2_nv *nv = &st->nva[st->nvlen++];
    nv->name = (uint8_t *)name;
    nv->namelen = nl;
    nv->value = (uint8_t *)value;
    nv->valuelen = vl;
    nv->flags = NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE;
  }
  nghttp2_session_callbacks_set_on_header_callback(st->cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(st->cbs, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(st->cbs, on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(st->cbs, on_close);
  return st;
}

static void h2_worker_free(void *state) {
  h2_worker *st = state;
  if (!st) return;
  nghttp2_session_callbacks_del(st->cbs);
  sbh2_tls_config_free(st->tls);
  free(st->nva);
  free(st);
}

static int h2_conn_open(sbl_conn *c) {
  const sbl_plan *p = sbl_worker_plan(c->w);
  struct sockaddr_storage ss = {0};
  socklen_t sl;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, p->host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p->port);
    sl = sizeof *a4;
  } else if (inet_pton(AF_INET6, p->host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p->port);
    sl = sizeof *a6;
  } else {
    sbl_conn_failed(c, SBL_ERRK_CONNECT, "bad address");
    return -1;
  }
  c->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    sbl_conn_failed(c, SBL_ERRK_CONNECT, strerror(errno));
    return -1;
  }
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c->fd, (struct sockaddr *)&ss, sl) != 0 && errno != EINPROGRESS) {
    char t[128];
    snprintf(t, sizeof t, "connect: %s", strerror(errno));
    sbl_conn_failed(c, SBL_ERRK_CONNECT, t);
    return -1;
  }
  sbl_conn_watch(c, 1);
  return 0;
}

/* Appends bytes to the connection's output buffer; 0 or -1 without memory. */
static int out_append(h2_conn *h, const uint8_t *d, size_t n) {
  if (h->wlen + n > h->wcap) {
    size_t cap = h->wcap ? h->wcap : WBUF_LEN;
    while (cap < h->wlen + n) cap *= 2;
    uint8_t *nb = realloc(h->wbuf, cap);
    if (!nb) return -1;
    h->wbuf = nb;
    h->wcap = cap;
  }
  memcpy(h->wbuf + h->wlen, d, n);
  h->wlen += n;
  return 0;
}

/* Encrypts plaintext (may be empty) and appends every pending TLS record; 0 or -1 (the connection failed). */
static int tls_out(sbl_conn *c, const uint8_t *d, size_t n) {
  h2_conn *h = (h2_conn *)c;
  h2_worker *st = state_of(c);
  for (int first = 1;; first = 0) {
    int m = sbh2_tls_send(h->tls, first ? d : NULL, first ? (uint32_t)n : 0, st->plain, PLAIN_LEN);
    if (m == SBWIRE_ERR_DONE) return 0;
    if (m < 0) {
      char t[200] = "";
      int tl = sbh2_tls_error(h->tls, (uint8_t *)t, sizeof t - 1);
      t[tl > 0 ? tl : 0] = 0;
      sbl_conn_failed(c, c->up ? SBL_ERRK_PROTO : SBL_ERRK_TLS, t[0] ? t : "TLS failed");
      return -1;
    }
    if (out_append(h, st->plain, (size_t)m) != 0) {
      sbl_conn_failed(c, SBL_ERRK_OTHER, "out of memory");
      return -1;
    }
  }
}

/* Writes pending output; nghttp2's output (encrypted under TLS) is gathered into one buffer per write. */
static void h2_conn_flush(sbl_conn *c) {
  h2_conn *h = (h2_conn *)c;
  if (!h->connected || c->dead) return;
  for (;;) {
    while (h->woff < h->wlen) {
      ssize_t n = write(c->fd, h->wbuf + h->woff, h->wlen - h->woff);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          sbl_conn_watch(c, 1);
          return;
        }
        if (errno == EINTR) continue;
        char t[128];
        snprintf(t, sizeof t, "write: %s", strerror(errno));
        sbl_conn_failed(c, SBL_ERRK_CLOSED, t);
        return;
      }
      h->woff += (size_t)n;
      sbl_conn_bytes(c, 0, (uint64_t)n);
    }
    h->wlen = h->woff = 0;
    if (h->tls && !h->s && tls_out(c, NULL, 0) != 0) return; /* handshake records */
    while (h->s && h->wlen < WBUF_LEN) {
      const uint8_t *d;
      ssize_t n = nghttp2_session_mem_send(h->s, &d);
      if (n < 0) {
        sbl_conn_failed(c, SBL_ERRK_PROTO, nghttp2_strerror((int)n));
        return;
      }
      if (n == 0) break;
      if (h->tls ? tls_out(c, d, (size_t)n) != 0 : out_append(h, d, (size_t)n) != 0) {
        if (!c->dead) sbl_conn_failed(c, SBL_ERRK_OTHER, "out of memory");
        return;
      }
    }
    if (h->wlen == 0) {
      sbl_conn_watch(c, 0);
      return;
    }
  }
}

static int start_session(sbl_conn *c) {
  h2_conn *h = (h2_conn *)c;
  h2_worker *st = state_of(c);
  nghttp2_option *opt = NULL;
  if (nghttp2_option_new(&opt) != 0) return -1;
  nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
  int rv = nghttp2_session_client_new2(&h->s, st->cbs, h, opt);
  nghttp2_option_del(opt);
  if (rv != 0) return -1;
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW}};
  if (nghttp2_submit_settings(h->s, NGHTTP2_FLAG_NONE, iv, 2) != 0) return -1;
  if (nghttp2_session_set_local_window_size(h->s, NGHTTP2_FLAG_NONE, 0, WINDOW) != 0) return -1;
  return 0;
}

/* Starts HTTP/2 once the transport is ready: at connect for h2c, after the handshake under TLS. */
static void session_up(sbl_conn *c) {
  if (start_session(c) != 0) {
    sbl_conn_failed(c, SBL_ERRK_OTHER, "cannot start an HTTP/2 session");
    return;
  }
  sbl_conn_handshaken(c);
}

/* Hands received bytes to the session, through TLS when there is one; 0 or -1 (the connection failed). */
static int feed(sbl_conn *c, const uint8_t *d, size_t n) {
  h2_conn *h = (h2_conn *)c;
  h2_worker *st = state_of(c);
  if (!h->tls) {
    ssize_t rv = nghttp2_session_mem_recv(h->s, d, n);
    if (rv < 0) sbl_conn_failed(c, SBL_ERRK_PROTO, nghttp2_strerror((int)rv));
    return rv < 0 ? -1 : 0;
  }
  for (int first = 1;; first = 0) {
    int m = sbh2_tls_recv(h->tls, first ? d : NULL, first ? (uint32_t)n : 0, st->plain, PLAIN_LEN);
    if (m < 0) {
      char t[200] = "";
      int tl = sbh2_tls_error(h->tls, (uint8_t *)t, sizeof t - 1);
      t[tl > 0 ? tl : 0] = 0;
      sbl_conn_failed(c, c->up ? SBL_ERRK_PROTO : SBL_ERRK_TLS, t[0] ? t : "TLS failed");
      return -1;
    }
    if (!h->s && (sbh2_tls_state(h->tls) & SBWIRE_TLS_ESTABLISHED)) {
      session_up(c);
      if (c->dead) return -1;
    }
    if (m > 0 && h->s) {
      ssize_t rv = nghttp2_session_mem_recv(h->s, st->plain, (size_t)m);
      if (rv < 0) {
        sbl_conn_failed(c, SBL_ERRK_PROTO, nghttp2_strerror((int)rv));
        return -1;
      }
    }
    if (m < PLAIN_LEN) break;
  }
  if (sbh2_tls_state(h->tls) & SBWIRE_TLS_PEER_CLOSED) {
    sbl_conn_failed(c, SBL_ERRK_CLOSED, "the server closed the TLS session");
    return -1;
  }
  return 0;
}

static void h2_conn_io(sbl_conn *c, uint32_t events) {
  h2_conn *h = (h2_conn *)c;
  h2_worker *st = state_of(c);
  if (!h->connected) {
    int err = 0;
    socklen_t el = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) {
      char t[128];
      snprintf(t, sizeof t, "connect: %s", strerror(err));
      sbl_conn_failed(c, SBL_ERRK_CONNECT, t);
      return;
    }
    if (!(events & EPOLLOUT)) return;
    h->connected = 1;
    sbl_conn_connected(c);
    if (st->tls) {
      h->tls = sbh2_tls_new(st->tls, st->plan->sni, NULL, 0);
      if (!h->tls) {
        sbl_conn_failed(c, SBL_ERRK_TLS, "cannot start TLS");
        return;
      }
    } else {
      session_up(c);
      if (c->dead) return;
    }
    h2_conn_flush(c);
    return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
    for (int i = 0; i < READS_PER_WAKE && !c->dead; i++) {
      ssize_t n = read(c->fd, st->rbuf, RBUF_LEN);
      if (n > 0) {
        sbl_conn_bytes(c, (uint64_t)n, 0);
        if (feed(c, st->rbuf, (size_t)n) != 0) return;
        if (n < RBUF_LEN) break;
        continue;
      }
      if (n == 0) {
        sbl_conn_failed(c, c->up ? SBL_ERRK_CLOSED : SBL_ERRK_TLS, "the server closed the connection");
        return;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      char t[128];
      snprintf(t, sizeof t, "read: %s", strerror(errno));
      sbl_conn_failed(c, SBL_ERRK_CLOSED, t);
      return;
    }
  }
  if (c->dead) return;
  h2_conn_flush(c);
  if (!c->dead && h->goaway && c->inflight == 0)
    sbl_conn_failed(c, SBL_ERRK_CLOSED, "the server sent GOAWAY");
}

static void h2_conn_timer(sbl_conn *c) { (void)c; }

static int h2_conn_submit(sbl_conn *c, sbl_req *r) {
  h2_conn *h = (h2_conn *)c;
  h2_worker *st = state_of(c);
  if (h->goaway) return 1;
  nghttp2_data_provider prd = {.source.ptr = r, .read_callback = read_body};
  int32_t id = nghttp2_submit_request(h->s, NULL, st->nva, st->nvlen, st->plan->body_len ? &prd : NULL, r);
  if (id < 0) {
    sbl_conn_failed(c, SBL_ERRK_OTHER, nghttp2_strerror(id));
    return 0;
  }
  r->stream_id = id;
  return 0;
}

static void h2_conn_cancel(sbl_conn *c, sbl_req *r) {
  h2_conn *h = (h2_conn *)c;
  if (!h->s || r->stream_id < 0) return;
  nghttp2_session_set_stream_user_data(h->s, (int32_t)r->stream_id, NULL);
  nghttp2_submit_rst_stream(h->s, NGHTTP2_FLAG_NONE, (int32_t)r->stream_id, NGHTTP2_CANCEL);
}

static void h2_conn_free(sbl_conn *c) {
  h2_conn *h = (h2_conn *)c;
  nghttp2_session_del(h->s);
  h->s = NULL;
  sbh2_tls_free(h->tls);
  h->tls = NULL;
  free(h->wbuf);
  h->wbuf = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* SETTINGS_MAX_CONCURRENT_STREAMS once the server's SETTINGS came; 0 before. */
static uint32_t h2_conn_stream_limit(sbl_conn *c) {
  h2_conn *h = (h2_conn *)c;
  if (!h->s || !c->t_first_byte) return 0;
  return nghttp2_session_get_remote_settings(h->s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

static const sbl_proto H2_PROTO = {
    .conn_size = sizeof(h2_conn),
    .worker_new = h2_worker_new,
    .worker_free = h2_worker_free,
    .conn_open = h2_conn_open,
    .conn_io = h2_conn_io,
    .conn_timer = h2_conn_timer,
    .conn_submit = h2_conn_submit,
    .conn_flush = h2_conn_flush,
    .conn_cancel = h2_conn_cancel,
    .conn_free = h2_conn_free,
    .conn_stream_limit = h2_conn_stream_limit,
};

/* The module's exported engine API, sbh2_load_* (sbl_load.h). */
SBL_DEFINE_LOAD_API(sbh2, H2_PROTO)
