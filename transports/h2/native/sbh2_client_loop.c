/*
 * sbh2 client on the module's own I/O thread (see sbh2_tls.h, "Module-owned
 * client I/O"): the module connects the TCP socket itself (non-blocking,
 * TCP_NODELAY), and an sbloop runs one client connection over it: reads
 * everything ready into the HTTP/2 session (through TLS when there is one:
 * the handshake runs on the thread), writes its output (a partial write waits
 * for EPOLLOUT), and wakes JavaScript for the session's events and for changes
 * of the socket's state (connected, handshake done, ended, failed).
 *
 * The client session has no timers and nghttp2 holds back the requests past
 * the server's MAX_CONCURRENT_STREAMS: the thread's flush (or JavaScript's,
 * after a wake-up) sends them once credit came, with no wake-up of their own.
 * Everything here runs under the loop's lock.
 */
#define _GNU_SOURCE
#include "sbh2_tls.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TAG_SOCK 1
#define READ_BYTES (64 * 1024)
#define OUT_BYTES (256 * 1024)
/* Reads per wake-up at most (level-triggered: the rest stays ready). */
#define READS_PER_WAKE 16

struct sbh2_csock {
  int fd;
  int state; /* enum sbh2_csock_state bits */
  struct addrinfo *addrs, *next_addr; /* the host's addresses, and the next to try when connecting fails */
  sbloop *loop;
  sbh2_conn *conn;
  sbh2_tls *tls;
  uint8_t *in, *out;
  uint8_t *pend; /* output the kernel did not take yet: pend[off..len) */
  size_t pend_len, pend_off, pend_cap;
  /* JavaScript has something to see: events the session queued, or a change of state */
  int events, news;
  char err[256];
};

/* Marks the socket failed with why (the first reason stays) and stops watching it. */
static void fail(sbh2_csock *cs, const char *fmt, ...) {
  if (cs->state & SBH2_CSOCK_FAILED) return;
  cs->state |= SBH2_CSOCK_FAILED;
  cs->news = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cs->err, sizeof cs->err, fmt, ap);
  va_end(ap);
  if (cs->loop && cs->fd >= 0) sbloop_unwatch(cs->loop, cs->fd);
}

/* Fails with the TLS session's one-line reason. */
static void fail_tls(sbh2_csock *cs) {
  uint8_t b[200];
  int n = sbh2_tls_error(cs->tls, b, sizeof b);
  fail(cs, "%.*s", n > 0 ? n : 0, (const char *)b);
}

static int dead(sbh2_csock *cs) { return (cs->state & (SBH2_CSOCK_FAILED | SBH2_CSOCK_ENDED)) != 0; }

/* Sends the connection's output while the kernel takes it: what waited first, then the session's. */
static void csock_flush(sbh2_csock *cs) {
  if (!cs->conn || !(cs->state & SBH2_CSOCK_CONNECTED) || dead(cs)) return;
  if (cs->pend_off < cs->pend_len) {
    ssize_t k = send(cs->fd, cs->pend + cs->pend_off, cs->pend_len - cs->pend_off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0 && errno != EAGAIN && errno != EINTR) {
      fail(cs, "write failed: %s (os error %d)", strerror(errno), errno);
      return;
    }
    if (k > 0) cs->pend_off += (size_t)k;
    if (cs->pend_off < cs->pend_len) return;
    cs->pend_off = cs->pend_len = 0;
    sbloop_watch(cs->loop, cs->fd, TAG_SOCK, 0);
  }
  for (;;) {
    int n = cs->tls ? sbh2_conn_send_tls(cs->conn, cs->tls, cs->out, OUT_BYTES)
                    : sbh2_conn_send(cs->conn, cs->out, OUT_BYTES);
    if (n == SBWIRE_ERR_DONE) return;
    if (n < 0) {
      fail_tls(cs);
      return;
    }
    ssize_t k = send(cs->fd, cs->out, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0 && errno != EAGAIN && errno != EINTR) {
      fail(cs, "write failed: %s (os error %d)", strerror(errno), errno);
      return;
    }
    if (k < 0) k = 0;
    if (k < n) { /* keep the rest for when the socket takes more */
      size_t rest = (size_t)(n - k);
      if (rest > cs->pend_cap) {
        uint8_t *p = realloc(cs->pend, rest);
        if (!p) {
          fail(cs, "write failed: out of memory");
          return;
        }
        cs->pend = p;
        cs->pend_cap = rest;
      }
      memcpy(cs->pend, cs->out + k, rest);
      cs->pend_off = 0;
      cs->pend_len = rest;
      sbloop_watch(cs->loop, cs->fd, TAG_SOCK, 1);
      return;
    }
  }
}

/* Starts connecting to the host's next address (a connect that completes at once shows as writable too); fails
 * with err, the last attempt's error, when none is left. */
static void connect_next(sbh2_csock *cs, int err) {
  while (cs->next_addr) {
    struct addrinfo *a = cs->next_addr;
    cs->next_addr = a->ai_next;
    if (cs->fd >= 0) {
      if (cs->loop) sbloop_unwatch(cs->loop, cs->fd);
      close(cs->fd);
    }
    cs->fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (cs->fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(cs->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(cs->fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      err = errno;
      continue;
    }
    if (!cs->loop || sbloop_watch(cs->loop, cs->fd, TAG_SOCK, 1) == 0) return;
    err = errno;
  }
  fail(cs, "%s (os error %d)", strerror(err), err);
}

/* The non-blocking connect finished: note how (a failure tries the host's next address, as Deno's connect does). */
static void connect_done(sbh2_csock *cs) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(cs->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err) {
    connect_next(cs, err);
    return;
  }
  cs->state |= SBH2_CSOCK_CONNECTED | (cs->tls ? 0 : SBH2_CSOCK_READY);
  cs->news = 1; /* JavaScript notes when TCP came up (over TLS too: one more wake-up per connection) */
  sbloop_watch(cs->loop, cs->fd, TAG_SOCK, 0);
  csock_flush(cs); /* the preface and SETTINGS, or the ClientHello */
}

/* Takes in what the server sent: reads until the socket is empty (or READS_PER_WAKE reads), each into the session. */
static void csock_read(sbh2_csock *cs) {
  if (cs->pend_off < cs->pend_len) csock_flush(cs); /* writable again */
  for (int i = 0; i < READS_PER_WAKE && !dead(cs); i++) {
    ssize_t n = read(cs->fd, cs->in, READ_BYTES);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    if (n < 0) {
      fail(cs, "read failed: %s (os error %d)", strerror(errno), errno);
      return;
    }
    if (n == 0) {
      if (cs->tls && !(cs->state & SBH2_CSOCK_READY)) {
        fail(cs, "the peer closed the connection during the TLS handshake");
        return;
      }
      cs->state |= SBH2_CSOCK_ENDED;
      cs->news = 1;
      sbloop_unwatch(cs->loop, cs->fd);
      return;
    }
    int r = cs->tls ? sbh2_conn_recv_tls(cs->conn, cs->tls, cs->in, (uint32_t)n)
                    : sbh2_conn_recv(cs->conn, cs->in, (uint32_t)n);
    if (cs->tls && !(cs->state & SBH2_CSOCK_READY) && (sbh2_tls_state(cs->tls) & SBWIRE_TLS_ESTABLISHED)) {
      cs->state |= SBH2_CSOCK_READY;
      cs->news = 1;
    }
    if (r == SBWIRE_ERR_TLS) {
      csock_flush(cs); /* our alert, if any, so that the server learns why */
      fail_tls(cs);
      return;
    }
    if (r < 0 && cs->tls && !(cs->state & SBH2_CSOCK_READY)) {
      fail(cs, "TLS handshake failed (error %d)", r);
      return;
    }
    if (r != 0) cs->events = 1; /* events, or the session closed (its CLOSED event says why) */
    if (r < 0) {
      sbloop_unwatch(cs->loop, cs->fd);
      return;
    }
    if (n < READ_BYTES) break;
  }
  if (!(cs->state & SBH2_CSOCK_READY) || cs->news) csock_flush(cs); /* the handshake's next flight at once */
}

static int loop_work(void *owner, const uint64_t *ready, int n) {
  (void)ready;
  sbh2_csock *cs = owner;
  if (n > 0 && !dead(cs)) {
    if (!(cs->state & SBH2_CSOCK_CONNECTED)) connect_done(cs);
    else csock_read(cs);
  }
  int wake = cs->events || cs->news;
  cs->events = cs->news = 0;
  return wake;
}

static void loop_flush(void *owner) { csock_flush(owner); }

/* No timers: run work at once when a flush (on either thread) left something for JavaScript. */
static int loop_timeout(void *owner) {
  sbh2_csock *cs = owner;
  return cs->events || cs->news ? 0 : -1;
}

static const sbloop_ops LOOP = {.work = loop_work, .flush = loop_flush, .timeout_ms = loop_timeout};

/* ---- public API ---- */

sbh2_csock *sbh2_csock_open(const char *host, uint16_t port) {
  if (!host) return NULL;
  sbh2_csock *cs = calloc(1, sizeof *cs);
  if (!cs) return NULL;
  cs->fd = -1;
  cs->in = malloc(READ_BYTES);
  cs->out = malloc(OUT_BYTES);
  if (!cs->in || !cs->out) {
    sbh2_csock_free(cs);
    return NULL;
  }
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
  char service[8];
  snprintf(service, sizeof service, "%u", port);
  int g = getaddrinfo(host, service, &hints, &cs->addrs);
  if (g != 0 || !cs->addrs) {
    fail(cs, "failed to lookup address information: %s", gai_strerror(g));
    return cs;
  }
  cs->next_addr = cs->addrs;
  connect_next(cs, 0); /* the loop learns how it went (writable) */
  return cs;
}

void sbh2_csock_free(sbh2_csock *cs) {
  if (!cs) return;
  if (cs->fd >= 0) close(cs->fd);
  if (cs->addrs) freeaddrinfo(cs->addrs);
  free(cs->in);
  free(cs->out);
  free(cs->pend);
  free(cs);
}

int sbh2_csock_state(sbh2_csock *cs) {
  if (!cs) return SBWIRE_ERR_INVALID;
  return cs->state;
}

int sbh2_csock_error(sbh2_csock *cs, uint8_t *buf, uint32_t cap) {
  if (!cs || !buf) return SBWIRE_ERR_INVALID;
  size_t n = strlen(cs->err);
  if (n > cap) n = cap;
  memcpy(buf, cs->err, n);
  return (int)n;
}

int sbh2_csock_port(sbh2_csock *cs) {
  if (!cs || cs->fd < 0) return SBWIRE_ERR_INVALID;
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(cs->fd, (struct sockaddr *)&sa, &len) != 0) return SBWIRE_ERR_SOCKET;
  if (sa.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
  return ntohs(((struct sockaddr_in *)&sa)->sin_port);
}

sbloop *sbh2_conn_loop_new(sbh2_conn *conn, sbh2_tls *tls, sbh2_csock *cs, void (*wake)(void)) {
  if (!conn || !cs || cs->loop) return NULL;
  sbloop *l = sbloop_new(&LOOP, cs, wake);
  if (!l) return NULL;
  cs->conn = conn;
  cs->tls = tls;
  cs->loop = l;
  if (dead(cs)) {
    cs->news = 1; /* a failure at open: JavaScript learns of it at once */
  } else if (sbloop_watch(l, cs->fd, TAG_SOCK, 1) != 0) {
    cs->loop = NULL;
    sbloop_free(l);
    return NULL;
  }
  return l;
}
