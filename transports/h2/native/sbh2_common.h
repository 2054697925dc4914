/*
 * Pieces the sbh2 client (sbh2.c) and server (sbh2_server.c) share. Private
 * to the module: static inline helpers, no symbols of their own.
 */
#ifndef SBH2_COMMON_H
#define SBH2_COMMON_H

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../native/sbwire.h"

/* Grows *buf to hold at least need bytes (doubling); returns 0 or -1 when out of memory. */
static inline int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  uint8_t *p = realloc(*buf, n);
  if (!p) return -1;
  *buf = p;
  *cap = n;
  return 0;
}

/* Keeps the first error text: later ones do not overwrite it. */
static inline void sbh2_set_err(char *err, size_t cap, const char *msg) {
  if (err[0] == 0) snprintf(err, cap, "%s", msg);
}

/* Copies NUL-terminated text into buf (truncated to cap); returns its length. */
static inline int sbh2_copy_text(const char *text, uint8_t *buf, uint32_t cap) {
  size_t n = strlen(text);
  if (n > cap) n = cap;
  memcpy(buf, text, n);
  return (int)n;
}

/*
 * Points nghttp2 name/value pairs at the fields of a header block (no copy):
 * into stack (stack_cap entries) when they fit, else a malloc'd array the
 * caller frees when it differs from stack. Returns NULL with *count = 0 for a
 * truncated block, NULL with *count > 0 when out of memory.
 */
static inline nghttp2_nv *sbh2_block_to_nv(const uint8_t *b, size_t len, nghttp2_nv *stack, size_t stack_cap,
                                           size_t *count) {
  long n = sbwire_count_fields(b, len);
  *count = n < 0 ? 0 : (size_t)n;
  if (n < 0) return NULL;
  nghttp2_nv *nv = (size_t)n <= stack_cap ? stack : malloc((size_t)n * sizeof *nv);
  if (!nv) return NULL;
  size_t off = 0;
  for (long i = 0; i < n; i++) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(b, &off, &name, &nl, &value, &vl);
    nv[i].name = (uint8_t *)name;
    nv[i].namelen = nl;
    nv[i].value = (uint8_t *)value;
    nv[i].valuelen = vl;
    nv[i].flags = NGHTTP2_NV_FLAG_NONE;
  }
  return nv;
}

/* Copies nghttp2's error text into err unless an earlier error is kept there. */
static inline void sbh2_keep_error(char *err, size_t cap, const char *msg, size_t len) {
  if (err[0] == 0) snprintf(err, cap, "%.*s", (int)len, msg);
}

/* A message being received: its header block (sbwire) and body. */
struct sbh2_msg {
  uint8_t *hdrs;
  size_t hdrs_len, hdrs_cap;
  uint8_t *body;
  size_t body_len, body_cap;
};

/* Appends one field; a content-length up to max_body reserves the body once. Returns 0 or -1 (out of memory). */
static inline int sbh2_msg_add_field(struct sbh2_msg *m, const uint8_t *name, size_t nl, const uint8_t *value,
                                     size_t vl, uint64_t max_body) {
  if (nl == 14 && memcmp(name, "content-length", 14) == 0 && m->body_cap == 0) {
    uint64_t n = 0;
    for (size_t i = 0; i < vl && i < 19; i++) n = n * 10 + (uint64_t)(value[i] - '0');
    /* nghttp2 already checked that the value is a number */
    if (n > 0 && n <= max_body && grow(&m->body, &m->body_cap, (size_t)n) != 0) return -1;
  }
  if (grow(&m->hdrs, &m->hdrs_cap, m->hdrs_len + SBWIRE_FIELD_PREFIX_LEN + nl + vl) != 0) return -1;
  m->hdrs_len += sbwire_put_field(m->hdrs + m->hdrs_len, name, nl, value, vl);
  return 0;
}

/* Appends body bytes; returns 0 or -1 (out of memory). */
static inline int sbh2_msg_add_data(struct sbh2_msg *m, const uint8_t *data, size_t len) {
  if (grow(&m->body, &m->body_cap, m->body_len + len) != 0) return -1;
  memcpy(m->body + m->body_len, data, len);
  m->body_len += len;
  return 0;
}

/* Drops the body (kept: the header block). */
static inline void sbh2_msg_drop_body(struct sbh2_msg *m) {
  free(m->body);
  m->body = NULL;
  m->body_len = m->body_cap = 0;
}

/* Frees both buffers. */
static inline void sbh2_msg_clear(struct sbh2_msg *m) {
  free(m->hdrs);
  free(m->body);
  memset(m, 0, sizeof *m);
}

/* Writes an event record with m's header block and body (m NULL: none) at buf + *n; returns 1, or 0 when *need bytes do not fit. */
static inline int sbh2_msg_put_event(const struct sbh2_msg *m, uint8_t *buf, size_t cap, size_t *n, uint32_t type,
                                     int64_t stream_id, int64_t code, size_t *need) {
  size_t hl = m ? m->hdrs_len : 0, bl = m ? m->body_len : 0;
  *need = SBWIRE_EVENT_HEADER_LEN + hl + bl;
  if (*need > cap - *n) return 0;
  uint8_t *p = buf + *n;
  sbwire_put_event(p, type, 0, stream_id, code, (uint32_t)hl, (uint32_t)bl);
  if (hl) memcpy(p + SBWIRE_EVENT_HEADER_LEN, m->hdrs, hl);
  if (bl) memcpy(p + SBWIRE_EVENT_HEADER_LEN + hl, m->body, bl);
  *n += *need;
  return 1;
}

/* Ends a poll whose next event did not fit: what was written so far, or the needed size and BUFFER_TOO_SHORT. */
static inline int sbh2_poll_full(uint8_t *buf, uint32_t cap, size_t n, size_t need, int too_short) {
  if (n > 0) return (int)n;
  if (cap >= 8) sbwire_put_u64(buf, need);
  return too_short;
}

#endif /* SBH2_COMMON_H */
