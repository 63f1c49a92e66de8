/* test_shard.c: sharded tensors over CPU devices in one process
 * (tg_shard, include/tg_dist.h). The property every test checks: a
 * computation over sharded tensors gives what the same computation gives on
 * one device (exactly for integers, within float rounding for floats, whose
 * sums run in another order), and the allreduce variants give the
 * one-device sum. */
#include "test.h"
#include <time.h>
#include <unistd.h>
#include "tg_dist.h"

static const char *DEV3[] = { "CPU", "CPU:1", "CPU:2" };

/* TG_CPU_DEVICES is read when a device is looked up: 3 for these tests */
static void three_devices(void) { setenv("TG_CPU_DEVICES", "3", 1); }
static void default_devices(void) { unsetenv("TG_CPU_DEVICES"); }

static void fill(float *a, int n, int seed) {
  for (int i = 0; i < n; i++) a[i] = (float)(((i + 1) * (7 + 2 * seed)) % 29) * 0.0625f - 0.8f;
}

/* got (any device, sharded or not) against want, as floats */
static void check_same(tg_tensor *got, tg_tensor *want, double tol, const char *what) {
  int64_t n = tg_numel(want);
  CHECK_MSG(got && tg_numel(got) == n, "%s: %s", what, got ? "sizes differ" : tg_error());
  if (!got || tg_numel(got) != n) return;
  float *g = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
  tg_tensor *gf = tg_cast(got, TG_F32), *wf = tg_cast(want, TG_F32);
  int rg = tg_data(gf, g, sizeof(float) * (size_t)n), rw = tg_data(wf, w, sizeof(float) * (size_t)n);
  CHECK_MSG(rg == 0 && rw == 0, "%s: %s", what, tg_error());
  if (rg == 0 && rw == 0) test_close_f32(g, w, (size_t)n, tol, tol, what);
  free(g); free(w);
}

/* f over x plain and x sharded on each axis (and replicated), on 2 and 3 devices */
typedef tg_tensor *(*unary_case)(tg_tensor *x);
static void check_unary(unary_case f, tg_tensor *x, const char *what) {
  tg_tensor *want = f(x);
  char name[128];
  for (int nd = 2; nd <= 3; nd++)
    for (int axis = -1; axis < tg_ndim(x); axis++) {
      if (axis >= 0 && tg_dim(x, axis) % nd) continue;
      snprintf(name, sizeof name, "%s (%d devices, axis %d)", what, nd, axis);
      tg_tensor *s = tg_shard(x, DEV3, nd, axis);
      CHECK_MSG(s, "%s: %s", name, tg_error());
      if (s) check_same(f(s), want, 1e-5, name);
    }
}

static tg_tensor *ew(tg_tensor *x) { return tg_add(tg_relu(tg_adds(tg_muls(x, 2), -0.5)), tg_exp(tg_muls(x, 0.25))); }
static tg_tensor *mv_reshape_sum(tg_tensor *x) { return tg_sum(tg_reshape(x, TG_SHAPE(6, 2, 6)), TG_AXES(1), false); }
static tg_tensor *mv_flatten(tg_tensor *x) { return tg_reshape(x, TG_SHAPE(72)); }
static tg_tensor *mv_permute(tg_tensor *x) { return tg_muls(tg_permute(x, TG_AXES(1, 0)), 3); }
static tg_tensor *mv_slice_pad(tg_tensor *x) {
  int64_t s[2] = { 0, 1 }, e[2] = { 12, 5 }, p[4] = { 0, 0, 2, 1 };
  return tg_pad(tg_shrink(x, s, e), p, 2, 0.5);
}
static tg_tensor *mv_rows(tg_tensor *x) { int64_t s[2] = { 4, 0 }, e[2] = { 8, 6 }; return tg_shrink(x, s, e); }
static tg_tensor *mv_expand(tg_tensor *x) { return tg_sum(tg_expand(tg_reshape(x, TG_SHAPE(12, 1, 6)), TG_SHAPE(12, 4, 6)), TG_AXES(2), false); }
static tg_tensor *red_all(tg_tensor *x) { return tg_sum(x, TG_AXES(0, 1), false); }
static tg_tensor *red_max0(tg_tensor *x) { return tg_max(x, TG_AXES(0), true); }
static tg_tensor *red_mean1(tg_tensor *x) { return tg_mean(x, TG_AXES(1), false); }
static tg_tensor *softmax0(tg_tensor *x) { return tg_softmax(x, 0); }
static tg_tensor *to_cpu1(tg_tensor *x) { return tg_to(tg_muls(x, 2), "CPU:1"); }

TEST(shard_elementwise_movement_reduce) {
  three_devices();
  tg_scope_begin();
  float a[72];
  fill(a, 72, 0);
  tg_tensor *x = tg_from_data(a, TG_SHAPE(12, 6), TG_F32);
  check_unary(ew, x, "elementwise");
  check_unary(mv_reshape_sum, x, "reshape + sum");
  check_unary(mv_flatten, x, "flatten");
  check_unary(mv_permute, x, "permute");
  check_unary(mv_slice_pad, x, "shrink + pad");
  check_unary(mv_rows, x, "a shrink of one part");
  check_unary(mv_expand, x, "expand");
  check_unary(red_all, x, "sum of all");
  check_unary(red_max0, x, "max over axis 0");
  check_unary(red_mean1, x, "mean over axis 1");
  check_unary(softmax0, x, "softmax over axis 0");
  check_unary(to_cpu1, x, "tg_to CPU:1");
  /* the layout after each op */
  tg_tensor *s = tg_shard(x, DEV3, 3, 0);
  CHECK_EQ_INT(tg_shard_axis(s), 0);
  CHECK_EQ_INT(tg_shard_axis(tg_permute(s, TG_AXES(1, 0))), 1);
  CHECK_EQ_INT(tg_shard_axis(tg_sum(s, TG_AXES(0), false)), -1);
  CHECK_EQ_INT(tg_shard_axis(tg_sum(s, TG_AXES(1), false)), 0);
  CHECK_EQ_INT(tg_shard_axis(x), -2);
  CHECK(!strcmp(tg_device_of(s), "CPU,CPU:1,CPU:2"));
  CHECK(!strcmp(tg_device_of(tg_to(s, "CPU:1")), "CPU:1"));
  tg_scope_end();
  default_devices();
}

/* The devices of a sharded op share one compiler, so its kernel is one
 * source for all of them, compiled in the same batch: the compiler runs once
 * and the others wait for its file. A constant unique to this run makes the
 * kernel new to the disk cache; a first op with another one compiles
 * whatever else the op needs (the parts' copies). */
TEST(shard_devices_compile_a_kernel_once) {
  three_devices();
  tg_scope_begin();
  float a[96], o[96];
  fill(a, 96, 1);
  tg_tensor *s = tg_shard(tg_from_data(a, TG_SHAPE(12, 8), TG_F32), DEV3, 3, 0);
  float unique = (float)(getpid() % 1000) * 1e-3f + (float)(time(NULL) % 1000) * 1e-6f;
  CHECK(tg_data(tg_adds(tg_muls(s, 1.5f), unique + 2.0f), o, sizeof o) == 0);
  tg_reset_counters();
  CHECK(tg_data(tg_adds(tg_muls(s, 1.5f), unique + 3.0f), o, sizeof o) == 0);
  /* CPU:1's and CPU:2's parts are the same kernel (CPU's own part fuses
   * into the gather, another kernel): one of them ran the compiler */
  tg_counters c = tg_get_counters();
  CHECK_MSG(c.kernels_compiled >= 1 && c.kernels_cached >= 1, "compiler runs %lld, served without it %lld",
            (long long)c.kernels_compiled, (long long)c.kernels_cached);
  for (int i = 0; i < 96; i++) CHECK_NEAR(o[i], a[i] * 1.5f + unique + 3.0f, 1e-5);
  tg_scope_end();
  default_devices();
}

TEST(shard_integer_ops_exact) {
  three_devices();
  tg_scope_begin();
  int32_t v[60];
  for (int i = 0; i < 60; i++) v[i] = (i * 37) % 101 - 50;
  tg_tensor *x = tg_from_data(v, TG_SHAPE(6, 10), TG_I32);
  tg_tensor *want[3] = { tg_sum(x, TG_AXES(0), false), tg_max(x, TG_AXES(0), false), tg_mul(tg_sum(x, TG_AXES(1), true), x) };
  for (int nd = 2; nd <= 3; nd++) {
    tg_tensor *s = tg_shard(x, DEV3, nd, 0);
    tg_tensor *got[3] = { tg_sum(s, TG_AXES(0), false), tg_max(s, TG_AXES(0), false), tg_mul(tg_sum(s, TG_AXES(1), true), s) };
    for (int k = 0; k < 3; k++) {
      int32_t g[60], w[60];
      int64_t n = tg_numel(want[k]);
      CHECK(tg_data(got[k], g, sizeof g) == 0 && tg_data(want[k], w, sizeof w) == 0);
      CHECK_MSG(!memcmp(g, w, sizeof(int32_t) * (size_t)n), "integer case %d on %d devices differs", k, nd);
    }
  }
  tg_scope_end();
  default_devices();
}

/* Rows taken from a table sharded on another axis (a KV cache split by kv
 * heads) by an index replicated over the same devices (a batch's sequence
 * ids) or plain: each part takes the same rows, the result stays split on
 * the table's axis (no gather), and its values are one device's, exactly;
 * an index with as many axes as the table is not cut on the split axis. */
TEST(shard_take_rows_of_split_table) {
  three_devices();
  tg_scope_begin();
  int32_t v[6 * 6 * 2], ix1[4] = { 5, 0, 3, 3 }, ix2[6] = { 1, 4, 2, 0, 5, 1 };
  for (int i = 0; i < 72; i++) v[i] = (i * 29) % 83 - 40;
  tg_tensor *t = tg_from_data(v, TG_SHAPE(6, 6, 2), TG_I32), *t2 = tg_reshape(t, TG_SHAPE(6, 12));
  tg_tensor *i1 = tg_from_data(ix1, TG_SHAPE(4), TG_I32), *i2 = tg_from_data(ix2, TG_SHAPE(2, 3), TG_I32);
  for (int nd = 2; nd <= 3; nd++) {
    tg_tensor *st = tg_shard(t, DEV3, nd, 1), *st2 = tg_shard(t2, DEV3, nd, 1);
    tg_tensor *got[3] = { tg_take(st, tg_shard(i1, DEV3, nd, -1)), tg_take(st2, tg_shard(i2, DEV3, nd, -1)), tg_take(st, tg_arange(1, 5, 1, TG_I32)) };
    tg_tensor *want[3] = { tg_take(t, i1), tg_take(t2, i2), tg_take(t, tg_arange(1, 5, 1, TG_I32)) };
    int axis[3] = { 1, 2, 1 };
    for (int k = 0; k < 3; k++) {
      CHECK_MSG(got[k] && tg_shard_axis(got[k]) == axis[k], "case %d on %d devices: axis %d (%s)", k, nd, got[k] ? tg_shard_axis(got[k]) : -9,
                got[k] ? "" : tg_error());
      int32_t g[72], w[72];
      int64_t n = want[k] ? tg_numel(want[k]) : 0;
      CHECK(got[k] && want[k] && tg_data(got[k], g, sizeof g) == 0 && tg_data(want[k], w, sizeof w) == 0);
      CHECK_MSG(n > 0 && !memcmp(g, w, sizeof(int32_t) * (size_t)n), "take case %d on %d devices differs", k, nd);
    }
  }
  tg_scope_end();
  default_devices();
}

TEST(shard_matmul_data_and_tensor_parallel) {
  three_devices();
  tg_scope_begin();
  float a[6 * 12], b[12 * 6];
  fill(a, 6 * 12, 1); fill(b, 12 * 6, 2);
  tg_tensor *x = tg_from_data(a, TG_SHAPE(6, 12), TG_F32), *w = tg_from_data(b, TG_SHAPE(12, 6), TG_F32);
  tg_tensor *want = tg_matmul(x, w);
  struct { int xa, wa, out_axis; const char *what; } cases[] = {
    { 0, -1, 0, "batch rows (data parallel)" },
    { -1, 1, 1, "weight columns (output stays sharded)" },
    { -1, 0, -1, "weight rows (the contraction allreduces)" },
    { 1, 0, -1, "both on the contraction axis" },
  };
  for (int nd = 2; nd <= 3; nd++)
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      char name[128];
      snprintf(name, sizeof name, "matmul, %s, %d devices", cases[k].what, nd);
      tg_tensor *y = tg_matmul(tg_shard(x, DEV3, nd, cases[k].xa), tg_shard(w, DEV3, nd, cases[k].wa));
      CHECK_MSG(y, "%s: %s", name, tg_error());
      if (!y) continue;
      CHECK_MSG(tg_shard_axis(y) == cases[k].out_axis, "%s: sharded on %d, not %d", name, tg_shard_axis(y), cases[k].out_axis);
      check_same(y, want, 1e-5, name);
      CHECK_EQ_INT(tg_shard_axis(y), cases[k].out_axis);   /* realized, still the same layout */
    }
  tg_scope_end();
  default_devices();
}

/* copies and their bytes in what realizing t would run */
static int copies(tg_tensor *t, int64_t *bytes) {
  tg_schedule_entry e[256];
  int n = tg_schedule_list(&t, 1, e, 256), c = 0;
  *bytes = 0;
  for (int i = 0; i < n && i < 256; i++) if (e[i].copy) { c++; *bytes += e[i].bytes; }
  return c;
}

TEST(shard_allreduce_naive_ring_cast) {
  three_devices();
  tg_scope_begin();
  /* uneven chunks: 1001 elements in 3 ring chunks */
  enum { N = 1001 };
  static int32_t v[3 * N];
  static float f[3 * N];
  int64_t want_i[N];
  for (int i = 0; i < 3 * N; i++) { v[i] = (i * 7919) % 2001 - 1000; f[i] = (float)v[i] / 64; }
  for (int j = 0; j < N; j++) want_i[j] = (int64_t)v[j] + v[N + j] + v[2 * N + j];
  tg_tensor *xi = tg_from_data(v, TG_SHAPE(3, N), TG_I32), *xf = tg_from_data(f, TG_SHAPE(3, N), TG_F32);
  tg_tensor *want_f = tg_sum(xf, TG_AXES(0), false);
  const char *mode[2] = { "0", "2" };
  int ncopies[2];
  for (int m = 0; m < 2; m++) {
    setenv("TG_RING", mode[m], 1);
    tg_tensor *parts = tg_shard(xi, DEV3, 3, 0);
    CHECK(tg_realize(parts) == 0);   /* its own copies are not the allreduce's */
    tg_tensor *si = tg_sum(parts, TG_AXES(0), false);
    int64_t bytes;
    ncopies[m] = copies(si, &bytes);
    static int32_t g[N];
    CHECK(tg_data(si, g, sizeof g) == 0);
    bool same = true;
    for (int j = 0; j < N; j++) same &= g[j] == want_i[j];
    CHECK_MSG(same, "TG_RING=%s: the int32 allreduce is not the exact sum", mode[m]);
    check_same(tg_sum(tg_shard(xf, DEV3, 3, 0), TG_AXES(0), false), want_f, 1e-6, mode[m][0] == '0' ? "naive float allreduce" : "ring float allreduce");
  }
  unsetenv("TG_RING");
  /* naive: each of 3 devices copies the 2 other parts; ring: 2 steps of
   * reduce-scatter and 2 of all-gather for each of 3 chunks. (The gather
   * onto CPU for tg_data is not in these lists: si is the root.) */
  CHECK_EQ_INT(ncopies[0], 6);
  CHECK_EQ_INT(ncopies[1], 12);
  /* ALLREDUCE_CAST: a half tensor's sum accumulates in float, but its
   * partial sums cross devices as half */
  static uint16_t h[3 * N];
  tg_tensor *xh = tg_cast(xf, TG_F16);
  CHECK(tg_data(xh, h, sizeof h) == 0);
  xh = tg_from_data(h, TG_SHAPE(3, N), TG_F16);
  int64_t b_cast, b_wide;
  setenv("TG_RING", "0", 1);
  tg_tensor *hs = tg_shard(xh, DEV3, 3, 0);
  CHECK(tg_realize(hs) == 0);
  tg_tensor *sh = tg_sum(hs, TG_AXES(0), false);
  copies(sh, &b_cast);
  check_same(sh, tg_sum(xh, TG_AXES(0), false), 2e-3, "half sum with ALLREDUCE_CAST");
  setenv("TG_ALLREDUCE_CAST", "0", 1);
  tg_tensor *sw = tg_sum(hs, TG_AXES(0), false);
  copies(sw, &b_wide);
  check_same(sw, tg_sum(xh, TG_AXES(0), false), 2e-3, "half sum without ALLREDUCE_CAST");
  unsetenv("TG_ALLREDUCE_CAST");
  unsetenv("TG_RING");
  CHECK_MSG(b_cast * 2 == b_wide, "ALLREDUCE_CAST copies %lld bytes, float copies %lld (want half)", (long long)b_cast, (long long)b_wide);
  tg_scope_end();
  default_devices();
}

TEST(shard_errors) {
  tg_scope_begin();
  float a[12] = { 0 };
  tg_tensor *x = tg_from_data(a, TG_SHAPE(3, 4), TG_F32);
  const char *two[2] = { "CPU", "CPU:1" }, *dup[2] = { "CPU", "cpu" }, *absent[2] = { "CPU", "CPU:15" }, *null_dev[2] = { "CPU", NULL };
  CHECK_ERR(tg_shard(x, two, 2, 2), "tg_shard", "axis 2 out of range");
  CHECK_ERR(tg_shard(x, two, 2, -2), "axis -2 out of range");
  CHECK_ERR(tg_shard(x, two, 2, 0), "axis 0 of size 3 does not split evenly over 2 devices");
  CHECK_ERR(tg_shard(x, dup, 2, 1), "listed twice");
  CHECK_ERR(tg_shard(x, absent, 2, 1), "tg_shard", "CPU:15");
  CHECK_ERR(tg_shard(x, null_dev, 2, 1), "devices[1] is NULL");
  CHECK_ERR(tg_shard(x, NULL, 2, 1), "devices is NULL");
  CHECK_ERR(tg_shard(x, two, 0, 1), "0 devices");
  CHECK_ERR(tg_shard(NULL, two, 2, 1), "tg_shard");
  /* a sharded and an unsharded tensor: says which devices */
  tg_tensor *s = tg_shard(x, two, 2, 1);
  CHECK_ERR(tg_add(s, x), "tg_add", "CPU,CPU:1", "CPU");
  CHECK_ERR(tg_matmul(s, tg_permute(x, TG_AXES(1, 0))), "CPU,CPU:1");
  CHECK_EQ_INT(tg_shard_axis(NULL), -2);
  tg_scope_end();
}

/* Autograd: a replicated weight, a batch sharded over the devices; the
 * weight's gradient (a sum over the batch) is allreduced, and an SGD step
 * on the replicated weight matches one device's. */
TEST(shard_autograd_data_parallel) {
  three_devices();
  tg_scope_begin();
  float a[6 * 12], b[12 * 9];
  fill(a, 6 * 12, 3); fill(b, 12 * 9, 4);
  for (int nd = 1; nd <= 3; nd++) {
    tg_tensor *x = tg_from_data(a, TG_SHAPE(6, 12), TG_F32);
    tg_tensor *w = tg_requires_grad(tg_from_data(b, TG_SHAPE(12, 9), TG_F32), true);
    if (nd > 1) {
      x = tg_shard(x, DEV3, nd, 0);
      w = tg_requires_grad(tg_shard(w, DEV3, nd, -1), true);
      CHECK_OK(tg_realize(w) == 0 ? w : NULL);
    }
    tg_tensor *loss = tg_mean(tg_relu(tg_matmul(x, w)), TG_AXES(0, 1), false);
    CHECK_MSG(tg_backward(loss) == 0, "%s", tg_error());
    tg_tensor *g = tg_grad(w);
    CHECK_OK(g);
    CHECK(tg_realize(loss) == 0);
    CHECK(nd == 1 || tg_shard_axis(g) == -1);
    CHECK_OK(tg_assign(w, tg_sub(w, tg_muls(g, 0.5))));
    CHECK(tg_realize(w) == 0);
    static tg_tensor *ref_w, *ref_loss;
    if (nd == 1) { ref_w = w; ref_loss = loss; continue; }
    char name[64];
    snprintf(name, sizeof name, "SGD step on %d devices", nd);
    check_same(w, ref_w, 1e-5, name);
    check_same(loss, ref_loss, 1e-5, "loss");
  }
  tg_scope_end();
  default_devices();
}

/* The fashion_mnist model's ops (conv2d, batch norm over the batch, max
 * pool, linear, cross entropy) on a batch sharded over the devices: every
 * weight's gradient equals one device's. */
#include "tg_nn.h"
TEST(shard_cnn_gradients) {
  three_devices();
  tg_scope_begin();
  enum { B = 6, H = 8 };
  static float xs[B * H * H], cw[3 * 9], lw[4 * 27];
  int32_t ys[B];
  fill(xs, B * H * H, 5); fill(cw, 27, 6); fill(lw, 4 * 27, 7);
  for (int i = 0; i < B; i++) ys[i] = (i * 3) % 4;
  float cb[3] = { 0.1f, -0.2f, 0.05f }, bw[3] = { 1, 0.5f, 2 }, bb[3] = { 0, 0.1f, -0.1f };
  tg_tensor *want[5] = { 0 }, *want_loss = NULL;
  for (int nd = 1; nd <= 3; nd++) {
    tg_tensor *p[5] = { tg_from_data(cw, TG_SHAPE(3, 1, 3, 3), TG_F32), tg_from_data(cb, TG_SHAPE(3), TG_F32),
                        tg_from_data(bw, TG_SHAPE(3), TG_F32), tg_from_data(bb, TG_SHAPE(3), TG_F32),
                        tg_from_data(lw, TG_SHAPE(4, 27), TG_F32) };
    tg_tensor *x = tg_from_data(xs, TG_SHAPE(B, 1, H, H), TG_F32), *y = tg_from_data(ys, TG_SHAPE(B), TG_I32);
    if (nd > 1) {
      for (int i = 0; i < 5; i++) p[i] = tg_shard(p[i], DEV3, nd, -1);
      x = tg_shard(x, DEV3, nd, 0);
      y = tg_shard(y, DEV3, nd, 0);
    }
    for (int i = 0; i < 5; i++) tg_requires_grad(p[i], true);
    tg_conv_opts o = { 0 };
    tg_pool_opts po = { .kernel = { 2, 2 } };
    tg_tensor *h = tg_relu(tg_conv2d(x, p[0], p[1], &o)), *mean, *var;   /* (B, 3, 6, 6) */
    CHECK(tg_batchnorm_stats(h, &mean, &var) == 0);
    h = tg_max_pool2d(tg_batchnorm(h, mean, var, p[2], p[3], 1e-5), &po, NULL);   /* (B, 3, 3, 3) */
    tg_tensor *loss = tg_sparse_categorical_crossentropy(tg_linear(tg_flatten(h, 1, -1), p[4], NULL), y, NULL);
    CHECK_MSG(loss && tg_backward(loss) == 0, "%d devices: %s", nd, tg_error());
    if (!loss) continue;
    if (nd == 1) {
      want_loss = loss;
      for (int i = 0; i < 5; i++) want[i] = tg_grad(p[i]);
      continue;
    }
    char name[64];
    check_same(loss, want_loss, 1e-5, "loss");
    for (int i = 0; i < 5; i++) {
      snprintf(name, sizeof name, "gradient %d on %d devices", i, nd);
      check_same(tg_grad(p[i]), want[i], 1e-4, name);
    }
  }
  tg_scope_end();
  default_devices();
}

/* Data-parallel MLP: every weight's gradient allreduce feeds no other, so
 * they go as one bucket: 2 copies on 2 devices (naive: one each way) for
 * all six gradients, where each alone would take 2. */
static int gradient_copies(bool bucket) {
  if (!bucket) setenv("TG_ALLREDUCE_BUCKET", "0", 1);
  tg_scope_begin();
  float a[8 * 12], w[3][12 * 12];
  fill(a, 8 * 12, 8);
  tg_tensor *x = tg_shard(tg_from_data(a, TG_SHAPE(8, 12), TG_F32), DEV3, 2, 0), *p[6];
  for (int l = 0; l < 3; l++) {
    fill(w[l], 144, 9 + l);
    p[2 * l] = tg_requires_grad(tg_shard(tg_from_data(w[l], TG_SHAPE(12, 12), TG_F32), DEV3, 2, -1), true);
    p[2 * l + 1] = tg_requires_grad(tg_shard(tg_zeros(TG_SHAPE(12), TG_F32), DEV3, 2, -1), true);
  }
  tg_tensor *all[7] = { x, p[0], p[1], p[2], p[3], p[4], p[5] };
  CHECK(tg_realize_all(all, 7) == 0);
  tg_tensor *h = x;
  for (int l = 0; l < 3; l++) h = tg_relu(tg_add(tg_matmul(h, p[2 * l]), p[2 * l + 1]));
  CHECK(tg_backward(tg_sum(h, TG_ALL, false)) == 0);
  tg_tensor *g[6];
  for (int i = 0; i < 6; i++) g[i] = tg_grad(p[i]);
  tg_schedule_entry e[256];
  int n = tg_schedule_list(g, 6, e, 256), c = 0;
  for (int i = 0; i < n && i < 256; i++) c += e[i].copy;
  tg_scope_end();
  unsetenv("TG_ALLREDUCE_BUCKET");
  return c;
}
/* A stored value inside what one realize ran (a contiguous product that
 * feeds the realized sum) is memory afterwards, as on one device: the
 * tensor over it needs nothing scheduled, and keeps its layout (live
 * tensors over sharded graphs held, and every later realize walked, the
 * whole graph below them: a 12-layer LLM's step took 44 s to capture). */
TEST(shard_stored_inside_becomes_memory) {
  tg_scope_begin();
  const char *two[2] = { "CPU", "CPU:1" };
  float a[16];
  for (int i = 0; i < 16; i++) a[i] = (float)(i % 5) - 2;
  tg_tensor *x = tg_from_data(a, TG_SHAPE(4, 4), TG_F32);
  tg_tensor *y = tg_contiguous(tg_relu(tg_matmul(tg_shard(x, two, 2, 0), tg_shard(x, two, 2, -1))));
  tg_tensor *s = tg_sum(y, TG_AXES(0), false);
  CHECK_OK(tg_realize(s) == 0);
  tg_schedule_entry e[16];
  CHECK_EQ_INT(tg_schedule_list(&y, 1, e, 16), 0);
  CHECK_EQ_INT(tg_shard_axis(y), 0);
  float got[16], want[16];
  CHECK_OK(tg_data(y, got, sizeof got) == 0);
  CHECK_OK(tg_data(tg_relu(tg_matmul(x, x)), want, sizeof want) == 0);
  for (int i = 0; i < 16; i++) CHECK_NEAR(got[i], want[i], 0);
  tg_scope_end();
}

TEST(shard_gradient_allreduce_one_bucket) {
  CHECK_EQ_INT(gradient_copies(true), 2);
  CHECK_EQ_INT(gradient_copies(false), 12);
}

/* build/examples/fashion_mnist --devices CPU:0,CPU:1 against one device:
 * the first step's loss within float rounding (the sums over the batch run
 * in two halves), the next within a tolerance that grows with the steps,
 * because Adam's first updates are about each gradient's sign, which
 * rounding flips for the smallest (docs/distributed.md). */
static int losses_of(const char *out, double *v, int max) {
  int n = 0;
  for (const char *p = strstr(out, "\nloss "); p && n < max; p = strstr(p + 1, "\nloss ")) {
    int step;
    double x;
    if (sscanf(p, "\nloss %d %lf", &step, &x) == 2 && step == n) v[n++] = x;
  }
  return n;
}
TEST(shard_fmnist_devices_same_loss) {
  const char *bd = test_build_dir(), *data = "/usr/share/datasets/fashion-mnist";
  if (!bd) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(data, R_OK) != 0) SKIP("no %s (Debian: dataset-fashion-mnist)", data);
  char ex[1200], cmd[2048];
  snprintf(ex, sizeof ex, "%s/examples/fashion_mnist", bd);
  if (access(ex, X_OK) != 0) SKIP("%s is not built", ex);
  enum { STEPS = 3 };
  static char out[65536];
  double two[STEPS], one[STEPS], tol[STEPS] = { 1e-5, 1e-4, 2e-3 };
  snprintf(cmd, sizeof cmd, "timeout 600 %s %d --devices CPU:0,CPU:1 --batch 128 --lr 1e-4 --print-loss --no-eval 2>&1", ex, STEPS);
  int rc = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(rc == 0 && losses_of(out, two, STEPS) == STEPS, "--devices: exit status %d:\n%s", rc, out);
  snprintf(cmd, sizeof cmd, "timeout 600 %s %d --batch 128 --lr 1e-4 --print-loss --no-eval 2>&1", ex, STEPS);
  rc = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(rc == 0 && losses_of(out, one, STEPS) == STEPS, "one device: exit status %d:\n%s", rc, out);
  for (int i = 0; i < STEPS; i++)
    CHECK_MSG(fabs(two[i] - one[i]) <= tol[i] * fabs(one[i]), "step %d: 2 devices %.9g, one device %.9g", i, two[i], one[i]);
}

/* Devices of different kinds: CPU and CL (PoCL) parts run their own
 * kernels; a part on DISK, which runs none, or on NULL beside CPU, which
 * computes nothing, is refused by tg_shard itself, saying which, before
 * any op is built on it. */
TEST(shard_mixed_device_kinds) {
  tg_scope_begin();
  float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, o[4];
  tg_tensor *x = tg_from_data(a, TG_SHAPE(4, 2), TG_F32);
  const char *disk[2] = { "CPU", "DISK" }, *null_cpu[2] = { "NULL", "CPU:1" }, *cl[2] = { "CPU", "CL" };
  CHECK_ERR(tg_shard(x, disk, 2, 0), "tg_shard: DISK cannot hold a part", "no op runs there");
  CHECK_ERR(tg_shard(x, null_cpu, 2, -1), "tg_shard: NULL computes nothing", "beside CPU:1's");
  tg_device_info info[32];
  int n = tg_devices(info, 32, NULL);
  bool have_cl = false;
  for (int i = 0; i < n && i < 32; i++) have_cl |= !strcmp(info[i].name, "CL");
  if (have_cl) {
    tg_tensor *s = tg_shard(x, cl, 2, 0);
    CHECK_MSG(tg_data(tg_sum(tg_muls(s, 2), TG_AXES(1), false), o, sizeof o) == 0, "%s", tg_error());
    for (int i = 0; i < 4; i++) CHECK_NEAR(o[i], 2 * (a[2 * i] + a[2 * i + 1]), 0);
  }
  tg_scope_end();
  if (!have_cl) SKIP("no CL device for the CPU + CL half");
}
