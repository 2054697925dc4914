/* sbhttp3: the one HTTP/3 layer under both h3 modules (see sbhttp3.h). */
#define _GNU_SOURCE
#include "sbhttp3.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- buffers and events ------------------------------------------------ */

int sbhttp3_buf_reserve(sbhttp3_buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra) cap *= 2;
  uint8_t *p = realloc(b->p, cap);
  if (!p) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

int sbhttp3_buf_append(sbhttp3_buf *b, const void *data, size_t n) {
  if (n == 0) return 0;
  if (sbhttp3_buf_reserve(b, n) != 0) return -1;
  memcpy(b->p + b->len, data, n);
  b->len += n;
  return 0;
}

void sbhttp3_buf_free(sbhttp3_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

sbhttp3_event *sbhttp3_evq_push(sbhttp3_evq *q, uint32_t type, uint32_t conn_id, int64_t stream_id, int64_t code) {
  sbhttp3_event *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->type = type;
  e->conn_id = conn_id;
  e->stream_id = stream_id;
  e->code = code;
  if (q->tail) q->tail->next = e;
  else q->head = e;
  q->tail = e;
  q->n++;
  return e;
}

/* Frees one event and its buffers. */
static void event_free(sbhttp3_event *e) {
  sbhttp3_buf_free(&e->hdr);
  sbhttp3_buf_free(&e->body);
  free(e);
}

void sbhttp3_evq_clear(sbhttp3_evq *q) {
  while (q->head) {
    sbhttp3_event *e = q->head;
    q->head = e->next;
    event_free(e);
  }
  q->tail = NULL;
  q->n = 0;
}

int64_t sbhttp3_evq_poll(sbhttp3_evq *q, uint8_t *out, size_t cap) {
  size_t off = 0;
  while (q->head) {
    sbhttp3_event *e = q->head;
    uint64_t need = SBWIRE_EVENT_HEADER_LEN + (uint64_t)e->hdr.len + e->body.len;
    if (need > cap - off || off + need > INT32_MAX) {
      if (off) break;
      if (cap >= 8) sbwire_put_u64(out, need);
      return SBWIRE_ERR_BUFFER_TOO_SHORT;
    }
    uint32_t hl = (uint32_t)e->hdr.len, bl = (uint32_t)e->body.len;
    sbwire_put_event(out + off, e->type, e->conn_id, e->stream_id, e->code, hl, bl);
    off += SBWIRE_EVENT_HEADER_LEN;
    if (hl) memcpy(out + off, e->hdr.p, hl);
    off += hl;
    if (bl) memcpy(out + off, e->body.p, bl);
    off += bl;
    q->head = e->next;
    if (!q->head) q->tail = NULL;
    q->n--;
    event_free(e);
  }
  return off ? (int64_t)off : SBWIRE_ERR_DONE;
}

/* ---- streams ------------------------------------------------------------ */

sbhttp3_stream *sbhttp3_stream_find(sbhttp3 *h, int64_t id) {
  for (sbhttp3_stream *s = h->streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

/* Adds a stream; NULL when out of memory. */
static sbhttp3_stream *stream_new(sbhttp3 *h, int64_t id) {
  sbhttp3_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->id = id;
  s->cl = UINT64_MAX;
  s->next = h->streams;
  if (h->streams) h->streams->prev = s;
  h->streams = s;
  h->nstreams++;
  return s;
}

void sbhttp3_stream_free(sbhttp3 *h, sbhttp3_stream *s) {
  if (h->quic && h->quic->stream_freed) h->quic->stream_freed(h->quic_ctx, s);
  if (s->prev) s->prev->next = s->next;
  else h->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  h->nstreams--;
  sbhttp3_buf_free(&s->hdr);
  sbhttp3_buf_free(&s->body);
  free(s->out);
  free(s);
}

/* Moves s's message (headers, and body unless dropped) into an event of type. */
static int stream_emit(sbhttp3 *h, sbhttp3_stream *s, uint32_t type, int64_t code) {
  sbhttp3_event *e = sbhttp3_evq_push(h->q, type, h->conn_id, s->id, code);
  if (!e) return NGHTTP3_ERR_NOMEM;
  e->hdr = s->hdr;
  e->body = s->body;
  memset(&s->hdr, 0, sizeof s->hdr);
  memset(&s->body, 0, sizeof s->body);
  s->done = 1;
  return 0;
}

/*
 * Gives s up both ways with an H3 code: the QUIC layer stops reading and resets the stream (nghttp3
 * stops reading it when QUIC reports that: told here, in the middle of a header section, its QPACK
 * decoder would cancel a section the peer's encoder then finds acknowledged). A client's caller
 * learns of it through a RESET event; so does any caller that carries the streams itself.
 */
static int stream_give_up(sbhttp3 *h, sbhttp3_stream *s, uint64_t code) {
  s->done = s->aborted = 1;
  sbhttp3_buf_free(&s->hdr);
  sbhttp3_buf_free(&s->body);
  if (h->quic && h->quic->stop_reading) h->quic->stop_reading(h->quic_ctx, s->id, code);
  if (h->quic && h->quic->reset_writing) h->quic->reset_writing(h->quic_ctx, s->id, code);
  if (h->server && h->quic && h->quic->reset_writing) return 0;
  return sbhttp3_evq_push(h->q, SBWIRE_EV_RESET, h->conn_id, s->id, (int64_t)code) ? 0 : NGHTTP3_ERR_NOMEM;
}

/* Returns n consumed bytes of stream_id to flow control. */
static void consumed(sbhttp3 *h, int64_t stream_id, size_t n) {
  if (n && h->quic && h->quic->consumed) h->quic->consumed(h->quic_ctx, stream_id, n);
}

/* ---- nghttp3 callbacks ------------------------------------------------- */

/* A stream closed: a client's request without its response gets RESET; the state goes. */
static int cb_stream_close(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  sbhttp3 *h = user_data;
  sbhttp3_stream *s = stream_user_data;
  if (s) {
    if (!s->done && !h->server &&
        !sbhttp3_evq_push(h->q, SBWIRE_EV_RESET, h->conn_id, stream_id, (int64_t)app_error_code))
      return NGHTTP3_ERR_NOMEM;
    sbhttp3_stream_free(h, s);
  }
  if (h->quic && h->quic->stream_closed) h->quic->stream_closed(h->quic_ctx, stream_id);
  return 0;
}

/* A request starts (server): its stream state. */
static int cb_begin_headers(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  sbhttp3 *h = user_data;
  if (!h->server || stream_user_data) return 0;
  sbhttp3_stream *s = stream_new(h, stream_id);
  if (!s) return NGHTTP3_ERR_NOMEM;
  s->early = h->rx_early;
  return nghttp3_conn_set_stream_user_data(hc, stream_id, s) == 0 ? 0 : NGHTTP3_ERR_NOMEM;
}

/* Parses a content-length value nghttp3 already checked; UINT64_MAX when unusable. */
static uint64_t content_length(const uint8_t *v, size_t len) {
  if (len == 0 || len >= 20) return UINT64_MAX;
  uint64_t n = 0;
  for (size_t i = 0; i < len; i++) {
    if (v[i] < '0' || v[i] > '9') return UINT64_MAX;
    n = n * 10 + (uint64_t)(v[i] - '0');
  }
  return n;
}

/* One header field: appended to the stream's header block within the section cap. */
static int cb_recv_header(nghttp3_conn *hc, int64_t stream_id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  (void)flags;
  sbhttp3 *h = user_data;
  sbhttp3_stream *s = stream_user_data;
  if (!s || s->done) return 0;
  s->early |= h->rx_early;
  if (!h->server && !h->first_header_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    h->first_header_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  }
  nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
  s->field_bytes += n.len + v.len + 32;
  if (s->field_bytes > h->max_field) return stream_give_up(h, s, NGHTTP3_H3_EXCESSIVE_LOAD);
  if (sbhttp3_buf_reserve(&s->hdr, SBWIRE_FIELD_PREFIX_LEN + n.len + v.len) != 0) return NGHTTP3_ERR_NOMEM;
  s->hdr.len += sbwire_put_field(s->hdr.p + s->hdr.len, n.base, n.len, v.base, v.len);
  if (token == NGHTTP3_QPACK_TOKEN_CONTENT_LENGTH) {
    s->cl = content_length(v.base, v.len);
    if (s->cl <= h->max_body && s->body.cap < s->cl) sbhttp3_buf_reserve(&s->body, (size_t)s->cl);
  }
  return 0;
}

/* Body bytes: kept up to max_body; past it a server posts TOO_LARGE, a client gives the stream up. */
static int cb_recv_data(nghttp3_conn *hc, int64_t stream_id, const uint8_t *data, size_t len, void *user_data,
                        void *stream_user_data) {
  (void)hc;
  sbhttp3 *h = user_data;
  sbhttp3_stream *s = stream_user_data;
  consumed(h, stream_id, len);
  if (!s || s->done || s->aborted) return 0;
  s->early |= h->rx_early;
  if (s->body.len + len > h->max_body || (s->cl != UINT64_MAX && s->cl > h->max_body)) {
    if (!h->server) return stream_give_up(h, s, NGHTTP3_H3_EXCESSIVE_LOAD);
    /* RFC 9114 §4.1.2: stop reading with H3_NO_ERROR; the caller answers (413) from the headers. */
    s->aborted = 1;
    sbhttp3_buf_free(&s->body);
    int rv = stream_emit(h, s, SBWIRE_EV_TOO_LARGE, SBWIRE_TOO_LARGE_BODY);
    if (rv != 0) return rv;
    nghttp3_conn_shutdown_stream_read(h->hc, stream_id);
    if (h->quic && h->quic->stop_reading) h->quic->stop_reading(h->quic_ctx, stream_id, NGHTTP3_H3_NO_ERROR);
    return 0;
  }
  return sbhttp3_buf_append(&s->body, data, len) == 0 ? 0 : NGHTTP3_ERR_NOMEM;
}

/* A request's header block is complete (server): a declared length over max_body is answered now (413), before any body is read. */
static int cb_end_headers(nghttp3_conn *hc, int64_t stream_id, int fin, void *user_data, void *stream_user_data) {
  (void)hc;
  sbhttp3 *h = user_data;
  sbhttp3_stream *s = stream_user_data;
  if (fin || !h->server || !s || s->done || s->aborted || s->cl == UINT64_MAX || s->cl <= h->max_body) return 0;
  s->aborted = 1;
  sbhttp3_buf_free(&s->body);
  int rv = stream_emit(h, s, SBWIRE_EV_TOO_LARGE, SBWIRE_TOO_LARGE_BODY);
  if (rv != 0) return rv;
  nghttp3_conn_shutdown_stream_read(h->hc, stream_id);
  if (h->quic && h->quic->stop_reading) h->quic->stop_reading(h->quic_ctx, stream_id, NGHTTP3_H3_NO_ERROR);
  return 0;
}

/* Bytes nghttp3 consumed later (QPACK): credited to flow control. */
static int cb_deferred_consume(nghttp3_conn *hc, int64_t stream_id, size_t n, void *user_data,
                               void *stream_user_data) {
  (void)hc;
  (void)stream_user_data;
  consumed(user_data, stream_id, n);
  return 0;
}

/* The message is complete: a MESSAGE event. */
static int cb_end_stream(nghttp3_conn *hc, int64_t stream_id, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  sbhttp3_stream *s = stream_user_data;
  if (!s || s->done || s->aborted) return 0;
  return stream_emit(user_data, s, SBWIRE_EV_MESSAGE, s->early ? SBHTTP3_MSG_EARLY : 0);
}

/* nghttp3 asks to stop reading a stream. */
static int cb_stop_sending(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  (void)stream_user_data;
  sbhttp3 *h = user_data;
  if (h->quic && h->quic->stop_reading) h->quic->stop_reading(h->quic_ctx, stream_id, app_error_code);
  return 0;
}

/* nghttp3 asks to reset a stream's sending side (without QUIC hooks: a RESET event for the caller to act on). */
static int cb_reset_stream(nghttp3_conn *hc, int64_t stream_id, uint64_t app_error_code, void *user_data,
                           void *stream_user_data) {
  (void)hc;
  sbhttp3 *h = user_data;
  sbhttp3_stream *s = stream_user_data;
  if (h->quic && h->quic->reset_writing) {
    h->quic->reset_writing(h->quic_ctx, stream_id, app_error_code);
    return 0;
  }
  if (s) s->done = 1;
  return sbhttp3_evq_push(h->q, SBWIRE_EV_RESET, h->conn_id, stream_id, (int64_t)app_error_code)
             ? 0
             : NGHTTP3_ERR_NOMEM;
}

/* The peer sent GOAWAY: a client posts GOAWAY once. */
static int cb_shutdown(nghttp3_conn *hc, int64_t id, void *user_data) {
  (void)hc;
  (void)id;
  sbhttp3 *h = user_data;
  if (h->server || h->goaway) return 0;
  h->goaway = 1;
  return sbhttp3_evq_push(h->q, SBWIRE_EV_GOAWAY, h->conn_id, -1, 0) ? 0 : NGHTTP3_ERR_NOMEM;
}

/* The data reader over a stream's copied body. */
static nghttp3_ssize read_body(nghttp3_conn *hc, int64_t stream_id, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *pflags, void *user_data, void *stream_user_data) {
  (void)hc;
  (void)stream_id;
  (void)veccnt;
  (void)user_data;
  sbhttp3_stream *s = stream_user_data;
  *pflags |= NGHTTP3_DATA_FLAG_EOF;
  if (!s || s->out_len == 0) return 0;
  vec[0].base = s->out;
  vec[0].len = s->out_len;
  return 1;
}

/* ---- session ------------------------------------------------------------ */

void sbhttp3_init(sbhttp3 *h, int server, uint64_t max_body, uint64_t max_field, sbhttp3_evq *q,
                  const sbhttp3_quic *quic, void *quic_ctx) {
  memset(h, 0, sizeof *h);
  h->server = server != 0;
  h->max_body = max_body;
  h->max_field = max_field ? max_field : SBHTTP3_MAX_FIELD_SECTION;
  h->q = q;
  h->quic = quic;
  h->quic_ctx = quic_ctx;
}

int sbhttp3_start(sbhttp3 *h) {
  if (h->hc) return 0;
  nghttp3_callbacks cb = {
      .stream_close = cb_stream_close,
      .recv_data = cb_recv_data,
      .deferred_consume = cb_deferred_consume,
      .begin_headers = cb_begin_headers,
      .recv_header = cb_recv_header,
      .end_headers = cb_end_headers,
      .stop_sending = cb_stop_sending,
      .end_stream = cb_end_stream,
      .reset_stream = cb_reset_stream,
      .shutdown = cb_shutdown,
  };
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.max_field_section_size = h->max_field;
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  int rv = h->server ? nghttp3_conn_server_new(&h->hc, &cb, &settings, nghttp3_mem_default(), h)
                     : nghttp3_conn_client_new(&h->hc, &cb, &settings, nghttp3_mem_default(), h);
  if (rv != 0) {
    h->hc = NULL;
    return rv == NGHTTP3_ERR_NOMEM ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_INTERNAL;
  }
  return 0;
}

void sbhttp3_stop(sbhttp3 *h) {
  while (h->streams) sbhttp3_stream_free(h, h->streams);
  nghttp3_conn_del(h->hc);
  h->hc = NULL;
}

nghttp3_ssize sbhttp3_read(sbhttp3 *h, int64_t stream_id, const uint8_t *data, size_t len, int fin, int early) {
  h->rx_early = early != 0;
  nghttp3_ssize n = nghttp3_conn_read_stream(h->hc, stream_id, data, len, fin != 0);
  h->rx_early = 0;
  return n;
}

int sbhttp3_error(sbhttp3 *h, int rv) {
  if (rv == NGHTTP3_ERR_NOMEM) return SBWIRE_ERR_NOMEM;
  if (nghttp3_err_is_fatal(rv)) {
    h->error_code = nghttp3_err_infer_quic_app_error_code(rv);
    return SBWIRE_ERR_PROTO;
  }
  return SBWIRE_ERR_INVALID;
}

int sbhttp3_fields_of(const uint8_t *hdrs, size_t len, nghttp3_nv **pnv, size_t *count) {
  long n = sbwire_count_fields(hdrs, len);
  if (n <= 0) return SBWIRE_ERR_INVALID;
  nghttp3_nv *nv = calloc((size_t)n, sizeof *nv);
  if (!nv) return SBWIRE_ERR_NOMEM;
  size_t off = 0;
  for (long i = 0; i < n; i++) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(hdrs, &off, &name, &nl, &value, &vl);
    if (nl == 0) {
      free(nv);
      return SBWIRE_ERR_INVALID;
    }
    nv[i] = (nghttp3_nv){(uint8_t *)name, (uint8_t *)value, nl, vl, NGHTTP3_NV_FLAG_NONE};
  }
  *pnv = nv;
  *count = (size_t)n;
  return 0;
}

/* Copies the body to send into s. */
static int copy_body(sbhttp3_stream *s, const uint8_t *body, size_t len) {
  if (len == 0) return 0;
  s->out = malloc(len);
  if (!s->out) return -1;
  memcpy(s->out, body, len);
  s->out_len = len;
  return 0;
}

int sbhttp3_request(sbhttp3 *h, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                    size_t body_len) {
  if (!h->hc || h->server || !hdrs || (body_len && !body)) return SBWIRE_ERR_INVALID;
  nghttp3_nv *nv;
  size_t n;
  int rv = sbhttp3_fields_of(hdrs, hdrs_len, &nv, &n);
  if (rv != 0) return rv;
  sbhttp3_stream *s = stream_new(h, stream_id);
  if (!s || copy_body(s, body, body_len) != 0) {
    free(nv);
    if (s) sbhttp3_stream_free(h, s);
    return SBWIRE_ERR_NOMEM;
  }
  nghttp3_data_reader dr = {.read_data = read_body};
  rv = nghttp3_conn_submit_request(h->hc, stream_id, nv, n, body_len ? &dr : NULL, s);
  free(nv);
  if (rv != 0) {
    sbhttp3_stream_free(h, s);
    return sbhttp3_error(h, rv);
  }
  return 0;
}

int sbhttp3_respond(sbhttp3 *h, sbhttp3_stream *s, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                    size_t body_len) {
  if (!h->hc || !h->server || !hdrs || (body_len && !body)) return SBWIRE_ERR_INVALID;
  if (!s || !s->done || s->out) return SBWIRE_ERR_NOT_FOUND;
  nghttp3_nv *nv;
  size_t n;
  int rv = sbhttp3_fields_of(hdrs, hdrs_len, &nv, &n);
  if (rv != 0) return rv;
  if (copy_body(s, body, body_len) != 0) {
    free(nv);
    return SBWIRE_ERR_NOMEM;
  }
  nghttp3_data_reader dr = {.read_data = read_body};
  rv = nghttp3_conn_submit_response(h->hc, s->id, nv, n, body_len ? &dr : NULL);
  free(nv);
  if (rv != 0) {
    free(s->out);
    s->out = NULL;
    s->out_len = 0;
    return sbhttp3_error(h, rv);
  }
  return 0;
}
