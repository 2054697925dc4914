/*
 * Fuzz target: the h3 server endpoint (sbh3_server_*) fed a client's datagrams.
 *
 * Input: byte 0 picks the mode (bit 0) and options, bytes 1-2 seed sbh3's random bytes, then:
 *   mode 0  datagrams: each a u16 length and its bytes, fed to sbh3_server_recv from one client
 *           address (Initial packets, Version Negotiation, stateless reset, Retry paths);
 *   mode 1  an sbh3 client completes a handshake in memory first and then stops speaking HTTP/3
 *           itself: the input is a list of operations whose bytes it writes on QUIC streams
 *           (request streams, its control and QPACK streams, new unidirectional streams),
 *           stream resets, raw datagrams and timer runs, so the server's HTTP/3 layer reads the fuzzer's frames inside real packets.
 * After each step the target moves datagrams both ways, polls the server's events, checks each
 * record and answers every request. Options: bit 1 small limits, bit 2 Retry, bit 3 small poll
 * buffer, bit 4 shut the server down at the end before freeing it.
 */
#include "h3_common.h"

#define POLL_CAP (128 * 1024)

typedef struct {
  h3f_pair p;
  int opts;
  uint64_t max_body;
  uint8_t poll[POLL_CAP];
  size_t poll_cap;
  uint8_t body[5000];
  int64_t bidi[8];
  int nbidi;
} h3s;

static void on_event(const fuzz_event *e, void *arg) {
  h3s *t = arg;
  FUZZ_CHECK(e->conn_id > 0);
  switch (e->type) {
  case SBWIRE_EV_CONNECTED:
  case SBWIRE_EV_CLOSED:
    FUZZ_CHECK(e->type == SBWIRE_EV_CONNECTED ? e->code == 0 : e->code < 0);
    return;
  case SBWIRE_EV_MESSAGE:
  case SBWIRE_EV_TOO_LARGE:
    break;
  default:
    FUZZ_CHECK(!"an h3 server event type");
  }
  FUZZ_CHECK(e->stream_id >= 0 && e->stream_id % 4 == 0); /* client-initiated bidirectional */
  FUZZ_CHECK(e->body_len <= t->max_body);
  if (e->type == SBWIRE_EV_TOO_LARGE) FUZZ_CHECK(e->body_len == 0 && e->code == SBWIRE_TOO_LARGE_BODY);
  else FUZZ_CHECK(e->code == 0 || e->code == SBH3_MSG_EARLY);
  uint8_t hdrs[128];
  static const char *const ok[] = {":status", "200", "content-type", "application/json"};
  static const char *const big[] = {":status", "413"};
  size_t hl = e->type == SBWIRE_EV_MESSAGE ? fuzz_block(hdrs, ok, 2) : fuzz_block(hdrs, big, 1);
  size_t blen = e->type == SBWIRE_EV_MESSAGE ? (size_t)((e->stream_id * 977) % sizeof t->body) : 0;
  int rv = sbh3_server_respond(t->p.srv, e->conn_id, e->stream_id, hdrs, hl, t->body, blen);
  FUZZ_CHECK(rv == 0 || rv == SBWIRE_ERR_STREAM_BLOCKED || rv == SBWIRE_ERR_NOT_FOUND || rv == SBWIRE_ERR_CLOSED ||
             rv == SBWIRE_ERR_INTERNAL || rv == SBWIRE_ERR_NOMEM);
}

static void poll_all(h3s *t) {
  for (int i = 0; i < 256; i++) {
    int n = sbh3_server_poll(t->p.srv, t->poll, t->poll_cap);
    if (n == SBWIRE_ERR_DONE) return;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT) {
      uint64_t need = fuzz_get_u64(t->poll);
      FUZZ_CHECK(need > t->poll_cap && need >= SBWIRE_EVENT_HEADER_LEN && need <= POLL_CAP);
      t->poll_cap = POLL_CAP;
      continue;
    }
    FUZZ_CHECK(n > 0 && (size_t)n <= t->poll_cap);
    FUZZ_CHECK(fuzz_walk_events(t->poll, (size_t)n, on_event, t) >= 1); /* whole records, at least one */
  }
}

static void check_stats(h3s *t) {
  uint64_t st[SBH3_STAT_COUNT];
  FUZZ_CHECK(sbh3_server_stats(t->p.srv, 0, st, SBH3_STAT_COUNT) == SBH3_STAT_COUNT);
  uint64_t sum = 0;
  for (sbh3_conn *c = t->p.srv->conns; c; c = c->next) {
    sum += c->queued;
    FUZZ_CHECK(c->h3.nstreams >= 0);
  }
  FUZZ_CHECK(st[SBH3_STAT_QUEUED_BYTES] == sum); /* the endpoint's count is its connections' sum */
  FUZZ_CHECK(sbh3_server_conn_count(t->p.srv) <= MAX_CONNS);
}

static void step_done(h3s *t) {
  h3f_pump(&t->p);
  poll_all(t);
  h3f_pump(&t->p); /* the answers */
  poll_all(t);
  check_stats(t);
}

static void to_server(h3f_pair *p, const uint8_t *d, size_t n) { h3f_to_server(p, d, n); }

/* Mode 1: one operation of the scripted client. */
static void op(h3s *t, fuzz_in *in) {
  sbh3_conn *cli = t->p.cli;
  uint8_t kind = fuzz_u8(in) % 6;
  size_t got;
  if (kind == 0 || kind == 1) {
    uint8_t sel = fuzz_u8(in);
    int fin = sel & 0x80;
    uint16_t len = fuzz_u16(in);
    const uint8_t *d = fuzz_take(in, len, &got);
    int64_t sid;
    if (kind == 0) {
      size_t k = sel & 7;
      if (k >= (size_t)t->nbidi) {
        if (t->nbidi == 8 || ngtcp2_conn_open_bidi_stream(cli->qc, &sid, NULL) != 0) return;
        k = (size_t)t->nbidi;
        t->bidi[t->nbidi++] = sid;
      }
      sid = t->bidi[k];
    } else if ((sel & 3) < 3) {
      sid = 2 + 4 * (sel & 3); /* the client's control, QPACK encoder and decoder streams */
    } else if (ngtcp2_conn_open_uni_stream(cli->qc, &sid, NULL) != 0) {
      return; /* a new one, when the server allows it */
    }
    h3f_write_stream(cli, sid, d, got, fin, to_server, &t->p);
  } else if (kind == 2) {
    uint8_t k = fuzz_u8(in) & 7;
    uint16_t code = fuzz_u16(in);
    if (k < t->nbidi) ngtcp2_conn_shutdown_stream(cli->qc, t->bidi[k], 0x100 + code);
  } else if (kind == 3) {
    uint16_t len = fuzz_u16(in);
    const uint8_t *d = fuzz_take(in, len, &got);
    h3f_to_server(&t->p, d, got);
  } else if (kind == 4) {
    FUZZ_CHECK(sbh3_server_on_timeout(t->p.srv) == 0);
    if (!cli->closed) sbh3_conn_on_timeout(cli);
  } else {
    sbh3_server_shutdown(t->p.srv);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t head = fuzz_u8(&in);
  h3f_seed(fuzz_u16(&in));
  static h3s t;
  memset(&t, 0, sizeof t);
  t.opts = head;
  int flags = ((head & 2) ? H3F_SMALL : 0) | ((head & 4) ? H3F_RETRY : 0);
  t.max_body = (flags & H3F_SMALL) ? 3000 : 64ull << 20;
  t.poll_cap = (head & 8) ? 40 : POLL_CAP;
  memset(t.body, 'y', sizeof t.body);
  FUZZ_CHECK(h3f_pair_new(&t.p, h3f_server_config(flags), h3f_client_config()) == 0);
  if (!(head & 1)) {
    /* raw datagrams; the client only supplied the addresses */
    sbh3_conn_free(t.p.cli);
    t.p.cli = NULL;
    while (fuzz_left(&in)) {
      size_t got;
      uint16_t len = fuzz_u16(&in);
      const uint8_t *d = fuzz_take(&in, len, &got);
      h3f_to_server(&t.p, d, got);
      step_done(&t);
    }
  } else {
    FUZZ_CHECK(h3f_handshake(&t.p));
    poll_all(&t);
    /* the client stops speaking HTTP/3 itself: the input writes its streams */
    nghttp3_conn_del(t.p.cli->h3.hc);
    t.p.cli->h3.hc = NULL;
    for (int i = 0; i < 64 && fuzz_left(&in); i++) {
      op(&t, &in);
      step_done(&t);
    }
  }
  if (head & 16) {
    sbh3_server_close_all(t.p.srv);
    step_done(&t);
  }
  h3f_pair_free(&t.p);
  return 0;
}
