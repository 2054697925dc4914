/*
 * Interop probe for QUIC interop runner cases that need a misbehaving client:
 *
 *   sbilab_h3_probe badtp CASE HOST PORT
 *
 * sends a client Initial whose ClientHello (one packet) carries an invalid
 * transport parameter, CASE one of ack_delay_exponent (21), max_udp_payload_size
 * (1199), max_ack_delay (16384 ms) or active_connection_id_limit (1), and waits
 * up to 3 s for the server's answer. Prints one line, "closed in N ms: TEXT"
 * (TEXT as sbh3_conn_error gives it, with the peer's error code), or "no answer
 * in 3000 ms". Exit 0 when the server closed, 1 when it did not answer, 2 on
 * bad usage. It links the module's sources to reach their test hook.
 */
#define _GNU_SOURCE
#include "sbh3_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *bad_case;

/* Makes one transport parameter invalid (RFC 9000 §18.2), as named by bad_case. */
static void make_invalid(ngtcp2_transport_params *p) {
  if (strcmp(bad_case, "ack_delay_exponent") == 0) p->ack_delay_exponent = 21;
  else if (strcmp(bad_case, "max_udp_payload_size") == 0) p->max_udp_payload_size = 1199;
  else if (strcmp(bad_case, "max_ack_delay") == 0) p->max_ack_delay = 16384 * NGTCP2_MILLISECONDS;
  else if (strcmp(bad_case, "active_connection_id_limit") == 0) p->active_connection_id_limit = 1;
}

/* Milliseconds on the monotonic clock. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs the badtp case; returns the exit status. */
static int badtp(const char *host, uint16_t port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)}, me = {.sin_family = AF_INET};
  socklen_t mlen = sizeof(me);
  if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
      getsockname(fd, (struct sockaddr *)&me, &mlen) != 0) {
    fprintf(stderr, "cannot reach %s:%u\n", host, port);
    return 2;
  }
  char local[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &me.sin_addr, local, sizeof(local));
  sbh3_config *cfg = sbh3_config_new(0);
  sbh3_config_set_verify(cfg, SBWIRE_TLS_VERIFY_NONE);
  client_params_hook = make_invalid;
  sbh3_conn *c = sbh3_conn_new_client(cfg, "localhost", local, ntohs(me.sin_port), host, port);
  client_params_hook = NULL;
  sbh3_config_free(cfg);
  if (!c) return 2;
  uint8_t buf[65536];
  int n, status = 1;
  double start = now_ms();
  while ((n = sbh3_conn_send(c, buf, sizeof(buf))) > 0) send(fd, buf, (size_t)n, 0);
  while (status == 1 && now_ms() - start < 3000) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t got = recv(fd, buf, sizeof(buf), 0);
    if (got <= 0) continue;
    if (sbh3_conn_recv(c, buf, (size_t)got) < 0) {
      char why[256];
      sbh3_conn_error(c, (uint8_t *)why, sizeof(why));
      printf("closed in %.0f ms: %s\n", now_ms() - start, why);
      status = 0;
    }
  }
  if (status) printf("no answer in 3000 ms\n");
  sbh3_conn_free(c);
  close(fd);
  return status;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "badtp") == 0) {
    bad_case = argv[2];
    if (strcmp(bad_case, "ack_delay_exponent") && strcmp(bad_case, "max_udp_payload_size") &&
        strcmp(bad_case, "max_ack_delay") && strcmp(bad_case, "active_connection_id_limit")) {
      fprintf(stderr, "unknown case %s\n", bad_case);
      return 2;
    }
    return badtp(argv[3], (uint16_t)atoi(argv[4]));
  }
  fprintf(stderr, "usage: %s badtp CASE HOST PORT\n", argc > 0 ? argv[0] : "sbilab_h3_probe");
  return 2;
}
