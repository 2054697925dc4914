/*
 * Leak check driver for the h2 client on the module's own I/O thread
 * (sbh2_client_loop.c, sbloop.c), against the h2c listener on its own thread
 * (sbh2_loop.c): a client socket that gets an answer, one freed with a
 * request unanswered, one refused (nothing listens). Run under valgrind by
 * transports/h2/leakcheck_test.ts; prints one summary line; exits 1 on a
 * wrong answer.
 */
#define _GNU_SOURCE
#include "sbh2_tls.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int server_wakes, client_wakes;
static void server_wake(void) { atomic_fetch_add(&server_wakes, 1); }
static void client_wake(void) { atomic_fetch_add(&client_wakes, 1); }

static uint8_t buf[1 << 20];
static int bad, requests;

static uint8_t *block(const char *path, size_t *len) {
  const char *f[][2] = {{":method", "GET"}, {":scheme", "http"}, {":authority", "loop"}, {":path", path}};
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

/* Answers /answer with 3000 bytes (copied), leaves /hold unanswered. */
static void serve(sbloop *l, sbh2_listener *ls) {
  static const uint8_t status[] = {7, 0, 0, 0, 3, 0, 0, 0, ':', 's', 't', 'a', 't', 'u', 's', '2', '0', '0'};
  static uint8_t body[3000];
  sbloop_lock(l);
  int n;
  while ((n = sbh2_listener_poll(ls, buf, sizeof buf)) > 0) {
    sbwire_event e;
    for (size_t off = 0; sbwire_next_event(buf, (size_t)n, &off, &e);) {
      if (e.type != SBWIRE_EV_MESSAGE) continue;
      requests++;
      if (memmem(e.hdr, e.hdr_len, "/answer", 7) &&
          sbh2_listener_respond(ls, e.conn_id, (int32_t)e.stream_id, status, sizeof status, body, sizeof body, 0) < 0)
        bad++;
    }
  }
  sbloop_unlock(l);
  sbloop_flush(l);
}

/* A client connection on its own loop: the session, the socket and the loop. */
struct client {
  sbh2_conn *c;
  sbh2_csock *cs;
  sbloop *l;
};

static int client_open(struct client *k, int port) {
  k->c = sbh2_conn_new(1u << 20, 0);
  k->cs = sbh2_csock_open("127.0.0.1", (uint16_t)port);
  k->l = k->c && k->cs ? sbh2_conn_loop_new(k->c, NULL, k->cs, client_wake) : NULL;
  return k->l && sbloop_start(k->l) == 0 ? 0 : -1;
}

/* Bytes of the answer the client got (0: none yet). */
static int client_answer(struct client *k) {
  int got = 0, m;
  sbloop_lock(k->l);
  while ((m = sbh2_conn_poll(k->c, buf, sizeof buf)) > 0) {
    sbwire_event e;
    for (size_t off = 0; sbwire_next_event(buf, (size_t)m, &off, &e);)
      if (e.type == SBWIRE_EV_MESSAGE) got = (int)e.body_len;
  }
  sbloop_unlock(k->l);
  return got;
}

static void client_free(struct client *k) {
  sbloop_stop(k->l);
  sbloop_free(k->l);
  sbh2_csock_free(k->cs);
  sbh2_conn_free(k->c);
}

int main(void) {
  sbh2_server *srv = sbh2_server_new();
  sbh2_listener *ls = sbh2_listener_open("127.0.0.1", 0);
  sbloop *l = ls ? sbh2_server_loop_new(srv, ls, server_wake) : NULL;
  if (!l || sbloop_start(l) != 0) {
    printf("client loop: cannot start the listener\n");
    return 1;
  }
  int port = sbh2_listener_port(ls);
  size_t al, hl;
  uint8_t *answer = block("/answer", &al), *hold = block("/hold", &hl);

  /* 1. a request answered; 2. a request left unanswered at free */
  struct client a, h;
  if (client_open(&a, port) != 0 || client_open(&h, port) != 0) bad++;
  sbloop_lock(a.l);
  if (sbh2_conn_request(a.c, answer, (uint32_t)al, NULL, 0) < 0) bad++;
  sbloop_unlock(a.l);
  sbloop_flush(a.l);
  sbloop_lock(h.l);
  if (sbh2_conn_request(h.c, hold, (uint32_t)hl, NULL, 0) < 0) bad++;
  sbloop_unlock(h.l);
  sbloop_flush(h.l);
  int got = 0;
  for (int round = 0; round < 500 && (!got || requests < 2); round++) {
    serve(l, ls);
    if (!got) got = client_answer(&a);
    usleep(2000);
  }

  /* 3. refused: nothing listens on the port of a listener freed at once */
  sbh2_listener *gone = sbh2_listener_open("127.0.0.1", 0);
  int gone_port = sbh2_listener_port(gone);
  sbh2_listener_free(gone);
  struct client r;
  if (client_open(&r, gone_port) != 0) bad++;
  int state = 0;
  for (int round = 0; round < 500 && !(state & SBH2_CSOCK_FAILED); round++) {
    sbloop_lock(r.l);
    state = sbh2_csock_state(r.cs);
    sbloop_unlock(r.l);
    usleep(2000);
  }
  uint8_t why[256];
  int wl = sbh2_csock_error(r.cs, why, sizeof why);

  client_free(&a);
  client_free(&h);
  client_free(&r);
  sbloop_stop(l);
  sbloop_free(l);
  sbh2_listener_free(ls);
  sbh2_server_free(srv);
  free(answer);
  free(hold);
  int wrong = bad || got != 3000 || requests != 2 || !(state & SBH2_CSOCK_FAILED) || atomic_load(&client_wakes) < 3;
  printf("client loop: answer %d B, %d requests, refused: %.*s; bad %d\n", got, requests, wl > 0 ? wl : 0,
         (const char *)why, bad);
  return wrong;
}
