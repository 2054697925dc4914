/*
 * sbl_hist: HdrHistogram's bucket layout with two significant digits
 * (sub-bucket count 256, half count 128, unit magnitude 0). See sbl_hist.h.
 */
#include "sbl_hist.h"
#include "../../transports/native/sbwire.h"

#include <stdlib.h>
#include <string.h>

#define HALF_MAG 7
#define HALF_COUNT (1 << HALF_MAG)
#define SUB_COUNT (2 * HALF_COUNT)
#define SUB_MASK ((int64_t)SUB_COUNT - 1)
#define LZ_BASE (64 - HALF_MAG - 1)

struct sbl_hist {
  int64_t highest;
  int counts_len;
  uint64_t total;
  int64_t min, max;
  uint64_t counts[];
};

static int bucket_of(int64_t v) { return LZ_BASE - __builtin_clzll((uint64_t)(v | SUB_MASK)); }

static int index_of(int64_t v) {
  int b = bucket_of(v);
  int sb = (int)(v >> b);
  return ((b + 1) << HALF_MAG) + (sb - HALF_COUNT);
}

static int64_t value_at_index(int i) {
  int b = (i >> HALF_MAG) - 1;
  int sb = (i & (HALF_COUNT - 1)) + HALF_COUNT;
  if (b < 0) {
    sb -= HALF_COUNT;
    b = 0;
  }
  return (int64_t)sb << b;
}

sbl_hist *sbl_hist_new(int64_t highest) {
  if (highest < 2 * SUB_COUNT) highest = 2 * SUB_COUNT;
  int buckets = 1;
  for (int64_t untrackable = SUB_COUNT; untrackable <= highest; untrackable <<= 1) {
    buckets++;
    if (untrackable > INT64_MAX / 2) break;
  }
  int len = (buckets + 1) * HALF_COUNT;
  sbl_hist *h = calloc(1, sizeof(*h) + (size_t)len * sizeof(uint64_t));
  if (!h) return NULL;
  h->highest = highest;
  h->counts_len = len;
  return h;
}

void sbl_hist_free(sbl_hist *h) { free(h); }

void sbl_hist_record(sbl_hist *h, int64_t v, uint64_t count) {
  if (!h || !count) return;
  if (v < 1) v = 1;
  if (v > h->highest) v = h->highest;
  int i = index_of(v);
  if (i >= h->counts_len) i = h->counts_len - 1;
  h->counts[i] += count;
  if (h->total == 0 || v < h->min) h->min = v;
  if (v > h->max) h->max = v;
  h->total += count;
}

void sbl_hist_add(sbl_hist *dst, const sbl_hist *src) {
  if (!dst || !src || !src->total) return;
  int n = dst->counts_len < src->counts_len ? dst->counts_len : src->counts_len;
  for (int i = 0; i < n; i++) dst->counts[i] += src->counts[i];
  if (dst->total == 0 || src->min < dst->min) dst->min = src->min;
  if (src->max > dst->max) dst->max = src->max;
  dst->total += src->total;
}

uint64_t sbl_hist_total(const sbl_hist *h) { return h ? h->total : 0; }
int64_t sbl_hist_min(const sbl_hist *h) { return h && h->total ? h->min : 0; }
int64_t sbl_hist_max(const sbl_hist *h) { return h && h->total ? h->max : 0; }

int64_t sbl_hist_lowest_equivalent(const sbl_hist *h, int64_t v) {
  (void)h;
  if (v < 1) v = 1;
  return value_at_index(index_of(v));
}

int64_t sbl_hist_percentile(const sbl_hist *h, double p) {
  if (!h || !h->total) return 0;
  if (p > 100) p = 100;
  uint64_t want = (uint64_t)(p / 100.0 * (double)h->total + 0.5);
  if (want < 1) want = 1;
  uint64_t seen = 0;
  for (int i = 0; i < h->counts_len; i++) {
    seen += h->counts[i];
    if (seen >= want) {
      int64_t lo = value_at_index(i);
      int64_t next = i + 1 < h->counts_len ? value_at_index(i + 1) : lo + 1;
      return next - 1;
    }
  }
  return h->max;
}

size_t sbl_hist_export(const sbl_hist *h, uint8_t *buf, size_t cap) {
  if (!h) return 0;
  size_t need = 0;
  for (int i = 0; i < h->counts_len; i++) {
    if (!h->counts[i]) continue;
    if (buf && need + 16 <= cap) {
      sbwire_put_u64(buf + need, (uint64_t)value_at_index(i));
      sbwire_put_u64(buf + need + 8, h->counts[i]);
    }
    need += 16;
  }
  return need;
}
