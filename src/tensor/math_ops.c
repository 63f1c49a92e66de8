/* math_ops.c: elementwise math beyond tg.h's basics (trigonometry,
 * rounding, division with rounding, bits, clamping, classification),
 * composed from the ALU primitives. Activation functions are in
 * math_act.c. Semantics: tinygrad's broadcasting and dtype promotion,
 * PyTorch's values (NaN, inf, -0.0); see docs/ops_math.md. */
#include <math.h>
#include "tensor/math_internal.h"

/* ---- trigonometric and hyperbolic */

/* Cephes asinf core on |t| <= 0.5: t + t^3 P(t^2) */
static uop *asin_core(uop *t) {
  static const double P[] = { 4.2163199048E-2, 2.4181311049E-2, 4.5470025998E-2, 7.4953002686E-2, 1.6666752422E-1 };
  uop *z = mt_mul(t, t), *acc = mt_c(t, P[0]);
  for (int i = 1; i < 5; i++) acc = mt_add(mt_mul(acc, z), mt_c(t, P[i]));
  return mt_add(mt_mul(mt_mul(acc, z), t), t);
}
static uop *f_asin(uop *x, const double *p) {
  uop *a = mt_abs(x);
  uop *big = mt_lt(mt_c(a, 0.5), a);
  /* |x| > 0.5: pi/2 - 2 asin(sqrt((1 - |x|) / 2)) */
  uop *s = mt_sqrt(mt_muls(mt_sub(mt_c(a, 1), mt_safe(big, a, 0)), 0.5));
  uop *hi = mt_sub(mt_c(a, M_PI / 2), mt_muls(asin_core(s), 2));
  uop *r = mt_where(big, hi, asin_core(a));
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
static uop *f_acos(uop *x, const double *p) {
  uop *hi = mt_lt(mt_c(x, 0.5), x), *lo = mt_lt(x, mt_c(x, -0.5));
  /* x > 0.5: 2 asin(sqrt((1 - x) / 2)); x < -0.5: pi - 2 asin(sqrt((1 + x) / 2)) */
  uop *sh = mt_sqrt(mt_muls(mt_sub(mt_c(x, 1), mt_safe(hi, x, 0)), 0.5));
  uop *sl = mt_sqrt(mt_muls(mt_adds(mt_safe(lo, x, 0), 1), 0.5));
  uop *mid = mt_sub(mt_c(x, M_PI / 2), asin_core(x));
  uop *r = mt_where(hi, mt_muls(asin_core(sh), 2), mid);
  return mt_where(lo, mt_sub(mt_c(x, M_PI), mt_muls(asin_core(sl), 2)), r);
}
/* Cephes atanf: reduce |x| to [0, tan(pi/8)] */
static uop *f_atan(uop *x, const double *p) {
  uop *a = mt_abs(x);
  uop *big = mt_lt(mt_c(a, 2.414213562373095), a), *mid = mt_lt(mt_c(a, 0.4142135623730950), a);
  uop *t_big = mt_neg(mt_recip(mt_safe(big, a, 1)));
  uop *am = mt_safe(mid, a, 0);
  uop *t_mid = mt_div(mt_adds(am, -1), mt_adds(am, 1));
  uop *t = mt_where(big, t_big, mt_where(mid, t_mid, a));
  uop *y = mt_where(big, mt_c(a, M_PI / 2), mt_where(mid, mt_c(a, M_PI / 4), mt_c(a, 0)));
  static const double P[] = { 8.05374449538e-2, -1.38776856032E-1, 1.99777106478E-1, -3.33329491539E-1 };
  uop *z = mt_mul(t, t), *acc = mt_c(t, P[0]);
  for (int i = 1; i < 4; i++) acc = mt_add(mt_mul(acc, z), mt_c(t, P[i]));
  uop *r = mt_add(y, mt_add(mt_mul(mt_mul(acc, z), t), t));
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
static uop *f_tan(uop *x, const double *p) { return mt_div(mt_sin(x), mt_cos(x)); }
/* sinh(|x|) = (m + m / (m + 1)) / 2 with m = expm1(|x|): no cancellation */
static uop *f_sinh(uop *x, const double *p) {
  uop *m = mt_expm1(mt_abs(x));
  uop *inf = mt_isinf(m), *ms = mt_safe(mt_not(inf), m, 0);
  uop *r = mt_where(inf, m, mt_muls(mt_add(ms, mt_div(ms, mt_adds(ms, 1))), 0.5));
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
static uop *f_cosh(uop *x, const double *p) {
  uop *e = mt_exp(mt_abs(x));
  return mt_muls(mt_add(e, mt_recip(e)), 0.5);
}
/* beyond this |x|, log(2|x|) is asinh/acosh to the dtype's precision */
static double big_arg(uop *x) { return x->dtype.scalar == TG_F64 ? 67108864.0 : 4096.0; }
static uop *f_asinh(uop *x, const double *p) {
  uop *a = mt_abs(x);
  uop *big = mt_lt(mt_c(a, big_arg(x)), a);
  uop *as = mt_safe(mt_not(big), a, 1), *ab = mt_safe(big, a, 1);
  uop *a2 = mt_mul(as, as);
  uop *small = mt_log1p(mt_add(as, mt_div(a2, mt_adds(mt_sqrt(mt_adds(a2, 1)), 1))));
  uop *r = mt_where(big, mt_adds(mt_log(ab), M_LN2), small);
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
static uop *f_acosh(uop *x, const double *p) {
  uop *big = mt_lt(mt_c(x, big_arg(x)), x), *ok = mt_not(mt_lt(x, mt_c(x, 1)));
  uop *xs = mt_safe(mt_and(ok, mt_not(big)), x, 1), *xb = mt_safe(big, x, 2);
  uop *t = mt_adds(xs, -1);
  uop *small = mt_log1p(mt_add(t, mt_sqrt(mt_add(mt_muls(t, 2), mt_mul(t, t)))));
  uop *r = mt_where(big, mt_adds(mt_log(xb), M_LN2), small);
  /* NaN below 1 (x itself when x is NaN) */
  return mt_where(mt_lt(x, mt_c(x, 1)), mt_c(x, NAN), mt_where(mt_ne(x, x), x, r));
}
static uop *f_atanh(uop *x, const double *p) {
  uop *a = mt_abs(x);
  uop *r = mt_muls(mt_log1p(mt_div(mt_muls(a, 2), mt_sub(mt_c(a, 1), a))), 0.5);
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
tg_tensor *tg_tan(tg_tensor *a) { return mt_unary(a, f_tan, NULL, true, "tg_tan"); }
tg_tensor *tg_asin(tg_tensor *a) { return mt_unary(a, f_asin, NULL, true, "tg_asin"); }
tg_tensor *tg_acos(tg_tensor *a) { return mt_unary(a, f_acos, NULL, true, "tg_acos"); }
tg_tensor *tg_atan(tg_tensor *a) { return mt_unary(a, f_atan, NULL, true, "tg_atan"); }
tg_tensor *tg_sinh(tg_tensor *a) { return mt_unary(a, f_sinh, NULL, true, "tg_sinh"); }
tg_tensor *tg_cosh(tg_tensor *a) { return mt_unary(a, f_cosh, NULL, true, "tg_cosh"); }
tg_tensor *tg_asinh(tg_tensor *a) { return mt_unary(a, f_asinh, NULL, true, "tg_asinh"); }
tg_tensor *tg_acosh(tg_tensor *a) { return mt_unary(a, f_acosh, NULL, true, "tg_acosh"); }
tg_tensor *tg_atanh(tg_tensor *a) { return mt_unary(a, f_atanh, NULL, true, "tg_atanh"); }

/* ---- exponential family */
static uop *f_log10(uop *x, const double *p) { return mt_muls(uop_alu1(OP_LOG2, x), M_LN2 / M_LN10); }
static uop *f_log1p(uop *x, const double *p) { return mt_log1p(x); }
static uop *f_expm1(uop *x, const double *p) { return mt_expm1(x); }
/* tinygrad's erf: Abramowitz-Stegun 7.1.26 */
static uop *f_erf(uop *x, const double *p) {
  static const double P[] = { 1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592 };
  uop *a = mt_abs(x);
  uop *t = mt_recip(mt_adds(mt_muls(a, 0.3275911), 1));
  uop *acc = mt_c(t, P[0]);
  for (int i = 1; i < 5; i++) acc = mt_add(mt_mul(acc, t), mt_c(t, P[i]));
  uop *r = mt_sub(mt_c(x, 1), mt_mul(mt_mul(t, acc), mt_exp(mt_neg(mt_mul(x, x)))));
  return mt_where(mt_lt(x, mt_c(x, 0)), mt_neg(r), r);
}
tg_tensor *tg_log10(tg_tensor *a) { return mt_unary(a, f_log10, NULL, true, "tg_log10"); }
tg_tensor *tg_log1p(tg_tensor *a) { return mt_unary(a, f_log1p, NULL, true, "tg_log1p"); }
tg_tensor *tg_expm1(tg_tensor *a) { return mt_unary(a, f_expm1, NULL, true, "tg_expm1"); }
tg_tensor *tg_erf(tg_tensor *a) { return mt_unary(a, f_erf, NULL, true, "tg_erf"); }

/* Binary float op: broadcast, promote, compute in float (small floats in float32). */
static tg_tensor *binary_float(tg_tensor *a, tg_tensor *b, uop *(*f)(uop *, uop *), const char *name) {
  NEED(a, name); NEED(b, name);
  API_BEGIN;
  uop *x, *y;
  if (!mt_broadcast2(a, b, &x, &y, TG_VOID, name)) API_RETURN(NULL);
  dtype_t out = mt_float_of(x->dtype), cd = mt_compute_dtype(out);
  API_RETURN(tensor_wrap(uop_cast(f(uop_cast(x, cd), uop_cast(y, cd)), out), a->device));
}

/* m + log1p(e^-|a-b|), m = max(a, b); equal infinities give themselves */
static uop *f_logaddexp(uop *a, uop *b) {
  uop *eq = mt_eq(a, b);
  uop *d = mt_neg(mt_abs(mt_sub(mt_safe(mt_not(eq), a, 0), mt_safe(mt_not(eq), b, 0))));
  return mt_add(mt_max(a, b), mt_log1p(mt_exp(d)));
}
tg_tensor *tg_logaddexp(tg_tensor *a, tg_tensor *b) { return binary_float(a, b, f_logaddexp, "tg_logaddexp"); }

/* ---- rounding and sign */
static uop *f_trunc(uop *x, const double *p) { return dt_is_float(x->dtype) ? uop_alu1(OP_TRUNC, x) : x; }
static uop *f_floor(uop *x, const double *p) { return mt_floor(x); }
static uop *f_ceil(uop *x, const double *p) { return mt_ceil(x); }
/* half to even: r = trunc(x), d = x - r (exact); step away from 0 when
 * |d| > 1/2, or |d| == 1/2 and r is odd */
static uop *f_round(uop *x, const double *p) {
  if (!dt_is_float(x->dtype)) return x;
  uop *r = uop_alu1(OP_TRUNC, x), *ad = mt_abs(mt_sub(x, r));
  uop *h = mt_muls(r, 0.5);
  uop *odd = mt_ne(uop_alu1(OP_TRUNC, h), h);
  uop *away = mt_or(mt_lt(mt_c(x, 0.5), ad), mt_and(mt_eq(ad, mt_c(x, 0.5)), odd));
  uop *step = mt_where(mt_lt(x, mt_c(x, 0)), mt_c(x, -1), mt_c(x, 1));
  return mt_where(away, mt_add(r, step), r);
}
static uop *f_sign(uop *x, const double *p) { return mt_sign(x); }
static uop *f_square(uop *x, const double *p) { return x->dtype.scalar == TG_BOOL ? mt_and(x, x) : mt_mul(x, x); }
tg_tensor *tg_trunc(tg_tensor *a) { return mt_unary(a, f_trunc, NULL, false, "tg_trunc"); }
tg_tensor *tg_floor(tg_tensor *a) { return mt_unary(a, f_floor, NULL, false, "tg_floor"); }
tg_tensor *tg_ceil(tg_tensor *a) { return mt_unary(a, f_ceil, NULL, false, "tg_ceil"); }
tg_tensor *tg_round(tg_tensor *a) { return mt_unary(a, f_round, NULL, false, "tg_round"); }
tg_tensor *tg_sign(tg_tensor *a) { return mt_unary(a, f_sign, NULL, false, "tg_sign"); }
tg_tensor *tg_square(tg_tensor *a) { return mt_unary(a, f_square, NULL, false, "tg_square"); }

/* |a| carrying b's sign bit: a or -a, chosen by comparing the sign bits */
static uop *f_copysign(uop *a, uop *b) { return mt_where(mt_ne(mt_signbit(a), mt_signbit(b)), mt_neg(a), a); }
tg_tensor *tg_copysign(tg_tensor *a, tg_tensor *b) { return binary_float(a, b, f_copysign, "tg_copysign"); }

/* ---- division with rounding */

/* C fmod for floats, |r| = |a| - q |b| with the sign of a. Float32 and
 * smaller inputs are exact: the reduction runs in float64 in steps,
 * dividing by |b| 2^(28 s) for s = S..0, so every quotient q has at most 29
 * bits and q |b| 2^(28 s) (24-bit |b|) and the difference are exact.
 * S covers the dtype's range of |a| / |b| (2^277 for float32). Float64
 * inputs take one step: exact while q |b| is (|a / b| below about 2^29 for
 * short mantissas), otherwise off by the rounding of q |b|. */
static uop *float_fmod(uop *x, uop *y) {
  dtype_t out = x->dtype;
  int steps = out.scalar == TG_F64 ? 0 : out.scalar == TG_F16 ? 1 : 9;
  uop *xd = uop_cast(x, DT_F64), *yd = mt_abs(uop_cast(y, DT_F64));
  uop *r = mt_abs(xd), *z = mt_c(r, 0);
  for (int s = steps; s >= 0; s--) {
    uop *ys = s ? mt_muls(yd, ldexp(1.0, 28 * s)) : yd;
    uop *q = uop_alu1(OP_TRUNC, mt_div(r, ys));
    r = mt_sub(r, mt_mul(q, ys));
    r = mt_where(mt_lt(r, z), mt_add(r, ys), r);   /* q rounded up */
  }
  r = mt_where(mt_signbit(xd), mt_neg(r), r);
  uop *xfin = mt_not(mt_or(mt_isinf(xd), mt_isnan(xd)));
  r = mt_where(mt_and(mt_isinf(yd), xfin), xd, r);
  return uop_cast(r, out);
}

typedef enum { DIV_FLOOR, DIV_MOD, DIV_FMOD } divkind;
static uop *int_divmod(uop *x, uop *y, divkind k) {
  if (dt_is_unsigned(x->dtype)) return uop_alu(k == DIV_FLOOR ? OP_IDIV : OP_MOD, x, y);
  /* C's / and % truncate; x / -1 is -x (INT_MIN / -1 would trap) */
  uop *m1 = mt_eq(y, mt_c(y, -1));
  uop *ys = mt_where(m1, mt_c(y, 1), y);
  uop *q = mt_where(m1, mt_neg(x), uop_alu(OP_IDIV, x, ys));
  uop *r = uop_alu(OP_MOD, x, ys);
  if (k == DIV_FMOD) return r;
  uop *z = mt_c(x, 0);
  uop *adj = mt_and(mt_ne(r, z), mt_ne(mt_lt(r, z), mt_lt(y, z)));
  return k == DIV_FLOOR ? mt_where(adj, mt_adds(q, -1), q) : mt_where(adj, mt_add(r, y), r);
}

static tg_tensor *divmod_op(tg_tensor *a, tg_tensor *b, divkind k, const char *name) {
  NEED(a, name); NEED(b, name);
  API_BEGIN;
  uop *x, *y;
  if (!mt_broadcast2(a, b, &x, &y, TG_VOID, name)) API_RETURN(NULL);
  dtype_t out = x->dtype;
  if (out.scalar == TG_BOOL) { tg_seterr("%s: not supported for bool tensors", name); API_RETURN(NULL); }
  if (!dt_is_float(out)) API_RETURN(tensor_wrap(int_divmod(x, y, k), a->device));
  dtype_t cd = mt_compute_dtype(out);
  x = uop_cast(x, cd); y = uop_cast(y, cd);
  uop *m = float_fmod(x, y), *z = mt_c(x, 0), *r;
  uop *adj = mt_and(mt_ne(m, z), mt_ne(mt_lt(y, z), mt_lt(m, z)));
  if (k == DIV_FMOD) r = m;
  else if (k == DIV_MOD) r = mt_where(adj, mt_add(m, y), m);
  else {
    /* PyTorch's div_floor_floating */
    uop *div = mt_div(mt_sub(x, m), y);
    div = mt_where(adj, mt_adds(div, -1), div);
    uop *fl = mt_floor(div);
    fl = mt_where(mt_lt(mt_c(div, 0.5), mt_sub(div, fl)), mt_adds(fl, 1), fl);
    uop *zero = mt_where(mt_ne(mt_signbit(x), mt_signbit(y)), mt_c(x, -0.0), z);
    r = mt_where(mt_ne(div, z), fl, zero);
    r = mt_where(mt_eq(y, z), mt_div(x, y), r);
  }
  API_RETURN(tensor_wrap(uop_cast(r, out), a->device));
}
tg_tensor *tg_floordiv(tg_tensor *a, tg_tensor *b) { return divmod_op(a, b, DIV_FLOOR, "tg_floordiv"); }
tg_tensor *tg_mod(tg_tensor *a, tg_tensor *b) { return divmod_op(a, b, DIV_MOD, "tg_mod"); }
tg_tensor *tg_fmod(tg_tensor *a, tg_tensor *b) { return divmod_op(a, b, DIV_FMOD, "tg_fmod"); }

/* ---- bits */
static bool int_or_bool(const tg_tensor *t, bool allow_bool, const char *name) {
  tg_dtype d = tg_dtype_of(t);
  if (tg_dtype_is_int(d) || (allow_bool && d == TG_BOOL)) return true;
  tg_seterr("%s: dtype %s not supported (needs %s)", name, tg_dtype_name(d), allow_bool ? "int or bool" : "int");
  return false;
}
static tg_tensor *bitwise(tg_tensor *a, tg_tensor *b, uop_op op, const char *name) {
  NEED(a, name); NEED(b, name);
  if (!int_or_bool(a, true, name) || !int_or_bool(b, true, name)) return NULL;
  API_BEGIN;
  uop *x, *y;
  if (!mt_broadcast2(a, b, &x, &y, TG_VOID, name)) API_RETURN(NULL);
  API_RETURN(tensor_wrap(uop_alu(op, x, y), a->device));
}
tg_tensor *tg_bitwise_and(tg_tensor *a, tg_tensor *b) { return bitwise(a, b, OP_AND, "tg_bitwise_and"); }
tg_tensor *tg_bitwise_or(tg_tensor *a, tg_tensor *b) { return bitwise(a, b, OP_OR, "tg_bitwise_or"); }
tg_tensor *tg_bitwise_xor(tg_tensor *a, tg_tensor *b) { return bitwise(a, b, OP_XOR, "tg_bitwise_xor"); }
tg_tensor *tg_bitwise_not(tg_tensor *a) {
  NEED(a, "tg_bitwise_not");
  if (!int_or_bool(a, true, "tg_bitwise_not")) return NULL;
  API_BEGIN;
  uop *x = a->u;
  if (x->dtype.scalar == TG_BOOL) API_RETURN(tensor_wrap(mt_not(x), a->device));
  /* all ones: the maximum of the unsigned dtype, -1 of the signed one */
  uop *ones = dt_is_unsigned(x->dtype) ? mt_max_value(x) : mt_c(x, -1);
  API_RETURN(tensor_wrap(uop_alu(OP_XOR, x, ones), a->device));
}

/* Bounds of an integer tensor built from constants and aranges by movement
 * ops, casts, adds and multiplies (a shift amount like arange(n)*4); false
 * when unknown. */
static bool index_range(uop *u, int64_t *lo, int64_t *hi, int depth) {
  if (depth > 24 || !(dt_is_int(u->dtype) || u->op == OP_ARANGE)) return false;
  if (u->op == OP_CONST && u->arg.kind == ARG_INT) { *lo = *hi = u->arg.i; return true; }
  if (u->op == OP_ARANGE) { *lo = 0, *hi = u->arg.i - 1; return u->arg.i > 0; }
  if (u->op == OP_CAST || u->op == OP_UNIQUE || (uop_is_movement(u->op) && u->op != OP_PAD && u->op != OP_UNSHRINK_VAR)) return index_range(u->src[0], lo, hi, depth + 1);
  if (u->op != OP_ADD && u->op != OP_MUL) return false;
  int64_t a0, a1, b0, b1;
  if (!index_range(u->src[0], &a0, &a1, depth + 1) || !index_range(u->src[1], &b0, &b1, depth + 1)) return false;
  const int64_t big = (int64_t)1 << 30;
  if (a0 < -big || a1 > big || b0 < -big || b1 > big) return false;
  if (u->op == OP_ADD) { *lo = a0 + b0, *hi = a1 + b1; return true; }
  int64_t p[4] = { a0 * b0, a0 * b1, a1 * b0, a1 * b1 };
  *lo = *hi = p[0];
  for (int i = 1; i < 4; i++) { if (p[i] < *lo) *lo = p[i]; if (p[i] > *hi) *hi = p[i]; }
  return true;
}

static tg_tensor *shift(tg_tensor *a, tg_tensor *b, bool left, const char *name) {
  NEED(a, name); NEED(b, name);
  if (!int_or_bool(a, false, name) || !int_or_bool(b, false, name)) return NULL;
  API_BEGIN;
  uop *x, *y;
  if (!mt_broadcast2(a, b, &x, &y, TG_VOID, name)) API_RETURN(NULL);
  int bits = 8 * tg_dtype_size((tg_dtype)x->dtype.scalar);
  /* amounts known to be in range (bit-field unpacking by arange(n)*k) need no guard */
  int64_t lo, hi;
  if (index_range(y, &lo, &hi, 0) && lo >= 0 && hi < bits) API_RETURN(tensor_wrap(uop_alu(left ? OP_SHL : OP_SHR, x, y), a->device));
  /* shifting by < 0 or >= the width is undefined in C: select torch's answer */
  uop *bad = mt_or(mt_lt(y, mt_c(y, 0)), mt_not(mt_lt(y, mt_c(y, bits))));
  uop *ys = mt_where(bad, mt_c(y, 0), y);
  uop *r;
  if (left) r = mt_where(bad, mt_c(x, 0), uop_alu(OP_SHL, x, ys));
  else {
    uop *fill = dt_is_unsigned(x->dtype) ? mt_c(x, 0) : uop_alu(OP_SHR, x, mt_c(x, bits - 1));
    r = mt_where(bad, fill, uop_alu(OP_SHR, x, ys));
  }
  API_RETURN(tensor_wrap(r, a->device));
}
tg_tensor *tg_lshift(tg_tensor *a, tg_tensor *b) { return shift(a, b, true, "tg_lshift"); }
tg_tensor *tg_rshift(tg_tensor *a, tg_tensor *b) { return shift(a, b, false, "tg_rshift"); }
static tg_tensor *shift_scalar(tg_tensor *a, int64_t n, bool left, const char *name) {
  NEED(a, name);
  if (!int_or_bool(a, false, name)) return NULL;
  tg_scope_begin();
  tg_tensor *s = tensor_const((double)n, tg_dtype_of(a));
  if (s) s->device = a->device;
  tg_tensor *r = shift(a, s, left, name);
  tg_keep(r);
  tg_scope_end();
  return r;
}
tg_tensor *tg_lshifts(tg_tensor *a, int64_t bits) { return shift_scalar(a, bits, true, "tg_lshifts"); }
tg_tensor *tg_rshifts(tg_tensor *a, int64_t bits) { return shift_scalar(a, bits, false, "tg_rshifts"); }

/* ---- clamping and selection */

/* where(x < lo, lo, x), then where(hi < x, hi, x): NaN in x stays NaN */
static uop *clamp_uop(uop *x, uop *lo, uop *hi) {
  if (lo) x = mt_where(mt_lt(x, lo), lo, x);
  if (hi) x = mt_where(mt_lt(hi, x), hi, x);
  return x;
}

tg_tensor *tg_clamp(tg_tensor *a, double lo, double hi) {
  NEED(a, "tg_clamp");
  bool has_lo = !isnan(lo), has_hi = !isnan(hi);
  if (!has_lo && !has_hi) TG_FAIL("tg_clamp: at least one of lo and hi must be given (both are NAN)");
  API_BEGIN;
  tg_dtype dt = tg_dtype_of(a);
  if (has_lo) dt = tg_dtype_promote(dt, (tg_dtype)mt_scalar_dtype(a, lo).scalar);
  if (has_hi) dt = tg_dtype_promote(dt, (tg_dtype)mt_scalar_dtype(a, hi).scalar);
  uop *x = uop_cast(a->u, dt_scalar(dt));
  API_RETURN(tensor_wrap(clamp_uop(x, has_lo ? mt_c(x, lo) : NULL, has_hi ? mt_c(x, hi) : NULL), a->device));
}

tg_tensor *tg_clamp_tensor(tg_tensor *a, tg_tensor *lo, tg_tensor *hi) {
  NEED(a, "tg_clamp_tensor"); NEED(lo, "tg_clamp_tensor"); NEED(hi, "tg_clamp_tensor");
  API_BEGIN;
  uop *x, *l, *h;
  if (!mt_broadcast3(a, lo, hi, &x, &l, &h, TG_VOID, "tg_clamp_tensor")) API_RETURN(NULL);
  uop *r = clamp_uop(x, l, h);
  /* a NaN bound gives NaN, like torch */
  if (dt_is_float(x->dtype)) r = mt_where(mt_isnan(l), l, mt_where(mt_isnan(h), h, r));
  API_RETURN(tensor_wrap(r, a->device));
}

tg_tensor *tg_masked_fill(tg_tensor *a, tg_tensor *mask, double value) {
  NEED(a, "tg_masked_fill"); NEED(mask, "tg_masked_fill");
  if (tg_dtype_of(mask) != TG_BOOL) TG_FAIL("tg_masked_fill: mask must be bool, not %s", tg_dtype_name(tg_dtype_of(mask)));
  API_BEGIN;
  uop *x, *m;
  if (!mt_broadcast2(a, mask, &x, &m, TG_VOID, "tg_masked_fill")) API_RETURN(NULL);
  x = uop_cast(x, a->u->dtype);
  m = uop_cast(m, DT_BOOL);
  API_RETURN(tensor_wrap(mt_where(m, mt_c(x, value), x), a->device));
}

/* torch's lerp: a + w (b - a) when |w| < 1/2, else b - (b - a)(1 - w) */
static tg_tensor *lerp_impl(tg_tensor *a, tg_tensor *b, tg_tensor *w, const char *name) {
  API_BEGIN;
  uop *x, *y, *t;
  if (!mt_broadcast3(a, b, w, &x, &y, &t, TG_VOID, name)) API_RETURN(NULL);
  dtype_t out = mt_float_of(x->dtype), cd = mt_compute_dtype(out);
  x = uop_cast(x, cd); y = uop_cast(y, cd); t = uop_cast(t, cd);
  uop *d = mt_sub(y, x);
  uop *lo = mt_add(x, mt_mul(t, d)), *hi = mt_sub(y, mt_mul(d, mt_sub(mt_c(t, 1), t)));
  API_RETURN(tensor_wrap(uop_cast(mt_where(mt_lt(mt_abs(t), mt_c(t, 0.5)), lo, hi), out), a->device));
}
tg_tensor *tg_lerp(tg_tensor *a, tg_tensor *b, tg_tensor *w) {
  NEED(a, "tg_lerp"); NEED(b, "tg_lerp"); NEED(w, "tg_lerp");
  return lerp_impl(a, b, w, "tg_lerp");
}
tg_tensor *tg_lerps(tg_tensor *a, tg_tensor *b, double w) {
  NEED(a, "tg_lerps"); NEED(b, "tg_lerps");
  tg_scope_begin();
  tg_dtype fd = tg_dtype_promote(tg_dtype_of(a), tg_dtype_of(b));
  tg_tensor *wt = tg_scalar(w, tg_dtype_is_float(fd) ? fd : TG_F32);
  if (wt) wt->device = a->device;
  tg_tensor *r = wt ? lerp_impl(a, b, wt, "tg_lerps") : NULL;
  tg_keep(r);
  tg_scope_end();
  return r;
}

/* ---- classification */
static uop *f_isnan(uop *x, const double *p) { return mt_isnan(x); }
static uop *f_isinf(uop *x, const double *p) { return mt_isinf(x); }
static uop *f_isfinite(uop *x, const double *p) { return mt_not(mt_or(mt_isnan(x), mt_isinf(x))); }
static tg_tensor *classify(tg_tensor *a, mt_ufn f, const char *name) {
  NEED(a, name);
  API_BEGIN;
  API_RETURN(tensor_wrap(f(a->u, NULL), a->device));
}
tg_tensor *tg_isnan(tg_tensor *a) { return classify(a, f_isnan, "tg_isnan"); }
tg_tensor *tg_isinf(tg_tensor *a) { return classify(a, f_isinf, "tg_isinf"); }
tg_tensor *tg_isfinite(tg_tensor *a) { return classify(a, f_isfinite, "tg_isfinite"); }

tg_tensor *tg_isclose(tg_tensor *a, tg_tensor *b, double rtol, double atol, bool equal_nan) {
  NEED(a, "tg_isclose"); NEED(b, "tg_isclose");
  if (!(rtol >= 0) || !(atol >= 0)) TG_FAIL("tg_isclose: rtol (%g) and atol (%g) must be non-negative", rtol, atol);
  API_BEGIN;
  uop *x, *y;
  if (!mt_broadcast2(a, b, &x, &y, TG_VOID, "tg_isclose")) API_RETURN(NULL);
  uop *close = mt_eq(x, y);
  if (x->dtype.scalar != TG_BOOL) {
    /* ints compare in float64 (exact for 32-bit ints) */
    dtype_t cd = dt_is_float(x->dtype) ? mt_compute_dtype(x->dtype) : DT_F64;
    uop *xf = uop_cast(x, cd), *yf = uop_cast(y, cd);
    if (equal_nan) close = mt_or(close, mt_and(mt_isnan(xf), mt_isnan(yf)));
    uop *err = mt_abs(mt_sub(xf, yf));
    uop *allowed = mt_add(mt_c(yf, atol), mt_abs(mt_muls(yf, rtol)));
    uop *fin = mt_not(mt_or(mt_isnan(err), mt_isinf(err)));
    close = mt_or(close, mt_and(fin, mt_not(mt_lt(allowed, err))));
  }
  API_RETURN(tensor_wrap(close, a->device));
}
