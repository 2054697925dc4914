/*
 * Fuzz target: the h3 client connection (sbh3_conn_*) fed a server's datagrams.
 *
 * Input: byte 0 picks the mode (bit 0) and options, bytes 1-2 seed sbh3's random bytes, byte 3
 * the number of requests the client makes (mod 16; request i is a GET, or a POST of i * 37 bytes),
 * then:
 *   mode 0  datagrams, each a u16 length and its bytes, fed to sbh3_conn_recv (the client's
 *           Initial went out first; seeds carry a server's first flight for the same seed);
 *   mode 1  the client completes a handshake with an sbh3 server in memory and makes its
 *           requests; the server then stops speaking HTTP/3 itself and the input is a list of
 *           operations whose bytes it writes on the request streams and on its own control and
 *           QPACK streams (responses, GOAWAY, QPACK instructions), stream resets, raw
 *           datagrams and timer runs.
 * After each step the target moves datagrams both ways and checks every event the client
 * reports: one per request at most, for requests it made, bodies within its limit.
 * Options: bit 2 small poll buffer, bit 3 cancel the first request half-way, bit 4 close at the end.
 */
#include "h3_common.h"

#define POLL_CAP (128 * 1024)
#define MAX_REQ 16

typedef struct {
  h3f_pair p;
  int opts, nreq, closed;
  int64_t ids[MAX_REQ];
  uint8_t seen[MAX_REQ];
  uint8_t poll[POLL_CAP];
  size_t poll_cap;
} h3c;

static int request_index(const h3c *t, int64_t sid) {
  for (int i = 0; i < t->nreq; i++)
    if (t->ids[i] == sid) return i;
  return -1;
}

static void on_event(const fuzz_event *e, void *arg) {
  h3c *t = arg;
  FUZZ_CHECK(e->conn_id == 0);
  switch (e->type) {
  case SBWIRE_EV_CONNECTED:
  case SBWIRE_EV_GOAWAY:
  case SBWIRE_EV_EARLY_REJECTED:
    FUZZ_CHECK(e->code == 0);
    return;
  case SBWIRE_EV_CLOSED:
    FUZZ_CHECK(!t->closed && e->code < 0);
    t->closed = 1;
    return;
  case SBWIRE_EV_MESSAGE:
  case SBWIRE_EV_RESET: {
    int i = request_index(t, e->stream_id);
    FUZZ_CHECK(i >= 0);
    FUZZ_CHECK(!t->seen[i]);
    t->seen[i] = 1;
    if (e->type == SBWIRE_EV_MESSAGE) FUZZ_CHECK(e->code == 0 && e->body_len <= 5000);
    else FUZZ_CHECK(e->hdrs_len == 0);
    return;
  }
  default:
    FUZZ_CHECK(!"an h3 client event type");
  }
}

static void poll_all(h3c *t) {
  if (!t->p.cli) return;
  for (int i = 0; i < 256; i++) {
    int n = sbh3_conn_poll(t->p.cli, t->poll, t->poll_cap);
    if (n == SBWIRE_ERR_DONE) return;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
      uint64_t need = fuzz_get_u64(t->poll);
      FUZZ_CHECK(need > t->poll_cap && need >= SBWIRE_EVENT_HEADER_LEN && need <= POLL_CAP);
      t->poll_cap = POLL_CAP;
      continue;
    }
    FUZZ_CHECK(n > 0 && (size_t)n <= t->poll_cap);
    FUZZ_CHECK(fuzz_walk_events(t->poll, (size_t)n, on_event, t) >= 1);
  }
}

static void drain_server(h3c *t) {
  int n;
  for (int i = 0; i < 256 && (n = sbh3_server_send(t->p.srv, t->p.pkt, H3_PKT, t->p.meta, sizeof t->p.meta)) > 0; i++)
    h3f_check_server_datagram(&t->p, n);
}

static void step_done(h3c *t) {
  h3f_pump(&t->p);
  poll_all(t);
  FUZZ_CHECK(sbh3_conn_stream_count(t->p.cli) >= 0 && sbh3_conn_stream_count(t->p.cli) <= t->nreq);
}

static void to_client(h3f_pair *p, const uint8_t *d, size_t n) { h3f_to_client(p, d, n); }

static void op(h3c *t, fuzz_in *in) {
  sbh3_conn *sc = server_find_id(t->p.srv, t->p.conn_id);
  uint8_t kind = fuzz_u8(in) % 5;
  size_t got;
  if (kind == 0 || kind == 1) {
    uint8_t sel = fuzz_u8(in);
    uint16_t len = fuzz_u16(in);
    const uint8_t *d = fuzz_take(in, len, &got);
    if (!sc) return;
    int64_t sid;
    if (kind == 0) {
      if (!t->nreq) return;
      sid = t->ids[(sel & 15) % t->nreq];
    } else {
      sid = 3 + 4 * ((sel & 3) % 3); /* the server's control, QPACK encoder and decoder streams */
    }
    h3f_write_stream(sc, sid, d, got, sel & 0x80, to_client, &t->p);
  } else if (kind == 2) {
    uint8_t k = fuzz_u8(in);
    uint16_t code = fuzz_u16(in);
    if (sc && t->nreq) ngtcp2_conn_shutdown_stream(sc->qc, t->ids[k % t->nreq], 0x100 + code);
  } else if (kind == 3) {
    uint16_t len = fuzz_u16(in);
    const uint8_t *d = fuzz_take(in, len, &got);
    h3f_to_client(&t->p, d, got);
  } else {
    sbh3_server_on_timeout(t->p.srv);
    int rv = sbh3_conn_on_timeout(t->p.cli);
    FUZZ_CHECK(rv == 0 || rv == SBWIRE_ERR_CLOSED);
  }
}

static void make_requests(h3c *t, int n) {
  static uint8_t body[MAX_REQ * 37];
  memset(body, 'd', sizeof body);
  for (int i = 0; i < n; i++) {
    uint8_t hdrs[256];
    static const char *const get[] = {":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", "/a"};
    static const char *const post[] = {":method", "POST", ":scheme", "https", ":authority", "localhost", ":path", "/b"};
    size_t hl = fuzz_block(hdrs, i % 3 ? post : get, 4);
    int64_t id = sbh3_conn_request(t->p.cli, hdrs, hl, body, i % 3 ? (size_t)(i * 37) : 0);
    if (id == SBWIRE_ERR_STREAM_BLOCKED || id == SBWIRE_ERR_CLOSED) return;
    FUZZ_CHECK(id >= 0 && id % 4 == 0);
    t->ids[t->nreq++] = id;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t head = fuzz_u8(&in);
  h3f_seed(fuzz_u16(&in));
  static h3c t;
  memset(&t, 0, sizeof t);
  t.opts = head;
  t.poll_cap = (head & 4) ? 40 : POLL_CAP;
  int nreq = fuzz_u8(&in) % MAX_REQ;
  FUZZ_CHECK(h3f_pair_new(&t.p, h3f_server_config(0), h3f_client_config()) == 0);
  if (!(head & 1)) {
    int n = sbh3_conn_send(t.p.cli, t.p.pkt, H3_PKT); /* the client's Initial, to nowhere */
    FUZZ_CHECK(n > 0);
    while (fuzz_left(&in) && !t.closed) {
      size_t got;
      uint16_t len = fuzz_u16(&in);
      const uint8_t *d = fuzz_take(&in, len, &got);
      h3f_to_client(&t.p, d, got);
      if (t.p.cli->h3.hc && t.nreq < nreq) make_requests(&t, nreq - t.nreq);
      for (int i = 0; i < 64 && sbh3_conn_send(t.p.cli, t.p.pkt, H3_PKT) > 0; i++) {
      }
      poll_all(&t);
    }
  } else {
    FUZZ_CHECK(h3f_handshake(&t.p));
    sbh3_conn *sc = server_find_id(t.p.srv, t.p.conn_id);
    FUZZ_CHECK(sc);
    nghttp3_conn_del(sc->h3.hc); /* the server stops speaking HTTP/3 itself */
    sc->h3.hc = NULL;
    make_requests(&t, nreq);
    step_done(&t);
    size_t half = fuzz_left(&in) / 2, start = in.off;
    for (int i = 0; i < 64 && fuzz_left(&in); i++) {
      op(&t, &in);
      step_done(&t);
      if ((head & 8) && t.nreq && in.off - start >= half && !t.seen[0]) {
        int rv = sbh3_conn_cancel(t.p.cli, t.ids[0]);
        FUZZ_CHECK(rv == 0 || rv == SBWIRE_ERR_NOT_FOUND || rv == SBWIRE_ERR_CLOSED);
        t.seen[0] = 1; /* nothing more may be reported for it */
      }
    }
    drain_server(&t);
  }
  if (head & 16) {
    sbh3_conn_shutdown(t.p.cli);
    step_done(&t);
  }
  uint8_t err[300];
  FUZZ_CHECK(sbh3_conn_error(t.p.cli, err, sizeof err) >= 0);
  h3f_pair_free(&t.p);
  return 0;
}
