/* elementwise.c: broadcasting, dtype promotion, and the elementwise ops,
 * written in terms of the ALU primitives like tinygrad's Tensor. */
#include <math.h>
#include "tensor/tensor.h"
#include "tensor/math_internal.h"
#include "tensor/shard.h"

/* The device of an op over a and b, NULL with an error naming both; a
 * tensor that reads no memory (a constant, an arange) goes with a sharded
 * one (shard.h's tensor_join_device). */
static const char *same_device(const tg_tensor *a, const tg_tensor *b, const char *op) {
  return tensor_join_device(a, b, op);
}

/* numpy broadcasting of two shapes; -1 and an error when incompatible */
static int broadcast_shape(const uop *a, const uop *b, int64_t *out, const char *op) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < nd; i++) {
    int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[128] = "", sb[128] = "";
      for (int k = 0, n = 0; k < a->ndim; k++) n += snprintf(sa + n, sizeof sa - (size_t)n, k ? ",%lld" : "%lld", (long long)a->shape[k]);
      for (int k = 0, n = 0; k < b->ndim; k++) n += snprintf(sb + n, sizeof sb - (size_t)n, k ? ",%lld" : "%lld", (long long)b->shape[k]);
      return tg_seterr("%s: shapes (%s) and (%s) cannot broadcast (axis %d: %lld vs %lld)", op, sa, sb, i, (long long)da, (long long)db);
    }
    out[i] = da == 1 ? db : da;
  }
  return shape_ok(out, nd, op) ? nd : -1;   /* (2^40, 1) + (1, 2^40) */
}

/* a reshaped (leading 1s) and expanded to shape */
static uop *broadcast_to(uop *u, const int64_t *shape, int nd) {
  int64_t tmp[TG_MAX_DIMS * 4];
  int pad = nd - u->ndim;
  for (int i = 0; i < nd; i++) tmp[i] = i < pad ? 1 : u->shape[i - pad];
  return mv_expand(mv_reshape(u, tmp, nd), shape, nd);
}

/* Brings a and b to one shape and one dtype (the promoted one, or `force`
 * when it is not TG_VOID). */
static bool binary_prep(tg_tensor *a, tg_tensor *b, uop **ua, uop **ub, int force, const char *op, const char **dev) {
  if (!(*dev = same_device(a, b, op))) return false;
  int64_t shape[TG_MAX_DIMS * 4];
  int nd = broadcast_shape(a->u, b->u, shape, op);
  if (nd < 0) return false;
  dtype_t dt = force != TG_VOID ? dt_scalar(force) : dt_scalar(tg_dtype_promote((tg_dtype)a->u->dtype.scalar, (tg_dtype)b->u->dtype.scalar));
  *ua = uop_cast(broadcast_to(a->u, shape, nd), dt);
  *ub = uop_cast(broadcast_to(b->u, shape, nd), dt);
  return true;
}

static dtype_t least_upper_float(dtype_t d) { return dtype_least_upper_float(d); }

static tg_tensor *binop(uop_op op, tg_tensor *a, tg_tensor *b, const char *name) {
  NEED(a, name); NEED(b, name);
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, name, &dev)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_alu(op, x, y), dev));
}

tg_tensor *tg_add(tg_tensor *a, tg_tensor *b) { return binop(OP_ADD, a, b, "tg_add"); }
tg_tensor *tg_sub(tg_tensor *a, tg_tensor *b) { return binop(OP_SUB, a, b, "tg_sub"); }
tg_tensor *tg_mul(tg_tensor *a, tg_tensor *b) { return binop(OP_MUL, a, b, "tg_mul"); }
tg_tensor *tg_maximum(tg_tensor *a, tg_tensor *b) { return binop(OP_MAX, a, b, "tg_maximum"); }

tg_tensor *tg_div(tg_tensor *a, tg_tensor *b) {
  NEED(a, "tg_div"); NEED(b, "tg_div");
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, "tg_div", &dev)) API_RETURN(NULL);
  dtype_t f = least_upper_float(x->dtype);
  API_RETURN(tensor_wrap(uop_alu(OP_FDIV, uop_cast(x, f), uop_cast(y, f)), dev));
}


tg_tensor *tg_minimum(tg_tensor *a, tg_tensor *b) {
  NEED(a, "tg_minimum"); NEED(b, "tg_minimum");
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, "tg_minimum", &dev)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(order_inverse(uop_alu(OP_MAX, order_inverse(x), order_inverse(y))), dev));
}

/* log2 and exp2 based pow, with numpy's sign rules for negative bases and
 * integer exponents; ints raise in float and cast back. */
static uop *pow_uop(uop *x, uop *y) {
  dtype_t out = x->dtype;
  dtype_t f = least_upper_float(out);
  uop *xf = uop_cast(x, f), *yf = uop_cast(y, f);
  int nd = x->ndim; int64_t *sh = x->shape;
  uop *zero = const_like(0, f, sh, nd), *one = const_like(1, f, sh, nd);
  uop *ax = uop_where(uop_alu(OP_CMPLT, xf, zero), uop_alu1(OP_NEG, xf), xf);
  uop *r = uop_alu1(OP_EXP2, uop_alu(OP_MUL, yf, uop_alu1(OP_LOG2, ax)));
  /* negative base: odd integer exponent flips the sign, non-integer gives NaN */
  uop *yint = uop_alu(OP_CMPEQ, uop_alu1(OP_TRUNC, yf), yf);
  uop *half = uop_alu(OP_MUL, yf, const_like(0.5, f, sh, nd));
  uop *odd = uop_alu(OP_CMPNE, uop_alu1(OP_TRUNC, half), half);
  uop *neg = uop_alu(OP_CMPLT, xf, zero);
  uop *nan = const_like(NAN, f, sh, nd);
  uop *negr = uop_where(yint, uop_where(odd, uop_alu1(OP_NEG, r), r), nan);
  r = uop_where(neg, negr, r);
  /* x**0 == 1 always */
  r = uop_where(uop_alu(OP_CMPEQ, yf, zero), one, r);
  if (!dt_is_float(out)) r = uop_cast(uop_alu1(OP_TRUNC, uop_alu(OP_ADD, r, uop_where(uop_alu(OP_CMPLT, r, zero), const_like(-0.5, f, sh, nd), const_like(0.5, f, sh, nd)))), out);
  return r;
}
tg_tensor *tg_pow(tg_tensor *a, tg_tensor *b) {
  NEED(a, "tg_pow"); NEED(b, "tg_pow");
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, "tg_pow", &dev)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(pow_uop(x, y), dev));
}

/* A Python scalar next to a tensor: keeps the tensor's dtype when it fits
 * the class (float tensor, or integral value with an int tensor). */
static tg_tensor *scalar_for(tg_tensor *a, double v) {
  tg_dtype dt = (tg_dtype)a->u->dtype.scalar;
  if (!tg_dtype_is_float(dt)) {
    if (v != floor(v) || isinf(v)) dt = tg_default_float();
    else if (dt == TG_BOOL) dt = TG_I32;
  }
  tg_tensor *c = tensor_const(v, dt);   /* an operand: no identity of its own */
  if (c) c->device = a->device;
  return c;
}
#define SCALAR_OP(fn, op) \
  tg_tensor *fn##s(tg_tensor *a, double b) { \
    NEED(a, #fn "s"); \
    tg_scope_begin(); \
    tg_tensor *r = fn(a, scalar_for(a, b)); \
    if (r) tg_keep(r); \
    tg_scope_end(); \
    return r; \
  }
SCALAR_OP(tg_add, ADD)
SCALAR_OP(tg_sub, SUB)
SCALAR_OP(tg_mul, MUL)
SCALAR_OP(tg_div, FDIV)
SCALAR_OP(tg_pow, POW)

/* ---- unary */
static tg_tensor *unary(tg_tensor *a, uop *(*f)(uop *), bool to_float, const char *name) {
  NEED(a, name);
  API_BEGIN;
  uop *x = to_float ? uop_cast(a->u, least_upper_float(a->u->dtype)) : a->u;
  API_RETURN(tensor_wrap(f(x), a->device));
}
static uop *c_like(uop *x, double v) { return const_like(v, x->dtype, x->shape, x->ndim); }
static uop *f_neg(uop *x) { return x->dtype.scalar == TG_BOOL ? order_inverse(x) : uop_alu1(OP_NEG, x); }
static uop *f_exp2(uop *x) { return uop_alu1(OP_EXP2, x); }
static uop *f_log2(uop *x) { return uop_alu1(OP_LOG2, x); }
static uop *f_exp(uop *x) { return uop_alu1(OP_EXP2, uop_alu(OP_MUL, x, c_like(x, 1.0 / M_LN2))); }
static uop *f_log(uop *x) { return uop_alu(OP_MUL, uop_alu1(OP_LOG2, x), c_like(x, M_LN2)); }
static uop *f_sqrt(uop *x) { return uop_alu1(OP_SQRT, x); }
static uop *f_recip(uop *x) { return uop_alu1(OP_RECIPROCAL, x); }
static uop *f_rsqrt(uop *x) { return uop_alu1(OP_RECIPROCAL, uop_alu1(OP_SQRT, x)); }
static uop *f_sin(uop *x) { return uop_alu1(OP_SIN, x); }
static uop *f_cos(uop *x) { return uop_alu1(OP_SIN, uop_alu(OP_SUB, c_like(x, M_PI / 2), x)); }
static uop *f_abs(uop *x) {
  if (x->dtype.scalar == TG_BOOL || dt_is_unsigned(x->dtype)) return x;
  return uop_where(uop_alu(OP_CMPLT, x, c_like(x, 0)), uop_alu1(OP_NEG, x), x);
}
static uop *f_relu(uop *x) { return uop_where(uop_alu(OP_CMPLT, c_like(x, 0), x), x, c_like(x, 0)); }
static uop *f_sigmoid(uop *x) {
  /* 1 / (1 + exp(-x)); the exponent is capped below overflow, so the
   * gradient stays 0 instead of 0 * inf for very negative x */
  double cap = x->dtype.scalar == TG_F64 ? 700 : x->dtype.scalar == TG_F32 ? 80 : 10;
  uop *e = f_exp(uop_alu1(OP_NEG, uop_alu(OP_MAX, x, c_like(x, -cap))));
  return uop_alu1(OP_RECIPROCAL, uop_alu(OP_ADD, c_like(x, 1), e));
}
/* accurate near 0 and free of overflow (math_common.c) */
static uop *f_tanh(uop *x) { return mt_tanh(x); }
tg_tensor *tg_neg(tg_tensor *a) { return unary(a, f_neg, false, "tg_neg"); }
tg_tensor *tg_exp(tg_tensor *a) { return unary(a, f_exp, true, "tg_exp"); }
tg_tensor *tg_log(tg_tensor *a) { return unary(a, f_log, true, "tg_log"); }
tg_tensor *tg_exp2(tg_tensor *a) { return unary(a, f_exp2, true, "tg_exp2"); }
tg_tensor *tg_log2(tg_tensor *a) { return unary(a, f_log2, true, "tg_log2"); }
tg_tensor *tg_sqrt(tg_tensor *a) { return unary(a, f_sqrt, true, "tg_sqrt"); }
tg_tensor *tg_rsqrt(tg_tensor *a) { return unary(a, f_rsqrt, true, "tg_rsqrt"); }
tg_tensor *tg_reciprocal(tg_tensor *a) { return unary(a, f_recip, true, "tg_reciprocal"); }
tg_tensor *tg_sin(tg_tensor *a) { return unary(a, f_sin, true, "tg_sin"); }
tg_tensor *tg_cos(tg_tensor *a) { return unary(a, f_cos, true, "tg_cos"); }
tg_tensor *tg_abs(tg_tensor *a) { return unary(a, f_abs, false, "tg_abs"); }
tg_tensor *tg_relu(tg_tensor *a) { return unary(a, f_relu, false, "tg_relu"); }
tg_tensor *tg_sigmoid(tg_tensor *a) { return unary(a, f_sigmoid, true, "tg_sigmoid"); }
tg_tensor *tg_tanh(tg_tensor *a) { return unary(a, f_tanh, true, "tg_tanh"); }

/* ---- comparisons and logic */
static tg_tensor *cmp(uop_op op, tg_tensor *a, tg_tensor *b, bool swap, bool negate, const char *name) {
  NEED(a, name); NEED(b, name);
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, name, &dev)) API_RETURN(NULL);
  uop *r = swap ? uop_alu(op, y, x) : uop_alu(op, x, y);
  if (negate) r = uop_alu(OP_CMPEQ, r, const_like(0, DT_BOOL, r->shape, r->ndim));
  API_RETURN(tensor_wrap(r, dev));
}
tg_tensor *tg_lt(tg_tensor *a, tg_tensor *b) { return cmp(OP_CMPLT, a, b, false, false, "tg_lt"); }
tg_tensor *tg_gt(tg_tensor *a, tg_tensor *b) { return cmp(OP_CMPLT, a, b, true, false, "tg_gt"); }
tg_tensor *tg_ge(tg_tensor *a, tg_tensor *b) {
  /* not (a < b) is wrong for NaN; use b < a or a == b */
  NEED(a, "tg_ge"); NEED(b, "tg_ge");
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, "tg_ge", &dev)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_alu(OP_OR, uop_alu(OP_CMPLT, y, x), uop_alu(OP_CMPEQ, x, y)), dev));
}
tg_tensor *tg_le(tg_tensor *a, tg_tensor *b) { return tg_ge(b, a); }
tg_tensor *tg_eq(tg_tensor *a, tg_tensor *b) { return cmp(OP_CMPEQ, a, b, false, false, "tg_eq"); }
tg_tensor *tg_ne(tg_tensor *a, tg_tensor *b) { return cmp(OP_CMPNE, a, b, false, false, "tg_ne"); }

static tg_tensor *logical(uop_op op, tg_tensor *a, tg_tensor *b, const char *name) {
  NEED(a, name); NEED(b, name);
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!(dev = same_device(a, b, name))) API_RETURN(NULL);
  x = a->u; y = b->u;
  if (x->dtype.scalar != TG_BOOL) x = uop_alu(OP_CMPNE, x, c_like(x, 0));
  if (y->dtype.scalar != TG_BOOL) y = uop_alu(OP_CMPNE, y, c_like(y, 0));
  int64_t shape[TG_MAX_DIMS * 4];
  int nd = broadcast_shape(x, y, shape, name);
  if (nd < 0) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_alu(op, broadcast_to(x, shape, nd), broadcast_to(y, shape, nd)), dev));
}
tg_tensor *tg_logical_and(tg_tensor *a, tg_tensor *b) { return logical(OP_AND, a, b, "tg_logical_and"); }
tg_tensor *tg_logical_or(tg_tensor *a, tg_tensor *b) { return logical(OP_OR, a, b, "tg_logical_or"); }
tg_tensor *tg_logical_xor(tg_tensor *a, tg_tensor *b) { return logical(OP_XOR, a, b, "tg_logical_xor"); }
tg_tensor *tg_logical_not(tg_tensor *a) {
  NEED(a, "tg_logical_not");
  API_BEGIN;
  API_RETURN(tensor_wrap(uop_alu(OP_CMPEQ, a->u, c_like(a->u, 0)), a->device));
}

tg_tensor *tg_where(tg_tensor *cond, tg_tensor *a, tg_tensor *b) {
  NEED(cond, "tg_where"); NEED(a, "tg_where"); NEED(b, "tg_where");
  API_BEGIN;
  uop *x, *y;
  const char *dev = NULL;
  if (!binary_prep(a, b, &x, &y, TG_VOID, "tg_where", &dev)) API_RETURN(NULL);
  if (cond->device != dev && !(shard_is_multi_name(dev) && tensor_reads_no_memory(cond))) {
    if (!shard_is_multi_name(cond->device) || !tensor_reads_no_memory(a) || !tensor_reads_no_memory(b)) {
      tg_seterr("tg_where: tensors are on different devices (the condition on %s, the values on %s); use tg_to", cond->device, dev);
      API_RETURN(NULL);
    }
    dev = cond->device;
  }
  uop *c = cond->u;
  if (c->dtype.scalar != TG_BOOL) c = uop_alu(OP_CMPNE, c, c_like(c, 0));
  int64_t shape[TG_MAX_DIMS * 4];
  int nd = broadcast_shape(c, x, shape, "tg_where");
  if (nd < 0) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_where(broadcast_to(c, shape, nd), broadcast_to(x, shape, nd), broadcast_to(y, shape, nd)), dev));
}

/* ---- casts */
tg_tensor *tg_cast(tg_tensor *a, tg_dtype dt) {
  NEED(a, "tg_cast");
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT) TG_FAIL("tg_cast: unknown dtype %d", (int)dt);
  API_BEGIN;
  API_RETURN(tensor_wrap(uop_cast(a->u, dt_scalar(dt)), a->device));
}

tg_tensor *tg_bitcast(tg_tensor *a, tg_dtype dt) {
  NEED(a, "tg_bitcast");
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT) TG_FAIL("tg_bitcast: unknown dtype %d", (int)dt);
  int from = tg_dtype_size((tg_dtype)a->u->dtype.scalar), to = tg_dtype_size(dt);
  if (dt == TG_BOOL || a->u->dtype.scalar == TG_BOOL) TG_FAIL("tg_bitcast: bool cannot be bitcast");
  if (from != to) TG_FAIL("tg_bitcast: %s (%d bytes) to %s (%d bytes) needs equal sizes", tg_dtype_name((tg_dtype)a->u->dtype.scalar), from, tg_dtype_name(dt), to);
  API_BEGIN;
  API_RETURN(tensor_wrap(uop1(OP_BITCAST, dt_scalar(dt), a->u, arg_none()), a->device));
}
