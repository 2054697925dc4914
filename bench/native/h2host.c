/*
 * sbilab's HTTP/2 server module (sbh2: h2c, or h2 over TLS with its GnuTLS
 * record layer sbh2_tls) hosted by a plain C loop instead of Deno, for the
 * `peers` scenario and the stacks-alone arms of `rtt`: epoll over the
 * listening socket and its connections; on each wake-up the calls the Deno
 * server makes (read, sbh2_sconn_recv or sbh2_sconn_recv_tls,
 * sbh2_sconn_poll, sbh2_sconn_respond, sbh2_sconn_send or
 * sbh2_sconn_send_tls and a write), with no JavaScript, no handler and no
 * runtime around them. Every request gets SIZE bytes of 'a' with status 200.
 * Set against nghttpd under h2load it says what the module costs; set
 * against sbilab's h2 server, what hosting it in Deno adds.
 *
 * Usage: sbilab_h2host PORT SIZE [CERT.pem KEY.pem]
 * With a certificate and key it speaks h2 over TLS 1.3 (ALPN h2), else h2c.
 * Prints "listening" once bound; exits 0 on SIGTERM or SIGINT after freeing
 * every connection.
 */
#define _GNU_SOURCE
#include "../../transports/h2/native/sbh2_server.h"
#include "../../transports/h2/native/sbh2_tls.h"
#include "host_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SIZE (16u << 20)
#define IO_CAP (256u << 10)
#define MAX_EVENTS 64

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* One accepted connection: its session and the output the kernel has not taken yet. */
typedef struct conn {
  int fd;
  sbh2_sconn *s;
  sbh2_tls *tls; /* NULL for h2c */
  uint8_t *out;
  uint32_t out_off, out_len;
  int want_out;
  struct conn *prev, *next;
} conn_t;

static conn_t *g_conns;
static uint8_t *g_in, *g_events, *g_body, g_head[HOST_HEAD_CAP];
static size_t g_head_len, g_size;
static sbh2_tls_config *g_tls; /* NULL for h2c */

static void conn_free(int ep, conn_t *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  sbh2_sconn_free(c->s);
  sbh2_tls_free(c->tls);
  if (c->prev) c->prev->next = c->next;
  else g_conns = c->next;
  if (c->next) c->next->prev = c->prev;
  free(c->out);
  free(c);
}

/* Writes what the session has; returns -1 once the connection is finished or broken. */
static int conn_flush(int ep, conn_t *c) {
  for (;;) {
    while (c->out_off < c->out_len) {
      ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c->want_out) {
          struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
          c->want_out = 1;
        }
        return 0;
      }
      if (k < 0) return -1;
      c->out_off += (uint32_t)k;
    }
    int n = c->tls ? sbh2_sconn_send_tls(c->s, c->tls, c->out, IO_CAP)
                   : sbh2_sconn_send(c->s, c->out, IO_CAP);
    if (n == SBWIRE_ERR_DONE) break;
    if (n < 0) return -1;
    c->out_off = 0;
    c->out_len = (uint32_t)n;
  }
  if (c->want_out) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = 0;
  }
  return 0;
}

/* Answers every request the session has ready. */
static void conn_answer(conn_t *c) {
  int n;
  while ((n = sbh2_sconn_poll(c->s, g_events, IO_CAP)) > 0) {
    for (int off = 0; off + SBWIRE_EVENT_HEADER_LEN <= n;) {
      uint32_t type, conn_id, head_len, body_len;
      int64_t stream_id;
      host_event(g_events + off, &type, &conn_id, &stream_id, &head_len, &body_len);
      if (type == SBWIRE_EV_MESSAGE) {
        sbh2_sconn_respond(c->s, (int32_t)stream_id, g_head, (uint32_t)g_head_len, g_body,
                           (uint32_t)g_size, 0);
      }
      off += SBWIRE_EVENT_HEADER_LEN + (int)head_len + (int)body_len;
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 5) {
    fprintf(stderr, "usage: sbilab_h2host PORT SIZE [CERT.pem KEY.pem]\n");
    return 2;
  }
  long port = strtol(argv[1], NULL, 10), size = strtol(argv[2], NULL, 10);
  if (port < 1 || port > 65535 || size < 0 || size > (long)MAX_SIZE) {
    fprintf(stderr, "sbilab_h2host: bad port or size\n");
    return 2;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  int rc = 1, one = 1;
  g_size = (size_t)size;
  if (argc == 5) {
    size_t cert_len = 0, key_len = 0;
    uint8_t *cert = host_read_file(argv[3], &cert_len), *key = host_read_file(argv[4], &key_len);
    int ok = cert != NULL && key != NULL;
    if (!ok) fprintf(stderr, "sbilab_h2host: cannot read the certificate or key\n");
    if (ok && ((g_tls = sbh2_tls_config_new(1)) == NULL ||
               sbh2_tls_config_set_cert(g_tls, cert, (uint32_t)cert_len, key, (uint32_t)key_len) < 0)) {
      fprintf(stderr, "sbilab_h2host: the certificate or key was refused\n");
      ok = 0;
    }
    free(cert);
    free(key);
    if (!ok) {
      sbh2_tls_config_free(g_tls);
      return 1;
    }
  }
  sbh2_server *srv = sbh2_server_new();
  g_in = malloc(IO_CAP);
  g_events = malloc(IO_CAP);
  g_body = malloc(g_size + 1);
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (srv == NULL || g_in == NULL || g_events == NULL || g_body == NULL || lfd < 0 || ep < 0) goto out;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 512) < 0) {
    fprintf(stderr, "sbilab_h2host: cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
    goto out;
  }
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  memset(g_body, 'a', g_size);
  g_head_len = host_head(g_head, size);
  printf("listening on 127.0.0.1:%ld\n", port);
  fflush(stdout);

  struct epoll_event evs[MAX_EVENTS];
  while (!g_stop) {
    int n = epoll_wait(ep, evs, MAX_EVENTS, 1000);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      if (c == NULL) {
        int fd;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          c = calloc(1, sizeof *c);
          if (c != NULL) c->out = malloc(IO_CAP);
          if (c != NULL && c->out != NULL) c->s = sbh2_sconn_new(srv);
          if (c != NULL && c->s != NULL && g_tls != NULL) c->tls = sbh2_tls_new(g_tls, NULL, NULL, 0);
          if (c == NULL || c->out == NULL || c->s == NULL || (g_tls != NULL && c->tls == NULL)) {
            if (c != NULL) {
              if (c->s != NULL) sbh2_sconn_free(c->s);
              free(c->out);
            }
            free(c);
            close(fd);
            continue;
          }
          c->fd = fd;
          c->next = g_conns;
          if (g_conns) g_conns->prev = c;
          g_conns = c;
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
          if (conn_flush(ep, c) < 0) conn_free(ep, c); /* the server's SETTINGS */
        }
        continue;
      }
      int dead = 0;
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        ssize_t k = read(c->fd, g_in, IO_CAP);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) dead = 1;
        else if (k > 0 && (c->tls ? sbh2_sconn_recv_tls(c->s, c->tls, g_in, (uint32_t)k)
                                  : sbh2_sconn_recv(c->s, g_in, (uint32_t)k)) < 0)
          dead = 1;
        else conn_answer(c);
      }
      /* After a session error, send drains the GOAWAY and then reports CLOSED. */
      if (conn_flush(ep, c) < 0 || dead) conn_free(ep, c);
    }
  }
  rc = 0;
out:
  while (g_conns) conn_free(ep, g_conns);
  if (srv != NULL) sbh2_server_free(srv);
  sbh2_tls_config_free(g_tls);
  if (lfd >= 0) close(lfd);
  if (ep >= 0) close(ep);
  free(g_in);
  free(g_events);
  free(g_body);
  return rc;
}
