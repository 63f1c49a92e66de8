/* small_floats.c: float16, bfloat16 and fp8 are storage types on the CPU.
 * Math on them runs in float32 and is rounded back after each op, which is
 * what numpy's float16 arithmetic gives. Two rules, applied bottom-up:
 *
 *   op.small(a, b, ...)  ->  cast.small(op.f32(f32(a), f32(b), ...))
 *   op(a.small, ...)     ->  op(f32(a), ...)        (a comparison, say)
 *
 * where f32(x) is a float32 CONST for a constant, else a CAST; WHERE's
 * condition and a REDUCE's ranges are left as they are. */
#include "codegen/codegen.h"
#include "uop/rewrite.h"

static bool small(dtype_t d) {
  int s = d.scalar;
  return s == TG_F16 || s == TG_BF16 || s == TG_FP8E4M3 || s == TG_FP8E5M2;
}

static uop *to_f32(uop *x) {
  if (!small(x->dtype)) return x;
  if (x->op == OP_CONST) return uop_const(DT_F32, uop_const_value(x));
  return uop_cast(x, DT_F32);
}

/* u's operation with its small-float operands in float32, in dtype dt. */
static uop *with_f32_operands(uop *u, dtype_t dt) {
  uop *stack_src[64], **src = u->nsrc <= 64 ? stack_src : tg_xmalloc(sizeof(uop *) * (size_t)u->nsrc);   /* a SINK may have many stores */
  int first = u->op == OP_WHERE ? 1 : 0;   /* WHERE's condition stays bool */
  int last = u->op == OP_REDUCE ? 1 : u->nsrc;   /* a REDUCE's ranges stay */
  for (int j = 0; j < u->nsrc; j++) src[j] = j >= first && j < last ? to_f32(u->src[j]) : u->src[j];
  uop *r = uop_new(u->op, dt, src, u->nsrc, u->arg);
  if (src != stack_src) free(src);
  return r;
}

static uop *math_in_f32(void *ctx, const rw_match *m) {
  (void)ctx;
  return uop_cast(with_f32_operands(m->root, DT_F32), m->root->dtype);
}

static bool has_small_operand(void *ctx, const rw_match *m) {
  (void)ctx;
  for (int j = 0; j < m->root->nsrc; j++)
    if (small(m->root->src[j]->dtype)) return true;
  return false;
}

static uop *operands_in_f32(void *ctx, const rw_match *m) {
  (void)ctx;
  return with_f32_operands(m->root, m->root->dtype);
}

static const tg_rule small_float_rules[] = {
  { .pattern = "({ALU,REDUCE,!CAST,!BITCAST}.small ...)", .fn = math_in_f32, .name = "small-float math in f32, rounded back" },
  { .pattern = "({ALU,REDUCE,!CAST,!BITCAST} ...)", .guard = has_small_operand, .fn = operands_in_f32,
    .name = "small-float operands in f32" },
};

uop *decompose_small_floats(uop *ast) {
  static tg_matcher *m;
  return graph_rewrite(ast, matcher_once(&m, small_float_rules, RW_NRULES(small_float_rules), "small floats"), NULL);
}
