/* fp8_quantize.h: the seeds' fused fp8 quantize-with-amax as a custom
 * kernel (tinygrad extra/fp8/fp8_linear.py, quantize_to_fp8), written with
 * tg's kernel builder (docs/custom_kernels.md), and the same computation in
 * plain ops. Shared by examples/custom_kernel.c and
 * tests/test_custom_kernel.c:
 *
 *   amax  = max |x|               (a reduce inside the kernel)
 *   scale = 448 / (amax + 1e-8)   (448: the largest float8 e4m3 value)
 *   y     = fp8e4m3(clamp(x * scale, -448, 448)),   inv_scale = 1 / scale
 *
 * Its gradient is straight-through (the clamp and the rounding pass the
 * gradient on; amax is a constant): dx = float(dy) * scale, a second custom
 * kernel. */
#ifndef TG_EXAMPLE_FP8_QUANTIZE_H
#define TG_EXAMPLE_FP8_QUANTIZE_H
#include "tg.h"
#include "tg_kernel.h"
#include "tg_math.h"

#define FP8_MAX 448.0

static inline tg_kv *c32(tg_kb *kb, double v) { return tg_k_const(kb, TG_F32, v); }

/* 448 / (max |x| + 1e-8), a reduce over all of x (any shape, read flat),
 * and in *i a loop over x's elements: how both kernels start */
static inline tg_kv *fp8_scale(tg_kb *kb, tg_kv *x, tg_kv **i) {
  tg_shape s = tg_k_shape(kb, x);
  int64_t n = 1;
  for (int a = 0; a < s.ndim; a++) n *= s.d[a];
  tg_kv *r = tg_k_reduce_range(kb, n);
  tg_kv *xr = tg_k_load(kb, tg_k_index(kb, x, &r, 1));
  tg_kv *abs_x = tg_k_where(kb, tg_k_lt(kb, xr, c32(kb, 0)), tg_k_neg(kb, xr), xr);
  tg_kv *amax = tg_k_reduce(kb, TG_K_MAX, abs_x, &r, 1);
  *i = tg_k_range(kb, n);
  return tg_k_div(kb, c32(kb, FP8_MAX), tg_k_add(kb, amax, c32(kb, 1e-8)));
}

/* outputs: y (fp8, x's shape), inv_scale (float32, one value) */
static inline int quantize_build(void *ctx, tg_kb *kb) {
  tg_kv *x = tg_k_input(kb, 0), *y = tg_k_output(kb, 0), *inv_scale = tg_k_output(kb, 1);
  tg_kv *i, *scale = fp8_scale(kb, x, &i);
  tg_kv *xs = tg_k_mul(kb, tg_k_load(kb, tg_k_index(kb, x, &i, 1)), scale);
  tg_kv *q = tg_k_min(kb, tg_k_max(kb, xs, c32(kb, -FP8_MAX)), c32(kb, FP8_MAX));
  tg_k_store(kb, tg_k_index(kb, y, &i, 1), tg_k_cast(kb, q, TG_FP8E4M3));
  tg_kv *zero = tg_k_int(kb, 0);
  return tg_k_store(kb, tg_k_index(kb, inv_scale, &zero, 1), tg_k_recip(kb, scale));
}

/* inputs: x, dy (fp8); output: dx = float(dy) * scale */
static inline int quantize_backward_build(void *ctx, tg_kb *kb) {
  tg_kv *x = tg_k_input(kb, 0), *dy = tg_k_input(kb, 1), *dx = tg_k_output(kb, 0);
  tg_kv *i, *scale = fp8_scale(kb, x, &i);
  tg_kv *g = tg_k_cast(kb, tg_k_load(kb, tg_k_index(kb, dy, &i, 1)), TG_F32);
  return tg_k_store(kb, tg_k_index(kb, dx, &i, 1), tg_k_mul(kb, g, scale));
}

/* the gradient of y reaches x through the backward kernel; inv_scale has none */
static inline int quantize_grad(void *ctx, tg_tensor *const *in, int nin, tg_tensor *const *out, tg_tensor *const *grad_out, int nout, tg_tensor **grad_in) {
  if (!grad_out[0]) return 0;
  tg_kernel_out spec = { tg_shape_of(in[0]), TG_F32 };
  tg_tensor *args[2] = { in[0], grad_out[0] };
  return tg_custom_kernel("quantize_fp8_backward", &spec, 1, args, 2, quantize_backward_build, NULL, NULL, &grad_in[0]);
}

/* y, inv_scale = quantize(x) as one custom kernel */
static inline int quantize_fp8(tg_tensor *x, tg_tensor **y, tg_tensor **inv_scale) {
  tg_kernel_out outs[2] = { { tg_shape_of(x), TG_FP8E4M3 }, { TG_SHAPE(1), TG_F32 } };
  tg_tensor *r[2];
  if (tg_custom_kernel("quantize_fp8_amax", outs, 2, &x, 1, quantize_build, quantize_grad, NULL, r) < 0) return -1;
  *y = r[0]; *inv_scale = r[1];
  return 0;
}

/* the same in plain ops, as the seeds write it (straight-through clamp) */
static inline void quantize_fp8_plain(tg_tensor *x, tg_tensor **y, tg_tensor **inv_scale) {
  tg_tensor *amax = tg_detach(tg_max(tg_abs(x), TG_ALL, false));
  tg_tensor *scale = tg_div(tg_scalar(FP8_MAX, TG_F32), tg_add(amax, tg_scalar(1e-8, TG_F32)));
  tg_tensor *xs = tg_mul(x, scale), *xd = tg_detach(xs);
  tg_tensor *ste = tg_add(xs, tg_sub(tg_clamp(xd, -FP8_MAX, FP8_MAX), xd));
  *y = tg_cast(ste, TG_FP8E4M3);
  *inv_scale = tg_reshape(tg_reciprocal(scale), TG_SHAPE(1));
}

#endif
