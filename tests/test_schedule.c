/* test_schedule.c: how many kernels the scheduler makes, read from the API
 * counters (tg_get_counters().kernels_run before and after a realize).
 *
 * Each pinned graph is built from realized inputs and realized twice: on the
 * NULL device (schedules and "runs" kernels without computing anything) and
 * on the CPU, where the values are also checked against naive C loops. Both
 * must give the pinned kernel count. NULL-device tensors are made while NULL
 * is the default device; every test puts "CPU" back. */
#include <stdint.h>
#include "test.h"

/* ---------------------------------------------------------------- helpers */

#define MAXIN 4
typedef tg_tensor *(*graph_fn)(tg_tensor **in);
typedef struct { tg_shape shape; const float *data; } input;

/* Deterministic test data: small values, a few negative. */
static void fill(float *x, int n, int seed) {
  uint32_t s = 2463534242u + (uint32_t)seed * 7919u;
  for (int i = 0; i < n; i++) {
    s ^= s << 13; s ^= s >> 17; s ^= s << 5;
    x[i] = (float)((int)(s % 2001) - 1000) / 250.0f;   /* -4 .. 4, multiples of 1/250 */
  }
}

static int64_t kernels_now(void) { return tg_get_counters().kernels_run; }

/* Builds f(inputs) on `device` and realizes it; returns the kernels that ran
 * (-1 on an error). On the CPU, out (n floats) receives the result. */
static int64_t run_graph(const char *device, graph_fn f, const input *ins, int nin, float *out, size_t n) {
  int64_t k = -1;
  if (tg_set_default_device(device) < 0) { test_fail(__FILE__, __LINE__, "set device %s: %s", device, tg_error()); return -1; }
  tg_scope_begin();
  tg_tensor *in[MAXIN] = { 0 };
  bool ok = true;
  for (int i = 0; i < nin; i++) {
    in[i] = tg_from_data(ins[i].data, ins[i].shape, TG_F32);
    ok &= in[i] != NULL;
  }
  int64_t k0 = kernels_now();
  for (int i = 0; ok && i < nin; i++) ok &= tg_realize(in[i]) == 0;
  if (ok && kernels_now() != k0) test_fail(__FILE__, __LINE__, "%s: realizing tg_from_data inputs ran %lld kernels",
                                           device, (long long)(kernels_now() - k0));
  tg_tensor *r = ok ? f(in) : NULL;
  if (!r) test_fail(__FILE__, __LINE__, "%s: building the graph failed: %s", device, tg_error());
  else {
    k0 = kernels_now();
    if (tg_realize(r) < 0) test_fail(__FILE__, __LINE__, "%s: realize failed: %s", device, tg_error());
    else {
      k = kernels_now() - k0;
      if (out) {
        CHECK_EQ_INT(tg_numel(r), (int64_t)n);
        if (tg_numel(r) == (int64_t)n && tg_data(r, out, n * sizeof(float)) < 0) test_fail(__FILE__, __LINE__, "tg_data: %s", tg_error());
        /* reading a realized, contiguous result runs nothing more */
        CHECK_EQ_INT(kernels_now() - k0, k);
      }
    }
  }
  tg_scope_end();
  tg_set_default_device("CPU");
  return k;
}

/* Pins the kernel count of f on NULL and on CPU, and compares the CPU values
 * with want (n floats, relative and absolute tolerance tol). The count must
 * be exactly `kernels`, or with at_most between 1 and `kernels`. */
static void pin(const char *what, graph_fn f, const input *ins, int nin, const float *want, size_t n,
                int kernels, bool at_most, double tol) {
  int64_t kn = run_graph("NULL", f, ins, nin, NULL, 0);
  float *out = calloc(n ? n : 1, sizeof(float));
  int64_t kc = run_graph("CPU", f, ins, nin, out, n);
  if (at_most) {
    CHECK_MSG(kn >= 1 && kn <= kernels, "%s: NULL device ran %lld kernels, want 1..%d", what, (long long)kn, kernels);
    CHECK_MSG(kc >= 1 && kc <= kernels, "%s: CPU ran %lld kernels, want 1..%d", what, (long long)kc, kernels);
  } else {
    CHECK_MSG(kn == kernels, "%s: NULL device ran %lld kernels, want %d", what, (long long)kn, kernels);
    CHECK_MSG(kc == kernels, "%s: CPU ran %lld kernels, want %d", what, (long long)kc, kernels);
  }
  CHECK_MSG(kn == kc, "%s: NULL and CPU schedules differ: %lld vs %lld kernels", what, (long long)kn, (long long)kc);
  if (kc >= 0) {
    char label[128];
    snprintf(label, sizeof label, "%s values", what);
    test_close_f32(out, want, n, tol, tol, label);
  }
  free(out);
}

/* ---------------------------------------------------------------- pinned graphs */

static float A[6 * 8], B[6 * 8], W[8 * 5], BIAS[5];
static void init_data(void) {
  fill(A, 48, 1); fill(B, 48, 2); fill(W, 40, 3); fill(BIAS, 5, 4);
}

static tg_tensor *g_affine(tg_tensor **in) { return tg_subs(tg_muls(tg_adds(in[0], 1), 2), 0.5); }
TEST(schedule_elementwise_chain_one_kernel) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[48];
  for (int i = 0; i < 48; i++) want[i] = (A[i] + 1) * 2 - 0.5f;
  pin("(a+1)*2-0.5", g_affine, ins, 1, want, 48, 1, false, 1e-6);
}

static tg_tensor *g_sum_all(tg_tensor **in) { return tg_sum(tg_muls(in[0], 2), TG_ALL, false); }
TEST(schedule_mul_sum_one_kernel) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  double s = 0;
  for (int i = 0; i < 48; i++) s += 2.0 * A[i];
  float want[1] = { (float)s };
  pin("(a*2).sum()", g_sum_all, ins, 1, want, 1, 1, false, 1e-5);
}

static tg_tensor *g_linear(tg_tensor **in) { return tg_relu(tg_add(tg_matmul(in[0], in[1]), in[2])); }
TEST(schedule_linear_relu_one_kernel) {
  init_data();
  input ins[3] = { { TG_SHAPE(6, 8), A }, { TG_SHAPE(8, 5), W }, { TG_SHAPE(5), BIAS } };
  float want[30];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 5; j++) {
      double s = BIAS[j];
      for (int k = 0; k < 8; k++) s += (double)A[i * 8 + k] * W[k * 5 + j];
      want[i * 5 + j] = s > 0 ? (float)s : 0.0f;
    }
  pin("relu(x@w+b)", g_linear, ins, 3, want, 30, 1, false, 1e-5);
}

static tg_tensor *g_T(tg_tensor **in) { return tg_contiguous(tg_T(in[0])); }
TEST(schedule_transpose_contiguous_one_kernel) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[48];
  for (int i = 0; i < 6; i++) for (int j = 0; j < 8; j++) want[j * 6 + i] = A[i * 8 + j];
  pin("a.T.contiguous()", g_T, ins, 1, want, 48, 1, false, 0);
}

static tg_tensor *g_add_sum1(tg_tensor **in) { return tg_sum(tg_add(in[0], in[1]), TG_AXES(1), false); }
TEST(schedule_add_sum_axis1_one_kernel) {
  init_data();
  input ins[2] = { { TG_SHAPE(6, 8), A }, { TG_SHAPE(6, 8), B } };
  float want[6];
  for (int i = 0; i < 6; i++) {
    double s = 0;
    for (int j = 0; j < 8; j++) s += (double)A[i * 8 + j] + B[i * 8 + j];
    want[i] = (float)s;
  }
  pin("(a+b).sum(axis=1)", g_add_sum1, ins, 2, want, 6, 1, false, 1e-5);
}

static tg_tensor *g_softmax(tg_tensor **in) { return tg_softmax(in[0], -1); }
TEST(schedule_softmax_at_most_three_kernels) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[48];
  for (int i = 0; i < 6; i++) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 8; j++) m = fmax(m, A[i * 8 + j]);
    for (int j = 0; j < 8; j++) s += exp(A[i * 8 + j] - m);
    for (int j = 0; j < 8; j++) want[i * 8 + j] = (float)(exp(A[i * 8 + j] - m) / s);
  }
  pin("softmax(a, -1)", g_softmax, ins, 1, want, 48, 3, true, 1e-5);
}

static tg_tensor *g_slice_add(tg_tensor **in) { return tg_adds(TG_GET(in[0], TG_SLICE(1, 4, 1), TG_STEP(-2)), 3); }
TEST(schedule_slice_add_one_kernel) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[12];
  for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) want[i * 4 + j] = A[(1 + i) * 8 + (7 - 2 * j)] + 3;
  pin("a[1:4, ::-2] + 3", g_slice_add, ins, 1, want, 12, 1, false, 0);
}

static tg_tensor *g_movement(tg_tensor **in) {
  return tg_flip(tg_permute(tg_reshape(in[0], TG_SHAPE(2, 3, 8)), TG_AXES(2, 0, 1)), TG_AXES(0));
}
TEST(schedule_movement_of_realized_one_copy_kernel) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[48];   /* out[k][i][j] = a3[i][j][7-k] */
  for (int k = 0; k < 8; k++) for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++)
    want[(k * 2 + i) * 3 + j] = A[(i * 3 + j) * 8 + (7 - k)];
  pin("flip(permute(reshape(a)))", g_movement, ins, 1, want, 48, 1, false, 0);
}

static tg_tensor *g_reduce_then_expand(tg_tensor **in) {
  /* a - a.max(1): the reduce is broadcast back, so it is its own kernel */
  return tg_sub(in[0], tg_max(in[0], TG_AXES(1), true));
}
TEST(schedule_reduce_broadcast_back_two_kernels) {
  init_data();
  input ins[1] = { { TG_SHAPE(6, 8), A } };
  float want[48];
  for (int i = 0; i < 6; i++) {
    float m = -INFINITY;
    for (int j = 0; j < 8; j++) m = fmaxf(m, A[i * 8 + j]);
    for (int j = 0; j < 8; j++) want[i * 8 + j] = A[i * 8 + j] - m;
  }
  pin("a - a.max(1, keepdim)", g_reduce_then_expand, ins, 1, want, 48, 2, false, 0);
}

/* ---------------------------------------------------------------- no kernels */

TEST(schedule_reshape_of_realized_no_kernel) {
  init_data();
  for (int d = 0; d < 2; d++) {
    const char *dev = d ? "CPU" : "NULL";
    tg_set_default_device(dev);
    tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32);
    int64_t k0 = kernels_now();
    tg_tensor *r = tg_reshape(a, TG_SHAPE(2, 24));
    CHECK_OK(r);
    CHECK(tg_realize(r) == 0);
    tg_tensor *r2 = tg_reshape(tg_unsqueeze(a, 0), TG_SHAPE(48));
    CHECK(tg_realize(r2) == 0);
    CHECK_MSG(kernels_now() == k0, "%s: reshape of a realized tensor ran %lld kernels", dev, (long long)(kernels_now() - k0));
    if (d) {
      float out[48];
      CHECK(tg_data(r2, out, sizeof out) == 0);
      CHECK(!memcmp(out, A, sizeof out));
      CHECK_MSG(kernels_now() == k0, "reading a reshape of a realized tensor ran a kernel");
    }
  }
  tg_set_default_device("CPU");
}

TEST(schedule_realized_again_no_kernel) {
  init_data();
  for (int d = 0; d < 2; d++) {
    const char *dev = d ? "CPU" : "NULL";
    tg_set_default_device(dev);
    tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32);
    tg_tensor *r = tg_muls(a, 3);
    int64_t k0 = kernels_now();
    CHECK(tg_realize(r) == 0);
    CHECK_EQ_INT(kernels_now() - k0, 1);
    k0 = kernels_now();
    CHECK(tg_realize(r) == 0);
    CHECK(tg_realize(r) == 0);
    tg_tensor *both[2] = { r, r };
    CHECK(tg_realize_all(both, 2) == 0);
    CHECK_MSG(kernels_now() == k0, "%s: realizing a realized tensor again ran %lld kernels", dev, (long long)(kernels_now() - k0));
    if (d) {
      float out[48];
      CHECK(tg_data(r, out, sizeof out) == 0);
      for (int i = 0; i < 48; i++) CHECK_MSG(out[i] == A[i] * 3, "a*3 [%d]: %g vs %g", i, out[i], A[i] * 3);
      CHECK_EQ_INT(kernels_now() - k0, 0);
      /* item of a realized scalar: no kernel either */
      tg_tensor *s = tg_sum(a, TG_ALL, false);
      CHECK(tg_realize(s) == 0);
      k0 = kernels_now();
      double v = tg_item(s);
      CHECK(!isnan(v));
      CHECK_EQ_INT(kernels_now() - k0, 0);
    }
  }
  tg_set_default_device("CPU");
}

TEST(schedule_realize_all_two_roots) {
  init_data();
  for (int d = 0; d < 2; d++) {
    const char *dev = d ? "CPU" : "NULL";
    tg_set_default_device(dev);
    tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32), *b = tg_from_data(B, TG_SHAPE(6, 8), TG_F32);
    tg_tensor *r1 = tg_add(a, b);
    tg_tensor *r2 = tg_sum(tg_mul(a, b), TG_AXES(0), false);
    tg_tensor *roots[2] = { r1, r2 };
    tg_counters c0 = tg_get_counters();
    CHECK(tg_realize_all(roots, 2) == 0);
    tg_counters c1 = tg_get_counters();
    CHECK_MSG(c1.kernels_run - c0.kernels_run == 2, "%s: realize_all of two roots ran %lld kernels, want 2", dev,
              (long long)(c1.kernels_run - c0.kernels_run));
    CHECK_MSG(c1.schedules - c0.schedules == 1, "%s: realize_all built %lld schedules, want 1", dev, (long long)(c1.schedules - c0.schedules));
    CHECK(tg_realize(r1) == 0 && tg_realize(r2) == 0);
    CHECK_EQ_INT(kernels_now() - c1.kernels_run, 0);
    if (d) {
      float o1[48], o2[8];
      CHECK(tg_data(r1, o1, sizeof o1) == 0);
      CHECK(tg_data(r2, o2, sizeof o2) == 0);
      for (int i = 0; i < 48; i++) CHECK_MSG(o1[i] == A[i] + B[i], "a+b [%d]", i);
      for (int j = 0; j < 8; j++) {
        double s = 0;
        for (int i = 0; i < 6; i++) s += (double)A[i * 8 + j] * B[i * 8 + j];
        CHECK_NEAR(o2[j], s, 1e-5);
      }
    }
  }
  tg_set_default_device("CPU");
}

/* Realizing an identical graph again (new tensors, new data) reuses the
 * compiled kernel: nothing compiled, nothing loaded from the disk cache. */
TEST(schedule_identical_graph_compiles_nothing_new) {
  init_data();
  float outs[2][40];
  for (int rep = 0; rep < 2; rep++) {
    tg_scope_begin();
    tg_tensor *a = tg_from_data(rep ? B : A, TG_SHAPE(5, 8), TG_F32);
    /* a shape no other test uses, so the first round may compile */
    tg_tensor *r = tg_subs(tg_muls(tg_adds(tg_sqrt(tg_abs(a)), 1.25), 3), 0.5);
    tg_counters c0 = tg_get_counters();
    CHECK(tg_realize(r) == 0);
    tg_counters c1 = tg_get_counters();
    CHECK_EQ_INT(c1.kernels_run - c0.kernels_run, 1);
    if (rep) {
      CHECK_MSG(c1.kernels_compiled == c0.kernels_compiled, "second realize compiled %lld kernels", (long long)(c1.kernels_compiled - c0.kernels_compiled));
      CHECK_MSG(c1.kernels_cached == c0.kernels_cached, "second realize loaded %lld kernels from the disk cache", (long long)(c1.kernels_cached - c0.kernels_cached));
    } else {
      CHECK_MSG(c1.kernels_compiled + c1.kernels_cached - c0.kernels_compiled - c0.kernels_cached <= 1, "first realize compiled more than one kernel");
    }
    CHECK(tg_data(r, outs[rep], sizeof outs[rep]) == 0);
    tg_scope_end();
  }
  for (int i = 0; i < 40; i++) {
    CHECK_NEAR(outs[0][i], (sqrt(fabs(A[i])) + 1.25) * 3 - 0.5, 1e-6);
    CHECK_NEAR(outs[1][i], (sqrt(fabs(B[i])) + 1.25) * 3 - 0.5, 1e-6);
  }
}

/* Reading a movement view of a realized tensor costs one copy kernel, and a
 * second read of the same view is free (the copy was kept). */
TEST(schedule_read_view_one_copy) {
  init_data();
  tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32);
  tg_tensor *v = TG_GET(a, TG_STEP(-1), TG_SLICE(2, 6, 1));
  int64_t k0 = kernels_now();
  float out[24];
  CHECK(tg_data(v, out, sizeof out) == 0);
  CHECK_EQ_INT(kernels_now() - k0, 1);
  for (int i = 0; i < 6; i++) for (int j = 0; j < 4; j++) CHECK(out[i * 4 + j] == A[(5 - i) * 8 + 2 + j]);
  k0 = kernels_now();
  CHECK(tg_data(v, out, sizeof out) == 0);
  CHECK_EQ_INT(kernels_now() - k0, 0);
}

/* A tensor with a size-0 axis: reading it must not write anywhere (a kernel
 * that ignores the empty axis would corrupt the heap), and the values around
 * it stay right. */
TEST(schedule_empty_tensor) {
  init_data();
  tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32);
  tg_tensor *e = TG_GET(a, TG_SLICE(4, 2, 1));
  CHECK_OK(e);
  CHECK_EQ_INT(tg_numel(e), 0);
  CHECK_EQ_INT(tg_dim(e, 0), 0);
  CHECK_EQ_INT(tg_dim(e, 1), 8);
  float guard[4] = { 1, 2, 3, 4 };
  CHECK(tg_data(e, guard, 0) == 0);
  CHECK(guard[0] == 1 && guard[3] == 4);
  tg_tensor *s = tg_sum(tg_adds(e, 1), TG_AXES(0), false);   /* 8 zeros */
  float out[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
  CHECK(tg_data(s, out, sizeof out) == 0);
  for (int i = 0; i < 8; i++) CHECK(out[i] == 0);
  tg_tensor *z = tg_contiguous(tg_zeros(TG_SHAPE(3, 0, 2), TG_F32));
  CHECK(tg_realize(z) == 0);
  /* the heap is still fine: a realloc-heavy round of ordinary work */
  float big[48];
  CHECK(tg_data(tg_muls(a, 2), big, sizeof big) == 0);
  for (int i = 0; i < 48; i++) CHECK(big[i] == 2 * A[i]);
}

TEST(schedule_big_full_reduce_splits_across_cores) {
  /* 2^20 elements: partial sums (an output axis to thread) then their sum;
   * small integers make every order exact */
  enum { N = 1 << 20 };
  float *x = malloc(sizeof(float) * N);
  double want = 0;
  for (int i = 0; i < N; i++) { x[i] = (float)(i % 7) - 3; want += x[i]; }
  tg_tensor *t = tg_from_data(x, TG_SHAPE(N), TG_F32);
  int64_t k0 = tg_get_counters().kernels_run;
  CHECK_NEAR(tg_item(tg_sum(t, TG_ALL, false)), want, 0);
  CHECK_EQ_INT(tg_get_counters().kernels_run - k0, 2);
  float mx = -1e30f;
  for (int i = 0; i < N; i++) mx = x[i] > mx ? x[i] : mx;
  CHECK_NEAR(tg_item(tg_max(t, TG_ALL, false)), mx, 0);
  free(x);
}

/* Multi-output kernels: outputs realized together over the same loops share
 * one kernel (each input read once), checked against naive loops; outputs
 * with other loops, or that depend on each other, stay apart. */
TEST(schedule_multi_output_siblings_share_a_kernel) {
  init_data();
  tg_scope_begin();
  tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32), *b = tg_from_data(B, TG_SHAPE(6, 8), TG_F32);
  CHECK_OK(tg_realize(a) == 0 && tg_realize(b) == 0 ? a : NULL);
  tg_tensor *outs[3] = { tg_add(a, b), tg_mul(a, b), tg_subs(tg_muls(a, 3), 1) };
  int64_t k0 = kernels_now();
  CHECK_OK(tg_realize_all(outs, 3) == 0 ? a : NULL);
  CHECK_EQ_INT(kernels_now() - k0, 1);
  float got[3][48];
  for (int o = 0; o < 3; o++) CHECK_OK(tg_data(outs[o], got[o], sizeof got[o]) == 0 ? a : NULL);
  for (int i = 0; i < 48; i++) {
    CHECK(got[0][i] == A[i] + B[i]);
    CHECK(got[1][i] == A[i] * B[i]);
    CHECK(got[2][i] == A[i] * 3 - 1);
  }
  /* other loops: a row sum and an elementwise op are two kernels */
  tg_tensor *mixed[2] = { tg_sum(a, TG_AXES(1), false), tg_add(a, b) };
  k0 = kernels_now();
  CHECK_OK(tg_realize_all(mixed, 2) == 0 ? a : NULL);
  CHECK_EQ_INT(kernels_now() - k0, 2);
  /* a chain: the second output reads the first one's buffer, so they stay
   * apart and the values are still right */
  tg_tensor *y = tg_contiguous(tg_adds(a, 1));
  tg_tensor *chain[2] = { y, tg_muls(y, 2) };
  CHECK_OK(tg_realize_all(chain, 2) == 0 ? a : NULL);
  float c2[48];
  CHECK_OK(tg_data(chain[1], c2, sizeof c2) == 0 ? a : NULL);
  for (int i = 0; i < 48; i++) CHECK(c2[i] == (A[i] + 1) * 2);
  tg_scope_end();
}

/* An assign realized together with a computation made before it that reads
 * the target: the reader sees the old values (it runs before the writer, a
 * write-after-read order), so the two must not merge into one kernel that
 * would mix old and new values. Same answer as without merging. */
TEST(schedule_multi_output_respects_assign_hazards) {
  init_data();
  tg_scope_begin();
  tg_tensor *a = tg_contiguous(tg_from_data(A, TG_SHAPE(6, 8), TG_F32)), *b = tg_from_data(B, TG_SHAPE(6, 8), TG_F32);
  CHECK_OK(tg_realize(a) == 0 && tg_realize(b) == 0 ? a : NULL);
  tg_tensor *old = tg_muls(a, 2);                 /* made before the assign */
  tg_tensor *both[2] = { old, tg_assign(a, tg_add(a, b)) };
  CHECK_OK(tg_realize_all(both, 2) == 0 ? a : NULL);
  float got_old[48], got_a[48];
  CHECK_OK(tg_data(old, got_old, sizeof got_old) == 0 ? a : NULL);
  CHECK_OK(tg_data(a, got_a, sizeof got_a) == 0 ? a : NULL);
  for (int i = 0; i < 48; i++) {
    CHECK_MSG(got_a[i] == A[i] + B[i], "a[%d] = %g", i, got_a[i]);
    CHECK_MSG(got_old[i] == A[i] * 2, "old[%d] = %g", i, got_old[i]);
  }
  tg_scope_end();
}

/* Work that several kernels read is stored once instead of recomputed in
 * each: a reduce read by two optimizer-style updates through a reshape, and
 * a costly elementwise chain read by two reductions. Counted by the
 * estimated flops of the realize (one copy of the work, not two). */
TEST(schedule_shared_work_stored_once) {
  init_data();
  tg_scope_begin();
  tg_tensor *a = tg_from_data(A, TG_SHAPE(6, 8), TG_F32), *b = tg_from_data(B, TG_SHAPE(6, 8), TG_F32);
  tg_tensor *m = tg_contiguous(tg_zeros(TG_SHAPE(8), TG_F32)), *v = tg_contiguous(tg_zeros(TG_SHAPE(8), TG_F32));
  CHECK_OK(tg_realize(a) == 0 && tg_realize(b) == 0 && tg_realize(m) == 0 && tg_realize(v) == 0 ? a : NULL);
  tg_tensor *g = tg_reshape(tg_sum(tg_mul(a, b), TG_AXES(0), true), TG_SHAPE(8));
  tg_tensor *upd[2] = { tg_assign(m, tg_add(tg_muls(m, 0.9), g)), tg_assign(v, tg_add(tg_muls(v, 0.5), tg_mul(g, g))) };
  int64_t k0 = kernels_now();
  CHECK_OK(tg_realize_all(upd, 2) == 0 ? a : NULL);
  CHECK_MSG(kernels_now() - k0 >= 2, "the gradient's reduce should be its own kernel: %lld kernels", (long long)(kernels_now() - k0));
  float gm[8], gv[8];
  CHECK_OK(tg_data(m, gm, sizeof gm) == 0 && tg_data(v, gv, sizeof gv) == 0 ? a : NULL);
  for (int j = 0; j < 8; j++) {
    float s = 0;
    for (int i = 0; i < 6; i++) s += A[i * 8 + j] * B[i * 8 + j];
    CHECK_NEAR(gm[j], s, 1e-5);
    CHECK_NEAR(gv[j], s * s, 1e-3);
  }
  /* a chain of 60 ops read by a row sum and a column sum */
  tg_tensor *e = a;
  for (int i = 0; i < 30; i++) e = tg_add(tg_mul(e, b), a);
  tg_tensor *sums[2] = { tg_sum(e, TG_AXES(0), false), tg_sum(e, TG_AXES(1), false) };
  k0 = kernels_now();
  CHECK_OK(tg_realize_all(sums, 2) == 0 ? a : NULL);
  CHECK_EQ_INT(kernels_now() - k0, 3);   /* the chain once, then the two sums */
  float rows[8], cols[6];
  CHECK_OK(tg_data(sums[0], rows, sizeof rows) == 0 && tg_data(sums[1], cols, sizeof cols) == 0 ? a : NULL);
  float want_r[8] = { 0 }, want_c[6] = { 0 };
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 8; j++) {
      float x = A[i * 8 + j];
      for (int k = 0; k < 30; k++) x = x * B[i * 8 + j] + A[i * 8 + j];
      want_r[j] += x; want_c[i] += x;
    }
  for (int j = 0; j < 8; j++) CHECK_NEAR(rows[j], want_r[j], 1e-4);
  for (int i = 0; i < 6; i++) CHECK_NEAR(cols[i], want_c[i], 1e-4);
  tg_scope_end();
}

TEST(schedule_intermediate_layout_follows_its_input) {
  /* u = X.T + Y.T + Z.T is read by two kernels and reads three big buffers:
   * stored once, in X's layout (so its kernel reads and writes memory in
   * step); then contiguous(u.T) is X's layout element for element: no copy
   * kernel, just u's buffer. Values against C. */
  enum { A = 256, B = 384 };
  float *x = malloc(sizeof(float) * A * B), *y = malloc(sizeof(float) * A * B), *z = malloc(sizeof(float) * A * B);
  float *got = malloc(sizeof(float) * A * B), sums[B];
  for (int i = 0; i < A * B; i++) { x[i] = (float)(i % 7); y[i] = (float)(i % 5) * 0.5f; z[i] = (float)(i % 3) - 1; }
  tg_tensor *X = tg_from_data(x, TG_SHAPE(A, B), TG_F32), *Y = tg_from_data(y, TG_SHAPE(A, B), TG_F32), *Z = tg_from_data(z, TG_SHAPE(A, B), TG_F32);
  tg_tensor *u = tg_add(tg_add(tg_transpose(X, 0, 1), tg_transpose(Y, 0, 1)), tg_transpose(Z, 0, 1));   /* (B, A) */
  tg_tensor *outs[2] = { tg_contiguous(tg_transpose(u, 0, 1)), tg_sum(u, TG_AXES(1), false) };
  int64_t k0 = kernels_now();
  CHECK(tg_realize_all(outs, 2) == 0);
  int64_t k = kernels_now() - k0;
  CHECK_MSG(k == 2, "u stored once and the contiguous copy aliased: %lld kernels, want 2", (long long)k);
  CHECK(tg_data(outs[0], got, sizeof(float) * A * B) == 0);
  CHECK(tg_data(outs[1], sums, sizeof sums) == 0);
  for (int i = 0; i < A * B; i++) CHECK_MSG(got[i] == x[i] + y[i] + z[i], "[%d] %g", i, got[i]);
  for (int b = 0; b < B; b++) {
    double s = 0;
    for (int a = 0; a < A; a++) s += x[a * B + b] + y[a * B + b] + z[a * B + b];
    CHECK_MSG(sums[b] == (float)s, "sum[%d] %g vs %g", b, sums[b], s);
  }
  free(x); free(y); free(z); free(got);
}

/* A realized contiguous slice (rows of a matrix, one row) is a view of the
 * matrix's memory: no kernel runs; a slice that is not contiguous is a copy. */
TEST(schedule_contiguous_slice_is_a_view) {
  tg_scope_begin();
  float m[6 * 4], got[3 * 4];
  for (int i = 0; i < 24; i++) m[i] = (float)i;
  tg_tensor *x = tg_from_data(m, TG_SHAPE(6, 4), TG_F32);
  CHECK(tg_realize(x) == 0);
  tg_tensor *rows = tg_shrink(x, (int64_t[]){ 2, 0 }, (int64_t[]){ 5, 4 });
  tg_tensor *row = tg_reshape(tg_shrink(x, (int64_t[]){ 4, 0 }, (int64_t[]){ 5, 4 }), TG_SHAPE(4));
  tg_tensor *cols = tg_shrink(x, (int64_t[]){ 0, 1 }, (int64_t[]){ 6, 3 });
  tg_schedule_entry e[4];
  CHECK_EQ_INT(tg_schedule_list(&rows, 1, e, 4), 0);
  CHECK_EQ_INT(tg_schedule_list(&row, 1, e, 4), 0);
  CHECK_EQ_INT(tg_schedule_list(&cols, 1, e, 4), 1);
  int64_t runs = tg_get_counters().kernels_run;
  CHECK(tg_data(rows, got, sizeof got) == 0);
  for (int i = 0; i < 12; i++) CHECK_NEAR(got[i], m[8 + i], 0);
  CHECK(tg_data(row, got, 4 * sizeof(float)) == 0);
  for (int i = 0; i < 4; i++) CHECK_NEAR(got[i], m[16 + i], 0);
  CHECK_EQ_INT(tg_get_counters().kernels_run, runs);
  /* a view's values flow on like any tensor's */
  float s = 0;
  CHECK(tg_data(tg_sum(rows, TG_AXES(0, 1), false), &s, sizeof s) == 0);
  CHECK_NEAR(s, (8 + 19) * 12 / 2.0, 0);
  tg_scope_end();
}

/* A realize replaces its graph in every live tensor built on it, one at a
 * time: each of 100 row sums, realized in turn, is then read from its buffer
 * by the product made on it before (not summed again), and the values are
 * the sums. The 100 unrelated graphs share the 64 bits that summarize their
 * buffers (uop.leaves), so after each realize some are walked and found
 * untouched, most skipped (tensors_substitute). */
TEST(schedule_realize_substitutes_into_dependents) {
  enum { N = 100, R = 16, C = 64 };
  static float x[N][R * C];
  tg_tensor *a[N], *b[N];
  tg_scope_begin();
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < R * C; k++) x[i][k] = (float)((i * 7 + k * 3) % 11) - 5;
    a[i] = tg_sum(tg_from_data(x[i], TG_SHAPE(R, C), TG_F32), TG_AXES(1), false);   /* (R) */
    b[i] = tg_muls(a[i], 2);
  }
  for (int i = 0; i < N; i++) CHECK(tg_realize(a[i]) == 0);
  for (int i = 0; i < N; i++) {
    float got[R], want[R];
    for (int r = 0; r < R; r++) {
      double s = 0;
      for (int k = 0; k < C; k++) s += x[i][r * C + k];
      want[r] = (float)(2 * s);
    }
    double bytes = tg_get_counters().bytes;
    CHECK(tg_data(b[i], got, sizeof got) == 0);
    double read = tg_get_counters().bytes - bytes;
    CHECK_MSG(read < R * C * sizeof(float), "b[%d] moved %g bytes: a[%d]'s sum ran again", i, read, i);
    test_close_f32(got, want, R, 0, 0, "2 x row sums");
  }
  tg_scope_end();
}

/* Graphs thousands of operations deep (a loop that never realizes): a chain
 * of ALU ops lowers bottom-up (no stack overflow) to one kernel, checked
 * against the same adds in C; a chain through views (a flip between the
 * adds) is refused past its depth limit with an error, not a crash, and
 * realizing part of it first works. */
TEST(schedule_deep_chains) {
  enum { N = 20000, FLIPS = 3000 };
  tg_tensor *y = tg_ones(TG_SHAPE(16), TG_F32);
  tg_scope_begin();
  for (int i = 0; i < N; i++) y = tg_add(y, tg_scalar(1, TG_F32));
  float out[16], want = 1;
  for (int i = 0; i < N; i++) want += 1;   /* exact: integers below 2^24 */
  int64_t k0 = kernels_now();
  CHECK_OK(tg_data(y, out, sizeof out) == 0);
  CHECK_EQ_INT(kernels_now() - k0, 1);
  for (int i = 0; i < 16; i++) CHECK_MSG(out[i] == want, "element %d: %g, C gives %g", i, out[i], want);
  tg_scope_end();

  tg_scope_begin();
  float c[4][4], v[16];
  for (int i = 0; i < 16; i++) c[i / 4][i % 4] = (float)i;
  tg_tensor *x = tg_from_data(c, TG_SHAPE(4, 4), TG_F32), *z = x;
  for (int i = 0; i < FLIPS; i++) z = tg_flip(tg_add(z, tg_scalar(1, TG_F32)), TG_AXES(0));
  CHECK(tg_data(z, v, sizeof v) < 0);
  CHECK_MSG(tg_error() && strstr(tg_error(), "deep") && strstr(tg_error(), "tg_realize"), "error: %s", tg_error() ? tg_error() : "(none)");
  /* the same chain realized every 500 steps: each row gains FLIPS, and an
   * odd number of flips reverses the rows (FLIPS is even: they stay) */
  z = x;
  for (int i = 0; i < FLIPS; i++) {
    z = tg_flip(tg_add(z, tg_scalar(1, TG_F32)), TG_AXES(0));
    if (i % 500 == 499) CHECK_OK(tg_realize(z) == 0);
  }
  CHECK_OK(tg_data(z, v, sizeof v) == 0);
  for (int i = 0; i < 16; i++) CHECK_MSG(v[i] == c[i / 4][i % 4] + FLIPS, "element %d: %g, want %g", i, v[i], c[i / 4][i % 4] + FLIPS);
  tg_scope_end();
}
