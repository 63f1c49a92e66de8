/* test_symbolic.c: exec_alu, value ranges and the symbolic rules, checked
 * against a small independent interpreter by brute force. */
#include "test.h"
#include "uop/symbolic.h"
#include "uop/uop.h"
#include "util/util.h"

static uop *ci(int64_t v) { return uop_const_int(DT_I32, v); }
static uop *cl(int64_t v) { return uop_const_int(DT_I64, v); }
static uop *cf(double v) { return uop_const(DT_F32, v); }
static uop *var_dt(dtype_t dt, const char *name, int64_t lo, int64_t hi) {
  uop *s[2] = { uop_const_int(dt, lo), uop_const_int(dt, hi) };
  return uop_new(OP_DEFINE_VAR, dt, s, 2, arg_str(name));
}
static uop *var(const char *name, int64_t lo, int64_t hi) { return var_dt(DT_I32, name, lo, hi); }
static int range_ids;
static uop *range_dt(dtype_t dt, int64_t n) {
  int64_t a[2] = { range_ids++, 0 };
  return uop1(OP_RANGE, dt, uop_const_int(dt, n), arg_ints(a, 2));
}
static uop *range(int64_t n) { return range_dt(DT_I64, n); }
static uop *fvar(const char *name) { return uop0(OP_DEFINE_GLOBAL, DT_F32, arg_str(name)); }
static uop *add(uop *a, uop *b) { return uop_alu(OP_ADD, a, b); }
static uop *sub(uop *a, uop *b) { return uop_alu(OP_SUB, a, b); }
static uop *mul(uop *a, uop *b) { return uop_alu(OP_MUL, a, b); }
static uop *idiv(uop *a, uop *b) { return uop_alu(OP_IDIV, a, b); }
static uop *mod(uop *a, uop *b) { return uop_alu(OP_MOD, a, b); }
static uop *lt(uop *a, uop *b) { return uop_alu(OP_CMPLT, a, b); }
static uop *S(uop *u) { return uop_simplify(u); }
static bool is_c(uop *u, int64_t v) { return u && u->op == OP_CONST && u->arg.kind == ARG_INT && u->arg.i == v; }

/* ------------------------------------------------------------ an independent interpreter */

static int64_t wrap_to(dtype_t dt, int64_t v) {
  switch (dt.scalar) {
  case TG_BOOL: return v != 0;
  case TG_I8: return (int8_t)v;
  case TG_I16: return (int16_t)v;
  case TG_I32: return (int32_t)v;
  case TG_U8: return (uint8_t)v;
  case TG_U16: return (uint16_t)v;
  case TG_U32: return (uint32_t)v;
  default: return v;
  }
}

typedef struct {
  uop_list order;
  ptrmap index;   /* node -> position + 1 */
  int64_t *val;
  bool bad;       /* an op the interpreter does not know */
} evaluator;

static void ev_init(evaluator *e, uop *root) {
  memset(e, 0, sizeof *e);
  e->order = uop_toposort(root);
  for (int i = 0; i < e->order.n; i++) pm_put(&e->index, e->order.v[i], (void *)(intptr_t)(i + 1));
  e->val = calloc((size_t)e->order.n, sizeof(int64_t));
}
static void ev_free(evaluator *e) { free(e->order.v); pm_free(&e->index); free(e->val); }
static int64_t ev_get(evaluator *e, uop *u) { return e->val[(intptr_t)pm_get(&e->index, u) - 1]; }

/* vars[i] takes vals[i] */
static int64_t ev_run(evaluator *e, uop **vars, const int64_t *vals, int nv) {
  for (int i = 0; i < e->order.n; i++) {
    uop *u = e->order.v[i];
    int64_t a = u->nsrc > 0 ? ev_get(e, u->src[0]) : 0, b = u->nsrc > 1 ? ev_get(e, u->src[1]) : 0, r = 0;
    switch (u->op) {
    case OP_CONST: r = u->arg.i; break;
    case OP_RANGE: case OP_DEFINE_VAR: {
      int k = 0;
      while (k < nv && vars[k] != u) k++;
      if (k == nv) { e->bad = true; break; }
      r = vals[k];
      break;
    }
    case OP_ADD: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case OP_SUB: r = (int64_t)((uint64_t)a - (uint64_t)b); break;
    case OP_MUL: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case OP_IDIV: r = b == 0 ? 0 : a / b; break;
    case OP_MOD: r = b == 0 ? 0 : a % b; break;
    case OP_MAX: r = a > b ? a : b; break;
    case OP_NEG: r = (int64_t)(0 - (uint64_t)a); break;
    case OP_CMPLT: r = a < b; break;
    case OP_CMPNE: r = a != b; break;
    case OP_CMPEQ: r = a == b; break;
    case OP_AND: r = a & b; break;
    case OP_OR: r = a | b; break;
    case OP_XOR: r = a ^ b; break;
    case OP_WHERE: r = a ? b : ev_get(e, u->src[2]); break;
    case OP_CAST: r = a; break;
    default: e->bad = true; break;
    }
    e->val[i] = wrap_to(u->dtype, r);
  }
  return e->val[e->order.n - 1];
}

static int alu_count(uop *root) {
  uop_list l = uop_toposort(root);
  int n = 0;
  for (int i = 0; i < l.n; i++) n += uop_is_alu(l.v[i]->op);
  free(l.v);
  return n;
}

/* Checks over every assignment of the variables that a and b agree.
 * Variables are RANGE (0..size-1) or DEFINE_VAR (min..max). */
static bool same_values(uop *a, uop *b, uop **vars, int nv, char *why, int nwhy) {
  evaluator ea, eb;
  ev_init(&ea, a);
  ev_init(&eb, b);
  int64_t lo[4], hi[4], cur[4];
  for (int i = 0; i < nv; i++) {
    uop *v = vars[i];
    if (v->op == OP_RANGE) { lo[i] = 0; hi[i] = v->src[0]->arg.i - 1; }
    else { lo[i] = v->src[0]->arg.i; hi[i] = v->src[1]->arg.i; }
    cur[i] = lo[i];
  }
  bool ok = true;
  for (;;) {
    int64_t x = ev_run(&ea, vars, cur, nv), y = ev_run(&eb, vars, cur, nv);
    if (ea.bad || eb.bad) { snprintf(why, (size_t)nwhy, "unknown op"); ok = false; break; }
    if (x != y) {
      int k = snprintf(why, (size_t)nwhy, "got %lld want %lld at", (long long)y, (long long)x);
      for (int i = 0; i < nv && k < nwhy - 24; i++) k += snprintf(why + k, (size_t)(nwhy - k), " %lld", (long long)cur[i]);
      ok = false;
      break;
    }
    int i = 0;
    while (i < nv && cur[i] == hi[i]) { cur[i] = lo[i]; i++; }
    if (i == nv) break;
    cur[i]++;
  }
  ev_free(&ea);
  ev_free(&eb);
  return ok;
}

/* ------------------------------------------------------------ exec_alu */

static double ex(uop_op op, dtype_t dt, double a, double b) { double s[2] = { a, b }; return exec_alu(op, dt, s, 2); }
static double ex1(uop_op op, dtype_t dt, double a) { return exec_alu(op, dt, &a, 1); }

TEST(symbolic_exec_alu) {
  dtype_t i8 = dt_scalar(TG_I8), u8 = dt_scalar(TG_U8), f16 = dt_scalar(TG_F16);
  CHECK(ex(OP_ADD, i8, 127, 1) == -128);
  CHECK(ex(OP_ADD, u8, 255, 1) == 0);
  CHECK(ex(OP_SUB, u8, 0, 1) == 255);
  CHECK(ex(OP_MUL, DT_I32, 65536, 65536) == 0);
  CHECK(ex(OP_ADD, DT_U32, 4294967295.0, 2) == 1);
  CHECK(ex(OP_IDIV, DT_I32, -7, 2) == -3);
  CHECK(ex(OP_MOD, DT_I32, -7, 2) == -1);
  CHECK(ex(OP_MOD, DT_I32, 7, -2) == 1);
  CHECK(ex(OP_IDIV, DT_I32, 5, 0) == 0);
  CHECK(ex(OP_MOD, DT_I32, 5, 0) == 0);
  CHECK(ex(OP_IDIV, DT_I32, -2147483648.0, -1) == -2147483648.0);
  CHECK(ex(OP_IDIV, DT_U32, 4294967295.0, 2) == 2147483647.0);
  CHECK(ex(OP_MAX, DT_I32, -3, 2) == 2);
  CHECK(ex(OP_CMPLT, DT_BOOL, -1, 0) == 1);
  CHECK(ex(OP_CMPNE, DT_BOOL, 3, 3) == 0);
  CHECK(ex(OP_CMPEQ, DT_BOOL, 3, 3) == 1);
  CHECK(ex(OP_SHL, DT_I32, 1, 31) == -2147483648.0);
  CHECK(ex(OP_SHR, DT_I32, -8, 1) == -4);
  CHECK(ex(OP_SHR, DT_U32, 4294967288.0, 1) == 2147483644.0);
  CHECK(ex(OP_AND, DT_I32, 12, 10) == 8);
  CHECK(ex(OP_OR, DT_I32, 12, 10) == 14);
  CHECK(ex(OP_XOR, DT_I32, 12, 10) == 6);
  CHECK(ex(OP_AND, DT_BOOL, 1, 0) == 0);
  CHECK(ex(OP_OR, DT_BOOL, 1, 0) == 1);
  CHECK(ex(OP_XOR, DT_BOOL, 1, 1) == 0);
  CHECK(ex(OP_ADD, DT_F32, 16777216.0, 1) == 16777216.0);   /* rounded to f32 */
  CHECK(ex(OP_ADD, f16, 2048, 1) == 2048);
  CHECK(ex(OP_FDIV, DT_F32, 1, 4) == 0.25);
  CHECK(ex(OP_MUL, DT_F64, 1e300, 1e300) == INFINITY);
  CHECK(isnan(ex(OP_ADD, DT_F32, NAN, 1)));
  CHECK(ex1(OP_NEG, DT_I32, 5) == -5);
  CHECK(ex1(OP_NEG, u8, 1) == 255);
  CHECK(ex1(OP_SQRT, DT_F32, 16) == 4);
  CHECK(ex1(OP_EXP2, DT_F32, 3) == 8);
  CHECK(ex1(OP_LOG2, DT_F32, 8) == 3);
  CHECK(ex1(OP_RECIPROCAL, DT_F32, 4) == 0.25);
  CHECK(ex1(OP_TRUNC, DT_F32, -2.5) == -2);
  CHECK(ex1(OP_SIN, DT_F64, 0) == 0);
  CHECK(ex1(OP_CAST, DT_I32, -2.7) == -2);
  CHECK(ex1(OP_CAST, u8, 300) == 44);
  CHECK(ex1(OP_CAST, DT_BOOL, 0.5) == 1);
  CHECK(ex1(OP_CAST, f16, 1.0 / 3) == (double)tg_f16_to_f32(tg_f32_to_f16(1.0f / 3)));
  double w[3] = { 0, 5, 7 };
  CHECK(exec_alu(OP_WHERE, DT_I32, w, 3) == 7);
  w[0] = 1;
  CHECK(exec_alu(OP_WHERE, DT_I32, w, 3) == 5);
}

/* ------------------------------------------------------------ ranges */

TEST(symbolic_ranges) {
  uop_pool_push();
  uop *r = range(10), *v = var("v", -3, 5);
  CHECK_EQ_INT(uop_vmin(r), 0); CHECK_EQ_INT(uop_vmax(r), 9);
  CHECK_EQ_INT(uop_vmin(v), -3); CHECK_EQ_INT(uop_vmax(v), 5);
  CHECK_EQ_INT(uop_vmin(ci(7)), 7); CHECK_EQ_INT(uop_vmax(ci(7)), 7);
  uop *e = add(mul(r, cl(3)), cl(2));
  CHECK_EQ_INT(uop_vmin(e), 2); CHECK_EQ_INT(uop_vmax(e), 29);
  CHECK_EQ_INT(uop_vmin(sub(v, ci(10))), -13);
  uop *m = mul(v, v);
  CHECK_EQ_INT(uop_vmin(m), -15); CHECK_EQ_INT(uop_vmax(m), 25);
  CHECK_EQ_INT(uop_vmin(uop_alu1(OP_NEG, v)), -5); CHECK_EQ_INT(uop_vmax(uop_alu1(OP_NEG, v)), 3);
  CHECK_EQ_INT(uop_vmin(idiv(v, ci(2))), -1); CHECK_EQ_INT(uop_vmax(idiv(v, ci(2))), 2);
  CHECK_EQ_INT(uop_vmin(mod(r, cl(4))), 0); CHECK_EQ_INT(uop_vmax(mod(r, cl(4))), 3);
  CHECK_EQ_INT(uop_vmin(mod(r, cl(40))), 0); CHECK_EQ_INT(uop_vmax(mod(r, cl(40))), 9);
  CHECK_EQ_INT(uop_vmin(mod(v, ci(4))), -3); CHECK_EQ_INT(uop_vmax(mod(v, ci(4))), 3);
  CHECK_EQ_INT(uop_vmin(uop_alu(OP_MAX, v, ci(0))), 0); CHECK_EQ_INT(uop_vmax(uop_alu(OP_MAX, v, ci(0))), 5);
  /* comparisons */
  CHECK_EQ_INT(uop_vmin(lt(r, cl(10))), 1);
  CHECK_EQ_INT(uop_vmax(lt(r, cl(0))), 0);
  CHECK_EQ_INT(uop_vmin(lt(r, cl(5))), 0); CHECK_EQ_INT(uop_vmax(lt(r, cl(5))), 1);
  CHECK_EQ_INT(uop_vmin(uop_alu(OP_CMPNE, v, ci(9))), 1);
  CHECK_EQ_INT(uop_vmax(uop_alu(OP_CMPEQ, v, ci(9))), 0);
  /* where, cast */
  uop *w = uop_where(lt(v, ci(0)), ci(100), v);
  CHECK_EQ_INT(uop_vmin(w), -3); CHECK_EQ_INT(uop_vmax(w), 100);
  CHECK_EQ_INT(uop_vmin(uop_cast(v, DT_I64)), -3);
  CHECK_EQ_INT(uop_vmin(uop_cast(v, DT_U32)), 0);
  CHECK_EQ_INT(uop_vmax(uop_cast(v, DT_U32)), 4294967295LL);
  CHECK_EQ_INT(uop_vmin(uop_cast(v, DT_BOOL)), 0);
  CHECK_EQ_INT(uop_vmin(uop_cast(add(r, cl(1)), DT_BOOL)), 1);
  /* overflow falls back to the dtype's limits */
  uop *big = var("big", 0, 2000000000);
  CHECK_EQ_INT(uop_vmin(mul(big, ci(2))), INT32_MIN);
  CHECK_EQ_INT(uop_vmax(mul(big, ci(2))), INT32_MAX);
  CHECK_EQ_INT(uop_vmin(uop_alu1(OP_NEG, var("m", INT32_MIN, 0))), INT32_MIN);
  CHECK_EQ_INT(uop_vmax(add(var_dt(DT_I64, "l", 0, INT64_MAX), cl(1))), INT64_MAX);
  /* unknowns */
  uop *ld = uop1(OP_LOAD, DT_I32, fvar("p"), arg_none());
  CHECK_EQ_INT(uop_vmin(ld), INT32_MIN); CHECK_EQ_INT(uop_vmax(ld), INT32_MAX);
  CHECK_EQ_INT(uop_vmin(uop_cast(ld, dt_scalar(TG_U8))), 0); CHECK_EQ_INT(uop_vmax(uop_cast(ld, dt_scalar(TG_U8))), 255);
  CHECK_EQ_INT(uop_vmin(ci(3)), 3);
  CHECK_EQ_INT(uop_vmin(uop_const(DT_BOOL, 1)), 1);
  /* shifts */
  CHECK_EQ_INT(uop_vmax(uop_alu(OP_SHL, r, cl(2))), 36);
  CHECK_EQ_INT(uop_vmin(uop_alu(OP_SHR, v, ci(1))), -2);
  uop_pool_pop();
}

/* ------------------------------------------------------------ rules */

/* index_stride through a loaded row (a take's, as the MoE experts' packed
 * groups are read): a load whose address stays put along the axis is the
 * same value at both points, so the stride is the rest's; a load that
 * moves (a lookup at a loaded nibble) leaves it unknown. */
TEST(symbolic_index_stride_through_loads) {
  uop_pool_push();
  uop *t = range(4), *r = range(64), *axes[2] = { t, r };
  uop *g = uop0(OP_DEFINE_GLOBAL, dt_ptr(DT_I32, ADDR_GLOBAL), arg_int(1));
  uop *row = uop_cast(uop1(OP_LOAD, DT_I32, uop2(OP_INDEX, g->dtype, g, t, arg_none()), arg_none()), DT_I64);
  uop *ix = add(mul(row, cl(1280)), mul(r, cl(4)));
  CHECK_EQ_INT(index_stride(ix, r, axes, 2), 4);
  CHECK(index_stride(ix, t, axes, 2) == INT64_MIN);
  uop *moving = uop_cast(uop1(OP_LOAD, DT_I32, uop2(OP_INDEX, g->dtype, g, r, arg_none()), arg_none()), DT_I64);
  CHECK(index_stride(add(moving, r), r, axes, 2) == INT64_MIN);
  /* not linear in the loaded value: its stride depends on it */
  CHECK(index_stride(mul(row, r), r, axes, 2) == INT64_MIN);
  uop_pool_pop();
}

TEST(symbolic_const_fold) {
  uop_pool_push();
  CHECK(S(add(ci(2), ci(3))) == ci(5));
  CHECK(S(mul(add(ci(2), ci(3)), sub(ci(1), ci(4)))) == ci(-15));
  CHECK(S(idiv(ci(-7), ci(2))) == ci(-3));
  CHECK(S(mod(ci(-7), ci(2))) == ci(-1));
  CHECK(S(idiv(ci(7), ci(0))) == ci(0));
  dtype_t i8 = dt_scalar(TG_I8);
  CHECK(S(add(uop_const_int(i8, 127), uop_const_int(i8, 1))) == uop_const_int(i8, -128));
  CHECK(S(lt(ci(1), ci(2))) == uop_const(DT_BOOL, 1));
  CHECK(S(uop_cast(ci(300), dt_scalar(TG_U8))) == uop_const_int(dt_scalar(TG_U8), 44));
  CHECK(S(uop_cast(ci(3), DT_F32)) == cf(3));
  CHECK(S(uop_cast(cf(-2.5), DT_I32)) == ci(-2));
  CHECK(S(add(cf(0.5), cf(0.25))) == cf(0.75));
  CHECK(S(uop_alu1(OP_SQRT, cf(9))) == cf(3));
  CHECK(S(uop_where(uop_const(DT_BOOL, 0), ci(1), ci(2))) == ci(2));
  CHECK(S(uop_alu(OP_MAX, ci(4), ci(9))) == ci(9));
  CHECK(S(lt(cf(NAN), cf(1))) == uop_const(DT_BOOL, 0));
  CHECK(S(uop_alu(OP_CMPNE, cf(NAN), cf(NAN))) == uop_const(DT_BOOL, 1));
  /* u64 arithmetic past 2^63 */
  uop *big = uop_const_int(DT_U64, INT64_MIN);   /* 2^63 */
  uop *r = S(uop_alu(OP_IDIV, big, uop_const_int(DT_U64, 2)));
  CHECK(is_c(r, (int64_t)1 << 62));
  CHECK(S(lt(uop_const_int(DT_U64, 1), big)) == uop_const(DT_BOOL, 1));
  uop_pool_pop();
}

TEST(symbolic_identities) {
  uop_pool_push();
  uop *x = var("x", -50, 50), *y = var("y", -50, 50);
  uop *b = lt(x, y), *c = lt(y, x);
  uop *z0 = ci(0), *one = ci(1);
  uop *T = uop_const(DT_BOOL, 1), *Fz = uop_const(DT_BOOL, 0);
  CHECK(S(add(x, z0)) == x);
  CHECK(S(add(z0, x)) == x);
  CHECK(S(sub(x, z0)) == x);
  CHECK(S(mul(x, one)) == x);
  CHECK(S(mul(one, x)) == x);
  CHECK(S(mul(x, z0)) == z0);
  CHECK(S(idiv(x, one)) == x);
  CHECK(S(mod(x, one)) == z0);
  CHECK(S(idiv(x, ci(-1))) == uop_alu1(OP_NEG, x));
  CHECK(S(uop_alu1(OP_NEG, uop_alu1(OP_NEG, x))) == x);
  CHECK(S(sub(x, x)) == z0);
  CHECK(S(sub(add(x, y), y)) == x);
  CHECK(S(uop_alu(OP_AND, b, T)) == b);
  CHECK(S(uop_alu(OP_AND, b, Fz)) == Fz);
  CHECK(S(uop_alu(OP_OR, b, T)) == T);
  CHECK(S(uop_alu(OP_OR, Fz, b)) == b);
  CHECK(S(uop_alu(OP_AND, b, b)) == b);
  CHECK(S(uop_alu(OP_XOR, x, x)) == z0);
  CHECK(S(uop_where(T, x, y)) == x);
  CHECK(S(uop_where(Fz, x, y)) == y);
  CHECK(S(uop_where(b, x, x)) == x);
  CHECK(S(uop_where(b, T, Fz)) == b);
  CHECK(S(lt(x, x)) == Fz);
  CHECK(S(uop_alu(OP_CMPNE, x, x)) == Fz);
  CHECK(S(uop_alu(OP_CMPEQ, x, x)) == T);
  CHECK(S(uop_alu(OP_CMPNE, b, Fz)) == b);
  CHECK(S(uop_cast(x, DT_I32)) == x);
  CHECK(S(uop1(OP_CAST, DT_I32, x, arg_none())) == x);
  CHECK(S(uop_cast(uop_cast(x, DT_I64), DT_F32)) == uop_cast(x, DT_F32));
  CHECK(S(uop_cast(uop_cast(x, dt_scalar(TG_U8)), DT_F32)) != uop_cast(x, DT_F32));   /* the u8 cast wraps */
  CHECK(S(uop_alu(OP_MAX, x, ci(-100))) == x);
  CHECK(S(uop_alu(OP_MAX, ci(60), x)) == ci(60));
  CHECK(S(uop_alu(OP_MAX, x, ci(0))) == uop_alu(OP_MAX, x, ci(0)));
  (void)c;
  uop_pool_pop();
}

TEST(symbolic_float_safe) {
  uop_pool_push();
  uop *f = fvar("f");
  uop *ld = uop1(OP_LOAD, DT_F32, f, arg_none());
  /* none of these is exact for every float (NaN, inf, -0.0) */
  CHECK(S(add(ld, cf(0))) == add(ld, cf(0)));
  CHECK(S(mul(ld, cf(0))) == mul(ld, cf(0)));
  CHECK(S(sub(ld, ld)) == sub(ld, ld));
  CHECK(S(lt(ld, ld)) == lt(ld, ld));
  CHECK(S(uop_alu(OP_CMPNE, ld, ld)) == uop_alu(OP_CMPNE, ld, ld));
  CHECK(S(add(add(ld, cf(1)), cf(2))) == add(add(ld, cf(1)), cf(2)));
  CHECK(S(add(ld, ld)) == add(ld, ld));
  CHECK(S(uop_alu(OP_MAX, cf(NAN), cf(1)))->op == OP_MAX);
  /* these are */
  CHECK(S(add(ld, cf(-0.0))) == ld);
  CHECK(S(mul(ld, cf(1))) == ld);
  CHECK(S(sub(ld, cf(0))) == ld);
  CHECK(S(uop_alu(OP_FDIV, ld, cf(1))) == ld);
  CHECK(S(uop_alu1(OP_NEG, uop_alu1(OP_NEG, ld))) == ld);
  CHECK(S(add(cf(2), ld)) == add(ld, cf(2)));
  uop_pool_pop();
}

TEST(symbolic_combine) {
  uop_pool_push();
  uop *x = var("x", -50, 50), *y = var("y", -50, 50);
  CHECK(S(add(ci(3), x)) == add(x, ci(3)));
  CHECK(S(add(add(x, ci(3)), ci(4))) == add(x, ci(7)));
  CHECK(S(add(add(ci(3), x), ci(-3))) == x);
  CHECK(S(mul(mul(x, ci(3)), ci(4))) == mul(x, ci(12)));
  CHECK(S(mul(add(x, ci(3)), ci(4))) == add(mul(x, ci(4)), ci(12)));
  CHECK(S(add(mul(x, ci(3)), mul(x, ci(4)))) == mul(x, ci(7)));
  CHECK(S(add(x, x)) == mul(x, ci(2)));
  CHECK(S(add(x, mul(x, ci(4)))) == mul(x, ci(5)));
  CHECK(S(add(add(y, x), x)) == add(y, mul(x, ci(2))));
  CHECK(S(add(add(x, ci(5)), y)) == add(add(x, y), ci(5)));
  CHECK(S(sub(add(x, ci(5)), ci(5))) == x);
  CHECK(S(add(sub(x, ci(2)), ci(2))) == x);
  uop *xy = S(add(add(x, ci(5)), add(y, ci(-5))));
  CHECK(xy == add(x, y) || xy == add(y, x));
  CHECK(S(mul(add(x, ci(1)), ci(0))) == ci(0));
  uop_pool_pop();
}

TEST(symbolic_divmod) {
  uop_pool_push();
  uop *x = var("x", 0, 100), *n = var("n", -100, 100), *w = var("w", 0, 7);
  /* (x*c)//c, (x*c)%c: any sign */
  CHECK(S(idiv(mul(n, ci(4)), ci(4))) == n);
  CHECK(S(mod(mul(n, ci(4)), ci(4))) == ci(0));
  CHECK(S(idiv(mul(n, ci(8)), ci(4))) == mul(n, ci(2)));
  /* (x//a)//b */
  CHECK(S(idiv(idiv(n, ci(3)), ci(5))) == idiv(n, ci(15)));
  /* (x%(a*b))%a and (x%a)%(a*b) */
  CHECK(S(mod(mod(n, ci(12)), ci(4))) == mod(n, ci(4)));
  CHECK(S(mod(mod(n, ci(4)), ci(12))) == mod(n, ci(4)));
  /* ranges */
  CHECK(S(mod(w, ci(8))) == w);
  CHECK(S(idiv(w, ci(8))) == ci(0));
  CHECK(S(idiv(add(w, ci(16)), ci(8))) == ci(2));
  CHECK(S(mod(add(w, ci(16)), ci(8))) == w);
  CHECK(S(mod(add(w, ci(-7)), ci(8))) == add(w, ci(-7)));   /* C: the sign follows x */
  CHECK(S(idiv(add(w, ci(-7)), ci(8))) == ci(0));
  uop *e8 = mod(add(w, ci(-8)), ci(8));   /* -8 % 8 == 0: not one bucket */
  CHECK(S(e8) == e8);
  /* gcd */
  CHECK(S(idiv(add(mul(x, ci(4)), ci(2)), ci(8))) == idiv(x, ci(2)));
  CHECK(S(mod(add(mul(x, ci(4)), mul(w, ci(4))), ci(8))) == mul(mod(add(x, w), ci(2)), ci(4)));
  CHECK(S(mod(add(mul(x, ci(9)), w), ci(8))) == mod(add(x, w), ci(8)));   /* coefficients shrink */
  CHECK(S(mod(add(mod(x, ci(16)), w), ci(8))) == mod(add(x, w), ci(8)));  /* a mod by a multiple */
  CHECK(S(mod(add(mul(x, ci(8)), add(w, ci(3))), ci(8))) == mod(add(w, ci(3)), ci(8)));
  CHECK(S(idiv(add(mul(x, ci(8)), mul(w, ci(3))), ci(4))) == add(mul(x, ci(2)), idiv(mul(w, ci(3)), ci(4))));
  /* (x//c)*c + x%c */
  CHECK(S(add(mul(idiv(n, ci(7)), ci(7)), mod(n, ci(7)))) == n);
  /* ((x//c)+a)//d */
  CHECK(S(idiv(add(idiv(x, ci(3)), ci(2)), ci(5))) == idiv(add(x, ci(6)), ci(15)));
  /* negative dividends are left alone where truncation differs from floor */
  uop *e = idiv(add(mul(n, ci(4)), ci(2)), ci(8));
  CHECK(S(e) == e);
  /* in-period offsets of a blocked index (unrolled lanes of packed weights):
   * ((32r + u) % 256) // 32 and (32r + u) % 64 for 0 <= u < 32 */
  uop *r = var("r", 0, 40), *u = var("u", 0, 31);
  uop *k = add(mul(r, ci(32)), u);
  char why[160];
  uop *e1 = idiv(mod(k, ci(256)), ci(32)), *e2 = mod(k, ci(64)), *e3 = idiv(mod(n, ci(256)), ci(32));
  CHECK(S(idiv(mod(add(mul(r, ci(32)), ci(5)), ci(256)), ci(32))) == mod(r, ci(8)));
  CHECK(S(mod(add(mul(r, ci(32)), ci(5)), ci(64))) == add(mul(mod(r, ci(2)), ci(32)), ci(5)));
  uop *vars[2] = { r, u };
  CHECK_MSG(same_values(e1, S(e1), vars, 2, why, sizeof why), "(k%%256)//32: %s", why);
  CHECK_MSG(same_values(e2, S(e2), vars, 2, why, sizeof why), "k%%64: %s", why);
  CHECK_MSG(same_values(e3, S(e3), &n, 1, why, sizeof why), "(n%%256)//32: %s", why);   /* n may be negative */
  uop_pool_pop();
}

TEST(symbolic_reshape_indices) {
  uop_pool_push();
  uop *i = range(8), *j = range(64), *k = range(4);
  uop *flat = add(mul(i, cl(64)), j);
  CHECK(S(idiv(flat, cl(64))) == i);
  CHECK(S(mod(flat, cl(64))) == j);
  CHECK(S(mod(idiv(flat, cl(64)), cl(8))) == i);
  /* three dims: ((i*64 + j)*4 + k) */
  uop *f3 = add(mul(flat, cl(4)), k);
  CHECK(S(mod(f3, cl(4))) == k);
  CHECK(S(mod(idiv(f3, cl(4)), cl(64))) == j);
  CHECK(S(idiv(f3, cl(256))) == i);
  /* a reshape to (16, 32) and back: (i*64+j) -> (a, b) = (f//32, f%32) -> a*32+b */
  uop *a = idiv(flat, cl(32)), *b = mod(flat, cl(32));
  CHECK(S(add(mul(a, cl(32)), b)) == S(flat));
  /* splitting j = j1*8 + j2 */
  uop *j1 = range(8), *j2 = range(8);
  uop *g = add(mul(i, cl(64)), add(mul(j1, cl(8)), j2));
  CHECK(S(mod(idiv(g, cl(8)), cl(8))) == j1);
  CHECK(S(mod(g, cl(8))) == j2);
  CHECK(S(idiv(g, cl(64))) == i);
  uop_pool_pop();
}

TEST(symbolic_comparisons) {
  uop_pool_push();
  uop *r = range(10), *v = var("v", -5, 5);
  uop *T = uop_const(DT_BOOL, 1), *Fz = uop_const(DT_BOOL, 0);
  CHECK(S(lt(r, cl(10))) == T);
  CHECK(S(lt(r, cl(0))) == Fz);
  CHECK(S(lt(cl(-1), r)) == T);
  CHECK(S(lt(r, cl(5))) == lt(r, cl(5)));
  CHECK(S(uop_alu(OP_CMPNE, r, cl(10))) == T);
  CHECK(S(uop_alu(OP_CMPEQ, r, cl(-1))) == Fz);
  CHECK(S(lt(v, add(v, ci(0)))) == Fz);
  /* x*c < d, x + c < d */
  CHECK(S(lt(mul(v, ci(3)), ci(7))) == lt(v, ci(3)));
  CHECK(S(lt(mul(v, ci(3)), ci(-7))) == lt(v, ci(-2)));
  CHECK(S(lt(add(v, ci(3)), ci(4))) == lt(v, ci(1)));
  CHECK(S(lt(ci(4), add(v, ci(3)))) == lt(ci(1), v));
  CHECK(S(lt(add(mul(v, ci(2)), ci(1)), ci(4))) == lt(v, ci(2)));
  CHECK(S(lt(idiv(r, cl(3)), cl(2))) == lt(r, cl(6)));
  /* decided through the folds */
  CHECK(S(lt(add(r, cl(-20)), cl(0))) == T);
  uop_pool_pop();
}

TEST(symbolic_deep_chain) {
  int64_t live0 = uop_live_count();
  uop_pool_push();
  uop *r = range(3);
  uop *e = r;
  const int n = 100000;
  for (int i = 0; i < n; i++) e = add(add(e, cl(1)), cl(-1));
  CHECK(S(e) == r);
  uop *s = r;
  for (int i = 0; i < n; i++) s = add(s, r);
  CHECK_EQ_INT(uop_vmax(s), 2 * (int64_t)(n + 1));
  CHECK(S(s) == mul(r, cl(n + 1)));
  uop_pool_pop();
  CHECK_EQ_INT(uop_live_count(), live0);
}

TEST(symbolic_shared_dag) {
  /* 2^60 paths through a small DAG: every pass must visit nodes, not paths */
  uop_pool_push();
  uop *r = range(4);
  uop *e = r;
  for (int i = 0; i < 60; i++) e = add(mul(e, cl(2)), e);
  uop *d = idiv(e, cl(7));
  uop *s = S(d);
  CHECK(s != NULL);
  CHECK(S(lt(e, cl(5))) != NULL);
  uop *f = r;
  for (int i = 0; i < 20; i++) f = add(f, f);   /* r * 2^20 */
  CHECK(S(f) == mul(r, cl(1 << 20)));
  CHECK(S(idiv(f, cl(1 << 20))) == r);
  uop_pool_pop();
}

/* ------------------------------------------------------------ random expressions, brute force */

static uint64_t rs;
static int rnd(int n) {
  rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
  return (int)((rs >> 33) % (uint64_t)n);
}

static uop *gen(int depth, uop **vars, int nv, dtype_t dt);
static uop *gen_bool(int depth, uop **vars, int nv, dtype_t dt) {
  uop *a = gen(depth, vars, nv, dt);
  uop *b = rnd(2) ? uop_const_int(dt, rnd(13) - 4) : gen(depth, vars, nv, dt);
  switch (rnd(4)) {
  case 0: return uop_alu(OP_CMPNE, a, b);
  case 1: return uop_alu(OP_CMPEQ, a, b);
  default: return rnd(2) ? lt(a, b) : lt(b, a);
  }
}

static uop *gen(int depth, uop **vars, int nv, dtype_t dt) {
  if (depth <= 0 || rnd(5) == 0) {
    if (rnd(4)) return vars[rnd(nv)];
    return uop_const_int(dt, rnd(13) - 3);
  }
  uop *a = gen(depth - 1, vars, nv, dt);
  uop *c = uop_const_int(dt, rnd(2) ? rnd(9) + 1 : rnd(19) - 9);
  switch (rnd(14)) {
  case 0: return add(a, gen(depth - 1, vars, nv, dt));
  case 1: return add(a, c);
  case 2: return sub(a, gen(depth - 1, vars, nv, dt));
  case 3: return mul(a, c);
  case 4: return rnd(4) ? mul(a, c) : mul(a, gen(depth - 2, vars, nv, dt));
  case 5: case 6: {
    uop *d = rnd(6) ? uop_const_int(dt, rnd(9) + 1) : rnd(2) ? uop_const_int(dt, -(rnd(4) + 1)) : gen(depth - 2, vars, nv, dt);
    return rnd(2) ? idiv(a, d) : mod(a, d);
  }
  case 7: return uop_alu(OP_MAX, a, gen(depth - 1, vars, nv, dt));
  case 8: return uop_alu1(OP_NEG, a);
  case 9: return uop_where(gen_bool(depth - 1, vars, nv, dt), a, gen(depth - 1, vars, nv, dt));
  case 10: case 11: case 12: {
    /* index-like: (v0*k0 + v1*k1 + k) // d or % d */
    uop *s = mul(vars[rnd(nv)], uop_const_int(dt, rnd(17) - 4));
    s = add(s, mul(vars[rnd(nv)], uop_const_int(dt, rnd(9))));
    if (rnd(2)) s = add(s, uop_const_int(dt, rnd(20) - 5));
    if (rnd(3) == 0) s = add(s, a);
    uop *d = uop_const_int(dt, rnd(12) + 1);
    s = rnd(2) ? idiv(s, d) : mod(s, d);
    if (rnd(3) == 0) s = rnd(2) ? idiv(s, uop_const_int(dt, rnd(5) + 1)) : mod(s, uop_const_int(dt, rnd(5) + 1));
    return s;
  }
  default: return add(mul(idiv(a, c), c), mod(a, c));
  }
}

#ifndef SYM_STRESS   /* -DSYM_STRESS=100 for a long run */
#define SYM_STRESS 1
#endif

static void random_round(int iters, bool cmp_top) {
  iters *= SYM_STRESS;
  char why[256];
  int bad = 0, grew = 0;
  for (int it = 0; it < iters && bad < 5; it++) {
    uop_pool_push();
    /* mostly index types; small and unsigned ones check that rules stay
     * exact when values wrap around */
    static const int dts[8] = { TG_I32, TG_I64, TG_I32, TG_I64, TG_I32, TG_U32, TG_I8, TG_U8 };
    dtype_t dt = dt_scalar(dts[rnd(8)]);
    uop *vars[3];
    vars[0] = range_dt(dt, rnd(8) + 1);
    vars[1] = range_dt(dt, rnd(10) + 1);
    int64_t lo = dt_is_unsigned(dt) ? rnd(3) : rnd(8) - 5;
    vars[2] = var_dt(dt, "v", lo, lo + rnd(7));
    uop *e = cmp_top ? gen_bool(3, vars, 3, dt) : gen(4, vars, 3, dt);
    uop *s = S(e);
    if (!same_values(e, s, vars, 3, why, sizeof why)) {
      bad++;
      char *a = uop_to_string(e), *b = uop_to_string(s);
      test_fail(__FILE__, __LINE__, "iteration %d: %s\noriginal:\n%ssimplified:\n%s", it, why, a, b);
      free(a); free(b);
    } else if (alu_count(s) > alu_count(e)) {
      /* a rewrite can break the sharing of a common subexpression: allow it
       * very rarely */
      if (++grew > iters / 1000 && grew < 4) {
        char *a = uop_to_string(e), *b = uop_to_string(s);
        test_fail(__FILE__, __LINE__, "iteration %d: simplified is larger (%d > %d)\noriginal:\n%ssimplified:\n%s", it,
                  alu_count(s), alu_count(e), a, b);
        free(a); free(b);
      }
    }
    /* simplifying again changes nothing */
    CHECK(S(s) == s);
    uop_pool_pop();
  }
}

TEST(symbolic_random_exprs) {
  rs = 12345;
  random_round(1500, false);
}

TEST(symbolic_random_comparisons) {
  rs = 777;
  random_round(700, true);
}
