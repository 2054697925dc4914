/*
 * sbilab-linkprobe: UDP probes for the link selftest.
 *
 *   sbilab-linkprobe echo --port P [--max-seconds S]
 *     (server side) answers every probe, stamping its own receive time,
 *     counts bulk datagrams, and answers statistics requests with JSON.
 *   sbilab-linkprobe ping --host A --port P [--count N] [--pps R]
 *       [--drain-ms W] [--stat-timeout-ms T] [--bulk-bps B --bulk-ms D --bulk-size S]
 *     (client side) sends N probes paced at R per second without waiting for
 *     answers (pipelined), collects the echoes, optionally sends a paced bulk
 *     burst, then asks the echo side for its counters and prints one JSON
 *     object with the round-trip and one-way times in microseconds.
 *
 * One-way times are meaningful because both namespaces share one
 * CLOCK_MONOTONIC. A datagram's receive time is the kernel's (SO_TIMESTAMPNS),
 * when the link handed it over, and the echo's hold time is taken out of the
 * round trip: a busy host that wakes either end late does not make the link
 * look slower. Every loop is bounded in count and in time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC_PROBE 0x53424c50u /* "SBLP" */
#define MAGIC_STAT 0x53424c53u  /* "SBLS" */
#define MAGIC_BULK 0x53424c42u  /* "SBLB" */
#define MAX_COUNT 1000000u
#define UDP_IP_OVERHEAD 28u

/* Probe datagram; every field in host order (both ends are this machine). */
typedef struct {
  uint32_t magic;
  uint32_t seq;
  uint64_t sent_ns; /* client clock at send */
  uint64_t echo_ns; /* echo clock at receipt (filled by the echo side) */
  uint64_t echo_sent_ns; /* echo clock when it sent the answer (filled by the echo side) */
} probe_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Asks the kernel to stamp each datagram with its receive time. */
static void want_stamps(int fd) {
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

/* recvfrom that also gives the datagram's kernel receive time on the
 * monotonic clock in *t (the stamp is CLOCK_REALTIME: its age is taken off
 * the monotonic now), or the time of the call when there is no stamp. */
static ssize_t recv_stamped(int fd, void *buf, size_t len, int flags, struct sockaddr_in *from,
                            socklen_t *fromlen, uint64_t *t) {
  char control[CMSG_SPACE(sizeof(struct timespec))];
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  struct msghdr msg = {.msg_name = from,
                       .msg_namelen = from ? *fromlen : 0,
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = control,
                       .msg_controllen = sizeof control};
  ssize_t n = recvmsg(fd, &msg, flags);
  uint64_t mono = now_ns(), real = realtime_ns();
  *t = mono;
  if (from) *fromlen = msg.msg_namelen;
  if (n < 0) return n;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    struct timespec ts;
    memcpy(&ts, CMSG_DATA(c), sizeof ts);
    uint64_t stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (stamp <= real && real - stamp < mono) *t = mono - (real - stamp);
  }
  return n;
}

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* Returns the value after argv[i] when argv[i] equals name, else NULL. */
static const char *opt(int argc, char **argv, const char *name) {
  for (int i = 2; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) return argv[i + 1];
  return NULL;
}

static uint64_t opt_u64(int argc, char **argv, const char *name, uint64_t dflt) {
  const char *v = opt(argc, argv, name);
  return v ? strtoull(v, NULL, 10) : dflt;
}

/* Sets bit i; returns 1 if it was clear before. */
static int mark(unsigned char *bits, uint32_t i) {
  if (i >= MAX_COUNT) return 0;
  int was = bits[i / 8] & (1u << (i % 8));
  bits[i / 8] |= (unsigned char)(1u << (i % 8));
  return !was;
}

/* ---- echo ---------------------------------------------------------------- */

static int run_echo(int argc, char **argv) {
  uint16_t port = (uint16_t)opt_u64(argc, argv, "--port", 47000);
  uint64_t deadline = now_ns() + opt_u64(argc, argv, "--max-seconds", 600) * 1000000000ull;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  int rcvbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  want_stamps(fd);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    perror("sbilab-linkprobe echo: bind");
    return 1;
  }
  printf("{\"event\":\"listening\",\"port\":%u}\n", port);
  fflush(stdout);

  unsigned char *seen = calloc(MAX_COUNT / 8, 1);
  unsigned char *bulk_seen = calloc(MAX_COUNT / 8, 1);
  uint64_t received = 0, unique = 0, replied = 0;
  uint64_t bulk_packets = 0, bulk_bytes = 0, bulk_first = 0, bulk_last = 0;
  static unsigned char buf[65536];
  while (!g_stop && now_ns() < deadline) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) continue;
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    uint64_t t;
    ssize_t n = recv_stamped(fd, buf, sizeof buf, 0, &from, &fl, &t);
    if (n < (ssize_t)sizeof(probe_t)) continue;
    probe_t *pr = (probe_t *)buf;
    if (pr->magic == MAGIC_PROBE) {
      received++;
      unique += (uint64_t)mark(seen, pr->seq);
      pr->echo_ns = t;
      pr->echo_sent_ns = now_ns();
      if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) >= 0) replied++;
    } else if (pr->magic == MAGIC_BULK) {
      if (!mark(bulk_seen, pr->seq)) continue;
      if (bulk_packets == 0) bulk_first = t;
      bulk_last = t;
      bulk_packets++;
      bulk_bytes += (uint64_t)n + UDP_IP_OVERHEAD;
    } else if (pr->magic == MAGIC_STAT) {
      int len = snprintf((char *)buf + sizeof(probe_t), sizeof buf - sizeof(probe_t),
                         "{\"received\":%" PRIu64 ",\"unique\":%" PRIu64
                         ",\"replied\":%" PRIu64 ",\"bulk_packets\":%" PRIu64
                         ",\"bulk_bytes\":%" PRIu64 ",\"bulk_span_ns\":%" PRIu64 "}",
                         received, unique, replied, bulk_packets, bulk_bytes,
                         bulk_last - bulk_first);
      sendto(fd, buf, sizeof(probe_t) + (size_t)len, 0, (struct sockaddr *)&from, fl);
    }
  }
  free(seen);
  free(bulk_seen);
  return 0;
}

/* ---- ping ---------------------------------------------------------------- */

typedef struct {
  uint32_t count;
  uint32_t got;
  int64_t *rtt, *up, *down; /* microseconds, in arrival order */
  unsigned char *seen;
} results_t;

/* Reads every waiting datagram; probes go to r, a STAT answer to stat_out. */
static void drain_socket(int fd, results_t *r, char *stat_out, size_t stat_cap) {
  static unsigned char buf[65536];
  for (int i = 0; i < 4096; i++) {
    uint64_t t;
    ssize_t n = recv_stamped(fd, buf, sizeof buf, MSG_DONTWAIT, NULL, NULL, &t);
    if (n < (ssize_t)sizeof(probe_t)) return;
    probe_t *p = (probe_t *)buf;
    if (p->magic == MAGIC_PROBE && p->seq < r->count && mark(r->seen, p->seq)) {
      int64_t held = (int64_t)p->echo_sent_ns - (int64_t)p->echo_ns;
      r->rtt[r->got] = ((int64_t)(t - p->sent_ns) - held) / 1000;
      r->up[r->got] = ((int64_t)p->echo_ns - (int64_t)p->sent_ns) / 1000;
      r->down[r->got] = ((int64_t)t - (int64_t)p->echo_sent_ns) / 1000;
      r->got++;
    } else if (p->magic == MAGIC_STAT && stat_out && stat_out[0] == 0) {
      size_t len = (size_t)n - sizeof(probe_t);
      if (len >= stat_cap) len = stat_cap - 1;
      memcpy(stat_out, buf + sizeof(probe_t), len);
      stat_out[len] = 0;
    }
  }
}

enum { WAIT_PACE, WAIT_PROBES, WAIT_STAT };

/* Waits until `until_ns`, draining the socket; WAIT_PROBES returns early once
 * every probe is back, WAIT_STAT once the statistics answer arrived. */
static void wait_until(int fd, results_t *r, uint64_t until_ns, int mode, char *stat,
                       size_t cap) {
  for (;;) {
    uint64_t now = now_ns();
    if (now >= until_ns || g_stop) return;
    if (mode == WAIT_PROBES && r->got == r->count) return;
    if (mode == WAIT_STAT && stat[0]) return;
    uint64_t left = until_ns - now;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000000000ull),
                          .tv_nsec = (long)(left % 1000000000ull)};
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (ppoll(&p, 1, &ts, NULL) > 0) drain_socket(fd, r, stat, cap);
  }
}

static void print_array(const char *name, const int64_t *a, uint32_t n) {
  printf("\"%s\":[", name);
  for (uint32_t i = 0; i < n; i++) printf(i ? ",%" PRId64 : "%" PRId64, a[i]);
  printf("]");
}

static int run_ping(int argc, char **argv) {
  const char *host = opt(argc, argv, "--host");
  uint16_t port = (uint16_t)opt_u64(argc, argv, "--port", 47000);
  uint32_t count = (uint32_t)opt_u64(argc, argv, "--count", 10000);
  uint64_t pps = opt_u64(argc, argv, "--pps", 5000);
  uint64_t drain_ms = opt_u64(argc, argv, "--drain-ms", 1000);
  uint64_t stat_timeout_ms = opt_u64(argc, argv, "--stat-timeout-ms", 300);
  uint64_t bulk_bps = opt_u64(argc, argv, "--bulk-bps", 0);
  uint64_t bulk_ms = opt_u64(argc, argv, "--bulk-ms", 1000);
  uint64_t bulk_size = opt_u64(argc, argv, "--bulk-size", 1200);
  if (host == NULL || count == 0 || count > MAX_COUNT || pps == 0 || bulk_size < 32 ||
      bulk_size > 8000) {
    fprintf(stderr, "sbilab-linkprobe ping: bad arguments\n");
    return 2;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  int rcvbuf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  want_stamps(fd);
  if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
      connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    perror("sbilab-linkprobe ping: connect");
    return 1;
  }
  results_t r = {.count = count};
  r.rtt = calloc(count, sizeof(int64_t));
  r.up = calloc(count, sizeof(int64_t));
  r.down = calloc(count, sizeof(int64_t));
  r.seen = calloc(MAX_COUNT / 8, 1);

  /* Probes, paced on absolute send times so a late wake-up does not drift. */
  uint64_t interval = 1000000000ull / pps, start = now_ns();
  uint32_t send_errors = 0;
  for (uint32_t i = 0; i < count && !g_stop; i++) {
    wait_until(fd, &r, start + i * interval, WAIT_PACE, NULL, 0);
    probe_t p = {.magic = MAGIC_PROBE, .seq = i, .sent_ns = now_ns()};
    if (send(fd, &p, sizeof p, 0) < 0) send_errors++;
  }
  uint64_t probes_end = now_ns();
  wait_until(fd, &r, now_ns() + drain_ms * 1000000ull, WAIT_PROBES, NULL, 0);

  /* Bulk: fixed-size datagrams paced at bulk_bps (IP bytes) for bulk_ms. */
  uint64_t bulk_sent = 0, bulk_sent_bytes = 0, bulk_start = now_ns();
  if (bulk_bps > 0) {
    static unsigned char b[8000];
    size_t ip_len = bulk_size + UDP_IP_OVERHEAD;
    uint64_t gap = ip_len * 8ull * 1000000000ull / bulk_bps;
    uint64_t n = bulk_ms * 1000000ull / (gap ? gap : 1);
    if (n > MAX_COUNT) n = MAX_COUNT;
    for (uint64_t i = 0; i < n && !g_stop; i++) {
      wait_until(fd, &r, bulk_start + i * gap, WAIT_PACE, NULL, 0);
      probe_t *p = (probe_t *)b;
      p->magic = MAGIC_BULK;
      p->seq = (uint32_t)i;
      p->sent_ns = now_ns();
      if (send(fd, b, bulk_size, 0) >= 0) {
        bulk_sent++;
        bulk_sent_bytes += ip_len;
      }
    }
    wait_until(fd, &r, now_ns() + drain_ms * 1000000ull, WAIT_PACE, NULL, 0);
  }
  uint64_t bulk_end = now_ns();

  /* Ask for the echo side's counters, retrying over a lossy link. */
  static char stat[2048];
  stat[0] = 0;
  for (uint32_t attempt = 0; attempt < 40 && !stat[0] && !g_stop; attempt++) {
    probe_t p = {.magic = MAGIC_STAT, .seq = attempt, .sent_ns = now_ns()};
    if (send(fd, &p, sizeof p, 0) < 0) send_errors++;
    wait_until(fd, &r, now_ns() + stat_timeout_ms * 1000000ull, WAIT_STAT, stat, sizeof stat);
  }

  printf("{\"sent\":%u,\"received\":%u,\"send_errors\":%u,\"probe_ns\":%" PRIu64 ",",
         count, r.got, send_errors, probes_end - start);
  print_array("rtt_us", r.rtt, r.got);
  printf(",");
  print_array("up_us", r.up, r.got);
  printf(",");
  print_array("down_us", r.down, r.got);
  printf(",\"bulk\":{\"sent\":%" PRIu64 ",\"sent_bytes\":%" PRIu64 ",\"span_ns\":%" PRIu64 "}",
         bulk_sent, bulk_sent_bytes, bulk_bps ? bulk_end - bulk_start : 0);
  printf(",\"echo\":%s}\n", stat[0] ? stat : "null");
  return stat[0] ? 0 : 3;
}

int main(int argc, char **argv) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  /* The probe is the instrument: its wake-ups should not queue behind other
   * processes' CPU either (best effort, as the relay). */
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct sched_param rt = {.sched_priority = 10};
  if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0) { /* not permitted: stay SCHED_OTHER */ }
  if (argc >= 2 && !strcmp(argv[1], "echo")) return run_echo(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "ping")) return run_ping(argc, argv);
  fprintf(stderr, "usage: sbilab-linkprobe echo|ping [options]\n");
  return 2;
}
