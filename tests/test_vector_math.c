/* test_vector_math.c: math that runs in SIMD lanes on the CPU: exp2 as a
 * polynomial in vector arithmetic (tg_exp2_vK), trunc through int32
 * (tg_trunc_vK; round's half-to-even steps use it), and and/or/xor of
 * comparison masks (a causal mask's <=). Each is checked to be vectorized
 * (the helper or vector types appear in the kernel's source) and against
 * C's libm and plain C logic. */
#include <math.h>
#include "test.h"

enum { NV = 1 << 18 };   /* big enough that the heuristic gives an elementwise kernel lanes */

/* The distance in float32 steps between a and b (0: the same value). */
static int64_t ulps_apart(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
  int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return oa > ob ? oa - ob : ob - oa;
}

static float *exp2_inputs(void) {
  float *x = malloc(sizeof(float) * NV);
  const float special[] = { -INFINITY, INFINITY, NAN, 0.0f, -0.0f, 128.0f, 127.99999f, 127.5f, -149.0f, -149.5f, -150.0f, -151.0f,
                            -126.0f, -126.5f, -125.99f, -0.5f, 0.5f, 1e-8f, -1e-8f, 1.0f, -1.0f, 10.0f, 0.49999997f, -0.49999997f };
  int ns = (int)(sizeof special / sizeof special[0]);
  for (int i = 0; i < NV; i++) x[i] = i < ns ? special[i] : -160.0f + 290.0f * (float)i / (float)NV;
  return x;
}

TEST(vector_exp2_within_ulp_of_libm) {
  tg_scope_begin();
  float *x = exp2_inputs(), *got = malloc(sizeof(float) * NV);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(NV), TG_F32);
  CHECK_OK(X && tg_realize(X) == 0);
  int nk = 0;
  CHECK_EQ_INT(test_kernels_with("tg_exp2_v16(", tg_exp2(X), &nk), 1);
  CHECK_OK(tg_data(tg_exp2(X), got, sizeof(float) * NV) == 0);
  int64_t worst = 0;
  int bad = 0;
  for (int i = 0; i < NV && bad < 5; i++) {
    float want = (float)exp2((double)x[i]);
    bool ok;
    if (isnan(want)) ok = isnan(got[i]);
    else if (isinf(want) || want == 0) ok = got[i] == want;
    else {
      int64_t d = ulps_apart(got[i], want);
      if (d > worst) worst = d;
      ok = d <= 2;
    }
    if (!ok) { bad++; CHECK_MSG(0, "exp2(%a) = %a, libm %a", x[i], got[i], want); }
  }
  CHECK_MSG(worst <= 2, "exp2 is %lld ulp from libm", (long long)worst);
  free(x), free(got);
  tg_scope_end();
}

/* Bit for bit: C's truncf, and rint (half to even in the default rounding
 * mode) for tg_round. */
TEST(vector_trunc_and_round_exact) {
  tg_scope_begin();
  float *x = malloc(sizeof(float) * NV), *got = malloc(sizeof(float) * NV);
  const float special[] = { 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.49999997f, -0.3f, 8388607.5f, -8388607.5f,
                            8388608.0f, 8388609.0f, -8388609.0f, 16777217.0f, 1e30f, -1e30f, 2147483648.0f, -2147483904.0f,
                            INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1.17549435e-38f, 3.4028235e38f, -3.4028235e38f };
  int ns = (int)(sizeof special / sizeof special[0]);
  for (int i = 0; i < NV; i++) x[i] = i < ns ? special[i] : (float)ldexp((double)((i * 2654435761u) % 2000001) / 1000.0 - 1000.0, (i % 40) - 14);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(NV), TG_F32);
  CHECK_OK(X && tg_realize(X) == 0);
  for (int f = 0; f < 2; f++) {
    tg_tensor *y = f ? tg_round(X) : tg_trunc(X);
    int nk = 0;
    CHECK_EQ_INT(test_kernels_with("tg_trunc_v16(", y, &nk), 1);
    CHECK_OK(tg_data(y, got, sizeof(float) * NV) == 0);
    int bad = 0;
    for (int i = 0; i < NV && bad < 5; i++) {
      float want = f ? rintf(x[i]) : truncf(x[i]);
      bool ok = isnan(want) ? isnan(got[i]) : memcmp(&got[i], &want, 4) == 0;
      if (!ok) { bad++; CHECK_MSG(0, "%s(%a) = %a, libm %a", f ? "round" : "trunc", x[i], got[i], want); }
    }
  }
  free(x), free(got);
  tg_scope_end();
}

TEST(vector_mask_logic_exact) {
  tg_scope_begin();
  float *x = malloc(sizeof(float) * NV), *got = malloc(sizeof(float) * NV);
  for (int i = 0; i < NV; i++) x[i] = (float)((i * 37) % 201 - 100);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(NV), TG_F32);
  CHECK_OK(X && tg_realize(X) == 0);
  /* ((x < -50) | (x == 7)) ^ ((x > 40) & (x != 60)), and a scalar mask
   * broadcast into the lanes (true must be all ones there, not 1) */
  tg_tensor *a = tg_logical_or(tg_lt(X, tg_scalar(-50, TG_F32)), tg_eq(X, tg_scalar(7, TG_F32)));
  tg_tensor *b = tg_logical_and(tg_gt(X, tg_scalar(40, TG_F32)), tg_ne(X, tg_scalar(60, TG_F32)));
  tg_tensor *m = tg_logical_or(tg_logical_xor(a, b), tg_lt(tg_scalar(1, TG_F32), tg_scalar(0, TG_F32)));
  tg_tensor *y = tg_add(tg_where(m, X, tg_scalar(0.5, TG_F32)), tg_cast(tg_logical_and(m, tg_gt(tg_scalar(1, TG_F32), tg_scalar(0, TG_F32))), TG_F32));
  int nk = 0;
  CHECK_EQ_INT(test_kernels_with("tg_v16_float", y, &nk), 1);
  CHECK_OK(tg_data(y, got, sizeof(float) * NV) == 0);
  int bad = 0;
  for (int i = 0; i < NV && bad < 5; i++) {
    bool mi = ((x[i] < -50) | (x[i] == 7)) ^ ((x[i] > 40) & (x[i] != 60));
    float want = (mi ? x[i] : 0.5f) + (mi ? 1.0f : 0.0f);
    if (got[i] != want) { bad++; CHECK_MSG(0, "[%d] x=%g: %g, want %g", i, x[i], got[i], want); }
  }
  free(x), free(got);
  tg_scope_end();
}
