/* symbolic.c: value ranges, constant evaluation of ALU ops, and the symbolic
 * rule set (tinygrad's symbolic.py, in C).
 *
 * Integer semantics are the target's: two's complement with wrap-around,
 * division and modulo truncate toward zero like C, and division by zero gives
 * 0. Every rule that is true only over the mathematical integers (division,
 * modulo, comparisons) first checks with value ranges that no intermediate
 * can wrap, so rewrites are exact for every dtype. Rules never touch floats
 * unless they are exact for every float value, NaN, inf and -0.0 included. */
#include <math.h>
#include <pthread.h>
#include "uop/symbolic.h"
#include "util/util.h"

__extension__ typedef __int128 i128;

/* ------------------------------------------------------------ dtypes */

static bool s_sint(int s) { return s == TG_I8 || s == TG_I16 || s == TG_I32 || s == TG_I64; }
static bool s_uint(int s) { return s == TG_U8 || s == TG_U16 || s == TG_U32 || s == TG_U64; }
static bool s_int(int s) { return s_sint(s) || s_uint(s); }
static bool s_intlike(int s) { return s_int(s) || s == TG_BOOL; }
static bool intlike(dtype_t d) { return !dt_is_ptr(d) && s_intlike(d.scalar); }

static int s_bits(int s) {
  switch (s) {
  case TG_I8: case TG_U8: return 8;
  case TG_I16: case TG_U16: return 16;
  case TG_I32: case TG_U32: return 32;
  default: return 64;
  }
}

/* Limits as int64. u64 saturates at INT64_MAX: its upper half is not
 * representable, so rules never reason about u64 ranges (see rng). */
static void limits(dtype_t d, int64_t *lo, int64_t *hi) {
  int s = d.scalar;
  if (dt_is_ptr(d) || !s_intlike(s)) { *lo = INT64_MIN; *hi = INT64_MAX; return; }
  if (s == TG_BOOL) { *lo = 0; *hi = 1; return; }
  int b = s_bits(s);
  if (s_uint(s)) { *lo = 0; *hi = b == 64 ? INT64_MAX : (int64_t)((1ULL << b) - 1); return; }
  if (b == 64) { *lo = INT64_MIN; *hi = INT64_MAX; return; }
  *lo = -(int64_t)(1ULL << (b - 1));
  *hi = (int64_t)((1ULL << (b - 1)) - 1);
}

/* Two's complement wrap of v to the dtype's width (bool: != 0). */
static int64_t wrap(dtype_t d, uint64_t v) {
  int s = d.scalar;
  if (s == TG_BOOL) return v != 0;
  switch (s) {
  case TG_I8: return (int8_t)(uint8_t)v;
  case TG_U8: return (uint8_t)v;
  case TG_I16: return (int16_t)(uint16_t)v;
  case TG_U16: return (uint16_t)v;
  case TG_I32: return (int32_t)(uint32_t)v;
  case TG_U32: return (uint32_t)v;
  default: return (int64_t)v;
  }
}

static int64_t floordiv(int64_t a, int64_t b) {   /* b > 0 */
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
static i128 floordiv128(i128 a, i128 b) {
  i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static i128 ceildiv128(i128 a, i128 b) { return -floordiv128(-a, b); }
static int64_t gcd64(int64_t a, int64_t b) {
  uint64_t x = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a, y = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
  while (y) { uint64_t t = x % y; x = y; y = t; }
  return (int64_t)x;
}

/* ------------------------------------------------------------ exec_alu */

static double as_double(dtype_t d, int64_t v) { return s_uint(d.scalar) ? (double)(uint64_t)v : (double)v; }
static int64_t from_double(dtype_t d, double v) {
  v = dt_cast_value(v, d);
  if (s_uint(d.scalar) && v >= 9223372036854775808.0) return (int64_t)(uint64_t)v;
  return (int64_t)v;
}

/* threefry2x32 with 20 rounds, as the renderers emit it (cstyle.c's
 * render_threefry): x and key split into (lo, hi) words, the output words
 * packed as (hi << 32) | lo. */
static uint64_t threefry2x32(uint64_t x, uint64_t key) {
  static const int rot[2][4] = { { 13, 15, 26, 6 }, { 17, 29, 16, 24 } };
  uint32_t ks[3] = { (uint32_t)key, (uint32_t)(key >> 32), 0 };
  ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;
  uint32_t x0 = (uint32_t)x + ks[0], x1 = (uint32_t)(x >> 32) + ks[1];
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 4; j++) {
      int r = rot[i % 2][j];
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + (uint32_t)(i + 1);
  }
  return ((uint64_t)x1 << 32) | x0;
}

/* Integer evaluation: operands are in sdt (the value dtype for WHERE), the
 * result in dt. Exact in 64 bits. */
static int64_t exec_int(uop_op op, dtype_t dt, dtype_t sdt, const int64_t *s, int n) {
  bool un = s_uint(sdt.scalar);
  uint64_t a = n > 0 ? (uint64_t)s[0] : 0, b = n > 1 ? (uint64_t)s[1] : 0;
  int64_t sa = (int64_t)a, sb = (int64_t)b;
  uint64_t r = 0;
  switch (op) {
  case OP_ADD: r = a + b; break;
  case OP_SUB: r = a - b; break;
  case OP_MUL: r = a * b; break;
  case OP_NEG: r = (uint64_t)0 - a; break;
  case OP_TRUNC: r = a; break;
  case OP_IDIV:
    if (b == 0) r = 0;
    else if (un) r = a / b;
    else if (sa == INT64_MIN && sb == -1) r = a;
    else r = (uint64_t)(sa / sb);
    break;
  case OP_MOD:
    if (b == 0) r = 0;
    else if (un) r = a % b;
    else if (sb == -1) r = 0;
    else r = (uint64_t)(sa % sb);
    break;
  case OP_MAX: r = un ? (a > b ? a : b) : (uint64_t)(sa > sb ? sa : sb); break;
  case OP_CMPLT: return un ? a < b : sa < sb;
  case OP_CMPNE: return a != b;
  case OP_CMPEQ: return a == b;
  case OP_AND: r = a & b; break;
  case OP_OR: r = a | b; break;
  case OP_XOR: r = a ^ b; break;
  case OP_THREEFRY: r = threefry2x32(a, b); break;
  case OP_SHL: r = b >= 64 ? 0 : a << b; break;
  case OP_SHR:
    if (un) r = b >= 64 ? 0 : a >> b;
    else r = (uint64_t)(b >= 64 ? (sa < 0 ? -1 : 0) : (sa >> b));
    break;
  case OP_WHERE: r = s[0] ? (uint64_t)s[1] : (uint64_t)s[2]; break;
  case OP_MULACC: r = a * b + (uint64_t)s[2]; break;
  case OP_CAST: return wrap(dt, a);
  default: {   /* float-valued math on ints, and what has no integer meaning */
    double v[3] = { 0, 0, 0 };
    for (int i = 0; i < n && i < 3; i++) v[i] = as_double(sdt, s[i]);
    return from_double(dt, exec_alu(op, DT_F64, v, n));
  }
  }
  return wrap(dt, r);
}

double exec_alu(uop_op op, dtype_t dt, const double *s, int n) {
  double a = n > 0 ? s[0] : 0, b = n > 1 ? s[1] : 0;
  switch (op) {
  case OP_CMPLT: return a < b;
  case OP_CMPNE: return a != b;
  case OP_CMPEQ: return a == b;
  case OP_CAST: return dt_cast_value(a, dt);
  case OP_WHERE: return dt_cast_value(a != 0 ? b : s[2], dt);
  case OP_BITCAST: return 0;   /* not supported */
  default: break;
  }
  if (intlike(dt)) {
    int64_t v[3] = { 0, 0, 0 };
    for (int i = 0; i < n && i < 3; i++) v[i] = from_double(dt, s[i]);
    return as_double(dt, exec_int(op, dt, dt, v, n));
  }
  double r;
  switch (op) {
  case OP_ADD: r = a + b; break;
  case OP_SUB: r = a - b; break;
  case OP_MUL: r = a * b; break;
  case OP_FDIV: r = a / b; break;
  case OP_IDIV: r = trunc(a / b); break;
  case OP_MOD: r = fmod(a, b); break;
  case OP_MAX: r = b > a ? b : a; break;
  case OP_POW: r = pow(a, b); break;
  case OP_NEG: r = -a; break;
  case OP_EXP2: r = exp2(a); break;
  case OP_LOG2: r = log2(a); break;
  case OP_SIN: r = sin(a); break;
  case OP_SQRT: r = sqrt(a); break;
  case OP_RECIPROCAL: r = 1.0 / a; break;
  case OP_TRUNC: r = trunc(a); break;
  case OP_MULACC: r = a * b + s[2]; break;
  default: r = 0; break;   /* bitwise ops have no float meaning */
  }
  return dt_cast_value(r, dt);
}

/* ------------------------------------------------------------ ranges */

/* Is [lo, hi] (exact, unwrapped) inside the dtype? Then the wrapped result is
 * the exact one and the range is sound. */
static bool set_checked(dtype_t d, i128 lo, i128 hi, int64_t *olo, int64_t *ohi) {
  int64_t dlo, dhi;
  limits(d, &dlo, &dhi);
  if (lo < dlo || hi > dhi) { *olo = dlo; *ohi = dhi; return false; }
  *olo = (int64_t)lo; *ohi = (int64_t)hi;
  return true;
}

/* do sources of u need their range for u's? */
static bool wants_src_ranges(const uop *u) {
  if (!intlike(u->dtype)) return false;
  if (u->dtype.scalar == TG_U64) return false;
  switch (u->op) {
  case OP_CONST: case OP_DEFINE_VAR: case OP_LOAD: case OP_BITCAST: case OP_THREEFRY: return false;
  default: return true;
  }
}

static void src_range(const uop *s, int64_t *lo, int64_t *hi) { *lo = s->vmin; *hi = s->vmax; }

static bool src_known(const uop *s) { return intlike(s->dtype) && s->dtype.scalar != TG_U64; }

static void compute_one(uop *u) {
  int64_t lo, hi, dlo, dhi;
  limits(u->dtype, &dlo, &dhi);
  lo = dlo; hi = dhi;
  dtype_t d = u->dtype;
  int ns = u->nsrc;
  uop *const *S = u->src;
  if (!intlike(d)) goto out;
  if (d.scalar == TG_U64) {   /* only constants below 2^63 are tracked */
    if (u->op == OP_CONST && u->arg.kind == ARG_INT && u->arg.i >= 0) lo = hi = u->arg.i;
    goto out;
  }
  /* sources we may read */
  int64_t l[3] = { 0 }, h[3] = { 0 };
  bool k[3] = { false };
  for (int i = 0; i < ns && i < 3; i++)
    if (src_known(S[i])) { k[i] = true; src_range(S[i], &l[i], &h[i]); }
  switch (u->op) {
  case OP_CONST:
    if (u->arg.kind == ARG_INT) lo = hi = wrap(d, (uint64_t)u->arg.i);
    break;
  case OP_RANGE: case OP_SPECIAL:
    /* 0..size-1. A loop that may run zero times keeps an unknown range:
     * folding its index to a constant would drop the loop, and the body
     * would run once. */
    if (ns >= 1 && k[0] && l[0] >= 1) { lo = 0; hi = h[0] - 1; }
    /* a loop to a variable (a symbolic axis) may run zero times too, but
     * with two or more possible values its index never folds to a constant */
    else if (ns >= 1 && k[0] && S[0]->op != OP_CONST && l[0] >= 0 && h[0] >= 2) { lo = 0; hi = h[0] - 1; }
    break;
  case OP_DEFINE_VAR:
    if (ns >= 2 && S[0]->op == OP_CONST && S[1]->op == OP_CONST && S[0]->arg.kind == ARG_INT && S[1]->arg.kind == ARG_INT &&
        S[0]->arg.i <= S[1]->arg.i)
      set_checked(d, S[0]->arg.i, S[1]->arg.i, &lo, &hi);
    break;
  case OP_BIND: case OP_GEP: case OP_TRUNC:
    if (ns >= 1 && k[0]) set_checked(d, l[0], h[0], &lo, &hi);
    break;
  case OP_VECTORIZE: {
    i128 a = INT64_MAX, b = INT64_MIN;
    bool all = ns > 0 && ns == (int)d.count;   /* one source: an iota (lanes base + stride*i), left unknown */
    for (int i = 0; i < ns && all; i++) {
      if (!src_known(S[i])) { all = false; break; }
      if (S[i]->vmin < a) a = S[i]->vmin;
      if (S[i]->vmax > b) b = S[i]->vmax;
    }
    if (all) set_checked(d, a, b, &lo, &hi);
    break;
  }
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_MULACC: {
    if (!k[0] || !k[1]) break;
    i128 a, b;
    if (u->op == OP_ADD) { a = (i128)l[0] + l[1]; b = (i128)h[0] + h[1]; }
    else if (u->op == OP_SUB) { a = (i128)l[0] - h[1]; b = (i128)h[0] - l[1]; }
    else {
      i128 c[4] = { (i128)l[0] * l[1], (i128)l[0] * h[1], (i128)h[0] * l[1], (i128)h[0] * h[1] };
      a = b = c[0];
      for (int i = 1; i < 4; i++) { if (c[i] < a) a = c[i]; if (c[i] > b) b = c[i]; }
      if (u->op == OP_MULACC) {
        if (!k[2]) break;
        a += l[2]; b += h[2];
      }
    }
    set_checked(d, a, b, &lo, &hi);
    break;
  }
  case OP_NEG:
    if (k[0]) set_checked(d, -(i128)h[0], -(i128)l[0], &lo, &hi);
    break;
  case OP_IDIV:
    if (k[0] && k[1] && (l[1] > 0 || h[1] < 0)) {
      /* trunc(x / y) is monotone in each operand while y keeps its sign */
      i128 c[4] = { (i128)l[0] / l[1], (i128)l[0] / h[1], (i128)h[0] / l[1], (i128)h[0] / h[1] };
      i128 a = c[0], b = c[0];
      for (int i = 1; i < 4; i++) { if (c[i] < a) a = c[i]; if (c[i] > b) b = c[i]; }
      set_checked(d, a, b, &lo, &hi);
    }
    break;
  case OP_MOD:
    if (k[0] && k[1] && (l[1] > 0 || h[1] < 0)) {
      /* C: the sign follows x and |x % y| < |y| */
      i128 m = h[1] > 0 ? (i128)h[1] : -(i128)l[1];   /* the largest |y| */
      i128 mn = l[1] > 0 ? (i128)l[1] : -(i128)h[1];  /* the smallest |y| */
      i128 a, b;
      if (l[0] >= 0) {
        if (h[0] < mn) { a = l[0]; b = h[0]; }
        else { a = 0; b = h[0] < m - 1 ? h[0] : m - 1; }
      } else if (h[0] <= 0) {
        if (l[0] > -mn) { a = l[0]; b = h[0]; }
        else { a = l[0] > -(m - 1) ? l[0] : -(m - 1); b = 0; }
      } else {
        a = l[0] > -(m - 1) ? l[0] : -(m - 1);
        b = h[0] < m - 1 ? h[0] : m - 1;
      }
      set_checked(d, a, b, &lo, &hi);
    }
    break;
  case OP_MAX:
    if (k[0] && k[1]) set_checked(d, l[0] > l[1] ? l[0] : l[1], h[0] > h[1] ? h[0] : h[1], &lo, &hi);
    break;
  case OP_SHL:
    if (k[0] && k[1] && l[1] == h[1] && l[1] >= 0 && l[1] < 63) {
      i128 f = (i128)1 << l[1];
      set_checked(d, (i128)l[0] * f, (i128)h[0] * f, &lo, &hi);
    }
    break;
  case OP_SHR:
    if (k[0] && k[1] && l[1] == h[1] && l[1] >= 0 && l[1] < 63) {
      int64_t f = (int64_t)1 << l[1];
      set_checked(d, floordiv(l[0], f), floordiv(h[0], f), &lo, &hi);
    }
    break;
  case OP_AND:
    if (d.scalar == TG_BOOL) {
      if (k[0] && k[1]) { lo = l[0] && l[1]; hi = h[0] && h[1]; }
    } else if (k[0] && k[1] && (l[0] >= 0 || l[1] >= 0)) {
      /* the result is >= 0 and <= each non-negative operand */
      i128 b = INT64_MAX;
      if (l[0] >= 0) b = h[0];
      if (l[1] >= 0 && h[1] < b) b = h[1];
      set_checked(d, 0, b, &lo, &hi);
    }
    break;
  case OP_OR:
    if (d.scalar == TG_BOOL && k[0] && k[1]) { lo = l[0] || l[1]; hi = h[0] || h[1]; }
    break;
  case OP_XOR:
    if (d.scalar == TG_BOOL && k[0] && k[1] && l[0] == h[0] && l[1] == h[1]) lo = hi = (l[0] != 0) != (l[1] != 0);
    break;
  case OP_CMPLT:
    if (k[0] && k[1]) {
      if (h[0] < l[1]) lo = hi = 1;
      else if (l[0] >= h[1]) lo = hi = 0;
    }
    break;
  case OP_CMPNE: case OP_CMPEQ:
    if (k[0] && k[1]) {
      int ne = -1;
      if (h[0] < l[1] || l[0] > h[1]) ne = 1;
      else if (l[0] == h[0] && l[1] == h[1] && l[0] == l[1]) ne = 0;
      if (ne >= 0) lo = hi = u->op == OP_CMPNE ? ne : !ne;
    }
    break;
  case OP_WHERE:
    if (k[0] && k[1] && k[2]) {
      if (l[0] == h[0]) { lo = l[0] ? l[1] : l[2]; hi = l[0] ? h[1] : h[2]; }
      else { lo = l[1] < l[2] ? l[1] : l[2]; hi = h[1] > h[2] ? h[1] : h[2]; }
      set_checked(d, lo, hi, &lo, &hi);
    } else if (k[1] && k[2]) {
      set_checked(d, l[1] < l[2] ? l[1] : l[2], h[1] > h[2] ? h[1] : h[2], &lo, &hi);
    }
    break;
  case OP_CAST:
    if (k[0]) {
      if (d.scalar == TG_BOOL) {
        if (l[0] > 0 || h[0] < 0) lo = hi = 1;
        else if (l[0] == 0 && h[0] == 0) lo = hi = 0;
      } else {
        set_checked(d, l[0], h[0], &lo, &hi);
      }
    }
    break;
  default: break;
  }
out:
  u->vmin = lo;
  u->vmax = hi;
  __atomic_store_n(&u->range_known, true, __ATOMIC_RELEASE);
}

/* Ranges are memoized on uops, which hash-consing shares between threads
 * that simplify at once: they are computed under range_lock and published
 * by range_known (release store, acquire load), so a reader sees a range
 * whole or computes it. */
static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER;
static bool range_ready(const uop *u) { return __atomic_load_n(&u->range_known, __ATOMIC_ACQUIRE); }

static void ensure_range(uop *root) {
  if (range_ready(root)) return;
  pthread_mutex_lock(&range_lock);
  VEC(uop *) st = { 0 };
  VEC_PUSH(st, root);
  while (st.n) {
    uop *u = st.v[st.n - 1];
    if (range_ready(u)) { st.n--; continue; }
    bool ready = true;
    if (wants_src_ranges(u))
      for (int i = 0; i < u->nsrc; i++)
        if (!range_ready(u->src[i]) && src_known(u->src[i])) { VEC_PUSH(st, u->src[i]); ready = false; }
    if (!ready) continue;
    st.n--;
    compute_one(u);
  }
  VEC_FREE(st);
  pthread_mutex_unlock(&range_lock);
}

int64_t uop_vmin(uop *u) { ensure_range(u); return u->vmin; }
int64_t uop_vmax(uop *u) { ensure_range(u); return u->vmax; }

/* A range rules may reason with: ints (not u64) and bools. */
static bool rng(uop *u, int64_t *lo, int64_t *hi) {
  if (!src_known(u)) return false;
  ensure_range(u);
  *lo = u->vmin; *hi = u->vmax;
  return true;
}

/* ------------------------------------------------------------ helpers for rules */

/* The value of an int CONST (wrapped to its dtype, in case it was built
 * unwrapped); false for u64 values of 2^63 and more. */
static bool cint(const uop *u, int64_t *v) {
  if (!u || u->op != OP_CONST || u->arg.kind != ARG_INT || !intlike(u->dtype)) return false;
  if (u->dtype.scalar == TG_U64 && u->arg.i < 0) return false;
  *v = wrap(u->dtype, (uint64_t)u->arg.i);
  return true;
}

static bool fits(dtype_t d, i128 v) {
  int64_t lo, hi;
  limits(d, &lo, &hi);
  return v >= lo && v <= hi;
}

static uop *iconst(dtype_t d, int64_t v) { return uop_const_int(d, v); }

/* Only scalar int dtypes other than u64 take part in range arithmetic. */
static bool idx_dtype(dtype_t d) { return !dt_is_ptr(d) && d.count == 1 && s_int(d.scalar) && d.scalar != TG_U64; }

static int alu_nodes(uop *u) {
  uop_list l = uop_toposort(u);
  int n = 0;
  for (int i = 0; i < l.n; i++) n += uop_is_alu(l.v[i]->op);
  free(l.v);
  return n;
}

/* A sum of terms: x == K + sum f[i] * v[i] (mod 2^bits). */
typedef struct { uop *v; i128 f; } term;
typedef struct { VEC(term) t; i128 k; } lin;

static void lin_free(lin *l) { VEC_FREE(l->t); }

#define COEF_MAX ((i128)1 << 62)

/* *a += b, saturating far beyond COEF_MAX (|b| < 2^126) */
static void add_sat(i128 *a, i128 b) {
  const i128 big = (i128)1 << 100;
  *a += b;
  if (*a > big) *a = big;
  if (*a < -big) *a = -big;
}

/* Is u a linear node of dtype d: ADD, SUB, NEG, or MUL by a constant? */
static int lin_kind(const uop *u, dtype_t d, int64_t *c) {
  if (!dt_eq(u->dtype, d)) return 0;
  if ((u->op == OP_ADD || u->op == OP_SUB) && u->nsrc == 2) return 1;
  if (u->op == OP_NEG) return 2;
  if (u->op == OP_MUL) {
    if (cint(u->src[1], c)) return 3;
    if (cint(u->src[0], c)) return 4;
  }
  return 0;
}

/* Splits x through ADD, SUB, NEG and MUL by a constant (nodes of x's dtype)
 * into K + sum f[i]*v[i], merging equal leaves, leaves in left-to-right
 * order. Shared subgraphs are visited once (coefficients are propagated over
 * the DAG), so this is linear in the graph's size. False when a coefficient
 * grows absurd or, with limit > 0, when more than limit nodes are involved. */
static bool split_n(uop *x, lin *out, int limit) {
  memset(out, 0, sizeof *out);
  dtype_t d = x->dtype;
  ptrmap idx = { 0 };           /* node -> position in post + 1 */
  VEC(uop *) post = { 0 };
  VEC(uop *) st = { 0 };
  VEC(int) sti = { 0 };
  bool ok = true;
  int64_t c;
  /* post-order of the linear sub-DAG (leaves included), src[0] first */
  VEC_PUSH(st, x); VEC_PUSH(sti, 0);
  pm_put(&idx, x, (void *)(intptr_t)-1);
  while (st.n && ok) {
    uop *u = st.v[st.n - 1];
    int *i = &sti.v[sti.n - 1];
    int k = lin_kind(u, d, &c);
    int nch = k == 1 ? 2 : k ? 1 : 0;
    if (*i < nch) {
      uop *ch = k == 3 ? u->src[0] : k == 4 ? u->src[1] : u->src[*i];
      (*i)++;
      if (!pm_get(&idx, ch)) {
        pm_put(&idx, ch, (void *)(intptr_t)-1);
        VEC_PUSH(st, ch); VEC_PUSH(sti, 0);
      }
      continue;
    }
    st.n--; sti.n--;
    VEC_PUSH(post, u);
    pm_put(&idx, u, (void *)(intptr_t)post.n);
    if (limit && post.n > limit) ok = false;
  }
  i128 *coef = ok ? tg_xcalloc((size_t)post.n, sizeof(i128)) : NULL;
  if (ok) coef[post.n - 1] = 1;   /* x is last */
  /* parents before children: push coefficients down */
  for (int p = post.n - 1; p >= 0 && ok; p--) {
    uop *u = post.v[p];
    i128 f = coef[p];
    if (f == 0) continue;
    if (f > COEF_MAX || f < -COEF_MAX) { ok = false; break; }
    int k = lin_kind(u, d, &c);
    if (!k) continue;
#define CH(n) &coef[(intptr_t)pm_get(&idx, (n)) - 1]
    if (k == 1) { add_sat(CH(u->src[0]), f); add_sat(CH(u->src[1]), u->op == OP_SUB ? -f : f); }
    else if (k == 2) add_sat(CH(u->src[0]), -f);
    else if (k == 3) add_sat(CH(u->src[0]), f * c);
    else add_sat(CH(u->src[1]), f * c);
#undef CH
  }
  /* leaves, left to right */
  for (int p = 0; p < post.n && ok; p++) {
    uop *u = post.v[p];
    if (lin_kind(u, d, &c)) continue;
    i128 f = coef[p];
    if (f > COEF_MAX || f < -COEF_MAX) { ok = false; break; }
    if (f == 0) continue;
    if (cint(u, &c)) {
      out->k += f * c;
      if (out->k > COEF_MAX || out->k < -COEF_MAX) ok = false;
      continue;
    }
    VEC_PUSH(out->t, ((term){ u, f }));
  }
  free(coef);
  VEC_FREE(post); VEC_FREE(st); VEC_FREE(sti);
  pm_free(&idx);
  if (!ok) lin_free(out);
  return ok;
}

static bool split(uop *x, lin *out) { return split_n(x, out, 0); }

/* Exact range of K + sum f[i] * v[i], using each leaf's range. */
static bool lin_range(const lin *l, const i128 *coef, i128 k, i128 *lo, i128 *hi) {
  i128 a = k, b = k;
  for (int i = 0; i < l->t.n; i++) {
    int64_t vl, vh;
    if (!rng(l->t.v[i].v, &vl, &vh)) return false;
    i128 f = coef ? coef[i] : l->t.v[i].f;
    if (f >= 0) { a += f * vl; b += f * vh; }
    else { a += f * vh; b += f * vl; }
  }
  *lo = a; *hi = b;
  return true;
}

/* Builds K + sum coef[i] * v[i] in dtype d; NULL when a constant does not fit.
 * Terms with a negative coefficient are subtracted. */
static uop *lin_build(dtype_t d, const lin *l, const i128 *coef, i128 k) {
  uop *acc = NULL;
  if (!fits(d, k)) return NULL;
  for (int i = 0; i < l->t.n; i++) {
    i128 f = coef[i];
    if (f == 0) continue;
    uop *v = l->t.v[i].v;
    i128 af = f < 0 ? -f : f;
    if (!fits(d, af) || !fits(d, f)) return NULL;
    if (!acc) acc = f == 1 ? v : uop_alu(OP_MUL, v, iconst(d, (int64_t)f));
    else acc = uop_alu(f < 0 ? OP_SUB : OP_ADD, acc, af == 1 ? v : uop_alu(OP_MUL, v, iconst(d, (int64_t)af)));
  }
  if (!acc) return iconst(d, (int64_t)k);
  if (k != 0) acc = uop_alu(OP_ADD, acc, iconst(d, (int64_t)k));
  return acc;
}

/* ------------------------------------------------------------ callbacks */

#define GET(n) uop *n = rw_get(m, #n)

static uop *fold_const(void *ctx, const rw_match *m) {
  uop *n = m->root;
  if (n->dtype.count != 1 || dt_is_ptr(n->dtype) || n->op == OP_BITCAST) return NULL;
  if (n->nsrc > 3) return NULL;
  dtype_t sdt = n->op == OP_WHERE ? n->src[1]->dtype : n->src[0]->dtype;
  bool ints = intlike(n->dtype);
  for (int i = 0; i < n->nsrc; i++) {
    uop *s = n->src[i];
    if (s->op != OP_CONST || s->dtype.count != 1) return NULL;
    if (!intlike(s->dtype)) ints = false;
  }
  if (ints) {
    int64_t v[3];
    for (int i = 0; i < n->nsrc; i++) v[i] = wrap(n->src[i]->dtype, (uint64_t)n->src[i]->arg.i);
    return iconst(n->dtype, exec_int(n->op, n->dtype, sdt, v, n->nsrc));
  }
  double v[3];
  for (int i = 0; i < n->nsrc; i++) {
    uop *s = n->src[i];
    v[i] = s->arg.kind == ARG_INT ? as_double(s->dtype, wrap(s->dtype, (uint64_t)s->arg.i)) : s->arg.f;
  }
  /* float MAX with a NaN depends on how the target spells max: leave it */
  if (n->op == OP_MAX && (isnan(v[0]) || isnan(v[1]))) return NULL;
  double r = exec_alu(n->op, n->dtype, v, n->nsrc);
  if (intlike(n->dtype)) return iconst(n->dtype, from_double(n->dtype, r));
  return uop_const(n->dtype, r);
}

static uop *cast_noop(void *ctx, const rw_match *m) {
  GET(x);
  return dt_eq(m->root->dtype, x->dtype) ? x : NULL;
}

/* (CAST (CAST x)) where the inner cast widens an int exactly: one cast */
static uop *cast_cast(void *ctx, const rw_match *m) {
  GET(x);
  uop *mid = m->root->src[0];
  int64_t lo, hi;
  if (!intlike(x->dtype) || !intlike(mid->dtype) || mid->dtype.count != 1 || dt_is_ptr(m->root->dtype)) return NULL;
  if (mid->dtype.scalar == TG_BOOL || !rng(x, &lo, &hi)) return NULL;
  if (!fits(mid->dtype, lo) || !fits(mid->dtype, hi)) return NULL;   /* the inner cast changes values */
  return uop_cast(x, m->root->dtype);
}

static uop *const_right(void *ctx, const rw_match *m) {
  uop *n = m->root;
  if (n->src[0]->op != OP_CONST || n->src[1]->op == OP_CONST) return NULL;
  if (n->op == OP_MAX && !intlike(n->dtype)) return NULL;
  uop *s[2] = { n->src[1], n->src[0] };
  return uop_new(n->op, n->dtype, s, 2, n->arg);
}

/* an int/bool ALU node whose range is a single value */
static uop *range_const(void *ctx, const rw_match *m) {
  uop *n = m->root;
  int64_t lo, hi;
  if (n->dtype.count != 1 || !rng(n, &lo, &hi) || lo != hi) return NULL;
  return iconst(n->dtype, lo);
}

static uop *max_range(void *ctx, const rw_match *m) {
  GET(a); GET(b);
  int64_t al, ah, bl, bh;
  if (!rng(a, &al, &ah) || !rng(b, &bl, &bh)) return NULL;
  if (al >= bh) return a;
  if (ah <= bl) return b;
  return NULL;
}

/* (ADD (ADD x c) y) -> (ADD (ADD x y) c), and the same for MUL */
static uop *move_const(void *ctx, const rw_match *m) {
  GET(x); GET(c); GET(y);
  if (y->op == OP_CONST) return NULL;
  uop_op op = m->root->op;
  return uop_alu(op, uop_alu(op, x, y), c);
}

/* (x//a)//b -> x//(a*b), a, b > 0 */
static uop *div_div(void *ctx, const rw_match *m) {
  GET(x); GET(a); GET(b);
  int64_t va, vb;
  if (!cint(a, &va) || !cint(b, &vb) || va <= 0 || vb <= 0 || !idx_dtype(x->dtype)) return NULL;
  i128 p = (i128)va * vb;
  if (!fits(x->dtype, p)) return NULL;
  return uop_alu(OP_IDIV, x, iconst(x->dtype, (int64_t)p));
}

/* (x%a)%b -> x%b when a is a multiple of b; -> x%a when b is a multiple of a */
static uop *mod_mod(void *ctx, const rw_match *m) {
  GET(x); GET(a); GET(b);
  int64_t va, vb;
  if (!cint(a, &va) || !cint(b, &vb) || va <= 0 || vb <= 0 || !idx_dtype(x->dtype)) return NULL;
  if (va % vb == 0) return uop_alu(OP_MOD, x, b);
  if (vb % va == 0) return m->root->src[0];
  return NULL;
}

/* (x%a)//b -> (x//b)%(a/b) when b divides a and x >= 0: the division can
 * then simplify with x (e.g. (32*r + u)//32 -> r for 0 <= u < 32). */
static uop *mod_div(void *ctx, const rw_match *m) {
  GET(x); GET(a); GET(b);
  int64_t va, vb, lo, hi;
  if (!cint(a, &va) || !cint(b, &vb) || va <= 0 || vb <= 1 || va % vb || !idx_dtype(x->dtype)) return NULL;
  if (!rng(x, &lo, &hi) || lo < 0) return NULL;
  return uop_alu(OP_MOD, uop_alu(OP_IDIV, x, b), iconst(x->dtype, va / vb));
}

/* (x*c + y) % m -> (x % (m/c))*c + y when c divides m, x >= 0 and
 * 0 <= y < c: an offset inside one period of c stays out of the modulo
 * (e.g. (32*r + 5) % 64 -> (r%2)*32 + 5). */
static uop *mod_of_scaled(void *ctx, const rw_match *m) {
  GET(x); GET(c); GET(y); GET(mm);
  int64_t vc, vm, xl, xh, yl, yh;
  if (!cint(c, &vc) || !cint(mm, &vm) || vc <= 1 || vm <= 0 || vm % vc || !idx_dtype(x->dtype)) return NULL;
  if (!rng(x, &xl, &xh) || xl < 0 || !rng(y, &yl, &yh) || yl < 0 || yh >= vc) return NULL;
  return uop_alu(OP_ADD, uop_alu(OP_MUL, uop_alu(OP_MOD, x, iconst(x->dtype, vm / vc)), c), y);
}

/* In a sum, (x//c)*(k*c) + (x%c)*k -> x*k (C's identity x == (x//c)*c + x%c
 * for c != 0). Sums are searched up to a bound, so long chains stay linear. */
static uop *divmod_recombine(void *ctx, const rw_match *m) {
  uop *n = m->root;
  if (!idx_dtype(n->dtype)) return NULL;
  lin l;
  if (!split_n(n, &l, 256)) return NULL;
  bool changed = false;
  int nt = l.t.n;
  for (int i = 0; i < nt; i++) {
    uop *md = l.t.v[i].v;
    int64_t c;
    if (md->op != OP_MOD || l.t.v[i].f == 0 || !cint(md->src[1], &c) || c == 0) continue;
    for (int j = 0; j < nt; j++) {
      uop *dv = l.t.v[j].v;
      if (dv->op != OP_IDIV || dv->src[0] != md->src[0] || dv->src[1] != md->src[1] || l.t.v[j].f != l.t.v[i].f * c) continue;
      VEC_PUSH(l.t, ((term){ md->src[0], l.t.v[i].f }));
      l.t.v[i].f = 0;
      l.t.v[j].f = 0;
      changed = true;
      break;
    }
  }
  uop *res = NULL;
  if (changed) {
    /* merge a recombined x with an existing leaf x */
    i128 *coef = tg_xmalloc(sizeof(i128) * (size_t)l.t.n);
    for (int i = 0; i < l.t.n; i++) coef[i] = l.t.v[i].f;
    for (int i = nt; i < l.t.n; i++)
      for (int j = 0; j < i; j++)
        if (coef[j] != 0 && l.t.v[j].v == l.t.v[i].v) { coef[j] += coef[i]; coef[i] = 0; break; }
    res = lin_build(n->dtype, &l, coef, l.k);
    free(coef);
  }
  lin_free(&l);
  return res;
}

/* ((x//c) + a)//d -> (x + a*c)//(c*d) when x >= 0 and x//c + a >= 0 */
static uop *div_add_div(void *ctx, const rw_match *m) {
  GET(x); GET(c); GET(a); GET(d);
  int64_t vc, va, vd, xl, xh, il, ih;
  dtype_t dt = x->dtype;
  if (!idx_dtype(dt) || !cint(c, &vc) || !cint(a, &va) || !cint(d, &vd) || vc <= 0 || vd <= 0) return NULL;
  if (!rng(x, &xl, &xh) || xl < 0 || !rng(m->root->src[0], &il, &ih) || il < 0) return NULL;
  i128 ac = (i128)va * vc, cd = (i128)vc * vd;
  if (!fits(dt, ac) || !fits(dt, cd) || !fits(dt, (i128)xh + ac) || !fits(dt, (i128)xl + ac)) return NULL;
  return uop_alu(OP_IDIV, uop_alu(OP_ADD, x, iconst(dt, (int64_t)ac)), iconst(dt, (int64_t)cd));
}

/* x//c and x%c for a constant c > 0. See docs/rewrite.md for the math. */
static uop *divmod_fold(void *ctx, const rw_match *m) {
  uop *n = m->root;
  GET(x); GET(d);
  dtype_t dt = n->dtype;
  int64_t c, xl, xh;
  if (!idx_dtype(dt) || !dt_eq(x->dtype, dt) || !cint(d, &c) || c <= 0 || !rng(x, &xl, &xh)) return NULL;
  bool mod = n->op == OP_MOD;
  /* 1. the whole range in one bucket (trunc(x/c) is monotone) */
  int64_t k1 = xl / c, k2 = xh / c;
  if (k1 == k2) {
    if (!mod) return iconst(dt, k1);
    if (k1 == 0) return x;
    i128 off = -(i128)k1 * c;
    return fits(dt, off) ? uop_alu(OP_ADD, x, iconst(dt, (int64_t)off)) : NULL;
  }
  if (c == 1) return NULL;
  lin l;
  if (!split(x, &l)) return NULL;
  uop *res = NULL;
  int nt = l.t.n;
  i128 *coef = tg_xmalloc(sizeof(i128) * (size_t)(nt ? nt : 1));
  i128 tlo, thi;
  /* the exact sum must not wrap, so that x really equals it */
  if (!lin_range(&l, NULL, l.k, &tlo, &thi) || !fits(dt, tlo) || !fits(dt, thi)) goto done;
  /* 2. everything divisible: exact for any sign */
  bool all = l.k % c == 0;
  for (int i = 0; i < nt && all; i++) all = l.t.v[i].f % c == 0;
  if (all) {
    if (mod) { res = iconst(dt, 0); goto done; }
    for (int i = 0; i < nt; i++) coef[i] = l.t.v[i].f / c;
    res = lin_build(dt, &l, coef, l.k / c);
    goto done;
  }
  if (tlo < 0 && xl < 0) goto done;   /* from here on x >= 0: trunc == floor */
  /* 3. split every coefficient f = q*c + r; if K + sum r*v stays in one
   * bucket [k*c, (k+1)*c), x//c = sum q*v + K//c + k, x%c = that rest - k*c */
  i128 kq = floordiv128(l.k, c), kr = l.k - kq * c;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < nt; i++) {
      i128 f = l.t.v[i].f, r = f - floordiv128(f, c) * c;
      if (pass == 0 && r > c / 2) r -= c;   /* smallest |r| first */
      coef[i] = r;
    }
    i128 rlo, rhi;
    if (!lin_range(&l, coef, kr, &rlo, &rhi)) goto done;
    i128 b = floordiv128(rlo, c);
    if (b != floordiv128(rhi, c)) continue;
    if (mod) { res = lin_build(dt, &l, coef, kr - b * c); goto done; }
    for (int i = 0; i < nt; i++) coef[i] = (l.t.v[i].f - coef[i]) / c;
    res = lin_build(dt, &l, coef, kq + b);
    goto done;
  }
  /* 4. partial: move out what is divisible, reduce by the gcd. Kept only
   * when the result is not larger than the original. */
  if (!mod) {
    /* x//c = sum(f/c * v for f%c == 0) + B//c, B the rest with K; needs B >= 0 */
    bool moved = false;
    int64_t g = c;
    for (int i = 0; i < nt; i++) {
      if (l.t.v[i].f % c == 0) { moved = true; coef[i] = 0; }
      else { coef[i] = l.t.v[i].f; g = gcd64(g, (int64_t)l.t.v[i].f); }
    }
    i128 blo, bhi;
    if (!lin_range(&l, coef, l.k, &blo, &bhi) || blo < 0) goto done;
    if (!moved && g == 1) goto done;
    /* floor((g*S + K)/(g*c')) = floor((S + floor(K/g))/c') */
    for (int i = 0; i < nt; i++) coef[i] /= g;
    uop *b = lin_build(dt, &l, coef, floordiv128(l.k, g));
    if (!b) goto done;
    uop *q = uop_alu(OP_IDIV, b, iconst(dt, c / g));
    for (int i = 0; i < nt; i++) coef[i] = l.t.v[i].f % c == 0 ? l.t.v[i].f / c : 0;
    uop *a = lin_build(dt, &l, coef, 0);
    if (!a) goto done;
    res = uop_is_const(a, 0) ? q : uop_alu(OP_ADD, a, q);
    /* moving terms out may keep the size; a gcd alone must shrink it */
    if (alu_nodes(res) > alu_nodes(n) - (moved ? 0 : 1)) res = NULL;
    goto done;
  } else {
    /* x%c = B%c for any B congruent to x with B >= 0: drop multiples of c,
     * shrink coefficients, count a leaf (y % m) with m a multiple of c as y.
     * Pass 0 keeps small coefficients as they are, pass 1 makes all >= 0. */
    for (int pass = 0; pass < 2 && !res; pass++) {
      bool changed = false;
      int64_t g = c;
      lin b = { { 0 }, 0 };
      for (int i = 0; i < nt; i++) {
        i128 f = l.t.v[i].f, r = f - floordiv128(f, c) * c, nf;
        uop *v = l.t.v[i].v;
        int64_t mm;
        if (r == 0) { changed = true; continue; }
        if (pass == 1) nf = r;
        else if (f > -c && f < c) nf = f;
        else nf = r > c - r ? r - c : r;
        if (nf != f) changed = true;
        if (v->op == OP_MOD && cint(v->src[1], &mm) && mm > 0 && mm % c == 0 && dt_eq(v->src[0]->dtype, dt)) {
          v = v->src[0];
          changed = true;
        }
        VEC_PUSH(b.t, ((term){ v, nf }));
        g = gcd64(g, (int64_t)nf);
      }
      i128 rk = l.k - floordiv128(l.k, c) * c;
      i128 nk = pass == 1 ? rk : (l.k > -c && l.k < c) ? l.k : (rk > c - rk ? rk - c : rk);
      if (nk != l.k) changed = true;
      if (g > 1) changed = true;
      i128 *bc = tg_xmalloc(sizeof(i128) * (size_t)(b.t.n ? b.t.n : 1));
      for (int i = 0; i < b.t.n; i++) bc[i] = b.t.v[i].f;
      i128 blo, bhi;
      if (changed && lin_range(&b, bc, nk, &blo, &bhi) && blo >= 0 && fits(dt, bhi)) {
        /* B%c = g*((B/g)%(c/g)) + B mod g, and B mod g = nk mod g */
        for (int i = 0; i < b.t.n; i++) bc[i] /= g;
        i128 kq = floordiv128(nk, g), km = nk - kq * g;
        uop *bb = lin_build(dt, &b, bc, kq);
        if (bb) {
          uop *r = c / g == 1 ? iconst(dt, 0) : uop_alu(OP_MOD, bb, iconst(dt, c / g));
          if (g != 1) r = uop_alu(OP_MUL, r, iconst(dt, g));
          if (km) r = uop_alu(OP_ADD, r, iconst(dt, (int64_t)km));
          res = r;
          if (alu_nodes(res) >= alu_nodes(n)) res = NULL;   /* only when it shrinks */
        }
      }
      free(bc);
      lin_free(&b);
    }
    goto done;
  }
done:
  free(coef);
  lin_free(&l);
  return res;
}

/* (x//d) < c, d > 0: x < c*d when c > 0, else x < (c-1)*d + 1 (C truncation) */
static uop *lt_div(void *ctx, const rw_match *m) {
  GET(x); GET(d); GET(c);
  int64_t vd, vc;
  if (!idx_dtype(x->dtype) || !cint(d, &vd) || !cint(c, &vc) || vd <= 0) return NULL;
  i128 t = vc > 0 ? (i128)vc * vd : ((i128)vc - 1) * vd + 1;
  if (!fits(x->dtype, t)) return NULL;
  return uop_alu(OP_CMPLT, x, iconst(x->dtype, (int64_t)t));
}

/* x < c and c < x with x = g*S + K: compare S with a new constant */
static uop *lt_fold(void *ctx, const rw_match *m) {
  GET(x); GET(c);
  int64_t vc;
  bool left = m->root->src[0] == x;   /* x < c, else c < x */
  if (!idx_dtype(x->dtype) || !cint(c, &vc)) return NULL;
  lin l;
  if (!split(x, &l)) return NULL;
  uop *res = NULL;
  int nt = l.t.n;
  i128 *coef = tg_xmalloc(sizeof(i128) * (size_t)(nt ? nt : 1));
  int64_t g = 0;
  for (int i = 0; i < nt; i++) g = gcd64(g, (int64_t)l.t.v[i].f);
  i128 tlo, thi, slo, shi;
  if (nt == 0 || g == 0 || (g == 1 && l.k == 0)) goto done;
  if (!lin_range(&l, NULL, l.k, &tlo, &thi) || !fits(x->dtype, tlo) || !fits(x->dtype, thi)) goto done;
  for (int i = 0; i < nt; i++) coef[i] = l.t.v[i].f / g;
  if (!lin_range(&l, coef, 0, &slo, &shi) || !fits(x->dtype, slo) || !fits(x->dtype, shi)) goto done;
  /* g*S + K < c  <=>  S < ceil((c-K)/g);   c < g*S + K  <=>  floor((c-K)/g) < S */
  i128 t = left ? ceildiv128((i128)vc - l.k, g) : floordiv128((i128)vc - l.k, g);
  dtype_t bt = m->root->dtype;
  if (left ? t > shi : t < slo) { res = iconst(bt, 1); goto done; }
  if (left ? t <= slo : t >= shi) { res = iconst(bt, 0); goto done; }
  uop *s = lin_build(x->dtype, &l, coef, 0);
  if (!s) goto done;
  uop *tc = iconst(x->dtype, (int64_t)t);
  res = left ? uop_alu(OP_CMPLT, s, tc) : uop_alu(OP_CMPLT, tc, s);
done:
  free(coef);
  lin_free(&l);
  return res;
}

/* ------------------------------------------------------------ the rules */

#define BINOPS "ADD,SUB,MUL,FDIV,IDIV,MOD,MAX,POW,CMPLT,CMPNE,CMPEQ,AND,OR,XOR,SHL,SHR,THREEFRY"
#define UNOPS "EXP2,LOG2,SIN,SQRT,RECIPROCAL,NEG,TRUNC,CAST"

#define R(p, t) { .pattern = p, .replace = t }

static const tg_rule symbolic_rules[] = {
  /* constant folding */
  { "({" UNOPS "} _:CONST)", .fn = fold_const, .name = "fold unary" },
  { "({" BINOPS "} _:CONST _:CONST)", .fn = fold_const, .name = "fold binary" },
  { "({WHERE,MULACC} _:CONST _:CONST _:CONST)", .fn = fold_const, .name = "fold ternary" },
  /* canonical order: constants on the right */
  { "({ADD,MUL,MAX,AND,OR,XOR,CMPNE,CMPEQ} _:CONST _)", .fn = const_right, .name = "const right" },
  /* casts */
  { "({CAST,BITCAST} x)", .fn = cast_noop, .name = "cast to itself" },
  { "(CAST (CAST x))", .fn = cast_cast, .name = "cast of exact cast" },
  /* identities */
  R("(ADD x.int 0)", "x"),
  R("(ADD x.bool 0)", "x"),
  R("(ADD x.float -0.0)", "x"),
  R("(SUB x 0)", "x"),
  R("(MUL x 1)", "x"),
  R("(MUL x.int 0)", "0"),
  R("(MUL x.bool 0)", "0"),
  R("(FDIV x.float 1)", "x"),
  R("(IDIV x.int 1)", "x"),
  R("(IDIV x.sint -1)", "(NEG x)"),
  R("(MOD x.int 1)", "0"),
  R("(MOD x.sint -1)", "0"),
  R("(NEG (NEG x))", "x"),
  R("(SUB.int x x)", "0"),
  R("(SUB.int (ADD x y) y)", "x"),
  R("(SUB.int x c:CONST)", "(ADD x (NEG c))"),
  R("({AND,OR,MAX} x x)", "x"),
  R("(XOR.int x x)", "0"),
  R("(XOR.bool x x)", "0"),
  R("({OR,XOR} x.int 0)", "x"),
  R("({OR,XOR} x.bool 0)", "x"),
  R("(AND x.int 0)", "0"),
  R("(AND x.bool 0)", "0"),
  R("(AND x.sint -1)", "x"),
  R("(AND x.bool 1)", "x"),
  R("(OR x.bool 1)", "1"),
  R("({SHL,SHR} x.int 0)", "x"),
  R("(MUL x.bool y.bool)", "(AND x y)"),
  R("(MAX x.bool y.bool)", "(OR x y)"),
  R("(WHERE 1 a b)", "a"),
  R("(WHERE 0 a b)", "b"),
  R("(WHERE _ a a)", "a"),
  R("(WHERE.bool c 1 0)", "c"),
  R("(CMPLT x.int x)", "0"),
  R("(CMPLT x.bool x)", "0"),
  R("(CMPNE x.int x)", "0"),
  R("(CMPNE x.bool x)", "0"),
  R("(CMPEQ x.int x)", "1"),
  R("(CMPEQ x.bool x)", "1"),
  R("(CMPNE x.bool 0)", "x"),
  R("(CMPEQ x.bool 1)", "x"),
  /* ranges */
  { "n:{ALU}", .fn = range_const, .name = "range is one value" },
  { "(MAX a b)", .fn = max_range, .name = "max by ranges" },
  /* combining terms (exact in wrap-around arithmetic) */
  R("(ADD.int (ADD x c1:CONST) c2:CONST)", "(ADD x (ADD c1 c2))"),
  R("(MUL.int (MUL x c1:CONST) c2:CONST)", "(MUL x (MUL c1 c2))"),
  R("(MUL.int (ADD x c1:CONST) c2:CONST)", "(ADD (MUL x c2) (MUL c1 c2))"),
  R("(ADD.int x x)", "(MUL x 2)"),
  R("(ADD.int (MUL x c1:CONST) (MUL x c2:CONST))", "(MUL x (ADD c1 c2))"),
  R("(ADD.int x (MUL x c:CONST))", "(MUL x (ADD c 1))"),
  R("(ADD.int (ADD y x) x)", "(ADD y (MUL x 2))"),
  R("(ADD.int (ADD y (MUL x c1:CONST)) (MUL x c2:CONST))", "(ADD y (MUL x (ADD c1 c2)))"),
  R("(ADD.int (ADD y x) (MUL x c:CONST))", "(ADD y (MUL x (ADD c 1)))"),
  R("(ADD.int (ADD y (MUL x c:CONST)) x)", "(ADD y (MUL x (ADD c 1)))"),
  { "(ADD.int (ADD x c:CONST) y)", .fn = move_const, .name = "move add const out" },
  { "(MUL.int (MUL x c:CONST) y)", .fn = move_const, .name = "move mul const out" },
  /* division and modulo */
  { "(IDIV.int (IDIV x a:CONST) b:CONST)", .fn = div_div, .name = "(x//a)//b" },
  { "(MOD.int (MOD x a:CONST) b:CONST)", .fn = mod_mod, .name = "(x%a)%b" },
  { "(IDIV.int (MOD x a:CONST) b:CONST)", .fn = mod_div, .name = "(x%a)//b" },
  { "(MOD.int (ADD (MUL x c:CONST) y) mm:CONST)", .fn = mod_of_scaled, .name = "(x*c+y)%m" },
  { "(ADD.int _ _:{MOD,IDIV})", .fn = divmod_recombine, .name = "(x//c)*c+x%c" },
  { "(ADD.int _ (MUL _:IDIV _:CONST))", .fn = divmod_recombine, .name = "(x//c)*c+x%c" },
  { "(IDIV.int (ADD (IDIV x c:CONST) a:CONST) d:CONST)", .fn = div_add_div, .name = "(x//c+a)//d" },
  { "({IDIV,MOD}.int x d:CONST)", .fn = divmod_fold, .name = "divmod fold" },
  /* comparisons */
  { "(CMPLT (IDIV x.int d:CONST) c:CONST)", .fn = lt_div, .name = "x//d < c" },
  { "(CMPLT x.int c:CONST)", .fn = lt_fold, .name = "lt fold" },
  { "(CMPLT c:CONST x.int)", .fn = lt_fold, .name = "gt fold" },
};

/* Run before the symbolic rules: recombining (x//c)*c + x%c works best on the
 * graph as written, before x//c and x%c are simplified in different ways. */
static const tg_rule pre_rules[] = {
  { "(ADD.int _ _:{MOD,IDIV})", .fn = divmod_recombine, .name = "(x//c)*c+x%c" },
  { "(ADD.int _ (MUL _:IDIV _:CONST))", .fn = divmod_recombine, .name = "(x//c)*c+x%c" },
};

static tg_matcher *sym, *pre;
static const tg_matcher *pre_matcher(void) { return matcher_once(&pre, pre_rules, RW_NRULES(pre_rules), "symbolic_pre"); }

const tg_matcher *symbolic_matcher(void) { return matcher_once(&sym, symbolic_rules, RW_NRULES(symbolic_rules), "symbolic"); }

/* uop_simplify is a pure function of an immutable, hash-consed uop, and
 * scheduling simplifies the same index expressions over and over (every
 * term of a long explicit sum, every layer of a model). Between
 * uop_simplify_memo_begin and _end (the engine brackets a realize) results
 * are memoized per thread, both sides retained so their addresses stay
 * theirs; the memo is dropped at the end, or whole when it reaches
 * SIMPLIFY_MEMO_MAX. */
#define SIMPLIFY_MEMO_MAX 65536
static _Thread_local ptrmap simplify_memo;
static _Thread_local int simplify_memo_depth;

static void simplify_memo_clear(void) {
  for (size_t i = 0; i < simplify_memo.cap; i++)
    if (simplify_memo.e[i].key) uop_release((uop *)simplify_memo.e[i].key), uop_release(simplify_memo.e[i].val);
  pm_free(&simplify_memo);
}

void uop_simplify_memo_begin(void) { simplify_memo_depth++; }
void uop_simplify_memo_end(void) {
  if (simplify_memo_depth > 0 && --simplify_memo_depth == 0) simplify_memo_clear();
}

uop *uop_simplify(uop *u) {
  uop *r = simplify_memo_depth ? pm_get(&simplify_memo, u) : NULL;
  if (r) return r;
  r = graph_rewrite(graph_rewrite(u, pre_matcher(), NULL), symbolic_matcher(), NULL);
  if (!r || !simplify_memo_depth) return r;
  if (simplify_memo.n >= SIMPLIFY_MEMO_MAX) simplify_memo_clear();
  uop_retain(u), uop_retain(r);
  pm_put(&simplify_memo, u, r);
  return r;
}

/* The stride with index's integer loads whose addresses stay put along r
 * (a take's row, loaded once per output row: the same value at both
 * points) read as the constant v. */
static int64_t stride_with_loads_at(uop *index, uop *r, uop *const *axes, int n, const uop_list *loads, int64_t v) {
  ptrmap m0 = { 0 }, m1 = { 0 };
  for (int i = 0; i < n; i++) {
    pm_put(&m0, axes[i], uop_const_int(DT_INDEX, 0));
    pm_put(&m1, axes[i], uop_const_int(DT_INDEX, axes[i] == r ? 1 : 0));
  }
  for (int i = 0; i < loads->n; i++) {
    uop *c = uop_const_int(loads->v[i]->dtype, v);
    pm_put(&m0, loads->v[i], c), pm_put(&m1, loads->v[i], c);
  }
  uop *a = uop_simplify(graph_substitute(index, &m0)), *b = uop_simplify(graph_substitute(index, &m1));
  pm_free(&m0); pm_free(&m1);
  if (a->op != OP_CONST || b->op != OP_CONST) return INT64_MIN;
  return b->arg.i - a->arg.i;
}

int64_t index_stride(uop *index, uop *r, uop *const *axes, int n) {
  uop_list l = uop_toposort(index), loads = { 0 };
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op == OP_LOAD && dt_is_int(u->dtype) && u->src[0]->op == OP_INDEX && u->src[0]->nsrc >= 2 && index_stride(u->src[0]->src[1], r, axes, n) == 0)
      VEC_PUSH(loads, u);
  }
  free(l.v);
  int64_t s = stride_with_loads_at(index, r, axes, n, &loads, 0);
  /* the loaded value must not change the stride (an index linear in it) */
  if (loads.n && s != INT64_MIN && stride_with_loads_at(index, r, axes, n, &loads, 5) != s) s = INT64_MIN;
  free(loads.v);
  return s;
}
