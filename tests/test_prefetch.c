/* test_prefetch.c: which kernels get software prefetches (codegen/prefetch.c)
 * (packed quantized matvecs; float ones read one row after the other) and
 * that a matvec streaming a big matrix stays exact.
 *
 * Kernels are scheduled from tensor graphs, given the default heuristic's
 * opts the way realize does, rendered to C, and the source is searched for
 * __builtin_prefetch. */
#include "test.h"
#include "tg_quant.h"

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
  /* 2 MB of float weights read once, one row after the other: the
   * hardware's stream, no prefetch */
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_matmul(big, x), &nk), 0);
  CHECK_EQ_INT(nk, 1);
  /* 2.2 MB of row-packed Q8_0 weights (4096 x 512; d = 1, values -64..63):
   * its matvec kernel is prefetched, x's quantization is not */
  enum { QN = 4096, QK = 512, QB = 34 };
  uint8_t *raw = malloc((size_t)QN * (QK / 32) * QB);
  for (int64_t b = 0; b < (int64_t)QN * (QK / 32); b++) {
    raw[b * QB] = 0x00, raw[b * QB + 1] = 0x3c;   /* fp16 1.0 */
    for (int j = 0; j < 32; j++) raw[b * QB + 2 + j] = (uint8_t)(int8_t)((b * 7 + j) % 128 - 64);
  }
  tg_tensor *rq = tg_from_data(raw, TG_SHAPE((int64_t)QN * (QK / 32) * QB), TG_U8), *sc = NULL, *qs = NULL;
  free(raw);
  CHECK_OK(rq && tg_quant_pack_rows(rq, TG_GGML_Q8_0, TG_SHAPE(QN, QK), &sc, &qs) == 0 && tg_realize(sc) == 0 && tg_realize(qs) == 0);
  tg_tensor *xq = realized_ramp(TG_SHAPE(QK), 6);
  CHECK_EQ_INT(test_kernels_with("__builtin_prefetch", tg_quant_matmul_rows(xq, sc, qs, TG_GGML_Q8_0, TG_SHAPE(QN, QK)), &nk), 1);
  CHECK_MSG(nk >= 2, "the quantized matvec made %d kernels", nk);
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
