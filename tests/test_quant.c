/* test_quant.c: ggml quant formats dequantized by tensor ops (tg_quant.h).
 *
 * Exactness: ../../shared/testdata/quants holds, per type, 64 raw blocks and
 * ggml's own float32 dequantization of them (see its README.md); tg must
 * match every value bit for bit (compared as floats, so -0 == +0). */
#include <stdint.h>
#include "test.h"

#define QUANT_DIR "../../shared/testdata/quants"

/* Dequantizes TYPE.blocks.bin with tg_dequantize and compares with
 * TYPE.f32.bin. */
static void check_type(const char *type) {
  char path[256];
  size_t nraw = 0, nf = 0;
  snprintf(path, sizeof path, QUANT_DIR "/%s.blocks.bin", type);
  unsigned char *raw = test_read_file(path, &nraw);
  snprintf(path, sizeof path, QUANT_DIR "/%s.f32.bin", type);
  float *want = test_read_file(path, &nf);
  if (!raw || !want) {
    free(raw), free(want);
    SKIP("%s not found (the shared quant test data is absent)", path);
  }
  int t = tg_ggml_type_from_name(type);
  int64_t n = (int64_t)(nf / sizeof(float));
  CHECK_EQ_INT(tg_ggml_nbytes(t, n), nraw);
  float *got = calloc((size_t)n, sizeof(float));
  tg_scope_begin();
  tg_tensor *r = tg_from_data(raw, TG_SHAPE((int64_t)nraw), TG_U8);
  tg_tensor *y = tg_dequantize(r, t, TG_SHAPE(n));
  CHECK_OK(y);
  CHECK_MSG(y && tg_data(y, got, (size_t)n * sizeof(float)) == 0, "%s: %s", type, tg_error());
  int bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])))) {
      if (bad < 5) test_fail(__FILE__, __LINE__, "%s value %lld (block %lld): got %a, ggml %a", type, (long long)i,
                             (long long)(i * 64 / n), got[i], want[i]);
      bad++;
    }
  CHECK_MSG(bad == 0, "%s: %d of %lld values differ", type, bad, (long long)n);
  tg_scope_end();
  free(raw), free(want), free(got);
}

#define QUANT_TEST(T) TEST(quant_exact_##T) { check_type(#T); }
QUANT_TEST(F16)
QUANT_TEST(BF16)
QUANT_TEST(Q4_0)
QUANT_TEST(Q4_1)
QUANT_TEST(Q5_0)
QUANT_TEST(Q5_1)
QUANT_TEST(Q8_0)
QUANT_TEST(Q2_K)
QUANT_TEST(Q3_K)
QUANT_TEST(Q4_K)
QUANT_TEST(Q5_K)
QUANT_TEST(Q6_K)
QUANT_TEST(IQ4_NL)
QUANT_TEST(IQ4_XS)
QUANT_TEST(TQ1_0)
QUANT_TEST(TQ2_0)
QUANT_TEST(MXFP4)
QUANT_TEST(IQ2_XXS)
QUANT_TEST(IQ2_XS)
QUANT_TEST(IQ2_S)
QUANT_TEST(IQ3_XXS)
QUANT_TEST(IQ3_S)
QUANT_TEST(IQ1_S)
QUANT_TEST(IQ1_M)
