/* vectorize.c: turns one UPCAST range into SIMD lanes. Every node that
 * depends on the range becomes a vector (float.vec(16)); loads and stores
 * whose address steps by one element per lane become vector loads/stores,
 * addresses that do not change across lanes stay scalar and are broadcast.
 * Loads whose address steps by 2 or 4 per lane (pairs of adjacent values,
 * as in an int16 multiply-add) load all s*k elements once and keep that
 * wide vector through integer ops (unpacking bits); where it meets
 * anything else, or is widened to int32 for a multiply, a shuffle picks
 * its lanes from int16 values (clang then forms vpmaddwd from the int32
 * products of even and odd int16 lanes).
 * A byte load from a table indexed by lane-varying data in 0..15 (IQ4's
 * levels) becomes OP_LUT16, a byte shuffle (pshufb).
 * Anything else (gathers, transcendental math, small floats) makes the pass
 * give up, and the range is expanded into scalar lanes instead. */
#include "codegen/opts.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"
#include "uop/rewrite.h"
#include "util/util.h"
#include "util/settings.h"

typedef struct {
  uop *node;        /* the rebuilt node (NULL for pure lane-affine index math) */
  bool vec;         /* varies across lanes */
  uop *base;        /* index math: lane l is base + stride * l */
  int64_t stride;
  bool affine;
  int wide, par;    /* strided lanes: lane l is wnode[par + wide*l] */
  uop *wnode;
  uop **gidx;       /* a gathered INDEX: one scalar INDEX per lane (k of them) */
  uop **stores;     /* a scattered STORE: one scalar STORE per lane (k of them) */
  uop *lut;         /* a table INDEX: the OP_LUT16 its LOAD is (wide when lut_wide) */
  int lut_wide, lut_par;
} vinfo;

/* Does an address's index math read memory or reduce (then it is not pure
 * index arithmetic to evaluate once per lane)? */
static bool reads_data(uop *u) {
  uop_list l = uop_toposort(u);
  bool r = false;
  for (int i = 0; i < l.n && !r; i++) r = l.v[i]->op == OP_LOAD || l.v[i]->op == OP_REDUCE;
  free(l.v);
  return r;
}

/* The k scalar INDEX nodes of an address that does not step by one element
 * per lane (a gather or scatter): lane l is the scalar INDEX with the lane
 * range set to l. NULL when its index math reads memory. */
static uop **lane_indices(uop *index, uop *lane_range, int k) {
  for (int j = 1; j < index->nsrc; j++) if (reads_data(index->src[j])) return NULL;
  uop **g = tg_xmalloc(sizeof(uop *) * (size_t)k);
  for (int l = 0; l < k; l++) {
    ptrmap m = { 0 };
    pm_put(&m, lane_range, uop_const_int(DT_INDEX, l));
    g[l] = uop_simplify(graph_substitute(index, &m));
    pm_free(&m);
  }
  return g;
}

/* The k lanes of a wide value (a shuffle). */
static uop *narrow(vinfo *x, dtype_t d, int k) {
  if (!x->node) x->node = uop1(OP_GEP, dt_vec(d, k), x->wnode, arg_int(x->par));
  return x->node;
}

static bool vec_alu_ok(const uop *u);

/* A cast of narrow integers to int32 (narrowed through int16 lanes when it
 * feeds a multiply). */
static bool widens_for_mul(const uop *u) {
  return u->op == OP_CAST && !dt_is_float(u->dtype) && !dt_is_float(u->src[0]->dtype) && u->src[0]->dtype.scalar != TG_BOOL &&
         dt_itemsize(u->dtype) == 4 && (dt_itemsize(u->src[0]->dtype) == 1 || u->src[0]->dtype.scalar == TG_I16);
}

/* Can u work on the wide vectors of its sources (every lane-varying source
 * wide with the same stride and parity, integers of at most 2 bytes)? */
static bool stays_wide(const uop *u, vinfo **s, const ptrmap *mul_src) {
  int ws = 0, wp = -1;
  for (int j = 0; j < u->nsrc; j++) {
    if (!s[j]->vec) continue;
    if (!s[j]->wide || (ws && (s[j]->wide != ws || s[j]->par != wp))) return false;
    ws = s[j]->wide, wp = s[j]->par;
  }
  if (u->op == OP_LOAD) return ws != 0;
  return ws && uop_is_alu(u->op) && vec_alu_ok(u) && !uop_is_comparison(u->op) && u->op != OP_WHERE && !dt_is_float(u->dtype) &&
         u->dtype.scalar != TG_BOOL && dt_itemsize(u->dtype) <= 4 && !(widens_for_mul(u) && pm_get(mul_src, u));
}

static bool small_float(dtype_t d) {
  return d.scalar == TG_F16 || d.scalar == TG_BF16 || d.scalar == TG_FP8E4M3 || d.scalar == TG_FP8E5M2;
}

static bool vec_alu_ok(const uop *u) {
  switch (u->op) {
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_FDIV: case OP_MAX: case OP_NEG: case OP_RECIPROCAL:
  case OP_CMPLT: case OP_CMPNE: case OP_CMPEQ: case OP_WHERE: case OP_CAST:
    return true;
  case OP_TRUNC:  /* float32 lanes: through int32 where |x| < 2^23 (tg_trunc_vK; round-half-even's steps) */
  case OP_SQRT:   /* float32 lanes: vsqrtps (the renderer's tg_sqrt_vK) */
  case OP_EXP2:   /* float32 lanes: a polynomial in vector arithmetic (tg_exp2_vK) */
    return u->dtype.scalar == TG_F32;
  case OP_AND: case OP_OR: case OP_XOR:   /* integer lanes (unpacking quantized weights), or masks (a causal mask's <=) */
    return !dt_is_float(u->dtype);
  case OP_SHL: case OP_SHR:
    return !dt_is_float(u->dtype) && u->dtype.scalar != TG_BOOL;
  case OP_BITCAST:   /* between integer lanes of one size (uint8 bytes read as int8) */
    return !dt_is_float(u->dtype) && !dt_is_float(u->src[0]->dtype) && u->dtype.scalar != TG_BOOL &&
           u->src[0]->dtype.scalar != TG_BOOL && dt_itemsize(u->dtype) == dt_itemsize(u->src[0]->dtype);
  default: return false;
  }
}

/* and, or, xor of comparison masks (lanes of all ones or zeros) */
static bool is_mask_logic(const uop *u) {
  return (u->op == OP_AND || u->op == OP_OR || u->op == OP_XOR) && u->dtype.scalar == TG_BOOL;
}

static bool int_affine_dtype(dtype_t d) {
  return d.count == 1 && !dt_is_float(d) && d.scalar != TG_BOOL;
}

/* A number every value of u is a multiple of (1 when unknown). */
static int64_t known_divisor(const uop *u) {
  switch (u->op) {
  case OP_CONST: { int64_t v = u->arg.i < 0 ? -u->arg.i : u->arg.i; return v ? v : (int64_t)1 << 40; }
  case OP_MUL:
    if (u->src[1]->op == OP_CONST) return known_divisor(u->src[0]) * known_divisor(u->src[1]);
    if (u->src[0]->op == OP_CONST) return known_divisor(u->src[0]) * known_divisor(u->src[1]);
    return 1;
  case OP_ADD: case OP_SUB: {
    int64_t a = known_divisor(u->src[0]), b = known_divisor(u->src[1]);
    while (b) { int64_t t = a % b; a = b; b = t; }
    return a;
  }
  default: return 1;
  }
}

/* The vector of lane values base + stride*lane (an iota), for an affine
 * integer used as data. */
static uop *materialize(vinfo *x, dtype_t d, int k) {
  if (!x->node) x->node = uop1(OP_VECTORIZE, dt_vec(d, k), uop_cast(uop_simplify(x->base), d), arg_int(x->stride));
  return x->node;
}

/* Lane-affine integer arithmetic: me = base + stride*lane. false when u is
 * not affine in its sources. */
static bool affine_alu(uop *u, vinfo *me, vinfo **s, int k) {
  vinfo *a = s[0], *b = u->nsrc > 1 ? s[1] : NULL;
  if (!uop_is_alu(u->op) || !a->affine || (b && !b->affine) || u->nsrc > 2) return false;
  dtype_t d = u->dtype;
  if (u->op == OP_ADD) { me->base = uop_alu(OP_ADD, a->base, b->base); me->stride = a->stride + b->stride; }
  else if (u->op == OP_SUB) { me->base = uop_alu(OP_SUB, a->base, b->base); me->stride = a->stride - b->stride; }
  else if (u->op == OP_MUL && !b->vec && b->base->op == OP_CONST) { me->base = uop_alu(OP_MUL, a->base, b->base); me->stride = a->stride * b->base->arg.i; }
  else if (u->op == OP_MUL && !a->vec && a->base->op == OP_CONST) { me->base = uop_alu(OP_MUL, a->base, b->base); me->stride = b->stride * a->base->arg.i; }
  else if (u->op == OP_CAST && int_affine_dtype(u->src[0]->dtype) && dt_itemsize(d) >= 4) { me->base = uop_cast(a->base, d); me->stride = a->stride; }
  else if ((u->op == OP_MOD || u->op == OP_IDIV) && !b->vec && b->base->op == OP_CONST && b->base->arg.i > 0 && a->stride >= 0) {
    /* base + stride*lane stays inside one period of c for every lane: the
     * MOD steps like the base, the IDIV is the same for every lane. Known
     * when base % c leaves room for the lanes (by its range, or because
     * base is a multiple of d with stride*(k-1) < d) */
    int64_t c = b->base->arg.i;
    uop *base = uop_simplify(a->base), *rem = uop_simplify(uop_alu(OP_MOD, base, b->base));
    int64_t dv = known_divisor(base), g = c;
    for (int64_t x = dv; x; ) { int64_t t = g % x; g = x; x = t; }
    bool room = (uop_vmin(rem) >= 0 && uop_vmax(rem) + a->stride * (k - 1) < c) || a->stride * (k - 1) < g;
    if (uop_vmin(base) < 0 || !room) return false;
    if (u->op == OP_MOD) { me->base = rem; me->stride = a->stride; }
    else { me->base = uop_simplify(uop_alu(OP_IDIV, base, b->base)); me->stride = 0; }
  }
  else return false;
  me->base = uop_simplify(me->base);
  me->affine = true;
  if (me->stride == 0) { me->vec = false; me->node = uop_cast(me->base, d); }   /* the same for every lane */
  return true;
}

/* ---- byte dot products: an int32 sum of 4 byte products per lane, byte
 * p of lane l being byte 4l + p of one wide vector (a load with stride 4),
 * times byte p of 4 bytes that are the same for every lane (or of a second
 * wide vector). That is one vpdpbusd (4 unsigned bytes times 4 signed
 * bytes, added into an int32 lane), rendered as OP_DOT4: src 0 the int32
 * accumulator (a CONST 0 when none), src 1 the unsigned bytes, src 2 the
 * signed ones, each a vector of 4k bytes or an int32 holding 4 bytes for
 * every lane. */

/* u's source when it is a byte cast to int32 for a multiply, else NULL. */
static uop *byte_of_cast(const uop *u) {
  if (u->op != OP_CAST || u->dtype.scalar != TG_I32 || u->dtype.count != 1) return NULL;
  int s = u->src[0]->dtype.scalar;
  return (s == TG_U8 || s == TG_I8) && u->src[0]->dtype.count == 1 ? u->src[0] : NULL;
}

/* An index as base + a constant (peeling ADDs of constants). */
static uop *split_const(uop *ix, int64_t *off) {
  *off = 0;
  while (ix->op == OP_ADD && (ix->src[1]->op == OP_CONST || ix->src[0]->op == OP_CONST)) {
    int c = ix->src[1]->op == OP_CONST ? 1 : 0;
    *off += ix->src[c]->arg.i;
    ix = ix->src[1 - c];
  }
  if (ix->op == OP_CONST) { *off += ix->arg.i; return NULL; }
  return ix;
}

/* b[0..3] as one 4-byte load when they are loads of 4 consecutive bytes of
 * one buffer (x's quantized values: clang does not merge the byte loads,
 * shifts and ors of pack_bytes, which cost a prefill's int8 matmul twice
 * its vpdpbusd), else NULL. */
static uop *load_4_bytes(uop *const *b) {
  for (int p = 0; p < 4; p++)
    if (b[p]->op != OP_LOAD || b[p]->nsrc != 1 || b[p]->src[0]->op != OP_INDEX || b[p]->src[0]->nsrc != 2 || b[p]->dtype.scalar != b[0]->dtype.scalar) return NULL;
  uop *ix0 = b[0]->src[0];
  int64_t off0, off;
  uop *base0 = split_const(ix0->src[1], &off0);
  for (int p = 1; p < 4; p++) {
    uop *ix = b[p]->src[0];
    if (ix->src[0] != ix0->src[0] || split_const(ix->src[1], &off) != base0 || off != off0 + p) return NULL;
  }
  dtype_t v4 = dt_vec(b[0]->dtype, 4);
  uop *index = uop_new(OP_INDEX, dt_vec(ix0->dtype, 4), (uop *[]){ ix0->src[0], ix0->src[1] }, 2, ix0->arg);
  return uop1(OP_BITCAST, dt_scalar(TG_I32), uop1(OP_LOAD, v4, index, b[0]->arg), arg_none());
}

/* The 4 bytes b[0..3] (scalars) as one int32, byte p at bits 8p. */
static uop *pack_bytes(uop *const *b) {
  uop *whole = load_4_bytes(b);
  if (whole) return whole;
  uop *r = NULL;
  for (int p = 0; p < 4; p++) {
    uop *x = b[p]->dtype.scalar == TG_I8 ? uop1(OP_BITCAST, dt_scalar(TG_U8), b[p], arg_none()) : b[p];
    uop *v = uop_cast(x, dt_scalar(TG_I32));
    if (p) v = uop_alu(OP_SHL, v, uop_const_int(dt_scalar(TG_I32), 8 * p));
    r = r ? uop_alu(OP_OR, r, v) : v;
  }
  return r;
}

static bool is_dot4(const uop *u) { return u && u->op == OP_DOT4; }

/* ---- table lookups: a 1-byte LOAD whose index is lane-varying data known
 * to lie in 0..15 (a take from a 16-entry table, IQ4's levels) is one byte
 * shuffle, OP_LUT16: src 0 the table's scalar INDEX at 0 (its address),
 * src 1 the indices as bytes (k lanes, or a wide vector of them: then the
 * lookup stays wide), arg the largest index (entries past it are never
 * read). Sets x->lut; false when the INDEX u is not such a lookup. */
static bool match_lut16(uop *u, vinfo *x, ptrmap *info) {
  if (u->nsrc != 2 || dt_itemsize(dt_base(u->dtype)) != 1 || dt_is_float(dt_base(u->dtype)) || u->dtype.scalar == TG_BOOL) return false;
  int64_t lo = uop_vmin(u->src[1]), hi = uop_vmax(u->src[1]);
  if (lo < 0 || hi > 15) return false;
  /* through integer casts (value-preserving: the index is at least 0) to the bytes */
  uop *r = u->src[1];
  while (r->op == OP_CAST && !dt_is_float(r->src[0]->dtype) && r->src[0]->dtype.scalar != TG_BOOL && dt_itemsize(r->src[0]->dtype) <= dt_itemsize(r->dtype))
    r = r->src[0];
  vinfo *ri = pm_get(info, r);
  if (!ri || !ri->vec || dt_itemsize(r->dtype) != 1 || dt_is_float(r->dtype) || r->dtype.scalar == TG_BOOL) return false;
  uop *idx = ri->wide ? ri->wnode : ri->node;
  if (!idx || idx->dtype.count < 2) return false;
  uop *tab = uop_new(OP_INDEX, u->dtype, (uop *[]){ ((vinfo *)pm_get(info, u->src[0]))->node, uop_const_int(DT_INDEX, 0) }, 2, u->arg);
  x->lut = uop_new(OP_LUT16, dt_vec(dt_base(u->dtype), idx->dtype.count), (uop *[]){ tab, idx }, 2, arg_int(hi));
  x->lut_wide = ri->wide, x->lut_par = ri->par;
  return true;
}

/* u (an int32 ADD that varies across lanes) as an OP_DOT4, or NULL. */
static uop *match_dot4(uop *u, ptrmap *info, int k) {
  /* (an ADD of a DOT4 and lanes becomes one DOT4 in vector_rules) */
  /* the leaves of the ADD tree: exactly 4 products */
  uop *stack[8] = { u }, *prods[4];
  int ns = 1, np = 0;
  while (ns) {
    uop *x = stack[--ns];
    vinfo *xi = pm_get(info, x);
    if (x->op == OP_ADD && x->dtype.scalar == TG_I32 && !is_dot4(xi->node) && ns + 2 <= 8) { stack[ns++] = x->src[0]; stack[ns++] = x->src[1]; continue; }
    if (x->op != OP_MUL || np == 4) return NULL;
    prods[np++] = x;
  }
  if (np != 4) return NULL;
  uop *wide = NULL, *other_wide = NULL, *bytes[4] = { 0 };
  int wide_dt = -1, other_dt = -1;
  unsigned seen = 0;
  for (int i = 0; i < 4; i++) {
    uop *a = byte_of_cast(prods[i]->src[0]), *b = byte_of_cast(prods[i]->src[1]);
    if (!a || !b) return NULL;
    vinfo *ai = pm_get(info, a), *bi = pm_get(info, b);
    if (!ai->wide) { uop *t = a; a = b; b = t; vinfo *ti = ai; ai = bi; bi = ti; }
    if (ai->wide != 4 || (wide && ai->wnode != wide) || (seen >> ai->par & 1)) return NULL;
    wide = ai->wnode, wide_dt = a->dtype.scalar, seen |= 1u << ai->par;
    if (other_dt >= 0 && b->dtype.scalar != other_dt) return NULL;
    other_dt = b->dtype.scalar;
    if (bi->vec) {   /* a second wide vector, byte for byte */
      if (bi->wide != 4 || bi->par != ai->par || (other_wide && bi->wnode != other_wide)) return NULL;
      other_wide = bi->wnode;
    } else if (other_wide || !bi->node) return NULL;
    else bytes[ai->par] = bi->node;
  }
  if (wide_dt == other_dt) return NULL;   /* vpdpbusd multiplies unsigned by signed bytes */
  uop *other = other_wide ? other_wide : pack_bytes(bytes);
  uop *unsig = wide_dt == TG_U8 ? wide : other, *sig = wide_dt == TG_U8 ? other : wide;
  return uop_new(OP_DOT4, dt_vec(dt_scalar(TG_I32), k), (uop *[]){ uop_const_int(dt_scalar(TG_I32), 0), unsig, sig }, 3, arg_none());
}

/* ---- clean-ups of the vector graph, as rules */

/* acc is a vector of the ADD's lanes */
static bool acc_is_lanes(void *ctx, const rw_match *m) {
  (void)ctx;
  return dt_eq(rw_get(m, "acc")->dtype, m->root->dtype);
}

/* a vector of 4-byte lanes */
static bool lanes_of_4_bytes(void *ctx, const rw_match *m) {
  (void)ctx;
  return m->root->dtype.count > 1 && dt_itemsize(dt_scalar(m->root->dtype.scalar)) == 4;
}

/* mask lanes to numbers: a select of 1 or 0 (the renderers have no vector
 * cast from a mask) */
static uop *select_one_zero(void *ctx, const rw_match *m) {
  (void)ctx;
  dtype_t d = m->root->dtype, s = dt_scalar(d.scalar);
  return uop3(OP_WHERE, d, rw_get(m, "mask"), uop_const(s, 1), uop_const(s, 0), arg_none());
}

static const tg_rule vector_rules[] = {
  /* chains of dot products: the other side of the ADD is the accumulator */
  { .pattern = "(ADD (DOT4 0 a b) acc)", .guard = acc_is_lanes, .replace = "(DOT4 acc a b)", .name = "dot4 + acc -> dot4 into acc" },
  /* a max-pool's gradient */
  { .pattern = "(CAST mask.bool)", .guard = lanes_of_4_bytes, .fn = select_one_zero, .name = "cast(mask) -> where(mask, 1, 0)" },
};

static uop *vector_cleanups(uop *v) {
  static tg_matcher *m;
  return graph_rewrite(v, matcher_once(&m, vector_rules, RW_NRULES(vector_rules), "vectorize"), NULL);
}

uop *kernel_vectorize(uop *ast, uop *lane_range, bool gather) {
  int k = (int)uop_const_value(lane_range->src[0]);
  uop_list l = uop_toposort(ast);
  ptrmap info = { 0 }, wide_seen = { 0 };   /* wide index -> bit mask of the parities loaded */
  ptrmap mul_src = { 0 };                    /* operands of integer multiplies */
  for (int i = 0; i < l.n; i++)
    if (l.v[i]->op == OP_MUL && !dt_is_float(l.v[i]->dtype))
      for (int j = 0; j < 2; j++) pm_put(&mul_src, l.v[i]->src[j], (void *)1);
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
      me->base = me->node; me->stride = 0; me->affine = int_affine_dtype(u->dtype);
      continue;
    }
    me->vec = true;
    if (u->op == OP_ADD && u->dtype.scalar == TG_I32 && (me->node = match_dot4(u, &info, k))) {
      if (s != s_stack) free(s);
      if (i == l.n - 1) result = me->node;
      continue;
    }
    if (stays_wide(u, s, &mul_src)) {
      uop *src[3];
      for (int j = 0; j < u->nsrc && j < 3; j++) src[j] = s[j]->wide ? s[j]->wnode : s[j]->node;
      for (int j = 0; j < u->nsrc; j++) if (s[j]->vec) me->wide = s[j]->wide, me->par = s[j]->par;
      me->wnode = u->nsrc > 3 ? NULL : uop_new(u->op, dt_vec(u->dtype, me->wide * k), src, u->nsrc, u->arg);
      if (s != s_stack) free(s);
      if (!me->wnode) { fail = true; break; }
      continue;
    }
    if (s[0]->wide && widens_for_mul(u)) {
      /* to int32 by way of int16 lanes, so the shuffle picks int16 lanes
       * (the form clang turns into vpmaddwd) */
      uop *w16 = u->src[0]->dtype.scalar == TG_I16 ? s[0]->wnode : uop1(OP_CAST, dt_vec(dt_scalar(TG_I16), s[0]->wide * k), s[0]->wnode, u->arg);
      uop *n16 = uop1(OP_GEP, dt_vec(dt_scalar(TG_I16), k), w16, arg_int(s[0]->par));
      me->node = uop1(OP_CAST, dt_vec(u->dtype, k), n16, u->arg);
      if (s != s_stack) free(s);
      continue;
    }
    /* int32 multiply operands known to fit in int16: shuffled as int16 too */
    for (int j = 0; j < u->nsrc && u->op == OP_MUL; j++)
      if (s[j]->wide && !s[j]->node && u->src[j]->dtype.scalar == TG_I32 && uop_vmin(u->src[j]) >= -32768 && uop_vmax(u->src[j]) <= 32767) {
        uop *w16 = uop1(OP_CAST, dt_vec(dt_scalar(TG_I16), s[j]->wide * k), s[j]->wnode, arg_none());
        s[j]->node = uop1(OP_CAST, dt_vec(u->src[j]->dtype, k), uop1(OP_GEP, dt_vec(dt_scalar(TG_I16), k), w16, arg_int(s[j]->par)), arg_none());
      }
    for (int j = 0; j < u->nsrc && !fail; j++)
      if (s[j]->wide) { if (dt_is_ptr(u->src[j]->dtype)) fail = true; else narrow(s[j], u->src[j]->dtype, k); }
    if (fail) { if (s != s_stack) free(s); break; }
    if (int_affine_dtype(u->dtype) && affine_alu(u, me, s, k)) { if (s != s_stack) free(s); continue; }
    /* lane-varying index math that is not affine: no vector value (a use
     * as data fails below); an INDEX over it addresses lane by lane */
    if (dt_eq(u->dtype, DT_INDEX)) { if (s != s_stack) free(s); continue; }
    /* affine integers used as data become vectors of their lane values */
    for (int j = 0; j < u->nsrc; j++)
      if (s[j]->vec && s[j]->affine && !s[j]->node && u->op != OP_INDEX) materialize(s[j], u->src[j]->dtype, k);
    switch (u->op) {
    case OP_INDEX: {
      vinfo *ix = s[1];
      /* bools are one byte in memory but comparison masks in registers */
      if (u->dtype.scalar == TG_BOOL) { fail = true; break; }
      if (ix->affine && u->nsrc == 2 && (ix->stride == 2 || ix->stride == 4)) {
        /* lane l reads base + st*l: one load of st*k elements from the
         * multiple of st below base (known from the index math), a shuffle
         * picks the lanes. Reading past the last lane is safe only when the
         * top parity is loaded too (checked at the end) */
        int st = (int)ix->stride, p = 0;
        uop *b0 = uop_simplify(ix->base), *b = NULL;
        for (; p < st && !b; p++) {
          uop *c = uop_simplify(uop_alu(OP_SUB, b0, uop_const_int(DT_INDEX, p)));
          if (known_divisor(c) % st == 0 && uop_vmin(c) >= 0) b = c;
        }
        if (!b) { fail = true; break; }
        me->wide = st, me->par = p - 1;
        me->wnode = uop_new(OP_INDEX, dt_vec(u->dtype, st * k), (uop *[]){ s[0]->node, b }, 2, u->arg);
        uintptr_t *seen = (uintptr_t *)pm_get(&wide_seen, me->wnode);
        pm_put(&wide_seen, me->wnode, (void *)(((uintptr_t)seen) | (uintptr_t)1 << me->par));
        break;
      }
      if (!ix->affine && match_lut16(u, me, &info)) break;
      if (!ix->affine || (u->nsrc > 2 && s[2]->vec) || ix->stride != 1) {
        /* a gather or scatter of 4-byte values: one address per lane */
        if (!gather || dt_itemsize(dt_base(u->dtype)) != 4 || !(me->gidx = lane_indices(u, lane_range, k))) fail = true;
        break;
      }
      uop *src[3] = { s[0]->node, uop_simplify(ix->base), u->nsrc > 2 ? s[2]->node : NULL };
      me->node = uop_new(OP_INDEX, dt_vec(u->dtype, k), src, u->nsrc, u->arg);
      break;
    }
    case OP_LOAD:
      if (s[0]->lut) {   /* a table lookup: the shuffle (wide like its indices) */
        if (s[0]->lut_wide) me->wide = s[0]->lut_wide, me->par = s[0]->lut_par, me->wnode = s[0]->lut;
        else me->node = s[0]->lut;
        break;
      }
      if (s[0]->gidx) {   /* gathered: a scalar load per lane, put together */
        uop *lanes[16];
        for (int l = 0; l < k; l++) lanes[l] = uop1(OP_LOAD, u->dtype, s[0]->gidx[l], u->arg);
        me->node = uop_new(OP_VECTORIZE, dt_vec(u->dtype, k), lanes, k, arg_none());
        break;
      }
      me->node = uop1(OP_LOAD, dt_vec(u->dtype, k), s[0]->node, u->arg);
      break;
    case OP_STORE:
      if (!s[0]->vec) { fail = true; break; }   /* every lane writing one address */
      if (!s[1]->node) { fail = true; break; }
      if (s[0]->gidx) {   /* scattered: a scalar store of each lane (spliced into the SINK) */
        me->stores = tg_xmalloc(sizeof(uop *) * (size_t)k);
        for (int l = 0; l < k; l++) {
          uop *v = s[1]->vec ? uop1(OP_GEP, dt_scalar(u->src[1]->dtype.scalar), s[1]->node, arg_int(l)) : s[1]->node;
          me->stores[l] = uop2(OP_STORE, DT_VOID, s[0]->gidx[l], v, u->arg);
        }
        break;
      }
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
      uop **src = tg_xmalloc(sizeof(uop *) * (size_t)(u->nsrc * k + 1));
      int ns = 0;
      for (int j = 0; j < u->nsrc; j++)
        if (s[j]->stores) for (int l = 0; l < k; l++) src[ns++] = s[j]->stores[l];
        else src[ns++] = s[j]->node;
      me->node = uop_new(OP_SINK, DT_VOID, src, ns, u->arg);
      free(src);
      me->vec = false;
      break;
    }
    default: {
      if (!uop_is_alu(u->op) || !vec_alu_ok(u) || small_float(u->dtype) || (u->dtype.scalar == TG_BOOL && !uop_is_comparison(u->op) && !is_mask_logic(u))) { fail = true; break; }
      uop *src[3];
      /* float16 lanes widen to float32 (vcvtph2ps); other small floats stay scalar */
      bool widen16 = u->op == OP_CAST && (u->src[0]->dtype.scalar == TG_F16 || u->src[0]->dtype.scalar == TG_BF16) && u->dtype.scalar == TG_F32 &&
                     (k == 8 || k == 16);
      for (int j = 0; j < u->nsrc; j++) {
        if (!s[j]->node || (small_float(u->src[j]->dtype) && !widen16)) { fail = true; break; }
        src[j] = s[j]->node;
      }
      if (fail) break;
      /* masks are as wide as 4-byte lanes: compare and select 4-byte values only */
      if (uop_is_comparison(u->op) && dt_itemsize(u->src[0]->dtype) != 4) { fail = true; break; }
      if (u->op == OP_WHERE && (s[0]->vec && dt_itemsize(u->dtype) != 4)) { fail = true; break; }
      /* a mask to 4-byte numbers stays (a select in vector_rules) */
      bool mask_to_4_bytes = u->op == OP_CAST && u->src[0]->dtype.scalar == TG_BOOL && dt_itemsize(u->dtype) == 4;
      if (u->op == OP_CAST && (u->src[0]->dtype.scalar == TG_BOOL || u->dtype.scalar == TG_BOOL) && !mask_to_4_bytes) { fail = true; break; }
      me->node = uop_new(u->op, dt_vec(u->dtype, k), src, u->nsrc, u->arg);
    }
    }
    if (s != s_stack) free(s);
    if (i == l.n - 1) result = me->node;
  }
  if (fail && setting_int(SET_TG_DEBUG_VEC)) {
    /* the last node given info is where it failed */
    uop *bad = NULL;
    for (int i = 0; i < l.n; i++) if (pm_get(&info, l.v[i])) bad = l.v[i];
    fprintf(stderr, "vectorize: gave up at %s %s:", uop_op_name(bad->op), tg_dtype_name((tg_dtype)bad->dtype.scalar));
    for (int j = 0; j < bad->nsrc; j++) {
      vinfo *x = pm_get(&info, bad->src[j]);
      fprintf(stderr, " [%s %s vec=%d affine=%d stride=%lld]", uop_op_name(bad->src[j]->op), tg_dtype_name((tg_dtype)bad->src[j]->dtype.scalar), x ? x->vec : -1, x ? x->affine : -1, x ? (long long)x->stride : 0LL);
    }
    fprintf(stderr, "\n");
  }
  if (!fail && !result) result = vi[l.n - 1].node;
  for (size_t i = 0; i < wide_seen.cap && !fail; i++)
    if (wide_seen.e[i].key) {
      uop *w = wide_seen.e[i].key;
      int st = w->dtype.count / k;
      fail = !((uintptr_t)wide_seen.e[i].val >> (st - 1) & 1);
    }
  for (int i = 0; i < l.n; i++) { free(vi[i].gidx); free(vi[i].stores); }
  free(vi);
  free(l.v);
  pm_free(&info);
  pm_free(&wide_seen);
  pm_free(&mul_src);
  return fail ? NULL : vector_cleanups(result);
}
