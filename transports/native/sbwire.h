/*
 * sbwire: the one wire format the native modules (sbh2, sbh3) and their
 * TypeScript side (transports/native/wire.ts) exchange through FFI buffers.
 *
 * Byte order: every integer is LITTLE-ENDIAN, written and read byte by byte
 * by the helpers below, whatever the host's order (on x86-64 and arm64 the
 * compiler turns them into plain loads and stores). TypeScript reads them
 * with DataView(..., true).
 *
 * Header block: the fields of one HTTP message, pseudo-headers first, back to
 * back; each field is
 *   u32 name_len, u32 value_len, name bytes, value bytes.
 * Names are lower-case; names and values are byte strings (a TypeScript
 * string crosses as Latin-1, one byte per character).
 *
 * Event record: one polled event is a 32-byte record, then its payload:
 *   offset 0  u32 type       (enum sbwire_event_type)
 *   offset 4  u32 conn_id    (server connection id where the module has one, else 0)
 *   offset 8  i64 stream_id  (-1 for connection events)
 *   offset 16 i64 code       (per type: HTTP/2 or HTTP/3 error code, module error, status)
 *   offset 24 u32 header_len
 *   offset 28 u32 body_len
 *   then header_len bytes of header block and body_len bytes of body.
 * The poll rule, the same for every poll function of every module (sbh2,
 * sbh3, sbdh3): one poll writes as many whole records as fit, oldest first,
 * back to back, and returns the bytes written; SBWIRE_ERR_DONE when none is
 * queued. When even the first does not fit, it writes the size that record
 * needs as a u64 at offset 0 and returns SBWIRE_ERR_BUFFER_TOO_SHORT. A
 * reader walks every record of a poll (sbwire_next_event).
 *
 * Return codes: every function of every module (sbh2, sbh3, sbdh3 and the
 * load engine linked into them) returns a count (>= 0) or a negative code
 * from enum sbwire_error, one numbering for all (TypeScript: NATIVE_ERR in
 * transports/native/errors.ts). SBWIRE_ERR_DONE means "nothing more to do"
 * and is not a failure.
 *
 * Feeding input (sbh2_conn_recv, sbh2_sconn_recv, sbh3_conn_recv,
 * sbdh3_conn_read) returns the number of events ready to poll, or an error;
 * sbh3_server_recv, which routes a datagram, returns its connection id.
 *
 * Verbs, one meaning each in every module: <prefix>_<object>_new returns
 * NULL on failure; _shutdown starts a graceful close (GOAWAY, close_notify,
 * CONNECTION_CLOSE with no error) and may be called again (0); _free frees
 * the object and what it holds. Both accept NULL (_shutdown then returns
 * SBWIRE_ERR_INVALID). No function is named _close: _close_stream tells a
 * module that the caller's QUIC closed a stream, _close_all closes every
 * connection of a server.
 *
 * Configuration, one style in every module (quiche.h's): one setter per
 * option, <prefix>_<object>_set_<option>(object, value...), returning 0 or
 * a negative sbwire_error (SBWIRE_ERR_INVALID for a NULL object or a value
 * out of range), each documented with its default on its own line; values
 * that are only valid together (sbh3_config_set_send_queue's per-connection
 * and per-endpoint caps, a certificate and its key) go in one call. A
 * setter of a server's limits or of a configuration changes what is created
 * after it; one of a connection applies to that connection. No setter takes
 * an option code (no <prefix>_<object>_set(object, option, value)).
 */
#ifndef SBWIRE_H
#define SBWIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Size of the fixed part of an event record. */
#define SBWIRE_EVENT_HEADER_LEN 32
/* Size of the length prefix of one header field. */
#define SBWIRE_FIELD_PREFIX_LEN 8

enum sbwire_error {
  /* Nothing more to do right now; not a failure. */
  SBWIRE_ERR_DONE = -1,
  /* The caller's buffer is too small (poll writes the size it needs as u64 at offset 0). */
  SBWIRE_ERR_BUFFER_TOO_SHORT = -2,
  /* A bad argument: NULL handle, malformed header block, bad address, wrong state for the call. */
  SBWIRE_ERR_INVALID = -3,
  /* Out of memory. */
  SBWIRE_ERR_NOMEM = -4,
  /* TLS failed: material not loadable, handshake, verification, ALPN, a bad record or an alert. */
  SBWIRE_ERR_TLS = -5,
  /* The peer broke the protocol: bytes that are not HTTP/2, a datagram QUIC rejected. */
  SBWIRE_ERR_PROTO = -6,
  /* The connection is closed or closing (by either side, GOAWAY included). */
  SBWIRE_ERR_CLOSED = -7,
  /* h3: no stream can be opened, or the send queue is full, yet; retry after the next received datagram. */
  SBWIRE_ERR_STREAM_BLOCKED = -8,
  /* The connection or stream is unknown. */
  SBWIRE_ERR_NOT_FOUND = -9,
  /* h3: the connection was idle for longer than the idle timeout. */
  SBWIRE_ERR_IDLE = -10,
  /* The protocol library returned an unexpected error. */
  SBWIRE_ERR_INTERNAL = -11,
  /* h3: nothing listens at the peer's UDP port (ICMP port unreachable). */
  SBWIRE_ERR_REFUSED = -12,
  /* h3: a socket call failed (errno in the connection's error text where it applies). */
  SBWIRE_ERR_SOCKET = -13,
};

enum sbwire_event_type {
  /* Handshake completed (client; an h3 server too, with the connection id). */
  SBWIRE_EV_CONNECTED = 1,
  /* A complete request (server) or response (client): headers and body. */
  SBWIRE_EV_MESSAGE = 2,
  /* The stream ended before its message completed; code = protocol error code. */
  SBWIRE_EV_RESET = 3,
  /* The connection can carry nothing more; code = the module's error code. */
  SBWIRE_EV_CLOSED = 4,
  /* The peer sent GOAWAY: open no new streams. */
  SBWIRE_EV_GOAWAY = 5,
  /* A response body the caller lent (not copied) is no longer referenced; code = the caller's token. */
  SBWIRE_EV_RELEASED = 6,
  /* Server: a request body passed a limit; headers only, the body dropped; code = the status to answer
     (SBWIRE_TOO_LARGE_BODY, SBWIRE_TOO_LARGE_BUDGET). Every module reports it this way. */
  SBWIRE_EV_TOO_LARGE = 7,
  /* Client: the server refused 0-RTT; what was submitted early is gone and must be submitted again. */
  SBWIRE_EV_EARLY_REJECTED = 8,
};

/* Codes of a TOO_LARGE event: the HTTP status the caller answers. */
enum sbwire_too_large {
  /* The body passed the server's body limit. */
  SBWIRE_TOO_LARGE_BODY = 413,
  /* The body did not fit in the server's budget for request bodies buffered at once (h2). */
  SBWIRE_TOO_LARGE_BUDGET = 503,
};

/* Bits of a TLS session's state (sbh2_tls_state, sbh3_*_tls_state), one numbering for both modules. */
enum sbwire_tls_state {
  /* The handshake completed; application data flows. */
  SBWIRE_TLS_ESTABLISHED = 1,
  /* The handshake resumed an earlier session (a ticket was accepted). */
  SBWIRE_TLS_RESUMED = 2,
  /* h3: 0-RTT data was accepted (server: received and accepted; client: the server accepted it). */
  SBWIRE_TLS_EARLY_ACCEPTED = 4,
  /* Client: a ticket arrived that has not been taken yet. */
  SBWIRE_TLS_TICKET = 8,
  /* h3 client: 0-RTT was attempted. */
  SBWIRE_TLS_EARLY_ATTEMPTED = 16,
  /* h2: the peer sent close_notify. */
  SBWIRE_TLS_PEER_CLOSED = 32,
  /* h2: a fatal TLS error happened (text: sbh2_tls_error). */
  SBWIRE_TLS_FAILED = 64,
};

/* Peer verification of a TLS configuration (sbh2_tls_config_set_verify, sbh3_config_set_verify). */
enum sbwire_tls_verify {
  /* Client: accept any server certificate. Server: ask for no client certificate (the server's default). */
  SBWIRE_TLS_VERIFY_NONE = 0,
  /* Client: verify the chain and the host name (the client's default). Server: require a verified client certificate. */
  SBWIRE_TLS_VERIFY_PEER = 1,
};

/* What a TLS info call (sbh2_tls_info, sbh3_*_tls_info) writes: text, no NUL. */
enum sbwire_tls_info {
  /* Protocol version, e.g. "TLS1.3". */
  SBWIRE_TLS_INFO_VERSION = 1,
  /* Cipher suite, e.g. "TLS_AES_128_GCM_SHA256". */
  SBWIRE_TLS_INFO_SUITE = 2,
  /* Key-exchange group, e.g. "SECP256R1". */
  SBWIRE_TLS_INFO_GROUP = 3,
  /* Negotiated ALPN protocol ("h2", "h3"). */
  SBWIRE_TLS_INFO_ALPN = 4,
  /* RFC 4514 subject of the peer's verified certificate (empty when it sent none). */
  SBWIRE_TLS_INFO_PEER_SUBJECT = 5,
};

/* Writes v little-endian at p. */
static inline void sbwire_put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* Writes v little-endian at p. */
static inline void sbwire_put_u64(uint8_t *p, uint64_t v) {
  sbwire_put_u32(p, (uint32_t)v);
  sbwire_put_u32(p + 4, (uint32_t)(v >> 32));
}

/* Reads a little-endian u32 at p. */
static inline uint32_t sbwire_get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads a little-endian u64 at p. */
static inline uint64_t sbwire_get_u64(const uint8_t *p) {
  return (uint64_t)sbwire_get_u32(p) | (uint64_t)sbwire_get_u32(p + 4) << 32;
}

/* Writes the fixed 32-byte part of an event record at p. */
static inline void sbwire_put_event(uint8_t *p, uint32_t type, uint32_t conn_id, int64_t stream_id, int64_t code,
                                    uint32_t header_len, uint32_t body_len) {
  sbwire_put_u32(p, type);
  sbwire_put_u32(p + 4, conn_id);
  sbwire_put_u64(p + 8, (uint64_t)stream_id);
  sbwire_put_u64(p + 16, (uint64_t)code);
  sbwire_put_u32(p + 24, header_len);
  sbwire_put_u32(p + 28, body_len);
}

/* Appends one field at p (room for SBWIRE_FIELD_PREFIX_LEN + nl + vl bytes); returns the bytes written. */
static inline size_t sbwire_put_field(uint8_t *p, const uint8_t *name, size_t nl, const uint8_t *value, size_t vl) {
  sbwire_put_u32(p, (uint32_t)nl);
  sbwire_put_u32(p + 4, (uint32_t)vl);
  memcpy(p + SBWIRE_FIELD_PREFIX_LEN, name, nl);
  memcpy(p + SBWIRE_FIELD_PREFIX_LEN + nl, value, vl);
  return SBWIRE_FIELD_PREFIX_LEN + nl + vl;
}

/* Counts the fields of a header block; returns -1 when it is truncated. */
static inline long sbwire_count_fields(const uint8_t *b, size_t len) {
  long n = 0;
  for (size_t off = 0; off < len; n++) {
    if (len - off < SBWIRE_FIELD_PREFIX_LEN) return -1;
    uint64_t nl = sbwire_get_u32(b + off), vl = sbwire_get_u32(b + off + 4);
    if (nl + vl > len - off - SBWIRE_FIELD_PREFIX_LEN) return -1;
    off += SBWIRE_FIELD_PREFIX_LEN + (size_t)(nl + vl);
  }
  return n;
}

/* Reads the field at *off of a block already checked by sbwire_count_fields and advances *off. */
static inline void sbwire_next_field(const uint8_t *b, size_t *off, const uint8_t **name, size_t *nl,
                                     const uint8_t **value, size_t *vl) {
  *nl = sbwire_get_u32(b + *off);
  *vl = sbwire_get_u32(b + *off + 4);
  *name = b + *off + SBWIRE_FIELD_PREFIX_LEN;
  *value = *name + *nl;
  *off += SBWIRE_FIELD_PREFIX_LEN + *nl + *vl;
}

/* One event record read back from a poll's output (views into it). */
typedef struct sbwire_event {
  uint32_t type, conn_id;
  int64_t stream_id, code;
  const uint8_t *hdr, *body;
  uint32_t hdr_len, body_len;
} sbwire_event;

/* Reads the record at *off of the n bytes a poll wrote into e and advances *off; 1, or 0 when none (whole) is left. */
static inline int sbwire_next_event(const uint8_t *buf, size_t n, size_t *off, sbwire_event *e) {
  if (*off >= n || n - *off < SBWIRE_EVENT_HEADER_LEN) return 0;
  const uint8_t *p = buf + *off;
  e->type = sbwire_get_u32(p);
  e->conn_id = sbwire_get_u32(p + 4);
  e->stream_id = (int64_t)sbwire_get_u64(p + 8);
  e->code = (int64_t)sbwire_get_u64(p + 16);
  e->hdr_len = sbwire_get_u32(p + 24);
  e->body_len = sbwire_get_u32(p + 28);
  if ((uint64_t)e->hdr_len + e->body_len > n - *off - SBWIRE_EVENT_HEADER_LEN) return 0;
  e->hdr = p + SBWIRE_EVENT_HEADER_LEN;
  e->body = e->hdr + e->hdr_len;
  *off += SBWIRE_EVENT_HEADER_LEN + (size_t)e->hdr_len + e->body_len;
  return 1;
}

#endif /* SBWIRE_H */
