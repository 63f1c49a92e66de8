/* test_symbolic_dims.c: axes whose length is a variable (tg_shrink_var),
 * checked against naive C loops: elementwise ops and broadcasts, reductions
 * that must see exactly [0, n), attention over the first pos rows of a KV
 * cache, matmuls with a symbolic inner or output axis, one compiled kernel
 * for every bound value in and out of the JIT, and clear errors. */
#include "test.h"

enum { MAXN = 8, W4 = 4 };

/* rows past n hold big values: a loop that runs too far changes the result */
static void fill_rows(float *x, int rows, int cols, int n) {
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) x[i * cols + j] = i < n ? -1.0f - (float)((i * 7 + j * 3) % 11) : 1000.0f;
}

static int64_t compiles(void) {
  tg_counters c = tg_get_counters();
  return c.kernels_compiled + c.kernels_cached;
}

static tg_tensor *declare(const char *name, int64_t min, int64_t max) {
  tg_tensor *v = tg_variable(name, min, max);
  CHECK_OK(v);
  return v;
}

TEST(symdims_query_and_shape) {
  declare("sd_q", 0, MAXN);
  tg_tensor *x = tg_zeros(TG_SHAPE(MAXN, W4), TG_F32);
  tg_tensor *s = tg_shrink_var(x, 0, "sd_q");
  CHECK_OK(s);
  CHECK(tg_dim_is_symbolic(s, 0) && !tg_dim_is_symbolic(s, 1));
  CHECK(tg_dim_var(s, 0) && !strcmp(tg_dim_var(s, 0), "sd_q"));
  CHECK(tg_dim_var(s, -2) && tg_dim_var(s, 1) == NULL && tg_dim_var(s, 5) == NULL);
  CHECK_EQ_INT(tg_dim(s, 0), MAXN);   /* shapes report the max */
  /* carried through elementwise ops, broadcasts, permutes and whole-axis reshapes */
  tg_tensor *y = tg_add(tg_muls(s, 2), tg_ones(TG_SHAPE(1, W4), TG_F32));
  CHECK(tg_dim_is_symbolic(y, 0));
  CHECK(tg_dim_is_symbolic(tg_T(y), 1));
  tg_tensor *r = tg_reshape(y, TG_SHAPE(1, MAXN, 2, 2));
  CHECK_OK(r);
  CHECK(tg_dim_is_symbolic(r, 1) && !tg_dim_is_symbolic(r, 2));
  CHECK(tg_dim_is_symbolic(tg_sum(y, TG_AXES(1), false), 0));
  CHECK(!tg_dim_is_symbolic(tg_sum(y, TG_AXES(0), true), 0));
}

TEST(symdims_elementwise_and_broadcast) {
  declare("sd_e", 0, MAXN);
  float x[MAXN * W4], b[W4] = { 1, -2, 3, -4 }, got[MAXN * W4];
  int64_t before = 0;
  for (int n = 1; n <= MAXN; n += 3) {
    tg_scope_begin();
    fill_rows(x, MAXN, W4, n);
    CHECK(tg_bind("sd_e", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXN, W4), TG_F32), 0, "sd_e");
    tg_tensor *bias = tg_from_data(b, TG_SHAPE(W4), TG_F32);
    tg_tensor *y = tg_adds(tg_mul(tg_add(xs, bias), tg_exp(tg_muls(xs, 0.1))), 0.5);
    CHECK_OK(y);
    if (n > 1) before = compiles();
    CHECK_MSG(tg_data(y, got, sizeof got) == 0, "%s", tg_error());
    if (n > 1) CHECK_MSG(compiles() == before, "n=%d compiled again", n);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < W4; j++) {
        float v = x[i * W4 + j];
        CHECK_NEAR(got[i * W4 + j], (v + b[j]) * expf(v * 0.1f) + 0.5f, 1e-5);
      }
    tg_scope_end();
  }
}

TEST(symdims_reductions_see_only_valid_rows) {
  declare("sd_r", 1, MAXN);
  float x[MAXN * W4], got[MAXN * W4];
  int64_t before = 0;
  for (int n = 1; n <= MAXN; n += 2) {
    tg_scope_begin();
    fill_rows(x, MAXN, W4, n);
    CHECK(tg_bind("sd_r", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXN, W4), TG_F32), 0, "sd_r");
    tg_tensor *outs[5] = {
      tg_sum(xs, TG_AXES(0), false), tg_max(xs, TG_AXES(0), false), tg_mean(xs, TG_AXES(0), false),
      tg_sum(xs, TG_ALL, false),
      /* max over a stored intermediate (its tail is never written) */
      tg_max(tg_contiguous(tg_muls(xs, 2)), TG_AXES(0), false),
    };
    if (n > 1) before = compiles();
    CHECK_MSG(tg_realize_all(outs, 5) == 0, "%s", tg_error());
    if (n > 1) CHECK_MSG(compiles() == before, "n=%d compiled again", n);
    float want_sum[W4] = { 0 }, want_max[W4], total = 0;
    for (int j = 0; j < W4; j++) want_max[j] = -INFINITY;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < W4; j++) {
        float v = x[i * W4 + j];
        want_sum[j] += v; total += v;
        if (v > want_max[j]) want_max[j] = v;
      }
    CHECK(tg_data(outs[0], got, W4 * sizeof(float)) == 0);
    for (int j = 0; j < W4; j++) CHECK_NEAR(got[j], want_sum[j], 1e-5);
    CHECK(tg_data(outs[1], got, W4 * sizeof(float)) == 0);
    for (int j = 0; j < W4; j++) CHECK_NEAR(got[j], want_max[j], 0);
    CHECK(tg_data(outs[2], got, W4 * sizeof(float)) == 0);
    for (int j = 0; j < W4; j++) CHECK_NEAR(got[j], want_sum[j] / (float)n, 1e-5);
    CHECK_NEAR(tg_item(outs[3]), total, 1e-5);
    CHECK(tg_data(outs[4], got, W4 * sizeof(float)) == 0);
    for (int j = 0; j < W4; j++) CHECK_NEAR(got[j], 2 * want_max[j], 0);
    tg_scope_end();
  }
}

TEST(symdims_softmax_along_symbolic_axis) {
  declare("sd_s", 1, MAXN);
  enum { ROWS = 3 };
  float x[ROWS * MAXN], got[ROWS * MAXN];
  for (int n = 1; n <= MAXN; n += 3) {
    tg_scope_begin();
    for (int i = 0; i < ROWS; i++)
      for (int j = 0; j < MAXN; j++) x[i * MAXN + j] = j < n ? (float)((i * 5 + j * 3) % 7) * 0.5f - 1 : 1000.0f;
    CHECK(tg_bind("sd_s", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(ROWS, MAXN), TG_F32), 1, "sd_s");
    tg_tensor *sm = tg_softmax(xs, -1);
    CHECK_OK(sm);
    CHECK(tg_dim_is_symbolic(sm, 1));
    CHECK_MSG(tg_data(sm, got, sizeof got) == 0, "%s", tg_error());
    for (int i = 0; i < ROWS; i++) {
      float m = -INFINITY, s = 0;
      for (int j = 0; j < n; j++) m = fmaxf(m, x[i * MAXN + j]);
      for (int j = 0; j < n; j++) s += expf(x[i * MAXN + j] - m);
      for (int j = 0; j < n; j++) CHECK_NEAR(got[i * MAXN + j], expf(x[i * MAXN + j] - m) / s, 1e-5);
    }
    tg_scope_end();
  }
}

/* ---- attention over the first pos rows of a KV cache */

enum { T = 16, D = 8, L = 2 };
static float Q[L * D], K[T * D], V[T * D];

static void init_qkv(void) {
  for (int i = 0; i < L * D; i++) Q[i] = (float)((i * 3) % 5) * 0.25f - 0.5f;
  for (int i = 0; i < T * D; i++) { K[i] = (float)((i * 7) % 9) * 0.2f - 0.8f; V[i] = (float)((i * 5) % 11) * 0.1f - 0.5f; }
}

/* softmax(q @ k[:pos].T / sqrt(D)) @ v[:pos] */
static tg_tensor *attention(tg_tensor *q, tg_tensor *k, tg_tensor *v, const char *var) {
  tg_tensor *ks = tg_shrink_var(k, 0, var), *vs = tg_shrink_var(v, 0, var);
  tg_tensor *w = tg_softmax(tg_muls(tg_matmul(q, tg_T(ks)), 1.0 / sqrt((double)D)), -1);
  return tg_matmul(w, vs);
}

static void ref_attention(int pos, float *out) {
  for (int i = 0; i < L; i++) {
    float s[T], m = -INFINITY, z = 0;
    for (int t = 0; t < pos; t++) {
      s[t] = 0;
      for (int d = 0; d < D; d++) s[t] += Q[i * D + d] * K[t * D + d];
      s[t] /= sqrtf((float)D);
      m = fmaxf(m, s[t]);
    }
    for (int t = 0; t < pos; t++) { s[t] = expf(s[t] - m); z += s[t]; }
    for (int d = 0; d < D; d++) {
      float o = 0;
      for (int t = 0; t < pos; t++) o += s[t] / z * V[t * D + d];
      out[i * D + d] = o;
    }
  }
}

TEST(symdims_attention_over_kv_prefix) {
  init_qkv();
  declare("sd_pos", 1, T);
  int64_t before = 0;
  for (int pos = 1; pos <= T; pos += 5) {
    tg_scope_begin();
    CHECK(tg_bind("sd_pos", pos) == 0);
    tg_tensor *o = attention(tg_from_data(Q, TG_SHAPE(L, D), TG_F32), tg_from_data(K, TG_SHAPE(T, D), TG_F32),
                             tg_from_data(V, TG_SHAPE(T, D), TG_F32), "sd_pos");
    CHECK_OK(o);
    CHECK(!tg_dim_is_symbolic(o, 0) && !tg_dim_is_symbolic(o, 1));
    float got[L * D], want[L * D];
    if (pos > 1) before = compiles();
    CHECK_MSG(tg_data(o, got, sizeof got) == 0, "%s", tg_error());
    if (pos > 1) CHECK_MSG(compiles() == before, "pos=%d compiled again", pos);
    ref_attention(pos, want);
    test_close_f32(got, want, L * D, 1e-5, 1e-6, "attention");
    tg_scope_end();
  }
}

TEST(symdims_matmul_symbolic_output_axis) {
  declare("sd_m", 0, MAXN);
  enum { KK = 5, N = 3 };
  float x[MAXN * KK], w[KK * N], got[MAXN * N];
  for (int i = 0; i < KK * N; i++) w[i] = (float)((i * 3) % 7) - 3;
  for (int n = 0; n <= MAXN; n += 4) {
    tg_scope_begin();
    fill_rows(x, MAXN, KK, n);
    CHECK(tg_bind("sd_m", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXN, KK), TG_F32), 0, "sd_m");
    tg_tensor *y = tg_relu(tg_matmul(xs, tg_from_data(w, TG_SHAPE(KK, N), TG_F32)));
    CHECK_OK(y);
    CHECK(tg_dim_is_symbolic(y, 0));
    CHECK_MSG(tg_data(y, got, sizeof got) == 0, "%s", tg_error());
    for (int i = 0; i < n; i++)
      for (int j = 0; j < N; j++) {
        float s = 0;
        for (int k = 0; k < KK; k++) s += x[i * KK + k] * w[k * N + j];
        CHECK_NEAR(got[i * N + j], s > 0 ? s : 0, 1e-5);
      }
    tg_scope_end();
  }
}

/* A stored symbolic result keeps its symbolic axis: later ops read only its
 * valid rows. */
TEST(symdims_realized_result_stays_symbolic) {
  declare("sd_k", 1, MAXN);
  float x[MAXN * W4];
  fill_rows(x, MAXN, W4, 3);
  CHECK(tg_bind("sd_k", 3) == 0);
  tg_tensor *y = tg_muls(tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXN, W4), TG_F32), 0, "sd_k"), -1);
  CHECK(tg_realize(y) == 0);
  CHECK(tg_dim_is_symbolic(y, 0));
  tg_tensor *m = tg_min(y, TG_AXES(0), false);
  float got[W4];
  CHECK_MSG(tg_data(m, got, sizeof got) == 0, "%s", tg_error());
  for (int j = 0; j < W4; j++) {
    float want = INFINITY;
    for (int i = 0; i < 3; i++) want = fminf(want, -x[i * W4 + j]);
    CHECK_NEAR(got[j], want, 0);
  }
}

/* Assigning through a symbolic view writes only its valid rows. */
TEST(symdims_assign_writes_valid_rows) {
  declare("sd_w", 0, MAXN);
  tg_tensor *c = tg_zeros(TG_SHAPE(MAXN, W4), TG_F32);
  CHECK(tg_realize(c) == 0);
  for (int n = 2; n <= 5; n += 3) {
    CHECK(tg_bind("sd_w", n) == 0);
    tg_tensor *v = tg_shrink_var(c, 0, "sd_w");
    CHECK_MSG(tg_realize(tg_assign(v, tg_adds(v, 1))) == 0, "%s", tg_error());
  }
  float got[MAXN * W4];
  CHECK(tg_data(c, got, sizeof got) == 0);
  for (int i = 0; i < MAXN; i++)
    for (int j = 0; j < W4; j++) CHECK_NEAR(got[i * W4 + j], i < 2 ? 2 : i < 5 ? 1 : 0, 0);
}

/* ---- the JIT replays with new bindings */

static int step_attention(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  out[0] = attention(in[0], in[1], in[2], "sd_jpos");
  /* and a symbolic output: the scores of the valid rows */
  out[1] = tg_matmul(tg_shrink_var(in[1], 0, "sd_jpos"), tg_T(in[0]));
  return out[0] && out[1] ? 0 : -1;
}

TEST(symdims_jit_replays_with_new_bindings) {
  init_qkv();
  declare("sd_jpos", 1, T);
  tg_jit *j = tg_jit_new(step_attention, NULL);
  int64_t after_capture = 0;
  for (int call = 0; call < 6; call++) {
    tg_scope_begin();
    int pos = 1 + (call * 7) % T;
    CHECK(tg_bind("sd_jpos", pos) == 0);
    tg_tensor *in[3] = { tg_from_data(Q, TG_SHAPE(L, D), TG_F32), tg_from_data(K, TG_SHAPE(T, D), TG_F32),
                         tg_from_data(V, TG_SHAPE(T, D), TG_F32) };
    tg_tensor *out[2] = { NULL, NULL };
    CHECK_MSG(tg_jit_call(j, in, 3, out, 2) == 0, "call %d: %s", call, tg_error());
    if (call == 2) after_capture = compiles();
    if (call > 2) CHECK_MSG(compiles() == after_capture, "call %d compiled", call);
    float got[L * D], want[L * D], sc[T * L];
    CHECK(tg_data(out[0], got, sizeof got) == 0);
    ref_attention(pos, want);
    test_close_f32(got, want, L * D, 1e-5, 1e-6, "jit attention");
    CHECK(tg_dim_is_symbolic(out[1], 0));
    CHECK(tg_data(out[1], sc, sizeof sc) == 0);
    for (int t = 0; t < pos; t++)
      for (int i = 0; i < L; i++) {
        float s = 0;
        for (int d = 0; d < D; d++) s += K[t * D + d] * Q[i * D + d];
        CHECK_NEAR(sc[t * L + i], s, 1e-5);
      }
    tg_scope_end();
  }
  CHECK(tg_jit_stats(j).calls == 6);
  tg_jit_free(j);
}

/* ---- kernel opts: lanes need a static size, threads do not */

TEST(symdims_kernel_opts) {
  declare("sd_o", 0, 64);
  float x[64], got[64];
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(64), TG_F32), 0, "sd_o");
  CHECK(tg_set_kernel_opts("UPCAST:0:4") == 0);
  CHECK(tg_bind("sd_o", 9) == 0);
  CHECK(tg_data(tg_muls(xs, 3), got, sizeof got) < 0);
  CHECK_MSG(strstr(tg_error(), "symbolic") != NULL, "%s", tg_error());
  CHECK(tg_set_kernel_opts("THREAD:0:4") == 0);
  for (int n = 0; n <= 64; n += 21) {
    CHECK(tg_bind("sd_o", n) == 0);
    for (int i = 0; i < 64; i++) got[i] = -1;
    CHECK_MSG(tg_data(tg_adds(xs, 1), got, sizeof got) == 0, "%s", tg_error());
    for (int i = 0; i < n; i++) CHECK_NEAR(got[i], x[i] + 1, 0);
  }
  tg_set_kernel_opts(NULL);
}

/* ---- errors */

TEST(symdims_errors) {
  declare("sd_a", 0, MAXN);
  declare("sd_b", 0, MAXN);
  declare("sd_big", 0, MAXN + 1);
  declare("sd_neg", -1, 3);
  float zeros[MAXN * W4] = { 0 };
  tg_tensor *x = tg_from_data(zeros, TG_SHAPE(MAXN, W4), TG_F32);
  CHECK(tg_shrink_var(x, 0, "no_such_var") == NULL);
  CHECK_MSG(strstr(tg_error(), "no variable") != NULL, "%s", tg_error());
  CHECK(tg_shrink_var(x, 0, "sd_big") == NULL);
  CHECK_MSG(strstr(tg_error(), "does not fit") != NULL, "%s", tg_error());
  CHECK(tg_shrink_var(x, 0, "sd_neg") == NULL);
  CHECK(tg_shrink_var(x, 2, "sd_a") == NULL);
  CHECK(tg_shrink_var(x, 0, NULL) == NULL);
  tg_tensor *a = tg_shrink_var(x, 0, "sd_a"), *b = tg_shrink_var(x, 0, "sd_b");
  CHECK_OK(a); CHECK_OK(b);
  CHECK(tg_add(a, b) == NULL);
  CHECK_MSG(strstr(tg_error(), "sd_a") && strstr(tg_error(), "sd_b"), "%s", tg_error());
  CHECK(tg_shrink_var(a, 0, "sd_b") == NULL);
  CHECK(tg_mul(a, x) == NULL);
  CHECK_MSG(strstr(tg_error(), "static size 8") != NULL, "%s", tg_error());
  CHECK_OK(tg_mul(a, tg_zeros(TG_SHAPE(MAXN, W4), TG_F32)));   /* a constant repeats one value: it lines up */
  CHECK(tg_reshape(a, TG_SHAPE(MAXN * W4)) == NULL);
  CHECK_MSG(strstr(tg_error(), "splits or merges") != NULL, "%s", tg_error());
  CHECK(tg_reshape(a, TG_SHAPE(2, 4, W4)) == NULL);
  CHECK_OK(tg_reshape(a, TG_SHAPE(MAXN, 2, 2)));
  CHECK_OK(tg_unsqueeze(a, 0));
  CHECK(tg_flip(a, TG_AXES(0)) == NULL);
  CHECK(tg_pad(a, (int64_t[]){ 1, 0, 0, 0 }, 2, 0) == NULL);
  CHECK_OK(tg_pad(a, (int64_t[]){ 0, 0, 1, 1 }, 2, 0));
  CHECK(TG_GET(a, TG_SLICE(1, 3, 1)) == NULL);
  CHECK_OK(tg_sum(tg_matmul(tg_T(a), a), TG_ALL, false));   /* a symbolic inner axis */
  /* an error inside a composite op surfaces from it */
  CHECK(tg_matmul(a, tg_T(b)) != NULL);   /* (sd_a, 4) @ (4, sd_b): two symbolic axes, fine */
  CHECK(tg_matmul(tg_T(a), b) == NULL);   /* inner axis sd_a vs sd_b */
}

/* A variable-length batch: gradients of weights sum over the valid rows. */
TEST(symdims_weight_gradient_over_valid_rows) {
  declare("sd_g", 1, MAXN);
  enum { KK = 3, N = 2 };
  float x[MAXN * KK], w[KK * N] = { 1, 2, 3, 4, 5, 6 }, got[KK * N];
  fill_rows(x, MAXN, KK, 5);
  CHECK(tg_bind("sd_g", 5) == 0);
  tg_tensor *wt = tg_requires_grad(tg_from_data(w, TG_SHAPE(KK, N), TG_F32), true);
  tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXN, KK), TG_F32), 0, "sd_g");
  tg_tensor *loss = tg_mean(tg_matmul(xs, wt), TG_ALL, false);
  CHECK_OK(loss);
  CHECK_MSG(tg_backward(loss) == 0, "%s", tg_error());
  CHECK_MSG(tg_data(tg_grad(wt), got, sizeof got) == 0, "%s", tg_error());
  /* d mean / d w[k][j] = sum_i x[i][k] / (n * N) */
  for (int k = 0; k < KK; k++)
    for (int j = 0; j < N; j++) {
      float s = 0;
      for (int i = 0; i < 5; i++) s += x[i * KK + k];
      CHECK_NEAR(got[k * N + j], s / (5 * N), 1e-5);
    }
}

/* Big enough for the heuristic's SIMD lanes on the static axis and threads
 * on the symbolic one. */
TEST(symdims_matmul_heuristic_sizes) {
  declare("sd_h", 0, 96);
  enum { M = 96, KK = 64, N = 64 };
  static float x[M * KK], w[KK * N], got[M * N];
  for (int i = 0; i < M * KK; i++) x[i] = (float)((i * 7) % 13) * 0.25f - 1.5f;
  for (int i = 0; i < KK * N; i++) w[i] = (float)((i * 5) % 11) * 0.125f - 0.5f;
  for (int n = 37; n <= M; n += 59) {
    tg_scope_begin();
    CHECK(tg_bind("sd_h", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(M, KK), TG_F32), 0, "sd_h");
    tg_tensor *wt = tg_from_data(w, TG_SHAPE(KK, N), TG_F32);
    tg_tensor *y = tg_matmul(xs, wt), *yt = tg_matmul(tg_T(xs), xs);   /* symbolic rows; symbolic inner axis */
    tg_tensor *both[2] = { y, yt };
    CHECK_MSG(tg_realize_all(both, 2) == 0, "%s", tg_error());
    CHECK(tg_data(y, got, sizeof(float) * M * N) == 0);
    int bad = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < N; j++) {
        float s = 0;
        for (int k = 0; k < KK; k++) s += x[i * KK + k] * w[k * N + j];
        bad += fabsf(got[i * N + j] - s) > 1e-4f * (1 + fabsf(s));
      }
    CHECK_MSG(bad == 0, "n=%d: %d wrong outputs of x @ w", n, bad);
    CHECK(tg_data(yt, got, sizeof(float) * KK * KK) == 0);
    for (int a = 0; a < KK; a++)
      for (int b = 0; b < KK; b++) {
        float s = 0;
        for (int i = 0; i < n; i++) s += x[i * KK + a] * x[i * KK + b];
        bad += fabsf(got[a * KK + b] - s) > 1e-4f * (1 + fabsf(s));
      }
    CHECK_MSG(bad == 0, "n=%d: %d wrong outputs of x.T @ x", n, bad);
    tg_scope_end();
  }
}

/* The gradient of a symbolic view is the gradient on its valid rows, 0 past them. */
TEST(symdims_gradient_through_shrink_var) {
  declare("sd_d", 0, MAXN);
  float x[MAXN * W4], got[MAXN * W4];
  fill_rows(x, MAXN, W4, MAXN);
  for (int n = 3; n <= 6; n += 3) {
    tg_scope_begin();
    CHECK(tg_bind("sd_d", n) == 0);
    tg_tensor *xt = tg_requires_grad(tg_from_data(x, TG_SHAPE(MAXN, W4), TG_F32), true);
    tg_tensor *xs = tg_shrink_var(xt, 0, "sd_d");
    /* d/dx of sum(x^2) + max over the rows = 2x + (1 at each column's max) */
    tg_tensor *loss = tg_add(tg_sum(tg_mul(xs, xs), TG_ALL, false), tg_sum(tg_max(xs, TG_AXES(0), false), TG_ALL, false));
    CHECK_MSG(tg_backward(loss) == 0, "%s", tg_error());
    CHECK_MSG(tg_data(tg_grad(xt), got, sizeof got) == 0, "%s", tg_error());
    for (int j = 0; j < W4; j++) {
      int am = 0;
      for (int i = 1; i < n; i++) if (x[i * W4 + j] > x[am * W4 + j]) am = i;
      for (int i = 0; i < MAXN; i++)
        CHECK_NEAR(got[i * W4 + j], i < n ? 2 * x[i * W4 + j] + (i == am) : 0, 1e-5);
    }
    tg_scope_end();
  }
}
