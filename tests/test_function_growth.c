/* test_function_growth.c: what a stack of identical transformer blocks
 * costs to build and schedule in its first forward, with each block a
 * tg_function call (issue [2.5] item 1), on the NULL device with the
 * schedule and lowering caches off (so the first forward is one):
 * the kernels optimized and rendered for 24 layers are those of 1 layer,
 * exactly; and the time of the first forward of 24 layers over that of 1
 * layer is printed and bounded loosely (a body lowered per layer would be
 * about 20x; the target is 1.10, see docs/functions.md). */
#include <time.h>
#include "test.h"
#include "engine/realize.h"

enum { GT = 32, GDIM = 256, GH = 4, GHD = 64, GHID = 1024, GL = 24 };

static int tblock(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *x = in[0], *qkv[3];
  tg_tensor *h = tg_layernorm(x, TG_SHAPE(GDIM), NULL, NULL, 1e-5);
  for (int i = 0; i < 3; i++) qkv[i] = tg_permute(tg_reshape(tg_matmul(h, in[1 + i]), TG_SHAPE(GT, GH, GHD)), TG_AXES(1, 0, 2));
  tg_sdpa_opts o = { .is_causal = true };
  tg_tensor *a = tg_reshape(tg_permute(tg_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], &o), TG_AXES(1, 0, 2)), TG_SHAPE(GT, GDIM));
  x = tg_add(x, tg_matmul(a, in[4]));
  tg_tensor *h2 = tg_layernorm(x, TG_SHAPE(GDIM), NULL, NULL, 1e-5);
  out[0] = tg_add(x, tg_matmul(tg_gelu(tg_matmul(h2, in[5])), in[6]));
  return out[0] ? 0 : -1;
}

static tg_tensor *gw[GL][6], *gx;
static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }

/* a first forward of nl layers (a fresh function: its body is built and
 * scheduled here); seconds, and the programs it needed in *progs */
static double first_forward(int nl, int64_t *progs) {
  engine_forget_programs();
  tg_counters c0 = tg_get_counters();
  double t0 = now_s();
  tg_function *f = tg_function_new("tblock", tblock, NULL, 7, 1);
  tg_scope_begin();
  tg_tensor *h = gx;
  for (int l = 0; l < nl && h; l++) {
    tg_tensor *in[7] = { h, gw[l][0], gw[l][1], gw[l][2], gw[l][3], gw[l][4], gw[l][5] }, *o = NULL;
    if (tg_function_call(f, in, &o) != 0) o = NULL;
    h = o;
  }
  CHECK_MSG(h && tg_realize(h) == 0, "%d layers: %s", nl, tg_error());
  tg_scope_end();
  tg_function_free(f);
  double t = now_s() - t0;
  tg_counters c1 = tg_get_counters();
  *progs = c1.kernels_rendered + c1.programs_cached - c0.kernels_rendered - c0.programs_cached;
  return t;
}

TEST(function_first_forward_growth) {
  char prev_dev[64];
  snprintf(prev_dev, sizeof prev_dev, "%s", tg_default_device());
  if (tg_set_default_device("NULL") != 0) SKIP("no NULL device");
  bool had_s = getenv("TG_NO_SCHEDULE_CACHE"), had_l = getenv("TG_NO_LOWER_CACHE");
  setenv("TG_NO_SCHEDULE_CACHE", "1", 1);
  setenv("TG_NO_LOWER_CACHE", "1", 1);
  gx = tg_zeros(TG_SHAPE(GT, GDIM), TG_F32);
  CHECK(tg_realize(gx) == 0);
  const int64_t sh[6][2] = { { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GHID }, { GHID, GDIM } };
  for (int l = 0; l < GL; l++)
    for (int i = 0; i < 6; i++) { gw[l][i] = tg_zeros(TG_SHAPE(sh[i][0], sh[i][1]), TG_F32); CHECK(tg_realize(gw[l][i]) == 0); }
  double t1 = 1e9, t24 = 1e9;
  int64_t p1 = 0, p24 = 0;
  for (int r = 0; r < 3; r++) {   /* best of 3, interleaved (the machine may be shared) */
    double a = first_forward(1, &p1), b = first_forward(GL, &p24);
    if (a < t1) t1 = a;
    if (b < t24) t24 = b;
  }
  CHECK(p1 > 0);
  CHECK_EQ_INT(p24, p1);   /* the body's kernels, once */
  printf("     first forward: 1 layer %.2f ms, %d layers %.2f ms (x%.2f), %lld programs each\n", t1 * 1e3, GL, t24 * 1e3, t24 / t1, (long long)p1);
  CHECK_MSG(t24 < 3 * t1, "24 layers took %.2fx one layer's first forward", t24 / t1);
  if (!had_s) unsetenv("TG_NO_SCHEDULE_CACHE");
  if (!had_l) unsetenv("TG_NO_LOWER_CACHE");
  tg_set_default_device(prev_dev);
}
