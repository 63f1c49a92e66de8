/* tensor_cores.c: the TC opt. A kernel whose one reduce is a matmul
 *
 *   out[.., m, .., n] = f(sum_k x(m, k) * y(k, n))   (x, y in f16 or bf16)
 *
 * becomes warp-wide matrix multiply-accumulates on a tensor core of the
 * renderer (renderer.h: tg_tensor_core). m, n and k are split by the
 * core's tile: m -> m_o * M + (row inside the tile), the same for n and k.
 * A new work-group range of 32 threads is the warp; each thread gathers its
 * fragments of x and y (the layout tables say which elements), one WMMA
 * node per k_o step multiplies the warp's tiles, and its accumulator's nc
 * elements are stored where the layout puts them. The result is a REDUCE
 * of vectors of nc floats over a WMMA, which the renderer spells as an
 * accumulator array updated by the dialect's helper (cstyle.c). (tinygrad:
 * OptOps.TC and the WMMA op.)
 *
 * TC comes first: the kernel may have no other opts yet. Afterwards UPCAST
 * (register tiles of several WMMAs) and LOCAL (warps per group) apply to
 * m_o and n_o as to any output axis; opts that split the reduce or pad do
 * not. */
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/symbolic.h"
#include "uop/kernel_ir.h"

#define WARP 32

static bool uses(uop *u, uop *r) {
  uop_list l = uop_toposort(u);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i] == r;
  free(l.v);
  return found;
}

static bool has_reduce(uop *u) {
  uop_list l = uop_toposort(u);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_REDUCE;
  free(l.v);
  return found;
}

static bool is_scalar_of(const uop *u, tg_dtype t) { return u->dtype.scalar == t && u->dtype.count == 1 && !dt_is_ptr(u->dtype); }

/* The two factors of the reduce's source, both of dtype `in`: the sum
 * casts either their product (tg_matmul of two f16 tensors) or each
 * factor (a matmul of f16 tensors cast to float) to the accumulator. */
static bool matmul_factors(uop *src, tg_dtype in, uop **x, uop **y) {
  if (src->op == OP_CAST && src->src[0]->op == OP_MUL) {
    uop *m = src->src[0];
    if (!is_scalar_of(m->src[0], in) || !is_scalar_of(m->src[1], in)) return false;
    *x = m->src[0], *y = m->src[1];
    return true;
  }
  if (src->op == OP_MUL && src->src[0]->op == OP_CAST && src->src[1]->op == OP_CAST) {
    uop *a = src->src[0]->src[0], *b = src->src[1]->src[0];
    if (!is_scalar_of(a, in) || !is_scalar_of(b, in)) return false;
    *x = a, *y = b;
    return true;
  }
  return false;
}

static uop *range_of(int64_t size, int id, int kind) {
  int64_t a[2] = { id, kind };
  return uop1(OP_RANGE, DT_INDEX, uop_const_int(DT_INDEX, size), arg_ints(a, 2));
}

/* base*tile + offset + lane_part + e_off */
static uop *coord(uop *outer, int tile, uop *lane_part, int e_off) {
  return uop_alu(OP_ADD, uop_alu(OP_ADD, uop_muli(outer, tile), lane_part), uop_const_int(DT_INDEX, e_off));
}

static uop *subst2(uop *u, uop *r1, uop *v1, uop *r2, uop *v2) {
  ptrmap m = { 0 };
  pm_put(&m, r1, v1);
  pm_put(&m, r2, v2);
  uop *res = graph_substitute(u, &m);
  pm_free(&m);
  return res;
}

/* What the TC opt found: the reduce, its factors, the axes, the core. */
typedef struct {
  const tg_tensor_core *tc;
  int tci;
  uop *red, *x, *y, *m, *n, *k;
} tc_match;

/* Fills mt, or returns why the kernel does not fit (no tg_error: the
 * heuristic asks every kernel). */
static const char *match_matmul(uop *ast, int sel, const tg_renderer *ren, tc_match *mt) {
  memset(mt, 0, sizeof *mt);
  uop_list l = uop_toposort(ast);
  int nred = 0;
  bool fresh = true;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op == OP_REDUCE) { mt->red = u; nred++; }
    if (u->op == OP_RANGE && range_kind(u) != RANGE_LOOP && range_kind(u) != RANGE_REDUCE) fresh = false;
  }
  free(l.v);
  uop *red = mt->red;
  if (!fresh) return "tensor cores come first (the kernel already has other opts)";
  if (nred != 1 || red->arg.i != OP_ADD || red->dtype.count != 1) return "the kernel is no matmul (it needs exactly one sum reduce)";
  for (int i = 0; i < ren->n_tensor_cores && !mt->tc; i++) {
    if (sel >= 0 && i != sel) continue;
    const tg_tensor_core *c = &ren->tensor_cores[i];
    if (red->dtype.scalar == c->acc && matmul_factors(red->src[0], c->in, &mt->x, &mt->y)) mt->tc = c, mt->tci = i;
  }
  const tg_tensor_core *tc = mt->tc;
  if (!tc) return "the reduce is not a sum of products of two operands a tensor core takes (f16 or bf16 into f32)";
  if (has_reduce(mt->x) || has_reduce(mt->y)) return "the matmul's operands contain reduces";
  /* k: a reduce range both factors walk */
  for (int i = 1; i < red->nsrc; i++) {
    uop *r = red->src[i];
    if (!range_is_symbolic(r) && range_max_size(r) % tc->k == 0 && uses(mt->x, r) && uses(mt->y, r) && (!mt->k || range_id(r) > range_id(mt->k))) mt->k = r;
  }
  /* m: an output axis only x walks; n: one only y walks (swapping the
   * factors when it is the other way round) */
  uop *axes[128];
  int fr;
  kernel_axes(ast, axes, 128, &fr);
  for (int pass = 0; pass < 2 && !(mt->m && mt->n); pass++) {
    if (pass) { uop *t = mt->x; mt->x = mt->y; mt->y = t; }
    mt->m = mt->n = NULL;
    for (int i = 0; i < fr; i++) {
      uop *r = axes[i];
      if (range_kind(r) != RANGE_LOOP || range_is_symbolic(r)) continue;
      bool ux = uses(mt->x, r), uy = uses(mt->y, r);
      if (ux && !uy && range_max_size(r) % tc->m == 0) mt->m = r;
      if (uy && !ux && range_max_size(r) % tc->n == 0) mt->n = r;
    }
  }
  if (!mt->k || !mt->m || !mt->n) return "no axes for the tensor core's tile (the matmul's M, N and K must be multiples of its m, n and k)";
  return NULL;
}

bool kernel_tc_fits(uop *ast, const tg_renderer *ren) {
  tc_match mt;
  return ren->n_tensor_cores && !match_matmul(ast, -1, ren, &mt);
}

int kernel_apply_tc(uop **ast, kopt o, const tg_renderer *ren) {
  if (!ren->n_tensor_cores) return tg_seterr("opt TC:%d:%d: needs a GPU with tensor cores; %s kernels have none", o.axis, o.arg, ren->name);
  if (o.axis < -1 || o.axis >= ren->n_tensor_cores)
    return tg_seterr("opt TC:%d:%d: tensor core %d out of range (the device has %d; -1 picks one)", o.axis, o.arg, o.axis, ren->n_tensor_cores);
  if (o.arg != 0) return tg_seterr("opt TC:%d:%d: the amount must be 0", o.axis, o.arg);
  tc_match mt;
  const char *why = match_matmul(*ast, o.axis, ren, &mt);
  if (why) return tg_seterr("opt TC:%d:%d: %s", o.axis, o.arg, why);
  const tg_tensor_core *tc = mt.tc;
  uop *red = mt.red, *x = mt.x, *y = mt.y, *m = mt.m, *n = mt.n, *k = mt.k;
  int tci = mt.tci;
  /* the warp and the tiles */
  uop *lane = range_of(WARP, kernel_next_range_id(*ast), RANGE_LOCAL);
  uop *mo = range_of(range_max_size(m) / tc->m, range_id(m), RANGE_LOOP);
  uop *no = range_of(range_max_size(n) / tc->n, range_id(n), RANGE_LOOP);
  uop *ko = range_of(range_max_size(k) / tc->k, range_id(k), RANGE_REDUCE);
  uop *g = uop_alu(OP_IDIV, lane, uop_const_int(DT_INDEX, 4));
  uop *t2 = uop_muli(uop_alu(OP_MOD, lane, uop_const_int(DT_INDEX, 4)), 2);
  uop *src[17];
  int ns = 0;
  for (int e = 0; e < tc->na; e++)
    src[ns++] = uop_simplify(subst2(x, m, coord(mo, tc->m, g, tc->a_row[e]), k, coord(ko, tc->k, t2, tc->a_col[e])));
  for (int e = 0; e < tc->nb; e++)
    src[ns++] = uop_simplify(subst2(y, k, coord(ko, tc->k, t2, tc->b_k[e]), n, coord(no, tc->n, g, 0)));
  dtype_t accv = dt_vec(dt_scalar(tc->acc), tc->nc);
  uop *wmma = uop_new(OP_WMMA, accv, src, ns, arg_int(tci));
  uop *rsrc[65];
  int nr = 0;
  rsrc[nr++] = wmma;
  for (int i = 1; i < red->nsrc && nr < 65; i++) rsrc[nr++] = red->src[i] == k ? ko : red->src[i];
  uop *acc = uop_new(OP_REDUCE, accv, rsrc, nr, red->arg);
  /* each store once per accumulator element, at that element's place */
  uop *sink = *ast;
  uop **stores = tg_xmalloc(sizeof(uop *) * (size_t)(sink->nsrc * tc->nc));
  int nst = 0;
  for (int s = 0; s < sink->nsrc; s++)
    for (int e = 0; e < tc->nc; e++) {
      ptrmap sub = { 0 };
      pm_put(&sub, red, uop1(OP_GEP, dt_scalar(tc->acc), acc, arg_int(e)));
      pm_put(&sub, m, coord(mo, tc->m, g, tc->c_row[e]));
      pm_put(&sub, n, coord(no, tc->n, t2, tc->c_col[e]));
      stores[nst++] = graph_substitute(sink->src[s], &sub);
      pm_free(&sub);
    }
  uop *res = uop_new(OP_SINK, DT_VOID, stores, nst, sink->arg);
  free(stores);
  *ast = uop_simplify(res);
  return 0;
}

bool kernel_has_wmma(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_WMMA;
  free(l.v);
  return found;
}
