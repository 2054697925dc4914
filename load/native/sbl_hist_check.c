/*
 * sbl_hist_check: prints, for values given on stdin (one integer a line),
 * "value lowest-equivalent percentile-of-that-value-alone" so a test can
 * compare sbl_hist's bucket layout with HdrHistogram's and check its relative
 * error. Then reads nothing more and exits 0.
 */
#include "sbl_hist.h"

#include <inttypes.h>
#include <stdio.h>

/* Reads values from stdin and prints each one's bucket bounds. */
int main(void) {
  sbl_hist *h = sbl_hist_new(SBL_HIST_HIGHEST);
  if (!h) return 1;
  long long v;
  while (scanf("%lld", &v) == 1) {
    sbl_hist *one = sbl_hist_new(SBL_HIST_HIGHEST);
    if (!one) return 1;
    sbl_hist_record(one, v, 1);
    sbl_hist_record(h, v, 1);
    printf("%lld %" PRId64 " %" PRId64 "\n", v, sbl_hist_lowest_equivalent(one, v), sbl_hist_percentile(one, 50));
    sbl_hist_free(one);
  }
  printf("total %" PRIu64 " min %" PRId64 " max %" PRId64 "\n", sbl_hist_total(h), sbl_hist_min(h), sbl_hist_max(h));
  sbl_hist_free(h);
  return 0;
}
