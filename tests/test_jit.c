/* test_jit.c: tg_jit captures a step on its second call and replays it,
 * checked against naive C loops: new inputs each call, fresh outputs,
 * in-place state updates (an SGD step), input checks, memory planning. */
#include "test.h"

enum { R = 6, C = 8 };
static float W[C * C];

/* out = relu(x @ W + b) * 2 */
static int step_mlp(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *w = ctx;
  out[0] = tg_muls(tg_relu(tg_add(tg_matmul(in[0], w), in[1])), 2);
  return out[0] ? 0 : -1;
}
static void ref_mlp(const float *x, const float *b, float *o) {
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) {
      float s = 0;
      for (int k = 0; k < C; k++) s += x[i * C + k] * W[k * C + j];
      s += b[j];
      o[i * C + j] = (s > 0 ? s : 0) * 2;
    }
}

TEST(jit_replays_with_new_inputs) {
  for (int i = 0; i < C * C; i++) W[i] = (float)((i * 5) % 7) - 3;
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  tg_jit *j = tg_jit_new(step_mlp, w);
  tg_tensor *prev = NULL;
  float prev_want[R * C];
  for (int call = 0; call < 5; call++) {
    float x[R * C], b[C], want[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i + call * 3) % 9) - 4;
    for (int i = 0; i < C; i++) b[i] = (float)(i % 3) - call;
    ref_mlp(x, b, want);
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(R, C), TG_F32), tg_from_data(b, TG_SHAPE(C), TG_F32) };
    tg_counters c0 = tg_get_counters();
    tg_tensor *out = NULL;
    CHECK_MSG(tg_jit_call(j, in, 2, &out, 1) == 0, "call %d: %s", call, tg_error());
    tg_counters c1 = tg_get_counters();
    if (call >= 2) {
      CHECK_MSG(c1.schedules == c0.schedules, "call %d scheduled", call);
      CHECK_MSG(c1.kernels_compiled == c0.kernels_compiled, "call %d compiled", call);
    }
    CHECK(tg_data(out, got, sizeof got) == 0);
    test_close_f32(got, want, R * C, 0, 0, "jit output");
    /* outputs are fresh: the previous call's output keeps its values */
    if (prev) {
      CHECK(tg_data(prev, got, sizeof got) == 0);
      test_close_f32(got, prev_want, R * C, 0, 0, "previous output");
    }
    prev = out;
    memcpy(prev_want, want, sizeof want);
  }
  tg_jit_info s = tg_jit_stats(j);
  CHECK_EQ_INT(s.calls, 5);
  CHECK(s.kernels >= 1);
  tg_jit_free(j);
}

/* Capture from the first call: the step is built once, the second call
 * replays (no schedule, no compile) with the right values for new inputs,
 * and the stats count the calls made. */
static int built;
static int step_mlp_counted(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  built++;
  return step_mlp(ctx, in, nin, out, nout);
}
TEST(jit_capture_first_call) {
  for (int i = 0; i < C * C; i++) W[i] = (float)((i * 3) % 5) - 2;
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  CHECK(tg_realize(w) == 0);
  tg_jit *j = tg_jit_new(step_mlp_counted, w);
  tg_jit_set_capture_first(j, true);
  built = 0;
  for (int call = 0; call < 3; call++) {
    float x[R * C], b[C], want[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7 + call) % 11) - 5;
    for (int i = 0; i < C; i++) b[i] = (float)(i % 4) - call;
    ref_mlp(x, b, want);
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(R, C), TG_F32), tg_from_data(b, TG_SHAPE(C), TG_F32) }, *out = NULL;
    tg_counters c0 = tg_get_counters();
    CHECK_MSG(tg_jit_call(j, in, 2, &out, 1) == 0, "call %d: %s", call, tg_error());
    tg_counters c1 = tg_get_counters();
    if (call >= 1) CHECK_MSG(c1.schedules == c0.schedules, "call %d scheduled", call);
    CHECK(tg_data(out, got, sizeof got) == 0);
    test_close_f32(got, want, R * C, 0, 0, "capture-first output");
    CHECK_EQ_INT(tg_jit_stats(j).calls, call + 1);
    tg_free(in[0]); tg_free(in[1]); tg_free(out);
  }
  CHECK_EQ_INT(built, 1);
  CHECK(tg_jit_stats(j).kernels > 0);
  tg_jit_free(j);
  tg_free(w);
}

TEST(jit_rejects_changed_or_aliased_inputs) {
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  tg_jit *j = tg_jit_new(step_mlp, w);
  float x[R * C] = { 0 }, b[C] = { 0 };
  tg_tensor *out;
  for (int call = 0; call < 2; call++) {
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(R, C), TG_F32), tg_from_data(b, TG_SHAPE(C), TG_F32) };
    CHECK(tg_jit_call(j, in, 2, &out, 1) == 0);
  }
  tg_tensor *bad_shape[2] = { tg_from_data(x, TG_SHAPE(C, R), TG_F32), tg_from_data(b, TG_SHAPE(C), TG_F32) };
  CHECK(tg_jit_call(j, bad_shape, 2, &out, 1) < 0);
  CHECK(strstr(tg_error(), "captured") != NULL);
  double xd[R * C] = { 0 };
  tg_tensor *bad_dtype[2] = { tg_from_data(xd, TG_SHAPE(R, C), TG_F64), tg_from_data(b, TG_SHAPE(C), TG_F32) };
  CHECK(tg_jit_call(j, bad_dtype, 2, &out, 1) < 0);
  tg_tensor *one = tg_from_data(x, TG_SHAPE(R, C), TG_F32);
  CHECK(tg_jit_call(j, (tg_tensor *[]){ one, tg_from_data(b, TG_SHAPE(C), TG_F32) }, 1, &out, 1) < 0);   /* wrong count */
  tg_jit_free(j);
  /* aliasing: the same tensor twice */
  tg_jit *j2 = tg_jit_new(step_mlp, w);
  tg_tensor *v = tg_from_data(b, TG_SHAPE(C), TG_F32);
  tg_tensor *al[2] = { v, v };
  CHECK(tg_jit_call(j2, al, 2, &out, 1) < 0);
  CHECK(strstr(tg_error(), "share memory") != NULL);
  tg_jit_free(j2);
}

/* an SGD step on w for loss = sum((x @ w - y)^2): state updated in place */
typedef struct { tg_tensor *w; } sgd_ctx;
static int step_sgd(void *p, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  sgd_ctx *c = p;
  tg_tensor *d = tg_sub(tg_matmul(in[0], c->w), in[1]);
  tg_tensor *loss = tg_sum(tg_mul(d, d), TG_ALL, false);
  tg_tensor *g = NULL;
  if (tg_gradient(loss, &c->w, 1, &g) < 0) return -1;
  tg_assign(c->w, tg_sub(c->w, tg_muls(g, 0.01)));
  out[0] = loss;
  return 0;
}

TEST(jit_sgd_state_updates_in_place) {
  enum { N = 4, D = 3 };
  float w0[D] = { 0.5f, -0.25f, 1 }, wref[D];
  memcpy(wref, w0, sizeof w0);
  sgd_ctx c = { tg_from_data(w0, TG_SHAPE(D, 1), TG_F32) };
  tg_jit *j = tg_jit_new(step_sgd, &c);
  for (int step = 0; step < 6; step++) {
    float x[N * D], y[N];
    for (int i = 0; i < N * D; i++) x[i] = (float)((i * 3 + step) % 5) - 2;
    for (int i = 0; i < N; i++) y[i] = (float)(i - step % 2);
    /* reference step */
    double loss = 0, g[D] = { 0 };
    for (int i = 0; i < N; i++) {
      double p = 0;
      for (int k = 0; k < D; k++) p += (double)x[i * D + k] * wref[k];
      double d = p - y[i];
      loss += d * d;
      for (int k = 0; k < D; k++) g[k] += 2 * d * x[i * D + k];
    }
    for (int k = 0; k < D; k++) wref[k] = (float)(wref[k] - 0.01 * g[k]);
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(N, D), TG_F32), tg_from_data(y, TG_SHAPE(N, 1), TG_F32) };
    tg_tensor *out = NULL;
    CHECK_MSG(tg_jit_call(j, in, 2, &out, 1) == 0, "step %d: %s", step, tg_error());
    CHECK_NEAR(tg_item(out), loss, 1e-5);
    float wg[D];
    CHECK(tg_data(c.w, wg, sizeof wg) == 0);
    for (int k = 0; k < D; k++) CHECK_NEAR(wg[k], wref[k], 1e-5);
  }
  tg_jit_free(j);
}

/* ten large intermediates in a chain, each stored: the plan needs ~2 */
static int step_chain(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *x = in[0];
  for (int i = 0; i < 10; i++) x = tg_contiguous(tg_adds(x, 1));
  out[0] = tg_sum(x, TG_ALL, false);
  return 0;
}

TEST(jit_memory_plan_shares_intermediates) {
  enum { L = 1 << 18 };
  float *x = calloc(L, sizeof(float));
  tg_jit *j = tg_jit_new(step_chain, NULL);
  double want = 0;
  want = 10.0 * L;   /* exact in float32: partial sums stay below 2^24 */
  for (int call = 0; call < 4; call++) {
    tg_tensor *in = tg_from_data(x, TG_SHAPE(L), TG_F32), *out = NULL;
    CHECK(tg_jit_call(j, &in, 1, &out, 1) == 0);
    CHECK_NEAR(tg_item(out), want, 1e-5);
  }
  tg_jit_info s = tg_jit_stats(j);
  printf("  info: chain of 10: intermediates %lld bytes, planned %lld bytes (one buffer is %d bytes)\n",
         (long long)s.intermediate_bytes, (long long)s.planned_bytes, L * 4);
  CHECK_MSG(s.intermediate_bytes >= 9LL * L * 4, "expected ~10 intermediates, got %lld bytes", (long long)s.intermediate_bytes);
  CHECK_MSG(s.planned_bytes <= 2LL * L * 4, "planned %lld bytes, want at most two buffers", (long long)s.planned_bytes);
  tg_jit_free(j);
  free(x);
}

/* A table the step makes from host data (as tg_quant_matmul_rows makes its
 * 16-level tables), read through a take after an intermediate that dies
 * first: no captured kernel writes the table, so its memory must stay (a
 * slot of the plan, shared with the dead intermediate, held that one's
 * values instead; a batch of a gpt-oss model decoded garbage). */
static int step_table(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  static const float table[8] = { 10, 11, 12, 13, 14, 15, 16, 17 };
  tg_tensor *a = tg_contiguous(tg_muls(in[0], 3));                        /* an intermediate, dead after b */
  tg_tensor *b = tg_contiguous(tg_sum(a, TG_ALL, true));
  tg_tensor *ix = tg_cast(tg_mod(in[0], tg_scalar(8, TG_F32)), TG_I32);
  out[0] = tg_add(tg_take(tg_from_data(table, TG_SHAPE(8), TG_F32), ix), b);
  return out[0] ? 0 : -1;
}
TEST(jit_keeps_tables_the_step_makes) {
  tg_jit *j = tg_jit_new(step_table, NULL);
  for (int call = 0; call < 5; call++) {
    float x[8], got[8], sum = 0;
    for (int i = 0; i < 8; i++) x[i] = (float)((i * 3 + call) % 8), sum += 3 * x[i];
    tg_tensor *in = tg_from_data(x, TG_SHAPE(8), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0 && tg_data(out, got, sizeof got) == 0, "call %d: %s", call, tg_error());
    for (int i = 0; i < 8; i++) CHECK_MSG(got[i] == 10 + x[i] + sum, "call %d [%d]: %g, want %g", call, i, got[i], 10 + x[i] + sum);
  }
  tg_jit_free(j);
}

/* out = x @ (W * 2 + 1).T: the weight transform reads no input, so pruning
 * runs it once; the replay launches only the matmul. */
static int step_pruned(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *w = ctx;
  tg_tensor *wt = tg_contiguous(tg_adds(tg_muls(w, 2), 1));
  out[0] = tg_matmul(in[0], tg_T(wt));
  return out[0] ? 0 : -1;
}

TEST(jit_prune_drops_constant_kernels) {
  for (int i = 0; i < C * C; i++) W[i] = (float)((i * 3) % 5) - 2;
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  tg_jit *j[2] = { tg_jit_new(step_pruned, w), tg_jit_new(step_pruned, w) };
  tg_jit_set_prune(j[1], true);
  for (int call = 0; call < 4; call++) {
    float x[R * C], want[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i + call) % 7) - 3;
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        float s = 0;
        for (int k = 0; k < C; k++) s += x[r * C + k] * (W[c * C + k] * 2 + 1);
        want[r * C + c] = s;
      }
    for (int v = 0; v < 2; v++) {
      tg_scope_begin();
      tg_tensor *in = tg_from_data(x, TG_SHAPE(R, C), TG_F32), *out = NULL;
      CHECK_MSG(tg_jit_call(j[v], &in, 1, &out, 1) == 0, "call %d: %s", call, tg_error());
      CHECK_OK(tg_data(out, got, sizeof got) == 0);
      for (int i = 0; i < R * C; i++) CHECK_MSG(got[i] == want[i], "prune=%d call %d [%d]: %g != %g", v, call, i, got[i], want[i]);
      tg_scope_end();
    }
  }
  tg_jit_info plain = tg_jit_stats(j[0]), pruned = tg_jit_stats(j[1]);
  CHECK_EQ_INT(plain.pruned, 0);
  CHECK_EQ_INT(pruned.pruned, 1);
  CHECK_EQ_INT(pruned.kernels, plain.kernels - 1);
  tg_jit_free(j[0]);
  tg_jit_free(j[1]);
  tg_free(w);
}

/* Outputs are fresh each call; with reuse they share one buffer, so an
 * earlier call's output shows the latest values. */
TEST(jit_outputs_fresh_unless_reused) {
  for (int i = 0; i < C * C; i++) W[i] = (float)(i % 3) - 1;
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  for (int reuse = 0; reuse < 2; reuse++) {
    tg_jit *j = tg_jit_new(step_pruned, w);
    tg_jit_set_reuse_outputs(j, reuse);
    tg_tensor *outs[5];
    float first[R * C];
    for (int call = 0; call < 5; call++) {
      float x[R * C];
      for (int i = 0; i < R * C; i++) x[i] = (float)(call + 1);
      tg_tensor *in = tg_from_data(x, TG_SHAPE(R, C), TG_F32);
      CHECK_OK(tg_jit_call(j, &in, 1, &outs[call], 1) == 0);
      if (call == 2) CHECK_OK(tg_data(outs[2], first, sizeof first) == 0);
      tg_free(in);
    }
    float again[R * C], last[R * C];
    CHECK_OK(tg_data(outs[2], again, sizeof again) == 0);
    CHECK_OK(tg_data(outs[4], last, sizeof last) == 0);
    /* calls 3 and 4 are replays: with reuse, call 2's replay output now holds call 4's values */
    bool same_as_first = !memcmp(again, first, sizeof first), same_as_last = !memcmp(again, last, sizeof last);
    CHECK_MSG(reuse ? same_as_last && !same_as_first : same_as_first && !same_as_last, "reuse=%d", reuse);
    for (int i = 0; i < 5; i++) tg_free(outs[i]);
    tg_jit_free(j);
  }
  tg_free(w);
}

/* Two outputs of one multi-output kernel that reads no input: pruning keeps
 * both results (not only the first store's). */
static int step_pruned_pair(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *w = ctx;
  tg_tensor *p[2] = { tg_adds(w, 1), tg_muls(w, 3) };   /* realized together: one kernel, two stores */
  out[0] = tg_add(tg_matmul(in[0], tg_T(tg_contiguous(p[0]))), tg_matmul(in[0], tg_T(tg_contiguous(p[1]))));
  return out[0] ? 0 : -1;
}

TEST(jit_prune_keeps_every_output_of_a_multi_output_kernel) {
  for (int i = 0; i < C * C; i++) W[i] = (float)((i * 7) % 5) - 2;
  tg_tensor *w = tg_from_data(W, TG_SHAPE(C, C), TG_F32);
  tg_jit *j = tg_jit_new(step_pruned_pair, w);
  tg_jit_set_prune(j, true);
  for (int call = 0; call < 4; call++) {
    float x[R * C], got[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i + 2 * call) % 5) - 2;
    tg_scope_begin();
    tg_tensor *in = tg_from_data(x, TG_SHAPE(R, C), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "call %d: %s", call, tg_error());
    CHECK_OK(tg_data(out, got, sizeof got) == 0 ? out : NULL);
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) {
        float s = 0;
        for (int k = 0; k < C; k++) s += x[r * C + k] * (W[c * C + k] + 1) + x[r * C + k] * (W[c * C + k] * 3);
        CHECK_MSG(fabsf(got[r * C + c] - s) <= 1e-4f * (1 + fabsf(s)), "call %d [%d][%d]: %g != %g", call, r, c, got[r * C + c], s);
      }
    tg_scope_end();
  }
  CHECK_EQ_INT(tg_jit_stats(j).pruned, 1);   /* the two transformed weights: one kernel */
  tg_jit_free(j);
  tg_free(w);
}

/* A step fed its own reused output: the replay reads memory its kernel
 * writes (flip reads the far end), so the input must be copied first. The
 * expected values come from the same recurrence in plain C. */
static int step_flip_add(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  out[0] = tg_adds(tg_flip(in[0], TG_AXES(0)), 1);
  return out[0] ? 0 : -1;
}

TEST(jit_reused_output_fed_back_as_input) {
  for (int reuse = 0; reuse < 2; reuse++) {
    tg_jit *j = tg_jit_new(step_flip_add, NULL);
    tg_jit_set_reuse_outputs(j, reuse);
    float want[4] = { 1, 2, 3, 4 };
    tg_tensor *x = tg_from_data(want, TG_SHAPE(4), TG_F32);
    for (int call = 0; call < 6; call++) {
      tg_tensor *y = NULL;
      CHECK_OK(tg_jit_call(j, &x, 1, &y, 1) == 0);
      float next[4], got[4] = { 0 };
      for (int i = 0; i < 4; i++) next[i] = want[3 - i] + 1;
      memcpy(want, next, sizeof want);
      CHECK_OK(tg_data(y, got, sizeof got) == 0);
      CHECK_MSG(!memcmp(got, want, sizeof got), "reuse=%d call %d: %g %g %g %g, want %g %g %g %g", reuse, call, got[0], got[1], got[2], got[3], want[0], want[1], want[2], want[3]);
      tg_free(x);
      x = y;
    }
    tg_free(x);
    tg_jit_free(j);
  }
}

/* ---- batches: consecutive kernels replayed as one launch (JIT_BATCH_SIZE,
 * doubling), with the cores meeting at a barrier between kernels; JIT=2 has
 * no batches. A chain of dependent kernels big enough to use every core. */
enum { CHAIN = 12, BIG = 1 << 17 };
static int chain_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *x = in[0];
  for (int i = 0; i < CHAIN - 1; i++) x = tg_contiguous(tg_adds(tg_muls(x, 0.5), (double)i));
  out[0] = tg_adds(x, 1);
  return out[0] ? 0 : -1;
}
static void chain_batches(const char *jit, const char *batch) {
  if (jit) setenv("JIT", jit, 1); else unsetenv("JIT");
  if (batch) setenv("JIT_BATCH_SIZE", batch, 1); else unsetenv("JIT_BATCH_SIZE");
  static float x[BIG], got[BIG];
  tg_jit *j = tg_jit_new(chain_step, NULL);
  for (int call = 0; call < 5; call++) {
    tg_scope_begin();
    for (int i = 0; i < BIG; i++) x[i] = (float)((i * 7 + call) % 101) - 50;
    tg_tensor *in = tg_from_data(x, TG_SHAPE(BIG), TG_F32), *out = NULL;
    tg_counters c0 = tg_get_counters();
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "JIT=%s JIT_BATCH_SIZE=%s call %d: %s", jit, batch, call, tg_error());
    CHECK(tg_data(out, got, sizeof got) == 0);
    if (call >= 2) CHECK_EQ_INT(tg_get_counters().kernels_run - c0.kernels_run, tg_jit_stats(j).kernels);
    int bad = 0;
    for (int i = 0; i < BIG; i++) {
      float v = x[i];
      for (int k = 0; k < CHAIN - 1; k++) v = v * 0.5f + (float)k;
      bad += got[i] != v + 1;
    }
    CHECK_MSG(bad == 0, "JIT=%s JIT_BATCH_SIZE=%s call %d: %d wrong", jit, batch, call, bad);
    tg_scope_end();
  }
  CHECK_EQ_INT(tg_jit_stats(j).kernels, CHAIN);
  tg_jit_free(j);
  unsetenv("JIT"); unsetenv("JIT_BATCH_SIZE");
}
TEST(jit_batches_match_unbatched) {
  chain_batches(NULL, NULL);    /* 12 kernels: one batch */
  chain_batches(NULL, "3");     /* batches of 3, 6, 3 */
  chain_batches(NULL, "1");     /* batches of 1, 2, 4, 5 */
  chain_batches("2", NULL);     /* no batches */
}

/* The same on a CUDA GPU, where each batch is a CUDA graph kept by the
 * replay: every call after the capture relaunches the graphs with the new
 * input's and output's pointers updated in their kernel nodes. */
TEST(jit_cuda_graphs_match_unbatched) {
  tg_device_info info[32];
  const char *absent = NULL;
  int n = tg_devices(info, 32, &absent);
  bool cuda = false;
  for (int i = 0; i < n && i < 32; i++) cuda |= !strcmp(info[i].name, "CUDA");
  if (!cuda) SKIP("no CUDA GPU (%s)", absent ? absent : "not present");
  char prev[64];
  snprintf(prev, sizeof prev, "%s", tg_default_device());
  CHECK(tg_set_default_device("CUDA") == 0);
  chain_batches(NULL, NULL);    /* one graph */
  chain_batches(NULL, "3");     /* graphs of 3, 6, 3 kernels */
  chain_batches(NULL, "1");     /* 1 (launched alone), then graphs of 2, 4, 5 */
  chain_batches("2", NULL);     /* no graphs */
  tg_set_default_device(prev);
}

/* JITBEAM=1: the step's kernels are searched (BEAM=1), the results are the same */
static int tiny_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  out[0] = tg_sum(tg_mul(in[0], in[0]), TG_AXES(0), false);
  return out[0] ? 0 : -1;
}
TEST(jit_jitbeam_searches_step_kernels) {
  setenv("JITBEAM", "1", 1);
  tg_jit *j = tg_jit_new(tiny_step, NULL);
  for (int call = 0; call < 3; call++) {
    tg_scope_begin();
    float x[64], got = 0, want = 0;
    for (int i = 0; i < 64; i++) { x[i] = (float)(i % 7 - 3 + call); want += x[i] * x[i]; }
    tg_tensor *in = tg_from_data(x, TG_SHAPE(64), TG_F32), *out = NULL;
    CHECK_MSG(tg_jit_call(j, &in, 1, &out, 1) == 0, "call %d: %s", call, tg_error());
    CHECK(tg_data(out, &got, sizeof got) == 0);
    CHECK_NEAR(got, want, 1e-6);
    tg_scope_end();
  }
  tg_jit_free(j);
  unsetenv("JITBEAM");
}
