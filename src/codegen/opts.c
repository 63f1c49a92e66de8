/* opts.c: kernel optimizations as transformations of the kernel AST (see
 * opts.h): parsing and printing them, the kernel's axes, and applying an
 * opt. The lane expansion that realizes UPCAST/UNROLL is lanes.c; the
 * heuristics that pick opts by default are cpu_heuristic.c and
 * gpu_heuristic.c. */
#include <stdlib.h>
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"
#include "util/util.h"

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

int kernel_axes(uop *ast, uop **axes, int max, int *first_reduce) {
  uop_list l = uop_toposort(ast);
  uop *outs[64], *reds[64];
  int no = 0, nr = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_RANGE) continue;
    if ((range_kind(u) == RANGE_LOOP || range_kind(u) == RANGE_THREAD) && no < 64) outs[no++] = u;
    else if (range_kind(u) == RANGE_REDUCE && nr < 64) reds[nr++] = u;
  }
  free(l.v);
  qsort(outs, (size_t)no, sizeof(uop *), range_by_id);
  qsort(reds, (size_t)nr, sizeof(uop *), range_by_id);
  int n = 0;
  for (int i = 0; i < no && n < max; i++) axes[n++] = outs[i];
  if (first_reduce) *first_reduce = n;
  for (int i = 0; i < nr && n < max; i++) axes[n++] = reds[i];
  return n;
}

int kernel_next_range_id(uop *ast) {
  uop_list l = uop_toposort(ast);
  int m = -1;
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_RANGE && range_id(l.v[i]) > m) m = range_id(l.v[i]);
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
  int64_t size = range_max_size(r);
  /* a work group's threads remember the axis they split (+1: 0 is none) */
  uop *inner = make_range(amt, kernel_next_range_id(ast), inner_kind, inner_kind == RANGE_LOCAL ? range_id(r) + 1 : 0);
  uop *outer = size / amt == 1 ? NULL : make_range(size / amt, range_id(r), range_kind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
  uop *expr = outer ? uop_alu(OP_ADD, uop_muli(outer, amt), inner) : inner;
  uop *repl[2] = { outer, inner };
  return replace_range(ast, r, expr, repl, 2);
}

/* r (size s) -> top*(s/amt) + rest: the new range (kind `top_kind`, size
 * amt) takes the high part, r keeps the low one (GROUPTOP: each thread of a
 * group reduces one contiguous chunk). */
static uop *split_range_top(uop *ast, uop *r, int amt, int top_kind) {
  int64_t size = range_max_size(r);
  uop *top = make_range(amt, kernel_next_range_id(ast), top_kind, 0);
  uop *rest = size / amt == 1 ? NULL : make_range(size / amt, range_id(r), range_kind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
  uop *expr = rest ? uop_alu(OP_ADD, uop_muli(top, size / amt), rest) : top;
  uop *repl[2] = { rest, top };
  return replace_range(ast, r, expr, repl, 2);
}

bool kernel_depends_on(uop *u, uop *r, ptrmap *memo) {
  if (u == r) return true;
  void *m = pm_get(memo, u);
  if (m) return m == (void *)2;
  bool d = false;
  for (int i = 0; i < u->nsrc && !d; i++) d = kernel_depends_on(u->src[i], r, memo);
  pm_put(memo, u, (void *)(intptr_t)(d ? 2 : 1));
  return d;
}

/* PADTO: grow r to size; loads and stores that depend on it get r < old. */
static uop *pad_range(uop *ast, uop *r, int64_t newsize) {
  int64_t old = range_max_size(r);
  uop *nr = make_range(newsize, range_id(r), range_kind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
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
    if (u->op != OP_INDEX || !kernel_depends_on(u, nr, &dep)) continue;
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
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_RANGE && range_kind(l.v[i]) == kind) { n++; p *= range_max_size(l.v[i]); }
  free(l.v);
  if (product) *product = p;
  return n;
}

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
  int64_t size = range_max_size(r);
  /* a loop to a variable can be threaded or reordered; splitting it into
   * lanes needs a size known when compiling */
  if (range_is_symbolic(r) && o.op != OPT_THREAD && o.op != OPT_SWAP)
    return tg_seterr("opt %s:%d:%d: axis %d has a symbolic size ('%s'); only THREAD and SWAP apply to it", name, o.axis, o.arg, o.axis,
                     r->src[0]->op == OP_DEFINE_VAR ? r->src[0]->arg.s : "?");
  if (o.op == OPT_SWAP) {
    if (o.arg < 0 || o.arg >= fr || o.arg == o.axis) return tg_seterr("opt SWAP:%d:%d: the other axis must be a different output axis (0..%d)", o.axis, o.arg, fr - 1);
    uop *s = axes[o.arg];
    uop *r2 = make_range_to(r->src[0], range_id(s), range_kind(r), r->arg.n > 2 ? r->arg.v[2] : 0);
    uop *s2 = make_range_to(s->src[0], range_id(r), range_kind(s), s->arg.n > 2 ? s->arg.v[2] : 0);
    uop *tmp = make_range_to(r->src[0], 1 << 20, range_kind(r), 0);   /* avoid a clash while swapping */
    uop *a = replace_range(*ast, r, tmp, (uop *[]){ tmp }, 1);
    a = replace_range(a, s, s2, (uop *[]){ s2 }, 1);
    *ast = replace_range(a, tmp, r2, (uop *[]){ r2 }, 1);
    return 0;
  }
  if (o.arg < 1) return tg_seterr("opt %s:%d:%d: amount must be positive", name, o.axis, o.arg);
  if (o.op == OPT_PADTO) {
    if (range_kind(r) != RANGE_LOOP) return tg_seterr("opt PADTO:%d:%d: only plain output axes can be padded", o.axis, o.arg);
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
    if (range_kind(r) == RANGE_THREAD && o.op == OPT_UPCAST && size / o.arg < 1) return tg_seterr("opt UPCAST: nothing left to thread");
    int64_t up, un;
    count_kind(*ast, RANGE_UPCAST, &up);
    count_kind(*ast, RANGE_UNROLL, &un);
    if (up * un * o.arg > KOPT_MAX_LANES) return tg_seterr("opt %s:%d:%d: more than %d lanes in total", name, o.axis, o.arg, KOPT_MAX_LANES);
    if (o.arg < 2) return tg_seterr("opt %s:%d:%d: amount must be at least 2", name, o.axis, o.arg);
    *ast = split_range(*ast, r, o.arg, o.op == OPT_UPCAST ? RANGE_UPCAST : RANGE_UNROLL);
    return 0;
  }
  case OPT_THREAD: {
    if (!ren->has_threads) return tg_seterr("opt THREAD:%d:%d: %s kernels do not run on CPU cores (use LOCAL)", o.axis, o.arg, ren->name);
    if (range_kind(r) != RANGE_LOOP) return tg_seterr("opt THREAD:%d:%d: only a plain output axis can be threaded", o.axis, o.arg);
    if (count_kind(*ast, RANGE_THREAD, NULL)) return tg_seterr("opt THREAD:%d:%d: the kernel already has a thread axis", o.axis, o.arg);
    if (o.arg < 2 || o.arg > 1024) return tg_seterr("opt THREAD:%d:%d: thread count must be 2..1024", o.axis, o.arg);
    uop *t = make_range_to(r->src[0], range_id(r), RANGE_THREAD, o.arg);
    *ast = replace_range(*ast, r, t, (uop *[]){ t }, 1);
    return 0;
  }
  case OPT_LOCAL: case OPT_GROUP: case OPT_GROUPTOP: {
    if (!ren->has_local)
      return tg_seterr("opt %s:%d:%d: needs a device with work groups and local memory (a GPU); %s kernels have none", name, o.axis, o.arg, ren->name);
    if (o.op == OPT_LOCAL && range_kind(r) != RANGE_LOOP) return tg_seterr("opt LOCAL:%d:%d: only a plain output axis can be split into a work group", o.axis, o.arg);
    if (o.op != OPT_LOCAL && range_kind(r) != RANGE_REDUCE) return tg_seterr("opt %s:%d:%d: only a plain reduce axis can be grouped", name, o.axis, o.arg);
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
    if (l.v[i]->op == OP_RANGE && range_kind(l.v[i]) == RANGE_THREAD) n = (int)l.v[i]->arg.v[2];
  free(l.v);
  return n;
}
