/* test_functions.c: tg_function, a body built once per signature and
 * called as CALL nodes, checked against naive C loops (forward and the
 * hand-written backward of a tanh MLP) and against the same network built
 * without functions: values, gradients, one body for 24 layers, a new body
 * per new signature, implicit inputs refused or allowed, user gradients,
 * and the errors. */
#include "test.h"

enum { B = 4, D = 8, L = 24 };

/* one layer: tanh(h @ w + b) */
static int layer(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_tanh(tg_add(tg_matmul(in[0], in[1]), in[2]));
  return out[0] ? 0 : -1;
}

static float wv[L][D * D], bv[L][D], xv[B * D];
static void init_values(void) {
  for (int l = 0; l < L; l++) {
    for (int i = 0; i < D * D; i++) wv[l][i] = (float)(((i * 7 + l * 3) % 11) - 5) / 12.0f;
    for (int i = 0; i < D; i++) bv[l][i] = (float)(((i + l) % 5) - 2) / 10.0f;
  }
  for (int i = 0; i < B * D; i++) xv[i] = (float)((i * 5) % 9 - 4) / 4.0f;
}

/* naive C: forward through nl layers, loss = sum(h^2)/2, and the gradients
 * of every weight and bias */
static double ref_mlp(int nl, float *out, float (*dw)[D * D], float (*db)[D]) {
  static float h[L + 1][B * D];
  memcpy(h[0], xv, sizeof xv);
  for (int l = 0; l < nl; l++)
    for (int i = 0; i < B; i++)
      for (int j = 0; j < D; j++) {
        double s = bv[l][j];
        for (int k = 0; k < D; k++) s += (double)h[l][i * D + k] * wv[l][k * D + j];
        h[l + 1][i * D + j] = (float)tanh(s);
      }
  double loss = 0;
  float g[B * D], dz[B * D];
  for (int i = 0; i < B * D; i++) { loss += 0.5 * h[nl][i] * h[nl][i]; g[i] = h[nl][i]; }
  if (out) memcpy(out, h[nl], sizeof(float) * B * D);
  for (int l = nl - 1; l >= 0 && dw; l--) {
    for (int i = 0; i < B * D; i++) dz[i] = g[i] * (1 - h[l + 1][i] * h[l + 1][i]);
    for (int k = 0; k < D; k++)
      for (int j = 0; j < D; j++) {
        double s = 0;
        for (int i = 0; i < B; i++) s += (double)h[l][i * D + k] * dz[i * D + j];
        dw[l][k * D + j] = (float)s;
      }
    for (int j = 0; j < D; j++) {
      double s = 0;
      for (int i = 0; i < B; i++) s += dz[i * D + j];
      db[l][j] = (float)s;
    }
    for (int i = 0; i < B; i++)
      for (int k = 0; k < D; k++) {
        double s = 0;
        for (int j = 0; j < D; j++) s += (double)dz[i * D + j] * wv[l][k * D + j];
        g[i * D + k] = (float)s;
      }
  }
  return loss;
}

typedef struct { tg_tensor *w[L], *b[L]; } params;
static void make_params(params *p, int nl) {
  for (int l = 0; l < nl; l++) {
    p->w[l] = tg_requires_grad(tg_from_data(wv[l], TG_SHAPE(D, D), TG_F32), true);
    p->b[l] = tg_requires_grad(tg_from_data(bv[l], TG_SHAPE(D), TG_F32), true);
  }
}

/* the network through f (or inline when f is NULL) */
static tg_tensor *forward(tg_function *f, params *p, int nl, tg_tensor *x) {
  tg_tensor *h = x;
  for (int l = 0; l < nl && h; l++) {
    tg_tensor *in[3] = { h, p->w[l], p->b[l] }, *out = NULL;
    if (f) { if (tg_function_call(f, in, &out) != 0) return NULL; }
    else layer(NULL, in, 3, &out, 1);
    h = out;
  }
  return h;
}

TEST(function_mlp_values_and_gradients_match_naive_c) {
  init_values();
  float want[B * D], got[B * D];
  static float dw[L][D * D], db[L][D];
  double want_loss = ref_mlp(L, want, dw, db);
  tg_scope_begin();
  tg_function *f = tg_function_new("layer", layer, NULL, 3, 1);
  params p;
  make_params(&p, L);
  tg_tensor *x = tg_from_data(xv, TG_SHAPE(B, D), TG_F32);
  tg_tensor *h = forward(f, &p, L, x);
  CHECK_OK(h);
  tg_tensor *loss = tg_muls(tg_sum(tg_mul(h, h), TG_AXES(0, 1), false), 0.5);
  CHECK(tg_backward(loss) == 0);
  CHECK(tg_data(h, got, sizeof got) == 0);
  test_close_f32(got, want, B * D, 1e-4, 1e-5, "24-layer output");
  float lv = 0;
  CHECK(tg_data(loss, &lv, sizeof lv) == 0);
  CHECK_NEAR(lv, want_loss, 1e-4);
  for (int l = 0; l < L; l += 7) {
    float gw[D * D], gb[D];
    CHECK(tg_data(tg_grad(p.w[l]), gw, sizeof gw) == 0);
    CHECK(tg_data(tg_grad(p.b[l]), gb, sizeof gb) == 0);
    char what[32];
    snprintf(what, sizeof what, "dW[%d]", l);
    test_close_f32(gw, dw[l], D * D, 1e-3, 1e-5, what);
    snprintf(what, sizeof what, "db[%d]", l);
    test_close_f32(gb, db[l], D, 1e-3, 1e-5, what);
  }
  /* one body for all 24 calls; two gradient bodies: the first layer's
   * input needs no gradient, the other 23 layers' do */
  tg_function_info fi = tg_function_stats(f);
  CHECK_EQ_INT(fi.calls, L);
  CHECK_EQ_INT(fi.bodies, 1);
  CHECK_EQ_INT(fi.grad_bodies, 2);
  tg_scope_end();
  tg_function_free(f);
}

TEST(function_matches_the_unwrapped_network) {
  init_values();
  tg_scope_begin();
  tg_function *f = tg_function_new("layer", layer, NULL, 3, 1);
  params p, q;
  make_params(&p, 6);
  make_params(&q, 6);
  tg_tensor *x = tg_from_data(xv, TG_SHAPE(B, D), TG_F32);
  tg_tensor *hf = forward(f, &p, 6, x), *hu = forward(NULL, &q, 6, x);
  CHECK(tg_backward(tg_sum(tg_mul(hf, hf), TG_AXES(0, 1), false)) == 0);
  CHECK(tg_backward(tg_sum(tg_mul(hu, hu), TG_AXES(0, 1), false)) == 0);
  float a[B * D], b[B * D], ga[D * D], gb[D * D];
  CHECK(tg_data(hf, a, sizeof a) == 0);
  CHECK(tg_data(hu, b, sizeof b) == 0);
  test_close_f32(a, b, B * D, 1e-6, 1e-7, "output");
  for (int l = 0; l < 6; l++) {
    CHECK(tg_data(tg_grad(p.w[l]), ga, sizeof ga) == 0);
    CHECK(tg_data(tg_grad(q.w[l]), gb, sizeof gb) == 0);
    test_close_f32(ga, gb, D * D, 1e-5, 1e-6, "weight gradient");
  }
  tg_scope_end();
  tg_function_free(f);
}

TEST(function_new_signature_builds_a_new_body) {
  init_values();
  tg_scope_begin();
  tg_function *f = tg_function_new("layer", layer, NULL, 3, 1);
  tg_tensor *w = tg_from_data(wv[0], TG_SHAPE(D, D), TG_F32), *b = tg_from_data(bv[0], TG_SHAPE(D), TG_F32);
  for (int rows = 1; rows <= 3; rows++) {
    tg_tensor *in[3] = { tg_from_data(xv, TG_SHAPE(rows, D), TG_F32), w, b }, *out = NULL;
    CHECK(tg_function_call(f, in, &out) == 0);
    float got[3 * D];
    CHECK(tg_data(out, got, sizeof(float) * (size_t)(rows * D)) == 0);
    for (int j = 0; j < D; j++) {
      double s = bv[0][j];
      for (int k = 0; k < D; k++) s += (double)xv[(rows - 1) * D + k] * wv[0][k * D + j];
      CHECK_NEAR(got[(rows - 1) * D + j], tanh(s), 1e-5);
    }
  }
  /* a repeated signature reuses its body */
  tg_tensor *in[3] = { tg_from_data(xv, TG_SHAPE(2, D), TG_F32), w, b }, *out = NULL;
  CHECK(tg_function_call(f, in, &out) == 0);
  CHECK_EQ_INT(tg_function_stats(f).bodies, 3);
  /* another dtype is another signature too */
  in[0] = tg_cast(in[0], TG_F16);
  in[1] = tg_cast(w, TG_F16);
  in[2] = tg_cast(b, TG_F16);
  CHECK(tg_function_call(f, in, &out) == 0);
  CHECK_EQ_INT(tg_function_stats(f).bodies, 4);
  CHECK(tg_dtype_of(out) == TG_F16);
  tg_scope_end();
  tg_function_free(f);
}

/* reads a tensor captured from outside: an implicit input */
static int scaled(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  out[0] = tg_mul(in[0], ctx);
  return out[0] ? 0 : -1;
}

TEST(function_implicit_inputs_refused_unless_allowed) {
  tg_scope_begin();
  float s[4] = { 1, 2, 3, 4 }, x[4] = { 5, 6, 7, 8 }, got[4];
  tg_tensor *scale = tg_from_data(s, TG_SHAPE(4), TG_F32);
  tg_function *f = tg_function_new("scaled", scaled, scale, 1, 1);
  tg_tensor *in = tg_from_data(x, TG_SHAPE(4), TG_F32), *out = (tg_tensor *)1;
  CHECK(tg_function_call(f, &in, &out) != 0);
  CHECK(out == NULL);
  CHECK_MSG(tg_error() && strstr(tg_error(), "not its inputs") && strstr(tg_error(), "float32[4]"), "got: %s", tg_error());
  tg_function_allow_implicit(f, true);
  CHECK(tg_function_call(f, &in, &out) == 0);
  CHECK(tg_data(out, got, sizeof got) == 0);
  for (int i = 0; i < 4; i++) CHECK_NEAR(got[i], s[i] * x[i], 0);
  tg_scope_end();
  tg_function_free(f);
}

static int square(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_mul(in[0], in[0]);
  return out[0] ? 0 : -1;
}
/* deliberately not the true derivative (2x): 3x, so the test sees it was used */
static int square_grad(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *gout, int nout, tg_tensor **gin) {
  (void)ctx; (void)nin; (void)nout;
  gin[0] = tg_mul(tg_muls(in[0], 3), gout[0]);
  return gin[0] ? 0 : -1;
}

TEST(function_user_gradient_is_used) {
  tg_scope_begin();
  float x[3] = { 1, -2, 0.5f }, g[3];
  tg_function *f = tg_function_new("square", square, NULL, 1, 1);
  tg_function_set_grad(f, square_grad, NULL);
  tg_tensor *t = tg_requires_grad(tg_from_data(x, TG_SHAPE(3), TG_F32), true), *y = NULL;
  CHECK(tg_function_call(f, &t, &y) == 0);
  CHECK(tg_backward(tg_sum(y, TG_AXES(0), false)) == 0);
  CHECK(tg_data(tg_grad(t), g, sizeof g) == 0);
  for (int i = 0; i < 3; i++) CHECK_NEAR(g[i], 3 * x[i], 1e-6);
  /* without the user gradient: the derived one */
  tg_function *f2 = tg_function_new("square", square, NULL, 1, 1);
  tg_zero_grad(t);
  CHECK(tg_function_call(f2, &t, &y) == 0);
  CHECK(tg_backward(tg_sum(y, TG_AXES(0), false)) == 0);
  CHECK(tg_data(tg_grad(t), g, sizeof g) == 0);
  for (int i = 0; i < 3; i++) CHECK_NEAR(g[i], 2 * x[i], 1e-6);
  tg_scope_end();
  tg_function_free(f);
  tg_function_free(f2);
}

/* two outputs; the second a plain view of an input */
static int split_fn(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  out[0] = tg_sum(tg_exp(in[0]), TG_AXES(1), false);
  out[1] = tg_reshape(in[0], TG_SHAPE(6));
  return out[0] && out[1] ? 0 : -1;
}

TEST(function_several_outputs_and_views_of_inputs) {
  tg_scope_begin();
  float x[6] = { 0, 1, 2, -1, -2, 0.5f }, a[2], v[6];
  tg_function *f = tg_function_new("split", split_fn, NULL, 1, 2);
  tg_tensor *in = tg_from_data(x, TG_SHAPE(2, 3), TG_F32), *out[2] = { 0 };
  /* the input itself computed lazily: it is stored before the call */
  tg_tensor *lazy = tg_adds(in, 1);
  CHECK(tg_function_call(f, &lazy, out) == 0);
  CHECK(tg_data(out[0], a, sizeof a) == 0);
  CHECK(tg_data(out[1], v, sizeof v) == 0);
  for (int i = 0; i < 2; i++) CHECK_NEAR(a[i], exp(x[3 * i] + 1) + exp(x[3 * i + 1] + 1) + exp(x[3 * i + 2] + 1), 1e-5);
  for (int i = 0; i < 6; i++) CHECK_NEAR(v[i], x[i] + 1, 0);
  tg_scope_end();
  tg_function_free(f);
}

static int realizes_inside(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  float v[2];
  if (tg_data(in[0], v, sizeof v) != 0) return -1;
  out[0] = in[0];
  return 0;
}
static int leaves_null(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)in; (void)nin; (void)nout;
  return 0;
}

/* a call's output assigned to a row of a realized cache: the body's kernel
 * writes the row (one kernel launched, no copy after it) where buffers are
 * host memory; values against plain ops */
TEST(function_output_assigned_in_place) {
  tg_scope_begin();
  tg_function *f = tg_function_new("square", square, NULL, 1, 1);
  float xv[6] = { 1, -2, 3, 0.5f, -1, 2 };
  tg_tensor *x = tg_from_data(xv, TG_SHAPE(6), TG_F32), *sq = NULL;
  tg_tensor *cache = tg_contiguous(tg_zeros(TG_SHAPE(3, 6), TG_F32));
  CHECK(tg_realize(x) == 0 && tg_realize(cache) == 0);
  tg_tensor *row = tg_reshape(tg_shrink(cache, (int64_t[]){ 2, 0 }, (int64_t[]){ 3, 6 }), TG_SHAPE(6));
  CHECK_OK(tg_function_call(f, &x, &sq) == 0);
  CHECK(tg_assign(row, sq) != NULL);
  int64_t k0 = tg_get_counters().kernels_run;
  CHECK(tg_realize(cache) == 0);
  int64_t ran = tg_get_counters().kernels_run - k0;
  CHECK_MSG(ran == 1 || (ran == 2 && strcmp(tg_default_device(), "CPU")), "%lld kernels ran on %s", (long long)ran, tg_default_device());
  float cv[18];
  CHECK(tg_data(cache, cv, sizeof cv) == 0);
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < 6; i++) CHECK_NEAR(cv[r * 6 + i], r == 2 ? xv[i] * xv[i] : 0, 0);
  tg_scope_end();
  tg_function_free(f);
}

TEST(function_errors) {
  tg_scope_begin();
  CHECK(tg_function_new("x", NULL, NULL, 1, 1) == NULL);
  CHECK(tg_function_new("x", square, NULL, 1, 0) == NULL);
  CHECK(tg_function_new("x", square, NULL, -1, 1) == NULL);
  tg_tensor *out = NULL, *in = tg_from_data((float[2]){ 1, 2 }, TG_SHAPE(2), TG_F32);
  CHECK(tg_function_call(NULL, &in, &out) != 0);
  tg_function *f = tg_function_new("realizes", realizes_inside, NULL, 1, 1);
  CHECK(tg_function_call(f, &in, &out) != 0);
  CHECK_MSG(tg_error() && strstr(tg_error(), "realizes") && strstr(tg_error(), "parameter"), "got: %s", tg_error());
  tg_function_free(f);
  f = tg_function_new("nulls", leaves_null, NULL, 1, 1);
  CHECK(tg_function_call(f, &in, &out) != 0);
  CHECK_MSG(tg_error() && strstr(tg_error(), "output 0 NULL"), "got: %s", tg_error());
  tg_tensor *nul = NULL;
  CHECK(tg_function_call(f, &nul, &out) != 0);
  CHECK_MSG(tg_error() && strstr(tg_error(), "input 0 is NULL"), "got: %s", tg_error());
  tg_function_free(f);
  /* a tensor built by a call outlives its function */
  f = tg_function_new("square", square, NULL, 1, 1);
  CHECK(tg_function_call(f, &in, &out) == 0);
  tg_function_free(f);
  float v[2];
  CHECK(tg_data(out, v, sizeof v) == 0);
  CHECK_NEAR(v[1], 4, 0);
  tg_scope_end();
}

/* writes x*2 into row 1 of its cache input (an assign inside the body, run
 * by every call on that call's cache) and returns the cache's column sums
 * after the write */
static int cache_write(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *row = tg_shrink(in[0], (int64_t[]){ 1, 0 }, (int64_t[]){ 2, 3 });
  if (!tg_assign(row, tg_muls(in[1], 2))) return -1;
  out[0] = tg_sum(in[0], TG_AXES(0), false);
  return out[0] ? 0 : -1;
}

TEST(function_assigns_to_its_inputs) {
  tg_scope_begin();
  tg_function *f = tg_function_new("cache_write", cache_write, NULL, 2, 1);
  float c0[12], c1[12];
  for (int i = 0; i < 12; i++) { c0[i] = (float)i; c1[i] = (float)(100 + i); }
  tg_tensor *cache[2] = { tg_from_data(c0, TG_SHAPE(4, 3), TG_F32), tg_from_data(c1, TG_SHAPE(4, 3), TG_F32) };
  for (int l = 0; l < 2; l++) CHECK(tg_realize(cache[l]) == 0);
  tg_tensor *outs[2];
  for (int l = 0; l < 2; l++) {
    float x[3] = { (float)l + 1, 10, -1 };
    tg_tensor *in[2] = { cache[l], tg_from_data(x, TG_SHAPE(1, 3), TG_F32) };
    CHECK(tg_function_call(f, in, &outs[l]) == 0);
  }
  CHECK(tg_realize_all(outs, 2) == 0);   /* both calls in one schedule */
  for (int l = 0; l < 2; l++) {
    float *c = l ? c1 : c0, got[12], sums[3];
    float x[3] = { (float)l + 1, 10, -1 };
    for (int j = 0; j < 3; j++) c[3 + j] = 2 * x[j];   /* the reference write */
    CHECK(tg_data(cache[l], got, sizeof got) == 0);
    for (int i = 0; i < 12; i++) CHECK_NEAR(got[i], c[i], 0);
    CHECK(tg_data(outs[l], sums, sizeof sums) == 0);
    for (int j = 0; j < 3; j++) CHECK_NEAR(sums[j], c[j] + c[3 + j] + c[6 + j] + c[9 + j], 1e-6);
  }
  CHECK_EQ_INT(tg_function_stats(f).bodies, 1);
  /* the cache must be memory: a lazy value would be a copy the write is lost in */
  tg_tensor *in[2] = { tg_adds(cache[0], 0), tg_from_data((float[3]){ 1, 2, 3 }, TG_SHAPE(1, 3), TG_F32) }, *o = NULL;
  CHECK(tg_function_call(f, in, &o) == 0);
  CHECK(tg_realize(o) != 0);
  CHECK_MSG(strstr(tg_error(), "assigned inside the function"), "got: %s", tg_error());
  tg_scope_end();
  tg_function_free(f);
}

/* assigns to memory that is not an input: refused */
static int writes_outside(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  if (!tg_assign(ctx, in[0])) return -1;
  out[0] = tg_adds(in[0], 1);
  return 0;
}
TEST(function_assign_outside_refused) {
  tg_scope_begin();
  tg_tensor *state = tg_from_data((float[2]){ 0, 0 }, TG_SHAPE(2), TG_F32);
  CHECK(tg_realize(state) == 0);
  tg_function *f = tg_function_new("writes_outside", writes_outside, state, 1, 1);
  tg_function_allow_implicit(f, true);
  tg_tensor *in = tg_from_data((float[2]){ 1, 2 }, TG_SHAPE(2), TG_F32), *o = NULL;
  CHECK(tg_function_call(f, &in, &o) != 0);
  CHECK_MSG(strstr(tg_error(), "not one of its inputs"), "got: %s", tg_error());
  tg_scope_end();
  tg_function_free(f);
}

/* tg_schedule_list: the kernels of three calls are the body's, three times,
 * over each call's own weights; nothing runs */
TEST(function_schedule_list_shows_each_call) {
  init_values();
  tg_scope_begin();
  tg_function *f = tg_function_new("layer", layer, NULL, 3, 1);
  params p;
  make_params(&p, 3);
  tg_tensor *x = tg_from_data(xv, TG_SHAPE(B, D), TG_F32);
  CHECK(tg_realize(x) == 0);
  tg_tensor *h = forward(f, &p, 3, x);
  tg_schedule_entry e[64];
  int64_t runs = tg_get_counters().kernels_run;
  int n = tg_schedule_list(&h, 1, e, 64);
  CHECK_EQ_INT(tg_get_counters().kernels_run, runs);   /* nothing ran */
  int k = tg_function_stats(f).body_kernels;
  CHECK(k >= 1);
  CHECK_EQ_INT(n, 3 * k);
  /* a weight is memory already: no kernel */
  tg_schedule_entry one;
  CHECK_EQ_INT(tg_schedule_list(&p.w[0], 1, &one, 1), 0);
  /* the calls run the same kernels over different memory (each its weights) */
  for (int c = 1; c < 3 && n == 3 * k; c++) {
    int shared = 0, total = 0;
    for (int i = 0; i < k; i++) {
      CHECK(!strcmp(e[i].name, e[c * k + i].name));
      for (int b = 0; b < e[i].nbufs && b < 8; b++, total++) shared += e[i].buf_ids[b] == e[c * k + i].buf_ids[b];
    }
    CHECK(shared < total);
  }
  float got[B * D], want[B * D];
  CHECK(tg_data(h, got, sizeof got) == 0);   /* still lazy, then computed */
  ref_mlp(3, want, NULL, NULL);
  test_close_f32(got, want, B * D, 1e-4, 1e-5, "3 layers after listing");
  CHECK(tg_schedule_list(NULL, 1, e, 1) < 0);
  CHECK(tg_schedule_list(&h, 1, NULL, 4) < 0);
  tg_scope_end();
  tg_function_free(f);
}

/* a body that calls its own function: an error, not endless recursion */
static tg_function *self_fn;
static int calls_itself(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  return tg_function_call(self_fn, in, out);
}
TEST(function_recursion_refused) {
  tg_scope_begin();
  self_fn = tg_function_new("self", calls_itself, NULL, 1, 1);
  tg_tensor *in = tg_from_data((float[2]){ 1, 2 }, TG_SHAPE(2), TG_F32), *o = NULL;
  CHECK(tg_function_call(self_fn, &in, &o) != 0);
  CHECK_MSG(strstr(tg_error(), "calls its own function"), "got: %s", tg_error());
  /* the function still works for a body that does not recurse: none was kept */
  CHECK_EQ_INT(tg_function_stats(self_fn).bodies, 0);
  tg_function_free(self_fn);
  tg_scope_end();
}

/* a body that calls another function (twice): calls nest */
static tg_function *inner_fn;
static int two_layers(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *a[3] = { in[0], in[1], in[2] }, *h = NULL;
  if (tg_function_call(inner_fn, a, &h) != 0) return -1;
  tg_tensor *b[3] = { h, in[3], in[4] };
  return tg_function_call(inner_fn, b, out);
}
TEST(function_calls_nest) {
  init_values();
  tg_scope_begin();
  inner_fn = tg_function_new("layer", layer, NULL, 3, 1);
  tg_function *outer = tg_function_new("two_layers", two_layers, NULL, 5, 1);
  params p;
  make_params(&p, 4);
  tg_tensor *h = tg_from_data(xv, TG_SHAPE(B, D), TG_F32);
  for (int c = 0; c < 2; c++) {
    tg_tensor *in[5] = { h, p.w[2 * c], p.b[2 * c], p.w[2 * c + 1], p.b[2 * c + 1] }, *o = NULL;
    CHECK_MSG(tg_function_call(outer, in, &o) == 0, "%s", tg_error());
    h = o;
  }
  float got[B * D], want[B * D];
  CHECK_MSG(tg_data(h, got, sizeof got) == 0, "%s", tg_error());
  ref_mlp(4, want, NULL, NULL);
  test_close_f32(got, want, B * D, 1e-4, 1e-5, "2 x 2 nested layers");
  CHECK_EQ_INT(tg_function_stats(outer).bodies, 1);
  CHECK_EQ_INT(tg_function_stats(inner_fn).bodies, 1);
  tg_function_free(outer);
  tg_function_free(inner_fn);
  tg_scope_end();
}
