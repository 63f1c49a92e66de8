/* math_common.c: UOp builders shared by the math op files (see
 * math_internal.h). Nothing here is public API. */
#include <math.h>
#include "tensor/math_internal.h"

/* ---- constants */
uop *mt_c(uop *x, double v) { return const_like(v, x->dtype, x->shape, x->ndim); }
uop *mt_ct(uop *x, double v, dtype_t dt) { return const_like(v, dt, x->shape, x->ndim); }

/* An integer constant given by its bits (uop_const goes through a double,
 * which cannot hold every 64-bit value), broadcast to x's shape. */
static uop *int_const_like(uop *x, int64_t v) {
  uop *c = uop_const_int(dt_base(x->dtype), v);
  if (x->ndim == 0) return c;
  int64_t ones[TG_MAX_DIMS * 4];
  for (int i = 0; i < x->ndim; i++) ones[i] = 1;
  return mv_expand(mv_reshape(c, ones, x->ndim), x->shape, x->ndim);
}
static int dt_bits(dtype_t d) { return 8 * tg_dtype_size((tg_dtype)d.scalar); }

uop *mt_min_value(uop *x) {
  if (dt_is_float(x->dtype)) return mt_c(x, -INFINITY);
  if (x->dtype.scalar == TG_BOOL || dt_is_unsigned(x->dtype)) return mt_c(x, 0);
  int b = dt_bits(x->dtype);
  return int_const_like(x, b == 64 ? INT64_MIN : -((int64_t)1 << (b - 1)));
}
uop *mt_max_value(uop *x) {
  if (dt_is_float(x->dtype)) return mt_c(x, INFINITY);
  if (x->dtype.scalar == TG_BOOL) return mt_c(x, 1);
  int b = dt_bits(x->dtype);
  if (dt_is_unsigned(x->dtype)) return int_const_like(x, b == 64 ? -1 : (int64_t)((1ULL << b) - 1));
  return int_const_like(x, b == 64 ? INT64_MAX : ((int64_t)1 << (b - 1)) - 1);
}

/* ---- arithmetic */
uop *mt_not(uop *b) { return uop_alu(OP_CMPEQ, b, mt_c(b, 0)); }
uop *mt_max(uop *a, uop *b) { return uop_alu(OP_MAX, a, b); }
uop *mt_min(uop *a, uop *b) {
  if (dt_is_float(a->dtype)) return mt_neg(mt_max(mt_neg(a), mt_neg(b)));
  return mt_where(mt_lt(b, a), b, a);
}
uop *mt_abs(uop *a) {
  if (a->dtype.scalar == TG_BOOL || dt_is_unsigned(a->dtype)) return a;
  return mt_where(mt_lt(a, mt_c(a, 0)), mt_neg(a), a);
}
uop *mt_sign(uop *a) {
  if (a->dtype.scalar == TG_BOOL) return a;
  uop *z = mt_c(a, 0);
  return mt_where(mt_lt(z, a), mt_c(a, 1), mt_where(mt_lt(a, z), mt_c(a, -1), z));
}
uop *mt_floor(uop *a) {
  if (!dt_is_float(a->dtype)) return a;
  uop *b = uop_alu1(OP_TRUNC, a);
  return mt_where(mt_lt(a, b), mt_adds(b, -1), b);
}
uop *mt_ceil(uop *a) {
  if (!dt_is_float(a->dtype)) return a;
  uop *b = uop_alu1(OP_TRUNC, a);
  return mt_where(mt_lt(b, a), mt_adds(b, 1), b);
}

/* ---- float functions */
uop *mt_exp(uop *x) { return uop_alu1(OP_EXP2, mt_muls(x, 1.0 / M_LN2)); }
uop *mt_log(uop *x) { return mt_muls(uop_alu1(OP_LOG2, x), M_LN2); }
uop *mt_sqrt(uop *x) { return uop_alu1(OP_SQRT, x); }
uop *mt_recip(uop *x) { return uop_alu1(OP_RECIPROCAL, x); }
uop *mt_sin(uop *x) { return uop_alu1(OP_SIN, x); }
uop *mt_cos(uop *x) { return uop_alu1(OP_SIN, mt_sub(mt_c(x, M_PI / 2), x)); }
uop *mt_sigmoid(uop *x) { return mt_recip(mt_adds(mt_exp(mt_neg(x)), 1)); }

/* Kahan's expm1: (u - 1) * x / log(u) with u = e^x cancels the rounding
 * error of u. The quotient is only evaluated (and differentiated) at safe
 * points: u == 1 gives x, u - 1 == -1 gives -1, u == inf gives inf. */
uop *mt_expm1(uop *x) {
  uop *u = mt_exp(x), *um1 = mt_adds(u, -1);
  uop *ok = mt_and(mt_and(mt_ne(u, mt_c(u, 1)), mt_ne(um1, mt_c(u, -1))), mt_ne(u, mt_c(u, INFINITY)));
  uop *xs = mt_safe(ok, x, 1);
  uop *us = mt_exp(xs);
  uop *q = mt_mul(mt_adds(us, -1), mt_div(xs, mt_log(us)));
  return mt_where(ok, q, mt_where(mt_eq(u, mt_c(u, 1)), x, um1));
}

/* Goldberg's log1p: log(w) * x / (w - 1) with w = 1 + x; where w - 1 == 0
 * (tiny x) or w == inf the answer is x itself. */
uop *mt_log1p(uop *x) {
  uop *w = mt_adds(x, 1), *d = mt_adds(w, -1);
  uop *ok = mt_and(mt_ne(d, mt_c(d, 0)), mt_ne(w, mt_c(w, INFINITY)));
  uop *xs = mt_safe(ok, x, 1);
  uop *ws = mt_adds(xs, 1);
  uop *q = mt_div(mt_mul(mt_log(ws), xs), mt_adds(ws, -1));
  return mt_where(ok, q, x);
}

/* tanh(|x|) = -expm1(-2|x|) / (2 + expm1(-2|x|)): accurate near 0, no overflow. */
uop *mt_tanh(uop *x) {
  uop *neg = mt_lt(x, mt_c(x, 0));
  uop *t = mt_expm1(mt_muls(mt_abs(x), -2));
  uop *r = mt_div(mt_sub(mt_c(x, 0), t), mt_adds(t, 2));
  return mt_where(neg, mt_neg(r), r);
}

uop *mt_isnan(uop *x) {
  if (!dt_is_float(x->dtype)) return mt_ct(x, 0, DT_BOOL);
  return mt_ne(x, x);
}
uop *mt_isinf(uop *x) {
  if (!dt_is_float(x->dtype)) return mt_ct(x, 0, DT_BOOL);
  return mt_or(mt_eq(x, mt_c(x, INFINITY)), mt_eq(x, mt_c(x, -INFINITY)));
}
uop *mt_signbit(uop *x) {
  if (!dt_is_float(x->dtype)) return x->dtype.scalar == TG_BOOL || dt_is_unsigned(x->dtype) ? mt_ct(x, 0, DT_BOOL) : mt_lt(x, mt_c(x, 0));
  /* the bit itself: -0.0 and negative NaNs count as negative */
  dtype_t f = x->dtype.scalar == TG_F64 ? DT_F64 : DT_F32, i = x->dtype.scalar == TG_F64 ? DT_I64 : dt_scalar(TG_I32);
  uop *bits = uop1(OP_BITCAST, i, uop_cast(x, f), arg_none());
  return mt_lt(bits, mt_c(bits, 0));
}

/* ---- dtypes */
dtype_t mt_float_of(dtype_t d) { return dtype_least_upper_float(d); }
uop *mt_to_float(uop *x) { return uop_cast(x, mt_float_of(x->dtype)); }
dtype_t mt_sum_dtype(dtype_t d) { return dtype_sum_acc(d); }

dtype_t mt_compute_dtype(dtype_t out) {
  int s = out.scalar;
  return s == TG_F16 || s == TG_BF16 || s == TG_FP8E4M3 || s == TG_FP8E5M2 ? DT_F32 : dt_base(out);
}
tg_tensor *mt_unary(tg_tensor *a, mt_ufn f, const double *p, bool to_float, const char *name) {
  NEED(a, name);
  API_BEGIN;
  dtype_t out = to_float ? mt_float_of(a->u->dtype) : a->u->dtype;
  uop *x = uop_cast(a->u, mt_compute_dtype(out));
  API_RETURN(tensor_wrap(uop_cast(f(x, p), out), a->device));
}

/* ---- shapes */
static int bshape(const int64_t *as, int an, const int64_t *bs, int bnd, int64_t *out, const char *op) {
  int nd = an > bnd ? an : bnd;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - an), ib = i - (nd - bnd);
    int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return tg_seterr("%s: shapes cannot broadcast (axis %d of the result: %lld vs %lld)", op, i, (long long)da, (long long)db);
    out[i] = da == 1 ? db : da;
  }
  return nd;
}

uop *mt_broadcast_to(uop *u, const int64_t *shape, int nd) {
  int64_t tmp[TG_MAX_DIMS * 4];
  int pad = nd - u->ndim;
  for (int i = 0; i < nd; i++) tmp[i] = i < pad ? 1 : u->shape[i - pad];
  return mv_expand(mv_reshape(u, tmp, nd), shape, nd);
}

bool mt_broadcast3(tg_tensor *a, tg_tensor *b, tg_tensor *c, uop **ua, uop **ub, uop **uc, int force, const char *op) {
  tg_tensor *ts[3] = { a, b, c };
  int n = c ? 3 : 2;
  for (int i = 1; i < n; i++)
    if (ts[i]->device != a->device) { tg_seterr("%s: tensors are on different devices (%s and %s); use tg_to", op, a->device, ts[i]->device); return false; }
  int64_t shape[TG_MAX_DIMS * 4], tmp[TG_MAX_DIMS * 4];
  int nd = a->u->ndim;
  memcpy(shape, a->u->shape, sizeof(int64_t) * (size_t)nd);
  for (int i = 1; i < n; i++) {
    memcpy(tmp, shape, sizeof(int64_t) * (size_t)nd);
    nd = bshape(ts[i]->u->shape, ts[i]->u->ndim, tmp, nd, shape, op);
    if (nd < 0) return false;
  }
  if (nd > TG_MAX_DIMS) { tg_seterr("%s: too many dimensions", op); return false; }
  tg_dtype p = tg_dtype_of(a);
  for (int i = 1; i < n; i++) p = tg_dtype_promote(p, tg_dtype_of(ts[i]));
  dtype_t dt = dt_scalar(force != TG_VOID ? force : (int)p);
  *ua = uop_cast(mt_broadcast_to(a->u, shape, nd), dt);
  *ub = uop_cast(mt_broadcast_to(b->u, shape, nd), dt);
  if (c) *uc = uop_cast(mt_broadcast_to(c->u, shape, nd), dt);
  return true;
}
bool mt_broadcast2(tg_tensor *a, tg_tensor *b, uop **ua, uop **ub, int force, const char *op) {
  return mt_broadcast3(a, b, NULL, ua, ub, NULL, force, op);
}

dtype_t mt_scalar_dtype(const tg_tensor *a, double v) {
  tg_dtype dt = tg_dtype_of(a);
  if (!tg_dtype_is_float(dt)) {
    if (v != floor(v) || isinf(v)) dt = tg_default_float();
    else if (dt == TG_BOOL) dt = TG_I32;
  }
  return dt_scalar(dt);
}

bool mt_axes_flags(tg_axes axes, int nd, bool *flags, const char *op) {
  for (int i = 0; i < nd; i++) flags[i] = axes.n < 0;
  if (axes.n > TG_MAX_DIMS) { tg_seterr("%s: %d axes given", op, axes.n); return false; }
  for (int i = 0; i < axes.n; i++) {
    int a = norm_axis(axes.a[i], nd, op);
    if (a < 0) return false;
    if (flags[a]) { tg_seterr("%s: axis %d repeated", op, a); return false; }
    flags[a] = true;
  }
  return true;
}

uop *mt_reduce(uop *x, uop_op op, const bool *flags, bool keepdim) {
  int64_t arg[TG_MAX_DIMS * 2 + 1];
  int n = 0;
  arg[n++] = op;
  for (int i = 0; i < x->ndim; i++) if (flags[i] && x->shape[i] != 1) arg[n++] = i;
  uop *r = n > 1 ? uop1(OP_REDUCE_AXIS, x->dtype, x, arg_ints(arg, n)) : x;
  int64_t sh[TG_MAX_DIMS * 2];
  int k = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (!flags[i]) sh[k++] = x->shape[i];
    else if (keepdim) sh[k++] = 1;
  }
  return mv_reshape(r, sh, k);
}
uop *mt_reduce1(uop *x, uop_op op, int axis, bool keepdim) {
  bool fl[TG_MAX_DIMS * 2] = { 0 };
  fl[axis] = true;
  return mt_reduce(x, op, fl, keepdim);
}


uop *mt_arange_along(int64_t n, int axis, int nd, const int64_t *shape) {
  uop *ar = uop0(OP_ARANGE, DT_INDEX, arg_int(n));
  int64_t sh[TG_MAX_DIMS * 2];
  for (int i = 0; i < nd; i++) sh[i] = i == axis ? n : 1;
  ar = mv_reshape(ar, sh, nd);
  return shape ? mv_expand(ar, shape, nd) : ar;
}

int mt_scan_axis(int axis, int ndim, const char *op) {
  if (ndim >= TG_MAX_DIMS) return tg_seterr("%s: needs a spare dimension (at most %d-D, got %d-D)", op, TG_MAX_DIMS - 1, ndim);
  if (ndim == 0) {
    if (axis == 0 || axis == -1) return 0;
    return tg_seterr("%s: axis %d out of range for a 0-D tensor (use 0 or -1)", op, axis);
  }
  return norm_axis(axis, ndim, op);
}
