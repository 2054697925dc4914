/*
 * sbl_load: worker threads, scheduling and accounting of the native load
 * engines (see sbl_load.h). Each worker owns a share of the connections, an
 * epoll set and its own counters and histograms; only the progress counters
 * are read from another thread (relaxed atomic loads of single-writer values).
 */
#define _GNU_SOURCE
#include "sbl_load.h"
#include "../../transports/native/sbwire.h"

#include <errno.h>
#include <float.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_STATUS 600
#define MAX_WAIT_NS 50000000ull /* the loop wakes at least this often (stop flag, timeouts) */
#define STOP_DRAIN_NS 2000000000ull
#define SPIN_NS 100000ull /* closer than this to a send time, poll without sleeping */

/* Single-writer counter bump, readable from the progress thread. */
#define BUMP(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)
#define READ(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

struct sbl_worker {
  sbl_engine *e;
  const sbl_proto *proto;
  void *state;
  int ep;
  sbl_conn **conns;
  int nconns, rr;
  uint64_t quota;  /* measured requests to issue (count mode) */
  double rate;     /* req/s of this worker (open loop) */
  uint64_t issued; /* measured requests issued */
  uint64_t next_index, sched0;
  uint64_t t_measure, t_issue_end, t_drain_deadline, t_last_done, t_next_check;
  int phase, stopped, dropped; /* dropped: open-loop requests never sent (the server fell too far behind) */
  sbl_hist *h_corr, *h_unc;
  uint64_t sent, completed, errors, inflight, bytes_in, bytes_out, body_in, warm_done, conns_up, conns_failed;
  uint64_t errk[SBL_ERRK_COUNT];
  uint64_t status[MAX_STATUS];
  char err[256];
  pthread_t th;
  int started;
};

struct sbl_engine {
  const sbl_proto *proto;
  sbl_plan plan;
  uint8_t *copy;
  char *host, *sni;
  sbl_worker *workers;
  int nworkers, started, joined, stop;
  uint64_t t_start;
};

uint64_t sbl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t rd32(const uint8_t *p) { return sbwire_get_u32(p); }
static uint64_t rd64(const uint8_t *p) { return sbwire_get_u64(p); }
static void wr32(uint8_t *p, uint32_t v) { sbwire_put_u32(p, v); }
static void wr64(uint8_t *p, uint64_t v) { sbwire_put_u64(p, v); }

/* Reads one u32-length-prefixed blob at *off; returns its start or NULL when it overruns. */
static const uint8_t *blob(const uint8_t *p, uint32_t len, uint32_t *off, uint32_t *out_len) {
  if (*off + 4 > len) return NULL;
  uint32_t n = rd32(p + *off);
  if (n > len - *off - 4) return NULL;
  const uint8_t *b = p + *off + 4;
  *off += 4 + n;
  *out_len = n;
  return b;
}

static char *dupz(const uint8_t *b, uint32_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  memcpy(s, b, n);
  s[n] = 0;
  return s;
}

static void log_err(sbl_worker *w, const char *text) {
  if (!w->err[0]) snprintf(w->err, sizeof w->err, "%s", text);
}

static void conn_release(sbl_conn *c, sbl_req *r) {
  r->busy = 0;
  c->inflight--;
  BUMP(c->w->inflight, -1);
}

sbl_engine *sbl_engine_new(const sbl_proto *proto, const uint8_t *plan, uint32_t len) {
  if (!proto || !plan || len < SBL_PLAN_HEAD || rd32(plan) != SBL_PLAN_MAGIC) return NULL;
  sbl_engine *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->proto = proto;
  e->copy = malloc(len);
  if (!e->copy) goto fail;
  memcpy(e->copy, plan, len);
  const uint8_t *p = e->copy;
  sbl_plan *pl = &e->plan;
  pl->flags = rd32(p + 4);
  pl->conns = rd32(p + 8);
  pl->streams = rd32(p + 12);
  pl->threads = rd32(p + 16);
  pl->port = rd32(p + 20);
  pl->requests = rd64(p + 24);
  pl->duration_ns = rd64(p + 32);
  pl->warmup_ns = rd64(p + 40);
  pl->timeout_ns = rd64(p + 48);
  uint64_t rate_bits = rd64(p + 56);
  memcpy(&pl->rate, &rate_bits, 8);
  pl->connect_timeout_ns = rd64(p + 64);
  pl->max_body = rd32(p + 72);
  pl->per_conn = rd32(p + 76);
  uint32_t off = SBL_PLAN_HEAD, hl = 0, sl = 0;
  const uint8_t *h = blob(p, len, &off, &hl), *s = blob(p, len, &off, &sl);
  pl->hdrs = blob(p, len, &off, &pl->hdrs_len);
  pl->body = blob(p, len, &off, &pl->body_len);
  pl->ca = blob(p, len, &off, &pl->ca_len);
  if (!h || !s || !pl->hdrs || !pl->body || !pl->ca || hl == 0) goto fail;
  if (off < len) { /* mutual TLS: the client's certificate and key, both non-empty */
    pl->cert = blob(p, len, &off, &pl->cert_len);
    pl->key = blob(p, len, &off, &pl->key_len);
    if (!pl->cert || !pl->key || pl->cert_len == 0 || pl->key_len == 0) goto fail;
  }
  if (sbwire_count_fields(pl->hdrs, pl->hdrs_len) < 1) goto fail;
  if (pl->conns < 1 || pl->conns > 100000 || pl->streams < 1 || pl->streams > 100000) goto fail;
  if ((uint64_t)pl->conns * pl->streams > SBL_MAX_SLOTS || pl->threads > SBL_MAX_THREADS) goto fail;
  if (pl->port < 1 || pl->port > 65535 || (pl->requests == 0 && pl->duration_ns == 0)) goto fail;
  if (!(pl->rate >= 0 && pl->rate <= DBL_MAX) || pl->timeout_ns == 0) goto fail;
  /* every deadline is now plus a few of these: none may wrap */
  if (pl->duration_ns > SBL_MAX_TIME_NS || pl->warmup_ns > SBL_MAX_TIME_NS || pl->timeout_ns > SBL_MAX_TIME_NS ||
      pl->connect_timeout_ns > SBL_MAX_TIME_NS)
    goto fail;
  if (pl->connect_timeout_ns == 0) pl->connect_timeout_ns = pl->timeout_ns;
  e->host = dupz(h, hl);
  e->sni = dupz(s, sl);
  if (!e->host || !e->sni) goto fail;
  pl->host = e->host;
  pl->sni = e->sni;
  e->nworkers = (int)(pl->threads < 1 ? 1 : pl->threads > pl->conns ? pl->conns : pl->threads);
  e->workers = calloc((size_t)e->nworkers, sizeof(sbl_worker));
  if (!e->workers) goto fail;
  int W = e->nworkers, next_conn = 0;
  for (int i = 0; i < W; i++) {
    sbl_worker *w = &e->workers[i];
    w->e = e;
    w->proto = proto;
    w->ep = -1;
    w->nconns = (int)(pl->conns / (uint32_t)W + ((uint32_t)i < pl->conns % (uint32_t)W));
    w->quota = pl->requests / (uint64_t)W + ((uint64_t)i < pl->requests % (uint64_t)W);
    w->rate = pl->rate * w->nconns / pl->conns;
    /* an open loop's interval and, by count, its whole schedule must be a time (intended_at casts them) */
    if (w->rate > 0 && (1e9 / w->rate > (double)SBL_MAX_TIME_NS || (double)w->quota * 1e9 / w->rate > (double)SBL_MAX_TIME_NS))
      goto fail;
    w->h_corr = sbl_hist_new(SBL_HIST_HIGHEST);
    w->h_unc = sbl_hist_new(SBL_HIST_HIGHEST);
    w->conns = calloc((size_t)w->nconns, sizeof(sbl_conn *));
    if (!w->h_corr || !w->h_unc || !w->conns) goto fail;
    for (int j = 0; j < w->nconns; j++) {
      sbl_conn *c = calloc(1, proto->conn_size);
      if (!c) goto fail;
      w->conns[j] = c;
      c->w = w;
      c->fd = -1;
      c->idx = next_conn++;
      c->slots = calloc(pl->streams, sizeof(sbl_req));
      if (!c->slots) goto fail;
    }
  }
  return e;
fail:
  sbl_engine_free(e);
  return NULL;
}

const sbl_plan *sbl_worker_plan(const sbl_worker *w) { return &w->e->plan; }
void *sbl_worker_state(const sbl_worker *w) { return w->state; }

void sbl_conn_watch(sbl_conn *c, int want_out) {
  if (c->dead || c->fd < 0) return;
  struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
  if (!c->registered) {
    if (epoll_ctl(c->w->ep, EPOLL_CTL_ADD, c->fd, &ev) == 0) c->registered = 1;
  } else if ((c->watch_out != 0) != (want_out != 0)) {
    epoll_ctl(c->w->ep, EPOLL_CTL_MOD, c->fd, &ev);
  } else {
    return;
  }
  c->watch_out = want_out ? 1 : 0;
}

void sbl_conn_connected(sbl_conn *c) {
  if (!c->t_connect) c->t_connect = sbl_now();
}

void sbl_conn_handshaken(sbl_conn *c) {
  if (c->up || c->dead) return;
  uint64_t now = sbl_now();
  if (!c->t_connect) c->t_connect = now;
  c->t_handshake = now;
  c->up = 1;
  BUMP(c->w->conns_up, 1);
}

void sbl_conn_bytes(sbl_conn *c, uint64_t in, uint64_t out) {
  if (in) BUMP(c->w->bytes_in, in);
  if (out) BUMP(c->w->bytes_out, out);
}

void sbl_conn_first_byte(sbl_conn *c) {
  if (!c->t_first_byte) c->t_first_byte = sbl_now();
}

void sbl_req_done(sbl_conn *c, sbl_req *r, int status, uint64_t body_bytes) {
  sbl_worker *w = c->w;
  if (!r->busy) return;
  uint64_t now = sbl_now();
  if (!c->t_first_byte) c->t_first_byte = now;
  if (r->measured) {
    sbl_hist_record(w->h_corr, (int64_t)(now - r->intended), 1);
    sbl_hist_record(w->h_unc, (int64_t)(now - r->sent), 1);
    w->status[status > 0 && status < MAX_STATUS ? status : 0]++;
    BUMP(w->body_in, body_bytes);
    BUMP(w->completed, 1);
    w->t_last_done = now;
  } else {
    BUMP(w->warm_done, 1);
  }
  c->requests++;
  conn_release(c, r);
}

void sbl_req_failed(sbl_conn *c, sbl_req *r, int kind) {
  sbl_worker *w = c->w;
  if (!r->busy) return;
  if (r->measured) {
    if (kind < 0 || kind >= SBL_ERRK_COUNT) kind = SBL_ERRK_OTHER;
    w->errk[kind]++;
    BUMP(w->errors, 1);
    w->t_last_done = sbl_now();
  }
  conn_release(c, r);
}

void sbl_conn_failed(sbl_conn *c, int kind, const char *text) {
  if (c->dead) return;
  sbl_worker *w = c->w;
  c->dead = 1;
  if (c->fd >= 0 && c->registered) epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
  c->err_kind = kind == SBL_ERRK_CONNECT && c->up ? SBL_ERRK_CLOSED : kind;
  BUMP(w->conns_failed, 1);
  char line[256];
  snprintf(line, sizeof line, "connection %d: %s", c->idx, text && *text ? text : "failed");
  log_err(w, line);
  const sbl_plan *p = &w->e->plan;
  for (uint32_t i = 0; i < p->streams; i++)
    if (c->slots[i].busy) sbl_req_failed(c, &c->slots[i], c->err_kind);
}

sbl_req *sbl_conn_find(sbl_conn *c, int64_t stream_id) {
  const sbl_plan *p = &c->w->e->plan;
  for (uint32_t i = 0; i < p->streams; i++)
    if (c->slots[i].busy && c->slots[i].stream_id == stream_id) return &c->slots[i];
  return NULL;
}

/* ---- the worker loop ---- */

/* Intended send time of the open-loop request with this index. */
static uint64_t intended_at(const sbl_worker *w, uint64_t index) {
  return w->sched0 + (uint64_t)((double)index * 1e9 / w->rate);
}

/* True when one more request may be issued now; intended is its intended send time. */
static int may_issue(sbl_worker *w, uint64_t intended) {
  const sbl_plan *p = &w->e->plan;
  if (w->phase == SBL_PHASE_WARMUP) return intended < w->t_measure;
  if (w->phase != SBL_PHASE_MEASURE) return 0;
  if (p->requests) return w->issued < w->quota;
  return intended < w->t_measure + p->duration_ns;
}

static sbl_req *free_slot(sbl_conn *c) {
  const sbl_plan *p = &c->w->e->plan;
  for (uint32_t i = 0; i < p->streams; i++)
    if (!c->slots[i].busy) return &c->slots[i];
  return NULL;
}

/* Issues one request on c; returns 0, or 1 when the connection is blocked. */
static int issue(sbl_worker *w, sbl_conn *c, uint64_t intended, uint64_t now) {
  sbl_req *r = free_slot(c);
  if (!r) return 1;
  memset(r, 0, sizeof *r);
  r->busy = 1;
  r->intended = intended;
  r->sent = now;
  r->measured = w->phase == SBL_PHASE_MEASURE;
  r->stream_id = -1;
  c->inflight++;
  BUMP(w->inflight, 1);
  if (w->proto->conn_submit(c, r)) {
    r->busy = 0;
    c->inflight--;
    BUMP(w->inflight, -1);
    c->blocked = 1;
    return 1;
  }
  c->issued++;
  if (!c->peer_limit && w->proto->conn_stream_limit) c->peer_limit = w->proto->conn_stream_limit(c);
  if (!r->busy) return 0; /* it failed at once (the connection died) */
  if (r->measured) {
    w->issued++;
    BUMP(w->sent, 1);
  }
  return 0;
}

static int usable(const sbl_conn *c, const sbl_plan *p) {
  return c->up && !c->dead && !c->blocked && c->inflight < (int)p->streams && (!p->per_conn || c->issued < p->per_conn);
}

/* Sends what c holds (requests just issued, what its last read asked to send) when anything waits. */
static void flush_dirty(sbl_worker *w, sbl_conn *c) {
  if (!c->dirty) return;
  c->dirty = 0;
  if (!c->dead) w->proto->conn_flush(c);
}

static void dispatch(sbl_worker *w, uint64_t now) {
  const sbl_plan *p = &w->e->plan;
  if (w->rate <= 0) {
    for (int k = 0; k < w->nconns; k++) {
      sbl_conn *c = w->conns[k];
      while (usable(c, p) && may_issue(w, now)) {
        if (issue(w, c, now, now)) break;
        c->dirty = 1;
      }
      flush_dirty(w, c);
    }
    return;
  }
  /* open loop: every request due by now, on the next connection with room */
  for (;;) {
    uint64_t t = intended_at(w, w->next_index);
    if (t > now || !may_issue(w, t)) break;
    sbl_conn *c = NULL;
    for (int k = 0; k < w->nconns; k++) {
      sbl_conn *cand = w->conns[(w->rr + k) % w->nconns];
      if (usable(cand, p)) {
        c = cand;
        w->rr = (w->rr + k + 1) % w->nconns;
        break;
      }
    }
    if (!c) break; /* backlog: sent when a stream frees up, still timed from t */
    if (issue(w, c, t, now)) continue;
    w->next_index++;
    c->dirty = 1;
  }
  for (int k = 0; k < w->nconns; k++) flush_dirty(w, w->conns[k]);
}

static void check_timeouts(sbl_worker *w, uint64_t now) {
  const sbl_plan *p = &w->e->plan;
  for (int k = 0; k < w->nconns; k++) {
    sbl_conn *c = w->conns[k];
    if (c->dead) continue;
    if (!c->up && now - c->t_start > p->connect_timeout_ns) {
      sbl_conn_failed(c, SBL_ERRK_CONNECT, "connect timed out");
      continue;
    }
    int cancelled = 0;
    for (uint32_t i = 0; i < p->streams && c->inflight; i++) {
      sbl_req *r = &c->slots[i];
      if (r->busy && now - r->sent > p->timeout_ns) {
        w->proto->conn_cancel(c, r);
        sbl_req_failed(c, r, SBL_ERRK_TIMEOUT);
        cancelled = 1;
      }
    }
    if (cancelled && !c->dead) w->proto->conn_flush(c);
  }
}

static int alive_conns(const sbl_worker *w) {
  int n = 0;
  for (int k = 0; k < w->nconns; k++) n += !w->conns[k]->dead;
  return n;
}

/* Moves between phases; returns 1 when the worker is done. */
static int advance(sbl_worker *w, uint64_t now) {
  sbl_engine *e = w->e;
  const sbl_plan *p = &e->plan;
  if (__atomic_load_n(&e->stop, __ATOMIC_RELAXED) && !w->stopped) {
    w->stopped = 1;
    if (w->phase < SBL_PHASE_DRAIN) {
      w->t_issue_end = now;
      w->t_drain_deadline = now + (p->timeout_ns < STOP_DRAIN_NS ? p->timeout_ns : STOP_DRAIN_NS);
      __atomic_store_n(&w->phase, SBL_PHASE_DRAIN, __ATOMIC_RELAXED);
    }
  }
  if (w->phase == SBL_PHASE_WARMUP && now >= w->t_measure) {
    w->next_index = 0;
    w->sched0 = w->t_measure;
    __atomic_store_n(&w->phase, SBL_PHASE_MEASURE, __ATOMIC_RELAXED);
  }
  if (w->phase == SBL_PHASE_MEASURE) {
    /* by duration, sends stop at its end: a backlog the rate could not keep is not sent late
       (the caller reports planned − sent as sends not made), the drain waits for what is in flight */
    int over = p->requests ? w->issued >= w->quota
                           : now >= w->t_measure + p->duration_ns ||
                                 (w->rate > 0 && intended_at(w, w->next_index) >= w->t_measure + p->duration_ns);
    if (!over && w->rate > 0 && p->requests) {
      /* a backlog is sent late but not forever: one request timeout past the schedule's end */
      uint64_t span = p->requests ? (uint64_t)((double)w->quota * 1e9 / w->rate) : p->duration_ns;
      if (now >= w->t_measure + span + p->timeout_ns) over = w->dropped = 1;
    }
    if (over) {
      w->t_issue_end = now;
      w->t_drain_deadline = now + p->timeout_ns;
      __atomic_store_n(&w->phase, SBL_PHASE_DRAIN, __ATOMIC_RELAXED);
    }
  }
  if (alive_conns(w) == 0) return 1;
  if (p->per_conn && READ(w->inflight) == 0) { /* every live connection used up its requests */
    int left = 0;
    for (int k = 0; k < w->nconns; k++) left |= !w->conns[k]->dead && w->conns[k]->issued < p->per_conn;
    if (!left) return 1;
  }
  if (w->phase == SBL_PHASE_DRAIN && (READ(w->inflight) == 0 || now >= w->t_drain_deadline)) return 1;
  return 0;
}

static uint64_t next_deadline(sbl_worker *w, uint64_t now) {
  const sbl_plan *p = &w->e->plan;
  uint64_t d = now + MAX_WAIT_NS;
#define EARLIER(t) \
  do {             \
    if ((t) && (t) < d) d = (t); \
  } while (0)
  if (w->phase == SBL_PHASE_WARMUP) EARLIER(w->t_measure);
  if (w->phase == SBL_PHASE_MEASURE && !p->requests) EARLIER(w->t_measure + p->duration_ns);
  if (w->phase == SBL_PHASE_DRAIN) EARLIER(w->t_drain_deadline);
  if (w->rate > 0 && w->phase <= SBL_PHASE_MEASURE) {
    for (int k = 0; k < w->nconns; k++)
      if (usable(w->conns[k], p)) {
        EARLIER(intended_at(w, w->next_index));
        break;
      }
  }
  for (int k = 0; k < w->nconns; k++)
    if (!w->conns[k]->dead) EARLIER(w->conns[k]->timer_ns);
#undef EARLIER
  return d;
}

/* epoll_pwait2 (ns timeout, Linux 5.11) or, where it is missing (older kernels, valgrind), epoll_wait rounded up to ms. */
static int wait_events(int ep, struct epoll_event *evs, int max, const struct timespec *ts) {
  static int no_pwait2;
  if (!__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
    int n = epoll_pwait2(ep, evs, max, ts, NULL);
    if (n >= 0 || errno != ENOSYS) return n;
    __atomic_store_n(&no_pwait2, 1, __ATOMIC_RELAXED);
  }
  long ms = ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
  return epoll_wait(ep, evs, max, (int)ms);
}

static void *worker_main(void *arg) {
  sbl_worker *w = arg;
  sbl_engine *e = w->e;
  const sbl_plan *p = &e->plan;
  char err[200] = "";
  w->ep = epoll_create1(EPOLL_CLOEXEC);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake-ups on time, not up to 50 µs late */
  w->t_measure = e->t_start + p->warmup_ns;
  w->sched0 = e->t_start;
  __atomic_store_n(&w->phase, p->warmup_ns ? SBL_PHASE_WARMUP : SBL_PHASE_MEASURE, __ATOMIC_RELAXED);
  w->state = w->proto->worker_new(w, p, err, sizeof err);
  for (int k = 0; k < w->nconns; k++) {
    sbl_conn *c = w->conns[k];
    c->t_start = sbl_now();
    if (!w->state || w->ep < 0) {
      c->fd = -1;
      sbl_conn_failed(c, SBL_ERRK_OTHER, err[0] ? err : "cannot set up the engine");
      continue;
    }
    w->proto->conn_open(c);
  }
  struct epoll_event evs[256];
  uint64_t now = sbl_now();
  for (;;) {
    now = sbl_now();
    if (advance(w, now)) break;
    if (now >= w->t_next_check) {
      check_timeouts(w, now);
      w->t_next_check = now + MAX_WAIT_NS / 5;
    }
    dispatch(w, now);
    uint64_t d = next_deadline(w, sbl_now());
    now = sbl_now();
    uint64_t wait = d > now + SPIN_NS ? d - now - SPIN_NS / 2 : 0;
    struct timespec ts = {.tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull)};
    int n = wait_events(w->ep, evs, 256, &ts);
    if (n < 0 && errno != EINTR) {
      log_err(w, "epoll failed");
      break;
    }
    for (int i = 0; i < n; i++) {
      sbl_conn *c = evs[i].data.ptr;
      if (c->dead) continue;
      c->blocked = 0;
      w->proto->conn_io(c, evs[i].events);
    }
    now = sbl_now();
    for (int k = 0; k < w->nconns; k++) {
      sbl_conn *c = w->conns[k];
      if (!c->dead && c->timer_ns && c->timer_ns <= now) {
        c->timer_ns = 0;
        c->blocked = 0;
        w->proto->conn_timer(c);
      }
    }
  }
  /* whatever is still in flight missed the drain deadline */
  for (int k = 0; k < w->nconns; k++) {
    sbl_conn *c = w->conns[k];
    for (uint32_t i = 0; i < p->streams; i++)
      if (c->slots[i].busy) sbl_req_failed(c, &c->slots[i], SBL_ERRK_TIMEOUT);
  }
  for (int k = 0; k < w->nconns; k++) {
    sbl_conn *c = w->conns[k];
    if (w->state) w->proto->conn_free(c);
    c->fd = -1;
  }
  if (w->state) w->proto->worker_free(w->state);
  w->state = NULL;
  if (w->ep >= 0) close(w->ep);
  w->ep = -1;
  __atomic_store_n(&w->phase, SBL_PHASE_DONE, __ATOMIC_RELEASE);
  return NULL;
}

int sbl_engine_start(sbl_engine *e) {
  if (!e) return SBWIRE_ERR_INVALID;
  if (e->started) return SBWIRE_ERR_INVALID;
  e->started = 1;
  e->t_start = sbl_now();
  for (int i = 0; i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
      log_err(w, "cannot start a worker thread");
      __atomic_store_n(&w->phase, SBL_PHASE_DONE, __ATOMIC_RELEASE);
      continue;
    }
    w->started = 1;
  }
  return 0;
}

int sbl_engine_progress(sbl_engine *e, uint8_t *buf, uint32_t cap) {
  if (!e || !buf || cap < SBL_PROGRESS_LEN) return SBWIRE_ERR_INVALID;
  uint64_t sent = 0, done = 0, errs = 0, infl = 0, up = 0, failed = 0;
  int phase = e->started ? SBL_PHASE_DONE : SBL_PHASE_IDLE;
  for (int i = 0; i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    sent += READ(w->sent);
    done += READ(w->completed);
    errs += READ(w->errors);
    infl += READ(w->inflight);
    up += READ(w->conns_up);
    failed += READ(w->conns_failed);
    int ph = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE);
    if (e->started && ph < phase) phase = ph;
  }
  wr64(buf, sent);
  wr64(buf + 8, done);
  wr64(buf + 16, errs);
  wr64(buf + 24, e->started ? sbl_now() - e->t_start : 0);
  wr64(buf + 32, infl);
  wr64(buf + 40, (uint64_t)phase);
  wr64(buf + 48, up);
  wr64(buf + 56, failed);
  return SBL_PROGRESS_LEN;
}

int sbl_engine_stop(sbl_engine *e) {
  if (!e) return SBWIRE_ERR_INVALID;
  __atomic_store_n(&e->stop, 1, __ATOMIC_RELAXED);
  return 0;
}

int sbl_engine_join(sbl_engine *e) {
  if (!e) return SBWIRE_ERR_INVALID;
  if (!e->started) return SBWIRE_ERR_INVALID;
  if (e->joined) return 0;
  for (int i = 0; i < e->nworkers; i++)
    if (e->workers[i].started) pthread_join(e->workers[i].th, NULL);
  e->joined = 1;
  return 0;
}

int sbl_engine_result(sbl_engine *e, uint8_t *buf, uint32_t cap) {
  if (!e) return SBWIRE_ERR_INVALID;
  if (!e->joined) return SBWIRE_ERR_INVALID;
  const sbl_plan *p = &e->plan;
  uint64_t status[MAX_STATUS] = {0}, errk[SBL_ERRK_COUNT] = {0};
  uint64_t sum[12] = {0};
  uint64_t t_measure = UINT64_MAX, t_last = 0, peer_limit = 0;
  int stopped = 0, dropped = 0;
  for (int i = 0; i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    for (int s = 0; s < MAX_STATUS; s++) status[s] += w->status[s];
    for (int k = 0; k < SBL_ERRK_COUNT; k++) errk[k] += w->errk[k];
    sum[0] += w->sent;
    sum[1] += w->completed;
    sum[2] += w->errors;
    sum[3] += w->bytes_in;
    sum[4] += w->bytes_out;
    sum[5] += w->body_in;
    sum[7] += w->warm_done;
    sum[8] += w->conns_up;
    sum[9] += w->conns_failed;
    if (w->t_measure < t_measure) t_measure = w->t_measure;
    if (w->t_last_done > t_last) t_last = w->t_last_done;
    stopped |= w->stopped;
    dropped |= w->dropped;
    for (int k = 0; k < w->nconns; k++) {
      uint32_t l = w->conns[k]->peer_limit;
      if (l && (!peer_limit || l < peer_limit)) peer_limit = l;
    }
  }
  sum[6] = t_last > t_measure ? t_last - t_measure : 0;
  uint32_t nstatus = 0;
  for (int s = 0; s < MAX_STATUS; s++) nstatus += status[s] != 0;
  size_t need = SBL_RESULT_HEAD + 8 * SBL_ERRK_COUNT + 16 * (size_t)nstatus + SBL_CONN_RECORD * (size_t)p->conns;
  if (need > INT32_MAX) return SBWIRE_ERR_NOMEM;
  if (!buf) return (int)need;
  if (cap < need) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  memset(buf, 0, need);
  int partial = stopped || dropped || sum[9] > 0 || (p->requests && sum[0] < p->requests);
  wr32(buf, SBL_RESULT_MAGIC);
  wr32(buf + 4, (partial ? SBL_RES_PARTIAL : 0) | (stopped ? SBL_RES_STOPPED : 0));
  wr32(buf + 8, nstatus);
  wr32(buf + 12, p->conns);
  wr32(buf + 16, SBL_ERRK_COUNT);
  for (int k = 0; k < 10; k++) wr64(buf + 24 + 8 * k, sum[k]);
  wr64(buf + 112, peer_limit);
  uint8_t *o = buf + SBL_RESULT_HEAD;
  for (int k = 0; k < SBL_ERRK_COUNT; k++, o += 8) wr64(o, errk[k]);
  for (int s = 0; s < MAX_STATUS; s++) {
    if (!status[s]) continue;
    wr32(o, (uint32_t)s);
    wr64(o + 8, status[s]);
    o += 16;
  }
  for (int i = 0; i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    for (int k = 0; k < w->nconns; k++) {
      sbl_conn *c = w->conns[k];
      uint8_t *r = buf + SBL_RESULT_HEAD + 8 * SBL_ERRK_COUNT + 16 * (size_t)nstatus + SBL_CONN_RECORD * (size_t)c->idx;
      wr64(r, c->t_connect ? c->t_connect - c->t_start : (uint64_t)-1);
      wr64(r + 8, c->t_handshake ? c->t_handshake - c->t_start : (uint64_t)-1);
      wr64(r + 16, c->t_first_byte ? c->t_first_byte - c->t_start : (uint64_t)-1);
      wr64(r + 24, c->requests);
      wr32(r + 32, c->dead && c->err_kind >= 0 && (c->err_kind || !c->up) ? (uint32_t)c->err_kind + 1 : 0);
    }
  }
  return (int)need;
}

int sbl_engine_histogram(sbl_engine *e, int kind, uint8_t *buf, uint32_t cap) {
  if (!e || (kind != SBL_HIST_CORRECTED && kind != SBL_HIST_UNCORRECTED)) return SBWIRE_ERR_INVALID;
  if (!e->joined) return SBWIRE_ERR_INVALID;
  sbl_hist *all = sbl_hist_new(SBL_HIST_HIGHEST);
  if (!all) return SBWIRE_ERR_NOMEM;
  for (int i = 0; i < e->nworkers; i++)
    sbl_hist_add(all, kind == SBL_HIST_CORRECTED ? e->workers[i].h_corr : e->workers[i].h_unc);
  size_t need = sbl_hist_export(all, NULL, 0);
  if (buf && cap >= need) sbl_hist_export(all, buf, cap);
  sbl_hist_free(all);
  if (buf && cap < need) return SBWIRE_ERR_BUFFER_TOO_SHORT;
  return (int)need;
}

int sbl_engine_error(sbl_engine *e, uint8_t *buf, uint32_t cap) {
  if (!e || !buf) return SBWIRE_ERR_INVALID;
  for (int i = 0; i < e->nworkers; i++) {
    const char *t = e->workers[i].err;
    if (!t[0]) continue;
    size_t n = strlen(t);
    if (n > cap) n = cap;
    memcpy(buf, t, n);
    return (int)n;
  }
  return 0;
}

void sbl_engine_free(sbl_engine *e) {
  if (!e) return;
  if (e->started) {
    sbl_engine_stop(e);
    sbl_engine_join(e);
  }
  for (int i = 0; e->workers && i < e->nworkers; i++) {
    sbl_worker *w = &e->workers[i];
    for (int k = 0; w->conns && k < w->nconns; k++) {
      if (!w->conns[k]) continue;
      free(w->conns[k]->slots);
      free(w->conns[k]);
    }
    free(w->conns);
    sbl_hist_free(w->h_corr);
    sbl_hist_free(w->h_unc);
  }
  free(e->workers);
  free(e->host);
  free(e->sni);
  free(e->copy);
  free(e);
}
