/* test_take.c: tg_take (row lookup by an integer tensor) against naive loops:
 * reads, out-of-range rows, fusion with math, and writes through it at a
 * symbolic position (a KV-cache update). */
#include "test.h"

TEST(take_rows) {
  tg_scope_begin();
  float tab[5 * 3];
  for (int i = 0; i < 15; i++) tab[i] = (float)(i * 7 % 11) - 3.5f;
  int32_t ix[2 * 2] = { 4, 0, 2, 7 };   /* 7 is out of range: reads 0 */
  tg_tensor *t = tg_from_data(tab, TG_SHAPE(5, 3), TG_F32);
  tg_tensor *i = tg_from_data(ix, TG_SHAPE(2, 2), TG_I32);
  tg_tensor *r = tg_mul(tg_take(t, i), tg_scalar(2, TG_F32));
  CHECK_OK(r);
  tg_shape s = tg_shape_of(r);
  CHECK(s.ndim == 3 && s.d[0] == 2 && s.d[1] == 2 && s.d[2] == 3);
  float out[12];
  CHECK_OK(tg_data(r, out, sizeof out) == 0);
  for (int a = 0; a < 4; a++)
    for (int j = 0; j < 3; j++) {
      float want = ix[a] >= 0 && ix[a] < 5 ? 2 * tab[ix[a] * 3 + j] : 0;
      CHECK_MSG(out[a * 3 + j] == want, "[%d][%d]: %g != %g", a, j, out[a * 3 + j], want);
    }
  CHECK(tg_take(t, tg_from_data((float[]){ 1 }, TG_SHAPE(1), TG_F32)) == NULL);
  CHECK(strstr(tg_error(), "tg_take") != NULL);
  tg_scope_end();
}

TEST(take_assign_at_variable_position) {
  tg_scope_begin();
  const int ctx = 8, dim = 4;
  float zero[8 * 4] = { 0 }, ref[8 * 4] = { 0 };
  tg_tensor *cache = tg_from_data(zero, TG_SHAPE(ctx, dim), TG_F32);
  CHECK_OK(tg_realize(cache) == 0);
  tg_tensor *pos = tg_variable("take_pos", 0, ctx - 2);
  for (int p = 0; p < 6; p += 2) {
    float v[2 * 4];
    for (int i = 0; i < 8; i++) v[i] = (float)(p * 10 + i);
    tg_scope_begin();
    tg_tensor *rows = tg_add(pos, tg_arange(0, 2, 1, TG_I32));
    tg_assign(tg_take(cache, rows), tg_from_data(v, TG_SHAPE(2, dim), TG_F32));
    CHECK_OK(tg_bind("take_pos", p) == 0);
    CHECK_OK(tg_realize(cache) == 0);
    tg_scope_end();
    memcpy(ref + p * dim, v, sizeof v);
  }
  float out[8 * 4];
  CHECK_OK(tg_data(cache, out, sizeof out) == 0);
  for (int i = 0; i < ctx * dim; i++) CHECK_MSG(out[i] == ref[i], "[%d]: %g != %g", i, out[i], ref[i]);
  tg_scope_end();
}
