/*
 * Fuzz target: the h2 server session (sbh2_server.h) fed a client's byte stream.
 *
 * Input: byte 0 picks the mode (bits 0-1) and options (bits 2-7), bytes 1-2 seed the
 * chunking, the rest is what the client sends:
 *   mode 0  h2c: the bytes go straight into sbh2_sconn_recv (prior knowledge);
 *   mode 1  TLS ciphertext: the bytes go into sbh2_sconn_recv_tls (a ClientHello and on);
 *   mode 2  TLS, after an in-memory handshake with sbh2's own client: the bytes are
 *           encrypted by that client and the records fed to the server (so HTTP/2 runs
 *           over the TLS paths, past the handshake).
 * Between chunks the target polls events, checks every record, answers each request
 * (copied or lent bodies), drains the output and checks its frames; at the end it frees
 * everything and checks that the server's shared counters went back to zero.
 *
 * Options: bit 2 small limits, bit 3 small poll buffer, bit 4 lent bodies, bit 5 shut down
 * half-way, bit 6 timers of 1-3 ms, run after each chunk.
 */
#include <limits.h>
#include <nghttp2/nghttp2.h>

#include "../transports/h2/native/sbh2_server.h"
#include "../transports/h2/native/sbh2_tls.h"
#include "fuzz.h"
#include "testkey.h"

#define OUT_CAP (16384 + 9 + 4096)
#define POLL_CAP (256 * 1024)

typedef struct {
  sbh2_server *srv;
  sbh2_sconn *conn;
  sbh2_tls *tls;     /* modes 1, 2: the server's TLS session */
  sbh2_tls *client;  /* mode 2: the client that encrypts the input */
  int mode, opts;
  uint64_t max_body;
  uint8_t *poll;
  size_t poll_cap;
  uint8_t out[OUT_CAP];
  /* frames of the server's output, parsed across sends */
  uint8_t hd[9];
  size_t hd_have, frame_left;
  int preface_done;
  /* lent bodies: token -> released */
  uint8_t lent_body[4096];
  uint32_t next_token;
  uint8_t released[4096];
  int responded;
} h2s;

static sbh2_tls_config *server_cfg, *client_cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  server_cfg = sbh2_tls_config_new(1);
  client_cfg = sbh2_tls_config_new(0);
  if (!server_cfg || !client_cfg ||
      sbh2_tls_config_set_cert(server_cfg, (const uint8_t *)FUZZ_CERT, sizeof FUZZ_CERT - 1,
                               (const uint8_t *)FUZZ_KEY, sizeof FUZZ_KEY - 1) != 0 ||
      sbh2_tls_config_set_verify(client_cfg, SBWIRE_TLS_VERIFY_NONE) != 0)
    abort();
  return 0;
}

/* Checks the server's output stream frame by frame (no preface on this side). */
static void check_output(h2s *t, const uint8_t *p, size_t n) {
  while (n) {
    if (t->frame_left) {
      size_t k = n < t->frame_left ? n : t->frame_left;
      t->frame_left -= k;
      p += k;
      n -= k;
      continue;
    }
    size_t k = 9 - t->hd_have;
    if (k > n) k = n;
    memcpy(t->hd + t->hd_have, p, k);
    t->hd_have += k;
    p += k;
    n -= k;
    if (t->hd_have < 9) return;
    t->hd_have = 0;
    uint32_t len = (uint32_t)t->hd[0] << 16 | (uint32_t)t->hd[1] << 8 | t->hd[2];
    uint8_t type = t->hd[3];
    /* what this server sends: DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE */
    FUZZ_CHECK(type <= NGHTTP2_WINDOW_UPDATE && type != NGHTTP2_PRIORITY && type != NGHTTP2_PUSH_PROMISE);
    FUZZ_CHECK(len <= 16384);
    if (!t->preface_done) FUZZ_CHECK(type == NGHTTP2_SETTINGS); /* the server's first frame */
    t->preface_done = 1;
    t->frame_left = len;
  }
}

/* Plaintext of the session's output (modes 1, 2 decrypt it with the test client when there is one). */
static void drain(h2s *t) {
  for (int i = 0; i < 256; i++) {
    int n;
    if (t->mode == 0) {
      n = sbh2_sconn_send(t->conn, t->out, OUT_CAP);
      if (n > 0) check_output(t, t->out, (size_t)n);
    } else {
      n = sbh2_sconn_send_tls(t->conn, t->tls, t->out, OUT_CAP);
      if (n > 0 && t->client) {
        static uint8_t plain[64 * 1024];
        int m = sbh2_tls_recv(t->client, t->out, (uint32_t)n, plain, sizeof plain);
        while (m > 0) {
          check_output(t, plain, (size_t)m);
          m = sbh2_tls_recv(t->client, NULL, 0, plain, sizeof plain);
        }
      }
    }
    FUZZ_CHECK(n <= OUT_CAP);
    if (n <= 0) return;
  }
}

static void on_event(const fuzz_event *e, void *arg) {
  h2s *t = arg;
  FUZZ_CHECK(e->conn_id == 0);
  if (e->type == SBWIRE_EV_RELEASED) {
    FUZZ_CHECK(e->code > 0 && (uint64_t)e->code < t->next_token);
    FUZZ_CHECK(!t->released[e->code]); /* released once */
    t->released[e->code] = 1;
    return;
  }
  FUZZ_CHECK(e->type == SBWIRE_EV_MESSAGE || e->type == SBWIRE_EV_TOO_LARGE); /* the server queues only these */
  FUZZ_CHECK(e->stream_id > 0 && e->stream_id % 2 == 1 && e->stream_id <= 0x7fffffff);
  if (e->type == SBWIRE_EV_MESSAGE) FUZZ_CHECK(e->code == 0);
  else FUZZ_CHECK(e->code == SBWIRE_TOO_LARGE_BODY || e->code == SBWIRE_TOO_LARGE_BUDGET);
  FUZZ_CHECK(e->body_len <= t->max_body);
  if (e->code) FUZZ_CHECK(e->body_len == 0);
  /* answer: status, a header, a body sized from the stream id; lent when asked and tokens remain */
  uint8_t hdrs[128];
  static const char *const fields[] = {":status", "200", "content-type", "application/json"};
  size_t hl = fuzz_block(hdrs, fields, 2);
  uint32_t blen = (uint32_t)((e->stream_id * 977) % sizeof t->lent_body);
  uint32_t token = 0;
  if ((t->opts & 16) && t->next_token < sizeof t->released) token = t->next_token;
  int rv = sbh2_sconn_respond(t->conn, (int32_t)e->stream_id, hdrs, (uint32_t)hl, t->lent_body, blen, token);
  FUZZ_CHECK(rv == 0 || rv == SBWIRE_ERR_CLOSED || rv == SBWIRE_ERR_NOT_FOUND || rv == SBWIRE_ERR_NOMEM ||
             rv == SBWIRE_ERR_INTERNAL);
  if (rv == 0 && token) t->next_token++;
  /* a second answer to the same stream is refused */
  if (rv == 0) FUZZ_CHECK(sbh2_sconn_respond(t->conn, (int32_t)e->stream_id, hdrs, (uint32_t)hl, NULL, 0, 0) ==
                          SBWIRE_ERR_NOT_FOUND);
  t->responded++;
}

static void poll_all(h2s *t) {
  for (int i = 0; i < 64; i++) {
    int n = sbh2_sconn_poll(t->conn, t->poll, (uint32_t)t->poll_cap);
    if (n == SBWIRE_ERR_DONE) return;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
      uint64_t need = fuzz_get_u64(t->poll);
      FUZZ_CHECK(need > t->poll_cap && need >= SBWIRE_EVENT_HEADER_LEN);
      FUZZ_CHECK(need <= POLL_CAP); /* a request is bounded by the header list and body limits */
      t->poll_cap = POLL_CAP;
      continue;
    }
    FUZZ_CHECK(n > 0 && (size_t)n <= t->poll_cap);
    fuzz_walk_events(t->poll, (size_t)n, on_event, t);
  }
}

static void check_stats(h2s *t, const sbh2_server *srv_unused) {
  (void)srv_unused;
  int64_t buffered = sbh2_sconn_stat(t->conn, SBH2_STAT_BUFFERED);
  int64_t queued = sbh2_sconn_stat(t->conn, SBH2_STAT_QUEUED_BYTES);
  int64_t total = sbh2_sconn_stat(t->conn, SBH2_STAT_QUEUED_TOTAL);
  FUZZ_CHECK(buffered >= 0 && queued >= 0 && total == queued); /* one connection on this server */
  FUZZ_CHECK(sbh2_sconn_stat(t->conn, SBH2_STAT_STREAMS) >= 0);
  if (t->opts & 4) FUZZ_CHECK(buffered <= 8000);
}

/* Feeds one chunk of the client's stream; returns 0 when the connection stopped taking input. */
static int feed(h2s *t, const uint8_t *p, size_t n) {
  int rv;
  if (t->mode == 0) {
    rv = sbh2_sconn_recv(t->conn, p, (uint32_t)n);
  } else if (t->mode == 1) {
    rv = sbh2_sconn_recv_tls(t->conn, t->tls, p, (uint32_t)n);
  } else {
    int c = sbh2_tls_send(t->client, p, (uint32_t)n, t->out, OUT_CAP);
    rv = 0;
    while (c > 0 && rv >= 0) {
      rv = sbh2_sconn_recv_tls(t->conn, t->tls, t->out, (uint32_t)c);
      c = sbh2_tls_send(t->client, NULL, 0, t->out, OUT_CAP);
    }
  }
  FUZZ_CHECK(rv >= 0 || rv == SBWIRE_ERR_PROTO || rv == SBWIRE_ERR_CLOSED || rv == SBWIRE_ERR_TLS ||
             rv == SBWIRE_ERR_NOMEM);
  return rv >= 0;
}

/* Runs sbh2's client and the server's TLS session against each other until both are established. */
static int handshake(h2s *t) {
  uint8_t buf[OUT_CAP], plain[1024];
  for (int i = 0; i < 16; i++) {
    int n = sbh2_tls_send(t->client, NULL, 0, buf, sizeof buf);
    if (n > 0) sbh2_tls_recv(t->tls, buf, (uint32_t)n, plain, sizeof plain);
    n = sbh2_tls_send(t->tls, NULL, 0, buf, sizeof buf);
    if (n > 0) sbh2_tls_recv(t->client, buf, (uint32_t)n, plain, sizeof plain);
    if ((sbh2_tls_state(t->tls) & SBWIRE_TLS_ESTABLISHED) && (sbh2_tls_state(t->client) & SBWIRE_TLS_ESTABLISHED))
      return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t head = fuzz_u8(&in);
  fuzz_rng rng = {fuzz_u16(&in)};
  static h2s t;
  memset(&t, 0, sizeof t);
  t.mode = (head & 3) % 3;
  t.opts = head;
  t.next_token = 1;
  t.max_body = 32u << 20;
  t.srv = sbh2_server_new();
  FUZZ_CHECK(t.srv);
  if (t.opts & 4) {
    t.max_body = 3000;
    sbh2_server_set_max_streams(t.srv, 4);
    sbh2_server_set_max_header_list(t.srv, 600);
    sbh2_server_set_max_body(t.srv, t.max_body);
    sbh2_server_set_max_continuations(t.srv, 2);
    sbh2_server_set_max_resets(t.srv, 3);
    sbh2_server_set_max_queued(t.srv, 5000);
    sbh2_server_set_max_queued_total(t.srv, 6000);
    sbh2_server_set_max_buffered(t.srv, 8000);
  }
  if (t.opts & 64) { /* timers short enough to fire between chunks: stalls, a late SETTINGS ACK, idleness */
    sbh2_server_set_stall_timeout(t.srv, 1);
    sbh2_server_set_settings_timeout(t.srv, 3);
    sbh2_server_set_idle_timeout(t.srv, 2);
  }
  t.conn = sbh2_sconn_new(t.srv);
  FUZZ_CHECK(t.conn);
  t.poll_cap = (t.opts & 8) ? 40 : POLL_CAP;
  t.poll = malloc(POLL_CAP);
  FUZZ_CHECK(t.poll);
  memset(t.lent_body, 'x', sizeof t.lent_body);
  if (t.mode != 0) {
    t.tls = sbh2_tls_new(server_cfg, NULL, NULL, 0);
    FUZZ_CHECK(t.tls);
  }
  int alive = 1;
  if (t.mode == 2) {
    t.client = sbh2_tls_new(client_cfg, "localhost", NULL, 0);
    FUZZ_CHECK(t.client);
    FUZZ_CHECK(handshake(&t));
  }
  size_t half = fuzz_left(&in) / 2;
  while (alive && fuzz_left(&in)) {
    size_t n = fuzz_chunk(&rng, fuzz_left(&in), 16 * 1024), got;
    const uint8_t *p = fuzz_take(&in, n, &got);
    alive = feed(&t, p, got);
    poll_all(&t);
    drain(&t);
    check_stats(&t, t.srv);
    if ((t.opts & 32) && in.off - 3 >= half) sbh2_sconn_shutdown(t.conn);
    if (t.opts & 64) {
      int next = sbh2_sconn_tick(t.conn);
      FUZZ_CHECK(next >= 0 || next == SBWIRE_ERR_CLOSED);
      if (next >= 0 && next != INT_MAX) FUZZ_CHECK(next <= 3); /* never later than the longest timer set */
    }
  }
  poll_all(&t);
  drain(&t);
  uint8_t err[300];
  int el = sbh2_sconn_error(t.conn, err, sizeof err);
  FUZZ_CHECK(el >= 0 && el <= 255);
  sbh2_sconn_free(t.conn);
  /* every buffered and queued byte of the freed connection left the server's counts */
  sbh2_sconn *probe = sbh2_sconn_new(t.srv);
  FUZZ_CHECK(probe);
  FUZZ_CHECK(sbh2_sconn_stat(probe, SBH2_STAT_BUFFERED) == 0);
  FUZZ_CHECK(sbh2_sconn_stat(probe, SBH2_STAT_QUEUED_TOTAL) == 0);
  sbh2_sconn_free(probe);
  sbh2_server_free(t.srv);
  sbh2_tls_free(t.tls);
  sbh2_tls_free(t.client);
  free(t.poll);
  return 0;
}
