/*
 * sbl_hist: a fixed-size log-linear histogram laid out like HdrHistogram.
 *
 * Values are integers (the load engines record nanoseconds) from 1 to a
 * highest trackable value; larger values are counted at the highest. With
 * two significant digits each power-of-two range is split into 128 equal
 * sub-buckets, so any value is known to within 1/128 (0.78 %) of itself, and
 * the bucket layout matches HdrHistogram's (lowest 1, 2 significant digits):
 * a value exported as its bucket's lowest equivalent value lands in the same
 * bucket when recorded into hdr-histogram-js built with the same parameters.
 */
#ifndef SBL_HIST_H
#define SBL_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Highest value the load engines track: one hour in nanoseconds. */
#define SBL_HIST_HIGHEST 3600000000000LL

typedef struct sbl_hist sbl_hist;

/* Creates an empty histogram tracking 1..highest; NULL on failure. */
sbl_hist *sbl_hist_new(int64_t highest);
/* Frees the histogram (NULL is fine). */
void sbl_hist_free(sbl_hist *h);
/* Records count occurrences of value (values < 1 count as 1, above highest as highest). */
void sbl_hist_record(sbl_hist *h, int64_t value, uint64_t count);
/* Adds every count of src into dst (same highest). */
void sbl_hist_add(sbl_hist *dst, const sbl_hist *src);
/* Returns the number of values recorded. */
uint64_t sbl_hist_total(const sbl_hist *h);
/* Returns the smallest / largest value recorded exactly (0 when empty). */
int64_t sbl_hist_min(const sbl_hist *h);
int64_t sbl_hist_max(const sbl_hist *h);
/* Returns the value at percentile p (0..100): the highest equivalent value of its bucket. */
int64_t sbl_hist_percentile(const sbl_hist *h, double p);
/* Returns the lowest value that shares value's bucket. */
int64_t sbl_hist_lowest_equivalent(const sbl_hist *h, int64_t value);
/* Writes little-endian (i64 lowest equivalent value, u64 count) pairs of the non-empty buckets; returns bytes or the size needed. */
size_t sbl_hist_export(const sbl_hist *h, uint8_t *buf, size_t cap);

#endif /* SBL_HIST_H */
