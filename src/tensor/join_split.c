/* join_split.c: cat, stack, split, chunk, meshgrid, repeat,
 * repeat_interleave, roll, unfold and unflatten, written
 * in movement ops like tinygrad's Tensor (so a pure rearrangement realizes as
 * one copy kernel). Helpers shared with indexing.c and gather_scatter.c are
 * at the top. */
#include "tensor/indexing.h"

/* ---------------------------------------------------------------- helpers */

const char *mvx_shape_str(const int64_t *s, int nd, char *buf, int n) {
  int k = snprintf(buf, (size_t)n, "(");
  for (int i = 0; i < nd && k < n - 24; i++) k += snprintf(buf + k, (size_t)(n - k), i ? ",%lld" : "%lld", (long long)s[i]);
  snprintf(buf + k, (size_t)(n - k), nd == 1 ? ",)" : ")");
  return buf;
}

bool mvx_check_index(const tg_tensor *t, const char *what, const char *op) {
  tg_dtype dt = tg_dtype_of(t);
  if (dt == TG_BOOL) { tg_seterr("%s: %s is a bool tensor; boolean masks are not supported as indices (use an integer tensor)", op, what); return false; }
  if (!tg_dtype_is_int(dt)) { tg_seterr("%s: %s must have an integer dtype, got %s", op, what, tg_dtype_name(dt)); return false; }
  return true;
}

tg_tensor *mvx_arange(int64_t n) { return tg_arange(0, (double)n, 1, n <= INT32_MAX ? TG_I32 : TG_I64); }

tg_tensor *mvx_reshape(tg_tensor *a, const int64_t *sh, int nd) {
  if (nd > TG_MAX_DIMS) TG_FAIL("tg_reshape: more than %d dimensions", TG_MAX_DIMS);
  tg_shape s = { nd, { 0 } };
  for (int i = 0; i < nd; i++) s.d[i] = sh[i];
  return tg_reshape(a, s);
}

tg_tensor *mvx_one_hot_along(tg_tensor *idx, int64_t n, int after) {
  int64_t sh[TG_MAX_DIMS];
  sh[0] = n;
  for (int i = 0; i < after; i++) sh[1 + i] = 1;
  return tg_eq(idx, mvx_reshape(mvx_arange(n), sh, 1 + after));
}

int mvx_broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, const char *op) {
  int nd = na > nb ? na : nb;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - na), ib = i - (nd - nb);
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char s1[160], s2[160];
      return tg_seterr("%s: shapes %s and %s cannot broadcast", op, mvx_shape_str(a, na, s1, 160), mvx_shape_str(b, nb, s2, 160));
    }
    out[i] = da == 1 ? db : da;
  }
  return shape_ok(out, nd, op) ? nd : -1;
}

tg_tensor *mvx_merge_last(tg_tensor *base, tg_tensor *values, tg_tensor *mask, int axis) {
  NEED(base, "merge"); NEED(values, "merge"); NEED(mask, "merge");
  int nd = tg_ndim(values), ax = axis < 0 ? axis + nd : axis;
  int64_t k = tg_dim(values, ax);
  tg_scope_begin();
  if (k == 0) return mvx_keep(mvx_same(base));
  /* lastk = the largest (position + 1) along axis where mask is true, 0 where none */
  tg_tensor *pos = tg_adds(mvx_arange(k), 1);
  int64_t sh[TG_MAX_DIMS];
  sh[0] = k;
  for (int i = 0; i < nd - ax - 1; i++) sh[1 + i] = 1;
  pos = mvx_reshape(pos, sh, nd - ax);
  tg_tensor *zero = tg_scalar(0, tg_dtype_of(pos));
  tg_tensor *lastk = tg_max(tg_where(mask, pos, zero), TG_AXES(ax), true);
  tg_tensor *sel = tg_logical_and(mask, tg_eq(pos, lastk));
  tg_tensor *val = tg_sum(tg_where(sel, values, tg_scalar(0, tg_dtype_of(values))), TG_AXES(ax), false);
  val = tg_cast(val, tg_dtype_of(base));
  tg_tensor *hit = tg_squeeze(tg_gt(lastk, zero), ax);
  return mvx_keep(tg_where(hit, val, base));
}

bool mvx_assignable(const tg_tensor *t) {
  const uop *u = t->u;
  while (uop_is_movement(u->op) || u->op == OP_AFTER) {
    if (u->op == OP_EXPAND) return false;
    u = u->src[0];
  }
  return u->op == OP_BUFFER;
}

/* ---------------------------------------------------------------- cat, stack */

tg_tensor *tg_cat(tg_tensor *const *ts, int n, int axis) {
  if (!ts || n < 1) TG_FAIL("tg_cat: needs at least one tensor (got %d)", n);
  for (int i = 0; i < n; i++) NEED(ts[i], "tg_cat");
  int nd = ts[0]->u->ndim;
  if (nd == 0) TG_FAIL("tg_cat: zero-dimensional tensors cannot be concatenated (tensor 0 is 0-D)");
  int ax = norm_axis(axis, nd, "tg_cat");
  if (ax < 0) return NULL;
  tg_dtype dt = tg_dtype_of(ts[0]);
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    const uop *u = ts[i]->u;
    char s1[160], s2[160];
    if (u->ndim != nd) TG_FAIL("tg_cat: tensor %d is %d-D but tensor 0 is %d-D", i, u->ndim, nd);
    for (int d = 0; d < nd; d++)
      if (d != ax && u->shape[d] != ts[0]->u->shape[d])
        TG_FAIL("tg_cat: tensor %d has shape %s but tensor 0 has %s; they must match except on axis %d", i,
                mvx_shape_str(u->shape, nd, s1, 160), mvx_shape_str(ts[0]->u->shape, nd, s2, 160), ax);
    if (ts[i]->device != ts[0]->device) TG_FAIL("tg_cat: tensor %d is on %s, tensor 0 on %s", i, ts[i]->device, ts[0]->device);
    dt = tg_dtype_promote(dt, tg_dtype_of(ts[i]));
    if (tg_add_overflow_i64(total, u->shape[ax], &total) || total > TG_MAX_NUMEL)
      TG_FAIL("tg_cat: axis %d of the result would pass 2^59 elements (tensor %d)", ax, i);
  }
  {
    int64_t out[TG_MAX_DIMS];
    for (int d = 0; d < nd; d++) out[d] = d == ax ? total : ts[0]->u->shape[d];
    if (!shape_ok(out, nd, "tg_cat")) return NULL;
  }
  API_BEGIN;
  /* each piece padded to the full length; a where-chain over the pad masks
   * picks the piece of each position (exact for every dtype, one kernel) */
  uop *r = NULL;
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    uop *u = uop_cast(ts[i]->u, dt_scalar(dt));
    int64_t len = u->shape[ax], pads[2 * TG_MAX_DIMS] = { 0 };
    pads[2 * ax] = off; pads[2 * ax + 1] = total - off - len;
    off += len;
    bool any = pads[2 * ax] || pads[2 * ax + 1];
    uop *p = any ? uop1(OP_PAD, u->dtype, u, arg_ints(pads, 2 * nd)) : u;
    if (!r) { r = p; continue; }
    if (len == 0) continue;
    uop *mask = uop1(OP_PAD, DT_BOOL, const_like(1, DT_BOOL, u->shape, nd), arg_ints(pads, 2 * nd));
    r = uop_where(mask, p, r);
  }
  API_RETURN(tensor_wrap(r, ts[0]->device));
}

tg_tensor *tg_stack(tg_tensor *const *ts, int n, int axis) {
  if (!ts || n < 1) TG_FAIL("tg_stack: needs at least one tensor (got %d)", n);
  for (int i = 0; i < n; i++) NEED(ts[i], "tg_stack");
  int nd = ts[0]->u->ndim;
  for (int i = 1; i < n; i++) {
    const uop *u = ts[i]->u;
    if (u->ndim != nd || memcmp(u->shape, ts[0]->u->shape, sizeof(int64_t) * (size_t)nd)) {
      char s1[160], s2[160];
      TG_FAIL("tg_stack: tensor %d has shape %s but tensor 0 has %s; all must be equal", i,
              mvx_shape_str(u->shape, u->ndim, s1, 160), mvx_shape_str(ts[0]->u->shape, nd, s2, 160));
    }
  }
  int ax = norm_axis(axis, nd + 1, "tg_stack");
  if (ax < 0) return NULL;
  if (nd + 1 > TG_MAX_DIMS) TG_FAIL("tg_stack: result would have more than %d dimensions", TG_MAX_DIMS);
  tg_scope_begin();
  tg_tensor **us = tg_xmalloc(sizeof(tg_tensor *) * (size_t)n);
  for (int i = 0; i < n; i++) us[i] = tg_unsqueeze(ts[i], ax);
  tg_tensor *r = tg_cat(us, n, ax);
  free(us);
  return mvx_keep(r);
}

/* ---------------------------------------------------------------- split, chunk */

static int split_impl(tg_tensor *a, const int64_t *sizes, int ns, int ax, tg_tensor **out, int max_out, const char *op) {
  if (!out) return ns;
  if (ns > max_out) return tg_seterr("%s: %d pieces but out has room for %d", op, ns, max_out);
  int nd = a->u->ndim;
  int64_t st[TG_MAX_DIMS], en[TG_MAX_DIMS], off = 0;
  for (int i = 0; i < ns; i++) {
    for (int d = 0; d < nd; d++) { st[d] = 0; en[d] = a->u->shape[d]; }
    st[ax] = off; en[ax] = off + sizes[i];
    off += sizes[i];
    out[i] = tg_shrink(a, st, en);
    if (!out[i]) return -1;
  }
  return ns;
}

int tg_split(tg_tensor *a, const int64_t *sizes, int nsizes, int axis, tg_tensor **out, int max_out) {
  if (!a) { tensor_null_input("tg_split"); return -1; }
  int ax = norm_axis(axis, a->u->ndim, "tg_split");
  if (ax < 0) return -1;
  if (nsizes < 1 || !sizes) return tg_seterr("tg_split: needs at least one size (got %d)", nsizes);
  int64_t sum = 0;
  for (int i = 0; i < nsizes; i++) {
    if (sizes[i] < 0) return tg_seterr("tg_split: size %d is negative (%lld)", i, (long long)sizes[i]);
    sum += sizes[i];
  }
  if (sum != a->u->shape[ax]) {
    char s1[160];
    return tg_seterr("tg_split: sizes %s add up to %lld, but axis %d has length %lld", mvx_shape_str(sizes, nsizes < TG_MAX_DIMS ? nsizes : TG_MAX_DIMS, s1, 160),
                     (long long)sum, ax, (long long)a->u->shape[ax]);
  }
  return split_impl(a, sizes, nsizes, ax, out, max_out, "tg_split");
}

static int split_equal(tg_tensor *a, int64_t size, int64_t count, int ax, tg_tensor **out, int max_out, const char *op) {
  if (count > INT32_MAX / 2) return tg_seterr("%s: %lld pieces is too many", op, (long long)count);
  if (!out) return (int)count;
  if (count > max_out) return tg_seterr("%s: %lld pieces but out has room for %d", op, (long long)count, max_out);
  int64_t len = a->u->shape[ax];
  int64_t *sz = tg_xmalloc(sizeof(int64_t) * (size_t)(count ? count : 1));
  for (int64_t i = 0; i < count; i++) sz[i] = len - i * size < size ? len - i * size : size;
  if (len == 0) for (int64_t i = 0; i < count; i++) sz[i] = 0;
  int r = split_impl(a, sz, (int)count, ax, out, max_out, op);
  free(sz);
  return r;
}

int tg_split_size(tg_tensor *a, int64_t size, int axis, tg_tensor **out, int max_out) {
  if (!a) { tensor_null_input("tg_split_size"); return -1; }
  int ax = norm_axis(axis, a->u->ndim, "tg_split_size");
  if (ax < 0) return -1;
  int64_t len = a->u->shape[ax];
  if (size <= 0 && !(size == 0 && len == 0)) return tg_seterr("tg_split_size: size must be positive, got %lld", (long long)size);
  int64_t count = len == 0 ? 1 : (len - 1) / size + 1;   /* ceil(len / size); len + size - 1 could pass int64 */
  return split_equal(a, size, count, ax, out, max_out, "tg_split_size");
}

int tg_chunk(tg_tensor *a, int chunks, int axis, tg_tensor **out, int max_out) {
  if (!a) { tensor_null_input("tg_chunk"); return -1; }
  int ax = norm_axis(axis, a->u->ndim, "tg_chunk");
  if (ax < 0) return -1;
  if (chunks <= 0) return tg_seterr("tg_chunk: chunks must be positive, got %d", chunks);
  int64_t len = a->u->shape[ax];
  if (len == 0) return split_equal(a, 0, chunks, ax, out, max_out, "tg_chunk");
  int64_t size = (len + chunks - 1) / chunks;
  return split_equal(a, size, (len + size - 1) / size, ax, out, max_out, "tg_chunk");
}

int tg_meshgrid(tg_tensor *const *ts, int n, const char *indexing, tg_tensor **out, int max_out) {
  if (!ts || n < 1) return tg_seterr("tg_meshgrid: needs at least one tensor (got %d)", n);
  for (int i = 0; i < n; i++) if (!ts[i]) { tensor_null_input("tg_meshgrid"); return -1; }
  bool xy = false;
  if (indexing && strcmp(indexing, "ij")) {
    if (strcmp(indexing, "xy")) return tg_seterr("tg_meshgrid: indexing must be \"ij\" or \"xy\", got \"%s\"", indexing);
    xy = true;
  }
  if (n > TG_MAX_DIMS) return tg_seterr("tg_meshgrid: %d tensors give more than %d dimensions", n, TG_MAX_DIMS);
  for (int i = 0; i < n; i++)
    if (ts[i]->u->ndim > 1) return tg_seterr("tg_meshgrid: tensor %d is %d-D; expected 0-D or 1-D tensors", i, ts[i]->u->ndim);
  if (!out) return n;
  if (n > max_out) return tg_seterr("tg_meshgrid: %d outputs but out has room for %d", n, max_out);
  tg_shape full = { n, { 0 } };
  for (int i = 0; i < n; i++) {
    int pos = xy && n > 1 && i < 2 ? 1 - i : i;
    full.d[pos] = tg_numel(ts[i]);
  }
  for (int i = 0; i < n; i++) {
    int pos = xy && n > 1 && i < 2 ? 1 - i : i;
    tg_shape s = { n, { 0 } };
    for (int d = 0; d < n; d++) s.d[d] = d == pos ? full.d[d] : 1;
    tg_scope_begin();
    out[i] = mvx_keep(tg_expand(tg_reshape(ts[i], s), full));
    if (!out[i]) return -1;
  }
  return n;
}

/* ---------------------------------------------------------------- repeat, roll, unfold, unflatten */

tg_tensor *tg_repeat(tg_tensor *a, tg_shape repeats) {
  NEED(a, "tg_repeat");
  int nd = a->u->ndim, rn = repeats.ndim;
  if (rn < nd || rn > TG_MAX_DIMS) TG_FAIL("tg_repeat: %d repeats for a %d-D tensor (need %d to %d)", rn, nd, nd, TG_MAX_DIMS);
  int64_t un[2 * TG_MAX_DIMS], ex[2 * TG_MAX_DIMS], fin[TG_MAX_DIMS];
  int m = 0;
  for (int i = 0; i < rn; i++) {
    int64_t r = repeats.d[i], s = i < rn - nd ? 1 : a->u->shape[i - (rn - nd)];
    if (r < 0) TG_FAIL("tg_repeat: repeat %lld at position %d is negative", (long long)r, i);
    if (r != 1) { un[m] = 1; ex[m++] = r; }
    un[m] = s; ex[m++] = s;
    if (tg_mul_overflow_i64(r, s, &fin[i]) || fin[i] > TG_MAX_NUMEL)
      TG_FAIL("tg_repeat: %lld repeats of axis %d (size %lld) give more than 2^59 elements", (long long)r, i, (long long)s);
  }
  if (!shape_ok(fin, rn, "tg_repeat")) return NULL;
  API_BEGIN;
  uop *u = mv_reshape(mv_expand(mv_reshape(a->u, un, m), ex, m), fin, rn);
  API_RETURN(tensor_wrap(u, a->device));
}

tg_tensor *tg_repeat_interleave(tg_tensor *a, int64_t repeats, int axis) {
  NEED(a, "tg_repeat_interleave");
  if (repeats < 0) TG_FAIL("tg_repeat_interleave: repeats must be non-negative, got %lld", (long long)repeats);
  tg_scope_begin();
  tg_tensor *x = a;
  int ax = 0;
  if (axis == TG_NOAXIS) x = tg_reshape(a, TG_SHAPE(-1));
  else if ((ax = norm_axis(axis, a->u->ndim, "tg_repeat_interleave")) < 0) return mvx_keep(NULL);
  int nd = x->u->ndim;
  if (nd + 1 > TG_MAX_DIMS) { tg_seterr("tg_repeat_interleave: too many dimensions"); return mvx_keep(NULL); }
  int64_t un[TG_MAX_DIMS + 1] = { 0 }, ex[TG_MAX_DIMS + 1] = { 0 }, fin[TG_MAX_DIMS];
  for (int i = 0, j = 0; i < nd; i++) {
    un[j] = ex[j] = x->u->shape[i]; j++;
    if (i == ax) { un[j] = 1; ex[j] = repeats; j++; }
    fin[i] = x->u->shape[i];
    if (i == ax && (tg_mul_overflow_i64(x->u->shape[i], repeats, &fin[i]) || fin[i] > TG_MAX_NUMEL)) {
      tg_seterr("tg_repeat_interleave: %lld repeats of axis %d (size %lld) give more than 2^59 elements", (long long)repeats, i, (long long)x->u->shape[i]);
      return mvx_keep(NULL);
    }
  }
  if (!shape_ok(fin, nd, "tg_repeat_interleave")) return mvx_keep(NULL);
  tg_tensor *r = mvx_reshape(x, un, nd + 1);
  tg_shape es = { nd + 1, { 0 } };
  for (int i = 0; i < nd + 1; i++) es.d[i] = ex[i];
  r = mvx_reshape(tg_expand(r, es), fin, nd);
  return mvx_keep(r);
}

tg_tensor *tg_roll(tg_tensor *a, const int64_t *shifts, tg_axes axes) {
  NEED(a, "tg_roll");
  if (!shifts) TG_FAIL("tg_roll: shifts is NULL");
  int nd = a->u->ndim;
  if (axes.n < 0) {
    tg_scope_begin();
    tg_tensor *f = tg_reshape(a, TG_SHAPE(-1));
    return mvx_keep(tg_reshape(tg_roll(f, shifts, TG_AXES(0)), tg_shape_of(a)));
  }
  if (axes.n == 0) TG_FAIL("tg_roll: no axes given (use TG_ALL to roll the flattened tensor)");
  if (axes.n > TG_MAX_DIMS) TG_FAIL("tg_roll: %d axes (at most %d)", axes.n, TG_MAX_DIMS);
  int64_t total[TG_MAX_DIMS] = { 0 };
  bool any[TG_MAX_DIMS] = { 0 };
  for (int i = 0; i < axes.n; i++) {
    int ax = norm_axis(axes.a[i], nd, "tg_roll");
    if (ax < 0) return NULL;
    int64_t len = a->u->shape[ax];   /* reduced as they add up: shifts of any size, repeated axes */
    if (len) total[ax] = (total[ax] + shifts[i] % len) % len;
    any[ax] = true;
  }
  tg_scope_begin();
  if (shape_numel(a->u->shape, nd) == 0) return mvx_keep(mvx_same(a));
  tg_shape rep = { nd, { 0 } };
  int64_t st[TG_MAX_DIMS], en[TG_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    int64_t s = a->u->shape[d], k = ((total[d] % s) + s) % s;
    bool roll = any[d] && k != 0;
    rep.d[d] = roll ? 2 : 1;
    st[d] = roll ? s - k : 0; en[d] = st[d] + s;
  }
  return mvx_keep(tg_shrink(tg_repeat(a, rep), st, en));
}

tg_tensor *tg_unfold(tg_tensor *a, int axis, int64_t size, int64_t step) {
  NEED(a, "tg_unfold");
  int nd = a->u->ndim;
  if (nd == 0) {   /* torch: a 0-D tensor unfolds as a 1-element one, size <= 1 */
    tg_scope_begin();
    if (axis != 0 && axis != -1) { tg_seterr("tg_unfold: axis %d out of range for a 0-D tensor", axis); return mvx_keep(NULL); }
    tg_tensor *r = tg_unfold(tg_reshape(a, TG_SHAPE(1)), 0, size, step);
    return mvx_keep(r ? tg_reshape(r, TG_SHAPE(size)) : NULL);
  }
  int ax = norm_axis(axis, nd, "tg_unfold");
  if (ax < 0) return NULL;
  int64_t len = a->u->shape[ax];
  if (size < 0) TG_FAIL("tg_unfold: size must be >= 0, got %lld", (long long)size);
  if (step <= 0) TG_FAIL("tg_unfold: step must be > 0, got %lld", (long long)step);
  if (size > len) TG_FAIL("tg_unfold: size %lld is larger than axis %d of length %lld", (long long)size, ax, (long long)len);
  if (nd + 1 > TG_MAX_DIMS) TG_FAIL("tg_unfold: result would have more than %d dimensions", TG_MAX_DIMS);
  int64_t o = (len - size) / step + 1, k = size, s = step, i = len;
  tg_axes perm = { nd, { 0 } };
  int m = 0;
  for (int d = 0; d < nd; d++) if (d != ax) perm.a[m++] = d;
  perm.a[m] = ax;
  tg_scope_begin();
  tg_tensor *x = tg_permute(a, perm);
  int64_t sh[TG_MAX_DIMS + 2], st[TG_MAX_DIMS + 2], en[TG_MAX_DIMS + 2];
  for (int d = 0; d < nd - 1; d++) sh[d] = x->u->shape[d];
  if (k == 0) {
    /* empty windows: any reshape of an empty slice */
    for (int d = 0; d < nd; d++) { st[d] = 0; en[d] = x->u->shape[d]; }
    en[nd - 1] = 0;
    sh[nd - 1] = o; sh[nd] = 0;
    x = mvx_reshape(tg_shrink(x, st, en), sh, nd + 1);
  } else {
    /* tinygrad's _pool for one axis: tile the axis, view it as rows of
     * length i*f+1 (row r starts r elements later), then take every s-th */
    if (o == 1) s = 1;   /* one window: the step plays no part (and o * s stays within len + s <= 2 len) */
    int64_t f = (o * s - 1 + i - 1) / i;
    if (f < 1) f = 1;
    int64_t w = i * f + 1, kw;
    if (tg_mul_overflow_i64(k, w, &kw) || kw > TG_MAX_NUMEL) {
      tg_seterr("tg_unfold: windows of %lld every %lld along an axis of %lld need a tiling of more than 2^59 elements", (long long)k, (long long)step, (long long)i);
      return mvx_keep(NULL);
    }
    int64_t rep = (kw + i - 1) / i;
    tg_shape rs = { nd, { 0 } };
    for (int d = 0; d < nd; d++) rs.d[d] = d == nd - 1 ? rep : 1;
    x = tg_repeat(x, rs);
    for (int d = 0; d < nd - 1; d++) { st[d] = 0; en[d] = sh[d]; }
    st[nd - 1] = 0; en[nd - 1] = k * w;
    x = tg_shrink(x, st, en);
    sh[nd - 1] = k; sh[nd] = w;
    x = mvx_reshape(x, sh, nd + 1);
    st[nd - 1] = 0; en[nd - 1] = k; st[nd] = 0; en[nd] = o * s;
    x = tg_shrink(x, st, en);
    sh[nd] = o; sh[nd + 1] = s;
    x = mvx_reshape(x, sh, nd + 2);
    st[nd] = 0; en[nd] = o; st[nd + 1] = 0; en[nd + 1] = 1;
    x = tg_shrink(x, st, en);
    x = mvx_reshape(x, sh, nd + 1);   /* (..., k, o) */
    x = tg_transpose(x, -1, -2);      /* (..., o, k) */
  }
  /* move the window-count axis back to where axis was */
  tg_axes back = { nd + 1, { 0 } };
  for (int d = 0, j = 0; d < nd; d++) back.a[d] = d == ax ? nd - 1 : j++;
  back.a[nd] = nd;
  return mvx_keep(tg_permute(x, back));
}

tg_tensor *tg_unflatten(tg_tensor *a, int axis, tg_shape sizes) {
  NEED(a, "tg_unflatten");
  int nd = a->u->ndim;
  int ax = norm_axis(axis, nd, "tg_unflatten");
  if (ax < 0) return NULL;
  if (sizes.ndim < 0 || nd - 1 + sizes.ndim > TG_MAX_DIMS) TG_FAIL("tg_unflatten: %d sizes make too many dimensions", sizes.ndim);
  int64_t len = a->u->shape[ax], known = 1;
  int infer = -1;
  char s1[160];
  for (int i = 0; i < sizes.ndim; i++) {
    if (sizes.d[i] == -1) {
      if (infer >= 0) TG_FAIL("tg_unflatten: only one size can be -1, got %s", mvx_shape_str(sizes.d, sizes.ndim, s1, 160));
      infer = i;
    } else if (sizes.d[i] < 0) TG_FAIL("tg_unflatten: negative size %lld", (long long)sizes.d[i]);
    else if (tg_mul_overflow_i64(known, sizes.d[i], &known) || known > TG_MAX_NUMEL)
      TG_FAIL("tg_unflatten: sizes %s multiply past 2^59", mvx_shape_str(sizes.d, sizes.ndim, s1, 160));
  }
  if (infer >= 0) {
    if (known == 0 || len % known) TG_FAIL("tg_unflatten: cannot infer -1 in %s for axis %d of length %lld", mvx_shape_str(sizes.d, sizes.ndim, s1, 160), ax, (long long)len);
    sizes.d[infer] = len / known;
    known = len;
  }
  if (known != len) TG_FAIL("tg_unflatten: sizes %s multiply to %lld, but axis %d has length %lld", mvx_shape_str(sizes.d, sizes.ndim, s1, 160), (long long)known, ax, (long long)len);
  tg_shape s = { 0, { 0 } };
  for (int i = 0; i < ax; i++) s.d[s.ndim++] = a->u->shape[i];
  for (int i = 0; i < sizes.ndim; i++) s.d[s.ndim++] = sizes.d[i];
  for (int i = ax + 1; i < nd; i++) s.d[s.ndim++] = a->u->shape[i];
  return tg_reshape(a, s);
}
