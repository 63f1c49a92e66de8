/* quant_experts_check.c: check_quant_experts (quant_experts_check.h). */
#include "test.h"
#include <math.h>
#include "quant_experts_check.h"

void check_quant_experts(int t, const uint8_t *w, int64_t nbytes, int64_t e, int64_t n, int64_t k, bool x_per_expert,
                         void (*fill)(float *x, int64_t rows, int64_t k), experts_ref_dot ref) {
  enum { T = 4, X = 2 };
  const int64_t row_bytes = nbytes / (e * n), nx = x_per_expert ? X : 1;
  float *x = malloc(sizeof(float) * (size_t)(T * nx * k)), *y = malloc(sizeof(float) * (size_t)(T * X * n));
  fill(x, T * nx, k);
  int32_t idx[3][T * X] = { { 1, 3, 0, 1, 3, 2, 1, 3 }, { 2, 0 }, { 3, 1, 2, 2, 0, 3, 3, 1 } };
  const int rows[3] = { T, 1, T };
  tg_scope_begin();
  tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *sc = NULL, *qs = NULL;
  CHECK_OK(tg_quant_pack_rows(raw, t, TG_SHAPE(e * n, k), &sc, &qs) == 0);
  for (int run = 0; run < 3 && sc && qs; run++) {
    int64_t tt = rows[run];
    tg_tensor *xv = tg_from_data(x, TG_SHAPE(tt, nx, k), TG_F32), *iv = tg_from_data(idx[run], TG_SHAPE(tt, X), TG_I32);
    tg_tensor *yv = tg_quant_matmul_rows_experts(xv, sc, qs, t, TG_SHAPE(e, n, k), iv);
    CHECK_MSG(yv && tg_data(yv, y, sizeof(float) * (size_t)(tt * X * n)) == 0, "%s: %s", tg_ggml_type_name(t), tg_error());
    int bad = 0;
    for (int64_t r = 0; yv && r < tt * X; r++)
      for (int64_t i = 0; i < n; i++) {
        double mag;
        float want = ref(t, w + (idx[run][r] * n + i) * row_bytes, x + (x_per_expert ? r : r / X) * k, k, &mag);
        if (!(fabs((double)y[r * n + i] - want) <= 1e-5 * mag) && bad++ < 5)
          test_fail(__FILE__, __LINE__, "%s run %d [%lld, %lld]: tg %.9g, ggml %.9g", tg_ggml_type_name(t), run, (long long)r, (long long)i,
                    y[r * n + i], want);
      }
    CHECK_EQ_INT(bad, 0);
  }
  tg_scope_end();
  free(x), free(y);
}
