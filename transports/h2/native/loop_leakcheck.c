/*
 * Leak check driver for the h2c server on the module's own I/O thread
 * (sbh2_loop.c, sbloop.c): a listener on a loopback port, the shim's client
 * over a real socket getting a lent 20000-byte answer, a client that sends
 * junk (closed by the loop), a client left with a request unanswered when
 * everything is freed. Run under valgrind by transports/h2/leakcheck_test.ts;
 * prints one summary line; exits 1 on a wrong answer.
 */
#define _GNU_SOURCE
#include "sbh2.h"
#include "sbh2_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_int wakes;
static void wake(void) { atomic_fetch_add(&wakes, 1); }

static const uint8_t lent_body[20000] = {'L'};
static uint8_t buf[1 << 20];
static int connected, closed, messages, released, bad;

static uint8_t *block(const char *method, const char *path, const char *authority, size_t *len) {
  const char *f[][2] = {{":method", method}, {":scheme", "http"}, {":authority", authority}, {":path", path}};
  size_t off = 0;
  uint8_t *b = malloc(512);
  for (int i = 0; i < 4; i++) {
    uint32_t nl = (uint32_t)strlen(f[i][0]), vl = (uint32_t)strlen(f[i][1]);
    memcpy(b + off, &nl, 4);
    memcpy(b + off + 4, &vl, 4);
    memcpy(b + off + 8, f[i][0], nl);
    memcpy(b + off + 8 + nl, f[i][1], vl);
    off += 8 + nl + vl;
  }
  *len = off;
  return b;
}

/* Takes the listener's events under the lock; answers /lent with the lent body, leaves /hold unanswered. */
static void serve(sbloop *l, sbh2_listener *ls, const uint8_t *status, size_t sl) {
  sbloop_lock(l);
  int n;
  while ((n = sbh2_listener_poll(ls, buf, sizeof buf)) > 0) {
    for (size_t off = 0; off < (size_t)n;) {
      sbwire_event e;
      if (!sbwire_next_event(buf, (size_t)n, &off, &e)) {
        bad++;
        break;
      }
      if (e.conn_id == 0) bad++;
      if (e.type == SBWIRE_EV_CONNECTED) connected++;
      else if (e.type == SBWIRE_EV_CLOSED) closed++;
      else if (e.type == SBWIRE_EV_RELEASED) released++;
      else if (e.type == SBWIRE_EV_MESSAGE) {
        messages++;
        if (memmem(e.hdr, e.hdr_len, "/lent", 5) &&
            sbh2_listener_respond(ls, e.conn_id, (int32_t)e.stream_id, status, (uint32_t)sl, lent_body,
                                  sizeof lent_body, 7) != 0)
          bad++;
      }
    }
  }
  sbloop_unlock(l);
  sbloop_flush(l);
}

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) bad++;
  return fd;
}

/* Writes the client's output to fd. */
static void client_send(sbh2_conn *c, int fd) {
  int n;
  while ((n = sbh2_conn_send(c, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)n) != n) bad++;
}

int main(void) {
  sbh2_server *srv = sbh2_server_new();
  sbh2_listener *ls = sbh2_listener_open("127.0.0.1", 0);
  sbloop *l = ls ? sbh2_server_loop_new(srv, ls, wake) : NULL;
  if (!l || sbloop_start(l) != 0) {
    printf("listener: cannot start\n");
    return 1;
  }
  int port = sbh2_listener_port(ls);
  size_t sl, gl, hl;
  uint8_t *status = malloc(64);
  uint32_t k = 7, v = 3;
  memcpy(status, &k, 4);
  memcpy(status + 4, &v, 4);
  memcpy(status + 8, ":status200", 10);
  sl = 18;
  uint8_t *get = block("GET", "/lent", "loop", &gl);
  uint8_t *hold = block("GET", "/hold", "loop", &hl);

  /* 1. a request answered with a lent body, over a real socket */
  int fd = dial(port);
  sbh2_conn *c = sbh2_conn_new(1u << 20, 0);
  sbh2_conn_request(c, get, (uint32_t)gl, NULL, 0);
  client_send(c, fd);
  int answered = 0;
  for (int round = 0; round < 500 && !answered; round++) {
    serve(l, ls, status, sl);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    sbh2_conn_recv(c, buf, (uint32_t)n);
    client_send(c, fd);
    int m;
    while ((m = sbh2_conn_poll(c, buf, sizeof buf)) > 0) {
      sbwire_event e;
      for (size_t off = 0; sbwire_next_event(buf, (size_t)m, &off, &e);)
        if (e.type == SBWIRE_EV_MESSAGE) answered = e.body_len == sizeof lent_body;
    }
  }

  /* 2. junk: closed by the loop; 3. a request left unanswered when everything is freed */
  int junk = dial(port);
  if (write(junk, "GET / HTTP/1.1\r\n\r\n", 18) != 18) bad++;
  int fd2 = dial(port);
  sbh2_conn *c2 = sbh2_conn_new(1u << 20, 0);
  sbh2_conn_request(c2, hold, (uint32_t)hl, NULL, 0);
  client_send(c2, fd2);
  for (int round = 0; round < 500 && (closed < 1 || messages < 2 || released < 1); round++) {
    serve(l, ls, status, sl);
    usleep(2000);
  }
  sbloop_lock(l);
  int64_t conns = sbh2_listener_stat(ls, SBH2_STAT_CONNECTIONS);
  sbloop_unlock(l);

  sbloop_stop(l);
  sbloop_free(l);
  sbh2_listener_free(ls);
  sbh2_server_free(srv);
  sbh2_conn_free(c);
  sbh2_conn_free(c2);
  close(fd);
  close(fd2);
  close(junk);
  free(status);
  free(get);
  free(hold);
  int wrong = bad || !answered || connected != 3 || closed != 1 || messages != 2 || released != 1 || conns != 2 ||
              atomic_load(&wakes) < 1;
  printf("listener: %s, %d connected, %d closed, %d requests, %d released, %d held; bad %d\n",
         answered ? "answered" : "NOT answered", connected, closed, messages, released, (int)conns, bad);
  return wrong;
}
