/* lanes.c: the lane expansion that realizes UPCAST and UNROLL ranges
 * (kernel_expand_lanes, opts.h): stores repeated per upcast lane, one
 * accumulator per unroll lane, one upcast axis as vector lanes. */
#include <stdlib.h>
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"
#include "util/util.h"
#include "util/settings.h"

/* Substitutes ranges rs[i] -> lane value (digits of lane in mixed radix). */
static uop *at_lane(uop *u, uop *const *rs, int nr, int64_t lane) {
  ptrmap m = { 0 };
  for (int i = nr - 1; i >= 0; i--) {
    int64_t s = range_max_size(rs[i]);
    pm_put(&m, rs[i], uop_const_int(DT_INDEX, lane % s));
    lane /= s;
  }
  uop *res = graph_substitute(u, &m);
  pm_free(&m);
  return res;
}

static uop *combine(uop_op op, uop **v, int n) {
  /* pairwise, so the partial results add in a balanced tree */
  while (n > 1) {
    int k = 0;
    for (int i = 0; i + 1 < n; i += 2) v[k++] = uop_alu(op, v[i], v[i + 1]);
    if (n % 2) v[k++] = v[n - 1];
    n = k;
  }
  return v[0];
}

/* An unrolled reduce whose source steps through memory by one element along
 * an unroll range of 4, 8 or 16 becomes SIMD: a vector accumulator per
 * remaining unroll lane, added across lanes after the loop (the lanes of a
 * matvec's dot product). NULL when the source does not vectorize. */
static uop *vectorize_reduce(uop *r, uop **un, int nu, uop *const *keep, int nk) {
  if (setting_int(SET_TG_NOVEC) || (r->arg.i != OP_ADD && r->arg.i != OP_MAX) || r->dtype.count != 1) return NULL;
  if (r->dtype.scalar != TG_F32 && r->dtype.scalar != TG_I32) return NULL;
  for (int i = 0; i < nu; i++) {
    int64_t k = range_max_size(un[i]);
    if (k != 4 && k != 8 && k != 16) continue;
    uop *v = kernel_vectorize(r->src[0], un[i], false);
    if (!v || v->dtype.count != k) continue;
    uop *rest[16];
    int nr = 0;
    int64_t lanes = 1;
    for (int j = 0; j < nu; j++) if (j != i) { rest[nr++] = un[j]; lanes *= range_max_size(un[j]); }
    if (lanes * k > KOPT_MAX_LANES) return NULL;
    uop *parts[KOPT_MAX_LANES];
    for (int64_t l = 0; l < lanes; l++) {
      uop *src[65];
      src[0] = at_lane(v, rest, nr, l);
      for (int j = 0; j < nk; j++) src[1 + j] = keep[j];
      parts[l] = nk ? uop_new(OP_REDUCE, v->dtype, src, 1 + nk, r->arg) : src[0];
    }
    uop *acc = combine((uop_op)r->arg.i, parts, (int)lanes);
    uop *sc[16];
    for (int64_t l = 0; l < k; l++) sc[l] = uop1(OP_GEP, r->dtype, acc, arg_int(l));
    return combine((uop_op)r->arg.i, sc, (int)k);
  }
  return NULL;
}

static uop *expand_reduce(uop *r) {
  uop *un[16], *keep[64];
  int nu = 0, nk = 0;
  int64_t lanes = 1;
  for (int i = 1; i < r->nsrc; i++) {
    if (range_kind(r->src[i]) == RANGE_UNROLL && nu < 16) { un[nu++] = r->src[i]; lanes *= range_max_size(r->src[i]); }
    else if (nk < 64) keep[nk++] = r->src[i];
  }
  if (!nu) return r;
  uop *vec = vectorize_reduce(r, un, nu, keep, nk);
  if (vec) return vec;
  uop *parts[KOPT_MAX_LANES];
  for (int64_t l = 0; l < lanes && l < KOPT_MAX_LANES; l++) {
    uop *src[65];
    src[0] = at_lane(r->src[0], un, nu, l);
    for (int i = 0; i < nk; i++) src[1 + i] = keep[i];
    parts[l] = nk ? uop_new(OP_REDUCE, r->dtype, src, 1 + nk, r->arg) : src[0];
  }
  return combine((uop_op)r->arg.i, parts, (int)(lanes < KOPT_MAX_LANES ? lanes : KOPT_MAX_LANES));
}

static uop *expand_reduce_node(uop *u, void *ctx) { return u->op == OP_REDUCE ? expand_reduce(u) : u; }

uop *kernel_expand_lanes(uop *ast, bool simd) {
  /* 1. unrolled reduces, bottom-up */
  uop *cur = graph_map(ast, expand_reduce_node, NULL);
  /* 2. upcast lanes: one store per lane */
  uop_list l2 = uop_toposort(cur);
  uop *up[16];
  int nup = 0;
  int64_t lanes = 1;
  for (int i = 0; i < l2.n; i++)
    if (l2.v[i]->op == OP_RANGE && range_kind(l2.v[i]) == RANGE_UPCAST && nup < 16) { up[nup++] = l2.v[i]; lanes *= range_max_size(l2.v[i]); }
  free(l2.v);
  /* the upcast axis the stores walk with stride 1 becomes SIMD lanes; else
   * one whose stores scatter lane by lane (the loads and math still get
   * vectors: lanes along channels of channels-last data stored NCHW) */
  for (int pass = 0; pass < 2 && nup && simd && !setting_int(SET_TG_NOVEC); pass++) {
    int done = -1;
    for (int i = 0; i < nup && done < 0; i++) {
      int64_t sz = range_max_size(up[i]);
      if (sz != 4 && sz != 8 && sz != 16) continue;
      uop *st = cur->src[0];
      if (st->op != OP_STORE) continue;
      uop *ix = st->src[0]->src[1];
      ptrmap m0 = { 0 }, m1 = { 0 };
      pm_put(&m1, up[i], uop_const_int(DT_INDEX, 1));
      pm_put(&m0, up[i], uop_const_int(DT_INDEX, 0));
      uop *d = uop_simplify(uop_alu(OP_SUB, graph_substitute(ix, &m1), graph_substitute(ix, &m0)));
      pm_free(&m0); pm_free(&m1);
      if (pass == 0 && !uop_is_const(d, 1)) continue;
      uop *v = kernel_vectorize(cur, up[i], true);
      if (!v) continue;
      cur = v;
      done = i;
    }
    if (done < 0) continue;
    lanes /= range_max_size(up[done]);
    up[done] = up[--nup];
    break;
  }
  if (nup) {
    qsort(up, (size_t)nup, sizeof(uop *), range_by_id);
    uop **stores = tg_xmalloc(sizeof(uop *) * (size_t)(cur->nsrc * lanes + 1));
    int ns = 0;
    for (int s = 0; s < cur->nsrc; s++)
      for (int64_t ln = 0; ln < lanes; ln++) stores[ns++] = at_lane(cur->src[s], up, nup, ln);
    cur = uop_new(OP_SINK, DT_VOID, stores, ns, cur->arg);
    free(stores);
  }
  return uop_simplify(cur);
}
