/* kernel_builder.c: the tg_k_* calls of tg_kernel.h (see kernel_builder.h).
 * Each call checks its operands and records the first error of the build;
 * a call given NULL (a failed call's result) returns NULL. */
#include <stdarg.h>
#include "dtype/dtype.h"
#include "uop/kernel_ir.h"
#include "tensor/indexing.h"
#include "tensor/kernel_builder.h"
#include "codegen/opts.h"
#include "uop/symbolic.h"

static void *kb_fail(tg_kb *kb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void *kb_fail(tg_kb *kb, const char *fmt, ...) {
  if (!kb->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kb->err, sizeof kb->err, fmt, ap);
    va_end(ap);
    kb->failed = true;
  }
  /* tg_error() says the first failure: the later ones follow from it */
  tg_seterr("tg_custom_kernel %s: %s", kb->name, kb->err);
  return NULL;
}

#define NEED_KB(fn) do { if (!kb) { tg_seterr(fn ": kb is NULL"); return NULL; } } while (0)

void kb_init(tg_kb *kb, const char *name, const tg_kernel_out *outs, int nout, const kb_buffer *in, int nin) {
  memset(kb, 0, sizeof *kb);
  snprintf(kb->name, sizeof kb->name, "%s", name);
  kb->nout = nout; kb->nin = nin;
  for (int i = 0; i < nout + nin; i++) {
    kb_buffer *b = &kb->bufs[i];
    if (i < nout) {
      b->ndim = outs[i].shape.ndim;
      memcpy(b->shape, outs[i].shape.d, sizeof(int64_t) * (size_t)b->ndim);
      b->dtype = outs[i].dtype;
    } else *b = in[i - nout];
    b->numel = 1;
    for (int a = 0; a < b->ndim; a++) b->numel *= b->shape[a];   /* checked by the caller */
    b->global = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_scalar(b->dtype), ADDR_GLOBAL), arg_int(i));
  }
}

void kb_free(tg_kb *kb) { VEC_FREE(kb->stores); pm_free(&kb->free_memo); }

/* ---- what a handle is */

static kb_buffer *buffer_of(tg_kb *kb, const uop *u) {
  for (int i = 0; u && i < kb->nout + kb->nin; i++) if (kb->bufs[i].global == u) return &kb->bufs[i];
  return NULL;
}
static const char *buffer_name(tg_kb *kb, const kb_buffer *b, char *s, int n) {
  int i = (int)(b - kb->bufs);
  snprintf(s, (size_t)n, "%s %d", i < kb->nout ? "output" : "input", i < kb->nout ? i : i - kb->nout);
  return s;
}
static int range_index(tg_kb *kb, const uop *u) {
  for (int i = 0; u && i < kb->nranges; i++) if (kb->ranges[i] == u) return i;
  return -1;
}
static bool is_reduce_range(const uop *r) { return r->arg.v[1] == RANGE_REDUCE; }

/* A value for math: not NULL, not a buffer, not an index. */
static uop *value(tg_kb *kb, tg_kv *v, const char *fn) {
  uop *u = (uop *)v;
  if (!u) return kb_fail(kb, "%s: an operand is NULL", fn);
  if (buffer_of(kb, u)) return kb_fail(kb, "%s: a buffer is not a value (tg_k_load an element of it)", fn);
  if (u->op == OP_INDEX) return kb_fail(kb, "%s: an index is not a value (tg_k_load it)", fn);
  return u;
}
static bool valid_dtype(int dt) { return dt >= 0 && dt < TG_DTYPE_COUNT; }

uint64_t kb_free_ranges(ptrmap *memo, uop *u) {
  void *p = pm_get(memo, u);
  if (p) return (uint64_t)(uintptr_t)p - 1;
  uint64_t m = 0;
  if (u->op == OP_RANGE) m = u->arg.v[0] >= 0 && u->arg.v[0] < 64 ? 1ULL << u->arg.v[0] : 0;
  else if (u->op == OP_REDUCE) {
    m = kb_free_ranges(memo, u->src[0]);
    for (int i = 1; i < u->nsrc; i++) m &= ~kb_free_ranges(memo, u->src[i]);
  } else for (int i = 0; i < u->nsrc; i++) m |= kb_free_ranges(memo, u->src[i]);
  pm_put(memo, u, (void *)(uintptr_t)(m + 1));
  return m;
}

/* ---- buffers */

static tg_kv *param(tg_kb *kb, int i, bool output, const char *fn) {
  int n = output ? kb->nout : kb->nin;
  if (i < 0 || i >= n) return kb_fail(kb, "%s: %d is not one of its %d %s", fn, i, n, output ? "outputs" : "inputs");
  return (tg_kv *)kb->bufs[output ? i : kb->nout + i].global;
}
tg_kv *tg_k_input(tg_kb *kb, int i) { NEED_KB("tg_k_input"); return param(kb, i, false, "tg_k_input"); }
tg_kv *tg_k_output(tg_kb *kb, int i) { NEED_KB("tg_k_output"); return param(kb, i, true, "tg_k_output"); }

tg_shape tg_k_shape(tg_kb *kb, tg_kv *buf) {
  tg_shape s = { .ndim = -1 };
  if (!kb) { tg_seterr("tg_k_shape: kb is NULL"); return s; }
  kb_buffer *b = buffer_of(kb, (uop *)buf);
  if (!b) { kb_fail(kb, "tg_k_shape: %s", buf ? "not a buffer (tg_k_input or tg_k_output)" : "buf is NULL"); return s; }
  s.ndim = b->ndim;
  memcpy(s.d, b->shape, sizeof(int64_t) * (size_t)b->ndim);
  return s;
}

int tg_k_dtype(tg_kb *kb, tg_kv *v) {
  if (!kb) return tg_seterr("tg_k_dtype: kb is NULL");
  if (!v) { kb_fail(kb, "tg_k_dtype: v is NULL"); return -1; }
  kb_buffer *b = buffer_of(kb, (uop *)v);
  const uop *u = (const uop *)v;
  return b ? (int)b->dtype : (int)u->dtype.scalar;   /* an index: its buffer's */
}

/* ---- loops */

/* A loop to end: a CONST (at least 1) or a DEFINE_VAR (a symbolic axis's
 * length: the loop runs to the value bound when the kernel runs). */
static tg_kv *range_to(tg_kb *kb, uop *end, int kind, const char *fn) {
  if (kb->failed) return NULL;
  if (!end) return kb_fail(kb, "%s: the loop's end is NULL", fn);
  if (end->op == OP_CONST && end->arg.i < 1) return kb_fail(kb, "%s: size %lld (a loop runs at least once)", fn, (long long)end->arg.i);
  if (end->op != OP_CONST && end->op != OP_DEFINE_VAR)
    return kb_fail(kb, "%s: a loop runs to a constant or to a symbolic axis's length (tg_k_dim), not to a computed value", fn);
  if (kb->nranges >= KB_MAX_RANGES) return kb_fail(kb, "%s: more than %d loops", fn, KB_MAX_RANGES);
  int64_t arg[2] = { kb->nranges, kind };
  uop *r = uop1(OP_RANGE, DT_INDEX, end, arg_ints(arg, 2));
  kb->ranges[kb->nranges++] = r;
  return (tg_kv *)r;
}
tg_kv *tg_k_range(tg_kb *kb, int64_t size) { NEED_KB("tg_k_range"); return range_to(kb, uop_const_int(DT_INDEX, size), RANGE_LOOP, "tg_k_range"); }
tg_kv *tg_k_reduce_range(tg_kb *kb, int64_t size) { NEED_KB("tg_k_reduce_range"); return range_to(kb, uop_const_int(DT_INDEX, size), RANGE_REDUCE, "tg_k_reduce_range"); }
tg_kv *tg_k_range_to(tg_kb *kb, tg_kv *n) { NEED_KB("tg_k_range_to"); return range_to(kb, (uop *)n, RANGE_LOOP, "tg_k_range_to"); }
tg_kv *tg_k_reduce_range_to(tg_kb *kb, tg_kv *n) { NEED_KB("tg_k_reduce_range_to"); return range_to(kb, (uop *)n, RANGE_REDUCE, "tg_k_reduce_range_to"); }

tg_kv *tg_k_dim(tg_kb *kb, tg_kv *buf, int axis) {
  NEED_KB("tg_k_dim");
  kb_buffer *b = buffer_of(kb, (uop *)buf);
  if (!b) return kb_fail(kb, "tg_k_dim: %s", buf ? "not a buffer (tg_k_input or tg_k_output)" : "buf is NULL");
  if (axis < 0 || axis >= b->ndim) return kb_fail(kb, "tg_k_dim: axis %d of a buffer with %d axes", axis, b->ndim);
  return (tg_kv *)(b->var[axis] ? b->var[axis] : uop_const_int(DT_INDEX, b->shape[axis]));
}

/* ---- memory */

/* idx must run inside [0, size): by its value range */
static bool in_bounds(tg_kb *kb, uop *idx, int64_t size, const char *what) {
  uop *s = uop_simplify(idx);
  int64_t lo = uop_vmin(s), hi = uop_vmax(s);
  if (lo >= 0 && hi < size) return true;
  bool unknown = lo == INT64_MIN || hi == INT64_MAX || hi == INT32_MAX;
  kb_fail(kb, "tg_k_index: %s: the index runs over [%lld, %lld], outside [0, %lld]%s", what, (long long)lo, (long long)hi,
          (long long)size - 1, unknown ? " (its range is not known: clamp it with tg_k_max and tg_k_min)" : "");
  return false;
}

tg_kv *tg_k_index(tg_kb *kb, tg_kv *buf, tg_kv *const *idx, int n) {
  NEED_KB("tg_k_index");
  kb_buffer *b = buffer_of(kb, (uop *)buf);
  char bn[32], what[64];
  if (!b) return kb_fail(kb, "tg_k_index: %s", buf ? "not a buffer (tg_k_input or tg_k_output)" : "buf is NULL");
  buffer_name(kb, b, bn, sizeof bn);
  bool flat = n == 1 && b->ndim != 1;
  if (n != b->ndim && !flat) return kb_fail(kb, "tg_k_index: %s has %d axes, %d indices given (or 1, a flat index)", bn, b->ndim, n);
  if (n > 0 && !idx) return kb_fail(kb, "tg_k_index: idx is NULL");
  uop *pos = uop_const_int(DT_INDEX, 0);
  int64_t stride = 1;
  for (int a = n - 1; a >= 0; a--) {
    uop *x = value(kb, idx[a], "tg_k_index");
    if (!x) return NULL;
    if (!dt_is_int(x->dtype)) {
      return kb_fail(kb, "tg_k_index: %s, index %d is %s (indices are integers)", bn, a, tg_dtype_name(x->dtype.scalar));
    }
    if (x->dtype.scalar != DT_INDEX.scalar) x = uop_cast(x, DT_INDEX);
    int64_t size = flat ? b->numel : b->shape[a];
    if (flat) snprintf(what, sizeof what, "%s (flat, %lld elements)", bn, (long long)b->numel);
    else snprintf(what, sizeof what, "%s, axis %d", bn, a);
    if (!in_bounds(kb, x, size, what)) return NULL;
    pos = uop_alu(OP_ADD, pos, stride == 1 ? x : uop_muli(x, stride));
    if (!flat) stride *= b->shape[a];
  }
  return (tg_kv *)uop2(OP_INDEX, b->global->dtype, b->global, uop_simplify(pos), arg_none());
}

static kb_buffer *index_buffer(tg_kb *kb, tg_kv *index, const char *fn) {
  const uop *u = (const uop *)index;
  if (!u) return kb_fail(kb, "%s: index is NULL", fn);
  kb_buffer *b = u->op == OP_INDEX ? buffer_of(kb, u->src[0]) : NULL;
  if (!b) return kb_fail(kb, "%s: not an index (make one with tg_k_index)", fn);
  return b;
}

tg_kv *tg_k_load(tg_kb *kb, tg_kv *index) {
  NEED_KB("tg_k_load");
  kb_buffer *b = index_buffer(kb, index, "tg_k_load");
  if (!b) return NULL;
  if (b - kb->bufs < kb->nout) return kb_fail(kb, "tg_k_load: output %d is write-only (a kernel reads its inputs)", (int)(b - kb->bufs));
  return (tg_kv *)uop1(OP_LOAD, dt_scalar(b->dtype), (uop *)index, arg_none());
}

int tg_k_store(tg_kb *kb, tg_kv *index, tg_kv *v) {
  if (!kb) return tg_seterr("tg_k_store: kb is NULL");
  kb_buffer *b = index_buffer(kb, index, "tg_k_store");
  uop *x = b ? value(kb, v, "tg_k_store") : NULL;
  if (!x) return -1;
  int k = (int)(b - kb->bufs);
  if (k >= kb->nout) { kb_fail(kb, "tg_k_store: input %d is read-only (a kernel writes its outputs)", k - kb->nout); return -1; }
  if (x->dtype.scalar != b->dtype) {
    kb_fail(kb, "tg_k_store: output %d is %s, the value %s (tg_k_cast it)", k, tg_dtype_name(b->dtype), tg_dtype_name(x->dtype.scalar));
    return -1;
  }
  uop *st = uop2(OP_STORE, DT_VOID, (uop *)index, x, arg_none());
  uint64_t m = kb_free_ranges(&kb->free_memo, st);
  int64_t trips = 1;
  for (int i = 0; i < kb->nranges; i++) {
    if (!(m >> i & 1)) continue;
    if (is_reduce_range(kb->ranges[i])) {
      kb_fail(kb, "tg_k_store: the store to output %d uses reduce loop %d outside a tg_k_reduce over it", k, i);
      return -1;
    }
    if (tg_mul_overflow_i64(trips, range_max_size(kb->ranges[i]), &trips)) trips = INT64_MAX;
  }
  if (tg_add_overflow_i64(kb->covered[k], trips, &kb->covered[k])) kb->covered[k] = INT64_MAX;
  VEC_PUSH(kb->stores, st);
  return 0;
}

/* ---- numbers and math */

tg_kv *tg_k_const(tg_kb *kb, tg_dtype dt, double v) {
  NEED_KB("tg_k_const");
  if (!valid_dtype((int)dt)) return kb_fail(kb, "tg_k_const: %d is not a dtype", (int)dt);
  return (tg_kv *)uop_const(dt_scalar(dt), v);
}
tg_kv *tg_k_int(tg_kb *kb, int64_t v) { NEED_KB("tg_k_int"); return (tg_kv *)uop_const_int(DT_INDEX, v); }

tg_kv *tg_k_cast(tg_kb *kb, tg_kv *a, tg_dtype dt) {
  NEED_KB("tg_k_cast");
  uop *x = value(kb, a, "tg_k_cast");
  if (!x) return NULL;
  if (!valid_dtype((int)dt)) return kb_fail(kb, "tg_k_cast: %d is not a dtype", (int)dt);
  return (tg_kv *)(x->dtype.scalar == dt ? x : uop_cast(x, dt_scalar(dt)));
}

enum { ANY, NUMBER, INTEGER, FLOAT, BITS };   /* what an op takes */
static bool takes(uop *x, int kind) {
  switch (kind) {
  case NUMBER: return x->dtype.scalar != TG_BOOL;
  case INTEGER: return dt_is_int(x->dtype);
  case FLOAT: return dt_is_float(x->dtype);
  case BITS: return dt_is_int(x->dtype) || x->dtype.scalar == TG_BOOL;
  default: return true;
  }
}
static const char *kind_name(int kind) {
  return kind == FLOAT ? "floats" : kind == INTEGER ? "integers" : kind == BITS ? "integers or bools" : "numbers, not bool";
}

static bool operands(tg_kb *kb, tg_kv *a, tg_kv *b, int kind, const char *fn, uop **x, uop **y) {
  *x = value(kb, a, fn);
  *y = *x ? value(kb, b, fn) : NULL;
  if (!*y) return false;
  if ((*x)->dtype.scalar != (*y)->dtype.scalar) {
    kb_fail(kb, "%s: operands are %s and %s (tg_k_cast one)", fn, tg_dtype_name((*x)->dtype.scalar), tg_dtype_name((*y)->dtype.scalar));
    return false;
  }
  if (!takes(*x, kind)) { kb_fail(kb, "%s: takes %s, not %s", fn, kind_name(kind), tg_dtype_name((*x)->dtype.scalar)); return false; }
  return true;
}

static tg_kv *binary(tg_kb *kb, uop_op op, tg_kv *a, tg_kv *b, int kind, const char *fn) {
  uop *x, *y;
  if (!operands(kb, a, b, kind, fn, &x, &y)) return NULL;
  return (tg_kv *)uop_alu(op, x, y);
}
#define BINARY(fn, op, kind) tg_kv *fn(tg_kb *kb, tg_kv *a, tg_kv *b) { NEED_KB(#fn); return binary(kb, op, a, b, kind, #fn); }
BINARY(tg_k_add, OP_ADD, NUMBER)
BINARY(tg_k_sub, OP_SUB, NUMBER)
BINARY(tg_k_mul, OP_MUL, NUMBER)
BINARY(tg_k_mod, OP_MOD, INTEGER)
BINARY(tg_k_max, OP_MAX, ANY)
BINARY(tg_k_lt, OP_CMPLT, ANY)
BINARY(tg_k_eq, OP_CMPEQ, ANY)
BINARY(tg_k_ne, OP_CMPNE, ANY)
BINARY(tg_k_and, OP_AND, BITS)
BINARY(tg_k_or, OP_OR, BITS)
BINARY(tg_k_xor, OP_XOR, BITS)

tg_kv *tg_k_div(tg_kb *kb, tg_kv *a, tg_kv *b) {
  NEED_KB("tg_k_div");
  uop *x, *y;
  if (!operands(kb, a, b, NUMBER, "tg_k_div", &x, &y)) return NULL;
  return (tg_kv *)uop_alu(dt_is_float(x->dtype) ? OP_FDIV : OP_IDIV, x, y);
}

tg_kv *tg_k_min(tg_kb *kb, tg_kv *a, tg_kv *b) {
  NEED_KB("tg_k_min");
  uop *x, *y;
  if (!operands(kb, a, b, ANY, "tg_k_min", &x, &y)) return NULL;
  /* -max(-a, -b): NaN propagates as in tg_minimum, and an int's value
   * range follows, so a clamped index is known to be in bounds; exact for
   * ints when neither operand can be the dtype's minimum (whose negation
   * wraps), else a select */
  bool neg_form = dt_is_float(x->dtype);
  if (dt_is_int(x->dtype) && !dt_is_unsigned(x->dtype)) {
    int64_t lowest = (int64_t)dt_min(x->dtype);
    neg_form = uop_vmin(uop_simplify(x)) > lowest && uop_vmin(uop_simplify(y)) > lowest;
  }
  if (neg_form) return (tg_kv *)uop_alu1(OP_NEG, uop_alu(OP_MAX, uop_alu1(OP_NEG, x), uop_alu1(OP_NEG, y)));
  return (tg_kv *)uop_where(uop_alu(OP_CMPLT, x, y), x, y);
}

tg_kv *tg_k_where(tg_kb *kb, tg_kv *cond, tg_kv *a, tg_kv *b) {
  NEED_KB("tg_k_where");
  uop *c = value(kb, cond, "tg_k_where"), *x, *y;
  if (!c || !operands(kb, a, b, ANY, "tg_k_where", &x, &y)) return NULL;
  if (c->dtype.scalar != TG_BOOL) return kb_fail(kb, "tg_k_where: the condition is %s, not bool (compare first)", tg_dtype_name(c->dtype.scalar));
  return (tg_kv *)uop_where(c, x, y);
}

static tg_kv *unary(tg_kb *kb, uop_op op, tg_kv *a, int kind, const char *fn) {
  uop *x = value(kb, a, fn);
  if (!x) return NULL;
  if (!takes(x, kind)) return kb_fail(kb, "%s: takes %s, not %s", fn, kind_name(kind), tg_dtype_name(x->dtype.scalar));
  return (tg_kv *)uop_alu1(op, x);
}
#define UNARY(fn, op, kind) tg_kv *fn(tg_kb *kb, tg_kv *a) { NEED_KB(#fn); return unary(kb, op, a, kind, #fn); }
UNARY(tg_k_neg, OP_NEG, NUMBER)
UNARY(tg_k_exp2, OP_EXP2, FLOAT)
UNARY(tg_k_log2, OP_LOG2, FLOAT)
UNARY(tg_k_sqrt, OP_SQRT, FLOAT)
UNARY(tg_k_sin, OP_SIN, FLOAT)
UNARY(tg_k_recip, OP_RECIPROCAL, FLOAT)

/* ---- reductions */

tg_kv *tg_k_reduce(tg_kb *kb, tg_k_reduce_op op, tg_kv *v, tg_kv *const *ranges, int n) {
  NEED_KB("tg_k_reduce");
  if (op != TG_K_SUM && op != TG_K_MAX) return kb_fail(kb, "tg_k_reduce: %d is not TG_K_SUM or TG_K_MAX", (int)op);
  uop *x = value(kb, v, "tg_k_reduce");
  if (!x) return NULL;
  if (n < 1 || n > KB_MAX_RANGES) return kb_fail(kb, "tg_k_reduce: %d reduce loops (1 to %d)", n, KB_MAX_RANGES);
  if (!ranges) return kb_fail(kb, "tg_k_reduce: ranges is NULL");
  if (op == TG_K_SUM && x->dtype.scalar == TG_BOOL) return kb_fail(kb, "tg_k_reduce: a sum of %s (tg_k_cast it)", tg_dtype_name(x->dtype.scalar));
  uop *srcs[1 + KB_MAX_RANGES];
  srcs[0] = x;
  uop_list inner = uop_toposort(x);
  for (int i = 0; i < n; i++) {
    uop *r = (uop *)ranges[i];
    int ri = range_index(kb, r);
    const char *why = ri < 0 ? "is not a loop of this kernel" : !is_reduce_range(r) ? "is a loop (tg_k_range), not a reduce loop (tg_k_reduce_range)" : NULL;
    for (int j = 0; j < i && !why; j++) if (srcs[1 + j] == r) why = "is listed twice";
    for (int j = 0; j < inner.n && !why; j++)
      if (inner.v[j]->op == OP_REDUCE)
        for (int k = 1; k < inner.v[j]->nsrc; k++) if (inner.v[j]->src[k] == r) why = "is reduced already inside the value";
    if (why) { free(inner.v); return kb_fail(kb, "tg_k_reduce: range %d %s", i, why); }
    srcs[1 + i] = r;
  }
  free(inner.v);
  return (tg_kv *)uop_new(OP_REDUCE, x->dtype, srcs, 1 + n, arg_int(op == TG_K_SUM ? OP_ADD : OP_MAX));
}

/* ---- the kernel */

int tg_k_opts(tg_kb *kb, const char *opts) {
  if (!kb) return tg_seterr("tg_k_opts: kb is NULL");
  if (kb->failed) return -1;
  if (!opts) { kb_fail(kb, "tg_k_opts: opts is NULL"); return -1; }
  kopt o[32];
  if (strlen(opts) >= sizeof kb->opts) { kb_fail(kb, "tg_k_opts: opts longer than %zu characters", sizeof kb->opts - 1); return -1; }
  if (kopts_parse(opts, o, 32) < 0) { kb_fail(kb, "tg_k_opts: %s", tg_error()); return -1; }
  snprintf(kb->opts, sizeof kb->opts, "%s", opts);
  return 0;
}

uop *kb_number_ranges(uop *sink) {
  /* loops nest by id: output loops first, by their old ids (the order they
   * were made), then the reduce loops, as the scheduler numbers them;
   * through ids past every old one, so no new range is an old one */
  uop_list l = uop_toposort(sink);
  uop *rs[64];
  int n = 0;
  for (int i = 0; i < l.n && n < 64; i++) if (l.v[i]->op == OP_RANGE) rs[n++] = l.v[i];
  free(l.v);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0; j--) {
      uop *a = rs[j - 1], *b = rs[j];
      bool later = is_reduce_range(a) != is_reduce_range(b) ? is_reduce_range(a) : a->arg.v[0] > b->arg.v[0];
      if (!later) break;
      rs[j - 1] = b; rs[j] = a;
    }
  for (int step = 0; step < 2; step++) {
    ptrmap m = { 0 };
    for (int i = 0; i < n; i++) {
      uop *r = rs[i];
      int64_t from[2] = { step ? 64 + i : r->arg.v[0], r->arg.v[1] }, to[2] = { step ? i : 64 + i, r->arg.v[1] };
      pm_put(&m, uop1(OP_RANGE, r->dtype, r->src[0], arg_ints(from, 2)), uop1(OP_RANGE, r->dtype, r->src[0], arg_ints(to, 2)));
    }
    sink = graph_substitute(sink, &m);
    pm_free(&m);
  }
  return sink;
}


uop *kb_finish(tg_kb *kb) {
  char sh[96];
  for (int k = 0; k < kb->nout && !kb->failed; k++) {
    const kb_buffer *b = &kb->bufs[k];
    if (!kb->covered[k]) kb_fail(kb, "output %d is never stored (every output needs a tg_k_store)", k);
    else if (kb->covered[k] < b->numel)
      kb_fail(kb, "the stores to output %d run %lld times, it has %lld elements (shape %s): are its loops the size of its shape?", k,
              (long long)kb->covered[k], (long long)b->numel, mvx_shape_str(b->shape, b->ndim, sh, sizeof sh));
  }
  if (kb->failed) return NULL;
  /* the kernel's own opts ride on its SINK (realize.c reads them there) */
  uop *sink = uop_new(OP_SINK, DT_VOID, kb->stores.v, kb->stores.n, kb->opts[0] ? arg_str(kb->opts) : arg_none());
  return uop_simplify(kb_number_ranges(sink));
}
