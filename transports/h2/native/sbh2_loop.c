/*
 * sbh2 server on the module's own I/O thread (see sbh2_server.h, "Module-owned
 * I/O"): a listening socket, its accepted connections in slots, and the
 * sbloop ops that accept, read, tick, write and close them. Everything here
 * runs under the loop's lock: on the loop's thread, or on JavaScript's (the
 * listener calls, sbloop_flush).
 *
 * A connection's id is its slot (low 20 bits, plus one) and the slot's
 * generation (high 12 bits), so an answer to a connection that closed never
 * reaches the one that took its slot. Scans go over the slots: a listener
 * holds thousands of connections at most, and a scan of their flags costs
 * less than keeping lists in step.
 */
#define _GNU_SOURCE
#include "sbh2_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The listening socket's epoll tag; a connection's is CONN_TAG | its id. */
#define TAG_LISTENER 1
#define CONN_TAG (1ull << 32)
#define SLOT_BITS 20
#define MAX_SLOTS ((1 << SLOT_BITS) - 2)
#define READ_BYTES (64 * 1024)
#define OUT_BYTES (256 * 1024)
/* Reads of one connection per wake-up at most, so that one busy peer never starves the others. */
#define READS_PER_WAKE 16
/* TLS handshake reads per wake-up at most: a flood of ClientHellos takes turns with serving (level-triggered, the rest
   stay ready for the next wake-up), as the runtime path caps the handshakes at work. */
#define HANDSHAKES_PER_WAKE 8
/* Accepts per wake-up at most. */
#define ACCEPTS_PER_WAKE 64
/* Idle connections closed at once when accepting fails for want of descriptors. */
#define ROOM_AT_FD_LIMIT 16

struct lconn {
  sbh2_sconn *s; /* NULL: a free slot */
  sbh2_tls *t;   /* its TLS session, or NULL (h2c) */
  int fd;
  uint32_t id;
  uint16_t gen;
  uint8_t *pend; /* output the kernel did not take yet: pend[off..len) */
  size_t pend_len, pend_off, pend_cap;
  int64_t due;         /* when its session's timers run next, ms (INT64_MAX: none) */
  int64_t last_active; /* last input or answer, ms: the idlest goes first at the cap */
  int64_t progress;    /* last time the kernel took pending output, ms */
  unsigned dirty : 1, events : 1, announced : 1;
  char peer[64]; /* "host port" */
  char *failure; /* why its TLS handshake failed ("host port reason"), or NULL */
};

struct sbh2_listener {
  int fd;
  sbloop *loop;
  sbh2_server *srv;
  sbh2_tls_config *tls;
  struct lconn *c;
  int nslots, nconns;
  uint64_t max_conns, stall_ms;
  /* TLS sessions of closed connections, kept until a poll delivered their CLOSED and the next began, so that
     JavaScript reads what a handshake negotiated even when the peer left at once (sbh2_listener_tls) */
  struct dead_tls {
    uint32_t id;
    int delivered;
    sbh2_tls *t;
  } *dead;
  int ndead, dead_cap;
  uint8_t *evq; /* CONNECTED and CLOSED records for JavaScript: evq[off..len) */
  size_t evq_len, evq_off, evq_cap;
  uint8_t *in, *out;
  int64_t resume_at; /* accepting paused after a failure until then, ms (0: not paused) */
  int handshakes;    /* handshake reads left in this wake-up */
  int backoff_ms;
  int64_t accept_errors, room_made, blocked_writes;
};

/*
 * Set on the loop's thread: events its own work or flush left must wake
 * JavaScript, while those a flush on JavaScript's thread leaves are polled by
 * JavaScript right after it (module_server.ts), with no kick of the thread.
 */
static __thread int on_loop_thread;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Queues a listener event (header block empty, body text optional). */
static void queue_event(sbh2_listener *ls, uint32_t type, uint32_t conn_id, int64_t code, const char *text) {
  size_t bl = text ? strlen(text) : 0;
  size_t need = ls->evq_len + SBWIRE_EVENT_HEADER_LEN + bl;
  if (need > ls->evq_cap) {
    size_t cap = ls->evq_cap ? ls->evq_cap : 1024;
    while (cap < need) cap *= 2;
    uint8_t *p = realloc(ls->evq, cap);
    if (!p) return; /* without memory JavaScript learns of it at the next event of that connection */
    ls->evq = p;
    ls->evq_cap = cap;
  }
  sbwire_put_event(ls->evq + ls->evq_len, type, conn_id, -1, code, 0, (uint32_t)bl);
  if (bl) memcpy(ls->evq + ls->evq_len + SBWIRE_EVENT_HEADER_LEN, text, bl);
  ls->evq_len = need;
}

static struct lconn *lookup(sbh2_listener *ls, uint32_t id) {
  uint32_t slot = (id & ((1u << SLOT_BITS) - 1)) - 1;
  if (id == 0 || slot >= (uint32_t)ls->nslots) return NULL;
  struct lconn *c = &ls->c[slot];
  return c->s && c->id == id ? c : NULL;
}

/* Keeps a closed connection's TLS session until JavaScript has seen its CLOSED (frees it when out of memory). */
static void bury_tls(sbh2_listener *ls, struct lconn *c) {
  if (!c->t) return;
  if (ls->ndead == ls->dead_cap) {
    int cap = ls->dead_cap ? ls->dead_cap * 2 : 16;
    struct dead_tls *p = realloc(ls->dead, (size_t)cap * sizeof *p);
    if (!p) {
      sbh2_tls_free(c->t);
      return;
    }
    ls->dead = p;
    ls->dead_cap = cap;
  }
  ls->dead[ls->ndead++] = (struct dead_tls){.id = c->id, .t = c->t};
}

/* Frees the buried TLS sessions whose CLOSED a poll delivered; marks those of the CLOSED events in evq[from..to). */
static void sweep_dead(sbh2_listener *ls, int free_delivered, size_t from, size_t to) {
  int k = 0;
  for (int i = 0; i < ls->ndead; i++) {
    struct dead_tls *d = &ls->dead[i];
    if (free_delivered && d->delivered) {
      sbh2_tls_free(d->t);
      continue;
    }
    for (size_t off = from; off < to;) {
      const uint8_t *p = ls->evq + off;
      if (sbwire_get_u32(p) == SBWIRE_EV_CLOSED && sbwire_get_u32(p + 4) == d->id) d->delivered = 1;
      off += SBWIRE_EVENT_HEADER_LEN + sbwire_get_u32(p + 24) + sbwire_get_u32(p + 28);
    }
    ls->dead[k++] = *d;
  }
  ls->ndead = k;
}

/* Stops watching, closes and frees a connection, and tells JavaScript. */
static void conn_drop(sbh2_listener *ls, struct lconn *c) {
  if (ls->loop) sbloop_unwatch(ls->loop, c->fd);
  close(c->fd);
  sbh2_sconn_free(c->s);
  bury_tls(ls, c);
  free(c->pend);
  queue_event(ls, SBWIRE_EV_CLOSED, c->id, c->failure ? SBWIRE_ERR_TLS : SBWIRE_ERR_CLOSED, c->failure);
  free(c->failure);
  uint16_t gen = c->gen;
  memset(c, 0, sizeof *c);
  c->gen = gen + 1;
  c->fd = -1;
  ls->nconns--;
}

/* Keeps out[k..n) for when the socket takes more, and watches for that. Returns 0, or -1 out of memory. */
static int conn_keep(sbh2_listener *ls, struct lconn *c, const uint8_t *rest, size_t n) {
  if (n > c->pend_cap) {
    uint8_t *p = realloc(c->pend, n);
    if (!p) return -1;
    c->pend = p;
    c->pend_cap = n;
  }
  memcpy(c->pend, rest, n);
  c->pend_off = 0;
  c->pend_len = n;
  c->progress = now_ms();
  ls->blocked_writes++;
  if (ls->loop) sbloop_watch(ls->loop, c->fd, CONN_TAG | c->id, 1);
  return 0;
}

/*
 * Sends the connection's output while the kernel takes it: what waited
 * first, then the session's. Returns 0, or -1 when the connection finished
 * (it is dropped then).
 */
static int conn_flush(sbh2_listener *ls, struct lconn *c) {
  c->dirty = 0;
  if (c->pend_off < c->pend_len) {
    ssize_t k = send(c->fd, c->pend + c->pend_off, c->pend_len - c->pend_off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0 && errno != EAGAIN && errno != EINTR) {
      conn_drop(ls, c);
      return -1;
    }
    if (k > 0) {
      c->pend_off += (size_t)k;
      c->progress = now_ms();
    }
    if (c->pend_off < c->pend_len) return 0;
    c->pend_off = c->pend_len = 0;
    if (ls->loop) sbloop_watch(ls->loop, c->fd, CONN_TAG | c->id, 0);
  }
  for (;;) {
    int n = c->t ? sbh2_sconn_send_tls(c->s, c->t, ls->out, OUT_BYTES) : sbh2_sconn_send(c->s, ls->out, OUT_BYTES);
    if (n == SBWIRE_ERR_DONE) break;
    if (n < 0) {
      conn_drop(ls, c);
      return -1;
    }
    ssize_t k = send(c->fd, ls->out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0 && errno != EAGAIN && errno != EINTR) {
      conn_drop(ls, c);
      return -1;
    }
    if (k < 0) k = 0;
    if (k < n) {
      if (conn_keep(ls, c, ls->out + k, (size_t)(n - k)) != 0) {
        conn_drop(ls, c);
        return -1;
      }
      break;
    }
  }
  c->events = sbh2_sconn_stat(c->s, SBH2_STAT_EVENTS) > 0;
  return 0;
}

/* Sends what it can and closes the connection (end of input, or a protocol error). */
static void conn_finish(sbh2_listener *ls, struct lconn *c) {
  if (conn_flush(ls, c) == 0) conn_drop(ls, c);
}

/* Runs the session's timers and notes when they are due next; -1 when the connection finished (dropped). */
static int conn_tick(sbh2_listener *ls, struct lconn *c, int64_t now) {
  int r = sbh2_sconn_tick(c->s);
  if (r < 0) {
    conn_finish(ls, c);
    return -1;
  }
  c->due = r == INT_MAX ? INT64_MAX : now + r;
  c->dirty = 1; /* a timer may have queued GOAWAY or resets */
  return 0;
}

/* True when the connection has no stream (nothing lost by closing it). */
static int conn_quiet(struct lconn *c) { return sbh2_sconn_stat(c->s, SBH2_STAT_STREAMS) == 0; }

/* Closes up to n of the connections without streams, idlest first, with GOAWAY; returns how many. */
static int make_room(sbh2_listener *ls, int n) {
  int closed = 0;
  while (closed < n) {
    struct lconn *idlest = NULL;
    for (int i = 0; i < ls->nslots; i++) {
      struct lconn *c = &ls->c[i];
      if (c->s && conn_quiet(c) && (!idlest || c->last_active < idlest->last_active)) idlest = c;
    }
    if (!idlest) break;
    sbh2_sconn_shutdown(idlest->s);
    conn_finish(ls, idlest);
    closed++;
  }
  ls->room_made += closed;
  return closed;
}

/* A free slot (grown as needed), or NULL. */
static struct lconn *free_slot(sbh2_listener *ls) {
  for (int i = 0; i < ls->nslots; i++)
    if (!ls->c[i].s) return &ls->c[i];
  if (ls->nslots >= MAX_SLOTS) return NULL;
  int cap = ls->nslots ? ls->nslots * 2 : 64;
  if (cap > MAX_SLOTS) cap = MAX_SLOTS;
  struct lconn *p = realloc(ls->c, (size_t)cap * sizeof *p);
  if (!p) return NULL;
  memset(p + ls->nslots, 0, (size_t)(cap - ls->nslots) * sizeof *p);
  ls->c = p;
  int first = ls->nslots;
  ls->nslots = cap;
  return &ls->c[first];
}

/* Writes the peer's address of socket fd as "host port". */
static void peer_text(int fd, char *buf, size_t cap) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0) {
    if (sa.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
      port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    } else {
      inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
      port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    }
  }
  snprintf(buf, cap, "%s %d", host, port);
}

/* Tells JavaScript of a connection ready for requests (over TLS: its handshake completed). */
static void announce(sbh2_listener *ls, struct lconn *c) {
  c->announced = 1;
  queue_event(ls, SBWIRE_EV_CONNECTED, c->id, c->t ? 1 : 0, c->peer);
}

/* Keeps why a TLS handshake failed, for the CLOSED event. */
static void tls_failed(struct lconn *c, const char *reason) {
  if (c->failure || !c->t || c->announced) return;
  char text[256];
  if (!reason) {
    uint8_t b[200];
    int n = sbh2_tls_error(c->t, b, sizeof b);
    snprintf(text, sizeof text, "%s %.*s", c->peer, n > 0 ? n : 0, (const char *)b);
  } else {
    snprintf(text, sizeof text, "%s %s", c->peer, reason);
  }
  c->failure = strdup(text);
}

/* Takes an accepted socket in: a session, a slot, the watch, the server's SETTINGS sent at once. */
static void conn_open(sbh2_listener *ls, int fd, int64_t now) {
  if ((uint64_t)ls->nconns >= ls->max_conns && make_room(ls, 1) == 0) {
    close(fd);
    return;
  }
  struct lconn *c = free_slot(ls);
  sbh2_sconn *s = c ? sbh2_sconn_new(ls->srv) : NULL;
  sbh2_tls *t = s && ls->tls ? sbh2_tls_new(ls->tls, NULL, NULL, 0) : NULL;
  if (!s || (ls->tls && !t)) {
    sbh2_sconn_free(s);
    close(fd);
    return;
  }
  c->t = t;
  peer_text(fd, c->peer, sizeof c->peer);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->s = s;
  c->fd = fd;
  c->id = ((uint32_t)(c->gen & 0xfff) << SLOT_BITS) | (uint32_t)(c - ls->c + 1);
  c->last_active = c->progress = now;
  c->due = INT64_MAX;
  ls->nconns++;
  if (sbloop_watch(ls->loop, fd, CONN_TAG | c->id, 0) != 0) {
    conn_drop(ls, c);
    return;
  }
  if (!t) announce(ls, c);
  if (conn_flush(ls, c) == 0) conn_tick(ls, c, now);
}

static void accept_all(sbh2_listener *ls, int64_t now) {
  for (int i = 0; i < ACCEPTS_PER_WAKE && ls->fd >= 0; i++) {
    int fd = accept4(ls->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      ls->backoff_ms = 0;
      conn_open(ls, fd, now);
      continue;
    }
    if (errno == EAGAIN || errno == EINTR) return;
    /* EMFILE, ENFILE, ENOMEM, ECONNABORTED: make room, pause (doubling, 5 ms .. 1 s), tell JavaScript */
    int err = errno;
    ls->accept_errors++;
    make_room(ls, ROOM_AT_FD_LIMIT);
    ls->backoff_ms = ls->backoff_ms ? (ls->backoff_ms * 2 > 1000 ? 1000 : ls->backoff_ms * 2) : 5;
    ls->resume_at = now + ls->backoff_ms;
    sbloop_unwatch(ls->loop, ls->fd);
    char text[160];
    snprintf(text, sizeof text, "%s; retrying in %d ms", strerror(err), ls->backoff_ms);
    queue_event(ls, SBWIRE_EV_CLOSED, 0, SBWIRE_ERR_SOCKET, text);
    return;
  }
}

/* Takes in what the peer sent: reads until the socket is empty (or READS_PER_WAKE reads), each into the session. */
static void conn_read(sbh2_listener *ls, struct lconn *c, int64_t now) {
  if (c->pend_off < c->pend_len && conn_flush(ls, c) != 0) return; /* writable again */
  if (c->t && !c->announced && ls->handshakes-- <= 0) return;
  for (int i = 0; i < READS_PER_WAKE; i++) {
    ssize_t n = read(c->fd, ls->in, READ_BYTES);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n <= 0) { /* end of input or a reset: say what is left to say, then close */
      tls_failed(c, "the peer closed the connection during the TLS handshake");
      conn_finish(ls, c);
      return;
    }
    c->last_active = now;
    int r = c->t ? sbh2_sconn_recv_tls(c->s, c->t, ls->in, (uint32_t)n) : sbh2_sconn_recv(c->s, ls->in, (uint32_t)n);
    if (c->t && !c->announced && (sbh2_tls_state(c->t) & SBWIRE_TLS_ESTABLISHED)) announce(ls, c);
    if (r < 0) { /* the session closes: drain its GOAWAY (or TLS alert) */
      if (r == SBWIRE_ERR_TLS) tls_failed(c, NULL);
      else tls_failed(c, "the peer broke off the TLS handshake");
      conn_finish(ls, c);
      return;
    }
    if (n < READ_BYTES) break;
  }
  if (!c->announced && conn_flush(ls, c) != 0) return; /* the handshake's next flight goes out at once */
  c->events = sbh2_sconn_stat(c->s, SBH2_STAT_EVENTS) > 0;
  conn_tick(ls, c, now);
}

/* True when events wait for JavaScript. */
static int pending(sbh2_listener *ls) {
  if (ls->evq_off < ls->evq_len) return 1;
  for (int i = 0; i < ls->nslots; i++)
    if (ls->c[i].s && ls->c[i].events) return 1;
  return 0;
}

/* The stall deadline of a connection's pending output, or INT64_MAX. */
static int64_t write_due(sbh2_listener *ls, struct lconn *c) {
  return c->pend_off < c->pend_len ? c->progress + (int64_t)ls->stall_ms : INT64_MAX;
}

static int loop_work(void *owner, const uint64_t *ready, int n) {
  sbh2_listener *ls = owner;
  on_loop_thread = 1;
  int64_t now = now_ms();
  ls->handshakes = HANDSHAKES_PER_WAKE;
  for (int i = 0; i < n; i++) {
    if (ready[i] == TAG_LISTENER) {
      accept_all(ls, now);
      continue;
    }
    struct lconn *c = lookup(ls, (uint32_t)ready[i]);
    if (c) conn_read(ls, c, now);
  }
  if (ls->resume_at && now >= ls->resume_at && ls->fd >= 0) {
    ls->resume_at = 0;
    sbloop_watch(ls->loop, ls->fd, TAG_LISTENER, 0);
  }
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    if (!c->s) continue;
    if (now >= write_due(ls, c)) { /* the peer stopped reading from TCP */
      conn_drop(ls, c);
      continue;
    }
    if (now >= c->due) conn_tick(ls, c, now);
  }
  return pending(ls);
}

static void loop_flush(void *owner) {
  sbh2_listener *ls = owner;
  int64_t now = now_ms();
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    if (!c->s || !c->dirty) continue;
    /* timers before and after the send: what a due one queues (GOAWAY, resets) goes out now, and the next due
       time counts the streams the send closed (an idle timer starts then) */
    if (conn_tick(ls, c, now) == 0 && conn_flush(ls, c) == 0 && conn_tick(ls, c, now) == 0) conn_flush(ls, c);
  }
}

static int loop_timeout(void *owner) {
  sbh2_listener *ls = owner;
  /* events the thread's own flush left (a close, a released body): run work at once, which wakes JavaScript */
  if (on_loop_thread && pending(ls)) return 0;
  int64_t next = ls->resume_at ? ls->resume_at : INT64_MAX;
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    if (!c->s) continue;
    if (c->due < next) next = c->due;
    int64_t w = write_due(ls, c);
    if (w < next) next = w;
  }
  if (next == INT64_MAX) return -1;
  int64_t ms = next - now_ms();
  return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

static const sbloop_ops LOOP = {.work = loop_work, .flush = loop_flush, .timeout_ms = loop_timeout};

/* ---- public API ---- */

sbh2_listener *sbh2_listener_open(const char *ip, uint16_t port) {
  if (!ip) return NULL;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  char service[8];
  snprintf(service, sizeof service, "%u", port);
  if (getaddrinfo(ip, service, &hints, &ai) != 0 || !ai) return NULL;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  int ok = fd >= 0 && bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0;
  freeaddrinfo(ai);
  sbh2_listener *ls = ok ? calloc(1, sizeof *ls) : NULL;
  if (ls) {
    ls->in = malloc(READ_BYTES);
    ls->out = malloc(OUT_BYTES);
  }
  if (!ls || !ls->in || !ls->out) {
    if (fd >= 0) close(fd);
    if (ls) {
      free(ls->in);
      free(ls->out);
      free(ls);
    }
    return NULL;
  }
  ls->fd = fd;
  ls->max_conns = 4096;
  ls->stall_ms = 30000;
  return ls;
}

void sbh2_listener_free(sbh2_listener *ls) {
  if (!ls) return;
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    if (!c->s) continue;
    close(c->fd);
    sbh2_sconn_free(c->s);
    sbh2_tls_free(c->t);
    free(c->pend);
    free(c->failure);
  }
  if (ls->fd >= 0) close(ls->fd);
  for (int i = 0; i < ls->ndead; i++) sbh2_tls_free(ls->dead[i].t);
  free(ls->dead);
  free(ls->c);
  free(ls->evq);
  free(ls->in);
  free(ls->out);
  free(ls);
}

int sbh2_listener_set_max_connections(sbh2_listener *ls, uint64_t conns) {
  if (!ls || conns == 0 || conns > MAX_SLOTS) return SBWIRE_ERR_INVALID;
  ls->max_conns = conns;
  return 0;
}

int sbh2_listener_set_stall_timeout(sbh2_listener *ls, uint64_t ms) {
  if (!ls || ms == 0 || ms > INT_MAX) return SBWIRE_ERR_INVALID;
  ls->stall_ms = ms;
  return 0;
}

int sbh2_listener_port(sbh2_listener *ls) {
  if (!ls || ls->fd < 0) return SBWIRE_ERR_INVALID;
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(ls->fd, (struct sockaddr *)&sa, &len) != 0) return SBWIRE_ERR_SOCKET;
  if (sa.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
  return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

/* srv must outlive the loop and the listener (its connections hold references of their own). */
sbloop *sbh2_server_loop_new(sbh2_server *srv, sbh2_listener *ls, void (*wake)(void)) {
  if (!srv || !ls || ls->loop || ls->fd < 0) return NULL;
  sbloop *l = sbloop_new(&LOOP, ls, wake);
  if (!l) return NULL;
  if (sbloop_watch(l, ls->fd, TAG_LISTENER, 0) != 0) {
    sbloop_free(l);
    return NULL;
  }
  ls->srv = srv;
  ls->loop = l;
  return l;
}

int sbh2_listener_poll(sbh2_listener *ls, uint8_t *buf, uint32_t cap) {
  if (!ls || !buf) return SBWIRE_ERR_INVALID;
  if (cap > 0x7fffffff) cap = 0x7fffffff;
  size_t n = 0;
  if (ls->ndead) sweep_dead(ls, 1, 0, 0);
  size_t from = ls->evq_off;
  while (ls->evq_off < ls->evq_len) {
    const uint8_t *p = ls->evq + ls->evq_off;
    size_t need = SBWIRE_EVENT_HEADER_LEN + sbwire_get_u32(p + 24) + sbwire_get_u32(p + 28);
    if (need > cap - n) {
      if (ls->ndead) sweep_dead(ls, 0, from, ls->evq_off);
      if (n) return (int)n;
      if (cap >= 8) sbwire_put_u64(buf, need);
      return SBWIRE_ERR_BUFFER_TOO_SHORT;
    }
    memcpy(buf + n, p, need);
    n += need;
    ls->evq_off += need;
  }
  if (ls->ndead) sweep_dead(ls, 0, from, ls->evq_off);
  ls->evq_off = ls->evq_len = 0;
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    while (c->s && c->events) {
      int r = sbh2_sconn_poll(c->s, buf + n, cap - (uint32_t)n);
      if (r == SBWIRE_ERR_BUFFER_TOO_SHORT) return n ? (int)n : r; /* the size it needs is at buf[0] */
      if (r < 0) {
        c->events = 0;
        break;
      }
      for (size_t off = n; off < n + (size_t)r;) { /* every record names its connection */
        sbwire_put_u32(buf + off + 4, c->id);
        off += SBWIRE_EVENT_HEADER_LEN + sbwire_get_u32(buf + off + 24) + sbwire_get_u32(buf + off + 28);
      }
      n += (size_t)r;
    }
  }
  return n ? (int)n : SBWIRE_ERR_DONE;
}

int sbh2_listener_respond(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id, const uint8_t *hdrs,
                          uint32_t hdrs_len, const uint8_t *body, uint32_t body_len, uint32_t token) {
  if (!ls) return SBWIRE_ERR_INVALID;
  struct lconn *c = lookup(ls, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  int rv = sbh2_sconn_respond(c->s, stream_id, hdrs, hdrs_len, body, body_len, token);
  c->dirty = 1;
  c->last_active = now_ms();
  return rv;
}

int sbh2_listener_refuse(sbh2_listener *ls, uint32_t conn_id, int32_t stream_id) {
  if (!ls) return SBWIRE_ERR_INVALID;
  struct lconn *c = lookup(ls, conn_id);
  if (!c) return SBWIRE_ERR_NOT_FOUND;
  c->dirty = 1;
  return sbh2_sconn_refuse(c->s, stream_id);
}

int sbh2_listener_shutdown(sbh2_listener *ls) {
  if (!ls) return SBWIRE_ERR_INVALID;
  if (ls->fd >= 0) {
    if (ls->loop && !ls->resume_at) sbloop_unwatch(ls->loop, ls->fd);
    close(ls->fd);
    ls->fd = -1;
  }
  for (int i = 0; i < ls->nslots; i++) {
    struct lconn *c = &ls->c[i];
    if (!c->s) continue;
    sbh2_sconn_shutdown(c->s);
    c->dirty = 1;
  }
  return 0;
}

int64_t sbh2_listener_stat(sbh2_listener *ls, int stat) {
  if (!ls) return SBWIRE_ERR_INVALID;
  switch (stat) {
  case SBH2_STAT_CONNECTIONS:
    return ls->nconns;
  case SBH2_STAT_ACCEPT_ERRORS:
    return ls->accept_errors;
  case SBH2_STAT_ROOM_MADE:
    return ls->room_made;
  case SBH2_STAT_BLOCKED_WRITES:
    return ls->blocked_writes;
  default:
    break;
  }
  int64_t sum = 0;
  for (int i = 0; i < ls->nslots; i++) {
    if (!ls->c[i].s) continue;
    int64_t v = sbh2_sconn_stat(ls->c[i].s, stat);
    if (v < 0) return v;
    sum += v;
  }
  return sum;
}

int sbh2_listener_set_tls(sbh2_listener *ls, sbh2_tls_config *cfg) {
  if (!ls || !cfg) return SBWIRE_ERR_INVALID;
  ls->tls = cfg;
  return 0;
}

sbh2_tls *sbh2_listener_tls(sbh2_listener *ls, uint32_t conn_id) {
  if (!ls) return NULL;
  struct lconn *c = lookup(ls, conn_id);
  if (c) return c->t;
  for (int i = 0; i < ls->ndead; i++)
    if (ls->dead[i].id == conn_id) return ls->dead[i].t;
  return NULL;
}
