/*
 * sbhttp3: the one HTTP/3 layer (nghttp3) under both h3 modules: the native
 * one (transports/h3/native, over ngtcp2) and the deno stack's framing shim
 * (transports/deno/native, over the QUIC streams Deno carries). It turns the
 * bytes of a connection's streams into complete messages, queued as sbwire
 * event records (transports/native/sbwire.h), and submits requests and
 * responses from sbwire header blocks.
 *
 * Its rules, the same for both modules:
 *   - a header section (RFC 9114 §4.2.2 size: name + value + 32 per field)
 *     is at most max_field bytes, advertised as SETTINGS_MAX_FIELD_SECTION_SIZE;
 *     past it the stream is given up both ways with H3_EXCESSIVE_LOAD and the
 *     connection keeps serving;
 *   - a body is at most max_body bytes (a larger content-length counts at
 *     once): a server stops reading with H3_NO_ERROR and posts TOO_LARGE with
 *     the headers (the caller answers 413, RFC 9114 §4.1.2); a client gives
 *     the stream up with H3_EXCESSIVE_LOAD;
 *   - a header block to submit has at least one field and no empty name;
 *   - a client learns of every request stream that ends without its
 *     response through a RESET event; a server's caller answers each
 *     MESSAGE or TOO_LARGE it polled.
 *
 * What the layer needs from the QUIC layer under it is one table of hooks
 * (struct sbhttp3_quic). A module whose caller carries the streams passes
 * NULL: then a stream to give up goes up as a RESET event, which the caller
 * answers by resetting the stream both ways.
 *
 * Private to the modules: every function has hidden visibility.
 */
#ifndef SBHTTP3_H
#define SBHTTP3_H

#include <nghttp3/nghttp3.h>
#include <stddef.h>
#include <stdint.h>

#include "sbwire.h"

#define SBHTTP3_HIDDEN __attribute__((visibility("hidden")))

/* Default cap of a header section, bytes (RFC 9114 size); the same as the h2 module's header list. */
#define SBHTTP3_MAX_FIELD_SECTION 16384
/* Bit in the code of a server MESSAGE event: the request arrived (at least partly) in 0-RTT. */
#define SBHTTP3_MSG_EARLY 1

/* A growable byte buffer. */
typedef struct sbhttp3_buf {
  uint8_t *p;
  size_t len, cap;
} sbhttp3_buf;

/* One queued event: an sbwire record with its header block and body. */
typedef struct sbhttp3_event {
  struct sbhttp3_event *next;
  uint32_t type, conn_id;
  int64_t stream_id, code;
  sbhttp3_buf hdr, body;
} sbhttp3_event;

/* A queue of events in arrival order. */
typedef struct sbhttp3_evq {
  sbhttp3_event *head, *tail;
  size_t n; /* events queued */
} sbhttp3_evq;

/* One request stream. */
typedef struct sbhttp3_stream {
  struct sbhttp3_stream *prev, *next;
  int64_t id;
  sbhttp3_buf hdr, body; /* received message, moved into an event when complete */
  uint64_t field_bytes;  /* RFC 9114 size of the header section received so far */
  uint64_t cl;           /* announced content-length (UINT64_MAX: none) */
  uint8_t *out;          /* body being sent, kept until the stream closes */
  size_t out_len;
  int done;              /* its MESSAGE, TOO_LARGE or RESET went up, or it was given up */
  int aborted;           /* body too large: the rest is dropped */
  int early;             /* server: part of the request came in 0-RTT */
} sbhttp3_stream;

/* What the layer asks of the QUIC layer under it; each entry may be NULL (nothing to do there). */
typedef struct sbhttp3_quic {
  /* n bytes of stream_id were consumed: credit them to flow control. */
  void (*consumed)(void *quic, int64_t stream_id, size_t n);
  /* Stop reading stream_id (STOP_SENDING with app_error). */
  void (*stop_reading)(void *quic, int64_t stream_id, uint64_t app_error);
  /* Reset the sending side of stream_id with app_error. */
  void (*reset_writing)(void *quic, int64_t stream_id, uint64_t app_error);
  /* nghttp3 closed stream_id (its state, if any, is already freed). */
  void (*stream_closed)(void *quic, int64_t stream_id);
  /* s is about to be freed. */
  void (*stream_freed)(void *quic, sbhttp3_stream *s);
} sbhttp3_quic;

/* One connection's HTTP/3 session. Fields are read by the modules; the layer's functions write them. */
typedef struct sbhttp3 {
  nghttp3_conn *hc;            /* NULL until sbhttp3_start */
  int server;
  uint32_t conn_id;            /* the conn_id of its events */
  uint64_t max_body, max_field;
  sbhttp3_evq *q;              /* where its events go (the caller's queue) */
  sbhttp3_stream *streams;
  int nstreams;
  int goaway;                  /* client: the peer sent GOAWAY */
  int rx_early;                /* the bytes being read came in 0-RTT */
  uint64_t first_header_ns;    /* client: when the first response header arrived (0: none yet) */
  uint64_t error_code;         /* the H3 code to close the connection with after SBWIRE_ERR_PROTO */
  const sbhttp3_quic *quic;    /* hooks, or NULL */
  void *quic_ctx;
} sbhttp3;

/* Grows b so that extra more bytes fit; 0 or -1. */
SBHTTP3_HIDDEN int sbhttp3_buf_reserve(sbhttp3_buf *b, size_t extra);
/* Appends n bytes; 0 or -1. */
SBHTTP3_HIDDEN int sbhttp3_buf_append(sbhttp3_buf *b, const void *data, size_t n);
/* Frees b's bytes and empties it. */
SBHTTP3_HIDDEN void sbhttp3_buf_free(sbhttp3_buf *b);

/* Queues an event; NULL when out of memory. */
SBHTTP3_HIDDEN sbhttp3_event *sbhttp3_evq_push(sbhttp3_evq *q, uint32_t type, uint32_t conn_id, int64_t stream_id,
                                               int64_t code);
/* Frees every queued event. */
SBHTTP3_HIDDEN void sbhttp3_evq_clear(sbhttp3_evq *q);
/* Writes queued events into out by sbwire.h's poll rule; bytes written, SBWIRE_ERR_DONE or SBWIRE_ERR_BUFFER_TOO_SHORT. */
SBHTTP3_HIDDEN int64_t sbhttp3_evq_poll(sbhttp3_evq *q, uint8_t *out, size_t cap);

/* Prepares h (no session yet): role, limits (max_field 0: SBHTTP3_MAX_FIELD_SECTION), event queue, QUIC hooks. */
SBHTTP3_HIDDEN void sbhttp3_init(sbhttp3 *h, int server, uint64_t max_body, uint64_t max_field, sbhttp3_evq *q,
                                 const sbhttp3_quic *quic, void *quic_ctx);
/* Creates the nghttp3 session with the layer's settings; 0 or an sbwire_error. The caller binds its streams. */
SBHTTP3_HIDDEN int sbhttp3_start(sbhttp3 *h);
/* Frees every stream and the session (h can be started again); queued events stay. */
SBHTTP3_HIDDEN void sbhttp3_stop(sbhttp3 *h);

/* The stream with this id, or NULL. */
SBHTTP3_HIDDEN sbhttp3_stream *sbhttp3_stream_find(sbhttp3 *h, int64_t id);
/* Unlinks and frees a stream (the stream_freed hook first). */
SBHTTP3_HIDDEN void sbhttp3_stream_free(sbhttp3 *h, sbhttp3_stream *s);

/* Feeds bytes of stream_id (early: they came in 0-RTT); nghttp3's result (consumed bytes or an nghttp3 error). */
SBHTTP3_HIDDEN nghttp3_ssize sbhttp3_read(sbhttp3 *h, int64_t stream_id, const uint8_t *data, size_t len, int fin,
                                          int early);
/* Client: submits a request on the bidirectional stream stream_id (header block and body copied); 0 or an sbwire_error. */
SBHTTP3_HIDDEN int sbhttp3_request(sbhttp3 *h, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len,
                                   const uint8_t *body, size_t body_len);
/* Server: answers the request on s, polled as MESSAGE or TOO_LARGE (header block and body copied); 0 or an sbwire_error. */
SBHTTP3_HIDDEN int sbhttp3_respond(sbhttp3 *h, sbhttp3_stream *s, const uint8_t *hdrs, size_t hdrs_len,
                                   const uint8_t *body, size_t body_len);
/* Points a new array of nghttp3 fields into an sbwire header block (at least one field, no empty name); 0 or an sbwire_error. */
SBHTTP3_HIDDEN int sbhttp3_fields_of(const uint8_t *hdrs, size_t len, nghttp3_nv **pnv, size_t *count);
/* sbwire_error for an nghttp3 error (a fatal one keeps its H3 code in h->error_code). */
SBHTTP3_HIDDEN int sbhttp3_error(sbhttp3 *h, int rv);

#endif /* SBHTTP3_H */
