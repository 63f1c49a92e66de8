/* cstyle.c: the C-style core of every renderer. Walks the linearized
 * program and writes one statement per node: loops for RANGEs, accumulators
 * for REDUCEs, loads and stores through the kernel's buffers, group and
 * local ids for SPECIALs, and a value per ALU node, its expression by rules
 * (code_for_op.c). How each piece is spelled comes from the dialect
 * (cstyle.h); nothing here names one. */
#include <math.h>
#include "viz/viz.h"
#include "renderer/cstyle.h"
#include "codegen/codegen.h"
#include "uop/kernel_ir.h"
#include "util/settings.h"

char *rfmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0) s = tg_xstrdup("");
  va_end(ap);
  return s;
}

static void indent(rctx *c) { for (int i = 0; i < c->depth; i++) sb_puts(&c->body, "  "); }
const char *rname(rctx *c, uop *u) { const char *s = pm_get(&c->names, u); return s ? s : "?"; }
static void set_name(rctx *c, uop *u, char *s) { char *old = pm_get(&c->names, u); free(old); pm_put(&c->names, u, s); }

const char *rctype(rctx *c, dtype_t d) {
  if (d.count > 1 && !dt_is_ptr(d)) return c->d->vector_type ? c->d->vector_type(c, d) : "void";
  const char *t = d.scalar < TG_NSCALAR ? c->d->scalar_type[d.scalar] : NULL;
  return t ? t : "void";
}

/* the mask type of comparisons between vectors of d */
dtype_t rmask_of(dtype_t d) {
  int sz = dt_itemsize(d);
  return dt_vec(dt_scalar(sz == 8 ? TG_I64 : sz == 2 ? TG_I16 : sz == 1 ? TG_I8 : TG_I32), d.count);
}

const char *rsmall_tag(dtype_t d) {
  switch (d.scalar) { case TG_F16: return "f16"; case TG_BF16: return "bf16"; case TG_FP8E4M3: return "e4m3"; case TG_FP8E5M2: return "e5m2"; default: return NULL; }
}

/* A float written x - 0 rather than 0 + x: subtracting +0 is the identity
 * for every float (-0 - 0 = -0) and compilers drop it, while adding +0
 * turns -0 into +0, so "0 + x" costs a real add before every broadcast (and
 * keeps a load from folding into an FMA). For integers 0 + x is the
 * identity already. */
char *rsplat(dtype_t d, const char *vt, const char *x) {
  return dt_is_float(d) ? rfmt("(%s-(%s){0})", x, vt) : rfmt("((%s){0}+%s)", vt, x);
}

static char *render_const(rctx *c, uop *u) {
  dtype_t d = u->dtype;
  double v = uop_const_value(u);
  const char *small = rsmall_tag(d);
  if (small) {
    c->need_fpconv = true;
    if (isnan(v)) return rfmt("tg_cvt_f64_%s(NAN)", small);
    if (isinf(v)) return rfmt("tg_cvt_f64_%s(%sINFINITY)", small, v < 0 ? "-" : "");
    return rfmt("tg_cvt_f64_%s(%a)", small, v);
  }
  const render_dialect *D = c->d;
  switch (d.scalar) {
  case TG_BOOL: return rfmt("%d", u->arg.i ? 1 : 0);
  case TG_F32: case TG_F64: {
    const char *suf = d.scalar == TG_F32 ? "f" : "";
    if (isnan(v)) return rfmt("(%s)NAN", rctype(c, d));
    if (isinf(v)) return rfmt("(%s)%sINFINITY", rctype(c, d), v < 0 ? "-" : "");
    return rfmt(signbit(v) ? "(%a%s)" : "%a%s", v, suf);
  }
  case TG_I64:
    if (u->arg.i == INT64_MIN) return rfmt("(-9223372036854775807%s-1)", D->i64_suffix);
    return rfmt(u->arg.i < 0 ? "(%lld%s)" : "%lld%s", (long long)u->arg.i, D->i64_suffix);
  case TG_U64: return rfmt("%llu%s", (unsigned long long)u->arg.i, D->u64_suffix);
  case TG_U32: return rfmt("%lluu", (unsigned long long)(uint32_t)u->arg.i);
  case TG_I32: return u->arg.i == INT32_MIN ? rfmt("(-2147483647-1)") : rfmt(u->arg.i < 0 ? "(%lld)" : "%lld", (long long)u->arg.i);
  default: return rfmt("((%s)%lld)", rctype(c, d), (long long)u->arg.i);
  }
}

static char *reduce_identity(rctx *c, uop *r) {
  dtype_t d = r->dtype;
  int op = (int)r->arg.i;
  bool fl = dt_is_float(d);
  if (op == OP_ADD) return tg_xstrdup(fl ? (d.scalar == TG_F32 ? "0.0f" : "0.0") : "0");
  if (op == OP_MUL) return tg_xstrdup(fl ? (d.scalar == TG_F32 ? "1.0f" : "1.0") : "1");
  /* MAX */
  if (fl) return rfmt("(%s)-INFINITY", rctype(c, dt_base(d)));
  if (d.scalar == TG_BOOL || dt_is_unsigned(d)) return tg_xstrdup("0");
  if (d.scalar == TG_I64) return rfmt("(-9223372036854775807%s-1)", c->d->i64_suffix);
  return rfmt("((%s)%.0f)", rctype(c, dt_base(d)), dt_min(d));
}

static bool has_mulacc_reduce(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++)
    found = l.v[i]->op == OP_REDUCE && l.v[i]->arg.i == OP_ADD && l.v[i]->src[0]->op == OP_MUL && dt_is_float(l.v[i]->dtype);
  free(l.v);
  return found;
}

static void render_loop(rctx *c, uop *u) {
  char *n = rfmt("ridx%d", (int)u->arg.v[0]);
  const char *i64 = c->d->scalar_type[TG_I64];
  indent(c);
  if (u->arg.v[1] == RANGE_THREAD) {
    /* this core's contiguous share of the loop */
    const char *sz = rname(c, u->src[0]);
    sb_printf(&c->body, "const %s %s_chunk = (%s + ncores - 1) / ncores, %s_end0 = (core + 1) * %s_chunk;\n", i64, n, sz, n, n);
    indent(c);
    sb_printf(&c->body, "const %s %s_end = %s_end0 < %s ? %s_end0 : %s;\n", i64, n, n, sz, n, sz);
    indent(c);
    sb_printf(&c->body, "for (%s %s = core * %s_chunk; %s < %s_end; %s++) {\n", i64, n, n, n, n, n);
  } else
    sb_printf(&c->body, "for (%s %s = 0; %s < %s; %s++) {\n", i64, n, n, rname(c, u->src[0]), n);
  set_name(c, u, n);
  c->depth++;
}

/* REDUCE(WMMA): the accumulator array goes through the dialect's helper */
static void render_wmma_update(rctx *c, uop *u) {
  uop *w = u->src[0];
  int tc = (int)w->arg.i;
  if (tc >= 0 && tc < 8) c->wmma_used[tc] = true;
  indent(c);
  sb_printf(&c->body, "tg_wmma_%s(%s", c->r->tensor_cores[tc].helper, rname(c, u));
  for (int i = 0; i < w->nsrc; i++) sb_printf(&c->body, ", %s", rname(c, w->src[i]));
  sb_puts(&c->body, c->d->wmma_scratch ? ", tg_wmma_scratch);\n" : ");\n");
}

static void render_acc_update(rctx *c, uop *u) {
  const char *acc = rname(c, u), *v = rname(c, u->src[0]);
  if (u->src[0]->op == OP_WMMA) { render_wmma_update(c, u); return; }
  indent(c);
  int op = (int)u->arg.i;
  if (op == OP_ADD) sb_printf(&c->body, "%s += %s;\n", acc, v);
  else if (op == OP_MUL) sb_printf(&c->body, "%s *= %s;\n", acc, v);
  else if (u->dtype.count > 1) {   /* vector max: lanes where v > acc or v is NaN take v */
    const char *vt = rctype(c, u->dtype), *mt = rctype(c, rmask_of(u->dtype));
    sb_printf(&c->body, "{ %s m_ = (%s > %s) | (%s != %s); %s = (%s)(((%s)%s & m_) | ((%s)%s & ~m_)); }\n", mt, v, acc, v, v, acc, vt, mt, v, mt, acc);
  }
  else if (dt_is_float(u->dtype)) sb_printf(&c->body, "%s = (%s!=%s||%s>%s)?%s:%s;\n", acc, v, v, v, acc, v, acc);
  else sb_printf(&c->body, "%s = %s>%s?%s:%s;\n", acc, v, acc, v, acc);
}

static void render_load(rctx *c, uop *u, ptrmap *prefetch_ahead) {
  uop *ix = u->src[0];
  char *n = rfmt("val%d", c->nvars++);
  intptr_t ahead = (intptr_t)pm_get(prefetch_ahead, u);
  indent(c);
  if (ahead) {
    /* into L2, not L1 (prefetcht1): a Q4_K matvec over cold weights read
     * 15-17 GB/s with it, 11-13 with prefetcht0 (one core, AMD Zen 4); the L1's
     * few miss buffers were full of prefetches the loads then waited on */
    sb_printf(&c->body, "__builtin_prefetch((const char *)&%s + %lld, 0, 2);\n", rname(c, ix), (long long)ahead);
    indent(c);
  }
  const char *t = rctype(c, u->dtype);
  if (ix->nsrc > 2 && u->dtype.count > 1) sb_printf(&c->body, "%s %s = %s ? %s : (%s){0};\n", t, n, rname(c, ix->src[2]), rname(c, ix), t);
  else if (ix->nsrc > 2) sb_printf(&c->body, "%s %s = %s ? %s : 0;\n", t, n, rname(c, ix->src[2]), rname(c, ix));
  else sb_printf(&c->body, "%s %s = %s;\n", t, n, rname(c, ix));
  set_name(c, u, n);
}

static void render_store(rctx *c, uop *u) {
  uop *ix = u->src[0];
  indent(c);
  if (ix->nsrc > 2) sb_printf(&c->body, "if (%s) ", rname(c, ix->src[2]));
  if (ix->dtype.count > 1 && u->src[1]->dtype.count == 1) {
    dtype_t vd = dt_vec(dt_base(ix->dtype), ix->dtype.count);
    char *v = rsplat(u->src[1]->dtype, rctype(c, vd), rname(c, u->src[1]));
    sb_printf(&c->body, "%s = %s;\n", rname(c, ix), v);
    free(v);
  } else sb_printf(&c->body, "%s = %s;\n", rname(c, ix), rname(c, u->src[1]));
}

/* Renders one LI_OP node; false (tg_error set) when it cannot. */
static bool render_op(rctx *c, uop *u, const kernel_args *args, const char *const *varnames, int nvarnames, ptrmap *prefetch_ahead) {
  switch (u->op) {
  case OP_CONST: set_name(c, u, render_const(c, u)); return true;
  case OP_DEFINE_VAR: {
    /* the kernel gets its variables' values sorted by name */
    int k = 0;
    for (int v = 0; v < nvarnames; v++) if (!strcmp(varnames[v], u->arg.s)) k = v;
    set_name(c, u, rfmt(c->d->var_fmt, k));
    return true;
  }
  case OP_DEFINE_GLOBAL: set_name(c, u, rfmt("data%d", (int)u->arg.i)); return true;
  case OP_DEFINE_LOCAL: set_name(c, u, rfmt("lbuf%d", (int)u->arg.v[0])); return true;   /* declared at the top */
  case OP_SPECIAL: {
    char *n = rfmt("%s%d", u->arg.v[0] ? "lidx" : "gidx", (int)u->arg.v[1]);
    char *e = c->d->special((int)u->arg.v[0], (int)u->arg.v[1]);
    indent(c);
    sb_printf(&c->body, "const %s %s = %s;\n", c->d->scalar_type[TG_I64], n, e);
    free(e);
    set_name(c, u, n);
    return true;
  }
  case OP_BARRIER: indent(c); sb_printf(&c->body, "%s\n", c->d->barrier); return true;
  case OP_INDEX:
    /* an address expression; the gate (src 2) is applied by LOAD/STORE */
    if (u->dtype.count > 1)   /* a vector of consecutive elements */
      set_name(c, u, rfmt("(*(%s*)(%s+%s))", rctype(c, dt_vec(dt_base(u->dtype), u->dtype.count)), rname(c, u->src[0]), rname(c, u->src[1])));
    else set_name(c, u, rfmt("%s[%s]", rname(c, u->src[0]), rname(c, u->src[1])));
    return true;
  case OP_LOAD: render_load(c, u, prefetch_ahead); return true;
  case OP_STORE: render_store(c, u); return true;
  case OP_SINK: case OP_NOOP: return true;
  case OP_WMMA:   /* rendered by its REDUCE's update */
    if (!c->r->n_tensor_cores || u->arg.i < 0 || u->arg.i >= c->r->n_tensor_cores) { tg_seterr("render (%s): no tensor core %lld", c->d->name, (long long)u->arg.i); return false; }
    return true;
  default: {
    char *e = render_code(c, u);
    if (!e) { tg_seterr("render (%s): cannot render %s%s", c->d->name, uop_op_name(u->op), u->dtype.count > 1 ? " on vectors" : ""); return false; }
    char *n = rfmt("alu%d", c->nvars++);
    indent(c);
    sb_printf(&c->body, "%s %s = %s;\n", rctype(c, u->dtype), n, e);
    free(e);
    set_name(c, u, n);
    return true;
  }
  }
}

/* The kernel's buffers (which it stores to) and its local arrays. */
static void collect_args(uop *ast, const lprogram *prog, kernel_args *a, strbuf *locals, rctx *c) {
  memset(a, 0, sizeof *a);
  uop_list l = uop_toposort(ast);
  for (int i = 0; i < l.n; i++) {
    uop *g = l.v[i];
    if (g->op == OP_DEFINE_GLOBAL && g->arg.i >= 256) a->too_many = true;
    if (g->op == OP_DEFINE_GLOBAL && g->arg.i < 256) {
      int k = (int)g->arg.i;
      a->bufs[k] = (kernel_buf){ k, g->dtype, a->bufs[k].stored };
      if (k + 1 > a->nbufs) a->nbufs = k + 1;
    } else if (g->op == OP_DEFINE_LOCAL) {
      sb_printf(locals, "  %s %s lbuf%d[%lld];\n", c->d->local_qual, c->d->buffer_elem[g->dtype.scalar], (int)g->arg.v[0], (long long)g->arg.v[1]);
    }
  }
  free(l.v);
  for (int i = 0; i < prog->n; i++)
    if (prog->v[i].kind == LI_OP && prog->v[i].u->op == OP_STORE) {
      uop *g = prog->v[i].u->src[0]->src[0];
      if (g->op == OP_DEFINE_GLOBAL && g->arg.i < 256) a->bufs[g->arg.i].stored = true;
    }
}

char *render_kernel(const tg_renderer *r, uop *ast, const char *name) {
  uop_pool_push();
  lprogram prog;
  if (linearize(ast, &prog) < 0) { uop_pool_pop(); return NULL; }
  rctx c = { .r = r, .d = r->dialect, .depth = 1, .tracing = (int)setting_int(SET_TRACK_REWRITES) };
  c.viz = viz_on && viz_pass_begin(render_pass_name(c.d));
  bool failed = false;
  const char *varnames[64];
  int nvarnames = kernel_var_names(ast, varnames, 64);
  ptrmap prefetch_ahead = { 0 };
  if (r->prefetch && !setting_on(SET_TG_NO_PREFETCH)) kernel_prefetch_plan(ast, &prefetch_ahead);
  kernel_args args;
  strbuf locals = { 0 };
  collect_args(ast, &prog, &args, &locals, &c);
  args.nvars = nvarnames;
  /* the launch passes at most 256 buffers (realize.c): a kernel reading more
   * is an error here, not a source that names undeclared buffers */
  if (args.too_many) failed = true, tg_seterr("kernel %s reads more than 256 buffers", name);
  c.mulacc_reduce = has_mulacc_reduce(ast);
  for (int i = 0; i < prog.n && !failed; i++) {
    linst *in = &prog.v[i];
    uop *u = in->u;
    switch (in->kind) {
    case LI_LOOP: render_loop(&c, u); break;
    case LI_ENDLOOP: c.depth--; indent(&c); sb_puts(&c.body, "}\n"); break;
    case LI_ACC_INIT: {
      char *n = rfmt("acc%d", c.nvars++);
      char *id = reduce_identity(&c, u);
      indent(&c);
      if (u->src[0]->op == OP_WMMA) {   /* an array the tensor-core helper adds into */
        sb_printf(&c.body, "%s %s[%d] = {", rctype(&c, dt_base(u->dtype)), n, u->dtype.count);
        for (int e = 0; e < u->dtype.count; e++) sb_printf(&c.body, "%s%s", e ? ", " : "", id);
        sb_puts(&c.body, "};\n");
      } else if (u->dtype.count > 1) sb_printf(&c.body, "%s %s = (%s){0} + %s;\n", rctype(&c, u->dtype), n, rctype(&c, u->dtype), id);
      else sb_printf(&c.body, "%s %s = %s;\n", rctype(&c, u->dtype), n, id);
      free(id);
      set_name(&c, u, n);
      break;
    }
    case LI_ACC_UPDATE: render_acc_update(&c, u); break;
    case LI_OP: failed = !render_op(&c, u, &args, varnames, nvarnames, &prefetch_ahead); break;
    }
  }
  strbuf src = { 0 };
  if (!failed && c.d->wmma_scratch && kernel_has_wmma(ast)) {
    /* the emulated tensor cores' scratch: one slice per warp of the group */
    int64_t threads = 1;
    uop_list sl = uop_toposort(ast);
    for (int i = 0; i < sl.n; i++)
      if (sl.v[i]->op == OP_SPECIAL && sl.v[i]->arg.v[0] == 1) threads *= (int64_t)uop_const_value(sl.v[i]->src[0]);
    free(sl.v);
    sb_printf(&locals, "  %s float tg_wmma_scratch[%lld];\n", c.d->local_qual, (long long)((threads + 31) / 32 * c.d->wmma_scratch));
  }
  if (!failed) {
    for (int i = 0; i < c.r->n_tensor_cores && i < 8; i++)   /* helpers may convert small floats */
      if (c.wmma_used[i] && c.r->tensor_cores[i].in != TG_F32) c.need_fpconv = true;
    c.d->prelude(&c, &src);
    for (int i = 0; i < c.r->n_tensor_cores && i < 8; i++)
      if (c.wmma_used[i]) {
        if (!c.d->wmma_helper) { failed = true; tg_seterr("render (%s): the dialect has no tensor-core helper", c.d->name); break; }
        c.d->wmma_helper(&c, &src, &c.r->tensor_cores[i]);
      }
  }
  if (!failed) {
    c.d->open_kernel(&c, &src, name, &args);
    if (locals.s) sb_puts(&src, locals.s);
    if (c.body.s) sb_puts(&src, c.body.s);
    sb_puts(&src, "}\n");
  }
  sb_free(&c.body);
  sb_free(&locals);
  for (size_t i = 0; i < c.names.cap; i++) if (c.names.e[i].key) free(c.names.e[i].val);
  pm_free(&c.names);
  pm_free(&prefetch_ahead);
  lprogram_free(&prog);
  uop_pool_pop();
  if (c.viz) viz_pass_end();
  if (failed) { sb_free(&src); return NULL; }
  return src.s;
}

void render_threefry(strbuf *src, const char *qual, const char *u32, const char *u64) {
  /* threefry2x32 with 20 rounds: rotations 13 15 26 6 on even rounds of
   * four, 17 29 16 24 on odd ones (no static table: GPUs have none) */
  sb_printf(src, "%s %s tg_threefry(%s x, %s key) {\n", qual, u64, u64, u64);
  sb_printf(src, "  %s x0 = (%s)x, x1 = (%s)(x >> 32);\n", u32, u32, u32);
  sb_printf(src, "  %s ks[3];\n  ks[0] = (%s)key; ks[1] = (%s)(key >> 32); ks[2] = ks[0] ^ ks[1] ^ 0x1BD11BDAu;\n", u32, u32, u32);
  sb_puts(src, "  x0 += ks[0]; x1 += ks[1];\n");
  sb_puts(src, "#define TG_TF_MIX(r) x0 += x1; x1 = (x1 << (r)) | (x1 >> (32 - (r))); x1 ^= x0;\n");
  sb_puts(src, "  for (int i = 0; i < 5; i++) {\n");
  sb_puts(src, "    if (i % 2 == 0) { TG_TF_MIX(13) TG_TF_MIX(15) TG_TF_MIX(26) TG_TF_MIX(6) }\n");
  sb_puts(src, "    else { TG_TF_MIX(17) TG_TF_MIX(29) TG_TF_MIX(16) TG_TF_MIX(24) }\n");
  sb_printf(src, "    x0 += ks[(i + 1) %% 3]; x1 += ks[(i + 2) %% 3] + (%s)(i + 1);\n", u32);
  sb_puts(src, "  }\n#undef TG_TF_MIX\n");
  sb_printf(src, "  return ((%s)x1 << 32) | x0;\n}\n", u64);
}

const tg_renderer *renderer_by_name(const char *name) {
  static const tg_renderer *const all[] = { &renderer_c, &renderer_opencl, &renderer_cuda };
  for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(all[i]->name, name)) return all[i];
  return NULL;
}

void render_gpu_params(rctx *c, strbuf *src, const kernel_args *a, const char *buf_qual, const char *restrict_kw) {
  const char *sep = "";
  for (int k = 0; k < a->nbufs; k++) {
    const kernel_buf *b = &a->bufs[k];
    if (b->index != k || !b->dtype.count) { sb_printf(src, "%s%s unsigned char* unused%d", sep, buf_qual, k); sep = ", "; continue; }
    sb_printf(src, "%s%s %s%s* %s data%d", sep, buf_qual, b->stored ? "" : "const ", c->d->buffer_elem[b->dtype.scalar], restrict_kw, k);
    sep = ", ";
  }
  for (int v = 0; v < a->nvars; v++) {
    sb_printf(src, "%sconst %s ", sep, c->d->scalar_type[TG_I64]);
    sb_printf(src, c->d->var_fmt, v);
    sep = ", ";
  }
}
