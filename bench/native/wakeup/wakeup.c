/* The wake-up probe's library (see wakeup.h). */
#define _GNU_SOURCE
#include "wakeup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define BATCH 64

struct wk {
  int mode;
  int fd;       /* the UDP socket */
  int kickfd;   /* eventfd: replies queued, or stop */
  int bellfd;   /* WK_DOORBELL: the Unix socket JavaScript reads */
  int epfd;
  int port;
  uint8_t *ring;
  void (*cb)(void);
  pthread_t thread;
  int started;
  atomic_int stop;
  atomic_int sleeping; /* the thread is in epoll_wait */
  atomic_int waiting;  /* WK_WAIT: JavaScript is in wk_wait */
  atomic_int ended;    /* the ending datagram has been read */
  _Atomic uint64_t stats[WK_STAT_COUNT];
};

static _Atomic uint32_t *u32_at(wk_t *w, int off) { return (_Atomic uint32_t *)(w->ring + off); }

static void count(wk_t *w, int i, uint64_t n) {
  atomic_fetch_add_explicit(&w->stats[i], n, memory_order_relaxed);
}

wk_t *wk_new(uint16_t port, int mode) {
  if (mode < WK_CALLBACK || mode > WK_DOORBELL) {
    errno = EINVAL;
    return NULL;
  }
  wk_t *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->mode = mode;
  w->fd = w->kickfd = w->bellfd = w->epfd = -1;
  if (posix_memalign((void **)&w->ring, 4096, WK_RING_BYTES) != 0) goto fail;
  memset(w->ring, 0, WK_RING_BYTES);
  w->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (w->fd < 0) goto fail;
  int one = 1, ect0 = 0x02;
  setsockopt(w->fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
  setsockopt(w->fd, IPPROTO_IP, IP_TOS, &ect0, sizeof ect0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(w->fd, (struct sockaddr *)&a, sizeof a) != 0) goto fail;
  socklen_t alen = sizeof a;
  getsockname(w->fd, (struct sockaddr *)&a, &alen);
  w->port = ntohs(a.sin_port);
  w->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (w->kickfd < 0 || w->epfd < 0) goto fail;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = w->fd};
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->fd, &ev) != 0) goto fail;
  ev.data.fd = w->kickfd;
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->kickfd, &ev) != 0) goto fail;
  return w;
fail:
  wk_free(w);
  return NULL;
}

int wk_port(const wk_t *w) { return w->port; }

void *wk_ring(wk_t *w) { return w->ring; }

int wk_ring_bytes(void) { return WK_RING_BYTES; }

int wk_set_callback(wk_t *w, void (*cb)(void)) {
  if (w->mode != WK_CALLBACK || w->started || !cb) {
    errno = EINVAL;
    return -1;
  }
  w->cb = cb;
  return 0;
}

int wk_set_doorbell(wk_t *w, const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (w->mode != WK_DOORBELL || w->started || strlen(path) >= sizeof a.sun_path) {
    errno = EINVAL;
    return -1;
  }
  strcpy(a.sun_path, path);
  w->bellfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (w->bellfd < 0) return -1;
  return connect(w->bellfd, (struct sockaddr *)&a, sizeof a);
}

static void futex_wake(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Wakes JavaScript for the batch just published. */
static void wake(wk_t *w) {
  count(w, WK_STAT_BATCHES, 1);
  if (w->mode == WK_CALLBACK) {
    count(w, WK_STAT_WAKEUPS, 1);
    w->cb(); /* returns once JavaScript has run it */
  } else if (w->mode == WK_WAIT) {
    if (atomic_load(&w->waiting)) {
      count(w, WK_STAT_WAKEUPS, 1);
      futex_wake(u32_at(w, WK_OFF_RX_TAIL));
    }
  } else {
    uint32_t one = 1;
    if (atomic_compare_exchange_strong(u32_at(w, WK_OFF_PARKED), &one, 0)) {
      count(w, WK_STAT_WAKEUPS, 1);
      char b = 1;
      while (write(w->bellfd, &b, 1) < 0 && errno == EINTR) {
      }
    }
  }
}

/* Sends the queued replies; returns how many. */
static int send_queued(wk_t *w) {
  _Atomic uint32_t *tail_p = u32_at(w, WK_OFF_TX_TAIL), *head_p = u32_at(w, WK_OFF_TX_HEAD);
  uint32_t head = atomic_load_explicit(head_p, memory_order_relaxed);
  uint32_t tail = atomic_load_explicit(tail_p, memory_order_acquire);
  int total = 0;
  while (head != tail) {
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    int n = 0;
    for (uint32_t i = head; i != tail && n < BATCH; i++, n++) {
      uint8_t *s = w->ring + WK_OFF_TX_SLOTS + (size_t)(i % WK_SLOTS) * WK_SLOT_BYTES;
      uint16_t len;
      memcpy(&len, s + WK_SLOT_LEN, 2);
      if (len > WK_MAX_PAYLOAD) len = WK_MAX_PAYLOAD;
      iov[n] = (struct iovec){.iov_base = s + WK_SLOT_DATA, .iov_len = len};
      msgs[n] = (struct mmsghdr){0};
      msgs[n].msg_hdr.msg_name = s + WK_SLOT_ADDR;
      msgs[n].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
      msgs[n].msg_hdr.msg_iov = &iov[n];
      msgs[n].msg_hdr.msg_iovlen = 1;
    }
    int sent = sendmmsg(w->fd, msgs, (unsigned)n, 0);
    if (sent < 0) {
      if (errno == EINTR) continue;
      sent = n; /* a loopback send that fails is dropped, as the network would */
    } else {
      count(w, WK_STAT_SENT, (uint64_t)sent);
    }
    head += (uint32_t)sent;
    total += sent;
    atomic_store_explicit(head_p, head, memory_order_release);
  }
  return total;
}

/* Reads what the socket holds into free event slots and publishes it; returns how many. */
static int receive_batch(wk_t *w) {
  _Atomic uint32_t *tail_p = u32_at(w, WK_OFF_RX_TAIL), *head_p = u32_at(w, WK_OFF_RX_HEAD);
  uint32_t tail = atomic_load_explicit(tail_p, memory_order_relaxed);
  uint32_t free_slots = WK_SLOTS - (tail - atomic_load_explicit(head_p, memory_order_acquire));
  if (free_slots == 0 || atomic_load(&w->ended)) return 0;
  unsigned want = free_slots < BATCH ? free_slots : BATCH;
  struct mmsghdr msgs[BATCH];
  struct iovec iov[BATCH];
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl[BATCH];
  for (unsigned i = 0; i < want; i++) {
    uint8_t *s = w->ring + WK_OFF_RX_SLOTS + (size_t)((tail + i) % WK_SLOTS) * WK_SLOT_BYTES;
    iov[i] = (struct iovec){.iov_base = s + WK_SLOT_DATA, .iov_len = WK_MAX_PAYLOAD};
    msgs[i] = (struct mmsghdr){0};
    msgs[i].msg_hdr.msg_name = s + WK_SLOT_ADDR;
    msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = ctl[i].buf;
    msgs[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
  }
  int n = recvmmsg(w->fd, msgs, want, MSG_DONTWAIT, NULL);
  if (n <= 0) return 0;
  int kept = 0;
  for (int i = 0; i < n; i++) {
    uint8_t *s = w->ring + WK_OFF_RX_SLOTS + (size_t)((tail + i) % WK_SLOTS) * WK_SLOT_BYTES;
    int tos = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c;
         c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) tos = *(uint8_t *)CMSG_DATA(c);
    }
    count(w, WK_STAT_RECEIVED, 1);
    if (tos < 0) count(w, WK_STAT_NO_TOS, 1);
    else count(w, WK_STAT_NOT_ECT + (tos & 3), 1);
    uint16_t len = (uint16_t)msgs[i].msg_len;
    memcpy(s + WK_SLOT_LEN, &len, 2);
    s[WK_SLOT_TOS] = (uint8_t)(tos < 0 ? 0 : tos);
    s[WK_SLOT_FLAGS] = len == 0 ? WK_EV_END : 0;
    kept++;
    if (len == 0) {
      atomic_store(&w->ended, 1);
      break;
    }
  }
  /* Sequentially consistent: wake() reads the waiting flag after this store, and wk_wait sets
   * the flag before it reads the tail (a release store could pass the load and lose a wake-up). */
  atomic_store(tail_p, tail + (uint32_t)kept);
  return kept;
}

static void *io_thread(void *arg) {
  wk_t *w = arg;
  for (;;) {
    send_queued(w);
    if (atomic_load(&w->stop)) break;
    if (receive_batch(w) > 0) {
      wake(w);
      continue;
    }
    atomic_store(&w->sleeping, 1);
    /* Replies queued or a stop between the checks above and the flag are seen here. */
    if (atomic_load_explicit(u32_at(w, WK_OFF_TX_TAIL), memory_order_acquire) !=
            atomic_load_explicit(u32_at(w, WK_OFF_TX_HEAD), memory_order_relaxed) ||
        atomic_load(&w->stop)) {
      atomic_store(&w->sleeping, 0);
      continue;
    }
    struct epoll_event evs[2];
    int n = epoll_wait(w->epfd, evs, 2, -1);
    atomic_store(&w->sleeping, 0);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.fd == w->kickfd) {
        uint64_t v;
        while (read(w->kickfd, &v, sizeof v) < 0 && errno == EINTR) {
        }
      }
    }
  }
  return NULL;
}

int wk_start(wk_t *w) {
  if (w->started || (w->mode == WK_CALLBACK && !w->cb) || (w->mode == WK_DOORBELL && w->bellfd < 0)) {
    errno = EINVAL;
    return -1;
  }
  int rc = pthread_create(&w->thread, NULL, io_thread, w);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  w->started = 1;
  return 0;
}

int wk_wait(wk_t *w) {
  _Atomic uint32_t *tail_p = u32_at(w, WK_OFF_RX_TAIL);
  for (;;) {
    uint32_t tail = atomic_load_explicit(tail_p, memory_order_acquire);
    uint32_t head = atomic_load_explicit(u32_at(w, WK_OFF_RX_HEAD), memory_order_relaxed);
    if (tail != head) return (int)(tail - head);
    if (atomic_load(&w->stop)) return 0;
    atomic_store(&w->waiting, 1);
    if (atomic_load_explicit(tail_p, memory_order_acquire) == tail && !atomic_load(&w->stop)) {
      syscall(SYS_futex, (uint32_t *)tail_p, FUTEX_WAIT_PRIVATE, tail, NULL, NULL, 0);
    }
    atomic_store(&w->waiting, 0);
  }
}

void wk_kick(wk_t *w) {
  if (atomic_load(&w->sleeping)) {
    uint64_t one = 1;
    while (write(w->kickfd, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
}

void wk_stats(const wk_t *w, uint64_t *out) {
  for (int i = 0; i < WK_STAT_COUNT; i++) out[i] = atomic_load(&w->stats[i]);
}

void wk_stop(wk_t *w) {
  atomic_store(&w->stop, 1);
  if (w->started) {
    uint64_t one = 1;
    while (write(w->kickfd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_join(w->thread, NULL);
    w->started = 0;
  }
  futex_wake(u32_at(w, WK_OFF_RX_TAIL));
}

void wk_free(wk_t *w) {
  if (!w) return;
  if (w->ring) wk_stop(w);
  if (w->fd >= 0) close(w->fd);
  if (w->kickfd >= 0) close(w->kickfd);
  if (w->bellfd >= 0) close(w->bellfd);
  if (w->epfd >= 0) close(w->epfd);
  free(w->ring);
  free(w);
}
