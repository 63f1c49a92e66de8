/* small_floats.c: float16, bfloat16 and fp8 are storage types on the CPU.
 * Math on them runs in float32 and is rounded back after each op, which is
 * what numpy's float16 arithmetic gives. */
#include "codegen/codegen.h"
#include "util/util.h"

static bool small(dtype_t d) {
  int s = d.scalar;
  return s == TG_F16 || s == TG_BF16 || s == TG_FP8E4M3 || s == TG_FP8E5M2;
}

static uop *to_f32(uop *x) {
  if (!small(x->dtype)) return x;
  if (x->op == OP_CONST) return uop_const(DT_F32, uop_const_value(x));
  return uop_cast(x, DT_F32);
}

uop *decompose_small_floats(uop *ast) {
  uop_list l = uop_toposort(ast);
  ptrmap m = { 0 };
  uop *res = ast;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    uop *stack_src[64], **src = u->nsrc <= 64 ? stack_src : tg_xmalloc(sizeof(uop *) * (size_t)u->nsrc);   /* a SINK may have many stores */
    for (int j = 0; j < u->nsrc; j++) { uop *r = pm_get(&m, u->src[j]); src[j] = r ? r : u->src[j]; }
    uop *nu;
    bool math = (uop_is_alu(u->op) && u->op != OP_CAST && u->op != OP_BITCAST) || u->op == OP_REDUCE;
    bool any_small = false;
    for (int j = 0; j < u->nsrc; j++) any_small |= small(src[j]->dtype);
    if (math && (small(u->dtype) || any_small)) {
      int first = u->op == OP_WHERE ? 1 : 0;   /* WHERE's condition stays bool */
      for (int j = first; j < u->nsrc; j++) if (u->op != OP_REDUCE || j == 0) src[j] = to_f32(src[j]);
      dtype_t dt = small(u->dtype) ? DT_F32 : u->dtype;
      nu = uop_new(u->op, dt, src, u->nsrc, u->arg);
      if (small(u->dtype)) nu = uop_cast(nu, u->dtype);
    } else {
      nu = uop_replace_src(u, src, u->nsrc);
    }
    if (src != stack_src) free(src);
    if (nu != u) pm_put(&m, u, nu);
    if (i == l.n - 1) res = nu;
  }
  pm_free(&m);
  free(l.v);
  return res;
}
