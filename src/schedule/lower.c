/* lower.c: a node's value at symbolic indices, as kernel AST: movement ops
 * become index math, stored nodes and buffers become gated loads, ALU ops
 * stay (tinygrad's rangeify, one node at a time). */
#include "schedule/schedule_internal.h"
#include "uop/symbolic.h"
#include "uop/dims.h"
#include "util/settings.h"

/* ------------------------------------------------------------ lowering */


uop *sched_global_for(kctx *k, tg_buffer *b) {
  for (int i = 0; i < k->bufs.n; i++) if (k->bufs.v[i] == b) return k->globals.v[i];
  uop *g = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_scalar(b->dtype), ADDR_GLOBAL), arg_int(k->bufs.n));
  VEC_PUSH(k->bufs, b);
  VEC_PUSH(k->globals, g);
  return g;
}

static uop *bool_and(uop *a, uop *b) { return !a ? b : !b ? a : uop_alu(OP_AND, a, b); }

/* flat = sum(idx[i] * stride[i]) for a contiguous shape */
uop *sched_flat_index(uop *const *idx, const int64_t *shape, int nd) {
  uop *flat = idx_const(0);
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) {
    if (shape[i] != 1) flat = uop_alu(OP_ADD, flat, uop_muli(idx[i], stride));
    stride *= shape[i];
  }
  return flat;
}

uop *sched_lower(kctx *k, uop *u, uop *const *idx, uop *gate);

/* Where the loop over axis i of u ends: its size, or its variable. */
uop *sched_axis_end(const uop *u, int i) {
  uop *v = uop_dim_var(u, i);
  return v ? v : idx_const(u->shape[i]);
}

/* The address of a gated load only matters where the gate holds: a gate
 * `r < c` or `c < r` on a loop narrows r's range there, which lets the
 * index math fold (a padded view's `(h*20 + w) / 20` is h when w < 20).
 * Each narrowed loop is swapped for a variable with the narrower range,
 * the index simplified, and the loop put back (tinygrad's simplify given
 * valid). */
static void collect_bounds(uop *g, uop **rs, int64_t *lo, int64_t *hi, int *n) {
  if (g->op == OP_AND && g->dtype.scalar == TG_BOOL) { collect_bounds(g->src[0], rs, lo, hi, n); collect_bounds(g->src[1], rs, lo, hi, n); return; }
  if (g->op != OP_CMPLT) return;
  uop *a = g->src[0], *b = g->src[1], *r = NULL;
  int64_t l = INT64_MIN, h = INT64_MAX;
  if (a->op == OP_RANGE && b->op == OP_CONST) { r = a; h = b->arg.i - 1; }
  else if (b->op == OP_RANGE && a->op == OP_CONST) { r = b; l = a->arg.i + 1; }
  if (!r) return;
  int i = 0;
  while (i < *n && rs[i] != r) i++;
  if (i == *n) { if (*n == 8) return; rs[i] = r; lo[i] = uop_vmin(r); hi[i] = uop_vmax(r); (*n)++; }
  if (l > lo[i]) lo[i] = l;
  if (h < hi[i]) hi[i] = h;
}

static uop *simplify_given_gate(uop *ix, uop *gate) {
  static const char *const names[8] = { "tg_valid0", "tg_valid1", "tg_valid2", "tg_valid3", "tg_valid4", "tg_valid5", "tg_valid6", "tg_valid7" };
  uop *rs[8];
  int64_t lo[8], hi[8];
  int n = 0;
  collect_bounds(gate, rs, lo, hi, &n);
  if (!n) return ix;
  ptrmap to = { 0 }, back = { 0 };
  for (int i = 0; i < n; i++) {
    if (lo[i] > hi[i]) { pm_free(&to); pm_free(&back); return ix; }   /* never valid: leave it */
    uop *v = uop2(OP_DEFINE_VAR, DT_INDEX, idx_const(lo[i]), idx_const(hi[i]), arg_str(names[i]));
    pm_put(&to, rs[i], v);
    pm_put(&back, v, rs[i]);
  }
  uop *s = graph_substitute(uop_simplify(graph_substitute(ix, &to)), &back);
  pm_free(&to); pm_free(&back);
  return s;
}

/* ---- the lowering rules
 *
 * Lowering u at indices idx under gate is the rewrite of the key node
 * NOOP(u, gate or true, idx...) (also the key of the kernel's memo), by the
 * first rule of lower_rules that applies. Lowering is top-down (a node's
 * indices come from its user), so the callbacks lower their sources
 * themselves through sched_lower, which memoizes per kernel. */

#define LOWER_MAX_IDX (TG_MAX_DIMS * 4)   /* indices of one node */

static uop *key_gate(const uop *key) {
  uop *g = key->src[1];
  return g->op == OP_CONST && g->dtype.scalar == TG_BOOL && g->arg.i == 1 ? NULL : g;
}
static uop *const *key_idx(const uop *key) { return key->src + 2; }

/* lowering one source at the same indices */
static uop *lower_src_here(kctx *k, const rw_match *m, uop *src) { return sched_lower(k, src, key_idx(m->root), key_gate(m->root)); }

/* a value computed by its own kernel: read through its replacement (a view
 * of the kernel's buffer) */
static bool stored_elsewhere(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  uop *u = rw_get(m, "u");
  return u != k->root && is_marked(k->s, u);
}
static uop *load_stored(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  rinfo *ri = info_of(k->s, rw_get(m, "u"));
  if (!ri) { tg_seterr("internal: stored node %s used before its kernel", uop_op_name(rw_get(m, "u")->op)); k->failed = true; return idx_const(0); }
  if (ri->kernel >= 0) VEC_PUSH(k->deps, ri->kernel);
  k->via_repl++;
  uop *r = lower_src_here(k, m, ri->repl);
  k->via_repl--;
  return r;
}

/* a broadcast of few values: the broadcast of its small form, stored by a
 * kernel built now */
static bool has_small_form(void *ctx, const rw_match *m) { return pm_get(&((kctx *)ctx)->s->small, rw_get(m, "u")) != NULL; }
static uop *expand_small_form(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  uop *u = rw_get(m, "u"), *sm = pm_get(&k->s->small, u);
  if (!is_marked(k->s, sm)) {
    mark(k->s, sm);
    if (sched_build_kernel(k->s, sm) < 0) { k->failed = true; return idx_const(0); }
  }
  return lower_src_here(k, m, uop1(OP_EXPAND, u->dtype, sm, arg_ints(u->shape, u->ndim)));
}

/* the buffer after some assigns: depend on their kernels; reading it is not
 * a read of the old contents */
static uop *lower_after(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  uop *u = rw_get(m, "u");
  for (int i = 1; i < u->nsrc; i++) {
    rinfo *di = is_marked(k->s, u->src[i]) ? info_of(k->s, u->src[i]) : NULL;
    if (di && di->kernel >= 0) VEC_PUSH(k->deps, di->kernel);
  }
  k->via_repl++;
  uop *r = lower_src_here(k, m, u->src[0]);
  k->via_repl--;
  return r;
}

/* BUFFER[i]: a load, gated when under a gate */
static uop *lower_buffer(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  tg_buffer *b = rw_get(m, "u")->arg.p;
  uop *i = rw_get(m, "i"), *gate = key_gate(m->root);
  if (!k->via_repl) VEC_PUSH(k->raw_reads, b);
  uop *g = sched_global_for(k, b);
  uop *ix = gate ? uop3(OP_INDEX, g->dtype, g, simplify_given_gate(uop_simplify(i), gate), gate, arg_none())
                 : uop2(OP_INDEX, g->dtype, g, i, arg_none());
  return uop1(OP_LOAD, dt_scalar(b->dtype), ix, arg_none());
}

/* RESHAPE: the flat index, split by the source's shape */
static uop *lower_reshape(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *src = u->src[0], *sidx[LOWER_MAX_IDX];
  uop *flat = sched_flat_index(key_idx(m->root), u->shape, u->ndim);
  int64_t stride = 1;
  for (int j = src->ndim - 1; j >= 0; j--) {
    uop *v = flat;
    if (src->shape[j] == 1) v = idx_const(0);
    else {
      if (stride != 1) v = uop_alu(OP_IDIV, v, idx_const(stride));
      if (j != 0) v = uop_alu(OP_MOD, v, idx_const(src->shape[j]));
    }
    sidx[j] = uop_simplify(v);
    stride *= src->shape[j];
  }
  return sched_lower(ctx, src, sidx, key_gate(m->root));
}

/* PERMUTE: axis i of the source is axis perm[i]'s index */
static uop *lower_permute(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *sidx[LOWER_MAX_IDX];
  for (int i = 0; i < u->ndim; i++) sidx[u->arg.v[i]] = idx[i];
  return sched_lower(ctx, u->src[0], sidx, key_gate(m->root));
}

/* EXPAND: a broadcast axis reads index 0 */
static uop *lower_expand(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *sidx[LOWER_MAX_IDX];
  for (int i = 0; i < u->ndim; i++) sidx[i] = u->src[0]->shape[i] == 1 && u->shape[i] != 1 ? idx_const(0) : idx[i];
  return sched_lower(ctx, u->src[0], sidx, key_gate(m->root));
}

/* SHRINK: index + start */
static uop *lower_shrink(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *sidx[LOWER_MAX_IDX];
  for (int i = 0; i < u->ndim; i++) sidx[i] = uop_addi(idx[i], u->arg.v[2 * i]);
  return sched_lower(ctx, u->src[0], sidx, key_gate(m->root));
}

/* FLIP: size-1 - index on the flipped axes */
static uop *lower_flip(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *sidx[LOWER_MAX_IDX];
  for (int i = 0; i < u->ndim; i++) sidx[i] = u->arg.v[i] ? uop_alu(OP_SUB, idx_const(u->shape[i] - 1), idx[i]) : idx[i];
  return sched_lower(ctx, u->src[0], sidx, key_gate(m->root));
}

/* WINDOW: window (o, k) of axis i reads i = o*stride + k*dilation */
static uop *lower_window(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *sidx[LOWER_MAX_IDX];
  int n = (int)u->arg.v[0], lead = u->src[0]->ndim - n;
  for (int i = 0; i < lead; i++) sidx[i] = idx[i];
  for (int j = 0; j < n; j++)
    sidx[lead + j] = uop_alu(OP_ADD, uop_muli(idx[lead + j], u->arg.v[1 + n + j]), uop_muli(idx[lead + n + j], u->arg.v[1 + 2 * n + j]));
  return sched_lower(ctx, u->src[0], sidx, key_gate(m->root));
}

/* UNSHRINK_VAR: 0 past the variable, like a PAD */
static uop *lower_unshrink_var(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *gate = key_gate(m->root);
  uop *valid = uop_alu(OP_CMPLT, idx[u->arg.i], u->src[1]);
  uop *v = sched_lower(ctx, u->src[0], idx, bool_and(gate, valid));
  return uop_where(valid, v, uop_const(u->dtype, 0));
}

/* TAKE: row r = index[i...] (a value loaded in the kernel) reads table[r,
 * j...]; an index outside the table reads 0 (and a store through it is
 * dropped) */
static uop *lower_take(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *gate = key_gate(m->root), *sidx[LOWER_MAX_IDX];
  uop *tab = u->src[0], *ix = u->src[1];
  int n = ix->ndim;
  uop *row = uop_cast(sched_lower(k, ix, idx, gate), DT_INDEX);
  uop *valid = uop_simplify(bool_and(uop_alu(OP_CMPLT, idx_const(-1), row), uop_alu(OP_CMPLT, row, idx_const(tab->shape[0]))));
  /* a loaded row's range is unknown; the address uses (uint32)row % n,
   * which is row wherever valid and provably in [0, n) for the index math */
  if (!uop_is_const(valid, 1) && tab->shape[0] > 0 && tab->shape[0] <= UINT32_MAX) {
    dtype_t u32 = dt_scalar(TG_U32);
    row = uop_cast(uop_alu(OP_MOD, uop_cast(row, u32), uop_const_int(u32, tab->shape[0])), DT_INDEX);
  }
  sidx[0] = row;
  for (int i = 1; i < tab->ndim; i++) sidx[i] = idx[n + i - 1];
  if (uop_is_const(valid, 1)) return sched_lower(k, tab, sidx, gate);
  uop *v = sched_lower(k, tab, sidx, bool_and(gate, valid));
  return uop_where(valid, v, uop_const(u->dtype, 0));
}

/* PAD: index - before, valid inside the source; 0 outside */
static uop *lower_pad(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *gate = key_gate(m->root), *sidx[LOWER_MAX_IDX];
  uop *valid = NULL;
  for (int i = 0; i < u->ndim; i++) {
    int64_t b = u->arg.v[2 * i], size = u->src[0]->shape[i];
    sidx[i] = uop_addi(idx[i], -b);
    if (b > 0) valid = bool_and(valid, uop_alu(OP_CMPLT, idx_const(b - 1), idx[i]));
    if (u->arg.v[2 * i + 1] > 0) valid = bool_and(valid, uop_alu(OP_CMPLT, idx[i], idx_const(b + size)));
  }
  if (valid) valid = uop_simplify(valid);
  if (!valid || uop_is_const(valid, 1)) return sched_lower(ctx, u->src[0], sidx, gate);
  if (uop_is_const(valid, 0)) return uop_const(u->dtype, 0);
  uop *v = sched_lower(ctx, u->src[0], sidx, bool_and(gate, valid));
  return uop_where(valid, v, uop_const(u->dtype, 0));
}

/* REDUCE_AXIS: a REDUCE over new ranges for the reduced axes */
static uop *lower_reduce_axis(void *ctx, const rw_match *m) {
  kctx *k = ctx;
  uop *u = rw_get(m, "u"), *const *idx = key_idx(m->root), *src = u->src[0], *sidx[LOWER_MAX_IDX], *srcs[LOWER_MAX_IDX + 1];
  int nr = 0;
  for (int i = 0; i < u->ndim; i++) sidx[i] = idx[i];
  for (int a = 1; a < u->arg.n; a++) {
    int ax = (int)u->arg.v[a];
    int64_t rarg[2] = { k->next_range++, RANGE_REDUCE };
    uop *r = uop1(OP_RANGE, DT_INDEX, sched_axis_end(src, ax), arg_ints(rarg, 2));
    sidx[ax] = r;
    srcs[1 + nr++] = r;
  }
  srcs[0] = sched_lower(k, src, sidx, key_gate(m->root));
  return uop_new(OP_REDUCE, u->dtype, srcs, 1 + nr, arg_int(u->arg.v[0]));
}

/* nodes that are their source's values: SHRINK_VAR (the loops over the axis
 * end at the variable), CONTIGUOUS, DETACH, UNIQUE */
static uop *lower_through(void *ctx, const rw_match *m) { return lower_src_here(ctx, m, rw_get(m, "u")->src[0]); }

/* an ALU op of its sources' values */
static uop *lower_alu(void *ctx, const rw_match *m) {
  uop *u = rw_get(m, "u"), *srcs[3];
  for (int i = 0; i < u->nsrc; i++) srcs[i] = lower_src_here(ctx, m, u->src[i]);
  return uop_new(u->op, u->dtype, srcs, u->nsrc, u->arg);
}

static uop *cannot_lower(void *ctx, const rw_match *m) {
  tg_seterr("schedule: cannot lower %s inside a kernel", uop_op_name(rw_get(m, "u")->op));
  ((kctx *)ctx)->failed = true;
  return idx_const(0);
}

/* tinygrad's pm_mops with the loads and ALU ops: (NOOP u gate idx...) is u
 * at those indices. The op sets are disjoint, so only the first two and the
 * last rule's places matter; ALU ops, the most common, come early. */
static const tg_rule lower_rules[] = {
  { .pattern = "(NOOP u ...)", .guard = stored_elsewhere, .fn = load_stored, .name = "stored node: its buffer's view" },
  { .pattern = "(NOOP u ...)", .guard = has_small_form, .fn = expand_small_form, .name = "broadcast of its small form" },
  { .pattern = "(NOOP u:{ALU} ...)", .fn = lower_alu, .name = "ALU of the lowered sources" },
  { .pattern = "(NOOP u:AFTER ...)", .fn = lower_after, .name = "AFTER: the buffer after its assigns" },
  { .pattern = "(NOOP u:BUFFER _ i ...)", .fn = lower_buffer, .name = "BUFFER[i]: a load" },
  { .pattern = "(NOOP u:{CONST,DEFINE_VAR} ...)", .replace = "u", .name = "CONST, DEFINE_VAR: itself" },
  { .pattern = "(NOOP u:ARANGE _ i ...)", .replace = "i", .name = "ARANGE[i]: i" },
  { .pattern = "(NOOP u:RESHAPE ...)", .fn = lower_reshape, .name = "RESHAPE: split the flat index" },
  { .pattern = "(NOOP u:PERMUTE ...)", .fn = lower_permute, .name = "PERMUTE: permuted indices" },
  { .pattern = "(NOOP u:EXPAND ...)", .fn = lower_expand, .name = "EXPAND: 0 on broadcast axes" },
  { .pattern = "(NOOP u:SHRINK ...)", .fn = lower_shrink, .name = "SHRINK: index + start" },
  { .pattern = "(NOOP u:UNSHRINK_VAR ...)", .fn = lower_unshrink_var, .name = "UNSHRINK_VAR: 0 past the variable" },
  { .pattern = "(NOOP u:FLIP ...)", .fn = lower_flip, .name = "FLIP: size-1 - index" },
  { .pattern = "(NOOP u:WINDOW ...)", .fn = lower_window, .name = "WINDOW: o*stride + k*dilation" },
  { .pattern = "(NOOP u:TAKE ...)", .fn = lower_take, .name = "TAKE: the loaded row, gated" },
  { .pattern = "(NOOP u:PAD ...)", .fn = lower_pad, .name = "PAD: index - before, gated" },
  { .pattern = "(NOOP u:REDUCE_AXIS ...)", .fn = lower_reduce_axis, .name = "REDUCE_AXIS: a REDUCE over new ranges" },
  { .pattern = "(NOOP u:{SHRINK_VAR,CONTIGUOUS,DETACH,UNIQUE} ...)", .fn = lower_through, .name = "its source's values" },
  { .pattern = "(NOOP u ...)", .fn = cannot_lower, .name = "cannot lower" },
};

/* A chain of ALU ops thousands deep (a loop of adds never realized) would
 * lower as deep a recursion, a source at a time, and overflow the stack.
 * Past LOWER_DEEP nested lowerings, the ALU nodes below u that the ALU rule
 * lowers at u's indices (not stored by a kernel of their own, not read
 * through a small form: lower_rules' first two guards) are lowered first,
 * bottom-up from an explicit stack, so each then finds its sources in the
 * memo and the recursion stays shallow. Shallower graphs lower exactly as
 * before. */
#define LOWER_DEEP 256
/* Chains through views (a flip or a permute between the ops) lower one
 * level each, with no shortcut: past this many nested lowerings, an error
 * instead of a stack overflow. */
#define LOWER_MAX_NEST 2048
static bool lowers_as_alu(kctx *k, uop *u) {
  return uop_is_alu(u->op) && !(u != k->root && is_marked(k->s, u)) && !pm_get(&k->s->small, u);
}
/* u's sources that lower as ALU ops (uop_toposort_by's edges) */
typedef struct { kctx *k; uop *srcs[4]; } alu_edges;
static int alu_sources(void *ctx, uop *u, uop *const **out) {
  alu_edges *e = ctx;
  int n = 0;
  for (int i = 0; i < u->nsrc && n < 4; i++)
    if (lowers_as_alu(e->k, u->src[i])) e->srcs[n++] = u->src[i];
  *out = e->srcs;
  return n;
}
static void lower_alu_chain_first(kctx *k, uop *u, uop *const *idx, uop *gate) {
  alu_edges e = { k, { 0 } };
  uop_list l = uop_toposort_by(u, alu_sources, &e);   /* children first, u last */
  for (int i = 0; i < l.n - 1 && !k->failed; i++) sched_lower(k, l.v[i], idx, gate);   /* its ALU sources are in the memo by now */
  free(l.v);
}

uop *sched_lower(kctx *k, uop *u, uop *const *idx, uop *gate) {
  static tg_matcher *lowering;
  uop *key_src[LOWER_MAX_IDX + 2];
  key_src[0] = u;
  key_src[1] = gate ? gate : uop_const_int(DT_BOOL, 1);
  int nd = u->ndim > 0 ? u->ndim : 0;
  for (int i = 0; i < nd; i++) key_src[2 + i] = idx[i];
  uop *key = uop_new(OP_NOOP, DT_VOID, key_src, 2 + nd, arg_none());
  uop *r = pm_get(&k->memo, key);
  if (r) return r;
  const tg_matcher *m = matcher_once(&lowering, lower_rules, RW_NRULES(lower_rules), "lower");
  if (k->depth >= LOWER_MAX_NEST) {   /* deeper would overflow the stack (each level is ~10 frames) */
    if (!k->failed)
      tg_seterr("schedule: a kernel's graph is more than %d views and operations deep (a long chain never realized): realize part "
                "of it first (tg_realize)", LOWER_MAX_NEST);
    k->failed = true;
    return idx_const(0);
  }
  if (!k->depth++) k->pass = matcher_pass_begin(m);   /* a pass per lowering the kernel builder asks for */
  if (k->depth > k->deep_from + LOWER_DEEP && lowers_as_alu(k, u)) {
    int was = k->deep_from;
    k->deep_from = k->depth;   /* the walk's own lowerings start no walk of their own unless as deep again */
    lower_alu_chain_first(k, u, idx, gate);
    k->deep_from = was;
  }
  r = matcher_rewrite_node(m, &k->pass, key, k);
  if (!--k->depth) matcher_pass_end(&k->pass);
  pm_put(&k->memo, key, r);
  return r;
}

/* Does the kernel value v load from buffer g at an index other than ix? */
bool sched_reads_elsewhere(uop *v, uop *g, uop *ix) {
  uop *want = uop_simplify(ix);
  uop_list l = uop_toposort(v);
  bool found = false;
  for (int i = 0; i < l.n && !found; i++) {
    uop *x = l.v[i];
    if (x->op == OP_LOAD && x->src[0]->src[0] == g) found = uop_simplify(x->src[0]) != want;
  }
  free(l.v);
  return found;
}

