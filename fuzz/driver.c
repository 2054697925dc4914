/*
 * Plain main for a fuzz target, for builds without libFuzzer: AFL++
 * (afl-clang-fast: the input on stdin or in the file named by @@) and the
 * replay of saved inputs by the test suite. Each argument is a file or a
 * folder of files, run one after another; no argument reads stdin. Exit 0
 * when every input ran (a broken invariant aborts the process).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Reads a whole stream; NULL when out of memory. */
static uint8_t *slurp(FILE *f, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  uint8_t *p = malloc(cap);
  while (p) {
    size_t k = fread(p + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
    if (n == cap) {
      uint8_t *q = realloc(p, cap *= 2);
      if (!q) free(p);
      p = q;
    }
  }
  *len = n;
  return p;
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  size_t len;
  uint8_t *p = slurp(f, &len);
  fclose(f);
  if (!p) return 1;
  fprintf(stderr, "running %s (%zu bytes)\n", path, len);
  LLVMFuzzerTestOneInput(p, len);
  free(p);
  return 0;
}

static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  if (!S_ISDIR(st.st_mode)) return run_file(path);
  struct dirent **names;
  int n = scandir(path, &names, NULL, alphasort);
  if (n < 0) return 1;
  int rc = 0;
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.') {
      char full[4096];
      snprintf(full, sizeof full, "%s/%s", path, names[i]->d_name);
      rc |= run_path(full);
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    size_t len;
    uint8_t *p = slurp(stdin, &len);
    if (!p) return 1;
    LLVMFuzzerTestOneInput(p, len);
    free(p);
    return 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) rc |= run_path(argv[i]);
  return rc;
}
