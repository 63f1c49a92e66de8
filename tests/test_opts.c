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

TEST(opts_by_kernel_name) {
  /* "NAME=OPTS": only the kernel of that name gets them */
  matmul_with("r_12_32_20=UPCAST:1:4,UNROLL:0:4", true, NULL);
  matmul_with("r_12_32_20=UPCAST:2:4", false, "out of range");
  matmul_with("r_other=UPCAST:2:4", true, NULL);   /* no such kernel: the heuristic */
  matmul_with("r_other=UPCAST:2:4;r_12_32_20=UPCAST:0:4", true, NULL);
  matmul_with("r_other=UPCAST:1:4;r_12_32_20=UPCAST:0:5", false, "multiple");
  CHECK(tg_set_kernel_opts("r_12_32_20=UPCAST:1") < 0);
  CHECK(tg_set_kernel_opts("r_a=UPCAST:1:4;UNROLL:0:4") < 0);
  CHECK(strstr(tg_error(), "NAME=OPTS") != NULL);
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

/* Big enough matmuls read b through a packed panel copy, and the heuristic
 * walks the panels in the outer loop (two kernels: the copy, the matmul);
 * x @ w.T with few rows of x is a tile of dot products instead (one kernel).
 * All exact against the naive loop, batched ones too, and the gradients. */
static void naive_batched(const float *a, const float *b, float *c, int batch, int n, int m, int k, bool b_transposed) {
  for (int z = 0; z < batch; z++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) {
        float s = 0;
        for (int p = 0; p < k; p++) s += a[(z * n + i) * k + p] * (b_transposed ? b[(z * m + j) * k + p] : b[(z * k + p) * m + j]);
        c[(z * n + i) * m + j] = s;
      }
}

static void matmul_case(int batch, int n, int m, int k, bool b_transposed, int want_kernels) {
  size_t na = (size_t)(batch * n * k), nb = (size_t)(batch * k * m), nc = (size_t)(batch * n * m);
  float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *want = malloc(nc * sizeof(float)), *got = malloc(nc * sizeof(float));
  fill(a, (int)na, n); fill(b, (int)nb, m);
  naive_batched(a, b, want, batch, n, m, k, b_transposed);
  tg_scope_begin();
  tg_tensor *x = tg_from_data(a, batch > 1 ? TG_SHAPE(batch, n, k) : TG_SHAPE(n, k), TG_F32);
  tg_tensor *w = b_transposed ? tg_from_data(b, batch > 1 ? TG_SHAPE(batch, m, k) : TG_SHAPE(m, k), TG_F32)
                              : tg_from_data(b, batch > 1 ? TG_SHAPE(batch, k, m) : TG_SHAPE(k, m), TG_F32);
  CHECK(tg_realize(x) == 0 && tg_realize(w) == 0);
  if (b_transposed) w = tg_transpose(w, -1, -2);
  int64_t before = tg_get_counters().kernels_run;
  tg_tensor *r = tg_matmul(x, w);
  CHECK_MSG(tg_data(r, got, nc * sizeof(float)) == 0, "%s", tg_error());
  char what[96];
  snprintf(what, sizeof what, "matmul %dx(%d,%d)@(%d,%d)%s", batch, n, k, k, m, b_transposed ? " b=w.T" : "");
  CHECK_MSG(tg_get_counters().kernels_run - before == want_kernels, "%s: %lld kernels, want %d", what,
            (long long)(tg_get_counters().kernels_run - before), want_kernels);
  test_close_f32(got, want, nc, 0, 0, what);
  tg_scope_end();
  free(a); free(b); free(want); free(got);
}

TEST(opts_packed_matmul_exact) {
  matmul_case(1, 128, 96, 128, false, 2);    /* packed: 3 panels of 32 */
  matmul_case(1, 64, 256, 320, false, 2);
  matmul_case(3, 32, 64, 256, false, 2);     /* batched panels */
  matmul_case(1, 512, 64, 64, true, 2);      /* many rows: w.T is packed too */
  matmul_case(1, 64, 128, 256, true, 1);     /* few rows: dot-product tiles on w's rows */
  matmul_case(1, 128, 100, 128, false, 1);   /* 100 columns: no whole panels, plain kernel */
  matmul_case(1, 8, 256, 256, false, 1);     /* too few rows to pay for the copy */
}

TEST(opts_packed_matmul_gradients) {
  /* d(sum(x @ w * g))/dx = g @ w.T, /dw = x.T @ g, through the panel copy */
  enum { R = 64, KK = 128, C = 64 };
  static float a[R * KK], b[KK * C], g[R * C], gx[R * KK], gw[KK * C], want_x[R * KK], want_w[KK * C];
  fill(a, R * KK, 1); fill(b, KK * C, 2); fill(g, R * C, 3);
  for (int i = 0; i < R; i++)
    for (int p = 0; p < KK; p++) { float s = 0; for (int j = 0; j < C; j++) s += g[i * C + j] * b[p * C + j]; want_x[i * KK + p] = s; }
  for (int p = 0; p < KK; p++)
    for (int j = 0; j < C; j++) { float s = 0; for (int i = 0; i < R; i++) s += a[i * KK + p] * g[i * C + j]; want_w[p * C + j] = s; }
  tg_scope_begin();
  tg_tensor *x = tg_from_data(a, TG_SHAPE(R, KK), TG_F32), *w = tg_from_data(b, TG_SHAPE(KK, C), TG_F32);
  tg_requires_grad(x, true); tg_requires_grad(w, true);
  tg_tensor *loss = tg_sum(tg_mul(tg_matmul(x, w), tg_from_data(g, TG_SHAPE(R, C), TG_F32)), TG_ALL, false);
  CHECK(tg_backward(loss) == 0);
  CHECK(tg_data(tg_grad(x), gx, sizeof gx) == 0 && tg_data(tg_grad(w), gw, sizeof gw) == 0);
  test_close_f32(gx, want_x, R * KK, 0, 0, "packed matmul dx");
  test_close_f32(gw, want_w, KK * C, 0, 0, "packed matmul dw");
  tg_scope_end();
}

TEST(opts_lanes_gather_and_scatter) {
  /* lanes along an axis the store does not walk contiguously (a transpose):
   * loads and stores go lane by lane, the math (a square root, a mask
   * turned into numbers) runs in vector lanes; exact against C */
  enum { R = 48, C = 64 };
  float x[R * C], got[R * C];
  for (int i = 0; i < R * C; i++) x[i] = (float)((i * 37) % 101) * 0.25f - 5;
  tg_tensor *X = tg_from_data(x, TG_SHAPE(R, C), TG_F32);
  CHECK(tg_realize(X) == 0);
  /* y[c, r] = sqrt(|x[r, c]|) + (x[r, c] > 1): lanes along r, where the
   * loads step by C and the store by 1 — and along c, the other way round */
  const char *specs[] = { "UPCAST:1:16", "UPCAST:0:16", "UPCAST:0:8,UPCAST:1:4" };
  for (int s = 0; s < 3; s++) {
    CHECK(tg_set_kernel_opts(specs[s]) == 0);
    tg_scope_begin();
    tg_tensor *t = tg_transpose(X, 0, 1);
    tg_tensor *y = tg_add(tg_sqrt(tg_abs(t)), tg_cast(tg_gt(t, tg_full(TG_SHAPE(C, R), 1, TG_F32)), TG_F32));
    CHECK(tg_data(tg_contiguous(y), got, sizeof got) == 0);
    tg_scope_end();
    for (int c = 0; c < C; c++)
      for (int r = 0; r < R; r++) {
        float v = x[r * C + c], want = sqrtf(fabsf(v)) + (v > 1 ? 1.0f : 0.0f);
        CHECK_MSG(got[c * R + r] == want, "%s: [%d, %d] %g vs %g", specs[s], c, r, got[c * R + r], want);
      }
  }
  tg_set_kernel_opts(NULL);
}
