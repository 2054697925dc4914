/* sbdh3: nghttp3 over QUIC streams the caller carries (see sbdh3.h). */
#include "sbdh3.h"

#include <nghttp3/nghttp3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../native/sbwire.h"

#define SBDH3_VERSION "0.1.0"

typedef struct {
  uint8_t *p;
  size_t len, cap;
} buf_t;

typedef struct stream {
  int64_t id;
  buf_t hdr, body;
  uint64_t cl;                 /* declared content-length, UINT64_MAX when none */
  int done;                    /* its message went up in an event */
  int aborted;                 /* its body passed the limit: the rest is dropped */
  uint8_t *out;                /* the body we send (copied) */
  size_t out_len;
  struct stream *prev, *next;  /* every stream of the connection */
} stream_t;

typedef struct event {
  uint32_t type;
  int64_t stream_id;
  int64_t code;
  buf_t hdr, body;
  struct event *next;
} event_t;

struct sbdh3_conn {
  nghttp3_conn *hc;
  int server;
  uint64_t max_body, max_field;
  stream_t *streams;
  int nstreams;
  event_t *head, *tail;
  uint64_t error_code;
  int goaway;
};

static void buf_free(buf_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

static int buf_reserve(buf_t *b, size_t more) {
  if (b->len + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + more) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static int buf_append(buf_t *b, const uint8_t *data, size_t len) {
  if (buf_reserve(b, len) != 0) return -1;
  memcpy(b->p + b->len, data, len);
  b->len += len;
  return 0;
}

static event_t *event_push(sbdh3_conn *c, uint32_t type, int64_t stream_id, int64_t code) {
  event_t *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->type = type;
  e->stream_id = stream_id;
  e->code = code;
  if (c->tail) c->tail->next = e;
  else c->head = e;
  c->tail = e;
  return e;
}

static void event_free(event_t *e) {
  buf_free(&e->hdr);
  buf_free(&e->body);
  free(e);
}

static stream_t *stream_new(sbdh3_conn *c, int64_t id) {
  stream_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->id = id;
  s->cl = UINT64_MAX;
  s->next = c->streams;
  if (c->streams) c->streams->prev = s;
  c->streams = s;
  c->nstreams++;
  return s;
}

static void stream_free(sbdh3_conn *c, stream_t *s) {
  if (s->prev) s->prev->next = s->next;
  else c->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  buf_free(&s->hdr);
  buf_free(&s->body);
  free(s->out);
  free(s);
  c->nstreams--;
}

/* Moves a stream's message (headers, and body unless dropped) into an event of type. */
static int stream_emit(sbdh3_conn *c, stream_t *s, uint32_t type, int64_t code) {
  event_t *e = event_push(c, type, s->id, code);
  if (!e) return NGHTTP3_ERR_NOMEM;
  e->hdr = s->hdr;
  e->body = s->body;
  memset(&s->hdr, 0, sizeof s->hdr);
  memset(&s->body, 0, sizeof s->body);
  s->done = 1;
  return 0;
}

/* ---- nghttp3 callbacks ------------------------------------------------ */

static int cb_stream_close(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  sbdh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (!s) return 0;
  if (!s->done && !c->server && !event_push(c, SBWIRE_EV_RESET, stream_id, (int64_t)app_error_code))
    return NGHTTP3_ERR_NOMEM;
  stream_free(c, s);
  return 0;
}

static int cb_begin_headers(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  sbdh3_conn *c = user_data;
  if (!c->server || stream_user_data) return 0;
  stream_t *s = stream_new(c, stream_id);
  if (!s) return NGHTTP3_ERR_NOMEM;
  return nghttp3_conn_set_stream_user_data(hc, stream_id, s) == 0 ? 0 : NGHTTP3_ERR_NOMEM;
}

static int cb_recv_header(nghttp3_conn *hc, int64_t stream_id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)flags;
  sbdh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (!s || s->done) return 0;
  nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
  if (s->hdr.len + SBWIRE_FIELD_PREFIX_LEN + n.len + v.len > c->max_field) {
    /* The section is over the limit: give up the stream, keep the connection. */
    buf_free(&s->hdr);
    s->done = 1;
    return event_push(c, SBWIRE_EV_RESET, stream_id, NGHTTP3_H3_EXCESSIVE_LOAD) ? 0 : NGHTTP3_ERR_NOMEM;
  }
  if (buf_reserve(&s->hdr, SBWIRE_FIELD_PREFIX_LEN + n.len + v.len) != 0) return NGHTTP3_ERR_NOMEM;
  s->hdr.len += sbwire_put_field(s->hdr.p + s->hdr.len, n.base, n.len, v.base, v.len);
  if (token == NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH && v.len > 0 && v.len < 20) {
    char tmp[24];
    memcpy(tmp, v.base, v.len);
    tmp[v.len] = 0;
    s->cl = strtoull(tmp, NULL, 10);
  }
  return 0;
}

static int cb_recv_data(nghttp3_conn *hc, int64_t stream_id, const uint8_t *data, size_t len, void *user_data,
                        void *stream_user_data) {
  sbdh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (!s || s->done || s->aborted) return 0;
  if (s->body.len + len > c->max_body || (s->cl != UINT64_MAX && s->cl > c->max_body)) {
    s->aborted = 1;
    buf_free(&s->body);
    nghttp3_conn_shutdown_stream_read(hc, stream_id);
    /* Server: the caller answers 413 from the headers (RFC 9114 §4.1.2); client: the response is refused. */
    if (c->server) return stream_emit(c, s, SBWIRE_EV_TOO_LARGE, 0);
    buf_free(&s->hdr);
    s->done = 1;
    return event_push(c, SBWIRE_EV_RESET, stream_id, NGHTTP3_H3_EXCESSIVE_LOAD) ? 0 : NGHTTP3_ERR_NOMEM;
  }
  return buf_append(&s->body, data, len) == 0 ? 0 : NGHTTP3_ERR_NOMEM;
}

static int cb_end_stream(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  stream_t *s = stream_user_data;
  if (!s || s->done || s->aborted) return 0;
  return stream_emit(user_data, s, SBWIRE_EV_MESSAGE, 0);
}

static int cb_reset_stream(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  sbdh3_conn *c = user_data;
  stream_t *s = stream_user_data;
  if (s) s->done = 1;
  return event_push(c, SBWIRE_EV_RESET, stream_id, (int64_t)app_error_code) ? 0 : NGHTTP3_ERR_NOMEM;
}

static int cb_shutdown(nghttp3_conn *hc, int64_t id, void *user_data) {
  (void)hc;
  (void)id;
  sbdh3_conn *c = user_data;
  if (c->server || c->goaway) return 0;
  c->goaway = 1;
  return event_push(c, SBWIRE_EV_GOAWAY, -1, 0) ? 0 : NGHTTP3_ERR_NOMEM;
}

static nghttp3_ssize read_body(nghttp3_conn *hc, int64_t stream_id, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *pflags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  (void)veccnt;
  (void)user_data;
  stream_t *s = stream_user_data;
  *pflags |= NGHTTP3_DATA_FLAG_EOF;
  if (!s || s->out_len == 0) return 0;
  vec[0].base = s->out;
  vec[0].len = s->out_len;
  return 1;
}

/* ---- API -------------------------------------------------------------- */

const char *sbdh3_version(void) {
  static char v[64];
  if (!v[0]) snprintf(v, sizeof v, "sbdh3 %s, nghttp3 %s", SBDH3_VERSION, nghttp3_version(0)->version_str);
  return v;
}

sbdh3_conn *sbdh3_conn_new(int server, uint64_t max_body, uint64_t max_field_section) {
  sbdh3_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->server = server != 0;
  c->max_body = max_body;
  c->max_field = max_field_section ? max_field_section : 65536;
  nghttp3_callbacks cb = {
      .stream_close = cb_stream_close,
      .recv_data = cb_recv_data,
      .begin_headers = cb_begin_headers,
      .recv_header = cb_recv_header,
      .end_stream = cb_end_stream,
      .reset_stream = cb_reset_stream,
      .shutdown = cb_shutdown,
  };
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.max_field_section_size = c->max_field;
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  int rv = c->server ? nghttp3_conn_server_new(&c->hc, &cb, &settings, nghttp3_mem_default(), c)
                     : nghttp3_conn_client_new(&c->hc, &cb, &settings, nghttp3_mem_default(), c);
  if (rv != 0) {
    free(c);
    return NULL;
  }
  return c;
}

void sbdh3_conn_free(sbdh3_conn *c) {
  if (!c) return;
  nghttp3_conn_del(c->hc);
  while (c->streams) stream_free(c, c->streams);
  while (c->head) {
    event_t *e = c->head;
    c->head = e->next;
    event_free(e);
  }
  free(c);
}

int sbdh3_conn_set_max_streams(sbdh3_conn *c, uint64_t n) {
  if (!c || !c->server) return SBWIRE_ERR_INVALID;
  nghttp3_conn_set_max_client_streams_bidi(c->hc, n);
  return 0;
}

int sbdh3_conn_bind(sbdh3_conn *c, int64_t control, int64_t qpack_encoder, int64_t qpack_decoder) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (nghttp3_conn_bind_control_stream(c->hc, control) != 0) return SBWIRE_ERR_INVALID;
  if (nghttp3_conn_bind_qpack_streams(c->hc, qpack_encoder, qpack_decoder) != 0) return SBWIRE_ERR_INVALID;
  return 0;
}

/* Maps an nghttp3 failure: fatal ones close the connection, others are the caller's mistake. */
static int fail(sbdh3_conn *c, int rv) {
  if (rv == NGHTTP3_ERR_NOMEM) return SBWIRE_ERR_NOMEM;
  if (nghttp3_err_is_fatal(rv)) {
    c->error_code = nghttp3_err_infer_quic_app_error_code(rv);
    return SBWIRE_ERR_PROTO;
  }
  return SBWIRE_ERR_INVALID;
}

int sbdh3_conn_read(sbdh3_conn *c, int64_t stream_id, const uint8_t *data, size_t len, int fin) {
  if (!c || (len && !data)) return SBWIRE_ERR_INVALID;
  nghttp3_ssize n = nghttp3_conn_read_stream(c->hc, stream_id, data, len, fin != 0);
  if (n >= 0) return 0;
  if (n == NGHTTP3_ERR_NOMEM) return SBWIRE_ERR_NOMEM;
  /* Whatever the peer's bytes broke, the connection must close with the matching HTTP/3 code. */
  c->error_code = nghttp3_err_infer_quic_app_error_code((int)n);
  return SBWIRE_ERR_PROTO;
}

int64_t sbdh3_conn_write(sbdh3_conn *c, uint8_t *out, size_t cap, uint8_t *meta) {
  if (!c || !out || !meta) return SBWIRE_ERR_INVALID;
  int64_t sid = -1;
  int fin = 0;
  nghttp3_vec vec[16];
  nghttp3_ssize nvec = nghttp3_conn_writev_stream(c->hc, &sid, &fin, vec, 16);
  if (nvec < 0) return fail(c, (int)nvec);
  if (sid < 0) return SBWIRE_ERR_DONE;
  size_t n = 0;
  int whole = 1;
  for (nghttp3_ssize i = 0; i < nvec; i++) {
    size_t take = vec[i].len;
    if (take > cap - n) {
      take = cap - n;
      whole = 0;
    }
    memcpy(out + n, vec[i].base, take);
    n += take;
    if (!whole) break;
  }
  int rv = nghttp3_conn_add_write_offset(c->hc, sid, n);
  /* The caller's QUIC delivers what it was given: nghttp3 may free it at once. */
  if (rv == 0 && n) rv = nghttp3_conn_add_ack_offset(c->hc, sid, n);
  if (rv != 0) return fail(c, rv);
  sbwire_put_u64(meta, (uint64_t)sid);
  sbwire_put_u32(meta + 8, whole && fin ? 1u : 0u);
  return (int64_t)n;
}

/* Turns an sbwire header block into nghttp3 fields pointing into it; NULL when malformed. */
static nghttp3_nv *fields_of(const uint8_t *hdrs, size_t len, size_t *count) {
  long n = sbwire_count_fields(hdrs, len);
  if (n <= 0) return NULL;
  nghttp3_nv *nva = calloc((size_t)n, sizeof *nva);
  if (!nva) return NULL;
  size_t off = 0;
  for (long i = 0; i < n; i++) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(hdrs, &off, &name, &nl, &value, &vl);
    nva[i] = (nghttp3_nv){(uint8_t *)name, (uint8_t *)value, nl, vl, NGHTTP3_NV_FLAG_NONE};
  }
  *count = (size_t)n;
  return nva;
}

/* Submits a message (request or response) with a copied body. */
static int submit(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                  size_t body_len, int request) {
  if (!c || !hdrs || (body_len && !body) || request == c->server) return SBWIRE_ERR_INVALID;
  size_t count = 0;
  nghttp3_nv *nva = fields_of(hdrs, hdrs_len, &count);
  if (!nva) return SBWIRE_ERR_INVALID;
  stream_t *s = NULL;
  if (request) {
    s = stream_new(c, stream_id);
    if (!s) {
      free(nva);
      return SBWIRE_ERR_NOMEM;
    }
  } else {
    for (s = c->streams; s && s->id != stream_id; s = s->next) {
    }
    if (!s) {
      free(nva);
      return SBWIRE_ERR_INVALID;
    }
  }
  if (body_len) {
    s->out = malloc(body_len);
    if (!s->out) {
      free(nva);
      if (request) stream_free(c, s);
      return SBWIRE_ERR_NOMEM;
    }
    memcpy(s->out, body, body_len);
    s->out_len = body_len;
  }
  nghttp3_data_reader dr = {.read_data = read_body};
  int rv = request ? nghttp3_conn_submit_request(c->hc, stream_id, nva, count, body_len ? &dr : NULL, s)
                   : nghttp3_conn_submit_response(c->hc, stream_id, nva, count, body_len ? &dr : NULL);
  free(nva);
  if (rv != 0) {
    if (request) stream_free(c, s);
    return fail(c, rv);
  }
  return 0;
}

int sbdh3_conn_request(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len) {
  return submit(c, stream_id, hdrs, hdrs_len, body, body_len, 1);
}

int sbdh3_conn_respond(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len) {
  return submit(c, stream_id, hdrs, hdrs_len, body, body_len, 0);
}

int64_t sbdh3_conn_poll(sbdh3_conn *c, uint8_t *buf, size_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  size_t off = 0;
  while (c->head) {
    event_t *e = c->head;
    size_t need = SBWIRE_EVENT_HEADER_LEN + e->hdr.len + e->body.len;
    if (need > cap - off) {
      if (off) break;
      if (cap >= 8) sbwire_put_u64(buf, need);
      return SBWIRE_ERR_BUFFER_TOO_SHORT;
    }
    sbwire_put_event(buf + off, e->type, 0, e->stream_id, e->code, (uint32_t)e->hdr.len, (uint32_t)e->body.len);
    off += SBWIRE_EVENT_HEADER_LEN;
    if (e->hdr.len) memcpy(buf + off, e->hdr.p, e->hdr.len);
    off += e->hdr.len;
    if (e->body.len) memcpy(buf + off, e->body.p, e->body.len);
    off += e->body.len;
    c->head = e->next;
    if (!c->head) c->tail = NULL;
    event_free(e);
  }
  return off ? (int64_t)off : SBWIRE_ERR_DONE;
}

int sbdh3_conn_close_stream(sbdh3_conn *c, int64_t stream_id, uint64_t app_error) {
  if (!c) return SBWIRE_ERR_INVALID;
  int rv = nghttp3_conn_close_stream(c->hc, stream_id, app_error);
  if (rv == NGHTTP3_ERR_STREAM_NOT_FOUND) return 0;
  return rv == 0 ? 0 : fail(c, rv);
}

int sbdh3_conn_shutdown(sbdh3_conn *c) {
  if (!c || !c->server) return SBWIRE_ERR_INVALID;
  int rv = nghttp3_conn_submit_shutdown_notice(c->hc);
  if (rv == 0) rv = nghttp3_conn_shutdown(c->hc);
  return rv == 0 ? 0 : fail(c, rv);
}

uint64_t sbdh3_conn_error_code(sbdh3_conn *c) { return c ? c->error_code : 0; }

int sbdh3_conn_stream_count(sbdh3_conn *c) { return c ? c->nstreams : SBWIRE_ERR_INVALID; }
