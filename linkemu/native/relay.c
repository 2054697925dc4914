/*
 * sbilab-linkrelay: the userspace half of an emulated WAN link.
 *
 * It creates one TUN device (IFF_TUN | IFF_NO_PI) inside each of two network
 * namespaces, then moves IP packets between the two file descriptors. On the
 * way each packet is subjected, per direction, to: blackhole windows, random
 * and burst loss, a rate limit with a drop-tail queue counted in packets,
 * one-way delay with jitter (never reordering unless asked), reordering and
 * duplication. "up" is client -> server, "down" is server -> client.
 *
 * The devices are not persistent: they vanish when this process exits, so a
 * crash cannot leave them behind. With --exit-on-stdin-eof the relay also
 * exits when the process that started it goes away (its end of the pipe
 * closes).
 *
 * Output (stdout, one JSON object per line): {"event":"ready",...} once both
 * devices exist, {"event":"stats",...} on SIGUSR1, {"event":"rebind",...} on
 * SIGUSR2 and {"event":"exit",...} when leaving on SIGTERM, SIGINT, SIGHUP or
 * stdin EOF.
 *
 * Rebinding (a NAT that changes the client's port): each SIGUSR2 starts a new
 * epoch. From then on every IPv4 TCP/UDP packet going up has its source port
 * XORed with the epoch's mask and every packet coming down has its
 * destination port XORed back (checksums fixed incrementally, RFC 1624), so
 * the server sees the client at a new port while the client sees nothing.
 *
 * Timing: one thread, epoll over both TUN fds, a signalfd, stdin and a
 * timerfd armed (absolute, CLOCK_MONOTONIC) for the earliest pending release
 * minus a short spin window, which is then busy-polled.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_PACKET 65536
#define READ_BATCH 64

/* ---- clock and random numbers ------------------------------------------ */

/* Nanoseconds on CLOCK_MONOTONIC (shared by every network namespace). */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xoshiro256** state, seeded through splitmix64. */
typedef struct { uint64_t s[4]; } rng_t;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* Uniform double in [0, 1). */
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* ---- configuration and state of one direction -------------------------- */

typedef struct {
  uint64_t delay_ns;     /* one-way delay */
  uint64_t jitter_ns;    /* uniform in [-jitter, +jitter] around the delay */
  double loss;           /* long-run share of packets lost, 0..1 */
  uint32_t burst;        /* longest loss burst in packets (1 = independent) */
  uint64_t rate_bps;     /* bottleneck rate in bit/s, 0 = unlimited */
  uint32_t queue;        /* drop-tail limit in packets while rate-limited */
  double reorder;        /* share of packets that skip the delay */
  double dup;            /* share of packets sent twice */
  uint64_t bh_on_ns;     /* blackhole: forward this long ... */
  uint64_t bh_off_ns;    /* ... then drop everything this long; 0 = never */
} dir_conf_t;

typedef struct {
  uint64_t release_ns;
  uint64_t seq;
  uint32_t len;
  unsigned char data[];
} packet_t;

typedef struct {
  uint64_t in, out, bytes_in, bytes_out;
  uint64_t drop_loss, drop_queue, drop_blackhole, drop_overflow, drop_write;
  uint64_t duplicated, reordered;
  uint64_t late_sum_ns, late_max_ns;
} counters_t;

typedef struct {
  const char *name;
  dir_conf_t conf;
  counters_t c;
  rng_t rng;
  int in_fd, out_fd;
  /* binary min-heap of packets ordered by (release_ns, seq) */
  packet_t **heap;
  size_t heap_len, heap_cap;
  uint64_t last_release_ns; /* keeps jitter from reordering */
  uint32_t burst_left;      /* packets still to drop in the current burst */
  double burst_start_p;     /* chance that a packet starts a loss burst */
  /* rate limiter: transmitter busy until tx_free_ns; ring of finish times */
  uint64_t tx_free_ns;
  uint64_t *tx_ring;
  uint32_t tx_head, tx_count;
} dir_t;

static uint64_t g_seq;
static uint64_t g_start_ns;
static uint64_t g_spin_ns = 20000;
static uint32_t g_nat_epoch; /* number of SIGUSR2 rebinds so far */

/* XOR mask of the current rebind epoch: 0 before the first rebind. It keeps
 * bit 15 clear and bit 10 set, so an ephemeral port (>= 32768) maps to
 * another ephemeral port and never to itself. */
static uint16_t nat_mask(void) {
  if (g_nat_epoch == 0) return 0;
  return (uint16_t)(((g_nat_epoch * 0x2f45u) & 0x3fffu) | 0x0400u);
}

/* Adds the change old -> new of one 16-bit word to a checksum (RFC 1624). */
static uint16_t csum_update(uint16_t csum, uint16_t old, uint16_t new) {
  uint32_t sum = (uint16_t)~csum + (uint32_t)(uint16_t)~old + new;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

/* XORs the source (up) or destination (down) port of an unfragmented IPv4
 * TCP or UDP packet with `mask`, fixing the transport checksum. */
static void nat_rewrite(unsigned char *p, uint32_t len, int up, uint16_t mask) {
  if (mask == 0 || len < 20 || (p[0] >> 4) != 4) return;
  uint32_t ihl = (uint32_t)(p[0] & 0x0f) * 4;
  if (ihl < 20 || ((p[6] & 0x1f) | p[7]) != 0) return; /* options ok, fragments not */
  int proto = p[9];
  uint32_t csum_at;
  if (proto == 6 && len >= ihl + 20) csum_at = ihl + 16;
  else if (proto == 17 && len >= ihl + 8) csum_at = ihl + 6;
  else return;
  unsigned char *port = p + ihl + (up ? 0 : 2);
  uint16_t old = (uint16_t)(port[0] << 8 | port[1]);
  uint16_t new = old ^ mask;
  port[0] = (unsigned char)(new >> 8);
  port[1] = (unsigned char)new;
  uint16_t csum = (uint16_t)(p[csum_at] << 8 | p[csum_at + 1]);
  if (proto == 17 && csum == 0) return; /* UDP without checksum */
  csum = csum_update(csum, old, new);
  if (proto == 17 && csum == 0) csum = 0xffff;
  p[csum_at] = (unsigned char)(csum >> 8);
  p[csum_at + 1] = (unsigned char)csum;
}

static int heap_less(const packet_t *a, const packet_t *b) {
  return a->release_ns < b->release_ns || (a->release_ns == b->release_ns && a->seq < b->seq);
}

/* Adds p to the heap; returns -1 when the heap is full. */
static int heap_push(dir_t *d, packet_t *p) {
  if (d->heap_len == d->heap_cap) return -1;
  size_t i = d->heap_len++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!heap_less(p, d->heap[parent])) break;
    d->heap[i] = d->heap[parent];
    i = parent;
  }
  d->heap[i] = p;
  return 0;
}

/* Removes and returns the earliest packet. */
static packet_t *heap_pop(dir_t *d) {
  packet_t *top = d->heap[0];
  packet_t *last = d->heap[--d->heap_len];
  size_t i = 0, n = d->heap_len;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    const packet_t *best = last;
    if (l < n && heap_less(d->heap[l], best)) { m = l; best = d->heap[l]; }
    if (r < n && heap_less(d->heap[r], best)) { m = r; }
    if (m == i) break;
    d->heap[i] = d->heap[m];
    i = m;
  }
  if (n > 0) d->heap[i] = last;
  return top;
}

/* Decides whether the next packet is lost (bursts of 1..burst packets). */
static int lose_packet(dir_t *d) {
  if (d->burst_left > 0) {
    d->burst_left--;
    return 1;
  }
  if (d->conf.loss <= 0) return 0;
  if (rng_unit(&d->rng) >= d->burst_start_p) return 0;
  uint32_t len = 1;
  if (d->conf.burst > 1) len = 1 + (uint32_t)(rng_next(&d->rng) % d->conf.burst);
  d->burst_left = len - 1;
  return 1;
}

/* True while the direction is inside a blackhole (dropping) window. */
static int in_blackhole(const dir_t *d, uint64_t now) {
  if (d->conf.bh_off_ns == 0) return 0;
  uint64_t period = d->conf.bh_on_ns + d->conf.bh_off_ns;
  return (now - g_start_ns) % period >= d->conf.bh_on_ns;
}

/* Copies one packet into the direction's queue, applying every impairment. */
static void ingest(dir_t *d, const unsigned char *buf, uint32_t len, uint64_t now) {
  d->c.in++;
  d->c.bytes_in += len;
  if (in_blackhole(d, now)) { d->c.drop_blackhole++; return; }
  if (lose_packet(d)) { d->c.drop_loss++; return; }

  uint64_t sent = now; /* when the last bit leaves the bottleneck */
  if (d->conf.rate_bps > 0) {
    while (d->tx_count > 0 && d->tx_ring[d->tx_head] <= now) {
      d->tx_head = (d->tx_head + 1) % d->conf.queue;
      d->tx_count--;
    }
    if (d->tx_count >= d->conf.queue) { d->c.drop_queue++; return; }
    uint64_t start = d->tx_free_ns > now ? d->tx_free_ns : now;
    sent = start + (uint64_t)len * 8ull * 1000000000ull / d->conf.rate_bps;
    d->tx_free_ns = sent;
    d->tx_ring[(d->tx_head + d->tx_count) % d->conf.queue] = sent;
    d->tx_count++;
  }

  uint64_t release;
  if (d->conf.reorder > 0 && rng_unit(&d->rng) < d->conf.reorder) {
    /* netem's model: a reordered packet skips the delay and overtakes. */
    release = sent;
    d->c.reordered++;
  } else {
    int64_t delay = (int64_t)d->conf.delay_ns;
    if (d->conf.jitter_ns > 0) {
      double j = (rng_unit(&d->rng) * 2.0 - 1.0) * (double)d->conf.jitter_ns;
      delay += (int64_t)j;
      if (delay < 0) delay = 0;
    }
    release = sent + (uint64_t)delay;
    if (release < d->last_release_ns) release = d->last_release_ns;
    d->last_release_ns = release;
  }

  int copies = 1;
  if (d->conf.dup > 0 && rng_unit(&d->rng) < d->conf.dup) copies = 2;
  for (int i = 0; i < copies; i++) {
    packet_t *p = malloc(sizeof(packet_t) + len);
    if (p == NULL) { d->c.drop_overflow++; return; }
    p->release_ns = release;
    p->seq = g_seq++;
    p->len = len;
    memcpy(p->data, buf, len);
    if (heap_push(d, p) < 0) {
      free(p);
      d->c.drop_overflow++;
      return;
    }
    if (i == 1) d->c.duplicated++;
  }
}

/* Writes every packet whose release time is not after `until`. */
static void release_due(dir_t *d, uint64_t until) {
  while (d->heap_len > 0 && d->heap[0]->release_ns <= until) {
    packet_t *p = heap_pop(d);
    if (write(d->out_fd, p->data, p->len) < 0) {
      d->c.drop_write++;
    } else {
      uint64_t t = now_ns();
      uint64_t late = t > p->release_ns ? t - p->release_ns : 0;
      d->c.out++;
      d->c.bytes_out += p->len;
      d->c.late_sum_ns += late;
      if (late > d->c.late_max_ns) d->c.late_max_ns = late;
    }
    free(p);
  }
}

/* Reads up to READ_BATCH packets from the direction's input device. */
static void read_some(dir_t *d, unsigned char *buf) {
  for (int i = 0; i < READ_BATCH; i++) {
    ssize_t n = read(d->in_fd, buf, MAX_PACKET);
    if (n <= 0) return; /* EAGAIN or error: wait for epoll */
    nat_rewrite(buf, (uint32_t)n, d->name[0] == 'u', nat_mask());
    ingest(d, buf, (uint32_t)n, now_ns());
  }
}

/* Prints one direction's counters as a JSON object. */
static void print_dir(const dir_t *d) {
  const counters_t *c = &d->c;
  printf("\"%s\":{\"in\":%" PRIu64 ",\"out\":%" PRIu64 ",\"bytes_in\":%" PRIu64
         ",\"bytes_out\":%" PRIu64 ",\"drop_loss\":%" PRIu64 ",\"drop_queue\":%" PRIu64
         ",\"drop_blackhole\":%" PRIu64 ",\"drop_overflow\":%" PRIu64 ",\"drop_write\":%" PRIu64
         ",\"duplicated\":%" PRIu64 ",\"reordered\":%" PRIu64 ",\"queued\":%zu"
         ",\"late_mean_ns\":%" PRIu64 ",\"late_max_ns\":%" PRIu64 "}",
         d->name, c->in, c->out, c->bytes_in, c->bytes_out, c->drop_loss, c->drop_queue,
         c->drop_blackhole, c->drop_overflow, c->drop_write, c->duplicated, c->reordered,
         d->heap_len, c->out ? c->late_sum_ns / c->out : 0, c->late_max_ns);
}

/* Prints {"event":EVENT,"up":{...},"down":{...}} and flushes. */
static void print_stats(const char *event, const dir_t *up, const dir_t *down) {
  printf("{\"event\":\"%s\",\"uptime_ns\":%" PRIu64 ",\"nat_epoch\":%" PRIu32 ",", event,
         now_ns() - g_start_ns, g_nat_epoch);
  print_dir(up);
  printf(",");
  print_dir(down);
  printf("}\n");
  fflush(stdout);
}

/* ---- setup -------------------------------------------------------------- */

/* Creates a TUN device named `name` in the network namespace at `ns_path`
 * (the current one when NULL); returns a non-blocking fd or -1. */
static int open_tun(const char *ns_path, const char *name) {
  int home = -1, target = -1, fd = -1;
  if (ns_path != NULL) {
    home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    target = open(ns_path, O_RDONLY | O_CLOEXEC);
    if (home < 0 || target < 0 || setns(target, CLONE_NEWNET) < 0) {
      fprintf(stderr, "sbilab-linkrelay: cannot enter %s: %s\n", ns_path, strerror(errno));
      goto out;
    }
  }
  fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "sbilab-linkrelay: cannot open /dev/net/tun: %s\n", strerror(errno));
    goto out;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
  if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
    fprintf(stderr, "sbilab-linkrelay: cannot create %s: %s\n", name, strerror(errno));
    close(fd);
    fd = -1;
  } else {
    /* No IPv6 on the device: no router solicitations or MLD reports cross
     * the link behind the user's back. /proc/sys/net follows our netns. */
    char path[128];
    snprintf(path, sizeof path, "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
    int sysfd = open(path, O_WRONLY | O_CLOEXEC);
    if (sysfd >= 0) {
      if (write(sysfd, "1", 1) < 0) { /* best effort: IPv6 may be absent */ }
      close(sysfd);
    }
  }
out:
  if (home >= 0) {
    if (setns(home, CLONE_NEWNET) < 0) {
      fprintf(stderr, "sbilab-linkrelay: cannot return to own namespace\n");
      if (fd >= 0) close(fd);
      fd = -1;
    }
    close(home);
  }
  if (target >= 0) close(target);
  return fd;
}

static void usage(void) {
  fprintf(stderr,
          "usage: sbilab-linkrelay --client-if NAME --server-if NAME [--client-ns PATH]\n"
          "  [--server-ns PATH] [--seed N] [--spin-us N] [--max-inflight N]\n"
          "  [--exit-on-stdin-eof] [--{up,down}-{delay-us,jitter-us,loss,burst,rate-bps,\n"
          "  queue,reorder,dup,bh-on-us,bh-off-us} VALUE]...\n");
}

/* Parses "--up-KEY" / "--down-KEY" into d; returns 1 if the key was known. */
static int parse_dir_option(dir_conf_t *d, const char *key, const char *v) {
  if (!strcmp(key, "delay-us")) d->delay_ns = strtoull(v, NULL, 10) * 1000ull;
  else if (!strcmp(key, "jitter-us")) d->jitter_ns = strtoull(v, NULL, 10) * 1000ull;
  else if (!strcmp(key, "loss")) d->loss = strtod(v, NULL);
  else if (!strcmp(key, "burst")) d->burst = (uint32_t)strtoul(v, NULL, 10);
  else if (!strcmp(key, "rate-bps")) d->rate_bps = strtoull(v, NULL, 10);
  else if (!strcmp(key, "queue")) d->queue = (uint32_t)strtoul(v, NULL, 10);
  else if (!strcmp(key, "reorder")) d->reorder = strtod(v, NULL);
  else if (!strcmp(key, "dup")) d->dup = strtod(v, NULL);
  else if (!strcmp(key, "bh-on-us")) d->bh_on_ns = strtoull(v, NULL, 10) * 1000ull;
  else if (!strcmp(key, "bh-off-us")) d->bh_off_ns = strtoull(v, NULL, 10) * 1000ull;
  else return 0;
  return 1;
}

/* Validates a direction's settings and allocates its queues; 0 on success. */
static int dir_init(dir_t *d, size_t max_inflight, uint64_t seed) {
  dir_conf_t *c = &d->conf;
  if (c->loss < 0 || c->loss >= 1 || c->reorder < 0 || c->reorder > 1 || c->dup < 0 ||
      c->dup > 1) {
    fprintf(stderr, "sbilab-linkrelay: %s: loss, reorder and dup must be shares in [0, 1)\n",
            d->name);
    return -1;
  }
  if (c->burst == 0) c->burst = 1;
  if (c->queue == 0) c->queue = 1000;
  /* Long-run loss share L with bursts of uniform length 1..B (mean m): a
   * packet starts a burst with chance p, so L = p*m / (1 - p + p*m). */
  double m = (1.0 + c->burst) / 2.0;
  d->burst_start_p = c->loss / (m * (1.0 - c->loss) + c->loss);
  rng_seed(&d->rng, seed);
  d->heap_cap = max_inflight;
  d->heap = calloc(max_inflight, sizeof(packet_t *));
  d->tx_ring = calloc(c->queue, sizeof(uint64_t));
  return d->heap && d->tx_ring ? 0 : -1;
}

int main(int argc, char **argv) {
  const char *client_ns = NULL, *server_ns = NULL, *client_if = NULL, *server_if = NULL;
  uint64_t seed = 1;
  size_t max_inflight = 65536;
  int stdin_eof_exits = 0;
  dir_t up = {.name = "up"}, down = {.name = "down"};

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--exit-on-stdin-eof")) { stdin_eof_exits = 1; continue; }
    if (i + 1 >= argc) { usage(); return 2; }
    const char *v = argv[++i];
    if (!strcmp(a, "--client-ns")) client_ns = v;
    else if (!strcmp(a, "--server-ns")) server_ns = v;
    else if (!strcmp(a, "--client-if")) client_if = v;
    else if (!strcmp(a, "--server-if")) server_if = v;
    else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--spin-us")) g_spin_ns = strtoull(v, NULL, 10) * 1000ull;
    else if (!strcmp(a, "--max-inflight")) max_inflight = strtoull(v, NULL, 10);
    else if (!strncmp(a, "--up-", 5) && parse_dir_option(&up.conf, a + 5, v)) continue;
    else if (!strncmp(a, "--down-", 7) && parse_dir_option(&down.conf, a + 7, v)) continue;
    else { fprintf(stderr, "sbilab-linkrelay: unknown option %s\n", a); usage(); return 2; }
  }
  if (client_if == NULL || server_if == NULL || max_inflight == 0) { usage(); return 2; }
  /* Each direction draws from its own stream so one cannot shift the other. */
  if (dir_init(&up, max_inflight, seed * 2 + 1) < 0 ||
      dir_init(&down, max_inflight, seed * 2 + 2) < 0)
    return 2;

  /* Signals arrive through a signalfd; a closed stdout must not kill us. */
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGUSR2);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  /* A link is not slowed by the endpoints' CPU load (netem runs in softirq):
   * a low real-time priority where allowed (root), else the normal class.
   * The busy-poll window stays short and the kernel's RT throttling bounds it. */
  struct sched_param rt = {.sched_priority = 10};
  if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0) { /* not permitted: stay SCHED_OTHER */ }

  int cfd = open_tun(client_ns, client_if);
  if (cfd < 0) return 1;
  int sfd = open_tun(server_ns, server_if);
  if (sfd < 0) return 1;
  up.in_fd = cfd;
  up.out_fd = sfd;
  down.in_fd = sfd;
  down.out_fd = cfd;

  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (sigfd < 0 || tfd < 0 || ep < 0) { perror("sbilab-linkrelay"); return 1; }
  int fds[] = {cfd, sfd, sigfd, tfd, stdin_eof_exits ? 0 : -1};
  for (int i = 0; i < 5; i++) {
    if (fds[i] < 0) continue;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) { perror("epoll_ctl"); return 1; }
  }

  g_start_ns = now_ns();
  printf("{\"event\":\"ready\",\"pid\":%d,\"client_if\":\"%s\",\"server_if\":\"%s\"}\n",
         (int)getpid(), client_if, server_if);
  fflush(stdout);

  static unsigned char buf[MAX_PACKET];
  uint64_t armed_for = 0;
  const char *leave = NULL;
  while (leave == NULL) {
    uint64_t now = now_ns();
    release_due(&up, now);
    release_due(&down, now);

    /* Earliest pending release over both directions (0 = nothing pending). */
    uint64_t next = 0;
    if (up.heap_len) next = up.heap[0]->release_ns;
    if (down.heap_len && (!next || down.heap[0]->release_ns < next))
      next = down.heap[0]->release_ns;

    int timeout = -1;
    if (next && next <= now + g_spin_ns) {
      timeout = 0; /* close enough: busy-poll the rest */
    } else if (next && next - g_spin_ns != armed_for) {
      armed_for = next - g_spin_ns;
      struct itimerspec its = {0};
      its.it_value.tv_sec = (time_t)(armed_for / 1000000000ull);
      its.it_value.tv_nsec = (long)(armed_for % 1000000000ull);
      timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    }

    struct epoll_event evs[8];
    int n = epoll_wait(ep, evs, 8, timeout);
    if (n < 0 && errno != EINTR) { perror("epoll_wait"); return 1; }
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == cfd) read_some(&up, buf);
      else if (fd == sfd) read_some(&down, buf);
      else if (fd == tfd) {
        uint64_t expirations;
        if (read(tfd, &expirations, sizeof expirations) < 0) { /* spurious */ }
        armed_for = 0;
      } else if (fd == sigfd) {
        struct signalfd_siginfo si;
        while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
          if (si.ssi_signo == SIGUSR1) {
            print_stats("stats", &up, &down);
          } else if (si.ssi_signo == SIGUSR2) {
            g_nat_epoch++;
            printf("{\"event\":\"rebind\",\"epoch\":%" PRIu32 ",\"mask\":%u,\"uptime_ns\":%" PRIu64 "}\n",
                   g_nat_epoch, (unsigned)nat_mask(), now_ns() - g_start_ns);
            fflush(stdout);
          }
          else leave = "signal";
        }
      } else if (fd == 0) {
        ssize_t r = read(0, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) leave = "stdin";
      }
    }
  }
  print_stats("exit", &up, &down);
  return 0;
}
