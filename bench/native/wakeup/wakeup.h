/*
 * The wake-up probe's library: an I/O thread owns a UDP socket on loopback
 * (epoll, recvmmsg with each datagram's TOS byte, sendmmsg) and a ring of
 * completed events in memory that JavaScript reads and writes directly. The
 * thread wakes JavaScript once per batch by one of three mechanisms, chosen
 * when the handle is made:
 *
 *   WK_CALLBACK  the thread calls a function pointer (a thread-safe FFI
 *                callback) and sends the replies queued by the time it returns;
 *   WK_WAIT      JavaScript calls wk_wait (a non-blocking FFI symbol) when
 *                the ring is empty; it returns when a batch arrives;
 *   WK_DOORBELL  the thread writes one byte to a Unix stream socket that
 *                JavaScript reads with the runtime's own sockets, when the
 *                JavaScript side has said it is parked.
 *
 * A zero-length datagram ends the run: it is delivered as an event with
 * WK_EV_END set and nothing more is read. Functions return ≥ 0 on success
 * or -1 (errno set).
 */
#ifndef SBILAB_WAKEUP_H
#define SBILAB_WAKEUP_H
#include <stdint.h>

enum { WK_CALLBACK = 0, WK_WAIT = 1, WK_DOORBELL = 2 };

/* Ring layout (byte offsets into the region wk_ring returns). Indices are
 * free-running 32-bit counters; a slot is index % WK_SLOTS. */
#define WK_SLOTS 256
#define WK_SLOT_BYTES 2048
#define WK_OFF_RX_TAIL 0     /* u32, written by the thread: events published */
#define WK_OFF_RX_HEAD 64    /* u32, written by JavaScript: events consumed */
#define WK_OFF_TX_TAIL 128   /* u32, written by JavaScript: replies queued */
#define WK_OFF_TX_HEAD 192   /* u32, written by the thread: replies sent */
#define WK_OFF_PARKED 256    /* u32, JavaScript sets 1 before it awaits the doorbell */
#define WK_OFF_RX_SLOTS 4096
#define WK_OFF_TX_SLOTS (WK_OFF_RX_SLOTS + WK_SLOTS * WK_SLOT_BYTES)
#define WK_RING_BYTES (WK_OFF_TX_SLOTS + WK_SLOTS * WK_SLOT_BYTES)

/* A slot: u16 payload length, u8 TOS byte, u8 flags, then the peer's
 * sockaddr_in (16 bytes, opaque to JavaScript: copied from event to reply),
 * then the payload from byte 32. */
#define WK_SLOT_LEN 0
#define WK_SLOT_TOS 2
#define WK_SLOT_FLAGS 3
#define WK_SLOT_ADDR 4
#define WK_SLOT_DATA 32
#define WK_MAX_PAYLOAD (WK_SLOT_BYTES - WK_SLOT_DATA)
#define WK_EV_END 1

/* Counters wk_stats fills, in this order. */
enum {
  WK_STAT_RECEIVED, /* datagrams read, the ending one included */
  WK_STAT_NOT_ECT,  /* of those, by the ECN field of their TOS byte */
  WK_STAT_ECT1,
  WK_STAT_ECT0,
  WK_STAT_CE,
  WK_STAT_NO_TOS,   /* datagrams that came without an IP_TOS control message */
  WK_STAT_SENT,     /* replies sent */
  WK_STAT_BATCHES,  /* batches published to JavaScript */
  WK_STAT_WAKEUPS,  /* wake-ups delivered (callbacks, futex wakes, doorbell bytes) */
  WK_STAT_COUNT
};

typedef struct wk wk_t;

/* Binds a UDP socket to 127.0.0.1:port (0: any) for `mode`; NULL on failure. */
wk_t *wk_new(uint16_t port, int mode);
/* The bound port. */
int wk_port(const wk_t *w);
/* The ring's memory (WK_RING_BYTES long), shared with JavaScript. */
void *wk_ring(wk_t *w);
/* WK_CALLBACK: the function the thread calls after each batch. */
int wk_set_callback(wk_t *w, void (*cb)(void));
/* WK_DOORBELL: connects the doorbell to the Unix socket listening at `path`. */
int wk_set_doorbell(wk_t *w, const char *path);
/* Starts the I/O thread. */
int wk_start(wk_t *w);
/* WK_WAIT: blocks until events are unread (returns how many) or the handle stops (returns 0). */
int wk_wait(wk_t *w);
/* Tells the thread replies are queued; a system call only when the thread sleeps. */
void wk_kick(wk_t *w);
/* Copies the counters into out[WK_STAT_COUNT]. */
void wk_stats(const wk_t *w, uint64_t *out);
/* The ring size in bytes (WK_RING_BYTES). */
int wk_ring_bytes(void);
/* Stops the thread after it sent what is queued (no wk_wait may be pending); idempotent. */
void wk_stop(wk_t *w);
/* Stops the thread (wk_stop) and closes everything; NULL is fine. */
void wk_free(wk_t *w);

#endif
