/* sbh3 batched I/O on the caller's UDP socket: recvmmsg, sendmmsg with UDP segmentation offload. */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Datagrams moved per recvmmsg/sendmmsg call, and bytes of the send batch. */
#define IO_BATCH 64
#define IO_SEND_BYTES (256 * 1024)
/* Datagrams received per sbh3_*_io call at most, so one busy peer cannot starve the caller. */
#define IO_RECV_MAX 1024
/* No further batch is received once a call has spent this long (handshakes cost ~1 ms each): the caller serves first. */
#define IO_RECV_NS 2000000ull
#define IO_RECV_BYTES 65536

/* Datagrams one sendmsg may carry with UDP generic segmentation offload, and their bytes. */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000

struct sbh3_udp {
  int fd;         /* the caller's socket (never closed here), or the module's own (owned) */
  int owned;      /* sbh3_udp_open made fd: sbh3_udp_free closes it */
  sbh3_server *loop_srv; /* the server a loop runs on this socket (sbh3_server_loop_new) */
  sbh3_conn *loop_conn;  /* the client connection a loop runs on this socket (sbh3_conn_loop_new) */
  int wake_fd;    /* eventfd that ends a pending sbh3_udp_wait (sbh3_udp_wake); -1 until sbh3_udp_watch */
  int connected;
  int refused;    /* a send or the caller's receive saw ECONNREFUSED (which clears the socket's pending error) */
  int no_gso;     /* the kernel refused UDP_SEGMENT once: one datagram per message from then on */
  int64_t received; /* datagrams received through the io calls (recvmmsg) so far */
  uint8_t *rbuf;  /* IO_BATCH receive slots of IO_RECV_BYTES */
  uint8_t *sbuf;  /* the send batch */
  struct mmsghdr msgs[IO_BATCH];
  struct iovec iov[IO_BATCH];
  ngtcp2_sockaddr_union addrs[IO_BATCH];
  /* Send side: message i carries nsegs[i] datagrams of seg[i] bytes (the last may be shorter). */
  uint16_t seg[IO_BATCH];
  uint16_t nsegs[IO_BATCH];
  uint8_t ecn[IO_BATCH]; /* ECN codepoint of each received datagram, or of each message sent */
  int v6;                /* IPv6 socket: TOS travels as IPV6_TCLASS */
  union {
    char buf[CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl[IO_BATCH];
};

/* True when fd is a UDP socket bound to exactly *want. */
static int udp_bound_to(int fd, const ngtcp2_sockaddr_union *want) {
  int type = 0, proto = 0;
  socklen_t ol = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ol) != 0 || type != SOCK_DGRAM) return 0;
  ol = sizeof(proto);
  if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &ol) != 0 || proto != IPPROTO_UDP) return 0;
  ngtcp2_sockaddr_union sa;
  socklen_t len = sizeof(sa);
  if (getsockname(fd, &sa.sa, &len) != 0 || sa.sa.sa_family != want->sa.sa_family) return 0;
  if (sa.sa.sa_family == AF_INET6)
    return sa.in6.sin6_port == want->in6.sin6_port &&
           memcmp(&sa.in6.sin6_addr, &want->in6.sin6_addr, sizeof(sa.in6.sin6_addr)) == 0;
  return sa.in.sin_port == want->in.sin_port && sa.in.sin_addr.s_addr == want->in.sin_addr.s_addr;
}

static sbh3_udp *udp_wrap(int fd, int owned, int v6);

sbh3_udp *sbh3_udp_adopt(const char *ip, uint16_t port) {
  ngtcp2_sockaddr_union want;
  ngtcp2_socklen wantlen;
  if (port == 0 || parse_addr(&want, &wantlen, ip, port) != 0) return NULL;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return NULL;
  int found = -1, matches = 0, dfd = dirfd(d);
  for (struct dirent *e; (e = readdir(d));) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == dfd) continue;
    if (udp_bound_to((int)fd, &want)) {
      found = (int)fd;
      matches++;
    }
  }
  closedir(d);
  if (matches != 1) return NULL;
  return udp_wrap(found, 0, want.sa.sa_family == AF_INET6);
}

/* The wrapper around fd: batch buffers, TOS reports, large socket buffers. */
static sbh3_udp *udp_wrap(int fd, int owned, int v6) {
  sbh3_udp *u = calloc(1, sizeof(*u));
  if (!u) {
    if (owned) close(fd);
    return NULL;
  }
  u->fd = fd;
  u->owned = owned;
  u->wake_fd = -1;
  u->rbuf = malloc((size_t)IO_BATCH * IO_RECV_BYTES);
  u->sbuf = malloc(IO_SEND_BYTES);
  if (!u->rbuf || !u->sbuf) {
    sbh3_udp_free(u);
    return NULL;
  }
  /* Report each datagram's TOS byte (its ECN bits) with recvmmsg. */
  int one = 1;
  u->v6 = v6;
  if (u->v6) setsockopt(u->fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
  else setsockopt(u->fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
  int sz = 4 << 20; /* the kernel caps it at net.core.[rw]mem_max */
  setsockopt(u->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  setsockopt(u->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
  return u;
}

void sbh3_udp_free(sbh3_udp *u) {
  if (!u) return;
  if (u->owned && u->fd >= 0) close(u->fd);
  if (u->wake_fd >= 0) close(u->wake_fd);
  free(u->rbuf);
  free(u->sbuf);
  free(u);
}

int sbh3_udp_connect(sbh3_udp *u, const char *ip, uint16_t port) {
  if (!u) return SBWIRE_ERR_INVALID;
  ngtcp2_sockaddr_union sa;
  ngtcp2_socklen salen;
  if (parse_addr(&sa, &salen, ip, port) != 0) return SBWIRE_ERR_INVALID;
  if (connect(u->fd, &sa.sa, salen) != 0) return SBWIRE_ERR_SOCKET;
  u->connected = 1;
  return 0;
}

int sbh3_udp_watch(sbh3_udp *u) {
  if (!u) return SBWIRE_ERR_INVALID;
  if (u->wake_fd < 0) u->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return u->wake_fd < 0 ? SBWIRE_ERR_SOCKET : 0;
}

int sbh3_udp_wait(sbh3_udp *u, int timeout_ms) {
  if (!u || u->wake_fd < 0) return SBWIRE_ERR_INVALID;
  /* POLLERR (an ICMP error on a connected socket) is reported whatever is asked: the io call reads it. */
  struct pollfd p[2] = {{.fd = u->fd, .events = POLLIN}, {.fd = u->wake_fd, .events = POLLIN}};
  int n;
  do n = poll(p, 2, timeout_ms);
  while (n < 0 && errno == EINTR);
  if (n < 0) return SBWIRE_ERR_SOCKET;
  if (p[1].revents) {
    uint64_t v;
    if (read(u->wake_fd, &v, sizeof(v)) < 0) { /* drained by an earlier wait: nothing to do */
    }
    return SBWIRE_ERR_CLOSED;
  }
  return p[0].revents ? 1 : 0;
}

int sbh3_udp_wake(sbh3_udp *u) {
  if (!u || u->wake_fd < 0) return SBWIRE_ERR_INVALID;
  uint64_t one = 1;
  return write(u->wake_fd, &one, sizeof(one)) == sizeof(one) ? 0 : SBWIRE_ERR_SOCKET;
}

int sbh3_udp_refused(sbh3_udp *u) {
  if (!u) return SBWIRE_ERR_INVALID;
  u->refused = 1;
  return 0;
}

/* Receives up to IO_BATCH ready datagrams; returns how many, 0 when none, or -errno. */
static int udp_recv_batch(sbh3_udp *u) {
  for (int i = 0; i < IO_BATCH; i++) {
    u->iov[i].iov_base = u->rbuf + (size_t)i * IO_RECV_BYTES;
    u->iov[i].iov_len = IO_RECV_BYTES;
    memset(&u->msgs[i].msg_hdr, 0, sizeof(u->msgs[i].msg_hdr));
    u->msgs[i].msg_hdr.msg_iov = &u->iov[i];
    u->msgs[i].msg_hdr.msg_iovlen = 1;
    u->msgs[i].msg_hdr.msg_name = &u->addrs[i];
    u->msgs[i].msg_hdr.msg_namelen = sizeof(u->addrs[i]);
    u->msgs[i].msg_hdr.msg_control = u->ctrl[i].buf;
    u->msgs[i].msg_hdr.msg_controllen = sizeof(u->ctrl[i].buf);
  }
  int n;
  do n = recvmmsg(u->fd, u->msgs, IO_BATCH, MSG_DONTWAIT, NULL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
  for (int i = 0; i < n; i++) {
    u->ecn[i] = 0;
    struct msghdr *h = &u->msgs[i].msg_hdr;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
      if ((cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS && cm->cmsg_len == CMSG_LEN(1)) ||
          (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_TCLASS && cm->cmsg_len == CMSG_LEN(sizeof(int)))) {
        int tos = cm->cmsg_len == CMSG_LEN(1) ? *(uint8_t *)CMSG_DATA(cm) : *(int *)CMSG_DATA(cm);
        u->ecn[i] = (uint8_t)(tos & NGTCP2_ECN_MASK);
      }
    }
  }
  return n;
}

/* Sends message i's datagrams one sendmsg each (after the kernel refused UDP_SEGMENT). */
static void udp_send_split(sbh3_udp *u, int i) {
  struct msghdr h = u->msgs[i].msg_hdr;
  struct iovec v;
  uint8_t *p = u->iov[i].iov_base;
  size_t left = u->iov[i].iov_len;
  /* Keep the TOS control message (if any), drop UDP_SEGMENT: it is the first one when present. */
  if (h.msg_control && h.msg_controllen > CMSG_SPACE(sizeof(uint16_t))) {
    h.msg_control = (char *)h.msg_control + CMSG_SPACE(sizeof(uint16_t));
    h.msg_controllen -= CMSG_SPACE(sizeof(uint16_t));
  } else {
    h.msg_control = NULL;
    h.msg_controllen = 0;
  }
  h.msg_iov = &v;
  h.msg_iovlen = 1;
  while (left) {
    v.iov_base = p;
    v.iov_len = left < u->seg[i] ? left : u->seg[i];
    if (sendmsg(u->fd, &h, MSG_DONTWAIT) < 0 && errno == ECONNREFUSED) u->refused = 1;
    p += v.iov_len;
    left -= v.iov_len;
  }
}

/* Sends the first n prepared messages; a full socket buffer waits briefly, then the rest count as lost. */
static void udp_send_batch(sbh3_udp *u, int n) {
  for (int i = 0; i < n; i++) {
    struct msghdr *h = &u->msgs[i].msg_hdr;
    if (u->nsegs[i] < 2 && !u->ecn[i]) continue;
    memset(u->ctrl[i].buf, 0, sizeof(u->ctrl[i].buf));
    h->msg_control = u->ctrl[i].buf;
    h->msg_controllen = sizeof(u->ctrl[i].buf);
    struct cmsghdr *cm = CMSG_FIRSTHDR(h);
    size_t used = 0;
    if (u->nsegs[i] > 1) {
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      memcpy(CMSG_DATA(cm), &u->seg[i], sizeof(uint16_t));
      used += CMSG_SPACE(sizeof(uint16_t));
      cm = CMSG_NXTHDR(h, cm);
    }
    if (u->ecn[i]) {
      int tos = u->ecn[i];
      cm->cmsg_level = u->v6 ? IPPROTO_IPV6 : IPPROTO_IP;
      cm->cmsg_type = u->v6 ? IPV6_TCLASS : IP_TOS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cm), &tos, sizeof(int));
      used += CMSG_SPACE(sizeof(int));
    }
    h->msg_controllen = used;
  }
  int off = 0, tries = 0;
  while (off < n) {
    int r = sendmmsg(u->fd, u->msgs + off, (unsigned)(n - off), MSG_DONTWAIT);
    if (r > 0) {
      off += r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && tries++ < 3) {
      struct pollfd p = {.fd = u->fd, .events = POLLOUT};
      poll(&p, 1, 5);
      continue;
    }
    /* No segmentation offload on this path: send this message's datagrams one by one, and never batch again. */
    if (r < 0 && u->nsegs[off] > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
      u->no_gso = 1;
      udp_send_split(u, off++);
      continue;
    }
    /* ECONNREFUSED is the ICMP error of an earlier datagram: keep it for io; skip this message. */
    if (r < 0 && errno == ECONNREFUSED) u->refused = 1;
    off++;
  }
}

/*
 * Adds len bytes at data (to `to`, NULL on a connected socket) to the batch of *n messages. A
 * datagram that directly follows the previous message's bytes, goes to the same peer and is no
 * longer than its segments joins that message (UDP_SEGMENT: the kernel splits it), as long as
 * every earlier segment was full-size and it carries the same ECN codepoint; otherwise it starts a
 * new message. Returns 1 when the batch is full.
 */
static int udp_add(sbh3_udp *u, int *n, uint8_t *data, size_t len, const ngtcp2_sockaddr_union *to, uint8_t ecn) {
  int i = *n - 1;
  if (i >= 0 && !u->no_gso && u->ecn[i] == ecn) {
    struct iovec *v = &u->iov[i];
    const ngtcp2_sockaddr_union *prev = u->msgs[i].msg_hdr.msg_name;
    int same_peer = to ? prev && memcmp(prev, to, u->msgs[i].msg_hdr.msg_namelen) == 0 : !prev;
    if (same_peer && (uint8_t *)v->iov_base + v->iov_len == data && len <= u->seg[i] &&
        v->iov_len == (size_t)u->seg[i] * u->nsegs[i] && u->nsegs[i] < GSO_MAX_SEGS &&
        v->iov_len + len <= GSO_MAX_BYTES) {
      v->iov_len += len;
      u->nsegs[i]++;
      return 0;
    }
  }
  i = (*n)++;
  u->iov[i].iov_base = data;
  u->iov[i].iov_len = len;
  u->seg[i] = (uint16_t)len;
  u->nsegs[i] = 1;
  u->ecn[i] = ecn;
  memset(&u->msgs[i].msg_hdr, 0, sizeof(u->msgs[i].msg_hdr));
  u->msgs[i].msg_hdr.msg_iov = &u->iov[i];
  u->msgs[i].msg_hdr.msg_iovlen = 1;
  if (to) {
    u->addrs[i] = *to;
    u->msgs[i].msg_hdr.msg_name = &u->addrs[i];
    u->msgs[i].msg_hdr.msg_namelen =
        to->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  }
  return *n == IO_BATCH;
}

/* Marks a client connection refused by the peer's host (ICMP port unreachable). */
static void conn_refused(sbh3_conn *c) {
  if (c->closed) return;
  c->closed = 1;
  c->close_deadline = now_ns();
  set_err(c, "Connection refused: nothing listens at the server's UDP port%s", "");
  sbhttp3_evq_push(c->q, SBH3_EV_CLOSED, c->id, -1, SBWIRE_ERR_REFUSED);
}

/* Takes one received datagram (from: its sender); returns nonzero to stop receiving. */
typedef int (*udp_sink)(void *owner, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *from,
                        ngtcp2_socklen fromlen, uint8_t ecn, uint64_t now);
/* Writes the owner's next datagram into out (to: its destination; ecn: its ECN codepoint). */
typedef int (*udp_source)(void *owner, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                          uint8_t *ecn);

/* Feeds every ready datagram (up to IO_RECV_MAX in all, no new batch after IO_RECV_NS) to sink; returns the new total of got. */
static int udp_drain(sbh3_udp *u, int got, udp_sink sink, void *owner) {
  uint64_t start = now_ns();
  while (got < IO_RECV_MAX && now_ns() - start < IO_RECV_NS) {
    int n = udp_recv_batch(u);
    if (n == -ECONNREFUSED) u->refused = 1;
    if (n <= 0) break;
    got += n;
    u->received += n;
    uint64_t now = now_ns();
    for (int i = 0; i < n; i++)
      if (sink(owner, u->iov[i].iov_base, u->msgs[i].msg_len, &u->addrs[i],
               (ngtcp2_socklen)u->msgs[i].msg_hdr.msg_namelen, u->ecn[i], now))
        return got;
    if (n < IO_BATCH) break;
  }
  return got;
}

/* The one send loop: pulls datagrams from source into batches and sends each, until the source is done. */
static void udp_flush(sbh3_udp *u, udp_source source, void *owner) {
  uint64_t now = now_ns();
  size_t used = 0;
  int nmsg = 0;
  for (;;) {
    size_t cap = IO_SEND_BYTES - used;
    const ngtcp2_sockaddr_union *to = NULL;
    uint8_t ecn = 0;
    int n = cap ? source(owner, u->sbuf + used, cap, now, &to, &ecn) : SBWIRE_ERR_BUFFER_TOO_SHORT;
    if (n > 0) {
      int full = udp_add(u, &nmsg, u->sbuf + used, (size_t)n, u->connected ? NULL : to, ecn);
      used += (size_t)n;
      if (!full) continue;
    }
    if (nmsg) udp_send_batch(u, nmsg);
    if (n == SBWIRE_ERR_DONE || (n < 0 && n != SBWIRE_ERR_BUFFER_TOO_SHORT)) break;
    if (n == SBWIRE_ERR_BUFFER_TOO_SHORT && nmsg == 0) break;
    used = 0;
    nmsg = 0;
  }
}

/* udp_sink for a client connection: its one path, whatever the sender. */
static int conn_sink(void *owner, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *from,
                     ngtcp2_socklen fromlen, uint8_t ecn, uint64_t now) {
  (void)from;
  (void)fromlen;
  sbh3_conn *c = owner;
  int rv = conn_read(c, &c->ps.path, data, len, ecn, now);
  if (rv != 0) conn_fail(c, rv);
  return c->closed;
}

/* udp_source for a client connection. */
static int conn_source(void *owner, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                       uint8_t *ecn) {
  sbh3_conn *c = owner;
  *to = &c->ps.remote_addrbuf;
  return conn_write(c, out, cap, now, ecn);
}

/* Reports a refusal the socket recorded, once. */
static void conn_check_refused(sbh3_conn *c, sbh3_udp *u) {
  if (u->refused && u->connected) {
    u->refused = 0;
    conn_refused(c);
  }
}

int sbh3_conn_io(sbh3_conn *c, sbh3_udp *u, const uint8_t *data, size_t len) {
  if (!c || !u || c->srv) return SBWIRE_ERR_INVALID;
  int got = 0;
  conn_check_refused(c, u);
  if (data && len && !c->closed) {
    got = 1;
    conn_sink(c, data, len, NULL, 0, 0, now_ns()); /* its TOS byte stayed with the caller */
  }
  got += sbh3_conn_drain(c, u);
  sbh3_conn_flush(c, u);
  return got;
}

int sbh3_conn_drain(sbh3_conn *c, sbh3_udp *u) {
  if (!c || !u || c->srv) return SBWIRE_ERR_INVALID;
  conn_check_refused(c, u);
  int got = c->closed ? 0 : udp_drain(u, 0, conn_sink, c);
  conn_check_refused(c, u);
  return got;
}

int sbh3_conn_flush(sbh3_conn *c, sbh3_udp *u) {
  if (!c || !u || c->srv) return SBWIRE_ERR_INVALID;
  conn_check_refused(c, u);
  conn_expire(c, now_ns());
  udp_flush(u, conn_source, c);
  conn_check_refused(c, u);
  return 0;
}

/* udp_sink for a server endpoint. */
static int server_sink(void *owner, const uint8_t *data, size_t len, const ngtcp2_sockaddr_union *from,
                       ngtcp2_socklen fromlen, uint8_t ecn, uint64_t now) {
  (void)now;
  server_recv_from(owner, data, len, from, fromlen, ecn);
  return 0;
}

/* udp_source for a server endpoint: every connection's datagrams and the stateless ones. */
static int server_source(void *owner, uint8_t *out, size_t cap, uint64_t now, const ngtcp2_sockaddr_union **to,
                         uint8_t *ecn) {
  uint32_t id;
  return server_write(owner, out, cap, now, to, &id, ecn);
}

int sbh3_server_io_defer(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
                         uint16_t from_port) {
  if (!srv || !u) return SBWIRE_ERR_INVALID;
  int got = 0;
  if (data && len) {
    ngtcp2_sockaddr_union from;
    ngtcp2_socklen fromlen;
    if (parse_addr(&from, &fromlen, from_ip, from_port) != 0) return SBWIRE_ERR_INVALID;
    server_sink(srv, data, len, &from, fromlen, 0, now_ns()); /* its TOS byte stayed with the caller */
    got = 1;
  }
  got = udp_drain(u, got, server_sink, srv);
  sbh3_server_on_timeout(srv);
  return got;
}

int sbh3_server_flush(sbh3_server *srv, sbh3_udp *u) {
  if (!srv || !u) return SBWIRE_ERR_INVALID;
  sbh3_server_on_timeout(srv);
  udp_flush(u, server_source, srv);
  return 0;
}

int sbh3_server_io(sbh3_server *srv, sbh3_udp *u, const uint8_t *data, size_t len, const char *from_ip,
                   uint16_t from_port) {
  int got = sbh3_server_io_defer(srv, u, data, len, from_ip, from_port);
  if (got < 0) return got;
  udp_flush(u, server_source, srv);
  return got;
}

sbh3_udp *sbh3_udp_open(const char *ip, uint16_t port) {
  ngtcp2_sockaddr_union sa;
  ngtcp2_socklen salen;
  if (parse_addr(&sa, &salen, ip, port) != 0) return NULL;
  int fd = socket(sa.sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return NULL;
  if (bind(fd, &sa.sa, salen) != 0) {
    close(fd);
    return NULL;
  }
  return udp_wrap(fd, 1, sa.sa.sa_family == AF_INET6);
}

int64_t sbh3_udp_received(sbh3_udp *u) {
  if (!u) return SBWIRE_ERR_INVALID;
  return u->received;
}

int sbh3_udp_port(sbh3_udp *u) {
  if (!u) return SBWIRE_ERR_INVALID;
  ngtcp2_sockaddr_union sa;
  socklen_t len = sizeof(sa);
  if (getsockname(u->fd, &sa.sa, &len) != 0) return SBWIRE_ERR_SOCKET;
  return ntohs(sa.sa.sa_family == AF_INET6 ? sa.in6.sin6_port : sa.in.sin_port);
}

/* The server's loop: take in every ready datagram and run the timers, leaving answers to requests for JavaScript's flush. */
static int server_loop_work(void *owner, const uint64_t *ready, int n) {
  sbh3_udp *u = owner;
  (void)ready;
  (void)n;
  sbh3_server_io_defer(u->loop_srv, u, NULL, 0, NULL, 0);
  return u->loop_srv->q.n > 0;
}

static void server_loop_flush(void *owner) {
  sbh3_udp *u = owner;
  sbh3_server_flush(u->loop_srv, u);
}

static int server_loop_timeout(void *owner) {
  sbh3_udp *u = owner;
  return sbh3_server_timeout_ms(u->loop_srv);
}

static const sbloop_ops SERVER_LOOP = {
    .work = server_loop_work,
    .flush = server_loop_flush,
    .timeout_ms = server_loop_timeout,
};

sbloop *sbh3_server_loop_new(sbh3_server *srv, sbh3_udp *u, void (*wake)(void)) {
  if (!srv || !u || u->loop_srv || u->loop_conn) return NULL;
  sbloop *l = sbloop_new(&SERVER_LOOP, u, wake);
  if (!l) return NULL;
  if (sbloop_watch(l, u->fd, 1, 0) != 0) {
    sbloop_free(l);
    return NULL;
  }
  u->loop_srv = srv;
  return l;
}

/* A client connection's loop: take in every ready datagram, run the timers; wake the caller for events, or
 * for stream credit a blocked request waits for. */
static int conn_loop_work(void *owner, const uint64_t *ready, int n) {
  (void)ready;
  (void)n;
  sbh3_udp *u = owner;
  sbh3_conn *c = u->loop_conn;
  int got = sbh3_conn_drain(c, u);
  conn_expire(c, now_ns());
  return c->q->n > 0 || (got > 0 && c->want_credit);
}

static void conn_loop_flush(void *owner) {
  sbh3_udp *u = owner;
  sbh3_conn *c = u->loop_conn;
  conn_expire(c, now_ns());
  udp_flush(u, conn_source, c);
  conn_check_refused(c, u);
}

static int conn_loop_timeout(void *owner) {
  sbh3_udp *u = owner;
  return sbh3_conn_timeout_ms(u->loop_conn);
}

static const sbloop_ops CONN_LOOP = {
    .work = conn_loop_work,
    .flush = conn_loop_flush,
    .timeout_ms = conn_loop_timeout,
};

sbloop *sbh3_conn_loop_new(sbh3_conn *conn, sbh3_udp *u, void (*wake)(void)) {
  if (!conn || conn->srv || !u || u->loop_srv || u->loop_conn) return NULL;
  sbloop *l = sbloop_new(&CONN_LOOP, u, wake);
  if (!l) return NULL;
  if (sbloop_watch(l, u->fd, 1, 0) != 0) {
    sbloop_free(l);
    return NULL;
  }
  u->loop_conn = conn;
  return l;
}
