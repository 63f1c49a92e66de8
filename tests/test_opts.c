/* test_opts.c: every named kernel optimization keeps results exact (against
 * naive C loops), and an opt that does not fit a kernel is refused with a
 * message saying why. */
#include "test.h"

enum { N = 12, M = 32, K = 20 };

static void naive_matmul(const float *a, const float *b, float *c, int n, int m, int k) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      float s = 0;
      for (int p = 0; p < k; p++) s += a[i * k + p] * b[p * m + j];
      c[i * m + j] = s;
    }
}

/* small integers: every summation order gives the exact same floats */
static void fill(float *x, int n, int seed) { for (int i = 0; i < n; i++) x[i] = (float)((i * 7 + seed * 13) % 11 - 5); }

/* relu(a @ b + 1) with the given opts; 0 when it matched the naive loop */
static int matmul_with(const char *spec, bool expect_ok, const char *want_err) {
  float a[N * K], b[K * M], want[N * M], got[N * M];
  fill(a, N * K, 1); fill(b, K * M, 2);
  naive_matmul(a, b, want, N, M, K);
  for (int i = 0; i < N * M; i++) want[i] = want[i] + 1 > 0 ? want[i] + 1 : 0;
  CHECK(tg_set_kernel_opts(spec) == 0);
  tg_scope_begin();
  tg_tensor *x = tg_from_data(a, TG_SHAPE(N, K), TG_F32), *w = tg_from_data(b, TG_SHAPE(K, M), TG_F32);
  tg_realize(x); tg_realize(w);
  tg_tensor *r = tg_relu(tg_adds(tg_matmul(x, w), 1));
  int rc = tg_data(r, got, sizeof got);
  tg_scope_end();
  tg_set_kernel_opts(NULL);
  if (!expect_ok) {
    CHECK_MSG(rc < 0, "%s: should have been refused", spec);
    if (rc < 0 && want_err) CHECK_MSG(strstr(tg_error(), want_err) != NULL, "%s: error '%s' lacks '%s'", spec, tg_error(), want_err);
    return 0;
  }
  CHECK_MSG(rc == 0, "%s: %s", spec, tg_error());
  if (rc == 0) test_close_f32(got, want, N * M, 0, 0, spec);
  return rc;
}

TEST(opts_each_keeps_matmul_exact) {
  /* output axes: 0 (N=12), 1 (M=32); reduce axis 0 (K=20) */
  const char *specs[] = {
    "UPCAST:1:16", "UPCAST:1:4", "UPCAST:0:4", "UPCAST:0:3,UPCAST:1:8", "UNROLL:0:4", "UNROLL:0:20",
    "THREAD:0:2", "THREAD:1:3", "SWAP:0:1", "PADTO:0:16", "UPCAST:1:8,UNROLL:0:5,THREAD:0:2",
    "SWAP:0:1,UPCAST:0:8,THREAD:1:2",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) matmul_with(specs[i], true, NULL);
}

TEST(opts_invalid_are_refused_with_reasons) {
  matmul_with("UPCAST:2:4", false, "out of range");
  matmul_with("UPCAST:0:5", false, "multiple");
  matmul_with("UNROLL:1:2", false, "out of range");
  matmul_with("UNROLL:0:3", false, "multiple");
  matmul_with("THREAD:0:2,THREAD:1:2", false, "already");
  matmul_with("PADTO:1:16", false, "already a multiple");
  matmul_with("SWAP:0:0", false, "different");
  matmul_with("LOCAL:0:4", false, "GPU");
  matmul_with("GROUP:0:4", false, "GPU");
  matmul_with("GROUPTOP:0:4", false, "GPU");
  matmul_with("TC:0:1", false, "GPU");
  matmul_with("UPCAST:1:32,UPCAST:0:12", false, "lanes");
  CHECK(tg_set_kernel_opts("UPCAST:1") < 0);
  CHECK(tg_set_kernel_opts("FOO:1:2") < 0);
  CHECK(strstr(tg_error(), "unknown opt") != NULL);
  CHECK(tg_set_kernel_opts("UPCAST:x:2") < 0);
}

TEST(opts_elementwise_and_full_reduce) {
  enum { L = 1000 };
  float a[L], got[L];
  fill(a, L, 3);
  const char *specs[] = { "UPCAST:0:8", "THREAD:0:2", "PADTO:0:1024,UPCAST:0:16" };
  for (size_t i = 0; i < 3; i++) {
    CHECK(tg_set_kernel_opts(specs[i]) == 0);
    tg_scope_begin();
    tg_tensor *x = tg_from_data(a, TG_SHAPE(L), TG_F32);
    CHECK(tg_data(tg_subs(tg_muls(x, 2), 0.5), got, sizeof got) == 0);
    for (int j = 0; j < L; j++) CHECK_MSG(got[j] == a[j] * 2 - 0.5f, "%s [%d]", specs[i], j);
    tg_scope_end();
  }
  /* a full sum with partial accumulators */
  CHECK(tg_set_kernel_opts("UNROLL:0:8") == 0);
  tg_scope_begin();
  double want = 0;
  for (int j = 0; j < L; j++) want += a[j];
  CHECK_NEAR(tg_item(tg_sum(tg_from_data(a, TG_SHAPE(L), TG_F32), TG_ALL, false)), want, 0);
  tg_scope_end();
  tg_set_kernel_opts(NULL);
}

TEST(opts_default_heuristic_exact_on_odd_shapes) {
  /* shapes with awkward factors: the heuristic must pick only opts that fit */
  int shapes[][3] = { { 7, 13, 5 }, { 1, 64, 3 }, { 64, 1, 17 }, { 33, 48, 64 }, { 16, 16, 1 } };
  for (int s = 0; s < 5; s++) {
    int n = shapes[s][0], m = shapes[s][1], k = shapes[s][2];
    float *a = malloc(sizeof(float) * (size_t)(n * k)), *b = malloc(sizeof(float) * (size_t)(k * m));
    float *want = malloc(sizeof(float) * (size_t)(n * m)), *got = malloc(sizeof(float) * (size_t)(n * m));
    fill(a, n * k, s); fill(b, k * m, s + 1);
    naive_matmul(a, b, want, n, m, k);
    tg_scope_begin();
    tg_tensor *r = tg_matmul(tg_from_data(a, TG_SHAPE(n, k), TG_F32), tg_from_data(b, TG_SHAPE(k, m), TG_F32));
    CHECK(tg_data(r, got, sizeof(float) * (size_t)(n * m)) == 0);
    test_close_f32(got, want, (size_t)(n * m), 0, 0, "heuristic matmul");
    tg_scope_end();
    free(a); free(b); free(want); free(got);
  }
}

TEST(opts_vector_lanes_with_bool_buffers) {
  /* a stored bool mask read by a vectorized kernel: bools are bytes in
   * memory, masks in registers; the lanes must not load them as ints */
  enum { RR = 4, CC = 32 };
  float x[RR * CC], got[RR * CC];
  fill(x, RR * CC, 5);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(RR, CC), TG_F32);
  tg_tensor *mask = tg_gt(X, tg_zeros(TG_SHAPE(RR, CC), TG_F32));
  CHECK(tg_realize(mask) == 0);
  CHECK(tg_set_kernel_opts("UPCAST:1:16") == 0);
  CHECK(tg_data(tg_where(mask, tg_muls(X, 2), tg_zeros_like(X)), got, sizeof got) == 0);
  tg_set_kernel_opts(NULL);
  for (int i = 0; i < RR * CC; i++) CHECK_MSG(got[i] == (x[i] > 0 ? 2 * x[i] : 0), "[%d] %g", i, got[i]);
}

/* float16 and bfloat16 weights widen to float32 inside a vectorized matvec
 * (hardware conversion / a bit shift): exact against a naive loop on values
 * that every format holds exactly. */
TEST(opts_half_weights_matvec_exact) {
  enum { R = 64, C = 256 };
  static float w[R * C], x[C], y[R];
  for (int i = 0; i < R * C; i++) w[i] = (float)((i * 37) % 17 - 8) / 8;
  for (int i = 0; i < C; i++) x[i] = (float)((i * 11) % 9 - 4) / 4;
  tg_dtype dts[2] = { TG_F16, TG_BF16 };
  for (int d = 0; d < 2; d++) {
    tg_scope_begin();
    tg_tensor *W = tg_contiguous(tg_cast(tg_from_data(w, TG_SHAPE(R, C), TG_F32), dts[d]));
    CHECK_OK(tg_realize(W) == 0 ? W : NULL);
    CHECK_OK(tg_data(tg_matmul(tg_cast(W, TG_F32), tg_from_data(x, TG_SHAPE(C), TG_F32)), y, sizeof y) == 0 ? W : NULL);
    for (int r = 0; r < R; r++) {
      double s = 0;
      for (int c = 0; c < C; c++) s += (double)w[r * C + c] * x[c];
      CHECK_MSG(y[r] == (float)s, "%s row %d: %g != %g", tg_dtype_name(dts[d]), r, y[r], s);
    }
    tg_scope_end();
  }
}
