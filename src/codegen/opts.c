/* opts.c: kernel optimizations as transformations of the kernel AST (see
 * opts.h), the lane expansion that realizes UPCAST/UNROLL, and the
 * hand-written heuristic that picks opts by default. */
#include <stdlib.h>
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"
#include "util/util.h"
#include "util/settings.h"

static const char *opt_names[OPT_COUNT] = { "UPCAST", "UNROLL", "THREAD", "PADTO", "SWAP", "LOCAL", "GROUP", "GROUPTOP", "TC" };
const char *kopt_name(kopt_op op) { return op < OPT_COUNT ? opt_names[op] : "?"; }

int kopts_parse(const char *spec, kopt *out, int max) {
  int n = 0;
  const char *p = spec;
  while (p && *p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *colon = strchr(p, ':');
    if (!colon) return tg_seterr("opts: '%s' is not OP:AXIS:AMOUNT", p);
    int op = -1;
    for (int i = 0; i < OPT_COUNT; i++)
      if ((size_t)(colon - p) == strlen(opt_names[i]) && !strncmp(p, opt_names[i], (size_t)(colon - p))) op = i;
    if (op < 0) return tg_seterr("opts: unknown opt '%.*s' (known: UPCAST UNROLL THREAD PADTO SWAP LOCAL GROUP GROUPTOP TC)", (int)(colon - p), p);
    char *end;
    long axis = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != ':') return tg_seterr("opts: '%s': expected OP:AXIS:AMOUNT", p);
    const char *amt_s = end + 1;
    long amt = strtol(amt_s, &end, 10);
    if (end == amt_s) return tg_seterr("opts: '%s': missing amount", p);
    if (n >= max) return tg_seterr("opts: more than %d opts", max);
    out[n++] = (kopt){ (kopt_op)op, (int)axis, (int)amt };
    p = end;
    if (*p && *p != ',') return tg_seterr("opts: unexpected '%c' after an opt", *p);
  }
  return n;
}

void kopts_format(const kopt *o, int n, char *buf, size_t size) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k + 32 < size; i++)
    k += (size_t)snprintf(buf + k, size - k, "%s%s:%d:%d", i ? "," : "", kopt_name(o[i].op), o[i].axis, o[i].arg);
}

/* ------------------------------------------------------------ axes */

static int rid(const uop *r) { return (int)r->arg.v[0]; }
static int rkind(const uop *r) { return (int)r->arg.v[1]; }
/* rsize: the trip count (a symbolic axis: its max, for estimates);
 * rstatic: the size opts may split (a symbolic axis: 1, nothing to split) */
static int64_t rsize(const uop *r) { return range_max_size(r); }
static int64_t rstatic(const uop *r) { return range_is_symbolic(r) ? 1 : range_max_size(r); }

static int by_id(const void *a, const void *b) { return rid(*(uop *const *)a) - rid(*(uop *const *)b); }

int kernel_axes(uop *ast, uop **axes, int max, int *first_reduce) {
  uop_list l = uop_toposort(ast);
  uop *outs[64], *reds[64];
  int no = 0, nr = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_RANGE) continue;
    if ((rkind(u) == RANGE_LOOP || rkind(u) == RANGE_THREAD) && no < 64) outs[no++] = u;
    else if (rkind(u) == RANGE_REDUCE && nr < 64) reds[nr++] = u;
  }
  free(l.v);
  qsort(outs, (size_t)no, sizeof(uop *), by_id);
  qsort(reds, (size_t)nr, sizeof(uop *), by_id);
  int n = 0;
  for (int i = 0; i < no && n < max; i++) axes[n++] = outs[i];
  if (first_reduce) *first_reduce = n;
  for (int i = 0; i < nr && n < max; i++) axes[n++] = reds[i];
  return n;
}

int kernel_next_range_id(uop *ast) {
  uop_list l = uop_toposort(ast);
  int m = -1;
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_RANGE && rid(l.v[i]) > m) m = rid(l.v[i]);
  free(l.v);
  return m + 1;
}

static uop *make_range_to(uop *end, int id, int kind, int64_t extra) {
  int64_t a[3] = { id, kind, extra };
  return uop1(OP_RANGE, DT_INDEX, end, arg_ints(a, extra ? 3 : 2));
}
static uop *make_range(int64_t size, int id, int kind, int64_t extra) { return make_range_to(uop_const_int(DT_INDEX, size), id, kind, extra); }

/* Replaces range r everywhere by expr; in a REDUCE's range list r becomes
 * the ranges in repl (NULL entries dropped). */
static uop *subst_range(uop *u, uop *r, uop *expr, uop *const *repl, int nrepl, ptrmap *memo) {
  if (u == r) return expr;
  uop *m = pm_get(memo, u);
  if (m) return m;
  uop **src = tg_xmalloc(sizeof(uop *) * (size_t)(u->nsrc + nrepl + 1));
  int n = 0;
  for (int i = 0; i < u->nsrc; i++) {
    if (u->op == OP_REDUCE && i > 0 && u->src[i] == r) {
      for (int j = 0; j < nrepl; j++) if (repl[j] && repl[j]->op == OP_RANGE) src[n++] = repl[j];
      continue;
    }
    src[n++] = subst_range(u->src[i], r, expr, repl, nrepl, memo);
  }
  uop *res = u->op == OP_REDUCE && n == 1 ? src[0] : uop_replace_src(u, src, n);
  free(src);
  pm_put(memo, u, res);
  return res;
}
static uop *replace_range(uop *ast, uop *r, uop *expr, uop *const *repl, int nrepl) {
  ptrmap memo = { 0 };
  uop *res = subst_range(ast, r, expr, repl, nrepl, &memo);
  pm_free(&memo);
  return uop_simplify(res);
}

/* r (size s) -> outer*amt + inner, outer of size s/amt and kind `outer_kind`. */
static uop *split_range(uop *ast, uop *r, int amt, int inner_kind) {
  int64_t size = rsize(r);
  /* a work group's threads remember the axis they split (+1: 0 is none) */
  uop *inner = make_range(amt, kernel_next_range_id(ast), inner_kind, inner_kind == RANGE_LOCAL ? rid(r) + 1 : 0);
  uop *outer = size / amt == 1 ? NULL : make_range(size / amt, rid(r), rkind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
  uop *expr = outer ? uop_alu(OP_ADD, uop_muli(outer, amt), inner) : inner;
  uop *repl[2] = { outer, inner };
  return replace_range(ast, r, expr, repl, 2);
}

/* r (size s) -> top*(s/amt) + rest: the new range (kind `top_kind`, size
 * amt) takes the high part, r keeps the low one (GROUPTOP: each thread of a
 * group reduces one contiguous chunk). */
static uop *split_range_top(uop *ast, uop *r, int amt, int top_kind) {
  int64_t size = rsize(r);
  uop *top = make_range(amt, kernel_next_range_id(ast), top_kind, 0);
  uop *rest = size / amt == 1 ? NULL : make_range(size / amt, rid(r), rkind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
  uop *expr = rest ? uop_alu(OP_ADD, uop_muli(top, size / amt), rest) : top;
  uop *repl[2] = { rest, top };
  return replace_range(ast, r, expr, repl, 2);
}

/* nodes of ast that depend on r */
static bool depends_on(uop *u, uop *r, ptrmap *memo) {
  if (u == r) return true;
  void *m = pm_get(memo, u);
  if (m) return m == (void *)2;
  bool d = false;
  for (int i = 0; i < u->nsrc && !d; i++) d = depends_on(u->src[i], r, memo);
  pm_put(memo, u, (void *)(intptr_t)(d ? 2 : 1));
  return d;
}

/* PADTO: grow r to size; loads and stores that depend on it get r < old. */
static uop *pad_range(uop *ast, uop *r, int64_t newsize) {
  int64_t old = rsize(r);
  uop *nr = make_range(newsize, rid(r), rkind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
  uop *repl[1] = { nr };
  ptrmap memo = { 0 };
  uop *res = subst_range(ast, r, nr, repl, 1, &memo);
  pm_free(&memo);
  uop *valid = uop_alu(OP_CMPLT, nr, uop_const_int(DT_INDEX, old));
  /* gate every INDEX that depends on the range */
  uop_list l = uop_toposort(res);
  ptrmap dep = { 0 }, sub = { 0 };
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_INDEX || !depends_on(u, nr, &dep)) continue;
    uop *gate = u->nsrc > 2 ? uop_alu(OP_AND, u->src[2], valid) : valid;
    pm_put(&sub, u, uop3(OP_INDEX, u->dtype, u->src[0], u->src[1], gate, arg_none()));
  }
  free(l.v);
  res = graph_substitute(res, &sub);
  pm_free(&dep); pm_free(&sub);
  return uop_simplify(res);
}

static int count_kind(uop *ast, int kind, int64_t *product) {
  uop_list l = uop_toposort(ast);
  int n = 0;
  int64_t p = 1;
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_RANGE && rkind(l.v[i]) == kind) { n++; p *= rsize(l.v[i]); }
  free(l.v);
  if (product) *product = p;
  return n;
}

#define MAX_LANES 256

int kernel_apply_opt(uop **ast, kopt o, const tg_renderer *ren) {
  uop *axes[128];
  int fr;
  int n = kernel_axes(*ast, axes, 128, &fr);
  const char *name = kopt_name(o.op);
  if (o.op >= OPT_COUNT) return tg_seterr("opt: unknown opt %d", (int)o.op);
  if (o.op == OPT_TC) return kernel_apply_tc(ast, o, ren);
  if ((o.op == OPT_UNROLL || o.op == OPT_GROUP || o.op == OPT_GROUPTOP || o.op == OPT_PADTO) && kernel_has_wmma(*ast))
    return tg_seterr("opt %s:%d:%d: does not apply to a tensor-core kernel (only UPCAST and LOCAL of its output axes do)", name, o.axis, o.arg);
  bool reduce_axis = o.op == OPT_UNROLL || o.op == OPT_GROUP || o.op == OPT_GROUPTOP;
  int idx = reduce_axis ? fr + o.axis : o.axis;
  int limit = reduce_axis ? n : fr;
  if (o.axis < 0 || idx >= limit)
    return tg_seterr("opt %s:%d:%d: axis %d out of range (the kernel has %d %s axes)", name, o.axis, o.arg, o.axis,
                     reduce_axis ? n - fr : fr, reduce_axis ? "reduce" : "output");
  uop *r = axes[idx];
  int64_t size = rsize(r);
  /* a loop to a variable can be threaded or reordered; splitting it into
   * lanes needs a size known when compiling */
  if (range_is_symbolic(r) && o.op != OPT_THREAD && o.op != OPT_SWAP)
    return tg_seterr("opt %s:%d:%d: axis %d has a symbolic size ('%s'); only THREAD and SWAP apply to it", name, o.axis, o.arg, o.axis,
                     r->src[0]->op == OP_DEFINE_VAR ? r->src[0]->arg.s : "?");
  if (o.op == OPT_SWAP) {
    if (o.arg < 0 || o.arg >= fr || o.arg == o.axis) return tg_seterr("opt SWAP:%d:%d: the other axis must be a different output axis (0..%d)", o.axis, o.arg, fr - 1);
    uop *s = axes[o.arg];
    uop *r2 = make_range_to(r->src[0], rid(s), rkind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
    uop *s2 = make_range_to(s->src[0], rid(r), rkind(s), s->arg.n > 2 ? s->arg.v[2] : 0);
    uop *tmp = make_range_to(r->src[0], 1 << 20, rkind(r), 0);   /* avoid a clash while swapping */
    uop *a = replace_range(*ast, r, tmp, (uop *[]){ tmp }, 1);
    a = replace_range(a, s, s2, (uop *[]){ s2 }, 1);
    *ast = replace_range(a, tmp, r2, (uop *[]){ r2 }, 1);
    return 0;
  }
  if (o.arg < 1) return tg_seterr("opt %s:%d:%d: amount must be positive", name, o.axis, o.arg);
  if (o.op == OPT_PADTO) {
    if (rkind(r) != RANGE_LOOP) return tg_seterr("opt PADTO:%d:%d: only plain output axes can be padded", o.axis, o.arg);
    int64_t ns = (size + o.arg - 1) / o.arg * o.arg;
    if (ns == size) return tg_seterr("opt PADTO:%d:%d: axis size %lld is already a multiple of %d", o.axis, o.arg, (long long)size, o.arg);
    if (ns > size * 2) return tg_seterr("opt PADTO:%d:%d: padding %lld to %lld more than doubles the work", o.axis, o.arg, (long long)size, (long long)ns);
    *ast = pad_range(*ast, r, ns);
    return 0;
  }
  if (size % o.arg != 0 && o.op != OPT_THREAD)
    return tg_seterr("opt %s:%d:%d: axis %d has size %lld, not a multiple of %d", name, o.axis, o.arg, o.axis, (long long)size, o.arg);
  switch (o.op) {
  case OPT_UPCAST: case OPT_UNROLL: {
    if (rkind(r) == RANGE_THREAD && o.op == OPT_UPCAST && size / o.arg < 1) return tg_seterr("opt UPCAST: nothing left to thread");
    int64_t up, un;
    count_kind(*ast, RANGE_UPCAST, &up);
    count_kind(*ast, RANGE_UNROLL, &un);
    if (up * un * o.arg > MAX_LANES) return tg_seterr("opt %s:%d:%d: more than %d lanes in total", name, o.axis, o.arg, MAX_LANES);
    if (o.arg < 2) return tg_seterr("opt %s:%d:%d: amount must be at least 2", name, o.axis, o.arg);
    *ast = split_range(*ast, r, o.arg, o.op == OPT_UPCAST ? RANGE_UPCAST : RANGE_UNROLL);
    return 0;
  }
  case OPT_THREAD: {
    if (!ren->has_threads) return tg_seterr("opt THREAD:%d:%d: %s kernels do not run on CPU cores (use LOCAL)", o.axis, o.arg, ren->name);
    if (rkind(r) != RANGE_LOOP) return tg_seterr("opt THREAD:%d:%d: only a plain output axis can be threaded", o.axis, o.arg);
    if (count_kind(*ast, RANGE_THREAD, NULL)) return tg_seterr("opt THREAD:%d:%d: the kernel already has a thread axis", o.axis, o.arg);
    if (o.arg < 2 || o.arg > 1024) return tg_seterr("opt THREAD:%d:%d: thread count must be 2..1024", o.axis, o.arg);
    uop *t = make_range_to(r->src[0], rid(r), RANGE_THREAD, o.arg);
    *ast = replace_range(*ast, r, t, (uop *[]){ t }, 1);
    return 0;
  }
  case OPT_LOCAL: case OPT_GROUP: case OPT_GROUPTOP: {
    if (!ren->has_local)
      return tg_seterr("opt %s:%d:%d: needs a device with work groups and local memory (a GPU); %s kernels have none", name, o.axis, o.arg, ren->name);
    if (o.op == OPT_LOCAL && rkind(r) != RANGE_LOOP) return tg_seterr("opt LOCAL:%d:%d: only a plain output axis can be split into a work group", o.axis, o.arg);
    if (o.op != OPT_LOCAL && rkind(r) != RANGE_REDUCE) return tg_seterr("opt %s:%d:%d: only a plain reduce axis can be grouped", name, o.axis, o.arg);
    if (o.arg < 2) return tg_seterr("opt %s:%d:%d: amount must be at least 2", name, o.axis, o.arg);
    int64_t loc, grp;
    count_kind(*ast, RANGE_LOCAL, &loc);
    int ngroup = count_kind(*ast, RANGE_GROUP, &grp);
    if (loc * grp * o.arg > ren->max_local)
      return tg_seterr("opt %s:%d:%d: %lld threads per work group, more than the device's %d", name, o.axis, o.arg, (long long)(loc * grp * o.arg), ren->max_local);
    if (o.op != OPT_LOCAL && ngroup) return tg_seterr("opt %s:%d:%d: the kernel already has a grouped reduce axis", name, o.axis, o.arg);
    if (o.op == OPT_GROUPTOP) *ast = split_range_top(*ast, r, o.arg, RANGE_GROUP);
    else *ast = split_range(*ast, r, o.arg, o.op == OPT_LOCAL ? RANGE_LOCAL : RANGE_GROUP);
    return 0;
  }
  default:
    return tg_seterr("opt %s: unknown", name);
  }
}

int kernel_apply_opts(uop **ast, const kopt *o, int n, const tg_renderer *ren) {
  for (int i = 0; i < n; i++) if (kernel_apply_opt(ast, o[i], ren) < 0) return -1;
  return 0;
}

int kernel_thread_count(uop *ast) {
  uop_list l = uop_toposort(ast);
  int n = 1;
  for (int i = 0; i < l.n; i++)
    if (l.v[i]->op == OP_RANGE && rkind(l.v[i]) == RANGE_THREAD) n = (int)l.v[i]->arg.v[2];
  free(l.v);
  return n;
}

/* ------------------------------------------------------------ lane expansion */

/* Substitutes ranges rs[i] -> lane value (digits of lane in mixed radix). */
static uop *at_lane(uop *u, uop *const *rs, int nr, int64_t lane) {
  ptrmap m = { 0 };
  for (int i = nr - 1; i >= 0; i--) {
    int64_t s = rsize(rs[i]);
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
    int64_t k = rsize(un[i]);
    if (k != 4 && k != 8 && k != 16) continue;
    uop *v = kernel_vectorize(r->src[0], un[i], false);
    if (!v || v->dtype.count != k) continue;
    uop *rest[16];
    int nr = 0;
    int64_t lanes = 1;
    for (int j = 0; j < nu; j++) if (j != i) { rest[nr++] = un[j]; lanes *= rsize(un[j]); }
    if (lanes * k > MAX_LANES) return NULL;
    uop *parts[MAX_LANES];
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
    if (rkind(r->src[i]) == RANGE_UNROLL && nu < 16) { un[nu++] = r->src[i]; lanes *= rsize(r->src[i]); }
    else if (nk < 64) keep[nk++] = r->src[i];
  }
  if (!nu) return r;
  uop *vec = vectorize_reduce(r, un, nu, keep, nk);
  if (vec) return vec;
  uop *parts[MAX_LANES];
  for (int64_t l = 0; l < lanes && l < MAX_LANES; l++) {
    uop *src[65];
    src[0] = at_lane(r->src[0], un, nu, l);
    for (int i = 0; i < nk; i++) src[1 + i] = keep[i];
    parts[l] = nk ? uop_new(OP_REDUCE, r->dtype, src, 1 + nk, r->arg) : src[0];
  }
  return combine((uop_op)r->arg.i, parts, (int)(lanes < MAX_LANES ? lanes : MAX_LANES));
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
    if (l2.v[i]->op == OP_RANGE && rkind(l2.v[i]) == RANGE_UPCAST && nup < 16) { up[nup++] = l2.v[i]; lanes *= rsize(l2.v[i]); }
  free(l2.v);
  /* the upcast axis the stores walk with stride 1 becomes SIMD lanes; else
   * one whose stores scatter lane by lane (the loads and math still get
   * vectors: lanes along channels of channels-last data stored NCHW) */
  for (int pass = 0; pass < 2 && nup && simd && !setting_int(SET_TG_NOVEC); pass++) {
    int done = -1;
    for (int i = 0; i < nup && done < 0; i++) {
      int64_t sz = rsize(up[i]);
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
    lanes /= rsize(up[done]);
    up[done] = up[--nup];
    break;
  }
  if (nup) {
    qsort(up, (size_t)nup, sizeof(uop *), by_id);
    uop **stores = tg_xmalloc(sizeof(uop *) * (size_t)(cur->nsrc * lanes + 1));
    int ns = 0;
    for (int s = 0; s < cur->nsrc; s++)
      for (int64_t ln = 0; ln < lanes; ln++) stores[ns++] = at_lane(cur->src[s], up, nup, ln);
    cur = uop_new(OP_SINK, DT_VOID, stores, ns, cur->arg);
    free(stores);
  }
  return uop_simplify(cur);
}

/* ------------------------------------------------------------ heuristic */

/* The index expression of every LOAD in the kernel (free .v after use). */
static uop_list load_indices(uop *ast) {
  uop_list l = uop_toposort(ast);
  int n = 0;
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_LOAD) l.v[n++] = l.v[i]->src[0]->src[1];
  l.n = n;
  return l;
}

/* Do the kernel's loads step by 1 (or 0) along r? counts of each. Only the
 * loads inside the reduce loops count when there are any (a bias read once
 * per output is no reason for lanes), and stores never do. */
static void access_along(uop *ast, uop *r, uop *const *axes, int n, int *unit, int *zero, int *other) {
  *unit = *zero = *other = 0;
  uop_list l = load_indices(ast);
  bool has_reduce = false;
  for (int i = 0; i < n; i++) has_reduce |= rkind(axes[i]) == RANGE_REDUCE;
  for (int i = 0; i < l.n; i++) {
    if (has_reduce) {
      bool inner = false;
      for (int a = 0; a < n && !inner; a++)
        if (rkind(axes[a]) == RANGE_REDUCE) { int64_t sr = index_stride(l.v[i], axes[a], axes, n); inner = sr != 0; }
      if (!inner) continue;
    }
    int64_t s = index_stride(l.v[i], r, axes, n);
    if (s == 1) (*unit)++;
    else if (s == 0) (*zero)++;
    else (*other)++;
  }
  free(l.v);
}

/* Does every store of the kernel step by one element along r? */
static bool store_steps_by_one(uop *ast, uop *r, uop *const *axes, int n) {
  if (ast->op != OP_SINK || !ast->nsrc) return false;
  for (int i = 0; i < ast->nsrc; i++) {
    uop *st = ast->src[i];
    if (st->op != OP_STORE || index_stride(st->src[0]->src[1], r, axes, n) != 1) return false;
  }
  return true;
}

/* float ALU ops in the kernel (its arithmetic, not its index math) */
static int float_alu_count(uop *ast) {
  uop_list l = uop_toposort(ast);
  int c = 0;
  for (int i = 0; i < l.n; i++) c += uop_is_alu(l.v[i]->op) && dt_is_float(l.v[i]->dtype);
  free(l.v);
  return c;
}

/* Does some load step along r by a constant other than 0 and 1? */
static bool strided_load_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = load_indices(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) {
    int64_t st = index_stride(l.v[i], r, axes, n);
    found = st != INT64_MIN && st != 0 && st != 1;
  }
  free(l.v);
  return found;
}

/* How many loads step by 2 along r (pairs of adjacent values: vectorize.c
 * loads them as one wide vector). */
static int pair_loads_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = load_indices(ast);
  int c = 0;
  for (int i = 0; i < l.n; i++) c += index_stride(l.v[i], r, axes, n) == 2;
  free(l.v);
  return c;
}

/* The largest power of two P (up to 256) that some `x // P` or `x % P`
 * with x depending on r uses: r walks a block structure of that period
 * (packed quantized weights: blocks of 32 or 256 values, nibble halves,
 * sub-blocks). Lanes of r covering whole periods turn those divisions into
 * constants. */
static int64_t index_period(uop *ast, uop *r) {
  uop_list l = uop_toposort(ast);
  ptrmap dep = { 0 };   /* nodes depending on r */
  int64_t best = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    bool d = u == r;
    for (int j = 0; j < u->nsrc && !d; j++) d = pm_get(&dep, u->src[j]) != NULL;
    if (!d) continue;
    pm_put(&dep, u, (void *)1);
    if ((u->op == OP_IDIV || u->op == OP_MOD) && u->src[1]->op == OP_CONST && pm_get(&dep, u->src[0])) {
      int64_t p = u->src[1]->arg.i;
      if (p > best && p <= 256 && (p & (p - 1)) == 0) best = p;
    }
  }
  pm_free(&dep);
  free(l.v);
  return best;
}

/* Does the kernel read packed bytes (uint8: quantized weights)? */
static bool loads_bytes(uop *ast) {
  uop_list l = uop_toposort(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = l.v[i]->op == OP_LOAD && l.v[i]->dtype.scalar == TG_U8;
  free(l.v);
  return found;
}

/* Does the reduce loop hold scalar work that costs (a transcendental or a
 * division: a libm call or a slow instruction) and does not vary along
 * lane axis v? Each vector of v's lanes repeats it (attention's
 * exp(score - max) / sum, once per 16 of the head's values). */
static bool costly_beside_lanes(uop *ast, uop *const *axes, int n, int fr, uop *v) {
  uop_list l = uop_toposort(ast);
  ptrmap on_v = { 0 }, on_red[8] = { { 0 } };
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) {
    uop *u = l.v[i];
    if (!uop_is_costly(u->op)) continue;
    if (depends_on(u, v, &on_v)) continue;
    for (int r = fr; r < n && r - fr < 8 && !found; r++) found = depends_on(u, axes[r], &on_red[r - fr]);
  }
  pm_free(&on_v);
  for (int r = 0; r < 8; r++) pm_free(&on_red[r]);
  free(l.v);
  return found;
}

/* Along output axis r, do the packed-byte (uint8) loads stay put (0), all
 * move (1), or some of each (-1)? */
static int byte_loads_along(uop *ast, uop *r, uop *const *axes, int n) {
  uop_list l = uop_toposort(ast);
  int still = 0, moving = 0;
  for (int i = 0; i < l.n; i++) {
    if (l.v[i]->op != OP_LOAD || l.v[i]->dtype.scalar != TG_U8) continue;
    if (index_stride(l.v[i]->src[0]->src[1], r, axes, n) == 0) still++;
    else moving++;
  }
  free(l.v);
  return still && moving ? -1 : moving ? 1 : 0;
}

/* The panel width of a packed operand along output axis v: the stride, along
 * the innermost reduce axis, of a load that steps by 1 along v (tg_matmul's
 * packed b, [n / P][k][P], gives P); 0 when no load looks like that. When v
 * gets exactly P lanes, one tile of v reads one contiguous run of memory
 * over the whole reduce. */
static int64_t panel_stride(uop *ast, uop *const *axes, int n, int fr, int v) {
  if (n <= fr) return 0;
  uop_list l = load_indices(ast);
  int64_t p = 0;
  for (int i = 0; i < l.n && !p; i++) {
    if (index_stride(l.v[i], axes[v], axes, n) != 1) continue;
    int64_t s = index_stride(l.v[i], axes[n - 1], axes, n);
    if (s > 1 && s <= 64) p = s;
  }
  free(l.v);
  return p;
}

static int pick_amount(int64_t size, const int *choices) {
  for (int i = 0; choices[i]; i++) if (size % choices[i] == 0 && size >= choices[i]) return choices[i];
  return 0;
}

/* Does a load that steps by 1 along output axis v stay put along axis a (a
 * convolution's input row, the same for every output channel)? */
static bool row_reused_along(uop *ast, uop *const *axes, int n, int v, int a) {
  uop_list l = load_indices(ast);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) found = index_stride(l.v[i], axes[v], axes, n) == 1 && index_stride(l.v[i], axes[a], axes, n) == 0;
  free(l.v);
  return found;
}

/* Elements every core would read whole if axis a were the threaded one:
 * over the loads inside the reduce that do not depend on a, the product of
 * the axes they do depend on. */
static double unsplit_reads(uop *ast, uop *const *axes, int n, uop *a) {
  uop_list l = load_indices(ast);
  double total = 0;   /* an estimate: in double, no product of sizes overflows */
  for (int i = 0; i < l.n; i++) {
    if (index_stride(l.v[i], a, axes, n) != 0) continue;
    double e = 1;
    for (int j = 0; j < n; j++) if (index_stride(l.v[i], axes[j], axes, n) != 0) e *= (double)rsize(axes[j]);
    total += e;
  }
  free(l.v);
  return total;
}

/* the lanes the UPCASTs chosen so far give output axis a */
static int64_t lanes_on(const kopt *o, int k, int a) {
  int64_t l = 1;
  for (int i = 0; i < k; i++) if (o[i].op == OPT_UPCAST && o[i].axis == a) l *= o[i].arg;
  return l;
}

/* Work below which a kernel stays on one core: waking the other cores and
 * waiting for them costs several microseconds, about what 2^18 vectorized
 * iterations of a multiply-add take (attention over a short context ran
 * faster on one core than on two). Iterations that each do much more
 * (decoding quantized weights: 10 and more ops per value; exponentials)
 * count by their ops (kernel_cost). */
#define THREAD_MIN_WORK (1 << 18)
#define THREAD_MIN_FLOPS (1 << 21)

static int cpu_heuristic_opts(uop *ast, int ncores, kopt *out, int max) {
  uop *axes[64];
  int fr;
  int n = kernel_axes(ast, axes, 64, &fr);
  int k = 0;
  int64_t work = 1;   /* saturates: several reduces' loops multiply past int64 */
  for (int i = 0; i < n; i++) work = tg_mul_sat_i64(work, rsize(axes[i]));
  static const int vec[] = { 16, 8, 4, 0 }, tile[] = { 4, 2, 0 };
  bool has_reduce = n > fr;
  int outer = 0;   /* the output axis that ends up outermost */
  if (has_reduce && fr > 0) {
    /* outputs with a reduce (matmul, conv, matvec, row sums):
     * 1. SIMD lanes along an output axis the loads walk with stride 1;
     * 2. register tiles along output axes some load does not depend on (the
     *    loaded value is reused by every lane);
     * 3. without output lanes, partial sums along a unit-stride reduce axis */
    int vaxis = -1, vamt = 0;
    for (int i = fr - 1; i >= 0 && vaxis < 0; i--) {
      int unit, zero, other;
      access_along(ast, axes[i], axes, n, &unit, &zero, &other);
      int64_t size = rstatic(axes[i]);
      int amt = pick_amount(size, vec);
      /* a convolution's output row that 8 lanes do not divide (20, 6):
       * the whole row as lanes, unless it is shorter than the innermost
       * reduce (then it is a weight gradient's kernel window, below) */
      if (size % 8 && size >= 5 && size <= 32 && n > fr && size >= rstatic(axes[n - 1])) amt = (int)size;
      if (amt && unit >= 1) { vaxis = i; vamt = amt; }
    }
    int64_t lanes = 1;
    if (vaxis >= 0 && k < max) { out[k++] = (kopt){ OPT_UPCAST, vaxis, vamt }; lanes *= vamt; }
    /* long reductions over big outputs (matmul): two vectors per row of the
     * tile, so each load of the other operand feeds twice the math */
    int64_t red = 1;
    for (int r = fr; r < n; r++) red = tg_mul_sat_i64(red, rsize(axes[r]));
    int64_t panel = vaxis >= 0 ? panel_stride(ast, axes, n, fr, vaxis) : 0;
    /* (not when the panel is all the output there is: a per-channel sum over
     * channels-last data would then run on one core) */
    int64_t outputs = 1;
    for (int i = 0; i < fr; i++) outputs = tg_mul_sat_i64(outputs, rsize(axes[i]));
    bool panel_threads = ncores < 2 || outputs / (panel ? panel : 1) >= ncores || work < THREAD_MIN_WORK;
    if (panel > vamt && panel % vamt == 0 && panel / vamt <= 4 && rsize(axes[vaxis]) % panel == 0 && panel_threads && k < max) {
      out[k++] = (kopt){ OPT_UPCAST, vaxis, (int)(panel / vamt) };   /* lanes = the whole panel */
      lanes *= panel / vamt;
    } else if (vaxis >= 0 && vamt == 16 && red >= 256 && (rsize(axes[vaxis]) / 16) % 2 == 0 && rsize(axes[vaxis]) >= 128 && k < max) {
      out[k++] = (kopt){ OPT_UPCAST, vaxis, 2 };
      lanes *= 2;
    } else if (vaxis >= 0 && vamt == 16 && rstatic(axes[vaxis]) % 16 == 0 && rstatic(axes[vaxis]) / 16 >= 2 && rstatic(axes[vaxis]) / 16 <= 4 &&
               costly_beside_lanes(ast, axes, n, fr, axes[vaxis]) && k < max) {
      /* all of the (short) lane axis at once: the costly scalar work runs
       * once per iteration, not once per 16 lanes */
      out[k++] = (kopt){ OPT_UPCAST, vaxis, (int)(rstatic(axes[vaxis]) / 16) };
      lanes *= rstatic(axes[vaxis]) / 16;
    }
    /* a reduce walking a block structure (quantized weights): unroll whole
     * blocks (at least 32 lanes, at most 128), so a block's scales and bit
     * positions become constants per iteration and are decoded once for its
     * values; skip the register tile (the per-element decoding is the work;
     * sharing the other operand's load saves little). Only for kernels
     * reading packed bytes: float kernels (a conv's backward) have periods
     * too, and want tiles. */
    int pr = -1, pamt = 0;
    if (vaxis < 0 && loads_bytes(ast))
      for (int r = n - 1; r >= fr && pr < 0; r--) {
        int64_t p = index_period(ast, axes[r]);
        int64_t amt = p < 32 ? 32 : p > 128 ? 128 : p;
        if (p >= 8 && rstatic(axes[r]) % amt == 0) pr = r, pamt = (int)amt;
      }
    /* as 16 inner lanes (consecutive bytes: SIMD when the decoding allows)
     * times the rest of the block (nibble halves, sub-blocks) */
    /* many rows of the other operand (x @ w.T for a prefill chunk of x):
     * 8 of them share each decoded vector of w and 2 rows of w each loaded
     * vector of x, 16 lanes of the block at a time (2x a decode-once copy of
     * w for Q8_0/Q4_0 at 64x4096x768) */
    int xrows = -1, wrows = -1;
    for (int i = 0; i < fr && pr >= 0; i++) {
      int moves = byte_loads_along(ast, axes[i], axes, n);
      if (moves == 0 && xrows < 0 && rstatic(axes[i]) >= 16 && rstatic(axes[i]) % 8 == 0) xrows = i;
      else if (moves == 1 && wrows < 0 && rstatic(axes[i]) % 2 == 0) wrows = i;
    }
    if (xrows >= 0 && wrows >= 0 && k + 2 < max) {
      out[k++] = (kopt){ OPT_UPCAST, xrows, 8 };
      out[k++] = (kopt){ OPT_UPCAST, wrows, 2 };
      out[k++] = (kopt){ OPT_UNROLL, pr - fr, 16 };
      lanes *= 16;
    } else if (pr >= 0 && k + 1 < max) { out[k++] = (kopt){ OPT_UNROLL, pr - fr, 16 }; out[k++] = (kopt){ OPT_UNROLL, pr - fr, pamt / 16 }; }
    /* a convolution's weight gradient: a small kernel-window axis (kw) whose
     * loads step by 1, like the reduce's output column (ow) they add to.
     * All of kw as lanes, with 4 (or 6, 3, 2) of ow unrolled: neighbouring lanes read
     * overlapping input, loaded once; one tile of 8 output channels. */
    int win = -1;
    if (vaxis < 0 && pr < 0 && n > fr) {
      int unit, zero, other, ru, rz, ro;
      access_along(ast, axes[fr - 1], axes, n, &unit, &zero, &other);
      access_along(ast, axes[n - 1], axes, n, &ru, &rz, &ro);
      int64_t ws = rstatic(axes[fr - 1]);
      int ur = pick_amount(rstatic(axes[n - 1]), (const int[]){ 4, 6, 3, 2, 0 });
      if (unit >= 1 && ru >= 2 && ws >= 2 && ws <= 7 && ur && k < max) {
        out[k++] = (kopt){ OPT_UPCAST, fr - 1, (int)ws };
        lanes *= ws;
        win = fr - 1;
        for (int i = 0; i < fr - 1; i++) {
          access_along(ast, axes[i], axes, n, &unit, &zero, &other);
          int t = pick_amount(rstatic(axes[i]), (const int[]){ 8, 4, 2, 0 });
          if (zero >= 1 && t && k < max) { out[k++] = (kopt){ OPT_UPCAST, i, t }; lanes *= t; break; }
        }
        if (k < max) { out[k++] = (kopt){ OPT_UNROLL, n - 1 - fr, ur }; lanes *= ur; }
      }
    }
    /* a whole convolution row as lanes: 4 output channels share each loaded
     * row (up to 160 lanes), then 2 of another axis if they fit */
    bool full_row = vaxis >= 0 && vamt != 16 && vamt != 8 && vamt != 4;
    for (int i = 0; i < fr && full_row && k < max; i++)
      if (i != vaxis && row_reused_along(ast, axes, n, vaxis, i) && rstatic(axes[i]) % 4 == 0 && lanes * 4 <= 160) {
        out[k++] = (kopt){ OPT_UPCAST, i, 4 };
        lanes *= 4;
        break;
      }
    /* row-packed quantized weights (byte loads walk the lanes): a tile of
     * 8 rows of x, which do not move the bytes, so each decoded vector of
     * weights serves 8 of them (a prefill chunk through
     * tg_quant_matmul_rows: 1.7x a tile of 4 weight row groups for Q6_K) */
    bool byte_tile = false;
    if (vaxis >= 0 && pr < 0 && win < 0 && !full_row && loads_bytes(ast) && byte_loads_along(ast, axes[vaxis], axes, n) == 1)
      for (int i = 0; i < fr && !byte_tile && k < max; i++)
        if (i != vaxis && byte_loads_along(ast, axes[i], axes, n) == 0 && rstatic(axes[i]) % 8 == 0) {
          out[k++] = (kopt){ OPT_UPCAST, i, 8 };
          lanes *= 8;
          byte_tile = true;
        }
    /* a packed float panel as lanes (sgemm): 8 rows of the other operand, 16
     * vector accumulators of the 32 registers, so each pair of panel loads
     * feeds 16 FMAs (1.1-1.2x a 4-row tile at 1024 and 2048) */
    bool panel_tile = panel && panel == lanes_on(out, k, vaxis) && !loads_bytes(ast);
    for (int i = fr - 1; i >= 0 && pr < 0 && win < 0 && !byte_tile; i--) {
      if (i == vaxis || (full_row && lanes_on(out, k, i) > 1)) continue;
      int unit, zero, other;
      access_along(ast, axes[i], axes, n, &unit, &zero, &other);
      int t = pick_amount(rstatic(axes[i]), panel_tile ? (const int[]){ 8, 4, 2, 0 } : tile);
      /* a panel of 64 lanes takes a tile of 4 where 8 would not fit (the
       * 64-channel weight gradient: 2.3x) */
      if (panel_tile && t && lanes * t > 256) t = pick_amount(rstatic(axes[i]), (const int[]){ (int)(256 / lanes), 0 });
      /* a whole kernel-window axis (3, 5, 7) that 2 and 4 do not divide:
       * a convolution's weight gradient with lanes along the output
       * channels, whose output-gradient vector (often recomputed: a ReLU's
       * mask) is then loaded once per window row instead of once per tap
       * (2.9x for 512x32x24x24, 5x5). Not when the shared load is a scalar
       * broadcast: then nothing is saved. */
      bool window_tile = !t && vaxis >= 0 && rstatic(axes[i]) >= 3 && rstatic(axes[i]) <= 7 && lanes <= 32 &&
                         row_reused_along(ast, axes, n, vaxis, i);
      if (window_tile) t = (int)rstatic(axes[i]);
      /* with SIMD lanes, up to two tiles (conv: output rows and channels,
       * so each loaded vector and each broadcast weight is used 4 times) */
      if (full_row) t = rstatic(axes[i]) % 2 == 0 ? 2 : 0;
      if (zero >= 1 && t && lanes * t <= (full_row ? 160 : panel_tile || window_tile ? 256 : 128) && k < max) { out[k++] = (kopt){ OPT_UPCAST, i, t }; lanes *= t; if (vaxis < 0 ? lanes >= 16 : lanes >= 8 * vamt) break; }
    }
    if (vaxis < 0 && pr < 0 && win < 0) {
      for (int r = n - 1; r >= fr; r--) {
        int unit, zero, other;
        access_along(ast, axes[r], axes, n, &unit, &zero, &other);
        /* the widest that fits next to the register tile (4x4 tiles of
         * dot products: 8 lanes) */
        int amt = 0;
        for (int c = 0; vec[c] && !amt; c++)
          if (rstatic(axes[r]) % vec[c] == 0 && lanes * vec[c] <= 128) amt = vec[c];
        /* packed bytes read in pairs (tg_quant_matmul's int16 multiply-adds) */
        bool pairs = unit == 0 && loads_bytes(ast) && pair_loads_along(ast, axes[r], axes, n) >= 2;
        if ((unit >= 1 || pairs) && amt && k < max) {
          out[k++] = (kopt){ OPT_UNROLL, r - fr, amt };
          /* the 16 sub-blocks of a K-quant super-block, 4 at a time (their
           * scales' bit positions become constants; 1.5x for Q4_K) */
          if (pairs && r > fr && rstatic(axes[r - 1]) == 16 && k < max) out[k++] = (kopt){ OPT_UNROLL, r - 1 - fr, 4 };
          /* the two nibble halves of a Q4_0/Q4_1 block: one load of the
           * bytes and one decode of the block's scale serve both */
          if (pairs && r > fr && rstatic(axes[r - 1]) == 2 && k < max) out[k++] = (kopt){ OPT_UNROLL, r - 1 - fr, 2 };
          break;
        }
      }
    }
    /* a panel read along the lanes axis (packed matmul operand): put its
     * tiles in the outer loop, so one panel stays in cache while the other
     * operand's rows stream past (reading the other operand again per panel
     * costs less than reading every panel again per row tile). Not when the
     * lanes are the whole axis: nothing of it is left to move. */
    if (vaxis > 0 && pr < 0 && k < max && panel && panel == lanes_on(out, k, vaxis) && rstatic(axes[vaxis]) > panel) {
      out[k++] = (kopt){ OPT_SWAP, 0, vaxis };
      outer = vaxis;
    }
  } else if (has_reduce) {
    /* a full reduction: independent partial sums */
    int amt = pick_amount(rstatic(axes[fr]), vec);
    if (amt && k < max) out[k++] = (kopt){ OPT_UNROLL, 0, amt };
  } else if (fr > 0 && work >= THREAD_MIN_WORK && !loads_bytes(ast) && store_steps_by_one(ast, axes[fr - 1], axes, n) &&
             (!strided_load_along(ast, axes[fr - 1], axes, n) || float_alu_count(ast) >= 4)) {
    /* elementwise: SIMD lanes along the axis the store walks, so the vector
     * store and any per-row work (index math, a channel's scale) serve a
     * whole vector; clang alone leaves such loops scalar (1.7x for a pooling
     * gradient's re-layout at 512x32x20x20). Only big kernels (small ones,
     * an LLM's per-token work, ran slower with them). Not for a plain transpose (a
     * load striding along the axis, little math): lanes of gathered loads
     * run slower than clang's loop there. */
    int amt = pick_amount(rstatic(axes[fr - 1]), vec);
    if (amt && k < max) out[k++] = (kopt){ OPT_UPCAST, fr - 1, amt };
  } else if (fr > 0 && loads_bytes(ast)) {
    /* packed blocks decoded into a float copy (an LLM prefill's K-quant
     * weights): like the reduce rule above, lanes over whole periods of the
     * innermost axis, so a block's scales and bit positions decode once per
     * iteration instead of once per value */
    int64_t p = index_period(ast, axes[fr - 1]);
    int64_t amt = p < 32 ? 32 : p > 128 ? 128 : p;
    if (p >= 8 && rstatic(axes[fr - 1]) % amt == 0 && k + 1 < max) {
      out[k++] = (kopt){ OPT_UPCAST, fr - 1, 16 };
      out[k++] = (kopt){ OPT_UPCAST, fr - 1, (int)(amt / 16) };
    }
  }
  /* threads over the outermost output axis when there is enough work, or
   * over an inner one when that splits much more of what is read (x @ W.T
   * with few rows of x: split W's rows, so each core reads half of W) */
  if (ncores > 1 && fr > 0 && (work >= THREAD_MIN_WORK || kernel_cost(ast) >= THREAD_MIN_FLOPS) && k < max) {
    int64_t s = rsize(axes[outer]) / lanes_on(out, k, outer);
    int pos = 0;   /* position of the threaded axis after the opts */
    if (has_reduce) {
      double best = unsplit_reads(ast, axes, n, axes[outer]);
      for (int i = 0; i < fr; i++) {
        int64_t si = rsize(axes[i]) / lanes_on(out, k, i);
        double c = unsplit_reads(ast, axes, n, axes[i]);
        if (i != outer && si >= 4 * ncores && c * 2 < best) best = c, s = si, pos = i == 0 ? outer : i;
      }
    }
    if (s >= ncores) out[k++] = (kopt){ OPT_THREAD, pos, ncores };
  }
  return k;
}

int kernel_heuristic_opts(uop *ast, const tg_renderer *ren, int ncores, kopt *out, int max) {
  if (ren->has_local) return gpu_heuristic_opts(ast, ren, out, max);
  return cpu_heuristic_opts(ast, ren->has_threads ? ncores : 1, out, max);
}
