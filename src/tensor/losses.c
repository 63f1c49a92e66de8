/* losses.c: cross_entropy, nll_loss, sparse_categorical_crossentropy and the
 * binary cross entropies, with torch.nn.functional's formulas, reductions,
 * class weights, ignore_index and label smoothing. */
#include <math.h>
#include "tensor/nn_internal.h"

static const tg_loss_opts default_opts = { 0 };

static bool same_shape_t(const tg_tensor *a, const tg_tensor *b) {
  if (tg_ndim(a) != tg_ndim(b)) return false;
  for (int i = 0; i < tg_ndim(a); i++) if (tg_dim(a, i) != tg_dim(b, i)) return false;
  return true;
}

static tg_tensor *reduce_loss(tg_tensor *l, tg_reduction red) {
  if (red == TG_LOSS_NONE) return l;
  if (red == TG_LOSS_SUM) return tg_sum(l, TG_ALL, false);
  return tg_mean(l, TG_ALL, false);
}

static bool check_opts(const tg_loss_opts *o, const char *op) {
  if ((int)o->reduction < 0 || o->reduction > TG_LOSS_NONE) { tg_seterr("%s: unknown reduction %d", op, (int)o->reduction); return false; }
  if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1)) { tg_seterr("%s: label_smoothing %g must be in [0, 1]", op, o->label_smoothing); return false; }
  return true;
}

/* Shapes for class-index losses: logits (N, C, d...) or (C); target (N, d...)
 * or (). Returns the class axis, or -1 with an error. Checks targets in
 * range when they are readable without running anything. */
static int check_index_target(tg_tensor *x, tg_tensor *t, const tg_loss_opts *o, const char *op) {
  char b1[128], b2[128];
  int nd = tg_ndim(x);
  if (nd < 1) return tg_seterr("%s: input must have a class axis, got a scalar", op);
  int ca = nd == 1 ? 0 : 1;
  int64_t C = tg_dim(x, ca);
  if (!tg_dtype_is_int(tg_dtype_of(t))) return tg_seterr("%s: class-index target must have an int dtype, not %s", op, tg_dtype_name(tg_dtype_of(t)));
  bool ok = tg_ndim(t) == nd - 1;
  for (int i = 0, j = 0; ok && i < nd; i++) if (i != ca) ok = tg_dim(t, j++) == tg_dim(x, i);
  if (!ok) return tg_seterr("%s: target %s must be input %s without its class axis %d", op, nn_shape_str(t, b1, 128), nn_shape_str(x, b2, 128), ca);
  if (o->weight && (tg_ndim(o->weight) != 1 || tg_dim(o->weight, 0) != C))
    return tg_seterr("%s: weight %s must be (%lld), one per class", op, nn_shape_str(o->weight, b1, 128), (long long)C);
  int64_t n = tg_numel(t), ign = o->has_ignore_index ? o->ignore_index : -100;
  int64_t *v = tg_xmalloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int rc = ca;
  if (nn_read_realized_ints(t, v, n))
    for (int64_t i = 0; i < n; i++)
      if (v[i] != ign && (v[i] < 0 || v[i] >= C)) { rc = tg_seterr("%s: target %lld at flat position %lld is out of range for %lld classes", op, (long long)v[i], (long long)i, (long long)C); break; }
  free(v);
  return rc;
}

/* mask (target's shape + class axis at ca): target == class */
static tg_tensor *class_mask(tg_tensor *t, int64_t C, int ca) {
  tg_tensor *oh = nn_one_hot_bool(t, C);
  return oh ? nn_moveaxis(oh, tg_ndim(oh) - 1, ca) : NULL;
}

/* (C) -> broadcastable along axis ca of an nd-D tensor */
static tg_tensor *along(tg_tensor *w, int nd, int ca) {
  tg_shape s = { nd, { 0 } };
  for (int i = 0; i < nd; i++) s.d[i] = i == ca ? -1 : 1;
  return tg_reshape(w, s);
}

/* The class-index negative log likelihood of logp with label smoothing
 * (torch's cross_entropy_loss_label_smoothing; eps 0 is nll_loss). */
static tg_tensor *nll_core(tg_tensor *logp, tg_tensor *t, int ca, const tg_loss_opts *o) {
  int nd = tg_ndim(logp);
  int64_t C = tg_dim(logp, ca);
  tg_dtype dt = tg_dtype_of(logp);
  tg_tensor *zero = tg_scalar(0, dt);
  tg_tensor *m = class_mask(t, C, ca);
  tg_tensor *valid = tg_ne(t, tg_scalar((double)(o->has_ignore_index ? o->ignore_index : -100), tg_dtype_of(t)));
  tg_tensor *wb = o->weight ? along(tg_cast(o->weight, dt), nd, ca) : NULL;
  tg_tensor *picked = tg_sum(tg_where(m, logp, zero), TG_AXES(ca), false);
  /* weight of each target (0 when ignored) */
  tg_tensor *wt = wb ? tg_sum(tg_where(m, wb, zero), TG_AXES(ca), false) : tg_cast(tg_ones_like(t), dt);
  wt = tg_where(valid, wt, zero);
  tg_tensor *nll = tg_neg(tg_mul(picked, wt));
  tg_tensor *den = NULL;
  if (o->reduction == TG_LOSS_MEAN) den = tg_sum(wt, TG_ALL, false);
  tg_tensor *r = o->reduction == TG_LOSS_NONE ? nll : tg_sum(nll, TG_ALL, false);
  if (den) r = tg_div(r, den);
  double eps = o->label_smoothing;
  if (eps > 0) {
    tg_tensor *sm = tg_neg(tg_sum(wb ? tg_mul(logp, wb) : logp, TG_AXES(ca), false));
    sm = tg_where(valid, sm, zero);
    tg_tensor *sr = o->reduction == TG_LOSS_NONE ? sm : tg_sum(sm, TG_ALL, false);
    if (den) sr = tg_div(sr, den);
    r = tg_add(tg_muls(r, 1 - eps), tg_muls(sr, eps / (double)C));
  }
  if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
  return r;
}

tg_tensor *tg_nll_loss(tg_tensor *logp, tg_tensor *target, const tg_loss_opts *o) {
  const char *op = "tg_nll_loss";
  NEED(logp, op); NEED(target, op);
  if (!o) o = &default_opts;
  if (!check_opts(o, op)) return NULL;
  if (o->label_smoothing != 0) TG_FAIL("%s: label_smoothing %g is not supported (use tg_cross_entropy)", op, o->label_smoothing);
  if (!tg_dtype_is_float(tg_dtype_of(logp))) TG_FAIL("%s: input must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(logp)));
  int ca = check_index_target(logp, target, o, op);
  if (ca < 0) return NULL;
  tg_scope_begin();
  return nn_done(nll_core(logp, target, ca, o));
}

tg_tensor *tg_cross_entropy(tg_tensor *x, tg_tensor *target, const tg_loss_opts *o) {
  const char *op = "tg_cross_entropy";
  NEED(x, op); NEED(target, op);
  if (!o) o = &default_opts;
  if (!check_opts(o, op)) return NULL;
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("%s: input must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(x)));
  int nd = tg_ndim(x);
  char b1[128], b2[128];
  if (tg_dtype_is_int(tg_dtype_of(target))) {
    int ca = check_index_target(x, target, o, op);
    if (ca < 0) return NULL;
    tg_scope_begin();
    return nn_done(nll_core(tg_log_softmax(x, ca), target, ca, o));
  }
  if (!tg_dtype_is_float(tg_dtype_of(target))) TG_FAIL("%s: target must hold class indices (int) or probabilities (float), not %s", op, tg_dtype_name(tg_dtype_of(target)));
  if (nd < 1) TG_FAIL("%s: input must have a class axis, got a scalar", op);
  if (!same_shape_t(x, target)) TG_FAIL("%s: probability target %s must have the input's shape %s", op, nn_shape_str(target, b1, 128), nn_shape_str(x, b2, 128));
  int ca = nd == 1 ? 0 : 1;
  int64_t C = tg_dim(x, ca);
  if (o->weight && (tg_ndim(o->weight) != 1 || tg_dim(o->weight, 0) != C))
    TG_FAIL("%s: weight %s must be (%lld), one per class", op, nn_shape_str(o->weight, b1, 128), (long long)C);
  if (o->has_ignore_index) TG_FAIL("%s: ignore_index is only for class-index targets", op);
  tg_scope_begin();
  tg_dtype dt = tg_dtype_of(x);
  tg_tensor *logp = tg_log_softmax(x, ca);
  tg_tensor *t = tg_cast(target, dt);
  double eps = o->label_smoothing;
  if (eps > 0) t = tg_adds(tg_muls(t, 1 - eps), eps / (double)C);
  tg_tensor *prod = tg_mul(logp, t);
  if (o->weight) prod = tg_mul(prod, along(tg_cast(o->weight, dt), nd, ca));
  tg_tensor *l = tg_neg(tg_sum(prod, TG_AXES(ca), false));
  tg_tensor *r;
  if (o->reduction == TG_LOSS_NONE) r = l;
  else if (o->reduction == TG_LOSS_SUM) r = tg_sum(l, TG_ALL, false);
  else r = tg_divs(tg_sum(l, TG_ALL, false), (double)(tg_numel(x) / (C ? C : 1)));
  if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
  return nn_done(r);
}

tg_tensor *tg_sparse_categorical_crossentropy(tg_tensor *x, tg_tensor *target, const tg_loss_opts *o) {
  const char *op = "tg_sparse_categorical_crossentropy";
  NEED(x, op); NEED(target, op);
  if (!tg_dtype_is_int(tg_dtype_of(target))) TG_FAIL("%s: target must hold class indices (an int dtype), not %s", op, tg_dtype_name(tg_dtype_of(target)));
  if (tg_ndim(x) <= 2) return tg_cross_entropy(x, target, o);
  tg_scope_begin();
  return nn_done(tg_cross_entropy(nn_moveaxis(x, tg_ndim(x) - 1, 1), target, o));
}

/* ---------------------------------------------------------------- binary */

static bool binary_checks(tg_tensor *x, tg_tensor *y, const tg_loss_opts *o, const char *op) {
  char b1[128], b2[128];
  if (!check_opts(o, op)) return false;
  if (!tg_dtype_is_float(tg_dtype_of(x))) { tg_seterr("%s: input must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(x))); return false; }
  if (!tg_dtype_is_float(tg_dtype_of(y))) { tg_seterr("%s: target must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(y))); return false; }
  if (!same_shape_t(x, y)) { tg_seterr("%s: target %s must have the input's shape %s", op, nn_shape_str(y, b1, 128), nn_shape_str(x, b2, 128)); return false; }
  if (o->has_ignore_index || o->label_smoothing != 0) { tg_seterr("%s: ignore_index and label_smoothing are not supported", op); return false; }
  return true;
}

tg_tensor *tg_binary_crossentropy(tg_tensor *p, tg_tensor *y, const tg_loss_opts *o) {
  const char *op = "tg_binary_crossentropy";
  NEED(p, op); NEED(y, op);
  if (!o) o = &default_opts;
  if (!binary_checks(p, y, o, op)) return NULL;
  if (o->pos_weight) TG_FAIL("%s: pos_weight is only for tg_binary_crossentropy_logits", op);
  tg_scope_begin();
  tg_dtype dt = tg_dtype_of(p);
  tg_tensor *yy = tg_cast(y, dt), *lo = tg_scalar(-100, dt);
  tg_tensor *lp = tg_maximum(tg_log(p), lo);
  tg_tensor *l1p = tg_maximum(tg_log(tg_sub(tg_scalar(1, dt), p)), lo);
  tg_tensor *l = tg_neg(tg_add(tg_mul(yy, lp), tg_mul(tg_sub(tg_scalar(1, dt), yy), l1p)));
  if (o->weight) l = tg_mul(l, o->weight);
  tg_tensor *r = reduce_loss(l, o->reduction);
  if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
  return nn_done(r);
}

tg_tensor *tg_binary_crossentropy_logits(tg_tensor *x, tg_tensor *y, const tg_loss_opts *o) {
  const char *op = "tg_binary_crossentropy_logits";
  NEED(x, op); NEED(y, op);
  if (!o) o = &default_opts;
  if (!binary_checks(x, y, o, op)) return NULL;
  tg_scope_begin();
  tg_dtype dt = tg_dtype_of(x);
  tg_tensor *yy = tg_cast(y, dt), *one = tg_scalar(1, dt);
  /* -log_sigmoid(x) = max(-x, 0) + log1p(exp(-|x|)) */
  tg_tensor *nls = tg_add(tg_maximum(tg_neg(x), tg_scalar(0, dt)), tg_log1p(tg_exp(tg_neg(tg_abs(x)))));
  tg_tensor *lw = o->pos_weight ? tg_add(tg_mul(tg_sub(tg_cast(o->pos_weight, dt), one), yy), one) : NULL;
  tg_tensor *l = tg_add(tg_mul(tg_sub(one, yy), x), lw ? tg_mul(lw, nls) : nls);
  if (o->weight) l = tg_mul(l, o->weight);
  tg_tensor *r = reduce_loss(l, o->reduction);
  if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
  return nn_done(r);
}
