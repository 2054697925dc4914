/*
 * Fuzz target: the h2 client session (sbh2.h) fed a server's byte stream.
 *
 * Input: byte 0 picks the mode (bit 0) and options, bytes 1-2 seed the chunking, byte 3 the
 * number of requests the client makes first (mod 32; request i is a GET, or a POST of i * 37
 * bytes), the rest is what the server sends:
 *   mode 0  h2c: the bytes go straight into sbh2_conn_recv;
 *   mode 1  TLS: after an in-memory handshake with sbh2's TLS server session, the bytes are
 *           encrypted by it and the records fed to sbh2_conn_recv_tls.
 * After each chunk the target polls and checks every event: at most one per stream, only for
 * streams it opened, bodies within the limit. Options: bit 1 small windows and a 5000-byte body
 * limit, bit 2 small poll buffer, bit 3 cancel the last request half-way, bit 4 close half-way,
 * bit 5 drain the client's output 100 bytes at a time (what does not fit waits in the shim).
 */
#include <nghttp2/nghttp2.h>

#include "../transports/h2/native/sbh2_tls.h"
#include "fuzz.h"
#include "testkey.h"

#define OUT_CAP (64 * 1024)
#define POLL_CAP (256 * 1024)
#define MAX_REQ 32

typedef struct {
  sbh2_conn *conn;
  sbh2_tls *tls;    /* mode 1: the client's TLS session */
  sbh2_tls *server; /* mode 1: the server's, which encrypts the input */
  int mode, opts;
  uint32_t max_body;
  int32_t ids[MAX_REQ];
  uint8_t seen[MAX_REQ];
  int nreq, closed;
  uint8_t *poll;
  size_t poll_cap;
  uint8_t out[OUT_CAP];
} h2c;

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

static int request_index(const h2c *t, int64_t sid) {
  for (int i = 0; i < t->nreq; i++)
    if (t->ids[i] == sid) return i;
  return -1;
}

static void on_event(const fuzz_event *e, void *arg) {
  h2c *t = arg;
  FUZZ_CHECK(e->conn_id == 0);
  switch (e->type) {
  case SBWIRE_EV_MESSAGE:
  case SBWIRE_EV_RESET: {
    int i = request_index(t, e->stream_id);
    FUZZ_CHECK(i >= 0);     /* only streams this client opened */
    FUZZ_CHECK(!t->seen[i]); /* one event per stream */
    t->seen[i] = 1;
    if (e->type == SBWIRE_EV_MESSAGE) {
      FUZZ_CHECK(e->code == 0 && e->body_len <= t->max_body);
    } else {
      FUZZ_CHECK(e->hdrs_len == 0 && e->code >= 0 && e->code <= 0xffffffffll);
    }
    return;
  }
  case SBWIRE_EV_CLOSED:
    FUZZ_CHECK(!t->closed && e->code < 0);
    t->closed = 1;
    return;
  case SBWIRE_EV_GOAWAY:
    FUZZ_CHECK(e->code >= 0 && e->code <= 0x7fffffff);
    return;
  default:
    FUZZ_CHECK(!"an h2 client event type");
  }
}

static void poll_all(h2c *t) {
  for (int i = 0; i < 64; i++) {
    int n = sbh2_conn_poll(t->conn, t->poll, (uint32_t)t->poll_cap);
    if (n == SBWIRE_ERR_DONE) return;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
      uint64_t need = fuzz_get_u64(t->poll);
      FUZZ_CHECK(need > t->poll_cap && need >= SBWIRE_EVENT_HEADER_LEN);
      FUZZ_CHECK(need <= POLL_CAP || t->max_body > 5000);
      if (need > POLL_CAP) { /* a body up to the default limit: grow */
        FUZZ_CHECK(need <= (64u << 20) + (1u << 20));
        t->poll = realloc(t->poll, need);
        FUZZ_CHECK(t->poll);
      }
      t->poll_cap = need > POLL_CAP ? need : POLL_CAP;
      continue;
    }
    FUZZ_CHECK(n > 0 && (size_t)n <= t->poll_cap);
    fuzz_walk_events(t->poll, (size_t)n, on_event, t);
  }
}

/* Drains the client's output (mode 1: decrypted by the server session and dropped). */
static void drain(h2c *t) {
  static uint8_t plain[64 * 1024];
  uint32_t cap = (t->opts & 32) ? 100 : OUT_CAP;
  for (int i = 0; i < 4096; i++) {
    int n = t->mode == 0 ? sbh2_conn_send(t->conn, t->out, cap) : sbh2_conn_send_tls(t->conn, t->tls, t->out, cap);
    FUZZ_CHECK(n <= (int)cap);
    if (n <= 0) return;
    if (t->mode == 1) sbh2_tls_recv(t->server, t->out, (uint32_t)n, plain, sizeof plain);
  }
}

static void feed(h2c *t, const uint8_t *p, size_t n) {
  int rv;
  if (t->mode == 0) {
    rv = sbh2_conn_recv(t->conn, p, (uint32_t)n);
  } else {
    static uint8_t enc[OUT_CAP];
    int c = sbh2_tls_send(t->server, p, (uint32_t)n, enc, sizeof enc);
    rv = 0;
    while (c > 0 && rv >= 0) {
      rv = sbh2_conn_recv_tls(t->conn, t->tls, enc, (uint32_t)c);
      c = sbh2_tls_send(t->server, NULL, 0, enc, sizeof enc);
    }
  }
  FUZZ_CHECK(rv >= 0 || rv == SBWIRE_ERR_PROTO || rv == SBWIRE_ERR_CLOSED || rv == SBWIRE_ERR_TLS || rv == SBWIRE_ERR_NOMEM);
  if (t->closed) FUZZ_CHECK(rv < 0 || t->mode == 1);
}

static int handshake(h2c *t) {
  uint8_t buf[OUT_CAP], plain[1024];
  for (int i = 0; i < 16; i++) {
    int n = sbh2_tls_send(t->tls, NULL, 0, buf, sizeof buf);
    if (n > 0) sbh2_tls_recv(t->server, buf, (uint32_t)n, plain, sizeof plain);
    n = sbh2_tls_send(t->server, NULL, 0, buf, sizeof buf);
    if (n > 0) sbh2_tls_recv(t->tls, buf, (uint32_t)n, plain, sizeof plain);
    if ((sbh2_tls_state(t->tls) & SBWIRE_TLS_ESTABLISHED) && (sbh2_tls_state(t->server) & SBWIRE_TLS_ESTABLISHED))
      return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t head = fuzz_u8(&in);
  fuzz_rng rng = {fuzz_u16(&in)};
  static h2c t;
  memset(&t, 0, sizeof t);
  t.mode = head & 1;
  t.opts = head;
  t.max_body = (head & 2) ? 5000 : 64u << 20;
  t.conn = sbh2_conn_new((head & 2) ? 65535 : 1 << 20, (head & 2) ? 5000 : 0);
  FUZZ_CHECK(t.conn);
  t.poll_cap = (head & 4) ? 40 : POLL_CAP;
  t.poll = malloc(POLL_CAP);
  FUZZ_CHECK(t.poll);
  if (t.mode == 1) {
    t.tls = sbh2_tls_new(client_cfg, "localhost", NULL, 0);
    t.server = sbh2_tls_new(server_cfg, NULL, NULL, 0);
    FUZZ_CHECK(t.tls && t.server && handshake(&t));
  }
  int nreq = fuzz_u8(&in) % MAX_REQ;
  static uint8_t body[MAX_REQ * 37];
  memset(body, 'c', sizeof body);
  for (int i = 0; i < nreq; i++) {
    uint8_t hdrs[256];
    static const char *const get[] = {":method", "GET", ":scheme", "http", ":authority", "localhost", ":path", "/a"};
    static const char *const post[] = {":method", "POST", ":scheme", "http", ":authority", "localhost", ":path", "/b"};
    size_t hl = fuzz_block(hdrs, i % 3 ? post : get, 4);
    int32_t id = sbh2_conn_request(t.conn, hdrs, (uint32_t)hl, body, i % 3 ? (uint32_t)(i * 37) : 0);
    FUZZ_CHECK(id > 0 && id % 2 == 1);
    t.ids[t.nreq++] = id;
  }
  drain(&t);
  size_t half = fuzz_left(&in) / 2, start = in.off;
  while (fuzz_left(&in) && !t.closed) {
    size_t n = fuzz_chunk(&rng, fuzz_left(&in), 16 * 1024), got;
    const uint8_t *p = fuzz_take(&in, n, &got);
    feed(&t, p, got);
    poll_all(&t);
    drain(&t);
    FUZZ_CHECK(sbh2_conn_stream_count(t.conn) >= 0 && sbh2_conn_stream_count(t.conn) <= t.nreq);
    if (in.off - start >= half && t.nreq) {
      if ((head & 8) && sbh2_conn_cancel(t.conn, t.ids[t.nreq - 1]) == 0) {
        /* a cancelled stream reports nothing more */
        t.seen[t.nreq - 1] = 1;
        FUZZ_CHECK(sbh2_conn_cancel(t.conn, t.ids[t.nreq - 1]) == SBWIRE_ERR_NOT_FOUND);
      }
      if (head & 16) sbh2_conn_shutdown(t.conn);
    }
  }
  poll_all(&t);
  uint8_t err[300];
  int el = sbh2_conn_error(t.conn, err, sizeof err);
  FUZZ_CHECK(el >= 0 && el <= 255);
  sbh2_conn_free(t.conn);
  sbh2_tls_free(t.tls);
  sbh2_tls_free(t.server);
  free(t.poll);
  return 0;
}
