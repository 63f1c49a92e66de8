/* dialect_c.c: C for the CPU device. Kernels have the tg_kernel_fn
 * signature (buffers and variables through arrays, core/ncores splitting
 * the THREAD loop); UPCAST lanes become gcc/clang vector types; the byte
 * dot product is vpdpbusd where the compiler has it; big streamed operands
 * get software prefetches. Everything CPU-only in the renderers is here. */
#include "renderer/cstyle.h"

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

/* Vector types (gcc/clang vector extensions, the C dialect): tg_v16_float
 * etc. A bool vector is a comparison mask: lanes of -1/0 as wide as int. */
static const char *c_vector_type(rctx *c, dtype_t d) {
  static _Thread_local char names[TG_NSCALAR][65][32];
  int s = d.scalar == TG_BOOL ? TG_I32 : d.scalar;
  c->vec_used[s][d.count] = true;
  char *n = names[s][d.count];
  if (!n[0]) snprintf(n, 32, "tg_v%d_%s", d.count, vec_elem_name(s));
  return n;
}

/* the vector typedefs the body used (C dialect) */
static void render_vector_typedefs(rctx *c, strbuf *src) {
  for (int s = 0; s < TG_NSCALAR; s++)
    for (int n = 2; n <= 64; n++) {
      const char *e = c->d->buffer_elem[s];
      if (!c->vec_used[s][n] || !e || s == TG_BOOL) continue;
      int sz = dt_itemsize(dt_scalar(s));
      const char *en = vec_elem_name(s);
      sb_printf(src, "#ifndef TG_HAVE_tg_v%d_%s\n#define TG_HAVE_tg_v%d_%s\n", n, en, n, en);
      sb_printf(src, "typedef %s tg_v%d_%s __attribute__((vector_size(%d), aligned(%d)));\n#endif\n", e, n, en, n * sz, sz);
    }
}


/* a vector op's source, broadcast when it is a scalar (into vector type vt) */
static char *vsrc(rctx *c, uop *x, const char *vt) {
  if (x->dtype.count > 1) return tg_xstrdup(rname(c, x));
  if (x->dtype.scalar == TG_BOOL) return rfmt("((%s){0}-%s)", vt, rname(c, x));   /* a mask: true is all ones */
  return rsplat(x->dtype, vt, rname(c, x));
}

/* The type of a vector ALU node's operands (comparisons: of src 0's lanes;
 * casts: of the source's), and the mask type of comparisons between them;
 * both are declared by the prelude (marked used here). */
typedef struct { const char *vt, *mt; } vec_types;
static vec_types vtypes(rctx *c, uop *u) {
  dtype_t opd = u->op == OP_WHERE ? u->dtype : uop_is_comparison(u->op) || u->op == OP_CAST ? dt_vec(u->src[0]->dtype, u->dtype.count) : u->dtype;
  return (vec_types){ rctype(c, opd), rctype(c, rmask_of(opd)) };
}

/* the vector pass's operand: x in the root's operand type, broadcast */
static char *voperand(rctx *c, uop *root, uop *x) { return vsrc(c, x, vtypes(c, root).vt); }
/* source i of the matched node as an operand (kept until the node is written) */
static const char *V(rctx *c, const rw_match *m, int i) { return rtemp(c, voperand(c, m->root, m->root->src[i])); }

/* tg_<fn>_vK(x), a prelude helper on K lanes (need: its flags) */
static char *vhelper(rctx *c, const rw_match *m, bool *need, const char *fn, const char *suffix) {
  int k = m->root->dtype.count;
  need[k] = true;
  return rfmt("tg_%s_v%d%s(%s)", fn, k, suffix, V(c, m, 0));
}
static char *v_sqrt(rctx *c, const rw_match *m) { return vhelper(c, m, c->need_sqrt, "sqrt", ""); }
static char *v_exp2(rctx *c, const rw_match *m) { return vhelper(c, m, c->need_exp2, "exp2", ""); }
static char *v_trunc(rctx *c, const rw_match *m) { return vhelper(c, m, c->need_trunc, "trunc", ""); }
static char *v_cast_f16(rctx *c, const rw_match *m) { return vhelper(c, m, c->need_vcvt_f16, "cvt", "_f16_f32"); }

static char *v_reciprocal(rctx *c, const rw_match *m) { return rfmt("(((%s){0}+1)/%s)", vtypes(c, m->root).vt, V(c, m, 0)); }

/* lanes where a > b or a is NaN take a */
static char *v_max(rctx *c, const rw_match *m) {
  vec_types t = vtypes(c, m->root);
  return rfmt("({ %s a_ = %s, b_ = %s; %s m_ = (a_ > b_) | (a_ != a_); (%s)(((%s)a_ & m_) | ((%s)b_ & ~m_)); })", t.vt, V(c, m, 0), V(c, m, 1), t.mt, t.vt, t.mt, t.mt);
}

/* a scalar condition picks whole vectors; a mask picks lanes */
static char *v_where(rctx *c, const rw_match *m) {
  uop *u = m->root;
  vec_types t = vtypes(c, u);
  const char *a = V(c, m, 1), *b = V(c, m, 2);
  if (u->src[0]->dtype.count == 1) return rfmt("(%s?%s:%s)", rname(c, u->src[0]), a, b);
  return rfmt("({ %s m_ = %s; (%s)(((%s)%s & m_) | ((%s)%s & ~m_)); })", t.mt, rname(c, u->src[0]), t.vt, t.mt, a, t.mt, b);
}

/* bfloat16 is the top half of a float32: shift the bits up */
static char *v_cast_bf16(rctx *c, const rw_match *m) {
  uop *u = m->root;
  return rfmt("((%s)(__builtin_convertvector(%s, %s) << 16))", rctype(c, u->dtype), V(c, m, 0), rctype(c, dt_vec(dt_scalar(TG_U32), u->dtype.count)));
}

static char *v_convert(rctx *c, const rw_match *m) { return rfmt("__builtin_convertvector(%s, %s)", V(c, m, 0), rctype(c, m->root->dtype)); }

/* lanes of the same size: a vector cast reinterprets the bits */
static char *v_bitcast(rctx *c, const rw_match *m) { return rfmt("((%s)%s)", rctype(c, m->root->dtype), V(c, m, 0)); }

/* lanes from scalars; one source: an iota, lane i is base + stride*i */
static char *v_vectorize(rctx *c, const rw_match *m) {
  uop *u = m->root;
  const char *vt = vtypes(c, u).vt;
  strbuf b = { 0 };
  if (u->nsrc == 1) {
    sb_printf(&b, "(((%s){", vt);
    for (int i = 0; i < u->dtype.count; i++) sb_printf(&b, i ? ",%d" : "%d", i);
    sb_printf(&b, "})*%lld+%s)", (long long)u->arg.i, V(c, m, 0));
  } else {
    sb_printf(&b, "((%s){", vt);
    for (int i = 0; i < u->nsrc; i++) sb_printf(&b, i ? ",%s" : "%s", rname(c, u->src[i]));
    sb_puts(&b, "})");
  }
  return b.s;
}

/* k lanes of a wider vector: lane l is src[arg + l * (src lanes / k)] */
static char *v_gep(rctx *c, const rw_match *m) {
  uop *u = m->root;
  strbuf b = { 0 };
  const char *a = rname(c, u->src[0]);
  int st = u->src[0]->dtype.count / u->dtype.count;
  sb_printf(&b, "__builtin_shufflevector(%s, %s", a, a);
  for (int i = 0; i < u->dtype.count; i++) sb_printf(&b, ", %lld", (long long)(u->arg.i + (int64_t)st * i));
  sb_puts(&b, ")");
  return b.s;
}

/* OP_DOT4 (see vectorize.c): tg_dot4_vK(acc, unsigned bytes, signed
 * bytes), each operand a vector of 4K bytes viewed as K ints, or one int
 * (4 bytes) for every lane. */
static char *v_dot4(rctx *c, const rw_match *m) {
  uop *u = m->root;
  int k = u->dtype.count;
  if (k != 4 && k != 8 && k != 16) return NULL;
  c->need_dot4[k] = true;
  const char *vt = rctype(c, u->dtype), *s[3];
  for (int i = 0; i < 3; i++)
    s[i] = rtemp(c, u->src[i]->dtype.count > 1 ? rfmt("((%s)%s)", vt, rname(c, u->src[i])) : rsplat(u->src[i]->dtype, vt, rname(c, u->src[i])));
  return rfmt("tg_dot4_v%d(%s, %s, %s)", k, s[0], s[1], s[2]);
}

/* OP_LUT16 (see vectorize.c): tg_lut16_vK(table, entries, byte indices),
 * the entries 0..arg of the table at src 0. */
static char *v_lut16(rctx *c, const rw_match *m) {
  uop *u = m->root;
  int k = u->dtype.count;
  if (k < 2 || k > 64) return NULL;
  c->need_lut16[k] = true;
  const char *bt = rctype(c, dt_vec(dt_scalar(TG_U8), k));
  return rfmt("((%s)tg_lut16_v%d((const unsigned char *)&%s, %d, (%s)%s))", rctype(c, u->dtype), k, rname(c, u->src[0]), (int)u->arg.i + 1, bt,
              rname(c, u->src[1]));
}

#define F(p, f) { .pattern = p, .fn = f }

/* Vector nodes: gcc/clang vector extensions (C's infix operators apply to
 * them as they are, with operands broadcast to the node's operand type:
 * voperand); math through the prelude's helpers. */
static const render_rule c_vector_rules[] = {
  F("(SQRT a)", v_sqrt),
  F("(EXP2 a)", v_exp2),
  F("(TRUNC a)", v_trunc),
  F("(RECIPROCAL a)", v_reciprocal),
  F("(MAX a b)", v_max),
  F("(WHERE c a b)", v_where),
  F("(CAST x.f16)", v_cast_f16),
  F("(CAST x.bf16)", v_cast_bf16),
  F("(CAST x)", v_convert),
  F("(VECTORIZE ...)", v_vectorize),
  F("(BITCAST x)", v_bitcast),
  F("(GEP v)", v_gep),
  F("(DOT4 acc u s)", v_dot4),
  F("(LUT16 t i)", v_lut16),
};
static const render_table c_vector_code = RENDER_TABLE(c_vector_rules);

/* Each helper is guarded by its name, so kernel sources concatenate into one
 * file (tg_jit_export) without redefinitions. */
static void guard_begin(strbuf *src, const char *fmt, int k) {
  char name[64];
  snprintf(name, sizeof name, fmt, k);
  sb_printf(src, "#ifndef TG_HAVE_%s\n#define TG_HAVE_%s\n", name, name);
}

/* Square roots of K float32 lanes: vsqrtps under clang (4, 8, 16 lanes),
 * else lane by lane (with -fno-math-errno, one sqrtss each). */
static void prelude_sqrt(strbuf *src, int k) {
  const char *isa = k == 16 ? "defined(__AVX512F__)" : k == 8 ? "defined(__AVX__)" : "defined(__SSE__)";
  const char *call = k == 16 ? "__builtin_ia32_sqrtps512((v_)x, 4)" : k == 8 ? "__builtin_ia32_sqrtps256((v_)x)" : "__builtin_ia32_sqrtps((v_)x)";
  guard_begin(src, "tg_sqrt_v%d", k);
  sb_printf(src, "static inline tg_v%d_float tg_sqrt_v%d(tg_v%d_float x) {\n", k, k, k);
  if (k == 4 || k == 8 || k == 16)
    sb_printf(src, "#if defined(__clang__) && %s\n  typedef float v_ __attribute__((vector_size(%d)));\n  return (tg_v%d_float)%s;\n#else\n", isa, 4 * k, k, call);
  sb_printf(src, "  tg_v%d_float r;\n  for (int i = 0; i < %d; i++) r[i] = __builtin_sqrtf(x[i]);\n  return r;\n", k, k);
  sb_puts(src, k == 4 || k == 8 || k == 16 ? "#endif\n}\n#endif\n" : "}\n#endif\n");
}

/* truncf on K float32 lanes in vector arithmetic (libm's is scalar): where
 * |x| < 2^23 through int32 and back (cvttps2dq, cvtdq2ps), the sign bit of
 * x put back (trunc(-0.5) is -0.0); other values (integers already, inf,
 * NaN) as they are. Bit for bit truncf. */
static void prelude_trunc(strbuf *src, int k) {
  guard_begin(src, "tg_trunc_v%d", k);
  sb_printf(src, "static inline tg_v%d_float tg_trunc_v%d(tg_v%d_float x) {\n", k, k, k);
  sb_printf(src, "  typedef int i_ __attribute__((vector_size(%d)));\n  typedef tg_v%d_float f_;\n", 4 * k, k);
  sb_puts(src, "  i_ bits = (i_)x, sign = bits & (int)0x80000000;\n"
               "  i_ small = (bits & 0x7fffffff) < 0x4b000000;\n"
               "  i_ t = (i_)__builtin_convertvector(__builtin_convertvector(x, i_), f_) | sign;\n"
               "  return (f_)((t & small) | (bits & ~small));\n}\n#endif\n");
}

/* 2^x on K float32 lanes, in vector arithmetic (libm's exp2f is scalar,
 * so a softmax's lanes would otherwise run one call at a time): x clamped
 * to [-150, 128], split into the nearest integer n (adding and subtracting
 * 1.5*2^23 rounds to it) and f in [-0.5, 0.5]; 2^f by a degree-6 polynomial
 * (relative error 2.6e-9, fitted by tools/fit_exp2.py), times
 * 2^n as two exponent-field scalings (so results down to the smallest
 * denormal round once). Within 1.3 ulp of 2^x; inf past 128, 0 below -150
 * and for -inf, NaN for NaN. */
static void prelude_exp2(strbuf *src, int k) {
  guard_begin(src, "tg_exp2_v%d", k);
  sb_printf(src, "static inline tg_v%d_float tg_exp2_v%d(tg_v%d_float x) {\n", k, k, k);
  sb_printf(src, "  typedef int i_ __attribute__((vector_size(%d)));\n  typedef unsigned u_ __attribute__((vector_size(%d)));\n", 4 * k, 4 * k);
  sb_printf(src, "  typedef tg_v%d_float f_;\n", k);
  sb_puts(src, "  const f_ zero = (f_){ 0 }, lo = zero - 150.0f, hi = zero + 128.0f, magic = zero + 0x1.8p23f;\n"
               "  i_ m = x < lo;\n  x = (f_)(((i_)x & ~m) | ((i_)lo & m));\n"
               "  m = x > hi;\n  x = (f_)(((i_)x & ~m) | ((i_)hi & m));\n"
               "  f_ r = x + magic;\n  i_ n = (i_)r - 0x4B400000;\n  f_ f = x - (r - magic);\n"
               "  f_ p = f * 0x1.41d32ep-13f + 0x1.5f456cp-10f;\n  p = p * f + 0x1.3b2dbcp-7f;\n  p = p * f + 0x1.c6aed4p-5f;\n"
               "  p = p * f + 0x1.ebfbdap-3f;\n  p = p * f + 0x1.62e43p-1f;\n  p = p * f + 1.0f;\n"
               "  i_ n1 = n >> 1, n2 = n - n1;\n"
               "  f_ s1 = (f_)((u_)(n1 + 127) << 23), s2 = (f_)((u_)(n2 + 127) << 23);\n"
               "  return p * s1 * s2;\n}\n#endif\n");
}

/* The byte dot product of one 16- or 32-byte vector on x86 without VNNI
 * (SSSE3 / AVX2): pmaddubsw multiplies unsigned by signed bytes and adds
 * pairs into int16, pmaddwd adds pairs of those into int32. pmaddubsw
 * saturates, exact only while the unsigned bytes are below 128, so their
 * top bits go through a second pmaddubsw and come back times 128. */
static void prelude_dot4_x86(strbuf *src, int bytes) {
  const char *b = bytes == 32 ? "256" : "128";
  guard_begin(src, "tg_dot4_x86_%d", bytes);
  sb_printf(src, "typedef char tg_b%d_ __attribute__((vector_size(%d)));\ntypedef unsigned char tg_ub%d_ __attribute__((vector_size(%d)));\n"
                 "typedef short tg_h%d_ __attribute__((vector_size(%d)));\ntypedef int tg_i%d_ __attribute__((vector_size(%d)));\n",
            bytes, bytes, bytes, bytes, bytes, bytes, bytes, bytes);
  sb_printf(src, "static inline tg_i%d_ tg_dot4_x86_%d(tg_i%d_ acc, tg_i%d_ u, tg_i%d_ s) {\n", bytes, bytes, bytes, bytes, bytes);
  sb_printf(src, "  tg_b%d_ lo = (tg_b%d_)((tg_ub%d_)u & 0x7f), hi = (tg_b%d_)((tg_ub%d_)u >> 7);\n  tg_h%d_ one = (tg_h%d_){ 0 } + 1;\n",
            bytes, bytes, bytes, bytes, bytes, bytes, bytes);
  sb_printf(src, "  tg_i%d_ a = (tg_i%d_)__builtin_ia32_pmaddwd%s(__builtin_ia32_pmaddubsw%s(lo, (tg_b%d_)s), one);\n", bytes, bytes, b, b, bytes);
  sb_printf(src, "  tg_i%d_ h = (tg_i%d_)__builtin_ia32_pmaddwd%s(__builtin_ia32_pmaddubsw%s(hi, (tg_b%d_)s), one);\n", bytes, bytes, b, b, bytes);
  sb_puts(src, "  return acc + a + (h << 7);\n}\n#endif\n");
}

/* The byte dot product of K int32 lanes: vpdpbusd where the target has it
 * (clang's builtins; AVX512-VNNI, or AVX-VNNI for 4 and 8 lanes); else on
 * x86 pmaddubsw and pmaddwd (AVX2 for 8 and 16 lanes, the latter as two
 * halves; SSSE3 for 4); else the same sum in portable vector C. */
static void prelude_dot4(strbuf *src, int k) {
  const char *vnni = k == 16 ? "defined(__AVX512VNNI__)" : "((defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__))";
  const int xbytes = k == 4 ? 16 : 32;
  const char *xisa = k == 4 ? "defined(__SSSE3__)" : "defined(__AVX2__)";
  sb_printf(src, "#if %s\n", xisa);
  prelude_dot4_x86(src, xbytes);
  sb_puts(src, "#endif\n");
  guard_begin(src, "tg_dot4_v%d", k);
  sb_printf(src, "static inline tg_v%d_int tg_dot4_v%d(tg_v%d_int acc, tg_v%d_int u, tg_v%d_int s) {\n", k, k, k, k, k);
  sb_printf(src, "#if defined(__clang__) && %s\n  return __builtin_ia32_vpdpbusd%d(acc, u, s);\n", vnni, 32 * k);
  sb_printf(src, "#elif %s\n", xisa);
  if (k == 16) {   /* two 8-lane halves */
    sb_puts(src, "  tg_i32_ a = tg_dot4_x86_32(__builtin_shufflevector(acc, acc, 0, 1, 2, 3, 4, 5, 6, 7), __builtin_shufflevector(u, u, 0, 1, 2, 3, 4, 5, 6, 7),\n"
                 "                               __builtin_shufflevector(s, s, 0, 1, 2, 3, 4, 5, 6, 7));\n"
                 "  tg_i32_ b = tg_dot4_x86_32(__builtin_shufflevector(acc, acc, 8, 9, 10, 11, 12, 13, 14, 15), __builtin_shufflevector(u, u, 8, 9, 10, 11, 12, 13, 14, 15),\n"
                 "                               __builtin_shufflevector(s, s, 8, 9, 10, 11, 12, 13, 14, 15));\n"
                 "  return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);\n");
  } else {
    sb_printf(src, "  return (tg_v%d_int)tg_dot4_x86_%d((tg_i%d_)acc, (tg_i%d_)u, (tg_i%d_)s);\n", k, xbytes, xbytes, xbytes, xbytes);
  }
  sb_puts(src, "#else\n");
  sb_printf(src, "  typedef unsigned char u_ __attribute__((vector_size(%d)));\n  typedef signed char s_ __attribute__((vector_size(%d)));\n", 4 * k, 4 * k);
  sb_puts(src, "  u_ a = (u_)u;\n  s_ b = (s_)s;\n");
  for (int p = 0; p < 4; p++) {
    strbuf ix = { 0 };
    for (int l = 0; l < k; l++) sb_printf(&ix, ", %d", 4 * l + p);
    sb_printf(src, "  acc += __builtin_convertvector(__builtin_shufflevector(a, a%s), tg_v%d_int) * __builtin_convertvector(__builtin_shufflevector(b, b%s), tg_v%d_int);\n",
              ix.s, k, ix.s, k);
    sb_free(&ix);
  }
  sb_puts(src, "  return acc;\n#endif\n}\n#endif\n");
}

/* K bytes t[i[l]] of a table of 16 bytes or fewer: a byte shuffle
 * (pshufb: AVX-512BW on 64 lanes under clang, AVX2 on 32, else SSSE3 16
 * at a time) of the table in one 16-byte vector, else lane by lane. Only
 * the n entries the indices can reach are read (the rest are 0), so the
 * table may end anywhere; the indices are below n. */
static void prelude_lut16(strbuf *src, int k) {
  static const char *const rep4 = "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15";
  guard_begin(src, "tg_lut16_v%d", k);
  sb_printf(src, "static inline tg_v%d_uchar tg_lut16_v%d(const unsigned char *t, int n, tg_v%d_uchar i) {\n", k, k, k);
  sb_puts(src, "  typedef char b16_ __attribute__((vector_size(16)));\n  b16_ tab = { 0 };\n"
               "  if (n == 16) __builtin_memcpy(&tab, t, 16);\n  else for (int j = 0; j < n; j++) tab[j] = (char)t[j];\n");
  if (k == 64)
    sb_printf(src, "#if defined(__clang__) && defined(__AVX512BW__)\n  typedef char b64_ __attribute__((vector_size(64)));\n"
                   "  b64_ t4 = __builtin_shufflevector(tab, tab, %s, %s, %s, %s);\n"
                   "  return (tg_v64_uchar)__builtin_ia32_pshufb512(t4, (b64_)i);\n#elif defined(__SSSE3__)\n", rep4, rep4, rep4, rep4);
  else if (k == 32)
    sb_printf(src, "#if defined(__AVX2__)\n  typedef char b32_ __attribute__((vector_size(32)));\n"
                   "  b32_ t2 = __builtin_shufflevector(tab, tab, %s, %s);\n"
                   "  return (tg_v32_uchar)__builtin_ia32_pshufb256(t2, (b32_)i);\n#elif defined(__SSSE3__)\n", rep4, rep4);
  else if (k % 16 == 0) sb_puts(src, "#if defined(__SSSE3__)\n");
  if (k % 16 == 0)
    sb_printf(src, "  tg_v%d_uchar r;\n  for (int c = 0; c < %d; c += 16) {\n    b16_ x;\n    __builtin_memcpy(&x, (const char *)&i + c, 16);\n"
                   "    x = __builtin_ia32_pshufb128(tab, x);\n    __builtin_memcpy((char *)&r + c, &x, 16);\n  }\n  return r;\n#else\n", k, k);
  sb_printf(src, "  tg_v%d_uchar r;\n  for (int l = 0; l < %d; l++) r[l] = (unsigned char)tab[i[l] & 15];\n  return r;\n", k, k);
  sb_puts(src, k % 16 == 0 ? "#endif\n}\n#endif\n" : "}\n#endif\n");
}

static void c_prelude(rctx *c, strbuf *src) {
  sb_puts(src, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n");
  bool fpconv = c->need_fpconv;
  for (int n = 2; n <= 64; n++) fpconv |= c->need_vcvt_f16[n];
  if (fpconv) sb_puts(src, tg_kernel_prelude_fpconv);
  if (c->need_threefry) {
    guard_begin(src, "tg_threefry", 0);
    render_threefry(src, "static inline", "unsigned int", "unsigned long long");
    sb_puts(src, "#endif\n");
  }
  /* the vector types, helpers included: render them into a scratch buffer
   * first so the typedefs they use are known */
  strbuf helpers = { 0 };
  /* float16 lanes to float32: the hardware conversion when the compiler has
   * _Float16 (exact, like the scalar helper); else x86's F16C 8 lanes at a
   * time (clang 14 has no _Float16 on x86 before AVX512-FP16, and its
   * lane-by-lane loop ran 14x slower than gcc's: an f16 KV cache's
   * attention); else lane by lane */
  for (int n = 2; n <= 64; n++) {
    if (!c->need_vcvt_f16[n]) continue;
    guard_begin(&helpers, "tg_cvt_v%d_f16_f32", n);
    if (n % 4 == 0) sb_puts(&helpers, "#if defined(__F16C__) && !defined(TG_NO_F16C)\n#include <immintrin.h>\n#endif\n");
    sb_printf(&helpers, "static inline tg_v%d_float tg_cvt_v%d_f16_f32(tg_v%d_half b) {\n#ifdef __FLT16_MAX__\n"
                        "  typedef _Float16 h_ __attribute__((vector_size(%d)));\n  return __builtin_convertvector((h_)b, tg_v%d_float);\n",
              n, n, n, 2 * n, n);
    if (n % 4 == 0) {
      int w = n % 8 == 0 ? 8 : 4;
      sb_printf(&helpers, "#elif defined(__F16C__) && !defined(TG_NO_F16C)\n  tg_v%d_float r;\n"
                          "  for (int i = 0; i < %d; i += %d) {\n    __m128i h;\n    %s v;\n"
                          "    __builtin_memcpy(&h, (const char *)&b + 2 * i, %d);\n    v = %s(h);\n"
                          "    __builtin_memcpy((char *)&r + 4 * i, &v, %d);\n  }\n  return r;\n",
                n, n, w, w == 8 ? "__m256" : "__m128", 2 * w, w == 8 ? "_mm256_cvtph_ps" : "_mm_cvtph_ps", 4 * w);
    }
    sb_printf(&helpers, "#else\n  tg_v%d_float r;\n  for (int i = 0; i < %d; i++) r[i] = tg_cvt_f16_f32(b[i]);\n  return r;\n#endif\n}\n#endif\n", n, n);
  }
  for (int k = 4; k <= 16; k *= 2) if (c->need_dot4[k]) prelude_dot4(&helpers, k);
  for (int k = 2; k <= 64; k++) if (c->need_sqrt[k]) prelude_sqrt(&helpers, k);
  for (int k = 2; k <= 64; k++) if (c->need_exp2[k]) prelude_exp2(&helpers, k);
  for (int k = 2; k <= 64; k++) if (c->need_trunc[k]) prelude_trunc(&helpers, k);
  for (int k = 2; k <= 64; k++) if (c->need_lut16[k]) prelude_lut16(&helpers, k);
  render_vector_typedefs(c, src);
  if (helpers.s) sb_puts(src, helpers.s);
  sb_free(&helpers);
}

static void c_open_kernel(rctx *c, strbuf *src, const char *name, const kernel_args *a) {
  sb_printf(src, "void %s(void **bufs, const long long *vars, int core, int ncores) {\n", name);
  /* multiply-accumulate reductions (matmul, conv) may fuse into FMA: one
   * rounding instead of two, and twice the arithmetic per instruction */
  if (c->mulacc_reduce) sb_puts(src, "#ifdef __clang__\n#pragma clang fp contract(fast)\n#endif\n");
  for (int k = 0; k < a->nbufs; k++) {
    const kernel_buf *b = &a->bufs[k];
    if (b->index != k || !b->dtype.count) continue;   /* an index no DEFINE_GLOBAL has */
    const char *t = rctype(c, b->dtype);
    sb_printf(src, "  %s%s* restrict data%d = (%s*)bufs[%d];\n", b->stored ? "" : "const ", t, k, t, k);
  }
  sb_puts(src, "  (void)vars; (void)core; (void)ncores;\n");
}

static char *c_special(int kind, int dim) { return tg_xstrdup("0"); }   /* the CPU has no work groups */

static char *c_bitcast(rctx *c, const rw_match *m) {
  uop *u = m->root;
  return rfmt("({ %s o_; %s i_ = %s; __builtin_memcpy(&o_, &i_, sizeof o_); o_; })", rctype(c, u->dtype), rctype(c, u->src[0]->dtype), rname(c, u->src[0]));
}

static const render_rule c_rules[] = {
  F("(BITCAST x)", c_bitcast),
};
static const render_table c_code = RENDER_TABLE(c_rules);

const render_dialect dialect_c = {
  .name = "c",
  .scalar_type = { [TG_BOOL] = "_Bool", [TG_I8] = "signed char", [TG_U8] = "unsigned char", [TG_I16] = "short", [TG_U16] = "unsigned short",
    [TG_I32] = "int", [TG_U32] = "unsigned int", [TG_I64] = "long long", [TG_U64] = "unsigned long long",
    [TG_F16] = "unsigned short", [TG_BF16] = "unsigned short",   /* storage only: math goes through float */
    [TG_FP8E4M3] = "unsigned char", [TG_FP8E5M2] = "unsigned char", [TG_F32] = "float", [TG_F64] = "double" },
  .buffer_elem = { [TG_BOOL] = "_Bool", [TG_I8] = "signed char", [TG_U8] = "unsigned char", [TG_I16] = "short", [TG_U16] = "unsigned short",
    [TG_I32] = "int", [TG_U32] = "unsigned int", [TG_I64] = "long long", [TG_U64] = "unsigned long long",
    [TG_F16] = "unsigned short", [TG_BF16] = "unsigned short", [TG_FP8E4M3] = "unsigned char", [TG_FP8E5M2] = "unsigned char",
    [TG_F32] = "float", [TG_F64] = "double" },
  .i64_suffix = "LL", .u64_suffix = "ULL",
  .fn_qual = "static inline",
  .local_qual = "",
  .barrier = "",
  .var_fmt = "vars[%d]",
  .open_kernel = c_open_kernel,
  .special = c_special,
  .code = { &c_code, &cstyle_libm_f32 },
  .prelude = c_prelude,
  .vector_code = &c_vector_code,
  .vector_operand = voperand,
  .vector_type = c_vector_type,
};

const tg_renderer renderer_c = {
  .name = "c",
  .dialect = &dialect_c,
  .has_threads = true,
  .simd_vectors = true,
  .byte_dot = true,
  .prefetch = true,
  .wide_layouts = true,
};
