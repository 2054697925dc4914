/*
 * Leak check driver for the sbh2 shim: the client talks to an in-memory
 * nghttp2 server session, then to the shim's own server session (no
 * sockets but one socketpair, for the server's own sends), then both through the TLS layer (sbh2_tls.c; arguments: PEM
 * files of the CA, server cert and key, client cert and key). Run under
 * valgrind by transports/h2/leakcheck_test.ts. Prints one summary line per
 * part; exits 1 on a wrong answer.
 */
#define _GNU_SOURCE /* memmem */
#include "sbh2.h"
#include "sbh2_server.h"
#include "sbh2_tls.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* Polls every event with a small buffer that grows on SBWIRE_ERR_BUFFER_TOO_SHORT. */
static void drain(sbh2_conn *c, size_t expect_body) {
  uint32_t cap = 4096;
  uint8_t *buf = malloc(cap);
  for (;;) {
    int n = sbh2_conn_poll(c, buf, cap);
    if (n == SBWIRE_ERR_DONE) break;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
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

/* ---- the shim's server side against the shim's client ---- */

static uint8_t wire2[1 << 20];
static const uint8_t lent_body[20000] = {'L'};

/* Moves bytes both ways between the shim's client and server until both are quiet. */
static void pump2(sbh2_conn *c, sbh2_sconn *s, int rounds) {
  for (int i = 0; i < rounds; i++) {
    int moved = 0, n;
    while ((n = sbh2_conn_send(c, wire, sizeof wire)) > 0) {
      sbh2_sconn_recv(s, wire, (uint32_t)n);
      moved = 1;
    }
    while ((n = sbh2_sconn_send(s, wire2, sizeof wire2)) > 0) {
      sbh2_conn_recv(c, wire2, (uint32_t)n);
      moved = 1;
    }
    if (!moved) break;
  }
}

static int served, too_large, over_budget, released;

/* Answers every polled request: 413 when flagged, a lent body for /lend, else the request body or 1000 bytes. */
static void serve(sbh2_sconn *s) {
  uint32_t cap = 4096;
  uint8_t *buf = malloc(cap);
  static uint8_t thousand[1000];
  memset(thousand, 'x', sizeof thousand);
  uint8_t ok[256];
  for (;;) {
    int n = sbh2_sconn_poll(s, buf, cap);
    if (n == SBWIRE_ERR_DONE) break;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
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
      uint32_t type = sbwire_get_u32(buf + off), hlen = sbwire_get_u32(buf + off + 24);
      uint32_t blen = sbwire_get_u32(buf + off + 28);
      int32_t id = (int32_t)sbwire_get_u32(buf + off + 8);
      uint32_t code = sbwire_get_u32(buf + off + 16);
      const uint8_t *hb = buf + off + 32, *body = hb + hlen;
      if (type == SBH2_EV_RELEASED) {
        released++;
      } else if (type == SBWIRE_EV_MESSAGE || type == SBWIRE_EV_TOO_LARGE) {
        const char *status = code == SBWIRE_TOO_LARGE_BODY ? "413" : code == SBWIRE_TOO_LARGE_BUDGET ? "503" : "200";
        if (code == SBWIRE_TOO_LARGE_BODY) too_large++;
        if (code == SBWIRE_TOO_LARGE_BUDGET) over_budget++;
        const char *f[][2] = {{":status", status}, {"content-type", "application/octet-stream"}};
        size_t hl = 0;
        for (int i = 0; i < 2; i++) {
          hl += sbwire_put_field(ok + hl, (const uint8_t *)f[i][0], strlen(f[i][0]), (const uint8_t *)f[i][1],
                                 strlen(f[i][1]));
        }
        int lend = memmem(hb, hlen, "/lend", 5) != NULL;
        int rv = lend ? sbh2_sconn_respond(s, id, ok, (uint32_t)hl, lent_body, sizeof lent_body, (uint32_t)id)
                 : blen ? sbh2_sconn_respond(s, id, ok, (uint32_t)hl, body, blen, 0)
                        : sbh2_sconn_respond(s, id, ok, (uint32_t)hl, thousand, sizeof thousand, 0);
        if (rv == 0) served++;
      }
      off += 32 + (int)hlen + (int)blen;
    }
  }
  free(buf);
}

/* Exercises the server session; returns the number of requests answered. */
static int server_checks(void) {
  size_t gl, ll, pl;
  uint8_t *get = block("GET", "/g", &gl);
  uint8_t *lend = block("GET", "/lend", &ll);
  uint8_t *post = block("POST", "/p", &pl);
  size_t big = 100000;
  uint8_t *body = malloc(big);
  memset(body, 'b', big);
  sbh2_server *srv = sbh2_server_new();
  sbh2_server_set_max_body(srv, 50000);
  if (sbh2_server_set_window(srv, 1) != SBWIRE_ERR_INVALID) bad++;
  if (sbh2_server_set_max_body(srv, 0) != SBWIRE_ERR_INVALID) bad++;
  if (sbh2_server_set_max_streams(NULL, 1) != SBWIRE_ERR_INVALID) bad++;

  /* 1. copied and lent bodies, a 413, a client cancel after the responses started */
  sbh2_conn *c = sbh2_conn_new(16u << 20, 0);
  sbh2_sconn *s = sbh2_sconn_new(srv);
  for (int i = 0; i < 10; i++) sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
  for (int i = 0; i < 10; i++) sbh2_conn_request(c, lend, (uint32_t)ll, NULL, 0);
  sbh2_conn_request(c, post, (uint32_t)pl, body, 20000);
  sbh2_conn_request(c, post, (uint32_t)pl, body, (uint32_t)big); /* over the limit: 413 */
  int32_t gone = sbh2_conn_request(c, lend, (uint32_t)ll, NULL, 0);
  for (int i = 0; i < 20; i++) {
    pump2(c, s, 1);
    serve(s);
    if (i == 1) sbh2_conn_cancel(c, gone);
  }
  pump2(c, s, 100);
  serve(s);
  drain(c, 0);
  if (sbh2_sconn_tick(s) < 0) bad++;
  if (sbh2_sconn_stat(s, SBH2_STAT_QUEUED_BYTES) != 0) bad++;
  /* 2. free with lent and copied responses in flight and an unpolled request */
  for (int i = 0; i < 3; i++) sbh2_conn_request(c, lend, (uint32_t)ll, NULL, 0);
  sbh2_conn_request(c, post, (uint32_t)pl, body, 30000);
  pump2(c, s, 1);
  serve(s);
  sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
  int n = sbh2_conn_send(c, wire, sizeof wire);
  if (n > 0) sbh2_sconn_recv(s, wire, (uint32_t)n);
  sbh2_sconn_free(s);
  sbh2_conn_free(c);
  if (sbh2_server_set_max_buffered(srv, 25000) != 0) bad++;

  /* 2b. the buffer budget: a second body that does not fit is a 503, freed mid-upload; all bytes come back */
  c = sbh2_conn_new(16u << 20, 0);
  s = sbh2_sconn_new(srv);
  sbh2_conn_request(c, post, (uint32_t)pl, body, 20000);
  sbh2_conn_request(c, post, (uint32_t)pl, body, 20000); /* declared length does not fit: 503 */
  for (int i = 0; i < 20; i++) {
    pump2(c, s, 1);
    serve(s);
  }
  drain(c, 0);
  if (over_budget != 1 || sbh2_sconn_stat(s, SBH2_STAT_BUFFERED) != 0) bad++;
  sbh2_conn_request(c, post, (uint32_t)pl, body, 20000);
  pump2(c, s, 1); /* freed with a counted body in flight */
  sbh2_sconn_free(s);
  sbh2_conn_free(c);
  s = sbh2_sconn_new(srv);
  if (sbh2_sconn_stat(s, SBH2_STAT_BUFFERED) != 0) bad++;
  sbh2_sconn_free(s);

  /* 3. junk instead of a preface */
  s = sbh2_sconn_new(srv);
  const char *junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  if (sbh2_sconn_recv(s, (const uint8_t *)junk, (uint32_t)strlen(junk)) >= 0) bad++;
  if (sbh2_sconn_send(s, wire2, sizeof wire2) != SBWIRE_ERR_CLOSED) bad++;
  sbh2_sconn_free(s);

  /* 4. a CONTINUATION flood: GOAWAY, then CLOSED */
  s = sbh2_sconn_new(srv);
  uint8_t flood[4096];
  size_t fl = 24;
  memcpy(flood, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
  const uint8_t settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
  memcpy(flood + fl, settings, 9);
  fl += 9;
  const uint8_t headers[9 + 4] = {0, 0, 4, 1, 0, 0, 0, 0, 1, 0x82, 0x86, 0x84, 0x41};
  memcpy(flood + fl, headers, sizeof headers);
  fl += sizeof headers;
  for (int i = 0; i < 20; i++) {
    const uint8_t cont[9 + 2] = {0, 0, 2, 9, 0, 0, 0, 0, 1, 0x01, 'a'};
    memcpy(flood + fl, cont, sizeof cont);
    fl += sizeof cont;
  }
  if (sbh2_sconn_recv(s, flood, (uint32_t)fl) >= 0) bad++;
  int goaway = sbh2_sconn_send(s, wire2, sizeof wire2) > 0;
  if (!goaway || sbh2_sconn_send(s, wire2, sizeof wire2) != SBWIRE_ERR_CLOSED) bad++;
  sbh2_sconn_free(s);

  /* 5. graceful shutdown with a request in flight */
  c = sbh2_conn_new(65535, 0);
  s = sbh2_sconn_new(srv);
  sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
  pump2(c, s, 10);
  sbh2_sconn_shutdown(s);
  pump2(c, s, 10);
  serve(s);
  pump2(c, s, 10);
  drain(c, 0);
  if (sbh2_sconn_send(s, wire2, sizeof wire2) != SBWIRE_ERR_CLOSED) bad++;
  sbh2_sconn_free(s);
  sbh2_conn_free(c);

  /* 5b. sends on a socket with a small buffer: the rest is left at the start of out, in order, then written by us */
  int sv[2], shorts = 0;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    bad++;
  } else {
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    int before = messages;
    c = sbh2_conn_new(16u << 20, 0);
    s = sbh2_sconn_new(srv);
    for (int i = 0; i < 30; i++) sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
    for (int i = 0; i < 50 && messages - before < 30; i++) {
      while ((n = sbh2_conn_send(c, wire, sizeof wire)) > 0) sbh2_sconn_recv(s, wire, (uint32_t)n);
      serve(s);
      int left = sbh2_sconn_send_fd(s, NULL, sv[0], wire2, sizeof wire2);
      ssize_t k; /* what the kernel took comes first, then the rest */
      while ((k = recv(sv[1], wire, sizeof wire, MSG_DONTWAIT)) > 0) sbh2_conn_recv(c, wire, (uint32_t)k);
      if (left > 0) {
        shorts++;
        sbh2_conn_recv(c, wire2, (uint32_t)left);
      } else if (left != SBWIRE_ERR_DONE) {
        bad++;
      }
      drain(c, 1000);
    }
    if (messages - before != 30 || shorts == 0) bad++;
    if (sbh2_sconn_send_fd(s, NULL, -1, wire2, sizeof wire2) != SBWIRE_ERR_INVALID) bad++;
    sbh2_sconn_free(s);
    sbh2_conn_free(c);
    close(sv[0]);
    close(sv[1]);
  }

  /* 6. rapid resets: each request is cancelled once its HEADERS went out */
  sbh2_server_set_max_resets(srv, 10);
  c = sbh2_conn_new(65535, 0);
  s = sbh2_sconn_new(srv);
  sbh2_server_free(srv); /* the connection keeps the limits alive */
  for (int i = 0; i < 50; i++) {
    int32_t id = sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
    if (id < 0) break;
    pump2(c, s, 1);
    sbh2_conn_cancel(c, id);
    pump2(c, s, 1);
  }
  serve(s);
  int reset_closed = sbh2_sconn_send(s, wire2, sizeof wire2) == SBWIRE_ERR_CLOSED;
  if (!reset_closed || sbh2_sconn_stat(s, SBH2_STAT_PEER_RESETS) < 10) bad++;
  drain(c, 0);
  sbh2_sconn_free(s);
  sbh2_conn_free(c);
  sbh2_sconn_free(NULL);
  sbh2_server_free(NULL);

  free(get);
  free(lend);
  free(post);
  free(body);
  return served;
}

/* ---- TLS ---- */

static uint8_t plain[1 << 16];

static uint8_t *slurp(const char *path, uint32_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = malloc(1 << 16);
  size_t n = fread(b, 1, (1 << 16) - 1, f);
  fclose(f);
  b[n] = 0;
  *len = (uint32_t)n;
  return b;
}

/* Moves ciphertext from one TLS session to the other; returns plaintext bytes the receiver produced. */
static int tls_move(sbh2_tls *from, sbh2_tls *to) {
  int got = 0, n;
  while ((n = sbh2_tls_send(from, NULL, 0, wire, sizeof wire)) > 0) {
    int r = sbh2_tls_recv(to, wire, (uint32_t)n, plain, sizeof plain);
    while (r > 0) {
      got += r;
      r = sbh2_tls_recv(to, NULL, 0, plain, sizeof plain);
    }
  }
  return got;
}

/* Runs a record-level handshake between two sessions; returns 1 when both are established. */
static int tls_handshake(sbh2_tls *c, sbh2_tls *s) {
  for (int i = 0; i < 20; i++) {
    tls_move(c, s);
    tls_move(s, c);
    if ((sbh2_tls_state(c) & SBWIRE_TLS_ESTABLISHED) && (sbh2_tls_state(s) & SBWIRE_TLS_ESTABLISHED)) return 1;
    if ((sbh2_tls_state(c) | sbh2_tls_state(s)) & SBWIRE_TLS_FAILED) return 0;
  }
  return 0;
}

/* HTTP/2 client (combined TLS paths) against the in-memory nghttp2 server behind a TLS server session. */
static int pump_tls(sbh2_conn *c, sbh2_tls *ct, sbh2_tls *st, nghttp2_session *s, int rounds) {
  int ready = 0;
  for (int i = 0; i < rounds; i++) {
    int moved = 0, n;
    while ((n = sbh2_conn_send_tls(c, ct, wire, sizeof wire)) > 0) {
      int r = sbh2_tls_recv(st, wire, (uint32_t)n, plain, sizeof plain);
      while (r > 0) {
        nghttp2_session_mem_recv(s, plain, (size_t)r);
        r = sbh2_tls_recv(st, NULL, 0, plain, sizeof plain);
      }
      moved = 1;
    }
    const uint8_t *p;
    ssize_t k;
    while ((sbh2_tls_state(st) & SBWIRE_TLS_ESTABLISHED) && (k = nghttp2_session_mem_send(s, &p)) > 0) {
      int m = sbh2_tls_send(st, p, (uint32_t)k, wire, sizeof wire);
      while (m > 0) {
        int r = sbh2_conn_recv_tls(c, ct, wire, (uint32_t)m);
        if (r >= 0) ready = r;
        m = sbh2_tls_send(st, NULL, 0, wire, sizeof wire);
      }
      moved = 1;
    }
    while ((n = sbh2_tls_send(st, NULL, 0, wire, sizeof wire)) > 0) {
      int r = sbh2_conn_recv_tls(c, ct, wire, (uint32_t)n);
      if (r >= 0) ready = r;
      moved = 1;
    }
    if (!moved) break;
  }
  return ready;
}

/* Full and resumed mTLS sessions, the combined HTTP/2 path, failures and early frees; returns wrong answers. */
static int tls_part(char **pem, const uint8_t *get, size_t hl, const uint8_t *post, size_t pl, const uint8_t *body,
                    size_t big) {
  int wrong = 0;
  uint32_t cal, scl, skl, ccl, ckl;
  uint8_t *ca = slurp(pem[0], &cal), *sc = slurp(pem[1], &scl), *sk = slurp(pem[2], &skl);
  uint8_t *cc = slurp(pem[3], &ccl), *ck = slurp(pem[4], &ckl);
  if (!ca || !sc || !sk || !cc || !ck) {
    printf("tls: cannot read the PEM files\n");
    return 1;
  }
  sbh2_tls_config *scfg = sbh2_tls_config_new(1), *ccfg = sbh2_tls_config_new(0), *anon = sbh2_tls_config_new(0);
  sbh2_tls_config_set_cert(scfg, sc, scl, sk, skl);
  sbh2_tls_config_add_ca(scfg, ca, cal);
  sbh2_tls_config_set_verify(scfg, SBWIRE_TLS_VERIFY_PEER);
  sbh2_tls_config_set_tickets(scfg, 60);
  sbh2_tls_config_set_cert(ccfg, cc, ccl, ck, ckl);
  sbh2_tls_config_add_ca(ccfg, ca, cal);
  sbh2_tls_config_add_ca(anon, ca, cal);

  /* 1. full mTLS handshake, HTTP/2 through the combined paths, exporter, ticket, close_notify */
  sbh2_tls *ct = sbh2_tls_new(ccfg, "localhost", NULL, 0);
  sbh2_tls *st = sbh2_tls_new(scfg, NULL, NULL, 0);
  sbh2_conn *c = sbh2_conn_new(16u << 20, 0);
  nghttp2_session *s = server_new();
  int before = messages;
  for (int i = 0; i < 20; i++) sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  for (int i = 0; i < 2; i++) sbh2_conn_request(c, post, (uint32_t)pl, body, (uint32_t)big);
  pump_tls(c, ct, st, s, 1000);
  drain(c, big);
  int answered = messages - before;
  uint8_t a[64], b[64], subject[256], ticket[8192];
  if (sbh2_tls_export(ct, (const uint8_t *)"EXPORTER_3GPP_N32_MASTER", 24, NULL, 0, a, 64) != 64) wrong++;
  if (sbh2_tls_export(st, (const uint8_t *)"EXPORTER_3GPP_N32_MASTER", 24, NULL, 0, b, 64) != 64) wrong++;
  int same = memcmp(a, b, 64) == 0;
  int sl = sbh2_tls_info(st, SBWIRE_TLS_INFO_PEER_SUBJECT, subject, sizeof subject);
  if (sl <= 0) wrong++;
  int tl = sbh2_tls_ticket(ct, ticket, sizeof ticket);
  sbh2_tls_shutdown(ct);
  tls_move(ct, st);
  int peer_closed = (sbh2_tls_state(st) & SBWIRE_TLS_PEER_CLOSED) != 0;
  sbh2_conn_free(c);
  server_free(s);
  sbh2_tls_free(ct);
  sbh2_tls_free(st);

  /* 1b. the shim's own server session behind TLS: combined paths on both sides, then a graceful close */
  sbh2_server *srv = sbh2_server_new();
  ct = sbh2_tls_new(ccfg, "localhost", NULL, 0);
  st = sbh2_tls_new(scfg, NULL, NULL, 0);
  c = sbh2_conn_new(16u << 20, 0);
  sbh2_sconn *ss = sbh2_sconn_new(srv);
  before = messages;
  for (int i = 0; i < 10; i++) sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0);
  sbh2_conn_request(c, post, (uint32_t)pl, body, 20000);
  int finished = 0;
  for (int i = 0; i < 200 && !finished; i++) {
    int k;
    while ((k = sbh2_conn_send_tls(c, ct, wire, sizeof wire)) > 0) sbh2_sconn_recv_tls(ss, st, wire, (uint32_t)k);
    serve(ss);
    if (i == 50) sbh2_sconn_shutdown(ss);
    while ((k = sbh2_sconn_send_tls(ss, st, wire2, sizeof wire2)) > 0) sbh2_conn_recv_tls(c, ct, wire2, (uint32_t)k);
    if (k == SBWIRE_ERR_CLOSED) finished = 1;
  }
  drain(c, 0);
  int served_tls = messages - before;
  int server_closed = finished && (sbh2_tls_state(ct) & SBWIRE_TLS_PEER_CLOSED);
  sbh2_conn_free(c);
  sbh2_sconn_free(ss);
  sbh2_server_free(srv);
  sbh2_tls_free(ct);
  sbh2_tls_free(st);

  /* 2. resumed with that ticket; the caller's config references go first (sessions keep theirs) */
  ct = sbh2_tls_new(ccfg, "localhost", tl > 0 ? ticket : NULL, tl > 0 ? (uint32_t)tl : 0);
  st = sbh2_tls_new(scfg, NULL, NULL, 0);
  sbh2_tls_config_free(ccfg);
  int resumed = tls_handshake(ct, st) && (sbh2_tls_state(ct) & SBWIRE_TLS_RESUMED) && (sbh2_tls_state(st) & SBWIRE_TLS_RESUMED);
  sbh2_tls_free(ct);
  sbh2_tls_free(st);

  /* 3. a client without a certificate is refused */
  ct = sbh2_tls_new(anon, "localhost", NULL, 0);
  st = sbh2_tls_new(scfg, NULL, NULL, 0);
  tls_handshake(ct, st);
  tls_move(ct, st);
  int refused = (sbh2_tls_state(st) & SBWIRE_TLS_FAILED) != 0;
  uint8_t err[256];
  int el = sbh2_tls_error(st, err, sizeof err);
  sbh2_tls_free(ct);
  sbh2_tls_free(st);

  /* 4. garbage instead of a ClientHello; 5. frees in the middle of a handshake */
  st = sbh2_tls_new(scfg, NULL, NULL, 0);
  const char *junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  int jr = sbh2_tls_recv(st, (const uint8_t *)junk, (uint32_t)strlen(junk), plain, sizeof plain);
  sbh2_tls_send(st, NULL, 0, wire, sizeof wire);
  sbh2_tls_free(st);
  ct = sbh2_tls_new(anon, "localhost", NULL, 0);
  st = sbh2_tls_new(scfg, NULL, NULL, 0);
  tls_move(ct, st);
  sbh2_tls_free(ct);
  sbh2_tls_free(st);
  sbh2_tls_free(NULL);
  sbh2_tls_config_free(anon);
  sbh2_tls_config_free(scfg);
  sbh2_tls_config_free(NULL);
  free(ca);
  free(sc);
  free(sk);
  free(cc);
  free(ck);
  printf("tls: %d answered; shim server %d answered, %s; exporter %s; subject %.*s; ticket %d B; close_notify %s; resumed %s; anon %s (%.*s); junk %d; bad %d\n",
         answered, served_tls, server_closed ? "closed" : "NOT closed", same ? "same" : "DIFFERENT", sl > 0 ? sl : 0, subject, tl, peer_closed ? "seen" : "LOST",
         resumed ? "yes" : "NO", refused ? "refused" : "ACCEPTED", el > 0 ? el : 0, err, jr, wrong);
  return wrong || answered != 22 || served_tls != 11 || !server_closed || !same || tl <= 0 || !peer_closed || !resumed || !refused || jr != SBWIRE_ERR_TLS;
}

int main(int argc, char **argv) {
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
  sbh2_conn_shutdown(c);
  pump(c, s, 100);
  closed_before = closed;
  drain(c, 0);
  int graceful_closed = closed > closed_before;
  if (sbh2_conn_request(c, get, (uint32_t)hl, NULL, 0) != SBWIRE_ERR_CLOSED) bad++;
  sbh2_conn_free(c);
  server_free(s);
  sbh2_conn_free(NULL);

  printf("ok: %d answered, %d resets; garbage %s (rv %d, %d-byte reason); close %s; bad %d\n", answered, resets,
         garbage_closed ? "closed" : "NOT closed", rv, el, graceful_closed ? "closed" : "NOT closed", bad);
  int client_bad = bad || answered != 25 || !garbage_closed || !graceful_closed;
  int srv_served = server_checks();
  printf("server ok: %d served, %d too large, %d over budget, %d released; bad %d\n", srv_served, too_large,
         over_budget, released, bad);
  int tls_wrong = argc >= 6 ? tls_part(argv + 1, get, hl, post, pl, body, big) : 0;
  if (argc < 6) printf("tls: skipped (no PEM files given)\n");
  free(get);
  free(post);
  free(body);
  return client_bad || bad || tls_wrong || srv_served < 27 || too_large != 1 || released != 11 ? 1 : 0;
}
