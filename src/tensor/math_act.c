/* math_act.c: activation functions, composed from the ALU primitives with
 * PyTorch's definitions (constants, thresholds, NaN behaviour). Branches
 * that overflow where they are not selected get a safe input (mt_safe), so
 * their gradient is 0 and not 0 * inf = NaN. */
#include <math.h>
#include "tensor/math_internal.h"

/* where(x < lo, lo, x), then where(hi < x, hi, x): NaN stays NaN */
static uop *clamp2(uop *x, double lo, double hi) {
  x = mt_where(mt_lt(x, mt_c(x, lo)), mt_c(x, lo), x);
  return mt_where(mt_lt(mt_c(x, hi), x), mt_c(x, hi), x);
}
static uop *positive(uop *x) { return mt_lt(mt_c(x, 0), x); }

tg_tensor *tg_relu6(tg_tensor *a) { return tg_clamp(a, 0, 6); }
tg_tensor *tg_hardtanh(tg_tensor *a, double lo, double hi) {
  NEED(a, "tg_hardtanh");
  if (!(lo <= hi)) TG_FAIL("tg_hardtanh: lo (%g) must not be above hi (%g)", lo, hi);
  return tg_clamp(a, lo, hi);
}

static uop *f_leaky_relu(uop *x, const double *p) { return mt_where(positive(x), x, mt_muls(x, p[0])); }
tg_tensor *tg_leaky_relu(tg_tensor *a, double slope) { return mt_unary(a, f_leaky_relu, &slope, true, "tg_leaky_relu"); }

/* x > 0 ? x : alpha * expm1(x / beta) (beta = 1 for elu and selu) */
static uop *elu_like(uop *x, double alpha, double beta) {
  uop *pos = positive(x);
  uop *xn = mt_safe(mt_not(pos), x, 0);
  return mt_where(pos, x, mt_muls(mt_expm1(beta == 1 ? xn : mt_muls(xn, 1 / beta)), alpha));
}
static uop *f_elu(uop *x, const double *p) { return elu_like(x, p[0], 1); }
static uop *f_celu(uop *x, const double *p) { return elu_like(x, p[0], p[0]); }
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946
static uop *f_selu(uop *x, const double *p) { return mt_muls(elu_like(x, SELU_ALPHA, 1), SELU_SCALE); }
tg_tensor *tg_elu(tg_tensor *a, double alpha) { return mt_unary(a, f_elu, &alpha, true, "tg_elu"); }
tg_tensor *tg_celu(tg_tensor *a, double alpha) {
  NEED(a, "tg_celu");
  if (alpha == 0 || isnan(alpha)) TG_FAIL("tg_celu: alpha must be nonzero (got %g)", alpha);
  return mt_unary(a, f_celu, &alpha, true, "tg_celu");
}
tg_tensor *tg_selu(tg_tensor *a) { return mt_unary(a, f_selu, NULL, true, "tg_selu"); }

/* 0.5 x (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3), written as
 * x sigmoid(2z): the same function without the cancellation of 1 + tanh */
static uop *f_gelu(uop *x, const double *p) {
  uop *z2 = mt_muls(mt_add(x, mt_muls(mt_mul(mt_mul(x, x), x), 0.044715)), 2 * sqrt(2.0 / M_PI));
  return mt_mul(x, mt_sigmoid(z2));
}
static uop *f_quick_gelu(uop *x, const double *p) { return mt_mul(x, mt_sigmoid(mt_muls(x, 1.702))); }
static uop *f_silu(uop *x, const double *p) { return mt_mul(x, mt_sigmoid(x)); }
tg_tensor *tg_gelu(tg_tensor *a) { return mt_unary(a, f_gelu, NULL, true, "tg_gelu"); }
tg_tensor *tg_quick_gelu(tg_tensor *a) { return mt_unary(a, f_quick_gelu, NULL, true, "tg_quick_gelu"); }
tg_tensor *tg_silu(tg_tensor *a) { return mt_unary(a, f_silu, NULL, true, "tg_silu"); }
tg_tensor *tg_swish(tg_tensor *a) { return mt_unary(a, f_silu, NULL, true, "tg_swish"); }

/* log(1 + e^z), stable: z + log1p(e^-z) for z > 0, log1p(e^z) otherwise */
static uop *softplus1(uop *z) {
  uop *pos = positive(z);
  uop *zp = mt_safe(pos, z, 0), *zn = mt_safe(mt_not(pos), z, 0);
  return mt_where(pos, mt_add(zp, mt_log1p(mt_exp(mt_neg(zp)))), mt_log1p(mt_exp(zn)));
}
/* p = { beta, threshold }: x where beta x > threshold (like torch) */
static uop *f_softplus(uop *x, const double *p) {
  uop *z = mt_muls(x, p[0]);
  uop *r = softplus1(z);
  if (p[0] != 1) r = mt_muls(r, 1 / p[0]);
  return mt_where(mt_lt(mt_c(z, p[1]), z), x, r);
}
tg_tensor *tg_softplus(tg_tensor *a, double beta, double threshold) {
  NEED(a, "tg_softplus");
  if (beta == 0 || isnan(beta)) TG_FAIL("tg_softplus: beta must be nonzero (got %g)", beta);
  double p[2] = { beta, threshold };
  return mt_unary(a, f_softplus, p, true, "tg_softplus");
}
static uop *f_mish(uop *x, const double *p) { return mt_mul(x, mt_tanh(softplus1(x))); }
tg_tensor *tg_mish(tg_tensor *a) { return mt_unary(a, f_mish, NULL, true, "tg_mish"); }
static uop *f_logsigmoid(uop *x, const double *p) { return mt_neg(softplus1(mt_neg(x))); }
tg_tensor *tg_logsigmoid(tg_tensor *a) { return mt_unary(a, f_logsigmoid, NULL, true, "tg_logsigmoid"); }
static uop *f_softsign(uop *x, const double *p) { return mt_div(x, mt_adds(mt_abs(x), 1)); }
tg_tensor *tg_softsign(tg_tensor *a) { return mt_unary(a, f_softsign, NULL, true, "tg_softsign"); }

/* torch: min(max(x + 3, 0), 6) / 6 and x * that (in this order) */
static uop *f_hardsigmoid(uop *x, const double *p) { return mt_div(clamp2(mt_adds(x, 3), 0, 6), mt_c(x, 6)); }
static uop *f_hardswish(uop *x, const double *p) { return mt_div(mt_mul(x, clamp2(mt_adds(x, 3), 0, 6)), mt_c(x, 6)); }
tg_tensor *tg_hardsigmoid(tg_tensor *a) { return mt_unary(a, f_hardsigmoid, NULL, true, "tg_hardsigmoid"); }
tg_tensor *tg_hardswish(tg_tensor *a) { return mt_unary(a, f_hardswish, NULL, true, "tg_hardswish"); }
