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

#endif /* SBH2_COMMON_H */
