/* test_autograd.c: tg_backward against hand-written backpropagation in C
 * (an MLP), the autograd API's rules (accumulation, zero_grad, detach,
 * no-grad, tg_gradient, errors), gradients through realized tensors, and the
 * kernel counts of whole backward passes (MLP, CNN). Op-by-op gradients are
 * checked against PyTorch in test_math/test_movement/test_nn. */
#include <stdint.h>
#include <unistd.h>
#include "test.h"

enum { B = 8, I = 12, H = 16, O = 4 };

static void fill(float *x, int n, int seed, float scale) {
  uint32_t s = 2463534242u + (uint32_t)seed * 7919u;
  for (int i = 0; i < n; i++) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; x[i] = ((float)(s % 2001) / 1000.0f - 1.0f) * scale; }
}

/* L = mean((relu(x@W1 + b1) @ W2 - y)^2), gradients by hand in double */
static void mlp_reference(const float *x, const float *w1, const float *b1, const float *w2, const float *y,
                          double *gw1, double *gb1, double *gw2, double *loss) {
  double h[B][H], a[B][H], go[B][O], ga[B][H];
  *loss = 0;
  for (int b = 0; b < B; b++) {
    for (int j = 0; j < H; j++) {
      double s = b1[j];
      for (int i = 0; i < I; i++) s += (double)x[b * I + i] * w1[i * H + j];
      h[b][j] = s; a[b][j] = s > 0 ? s : 0;
    }
    for (int k = 0; k < O; k++) {
      double s = 0;
      for (int j = 0; j < H; j++) s += a[b][j] * w2[j * O + k];
      double d = s - y[b * O + k];
      *loss += d * d / (B * O);
      go[b][k] = 2 * d / (B * O);
    }
  }
  memset(gw1, 0, sizeof(double) * I * H); memset(gb1, 0, sizeof(double) * H); memset(gw2, 0, sizeof(double) * H * O);
  for (int b = 0; b < B; b++) {
    for (int j = 0; j < H; j++) {
      double s = 0;
      for (int k = 0; k < O; k++) { gw2[j * O + k] += a[b][j] * go[b][k]; s += go[b][k] * w2[j * O + k]; }
      ga[b][j] = h[b][j] > 0 ? s : 0;
      gb1[j] += ga[b][j];
      for (int i = 0; i < I; i++) gw1[i * H + j] += (double)x[b * I + i] * ga[b][j];
    }
  }
}

typedef struct { tg_tensor *x, *w1, *b1, *w2, *y; } mlp;

static mlp mlp_make(float *x, float *w1, float *b1, float *w2, float *y) {
  fill(x, B * I, 1, 1); fill(w1, I * H, 2, 0.5f); fill(b1, H, 3, 0.1f); fill(w2, H * O, 4, 0.5f); fill(y, B * O, 5, 1);
  mlp m;
  m.x = tg_from_data(x, TG_SHAPE(B, I), TG_F32);
  m.w1 = tg_requires_grad(tg_from_data(w1, TG_SHAPE(I, H), TG_F32), true);
  m.b1 = tg_requires_grad(tg_from_data(b1, TG_SHAPE(H), TG_F32), true);
  m.w2 = tg_requires_grad(tg_from_data(w2, TG_SHAPE(H, O), TG_F32), true);
  m.y = tg_from_data(y, TG_SHAPE(B, O), TG_F32);
  return m;
}
static tg_tensor *mlp_loss(mlp *m) {
  tg_tensor *h = tg_relu(tg_add(tg_matmul(m->x, m->w1), m->b1));
  tg_tensor *d = tg_sub(tg_matmul(h, m->w2), m->y);
  return tg_mean(tg_mul(d, d), TG_ALL, false);
}

static void check_grad(tg_tensor *g, const double *want, int n, const char *what) {
  float *got = malloc(sizeof(float) * (size_t)n);
  CHECK_MSG(g != NULL, "%s: no gradient", what);
  if (g && tg_data(g, got, sizeof(float) * (size_t)n) == 0)
    for (int i = 0; i < n; i++) CHECK_MSG(fabs(got[i] - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]), "%s[%d]: %g vs %g", what, i, got[i], want[i]);
  free(got);
}

TEST(autograd_mlp_matches_hand_backprop) {
  float x[B * I], w1[I * H], b1[H], w2[H * O], y[B * O];
  double gw1[I * H], gb1[H], gw2[H * O], loss;
  mlp m = mlp_make(x, w1, b1, w2, y);
  mlp_reference(x, w1, b1, w2, y, gw1, gb1, gw2, &loss);
  tg_tensor *l = mlp_loss(&m);
  CHECK_NEAR(tg_item(l), loss, 1e-5);   /* realizing the loss first must not cut the gradients */
  CHECK(tg_backward(l) == 0);
  tg_tensor *gs[3] = { tg_grad(m.w1), tg_grad(m.b1), tg_grad(m.w2) };
  int64_t k0 = tg_get_counters().kernels_run;
  CHECK(tg_realize_all(gs, 3) == 0);
  int64_t kernels = tg_get_counters().kernels_run - k0;
  printf("  info: MLP backward (3 grads, loss realized before): %lld kernels\n", (long long)kernels);
  CHECK_MSG(kernels <= 12, "MLP backward took %lld kernels", (long long)kernels);
  check_grad(gs[0], gw1, I * H, "dW1");
  check_grad(gs[1], gb1, H, "db1");
  check_grad(gs[2], gw2, H * O, "dW2");
}

TEST(autograd_accumulates_and_zero_grad) {
  float x[B * I], w1[I * H], b1[H], w2[H * O], y[B * O];
  double gw1[I * H], gb1[H], gw2[H * O], loss;
  mlp m = mlp_make(x, w1, b1, w2, y);
  mlp_reference(x, w1, b1, w2, y, gw1, gb1, gw2, &loss);
  CHECK(tg_backward(mlp_loss(&m)) == 0);
  CHECK(tg_backward(mlp_loss(&m)) == 0);
  double twice[H * O];
  for (int i = 0; i < H * O; i++) twice[i] = 2 * gw2[i];
  check_grad(tg_grad(m.w2), twice, H * O, "dW2 after two backwards");
  tg_zero_grad(m.w2);
  CHECK(tg_grad(m.w2) == NULL);
  CHECK(tg_backward(mlp_loss(&m)) == 0);
  check_grad(tg_grad(m.w2), gw2, H * O, "dW2 after zero_grad");
}

TEST(autograd_detach_no_grad_and_gradient) {
  float v[4] = { 1, 2, 3, 4 };
  tg_tensor *a = tg_requires_grad(tg_from_data(v, TG_SHAPE(4), TG_F32), true);
  /* d/da sum(a * detach(a)) = detach(a) */
  CHECK(tg_backward(tg_sum(tg_mul(a, tg_detach(a)), TG_ALL, false)) == 0);
  double want[4] = { 1, 2, 3, 4 };
  check_grad(tg_grad(a), want, 4, "detach");
  tg_zero_grad(a);
  /* no-grad mode: results carry no gradient */
  tg_set_no_grad(true);
  tg_tensor *c = tg_muls(a, 3);
  tg_set_no_grad(false);
  CHECK(tg_no_grad() == false);
  CHECK(tg_backward(tg_sum(tg_mul(c, a), TG_ALL, false)) == 0);
  double want3[4] = { 3, 6, 9, 12 };
  check_grad(tg_grad(a), want3, 4, "no-grad operand acts as a constant");
  /* tg_gradient leaves tg_grad alone */
  tg_tensor *g = NULL;
  CHECK(tg_gradient(tg_sum(tg_mul(a, a), TG_ALL, false), &a, 1, &g) == 0);
  double want2[4] = { 2, 4, 6, 8 };
  check_grad(g, want2, 4, "tg_gradient");
  check_grad(tg_grad(a), want3, 4, "tg_grad untouched");
}

TEST(autograd_errors) {
  float v[4] = { 1, 2, 3, 4 };
  tg_tensor *a = tg_requires_grad(tg_from_data(v, TG_SHAPE(4), TG_F32), true);
  CHECK(tg_backward(tg_muls(a, 2)) < 0);   /* not a scalar */
  CHECK(strstr(tg_error(), "one element") != NULL);
  tg_tensor *b = tg_from_data(v, TG_SHAPE(4), TG_F32);
  CHECK(tg_backward(tg_sum(b, TG_ALL, false)) < 0);   /* nothing requires grad */
  CHECK(strstr(tg_error(), "requires grad") != NULL);
  int iv[2] = { 1, 2 };
  CHECK(tg_requires_grad(tg_from_data(iv, TG_SHAPE(2), TG_I32), true) == NULL);
  CHECK(tg_backward(NULL) < 0);
}

TEST(autograd_cnn_backward_kernel_count) {
  /* conv 1->4 3x3, relu, conv 4->4 3x3, mean: a tiny CNN's backward */
  enum { N = 2, S = 8 };
  float x[N * S * S], k1[4 * 9], k2[4 * 4 * 9];
  fill(x, N * S * S, 7, 1); fill(k1, 36, 8, 0.5f); fill(k2, 144, 9, 0.3f);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(N, 1, S, S), TG_F32);
  tg_tensor *K1 = tg_requires_grad(tg_from_data(k1, TG_SHAPE(4, 1, 3, 3), TG_F32), true);
  tg_tensor *K2 = tg_requires_grad(tg_from_data(k2, TG_SHAPE(4, 4, 3, 3), TG_F32), true);
  tg_conv_opts o = { 0 };
  tg_tensor *h = tg_relu(tg_conv2d(X, K1, NULL, &o));
  tg_tensor *out = tg_mean(tg_conv2d(h, K2, NULL, &o), TG_ALL, false);
  CHECK_OK(out);
  CHECK(tg_backward(out) == 0);
  tg_tensor *gs[2] = { tg_grad(K1), tg_grad(K2) };
  int64_t k0 = tg_get_counters().kernels_run;
  CHECK(tg_realize_all(gs, 2) == 0);
  printf("  info: CNN backward (2 conv grads): %lld kernels\n", (long long)(tg_get_counters().kernels_run - k0));
  /* d mean / d K2 by hand: mean over (N,4,4,4) of sum_c,ky,kx h * K2 */
  float hv[N * 4 * 6 * 6], g2[4 * 4 * 9];
  CHECK(tg_data(h, hv, sizeof hv) == 0);
  CHECK(tg_data(gs[1], g2, sizeof g2) == 0);
  for (int oc = 0; oc < 4; oc++)
    for (int c = 0; c < 4; c++)
      for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) {
          double s = 0;
          for (int n = 0; n < N; n++) for (int yy = 0; yy < 4; yy++) for (int xx = 0; xx < 4; xx++) s += hv[((n * 4 + c) * 6 + yy + ky) * 6 + xx + kx];
          s /= N * 4 * 4 * 4;
          float got = g2[((oc * 4 + c) * 3 + ky) * 3 + kx];
          CHECK_MSG(fabs(got - s) <= 1e-5 + 1e-4 * fabs(s), "dK2[%d,%d,%d,%d]: %g vs %g", oc, c, ky, kx, got, s);
        }
}

TEST(autograd_copy_between_params_then_step) {
  /* a parameter assigned from a detached copy of another: realizing must
   * not loop (the copy is existing memory, not a computation) */
  float a[4] = { 1, 2, 3, 4 }, b[4] = { 0 }, x[4] = { 1, 1, 2, 2 };
  tg_tensor *p = tg_requires_grad(tg_from_data(a, TG_SHAPE(4), TG_F32), true);
  tg_tensor *q = tg_requires_grad(tg_from_data(b, TG_SHAPE(4), TG_F32), true);
  tg_assign(q, tg_contiguous(tg_detach(p)));
  CHECK(tg_realize(q) == 0);
  tg_tensor *X = tg_from_data(x, TG_SHAPE(4), TG_F32);
  CHECK(tg_backward(tg_sum(tg_mul(tg_add(p, q), X), TG_ALL, false)) == 0);
  tg_assign(p, tg_sub(p, tg_muls(tg_grad(p), 0.5)));
  CHECK(tg_realize(p) == 0);
  float got[4];
  CHECK(tg_data(p, got, sizeof got) == 0);
  for (int i = 0; i < 4; i++) CHECK_NEAR(got[i], a[i] - 0.5 * x[i], 0);
  /* a computed contiguous keeps its gradient path after realizing */
  tg_tensor *h = tg_contiguous(tg_mul(p, X));
  CHECK(tg_realize(h) == 0);
  tg_zero_grad(p);
  CHECK(tg_backward(tg_sum(h, TG_ALL, false)) == 0);
  CHECK(tg_data(tg_grad(p), got, sizeof got) == 0);
  for (int i = 0; i < 4; i++) CHECK_NEAR(got[i], x[i], 0);
}

TEST(autograd_eval_loop_frees_activations) {
  /* forward passes (no backward) through a conv with a parameter that
   * requires grad, each in its own scope, with an intermediate realized
   * (stored) in every pass: what each pass allocated must be freed when its
   * scope ends, even though autograd notes realized nodes and convs register
   * custom gradients (both once held the activations for good) */
  enum { N = 16, C = 8, S = 32 };
  static float x[N * C * S * S], k[C * C * 9];
  fill(x, N * C * S * S, 11, 1); fill(k, C * C * 9, 12, 0.3f);
  tg_tensor *K = tg_requires_grad(tg_from_data(k, TG_SHAPE(C, C, 3, 3), TG_F32), true);
  tg_conv_opts o = { 0 };
  int64_t used[6];
  for (int pass = 0; pass < 6; pass++) {
    tg_scope_begin();
    tg_tensor *X = tg_from_data(x, TG_SHAPE(N, C, S, S), TG_F32);
    tg_tensor *h = tg_contiguous(tg_relu(tg_conv2d(X, K, NULL, &o)));
    CHECK(tg_realize(h) == 0);
    tg_tensor *s = tg_sum(tg_conv2d(h, K, NULL, &o), TG_ALL, false);
    float v;
    CHECK(tg_data(s, &v, sizeof v) == 0);
    tg_scope_end();
    used[pass] = tg_get_counters().mem_used;
  }
  /* one pass is about 1 MB of input and 2 MB of activations: six passes
   * holding on to theirs would be 15 MB more than the second */
  CHECK_MSG(used[5] <= used[1] + (1 << 20), "device memory grew from %lld to %lld bytes over 4 eval passes",
            (long long)used[1], (long long)used[5]);
}

/* The gradient rules are a named pass of match-only patterns: with
 * TRACK_REWRITES=1 each rule that gives a node's sources their gradients
 * is printed with its formula; a cast from an integer matches no rule. */
typedef struct { tg_tensor *loss, *w, *gw; int rc; } grad_case;
static void take_gradient(void *p) { grad_case *c = p; c->rc = tg_gradient(c->loss, &c->w, 1, &c->gw); }

TEST(autograd_rules_traced) {
  tg_scope_begin();
  grad_case c = { NULL, tg_requires_grad(tg_arange(1, 5, 1, TG_F32), true), NULL, -1 };
  c.loss = tg_sum(tg_mul(tg_exp2(c.w), c.w), TG_ALL, false);
  char *log = test_track_rewrites(1, take_gradient, &c);
  if (!log) { tg_scope_end(); SKIP("no temporary file"); }
  float got[4];
  CHECK_OK(c.rc == 0 && tg_data(c.gw, got, sizeof got) == 0);
  for (int i = 0; i < 4; i++) {   /* d/dw (2^w * w) = 2^w * (w ln2 + 1) */
    double v = i + 1, want = pow(2, v) * (v * M_LN2 + 1);
    CHECK_NEAR(got[i], want, 1e-4 * want);
  }
  tg_scope_end();
  CHECK_MSG(strstr(log, "rewrite gradient [d(a*b) = g*b, g*a]: MUL:float"), "%.400s", log);
  CHECK_MSG(strstr(log, "rewrite gradient [d(2^a) = g*2^a*ln2]: EXP2:float"), "%.400s", log);
  CHECK_MSG(strstr(log, "rewrite gradient [d(sum) = expand g"), "%.400s", log);
  free(log);
}
