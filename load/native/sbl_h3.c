/*
 * sbh3_load: the HTTP/3 load engine. Each connection is an sbh3 client
 * connection on the engine's own connected UDP socket, driven through the
 * module's public API (sbh3.h: sbh3_conn_io, sbh3_conn_drain and
 * sbh3_conn_flush for batched receive, timers and send; sbh3_conn_poll for
 * finished responses) by the shared worker loop in
 * transports/native/sbl_load.c. Its byte counts are HTTP message bytes (header
 * blocks and bodies): the module does not report datagram bytes.
 */
#define _GNU_SOURCE
#include "sbl_load.h"
#include "../../transports/native/sbwire.h"
#include "../../transports/h3/native/sbh3.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define EVBUF_LEN 65536

typedef struct h3_worker {
  sbh3_config *cfg;
  uint8_t *ev;
  size_t evcap;
} h3_worker;

typedef struct h3_conn {
  sbl_conn base;
  sbh3_conn *q;
  sbh3_udp *u;
  int goaway;
  /* UDP payload bytes already counted, each way (the engine counts bytes on the wire). */
  uint64_t counted_out, counted_in;
} h3_conn;

static void *h3_worker_new(sbl_worker *w, const sbl_plan *p, char *err, size_t errcap) {
  (void)w;
  h3_worker *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->cfg = sbh3_config_new(0);
  st->ev = malloc(EVBUF_LEN);
  st->evcap = EVBUF_LEN;
  if (!st->cfg || !st->ev) {
    snprintf(err, errcap, "cannot create an HTTP/3 client configuration");
    goto fail;
  }
  if (p->ca_len && sbh3_config_add_ca(st->cfg, p->ca, p->ca_len) <= 0) {
    snprintf(err, errcap, "no CA certificate could be read");
    goto fail;
  }
  if (p->cert_len && sbh3_config_set_cert(st->cfg, p->cert, p->cert_len, p->key, p->key_len) < 0) {
    snprintf(err, errcap, "the client certificate or key could not be read");
    goto fail;
  }
  sbh3_config_set_verify(st->cfg, (p->flags & SBL_PLAN_INSECURE) ? SBWIRE_TLS_VERIFY_NONE : SBWIRE_TLS_VERIFY_PEER);
  if (p->max_body) sbh3_config_set_max_body(st->cfg, p->max_body);
  return st;
fail:
  sbh3_config_free(st->cfg);
  free(st->ev);
  free(st);
  return NULL;
}

static void h3_worker_free(void *state) {
  h3_worker *st = state;
  if (!st) return;
  sbh3_config_free(st->cfg);
  free(st->ev);
  free(st);
}

/* Reads the :status field of a header block; 0 when absent or malformed. */
static int block_status(const uint8_t *b, uint32_t len) {
  if (sbwire_count_fields(b, len) < 0) return 0;
  for (size_t off = 0; off < len;) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(b, &off, &name, &nl, &value, &vl);
    if (nl == 7 && memcmp(name, ":status", 7) == 0) {
      int st = 0;
      for (size_t i = 0; i < vl && i < 3; i++) st = st * 10 + (value[i] - '0');
      return st;
    }
  }
  return 0;
}

static int kind_of(int code, int up) {
  switch (code) {
  case SBWIRE_ERR_REFUSED:
  case SBWIRE_ERR_SOCKET:
    return up ? SBL_ERRK_CLOSED : SBL_ERRK_CONNECT;
  case SBWIRE_ERR_TLS:
    return SBL_ERRK_TLS;
  case SBWIRE_ERR_PROTO:
    return SBL_ERRK_PROTO;
  case SBWIRE_ERR_IDLE:
    return up ? SBL_ERRK_TIMEOUT : SBL_ERRK_CONNECT;
  default:
    return up ? SBL_ERRK_CLOSED : SBL_ERRK_CONNECT;
  }
}

/* Counts the UDP payload bytes sent and received since the last call. */
static void count_wire(sbl_conn *c) {
  h3_conn *h = (h3_conn *)c;
  uint64_t st[SBH3_STAT_BYTES_RECV + 1];
  if (sbh3_conn_stats(h->q, st, SBH3_STAT_BYTES_RECV + 1) <= SBH3_STAT_BYTES_RECV) return;
  sbl_conn_bytes(c, st[SBH3_STAT_BYTES_RECV] - h->counted_in, st[SBH3_STAT_BYTES_SENT] - h->counted_out);
  h->counted_in = st[SBH3_STAT_BYTES_RECV];
  h->counted_out = st[SBH3_STAT_BYTES_SENT];
}

/* What one drive() moves: datagrams in, out, or both. */
enum { DRIVE_READ = 1, DRIVE_SEND = 2, DRIVE_BOTH = 3 };

/*
 * Moves datagrams (receives every ready one, runs timers and sends all that is due, or one half), hands
 * finished responses to the engine and re-arms the timer.
 */
static void drive(sbl_conn *c, int what) {
  h3_conn *h = (h3_conn *)c;
  h3_worker *st = sbl_worker_state(c->w);
  if (what == DRIVE_BOTH) sbh3_conn_io(h->q, h->u, NULL, 0);
  else if (what == DRIVE_READ) sbh3_conn_drain(h->q, h->u);
  else sbh3_conn_flush(h->q, h->u);
  count_wire(c);
  for (;;) {
    int n = sbh3_conn_poll(h->q, st->ev, st->evcap);
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
      uint64_t need = (uint64_t)sbwire_get_u32(st->ev) | (uint64_t)sbwire_get_u32(st->ev + 4) << 32;
      uint8_t *nb = realloc(st->ev, need);
      if (!nb) {
        sbl_conn_failed(c, SBL_ERRK_OTHER, "out of memory");
        return;
      }
      st->ev = nb;
      st->evcap = need;
      continue;
    }
    if (n < 0) break;
    sbwire_event e;
    for (size_t off = 0; sbwire_next_event(st->ev, (size_t)n, &off, &e);) {
      if (e.type == SBH3_EV_CONNECTED) {
        sbl_conn_handshaken(c);
      } else if (e.type == SBH3_EV_MESSAGE) {
        sbl_req *r = sbl_conn_find(c, e.stream_id);
        if (r) sbl_req_done(c, r, block_status(e.hdr, e.hdr_len), e.body_len);
      } else if (e.type == SBH3_EV_RESET) {
        sbl_req *r = sbl_conn_find(c, e.stream_id);
        if (r) sbl_req_failed(c, r, SBL_ERRK_RESET);
      } else if (e.type == SBH3_EV_CLOSED) {
        char text[200] = "";
        int tl = sbh3_conn_error(h->q, (uint8_t *)text, sizeof text - 1);
        text[tl > 0 ? tl : 0] = 0;
        sbl_conn_failed(c, kind_of((int)e.code, c->up), text[0] ? text : "the connection closed");
        return;
      } else if (e.type == SBH3_EV_GOAWAY) {
        h->goaway = 1;
      }
    }
  }
  if (h->goaway && c->inflight == 0) {
    sbl_conn_failed(c, SBL_ERRK_CLOSED, "the server sent GOAWAY");
    return;
  }
  int ms = sbh3_conn_timeout_ms(h->q);
  c->timer_ns = ms >= 0 ? sbl_now() + (uint64_t)ms * 1000000ull : 0;
  if (ms == 0) c->timer_ns = sbl_now() + 100000ull; /* sub-millisecond: look again soon */
}

static int h3_conn_open(sbl_conn *c) {
  const sbl_plan *p = sbl_worker_plan(c->w);
  h3_conn *h = (h3_conn *)c;
  h3_worker *st = sbl_worker_state(c->w);
  struct sockaddr_storage ss = {0}, local = {0};
  socklen_t sl, ll = sizeof local;
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
  char lip[INET6_ADDRSTRLEN] = "";
  uint16_t lport = 0;
  c->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&ss, sl) != 0 ||
      getsockname(c->fd, (struct sockaddr *)&local, &ll) != 0) {
    char t[128];
    snprintf(t, sizeof t, "udp socket: %s", strerror(errno));
    sbl_conn_failed(c, SBL_ERRK_CONNECT, t);
    return -1;
  }
  if (local.ss_family == AF_INET) {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&local)->sin_addr, lip, sizeof lip);
    lport = ntohs(((struct sockaddr_in *)&local)->sin_port);
  } else {
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&local)->sin6_addr, lip, sizeof lip);
    lport = ntohs(((struct sockaddr_in6 *)&local)->sin6_port);
  }
  h->q = sbh3_conn_new_client(st->cfg, p->sni, lip, lport, p->host, (uint16_t)p->port);
  h->u = h->q ? sbh3_udp_adopt(lip, lport) : NULL;
  if (!h->q || !h->u || sbh3_udp_connect(h->u, p->host, (uint16_t)p->port) != 0) {
    sbl_conn_failed(c, SBL_ERRK_OTHER, "cannot start a QUIC connection");
    return -1;
  }
  sbl_conn_watch(c, 0);
  drive(c, DRIVE_BOTH);
  return 0;
}

/*
 * Datagrams came in. On an established connection they are only read here: what they ask to send (the
 * ACK of an answer) leaves after the engine has issued the requests the answers freed room for
 * (c->dirty: flushed at the end of the engine's dispatch), in one datagram with them. Sent at once, the
 * ACK left alone and woke the server for nothing: two datagrams per request each way instead of one.
 */
static void h3_conn_io(sbl_conn *c, uint32_t events) {
  (void)events;
  if (!c->up) {
    drive(c, DRIVE_BOTH);
    return;
  }
  drive(c, DRIVE_READ);
  c->dirty = 1;
}

static void h3_conn_timer(sbl_conn *c) { drive(c, DRIVE_BOTH); }

static int h3_conn_submit(sbl_conn *c, sbl_req *r) {
  h3_conn *h = (h3_conn *)c;
  const sbl_plan *p = sbl_worker_plan(c->w);
  if (h->goaway) return 1;
  int64_t sid = sbh3_conn_request(h->q, p->hdrs, p->hdrs_len, p->body, p->body_len);
  if (sid == SBWIRE_ERR_STREAM_BLOCKED) return 1;
  if (sid < 0) {
    sbl_conn_failed(c, SBL_ERRK_CLOSED, "cannot open a request stream");
    return 0;
  }
  r->stream_id = sid;
  return 0;
}

/* Sends what is due (new requests, ACKs): the socket was read to its end when datagrams last came in. */
static void h3_conn_flush(sbl_conn *c) { drive(c, c->up ? DRIVE_SEND : DRIVE_BOTH); }

static void h3_conn_cancel(sbl_conn *c, sbl_req *r) {
  h3_conn *h = (h3_conn *)c;
  if (h->q && r->stream_id >= 0) sbh3_conn_cancel(h->q, r->stream_id);
}

static void h3_conn_free(sbl_conn *c) {
  h3_conn *h = (h3_conn *)c;
  /* A live connection ends with CONNECTION_CLOSE (H3_NO_ERROR), so the server lets its streams go now:
   * the ACK of the last answers may not be due yet, and left alone the server kept them open. */
  if (h->q && h->u && !c->dead) {
    sbh3_conn_shutdown(h->q);
    sbh3_conn_flush(h->q, h->u);
  }
  sbh3_udp_free(h->u);
  h->u = NULL;
  sbh3_conn_free(h->q);
  h->q = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* The server's initial_max_streams_bidi once its transport parameters came; 0 before. */
static uint32_t h3_conn_stream_limit(sbl_conn *c) {
  h3_conn *h = (h3_conn *)c;
  uint64_t n = h->q ? sbh3_conn_peer_max_streams_bidi(h->q) : 0;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static const sbl_proto H3_PROTO = {
    .conn_size = sizeof(h3_conn),
    .worker_new = h3_worker_new,
    .worker_free = h3_worker_free,
    .conn_open = h3_conn_open,
    .conn_io = h3_conn_io,
    .conn_timer = h3_conn_timer,
    .conn_submit = h3_conn_submit,
    .conn_flush = h3_conn_flush,
    .conn_cancel = h3_conn_cancel,
    .conn_free = h3_conn_free,
    .conn_stream_limit = h3_conn_stream_limit,
};

/* The module's exported engine API, sbh3_load_* (sbl_load.h). */
SBL_DEFINE_LOAD_API(sbh3, H3_PROTO)
