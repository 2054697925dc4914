/*
 * Leak check driver for the sbh2 shim: the client talks to an in-memory
 * nghttp2 server session (no sockets). Run under valgrind by
 * transports/h2/leakcheck_test.ts. Prints one summary line; exits 1 on a
 * wrong answer.
 */
#include "sbh2.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the in-memory server: echoes a request body, else answers 1000 bytes ---- */

struct sreq {
  uint8_t *body;
  size_t len, cap, off;
};

static ssize_t srv_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                        nghttp2_data_source *src, void *ud) {
  (void)s;
  (void)id;
  (void)ud;
  struct sreq *r = src->ptr;
  size_t n = r->len - r->off;
  if (n > length) n = length;
  memcpy(buf, r->body + r->off, n);
  r->off += n;
  if (r->off == r->len) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static int srv_begin(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
  (void)ud;
  if (f->hd.type == NGHTTP2_HEADERS) nghttp2_session_set_stream_user_data(s, f->hd.stream_id, calloc(1, sizeof(struct sreq)));
  return 0;
}

static int srv_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t len, void *ud) {
  (void)flags;
  (void)ud;
  struct sreq *r = nghttp2_session_get_stream_user_data(s, id);
  if (!r) return 0;
  if (r->len + len > r->cap) {
    r->cap = (r->len + len) * 2;
    r->body = realloc(r->body, r->cap);
  }
  memcpy(r->body + r->len, d, len);
  r->len += len;
  return 0;
}

static int srv_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
  (void)ud;
  if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  struct sreq *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!r) return 0;
  if (r->len == 0) {
    r->body = malloc(1000);
    memset(r->body, 'x', 1000);
    r->len = r->cap = 1000;
  }
  nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)"200", 7, 3, 0},
                     {(uint8_t *)"content-type", (uint8_t *)"application/octet-stream", 12, 24, 0}};
  nghttp2_data_provider prd = {.source = {.ptr = r}, .read_callback = srv_read};
  nghttp2_submit_response(s, f->hd.stream_id, nv, 2, &prd);
  return 0;
}

static int srv_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
  (void)code;
  (void)ud;
  struct sreq *r = nghttp2_session_get_stream_user_data(s, id);
  if (r) {
    free(r->body);
    free(r);
  }
  return 0;
}

static nghttp2_session *server_new(void) {
  nghttp2_session_callbacks *cb;
  nghttp2_session *s;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, srv_begin);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, srv_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, srv_close);
  nghttp2_session_server_new(&s, cb, NULL);
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 1);
  return s;
}

static void server_free(nghttp2_session *s) {
  /* streams still open hold a struct sreq each: release them as nghttp2 would on close */
  for (int32_t id = 1; id < 1000; id += 2) srv_close(s, id, 0, NULL);
  nghttp2_session_del(s);
}

/* ---- plumbing ---- */

static uint8_t wire[1 << 20];

/* Moves bytes both ways until both sides are quiet; returns events ready at the client. */
static int pump(sbh2_conn *c, nghttp2_session *s, int rounds) {
  int ready = 0;
  for (int i = 0; i < rounds; i++) {
    int moved = 0;
    int n;
    while ((n = sbh2_conn_send(c, wire, sizeof wire)) > 0) {
      nghttp2_session_mem_recv(s, wire, (size_t)n);
      moved = 1;
    }
    const uint8_t *p;
    ssize_t k;
    while ((k = nghttp2_session_mem_send(s, &p)) > 0) {
      int r = sbh2_conn_recv(c, p, (uint32_t)k);
      if (r >= 0) ready = r;
      moved = 1;
    }
    if (!moved) break;
  }
  return ready;
}

static int messages, resets, closed, goaways, bad;

/* Polls every event with a small buffer that grows on SBH2_ERR_BUFFER_TOO_SHORT. */
static void drain(sbh2_conn *c, size_t expect_body) {
  uint32_t cap = 4096;
  uint8_t *buf = malloc(cap);
  for (;;) {
    int n = sbh2_conn_poll(c, buf, cap);
    if (n == SBH2_ERR_DONE) break;
    if (n == SBH2_ERR_BUFFER_TOO_SHORT) {
      uint64_t need;
      memcpy(&need, buf, 8);
      cap = (uint32_t)need;
      buf = realloc(buf, cap);
      continue;
    }
    if (n < 0) {
      bad++;
      break;
    }
    for (int off = 0; off < n;) {
      uint32_t type, hl, bl;
      memcpy(&type, buf + off, 4);
      memcpy(&hl, buf + off + 24, 4);
      memcpy(&bl, buf + off + 28, 4);
      if (type == SBH2_EV_MESSAGE) {
        messages++;
        if (expect_body && bl != expect_body && bl != 1000) bad++;
      } else if (type == SBH2_EV_RESET) resets++;
      else if (type == SBH2_EV_CLOSED) closed++;
      else if (type == SBH2_EV_GOAWAY) goaways++;
      off += 32 + (int)hl + (int)bl;
    }
  }
  free(buf);
}

static uint8_t *block(const char *method, const char *path, size_t *len) {
  const char *f[][2] = {{":method", method}, {":scheme", "http"}, {":authority", "mem"}, {":path", path}, {"x-k", "v"}};
  size_t cap = 512, off = 0;
  uint8_t *b = malloc(cap);
  for (int i = 0; i < 5; i++) {
    uint32_t nl = (uint32_t)strlen(f[i][0]), vl = (uint32_t)strlen(f[i][1]);
    memcpy(b + off, &nl, 4);
    memcpy(b + off + 4, &vl, 4);
    memcpy(b + off + 8, f[i][0], nl);
    memcpy(b + off + 8 + nl, f[i][1], vl);
    off += 8 + nl + vl;
  }
  *len = off;
  return b;
}

int main(void) {
  size_t hl;
  uint8_t *get = block("GET", "/g", &hl);
  size_t pl;
  uint8_t *post = block("POST", "/p", &pl);
  size_t big = 100000;
  uint8_t *body = malloc(big);
  memset(body, 'b', big);

  /* 1. requests, a cancel before sending and one after, events through a growing buffer */
  sbh2_conn *c = sbh2_conn_new(16u << 20, 0);
  nghttp2_session *s = server_new();
  for (int i = 0; i < 20; i++) sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  for (int i = 0; i < 5; i++) sbh2_conn_request(c, post, (uint32_t)pl, body, (uint32_t)big);
  int32_t early = sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  sbh2_conn_cancel(c, early);
  int32_t late = sbh2_conn_request(c, post, (uint32_t)pl, body, (uint32_t)big);
  int n = sbh2_conn_send(c, wire, 200); /* part of the output only */
  if (n > 0) nghttp2_session_mem_recv(s, wire, (size_t)n);
  sbh2_conn_cancel(c, late);
  pump(c, s, 1000);
  drain(c, big);
  int answered = messages;
  if (sbh2_conn_stream_count(c) != 0) bad++;
  /* 2. free with streams in flight */
  for (int i = 0; i < 3; i++) sbh2_conn_request(c, post, (uint32_t)pl, body, (uint32_t)big);
  n = sbh2_conn_send(c, wire, sizeof wire);
  sbh2_conn_free(c);
  server_free(s);

  /* 3. garbage from the "server" */
  c = sbh2_conn_new(65535, 0);
  sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  sbh2_conn_send(c, wire, sizeof wire);
  const char *junk = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
  int rv = sbh2_conn_recv(c, (const uint8_t *)junk, (uint32_t)strlen(junk));
  sbh2_conn_send(c, wire, sizeof wire);
  int closed_before = closed;
  drain(c, 0);
  int garbage_closed = closed > closed_before;
  uint8_t err[256];
  int el = sbh2_conn_error(c, err, sizeof err);
  sbh2_conn_free(c);

  /* 4. graceful close */
  c = sbh2_conn_new(65535, 0);
  s = server_new();
  sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  pump(c, s, 100);
  drain(c, 0);
  sbh2_conn_close(c);
  pump(c, s, 100);
  closed_before = closed;
  drain(c, 0);
  int graceful_closed = closed > closed_before;
  if (sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0) != SBH2_ERR_CLOSED) bad++;
  sbh2_conn_free(c);
  server_free(s);
  sbh2_conn_free(NULL);

  free(get);
  free(post);
  free(body);
  printf("ok: %d answered, %d resets; garbage %s (rv %d, %d-byte reason); close %s; bad %d\n", answered, resets,
         garbage_closed ? "closed" : "NOT closed", rv, el, graceful_closed ? "closed" : "NOT closed", bad);
  return bad || answered != 25 || !garbage_closed || !graceful_closed ? 1 : 0;
}
