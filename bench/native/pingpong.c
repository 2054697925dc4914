/*
 * Kernel ping-pong floor: the parent process sends `size` bytes over TCP or
 * UDP on loopback to a forked child that echoes them back, and prints each
 * round-trip time in nanoseconds, one per line. The warm-up stops after
 * `warmup` round trips or `max_ms` milliseconds; the recorded loop then stops
 * after `count` samples or another `max_ms` milliseconds, whichever comes first.
 *
 * Usage: sbilab_pingpong tcp|udp COUNT MAX_MS SIZE WARMUP
 * With PINGPONG_PARENT_CPU=N in the environment the parent moves to CPU N
 * after the fork, so the child can be placed elsewhere (taskset).
 * Exit status 0 on success, 2 on bad arguments, 1 on a socket error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 65000

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Moves the measuring parent to PINGPONG_PARENT_CPU, if set; the echo child keeps the CPU it was started on. */
static void pin_parent(void) {
  const char *cpu = getenv("PINGPONG_PARENT_CPU");
  if (!cpu || !*cpu) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(atoi(cpu), &set);
  sched_setaffinity(0, sizeof set, &set);
}

static int fail(const char *what) {
  fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
  return 1;
}

/* Reads exactly n bytes from a stream socket; returns 0, or -1 on EOF/error. */
static int read_full(int fd, char *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

/* Writes exactly n bytes to a stream socket; returns 0, or -1 on error. */
static int write_full(int fd, const char *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t w = send(fd, buf + put, n - put, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    put += (size_t)w;
  }
  return 0;
}

static void set_timeout(int fd, int seconds) {
  struct timeval tv = {.tv_sec = seconds, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* Child side of TCP: accept one connection and echo until EOF. */
static void tcp_echo(int lfd, size_t size) {
  static char buf[MAX_SIZE];
  int one = 1;
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) _exit(1);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  while (read_full(fd, buf, size) == 0) {
    if (write_full(fd, buf, size) != 0) break;
  }
  _exit(0);
}

/* Child side of UDP: echo datagrams until an empty one arrives. */
static void udp_echo(int fd) {
  static char buf[MAX_SIZE];
  struct sockaddr_in peer;
  set_timeout(fd, 30);
  for (;;) {
    socklen_t len = sizeof peer;
    ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &len);
    if (r <= 0) _exit(0);
    sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&peer, len);
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s tcp|udp COUNT MAX_MS SIZE WARMUP\n", argv[0]);
    return 2;
  }
  int tcp = strcmp(argv[1], "tcp") == 0;
  if (!tcp && strcmp(argv[1], "udp") != 0) {
    fprintf(stderr, "pingpong: protocol must be tcp or udp\n");
    return 2;
  }
  long count = atol(argv[2]), max_ms = atol(argv[3]), size = atol(argv[4]), warmup = atol(argv[5]);
  if (count < 1 || max_ms < 1 || size < 1 || size > MAX_SIZE || warmup < 0) {
    fprintf(stderr, "pingpong: COUNT, MAX_MS ≥ 1, 1 ≤ SIZE ≤ %d, WARMUP ≥ 0\n", MAX_SIZE);
    return 2;
  }

  struct sockaddr_in addr = {.sin_family = AF_INET};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int sfd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  if (sfd < 0) return fail("socket");
  if (bind(sfd, (struct sockaddr *)&addr, sizeof addr) != 0) return fail("bind");
  if (tcp && listen(sfd, 1) != 0) return fail("listen");
  socklen_t alen = sizeof addr;
  getsockname(sfd, (struct sockaddr *)&addr, &alen);

  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return fail("fork");
  if (child == 0) {
    if (tcp) tcp_echo(sfd, (size_t)size);
    udp_echo(sfd);
  }
  close(sfd);
  pin_parent();

  int fd = socket(AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  if (fd < 0) return fail("socket");
  set_timeout(fd, 2);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) return fail("connect");
  if (tcp) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  static char out[MAX_SIZE], in[MAX_SIZE];
  memset(out, 'x', sizeof out);
  uint64_t *samples = calloc((size_t)count, sizeof *samples);
  if (!samples) return fail("calloc");
  uint64_t deadline = now_ns() + (uint64_t)max_ms * 1000000ull;
  long n = 0, status = 0;
  for (long i = 0; i < warmup + count; i++) {
    uint64_t t0 = now_ns();
    /* The warm-up and the recorded round trips get MAX_MS each. */
    if (i == warmup) deadline = t0 + (uint64_t)max_ms * 1000000ull;
    if (t0 > deadline) {
      if (i >= warmup) break;
      i = warmup - 1; /* warm-up out of time: start recording */
      continue;
    }
    int bad;
    if (tcp) {
      bad = write_full(fd, out, (size_t)size) != 0 || read_full(fd, in, (size_t)size) != 0;
    } else {
      bad = send(fd, out, (size_t)size, 0) != size || recv(fd, in, sizeof in, 0) != size;
    }
    if (bad) {
      status = fail("round trip");
      break;
    }
    uint64_t t1 = now_ns();
    if (i >= warmup) samples[n++] = t1 - t0;
  }
  if (!tcp) send(fd, out, 0, 0);
  close(fd);
  kill(child, SIGTERM);
  waitpid(child, NULL, 0);
  for (long i = 0; i < n; i++) printf("%llu\n", (unsigned long long)samples[i]);
  free(samples);
  return (int)status;
}
