/* optim.c: tinygrad's optimizers (nn/optim.py): SGD (with momentum and
 * nesterov, torch's formula) and LAMB, of which Adam and AdamW are the
 * trust-ratio-free forms. Every update is a tg_assign into the parameter's
 * memory, and the state (momenta, the bias-correction powers b1^t and b2^t,
 * the learning rate) lives in tensors updated the same way, so a training
 * step captured by tg_jit replays with the right step count and lr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "util/util.h"

typedef enum { OPT_SGD, OPT_LAMB } opt_kind;

struct tg_optim {
  opt_kind kind;
  int n;
  tg_tensor **params;           /* borrowed */
  tg_tensor *lr;                /* 0-d float32, owned */
  double lr_value;
  /* SGD */
  double momentum, wd;
  bool nesterov;
  tg_tensor **b;                /* momentum buffers (NULL without momentum) */
  /* LAMB / Adam / AdamW */
  double b1, b2, eps;
  bool adam;                    /* no trust ratio */
  tg_tensor *b1_t, *b2_t;       /* b1^t, b2^t as 0-d float32 */
  tg_tensor **m, **v;
};

static tg_tensor *scalar_f32(double v) {
  float f = (float)v;
  return tg_from_data(&f, TG_SHAPE(), TG_F32);
}

static tg_optim *optim_alloc(const char *fn, tg_tensor *const *params, int n, double lr) {
  if (n < 0 || (n > 0 && !params)) TG_FAIL("%s: bad parameter list", fn);
  for (int i = 0; i < n; i++) {
    if (!params[i]) TG_FAIL("%s: parameter %d is NULL", fn, i);
    if (!tg_dtype_is_float(tg_dtype_of(params[i]))) TG_FAIL("%s: parameter %d is %s, not a float tensor", fn, i, tg_dtype_name(tg_dtype_of(params[i])));
  }
  tg_optim *o = tg_xcalloc(1, sizeof *o);
  o->n = n;
  o->params = tg_xcalloc((size_t)(n ? n : 1), sizeof(tg_tensor *));
  if (n) memcpy(o->params, params, sizeof(tg_tensor *) * (size_t)n);
  o->lr_value = lr;
  tg_scope_begin();
  o->lr = nn_own(scalar_f32(lr), false);
  tg_scope_end();
  if (!o->lr) { tg_optim_free(o); return NULL; }
  return o;
}

/* n zero tensors shaped like the parameters (float32), owned. */
static tg_tensor **zeros_like_params(tg_optim *o, bool *ok) {
  tg_tensor **z = tg_xcalloc((size_t)(o->n ? o->n : 1), sizeof(tg_tensor *));
  tg_scope_begin();
  for (int i = 0; i < o->n; i++) {
    z[i] = nn_own(tg_zeros(tg_shape_of(o->params[i]), TG_F32), false);
    if (!z[i]) *ok = false;
  }
  tg_scope_end();
  return z;
}

tg_optim *tg_sgd_new(tg_tensor *const *params, int n, double lr, double momentum, double weight_decay, bool nesterov) {
  if (nesterov && momentum <= 0) TG_FAIL("tg_sgd_new: nesterov needs a positive momentum");
  tg_optim *o = optim_alloc("tg_sgd_new", params, n, lr);
  if (!o) return NULL;
  o->kind = OPT_SGD; o->momentum = momentum; o->wd = weight_decay; o->nesterov = nesterov;
  bool ok = true;
  if (momentum != 0) o->b = zeros_like_params(o, &ok);
  if (!ok) { tg_optim_free(o); return NULL; }
  return o;
}

static tg_optim *lamb_new(const char *fn, tg_tensor *const *params, int n, double lr, double b1, double b2, double eps, double wd, bool adam) {
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1)) TG_FAIL("%s: betas (%g, %g) must be in [0, 1)", fn, b1, b2);
  tg_optim *o = optim_alloc(fn, params, n, lr);
  if (!o) return NULL;
  o->kind = OPT_LAMB; o->b1 = b1; o->b2 = b2; o->eps = eps; o->wd = wd; o->adam = adam;
  bool ok = true;
  o->m = zeros_like_params(o, &ok);
  o->v = zeros_like_params(o, &ok);
  tg_scope_begin();
  o->b1_t = nn_own(scalar_f32(1), false);
  o->b2_t = nn_own(scalar_f32(1), false);
  tg_scope_end();
  if (!ok || !o->b1_t || !o->b2_t) { tg_optim_free(o); return NULL; }
  return o;
}

tg_optim *tg_adam_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps) {
  return lamb_new("tg_adam_new", params, n, lr, b1, b2, eps, 0.0, true);
}
tg_optim *tg_adamw_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps, double weight_decay) {
  return lamb_new("tg_adamw_new", params, n, lr, b1, b2, eps, weight_decay, true);
}
tg_optim *tg_lamb_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps, double weight_decay) {
  return lamb_new("tg_lamb_new", params, n, lr, b1, b2, eps, weight_decay, false);
}

static void free_list(tg_tensor **v, int n) {
  if (!v) return;
  for (int i = 0; i < n; i++) tg_free(v[i]);
  free(v);
}

void tg_optim_free(tg_optim *o) {
  if (!o) return;
  free_list(o->b, o->n); free_list(o->m, o->n); free_list(o->v, o->n);
  tg_free(o->b1_t); tg_free(o->b2_t); tg_free(o->lr);
  free(o->params);
  free(o);
}

/* 1 - x */
static tg_tensor *one_minus(tg_tensor *x) { return tg_adds(tg_neg(x), 1.0); }

/* Issues the assigns of one step; targets[] gets every tensor written
 * (room for 3 per parameter plus 2). */
static int build_step(tg_optim *o, tg_tensor **targets, int *nt) {
  bool ng = tg_no_grad();
  tg_set_no_grad(true);
  tg_scope_begin();
  int rc = 0;
  *nt = 0;
  tg_tensor *lr = o->lr;
  if (o->kind == OPT_LAMB) {
    if (!tg_assign(o->b1_t, tg_muls(o->b1_t, o->b1)) || !tg_assign(o->b2_t, tg_muls(o->b2_t, o->b2))) rc = -1;
    targets[(*nt)++] = o->b1_t;
    targets[(*nt)++] = o->b2_t;
  }
  for (int i = 0; rc == 0 && i < o->n; i++) {
    tg_tensor *p = o->params[i], *g = tg_grad(p);
    if (!g) continue;
    tg_dtype pdt = tg_dtype_of(p);
    tg_tensor *t = tg_cast(tg_detach(p), TG_F32);
    g = tg_cast(tg_detach(g), TG_F32);
    tg_tensor *upd;
    if (o->kind == OPT_SGD) {
      if (o->wd != 0) g = tg_add(g, tg_muls(t, o->wd));
      if (o->momentum != 0) {
        if (!tg_assign(o->b[i], tg_add(tg_muls(o->b[i], o->momentum), g))) { rc = -1; break; }
        targets[(*nt)++] = o->b[i];
        g = o->nesterov ? tg_add(g, tg_muls(o->b[i], o->momentum)) : o->b[i];
      }
      upd = tg_mul(g, lr);
    } else {
      if (!tg_assign(o->m[i], tg_add(tg_muls(o->m[i], o->b1), tg_muls(g, 1.0 - o->b1))) ||
          !tg_assign(o->v[i], tg_add(tg_muls(o->v[i], o->b2), tg_muls(tg_mul(g, g), 1.0 - o->b2)))) { rc = -1; break; }
      targets[(*nt)++] = o->m[i];
      targets[(*nt)++] = o->v[i];
      tg_tensor *m_hat = tg_div(o->m[i], one_minus(o->b1_t));
      tg_tensor *v_hat = tg_div(o->v[i], one_minus(o->b2_t));
      tg_tensor *up = tg_div(m_hat, tg_adds(tg_sqrt(v_hat), o->eps));
      if (o->wd != 0) up = tg_add(up, tg_muls(t, o->wd));
      if (!o->adam) {
        tg_tensor *r1 = tg_sqrt(tg_sum(tg_mul(t, t), TG_ALL, false));
        tg_tensor *r2 = tg_sqrt(tg_sum(tg_mul(up, up), TG_ALL, false));
        tg_tensor *zero = tg_scalar(0, TG_F32), *one = tg_scalar(1, TG_F32);
        tg_tensor *r = tg_where(tg_gt(r1, zero), tg_where(tg_gt(r2, zero), tg_div(r1, r2), one), one);
        up = tg_mul(up, r);
      }
      upd = tg_mul(up, lr);
    }
    if (!tg_assign(p, tg_cast(tg_sub(t, upd), pdt))) { rc = -1; break; }
    targets[(*nt)++] = p;
  }
  tg_scope_end();
  tg_set_no_grad(ng);
  return rc;
}

int tg_optim_schedule_step(tg_optim *o) {
  if (!o) return tg_seterr("tg_optim_schedule_step: optimizer is NULL");
  tg_tensor **targets = tg_xcalloc((size_t)(3 * o->n + 2), sizeof(tg_tensor *));
  int nt = 0, rc = build_step(o, targets, &nt);
  free(targets);
  return rc;
}

int tg_optim_step(tg_optim *o) {
  if (!o) return tg_seterr("tg_optim_step: optimizer is NULL");
  tg_tensor **targets = tg_xcalloc((size_t)(3 * o->n + 2), sizeof(tg_tensor *));
  int nt = 0, rc = build_step(o, targets, &nt);
  if (rc == 0 && nt > 0) rc = tg_realize_all(targets, nt);
  free(targets);
  return rc < 0 ? -1 : 0;
}

void tg_optim_zero_grad(tg_optim *o) {
  for (int i = 0; o && i < o->n; i++) tg_zero_grad(o->params[i]);
}

int tg_optim_set_lr(tg_optim *o, double lr) {
  if (!o) return tg_seterr("tg_optim_set_lr: optimizer is NULL");
  tg_scope_begin();
  int rc = -1;
  if (tg_assign(o->lr, scalar_f32(lr))) rc = tg_realize(o->lr);
  tg_scope_end();
  if (rc == 0) o->lr_value = lr;
  return rc < 0 ? -1 : 0;
}

double tg_optim_get_lr(const tg_optim *o) {
  if (!o) { tg_seterr("tg_optim_get_lr: optimizer is NULL"); return NAN; }
  return o->lr_value;
}
tg_tensor *tg_optim_lr(const tg_optim *o) {
  if (!o) TG_FAIL("tg_optim_lr: optimizer is NULL");
  return o->lr;
}

int tg_optim_state(const tg_optim *o, tg_state_dict *sd, const char *prefix) {
  if (!o || !sd) return tg_seterr("tg_optim_state: %s is NULL", !o ? "optimizer" : "state dict sd");
  if (nn_state_add(sd, prefix, "lr", o->lr) < 0 || nn_state_add(sd, prefix, "b1_t", o->b1_t) < 0 ||
      nn_state_add(sd, prefix, "b2_t", o->b2_t) < 0) return -1;
  char name[64];
  for (int i = 0; i < o->n; i++) {
    struct { const char *n; tg_tensor **v; } lists[3] = { { "m", o->m }, { "v", o->v }, { "b", o->b } };
    for (int k = 0; k < 3; k++) {
      if (!lists[k].v) continue;
      snprintf(name, sizeof name, "%s.%d", lists[k].n, i);
      if (nn_state_add(sd, prefix, name, lists[k].v[i]) < 0) return -1;
    }
  }
  return 0;
}
