/* test_prefetch.c: which kernels get software prefetches (codegen/prefetch.c)
 * and that a matvec streaming a big matrix stays exact with them.
 *
 * Kernels are scheduled from tensor graphs, given the default heuristic's
 * opts the way realize does, rendered to C, and the source is searched for
 * __builtin_prefetch. */
#include "test.h"

static tg_tensor *realized_ramp(tg_shape shape, int seed) {
  int64_t n = 1;
  for (int i = 0; i < shape.ndim; i++) n *= shape.d[i];
  float *v = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (float)((i * 7 + seed) % 13 - 6) / 8.0f;
  tg_tensor *t = tg_from_data(v, shape, TG_F32);
  free(v);
  CHECK_OK(t && tg_realize(t) == 0);
  return t;
}

TEST(prefetch_only_streaming_matvecs) {
  tg_scope_begin();
  tg_tensor *big = realized_ramp(TG_SHAPE(2048, 256), 1), *small = realized_ramp(TG_SHAPE(64, 64), 2);
  tg_tensor *x = realized_ramp(TG_SHAPE(256), 3), *xs = realized_ramp(TG_SHAPE(64), 4);
  tg_tensor *sq = realized_ramp(TG_SHAPE(256, 256), 5);
  int nk = 0;
  /* 2 MB of weights read once along the reduce loop: prefetched */
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_matmul(big, x), &nk), 1);
  CHECK_EQ_INT(nk, 1);
  /* 16 KB stays in cache: no prefetch */
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_matmul(small, xs), &nk), 0);
  /* no reduce loop, or two output loops (a matmul): no prefetch */
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_muls(tg_adds(big, 1), 2), &nk), 0);
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_matmul(sq, sq), &nk), 0);
  CHECK_MSG(nk >= 1, "the matmul made %d kernels", nk);
  tg_scope_end();
}

TEST(prefetch_matvec_exact) {
  tg_scope_begin();
  const int rows = 2048, cols = 256;
  tg_tensor *w = realized_ramp(TG_SHAPE(rows, cols), 1), *x = realized_ramp(TG_SHAPE(cols), 3);
  float *wv = malloc(sizeof(float) * rows * cols), xv[256], got[2048];
  CHECK_OK(tg_data(w, wv, sizeof(float) * rows * cols) == 0 && tg_data(x, xv, sizeof xv) == 0);
  tg_tensor *y = tg_matmul(w, x);
  CHECK_OK(y && tg_data(y, got, sizeof got) == 0);
  for (int r = 0; r < rows; r++) {
    double want = 0;   /* every product and partial sum is exact in float */
    for (int k = 0; k < cols; k++) want += (double)wv[r * cols + k] * xv[k];
    CHECK_MSG(got[r] == (float)want, "row %d: %g, want %g", r, got[r], want);
    if (got[r] != (float)want) break;
  }
  free(wv);
  tg_scope_end();
}
