/* gather_scatter.c: gather, scatter, scatter_reduce and masked_select, like
 * tinygrad's: the index becomes a one-hot mask along a new last axis
 * (index == arange), and a where plus a reduce over that axis does the rest. */
#include <math.h>
#include "tensor/indexing.h"
#include "tensor/shard.h"

/* An integer index as int32/int64 (so comparisons with an arange stay integer). */
static tg_tensor *index_int(tg_tensor *t) {
  tg_dtype dt = tg_dtype_of(t);
  return tg_cast(t, dt == TG_I64 || dt == TG_U64 || dt == TG_U32 ? TG_I64 : TG_I32);
}

static bool same_device(const tg_tensor *a, const tg_tensor *b, const char *what, const char *op) {
  if (a->device == b->device) return true;
  /* an index that reads no memory (positions from a variable and an
   * arange) joins a sharded tensor: it is evaluated on each part's device */
  if (shard_is_multi_name(a->device) && tensor_reads_no_memory(b)) return true;
  tg_seterr("%s: %s on %s, tensor on %s", op, what, b->device, a->device);
  return false;
}

tg_tensor *tg_gather(tg_tensor *a, int axis, tg_tensor *index) {
  NEED(a, "tg_gather"); NEED(index, "tg_gather");
  const char *op = "tg_gather";
  if (!mvx_check_index(index, "index", op) || !same_device(a, index, "index", op)) return NULL;
  int nd = a->u->ndim;
  if (index->u->ndim != nd) TG_FAIL("tg_gather: index is %d-D but the tensor is %d-D (they must match)", index->u->ndim, nd);
  if (nd == 0) {
    if (axis != 0 && axis != -1) TG_FAIL("tg_gather: axis %d out of range for a 0-D tensor", axis);
    tg_scope_begin();
    tg_tensor *r = tg_gather(tg_reshape(a, TG_SHAPE(1)), 0, tg_reshape(index, TG_SHAPE(1)));
    return mvx_keep(r ? tg_reshape(r, TG_SHAPE()) : NULL);
  }
  int ax = norm_axis(axis, nd, op);
  if (ax < 0) return NULL;
  char s1[160], s2[160];
  for (int d = 0; d < nd; d++)
    if (d != ax && index->u->shape[d] > a->u->shape[d])
      TG_FAIL("tg_gather: index shape %s is larger than the tensor's %s at axis %d", mvx_shape_str(index->u->shape, nd, s1, 160), mvx_shape_str(a->u->shape, nd, s2, 160), d);
  int64_t n = a->u->shape[ax];
  if (n == 0 && tg_numel(index) > 0) TG_FAIL("tg_gather: index into axis %d of size 0 (every index is out of range)", ax);
  tg_scope_begin();
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  for (int d = 0; d < nd; d++) en[d] = d == ax ? n : index->u->shape[d];
  /* x: index's shape with 1 on axis, and the n candidates on a new last axis */
  tg_tensor *x = tg_transpose(tg_unsqueeze(tg_shrink(a, st, en), -1), -1, ax);
  tg_tensor *mask = mvx_one_hot_along(tg_unsqueeze(index_int(index), -1), n, 0);
  tg_tensor *r = tg_sum(tg_where(mask, x, tg_scalar(0, tg_dtype_of(a))), TG_AXES(-1), false);
  return mvx_keep(tg_cast(r, tg_dtype_of(a)));
}

tg_tensor *tg_take(tg_tensor *a, tg_tensor *index) {
  NEED(a, "tg_take"); NEED(index, "tg_take");
  if (!mvx_check_index(index, "index", "tg_take") || !same_device(a, index, "index", "tg_take")) return NULL;
  if (a->u->ndim < 1) TG_FAIL("tg_take: the tensor is 0-D (it needs rows)");
  if (index->u->ndim + a->u->ndim - 1 > TG_MAX_DIMS) TG_FAIL("tg_take: the result would have more than %d dimensions", TG_MAX_DIMS);
  API_BEGIN;
  uop *ix = uop_cast(index->u, tg_dtype_of(index) == TG_I64 || tg_dtype_of(index) == TG_U64 ? DT_I64 : DT_I32);
  API_RETURN(tensor_wrap(uop2(OP_TAKE, a->u->dtype, a->u, ix, arg_none()), a->device));
}

/* tinygrad's _pre_scatter: src (cut to index's shape) and the one-hot mask,
 * both as a.shape + (index.shape[axis],): entry [..., i at axis, ..., j] is
 * src at position j along axis, sent to i. Returns the normalized axis or -1. */
static int pre_scatter(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, tg_tensor **srcE, tg_tensor **maskE, const char *op) {
  if (!mvx_check_index(index, "index", op) || !same_device(a, index, "index", op) || !same_device(a, src, "src", op)) return -1;
  int nd = a->u->ndim;
  if (index->u->ndim != nd || src->u->ndim != nd)
    return tg_seterr("%s: the tensor, index and src must have the same number of dimensions (got %d, %d, %d)", op, nd, index->u->ndim, src->u->ndim);
  int ax = norm_axis(axis, nd, op);
  if (ax < 0) return -1;
  if (tg_dtype_of(src) != tg_dtype_of(a))
    return tg_seterr("%s: src is %s but the tensor is %s (they must match)", op, tg_dtype_name(tg_dtype_of(src)), tg_dtype_name(tg_dtype_of(a)));
  char s1[160], s2[160], s3[160];
  for (int d = 0; d < nd; d++) {
    int64_t i = index->u->shape[d];
    if (i > src->u->shape[d] || (d != ax && i > a->u->shape[d]))
      return tg_seterr("%s: index shape %s must be no larger than src %s, and than the tensor %s except on axis %d", op,
                       mvx_shape_str(index->u->shape, nd, s1, 160), mvx_shape_str(src->u->shape, nd, s2, 160), mvx_shape_str(a->u->shape, nd, s3, 160), ax);
  }
  int64_t n = a->u->shape[ax];
  if (n == 0 && tg_numel(index) > 0) return tg_seterr("%s: index into axis %d of size 0 (every index is out of range)", op, ax);
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  for (int d = 0; d < nd; d++) en[d] = index->u->shape[d];
  tg_tensor *s = tg_unsqueeze(tg_shrink(src, st, en), -1);
  tg_shape es = tg_shape_of(s);
  es.d[nd] = n;
  s = tg_transpose(tg_expand(s, es), -1, ax);
  tg_tensor *m = tg_transpose(mvx_one_hot_along(tg_unsqueeze(index_int(index), -1), n, 0), -1, ax);
  int64_t pads[2 * (TG_MAX_DIMS + 1)] = { 0 };
  for (int d = 0; d < nd; d++) if (d != ax) pads[2 * d + 1] = a->u->shape[d] - index->u->shape[d];
  *srcE = tg_pad(s, pads, nd + 1, 0);
  *maskE = tg_pad(m, pads, nd + 1, 0);
  return *srcE && *maskE ? ax : -1;
}

/* 0-D tensors scatter like 1-element ones */
typedef tg_tensor *(*scatter_fn)(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, int reduce, bool include_self);
static tg_tensor *scatter_0d(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, int reduce, bool include_self, scatter_fn f, const char *op) {
  if (axis != 0 && axis != -1) TG_FAIL("%s: axis %d out of range for a 0-D tensor", op, axis);
  if (index->u->ndim != 0 || src->u->ndim != 0) TG_FAIL("%s: the tensor, index and src must have the same number of dimensions (got 0, %d, %d)", op, index->u->ndim, src->u->ndim);
  tg_scope_begin();
  tg_tensor *r = f(tg_reshape(a, TG_SHAPE(1)), 0, tg_reshape(index, TG_SHAPE(1)), tg_reshape(src, TG_SHAPE(1)), reduce, include_self);
  return mvx_keep(r ? tg_reshape(r, TG_SHAPE()) : NULL);
}

static tg_tensor *scatter_impl(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, int reduce, bool include_self) {
  (void)reduce; (void)include_self;
  if (a->u->ndim == 0) return scatter_0d(a, axis, index, src, 0, false, scatter_impl, "tg_scatter");
  tg_scope_begin();
  tg_tensor *s, *m;
  int ax = pre_scatter(a, axis, index, src, &s, &m, "tg_scatter");
  if (ax < 0) return mvx_keep(NULL);
  return mvx_keep(mvx_merge_last(a, s, m, -1));
}

tg_tensor *tg_scatter(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src) {
  NEED(a, "tg_scatter"); NEED(index, "tg_scatter"); NEED(src, "tg_scatter");
  return scatter_impl(a, axis, index, src, 0, false);
}

tg_tensor *tg_scatter_value(tg_tensor *a, int axis, tg_tensor *index, double value) {
  NEED(a, "tg_scatter_value"); NEED(index, "tg_scatter_value");
  tg_scope_begin();
  tg_tensor *src = tg_full(tg_shape_of(index), value, tg_dtype_of(a));
  if (src && src->device != a->device) src = tg_to(src, a->device);
  return mvx_keep(src ? scatter_impl(a, axis, index, src, 0, false) : NULL);
}

/* floor(x / y) for integer tensors of one shape and dtype, y > 0 */
static tg_tensor *floor_div_pos(tg_tensor *x, tg_tensor *y) {
  API_BEGIN;
  uop *q = uop_alu(OP_IDIV, x->u, y->u), *r = uop_alu(OP_MOD, x->u, y->u);
  uop *neg = uop_alu(OP_CMPLT, r, const_like(0, r->dtype, r->shape, r->ndim));
  q = uop_where(neg, uop_alu(OP_SUB, q, const_like(1, q->dtype, q->shape, q->ndim)), q);
  API_RETURN(tensor_wrap(q, x->device));
}

static tg_tensor *scatter_reduce_impl(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, int reduce, bool include_self) {
  const char *op = "tg_scatter_reduce";
  if (reduce < TG_REDUCE_SUM || reduce > TG_REDUCE_AMIN) TG_FAIL("%s: unknown reduction %d", op, reduce);
  if (a->u->ndim == 0) return scatter_0d(a, axis, index, src, reduce, include_self, scatter_reduce_impl, op);
  tg_scope_begin();
  tg_tensor *s, *m;
  int ax = pre_scatter(a, axis, index, src, &s, &m, op);
  if (ax < 0) return mvx_keep(NULL);
  if (tg_numel(index) == 0) return mvx_keep(mvx_same(a));   /* nothing is sent anywhere */
  tg_dtype dt = tg_dtype_of(a);
  bool isf = tg_dtype_is_float(dt);
  tg_tensor *count = tg_sum(tg_cast(m, TG_I32), TG_AXES(-1), false);
  tg_tensor *hit = tg_gt(count, tg_scalar(0, TG_I32));
  /* a's value where it takes part; `fill` (the identity) where it does not */
#define BASE(fill) (include_self ? a : tg_where(hit, tg_scalar((fill), dt), a))
  tg_tensor *r = NULL;
  switch (reduce) {
    case TG_REDUCE_SUM:
      r = tg_add(tg_cast(tg_sum(tg_where(m, s, tg_scalar(0, dt)), TG_AXES(-1), false), dt), BASE(0));
      break;
    case TG_REDUCE_PROD:
      r = tg_mul(tg_prod(tg_where(m, s, tg_scalar(1, dt)), TG_AXES(-1), false), BASE(1));
      break;
    case TG_REDUCE_AMAX: {
      dtype_t d = dt_scalar(dt);
      double lo = isf ? -INFINITY : dt == TG_BOOL ? 0 : dt_min(d);
      r = tg_maximum(tg_max(tg_where(m, s, tg_scalar(lo, dt)), TG_AXES(-1), false), BASE(lo));
      break;
    }
    case TG_REDUCE_AMIN: {
      dtype_t d = dt_scalar(dt);
      double hi = isf ? INFINITY : dt == TG_BOOL ? 1 : dt_max(d);
      r = tg_minimum(tg_min(tg_where(m, s, tg_scalar(hi, dt)), TG_AXES(-1), false), BASE(hi));
      break;
    }
    case TG_REDUCE_MEAN: {
      tg_tensor *total = tg_add(tg_cast(tg_sum(tg_where(m, s, tg_scalar(0, dt)), TG_AXES(-1), false), dt), BASE(0));
      tg_tensor *cnt = include_self ? tg_adds(count, 1) : tg_where(hit, count, tg_scalar(1, TG_I32));
      if (isf) r = tg_div(total, tg_cast(cnt, dt));
      else {
        tg_shape sh = tg_shape_of(a);
        r = floor_div_pos(tg_expand(total, sh), tg_expand(tg_cast(cnt, dt), sh));
      }
      break;
    }
  }
#undef BASE
  return mvx_keep(r ? tg_cast(r, dt) : NULL);
}

tg_tensor *tg_scatter_reduce(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, tg_reduce_kind reduce, bool include_self) {
  NEED(a, "tg_scatter_reduce"); NEED(index, "tg_scatter_reduce"); NEED(src, "tg_scatter_reduce");
  return scatter_reduce_impl(a, axis, index, src, (int)reduce, include_self);
}

/* ---------------------------------------------------------------- masked_select */

tg_tensor *tg_masked_select(tg_tensor *a, tg_tensor *mask) {
  NEED(a, "tg_masked_select"); NEED(mask, "tg_masked_select");
  const char *op = "tg_masked_select";
  if (tg_dtype_of(mask) != TG_BOOL) TG_FAIL("%s: mask must be bool, got %s", op, tg_dtype_name(tg_dtype_of(mask)));
  if (!same_device(a, mask, "mask", op)) return NULL;
  int64_t sh[TG_MAX_DIMS];
  int nd = mvx_broadcast(a->u->shape, a->u->ndim, mask->u->shape, mask->u->ndim, sh, op);
  if (nd < 0) return NULL;
  tg_scope_begin();
  tg_shape s = { nd, { 0 } };
  for (int i = 0; i < nd; i++) s.d[i] = sh[i];
  tg_tensor *x = tg_reshape(tg_expand(a, s), TG_SHAPE(-1));
  tg_tensor *mk = tg_reshape(tg_expand(mask, s), TG_SHAPE(-1));
  int64_t n = tg_numel(x);
  double cnt = n ? tg_item(tg_sum(mk, TG_ALL, false)) : 0;
  if (isnan(cnt)) return mvx_keep(NULL);
  int64_t c = (int64_t)cnt;
  if (c == 0) { int64_t st = 0, en = 0; return mvx_keep(tg_shrink(x, &st, &en)); }
  /* rank[i] = number of true entries up to i (a triangular sum), then the
   * output k takes the element whose rank is k + 1 */
  tg_tensor *ar = mvx_arange(n);
  tg_tensor *upto = tg_le(tg_reshape(ar, TG_SHAPE(1, n)), tg_reshape(ar, TG_SHAPE(n, 1)));   /* [i][j]: j <= i */
  tg_tensor *rank = tg_sum(tg_cast(tg_logical_and(upto, mk), TG_I32), TG_AXES(1), false);
  tg_tensor *k = tg_adds(tg_reshape(mvx_arange(c), TG_SHAPE(c, 1)), 1);
  tg_tensor *sel = tg_logical_and(tg_eq(k, tg_cast(rank, tg_dtype_of(k))), mk);
  tg_tensor *r = tg_sum(tg_where(sel, x, tg_scalar(0, tg_dtype_of(a))), TG_AXES(1), false);
  return mvx_keep(tg_cast(r, tg_dtype_of(a)));
}
