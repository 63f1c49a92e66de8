/* movement.c: reshape, permute, expand, pad, shrink, flip and indexing.
 * These only build movement UOps; the scheduler turns them into index math. */
#include "tensor/tensor.h"

static char *shape_str(const int64_t *s, int nd, char *buf, int n) {
  int k = snprintf(buf, (size_t)n, "(");
  for (int i = 0; i < nd && k < n - 24; i++) k += snprintf(buf + k, (size_t)(n - k), i ? ",%lld" : "%lld", (long long)s[i]);
  snprintf(buf + k, (size_t)(n - k), ")");
  return buf;
}

tg_tensor *tg_reshape(tg_tensor *a, tg_shape shape) {
  NEED(a, "tg_reshape");
  if (shape.ndim < 0 || shape.ndim > TG_MAX_DIMS) TG_FAIL("tg_reshape: bad number of dimensions %d", shape.ndim);
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.ndim; i++) {
    if (shape.d[i] == -1) {
      if (infer >= 0) TG_FAIL("tg_reshape: only one dimension can be -1");
      infer = i;
    } else if (shape.d[i] < 0) TG_FAIL("tg_reshape: negative dimension %lld", (long long)shape.d[i]);
  }
  {   /* the known dims' product, checked (a -1 counts as 1) */
    int64_t kd[TG_MAX_DIMS] = { 0 };
    for (int i = 0; i < shape.ndim; i++) kd[i] = i == infer ? 1 : shape.d[i];
    if (!shape_ok(kd, shape.ndim, "tg_reshape")) return NULL;
    known = shape_numel(kd, shape.ndim);
  }
  int64_t n = tg_numel(a);
  if (infer >= 0) {
    if (known == 0 || n % known) { char b1[128]; TG_FAIL("tg_reshape: cannot infer -1 to reshape %s into a multiple of %lld", shape_str(a->u->shape, a->u->ndim, b1, 128), (long long)known); }
    shape.d[infer] = n / known;
    known = n;
  }
  if (known != n) {
    char b1[128], b2[128];
    TG_FAIL("tg_reshape: cannot reshape %s (%lld elements) to %s", shape_str(a->u->shape, a->u->ndim, b1, 128), (long long)n, shape_str(shape.d, shape.ndim, b2, 128));
  }
  API_BEGIN;
  API_RETURN(tensor_wrap(mv_reshape(a->u, shape.d, shape.ndim), a->device));
}

tg_tensor *tg_permute(tg_tensor *a, tg_axes order) {
  NEED(a, "tg_permute");
  int nd = a->u->ndim;
  if (order.n != nd) TG_FAIL("tg_permute: %d axes given for a %d-D tensor", order.n, nd);
  int64_t ord[TG_MAX_DIMS];
  bool seen[TG_MAX_DIMS] = { 0 };
  for (int i = 0; i < nd; i++) {
    int ax = norm_axis(order.a[i], nd, "tg_permute");
    if (ax < 0) return NULL;
    if (seen[ax]) TG_FAIL("tg_permute: axis %d repeated", ax);
    seen[ax] = true; ord[i] = ax;
  }
  API_BEGIN;
  API_RETURN(tensor_wrap(mv_permute(a->u, ord), a->device));
}

tg_tensor *tg_expand(tg_tensor *a, tg_shape shape) {
  NEED(a, "tg_expand");
  int nd = shape.ndim, src = a->u->ndim;
  if (nd < src || nd > TG_MAX_DIMS) TG_FAIL("tg_expand: cannot expand %d-D to %d-D", src, nd);
  int64_t pre[TG_MAX_DIMS], out[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) {
    int64_t s = i < nd - src ? 1 : a->u->shape[i - (nd - src)];
    int64_t t = shape.d[i] == -1 ? s : shape.d[i];
    if (t < 0 || (s != t && s != 1)) {
      char b1[128], b2[128];
      TG_FAIL("tg_expand: cannot expand %s to %s (axis %d)", shape_str(a->u->shape, src, b1, 128), shape_str(shape.d, nd, b2, 128), i);
    }
    pre[i] = s; out[i] = t;
  }
  if (!shape_ok(out, nd, "tg_expand")) return NULL;
  API_BEGIN;
  API_RETURN(tensor_wrap(mv_expand(mv_reshape(a->u, pre, nd), out, nd), a->device));
}

/* zero padding as a PAD UOp, then where(mask, x, value) for other values */
uop *mv_pad(uop *u, const int64_t *pads, double value) {
  bool any = false;
  for (int i = 0; i < 2 * u->ndim; i++) any |= pads[i] != 0;
  if (!any) return u;
  uop *p = uop1(OP_PAD, u->dtype, u, arg_ints(pads, 2 * u->ndim));
  if (value == 0) return p;
  uop *ones = const_like(1, DT_BOOL, u->shape, u->ndim);
  uop *mask = uop1(OP_PAD, DT_BOOL, ones, arg_ints(pads, 2 * u->ndim));
  return uop_where(mask, p, const_like(value, u->dtype, p->shape, p->ndim));
}

tg_tensor *tg_pad(tg_tensor *a, const int64_t *pads, int npairs, double value) {
  NEED(a, "tg_pad");
  int nd = a->u->ndim;
  if (npairs != nd) TG_FAIL("tg_pad: %d (before, after) pairs given for a %d-D tensor", npairs, nd);
  if (nd > 0 && !pads) TG_FAIL("tg_pad: pads is NULL");
  int64_t p[2 * TG_MAX_DIMS], starts[TG_MAX_DIMS], ends[TG_MAX_DIMS], out[TG_MAX_DIMS] = { 0 };
  bool neg = false;
  for (int i = 0; i < nd; i++) {
    int64_t b = pads[2 * i], e = pads[2 * i + 1], s = a->u->shape[i];
    if (tg_add_overflow_i64(s, b, &out[i]) || tg_add_overflow_i64(out[i], e, &out[i]) || out[i] > TG_MAX_NUMEL)
      TG_FAIL("tg_pad: padding (%lld, %lld) of axis %d (size %lld) gives a size past 2^59", (long long)b, (long long)e, i, (long long)s);
    if (out[i] < 0 || (b < 0 && -b > s) || (e < 0 && -e > s)) TG_FAIL("tg_pad: padding (%lld, %lld) too negative for axis %d of size %lld", (long long)b, (long long)e, i, (long long)s);
    p[2 * i] = b > 0 ? b : 0; p[2 * i + 1] = e > 0 ? e : 0;
    starts[i] = b < 0 ? -b : 0; ends[i] = e < 0 ? s + e : s;
    neg |= b < 0 || e < 0;
  }
  if (!shape_ok(out, nd, "tg_pad")) return NULL;
  API_BEGIN;
  uop *u = a->u;
  if (neg) {
    int64_t sh[2 * TG_MAX_DIMS];
    for (int i = 0; i < nd; i++) { sh[2 * i] = starts[i]; sh[2 * i + 1] = ends[i]; }
    u = uop1(OP_SHRINK, u->dtype, u, arg_ints(sh, 2 * nd));
  }
  API_RETURN(tensor_wrap(mv_pad(u, p, value), a->device));
}

uop *mv_shrink(uop *u, const int64_t *starts, const int64_t *ends) {
  bool ident = true;
  int64_t sh[2 * TG_MAX_DIMS * 2];
  for (int i = 0; i < u->ndim; i++) {
    sh[2 * i] = starts[i]; sh[2 * i + 1] = ends[i];
    ident &= starts[i] == 0 && ends[i] == u->shape[i];
  }
  return ident ? u : uop1(OP_SHRINK, u->dtype, u, arg_ints(sh, 2 * u->ndim));
}

tg_tensor *tg_shrink(tg_tensor *a, const int64_t *starts, const int64_t *ends) {
  NEED(a, "tg_shrink");
  if (a->u->ndim > 0 && (!starts || !ends)) TG_FAIL("tg_shrink: %s is NULL", starts ? "ends" : "starts");
  for (int i = 0; i < a->u->ndim; i++)
    if (starts[i] < 0 || ends[i] < starts[i] || ends[i] > a->u->shape[i])
      TG_FAIL("tg_shrink: [%lld, %lld) is not inside axis %d of size %lld", (long long)starts[i], (long long)ends[i], i, (long long)a->u->shape[i]);
  API_BEGIN;
  API_RETURN(tensor_wrap(mv_shrink(a->u, starts, ends), a->device));
}

static uop *flip_uop(uop *u, const bool *flip) {
  int64_t f[TG_MAX_DIMS * 2];
  bool any = false;
  for (int i = 0; i < u->ndim; i++) { f[i] = flip[i] && u->shape[i] > 1; any |= f[i] != 0; }
  return any ? uop1(OP_FLIP, u->dtype, u, arg_ints(f, u->ndim)) : u;
}

tg_tensor *tg_flip(tg_tensor *a, tg_axes axes) {
  NEED(a, "tg_flip");
  int nd = a->u->ndim;
  bool fl[TG_MAX_DIMS] = { 0 };
  if (axes.n < 0) for (int i = 0; i < nd; i++) fl[i] = true;
  for (int i = 0; i < axes.n; i++) {
    int ax = norm_axis(axes.a[i], nd, "tg_flip");
    if (ax < 0) return NULL;
    if (fl[ax]) TG_FAIL("tg_flip: axis %d repeated", ax);
    fl[ax] = true;
  }
  API_BEGIN;
  API_RETURN(tensor_wrap(flip_uop(a->u, fl), a->device));
}

tg_tensor *tg_transpose(tg_tensor *a, int axis0, int axis1) {
  NEED(a, "tg_transpose");
  int nd = a->u->ndim;
  int x = norm_axis(axis0, nd, "tg_transpose"), y = x < 0 ? -1 : norm_axis(axis1, nd, "tg_transpose");
  if (x < 0 || y < 0) return NULL;
  tg_axes o = { nd, { 0 } };
  for (int i = 0; i < nd; i++) o.a[i] = i;
  o.a[x] = y; o.a[y] = x;
  return tg_permute(a, o);
}
tg_tensor *tg_T(tg_tensor *a) {
  NEED(a, "tg_T");
  if (a->u->ndim < 2) TG_FAIL("tg_T: needs at least 2 dimensions, got %d", a->u->ndim);
  return tg_transpose(a, -2, -1);
}

tg_tensor *tg_squeeze(tg_tensor *a, int axis) {
  NEED(a, "tg_squeeze");
  tg_shape s = { 0, { 0 } };
  int nd = a->u->ndim;
  int ax = -1;
  if (axis != TG_NOAXIS) {
    ax = norm_axis(axis, nd, "tg_squeeze");
    if (ax < 0) return NULL;
    if (a->u->shape[ax] != 1) return tg_reshape(a, tg_shape_of(a));   /* like torch: no-op */
  }
  for (int i = 0; i < nd; i++)
    if (!(a->u->shape[i] == 1 && (ax < 0 || ax == i))) s.d[s.ndim++] = a->u->shape[i];
  return tg_reshape(a, s);
}

tg_tensor *tg_unsqueeze(tg_tensor *a, int axis) {
  NEED(a, "tg_unsqueeze");
  int nd = a->u->ndim;
  int ax = norm_axis(axis, nd + 1, "tg_unsqueeze");
  if (ax < 0) return NULL;
  if (nd + 1 > TG_MAX_DIMS) TG_FAIL("tg_unsqueeze: more than %d dimensions", TG_MAX_DIMS);
  tg_shape s = { nd + 1, { 0 } };
  for (int i = 0, j = 0; i < nd + 1; i++) s.d[i] = i == ax ? 1 : a->u->shape[j++];
  return tg_reshape(a, s);
}

tg_tensor *tg_flatten(tg_tensor *a, int start_axis, int end_axis) {
  NEED(a, "tg_flatten");
  int nd = a->u->ndim;
  if (nd == 0) return tg_reshape(a, TG_SHAPE(1));
  int s = norm_axis(start_axis, nd, "tg_flatten"), e = s < 0 ? -1 : norm_axis(end_axis, nd, "tg_flatten");
  if (s < 0 || e < 0) return NULL;
  if (e < s) TG_FAIL("tg_flatten: end axis %d before start axis %d", end_axis, start_axis);
  tg_shape out = { 0, { 0 } };
  for (int i = 0; i < s; i++) out.d[out.ndim++] = a->u->shape[i];
  int64_t m = 1;
  for (int i = s; i <= e; i++) m *= a->u->shape[i];
  out.d[out.ndim++] = m;
  for (int i = e + 1; i < nd; i++) out.d[out.ndim++] = a->u->shape[i];
  return tg_reshape(a, out);
}

/* ---- indexing: Python semantics for ints, slices (with steps), None, ... */
tg_tensor *tg_getitem(tg_tensor *a, const tg_index *idx, int n) {
  NEED(a, "tg_getitem");
  if (n < 0 || (n > 0 && !idx)) TG_FAIL("tg_getitem: %s (n %d)", idx ? "negative index count" : "idx is NULL", n);
  int nd = a->u->ndim, used = 0, ellipses = 0;
  for (int i = 0; i < n; i++) {
    if (idx[i].kind == TG_IDX_INT || idx[i].kind == TG_IDX_SLICE) used++;
    else if (idx[i].kind == TG_IDX_ELLIPSIS) ellipses++;
    else if (idx[i].kind != TG_IDX_NEWAXIS) TG_FAIL("tg_getitem: bad index kind %d at position %d", (int)idx[i].kind, i);
  }
  if (ellipses > 1) TG_FAIL("tg_getitem: more than one ellipsis");
  if (used > nd) TG_FAIL("tg_getitem: %d indices for a %d-D tensor", used, nd);
  /* expand the ellipsis (or a missing tail) into full slices */
  tg_index full[TG_MAX_DIMS * 2];
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (idx[i].kind == TG_IDX_ELLIPSIS) { for (int k = 0; k < nd - used; k++) full[m++] = TG_ALLIDX; }
    else full[m++] = idx[i];
  }
  if (!ellipses) for (int k = 0; k < nd - used; k++) full[m++] = TG_ALLIDX;
  if (m > TG_MAX_DIMS * 2) TG_FAIL("tg_getitem: too many indices");

  API_BEGIN;
  uop *u = a->u;
  /* pass 1: shrink (and flip for negative steps) each indexed axis */
  int64_t starts[TG_MAX_DIMS] = { 0 }, ends[TG_MAX_DIMS] = { 0 }, steps[TG_MAX_DIMS] = { 0 };
  bool flip[TG_MAX_DIMS] = { 0 };
  int axis = 0;
  for (int i = 0; i < m; i++) {
    const tg_index *ix = &full[i];
    if (ix->kind == TG_IDX_NEWAXIS) continue;
    int64_t size = u->shape[axis];
    if (ix->kind == TG_IDX_INT) {
      int64_t k = ix->start < 0 ? ix->start + size : ix->start;
      if (k < 0 || k >= size) { tg_seterr("tg_getitem: index %lld out of range for axis %d of size %lld", (long long)ix->start, axis, (long long)size); API_RETURN(NULL); }
      starts[axis] = k; ends[axis] = k + 1; steps[axis] = 1;
    } else {
      int64_t st = ix->step;
      if (st == 0) { tg_seterr("tg_getitem: slice step cannot be zero"); API_RETURN(NULL); }
      /* a step longer than the axis picks one element, as the axis' length
       * would: clamping it keeps -step (INT64_MIN) and the counts below exact */
      int64_t most = size > 0 ? size : 1;
      if (st > most) st = most;
      if (st < -most) st = -most;
      /* Python's slice.indices */
      int64_t lo, hi;
      if (st > 0) {
        lo = !ix->has_start ? 0 : ix->start < 0 ? (ix->start + size < 0 ? 0 : ix->start + size) : (ix->start > size ? size : ix->start);
        hi = !ix->has_stop ? size : ix->stop < 0 ? (ix->stop + size < 0 ? 0 : ix->stop + size) : (ix->stop > size ? size : ix->stop);
        if (hi < lo) hi = lo;
        starts[axis] = lo; ends[axis] = hi; steps[axis] = st;
      } else {
        /* elements start, start+st, ... > stop; as a forward range then flip */
        int64_t s0 = !ix->has_start ? size - 1 : ix->start < 0 ? ix->start + size : (ix->start >= size ? size - 1 : ix->start);
        int64_t s1 = !ix->has_stop ? -1 : ix->stop < 0 ? (ix->stop + size < 0 ? -1 : ix->stop + size) : (ix->stop >= size ? size - 1 : ix->stop);
        if (s0 < -1) s0 = -1;
        int64_t cnt = s0 > s1 ? (s0 - s1 + (-st) - 1) / (-st) : 0;
        lo = cnt ? s0 - (cnt - 1) * (-st) : 0; hi = cnt ? s0 + 1 : 0;
        starts[axis] = lo; ends[axis] = hi; steps[axis] = -st; flip[axis] = true;
      }
    }
    axis++;
  }
  u = mv_shrink(u, starts, ends);
  u = flip_uop(u, flip);
  /* pass 2: strides > 1 by pad-reshape-shrink */
  bool strided = false;
  for (int i = 0; i < nd; i++) strided |= steps[i] > 1;
  if (strided) {
    int64_t pads[2 * TG_MAX_DIMS] = { 0 }, rs[2 * TG_MAX_DIMS], s0[2 * TG_MAX_DIMS], s1[2 * TG_MAX_DIMS], fin[TG_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
      int64_t sz = u->shape[i], st = steps[i], cnt = (sz + st - 1) / st;
      pads[2 * i + 1] = cnt * st - sz;
      rs[2 * i] = cnt; rs[2 * i + 1] = st;
      s0[2 * i] = 0; s1[2 * i] = cnt; s0[2 * i + 1] = 0; s1[2 * i + 1] = 1;
      fin[i] = cnt;
    }
    u = mv_pad(u, pads, 0);
    u = mv_reshape(u, rs, 2 * nd);
    u = mv_shrink(u, s0, s1);
    u = mv_reshape(u, fin, nd);
  }
  /* pass 3: drop int axes, insert new axes */
  int64_t out[TG_MAX_DIMS * 2];
  int on = 0;
  axis = 0;
  for (int i = 0; i < m; i++) {
    if (full[i].kind == TG_IDX_NEWAXIS) { out[on++] = 1; continue; }
    if (full[i].kind != TG_IDX_INT) out[on++] = u->shape[axis];
    axis++;
  }
  if (on > TG_MAX_DIMS) { tg_seterr("tg_getitem: result has more than %d dimensions", TG_MAX_DIMS); API_RETURN(NULL); }
  u = mv_reshape(u, out, on);
  API_RETURN(tensor_wrap(u, a->device));
}
