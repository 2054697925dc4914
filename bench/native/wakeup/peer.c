/*
 * The wake-up probe's peer, two programs in one:
 *
 *   sbilab_wakeup_peer ping PORT COUNT SIZE WARMUP MAX_MS [BURST]
 *     sends BURST (default 1) SIZE-byte datagrams marked ECT(0) to
 *     127.0.0.1:PORT back to back, each numbered in its first four bytes, and
 *     waits until the same bytes of each came back; prints the time of each
 *     recorded burst in nanoseconds (a round-trip time when BURST is 1), one
 *     per line, then one summary line "# sent=N answered=N stray=N wrong=N
 *     marked=N", and ends the echo with a zero-length datagram. The warm-up
 *     (WARMUP bursts) and the recorded loop (COUNT bursts) get MAX_MS each. A
 *     reply that does not come within 5 s ends the run with exit status 1.
 *
 *   sbilab_wakeup_peer echo
 *     the kernel floor: binds a UDP socket on 127.0.0.1, prints its port on
 *     one line, and sends every datagram back until a zero-length one arrives.
 *
 * "stray" counts replies whose number is not the one awaited (a duplicate or
 * a late one), "wrong" replies with the right number and other bytes, and
 * "marked" replies that came back marked ECT(0). Exit status 2 on bad arguments.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 1400
#define MAX_BURST 64

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what) {
  fprintf(stderr, "wakeup_peer: %s: %s\n", what, strerror(errno));
  return 1;
}

static int bound_socket(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
  return fd;
}

static int echo(void) {
  static char buf[65536];
  int fd = bound_socket();
  if (fd < 0) return fail("socket");
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &alen);
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  for (;;) {
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&peer, len);
  }
  close(fd);
  return 0;
}

/* Receives one datagram and its TOS byte (-1 if none came); returns its length or -1. */
static ssize_t recv_tos(int fd, char *buf, size_t cap, int *tos) {
  union {
    char b[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {.iov_base = buf, .iov_len = cap};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                     .msg_controllen = sizeof ctl.b};
  ssize_t r = recvmsg(fd, &m, 0);
  *tos = -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); r >= 0 && c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) *tos = *(uint8_t *)CMSG_DATA(c);
  }
  return r;
}

static int ping(long port, long count, long size, long warmup, long max_ms, long burst) {
  int fd = bound_socket();
  if (fd < 0) return fail("socket");
  int one = 1, ect0 = 0x02;
  setsockopt(fd, IPPROTO_IP, IP_TOS, &ect0, sizeof ect0);
  setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) return fail("connect");
  static char out[MAX_SIZE], in[MAX_SIZE + 1];
  for (long i = 0; i < size; i++) out[i] = (char)('a' + i % 26);
  uint64_t *samples = calloc((size_t)count, sizeof *samples);
  if (!samples) return fail("calloc");
  long n = 0, sent = 0, answered = 0, stray = 0, wrong = 0, marked = 0;
  int status = 0;
  uint64_t deadline = now_ns() + (uint64_t)max_ms * 1000000ull;
  for (long i = 0; i < warmup + count; i++) {
    uint64_t t0 = now_ns();
    if (i == warmup) deadline = t0 + (uint64_t)max_ms * 1000000ull;
    if (t0 > deadline) {
      if (i >= warmup) break;
      i = warmup - 1; /* warm-up out of time: start recording */
      continue;
    }
    uint32_t first = (uint32_t)(i * burst);
    for (long b = 0; b < burst; b++) {
      uint32_t seq = first + (uint32_t)b;
      memcpy(out, &seq, 4);
      if (send(fd, out, (size_t)size, 0) != size) {
        status = fail("send");
        break;
      }
      sent++;
    }
    uint64_t got = 0; /* bit b: datagram first + b came back */
    for (long left = burst; !status && left > 0;) {
      int tos;
      ssize_t r = recv_tos(fd, in, sizeof in, &tos);
      if (r < 0) {
        status = fail("no reply");
        break;
      }
      uint32_t seq;
      memcpy(&seq, in, 4);
      uint32_t b = seq - first;
      if (r != size || b >= (uint32_t)burst || (got >> b & 1)) {
        stray++;
        continue;
      }
      memcpy(out, &seq, 4);
      if (memcmp(in, out, (size_t)size) != 0) wrong++;
      if (tos >= 0 && (tos & 3) == 2) marked++;
      got |= 1ull << b;
      answered++;
      left--;
    }
    if (status) break;
    if (i >= warmup) samples[n++] = now_ns() - t0;
  }
  send(fd, out, 0, 0);
  close(fd);
  for (long i = 0; i < n; i++) printf("%llu\n", (unsigned long long)samples[i]);
  printf("# sent=%ld answered=%ld stray=%ld wrong=%ld marked=%ld\n", sent, answered, stray, wrong,
         marked);
  free(samples);
  return status;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "echo") == 0) return echo();
  if ((argc == 7 || argc == 8) && strcmp(argv[1], "ping") == 0) {
    long port = atol(argv[2]), count = atol(argv[3]), size = atol(argv[4]);
    long warmup = atol(argv[5]), max_ms = atol(argv[6]), burst = argc == 8 ? atol(argv[7]) : 1;
    if (port >= 1 && port <= 65535 && count >= 1 && size >= 4 && size <= MAX_SIZE && warmup >= 0 &&
        max_ms >= 1 && burst >= 1 && burst <= MAX_BURST) {
      return ping(port, count, size, warmup, max_ms, burst);
    }
    fprintf(stderr,
            "wakeup_peer: 1 ≤ PORT ≤ 65535, COUNT ≥ 1, 4 ≤ SIZE ≤ %d, WARMUP ≥ 0, MAX_MS ≥ 1, "
            "1 ≤ BURST ≤ %d\n",
            MAX_SIZE, MAX_BURST);
    return 2;
  }
  fprintf(stderr, "usage: %s ping PORT COUNT SIZE WARMUP MAX_MS [BURST] | echo\n", argv[0]);
  return 2;
}
