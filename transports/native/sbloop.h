/*
 * sbloop: a native module's own I/O thread.
 *
 * The thread waits (epoll) on the module's sockets and its timers, does the
 * protocol work under the loop's lock, and when that work left events for
 * JavaScript (complete requests or responses, closes) it calls the caller's
 * wake function once for the whole batch, without the lock. JavaScript gives
 * wake as a Deno.UnsafeCallback.threadSafe callback: Deno runs it on the event
 * loop and the thread waits until it has returned, so one wake-up carries
 * every event of the batch. Datagrams or segments that need no JavaScript
 * (acknowledgements, handshakes, retransmissions) never wake it.
 *
 * Every other call into the module from JavaScript takes the lock first
 * (sbloop_lock/sbloop_unlock; it is recursive), so the module's state is only
 * ever touched by one thread at a time. sbloop_flush sends what JavaScript
 * queued (its answers) from JavaScript's own thread and tells the loop thread
 * when that moved the next timer earlier. Functions return 0 or a negative
 * sbwire_error, as every function of the modules does.
 *
 * Both native modules link this file; each gives the loop its protocol
 * through sbloop_ops.
 */
#ifndef SBLOOP_H
#define SBLOOP_H

#include <stdint.h>

#include "sbwire.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sbloop sbloop;

/* The protocol a loop runs, called on the loop thread under the lock (flush also on JavaScript's). */
typedef struct sbloop_ops {
  /* Takes in what is ready: the tags of the watched descriptors that are (n of them; n = 0 when only a
   * timer is due), runs due timers. Returns nonzero when events wait for JavaScript: the loop then wakes
   * it instead of flushing. */
  int (*work)(void *owner, const uint64_t *ready, int n);
  /* Sends everything due. */
  void (*flush)(void *owner);
  /* Milliseconds until the next timer, or a negative value for none. */
  int (*timeout_ms)(void *owner);
} sbloop_ops;

/* Counters of sbloop_stats, as u64 in this order. */
enum sbloop_stat {
  SBLOOP_STAT_WAKEUPS = 0,  /* times the thread left epoll_wait */
  SBLOOP_STAT_READABLE = 1, /* of those, for a ready descriptor */
  SBLOOP_STAT_CALLS = 2,    /* times JavaScript was woken (one per batch of events) */
  SBLOOP_STAT_FLUSHES = 3,  /* sends done by the thread itself (nothing for JavaScript) */
  SBLOOP_STAT_KICKS = 4,    /* times JavaScript moved the thread's next timer earlier */
  SBLOOP_STAT_COUNT = 5,
};

/* A loop for owner, watching nothing yet; wake is called without the lock. NULL on failure. */
sbloop *sbloop_new(const sbloop_ops *ops, void *owner, void (*wake)(void));
/* Watches fd (not owned) for reading, and for writing too when writable is nonzero, reporting it to work
 * as tag (never 0); again for a watched fd changes what it is watched for. Any thread, lock or not. */
int sbloop_watch(sbloop *l, int fd, uint64_t tag, int writable);
/* Stops watching fd (before it is closed). */
int sbloop_unwatch(sbloop *l, int fd);
/* Starts the thread, named "sbloop". */
int sbloop_start(sbloop *l);
/* Takes the loop's lock (recursive); 0. */
int sbloop_lock(sbloop *l);
/* Gives the lock back; 0. */
int sbloop_unlock(sbloop *l);
/* Under the lock: sends everything due, then wakes the thread if its next timer moved earlier. */
int sbloop_flush(sbloop *l);
/* Stops the thread and waits for it (call it off JavaScript's thread: the thread may be waiting on wake). */
int sbloop_stop(sbloop *l);
/* Copies up to n counters (enum sbloop_stat); returns how many. */
int sbloop_stats(sbloop *l, uint64_t *out, int n);
/* Frees a stopped (or never started) loop. */
void sbloop_free(sbloop *l);

#ifdef __cplusplus
}
#endif

#endif
