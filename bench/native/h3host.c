/*
 * sbilab's HTTP/3 module (sbh3) hosted by a plain C loop instead of Deno, for
 * the `peers` scenario: the same calls the Deno server makes on each wake-up
 * (wait for the socket, sbh3_server_io_defer, sbh3_server_poll,
 * sbh3_server_respond, sbh3_server_flush), with no JavaScript, no handler and
 * no runtime around them. Every request gets SIZE bytes of 'a' with status
 * 200. Set against gtlsserver (ngtcp2's own example server) under the same
 * load, it says what the module costs; set against sbilab's h3 server, what
 * hosting it in Deno adds.
 *
 * Usage: sbilab_h3host CERT.pem KEY.pem PORT SIZE
 * Prints "listening" once bound; exits 0 on SIGTERM or SIGINT after freeing
 * the server.
 */
#include "../../transports/h3/native/sbh3.h"
#include "host_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SIZE (16u << 20)
#define EVENT_CAP (1u << 20)

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: sbilab_h3host CERT.pem KEY.pem PORT SIZE\n");
    return 2;
  }
  long port = strtol(argv[3], NULL, 10), size = strtol(argv[4], NULL, 10);
  if (port < 1 || port > 65535 || size < 0 || size > (long)MAX_SIZE) {
    fprintf(stderr, "sbilab_h3host: bad port or size\n");
    return 2;
  }
  size_t cert_len = 0, key_len = 0;
  uint8_t *cert = host_read_file(argv[1], &cert_len), *key = host_read_file(argv[2], &key_len);
  if (cert == NULL || key == NULL) {
    fprintf(stderr, "sbilab_h3host: cannot read the certificate or key\n");
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  int rc = 1;
  sbh3_config *cfg = sbh3_config_new(1);
  sbh3_udp *u = NULL;
  sbh3_server *srv = NULL;
  uint8_t *events = malloc(EVENT_CAP), *body = malloc((size_t)size + 1);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (cfg == NULL || events == NULL || body == NULL || fd < 0) goto out;
  if (sbh3_config_set_cert(cfg, cert, cert_len, key, key_len) < 0) {
    fprintf(stderr, "sbilab_h3host: the certificate or key was refused\n");
    goto out;
  }
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
    fprintf(stderr, "sbilab_h3host: cannot bind 127.0.0.1:%ld: %s\n", port, strerror(errno));
    goto out;
  }
  u = sbh3_udp_adopt("127.0.0.1", (uint16_t)port);
  srv = sbh3_server_new(cfg, "127.0.0.1", (uint16_t)port);
  if (u == NULL || srv == NULL) {
    fprintf(stderr, "sbilab_h3host: the module refused the socket or the server\n");
    goto out;
  }
  memset(body, 'a', (size_t)size);
  uint8_t head[HOST_HEAD_CAP];
  size_t head_len = host_head(head, size);
  printf("listening on 127.0.0.1:%ld\n", port);
  fflush(stdout);

  while (!g_stop) {
    int ms = sbh3_server_timeout_ms(srv);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms < 0 || ms > 1000 ? 1000 : ms) < 0 && errno != EINTR) break;
    sbh3_server_io_defer(srv, u, NULL, 0, NULL, 0);
    int n;
    while ((n = sbh3_server_poll(srv, events, EVENT_CAP)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(events, (size_t)n, &off, &e);) {
        if (e.type != SBH3_EV_MESSAGE) continue;
        /* A full send queue or a stream gone meanwhile: the client retries or has left. */
        sbh3_server_respond(srv, e.conn_id, e.stream_id, head, head_len, body, (size_t)size);
      }
    }
    sbh3_server_flush(srv, u);
  }
  rc = 0;
out:
  if (srv != NULL) sbh3_server_free(srv);
  if (u != NULL) sbh3_udp_free(u);
  if (cfg != NULL) sbh3_config_free(cfg);
  if (fd >= 0) close(fd);
  free(events);
  free(body);
  free(cert);
  free(key);
  return rc;
}
