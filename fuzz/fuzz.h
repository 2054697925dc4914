/*
 * Helpers every fuzz target shares: reading the input, splitting a byte
 * stream into chunks, and checking that what a module hands back decodes as
 * transports/native/sbwire.h says. A broken invariant aborts (the fuzzer
 * records the input as a crash).
 */
#ifndef SBFUZZ_H
#define SBFUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../transports/native/sbwire.h"

/* Aborts with a message naming the broken invariant. */
#define FUZZ_CHECK(cond)                                                              \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "fuzz invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* A cursor over the fuzzer's input. */
typedef struct {
  const uint8_t *p;
  size_t len, off;
} fuzz_in;

static inline size_t fuzz_left(const fuzz_in *in) { return in->len - in->off; }

/* The next byte, 0 once the input is used up. */
static inline uint8_t fuzz_u8(fuzz_in *in) { return in->off < in->len ? in->p[in->off++] : 0; }

/* The next little-endian u16, 0 once the input is used up. */
static inline uint16_t fuzz_u16(fuzz_in *in) {
  uint16_t lo = fuzz_u8(in);
  return (uint16_t)(lo | (uint16_t)fuzz_u8(in) << 8);
}

/* Takes up to n bytes; *got says how many. */
static inline const uint8_t *fuzz_take(fuzz_in *in, size_t n, size_t *got) {
  size_t k = fuzz_left(in) < n ? fuzz_left(in) : n;
  const uint8_t *p = in->p + in->off;
  in->off += k;
  *got = k;
  return p;
}

/* A small deterministic generator (chunk sizes, choices) seeded from the input. */
typedef struct {
  uint32_t s;
} fuzz_rng;

static inline uint32_t fuzz_next(fuzz_rng *r) {
  r->s = r->s * 1103515245u + 12345u;
  return r->s >> 8;
}

/* Length of the next chunk of a stream: 1..max, biased towards small and whole-frame sizes. */
static inline size_t fuzz_chunk(fuzz_rng *r, size_t left, size_t max) {
  if (left == 0) return 0;
  uint32_t v = fuzz_next(r);
  size_t n;
  switch (v & 3) {
  case 0: n = 1 + (v >> 2) % 16; break;
  case 1: n = 1 + (v >> 2) % 512; break;
  default: n = max; break;
  }
  return n < left ? n : left;
}

/* Checks a header block: every field decodes, names are non-empty unless allow_empty_name; returns the field count. */
static inline long fuzz_check_block(const uint8_t *b, size_t len) {
  long n = sbwire_count_fields(b, len);
  FUZZ_CHECK(n >= 0);
  size_t off = 0;
  for (long i = 0; i < n; i++) {
    const uint8_t *name, *value;
    size_t nl, vl;
    sbwire_next_field(b, &off, &name, &nl, &value, &vl);
    FUZZ_CHECK(name >= b && value + vl <= b + len);
  }
  FUZZ_CHECK(off == len);
  return n;
}

/* One decoded event record. */
typedef struct {
  uint32_t type, conn_id;
  int64_t stream_id, code;
  const uint8_t *hdrs, *body;
  uint32_t hdrs_len, body_len;
} fuzz_event;

static inline uint64_t fuzz_get_u64(const uint8_t *p) {
  return (uint64_t)sbwire_get_u32(p) | (uint64_t)sbwire_get_u32(p + 4) << 32;
}

/*
 * Walks the records one poll wrote (n bytes) and checks each: whole, a known type, its header
 * block well formed. Calls fn for each. Returns the number of records.
 */
static inline int fuzz_walk_events(const uint8_t *buf, size_t n, void (*fn)(const fuzz_event *, void *), void *arg) {
  size_t off = 0;
  int count = 0;
  while (off < n) {
    FUZZ_CHECK(n - off >= SBWIRE_EVENT_HEADER_LEN);
    const uint8_t *p = buf + off;
    fuzz_event e = {
        .type = sbwire_get_u32(p),
        .conn_id = sbwire_get_u32(p + 4),
        .stream_id = (int64_t)fuzz_get_u64(p + 8),
        .code = (int64_t)fuzz_get_u64(p + 16),
        .hdrs_len = sbwire_get_u32(p + 24),
        .body_len = sbwire_get_u32(p + 28),
    };
    FUZZ_CHECK(e.type >= SBWIRE_EV_CONNECTED && e.type <= SBWIRE_EV_EARLY_REJECTED);
    uint64_t rest = (uint64_t)e.hdrs_len + e.body_len;
    FUZZ_CHECK(rest <= n - off - SBWIRE_EVENT_HEADER_LEN);
    e.hdrs = p + SBWIRE_EVENT_HEADER_LEN;
    e.body = e.hdrs + e.hdrs_len;
    fuzz_check_block(e.hdrs, e.hdrs_len);
    if (e.type != SBWIRE_EV_MESSAGE) FUZZ_CHECK(e.body_len == 0);
    if (e.type == SBWIRE_EV_CLOSED || e.type == SBWIRE_EV_GOAWAY || e.type == SBWIRE_EV_RELEASED ||
        e.type == SBWIRE_EV_CONNECTED || e.type == SBWIRE_EV_EARLY_REJECTED)
      FUZZ_CHECK(e.stream_id == -1 && e.hdrs_len == 0);
    if (getenv("FUZZ_VERBOSE"))
      fprintf(stderr, "event type %u conn %u stream %lld code %lld headers %u body %u\n", e.type, e.conn_id,
              (long long)e.stream_id, (long long)e.code, e.hdrs_len, e.body_len);
    if (fn) fn(&e, arg);
    off += SBWIRE_EVENT_HEADER_LEN + rest;
    count++;
  }
  return count;
}

/* Builds a header block of (name, value) C strings into out; returns its length. */
static inline size_t fuzz_block(uint8_t *out, const char *const *pairs, size_t npairs) {
  size_t n = 0;
  for (size_t i = 0; i < npairs; i++) {
    const char *k = pairs[2 * i], *v = pairs[2 * i + 1];
    n += sbwire_put_field(out + n, (const uint8_t *)k, strlen(k), (const uint8_t *)v, strlen(v));
  }
  return n;
}

#endif /* SBFUZZ_H */
