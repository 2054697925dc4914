/*
 * Fuzz target: the load engine's plan decoder (sbl_engine_new, load/native/sbl_load.h).
 *
 * Input: a plan record. A plan the decoder accepts must hold what the workers later rely on:
 * every blob inside the record, a header block that decodes, counts within their limits, an
 * allocation bounded up front, and a schedule whose times fit in 64 bits (each worker's intended
 * send times, the end of its warm-up, measurement and drain). The engine is not started: its
 * result record (all zero) is written and must decode as the header says.
 */
#include <math.h>

#include SBL_LOAD_C /* the engine, whole (scripts/fuzz.sh names the file) */
#include "fuzz.h"

static const sbl_proto proto = {.conn_size = sizeof(sbl_conn)};

/* a + b without wrapping past 2^64 */
static int fits(uint64_t a, uint64_t b) { return a + b >= a; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > UINT32_MAX) return 0;
  sbl_engine *e = sbl_engine_new(&proto, data, (uint32_t)size);
  if (!e) return 0;
  const sbl_plan *p = &e->plan;
  const uint8_t *lo = e->copy, *hi = e->copy + size;
  FUZZ_CHECK(p->hdrs >= lo && p->hdrs + p->hdrs_len <= hi);
  FUZZ_CHECK(p->body >= lo && p->body + p->body_len <= hi);
  FUZZ_CHECK(p->ca >= lo && p->ca + p->ca_len <= hi);
  FUZZ_CHECK((p->cert == NULL) == (p->key == NULL));
  FUZZ_CHECK(!p->cert || (p->cert >= lo && p->cert + p->cert_len <= hi && p->cert_len > 0));
  FUZZ_CHECK(!p->key || (p->key >= lo && p->key + p->key_len <= hi && p->key_len > 0));
  FUZZ_CHECK(fuzz_check_block(p->hdrs, p->hdrs_len) >= 1);
  FUZZ_CHECK(p->host && strlen(p->host) <= size && p->sni);
  FUZZ_CHECK(p->conns >= 1 && p->conns <= 100000 && p->streams >= 1 && p->streams <= 100000);
  FUZZ_CHECK(p->port >= 1 && p->port <= 65535);
  FUZZ_CHECK(p->timeout_ns > 0 && p->connect_timeout_ns > 0);
  /* what the engine allocates before it runs, and the threads it would start */
  FUZZ_CHECK(e->nworkers >= 1 && e->nworkers <= 64 && (uint32_t)e->nworkers <= p->conns);
  FUZZ_CHECK((uint64_t)p->conns * p->streams <= SBL_MAX_SLOTS);
  /* the schedule: a worker starts now, warms up, measures, drains */
  uint64_t now = sbl_now();
  FUZZ_CHECK(isfinite(p->rate) && p->rate >= 0);
  FUZZ_CHECK(fits(now, p->warmup_ns));
  uint64_t t_measure = now + p->warmup_ns;
  FUZZ_CHECK(fits(t_measure, p->duration_ns));
  FUZZ_CHECK(fits(t_measure + p->duration_ns, p->timeout_ns));
  FUZZ_CHECK(fits(now, p->connect_timeout_ns));
  uint64_t conns_seen = 0, quota = 0;
  for (int i = 0; i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    FUZZ_CHECK(w->nconns >= 1);
    conns_seen += (uint64_t)w->nconns;
    quota += w->quota;
    if (w->rate > 0) {
      w->sched0 = t_measure;
      /* the last intended send time of the run, by count or by time (UBSan checks the casts) */
      double last = p->requests ? (double)w->quota : (double)p->duration_ns * w->rate / 1e9;
      if (last > 9e15) last = 9e15; /* the index counts requests sent: it never gets near 2^64 */
      FUZZ_CHECK(last * 1e9 / w->rate < 1.8e19);
      uint64_t t = intended_at(w, (uint64_t)last);
      FUZZ_CHECK(t >= w->sched0);
      uint64_t span = p->requests ? (uint64_t)((double)w->quota * 1e9 / w->rate) : p->duration_ns;
      FUZZ_CHECK(fits(t_measure, span) && fits(t_measure + span, p->timeout_ns));
    }
  }
  FUZZ_CHECK(conns_seen == p->conns && quota == p->requests);
  /* an engine that never ran writes an all-zero result of the documented size */
  e->joined = 1;
  int need = sbl_engine_result(e, NULL, 0);
  FUZZ_CHECK(need == SBL_RESULT_HEAD + 8 * SBL_ERRK_COUNT + SBL_CONN_RECORD * (int)p->conns);
  uint8_t *r = malloc((size_t)need);
  FUZZ_CHECK(r && sbl_engine_result(e, r, (uint32_t)need) == need);
  FUZZ_CHECK(sbwire_get_u32(r) == SBL_RESULT_MAGIC && sbwire_get_u32(r + 8) == 0 && sbwire_get_u32(r + 12) == p->conns);
  FUZZ_CHECK(sbl_engine_result(e, r, (uint32_t)need - 1) == SBWIRE_ERR_BUFFER_TOO_SHORT);
  free(r);
  uint8_t err[8];
  FUZZ_CHECK(sbl_engine_error(e, err, sizeof err) == 0);
  e->joined = 0;
  sbl_engine_free(e);
  return 0;
}
