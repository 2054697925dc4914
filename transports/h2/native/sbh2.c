/*
 * sbh2: an HTTP/2 client shim over nghttp2 (see sbh2.h for the contract).
 *
 * One sbh2_conn wraps one nghttp2 client session. Each request stream owns a
 * struct stream (request body to send, response header block and body being
 * received). When a response completes, or a stream ends early, an event is
 * queued; sbh2_conn_poll copies queued events out into the caller's buffer.
 * A stream is freed once nghttp2 closed it and its event (if any) was polled.
 */
#include "sbh2.h"
#include "sbh2_common.h"

#include <gnutls/gnutls.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stream {
  int32_t id;
  struct stream *prev, *next; /* every live stream of the connection */
  struct stream *qnext;       /* event queue */
  /* request body */
  uint8_t *req;
  size_t req_len, req_off;
  struct sbh2_msg rsp; /* response */
  int status;
  uint64_t list_size; /* RFC 9113 size of the response header list so far */
  int ev_type;      /* queued event type, 0 = none yet */
  uint32_t ev_code; /* HTTP/2 error code for RESET */
  unsigned closed : 1, queued : 1, cancelled : 1;
};

struct conn_event {
  int type;
  int64_t stream_id;
  int64_t code;
  struct conn_event *next;
};

struct sbh2_conn {
  nghttp2_session *session;
  uint32_t max_body;
  uint32_t max_header_list; /* largest response header list (RFC 9113 size), advertised in SETTINGS */
  struct stream *streams;                 /* live streams (doubly linked) */
  struct stream *qhead, *qtail;           /* stream events, in order */
  struct conn_event *chead, *ctail;       /* connection events, in order */
  int nstreams;
  int nqueued;
  uint8_t *spill; /* output nghttp2 produced that did not fit the caller's buffer */
  size_t spill_len, spill_off, spill_cap;
  int goaway_recv, closing, closed_queued, freeing;
  char err[256];
};

/* ---- small helpers ---- */

static void set_err(struct sbh2_conn *c, const char *msg) { sbh2_set_err(c->err, sizeof c->err, msg); }


static void stream_free(struct sbh2_conn *c, struct stream *s) {
  if (s->prev) s->prev->next = s->next;
  else c->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  c->nstreams--;
  free(s->req);
  sbh2_msg_clear(&s->rsp);
  free(s);
}

static void queue_stream(struct sbh2_conn *c, struct stream *s, int type, uint32_t code) {
  if (s->ev_type || s->cancelled) return;
  s->ev_type = type;
  s->ev_code = code;
  s->queued = 1;
  s->qnext = NULL;
  if (c->qtail) c->qtail->qnext = s;
  else c->qhead = s;
  c->qtail = s;
  c->nqueued++;
}

static void queue_conn(struct sbh2_conn *c, int type, int64_t code) {
  struct conn_event *e = calloc(1, sizeof *e);
  if (!e) return; /* the caller still sees the error return of recv/send */
  e->type = type;
  e->stream_id = -1;
  e->code = code;
  if (c->ctail) c->ctail->next = e;
  else c->chead = e;
  c->ctail = e;
  c->nqueued++;
}

static void mark_closed(struct sbh2_conn *c, int code, const char *why) {
  if (c->closed_queued) return;
  c->closed_queued = 1;
  set_err(c, why);
  queue_conn(c, SBH2_EV_CLOSED, code);
}

/* Queues CLOSED once the session can receive nothing more or has decided to terminate. */
static void check_closed(struct sbh2_conn *c) {
  if (c->closed_queued) return;
  if (!nghttp2_session_want_read(c->session)) {
    mark_closed(c, SBWIRE_ERR_CLOSED, c->closing ? "Connection closed by the client" : "Connection closed by the server");
  } else if (!nghttp2_session_check_request_allowed(c->session) && !c->goaway_recv && !c->closing) {
    mark_closed(c, SBWIRE_ERR_PROTO, "HTTP/2 protocol error from the server");
  }
}

/* ---- nghttp2 callbacks (one table, set up in sbh2_conn_new) ---- */

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
  (void)flags;
  struct sbh2_conn *c = user_data;
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
  if (!s || s->cancelled || s->ev_type) return 0;
  s->list_size += namelen + valuelen + 32;
  if (s->list_size > c->max_header_list) {
    queue_stream(c, s, SBH2_EV_RESET, NGHTTP2_CANCEL);
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_CANCEL);
    return 0;
  }
  if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
    int st = 0;
    for (size_t i = 0; i < valuelen && i < 3; i++) st = st * 10 + (value[i] - '0');
    s->status = st;
  }
  if (sbh2_msg_add_field(&s->rsp, name, namelen, value, valuelen, c->max_body) != 0) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len,
                         void *user_data) {
  (void)flags;
  struct sbh2_conn *c = user_data;
  struct stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
  if (!s || s->cancelled || s->ev_type) return 0;
  if (s->rsp.body_len + len > c->max_body) {
    queue_stream(c, s, SBH2_EV_RESET, NGHTTP2_CANCEL);
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    return 0;
  }
  return sbh2_msg_add_data(&s->rsp, data, len) != 0 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
  struct sbh2_conn *c = user_data;
  switch (frame->hd.type) {
  case NGHTTP2_HEADERS:
  case NGHTTP2_DATA: {
    struct stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && s->status > 0 && s->status < 200 &&
        !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
      s->rsp.hdrs_len = 0; /* an interim (1xx) response: wait for the final one */
      s->status = 0;
      return 0;
    }
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) queue_stream(c, s, SBH2_EV_MESSAGE, 0);
    return 0;
  }
  case NGHTTP2_GOAWAY:
    c->goaway_recv = 1;
    queue_conn(c, SBH2_EV_GOAWAY, frame->goaway.last_stream_id);
    return 0;
  default:
    return 0;
  }
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
  struct sbh2_conn *c = user_data;
  struct stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
  if (!s || c->freeing) return 0;
  nghttp2_session_set_stream_user_data(session, stream_id, NULL);
  s->closed = 1;
  queue_stream(c, s, SBH2_EV_RESET, error_code ? error_code : NGHTTP2_INTERNAL_ERROR);
  if (!s->queued) stream_free(c, s);
  return 0;
}

static int on_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len, void *user_data) {
  (void)session;
  (void)lib_error_code;
  struct sbh2_conn *c = user_data;
  sbh2_keep_error(c->err, sizeof c->err, msg, len);
  return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
  (void)session;
  (void)stream_id;
  (void)user_data;
  struct stream *s = source->ptr;
  size_t n = s->req_len - s->req_off;
  if (n > length) n = length;
  memcpy(buf, s->req + s->req_off, n);
  s->req_off += n;
  if (s->req_off == s->req_len) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    free(s->req); /* sent: no need to keep it */
    s->req = NULL;
  }
  return (ssize_t)n;
}

/* ---- public API ---- */

int sbh2_version(uint8_t *buf, uint32_t cap) {
  nghttp2_info *info = nghttp2_version(0);
  char tmp[128];
  int n = snprintf(tmp, sizeof tmp, "sbh2/%s nghttp2/%s gnutls/%s", SBH2_VERSION, info->version_str,
                   gnutls_check_version(NULL));
  if (n < 0 || (size_t)n > cap) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  memcpy(buf, tmp, (size_t)n);
  return n;
}

sbh2_conn *sbh2_conn_new(uint32_t window, uint32_t max_body) {
  if (window < 65535) window = 65535;
  if (window > 0x7fffffff) window = 0x7fffffff;
  struct sbh2_conn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->max_body = max_body ? max_body : (64u << 20);
  c->max_header_list = SBH2_MAX_HEADER_LIST;
  nghttp2_session_callbacks *cbs = NULL;
  nghttp2_option *opt = NULL;
  if (nghttp2_session_callbacks_new(&cbs) != 0) goto fail;
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  nghttp2_session_callbacks_set_error_callback2(cbs, on_error);
  if (nghttp2_option_new(&opt) != 0) goto fail;
  /* The caller may queue many requests at once; nghttp2 holds back those beyond the server's limit. */
  nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
  int rv = nghttp2_session_client_new2(&c->session, cbs, c, opt);
  nghttp2_session_callbacks_del(cbs);
  nghttp2_option_del(opt);
  cbs = NULL;
  opt = NULL;
  if (rv != 0) goto fail;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, c->max_header_list},
  };
  if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, 3) != 0) goto fail;
  if (nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, (int32_t)window) != 0) goto fail;
  return c;
fail:
  if (cbs) nghttp2_session_callbacks_del(cbs);
  if (opt) nghttp2_option_del(opt);
  if (c->session) nghttp2_session_del(c->session);
  free(c);
  return NULL;
}

int sbh2_conn_set_max_header_list(sbh2_conn *c, uint32_t bytes) {
  if (!c || bytes == 0) return SBWIRE_ERR_INVALID;
  c->max_header_list = bytes;
  nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, bytes};
  return nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, &iv, 1) == 0 ? 0 : SBWIRE_ERR_NOMEM;
}

void sbh2_conn_free(sbh2_conn *c) {
  if (!c) return;
  c->freeing = 1;
  nghttp2_session_del(c->session);
  while (c->streams) stream_free(c, c->streams);
  while (c->chead) {
    struct conn_event *e = c->chead;
    c->chead = e->next;
    free(e);
  }
  free(c->spill);
  free(c);
}

int sbh2_conn_recv(sbh2_conn *c, const uint8_t *data, uint32_t len) {
  if (!c || (!data && len)) return SBWIRE_ERR_INVALID;
  if (c->closed_queued) return SBWIRE_ERR_CLOSED;
  ssize_t rv = nghttp2_session_mem_recv(c->session, data, len);
  if (rv < 0) {
    mark_closed(c, rv == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_PROTO, nghttp2_strerror((int)rv));
    return rv == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_PROTO;
  }
  check_closed(c);
  return c->nqueued;
}

int sbh2_conn_send(sbh2_conn *c, uint8_t *out, uint32_t cap) {
  if (!c || !out) return SBWIRE_ERR_INVALID;
  if (cap > 0x7fffffff) cap = 0x7fffffff;
  size_t n = 0;
  if (c->spill_off < c->spill_len) {
    size_t k = c->spill_len - c->spill_off;
    if (k > cap) k = cap;
    memcpy(out, c->spill + c->spill_off, k);
    c->spill_off += k;
    n += k;
    if (c->spill_off < c->spill_len) return (int)n;
  }
  c->spill_off = c->spill_len = 0;
  while (n < cap) {
    const uint8_t *p;
    ssize_t r = nghttp2_session_mem_send(c->session, &p);
    if (r < 0) {
      mark_closed(c, r == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_INTERNAL, nghttp2_strerror((int)r));
      break;
    }
    if (r == 0) break;
    size_t k = (size_t)r;
    if (k > cap - n) {
      /* keep the rest: nghttp2's pointer is only valid until its next call */
      size_t rest = k - (cap - n);
      if (grow(&c->spill, &c->spill_cap, rest) != 0) {
        mark_closed(c, SBWIRE_ERR_NOMEM, "Out of memory");
        return SBWIRE_ERR_NOMEM;
      }
      memcpy(c->spill, p + (cap - n), rest);
      c->spill_len = rest;
      k = cap - n;
    }
    memcpy(out + n, p, k);
    n += k;
  }
  check_closed(c);
  return n ? (int)n : SBWIRE_ERR_DONE;
}

int32_t sbh2_conn_request(sbh2_conn *c, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body, uint32_t body_len) {
  if (!c || (!hdrs && hdrs_len) || (!body && body_len)) return SBWIRE_ERR_INVALID;
  if (c->closed_queued || c->closing || c->goaway_recv) return SBWIRE_ERR_CLOSED;
  /* point nghttp2 at the fields (it copies names and values) */
  nghttp2_nv stack_nv[32];
  size_t nfields;
  nghttp2_nv *nv = sbh2_block_to_nv(hdrs, hdrs_len, stack_nv, 32, &nfields);
  if (!nv) return nfields ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_INVALID;
  struct stream *s = calloc(1, sizeof *s);
  int32_t rv = SBWIRE_ERR_NOMEM;
  if (!s) goto out;
  if (body_len) {
    s->req = malloc(body_len);
    if (!s->req) {
      free(s);
      goto out;
    }
    memcpy(s->req, body, body_len);
    s->req_len = body_len;
  }
  nghttp2_data_provider prd = {.source = {.ptr = s}, .read_callback = read_body};
  int32_t id = nghttp2_submit_request(c->session, NULL, nv, nfields, body_len ? &prd : NULL, s);
  if (id < 0) {
    free(s->req);
    free(s);
    rv = id == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM
         : id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE ? SBWIRE_ERR_CLOSED
         : id == NGHTTP2_ERR_INVALID_ARGUMENT ? SBWIRE_ERR_INVALID
                                                : SBWIRE_ERR_INTERNAL;
    goto out;
  }
  s->id = id;
  s->next = c->streams;
  if (c->streams) c->streams->prev = s;
  c->streams = s;
  c->nstreams++;
  rv = id;
out:
  if (nv != stack_nv) free(nv);
  return rv;
}

int sbh2_conn_cancel(sbh2_conn *c, int32_t stream_id) {
  if (!c) return SBWIRE_ERR_INVALID;
  /* search our own list: a stream whose HEADERS are still queued has no nghttp2 stream yet */
  struct stream *s = c->streams;
  while (s && s->id != stream_id) s = s->next;
  if (!s || s->cancelled) return SBWIRE_ERR_NOT_FOUND;
  s->cancelled = 1;
  if (s->closed) return 0; /* its queued event, if any, is dropped by poll */
  /* nghttp2 sends RST_STREAM for an open stream and drops still-queued HEADERS */
  if (nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL) != 0) {
    return SBWIRE_ERR_INTERNAL;
  }
  return 0;
}

int sbh2_conn_poll(sbh2_conn *c, uint8_t *buf, uint32_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  if (cap > 0x7fffffff) cap = 0x7fffffff;
  size_t n = 0;
  /* stream events first: a response that completed before a GOAWAY or CLOSED is delivered first */
  while (c->qhead) {
    struct stream *s = c->qhead;
    if (!s->cancelled) {
      size_t need;
      const struct sbh2_msg *m = s->ev_type == SBH2_EV_MESSAGE ? &s->rsp : NULL;
      if (!sbh2_msg_put_event(m, buf, cap, &n, (uint32_t)s->ev_type, s->id, s->ev_code, &need)) {
        return sbh2_poll_full(buf, cap, n, need, SBWIRE_ERR_BUFFER_TOO_SHORT);
      }
    }
    c->qhead = s->qnext;
    if (!c->qhead) c->qtail = NULL;
    c->nqueued--;
    s->queued = 0;
    /* the response is out: release its buffers now, the stream may linger until closed */
    sbh2_msg_clear(&s->rsp);
    if (s->closed) stream_free(c, s);
  }
  while (c->chead) {
    struct conn_event *e = c->chead;
    size_t need;
    if (!sbh2_msg_put_event(NULL, buf, cap, &n, (uint32_t)e->type, e->stream_id, e->code, &need)) {
      return sbh2_poll_full(buf, cap, n, need, SBWIRE_ERR_BUFFER_TOO_SHORT);
    }
    c->chead = e->next;
    if (!c->chead) c->ctail = NULL;
    c->nqueued--;
    free(e);
  }
  return n ? (int)n : SBWIRE_ERR_DONE;
}

int sbh2_conn_shutdown(sbh2_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->closing) return 0;
  c->closing = 1;
  if (nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR) != 0) return SBWIRE_ERR_INTERNAL;
  return 0;
}

int sbh2_conn_error(sbh2_conn *c, uint8_t *buf, uint32_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  return sbh2_copy_text(c->err, buf, cap);
}

int sbh2_conn_stream_count(sbh2_conn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  return c->nstreams;
}
