/*
 * sbdh3: HTTP/3 framing and QPACK (nghttp3) over QUIC streams the caller
 * carries. The deno stack's QUIC is Deno's own (quinn with rustls); this shim
 * turns the bytes of its streams into complete messages and back, so the
 * deno stack's h3 differs from the native one only in the QUIC layer.
 *
 * Bring your own streams: the caller opens the three unidirectional streams
 * HTTP/3 needs and binds them, feeds every byte that arrives on any stream
 * (sbdh3_conn_read), pulls what is due on any stream (sbdh3_conn_write), and
 * polls complete messages as event records in the shared wire format
 * (transports/native/sbwire.h). The caller's QUIC is reliable, so bytes are
 * acknowledged to nghttp3 as soon as they are handed out.
 *
 * The HTTP/3 rules (limits, what goes up as an event) are the one layer's
 * both h3 modules link (transports/native/sbhttp3.h); this shim adds only the
 * caller-carried streams: what QUIC must do goes up as an event (a RESET
 * event asks the caller to reset that stream both ways).
 *
 * Functions return a count (>= 0) or a negative code of the shared enum
 * sbwire_error (transports/native/sbwire.h): SBWIRE_ERR_DONE means "nothing
 * more to do" and is not a failure; SBWIRE_ERR_PROTO means the peer broke
 * HTTP/3 and the connection must close with sbdh3_conn_error_code.
 */
#ifndef SBDH3_H
#define SBDH3_H

#include <stddef.h>
#include <stdint.h>

typedef struct sbdh3_conn sbdh3_conn;

/* Returns "sbdh3 <version>, nghttp3 <version>" (static storage). */
const char *sbdh3_version(void);
/* Creates one connection's HTTP/3 layer: server (1) or client (0), each body at most max_body bytes (> 0), each header section at most max_field_section bytes (name + value + 32 per field; 0: 16384), advertised in SETTINGS; NULL on failure. */
sbdh3_conn *sbdh3_conn_new(int server, uint64_t max_body, uint64_t max_field_section);
/* Frees the connection and every message it holds; accepts NULL. */
void sbdh3_conn_free(sbdh3_conn *c);
/* Server: the number of client bidirectional streams the QUIC layer allows at once. */
int sbdh3_conn_set_max_streams(sbdh3_conn *c, uint64_t n);
/* Binds the caller's three unidirectional streams: control, QPACK encoder, QPACK decoder. */
int sbdh3_conn_bind(sbdh3_conn *c, int64_t control, int64_t qpack_encoder, int64_t qpack_decoder);
/* Feeds len bytes that arrived on stream_id (fin: the peer ended the stream); returns the number of events ready to poll, or a negative code. */
int sbdh3_conn_read(sbdh3_conn *c, int64_t stream_id, const uint8_t *data, size_t len, int fin);
/* Writes up to cap bytes due on one stream into out; meta gets i64 stream id and u32 fin (16 bytes); returns the bytes (0 with fin: end the stream) or SBWIRE_ERR_DONE. */
int64_t sbdh3_conn_write(sbdh3_conn *c, uint8_t *out, size_t cap, uint8_t *meta);
/* Client: submits a request on the bidirectional stream stream_id the caller opened: an sbwire header block and a body (copied). */
int sbdh3_conn_request(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len);
/* Server: submits the response on stream_id: an sbwire header block and a body (copied). */
int sbdh3_conn_respond(sbdh3_conn *c, int64_t stream_id, const uint8_t *hdrs, size_t hdrs_len, const uint8_t *body,
                       size_t body_len);
/* Polls MESSAGE, RESET, GOAWAY and TOO_LARGE events (sbwire records) into buf; returns the bytes written, SBWIRE_ERR_DONE or SBWIRE_ERR_BUFFER_TOO_SHORT. */
int64_t sbdh3_conn_poll(sbdh3_conn *c, uint8_t *buf, size_t cap);
/* The QUIC layer closed stream_id (ended both ways, or reset with app_error); forgets it. */
int sbdh3_conn_close_stream(sbdh3_conn *c, int64_t stream_id, uint64_t app_error);
/* Server: starts a graceful shutdown: GOAWAY, then no new requests. */
int sbdh3_conn_shutdown(sbdh3_conn *c);
/* The HTTP/3 error code to close the QUIC connection with after SBWIRE_ERR_PROTO. */
uint64_t sbdh3_conn_error_code(sbdh3_conn *c);
/* Streams with a message in progress or queued. */
int sbdh3_conn_stream_count(sbdh3_conn *c);

#endif /* SBDH3_H */
