/* dims.c: how symbolic axes flow through the tensor graph (see dims.h).
 *
 * Per axis a node is static, symbolic (runs to a variable v), or a
 * broadcast (one value repeated: an EXPAND of a size-1 axis). Elementwise
 * ops line up symbolic axes with the same variable, broadcasts and size-1
 * axes; a symbolic axis against a static one of size > 1, or two different
 * variables, is an error. Movement ops carry an axis along when its index
 * math stays the same (permute, a reshape that keeps it whole) and refuse
 * what would read past the variable (pad, shrink, flip, windows of it). */
#include <stdarg.h>
#include "uop/dims.h"
#include "uop/uop_call.h"
#include "util/util.h"

static void fail(uop *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(uop *u, const char *fmt, ...) {
  char *m = tg_xmalloc(256);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, 256, fmt, ap);
  va_end(ap);
  u->dim_err = m;
  u->dim_err_own = true;
}

static const char *vname(const uop *v) { return v->arg.s; }
static bool bc(const uop *u, int i) { return i < 64 && (u->dim_bcast >> i & 1); }
static void set_bc(uop *u, int i) { if (i < 64) u->dim_bcast |= 1ULL << i; }
static void set_var(uop *u, int i, uop *v) {
  if (!v) return;
  if (!u->dim_var) u->dim_var = tg_xcalloc((size_t)u->ndim, sizeof(uop *));
  u->dim_var[i] = v;
  if (i < 64) u->dim_bcast &= ~(1ULL << i);
}
/* axis i of u takes axis j of s (symbolic or broadcast) */
static void copy_axis(uop *u, int i, const uop *s, int j) {
  set_var(u, i, uop_dim_var(s, j));
  if (bc(s, j)) set_bc(u, i);
}

/* Where axis i of s lands in a reshape to shape[nd]: the axis j with the
 * same size and the same number of elements before it; -1 when it is split
 * or merged. */
static int reshape_target(const uop *s, int i, const int64_t *shape, int nd) {
  int64_t pre = 1, p = 1;
  for (int k = 0; k < i; k++) pre *= s->shape[k];
  for (int j = 0; j < nd; j++) {
    if (p == pre && shape[j] == s->shape[i]) return j;
    p *= shape[j];
  }
  return -1;
}

static void shape_str(const int64_t *s, int nd, char *buf, int n) {
  int k = snprintf(buf, (size_t)n, "(");
  for (int i = 0; i < nd && k < n - 24; i++) k += snprintf(buf + k, (size_t)(n - k), i ? ",%lld" : "%lld", (long long)s[i]);
  snprintf(buf + k, (size_t)(n - k), ")");
}

static void elementwise(uop *u) {
  int nd = u->ndim;
  for (int i = 0; i < nd; i++) {
    uop *v = NULL;
    bool all_bc = true;
    for (int k = 0; k < u->nsrc; k++) {
      const uop *s = u->src[k];
      if (s->ndim != nd) continue;
      uop *sv = uop_dim_var(s, i);
      all_bc &= bc(s, i);
      if (sv && v && sv != v) { fail(u, "axis %d mixes two symbolic sizes, '%s' and '%s'", i, vname(v), vname(sv)); return; }
      if (sv) v = sv;
    }
    if (v) {
      for (int k = 0; k < u->nsrc; k++) {
        const uop *s = u->src[k];
        if (s->ndim == nd && !uop_dim_var(s, i) && !bc(s, i) && s->shape[i] != 1) {
          fail(u, "axis %d: symbolic size '%s' against a static size %lld (only size-1 axes broadcast against it)", i, vname(v), (long long)s->shape[i]);
          return;
        }
      }
      set_var(u, i, v);
    } else if (all_bc) set_bc(u, i);
  }
}

void uop_set_dims(uop *u) {
  for (int k = 0; k < u->nsrc; k++)
    if (u->src[k]->dim_err) { u->dim_err = u->src[k]->dim_err; return; }
  if (u->op == OP_CALL && u->arg.kind == ARG_PTR) {   /* the body output's symbolic axes */
    const uop *v = ((const uop_call_target *)u->arg.p)->value;
    for (int i = 0; i < u->ndim && i < v->ndim; i++) set_var(u, i, uop_dim_var(v, i));
    return;
  }
  if (u->ndim <= 0 || !u->nsrc) return;
  const uop *s = u->src[0];
  int nd = u->ndim;
  switch (u->op) {
  case OP_SHRINK_VAR: {
    int a = (int)u->arg.i;
    for (int i = 0; i < nd; i++) copy_axis(u, i, s, i);
    uop *old = uop_dim_var(s, a);
    if (old && old != u->src[1]) { fail(u, "axis %d already runs to '%s', not '%s'", a, vname(old), vname(u->src[1])); return; }
    set_var(u, a, u->src[1]);
    break;
  }
  case OP_UNSHRINK_VAR:
    for (int i = 0; i < nd; i++) if (i != u->arg.i) copy_axis(u, i, s, i);
    break;
  case OP_PERMUTE:
    for (int i = 0; i < nd; i++) copy_axis(u, i, s, (int)u->arg.v[i]);
    break;
  case OP_EXPAND:
    for (int i = 0; i < nd; i++) {
      if (s->shape[i] == 1 && u->shape[i] != 1) {
        if (uop_dim_var(s, i)) { fail(u, "cannot expand axis %d, whose size is the variable '%s'", i, vname(uop_dim_var(s, i))); return; }
        set_bc(u, i);
      } else copy_axis(u, i, s, i);
    }
    break;
  case OP_RESHAPE:
    for (int i = 0; i < s->ndim; i++) {
      if (!uop_dim_var(s, i) && !bc(s, i)) continue;
      int j = reshape_target(s, i, u->shape, nd);
      if (j >= 0) copy_axis(u, j, s, i);
      else if (uop_dim_var(s, i)) {
        char a[160], b[160];
        shape_str(s->shape, s->ndim, a, 160);
        shape_str(u->shape, nd, b, 160);
        fail(u, "reshape %s -> %s splits or merges axis %d, whose size is the variable '%s' (only reshapes that keep it whole are allowed)", a, b, i, vname(uop_dim_var(s, i)));
        return;
      }
    }
    break;
  case OP_PAD: case OP_SHRINK: case OP_FLIP:
    for (int i = 0; i < nd; i++) {
      bool moves = u->op == OP_FLIP ? u->arg.v[i] != 0
                 : u->op == OP_PAD ? u->arg.v[2 * i] != 0 || u->arg.v[2 * i + 1] != 0
                 : u->arg.v[2 * i] != 0 || u->arg.v[2 * i + 1] != s->shape[i];
      if (moves && uop_dim_var(s, i)) {
        fail(u, "cannot %s axis %d, whose size is the variable '%s'", u->op == OP_FLIP ? "flip" : u->op == OP_PAD ? "pad" : "shrink", i, vname(uop_dim_var(s, i)));
        return;
      }
      if (!(moves && u->op == OP_PAD)) copy_axis(u, i, s, i);
    }
    break;
  case OP_WINDOW: {
    int n = (int)u->arg.v[0], lead = s->ndim - n;
    for (int i = 0; i < lead; i++) copy_axis(u, i, s, i);
    for (int j = 0; j < n; j++)
      if (uop_dim_var(s, lead + j)) { fail(u, "cannot take windows along axis %d, whose size is the variable '%s'", lead + j, vname(uop_dim_var(s, lead + j))); return; }
    break;
  }
  case OP_TAKE: {
    const uop *ix = u->src[1];
    if (uop_dim_var(s, 0)) { fail(u, "cannot index into axis 0, whose size is the variable '%s'", vname(uop_dim_var(s, 0))); return; }
    for (int i = 0; i < ix->ndim; i++) copy_axis(u, i, ix, i);
    for (int i = 1; i < s->ndim; i++) copy_axis(u, ix->ndim + i - 1, s, i);
    break;
  }
  case OP_REDUCE_AXIS:
    for (int i = 0; i < nd; i++) {
      bool reduced = false;
      for (int k = 1; k < u->arg.n; k++) reduced |= u->arg.v[k] == i;
      if (!reduced) copy_axis(u, i, s, i);
    }
    break;
  case OP_CONTIGUOUS: case OP_COPY: case OP_DETACH: case OP_ASSIGN: case OP_UNIQUE: case OP_AFTER:
    if (s->ndim == nd) for (int i = 0; i < nd; i++) copy_axis(u, i, s, i);
    break;
  default:
    if (uop_is_alu(u->op)) elementwise(u);
  }
}

uop *uop_with_dims_of(uop *v, const uop *like) {
  for (int i = 0; i < like->ndim && like->dim_var; i++)
    if (like->dim_var[i]) v = uop2(OP_SHRINK_VAR, v->dtype, v, like->dim_var[i], arg_int(i));
  return v;
}
