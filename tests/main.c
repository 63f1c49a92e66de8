/* main.c: runs every registered test and prints the summary line. */
#include <stdarg.h>
#include "test.h"

typedef struct { const char *name; test_fn fn; } test_case;
static test_case cases[2048];
static int ncases;
int test_failures;
bool test_skipped;

void test_register(const char *name, test_fn fn) {
  if (ncases < (int)(sizeof cases / sizeof cases[0])) cases[ncases++] = (test_case){ name, fn };
}

void test_fail(const char *file, int line, const char *fmt, ...) {
  if (test_failures++ > 20) return;   /* do not flood */
  va_list ap;
  va_start(ap, fmt);
  printf("  FAIL %s:%d: ", file, line);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

void *test_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(sz > 0 ? (size_t)sz : 1);
  if (fread(p, 1, (size_t)sz, f) != (size_t)sz) { free(p); fclose(f); return NULL; }
  fclose(f);
  if (n) *n = (size_t)sz;
  return p;
}

bool test_close_f32(const float *got, const float *want, size_t n, double rtol, double atol, const char *what) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i], w = want[i];
    bool ok = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= atol + rtol * fabs(w);
    if (!ok && bad++ < 5) test_fail(__FILE__, __LINE__, "%s[%zu]: got %.9g want %.9g", what, i, g, w);
  }
  return bad == 0;
}

uint8_t *test_random_blocks(uint64_t seed, int64_t nblocks, int bpb, int scale_at, int64_t *nbytes) {
  *nbytes = nblocks * bpb;
  uint8_t *p = malloc((size_t)*nbytes);
  uint64_t h = 0x9E3779B97F4A7C15ull ^ seed;
  for (int64_t i = 0; i < *nbytes; i++) { h = h * 6364136223846793005ull + 1442695040888963407ull; p[i] = (uint8_t)(h >> 56); }
  for (int64_t b = 0; b < nblocks; b++) {
    uint16_t f = (uint16_t)(0x1C00 + (b * 37) % 1024) | (uint16_t)(b % 5 == 0 ? 0x8000 : 0);
    p[b * bpb + scale_at] = (uint8_t)f, p[b * bpb + scale_at + 1] = (uint8_t)(f >> 8);
  }
  return p;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const test_case *)a)->name, ((const test_case *)b)->name);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  qsort(cases, (size_t)ncases, sizeof cases[0], by_name);
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < ncases; i++) {
    if (filter && !strstr(cases[i].name, filter)) continue;
    test_failures = 0; test_skipped = false;
    tg_clear_error();
    tg_scope_begin();
    cases[i].fn();
    tg_scope_end();
    if (test_failures) { failed++; printf("FAIL %s\n", cases[i].name); }
    else if (test_skipped) { skipped++; printf("skip %s\n", cases[i].name); }
    else { passed++; printf("ok   %s\n", cases[i].name); }
    fflush(stdout);
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
