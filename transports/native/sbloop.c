/* sbloop: a native module's own I/O thread (see sbloop.h). */
#define _GNU_SOURCE
#include "sbloop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* The epoll tag of the eventfd that JavaScript kicks (the module's tags are never 0). */
#define TAG_KICK 0
/* Descriptors reported per wake-up at most; the rest stay ready for the next (level-triggered). */
#define MAX_READY 64

struct sbloop {
  int epfd, kickfd;
  const sbloop_ops *ops;
  void *owner;
  void (*wake)(void);
  pthread_mutex_t mu;
  pthread_t thread;
  int started;
  atomic_int stop;
  /* When the thread wakes at the latest (monotonic ns), UINT64_MAX for no timer: sbloop_flush compares. */
  _Atomic uint64_t deadline;
  _Atomic uint64_t st[SBLOOP_STAT_COUNT];
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count(sbloop *l, int i) { atomic_fetch_add_explicit(&l->st[i], 1, memory_order_relaxed); }

static void kick(sbloop *l) {
  uint64_t one = 1;
  while (write(l->kickfd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

sbloop *sbloop_new(const sbloop_ops *ops, void *owner, void (*wake)(void)) {
  if (!ops || !ops->work || !ops->flush || !ops->timeout_ms || !wake) return NULL;
  sbloop *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->ops = ops;
  l->owner = owner;
  l->wake = wake;
  l->epfd = epoll_create1(EPOLL_CLOEXEC);
  l->kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&l->mu, &a);
  pthread_mutexattr_destroy(&a);
  atomic_store(&l->deadline, UINT64_MAX);
  struct epoll_event k = {.events = EPOLLIN, .data.u64 = TAG_KICK};
  if (l->epfd < 0 || l->kickfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->kickfd, &k) != 0) {
    sbloop_free(l);
    return NULL;
  }
  return l;
}

int sbloop_watch(sbloop *l, int fd, uint64_t tag, int writable) {
  if (!l || fd < 0 || tag == TAG_KICK) return SBWIRE_ERR_INVALID;
  struct epoll_event e = {.events = EPOLLIN | (writable ? EPOLLOUT : 0), .data.u64 = tag};
  if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &e) == 0) return 0;
  if (errno == EEXIST && epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &e) == 0) return 0;
  return SBWIRE_ERR_SOCKET;
}

int sbloop_unwatch(sbloop *l, int fd) {
  if (!l || fd < 0) return SBWIRE_ERR_INVALID;
  return epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) == 0 ? 0 : SBWIRE_ERR_SOCKET;
}

/* The thread: wait for the socket, a kick or the next timer; work under the lock; wake JavaScript without it. */
static void *run(void *arg) {
  sbloop *l = arg;
  while (!atomic_load(&l->stop)) {
    pthread_mutex_lock(&l->mu);
    int ms = l->ops->timeout_ms(l->owner);
    atomic_store(&l->deadline, ms < 0 ? UINT64_MAX : mono_ns() + (uint64_t)ms * 1000000ull);
    pthread_mutex_unlock(&l->mu);
    struct epoll_event ev[MAX_READY];
    int n = epoll_wait(l->epfd, ev, MAX_READY, ms < 0 ? -1 : ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    count(l, SBLOOP_STAT_WAKEUPS);
    uint64_t ready[MAX_READY];
    int nready = 0, kicked = 0;
    for (int i = 0; i < n; i++) {
      if (ev[i].data.u64 == TAG_KICK) {
        uint64_t v;
        while (read(l->kickfd, &v, sizeof v) < 0 && errno == EINTR) {
        }
        kicked = 1;
      } else {
        ready[nready++] = ev[i].data.u64;
      }
    }
    if (atomic_load(&l->stop)) break;
    /* A kick alone only moved the timer: wait again with the new one. */
    if (kicked && !nready) continue;
    if (nready) count(l, SBLOOP_STAT_READABLE);
    pthread_mutex_lock(&l->mu);
    int pending = l->ops->work(l->owner, ready, nready);
    if (!pending) l->ops->flush(l->owner);
    pthread_mutex_unlock(&l->mu);
    if (pending) {
      count(l, SBLOOP_STAT_CALLS);
      l->wake(); /* returns once JavaScript has run it */
    } else {
      count(l, SBLOOP_STAT_FLUSHES);
    }
  }
  return NULL;
}

int sbloop_start(sbloop *l) {
  if (!l || l->started) return SBWIRE_ERR_INVALID;
  if (pthread_create(&l->thread, NULL, run, l) != 0) return SBWIRE_ERR_INTERNAL;
  pthread_setname_np(l->thread, "sbloop"); /* as top, perf and /proc/<pid>/task/<tid>/comm name it */
  l->started = 1;
  return 0;
}

int sbloop_lock(sbloop *l) {
  if (!l) return SBWIRE_ERR_INVALID;
  pthread_mutex_lock(&l->mu);
  return 0;
}

int sbloop_unlock(sbloop *l) {
  if (!l) return SBWIRE_ERR_INVALID;
  pthread_mutex_unlock(&l->mu);
  return 0;
}

int sbloop_flush(sbloop *l) {
  if (!l) return SBWIRE_ERR_INVALID;
  pthread_mutex_lock(&l->mu);
  l->ops->flush(l->owner);
  int ms = l->ops->timeout_ms(l->owner);
  pthread_mutex_unlock(&l->mu);
  /* The thread sleeps until its own deadline: tell it when the one the flush set comes sooner. */
  if (ms >= 0 && l->started && mono_ns() + (uint64_t)ms * 1000000ull < atomic_load(&l->deadline)) {
    atomic_store(&l->deadline, 0); /* one kick until the thread sets its next deadline */
    count(l, SBLOOP_STAT_KICKS);
    kick(l);
  }
  return 0;
}

int sbloop_stop(sbloop *l) {
  if (!l) return SBWIRE_ERR_INVALID;
  if (!l->started) return 0;
  atomic_store(&l->stop, 1);
  kick(l);
  pthread_join(l->thread, NULL);
  l->started = 0;
  return 0;
}

int sbloop_stats(sbloop *l, uint64_t *out, int n) {
  if (!l || !out || n < 0) return SBWIRE_ERR_INVALID;
  if (n > SBLOOP_STAT_COUNT) n = SBLOOP_STAT_COUNT;
  for (int i = 0; i < n; i++) out[i] = atomic_load_explicit(&l->st[i], memory_order_relaxed);
  return n;
}

void sbloop_free(sbloop *l) {
  if (!l) return;
  sbloop_stop(l);
  if (l->epfd >= 0) close(l->epfd);
  if (l->kickfd >= 0) close(l->kickfd);
  pthread_mutex_destroy(&l->mu);
  free(l);
}
