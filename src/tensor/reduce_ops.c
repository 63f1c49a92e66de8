/* reduce_ops.c: variance, standard deviation, logsumexp, any and all, as
 * REDUCE_AXIS (ADD / MAX) over elementwise graphs. */
#include <math.h>
#include "tensor/math_internal.h"

/* Product of the flagged dims: the N of a reduction. */
static int64_t reduced_count(const uop *x, const bool *fl) {
  int64_t n = 1;
  for (int i = 0; i < x->ndim; i++) if (fl[i]) n *= x->shape[i];
  return n;
}

/* var (and the mean when mean_out is not NULL), two-pass like tinygrad:
 * sum((x - mean)^2) / max(N - correction, 0). Floats compute in their own
 * dtype (small floats and ints in float32). */
static tg_tensor *var_impl(tg_tensor *a, tg_axes axes, bool keepdim, double correction, bool sd, tg_tensor **mean_out, const char *name) {
  NEED(a, name);
  if (isnan(correction)) TG_FAIL("%s: correction is NaN", name);
  bool fl[TG_MAX_DIMS];
  if (!mt_axes_flags(axes, a->u->ndim, fl, name)) return NULL;
  API_BEGIN;
  dtype_t out = mt_float_of(a->u->dtype), cd = mt_compute_dtype(out);
  uop *x = uop_cast(a->u, cd);
  int64_t n = reduced_count(x, fl);
  uop *s = mt_reduce(x, OP_ADD, fl, true);
  uop *mean = mt_div(s, mt_c(s, (double)n));
  uop *d = mt_sub(x, mv_expand(mean, x->shape, x->ndim));
  uop *ss = mt_reduce(mt_mul(d, d), OP_ADD, fl, keepdim);
  double den = (double)n - correction;
  uop *v = mt_div(ss, mt_c(ss, den > 0 ? den : 0));
  if (sd) v = mt_sqrt(v);
  tg_tensor *r = tensor_wrap(uop_cast(v, out), a->device);
  if (mean_out) {
    uop *m = keepdim ? mean : mt_reduce(mean, OP_ADD, fl, false);   /* drops the kept 1s */
    *mean_out = tensor_wrap(uop_cast(m, out), a->device);
  }
  API_RETURN(r);
}
tg_tensor *tg_var(tg_tensor *a, tg_axes axes, bool keepdim, double correction) {
  return var_impl(a, axes, keepdim, correction, false, NULL, "tg_var");
}
tg_tensor *tg_std(tg_tensor *a, tg_axes axes, bool keepdim, double correction) {
  return var_impl(a, axes, keepdim, correction, true, NULL, "tg_std");
}
tg_tensor *tg_var_mean(tg_tensor *a, tg_axes axes, bool keepdim, double correction, tg_tensor **mean) {
  if (!mean) TG_FAIL("tg_var_mean: mean output pointer is NULL");
  *mean = NULL;
  return var_impl(a, axes, keepdim, correction, false, mean, "tg_var_mean");
}
tg_tensor *tg_std_mean(tg_tensor *a, tg_axes axes, bool keepdim, double correction, tg_tensor **mean) {
  if (!mean) TG_FAIL("tg_std_mean: mean output pointer is NULL");
  *mean = NULL;
  return var_impl(a, axes, keepdim, correction, true, mean, "tg_std_mean");
}

/* log(sum(exp(x - m))) + m with m the max, detached, and 0 where it is
 * infinite (all -inf gives log(0) = -inf; +inf gives inf). */
tg_tensor *tg_logsumexp(tg_tensor *a, tg_axes axes, bool keepdim) {
  NEED(a, "tg_logsumexp");
  bool fl[TG_MAX_DIMS];
  if (!mt_axes_flags(axes, a->u->ndim, fl, "tg_logsumexp")) return NULL;
  API_BEGIN;
  dtype_t out = mt_float_of(a->u->dtype), cd = mt_compute_dtype(out);
  uop *x = uop_cast(a->u, cd);
  bool empty = false;
  for (int i = 0; i < x->ndim; i++) empty |= fl[i] && x->shape[i] == 0;
  if (empty) {
    uop *z = mt_reduce(mt_c(x, 0), OP_ADD, fl, keepdim);   /* just the shape */
    API_RETURN(tensor_wrap(uop_cast(mt_c(z, -INFINITY), out), a->device));
  }
  uop *m = uop1(OP_DETACH, x->dtype, mt_reduce(x, OP_MAX, fl, true), arg_none());
  m = mt_where(mt_isinf(m), mt_c(m, 0), m);
  uop *e = mt_exp(mt_sub(x, mv_expand(m, x->shape, x->ndim)));
  uop *r = mt_add(mt_log(mt_reduce(e, OP_ADD, fl, true)), m);
  if (!keepdim) r = mt_reduce(r, OP_ADD, fl, false);   /* drops the kept 1s */
  API_RETURN(tensor_wrap(uop_cast(r, out), a->device));
}

/* any: max over (x != 0) as bool; all: not any(x == 0) */
static tg_tensor *any_all(tg_tensor *a, tg_axes axes, bool keepdim, bool all, const char *name) {
  NEED(a, name);
  bool fl[TG_MAX_DIMS];
  if (!mt_axes_flags(axes, a->u->ndim, fl, name)) return NULL;
  API_BEGIN;
  uop *x = a->u;
  uop *b = x->dtype.scalar == TG_BOOL ? (all ? mt_not(x) : x) : (all ? mt_eq(x, mt_c(x, 0)) : mt_ne(x, mt_c(x, 0)));
  uop *r = mt_reduce(b, OP_MAX, fl, keepdim);
  API_RETURN(tensor_wrap(all ? mt_not(r) : r, a->device));
}
tg_tensor *tg_any(tg_tensor *a, tg_axes axes, bool keepdim) { return any_all(a, axes, keepdim, false, "tg_any"); }
tg_tensor *tg_all(tg_tensor *a, tg_axes axes, bool keepdim) { return any_all(a, axes, keepdim, true, "tg_all"); }
