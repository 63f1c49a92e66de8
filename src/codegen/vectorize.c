/* vectorize.c: turns one UPCAST range into SIMD lanes. Every node that
 * depends on the range becomes a vector (float.vec(16)); loads and stores
 * whose address steps by one element per lane become vector loads/stores,
 * addresses that do not change across lanes stay scalar and are broadcast.
 * Anything else (gathers, transcendental math, small floats) makes the pass
 * give up, and the range is expanded into scalar lanes instead. */
#include "codegen/opts.h"
#include "schedule/schedule.h"
#include "uop/symbolic.h"
#include "util/util.h"

typedef struct {
  uop *node;        /* the rebuilt node (NULL for pure lane-affine index math) */
  bool vec;         /* varies across lanes */
  uop *base;        /* index math: lane l is base + stride * l */
  int64_t stride;
  bool affine;
} vinfo;

static bool small_float(dtype_t d) {
  return d.scalar == TG_F16 || d.scalar == TG_BF16 || d.scalar == TG_FP8E4M3 || d.scalar == TG_FP8E5M2;
}

static bool vec_alu_ok(const uop *u) {
  switch (u->op) {
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_FDIV: case OP_MAX: case OP_NEG: case OP_RECIPROCAL:
  case OP_CMPLT: case OP_CMPNE: case OP_CMPEQ: case OP_WHERE: case OP_CAST:
    return true;
  case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:   /* integer lanes (unpacking quantized weights) */
    return !dt_is_float(u->dtype) && u->dtype.scalar != TG_BOOL;
  default: return false;
  }
}

uop *kernel_vectorize(uop *ast, uop *lane_range) {
  int k = (int)uop_const_value(lane_range->src[0]);
  uop_list l = uop_toposort(ast);
  ptrmap info = { 0 };
  vinfo *vi = tg_xcalloc((size_t)l.n, sizeof(vinfo));
  bool fail = false;
  uop *result = NULL;
  for (int i = 0; i < l.n && !fail; i++) {
    uop *u = l.v[i];
    vinfo *me = &vi[i];
    pm_put(&info, u, me);
    if (u == lane_range) { me->vec = true; me->affine = true; me->base = uop_const_int(DT_INDEX, 0); me->stride = 1; continue; }
    vinfo *s_stack[64], **s = u->nsrc <= 64 ? s_stack : tg_xmalloc(sizeof(vinfo *) * (size_t)u->nsrc);
    bool anyvec = false;
    for (int j = 0; j < u->nsrc; j++) { s[j] = pm_get(&info, u->src[j]); anyvec |= s[j]->vec; }
    if (!anyvec) {
      uop **src = tg_xmalloc(sizeof(uop *) * (size_t)(u->nsrc + 1));
      for (int j = 0; j < u->nsrc; j++) src[j] = s[j]->node;
      me->node = uop_replace_src(u, src, u->nsrc);
      free(src);
      if (s != s_stack) free(s);
      me->base = me->node; me->stride = 0; me->affine = dt_eq(u->dtype, DT_INDEX);
      continue;
    }
    me->vec = true;
    if (dt_eq(u->dtype, DT_INDEX) && uop_is_alu(u->op)) {
      /* lane-affine index arithmetic */
      vinfo *a = s[0], *b = u->nsrc > 1 ? s[1] : NULL;
      if (!a->affine || (b && !b->affine)) { fail = true; break; }
      me->affine = true;
      if (u->op == OP_ADD) { me->base = uop_alu(OP_ADD, a->base, b->base); me->stride = a->stride + b->stride; }
      else if (u->op == OP_SUB) { me->base = uop_alu(OP_SUB, a->base, b->base); me->stride = a->stride - b->stride; }
      else if (u->op == OP_MUL && !b->vec && b->base->op == OP_CONST) { me->base = uop_alu(OP_MUL, a->base, b->base); me->stride = a->stride * b->base->arg.i; }
      else if (u->op == OP_MUL && !a->vec && a->base->op == OP_CONST) { me->base = uop_alu(OP_MUL, a->base, b->base); me->stride = b->stride * a->base->arg.i; }
      else fail = true;
      continue;
    }
    switch (u->op) {
    case OP_INDEX: {
      vinfo *ix = s[1];
      /* bools are one byte in memory but comparison masks in registers */
      if (u->dtype.scalar == TG_BOOL) { fail = true; break; }
      if (!ix->affine || (u->nsrc > 2 && s[2]->vec) || ix->stride != 1) { fail = true; break; }
      uop *src[3] = { s[0]->node, uop_simplify(ix->base), u->nsrc > 2 ? s[2]->node : NULL };
      me->node = uop_new(OP_INDEX, dt_vec(u->dtype, k), src, u->nsrc, u->arg);
      break;
    }
    case OP_LOAD:
      me->node = uop1(OP_LOAD, dt_vec(u->dtype, k), s[0]->node, u->arg);
      break;
    case OP_STORE:
      if (!s[0]->vec) { fail = true; break; }   /* every lane writing one address */
      me->node = uop2(OP_STORE, DT_VOID, s[0]->node, s[1]->node, u->arg);
      me->vec = false;
      break;
    case OP_REDUCE: {
      uop *src[64];
      for (int j = 0; j < u->nsrc; j++) src[j] = s[j]->node;
      if (!src[0] || small_float(u->dtype)) { fail = true; break; }
      me->node = uop_new(OP_REDUCE, dt_vec(u->dtype, k), src, u->nsrc, u->arg);
      break;
    }
    case OP_SINK: {
      uop **src = tg_xmalloc(sizeof(uop *) * (size_t)(u->nsrc + 1));
      for (int j = 0; j < u->nsrc; j++) src[j] = s[j]->node;
      me->node = uop_new(OP_SINK, DT_VOID, src, u->nsrc, u->arg);
      free(src);
      me->vec = false;
      break;
    }
    default: {
      if (!uop_is_alu(u->op) || !vec_alu_ok(u) || small_float(u->dtype) || (u->dtype.scalar == TG_BOOL && !uop_is_comparison(u->op))) { fail = true; break; }
      uop *src[3];
      for (int j = 0; j < u->nsrc; j++) {
        if (!s[j]->node || small_float(u->src[j]->dtype)) { fail = true; break; }
        src[j] = s[j]->node;
      }
      if (fail) break;
      /* masks are as wide as 4-byte lanes: compare and select 4-byte values only */
      if (uop_is_comparison(u->op) && dt_itemsize(u->src[0]->dtype) != 4) { fail = true; break; }
      if (u->op == OP_WHERE && (s[0]->vec && dt_itemsize(u->dtype) != 4)) { fail = true; break; }
      if (u->op == OP_CAST && (u->src[0]->dtype.scalar == TG_BOOL || u->dtype.scalar == TG_BOOL)) { fail = true; break; }
      me->node = uop_new(u->op, dt_vec(u->dtype, k), src, u->nsrc, u->arg);
    }
    }
    if (s != s_stack) free(s);
    if (i == l.n - 1) result = me->node;
  }
  if (!fail && !result) result = vi[l.n - 1].node;
  free(vi);
  free(l.v);
  pm_free(&info);
  return fail ? NULL : result;
}
