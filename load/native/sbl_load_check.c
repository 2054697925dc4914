/*
 * sbl_load_check: runs one load engine plan from the command line, for the
 * leak check (valgrind) of the engines against real servers:
 *   sbilab_load_check h2|h2tls|h3 IP PORT PATH REQUESTS CONNS STREAMS [CA_PEM_FILE]
 * h2tls and h3 without a CA file do not verify the server. Prints one line:
 *   "sent N completed N errors N status200 N partial 0|1".
 */
#include "sbl_load.h"
#include "../../transports/native/sbwire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sbl_engine *sbh2_load_new(const uint8_t *plan, uint32_t len);
sbl_engine *sbh3_load_new(const uint8_t *plan, uint32_t len);

/* Appends a u32-length-prefixed blob at *off. */
static void put_blob(uint8_t *p, size_t *off, const void *b, size_t n) {
  sbwire_put_u32(p + *off, (uint32_t)n);
  if (n) memcpy(p + *off + 4, b, n);
  *off += 4 + n;
}

/* Reads a whole file; NULL when it cannot. */
static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = malloc(1 << 20);
  *len = b ? fread(b, 1, 1 << 20, f) : 0;
  fclose(f);
  return b;
}

/* Builds the plan, runs it to the end, prints the counts and frees everything. */
int main(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: %s h2|h2tls|h3 IP PORT PATH REQUESTS CONNS STREAMS [CA_PEM_FILE]\n", argv[0]);
    return 2;
  }
  int h3 = strcmp(argv[1], "h3") == 0, h2tls = strcmp(argv[1], "h2tls") == 0, tls = h3 || h2tls;
  size_t ca_len = 0;
  uint8_t *ca = argc > 8 ? read_file(argv[8], &ca_len) : NULL;
  char authority[300];
  snprintf(authority, sizeof authority, "%s:%s", argv[2], argv[3]);
  uint8_t hdrs[1024];
  size_t hl = 0;
  const char *fields[][2] = {{":method", "GET"}, {":scheme", tls ? "https" : "http"}, {":authority", authority},
                             {":path", argv[4]}};
  for (int i = 0; i < 4; i++)
    hl += sbwire_put_field(hdrs + hl, (const uint8_t *)fields[i][0], strlen(fields[i][0]),
                           (const uint8_t *)fields[i][1], strlen(fields[i][1]));
  size_t cap = SBL_PLAN_HEAD + 5 * 4 + 2 * strlen(argv[2]) + hl + ca_len;
  uint8_t *plan = calloc(1, cap);
  if (!plan) return 1;
  sbwire_put_u32(plan, SBL_PLAN_MAGIC);
  sbwire_put_u32(plan + 4, (h2tls ? SBL_PLAN_TLS : 0) | (tls && !ca ? SBL_PLAN_INSECURE : 0));
  sbwire_put_u32(plan + 8, (uint32_t)atoi(argv[6]));
  sbwire_put_u32(plan + 12, (uint32_t)atoi(argv[7]));
  sbwire_put_u32(plan + 16, 1);
  sbwire_put_u32(plan + 20, (uint32_t)atoi(argv[3]));
  sbwire_put_u64(plan + 24, strtoull(argv[5], NULL, 10));
  sbwire_put_u64(plan + 48, 10000000000ull);
  size_t off = SBL_PLAN_HEAD;
  put_blob(plan, &off, argv[2], strlen(argv[2]));
  put_blob(plan, &off, argv[2], strlen(argv[2]));
  put_blob(plan, &off, hdrs, hl);
  put_blob(plan, &off, NULL, 0);
  put_blob(plan, &off, ca, ca_len);
  sbl_engine *e = h3 ? sbh3_load_new(plan, (uint32_t)off) : sbh2_load_new(plan, (uint32_t)off);
  free(plan);
  free(ca);
  if (!e || sbl_engine_start(e) != 0 || sbl_engine_join(e) != 0) {
    fprintf(stderr, "engine failed\n");
    sbl_engine_free(e);
    return 1;
  }
  int need = sbl_engine_result(e, NULL, 0);
  uint8_t *res = malloc((size_t)need);
  uint8_t hist[1 << 17], err[256];
  if (!res || sbl_engine_result(e, res, (uint32_t)need) != need || sbl_engine_histogram(e, 0, hist, sizeof hist) < 0) {
    fprintf(stderr, "no result\n");
    return 1;
  }
  int el = sbl_engine_error(e, err, sizeof err - 1);
  err[el > 0 ? el : 0] = 0;
  uint32_t nstatus = sbwire_get_u32(res + 8), kinds = sbwire_get_u32(res + 16);
  uint64_t ok200 = 0;
  for (uint32_t i = 0; i < nstatus; i++) {
    const uint8_t *s = res + SBL_RESULT_HEAD + 8 * kinds + 16 * i;
    if (sbwire_get_u32(s) == 200) ok200 = sbwire_get_u32(s + 8);
  }
  printf("sent %u completed %u errors %u status200 %llu partial %u%s%s\n", sbwire_get_u32(res + 24),
         sbwire_get_u32(res + 32), sbwire_get_u32(res + 40), (unsigned long long)ok200, sbwire_get_u32(res + 4) & 1,
         el > 0 ? " error " : "", (char *)err);
  free(res);
  sbl_engine_free(e);
  return 0;
}
