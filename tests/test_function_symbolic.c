/* test_function_symbolic.c: tg_function called with inputs whose axis is
 * a bound variable (a KV length): one body for every value, checked
 * against C loops over the valid rows (forward, a call fed another call's
 * symbolic output, the gradient), and new bodies for other signatures. */
#include "test.h"

enum { TMAX = 12, DS = 6 };

/* tanh(x @ w) over x's rows [0, t), and the column sums of those rows */
static int sym_layer(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_tanh(tg_matmul(in[0], in[1]));
  out[1] = tg_sum(in[0], TG_AXES(0), false);
  return out[0] && out[1] ? 0 : -1;
}

static float xs[TMAX * DS], ws[DS * DS];
static void init_sym(void) {
  for (int i = 0; i < TMAX * DS; i++) xs[i] = (float)((i * 7) % 13 - 6) / 8.0f;
  for (int i = 0; i < DS * DS; i++) ws[i] = (float)((i * 5) % 11 - 5) / 9.0f;
}
static void ref_layer(const float *x, int t, float *h, float *colsum) {
  for (int i = 0; i < t; i++)
    for (int j = 0; j < DS; j++) {
      double s = 0;
      for (int k = 0; k < DS; k++) s += (double)x[i * DS + k] * ws[k * DS + j];
      h[i * DS + j] = (float)tanh(s);
    }
  for (int k = 0; k < DS; k++) {
    double s = 0;
    for (int i = 0; i < t; i++) s += x[i * DS + k];
    colsum[k] = (float)s;
  }
}

TEST(function_symbolic_input_shares_one_body) {
  init_sym();
  CHECK_OK(tg_variable("fs_t", 1, TMAX));
  tg_tensor *xfull = tg_from_data(xs, TG_SHAPE(TMAX, DS), TG_F32), *w = tg_from_data(ws, TG_SHAPE(DS, DS), TG_F32);
  tg_function *f = tg_function_new("sym_layer", sym_layer, NULL, 2, 2);
  tg_counters c0 = { 0 };
  const int ts[4] = { 3, 7, TMAX, 1 };
  for (int r = 0; r < 4; r++) {
    int t = ts[r];
    CHECK(tg_bind("fs_t", t) == 0);
    if (r == 1) c0 = tg_get_counters();
    tg_scope_begin();
    tg_tensor *x = tg_shrink_var(xfull, 0, "fs_t");
    tg_tensor *in1[2] = { x, w }, *o1[2], *o2[2];
    CHECK_MSG(tg_function_call(f, in1, o1) == 0, "%s", tg_error());
    CHECK(tg_dim_is_symbolic(o1[0], 0));
    CHECK(!tg_dim_is_symbolic(o1[1], 0));
    /* the next call's input is the first call's symbolic output (lazy) */
    tg_tensor *in2[2] = { o1[0], w };
    CHECK_MSG(tg_function_call(f, in2, o2) == 0, "%s", tg_error());
    tg_tensor *all[3] = { o2[0], o1[1], o2[1] };
    CHECK_MSG(tg_realize_all(all, 3) == 0, "t %d: %s", t, tg_error());
    float h1[TMAX * DS], s1[DS], h2[TMAX * DS], s2[DS], got[TMAX * DS], gs[DS];
    ref_layer(xs, t, h1, s1);
    ref_layer(h1, t, h2, s2);
    CHECK(tg_data(o2[0], got, sizeof got) == 0);
    test_close_f32(got, h2, (size_t)t * DS, 1e-5, 1e-5, "two calls, valid rows");
    CHECK(tg_data(o1[1], gs, sizeof gs) == 0);
    test_close_f32(gs, s1, DS, 1e-5, 1e-5, "column sums of x");
    CHECK(tg_data(o2[1], gs, sizeof gs) == 0);
    test_close_f32(gs, s2, DS, 1e-5, 1e-5, "column sums of the first call");
    tg_scope_end();
  }
  tg_counters c1 = tg_get_counters();
  /* every value ran the kernels compiled for the first */
  CHECK_EQ_INT(c1.kernels_compiled + c1.kernels_cached, c0.kernels_compiled + c0.kernels_cached);
  tg_function_info st = tg_function_stats(f);
  CHECK_EQ_INT(st.bodies, 1);
  CHECK_EQ_INT(st.calls, 8);
  tg_function_free(f);
}

TEST(function_symbolic_signatures) {
  init_sym();
  CHECK_OK(tg_variable("fs_a", 1, TMAX));
  CHECK_OK(tg_variable("fs_b", 1, TMAX));
  CHECK(tg_bind("fs_a", 5) == 0 && tg_bind("fs_b", 9) == 0);
  tg_tensor *xfull = tg_from_data(xs, TG_SHAPE(TMAX, DS), TG_F32), *w = tg_from_data(ws, TG_SHAPE(DS, DS), TG_F32);
  tg_function *f = tg_function_new("sym_layer", sym_layer, NULL, 2, 2);
  tg_tensor *ins[3] = { tg_shrink_var(xfull, 0, "fs_a"), tg_shrink_var(xfull, 0, "fs_b"), xfull };
  const int want_t[3] = { 5, 9, TMAX };
  for (int v = 0; v < 3; v++) {
    tg_tensor *in[2] = { ins[v], w }, *o[2];
    CHECK(tg_function_call(f, in, o) == 0);
    float h[TMAX * DS], s[DS], got[TMAX * DS], gs[DS];
    ref_layer(xs, want_t[v], h, s);
    CHECK(tg_data(o[0], got, sizeof got) == 0);
    test_close_f32(got, h, (size_t)want_t[v] * DS, 1e-5, 1e-5, "rows");
    CHECK(tg_data(o[1], gs, sizeof gs) == 0);
    test_close_f32(gs, s, DS, 1e-5, 1e-5, "sums");
    CHECK_EQ_INT(tg_dim_is_symbolic(o[0], 0), v < 2);
  }
  /* another variable, or a static axis, is another signature */
  CHECK_EQ_INT(tg_function_stats(f).bodies, 3);
  tg_tensor *again[2] = { tg_shrink_var(xfull, 0, "fs_a"), w }, *o[2];
  CHECK(tg_function_call(f, again, o) == 0);
  CHECK_EQ_INT(tg_function_stats(f).bodies, 3);
  tg_function_free(f);
}

TEST(function_symbolic_input_gradient) {
  init_sym();
  CHECK_OK(tg_variable("fs_g", 1, TMAX));
  const int t = 8;
  CHECK(tg_bind("fs_g", t) == 0);
  tg_tensor *xfull = tg_requires_grad(tg_from_data(xs, TG_SHAPE(TMAX, DS), TG_F32), true);
  tg_tensor *w = tg_requires_grad(tg_from_data(ws, TG_SHAPE(DS, DS), TG_F32), true);
  tg_function *f = tg_function_new("sym_layer", sym_layer, NULL, 2, 2);
  tg_tensor *in[2] = { tg_shrink_var(xfull, 0, "fs_g"), w }, *o[2];
  CHECK(tg_function_call(f, in, o) == 0);
  tg_tensor *loss = tg_sum(o[0], TG_ALL, false);   /* over the valid rows */
  tg_tensor *wrt[2] = { w, xfull }, *g[2];
  CHECK_MSG(tg_gradient(loss, wrt, 2, g) == 0, "%s", tg_error());
  float h[TMAX * DS], s[DS], gw[DS * DS], gx[TMAX * DS], want_w[DS * DS] = { 0 }, want_x[TMAX * DS] = { 0 };
  ref_layer(xs, t, h, s);
  /* d/dw[k][j] = sum_i x[i][k] (1 - h[i][j]^2); d/dx[i][k] = sum_j w[k][j] (1 - h[i][j]^2), 0 past t */
  for (int i = 0; i < t; i++)
    for (int j = 0; j < DS; j++) {
      float dz = 1 - h[i * DS + j] * h[i * DS + j];
      for (int k = 0; k < DS; k++) { want_w[k * DS + j] += xs[i * DS + k] * dz; want_x[i * DS + k] += ws[k * DS + j] * dz; }
    }
  CHECK(tg_data(g[0], gw, sizeof gw) == 0);
  test_close_f32(gw, want_w, DS * DS, 1e-4, 1e-5, "dL/dw");
  CHECK(tg_data(g[1], gx, sizeof gx) == 0);
  test_close_f32(gx, want_x, TMAX * DS, 1e-4, 1e-5, "dL/dx (0 past t)");
  tg_function_free(f);
}

/* an output that is the symbolic input itself, beside one computed from it */
static int sym_identity(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = in[0];
  out[1] = tg_muls(in[0], 2);
  return 0;
}

TEST(function_symbolic_output_is_its_input) {
  init_sym();
  CHECK_OK(tg_variable("fs_i", 1, TMAX));
  CHECK(tg_bind("fs_i", 4) == 0);
  tg_tensor *xfull = tg_from_data(xs, TG_SHAPE(TMAX, DS), TG_F32);
  tg_function *f = tg_function_new("sym_identity", sym_identity, NULL, 1, 2);
  tg_tensor *in[1] = { tg_shrink_var(xfull, 0, "fs_i") }, *o[2];
  CHECK_MSG(tg_function_call(f, in, o) == 0, "%s", tg_error());
  CHECK(tg_dim_is_symbolic(o[0], 0) && tg_dim_is_symbolic(o[1], 0));
  float a[TMAX * DS], b[TMAX * DS];
  CHECK(tg_data(o[0], a, sizeof a) == 0);
  CHECK(tg_data(o[1], b, sizeof b) == 0);
  for (int i = 0; i < 4 * DS; i++) { CHECK_NEAR(a[i], xs[i], 0); CHECK_NEAR(b[i], 2 * xs[i], 0); }
  tg_function_free(f);
}

/* three stored intermediates of one size: a = tanh(x @ w), b = a / 2,
 * c = b + 1/4 (a and c never live at once), then tanh(c @ w) */
static int sym_chain(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *a = tg_contiguous(tg_tanh(tg_matmul(in[0], in[1])));
  tg_tensor *b = tg_contiguous(tg_muls(a, 0.5));
  tg_tensor *c = tg_contiguous(tg_adds(b, 0.25));
  out[0] = tg_tanh(tg_matmul(c, in[1]));
  return out[0] ? 0 : -1;
}
static void ref_chain(const float *x, int t, float *out) {
  float a[TMAX * DS], s[DS];
  ref_layer(x, t, a, s);
  for (int i = 0; i < t * DS; i++) a[i] = a[i] * 0.5f + 0.25f;
  ref_layer(a, t, out, s);
}

/* A kept schedule of calls (each call one entry of its linear, its
 * intermediates in memory shared by the calls) run with several values of
 * the variable, then listed kernel by kernel (which gives every call's
 * intermediates buffers of their own) and run again: C loops' values each
 * time. */
TEST(function_schedule_runs_calls_with_values) {
  init_sym();
  enum { NC = 4 };
  CHECK_OK(tg_variable("fs_k", 1, TMAX));
  CHECK(tg_bind("fs_k", TMAX) == 0);
  tg_tensor *xfull = tg_from_data(xs, TG_SHAPE(TMAX, DS), TG_F32), *w = tg_from_data(ws, TG_SHAPE(DS, DS), TG_F32);
  CHECK(tg_realize(xfull) == 0 && tg_realize(w) == 0);
  tg_function *f = tg_function_new("sym_chain", sym_chain, NULL, 2, 1);
  tg_scope_begin();
  tg_tensor *h = tg_shrink_var(xfull, 0, "fs_k");
  for (int l = 0; l < NC && h; l++) {
    tg_tensor *in[2] = { h, w }, *o = NULL;
    CHECK_MSG(tg_function_call(f, in, &o) == 0, "%s", tg_error());
    h = o;
  }
  enum { MAXE = 64 };
  tg_schedule_entry flat[MAXE];
  int nflat = h ? tg_schedule_list(&h, 1, flat, MAXE) : -1;
  CHECK_MSG(nflat >= 4 * NC && nflat <= MAXE, "%d kernels", nflat);
  tg_schedule *s = h ? tg_schedule_new(&h, 1) : NULL;
  CHECK_OK(s);
  if (s) {
    CHECK_EQ_INT(tg_schedule_count(s), nflat);
    const char *names[4];
    CHECK_EQ_INT(tg_schedule_vars(s, names, 4), 1);
    CHECK(!strcmp(names[0], "fs_k"));
    const int ts[3] = { 5, 2, 9 };
    for (int r = 0; r < 3; r++) {
      if (r == 2) {   /* listed: the flat schedule's kernels, in its order */
        for (int i = 0; i < nflat; i++) {
          tg_schedule_entry e;
          CHECK(tg_schedule_call(s, i, &e) == 0);
          CHECK_MSG(!strcmp(e.name, flat[i].name), "kernel %d: %s vs %s", i, e.name, flat[i].name);
        }
        CHECK_EQ_INT(tg_schedule_count(s), nflat);
      }
      int t = ts[r];
      CHECK(tg_bind("fs_k", t) == 0);
      CHECK_MSG(tg_schedule_run(s, NULL, NULL, 0) == 0, "%s", tg_error());
      float want[TMAX * DS], cur[TMAX * DS], got[TMAX * DS];
      memcpy(cur, xs, sizeof cur);
      for (int l = 0; l < NC; l++) { ref_chain(cur, t, want); memcpy(cur, want, sizeof cur); }
      CHECK(tg_data(h, got, sizeof got) == 0);
      test_close_f32(got, want, (size_t)t * DS, 1e-5, 1e-5, "four calls, valid rows");
    }
    tg_schedule_free(s);
  }
  tg_scope_end();
  tg_function_free(f);
}
