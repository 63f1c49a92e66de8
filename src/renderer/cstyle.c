/* cstyle.c: the C renderer. Walks the linearized program and writes one C
 * statement per node: loops for RANGEs, accumulators for REDUCEs, loads and
 * stores through the kernel's buffer pointers. */
#include <math.h>
#include "renderer/renderer.h"
#include "codegen/codegen.h"
#include "schedule/schedule.h"
#include "util/util.h"

extern const char tg_kernel_prelude_fpconv[];

static const char *threefry_src =
  "static inline unsigned long long tg_threefry(unsigned long long x, unsigned long long key) {\n"
  "  unsigned int x0 = (unsigned int)x, x1 = (unsigned int)(x >> 32);\n"
  "  unsigned int ks[3] = { (unsigned int)key, (unsigned int)(key >> 32), 0 };\n"
  "  static const int rot[8] = { 13, 15, 26, 6, 17, 29, 16, 24 };\n"
  "  ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;\n"
  "  x0 += ks[0]; x1 += ks[1];\n"
  "  for (int i = 0; i < 5; i++) {\n"
  "    for (int j = 0; j < 4; j++) { int r = rot[(i % 2) * 4 + j]; x0 += x1; x1 = (x1 << r) | (x1 >> (32 - r)); x1 ^= x0; }\n"
  "    x0 += ks[(i + 1) % 3]; x1 += ks[(i + 2) % 3] + (unsigned int)(i + 1);\n"
  "  }\n"
  "  return ((unsigned long long)x1 << 32) | x0;\n"
  "}\n";

static const char *scalar_ctype(dtype_t d);

/* Vector types (gcc/clang vector extensions): tg_v16_float etc., declared
 * with 4-byte alignment so any element address can be loaded as a vector.
 * A bool vector is a comparison mask: lanes of -1/0 as wide as int. */
static _Thread_local bool vec_used[TG_NSCALAR][65];
static const char *vec_elem_name(int scalar) {
  switch (scalar) {
  case TG_BOOL: case TG_I32: return "int";
  case TG_U32: return "uint";
  case TG_I64: return "long";
  case TG_U64: return "ulong";
  case TG_F32: return "float";
  case TG_F64: return "double";
  case TG_I16: return "short";
  case TG_U16: return "ushort";
  case TG_I8: return "schar";
  case TG_U8: return "uchar";
  case TG_F16: return "half";   /* float16 bits (unsigned short lanes) */
  case TG_BF16: return "bhalf";  /* bfloat16 bits (unsigned short lanes) */
  default: return "void";
  }
}
static const char *vec_ctype(dtype_t d) {
  static _Thread_local char names[TG_NSCALAR][65][32];
  int s = d.scalar == TG_BOOL ? TG_I32 : d.scalar;
  vec_used[s][d.count] = true;
  char *n = names[s][d.count];
  if (!n[0]) snprintf(n, 32, "tg_v%d_%s", d.count, vec_elem_name(s));
  return n;
}
/* the mask type of comparisons between vectors of d */
static dtype_t mask_of(dtype_t d) {
  int sz = dt_itemsize(d);
  return dt_vec(dt_scalar(sz == 8 ? TG_I64 : sz == 2 ? TG_I16 : sz == 1 ? TG_I8 : TG_I32), d.count);
}

static const char *ctype(dtype_t d) {
  if (d.count > 1 && !dt_is_ptr(d)) return vec_ctype(d);
  return scalar_ctype(d);
}
static const char *scalar_ctype(dtype_t d) {
  switch (d.scalar) {
  case TG_BOOL: return "_Bool";
  case TG_I8: return "signed char";
  case TG_U8: return "unsigned char";
  case TG_I16: return "short";
  case TG_U16: return "unsigned short";
  case TG_I32: return "int";
  case TG_U32: return "unsigned int";
  case TG_I64: return "long long";
  case TG_U64: return "unsigned long long";
  case TG_F16: case TG_BF16: return "unsigned short";   /* storage only */
  case TG_FP8E4M3: case TG_FP8E5M2: return "unsigned char";
  case TG_F32: return "float";
  case TG_F64: return "double";
  default: return "void";
  }
}
static bool is_small(dtype_t d) { return d.scalar == TG_F16 || d.scalar == TG_BF16 || d.scalar == TG_FP8E4M3 || d.scalar == TG_FP8E5M2; }
static const char *small_tag(dtype_t d) {
  switch (d.scalar) { case TG_F16: return "f16"; case TG_BF16: return "bf16"; case TG_FP8E4M3: return "e4m3"; default: return "e5m2"; }
}

typedef struct {
  strbuf body;
  ptrmap names;        /* uop -> char* (owned) */
  int nvars;
  int depth;
  bool need_threefry, need_fpconv;
  bool need_vcvt_f16[65];   /* lanes of float16 -> float32 vector conversions used */
  bool need_dot4[17];       /* lanes of byte dot products used */
  bool need_sqrt[65];       /* lanes of float32 square roots used */
} rctx;

static void indent(rctx *c) { for (int i = 0; i < c->depth; i++) sb_puts(&c->body, "  "); }
static const char *name_of(rctx *c, uop *u) { const char *s = pm_get(&c->names, u); return s ? s : "?"; }
static void set_name(rctx *c, uop *u, char *s) { char *old = pm_get(&c->names, u); free(old); pm_put(&c->names, u, s); }

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) s = tg_xstrdup("");
  va_end(ap);
  return s;
}

static char *render_const(rctx *c, uop *u) {
  dtype_t d = u->dtype;
  double v = uop_const_value(u);
  if (is_small(d)) {
    c->need_fpconv = true;
    if (isnan(v)) return fmt("tg_cvt_f64_%s(NAN)", small_tag(d));
    if (isinf(v)) return fmt("tg_cvt_f64_%s(%sINFINITY)", small_tag(d), v < 0 ? "-" : "");
    return fmt("tg_cvt_f64_%s(%a)", small_tag(d), v);
  }
  switch (d.scalar) {
  case TG_BOOL: return fmt("%d", u->arg.i ? 1 : 0);
  case TG_F32: case TG_F64: {
    const char *suf = d.scalar == TG_F32 ? "f" : "";
    if (isnan(v)) return fmt("(%s)NAN", ctype(d));
    if (isinf(v)) return fmt("(%s)%sINFINITY", ctype(d), v < 0 ? "-" : "");
    return fmt(signbit(v) ? "(%a%s)" : "%a%s", v, suf);
  }
  case TG_I64: return u->arg.i == INT64_MIN ? fmt("(-9223372036854775807LL-1)") : fmt(u->arg.i < 0 ? "(%lldLL)" : "%lldLL", (long long)u->arg.i);
  case TG_U64: return fmt("%lluULL", (unsigned long long)u->arg.i);
  case TG_U32: return fmt("%lluu", (unsigned long long)(uint32_t)u->arg.i);
  case TG_I32: return u->arg.i == INT32_MIN ? fmt("(-2147483647-1)") : fmt(u->arg.i < 0 ? "(%lld)" : "%lld", (long long)u->arg.i);
  default: return fmt("((%s)%lld)", ctype(d), (long long)u->arg.i);
  }
}

static char *render_cast(rctx *c, uop *u, const char *x) {
  dtype_t from = u->src[0]->dtype, to = u->dtype;
  if (is_small(from) || is_small(to)) c->need_fpconv = true;
  if (is_small(from) && is_small(to)) return fmt("tg_cvt_f32_%s(tg_cvt_%s_f32(%s))", small_tag(to), small_tag(from), x);
  if (is_small(from)) return fmt("((%s)tg_cvt_%s_f32(%s))", ctype(to), small_tag(from), x);
  if (is_small(to)) {
    if (from.scalar == TG_F32) return fmt("tg_cvt_f32_%s(%s)", small_tag(to), x);
    return fmt("tg_cvt_f64_%s((double)%s)", small_tag(to), x);
  }
  return fmt("((%s)%s)", ctype(to), x);
}

/* scalar x of dtype d broadcast into vector type vt. A float is written
 * x - 0 rather than 0 + x: subtracting +0 is the identity for every float
 * (-0 - 0 = -0) and compilers drop it, while adding +0 turns -0 into +0, so
 * "0 + x" costs a real add before every broadcast (and keeps a load from
 * folding into an FMA). For integers 0 + x is the identity already. */
static char *splat(dtype_t d, const char *vt, const char *x) {
  return dt_is_float(d) ? fmt("(%s-(%s){0})", x, vt) : fmt("((%s){0}+%s)", vt, x);
}

/* a vector op's source, broadcast when it is a scalar (into vector type vt) */
static char *vsrc(rctx *c, uop *x, const char *vt) {
  if (x->dtype.count > 1) return tg_xstrdup(name_of(c, x));
  return splat(x->dtype, vt, name_of(c, x));
}

static char *render_vec_alu(rctx *c, uop *u) {
  /* operands share the type of the widest source (comparisons: of src 0) */
  dtype_t opd = u->op == OP_WHERE ? u->dtype : uop_is_comparison(u->op) ? dt_vec(u->src[0]->dtype, u->dtype.count) : u->dtype;
  if (u->op == OP_CAST) opd = dt_vec(u->src[0]->dtype, u->dtype.count);
  const char *vt = ctype(opd), *mt = ctype(mask_of(opd));
  int first = u->op == OP_WHERE ? 1 : 0;
  /* operand strings of ALU ops (at most 3 sources; a VECTORIZE of lanes
   * names its sources itself) */
  char *s[3] = { NULL, NULL, NULL };
  for (int i = first; i < u->nsrc && i < 3; i++) s[i] = vsrc(c, u->src[i], vt);
  char *r = NULL;
  switch (u->op) {
  case OP_ADD: r = fmt("(%s+%s)", s[0], s[1]); break;
  case OP_SUB: r = fmt("(%s-%s)", s[0], s[1]); break;
  case OP_MUL: r = fmt("(%s*%s)", s[0], s[1]); break;
  case OP_FDIV: r = fmt("(%s/%s)", s[0], s[1]); break;
  case OP_NEG: r = fmt("(-%s)", s[0]); break;
  case OP_SQRT: c->need_sqrt[u->dtype.count] = true; r = fmt("tg_sqrt_v%d(%s)", u->dtype.count, s[0]); break;
  case OP_RECIPROCAL: r = fmt("(((%s){0}+1)/%s)", vt, s[0]); break;
  case OP_CMPLT: r = fmt("(%s<%s)", s[0], s[1]); break;
  case OP_CMPNE: r = fmt("(%s!=%s)", s[0], s[1]); break;
  case OP_CMPEQ: r = fmt("(%s==%s)", s[0], s[1]); break;
  case OP_MAX:   /* lanes where a > b or a is NaN take a */
    r = fmt("({ %s a_ = %s, b_ = %s; %s m_ = (a_ > b_) | (a_ != a_); (%s)(((%s)a_ & m_) | ((%s)b_ & ~m_)); })", vt, s[0], s[1], mt, vt, mt, mt);
    break;
  case OP_WHERE:
    if (u->src[0]->dtype.count == 1) r = fmt("(%s?%s:%s)", name_of(c, u->src[0]), s[1], s[2]);
    else r = fmt("({ %s m_ = %s; (%s)(((%s)%s & m_) | ((%s)%s & ~m_)); })", mt, name_of(c, u->src[0]), vt, mt, s[1], mt, s[2]);
    break;
  case OP_CAST:
    if (u->src[0]->dtype.scalar == TG_F16) { c->need_vcvt_f16[u->dtype.count] = true; r = fmt("tg_cvt_v%d_f16_f32(%s)", u->dtype.count, s[0]); }
    else if (u->src[0]->dtype.scalar == TG_BF16)   /* bfloat16 is the top half of a float32: shift the bits up */
      r = fmt("((%s)(__builtin_convertvector(%s, %s) << 16))", ctype(u->dtype), s[0], ctype(dt_vec(dt_scalar(TG_U32), u->dtype.count)));
    else r = fmt("__builtin_convertvector(%s, %s)", s[0], ctype(u->dtype));
    break;
  case OP_VECTORIZE:
    if (u->nsrc == 1) {   /* an iota: lane i is base + stride*i */
      strbuf b = { 0 };
      sb_printf(&b, "(((%s){", vt);
      for (int i = 0; i < u->dtype.count; i++) sb_printf(&b, i ? ",%d" : "%d", i);
      sb_printf(&b, "})*%lld+%s)", (long long)u->arg.i, s[0]);
      r = b.s;
    } else {
      strbuf b = { 0 };
      sb_printf(&b, "((%s){", vt);
      for (int i = 0; i < u->nsrc; i++) sb_printf(&b, i ? ",%s" : "%s", name_of(c, u->src[i]));
      sb_puts(&b, "})");
      r = b.s;
    }
    break;
  case OP_BITCAST:   /* lanes of the same size: a vector cast reinterprets the bits */
    r = fmt("((%s)%s)", ctype(u->dtype), s[0]);
    break;
  case OP_AND: r = fmt("(%s&%s)", s[0], s[1]); break;
  case OP_OR: r = fmt("(%s|%s)", s[0], s[1]); break;
  case OP_XOR: r = fmt("(%s^%s)", s[0], s[1]); break;
  case OP_SHL: r = fmt("(%s<<%s)", s[0], s[1]); break;
  case OP_SHR: r = fmt("(%s>>%s)", s[0], s[1]); break;
  default: break;
  }
  for (int i = 0; i < 3; i++) free(s[i]);
  return r;
}

/* k lanes of a wider vector: lane l is src[arg + l * (src lanes / k)] */
static char *render_vec_gep(rctx *c, uop *u) {
  strbuf b = { 0 };
  const char *a = name_of(c, u->src[0]);
  int st = u->src[0]->dtype.count / u->dtype.count;
  sb_printf(&b, "__builtin_shufflevector(%s, %s", a, a);
  for (int i = 0; i < u->dtype.count; i++) sb_printf(&b, ", %lld", (long long)(u->arg.i + (int64_t)st * i));
  sb_puts(&b, ")");
  return b.s;
}

/* OP_DOT4 (see vectorize.c): tg_dot4_vK(acc, unsigned bytes, signed
 * bytes), each operand a vector of 4K bytes viewed as K ints, or one int
 * (4 bytes) for every lane. */
static char *render_dot4(rctx *c, uop *u) {
  int k = u->dtype.count;
  if (k != 4 && k != 8 && k != 16) return NULL;
  c->need_dot4[k] = true;
  const char *vt = ctype(u->dtype);
  char *s[3];
  for (int i = 0; i < 3; i++)
    s[i] = u->src[i]->dtype.count > 1 ? fmt("((%s)%s)", vt, name_of(c, u->src[i])) : splat(u->src[i]->dtype, vt, name_of(c, u->src[i]));
  char *r = fmt("tg_dot4_v%d(%s, %s, %s)", k, s[0], s[1], s[2]);
  for (int i = 0; i < 3; i++) free(s[i]);
  return r;
}

/* Square roots of K float32 lanes: vsqrtps under clang (4, 8, 16 lanes),
 * else lane by lane (with -fno-math-errno, one sqrtss each). */
static void prelude_sqrt(strbuf *src, int k) {
  const char *isa = k == 16 ? "defined(__AVX512F__)" : k == 8 ? "defined(__AVX__)" : "defined(__SSE__)";
  const char *call = k == 16 ? "__builtin_ia32_sqrtps512((v_)x, 4)" : k == 8 ? "__builtin_ia32_sqrtps256((v_)x)" : "__builtin_ia32_sqrtps((v_)x)";
  sb_printf(src, "static inline tg_v%d_float tg_sqrt_v%d(tg_v%d_float x) {\n", k, k, k);
  if (k == 4 || k == 8 || k == 16)
    sb_printf(src, "#if defined(__clang__) && %s\n  typedef float v_ __attribute__((vector_size(%d)));\n  return (tg_v%d_float)%s;\n#else\n", isa, 4 * k, k, call);
  sb_printf(src, "  tg_v%d_float r;\n  for (int i = 0; i < %d; i++) r[i] = __builtin_sqrtf(x[i]);\n  return r;\n", k, k);
  sb_puts(src, k == 4 || k == 8 || k == 16 ? "#endif\n}\n" : "}\n");
}

/* The byte dot product of K int32 lanes: vpdpbusd where the target has it
 * (clang's builtins; AVX512-VNNI, or AVX-VNNI for 4 and 8 lanes), else the
 * same sum in portable vector C. */
static void prelude_dot4(strbuf *src, int k) {
  const char *vnni = k == 16 ? "defined(__AVX512VNNI__)" : "((defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__))";
  sb_printf(src, "static inline tg_v%d_int tg_dot4_v%d(tg_v%d_int acc, tg_v%d_int u, tg_v%d_int s) {\n", k, k, k, k, k);
  sb_printf(src, "#if defined(__clang__) && %s\n  return __builtin_ia32_vpdpbusd%d(acc, u, s);\n#else\n", vnni, 32 * k);
  sb_printf(src, "  typedef unsigned char u_ __attribute__((vector_size(%d)));\n  typedef signed char s_ __attribute__((vector_size(%d)));\n", 4 * k, 4 * k);
  sb_puts(src, "  u_ a = (u_)u;\n  s_ b = (s_)s;\n");
  for (int p = 0; p < 4; p++) {
    strbuf ix = { 0 };
    for (int l = 0; l < k; l++) sb_printf(&ix, ", %d", 4 * l + p);
    sb_printf(src, "  acc += __builtin_convertvector(__builtin_shufflevector(a, a%s), tg_v%d_int) * __builtin_convertvector(__builtin_shufflevector(b, b%s), tg_v%d_int);\n",
              ix.s, k, ix.s, k);
    sb_free(&ix);
  }
  sb_puts(src, "  return acc;\n#endif\n}\n");
}

static char *render_alu(rctx *c, uop *u) {
  if (u->op == OP_DOT4) return render_dot4(c, u);
  if (u->dtype.count > 1 && u->op == OP_GEP) return render_vec_gep(c, u);
  if (u->dtype.count > 1) return render_vec_alu(c, u);
  const char *a = u->nsrc > 0 ? name_of(c, u->src[0]) : "", *b = u->nsrc > 1 ? name_of(c, u->src[1]) : "", *w = u->nsrc > 2 ? name_of(c, u->src[2]) : "";
  bool f32 = u->dtype.scalar == TG_F32;
  bool fl = dt_is_float(u->dtype) || (u->nsrc && dt_is_float(u->src[0]->dtype));
  switch (u->op) {
  case OP_ADD: return fmt("(%s+%s)", a, b);
  case OP_SUB: return fmt("(%s-%s)", a, b);
  case OP_MUL: return fmt("(%s*%s)", a, b);
  case OP_FDIV: return fmt("(%s/%s)", a, b);
  case OP_IDIV:
    if (fl) return fmt("%s(%s/%s)", f32 ? "truncf" : "trunc", a, b);
    if (u->src[1]->op == OP_CONST && uop_const_value(u->src[1]) > 0) return fmt("(%s/%s)", a, b);
    /* never trap: x/0 is 0, and MIN/-1 wraps to MIN like the other ops */
    if (dt_is_unsigned(u->dtype)) return fmt("(%s==0?0:%s/%s)", b, a, b);
    return fmt("(%s==0?0:%s==-1?(%s)(0ull-(unsigned long long)%s):%s/%s)", b, b, ctype(u->dtype), a, a, b);
  case OP_MOD:
    if (fl) return fmt("%s(%s,%s)", f32 ? "fmodf" : "fmod", a, b);
    if (u->src[1]->op == OP_CONST && uop_const_value(u->src[1]) > 0) return fmt("(%s%%%s)", a, b);
    if (dt_is_unsigned(u->dtype)) return fmt("(%s==0?0:%s%%%s)", b, a, b);
    return fmt("((%s==0||%s==-1)?0:%s%%%s)", b, b, a, b);
  case OP_MAX:
    if (fl) return fmt("((%s!=%s||%s>%s)?%s:%s)", a, a, a, b, a, b);   /* NaN propagates */
    return fmt("(%s>%s?%s:%s)", a, b, a, b);
  case OP_POW: return fmt("%s(%s,%s)", f32 ? "powf" : "pow", a, b);
  case OP_CMPLT: return fmt("(%s<%s)", a, b);
  case OP_CMPNE: return fmt("(%s!=%s)", a, b);
  case OP_CMPEQ: return fmt("(%s==%s)", a, b);
  case OP_AND: return fmt("(%s&%s)", a, b);
  case OP_OR: return fmt("(%s|%s)", a, b);
  case OP_XOR: return fmt("(%s^%s)", a, b);
  case OP_SHL: return fmt("(%s<<%s)", a, b);
  case OP_SHR: return fmt("(%s>>%s)", a, b);
  case OP_THREEFRY: c->need_threefry = true; return fmt("tg_threefry(%s,%s)", a, b);
  case OP_NEG: return u->dtype.scalar == TG_BOOL ? fmt("(!%s)", a) : fmt("(-%s)", a);
  case OP_EXP2: return fmt("%s(%s)", f32 ? "exp2f" : "exp2", a);
  case OP_LOG2: return fmt("%s(%s)", f32 ? "log2f" : "log2", a);
  case OP_SIN: return fmt("%s(%s)", f32 ? "sinf" : "sin", a);
  case OP_SQRT: return fmt("%s(%s)", f32 ? "sqrtf" : "sqrt", a);
  case OP_TRUNC: return fl ? fmt("%s(%s)", f32 ? "truncf" : "trunc", a) : fmt("%s", a);
  case OP_RECIPROCAL: return fmt("(%s/%s)", f32 ? "1.0f" : "1.0", a);
  case OP_WHERE: return fmt("(%s?%s:%s)", a, b, w);
  case OP_MULACC: return fmt("((%s*%s)+%s)", a, b, w);
  case OP_CAST: return render_cast(c, u, a);
  case OP_GEP: return fmt("%s[%lld]", a, (long long)u->arg.i);   /* one lane of a vector */
  case OP_BITCAST:
    return fmt("({ %s o_; %s i_ = %s; __builtin_memcpy(&o_, &i_, sizeof o_); o_; })", ctype(u->dtype), ctype(u->src[0]->dtype), a);
  default: return NULL;
  }
}

static char *reduce_identity(uop *r) {
  dtype_t d = r->dtype;
  int op = (int)r->arg.i;
  bool fl = dt_is_float(d);
  if (op == OP_ADD) return tg_xstrdup(fl ? (d.scalar == TG_F32 ? "0.0f" : "0.0") : "0");
  if (op == OP_MUL) return tg_xstrdup(fl ? (d.scalar == TG_F32 ? "1.0f" : "1.0") : "1");
  /* MAX */
  if (fl) return fmt("(%s)-INFINITY", ctype(dt_base(d)));
  if (d.scalar == TG_BOOL || dt_is_unsigned(d)) return tg_xstrdup("0");
  if (d.scalar == TG_I64) return tg_xstrdup("(-9223372036854775807LL-1)");
  return fmt("((%s)%.0f)", ctype(dt_base(d)), dt_min(d));
}

static bool has_mulacc_reduce(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++)
    found = l.v[i]->op == OP_REDUCE && l.v[i]->arg.i == OP_ADD && l.v[i]->src[0]->op == OP_MUL && dt_is_float(l.v[i]->dtype);
  free(l.v);
  return found;
}

char *render_c(uop *ast, const char *name) {
  uop_pool_push();
  memset(vec_used, 0, sizeof vec_used);
  ast = decompose_small_floats(ast);
  lprogram prog;
  if (linearize(ast, &prog) < 0) { uop_pool_pop(); return NULL; }
  rctx c = { 0 };
  c.depth = 1;
  bool failed = false;
  int nbufs = 0;
  const char *varnames[64];
  int nvarnames = kernel_var_names(ast, varnames, 64);
  ptrmap prefetch_ahead = { 0 };
  if (!getenv("TG_NO_PREFETCH")) kernel_prefetch_plan(ast, &prefetch_ahead);
  bool stored[256] = { 0 };
  for (int i = 0; i < prog.n; i++)
    if (prog.v[i].kind == LI_OP && prog.v[i].u->op == OP_STORE) {
      uop *g = prog.v[i].u->src[0]->src[0];
      if (g->arg.i < 256) stored[g->arg.i] = true;
    }
  for (int i = 0; i < prog.n && !failed; i++) {
    linst *in = &prog.v[i];
    uop *u = in->u;
    switch (in->kind) {
    case LI_LOOP: {
      char *n = fmt("ridx%d", (int)u->arg.v[0]);
      indent(&c);
      if (u->arg.v[1] == RANGE_THREAD) {
        /* this core's contiguous share of the loop */
        const char *sz = name_of(&c, u->src[0]);
        sb_printf(&c.body, "const long long %s_chunk = (%s + ncores - 1) / ncores, %s_end0 = (core + 1) * %s_chunk;\n", n, sz, n, n);
        indent(&c);
        sb_printf(&c.body, "const long long %s_end = %s_end0 < %s ? %s_end0 : %s;\n", n, n, sz, n, sz);
        indent(&c);
        sb_printf(&c.body, "for (long long %s = core * %s_chunk; %s < %s_end; %s++) {\n", n, n, n, n, n);
      } else
        sb_printf(&c.body, "for (long long %s = 0; %s < %s; %s++) {\n", n, n, name_of(&c, u->src[0]), n);
      set_name(&c, u, n);
      c.depth++;
      continue;
    }
    case LI_ENDLOOP: c.depth--; indent(&c); sb_puts(&c.body, "}\n"); continue;
    case LI_ACC_INIT: {
      char *n = fmt("acc%d", c.nvars++);
      char *id = reduce_identity(u);
      indent(&c);
      if (u->dtype.count > 1) sb_printf(&c.body, "%s %s = (%s){0} + %s;\n", ctype(u->dtype), n, ctype(u->dtype), id);
      else sb_printf(&c.body, "%s %s = %s;\n", ctype(u->dtype), n, id);
      free(id);
      set_name(&c, u, n);
      continue;
    }
    case LI_ACC_UPDATE: {
      const char *acc = name_of(&c, u), *v = name_of(&c, u->src[0]);
      indent(&c);
      int op = (int)u->arg.i;
      if (op == OP_ADD) sb_printf(&c.body, "%s += %s;\n", acc, v);
      else if (op == OP_MUL) sb_printf(&c.body, "%s *= %s;\n", acc, v);
      else if (u->dtype.count > 1) {
        const char *vt = ctype(u->dtype), *mt = ctype(mask_of(u->dtype));
        sb_printf(&c.body, "{ %s m_ = (%s > %s) | (%s != %s); %s = (%s)(((%s)%s & m_) | ((%s)%s & ~m_)); }\n", mt, v, acc, v, v, acc, vt, mt, v, mt, acc);
      }
      else if (dt_is_float(u->dtype)) sb_printf(&c.body, "%s = (%s!=%s||%s>%s)?%s:%s;\n", acc, v, v, v, acc, v, acc);
      else sb_printf(&c.body, "%s = %s>%s?%s:%s;\n", acc, v, acc, v, acc);
      continue;
    }
    case LI_OP: break;
    }
    switch (u->op) {
    case OP_CONST: set_name(&c, u, render_const(&c, u)); break;
    case OP_DEFINE_VAR: {
      /* the kernel gets its variables' values in vars[], sorted by name */
      int k = 0;
      for (int v = 0; v < nvarnames; v++) if (!strcmp(varnames[v], u->arg.s)) k = v;
      set_name(&c, u, fmt("vars[%d]", k));
      break;
    }
    case OP_DEFINE_GLOBAL: {
      int k = (int)u->arg.i;
      if (k + 1 > nbufs) nbufs = k + 1;
      set_name(&c, u, fmt("data%d", k));
      break;
    }
    case OP_INDEX: {
      /* an address expression; the gate (src 2) is applied by LOAD/STORE */
      if (u->dtype.count > 1)   /* a vector of consecutive elements */
        set_name(&c, u, fmt("(*(%s*)(%s+%s))", ctype(dt_vec(dt_base(u->dtype), u->dtype.count)), name_of(&c, u->src[0]), name_of(&c, u->src[1])));
      else set_name(&c, u, fmt("%s[%s]", name_of(&c, u->src[0]), name_of(&c, u->src[1])));
      break;
    }
    case OP_LOAD: {
      uop *ix = u->src[0];
      char *n = fmt("val%d", c.nvars++);
      intptr_t ahead = (intptr_t)pm_get(&prefetch_ahead, u);
      indent(&c);
      if (ahead) {
        sb_printf(&c.body, "__builtin_prefetch((const char *)&%s + %lld);\n", name_of(&c, ix), (long long)ahead);
        indent(&c);
      }
      if (ix->nsrc > 2 && u->dtype.count > 1) sb_printf(&c.body, "%s %s = %s ? %s : (%s){0};\n", ctype(u->dtype), n, name_of(&c, ix->src[2]), name_of(&c, ix), ctype(u->dtype));
      else if (ix->nsrc > 2) sb_printf(&c.body, "%s %s = %s ? %s : 0;\n", ctype(u->dtype), n, name_of(&c, ix->src[2]), name_of(&c, ix));
      else sb_printf(&c.body, "%s %s = %s;\n", ctype(u->dtype), n, name_of(&c, ix));
      set_name(&c, u, n);
      break;
    }
    case OP_STORE: {
      uop *ix = u->src[0];
      indent(&c);
      if (ix->nsrc > 2) sb_printf(&c.body, "if (%s) ", name_of(&c, ix->src[2]));
      if (ix->dtype.count > 1 && u->src[1]->dtype.count == 1) {
        dtype_t vd = dt_vec(dt_base(ix->dtype), ix->dtype.count);
        char *v = splat(u->src[1]->dtype, ctype(vd), name_of(&c, u->src[1]));
        sb_printf(&c.body, "%s = %s;\n", name_of(&c, ix), v);
        free(v);
      } else sb_printf(&c.body, "%s = %s;\n", name_of(&c, ix), name_of(&c, u->src[1]));
      break;
    }
    case OP_SINK: case OP_NOOP: break;
    default: {
      char *e = render_alu(&c, u);
      if (!e) { tg_seterr("render_c: cannot render %s", uop_op_name(u->op)); failed = true; break; }
      char *n = fmt("alu%d", c.nvars++);
      indent(&c);
      sb_printf(&c.body, "%s %s = %s;\n", ctype(u->dtype), n, e);
      free(e);
      set_name(&c, u, n);
    }
    }
  }
  /* buffer declarations need every DEFINE_GLOBAL's dtype */
  strbuf src = { 0 };
  sb_puts(&src, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
  if (c.need_fpconv) sb_puts(&src, tg_kernel_prelude_fpconv);
  if (c.need_threefry) sb_puts(&src, threefry_src);
  static const char *velem[TG_NSCALAR] = { [TG_I8] = "signed char", [TG_U8] = "unsigned char", [TG_I16] = "short", [TG_U16] = "unsigned short",
    [TG_I32] = "int", [TG_U32] = "unsigned int", [TG_I64] = "long long", [TG_U64] = "unsigned long long", [TG_F32] = "float", [TG_F64] = "double",
    [TG_F16] = "unsigned short", [TG_BF16] = "unsigned short" };
  for (int s = 0; s < TG_NSCALAR; s++)
    for (int n = 2; n <= 64; n++) {
      if (!vec_used[s][n] || !velem[s]) continue;
      int sz = dt_itemsize(dt_scalar(s));
      sb_printf(&src, "typedef %s tg_v%d_%s __attribute__((vector_size(%d), aligned(%d)));\n", velem[s], n, vec_elem_name(s), n * sz, sz);
    }
  /* float16 lanes to float32: the hardware conversion when the compiler has
   * _Float16 (exact, like the scalar helper), else lane by lane */
  for (int n = 2; n <= 64; n++) {
    if (!c.need_vcvt_f16[n]) continue;
    if (!c.need_fpconv) sb_puts(&src, tg_kernel_prelude_fpconv);
    c.need_fpconv = true;
    sb_printf(&src, "static inline tg_v%d_float tg_cvt_v%d_f16_f32(tg_v%d_half b) {\n#ifdef __FLT16_MAX__\n"
                    "  typedef _Float16 h_ __attribute__((vector_size(%d)));\n  return __builtin_convertvector((h_)b, tg_v%d_float);\n#else\n"
                    "  tg_v%d_float r;\n  for (int i = 0; i < %d; i++) r[i] = tg_cvt_f16_f32(b[i]);\n  return r;\n#endif\n}\n",
              n, n, n, 2 * n, n, n, n);
  }
  for (int k = 4; k <= 16; k *= 2) if (c.need_dot4[k]) prelude_dot4(&src, k);
  for (int k = 2; k <= 64; k++) if (c.need_sqrt[k]) prelude_sqrt(&src, k);
  sb_printf(&src, "void %s(void **bufs, const long long *vars, int core, int ncores) {\n", name);
  /* multiply-accumulate reductions (matmul, conv) may fuse into FMA: one
   * rounding instead of two, and twice the arithmetic per instruction */
  if (has_mulacc_reduce(ast)) sb_puts(&src, "#ifdef __clang__\n#pragma clang fp contract(fast)\n#endif\n");
  uop_list l = uop_toposort(ast);
  for (int i = 0; i < l.n; i++) {
    uop *g = l.v[i];
    if (g->op != OP_DEFINE_GLOBAL) continue;
    int k = (int)g->arg.i;
    sb_printf(&src, "  %s%s* restrict data%d = (%s*)bufs[%d];\n", k < 256 && stored[k] ? "" : "const ", ctype(g->dtype), k, ctype(g->dtype), k);
  }
  free(l.v);
  sb_puts(&src, "  (void)vars; (void)core; (void)ncores;\n");
  if (c.body.s) sb_puts(&src, c.body.s);
  sb_puts(&src, "}\n");
  sb_free(&c.body);
  for (size_t i = 0; i < c.names.cap; i++) if (c.names.keys[i]) free(c.names.vals[i]);
  pm_free(&c.names);
  pm_free(&prefetch_ahead);
  lprogram_free(&prog);
  uop_pool_pop();
  if (failed) { sb_free(&src); return NULL; }
  return src.s;
}
