/* random_ops.c: random tensors built on tg_rand / tg_randn (so tg_manual_seed
 * makes them reproducible): randint, uniform, normal, multinomial, randperm
 * and the kaiming / glorot initializers with tinygrad's formulas. */
#include <math.h>
#include "tensor/nn_internal.h"
#include "engine/realize.h"
#include "runtime/buffer.h"

static bool check_shape(tg_shape s, const char *op) {
  if (s.ndim < 0 || s.ndim > TG_MAX_DIMS) { tg_seterr("%s: bad number of dimensions %d", op, s.ndim); return false; }
  for (int i = 0; i < s.ndim; i++)
    if (s.d[i] < 0) { tg_seterr("%s: negative dimension %lld at axis %d", op, (long long)s.d[i], i); return false; }
  return shape_ok(s.d, s.ndim, op);
}
static bool check_float_dt(tg_dtype dt, const char *op) {
  if ((unsigned)dt >= TG_DTYPE_COUNT || !tg_dtype_is_float(dt)) {
    tg_seterr("%s: dtype must be a float type, not %s", op, (unsigned)dt < TG_DTYPE_COUNT ? tg_dtype_name(dt) : "unknown");
    return false;
  }
  return true;
}
static bool check_int_dt(tg_dtype dt, const char *op) {
  if ((unsigned)dt >= TG_DTYPE_COUNT || !tg_dtype_is_int(dt)) {
    tg_seterr("%s: dtype must be an integer type, not %s", op, (unsigned)dt < TG_DTYPE_COUNT ? tg_dtype_name(dt) : "unknown");
    return false;
  }
  return true;
}
static int64_t shape_prod(tg_shape s, int from) {
  int64_t n = 1;
  for (int i = from; i < s.ndim; i++) n *= s.d[i];
  return n;
}

tg_tensor *tg_uniform(tg_shape shape, double low, double high, tg_dtype dt) {
  const char *op = "tg_uniform";
  if (!check_shape(shape, op) || !check_float_dt(dt, op)) return NULL;
  if (!(low <= high) || !isfinite(low) || !isfinite(high)) TG_FAIL("%s: bounds [%g, %g) must be finite with low <= high", op, low, high);
  tg_scope_begin();
  return nn_done(tg_adds(tg_muls(tg_rand(shape, dt), high - low), low));
}

tg_tensor *tg_normal(tg_shape shape, double mean, double std, tg_dtype dt) {
  const char *op = "tg_normal";
  if (!check_shape(shape, op) || !check_float_dt(dt, op)) return NULL;
  if (!(std >= 0) || !isfinite(std) || !isfinite(mean)) TG_FAIL("%s: std %g must be finite and >= 0 and mean %g finite", op, std, mean);
  tg_scope_begin();
  return nn_done(tg_adds(tg_muls(tg_randn(shape, dt), std), mean));
}

tg_tensor *tg_randint(tg_shape shape, int64_t low, int64_t high, tg_dtype dt) {
  const char *op = "tg_randint";
  if (!check_shape(shape, op) || !check_int_dt(dt, op)) return NULL;
  if (high <= low) TG_FAIL("%s: empty range [%lld, %lld)", op, (long long)low, (long long)high);
  dtype_t d = dt_scalar(dt);
  if ((double)low < dt_min(d) || (double)(high - 1) > dt_max(d))
    TG_FAIL("%s: range [%lld, %lld) does not fit %s", op, (long long)low, (long long)high, tg_dtype_name(dt));
  double range = (double)high - (double)low;
  tg_scope_begin();
  /* floor(u * range) in float64, at most range - 1, as int64, + low */
  tg_tensor *u = tg_cast(tg_rand(shape, TG_F32), TG_F64);
  tg_tensor *k = tg_cast(tg_muls(u, range), TG_I64);
  k = tg_minimum(k, tg_scalar(range - 1, TG_I64));
  return nn_done(tg_cast(tg_adds(k, (double)low), dt));
}

/* Float values of a realized contiguous buffer (f32/f64/f16/bf16), for
 * argument checks that need no kernel. */
static bool read_realized_floats(const tg_tensor *t, double *out, int64_t n) {
  tg_buffer *b = uop_contiguous_buffer(t->u);
  if (!b || !b->ptr || b->numel != n) return false;
  int sz = tg_dtype_size(b->dtype);
  if (!tg_dtype_is_float(b->dtype)) return false;
  unsigned char *tmp = tg_xmalloc((size_t)(n ? n : 1) * (size_t)sz);
  bool ok = buffer_copyout(b, tmp, (size_t)n * (size_t)sz) == 0;
  for (int64_t i = 0; ok && i < n; i++) out[i] = dt_load_scalar(tmp + i * sz, b->dtype);
  free(tmp);
  return ok;
}

tg_tensor *tg_multinomial(tg_tensor *probs, int64_t num_samples, bool replacement) {
  const char *op = "tg_multinomial";
  NEED(probs, op);
  char b1[128];
  int nd = tg_ndim(probs);
  if (nd != 1 && nd != 2) TG_FAIL("%s: probabilities %s must be 1-D (C) or 2-D (B, C)", op, nn_shape_str(probs, b1, 128));
  if (!tg_dtype_is_float(tg_dtype_of(probs))) TG_FAIL("%s: probabilities must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(probs)));
  int64_t C = tg_dim(probs, -1), B = nd == 2 ? tg_dim(probs, 0) : 1;
  if (C <= 0) TG_FAIL("%s: no categories (shape %s)", op, nn_shape_str(probs, b1, 128));
  if (num_samples <= 0) TG_FAIL("%s: num_samples %lld must be positive", op, (long long)num_samples);
  if (!replacement && num_samples > C) TG_FAIL("%s: cannot draw %lld samples without replacement from %lld categories", op, (long long)num_samples, (long long)C);
  int64_t n = B * C;
  double *pv = tg_xmalloc(sizeof(double) * (size_t)n);
  if (read_realized_floats(probs, pv, n)) {
    for (int64_t b = 0; b < B; b++) {
      double s = 0;
      int64_t pos = 0;
      for (int64_t c = 0; c < C; c++) {
        double v = pv[b * C + c];
        if (!(v >= 0) || isinf(v)) { free(pv); TG_FAIL("%s: probability %g at (%lld, %lld) must be finite and >= 0", op, v, (long long)b, (long long)c); }
        s += v; pos += v > 0;
      }
      if (s <= 0) { free(pv); TG_FAIL("%s: the probabilities of row %lld sum to 0", op, (long long)b); }
      if (!replacement && pos < num_samples) { free(pv); TG_FAIL("%s: row %lld has %lld nonzero categories, fewer than %lld samples without replacement", op, (long long)b, (long long)pos, (long long)num_samples); }
    }
  }
  free(pv);
  tg_scope_begin();
  tg_tensor *w = tg_cast(tg_reshape(probs, TG_SHAPE(B, C)), TG_F32);
  tg_tensor *r;
  if (replacement) {
    /* inverse CDF: cdf = cumsum(w) / sum(w); index = #{c : u >= cdf_c} */
    tg_tensor *ar = tg_arange(0, (double)C, 1, TG_I32);
    tg_tensor *tri = tg_le(tg_reshape(ar, TG_SHAPE(1, C)), tg_reshape(ar, TG_SHAPE(C, 1)));   /* [i, j]: j <= i */
    tg_tensor *cw = tg_sum(tg_where(tri, tg_reshape(w, TG_SHAPE(B, 1, C)), tg_scalar(0, TG_F32)), TG_AXES(-1), false);
    tg_tensor *cdf = tg_div(cw, tg_sum(w, TG_AXES(-1), true));
    tg_tensor *u = tg_rand(TG_SHAPE(B, num_samples, 1), TG_F32);
    tg_tensor *cnt = tg_sum(tg_ge(u, tg_reshape(cdf, TG_SHAPE(B, 1, C))), TG_AXES(-1), false);
    r = tg_minimum(tg_cast(cnt, TG_I32), tg_scalar((double)(C - 1), TG_I32));
  } else {
    /* weighted sampling without replacement (Efraimidis-Spirakis): key
     * log(1-u)/w, the num_samples largest keys in decreasing order; the rank
     * of key i counts larger keys and equal keys before it */
    tg_tensor *u = tg_rand(TG_SHAPE(B, C), TG_F32);
    tg_tensor *key = tg_div(tg_log(tg_sub(tg_scalar(1, TG_F32), u)), w);
    key = tg_contiguous(tg_where(tg_gt(w, tg_scalar(0, TG_F32)), key, tg_scalar(-INFINITY, TG_F32)));
    tg_tensor *ki = tg_reshape(key, TG_SHAPE(B, C, 1)), *kj = tg_reshape(key, TG_SHAPE(B, 1, C));
    tg_tensor *ar = tg_arange(0, (double)C, 1, TG_I32);
    tg_tensor *before = tg_lt(tg_reshape(ar, TG_SHAPE(1, C)), tg_reshape(ar, TG_SHAPE(C, 1)));   /* [i, j]: j < i */
    tg_tensor *ahead = tg_logical_or(tg_gt(kj, ki), tg_logical_and(tg_eq(kj, ki), before));
    tg_tensor *rank = tg_sum(ahead, TG_AXES(-1), false);   /* (B, C) int32 */
    tg_tensor *hit = nn_one_hot_bool(rank, num_samples);     /* (B, C, S) */
    r = tg_sum(tg_where(hit, tg_reshape(ar, TG_SHAPE(1, C, 1)), tg_scalar(0, TG_I32)), TG_AXES(1), false);
    r = tg_cast(r, TG_I32);
  }
  if (nd == 1) r = tg_reshape(r, TG_SHAPE(num_samples));
  return nn_done(r);
}

tg_tensor *tg_randperm(int64_t n, tg_dtype dt) {
  const char *op = "tg_randperm";
  if (!check_int_dt(dt, op)) return NULL;
  if (n < 0) TG_FAIL("%s: negative length %lld", op, (long long)n);
  if (n > 0 && (double)(n - 1) > dt_max(dt_scalar(dt))) TG_FAIL("%s: %lld values do not fit %s", op, (long long)n, tg_dtype_name(dt));
  if (n == 0) return tg_zeros(TG_SHAPE(0), dt);
  tg_scope_begin();
  /* the ranks of n independent uniform keys are a uniform permutation */
  tg_tensor *key = tg_contiguous(tg_rand(TG_SHAPE(n), TG_F32));
  tg_tensor *ki = tg_reshape(key, TG_SHAPE(n, 1)), *kj = tg_reshape(key, TG_SHAPE(1, n));
  tg_tensor *ar = tg_arange(0, (double)n, 1, TG_I32);
  tg_tensor *before = tg_lt(tg_reshape(ar, TG_SHAPE(1, n)), tg_reshape(ar, TG_SHAPE(n, 1)));
  tg_tensor *below = tg_logical_or(tg_lt(kj, ki), tg_logical_and(tg_eq(kj, ki), before));
  return nn_done(tg_cast(tg_sum(below, TG_AXES(-1), false), dt));
}

tg_tensor *tg_kaiming_uniform(tg_shape shape, double a, tg_dtype dt) {
  const char *op = "tg_kaiming_uniform";
  if (!check_shape(shape, op) || !check_float_dt(dt, op)) return NULL;
  if (shape.ndim < 1) TG_FAIL("%s: shape needs at least 1 dimension", op);
  int64_t fan_in = shape_prod(shape, 1);
  if (fan_in == 0 || shape_prod(shape, 0) == 0) return tg_zeros(shape, dt);
  double bound = sqrt(3.0) * sqrt(2.0 / (1 + a * a)) / sqrt((double)fan_in);
  return tg_uniform(shape, -bound, bound, dt);
}

tg_tensor *tg_kaiming_normal(tg_shape shape, double a, tg_dtype dt) {
  const char *op = "tg_kaiming_normal";
  if (!check_shape(shape, op) || !check_float_dt(dt, op)) return NULL;
  if (shape.ndim < 1) TG_FAIL("%s: shape needs at least 1 dimension", op);
  int64_t fan_in = shape_prod(shape, 1);
  if (fan_in == 0 || shape_prod(shape, 0) == 0) return tg_zeros(shape, dt);
  double std = sqrt(2.0 / (1 + a * a)) / sqrt((double)fan_in);
  return tg_normal(shape, 0, std, dt);
}

tg_tensor *tg_glorot_uniform(tg_shape shape, tg_dtype dt) {
  const char *op = "tg_glorot_uniform";
  if (!check_shape(shape, op) || !check_float_dt(dt, op)) return NULL;
  if (shape.ndim < 1) TG_FAIL("%s: shape needs at least 1 dimension", op);
  if (shape_prod(shape, 0) == 0) return tg_zeros(shape, dt);
  double bound = sqrt(6.0 / (double)(shape.d[0] + shape_prod(shape, 1)));
  return tg_uniform(shape, -bound, bound, dt);
}
