/* reduce.c: reductions, matmul, softmax, and the ops that realize or write
 * memory (contiguous, assign, copy to a device). */
#include <math.h>
#include <pthread.h>
#include "tensor/tensor.h"
#include "runtime/device.h"
#include "uop/dims.h"
#include "util/settings.h"

/* Resolves axes into flags; false with an error on a bad or repeated axis. */
static bool axes_flags(tg_axes axes, int nd, bool *flags, const char *op) {
  for (int i = 0; i < nd; i++) flags[i] = axes.n < 0;
  for (int i = 0; i < axes.n; i++) {
    int a = norm_axis(axes.a[i], nd, op);
    if (a < 0) return false;
    if (flags[a]) { tg_seterr("%s: axis %d repeated", op, a); return false; }
    flags[a] = true;
  }
  return true;
}

/* REDUCE_AXIS over the flagged axes, then drop them unless keepdim. */
#define SPLIT_REDUCE_MIN (1 << 18)
#define SPLIT_REDUCE_PARTS 256

static uop *reduce_uop(uop *x, uop_op op, const bool *flags, bool keepdim) {
  int64_t arg[TG_MAX_DIMS + 1];
  int n = 0;
  arg[n++] = op;
  int64_t total = 1, kept = 1;
  for (int i = 0; i < x->ndim; i++) {
    if (flags[i] && x->shape[i] != 1) arg[n++] = i;
    if (flags[i]) total *= x->shape[i]; else kept *= x->shape[i];
  }
  uop *r;
  if (n > 1 && kept == 1 && total >= SPLIT_REDUCE_MIN && total % SPLIT_REDUCE_PARTS == 0 && !uop_has_var_dims(x)) {
    /* a big full reduction: SPLIT_REDUCE_PARTS partial results first (a
     * kernel with an output axis, so it runs on all cores), then those */
    int64_t two[2] = { SPLIT_REDUCE_PARTS, total / SPLIT_REDUCE_PARTS };
    int64_t inner[2] = { op, 1 }, outer[2] = { op, 0 };
    uop *part = uop1(OP_REDUCE_AXIS, x->dtype, mv_reshape(x, two, 2), arg_ints(inner, 2));
    r = uop1(OP_REDUCE_AXIS, x->dtype, part, arg_ints(outer, 2));
  } else {
    r = n > 1 ? uop1(OP_REDUCE_AXIS, x->dtype, x, arg_ints(arg, n)) : x;
  }
  if (keepdim) {
    int64_t sh[TG_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) sh[i] = flags[i] ? 1 : x->shape[i];
    return mv_reshape(r, sh, x->ndim);
  }
  int64_t sh[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < x->ndim; i++) if (!flags[i]) sh[k++] = x->shape[i];
  return mv_reshape(r, sh, k);
}

/* "no accumulate dtype given": tinygrad's defaults (every other value,
 * negative ones too, is checked as a dtype) */
#define ACC_DEFAULT (-1000)

/* An accumulate dtype given by the caller: a valid dtype other than bool;
 * mean's must be a float (torch: it could not infer the output dtype). */
static bool acc_dtype_ok(int dt, bool need_float, const char *name) {
  if (dt < 0 || dt >= TG_DTYPE_COUNT) { tg_seterr("%s: unknown accumulate dtype %d", name, dt); return false; }
  if (dt == TG_BOOL) { tg_seterr("%s: bool cannot be an accumulate dtype", name); return false; }
  if (need_float && !tg_dtype_is_float((tg_dtype)dt)) {
    tg_seterr("%s: the accumulate dtype must be a float type, not %s", name, tg_dtype_name((tg_dtype)dt));
    return false;
  }
  return true;
}

/* sum and prod; dt ACC_DEFAULT: tinygrad's default accumulate dtype, else a is cast
 * to dt, reduced in dt, and the result is dt (tinygrad's sum(dtype=)). */
static tg_tensor *sum_like(tg_tensor *a, tg_axes axes, bool keepdim, uop_op op, int dt, const char *name) {
  NEED(a, name);
  bool fl[TG_MAX_DIMS];
  if (!axes_flags(axes, a->u->ndim, fl, name)) return NULL;
  if (dt != ACC_DEFAULT && !acc_dtype_ok(dt, false, name)) return NULL;
  API_BEGIN;
  dtype_t in = a->u->dtype;
  /* tinygrad: prod keeps the input dtype (x.cast(x.dtype)._reduce(MUL)) */
  dtype_t acc = dt != ACC_DEFAULT ? dt_scalar(dt) : op == OP_MUL ? in : dtype_sum_acc(in);
  uop *r = reduce_uop(uop_cast(a->u, acc), op, fl, keepdim);
  /* tinygrad: sums of half, bfloat16 and fp8 return their dtype */
  if (dt == ACC_DEFAULT && (in.scalar == TG_F16 || in.scalar == TG_BF16 || in.scalar == TG_FP8E4M3 || in.scalar == TG_FP8E5M2))
    r = uop_cast(r, in);
  API_RETURN(tensor_wrap(r, a->device));
}
tg_tensor *tg_sum(tg_tensor *a, tg_axes axes, bool keepdim) { return sum_like(a, axes, keepdim, OP_ADD, ACC_DEFAULT, "tg_sum"); }
tg_tensor *tg_prod(tg_tensor *a, tg_axes axes, bool keepdim) { return sum_like(a, axes, keepdim, OP_MUL, ACC_DEFAULT, "tg_prod"); }
tg_tensor *tg_sum_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt) {
  return sum_like(a, axes, keepdim, OP_ADD, (int)dt, "tg_sum_dtype");
}
tg_tensor *tg_prod_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt) {
  return sum_like(a, axes, keepdim, OP_MUL, (int)dt, "tg_prod_dtype");
}

static tg_tensor *max_like(tg_tensor *a, tg_axes axes, bool keepdim, bool is_min, const char *name) {
  NEED(a, name);
  bool fl[TG_MAX_DIMS];
  if (!axes_flags(axes, a->u->ndim, fl, name)) return NULL;
  for (int i = 0; i < a->u->ndim; i++)
    if (fl[i] && a->u->shape[i] == 0) TG_FAIL("%s: cannot reduce over an empty axis %d (no identity)", name, i);
  API_BEGIN;
  uop *x = is_min ? order_inverse(a->u) : a->u;
  uop *r = reduce_uop(x, OP_MAX, fl, keepdim);
  API_RETURN(tensor_wrap(is_min ? order_inverse(r) : r, a->device));
}
tg_tensor *tg_max(tg_tensor *a, tg_axes axes, bool keepdim) { return max_like(a, axes, keepdim, false, "tg_max"); }
tg_tensor *tg_min(tg_tensor *a, tg_axes axes, bool keepdim) { return max_like(a, axes, keepdim, true, "tg_min"); }

/* dt ACC_DEFAULT: tinygrad's mean (sums in the accumulate dtype, ints give
 * float32); else everything in the float dtype dt (torch's mean(dtype=)). */
static tg_tensor *mean_impl(tg_tensor *a, tg_axes axes, bool keepdim, int dt, const char *name) {
  NEED(a, name);
  bool fl[TG_MAX_DIMS];
  if (!axes_flags(axes, a->u->ndim, fl, name)) return NULL;
  if (dt != ACC_DEFAULT && !acc_dtype_ok(dt, true, name)) return NULL;
  int64_t cnt = 1;
  for (int i = 0; i < a->u->ndim; i++) if (fl[i] && !uop_dim_var(a->u, i)) cnt *= a->u->shape[i];
  API_BEGIN;
  dtype_t in = a->u->dtype, out = dt != ACC_DEFAULT ? dt_scalar(dt) : dt_is_float(in) ? in : DT_F32;
  dtype_t acc = dt != ACC_DEFAULT ? out : dtype_sum_acc(in);
  uop *s = reduce_uop(uop_cast(a->u, acc), OP_ADD, fl, keepdim);
  dtype_t f = dt_is_float(acc) ? acc : DT_F32;
  s = uop_cast(s, f);
  /* a symbolic axis counts the bound value, not its maximum */
  uop *c = uop_const(f, (double)cnt);
  for (int i = 0; i < a->u->ndim; i++)
    if (fl[i] && uop_dim_var(a->u, i)) c = uop_alu(OP_MUL, c, uop_cast(uop_dim_var(a->u, i), f));
  int64_t ones[TG_MAX_DIMS];
  for (int i = 0; i < s->ndim; i++) ones[i] = 1;
  uop *r = uop_alu(OP_FDIV, s, mv_expand(mv_reshape(c, ones, s->ndim), s->shape, s->ndim));
  API_RETURN(tensor_wrap(uop_cast(r, out), a->device));
}
tg_tensor *tg_mean(tg_tensor *a, tg_axes axes, bool keepdim) { return mean_impl(a, axes, keepdim, ACC_DEFAULT, "tg_mean"); }
tg_tensor *tg_mean_dtype(tg_tensor *a, tg_axes axes, bool keepdim, tg_dtype dt) {
  return mean_impl(a, axes, keepdim, (int)dt, "tg_mean_dtype");
}

/* first index of the max along axis: n - max(mask * (n, n-1, ..., 1)) */
static tg_tensor *arg_extreme(tg_tensor *a, int axis, bool keepdim, bool is_min, const char *name) {
  NEED(a, name);
  if (axis == TG_NOAXIS) {
    tg_scope_begin();
    tg_tensor *f = tg_reshape(a, TG_SHAPE(-1));
    tg_tensor *r = f ? arg_extreme(f, 0, false, is_min, name) : NULL;
    if (r && keepdim) {
      tg_shape s = { a->u->ndim, { 0 } };
      for (int i = 0; i < s.ndim; i++) s.d[i] = 1;
      r = tg_reshape(r, s);
    }
    if (r) tg_keep(r);
    tg_scope_end();
    return r;
  }
  int nd = a->u->ndim;
  int ax = norm_axis(axis, nd, name);
  if (ax < 0) return NULL;
  int64_t n = a->u->shape[ax];
  if (n == 0) TG_FAIL("%s: empty axis %d", name, ax);
  API_BEGIN;
  uop *x = is_min ? order_inverse(a->u) : a->u;
  bool fl[TG_MAX_DIMS] = { 0 };
  fl[ax] = true;
  uop *m = reduce_uop(x, OP_MAX, fl, true);
  m = mv_expand(m, x->shape, nd);
  uop *mask = uop_alu(OP_CMPEQ, x, m);
  /* counts n..1 along the axis, as int32 */
  int64_t one[1] = { n };
  uop *ar = uop_cast(uop0(OP_ARANGE, DT_INDEX, arg_int(n)), DT_I32);
  ar = uop_alu(OP_SUB, const_like((double)n, DT_I32, one, 1), ar);
  int64_t sh[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) sh[i] = i == ax ? n : 1;
  ar = mv_expand(mv_reshape(ar, sh, nd), x->shape, nd);
  uop *cand = uop_where(mask, ar, const_like(0, DT_I32, x->shape, nd));
  uop *best = reduce_uop(cand, OP_MAX, fl, keepdim);
  uop *r = uop_alu(OP_SUB, const_like((double)n, DT_I32, best->shape, best->ndim), best);
  API_RETURN(tensor_wrap(r, a->device));
}
tg_tensor *tg_argmax(tg_tensor *a, int axis, bool keepdim) { return arg_extreme(a, axis, keepdim, false, "tg_argmax"); }
tg_tensor *tg_argmin(tg_tensor *a, int axis, bool keepdim) { return arg_extreme(a, axis, keepdim, true, "tg_argmin"); }

/* ---- matmul: numpy's rules, as broadcast multiply and a sum (tinygrad's dot) */

/* The sum over the last axis of a product: in tinygrad's default
 * accumulate dtype (acc ACC_DEFAULT) or in acc. */
static tg_tensor *sum_last(tg_tensor *x, int acc) {
  return acc == ACC_DEFAULT ? tg_sum(x, TG_AXES(-1), false) : tg_sum_dtype(x, TG_AXES(-1), false, (tg_dtype)acc);
}
/* t in the accumulate dtype (cast where the product reads it, after the
 * panel packing, which then copies and is chosen for the operand as given) */
static tg_tensor *as_acc(tg_tensor *t, int acc) { return acc == ACC_DEFAULT ? t : tg_cast(t, (tg_dtype)acc); }

/* Large matmuls on the CPU read b through a packed copy: b (..., K, N) as
 * (..., N/P, K, P), P = MATMUL_PANEL columns. One panel of b (P columns by all
 * of K) is then one contiguous run: the kernel keeps it in L2 while the rows
 * of a stream past it (the heuristic puts the panels in the outer loop),
 * instead of striding down b's columns N floats apart (cache-set conflicts,
 * a new page every few rows). The copy costs K*N moves against M*K*N
 * multiply-adds, so only matmuls with enough rows of a pay for it. */
#define MATMUL_PANEL TENSOR_PANEL
static tg_tensor *pack_b_panels(tg_tensor *a, tg_tensor *b) {
  int n1 = a->u->ndim, n2 = b->u->ndim;
  if (!tensor_wide_layouts(a) || !tensor_wide_layouts(b)) return NULL;
  int64_t m = 1, k = b->u->shape[n2 - 2], n = b->u->shape[n2 - 1];
  for (int i = 0; i < n1 - 1; i++) m *= a->u->shape[i];
  int64_t batch = 1;
  for (int i = 0; i < n2 - 2; i++) batch *= b->u->shape[i];
  if (n1 + 2 > TG_MAX_DIMS || n2 + 2 > TG_MAX_DIMS) return NULL;
  /* m / 16 < batch is m < 16 * batch, and the work in double: both would pass int64 for big lazy shapes */
  if (n % MATMUL_PANEL || k < 32 || m / 16 < batch || (double)m * (double)k * (double)n < (double)(1 << 20)) return NULL;
  /* b = w.T with w's rows contiguous along K: with few rows of a, the kernel
   * reads both along K (tiles of dot products) and a panel copy (a
   * transpose) would cost more than it saves */
  if (b->u->op == OP_PERMUTE && b->u->arg.v[n2 - 1] == n2 - 2 && m / batch < 256) return NULL;
  if (setting_on(SET_TG_NO_MATMUL_PACK)) return NULL;
  if (uop_has_var_dims(a->u) || uop_has_var_dims(b->u)) return NULL;   /* the panels would split a symbolic axis */
  tg_shape s = tg_shape_of(b);
  s.d[n2 - 1] = n / MATMUL_PANEL;
  s.d[s.ndim++] = MATMUL_PANEL;   /* (..., K, N/P, P) */
  tg_axes order = { 0, { 0 } };
  for (int i = 0; i < n2 - 2; i++) order.a[order.n++] = i;
  order.a[order.n++] = n2 - 1;
  order.a[order.n++] = n2 - 2;
  order.a[order.n++] = n2;
  return tg_contiguous(tg_permute(tg_reshape(b, s), order));   /* (..., N/P, K, P) */
}

/* a (..., M, K) times the panels (..., N/P, K, P) of b: x (..., M, 1, 1, K)
 * times the panels as (..., 1, N/P, P, K), summed over K, is (..., M, N/P,
 * P): the output (..., M, N). In acc (ACC_DEFAULT: the operands' own). */
static tg_tensor *panels_product(tg_tensor *a, tg_tensor *packed, int acc) {
  int n1 = a->u->ndim, np = packed->u->ndim;
  tg_shape xp = { 0, { 0 } }, wp = { 0, { 0 } };
  for (int i = 0; i < n1 - 1; i++) xp.d[xp.ndim++] = a->u->shape[i];
  xp.d[xp.ndim++] = 1;
  xp.d[xp.ndim++] = 1;
  xp.d[xp.ndim++] = a->u->shape[n1 - 1];
  for (int i = 0; i < np - 3; i++) wp.d[wp.ndim++] = packed->u->shape[i];
  wp.d[wp.ndim++] = 1;
  wp.d[wp.ndim++] = packed->u->shape[np - 3];
  wp.d[wp.ndim++] = MATMUL_PANEL;
  wp.d[wp.ndim++] = packed->u->shape[np - 2];
  tg_tensor *r = sum_last(tg_mul(tg_reshape(as_acc(a, acc), xp), tg_reshape(tg_transpose(as_acc(packed, acc), -1, -2), wp)), acc);
  if (r) {   /* NULL when the product (..., M, N/P, P, K) passes 2^59: ndim would be -1 */
    tg_shape rs = tg_shape_of(r);
    rs.d[rs.ndim - 2] *= MATMUL_PANEL;
    rs.ndim--;
    r = tg_reshape(r, rs);
  }
  return r;
}

tg_tensor *tensor_panels_of_rows(tg_tensor *w) {
  NEED(w, "tensor_panels_of_rows");
  tg_shape s = tg_shape_of(w);
  if (s.ndim != 2 || s.d[0] % MATMUL_PANEL || uop_has_var_dims(w->u))
    return tg_seterr("tensor_panels_of_rows: a matrix with a multiple of %d rows is needed", MATMUL_PANEL), NULL;
  return tg_contiguous(tg_permute(tg_reshape(w, TG_SHAPE(s.d[0] / MATMUL_PANEL, MATMUL_PANEL, s.d[1])), TG_AXES(0, 2, 1)));
}

tg_tensor *tensor_rows_of_panels(tg_tensor *panels) {
  NEED(panels, "tensor_rows_of_panels");
  tg_shape s = tg_shape_of(panels);
  if (s.ndim != 3 || s.d[2] != MATMUL_PANEL) return tg_seterr("tensor_rows_of_panels: panels (N/%d, K, %d) are needed", MATMUL_PANEL, MATMUL_PANEL), NULL;
  return tg_reshape(tg_permute(panels, TG_AXES(0, 2, 1)), TG_SHAPE(s.d[0] * MATMUL_PANEL, s.d[1]));
}

tg_tensor *tensor_matmul_panels(tg_tensor *x, tg_tensor *panels) {
  NEED(x, "tensor_matmul_panels"); NEED(panels, "tensor_matmul_panels");
  tg_shape s = tg_shape_of(panels);
  int n1 = x->u->ndim;
  if (s.ndim != 3 || s.d[2] != MATMUL_PANEL || n1 < 1 || x->u->shape[n1 - 1] != s.d[1])
    return tg_seterr("tensor_matmul_panels: x (..., K) and panels (N/%d, K, %d) are needed", MATMUL_PANEL, MATMUL_PANEL), NULL;
  if (n1 + 2 > TG_MAX_DIMS) return tg_seterr("tensor_matmul_panels: too many dimensions"), NULL;
  tg_scope_begin();
  tg_tensor *r = panels_product(x, panels, ACC_DEFAULT);
  if (r) tg_keep(r);
  tg_scope_end();
  return r;
}
/* acc ACC_DEFAULT: tinygrad's dot; else both operands are cast to acc, multiplied
 * and summed in it, and the result is acc. */
static tg_tensor *dot_impl(tg_tensor *a, tg_tensor *b, int acc, const char *name) {
  NEED(a, name); NEED(b, name);
  if (acc != ACC_DEFAULT && !acc_dtype_ok(acc, false, name)) return NULL;
  int n1 = a->u->ndim, n2 = b->u->ndim;
  if (n1 == 0 || n2 == 0) TG_FAIL("%s: both operands need at least 1 dimension (got %dD and %dD)", name, n1, n2);
  int kb = n2 >= 2 ? n2 - 2 : 0;
  if (a->u->shape[n1 - 1] != b->u->shape[kb])
    TG_FAIL("%s: inner dimensions differ: %lld (last axis of a) vs %lld (axis %d of b)", name, (long long)a->u->shape[n1 - 1], (long long)b->u->shape[kb], kb);
  if (n1 + 1 > TG_MAX_DIMS || n2 + 1 > TG_MAX_DIMS) TG_FAIL("%s: too many dimensions", name);
  tg_scope_begin();
  int mid = (n1 - 1 < n2 - 1 ? n1 - 1 : n2 - 1) < 1 ? (n1 - 1 < n2 - 1 ? n1 - 1 : n2 - 1) : 1;
  tg_shape xs = { 0, { 0 } }, ws = { 0, { 0 } };
  for (int i = 0; i < n1 - 1; i++) xs.d[xs.ndim++] = a->u->shape[i];
  for (int i = 0; i < mid; i++) xs.d[xs.ndim++] = 1;
  xs.d[xs.ndim++] = a->u->shape[n1 - 1];
  for (int i = 0; i < n2 - 2; i++) ws.d[ws.ndim++] = b->u->shape[i];
  for (int i = 0; i < mid; i++) ws.d[ws.ndim++] = 1;
  int tail = n2 < 2 ? n2 : 2;
  for (int i = n2 - tail; i < n2; i++) ws.d[ws.ndim++] = b->u->shape[i];
  tg_tensor *packed = n1 >= 2 && n2 >= 2 ? pack_b_panels(a, b) : NULL;
  tg_tensor *r;
  if (packed) {
    r = panels_product(a, packed, acc);
  } else
    r = sum_last(tg_mul(tg_reshape(as_acc(a, acc), xs), tg_transpose(tg_reshape(as_acc(b, acc), ws), -1, -tail)), acc);
  tg_dtype out = acc != ACC_DEFAULT ? (tg_dtype)acc : tg_dtype_promote((tg_dtype)a->u->dtype.scalar, (tg_dtype)b->u->dtype.scalar);
  r = tg_cast(r, out);
  if (r) tg_keep(r);
  tg_scope_end();
  return r;
}
tg_tensor *tg_dot(tg_tensor *a, tg_tensor *b) { return dot_impl(a, b, ACC_DEFAULT, "tg_matmul"); }
tg_tensor *tg_matmul(tg_tensor *a, tg_tensor *b) { return dot_impl(a, b, ACC_DEFAULT, "tg_matmul"); }
tg_tensor *tg_matmul_dtype(tg_tensor *a, tg_tensor *b, tg_dtype dt) { return dot_impl(a, b, (int)dt, "tg_matmul_dtype"); }
tg_tensor *tg_dot_dtype(tg_tensor *a, tg_tensor *b, tg_dtype dt) { return dot_impl(a, b, (int)dt, "tg_dot_dtype"); }

/* ---- softmax: x - max is detached from the graph's point of view (no grads yet) */
static tg_tensor *softmax_impl(tg_tensor *a, int axis, bool log) {
  const char *name = log ? "tg_log_softmax" : "tg_softmax";
  NEED(a, name);
  int ax = norm_axis(axis, a->u->ndim, name);
  if (ax < 0) return NULL;
  tg_scope_begin();
  tg_tensor *x = tg_dtype_is_float(tg_dtype_of(a)) ? a : tg_cast(a, (tg_dtype)dtype_least_upper_float(a->u->dtype).scalar);
  tg_tensor *m = tg_sub(x, tg_max(x, TG_AXES(ax), true));
  tg_tensor *e = tg_exp(m);
  tg_tensor *ss = tg_sum(e, TG_AXES(ax), true);
  tg_tensor *r = log ? tg_sub(m, tg_log(ss)) : tg_div(e, ss);
  if (r) tg_keep(r);
  tg_scope_end();
  return r;
}
tg_tensor *tg_softmax(tg_tensor *a, int axis) { return softmax_impl(a, axis, false); }
tg_tensor *tg_log_softmax(tg_tensor *a, int axis) { return softmax_impl(a, axis, true); }

/* ---- memory */
tg_tensor *tg_contiguous(tg_tensor *a) {
  NEED(a, "tg_contiguous");
  API_BEGIN;
  API_RETURN(tensor_wrap(uop1(OP_CONTIGUOUS, a->u->dtype, a->u, arg_none()), a->device));
}

/* An assign target must be movement ops over a BUFFER, without EXPAND (one
 * element would be written several times); PAD is fine (its padding is not
 * written). */
static bool assignable(const uop *u) {
  if (u->op == OP_MULTI) {   /* a sharded tensor: every part */
    for (int i = 0; i < u->nsrc; i++) if (!assignable(u->src[i])) return false;
    return true;
  }
  while (uop_is_movement(u->op) || u->op == OP_AFTER || u->op == OP_TAKE) {
    if (u->op == OP_EXPAND) return false;
    u = u->src[0];
  }
  return u->op == OP_BUFFER || (u->op == OP_MULTI && assignable(u));
}
bool tensor_assignable(const tg_tensor *t) {
  const uop *u = t->u;
  while (u->op == OP_ASSIGN) u = u->src[0];   /* assigning again to pending assigns: chain on their target */
  return assignable(u);
}
static uop *base_buffer(uop *u) {
  while (u->op != OP_BUFFER && u->op != OP_MULTI) u = u->src[0];
  return u;
}

tg_tensor *tg_assign(tg_tensor *target, tg_tensor *value) {
  NEED(target, "tg_assign"); NEED(value, "tg_assign");
  if (target->device != value->device) TG_FAIL("tg_assign: target on %s, value on %s", target->device, value->device);
  if (target->u->dtype.bits != value->u->dtype.bits)
    TG_FAIL("tg_assign: dtype mismatch: target is %s, value is %s", tg_dtype_name(tg_dtype_of(target)), tg_dtype_name(tg_dtype_of(value)));
  uop *t = target->u;
  while (t->op == OP_ASSIGN) t = t->src[0];   /* assigning again to pending assigns: chain on their target */
  if (!assignable(t)) TG_FAIL("tg_assign: target must be a realized tensor or a view (reshape/permute/slice/flip/pad/take, no expand) of one; realize it first");
  tg_scope_begin();
  tg_tensor *v = tg_expand(value, tg_shape_of(target));
  if (!v) { tg_scope_end(); return NULL; }
  /* Each assign is a distinct event: a unique arg keeps two assigns that
   * look alike (x.assign(x+1), realized, then x.assign(x+1) again) from
   * being one hash-consed node, which the first realize's substitution
   * would mark as done. */
  static int64_t next_id = 1;
  static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&id_lock);
  int64_t id = next_id++;
  pthread_mutex_unlock(&id_lock);
  uop_pool_push();
  uop *as = uop2(OP_ASSIGN, t->dtype, target->u->op == OP_ASSIGN ? target->u : t, v->u, arg_int(id));
  uop_retain(as);
  /* like tinygrad: every other live tensor that reads this buffer now reads
   * it after the assign (views of it see the new values) */
  tensors_after_assign(base_buffer(t), as, target);
  uop_pool_pop();
  tg_scope_end();
  uop_release(target->u);
  target->u = as;
  return target;
}

tg_tensor *tg_to(tg_tensor *a, const char *device) {
  NEED(a, "tg_to");
  tg_device *d = device_get(device ? device : "");
  if (!d) return NULL;
  API_BEGIN;
  if (d->name == a->device) API_RETURN(tensor_wrap(a->u, a->device));
  API_RETURN(tensor_wrap(uop1(OP_COPY, a->u->dtype, a->u, arg_str(d->name)), d->name));
}
