/* indexing.c: indexing with integer tensors (tinygrad's getitem: a one-hot
 * compare arange == index and a sum), setitem, index_select, and the
 * triangle/diagonal/one-hot ops. */
#include <math.h>
#include "tensor/indexing.h"

/* ---------------------------------------------------------------- planning an index */

#define MAX_IDX 64

/* An index split into its basic part (tensors replaced by whole slices,
 * applied with tg_getitem) and the tensors, with the axis of the basic
 * result that each one indexes. */
typedef struct {
  tg_index basic[MAX_IDX];
  int n, ntens;
  tg_tensor *tens[TG_MAX_DIMS];
  int dims[TG_MAX_DIMS];
} adv_plan;

static bool plan_index(const tg_tensor *a, const tg_aindex *idx, int n, adv_plan *p, const char *op) {
  if (n < 0 || n > MAX_IDX || (n && !idx)) { tg_seterr("%s: bad number of indices %d", op, n); return false; }
  int nd = a->u->ndim, used = 0, ell = 0;
  p->n = n; p->ntens = 0;
  for (int i = 0; i < n; i++) {
    if (idx[i].basic.kind == TG_IDX_TENSOR && !idx[i].tensor) { tensor_null_input(op); return false; }
    if (idx[i].tensor) {
      if (!mvx_check_index(idx[i].tensor, "an index tensor", op)) return false;
      if (idx[i].tensor->device != a->device) { tg_seterr("%s: index tensor on %s, tensor on %s", op, idx[i].tensor->device, a->device); return false; }
      used++;
      continue;
    }
    tg_index_kind k = idx[i].basic.kind;
    if (k == TG_IDX_INT || k == TG_IDX_SLICE) used++;
    else if (k == TG_IDX_ELLIPSIS) ell++;
    else if (k != TG_IDX_NEWAXIS) { tg_seterr("%s: bad index kind %d at position %d", op, (int)k, i); return false; }
  }
  if (ell > 1) { tg_seterr("%s: more than one ellipsis", op); return false; }
  if (used > nd) { tg_seterr("%s: %d indices for a %d-D tensor", op, used, nd); return false; }
  int out = 0;
  for (int i = 0; i < n; i++) {
    if (idx[i].tensor) {
      if (p->ntens >= TG_MAX_DIMS) { tg_seterr("%s: too many index tensors", op); return false; }
      p->basic[i] = TG_ALLIDX;
      p->tens[p->ntens] = idx[i].tensor;
      p->dims[p->ntens++] = out++;
      continue;
    }
    p->basic[i] = idx[i].basic;
    switch (idx[i].basic.kind) {
      case TG_IDX_NEWAXIS: case TG_IDX_SLICE: out++; break;
      case TG_IDX_ELLIPSIS: out += nd - used; break;
      default: break;
    }
  }
  return true;
}

/* Everything tensor indexing of x (the basic-indexed tensor) needs: the
 * broadcast index shape, the AND of the one-hot masks (broadcastable to
 * pre_reduce = x.shape[:d0] + big + x.shape[d0:]), and the result's layout. */
typedef struct {
  int64_t big[TG_MAX_DIMS];
  int nb;
  tg_tensor *mask;
  bool permuted;       /* tensor axes not adjacent: big goes first */
} adv_masks;

static bool make_masks(tg_tensor *x, const adv_plan *p, adv_masks *m, const char *op) {
  int xn = x->u->ndim, d0 = p->dims[0];
  m->nb = 0;
  for (int k = 0; k < p->ntens; k++) {
    int64_t tmp[TG_MAX_DIMS];
    const uop *t = p->tens[k]->u;
    int nb = mvx_broadcast(m->big, m->nb, t->shape, t->ndim, tmp, op);
    if (nb < 0) return false;
    memcpy(m->big, tmp, sizeof(int64_t) * (size_t)nb);
    m->nb = nb;
  }
  if (xn + m->nb > TG_MAX_DIMS) { tg_seterr("%s: indexing needs more than %d dimensions", op, TG_MAX_DIMS); return false; }
  m->mask = NULL;
  for (int k = 0; k < p->ntens; k++) {
    tg_tensor *t = p->tens[k];
    int64_t s = x->u->shape[p->dims[k]];
    if (s == 0 && tg_numel(t) > 0) { tg_seterr("%s: index into axis %d of size 0 (every index is out of range)", op, p->dims[k]); return false; }
    tg_dtype dt = tg_dtype_of(t);
    t = tg_cast(t, dt == TG_I64 || dt == TG_U64 || dt == TG_U32 || s > INT32_MAX ? TG_I64 : TG_I32);
    if (!tg_dtype_is_unsigned(dt)) t = tg_where(tg_lt(t, tg_scalar(0, tg_dtype_of(t))), tg_adds(t, (double)s), t);
    int64_t sh[TG_MAX_DIMS];
    int ns = t->u->ndim;
    memcpy(sh, t->u->shape, sizeof(int64_t) * (size_t)ns);
    for (int i = 0; i < xn - d0; i++) sh[ns + i] = 1;
    t = mvx_reshape(t, sh, ns + xn - d0);
    tg_tensor *mk = mvx_one_hot_along(t, s, xn - p->dims[k] - 1);
    m->mask = m->mask ? tg_logical_and(m->mask, mk) : mk;
  }
  bool consecutive = true;
  for (int k = 1; k < p->ntens; k++) consecutive &= p->dims[k] == p->dims[k - 1] + 1;
  m->permuted = d0 != 0 && p->ntens > 1 && !consecutive;
  return m->mask != NULL;
}

/* The order that moves big (at d0 .. d0+nb) to the front of a tensor of nd axes. */
static tg_axes big_first(int d0, int nb, int nd) {
  tg_axes o = { nd, { 0 } };
  int j = 0;
  for (int i = 0; i < nb; i++) o.a[j++] = d0 + i;
  for (int i = 0; i < d0; i++) o.a[j++] = i;
  for (int i = d0 + nb; i < nd; i++) o.a[j++] = i;
  return o;
}

static tg_tensor *adv_get(tg_tensor *x, const adv_plan *p, const char *op) {
  adv_masks m;
  if (!make_masks(x, p, &m, op)) return NULL;
  int xn = x->u->ndim, d0 = p->dims[0];
  int64_t sh[TG_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < d0; i++) sh[k++] = x->u->shape[i];
  for (int i = 0; i < m.nb; i++) sh[k++] = 1;
  for (int i = d0; i < xn; i++) sh[k++] = x->u->shape[i];
  tg_tensor *xr = mvx_reshape(x, sh, k);
  tg_axes sum_axes = { p->ntens, { 0 } };
  for (int i = 0; i < p->ntens; i++) sum_axes.a[i] = p->dims[i] + m.nb;
  tg_tensor *r = tg_where(m.mask, xr, tg_scalar(0, tg_dtype_of(x)));
  r = tg_cast(tg_sum(r, sum_axes, false), tg_dtype_of(x));
  if (m.permuted) r = tg_permute(r, big_first(d0, m.nb, tg_ndim(r)));
  return r;
}

tg_tensor *tg_getitem_adv(tg_tensor *a, const tg_aindex *idx, int n) {
  NEED(a, "tg_getitem_adv");
  adv_plan p;
  if (!plan_index(a, idx, n, &p, "tg_getitem_adv")) return NULL;
  if (p.ntens == 0) return tg_getitem(a, p.basic, n);
  tg_scope_begin();
  tg_tensor *x = tg_getitem(a, p.basic, n);
  return mvx_keep(x ? adv_get(x, &p, "tg_getitem_adv") : NULL);
}

/* ---------------------------------------------------------------- setitem */

/* value without leading size-1 axes beyond nd (torch strips them) */
static tg_tensor *strip_leading_ones(tg_tensor *v, int nd) {
  while (v && v->u->ndim > nd && v->u->shape[0] == 1) v = mvx_reshape(v, v->u->shape + 1, v->u->ndim - 1);
  return v;
}

tg_tensor *tg_setitem(tg_tensor *a, const tg_aindex *idx, int n, tg_tensor *value) {
  NEED(a, "tg_setitem"); NEED(value, "tg_setitem");
  const char *op = "tg_setitem";
  adv_plan p;
  if (!plan_index(a, idx, n, &p, op)) return NULL;
  if (value->device != a->device) TG_FAIL("tg_setitem: value on %s, tensor on %s", value->device, a->device);
  if (!mvx_assignable(a)) {
    if (tg_realize(a) < 0) return NULL;
    if (!mvx_assignable(a)) TG_FAIL("tg_setitem: the tensor is not writable memory even after realizing it");
  }
  tg_scope_begin();
  tg_tensor *view = tg_getitem(a, p.basic, n);
  if (!view) return mvx_keep(NULL);
  int xn = view->u->ndim;
  tg_tensor *v = tg_cast(value, tg_dtype_of(a));
  tg_tensor *r = NULL;
  if (p.ntens == 0) {
    v = strip_leading_ones(v, xn);
    r = tg_assign(view, v);
  } else {
    adv_masks m;
    if (!make_masks(view, &p, &m, op)) return mvx_keep(NULL);
    int d0 = p.dims[0];
    /* the shape view[idx] has, in the order tg_getitem_adv gives */
    int64_t res[TG_MAX_DIMS], tmp[TG_MAX_DIMS];
    int nr = 0;
    for (int i = 0; i < d0; i++) res[nr++] = view->u->shape[i];
    for (int i = 0; i < m.nb; i++) res[nr++] = m.big[i];
    for (int i = d0; i < xn; i++) {
      bool indexed = false;
      for (int k = 0; k < p.ntens; k++) indexed |= p.dims[k] == i;
      if (!indexed) res[nr++] = view->u->shape[i];
    }
    if (m.permuted) {
      tg_axes o = big_first(d0, m.nb, nr);
      for (int i = 0; i < nr; i++) tmp[i] = res[o.a[i]];
    } else memcpy(tmp, res, sizeof(int64_t) * (size_t)nr);
    v = strip_leading_ones(v, nr);
    tg_shape rs = { nr, { 0 } };
    for (int i = 0; i < nr; i++) rs.d[i] = tmp[i];
    v = tg_expand(v, rs);
    if (v && m.permuted) {   /* back to x.shape[:d0] + big + rest */
      tg_axes o = big_first(d0, m.nb, nr), inv = { nr, { 0 } };
      for (int i = 0; i < nr; i++) inv.a[o.a[i]] = i;
      v = tg_permute(v, inv);
    }
    /* values and mask as x.shape[:d0] + (K) + x.shape[d0:] (1 at indexed axes for values) */
    int64_t vs[TG_MAX_DIMS], full[TG_MAX_DIMS], flat[TG_MAX_DIMS];
    int nv = 0, nf = 0, nfl = 0;
    int64_t K = 1;
    for (int i = 0; i < m.nb; i++) K *= m.big[i];
    for (int i = 0; i < d0; i++) { vs[nv++] = full[nf++] = flat[nfl++] = view->u->shape[i]; }
    for (int i = 0; i < m.nb; i++) { vs[nv++] = full[nf++] = m.big[i]; }
    flat[nfl++] = K;
    for (int i = d0; i < xn; i++) {
      bool indexed = false;
      for (int k = 0; k < p.ntens; k++) indexed |= p.dims[k] == i;
      vs[nv++] = indexed ? 1 : view->u->shape[i];
      full[nf++] = flat[nfl++] = view->u->shape[i];
    }
    tg_shape fs = { nf, { 0 } };
    for (int i = 0; i < nf; i++) fs.d[i] = full[i];
    tg_tensor *vals = mvx_reshape(tg_expand(mvx_reshape(v, vs, nv), fs), flat, nfl);
    tg_tensor *mask = mvx_reshape(tg_expand(m.mask, fs), flat, nfl);
    r = tg_assign(view, mvx_merge_last(view, vals, mask, d0));
  }
  tg_scope_end();
  return r ? a : NULL;
}

tg_tensor *tg_index_select(tg_tensor *a, int axis, tg_tensor *index) {
  NEED(a, "tg_index_select"); NEED(index, "tg_index_select");
  int nd = a->u->ndim;
  if (!mvx_check_index(index, "index", "tg_index_select")) return NULL;
  if (index->u->ndim > 1) TG_FAIL("tg_index_select: index must be 0-D or 1-D, got %d-D", index->u->ndim);
  tg_scope_begin();
  if (nd == 0) {   /* torch: a 0-D tensor is indexed like a 1-element one */
    if (axis != 0 && axis != -1) { tg_seterr("tg_index_select: axis %d out of range for a 0-D tensor", axis); return mvx_keep(NULL); }
    tg_tensor *r = tg_index_select(tg_reshape(a, TG_SHAPE(1)), 0, index);
    return mvx_keep(r ? tg_reshape(r, tg_shape_of(index)) : NULL);
  }
  int ax = norm_axis(axis, nd, "tg_index_select");
  if (ax < 0) return mvx_keep(NULL);
  tg_aindex ix[TG_MAX_DIMS];
  for (int i = 0; i < ax; i++) ix[i] = TG_AI(TG_ALLIDX);
  ix[ax] = TG_AT(tg_reshape(index, TG_SHAPE(-1)));
  return mvx_keep(tg_getitem_adv(a, ix, ax + 1));
}

/* ---------------------------------------------------------------- triangles, diagonals, one-hot */

static tg_tensor *tri(tg_tensor *a, int64_t k, bool upper, const char *op) {
  NEED(a, op);
  int nd = a->u->ndim;
  if (nd < 2) TG_FAIL("%s: needs at least 2 dimensions, got %d", op, nd);
  int64_t r = a->u->shape[nd - 2], c = a->u->shape[nd - 1];
  if (k > c + 1) k = c + 1;
  if (k < -r - 1) k = -r - 1;
  tg_dtype it = r + c + 2 > INT32_MAX ? TG_I64 : TG_I32;
  tg_scope_begin();
  tg_tensor *rows = tg_adds(tg_reshape(tg_arange(0, (double)r, 1, it), TG_SHAPE(r, 1)), (double)k);
  tg_tensor *cols = tg_arange(0, (double)c, 1, it);
  tg_tensor *keep = upper ? tg_ge(cols, rows) : tg_le(cols, rows);
  return mvx_keep(tg_where(keep, a, tg_scalar(0, tg_dtype_of(a))));
}
tg_tensor *tg_tril(tg_tensor *a, int64_t k) { return tri(a, k, false, "tg_tril"); }
tg_tensor *tg_triu(tg_tensor *a, int64_t k) { return tri(a, k, true, "tg_triu"); }

tg_tensor *tg_diagonal(tg_tensor *a, int64_t offset, int axis1, int axis2) {
  NEED(a, "tg_diagonal");
  int nd = a->u->ndim;
  int d1 = norm_axis(axis1, nd, "tg_diagonal"), d2 = d1 < 0 ? -1 : norm_axis(axis2, nd, "tg_diagonal");
  if (d1 < 0 || d2 < 0) return NULL;
  if (d1 == d2) TG_FAIL("tg_diagonal: axis1 and axis2 are both axis %d", d1);
  tg_axes perm = { nd, { 0 } };
  int m = 0;
  for (int i = 0; i < nd; i++) if (i != d1 && i != d2) perm.a[m++] = i;
  perm.a[m++] = d1; perm.a[m++] = d2;
  int64_t R = a->u->shape[d1], C = a->u->shape[d2];
  if (offset > C) offset = C;   /* past the matrix either way: an empty diagonal (and -offset stays defined) */
  if (offset < -R) offset = -R;
  int64_t d = offset >= 0 ? (R < C - offset ? R : C - offset) : (R + offset < C ? R + offset : C);
  if (d < 0) d = 0;
  int64_t ro = offset < 0 ? -offset : 0, co = offset > 0 ? offset : 0;
  tg_scope_begin();
  tg_tensor *x = tg_permute(a, perm);
  int64_t st[TG_MAX_DIMS], en[TG_MAX_DIMS], sh[TG_MAX_DIMS];
  for (int i = 0; i < nd - 2; i++) { st[i] = 0; en[i] = sh[i] = x->u->shape[i]; }
  if (d == 0) {
    st[nd - 2] = st[nd - 1] = en[nd - 2] = en[nd - 1] = 0;
    sh[nd - 2] = 0;
    return mvx_keep(mvx_reshape(tg_shrink(x, st, en), sh, nd - 1));
  }
  st[nd - 2] = ro; en[nd - 2] = ro + d; st[nd - 1] = co; en[nd - 1] = co + d;
  x = tg_shrink(x, st, en);
  /* (d, d) flattened, padded to d*(d+1), viewed as (d, d+1): column 0 is the diagonal */
  sh[nd - 2] = d * d;
  x = mvx_reshape(x, sh, nd - 1);
  int64_t pads[2 * TG_MAX_DIMS] = { 0 };
  pads[2 * (nd - 2) + 1] = d;
  x = tg_pad(x, pads, nd - 1, 0);
  sh[nd - 2] = d; sh[nd - 1] = d + 1;
  x = mvx_reshape(x, sh, nd);
  en[nd - 2] = d; st[nd - 2] = 0; st[nd - 1] = 0; en[nd - 1] = 1;
  x = tg_shrink(x, st, en);
  return mvx_keep(mvx_reshape(x, sh, nd - 1));
}

tg_tensor *tg_diag(tg_tensor *a, int64_t k) {
  NEED(a, "tg_diag");
  int nd = a->u->ndim;
  if (nd == 2) return tg_diagonal(a, k, 0, 1);
  if (nd != 1) TG_FAIL("tg_diag: expects a 1-D or 2-D tensor, got %d-D", nd);
  int64_t n = a->u->shape[0], nn;
  if (tg_mul_overflow_i64(n, n, &nn) || nn > TG_MAX_NUMEL) TG_FAIL("tg_diag: a (%lld, %lld) matrix has more than 2^59 elements", (long long)n, (long long)n);
  if (k > TG_MAX_NUMEL || k < -TG_MAX_NUMEL) TG_FAIL("tg_diag: diagonal %lld is past 2^59", (long long)k);
  int64_t ak = k < 0 ? -k : k;
  tg_scope_begin();
  /* (n, 1) padded to (n, n+1), flattened, first n*n: a[i] lands on (i, i) */
  int64_t p1[4] = { 0, 0, 0, n };
  tg_tensor *x = tg_pad(tg_reshape(a, TG_SHAPE(n, 1)), p1, 2, 0);
  int64_t st = 0, en = n * n;
  x = tg_reshape(tg_shrink(tg_reshape(x, TG_SHAPE(-1)), &st, &en), TG_SHAPE(n, n));
  int64_t p2[4] = { k < 0 ? ak : 0, k > 0 ? ak : 0, k > 0 ? ak : 0, k < 0 ? ak : 0 };
  return mvx_keep(tg_pad(x, p2, 2, 0));
}

tg_tensor *tg_one_hot(tg_tensor *a, int64_t num_classes) {
  NEED(a, "tg_one_hot");
  if (!mvx_check_index(a, "the input", "tg_one_hot")) return NULL;
  if (num_classes < -1) TG_FAIL("tg_one_hot: num_classes must be >= 0 (or -1 to infer), got %lld", (long long)num_classes);
  if (a->u->ndim + 1 > TG_MAX_DIMS) TG_FAIL("tg_one_hot: too many dimensions");
  tg_scope_begin();
  if (num_classes == -1) {
    if (tg_numel(a) == 0) { tg_seterr("tg_one_hot: cannot infer num_classes from an empty tensor"); return mvx_keep(NULL); }
    double mx = tg_item(tg_max(a, TG_ALL, false));
    if (isnan(mx)) return mvx_keep(NULL);
    num_classes = mx < 0 ? 0 : (int64_t)mx + 1;
  }
  tg_tensor *x = tg_unsqueeze(a, -1);
  return mvx_keep(tg_cast(mvx_one_hot_along(x, num_classes, 0), TG_I32));
}
