/*
 * Leak-check driver for the sbh3 shim: a client and a server exchange
 * datagrams in memory (no sockets), run requests of several sizes, a cancel,
 * bodies over the server's limit (answered 413 after TOO_LARGE), responses
 * that wait for room in a small send queue, garbage input and a graceful
 * close, then free everything. A second phase
 * does the same over loopback sockets it opens and the shim adopts
 * (sbh3_udp_adopt + sbh3_*_io, with 1452-byte datagrams, a Retry and a
 * NEW_TOKEN, a key update, ECN marks, the first datagram of
 * each wake-up received here as the runtime would; the server sends with UDP
 * segmentation offload, then, once the kernel refuses it halfway through,
 * one datagram per message), and a client aimed at a
 * closed port must see SBWIRE_ERR_REFUSED, both when the shim's own recvmmsg
 * gets ECONNREFUSED and when the caller's receive does. A TLS phase runs a full
 * handshake, a resumption with 0-RTT and a foreign ticket (0-RTT refused). Run it under
 * valgrind --leak-check=full or LeakSanitizer. Exit 0 when every response was
 * right; 1 otherwise.
 *
 * Usage: sbilab_h3_leakcheck CA.pem SERVER.pem SERVER-KEY.pem
 */
#include "sbh3.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NREQ 40
/* In-memory phase: bodies over LIMIT get TOO_LARGE (answered 413, empty body); responses wait for QUEUE room. */
#define LIMIT 50000
#define QUEUE 600

/* A response the server's send queue had no room for yet. */
typedef struct {
  uint32_t conn_id;
  int64_t sid;
  uint8_t *body;
  size_t len;
} waiting_t;

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return p;
}

static size_t put_field(uint8_t *p, const char *name, const char *value) {
  uint32_t nl = (uint32_t)strlen(name), vl = (uint32_t)strlen(value);
  memcpy(p, &nl, 4);
  memcpy(p + 4, &vl, 4);
  memcpy(p + 8, name, nl);
  memcpy(p + 8 + nl, value, vl);
  return 8 + nl + vl;
}

static size_t body_size(int i) {
  static const size_t sizes[] = {0, 1, 1000, 100000, 300};
  return sizes[i % 5];
}

/* What the echo answers: the body, or nothing (a 413) when it was over LIMIT. */
static size_t answer_size(int i) { return body_size(i) > LIMIT ? 0 : body_size(i); }

/* Offers waiting responses again in order; returns how many remain. */
static int retry_waiting(sbh3_server *srv, waiting_t *w, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    uint8_t hdr[64];
    size_t h = put_field(hdr, ":status", "200");
    if (k == 0 && sbh3_server_respond(srv, w[i].conn_id, w[i].sid, hdr, h, w[i].body, w[i].len) != SBWIRE_ERR_STREAM_BLOCKED) {
      free(w[i].body);
      continue;
    }
    w[k++] = w[i];
  }
  return k;
}

#define SOCK_NREQ 20
#define SOCK_BODY 20000

/* Opens a nonblocking UDP socket on 127.0.0.1 (any port); returns the fd and its port, or -1. */
static int open_udp(int *port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(sa);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

/* Waits up to ms for fd to be readable, as the caller's event loop would. */
static void wait_readable(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  poll(&p, 1, ms);
}

/* Receives one datagram the way a runtime would before calling io; returns its length, 0 if none, -errno. */
static int recv_one(int fd, uint8_t *buf, size_t cap, char *ip, uint16_t *port) {
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  ssize_t n = recvfrom(fd, buf, cap, MSG_DONTWAIT, (struct sockaddr *)&sa, &len);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
  inet_ntop(AF_INET, &sa.sin_addr, ip, INET_ADDRSTRLEN);
  *port = ntohs(sa.sin_port);
  return (int)n;
}

/* A client aimed at a port where nothing listens must see REFUSED; via_caller: the caller's receive gets the error. */
static int refused_seen(sbh3_config *ccfg, uint8_t *ev, int via_caller) {
  int gport, gone = open_udp(&gport);
  close(gone);
  int rport, rfd = open_udp(&rport);
  sbh3_udp *ru = sbh3_udp_adopt("127.0.0.1", (uint16_t)rport);
  sbh3_conn *rc =
      sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", (uint16_t)rport, "127.0.0.1", (uint16_t)gport);
  if (!ru || !rc || sbh3_udp_connect(ru, "127.0.0.1", (uint16_t)gport) != 0 || (!via_caller && sbh3_udp_watch(ru) != 0))
    return 0;
  uint8_t buf[2048];
  char ip[INET_ADDRSTRLEN];
  uint16_t port;
  int refused = 0;
  for (int i = 0; i < 20 && !refused; i++) {
    if (via_caller && i > 0 && recv_one(rfd, buf, sizeof(buf), ip, &port) == -ECONNREFUSED) sbh3_udp_refused(ru);
    sbh3_conn_io(rc, ru, NULL, 0);
    int n;
    while ((n = sbh3_conn_poll(rc, ev, 1 << 20)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);)
        if (e.type == SBH3_EV_CLOSED && e.code == SBWIRE_ERR_REFUSED) refused = 1;
    }
    /* The module's own wait reports the ICMP error as readiness, as the caller's poll does. */
    if (!refused && (via_caller ? (wait_readable(rfd, 50), 0) : sbh3_udp_wait(ru, 50)) < 0) break;
  }
  sbh3_conn_free(rc);
  sbh3_udp_free(ru);
  close(rfd);
  return refused;
}

/* Client and server over loopback sockets the shim adopts; returns answered requests or -1. */
static int socket_phase(const uint8_t *ca, size_t ca_len, const uint8_t *cert, size_t cert_len, const uint8_t *key,
                        size_t key_len) {
  sbh3_config *scfg = sbh3_config_new(1), *ccfg = sbh3_config_new(0);
  if (sbh3_config_set_cert(scfg, cert, cert_len, key, key_len) != 0 || sbh3_config_add_ca(ccfg, ca, ca_len) <= 0 ||
      sbh3_config_set_max_udp_payload(scfg, 1452) != 0 || sbh3_config_set_max_udp_payload(ccfg, 1452) != 0 ||
      sbh3_config_set_retry(scfg, 1) != 0 || sbh3_config_set_token(ccfg, (const uint8_t *)"\x36stale", 6) != 0)
    return -1;
  int sport, cport, sfd = open_udp(&sport), cfd = open_udp(&cport);
  if (sfd < 0 || cfd < 0) return -1;
  /* Port 0 and an address nothing is bound to match no socket. */
  if (sbh3_udp_adopt("127.0.0.1", 0) || sbh3_udp_adopt("127.0.0.9", (uint16_t)sport) || sbh3_udp_adopt("bad", 1))
    return -1;
  sbh3_udp *su = sbh3_udp_adopt("127.0.0.1", (uint16_t)sport), *cu = sbh3_udp_adopt("127.0.0.1", (uint16_t)cport);
  if (!su || !cu) return -1;
  if (sbh3_udp_connect(cu, "127.0.0.1", (uint16_t)sport) != 0) return -1;
  /* Nothing arrived yet; a wake ends the next wait at once. */
  if (sbh3_udp_wait(su, 0) != SBWIRE_ERR_INVALID || sbh3_udp_watch(su) != 0 || sbh3_udp_watch(su) != 0 ||
      sbh3_udp_wait(su, 0) != 0 || sbh3_udp_wake(su) != 0 || sbh3_udp_wait(su, 5000) != SBWIRE_ERR_CLOSED)
    return -1;
  sbh3_server *srv = sbh3_server_new(scfg, "127.0.0.1", (uint16_t)sport);
  sbh3_conn *cli = sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", (uint16_t)cport, "127.0.0.1", (uint16_t)sport);
  if (!srv || !cli) return -1;
  uint8_t *ev = malloc(1 << 20), *body = malloc(SOCK_BODY), *first = malloc(65536);
  memset(body, 'y', SOCK_BODY);
  char ip[INET_ADDRSTRLEN];
  uint16_t port;
  int submitted = 0, answered = 0;
  for (int round = 0; round < 20000 && answered < SOCK_NREQ; round++) {
    /* Alternate: the caller receives the first datagram, or leaves all of them to the shim. */
    int moved = 0, n;
    if (round & 1) {
      int a = recv_one(cfd, first, 65536, ip, &port);
      moved += sbh3_conn_io(cli, cu, first, a > 0 ? (size_t)a : 0);
      int b = recv_one(sfd, first, 65536, ip, &port);
      moved += sbh3_server_io(srv, su, first, b > 0 ? (size_t)b : 0, ip, port);
    } else {
      moved += sbh3_conn_io(cli, cu, NULL, 0) + sbh3_server_io(srv, su, NULL, 0, NULL, 0);
    }
    while ((n = sbh3_server_poll(srv, ev, 1 << 20)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type != SBH3_EV_MESSAGE) continue;
        uint8_t hdr[64];
        size_t h = put_field(hdr, ":status", "200");
        sbh3_server_respond(srv, e.conn_id, e.stream_id, hdr, h, body, SOCK_BODY);
        moved++;
      }
    }
    while ((n = sbh3_conn_poll(cli, ev, 1 << 20)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type == SBH3_EV_CLOSED) round = 1 << 30;
        if (e.type == SBH3_EV_MESSAGE && e.body_len == SOCK_BODY && ++answered == SOCK_NREQ / 2) {
          /* UDP_SEGMENT sends now fail with EINVAL: the shim must fall back to one datagram each. */
          int one = 1;
          setsockopt(sfd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
          sbh3_conn_update_key(cli);
        }
        moved++;
      }
    }
    while (submitted < SOCK_NREQ) {
      uint8_t hdr[256];
      size_t h = 0;
      h += put_field(hdr + h, ":method", "GET");
      h += put_field(hdr + h, ":scheme", "https");
      h += put_field(hdr + h, ":authority", "localhost");
      h += put_field(hdr + h, ":path", "/payload");
      if (sbh3_conn_request(cli, hdr, h, NULL, 0) < 0) break;
      submitted++;
      moved++;
    }
    if (!moved) wait_readable(cfd, 2);
  }
  uint64_t st[SBH3_STAT_COUNT];
  uint8_t token[256];
  sbh3_conn_stats(cli, st, SBH3_STAT_COUNT);
  if (st[SBH3_STAT_RETRIES] != 1 || sbh3_conn_token(cli, token, sizeof(token)) <= 0) {
    fprintf(stderr, "sockets: %llu Retry, no NEW_TOKEN\n", (unsigned long long)st[SBH3_STAT_RETRIES]);
    answered = -1;
  }
  sbh3_conn_shutdown(cli);
  sbh3_conn_io(cli, cu, NULL, 0);
  wait_readable(sfd, 100);
  sbh3_server_io(srv, su, NULL, 0, NULL, 0);
  sbh3_server_close_all(srv);
  sbh3_server_io(srv, su, NULL, 0, NULL, 0);
  sbh3_conn_free(cli);
  sbh3_server_free(srv);
  sbh3_udp_free(su);
  sbh3_udp_free(cu);
  sbh3_udp_free(NULL);
  /* The shim left the sockets open: they are still ours to close. */
  if (close(sfd) != 0 || close(cfd) != 0) answered = -1;

  if (!refused_seen(ccfg, ev, 0) || !refused_seen(ccfg, ev, 1)) {
    fprintf(stderr, "no SBWIRE_ERR_REFUSED from a closed port\n");
    answered = -1;
  }
  sbh3_config_free(scfg);
  sbh3_config_free(ccfg);
  free(ev);
  free(body);
  free(first);
  return answered;
}

/*
 * One in-memory connection for the TLS phase: the client offers `ticket` (may be NULL), sends one
 * GET at once (0-RTT when resuming) and one after the handshake, checks both answers and the
 * exporter on both ends, and leaves with the server's new ticket in *out (malloc'd). Returns the
 * client's sbwire_tls_state bits, or -1.
 */
static int tls_connection(sbh3_server *srv, sbh3_config *ccfg, const uint8_t *ticket, size_t ticket_len,
                          uint8_t **out, size_t *out_len, int port) {
  sbh3_conn *cli = sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", (uint16_t)port, "127.0.0.1", 4433);
  if (!cli || (ticket && sbh3_conn_resume(cli, ticket, ticket_len) != 0)) return -1;
  uint8_t *pkt = malloc(65536), meta[64], *ev = malloc(1 << 16), hdr[256], sx[32], cx[32];
  size_t h = 0;
  h += put_field(hdr + h, ":method", "GET");
  h += put_field(hdr + h, ":scheme", "https");
  h += put_field(hdr + h, ":authority", "localhost");
  h += put_field(hdr + h, ":path", "/early");
  int early = ticket ? sbh3_conn_request(cli, hdr, h, NULL, 0) >= 0 : 0;
  int answered = 0, connected = 0, late = 0, state = -1;
  uint32_t server_conn = 0;
  for (int round = 0; round < 2000 && answered < early + 1; round++) {
    int n;
    while ((n = sbh3_conn_send(cli, pkt, 65536)) > 0) sbh3_server_recv(srv, pkt, (size_t)n, "127.0.0.1", (uint16_t)port);
    while ((n = sbh3_server_send(srv, pkt, 65536, meta, sizeof(meta))) > 0) sbh3_conn_recv(cli, pkt, (size_t)n);
    while ((n = sbh3_server_poll(srv, ev, 1 << 16)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type == SBH3_EV_CONNECTED) server_conn = e.conn_id;
        if (e.type != SBH3_EV_MESSAGE) continue;
        uint8_t rh[64];
        size_t rl = put_field(rh, ":status", "200");
        sbh3_server_respond(srv, e.conn_id, e.stream_id, rh, rl, (const uint8_t *)"ok", 2);
      }
    }
    while ((n = sbh3_conn_poll(cli, ev, 1 << 16)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type == SBH3_EV_MESSAGE) answered++;
        if (e.type == SBH3_EV_CONNECTED) connected = 1;
        if (e.type == SBH3_EV_EARLY_REJECTED) early = 0; /* the early GET is gone: only the late one is answered */
        if (e.type == SBH3_EV_CLOSED) round = 1 << 30;
      }
    }
    if (connected && !late && sbh3_conn_request(cli, hdr, h, NULL, 0) >= 0) late = 1;
  }
  /* Let the ticket (sent after the handshake) reach the client. */
  for (int round = 0; round < 20; round++) {
    int n;
    while ((n = sbh3_server_send(srv, pkt, 65536, meta, sizeof(meta))) > 0) sbh3_conn_recv(cli, pkt, (size_t)n);
    while ((n = sbh3_conn_send(cli, pkt, 65536)) > 0) sbh3_server_recv(srv, pkt, (size_t)n, "127.0.0.1", (uint16_t)port);
  }
  if (answered >= 1 && server_conn &&
      sbh3_conn_export(cli, (const uint8_t *)"EXPORTER_3GPP_N32_MASTER", 24, NULL, 0, cx, 32) == 32 &&
      sbh3_server_export(srv, server_conn, (const uint8_t *)"EXPORTER_3GPP_N32_MASTER", 24, NULL, 0, sx, 32) == 32 &&
      memcmp(cx, sx, 32) == 0)
    state = sbh3_conn_tls_state(cli);
  uint8_t subject[256];
  if (sbh3_conn_tls_info(cli, SBWIRE_TLS_INFO_PEER_SUBJECT, subject, sizeof(subject)) <= 0) state = -1;
  *out = malloc(65536);
  int tl = sbh3_conn_ticket(cli, *out, 65536);
  *out_len = tl > 0 ? (size_t)tl : 0;
  sbh3_conn_shutdown(cli);
  int n;
  while ((n = sbh3_conn_send(cli, pkt, 65536)) > 0) sbh3_server_recv(srv, pkt, (size_t)n, "127.0.0.1", (uint16_t)port);
  sbh3_conn_free(cli);
  free(pkt);
  free(ev);
  return state;
}

/* Tickets, resumption, accepted and refused 0-RTT, the exporter; returns 1 when all behaved. */
static int tls_phase(const uint8_t *ca, size_t ca_len, const uint8_t *cert, size_t cert_len, const uint8_t *key,
                     size_t key_len) {
  sbh3_config *scfg = sbh3_config_new(1), *nocfg = sbh3_config_new(1), *ccfg = sbh3_config_new(0);
  if (sbh3_config_set_cert(scfg, cert, cert_len, key, key_len) != 0 ||
      sbh3_config_set_cert(nocfg, cert, cert_len, key, key_len) != 0 || sbh3_config_add_ca(ccfg, ca, ca_len) <= 0 ||
      sbh3_config_set_tickets(scfg, 60) != 0 || sbh3_config_set_tickets(nocfg, 60) != 0 ||
      sbh3_config_set_early_data(scfg, 1, 10000) != 0 || sbh3_config_set_early_data(ccfg, 1, 0) != 0 ||
      sbh3_config_set_early_data(scfg, 1, 0) != SBWIRE_ERR_INVALID)
    return 0;
  sbh3_server *srv = sbh3_server_new(scfg, "127.0.0.1", 4433), *nosrv = sbh3_server_new(nocfg, "127.0.0.1", 4433);
  uint8_t *t1 = NULL, *t2 = NULL, *t3 = NULL;
  size_t l1 = 0, l2 = 0, l3 = 0;
  int ok = 1;
  int full = tls_connection(srv, ccfg, NULL, 0, &t1, &l1, 6001);
  int resumed = tls_connection(srv, ccfg, t1, l1, &t2, &l2, 6002);
  /* A server with another ticket key cannot resume it: full handshake, the early GET sent again. */
  int foreign = tls_connection(nosrv, ccfg, t1, l1, &t3, &l3, 6003);
  if (full < 0 || (full & SBWIRE_TLS_RESUMED) || !l1) ok = 0;
  if (resumed < 0 || !(resumed & SBWIRE_TLS_RESUMED) || !(resumed & SBWIRE_TLS_EARLY_ACCEPTED)) ok = 0;
  if (foreign < 0 || (foreign & SBWIRE_TLS_RESUMED) || (foreign & SBWIRE_TLS_EARLY_ACCEPTED)) ok = 0;
  if (!ok) fprintf(stderr, "tls: states full %d resumed %d foreign %d, ticket %zu B\n", full, resumed, foreign, l1);
  uint8_t bad[80] = {0};
  sbh3_conn *c = sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", 6004, "127.0.0.1", 4433);
  if (!c || sbh3_conn_resume(c, bad, sizeof(bad)) != SBWIRE_ERR_INVALID) ok = 0;
  sbh3_conn_free(c);
  free(t1);
  free(t2);
  free(t3);
  sbh3_server_free(srv);
  sbh3_server_free(nosrv);
  sbh3_config_free(scfg);
  sbh3_config_free(nocfg);
  sbh3_config_free(ccfg);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CA.pem SERVER.pem SERVER-KEY.pem\n", argv[0]);
    return 2;
  }
  size_t ca_len, cert_len, key_len;
  uint8_t *ca = read_file(argv[1], &ca_len), *cert = read_file(argv[2], &cert_len), *key = read_file(argv[3], &key_len);
  if (!ca || !cert || !key) {
    fprintf(stderr, "cannot read PEM files\n");
    return 2;
  }
  sbh3_config *scfg = sbh3_config_new(1), *ccfg = sbh3_config_new(0);
  if (sbh3_config_set_cert(scfg, cert, cert_len, key, key_len) != 0 || sbh3_config_add_ca(ccfg, ca, ca_len) <= 0 ||
      sbh3_config_set_max_body(scfg, LIMIT) != 0 || sbh3_config_set_send_queue(scfg, QUEUE, QUEUE, 30000) != 0) {
    fprintf(stderr, "cannot configure\n");
    return 2;
  }
  sbh3_server *srv = sbh3_server_new(scfg, "127.0.0.1", 4433);
  sbh3_conn *cli = sbh3_conn_new_client(ccfg, "localhost", "127.0.0.1", 5555, "127.0.0.1", 4433);
  sbh3_config_free(scfg); /* the server and the connection keep their own references */
  sbh3_config_free(ccfg);
  if (!srv || !cli) return 2;

  uint8_t *pkt = malloc(65536), meta[64], *ev = malloc(1 << 20), *body = malloc(100000);
  memset(body, 'x', 100000);
  int submitted = 0, answered = 0, ok = 1, cancelled = 0, nwait = 0, blocked = 0, too_large = 0;
  int64_t ids[NREQ];
  waiting_t wait[NREQ];
  /* Garbage first: it must be rejected without harm. */
  for (int i = 0; i < 200; i++) {
    for (int k = 0; k < 1300; k++) pkt[k] = (uint8_t)(rand() & 0xff);
    sbh3_server_recv(srv, pkt, (size_t)(1 + rand() % 1300), "127.0.0.9", 999);
  }
  for (int round = 0; round < 20000 && answered + cancelled < NREQ; round++) {
    int n, moved = 0;
    while ((n = sbh3_conn_send(cli, pkt, 65536)) > 0) {
      sbh3_server_recv(srv, pkt, (size_t)n, "127.0.0.1", 5555);
      moved++;
    }
    while ((n = sbh3_server_send(srv, pkt, 65536, meta, sizeof(meta))) > 0) {
      uint32_t cid;
      moved++;
      memcpy(&cid, meta, 4);
      if (cid != 0) sbh3_conn_recv(cli, pkt, (size_t)n);
    }
    while ((n = sbh3_server_poll(srv, ev, 1 << 20)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type == SBH3_EV_TOO_LARGE) too_large++;
        if (e.type != SBH3_EV_MESSAGE && e.type != SBH3_EV_TOO_LARGE) continue;
        if (e.body_len > 0 && nwait < NREQ) { /* echo, through the waiting list when the queue is full */
          wait[nwait] = (waiting_t){e.conn_id, e.stream_id, malloc(e.body_len), e.body_len};
          memcpy(wait[nwait++].body, e.body, e.body_len);
        } else {
          uint8_t hdr[64];
          size_t h = put_field(hdr, ":status", e.type == SBH3_EV_TOO_LARGE ? "413" : "200");
          sbh3_server_respond(srv, e.conn_id, e.stream_id, hdr, h, NULL, 0);
        }
      }
    }
    int before = nwait;
    nwait = retry_waiting(srv, wait, nwait);
    if (nwait) blocked++;
    moved += before - nwait;
    while (round < (1 << 30) && (n = sbh3_conn_poll(cli, ev, 1 << 20)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(ev, (size_t)n, &off, &e);) {
        if (e.type == SBH3_EV_CLOSED) {
          uint8_t why[256];
          sbh3_conn_error(cli, why, sizeof(why));
          fprintf(stderr, "connection closed early: %s\n", (char *)why);
          ok = 0;
          round = 1 << 30;
          break;
        }
        if (e.type != SBH3_EV_MESSAGE) continue;
        for (int i = 0; i < submitted; i++)
          if (ids[i] == e.stream_id && answer_size(i) != e.body_len) {
            fprintf(stderr, "request %d: got %u bytes, want %zu\n", i, e.body_len, answer_size(i));
            ok = 0;
          }
        answered++;
      }
    }
    while (submitted < NREQ) {
      uint8_t hdr[256];
      size_t h = 0;
      h += put_field(hdr + h, ":method", "POST");
      h += put_field(hdr + h, ":scheme", "https");
      h += put_field(hdr + h, ":authority", "localhost");
      h += put_field(hdr + h, ":path", "/echo");
      int64_t id = sbh3_conn_request(cli, hdr, h, body, body_size(submitted));
      if (id == SBWIRE_ERR_STREAM_BLOCKED) break;
      if (id < 0) {
        fprintf(stderr, "request failed: %lld\n", (long long)id);
        return 1;
      }
      ids[submitted] = id;
      if (submitted == 7) { /* abandon one request right away */
        sbh3_conn_cancel(cli, id);
        cancelled++;
      }
      submitted++;
    }
    if (!moved) {
      /* Nothing to exchange: wait for the earlier timer (pacing, ACK delay), then run both. */
      int a = sbh3_conn_timeout_ms(cli), b = sbh3_server_timeout_ms(srv);
      int ms = a < 0 ? b : b < 0 ? a : (a < b ? a : b);
      if (ms > 0) {
        struct timespec ts = {0, (long)(ms > 50 ? 50 : ms) * 1000000L};
        nanosleep(&ts, NULL);
      }
      sbh3_conn_on_timeout(cli);
      sbh3_server_on_timeout(srv);
    }
  }
  if (!blocked || !too_large) {
    fprintf(stderr, "the send queue never filled (%d) or no body was too large (%d)\n", blocked, too_large);
    ok = 0;
  }
  for (int i = 0; i < nwait; i++) free(wait[i].body);
  if (answered + cancelled < NREQ) {
    fprintf(stderr, "only %d of %d answered\n", answered, NREQ - cancelled);
    ok = 0;
  }
  /* Graceful close on both sides, with the close packets delivered. */
  sbh3_conn_shutdown(cli);
  int n;
  while ((n = sbh3_conn_send(cli, pkt, 65536)) > 0) sbh3_server_recv(srv, pkt, (size_t)n, "127.0.0.1", 5555);
  sbh3_server_close_all(srv);
  while ((n = sbh3_server_send(srv, pkt, 65536, meta, sizeof(meta))) > 0) {
  }
  sbh3_conn_free(cli);
  sbh3_server_free(srv);
  sbh3_conn_free(NULL);
  sbh3_server_free(NULL);
  sbh3_config_free(NULL);
  if (!tls_phase(ca, ca_len, cert, cert_len, key, key_len)) {
    fprintf(stderr, "tls phase failed\n");
    ok = 0;
  }
  int sock_answered = socket_phase(ca, ca_len, cert, cert_len, key, key_len);
  if (sock_answered != SOCK_NREQ) {
    fprintf(stderr, "sockets: %d of %d answered\n", sock_answered, SOCK_NREQ);
    ok = 0;
  }
  free(pkt);
  free(ev);
  free(body);
  free(ca);
  free(cert);
  free(key);
  if (ok) printf("ok: %d answered, %d cancelled; sockets: %d answered, refused seen\n", answered, cancelled, sock_answered);
  return ok ? 0 : 1;
}
