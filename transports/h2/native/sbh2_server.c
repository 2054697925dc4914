/*
 * sbh2 server side: one nghttp2 server session per connection (see
 * sbh2_server.h for the contract).
 *
 * Each request stream owns a struct sstream: the request's header block and
 * body while they arrive, then the response body while it is written. A
 * request completes into the event queue; sbh2_sconn_poll copies it out. The
 * response goes out through nghttp2_session_send: HEADERS and control frames
 * through on_send (copied from nghttp2's buffer), DATA through on_send_data,
 * which writes the frame header and the body bytes straight into the
 * caller's output buffer (NGHTTP2_DATA_FLAG_NO_COPY), so nghttp2 never holds
 * a copy of a body.
 */
#include "sbh2_server.h"

#include <limits.h>
#include <time.h>

#include "sbh2_common.h"

/*
 * Debian's nghttp2 1.52 backports these two limits (CVE-2023-44487 and the
 * CONTINUATION flood); weak references let a build against an older library
 * run on this module's own counters alone.
 */
#pragma weak nghttp2_option_set_max_continuations
#pragma weak nghttp2_option_set_stream_reset_rate_limit

/* The server's limits, by their index in srv->opt (each has a setter in sbh2_server.h). */
enum option {
  OPT_MAX_STREAMS = 1,
  OPT_MAX_HEADER_LIST,
  OPT_MAX_BODY,
  OPT_WINDOW,
  OPT_IDLE_TIMEOUT_MS,
  OPT_SETTINGS_TIMEOUT_MS,
  OPT_MAX_RESETS,
  OPT_RESET_RATE,
  OPT_MAX_CONTINUATIONS,
  OPT_MAX_QUEUED,
  OPT_STALL_TIMEOUT_MS,
  OPT_MAX_BUFFERED,
  OPT_MAX_QUEUED_TOTAL,
  NOPT,
};

static const uint64_t DEFAULTS[NOPT] = {
    0,
    100,           /* MAX_STREAMS */
    16384,         /* MAX_HEADER_LIST */
    32u << 20,     /* MAX_BODY */
    1u << 20,      /* WINDOW */
    60000,         /* IDLE_TIMEOUT_MS */
    10000,         /* SETTINGS_TIMEOUT_MS */
    200,           /* MAX_RESETS */
    50,            /* RESET_RATE */
    8,             /* MAX_CONTINUATIONS */
    64ull << 20,   /* MAX_QUEUED */
    10000,         /* STALL_TIMEOUT_MS */
    256ull << 20,  /* MAX_BUFFERED */
    256ull << 20,  /* MAX_QUEUED_TOTAL */
};

struct sbh2_server {
  int refs;
  uint64_t opt[NOPT];
  uint64_t buffered; /* request body bytes counted by all connections (OPT_MAX_BUFFERED) */
  uint64_t queued;   /* response body bytes not yet written, all connections (OPT_MAX_QUEUED_TOTAL) */
};

struct sstream {
  int32_t id;
  struct sstream *prev, *next; /* every stream the connection holds */
  struct sstream *qnext;       /* event queue */
  struct sbh2_msg req; /* the request while it arrives */
  uint64_t counted;    /* bytes of its body counted in srv->buffered */
  size_t list_size;    /* its header list size (RFC 9113 §6.5.2) */
  const uint8_t *rsp; /* response body: rsp_own, or the caller's lent bytes */
  uint8_t *rsp_own;
  size_t rsp_len, rsp_off;
  uint32_t token;
  unsigned queued : 1, msg : 1, delivered : 1, responded : 1, closed : 1, too_large : 1, refused : 1,
      remote_closed : 1, over_budget : 1, declared : 1;
};

struct released {
  uint32_t token;
  struct released *next;
};

struct sbh2_sconn {
  sbh2_server *srv;
  nghttp2_session *session;
  uint64_t max_body, max_header_list, max_cont, max_queued;
  int64_t idle_ms, settings_ms, stall_ms;
  double reset_tokens, reset_burst, reset_rate;
  int64_t reset_stamp;
  struct sstream *streams;
  int nstreams;
  struct sstream *qhead, *qtail;
  int nqueued;
  struct released *rhead, *rtail;
  uint8_t *out; /* the caller's buffer during sbh2_sconn_send */
  size_t out_len, out_cap;
  size_t queued; /* response body bytes not yet written */
  int64_t created, last_input, last_progress;
  int ncont;
  size_t block_bytes;
  int64_t stat_requests, stat_peer_resets, stat_local_resets;
  unsigned got_settings : 1, settings_acked : 1, closing : 1, input_dead : 1, finished : 1, calm : 1;
  char err[256];
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_err(struct sbh2_sconn *c, const char *msg) { sbh2_set_err(c->err, sizeof c->err, msg); }

/* ---- streams and events ---- */

/* Counts n more body bytes of s against the server's buffer budget; returns 0 (nothing counted) when they do not fit. */
static int count_body(struct sbh2_sconn *c, struct sstream *s, uint64_t n) {
  if (c->srv->buffered + n > c->srv->opt[OPT_MAX_BUFFERED]) return 0;
  c->srv->buffered += n;
  s->counted += n;
  return 1;
}

/* Gives the counted bytes of s back (its body is dropped or handed over). */
static void uncount_body(struct sbh2_sconn *c, struct sstream *s) {
  c->srv->buffered -= s->counted;
  s->counted = 0;
}

static void stream_free(struct sbh2_sconn *c, struct sstream *s) {
  if (s->prev) s->prev->next = s->next;
  else c->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  c->nstreams--;
  uncount_body(c, s);
  sbh2_msg_clear(&s->req);
  free(s->rsp_own);
  free(s);
}

static void queue_message(struct sbh2_sconn *c, struct sstream *s) {
  if (s->msg || s->refused || s->closed) return;
  s->msg = 1;
  s->queued = 1;
  s->qnext = NULL;
  if (c->qtail) c->qtail->qnext = s;
  else c->qhead = s;
  c->qtail = s;
  c->nqueued++;
}

/* Drops the response body: unwritten bytes leave the queue count, a lent body is handed back. */
static void release_body(struct sbh2_sconn *c, struct sstream *s) {
  if (!s->rsp) return;
  c->queued -= s->rsp_len - s->rsp_off;
  c->srv->queued -= s->rsp_len - s->rsp_off;
  if (s->token) {
    struct released *r = calloc(1, sizeof *r);
    if (r) { /* without memory the caller keeps the body until the connection is freed */
      r->token = s->token;
      if (c->rtail) c->rtail->next = r;
      else c->rhead = r;
      c->rtail = r;
      c->nqueued++;
    }
  }
  free(s->rsp_own);
  s->rsp_own = NULL;
  s->rsp = NULL;
  s->rsp_len = s->rsp_off = 0;
  s->token = 0;
}

static void reset_stream(struct sbh2_sconn *c, struct sstream *s, uint32_t code) {
  if (s->closed) return;
  c->stat_local_resets++;
  nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, code);
}

/* ---- nghttp2 callbacks (one table, set up in sbh2_sconn_new) ---- */

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags, void *user_data) {
  (void)session;
  (void)flags;
  struct sbh2_sconn *c = user_data;
  size_t room = c->out_cap - c->out_len;
  if (room == 0) return NGHTTP2_ERR_WOULDBLOCK;
  if (length > room) length = room;
  memcpy(c->out + c->out_len, data, length);
  c->out_len += length;
  return (ssize_t)length;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd, size_t length,
                        nghttp2_data_source *source, void *user_data) {
  (void)session;
  struct sbh2_sconn *c = user_data;
  struct sstream *s = source->ptr;
  size_t pad = frame->data.padlen; /* never set by this module; written as zeros if it were */
  size_t need = 9 + length + pad;
  if (c->out_cap - c->out_len < need) return NGHTTP2_ERR_WOULDBLOCK;
  uint8_t *p = c->out + c->out_len;
  memcpy(p, framehd, 9);
  p += 9;
  if (pad) *p++ = (uint8_t)(pad - 1);
  memcpy(p, s->rsp + s->rsp_off, length);
  if (pad > 1) memset(p + length, 0, pad - 1);
  s->rsp_off += length;
  c->queued -= length;
  c->srv->queued -= length;
  c->out_len += need;
  c->last_progress = now_ms();
  return 0;
}

static ssize_t rsp_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                        uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
  (void)session;
  (void)stream_id;
  (void)buf;
  (void)user_data;
  struct sstream *s = source->ptr;
  size_t n = s->rsp_len - s->rsp_off;
  if (n > length) n = length;
  *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (s->rsp_off + n == s->rsp_len) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static int on_begin_frame(nghttp2_session *session, const nghttp2_frame_hd *hd, void *user_data) {
  (void)session;
  struct sbh2_sconn *c = user_data;
  if (hd->type == NGHTTP2_HEADERS) {
    c->ncont = 0;
    c->block_bytes = hd->length;
  } else if (hd->type == NGHTTP2_CONTINUATION) {
    c->ncont++;
    c->block_bytes += hd->length;
    if ((uint64_t)c->ncont > c->max_cont || c->block_bytes > 2 * c->max_header_list + 16384) {
      c->calm = 1;
      set_err(c, "Too many CONTINUATION frames or header bytes");
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
  }
  return 0;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
  struct sbh2_sconn *c = user_data;
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  struct sstream *s = calloc(1, sizeof *s);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  s->id = frame->hd.stream_id;
  s->next = c->streams;
  if (c->streams) c->streams->prev = s;
  c->streams = s;
  c->nstreams++;
  nghttp2_session_set_stream_user_data(session, s->id, s);
  return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
  (void)flags;
  struct sbh2_sconn *c = user_data;
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0; /* trailers: ignored */
  struct sstream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
  if (!s || s->refused) return 0;
  s->list_size += namelen + valuelen + 32;
  if (s->list_size > c->max_header_list) {
    s->refused = 1;
    reset_stream(c, s, NGHTTP2_ENHANCE_YOUR_CALM);
    return 0;
  }
  uint64_t reserve_up_to = c->max_body;
  if (namelen == 14 && memcmp(name, "content-length", 14) == 0 && !s->declared && !s->over_budget) {
    uint64_t n = 0;
    for (size_t i = 0; i < valuelen && i < 19; i++) n = n * 10 + (uint64_t)(value[i] - '0');
    /* a declared body is counted whole as it is reserved; nghttp2 already checked the value is a number */
    if (n > c->max_body) {
      s->too_large = 1; /* answered 413 once its header block is complete, before any body is read */
      reserve_up_to = 0;
    } else if (n > 0) {
      if (count_body(c, s, n)) {
        s->declared = 1;
      } else {
        s->over_budget = 1; /* answered once its header block is complete (on_frame_recv) */
        reserve_up_to = 0;
      }
    }
  }
  if (sbh2_msg_add_field(&s->req, name, namelen, value, valuelen, reserve_up_to) != 0) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len,
                         void *user_data) {
  (void)flags;
  struct sbh2_sconn *c = user_data;
  struct sstream *s = nghttp2_session_get_stream_user_data(session, stream_id);
  if (!s || s->refused || s->too_large || s->over_budget) return 0;
  if (s->req.body_len + len > c->max_body) {
    /* deliver now, without the body: the caller answers 413 and the rest of the upload is dropped */
    s->too_large = 1;
    uncount_body(c, s);
    sbh2_msg_drop_body(&s->req);
    queue_message(c, s);
    return 0;
  }
  if (!s->declared && !count_body(c, s, len)) {
    /* the server buffers enough bodies already: the caller answers 503 and the rest is dropped */
    s->over_budget = 1;
    uncount_body(c, s);
    sbh2_msg_drop_body(&s->req);
    queue_message(c, s);
    return 0;
  }
  return sbh2_msg_add_data(&s->req, data, len) != 0 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

/* Takes one token from the peer-reset bucket; returns 0 when it was empty. */
static int take_reset_token(struct sbh2_sconn *c) {
  int64_t now = now_ms();
  c->reset_tokens += (double)(now - c->reset_stamp) * c->reset_rate / 1000.0;
  if (c->reset_tokens > c->reset_burst) c->reset_tokens = c->reset_burst;
  c->reset_stamp = now;
  if (c->reset_tokens < 1) return 0;
  c->reset_tokens -= 1;
  return 1;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
  struct sbh2_sconn *c = user_data;
  switch (frame->hd.type) {
  case NGHTTP2_HEADERS:
  case NGHTTP2_DATA: {
    struct sstream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) return 0;
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
      s->remote_closed = 1;
      queue_message(c, s);
    } else if (s->over_budget || s->too_large) {
      queue_message(c, s); /* its declared length did not fit: answered before the upload */
    }
    return 0;
  }
  case NGHTTP2_SETTINGS:
    if (frame->hd.flags & NGHTTP2_FLAG_ACK) c->settings_acked = 1;
    else c->got_settings = 1;
    return 0;
  case NGHTTP2_RST_STREAM:
    c->stat_peer_resets++;
    if (!take_reset_token(c) && !c->input_dead) {
      set_err(c, "Too many stream resets from the peer");
      nghttp2_session_terminate_session(session, NGHTTP2_ENHANCE_YOUR_CALM);
      c->input_dead = 1;
    }
    return 0;
  default:
    return 0;
  }
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
  struct sbh2_sconn *c = user_data;
  if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
      !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    return 0;
  }
  struct sstream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
  /* answered before the upload ended (413, 503): stop the rest of it (RFC 9113 §8.1) */
  if (s && (s->too_large || s->over_budget) && !s->remote_closed) {
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    (void)c;
  }
  return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
  (void)error_code;
  struct sbh2_sconn *c = user_data;
  struct sstream *s = nghttp2_session_get_stream_user_data(session, stream_id);
  if (!s) return 0;
  nghttp2_session_set_stream_user_data(session, stream_id, NULL);
  s->closed = 1;
  release_body(c, s);
  if (!s->queued) stream_free(c, s);
  return 0;
}

static int on_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len, void *user_data) {
  (void)session;
  (void)lib_error_code;
  struct sbh2_sconn *c = user_data;
  sbh2_keep_error(c->err, sizeof c->err, msg, len);
  return 0;
}

/* ---- public API ---- */

sbh2_server *sbh2_server_new(void) {
  struct sbh2_server *srv = calloc(1, sizeof *srv);
  if (!srv) return NULL;
  srv->refs = 1;
  memcpy(srv->opt, DEFAULTS, sizeof srv->opt);
  return srv;
}

static void server_unref(sbh2_server *srv) {
  if (srv && --srv->refs == 0) free(srv);
}

void sbh2_server_free(sbh2_server *srv) { server_unref(srv); }

static int server_set(sbh2_server *srv, enum option option, uint64_t value) {
  if (!srv || value == 0) return SBWIRE_ERR_INVALID;
  if (option == OPT_WINDOW && (value < 65535 || value > 0x7fffffff)) return SBWIRE_ERR_INVALID;
  if (option == OPT_MAX_STREAMS && value > 0x7fffffff) return SBWIRE_ERR_INVALID;
  srv->opt[option] = value;
  return 0;
}

int sbh2_server_set_max_streams(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_STREAMS, v); }
int sbh2_server_set_max_header_list(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_HEADER_LIST, v); }
int sbh2_server_set_max_body(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_BODY, v); }
int sbh2_server_set_window(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_WINDOW, v); }
int sbh2_server_set_idle_timeout(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_IDLE_TIMEOUT_MS, v); }
int sbh2_server_set_settings_timeout(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_SETTINGS_TIMEOUT_MS, v); }
int sbh2_server_set_max_resets(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_RESETS, v); }
int sbh2_server_set_reset_rate(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_RESET_RATE, v); }
int sbh2_server_set_max_continuations(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_CONTINUATIONS, v); }
int sbh2_server_set_max_queued(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_QUEUED, v); }
int sbh2_server_set_stall_timeout(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_STALL_TIMEOUT_MS, v); }
int sbh2_server_set_max_buffered(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_BUFFERED, v); }
int sbh2_server_set_max_queued_total(sbh2_server *srv, uint64_t v) { return server_set(srv, OPT_MAX_QUEUED_TOTAL, v); }

sbh2_sconn *sbh2_sconn_new(sbh2_server *srv) {
  if (!srv) return NULL;
  struct sbh2_sconn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  const uint64_t *o = srv->opt;
  c->max_body = o[OPT_MAX_BODY];
  c->max_header_list = o[OPT_MAX_HEADER_LIST];
  c->max_cont = o[OPT_MAX_CONTINUATIONS];
  c->max_queued = o[OPT_MAX_QUEUED];
  c->idle_ms = (int64_t)o[OPT_IDLE_TIMEOUT_MS];
  c->settings_ms = (int64_t)o[OPT_SETTINGS_TIMEOUT_MS];
  c->stall_ms = (int64_t)o[OPT_STALL_TIMEOUT_MS];
  c->reset_burst = c->reset_tokens = (double)o[OPT_MAX_RESETS];
  c->reset_rate = (double)o[OPT_RESET_RATE];
  c->created = c->last_input = c->last_progress = c->reset_stamp = now_ms();
  nghttp2_session_callbacks *cbs = NULL;
  nghttp2_option *opt = NULL;
  if (nghttp2_session_callbacks_new(&cbs) != 0) goto fail;
  nghttp2_session_callbacks_set_send_callback(cbs, on_send);
  nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, on_begin_frame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  nghttp2_session_callbacks_set_error_callback2(cbs, on_error);
  if (nghttp2_option_new(&opt) != 0) goto fail;
  /*
   * Closed streams stay known (nghttp2 keeps at most MAX_STREAMS of them), and RFC 7540
   * priorities stay on (no SETTINGS_NO_RFC7540_PRIORITIES), as in nghttpd: with either
   * turned off nghttp2 forgets a stream once it closes and skips PRIORITY frames unread,
   * so DATA or HEADERS on a closed stream and a PRIORITY frame on stream 0 or on itself
   * went unanswered instead of a STREAM_CLOSED or PROTOCOL_ERROR (RFC 9113 §5.1, §5.3.1, §6.3).
   */
  /* one above ours, so that this module's counters trip first and answer with GOAWAY ENHANCE_YOUR_CALM */
  if (nghttp2_option_set_max_continuations) nghttp2_option_set_max_continuations(opt, (size_t)c->max_cont + 1);
  if (nghttp2_option_set_stream_reset_rate_limit) {
    nghttp2_option_set_stream_reset_rate_limit(opt, o[OPT_MAX_RESETS] + 1, o[OPT_RESET_RATE]);
  }
  int rv = nghttp2_session_server_new2(&c->session, cbs, c, opt);
  nghttp2_session_callbacks_del(cbs);
  nghttp2_option_del(opt);
  cbs = NULL;
  opt = NULL;
  if (rv != 0) goto fail;
  uint64_t window = o[OPT_WINDOW];
  uint64_t conn_window = window * 16 > 0x7fffffff ? 0x7fffffff : window * 16;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)o[OPT_MAX_STREAMS]},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       o[OPT_MAX_HEADER_LIST] > UINT32_MAX ? UINT32_MAX : (uint32_t)o[OPT_MAX_HEADER_LIST]},
  };
  if (nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]) != 0) goto fail;
  if (nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, (int32_t)conn_window) != 0) goto fail;
  c->srv = srv;
  srv->refs++;
  return c;
fail:
  if (cbs) nghttp2_session_callbacks_del(cbs);
  if (opt) nghttp2_option_del(opt);
  if (c->session) nghttp2_session_del(c->session);
  free(c);
  return NULL;
}

void sbh2_sconn_free(sbh2_sconn *c) {
  if (!c) return;
  nghttp2_session_del(c->session); /* calls no stream-close callbacks */
  while (c->streams) stream_free(c, c->streams);
  while (c->rhead) {
    struct released *r = c->rhead;
    c->rhead = r->next;
    free(r);
  }
  c->srv->queued -= c->queued; /* its unwritten responses leave the server's count */
  server_unref(c->srv);
  free(c);
}

int sbh2_sconn_recv(sbh2_sconn *c, const uint8_t *data, uint32_t len) {
  if (!c || (!data && len)) return SBWIRE_ERR_INVALID;
  if (c->finished || c->input_dead) return SBWIRE_ERR_CLOSED;
  c->last_input = now_ms();
  ssize_t rv = nghttp2_session_mem_recv(c->session, data, len);
  if (rv < 0) {
    if (c->calm) {
      /* one of this module's limits: tell the peer why, then drain and close */
      nghttp2_session_terminate_session(c->session, NGHTTP2_ENHANCE_YOUR_CALM);
      c->input_dead = 1;
      return SBWIRE_ERR_PROTO;
    }
    set_err(c, nghttp2_strerror((int)rv));
    c->finished = 1; /* not HTTP/2 (bad preface) or a fatal error: nothing worth sending */
    return rv == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_PROTO;
  }
  return c->nqueued;
}

int sbh2_sconn_poll(sbh2_sconn *c, uint8_t *buf, uint32_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  if (cap > 0x7fffffff) cap = 0x7fffffff;
  size_t n = 0;
  while (c->qhead) {
    struct sstream *s = c->qhead;
    if (!s->closed) { /* a stream reset before it was polled never reaches the caller */
      size_t need;
      int64_t code = s->too_large ? SBWIRE_TOO_LARGE_BODY : s->over_budget ? SBWIRE_TOO_LARGE_BUDGET : 0;
      uint32_t type = code ? SBWIRE_EV_TOO_LARGE : SBWIRE_EV_MESSAGE;
      if (!sbh2_msg_put_event(&s->req, buf, cap, &n, type, s->id, code, &need)) {
        return sbh2_poll_full(buf, cap, n, need, SBWIRE_ERR_BUFFER_TOO_SHORT);
      }
      s->delivered = 1;
      c->stat_requests++;
    }
    c->qhead = s->qnext;
    if (!c->qhead) c->qtail = NULL;
    c->nqueued--;
    s->queued = 0;
    uncount_body(c, s); /* the caller holds its copy now */
    sbh2_msg_clear(&s->req);
    if (s->closed) stream_free(c, s);
  }
  while (c->rhead) {
    struct released *r = c->rhead;
    size_t need;
    if (!sbh2_msg_put_event(NULL, buf, cap, &n, SBWIRE_EV_RELEASED, -1, r->token, &need)) {
      return sbh2_poll_full(buf, cap, n, need, SBWIRE_ERR_BUFFER_TOO_SHORT);
    }
    c->rhead = r->next;
    if (!c->rhead) c->rtail = NULL;
    c->nqueued--;
    free(r);
  }
  return n ? (int)n : SBWIRE_ERR_DONE;
}

/* True when the peer cannot take any more DATA on this stream right now. */
static int window_closed(struct sbh2_sconn *c, int32_t id) {
  return nghttp2_session_get_remote_window_size(c->session) <= 0 ||
         nghttp2_session_get_stream_remote_window_size(c->session, id) <= 0;
}

int sbh2_sconn_respond(sbh2_sconn *c, int32_t stream_id, const uint8_t *hdrs, uint32_t hdrs_len, const uint8_t *body,
                       uint32_t body_len, uint32_t token) {
  if (!c || (!hdrs && hdrs_len) || (!body && body_len)) return SBWIRE_ERR_INVALID;
  if (c->finished) return SBWIRE_ERR_CLOSED;
  struct sstream *s = nghttp2_session_get_stream_user_data(c->session, stream_id);
  if (!s || !s->delivered || s->responded || s->closed) return SBWIRE_ERR_NOT_FOUND;
  if (body_len && window_closed(c, stream_id) &&
      (c->queued + body_len > c->max_queued || c->srv->queued + body_len > c->srv->opt[OPT_MAX_QUEUED_TOTAL])) {
    /* the peer reads nothing and enough is waiting already: refuse to hold more */
    s->responded = 1;
    reset_stream(c, s, NGHTTP2_ENHANCE_YOUR_CALM);
    return SBWIRE_ERR_CLOSED;
  }
  nghttp2_nv stack_nv[32];
  size_t nfields;
  nghttp2_nv *nv = sbh2_block_to_nv(hdrs, hdrs_len, stack_nv, 32, &nfields);
  if (!nv) return nfields ? SBWIRE_ERR_NOMEM : SBWIRE_ERR_INVALID;
  int rv = 0;
  if (body_len) {
    if (token) {
      s->rsp = body;
    } else {
      s->rsp_own = malloc(body_len);
      if (!s->rsp_own) {
        rv = SBWIRE_ERR_NOMEM;
        goto out;
      }
      memcpy(s->rsp_own, body, body_len);
      s->rsp = s->rsp_own;
    }
    s->rsp_len = body_len;
    s->rsp_off = 0;
    s->token = token;
    if (c->queued == 0) c->last_progress = now_ms();
    c->queued += body_len;
    c->srv->queued += body_len;
  }
  nghttp2_data_provider prd = {.source = {.ptr = s}, .read_callback = rsp_read};
  int r = nghttp2_submit_response(c->session, stream_id, nv, nfields, body_len ? &prd : NULL);
  if (r != 0) {
    s->token = 0; /* not referenced: no RELEASED event for it */
    release_body(c, s);
    rv = r == NGHTTP2_ERR_NOMEM ? SBWIRE_ERR_NOMEM : r == NGHTTP2_ERR_INVALID_ARGUMENT ? SBWIRE_ERR_INVALID
                                                                                     : SBWIRE_ERR_INTERNAL;
    goto out;
  }
  s->responded = 1;
out:
  if (nv != stack_nv) free(nv);
  return rv;
}

int sbh2_sconn_refuse(sbh2_sconn *c, int32_t stream_id) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->finished) return SBWIRE_ERR_CLOSED;
  struct sstream *s = nghttp2_session_get_stream_user_data(c->session, stream_id);
  if (!s || !s->delivered || s->responded || s->closed) return SBWIRE_ERR_NOT_FOUND;
  s->responded = 1;
  reset_stream(c, s, NGHTTP2_ENHANCE_YOUR_CALM);
  return 0;
}

int sbh2_sconn_send(sbh2_sconn *c, uint8_t *out, uint32_t cap) {
  if (!c || !out) return SBWIRE_ERR_INVALID;
  if (cap < 16384 + 9) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  if (c->finished) return SBWIRE_ERR_CLOSED;
  c->out = out;
  c->out_cap = cap > 0x7fffffff ? 0x7fffffff : cap;
  c->out_len = 0;
  int rv = nghttp2_session_send(c->session);
  c->out = NULL;
  if (rv != 0) {
    set_err(c, nghttp2_strerror(rv));
    c->finished = 1;
    return c->out_len ? (int)c->out_len : SBWIRE_ERR_CLOSED;
  }
  if (c->out_len) return (int)c->out_len;
  if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session)) {
    set_err(c, c->closing ? "Connection closed by the server" : "Connection closed by the client");
    c->finished = 1;
    return SBWIRE_ERR_CLOSED;
  }
  return SBWIRE_ERR_DONE;
}

int sbh2_sconn_tick(sbh2_sconn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->finished) return SBWIRE_ERR_CLOSED;
  int64_t now = now_ms(), next = INT64_MAX;
  if (!c->got_settings || !c->settings_acked) {
    int64_t due = c->created + c->settings_ms;
    if (now >= due) {
      if (!c->got_settings) { /* no HTTP/2 peer at all: nothing to say to it */
        set_err(c, "No HTTP/2 preface and SETTINGS within the settings timeout");
        c->finished = 1;
        return SBWIRE_ERR_CLOSED;
      }
      if (!c->input_dead) {
        set_err(c, "SETTINGS not acknowledged within the settings timeout");
        nghttp2_session_terminate_session(c->session, NGHTTP2_SETTINGS_TIMEOUT);
        c->input_dead = 1;
      }
    } else {
      next = due;
    }
  }
  if (c->nstreams == 0 && !c->closing && !c->input_dead) {
    int64_t due = c->last_input + c->idle_ms;
    if (now >= due) {
      set_err(c, "Idle timeout");
      sbh2_sconn_shutdown(c);
    } else if (due < next) {
      next = due;
    }
  }
  if (c->queued > 0) {
    int64_t due = c->last_progress + c->stall_ms;
    if (now >= due) {
      for (struct sstream *s = c->streams; s; s = s->next) {
        if (s->rsp && s->rsp_off < s->rsp_len) reset_stream(c, s, NGHTTP2_CANCEL);
      }
      c->last_progress = now;
      due = now + c->stall_ms;
    }
    if (due < next) next = due;
  }
  if (next == INT64_MAX) return INT_MAX;
  return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

int sbh2_sconn_shutdown(sbh2_sconn *c) {
  if (!c) return SBWIRE_ERR_INVALID;
  if (c->closing || c->finished) return 0;
  c->closing = 1;
  int32_t last = nghttp2_session_get_last_proc_stream_id(c->session);
  if (nghttp2_submit_goaway(c->session, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0) != 0) {
    return SBWIRE_ERR_INTERNAL;
  }
  return 0;
}

int64_t sbh2_sconn_stat(sbh2_sconn *c, int stat) {
  if (!c) return SBWIRE_ERR_INVALID;
  switch (stat) {
  case SBH2_STAT_REQUESTS:
    return c->stat_requests;
  case SBH2_STAT_PEER_RESETS:
    return c->stat_peer_resets;
  case SBH2_STAT_LOCAL_RESETS:
    return c->stat_local_resets;
  case SBH2_STAT_QUEUED_BYTES:
    return (int64_t)c->queued;
  case SBH2_STAT_QUEUED_TOTAL:
    return (int64_t)c->srv->queued;
  case SBH2_STAT_STREAMS:
    return c->nstreams;
  case SBH2_STAT_BUFFERED:
    return (int64_t)c->srv->buffered;
  case SBH2_STAT_EVENTS:
    return c->nqueued;
  default:
    return SBWIRE_ERR_INVALID;
  }
}

int sbh2_sconn_error(sbh2_sconn *c, uint8_t *buf, uint32_t cap) {
  if (!c || !buf) return SBWIRE_ERR_INVALID;
  return sbh2_copy_text(c->err, buf, cap);
}
