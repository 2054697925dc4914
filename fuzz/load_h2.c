/*
 * Fuzz target: the h2 load engine's response path (load/native/sbl_h2.c) fed a
 * server's byte stream, without sockets or threads.
 *
 * Input: byte 0: streams per connection (1..8) and whether requests carry a body, bytes 1-2 seed
 * the chunking, the rest is what the server sends (h2c). The target builds an engine from a plan,
 * sets up one connection's HTTP/2 session as a worker would, keeps its streams busy with the
 * engine's own dispatch, and feeds the bytes through the engine's feed. It checks the engine's
 * accounting after every chunk: every request sent is completed, failed or in flight, the status
 * counts add up to the completions, in-flight slots match the connection's count, and a dead
 * connection holds no request.
 */
#include SBL_LOAD_C /* the engine and its h2 protocol, whole (scripts/fuzz.sh names the files) */
#include SBH2_LOAD_C
#include "fuzz.h"

static uint8_t *plan_record(int streams, int with_body, uint32_t *len) {
  static uint8_t p[512];
  memset(p, 0, sizeof p);
  sbwire_put_u32(p, SBL_PLAN_MAGIC);
  sbwire_put_u32(p + 8, 1);
  sbwire_put_u32(p + 12, (uint32_t)streams);
  sbwire_put_u32(p + 16, 1);
  sbwire_put_u32(p + 20, 8080);
  sbwire_put_u64(p + 24, 1000000);
  sbwire_put_u64(p + 48, 10000000000ull);
  uint32_t off = SBL_PLAN_HEAD;
  const char *host = "127.0.0.1", *body = "{\"supi\":\"imsi-001010000000001\"}";
  static const char *const fields[] = {":method", "POST", ":scheme", "http", ":authority", "localhost", ":path", "/a"};
  uint8_t hdrs[128];
  size_t hl = fuzz_block(hdrs, fields, 4);
  const void *blobs[5] = {host, host, hdrs, body, ""};
  uint32_t lens[5] = {(uint32_t)strlen(host), (uint32_t)strlen(host), (uint32_t)hl,
                      with_body ? (uint32_t)strlen(body) : 0, 0};
  for (int i = 0; i < 5; i++) {
    sbwire_put_u32(p + off, lens[i]);
    memcpy(p + off + 4, blobs[i], lens[i]);
    off += 4 + lens[i];
  }
  *len = off;
  return p;
}

/* Sends what the session has (to nowhere), as the connection's flush would. */
static void drain(h2_conn *h) {
  const uint8_t *d;
  for (int i = 0; h->s && i < 1024 && nghttp2_session_mem_send(h->s, &d) > 0; i++) {
  }
}

static void check(const sbl_worker *w, const sbl_conn *c) {
  const sbl_plan *p = &w->e->plan;
  int busy = 0;
  uint64_t measured_busy = 0;
  for (uint32_t i = 0; i < p->streams; i++) {
    busy += c->slots[i].busy;
    measured_busy += c->slots[i].busy && c->slots[i].measured;
  }
  FUZZ_CHECK(busy == c->inflight && (uint64_t)busy == w->inflight);
  FUZZ_CHECK(w->sent == w->completed + w->errors + measured_busy);
  uint64_t st = 0;
  for (int s = 0; s < MAX_STATUS; s++) st += w->status[s];
  FUZZ_CHECK(st == w->completed);
  if (c->dead) FUZZ_CHECK(busy == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size, 0};
  uint8_t head = fuzz_u8(&in);
  fuzz_rng rng = {fuzz_u16(&in)};
  uint32_t plen;
  uint8_t *rec = plan_record(1 + (head & 7), head & 8, &plen);
  sbl_engine *e = sbl_engine_new(&H2_PROTO, rec, plen);
  FUZZ_CHECK(e);
  sbl_worker *w = &e->workers[0];
  char err[128];
  w->state = h2_worker_new(w, &e->plan, err, sizeof err);
  FUZZ_CHECK(w->state);
  sbl_conn *c = w->conns[0];
  h2_conn *h = (h2_conn *)c;
  uint64_t now = sbl_now();
  w->t_measure = now;
  w->phase = SBL_PHASE_MEASURE;
  c->t_start = now;
  session_up(c);
  FUZZ_CHECK(c->up && h->s);
  dispatch(w, now);
  drain(h);
  check(w, c);
  while (fuzz_left(&in) && !c->dead) {
    size_t n = fuzz_chunk(&rng, fuzz_left(&in), RBUF_LEN), got;
    const uint8_t *p = fuzz_take(&in, n, &got);
    sbl_conn_bytes(c, got, 0);
    feed(c, p, got);
    check(w, c);
    if (!c->dead) {
      c->blocked = 0;
      dispatch(w, sbl_now());
      drain(h);
      check(w, c);
    }
  }
  h2_conn_free(c);
  h2_worker_free(w->state);
  w->state = NULL;
  sbl_engine_free(e);
  return 0;
}
