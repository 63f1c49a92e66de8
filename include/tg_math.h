/* tg_math.h: part of the public API of tg (elementwise math beyond the basics, reductions, scans, sorting).
 * Included by tg.h; see tg.h for the conventions: lazy tensors, NULL plus
 * tg_error() on failure, ops given NULL return NULL, axes may be negative.
 *
 * Dtypes: binary ops broadcast and promote like tg_add (tinygrad's lattice);
 * transcendental functions compute ints and bools in float32; rounding,
 * sign, square, clamp and the activations that are piecewise linear keep
 * the input dtype. Index outputs (argsort, cummax, topk, ...) are int32.
 * Scalar arguments follow tg_adds: a non-integral scalar with an int tensor
 * gives float32. Semantics notes and limits: docs/ops_math.md. */
#ifndef TG_MATH_H
#define TG_MATH_H
#ifndef TG_H
#include "tg.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---- trigonometric and hyperbolic (ints compute in float32) */
TG_API tg_tensor *tg_tan(tg_tensor *a);      /* sin(x) / cos(x) */
TG_API tg_tensor *tg_asin(tg_tensor *a);     /* Cephes' float32 polynomial; NaN outside [-1, 1] */
TG_API tg_tensor *tg_acos(tg_tensor *a);     /* pi/2 - asin(x), accurate near +-1 */
TG_API tg_tensor *tg_atan(tg_tensor *a);     /* Cephes' float32 polynomial after range reduction */
TG_API tg_tensor *tg_sinh(tg_tensor *a);     /* (e^x - e^-x) / 2 */
TG_API tg_tensor *tg_cosh(tg_tensor *a);     /* (e^x + e^-x) / 2 */
TG_API tg_tensor *tg_asinh(tg_tensor *a);    /* sign(x) * log(|x| + sqrt(x^2 + 1)) */
TG_API tg_tensor *tg_acosh(tg_tensor *a);    /* log(x + sqrt(x^2 - 1)); NaN below 1 */
TG_API tg_tensor *tg_atanh(tg_tensor *a);    /* log((1 + x) / (1 - x)) / 2; +-inf at +-1 */

/* ---- exponential family */
TG_API tg_tensor *tg_log10(tg_tensor *a);
TG_API tg_tensor *tg_log1p(tg_tensor *a);    /* log(1 + x), accurate near 0 */
TG_API tg_tensor *tg_expm1(tg_tensor *a);    /* e^x - 1, accurate near 0 */
TG_API tg_tensor *tg_erf(tg_tensor *a);      /* tinygrad's polynomial (Abramowitz-Stegun 7.1.26, abs. error ~1.5e-7) */
/* log(e^a + e^b), stable; -inf with -inf gives -inf like torch. */
TG_API tg_tensor *tg_logaddexp(tg_tensor *a, tg_tensor *b);

/* ---- rounding and sign (ints and bools pass through unchanged) */
TG_API tg_tensor *tg_trunc(tg_tensor *a);
TG_API tg_tensor *tg_floor(tg_tensor *a);
TG_API tg_tensor *tg_ceil(tg_tensor *a);
TG_API tg_tensor *tg_round(tg_tensor *a);    /* half to even, like torch.round */
TG_API tg_tensor *tg_sign(tg_tensor *a);     /* -1, 0 or 1 in a's dtype; sign(NaN) = 0 like torch */
TG_API tg_tensor *tg_square(tg_tensor *a);   /* x * x, keeps the dtype */
/* |a| with the sign bit of b (sign of -0.0 and of NaN included); ints give float32. */
TG_API tg_tensor *tg_copysign(tg_tensor *a, tg_tensor *b);

/* ---- division with rounding (broadcasting, promoted dtype) */
/* floor(a / b) like Python's // and torch.floor_divide; ints stay ints (x // 0 is 0). */
TG_API tg_tensor *tg_floordiv(tg_tensor *a, tg_tensor *b);
/* a - floor(a / b) * b: the sign of b, like Python's % and torch.remainder (x % 0 is 0 for ints, NaN for floats). */
TG_API tg_tensor *tg_mod(tg_tensor *a, tg_tensor *b);
/* C fmod: the sign of a, like torch.fmod (x fmod 0 is 0 for ints, NaN for floats). */
TG_API tg_tensor *tg_fmod(tg_tensor *a, tg_tensor *b);

/* ---- bits (ints and bools; floats are an error) */
TG_API tg_tensor *tg_bitwise_and(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_bitwise_or(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_bitwise_xor(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_bitwise_not(tg_tensor *a);   /* ~x; logical not for bools */
/* a << b and a >> b (ints only); like torch, a shift by a negative amount or
 * by the width or more gives 0 (<<) or the sign fill (>>). */
TG_API tg_tensor *tg_lshift(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_rshift(tg_tensor *a, tg_tensor *b);
TG_API tg_tensor *tg_lshifts(tg_tensor *a, int64_t bits);
TG_API tg_tensor *tg_rshifts(tg_tensor *a, int64_t bits);

/* ---- clamping and selection */
/* min(max(a, lo), hi); pass NAN for a missing bound (not both). NaN in a stays NaN. */
TG_API tg_tensor *tg_clamp(tg_tensor *a, double lo, double hi);
/* min(max(a, lo), hi) with tensor bounds, broadcasting all three. */
TG_API tg_tensor *tg_clamp_tensor(tg_tensor *a, tg_tensor *lo, tg_tensor *hi);
/* a where mask (a bool tensor, broadcast to a) is false, value where it is true; keeps a's dtype. */
TG_API tg_tensor *tg_masked_fill(tg_tensor *a, tg_tensor *mask, double value);
/* a + w * (b - a) (torch's formula: b - (b - a) * (1 - w) for w >= 0.5); float result. */
TG_API tg_tensor *tg_lerp(tg_tensor *a, tg_tensor *b, tg_tensor *w);
TG_API tg_tensor *tg_lerps(tg_tensor *a, tg_tensor *b, double w);

/* ---- classification (bool results) */
TG_API tg_tensor *tg_isnan(tg_tensor *a);
TG_API tg_tensor *tg_isinf(tg_tensor *a);
TG_API tg_tensor *tg_isfinite(tg_tensor *a);
/* |a - b| <= atol + rtol * |b| (finite), or a == b, or both NaN when equal_nan; like torch.isclose. */
TG_API tg_tensor *tg_isclose(tg_tensor *a, tg_tensor *b, double rtol, double atol, bool equal_nan);

/* ---- activations (ints compute in float32 unless noted) */
TG_API tg_tensor *tg_relu6(tg_tensor *a);                          /* clamp(x, 0, 6); keeps the dtype */
TG_API tg_tensor *tg_hardtanh(tg_tensor *a, double lo, double hi); /* clamp(x, lo, hi) */
TG_API tg_tensor *tg_leaky_relu(tg_tensor *a, double slope);       /* x > 0 ? x : slope * x */
TG_API tg_tensor *tg_elu(tg_tensor *a, double alpha);              /* x > 0 ? x : alpha * (e^x - 1) */
TG_API tg_tensor *tg_celu(tg_tensor *a, double alpha);             /* max(0, x) + min(0, alpha * (e^(x/alpha) - 1)); alpha != 0 */
TG_API tg_tensor *tg_selu(tg_tensor *a);                           /* scale * elu(x, alpha) with torch's constants */
TG_API tg_tensor *tg_gelu(tg_tensor *a);                           /* tanh approximation (torch approximate='tanh') */
TG_API tg_tensor *tg_quick_gelu(tg_tensor *a);                     /* x * sigmoid(1.702 x) */
TG_API tg_tensor *tg_silu(tg_tensor *a);                           /* x * sigmoid(x) */
TG_API tg_tensor *tg_swish(tg_tensor *a);                          /* same as tg_silu */
TG_API tg_tensor *tg_mish(tg_tensor *a);                           /* x * tanh(softplus(x)) */
/* log(1 + e^(beta x)) / beta, and x where beta x > threshold (torch: beta 1, threshold 20); beta != 0. */
TG_API tg_tensor *tg_softplus(tg_tensor *a, double beta, double threshold);
TG_API tg_tensor *tg_softsign(tg_tensor *a);                       /* x / (1 + |x|) */
TG_API tg_tensor *tg_logsigmoid(tg_tensor *a);                     /* log(sigmoid(x)), stable */
TG_API tg_tensor *tg_hardsigmoid(tg_tensor *a);                    /* relu6(x + 3) / 6 */
TG_API tg_tensor *tg_hardswish(tg_tensor *a);                      /* x * relu6(x + 3) / 6 */

/* ---- reductions (axes may be negative; TG_ALL reduces everything) */
/* Variance sum((x - mean)^2) / max(N - correction, 0) (torch: correction 1); ints give float32. */
TG_API tg_tensor *tg_var(tg_tensor *a, tg_axes axes, bool keepdim, double correction);
TG_API tg_tensor *tg_std(tg_tensor *a, tg_axes axes, bool keepdim, double correction);   /* sqrt(var) */
/* Returns the variance (or standard deviation) and stores the mean in *mean (required). */
TG_API tg_tensor *tg_var_mean(tg_tensor *a, tg_axes axes, bool keepdim, double correction, tg_tensor **mean);
TG_API tg_tensor *tg_std_mean(tg_tensor *a, tg_axes axes, bool keepdim, double correction, tg_tensor **mean);
/* log(sum(exp(x))), stable (-inf for an empty or all -inf axis); ints give float32. */
TG_API tg_tensor *tg_logsumexp(tg_tensor *a, tg_axes axes, bool keepdim);
/* Any / every element nonzero, as bool (empty: any false, all true). */
TG_API tg_tensor *tg_any(tg_tensor *a, tg_axes axes, bool keepdim);
TG_API tg_tensor *tg_all(tg_tensor *a, tg_axes axes, bool keepdim);

/* ---- scans along one axis (a 0-d tensor takes axis 0 or -1) */
/* Running sum; the dtype of tg_sum (small ints accumulate in int32, float16 returns float16). */
TG_API tg_tensor *tg_cumsum(tg_tensor *a, int axis);
/* Running product; keeps the dtype like tg_prod (exact with zeros and negatives). */
TG_API tg_tensor *tg_cumprod(tg_tensor *a, int axis);
/* Running max / min (NaN propagates). When indices is not NULL it receives
 * the int32 index of each running extreme (the last one on ties, like torch). */
TG_API tg_tensor *tg_cummax(tg_tensor *a, int axis, tg_tensor **indices);
TG_API tg_tensor *tg_cummin(tg_tensor *a, int axis, tg_tensor **indices);
/* log(cumsum(exp(x))), stable; ints give float32. */
TG_API tg_tensor *tg_logcumsumexp(tg_tensor *a, int axis);

/* ---- sorting along one axis (stable; NaN sorts as the largest value like torch) */
/* Sorted values; when indices is not NULL it receives their int32 positions in a. */
TG_API tg_tensor *tg_sort(tg_tensor *a, int axis, bool descending, tg_tensor **indices);
TG_API tg_tensor *tg_argsort(tg_tensor *a, int axis, bool descending);
/* The k largest (or smallest) values along axis, in sorted order (sorted =
 * false gives the same order); indices (optional) get their int32 positions. */
TG_API tg_tensor *tg_topk(tg_tensor *a, int64_t k, int axis, bool largest, bool sorted, tg_tensor **indices);

#ifdef __cplusplus
}
#endif
#endif
