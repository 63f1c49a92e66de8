/* test_vars.c: symbolic variables: one compiled kernel for every bound
 * value, in and out of the JIT, and clear errors. */
#include "test.h"

TEST(vars_one_kernel_for_all_values) {
  tg_tensor *pos = tg_variable("test_pos", 0, 100);
  CHECK_OK(pos);
  for (int p = 0; p < 3; p++) {
    int64_t value = p * 4 + 1;
    CHECK(tg_bind("test_pos", value) == 0);
    /* a one-hot row at the bound position, plus a value use */
    tg_tensor *hot = tg_cast(tg_eq(tg_arange(0, 16, 1, TG_I32), pos), TG_F32);
    tg_tensor *r = tg_add(hot, tg_cast(pos, TG_F32));
    float got[16];
    int64_t compiled = tg_get_counters().kernels_compiled;
    CHECK(tg_data(r, got, sizeof got) == 0);
    if (p > 0) CHECK_MSG(tg_get_counters().kernels_compiled == compiled, "value %lld compiled again", (long long)value);
    for (int i = 0; i < 16; i++) CHECK_MSG(got[i] == (float)(i == value) + (float)value, "pos %lld [%d] = %g", (long long)value, i, got[i]);
  }
}

static int step_scale(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  out[0] = tg_mul(in[0], tg_cast((tg_tensor *)ctx, TG_F32));
  return 0;
}

TEST(vars_jit_replays_with_new_bindings) {
  tg_tensor *k = tg_variable("test_k", 1, 1000);
  tg_jit *j = tg_jit_new(step_scale, k);
  float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, got[8];
  for (int call = 0; call < 5; call++) {
    CHECK(tg_bind("test_k", call * 10 + 1) == 0);
    tg_tensor *in = tg_from_data(x, TG_SHAPE(8), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "%s", tg_error());
    CHECK(tg_data(out, got, sizeof got) == 0);
    for (int i = 0; i < 8; i++) CHECK_MSG(got[i] == x[i] * (call * 10 + 1), "call %d [%d] = %g", call, i, got[i]);
  }
  tg_jit_free(j);
}

TEST(vars_errors) {
  CHECK(tg_variable("bad name", 0, 1) == NULL);
  CHECK(tg_variable("lo_hi", 5, 1) == NULL);
  CHECK(tg_variable("test_r", 0, 10) != NULL);
  CHECK(tg_variable("test_r", 0, 11) == NULL);
  CHECK(strstr(tg_error(), "range") != NULL);
  CHECK(tg_bind("test_r", 11) < 0);
  CHECK(strstr(tg_error(), "outside") != NULL);
  CHECK(tg_bind("no_such_var", 1) < 0);
  tg_tensor *u = tg_variable("test_unbound", 0, 3);
  float got[1];
  CHECK(tg_data(tg_cast(tg_adds(u, 1), TG_F32), got, sizeof got) < 0);
  CHECK(strstr(tg_error(), "not bound") != NULL);
}
