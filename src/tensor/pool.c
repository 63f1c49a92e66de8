/* pool.c: sliding windows as views (tinygrad's _pool) and the pools built on
 * them: avg_pool2d, max_pool2d (with indices), max_unpool2d; plus small
 * helpers the other nn files share (nn_internal.h). */
#include <math.h>
#include "tensor/nn_internal.h"
#include "engine/realize.h"
#include "runtime/buffer.h"

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}
static int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }

/* ---------------------------------------------------------------- helpers */

const char *nn_shape_str(const tg_tensor *t, char *buf, int n) {
  if (!t) { snprintf(buf, (size_t)n, "(null)"); return buf; }
  tg_shape s = tg_shape_of(t);
  int k = snprintf(buf, (size_t)n, "(");
  for (int i = 0; i < s.ndim && k < n - 24; i++) k += snprintf(buf + k, (size_t)(n - k), i ? ",%lld" : "%lld", (long long)s.d[i]);
  snprintf(buf + k, (size_t)(n - k), ")");
  return buf;
}

double nn_dtype_min(tg_dtype dt) {
  if (tg_dtype_is_float(dt)) return -INFINITY;
  if (dt == TG_BOOL) return 0;
  return dt_min(dt_scalar(dt));
}

bool nn_read_realized_ints(const tg_tensor *t, int64_t *out, int64_t n) {
  if (!t || !tg_dtype_is_int(tg_dtype_of(t)) || tg_numel(t) != n) return false;
  tg_buffer *b = uop_contiguous_buffer(t->u);
  if (!b || !b->ptr || b->numel != n) return false;
  int sz = tg_dtype_size(b->dtype);
  unsigned char *tmp = tg_xmalloc((size_t)(n ? n : 1) * (size_t)sz);
  bool ok = buffer_copyout(b, tmp, (size_t)n * (size_t)sz) == 0;
  for (int64_t i = 0; ok && i < n; i++) {
    const unsigned char *p = tmp + i * sz;
    switch (b->dtype) {
    case TG_I8: out[i] = *(const int8_t *)p; break;
    case TG_U8: out[i] = *p; break;
    case TG_I16: { int16_t v; memcpy(&v, p, 2); out[i] = v; break; }
    case TG_U16: { uint16_t v; memcpy(&v, p, 2); out[i] = v; break; }
    case TG_I32: { int32_t v; memcpy(&v, p, 4); out[i] = v; break; }
    case TG_U32: { uint32_t v; memcpy(&v, p, 4); out[i] = v; break; }
    case TG_I64: { int64_t v; memcpy(&v, p, 8); out[i] = v; break; }
    case TG_U64: { uint64_t v; memcpy(&v, p, 8); out[i] = v > INT64_MAX ? INT64_MAX : (int64_t)v; break; }
    default: ok = false;
    }
  }
  free(tmp);
  return ok;
}

tg_tensor *nn_pad_spatial(tg_tensor *x, int n, const int64_t *pads, double value) {
  NEED(x, "tg_pad");
  int nd = tg_ndim(x);
  int64_t p[2 * TG_MAX_DIMS] = { 0 };
  bool any = false;
  for (int j = 0; j < n; j++) {
    p[2 * (nd - n + j)] = pads[2 * j]; p[2 * (nd - n + j) + 1] = pads[2 * j + 1];
    any |= pads[2 * j] != 0 || pads[2 * j + 1] != 0;
  }
  return any ? tg_pad(x, p, nd, value) : tg_reshape(x, tg_shape_of(x));
}

tg_tensor *nn_repeat(tg_tensor *x, const int64_t *reps) {
  NEED(x, "tg_repeat");
  int nd = tg_ndim(x);
  tg_shape sh = tg_shape_of(x), un = { 0, { 0 } }, ex = { 0, { 0 } }, fin = { nd, { 0 } };
  for (int i = 0; i < nd; i++) {
    if (reps[i] != 1) { un.d[un.ndim++] = 1; ex.d[ex.ndim++] = reps[i]; }
    un.d[un.ndim++] = sh.d[i]; ex.d[ex.ndim++] = sh.d[i];
    fin.d[i] = reps[i] * sh.d[i];
  }
  if (un.ndim > TG_MAX_DIMS) TG_FAIL("tg_repeat: more than %d dimensions needed", TG_MAX_DIMS);
  return tg_reshape(tg_expand(tg_reshape(x, un), ex), fin);
}

tg_tensor *nn_one_hot_bool(tg_tensor *index, int64_t n) {
  NEED(index, "one_hot");
  int nd = tg_ndim(index);
  if (nd + 1 > TG_MAX_DIMS) TG_FAIL("one_hot: too many dimensions");
  tg_shape s = tg_shape_of(index);
  s.d[s.ndim++] = 1;
  tg_shape a = { nd + 1, { 0 } };
  for (int i = 0; i < nd; i++) a.d[i] = 1;
  a.d[nd] = n;
  tg_dtype dt = tg_dtype_of(index);
  if (!tg_dtype_is_int(dt)) dt = TG_I32;
  return tg_eq(tg_reshape(index, s), tg_reshape(tg_arange(0, (double)n, 1, dt), a));
}

tg_tensor *nn_moveaxis(tg_tensor *x, int from, int to) {
  NEED(x, "moveaxis");
  int nd = tg_ndim(x);
  tg_axes o = { nd, { 0 } };
  int k = 0;
  for (int i = 0; i < nd; i++) {
    if (k == to) o.a[k++] = from;
    if (i != from) o.a[k++] = i;
  }
  if (k == to) o.a[k++] = from;
  return tg_permute(x, o);
}

/* ---------------------------------------------------------------- _pool */

tg_tensor *nn_pool_view(tg_tensor *x, int n, const int64_t *k, const int64_t *s, const int64_t *d) {
  NEED(x, "pool");
  int nd = tg_ndim(x);
  if (nd - n + 2 * n > TG_MAX_DIMS) TG_FAIL("pool: too many dimensions");
  /* one WINDOW op: in kernels window (o, k) reads o*s + k*d, and its
   * gradient is a sum of shifted slices (plain index math both ways) */
  int64_t arg[1 + 9];
  arg[0] = n;
  for (int j = 0; j < n; j++) { arg[1 + j] = k[j]; arg[1 + n + j] = s[j]; arg[1 + 2 * n + j] = d[j]; }
  API_BEGIN;
  API_RETURN(tensor_wrap(uop1(OP_WINDOW, x->u->dtype, x->u, arg_ints(arg, 1 + 3 * n)), x->device));
}

/* ---------------------------------------------------------------- pools */

typedef struct { int64_t k[2], s[2], d[2], pads[4], ceil_pads[4]; } pool_params;

int tg_resolve_pool_pads(const int *padding, int n, int ndims, int *out) {
  if (ndims < 1 || ndims > 3) return tg_seterr("tg_resolve_pool_pads: %d spatial axes (1 to 3)", ndims);
  if (!padding || !out) return tg_seterr("tg_resolve_pool_pads: %s is NULL", padding ? "out" : "padding");
  if (n != 1 && n != ndims && n != 2 * ndims)
    return tg_seterr("tg_resolve_pool_pads: %d padding values for %d spatial axes (give 1, %d, or %d in torch's F.pad order)", n, ndims, ndims, 2 * ndims);
  for (int i = 0; i < ndims; i++) {
    if (n == 1) out[2 * i] = out[2 * i + 1] = padding[0];
    else if (n == ndims) out[2 * i] = out[2 * i + 1] = padding[i];
    else { out[2 * i] = padding[2 * (ndims - 1 - i)]; out[2 * i + 1] = padding[2 * (ndims - 1 - i) + 1]; }   /* last axis first */
  }
  return 0;
}

/* Validates opts against x (N, C, H, W) or (C, H, W) and resolves defaults,
 * the padding (symmetric padding[], or asymmetric pads[]) and the ceil-mode
 * padding (tinygrad's _apply_ceil_mode). */
static bool pool_resolve(tg_tensor *x, const tg_pool_opts *o, bool is_max, pool_params *p, const char *op) {
  int nd = tg_ndim(x);
  char b[128];
  if (nd != 3 && nd != 4) { tg_seterr("%s: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape %s", op, nn_shape_str(x, b, 128)); return false; }
  if (!o) { tg_seterr("%s: options with a kernel size are required", op); return false; }
  bool asym = false;
  for (int j = 0; j < 4; j++) asym |= o->pads[j] != 0;
  if (asym && (o->padding[0] || o->padding[1])) { tg_seterr("%s: give padding[] or pads[], not both", op); return false; }
  for (int j = 0; j < 2; j++) {
    int64_t i = tg_dim(x, nd - 2 + j);
    p->k[j] = o->kernel[j];
    p->s[j] = o->stride[j] ? o->stride[j] : o->kernel[j];
    p->d[j] = o->dilation[j] ? o->dilation[j] : 1;
    int64_t pb = asym ? o->pads[2 * j] : o->padding[j], pa = asym ? o->pads[2 * j + 1] : o->padding[j];
    if (p->k[j] <= 0) { tg_seterr("%s: kernel size %lld on axis %d must be positive", op, (long long)p->k[j], j); return false; }
    if (p->s[j] <= 0) { tg_seterr("%s: stride %lld on axis %d must be positive", op, (long long)p->s[j], j); return false; }
    if (p->d[j] <= 0) { tg_seterr("%s: dilation %lld on axis %d must be positive", op, (long long)p->d[j], j); return false; }
    if (!is_max && p->d[j] != 1) { tg_seterr("%s: dilation %lld is not supported by average pooling", op, (long long)p->d[j]); return false; }
    if (!asym && (pb < 0 || 2 * pb > p->k[j])) {   /* torch's rule for its symmetric padding */
      tg_seterr("%s: padding %lld on axis %d must be between 0 and half the kernel size %lld", op, (long long)pb, j, (long long)p->k[j]);
      return false;
    }
    if (-pb > i || -pa > i) {
      tg_seterr("%s: pads (%lld, %lld) crop more than the size %lld of axis %d", op, (long long)pb, (long long)pa, (long long)i, j);
      return false;
    }
    int64_t ek = p->d[j] * (p->k[j] - 1) + 1, padded = i + pb + pa;
    if (padded < ek) {
      tg_seterr("%s: kernel %lld (dilated %lld) is larger than the padded input %lld on axis %d (size %lld, pads %lld, %lld)", op,
                (long long)p->k[j], (long long)ek, (long long)padded, j, (long long)i, (long long)pb, (long long)pa);
      return false;
    }
    p->pads[2 * j] = pb; p->pads[2 * j + 1] = pa;
    /* the output size rounded up, less a last window that would start in
     * the after-padding */
    int64_t oc = ceildiv(padded - ek, p->s[j]) + 1;
    int64_t extra = p->s[j] * (oc - 1) + ek - padded;
    int64_t back = p->s[j] * (oc - 1) - (pb + i - 1);
    p->ceil_pads[2 * j] = pb;
    p->ceil_pads[2 * j + 1] = pa + extra - (back > 0 ? back : 0);
  }
  return true;
}

/* x padded with value, windowed: (N, C, oh, ow, kh, kw) */
static tg_tensor *pooled(tg_tensor *x, const pool_params *p, const int64_t *pads, double value) {
  return nn_pool_view(nn_pad_spatial(x, 2, pads, value), 2, p->k, p->s, p->d);
}

tg_tensor *tg_avg_pool2d(tg_tensor *x, const tg_pool_opts *o) {
  NEED(x, "tg_avg_pool2d");
  pool_params p;
  if (!pool_resolve(x, o, false, &p, "tg_avg_pool2d")) return NULL;
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("tg_avg_pool2d: input must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x)));
  tg_scope_begin();
  tg_axes win = TG_AXES(-2, -1);
  tg_tensor *r;
  if (o->exclude_pad) {
    const int64_t *pads = o->ceil_mode ? p.ceil_pads : p.pads;
    r = tg_div(tg_sum(pooled(x, &p, pads, 0), win, false), tg_sum(pooled(tg_ones_like(x), &p, pads, 0), win, false));
  } else if (!o->ceil_mode) {
    r = tg_mean(pooled(x, &p, p.pads, 0), win, false);
  } else {
    /* the divisor counts the regular padding but not the ceil-mode extra */
    int64_t extra[4];
    for (int i = 0; i < 4; i++) extra[i] = p.ceil_pads[i] - p.pads[i];
    tg_tensor *ones = tg_ones_like(nn_pad_spatial(x, 2, p.pads, 0));
    r = tg_div(tg_sum(pooled(x, &p, p.ceil_pads, 0), win, false), tg_sum(pooled(ones, &p, extra, 0), win, false));
  }
  if (r && tg_dtype_of(r) != tg_dtype_of(x)) r = tg_cast(r, tg_dtype_of(x));
  return nn_done(r);
}

tg_tensor *tg_max_pool2d(tg_tensor *x, const tg_pool_opts *o, tg_tensor **indices) {
  if (indices) *indices = NULL;
  NEED(x, "tg_max_pool2d");
  pool_params p;
  if (!pool_resolve(x, o, true, &p, "tg_max_pool2d")) return NULL;
  tg_dtype dt = tg_dtype_of(x);
  if (dt == TG_BOOL) TG_FAIL("tg_max_pool2d: bool input is not supported");
  const int64_t *pads = o->ceil_mode ? p.ceil_pads : p.pads;
  tg_scope_begin();
  tg_tensor *win = pooled(x, &p, pads, nn_dtype_min(dt));
  tg_tensor *r = tg_max(win, TG_AXES(-2, -1), false);
  tg_tensor *idx = NULL;
  if (indices && r) {
    /* tinygrad: the first maximum's position as H*W - max(mask * (H*W, ..., 1)) */
    int64_t H = tg_dim(x, -2), W = tg_dim(x, -1), HW = H * W;
    tg_tensor *rev = tg_reshape(tg_arange((double)HW, 0, -1, TG_I32), TG_SHAPE(H, W));
    tg_tensor *rw = pooled(rev, &p, pads, 0);
    tg_tensor *m = tg_eq(win, tg_max(win, TG_AXES(-2, -1), true));
    tg_tensor *best = tg_max(tg_where(m, rw, tg_scalar(0, TG_I32)), TG_AXES(-2, -1), false);
    idx = tg_sub(tg_scalar((double)HW, TG_I32), best);
    if (!idx) r = NULL;
  }
  if (r) tg_keep(r);
  if (idx) tg_keep(idx);
  tg_scope_end();
  if (indices) *indices = r ? idx : NULL;
  return r;
}

tg_tensor *tg_max_unpool2d(tg_tensor *x, tg_tensor *indices, const tg_pool_opts *o, const int64_t *output_size) {
  NEED(x, "tg_max_unpool2d"); NEED(indices, "tg_max_unpool2d");
  int nd = tg_ndim(x);
  char b1[128], b2[128];
  if (nd != 3 && nd != 4) TG_FAIL("tg_max_unpool2d: input must be 3-D or 4-D, got shape %s", nn_shape_str(x, b1, 128));
  tg_shape xs = tg_shape_of(x), is = tg_shape_of(indices);
  bool same = xs.ndim == is.ndim;
  for (int i = 0; same && i < xs.ndim; i++) same = xs.d[i] == is.d[i];
  if (!same) TG_FAIL("tg_max_unpool2d: indices shape %s differs from input shape %s", nn_shape_str(indices, b2, 128), nn_shape_str(x, b1, 128));
  if (!tg_dtype_is_int(tg_dtype_of(indices))) TG_FAIL("tg_max_unpool2d: indices must have an int dtype, not %s", tg_dtype_name(tg_dtype_of(indices)));
  int64_t out[2];
  for (int j = 0; j < 2; j++) {
    if (output_size) out[j] = output_size[j];
    else {
      if (!o) TG_FAIL("tg_max_unpool2d: options (kernel size) or output_size are required");
      bool asym = o->pads[0] || o->pads[1] || o->pads[2] || o->pads[3];
      if (asym && (o->padding[0] || o->padding[1])) TG_FAIL("tg_max_unpool2d: give padding[] or pads[], not both");
      int64_t k = o->kernel[j], s = o->stride[j] ? o->stride[j] : k, d = o->dilation[j] ? o->dilation[j] : 1;
      int64_t pb = asym ? o->pads[2 * j] : o->padding[j], pa = asym ? o->pads[2 * j + 1] : o->padding[j];
      if (k <= 0 || s <= 0 || d <= 0 || (!asym && pb < 0))
        TG_FAIL("tg_max_unpool2d: bad kernel %lld / stride %lld / dilation %lld / padding %lld on axis %d", (long long)k, (long long)s, (long long)d, (long long)pb, j);
      int64_t is;   /* (i - 1) * s within 2^59; d * (k - 1) < 2^62 (int options) */
      if (tg_mul_overflow_i64(xs.d[nd - 2 + j] - 1, s, &is) || is > TG_MAX_NUMEL)
        TG_FAIL("tg_max_unpool2d: output size on axis %d passes 2^59 (input %lld, stride %lld)", j, (long long)xs.d[nd - 2 + j], (long long)s);
      out[j] = is - (pb + pa) + d * (k - 1) + 1;
    }
    if (out[j] <= 0) TG_FAIL("tg_max_unpool2d: output size %lld on axis %d is not positive", (long long)out[j], j);
  }
  int64_t P = xs.d[nd - 2] * xs.d[nd - 1], OUT = tg_checked_numel(out, 2), po;   /* the one-hot below is (..., P, OUT) */
  if (OUT < 0 || tg_mul_overflow_i64(P, OUT, &po) || po > TG_MAX_NUMEL)
    TG_FAIL("tg_max_unpool2d: an output plane of %lld x %lld (with %lld inputs per plane) passes 2^59 elements", (long long)out[0], (long long)out[1], (long long)P);
  int64_t *iv = tg_xmalloc(sizeof(int64_t) * (size_t)(tg_numel(indices) ? tg_numel(indices) : 1));
  if (nn_read_realized_ints(indices, iv, tg_numel(indices)))
    for (int64_t i = 0; i < tg_numel(indices); i++)
      if (iv[i] < 0 || iv[i] >= OUT) {
        long long bad = (long long)iv[i];
        free(iv);
        TG_FAIL("tg_max_unpool2d: index %lld out of range for an output plane of %lld x %lld", bad, (long long)out[0], (long long)out[1]);
      }
  free(iv);
  tg_scope_begin();
  tg_shape flat = xs, fin = xs;
  flat.ndim = nd - 1; flat.d[nd - 2] = P;   /* (..., P) */
  fin.d[nd - 2] = out[0]; fin.d[nd - 1] = out[1];
  /* (..., P, OUT): does input element p go to output position j? */
  tg_tensor *hit = nn_one_hot_bool(tg_reshape(indices, flat), OUT);
  tg_tensor *xv = tg_unsqueeze(tg_reshape(x, flat), -1);
  tg_dtype dt = tg_dtype_of(x);
  tg_tensor *lo = tg_full(TG_SHAPE(), nn_dtype_min(dt), dt);
  tg_tensor *val = tg_max(tg_where(hit, xv, lo), TG_AXES(-2), false);
  tg_tensor *any = tg_max(tg_cast(hit, TG_I32), TG_AXES(-2), false);
  tg_tensor *r = tg_where(any, val, tg_full(TG_SHAPE(), 0, dt));
  return nn_done(tg_reshape(r, fin));
}
