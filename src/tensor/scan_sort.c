/* scan_sort.c: cumulative ops and sorting along one axis, written with
 * tensor ops like tinygrad's:
 *
 * - A scan is a reduce over a window: out[i] = op(x[j] for j <= i), with x
 *   expanded to (..., n_i, n_j, ...) and masked to the identity where
 *   j > i. That is O(n^2) work in one kernel; axes longer than 512 are cut
 *   into blocks of 256 (tinygrad's _split_cumalu): a scan inside each block,
 *   a scan of the block totals, and one combine.
 * - Sorting counts, for every element, the elements that sort before it
 *   (its rank; ties by position, so the sort is stable), then places each
 *   value at its rank with a compare-and-reduce. O(n^2) work per row and
 *   O(n) memory; fine up to about 10^4 elements per row.
 *
 * The axis is kept where it is: the window or the comparison partner is a
 * new axis right after it. */
#include <math.h>
#include "tensor/math_internal.h"

#define SCAN_SPLIT 256   /* block length for long scans */

/* identity element of a scan op for x's dtype */
static uop *identity(uop *x, uop_op op) {
  if (op == OP_ADD) return mt_c(x, 0);
  if (op == OP_MUL) return mt_c(x, 1);
  return mt_min_value(x);
}
static uop *combine(uop_op op, uop *a, uop *b) { return op == OP_MAX ? mt_max(a, b) : uop_alu(op, a, b); }

/* x[..., j at ax+1, ...] and an (n, n) mask j > i broadcast to the window
 * shape (..., n, n, ...); shapes are written into wsh. */
static uop *window_of(uop *x, int ax, int64_t *wsh, uop **later) {
  int nd = x->ndim;
  int64_t n = x->shape[ax], rsh[TG_MAX_DIMS * 2];
  for (int i = 0, k = 0; i < nd; i++) {
    if (i == ax) { rsh[k] = 1; wsh[k++] = n; }
    rsh[k] = x->shape[i]; wsh[k++] = x->shape[i];
  }
  uop *xj = mv_expand(mv_reshape(x, rsh, nd + 1), wsh, nd + 1);
  uop *i = mt_arange_along(n, ax, nd + 1, wsh), *j = mt_arange_along(n, ax + 1, nd + 1, wsh);
  *later = mt_lt(i, j);
  return xj;
}

/* inclusive scan along ax, one window reduce */
static uop *scan_window(uop *x, int ax, uop_op op) {
  int64_t wsh[TG_MAX_DIMS * 2];
  uop *later;
  uop *xj = window_of(x, ax, wsh, &later);
  return mt_reduce1(mt_where(later, identity(xj, op), xj), op, ax + 1, false);
}

/* inclusive scan along the last axis; blocks when long */
static uop *scan_last(uop *x, uop_op op) {
  int nd = x->ndim;
  int64_t n = x->shape[nd - 1];
  if (n <= 2 * SCAN_SPLIT) return scan_window(x, nd - 1, op);
  int64_t nb = (n + SCAN_SPLIT - 1) / SCAN_SPLIT, pad0 = nb * SCAN_SPLIT - n;
  int64_t pads[TG_MAX_DIMS * 4] = { 0 }, sh[TG_MAX_DIMS * 2], st[TG_MAX_DIMS * 2], en[TG_MAX_DIMS * 2];
  pads[2 * (nd - 1)] = pad0;
  uop *xp = mv_pad(x, pads, op == OP_MUL ? 1 : 0);
  if (op == OP_MAX && pad0) {
    /* pad with the dtype's minimum (mv_pad takes a double) */
    uop *mask = uop1(OP_PAD, DT_BOOL, mt_ct(x, 1, DT_BOOL), arg_ints(pads, 2 * nd));
    xp = mt_where(mask, xp, identity(xp, op));
  }
  for (int i = 0; i < nd - 1; i++) sh[i] = x->shape[i];
  sh[nd - 1] = nb; sh[nd] = SCAN_SPLIT;
  uop *blocks = scan_window(mv_reshape(xp, sh, nd + 1), nd, op);           /* (..., nb, B) */
  for (int i = 0; i <= nd; i++) { st[i] = 0; en[i] = blocks->shape[i]; }
  st[nd] = SCAN_SPLIT - 1;
  uop *tot = mv_reshape(mv_shrink(blocks, st, en), sh, nd);                  /* (..., nb) */
  uop *inc = scan_last(tot, op);
  /* exclusive: shift right by one, the identity first */
  int64_t p1[TG_MAX_DIMS * 4] = { 0 };
  p1[2 * (nd - 1)] = 1;
  uop *ex = uop1(OP_PAD, inc->dtype, inc, arg_ints(p1, 2 * nd));
  uop *pm = uop1(OP_PAD, DT_BOOL, mt_ct(inc, 1, DT_BOOL), arg_ints(p1, 2 * nd));
  ex = mt_where(pm, ex, identity(ex, op));
  for (int i = 0; i < nd; i++) { st[i] = 0; en[i] = ex->shape[i]; }
  en[nd - 1] = nb;
  ex = mv_shrink(ex, st, en);
  int64_t bsh[TG_MAX_DIMS * 2];
  for (int i = 0; i < nd; i++) bsh[i] = ex->shape[i];
  bsh[nd] = 1;
  uop *r = combine(op, blocks, mv_expand(mv_reshape(ex, bsh, nd + 1), blocks->shape, nd + 1));
  int64_t fsh[TG_MAX_DIMS * 2];
  for (int i = 0; i < nd - 1; i++) fsh[i] = x->shape[i];
  fsh[nd - 1] = nb * SCAN_SPLIT;
  r = mv_reshape(r, fsh, nd);
  for (int i = 0; i < nd; i++) { st[i] = 0; en[i] = r->shape[i]; }
  st[nd - 1] = pad0;
  return mv_shrink(r, st, en);
}

/* inclusive scan along ax of any tensor (moves ax last and back for long axes) */
static uop *scan(uop *x, int ax, uop_op op) {
  int nd = x->ndim;
  if (x->shape[ax] <= 2 * SCAN_SPLIT) return scan_window(x, ax, op);
  int64_t perm[TG_MAX_DIMS], inv[TG_MAX_DIMS];
  for (int i = 0, k = 0; i < nd; i++) if (i != ax) perm[k++] = i;
  perm[nd - 1] = ax;
  for (int i = 0; i < nd; i++) inv[perm[i]] = i;
  return mv_permute(scan_last(mv_permute(x, perm), op), inv);
}

static bool has_zero_dim(const uop *x) {
  for (int i = 0; i < x->ndim; i++) if (x->shape[i] == 0) return true;
  return false;
}

/* Scans and sorts compare each element with w others along the axis (a
 * window of numel * w values): false, with the error, when that passes
 * 2^59. w: the axis length for a whole-axis window (sorts, cummax indices),
 * 2 * SCAN_SPLIT at most for a blocked scan (padding included). */
static bool window_fits(const uop *x, int ax, bool whole_axis, const char *name) {
  int64_t n = x->shape[ax], w = whole_axis || n <= 2 * SCAN_SPLIT ? n : 2 * SCAN_SPLIT, g;
  if (!tg_mul_overflow_i64(shape_numel(x->shape, x->ndim), w, &g) && g <= TG_MAX_NUMEL) return true;
  tg_seterr("%s: comparing each element with %lld others along axis %d (of %lld) passes 2^59 values", name, (long long)w, ax, (long long)n);
  return false;
}

/* Runs a scan on a (0-d: on a 1-element view) with dtype handling:
 * ADD accumulates like tg_sum, MUL and MAX keep the dtype (small floats
 * compute in float32). */
static tg_tensor *scan_op(tg_tensor *a, int axis, uop_op op, const char *name) {
  NEED(a, name);
  int ax = mt_scan_axis(axis, a->u->ndim, name);
  if (ax < 0) return NULL;
  API_BEGIN;
  dtype_t in = a->u->dtype, out = in, cd;
  if (op == OP_ADD) {
    cd = mt_sum_dtype(in);
    bool small = in.scalar == TG_F16 || in.scalar == TG_BF16 || in.scalar == TG_FP8E4M3 || in.scalar == TG_FP8E5M2;
    out = small ? in : cd;
  } else cd = op == OP_MAX ? in : mt_compute_dtype(in);
  uop *x = uop_cast(a->u, cd);
  if (x->ndim == 0 || has_zero_dim(x)) API_RETURN(tensor_wrap(uop_cast(x, out), a->device));
  if (!window_fits(x, ax, false, name)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_cast(scan(x, ax, op), out), a->device));
}
tg_tensor *tg_cumsum(tg_tensor *a, int axis) { return scan_op(a, axis, OP_ADD, "tg_cumsum"); }
tg_tensor *tg_cumprod(tg_tensor *a, int axis) { return scan_op(a, axis, OP_MUL, "tg_cumprod"); }

/* The running max of x and, when idx is not NULL, the last j <= i where
 * x[j] equals it (NaN matching NaN), like torch.cummax. */
static uop *cummax_uop(uop *x, int ax, uop **idx) {
  uop *v = scan(x, ax, OP_MAX);
  if (!idx) return v;
  int64_t wsh[TG_MAX_DIMS * 2], vsh[TG_MAX_DIMS * 2];
  uop *later;
  uop *xj = window_of(x, ax, wsh, &later);
  for (int i = 0, k = 0; i < x->ndim; i++) { vsh[k++] = x->shape[i]; if (i == ax) vsh[k++] = 1; }
  uop *vi = mv_expand(mv_reshape(v, vsh, x->ndim + 1), wsh, x->ndim + 1);
  uop *match = mt_or(mt_eq(xj, vi), mt_and(mt_isnan(xj), mt_isnan(vi)));
  uop *j = uop_cast(mt_arange_along(x->shape[ax], ax + 1, x->ndim + 1, wsh), DT_I32);
  uop *cand = mt_where(mt_and(match, mt_not(later)), j, mt_c(j, -1));
  *idx = mt_reduce1(cand, OP_MAX, ax + 1, false);
  return v;
}

static tg_tensor *cum_extreme(tg_tensor *a, int axis, tg_tensor **indices, bool is_min, const char *name) {
  if (indices) *indices = NULL;
  NEED(a, name);
  int ax = mt_scan_axis(axis, a->u->ndim, name);
  if (ax < 0) return NULL;
  API_BEGIN;
  uop *x = a->u;
  if (x->ndim == 0 || has_zero_dim(x)) {
    if (indices) *indices = tensor_wrap(mt_ct(x, 0, DT_I32), a->device);
    API_RETURN(tensor_wrap(x, a->device));
  }
  if (!window_fits(x, ax, indices != NULL, name)) API_RETURN(NULL);
  uop *idx = NULL;
  uop *v = cummax_uop(is_min ? order_inverse(x) : x, ax, indices ? &idx : NULL);
  tg_tensor *r = tensor_wrap(is_min ? order_inverse(v) : v, a->device);
  if (indices) *indices = tensor_wrap(idx, a->device);
  API_RETURN(r);
}
tg_tensor *tg_cummax(tg_tensor *a, int axis, tg_tensor **indices) { return cum_extreme(a, axis, indices, false, "tg_cummax"); }
tg_tensor *tg_cummin(tg_tensor *a, int axis, tg_tensor **indices) { return cum_extreme(a, axis, indices, true, "tg_cummin"); }

/* out[i] = log(sum_{j <= i} exp(x[j] - m[i])) + m[i], m the running max
 * (detached; 0 where infinite). O(n^2) work, no blocks. */
tg_tensor *tg_logcumsumexp(tg_tensor *a, int axis) {
  NEED(a, "tg_logcumsumexp");
  int ax = mt_scan_axis(axis, a->u->ndim, "tg_logcumsumexp");
  if (ax < 0) return NULL;
  API_BEGIN;
  dtype_t out = mt_float_of(a->u->dtype);
  uop *x = uop_cast(a->u, mt_compute_dtype(out));
  if (x->ndim == 0 || has_zero_dim(x)) API_RETURN(tensor_wrap(uop_cast(x, out), a->device));
  uop *m = uop1(OP_DETACH, x->dtype, scan(x, ax, OP_MAX), arg_none());
  m = mt_where(mt_isinf(m), mt_c(m, 0), m);
  int64_t wsh[TG_MAX_DIMS * 2], msh[TG_MAX_DIMS * 2];
  uop *later;
  uop *xj = window_of(x, ax, wsh, &later);
  for (int i = 0, k = 0; i < x->ndim; i++) { msh[k++] = x->shape[i]; if (i == ax) msh[k++] = 1; }
  uop *mi = mv_expand(mv_reshape(m, msh, x->ndim + 1), wsh, x->ndim + 1);
  uop *e = mt_exp(mt_where(later, mt_c(xj, -INFINITY), mt_sub(xj, mi)));
  uop *r = mt_add(mt_log(mt_reduce1(e, OP_ADD, ax + 1, false)), m);
  API_RETURN(tensor_wrap(uop_cast(r, out), a->device));
}

/* ---- sorting */

/* p sorts before q ignoring position: p < q, NaN after every number */
static uop *less(uop *p, uop *q) {
  uop *r = mt_lt(p, q);
  if (dt_is_float(p->dtype)) r = mt_or(r, mt_and(mt_not(mt_isnan(p)), mt_isnan(q)));
  return r;
}
static uop *same(uop *p, uop *q) {
  uop *r = mt_eq(p, q);
  if (dt_is_float(p->dtype)) r = mt_or(r, mt_and(mt_isnan(p), mt_isnan(q)));
  return r;
}

/* The first k of x sorted along ax (values; int32 positions into *idx). */
static uop *sort_uop(uop *x, int ax, bool descending, int64_t k, uop **idx) {
  int nd = x->ndim;
  int64_t n = x->shape[ax], wsh[TG_MAX_DIMS * 2], ish[TG_MAX_DIMS * 2], jsh[TG_MAX_DIMS * 2];
  for (int i = 0, q = 0; i < nd; i++) {
    if (i == ax) { wsh[q] = n; ish[q] = n; jsh[q++] = 1; }
    wsh[q] = x->shape[i]; ish[q] = i == ax ? 1 : x->shape[i]; jsh[q++] = x->shape[i];
  }
  /* rank[i] = #{j : x[j] sorts before x[i]} + #{j < i : x[j] ties x[i]} */
  uop *xi = mv_expand(mv_reshape(x, ish, nd + 1), wsh, nd + 1);   /* x[i] along ax */
  uop *xj = mv_expand(mv_reshape(x, jsh, nd + 1), wsh, nd + 1);   /* x[j] along ax+1 */
  uop *ai = mt_arange_along(n, ax, nd + 1, wsh), *aj = mt_arange_along(n, ax + 1, nd + 1, wsh);
  uop *before = mt_or(descending ? less(xi, xj) : less(xj, xi), mt_and(same(xj, xi), mt_lt(aj, ai)));
  uop *rank = mt_reduce1(uop_cast(before, DT_I32), OP_ADD, ax + 1, false);
  /* out[r] = the x[i] with rank[i] == r, for r < k */
  int64_t osh[TG_MAX_DIMS * 2];
  for (int i = 0, q = 0; i < nd; i++) {
    if (i == ax) osh[q++] = k;
    osh[q++] = i == ax ? n : x->shape[i];
  }
  uop *rk = mv_expand(mv_reshape(rank, jsh, nd + 1), osh, nd + 1);
  uop *xv = mv_expand(mv_reshape(x, jsh, nd + 1), osh, nd + 1);
  uop *r = uop_cast(mt_arange_along(k, ax, nd + 1, osh), DT_I32);
  uop *hit = mt_eq(rk, r);
  /* MAX over one hit and the minimum elsewhere: exact for every value (-0.0 too) */
  uop *vals = mt_reduce1(mt_where(hit, xv, mt_min_value(xv)), OP_MAX, ax + 1, false);
  if (idx) {
    uop *pos = uop_cast(mt_arange_along(n, ax + 1, nd + 1, osh), DT_I32);
    *idx = mt_reduce1(mt_where(hit, pos, mt_c(pos, 0)), OP_ADD, ax + 1, false);
  }
  return vals;
}

static tg_tensor *sort_impl(tg_tensor *a, int axis, bool descending, int64_t k, tg_tensor **indices, const char *name) {
  int ax = mt_scan_axis(axis, a->u->ndim, name);
  if (ax < 0) return NULL;
  int64_t n = a->u->ndim ? a->u->shape[ax] : 1;
  if (k < 0) k = n;
  else if (k > n) TG_FAIL("%s: k=%lld out of range for axis %d of size %lld", name, (long long)k, axis, (long long)n);
  API_BEGIN;
  uop *x = a->u;
  if (x->ndim == 0) {
    if (indices) *indices = tensor_wrap(mt_ct(x, 0, DT_I32), a->device);
    API_RETURN(tensor_wrap(x, a->device));
  }
  int64_t sh[TG_MAX_DIMS], st[TG_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) { st[i] = 0; sh[i] = i == ax ? k : x->shape[i]; }
  if (has_zero_dim(x) || k == 0 || n == 1) {
    uop *v = mv_shrink(x, st, sh);
    if (indices) *indices = tensor_wrap(mt_ct(v, 0, DT_I32), a->device);
    API_RETURN(tensor_wrap(v, a->device));
  }
  if (!window_fits(x, ax, true, name)) API_RETURN(NULL);   /* sort_uop compares every pair along the axis */
  uop *idx = NULL;
  uop *v = sort_uop(x, ax, descending, k, indices ? &idx : NULL);
  tg_tensor *r = tensor_wrap(v, a->device);
  if (indices) *indices = tensor_wrap(idx, a->device);
  API_RETURN(r);
}

tg_tensor *tg_sort(tg_tensor *a, int axis, bool descending, tg_tensor **indices) {
  if (indices) *indices = NULL;
  NEED(a, "tg_sort");
  return sort_impl(a, axis, descending, -1, indices, "tg_sort");
}
tg_tensor *tg_argsort(tg_tensor *a, int axis, bool descending) {
  NEED(a, "tg_argsort");
  tg_scope_begin();
  tg_tensor *idx = NULL;
  tg_tensor *v = sort_impl(a, axis, descending, -1, &idx, "tg_argsort");
  if (v) tg_keep(idx);
  tg_scope_end();
  return v ? idx : NULL;
}
tg_tensor *tg_topk(tg_tensor *a, int64_t k, int axis, bool largest, bool sorted, tg_tensor **indices) {
  if (indices) *indices = NULL;
  NEED(a, "tg_topk");
  if (k < 0) TG_FAIL("tg_topk: k=%lld must be non-negative", (long long)k);
  (void)sorted;   /* always sorted */
  return sort_impl(a, axis, largest, k, indices, "tg_topk");
}
