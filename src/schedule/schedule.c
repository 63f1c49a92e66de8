/* schedule.c: which nodes are realized, and lowering each realized node
 * into a kernel AST by evaluating the tensor graph at symbolic indices.
 *
 * Fusion rules (tinygrad's):
 *  - roots, CONTIGUOUS, COPY and ASSIGN are stored;
 *  - a REDUCE_AXIS is stored when it would otherwise be recomputed: when it is
 *    broadcast back by an EXPAND (softmax, layernorm), sits under a PAD, feeds
 *    another reduce, or has several consumers;
 *  - everything else (elementwise chains, movement ops) is computed inside
 *    the kernel that consumes it. */
#include "schedule/schedule.h"
#include "schedule/call.h"
#include "uop/symbolic.h"
#include "uop/dims.h"
#include "util/settings.h"

typedef struct {
  tg_buffer *buf;       /* the buffer the node's value lands in */
  uop *repl;            /* what the node becomes: a view over BUFFER(buf) */
  int kernel;           /* the kernel computing it, -1 when none */
} rinfo;

typedef struct {
  ptrmap marked;        /* nodes to store: uop -> rinfo* (NULL until built) */
  ptrmap walked;        /* nodes already searched for reduces under an expand */
  ptrmap nchildren;     /* uop -> consumer count */
  ptrmap device;        /* uop -> tg_device* */
  ptrmap roots;         /* the nodes asked for: stored in their own layout */
  ptrmap small;         /* big node -> its values before the broadcast (retained), see small_form */
  tg_device *default_dev;
  schedule *out;
  VEC(rinfo *) infos;
  /* per kernel: dependencies, raw buffer reads, written buffer */
  VEC(int *) deps; VEC(int) ndeps;
  VEC(tg_buffer **) reads; VEC(int) nreads;
  VEC(tg_buffer *) writes;
  ptrmap lowered;       /* kernel structure (lower_key) -> lowered_kernel*: identical kernels lower once */
  VEC(struct call_made *) calls;   /* function calls instantiated so far (build_call) */
} sctx;

static bool is_marked(sctx *s, const uop *u) { return pm_get(&s->marked, u) != NULL; }
static int64_t numel_of(const uop *u) {
  int64_t n = 1;
  for (int i = 0; i < u->ndim; i++) n *= u->shape[i];
  return n;
}
static void mark(sctx *s, uop *u) { if (!is_marked(s, u)) pm_put(&s->marked, u, (void *)1); }
static rinfo *info_of(sctx *s, const uop *u) {
  void *p = pm_get(&s->marked, u);
  return p == (void *)1 ? NULL : p;
}

/* A BUFFER under reshapes (and AFTERs, DETACHes, symbolic axes):
 * contiguous memory. */
static bool is_buffer_view(const uop *u) {
  while (u->op == OP_RESHAPE || u->op == OP_AFTER || u->op == OP_DETACH || u->op == OP_SHRINK_VAR) u = u->src[0];
  return u->op == OP_BUFFER;
}
/* What such a view becomes once its AFTERs ran: RESHAPE(BUFFER) or BUFFER,
 * with its symbolic axes. */
static uop *strip_after(uop *u) {
  uop *b = u, *r;
  while (b->op != OP_BUFFER) b = b->src[0];
  uop *x = u;
  while (x->op == OP_SHRINK_VAR) x = x->src[0];
  if (u->ndim == 1 && u->shape[0] == b->shape[0]) r = b;
  else if (x->op == OP_RESHAPE && x->src[0] == b) r = x;
  else r = uop1(OP_RESHAPE, u->dtype, b, arg_ints(u->shape, u->ndim));
  return uop_with_dims_of(r, u);
}
static tg_buffer *view_buffer(const uop *u) {
  while (u->nsrc && u->op != OP_BUFFER) u = u->src[0];
  return u->op == OP_BUFFER ? u->arg.p : NULL;
}
/* ---- zero-kernel slices: a root that is a contiguous range of a realized
 * buffer (rows of a matrix, a slice of the leading axis) becomes a view of
 * that memory (tinygrad's BUFFER_VIEW), on devices whose buffers are host
 * memory; not while a JIT captures (its replay needs a kernel writing every
 * output). */
static _Thread_local bool no_views;
bool schedule_allow_views(bool on) { bool prev = !no_views; no_views = !on; return prev; }

static uop *slice_view(uop *r) {
  if (no_views || r->dim_var) return NULL;
  uop *u = r->op == OP_CONTIGUOUS ? r->src[0] : r;
  while (u->op == OP_RESHAPE) u = u->src[0];
  if (u->op != OP_SHRINK) return NULL;
  const uop *s0 = u->src[0], *x = s0;
  while (x->op == OP_RESHAPE) x = x->src[0];
  if (x->op != OP_BUFFER || s0->dim_var) return NULL;
  tg_buffer *b = x->arg.p;
  if (!b->dev->host_memory || b->placeholder || numel_of(s0) != b->numel) return NULL;
  /* contiguous: after the last axis that is not whole, every axis is; before it, one index each */
  const int64_t *a = u->arg.v;
  int nd = s0->ndim, k = -1;
  for (int i = 0; i < nd; i++) if (a[2 * i] != 0 || a[2 * i + 1] != s0->shape[i]) k = i;
  if (k < 0) return NULL;
  for (int i = 0; i < k; i++) if (a[2 * i + 1] - a[2 * i] != 1) return NULL;
  int64_t offset = 0, stride = 1;
  for (int i = nd - 1; i >= 0; i--) { offset += a[2 * i] * stride; stride *= s0->shape[i]; }
  tg_buffer *v = buffer_view(b, offset, numel_of(u));
  if (!v) { tg_clear_error(); return NULL; }   /* no view: the root is stored by a kernel as before */
  uop *bv = uop0(OP_BUFFER, dt_scalar(v->dtype), arg_ptr(v));
  buffer_release(v);   /* the node holds it */
  return r->ndim == 1 ? bv : uop1(OP_RESHAPE, r->dtype, bv, arg_ints(r->shape, r->ndim));
}

/* the view an ASSIGN writes through (following chained assigns) */
static uop *assign_view(uop *u) {
  while (u->op == OP_ASSIGN) u = u->src[0];
  return u;
}

/* Marks every REDUCE_AXIS reachable from u through unstored nodes. */
static void mark_reduces_below(sctx *s, uop *u) {
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, u);
  while (stack.n) {
    uop *x = stack.v[--stack.n];
    if (pm_get(&s->walked, x) || is_marked(s, x)) continue;
    pm_put(&s->walked, x, (void *)1);
    if (x->op == OP_REDUCE_AXIS) { mark(s, x); continue; }
    if (x->op == OP_BUFFER) continue;
    for (int i = 0; i < x->nsrc; i++) VEC_PUSH(stack, x->src[i]);
  }
  VEC_FREE(stack);
}

/* How much work is computed below u before reaching stored nodes: ALU ops
 * (transcendentals 4), loads of memory one; with index_math, movement ops
 * too (PAD and WINDOW 4, for their gates and window sums) and stored nodes
 * one. Stops counting at `limit`; *reads_memory says whether it loads what
 * it walked (with find_reads, the walk goes on past `limit`, up to
 * COMPUTE_WALK_MAX nodes, to find out). */
#define COMPUTE_WALK_MAX 256
static int compute_below(sctx *s, uop *u, int limit, bool index_math, bool *reads_memory, bool find_reads) {
  ptrmap seen = { 0 };
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, u);
  int n = 0, walked = 0;
  while (stack.n && (n < limit || (find_reads && !*reads_memory && walked < COMPUTE_WALK_MAX))) {
    walked++;
    uop *x = stack.v[--stack.n];
    if (pm_get(&seen, x)) continue;
    pm_put(&seen, x, (void *)1);
    if (x->op == OP_BUFFER) { n++; *reads_memory = true; continue; }
    if (x != u && is_marked(s, x)) { n += index_math; *reads_memory = true; continue; }
    if (uop_is_alu(x->op) && x->op != OP_CAST) n += uop_is_costly(x->op) ? 4 : 1;
    else if (index_math && (x->op == OP_PAD || x->op == OP_WINDOW)) n += 4;
    else if (index_math && uop_is_movement(x->op) && x->op != OP_EXPAND) n += 1;
    for (int i = 0; i < x->nsrc; i++) VEC_PUSH(stack, x->src[i]);
  }
  VEC_FREE(stack); pm_free(&seen);
  return n;
}

/* An EXPAND repeats its source's computation for every copy. When that
 * computation is more than a few ops (a backward pass's elementwise chain
 * feeding a convolution's window view), store it once instead. */
#define EXPAND_RECOMPUTE_LIMIT 12
#define EXPAND_HEAVY_REUSE 64
#define EXPAND_HEAVY_LIMIT 4
#define EXPAND_SMALL_SOURCE 4096
#define EXPAND_BIG_CONSUMER (1 << 18)
static void mark_costly_expand_source(sctx *s, uop *e) {
  uop *src = e->src[0];
  bool window = false;
  while ((uop_is_movement(src->op) && src->op != OP_EXPAND) || src->op == OP_WINDOW) {
    window |= src->op == OP_WINDOW;
    src = src->src[0];
  }
  if (is_marked(s, src) || src->op == OP_BUFFER || src->op == OP_CONST || uop_is_movement(src->op)) return;
  int64_t before = numel_of(src), after = numel_of(e);
  if (after < before * 4) return;   /* not repeated much */
  /* index-only math (aranges, constants) is cheap for the compiler to hoist;
   * what costs is recomputing from loaded data */
  /* a convolution's input (a window view, read once per output channel and
   * kernel tap) is stored for even a few ops: a bias and ReLU recomputed at
   * every read cost about a third of the next layer's multiply-adds, and
   * keep them from vectorizing. (Not a quantized block's scale broadcast
   * over its values: that decoding belongs in the fused kernel.) */
  int limit = window && after >= before * EXPAND_HEAVY_REUSE ? EXPAND_HEAVY_LIMIT : EXPAND_RECOMPUTE_LIMIT;
  /* a few values (per channel) broadcast over a big tensor: one division or
   * square root is enough (a batch norm's 1/sqrt(var + eps) and its
   * gradient, else recomputed for every element, and scalar when the
   * channel is the innermost axis) */
  if (before <= EXPAND_SMALL_SOURCE && after >= EXPAND_BIG_CONSUMER && after >= before * EXPAND_HEAVY_REUSE) limit = EXPAND_HEAVY_LIMIT;
  bool reads_memory = false;
  if (compute_below(s, src, limit, false, &reads_memory, limit == EXPAND_HEAVY_LIMIT) >= limit && reads_memory) mark(s, src);
}

/* u's values computed before the broadcast that made u big: EXPAND(x) is
 * x, and an elementwise op over such sources is the same op at (the
 * broadcast of) their shapes; NULL otherwise. A backward pass builds such
 * chains (a batch norm's per-channel gradient terms, expanded first and
 * combined after), which the kernel then computes once per element. */
static uop *small_form(uop *u, ptrmap *memo, int depth) {
  void *m = pm_get(memo, u);
  if (m) return m == (void *)1 ? NULL : m;
  uop *r = NULL;
  if (u->op == OP_EXPAND) r = u->src[0];
  else if (uop_is_alu(u->op) && u->nsrc <= 3 && u->ndim > 0 && depth < 64 && !uop_has_var_dims(u)) {
    uop *xs[3];
    int64_t shape[TG_MAX_DIMS * 4];
    int nd = u->ndim;
    bool ok = true;
    for (int i = 0; i < nd; i++) shape[i] = 1;
    for (int j = 0; j < u->nsrc && ok; j++) {
      xs[j] = small_form(u->src[j], memo, depth + 1);
      ok = xs[j] && xs[j]->ndim == nd;
      for (int i = 0; i < nd && ok; i++)
        if (xs[j]->shape[i] != 1) {
          ok = shape[i] == 1 || shape[i] == xs[j]->shape[i];
          shape[i] = xs[j]->shape[i];
        }
    }
    if (ok) {
      for (int j = 0; j < u->nsrc; j++) {
        bool same = true;
        for (int i = 0; i < nd; i++) same &= xs[j]->shape[i] == shape[i];
        if (!same) xs[j] = uop1(OP_EXPAND, xs[j]->dtype, xs[j], arg_ints(shape, nd));
      }
      r = uop_new(u->op, u->dtype, xs, u->nsrc, u->arg);
    }
  }
  pm_put(memo, u, r ? r : (void *)1);
  return r;
}

/* Big elementwise nodes whose values come from a few broadcast ones (per
 * channel) through a division or square root: computed at the small shape
 * in a tiny kernel of their own (when a kernel first needs them), then
 * broadcast. */
static void find_small_forms(sctx *s, const uop_list *topo) {
  ptrmap memo = { 0 };
  for (int i = 0; i < topo->n; i++) {
    uop *u = topo->v[i];
    if (!uop_is_alu(u->op) || u->ndim < 1 || uop_has_var_dims(u)) continue;
    if (numel_of(u) < EXPAND_BIG_CONSUMER) continue;
    uop *x = small_form(u, &memo, 0);
    if (!x || !uop_is_alu(x->op)) continue;
    bool reads = false;
    if (numel_of(x) > EXPAND_SMALL_SOURCE || compute_below(s, x, EXPAND_HEAVY_LIMIT, false, &reads, true) < EXPAND_HEAVY_LIMIT || !reads) continue;
    uop_retain(x);
    pm_put(&s->small, u, x);
  }
  pm_free(&memo);
}

/* An unstored computation that several kernels read is computed again in
 * each of them. When it is a reduce, or costly elementwise work (a backward
 * pass's col2im feeding a batch norm's gradient sums, costed with its index
 * math), store it once instead: the kernels then read one buffer. */
#define SHARED_RECOMPUTE_LIMIT 48

/* ... or elementwise work that reads SHARED_BIG_READS or more tensors as
 * big as itself (a pooling gradient through a batch norm's recomputed
 * forward): each kernel recomputing it would read them all again, where the
 * stored result is one read */
#define SHARED_BIG_READS 3
static int big_reads_below(sctx *s, uop *u) {
  int64_t numel = numel_of(u);
  if (numel < (1 << 16) || uop_has_var_dims(u)) return 0;
  ptrmap seen = { 0 };
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, u);
  int n = 0, walked = 0;
  while (stack.n && walked++ < COMPUTE_WALK_MAX) {
    uop *x = stack.v[--stack.n];
    if (pm_get(&seen, x)) continue;
    pm_put(&seen, x, (void *)1);
    if (x->op == OP_BUFFER || (x != u && is_marked(s, x))) {
      n += numel_of(x) * 2 >= numel;
      continue;
    }
    for (int i = 0; i < x->nsrc; i++) VEC_PUSH(stack, x->src[i]);
  }
  VEC_FREE(stack); pm_free(&seen);
  return n;
}

/* The kernels whose loops reach a node, up to two (enough to tell a shared
 * node): a stored node's kernel reaches its sources down to stored nodes. */
typedef struct { const uop *k[2]; int n; } kernel_pair;
static void pair_add(kernel_pair *p, const uop *k) {
  if (p->n < 2 && !(p->n == 1 && p->k[0] == k)) p->k[p->n++] = k;
}

/* Stores the costly nodes that two or more kernels reach: a reduce, or
 * elementwise work of SHARED_RECOMPUTE_LIMIT or more. One pass, consumers
 * before sources: a node's kernels are its stored consumers and the kernels
 * of its unstored ones, all decided by then, so the outermost shared node
 * is stored first and what it computes below counts as one kernel (a chain
 * of residual adds, one per layer, is decided in the same pass). */
static void mark_shared_costly(sctx *s, const uop_list *topo) {
  ptrmap pos = { 0 };   /* node -> index in topo + 1 */
  for (int i = 0; i < topo->n; i++) pm_put(&pos, topo->v[i], (void *)(intptr_t)(i + 1));
  /* consumers of each node, as lists in one array */
  int *start = tg_xcalloc((size_t)topo->n + 1, sizeof(int)), *fill, *cons;
  for (int i = 0; i < topo->n; i++)
    for (int j = 0; j < topo->v[i]->nsrc; j++) {
      intptr_t p = (intptr_t)pm_get(&pos, topo->v[i]->src[j]);
      if (p) start[p]++;
    }
  for (int i = 0; i < topo->n; i++) start[i + 1] += start[i];
  fill = tg_xmalloc(sizeof(int) * ((size_t)topo->n + 1));
  memcpy(fill, start, sizeof(int) * ((size_t)topo->n + 1));
  cons = tg_xmalloc(sizeof(int) * (size_t)(start[topo->n] ? start[topo->n] : 1));
  for (int i = 0; i < topo->n; i++)
    for (int j = 0; j < topo->v[i]->nsrc; j++) {
      intptr_t p = (intptr_t)pm_get(&pos, topo->v[i]->src[j]);
      if (p) cons[fill[p - 1]++] = i;
    }
  kernel_pair *kp = tg_xcalloc((size_t)(topo->n ? topo->n : 1), sizeof(kernel_pair));
  for (int i = topo->n - 1; i >= 0; i--) {
    uop *x = topo->v[i];
    if (x->op == OP_BUFFER) continue;
    for (int c = start[i]; c < start[i + 1] && kp[i].n < 2; c++) {
      uop *u = topo->v[cons[c]];
      if (is_marked(s, u)) pair_add(&kp[i], u);
      else for (int q = 0; q < kp[cons[c]].n; q++) pair_add(&kp[i], kp[cons[c]].k[q]);
    }
    if (is_marked(s, x) || x->ndim < 1 || kp[i].n < 2) continue;
    /* a reduce is always worth storing (an optimizer's two moment updates
     * reading one gradient through a reshape); elementwise work when costly */
    bool reads = false;
    if (x->op == OP_REDUCE_AXIS || (uop_is_alu(x->op) && compute_below(s, x, SHARED_RECOMPUTE_LIMIT, true, &reads, false) >= SHARED_RECOMPUTE_LIMIT) ||
        (uop_is_alu(x->op) && big_reads_below(s, x) >= SHARED_BIG_READS))
      mark(s, x);
  }
  free(kp); free(cons); free(fill); free(start);
  pm_free(&pos);
}

/* ------------------------------------------------------------ lowering */

typedef struct {
  sctx *s;
  uop *root;
  ptrmap memo;
  int next_range;
  VEC(tg_buffer *) bufs;
  VEC(uop *) globals;
  VEC(int) deps;
  VEC(tg_buffer *) raw_reads;
  int via_repl;           /* > 0 while lowering a stored node's replacement */
  bool failed;
} kctx;

static uop *global_for(kctx *k, tg_buffer *b) {
  for (int i = 0; i < k->bufs.n; i++) if (k->bufs.v[i] == b) return k->globals.v[i];
  uop *g = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt_scalar(b->dtype), ADDR_GLOBAL), arg_int(k->bufs.n));
  VEC_PUSH(k->bufs, b);
  VEC_PUSH(k->globals, g);
  return g;
}

static uop *idx_const(int64_t v) { return uop_const_int(DT_INDEX, v); }
static uop *bool_and(uop *a, uop *b) { return !a ? b : !b ? a : uop_alu(OP_AND, a, b); }

/* flat = sum(idx[i] * stride[i]) for a contiguous shape */
static uop *flat_index(uop *const *idx, const int64_t *shape, int nd) {
  uop *flat = idx_const(0);
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) {
    if (shape[i] != 1) flat = uop_alu(OP_ADD, flat, uop_muli(idx[i], stride));
    stride *= shape[i];
  }
  return flat;
}

static uop *lower(kctx *k, uop *u, uop *const *idx, uop *gate);
static int build_kernel(sctx *s, uop *u);

/* Where the loop over axis i of u ends: its size, or its variable. */
static uop *axis_end(const uop *u, int i) {
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

static uop *lower_uncached(kctx *k, uop *u, uop *const *idx, uop *gate) {
  sctx *s = k->s;
  int nd = u->ndim;
  uop *sidx[TG_MAX_DIMS * 4];
  if (u != k->root && is_marked(s, u)) {
    rinfo *ri = info_of(s, u);
    if (!ri) { tg_seterr("internal: stored node %s used before its kernel", uop_op_name(u->op)); k->failed = true; return idx_const(0); }
    if (ri->kernel >= 0) VEC_PUSH(k->deps, ri->kernel);
    k->via_repl++;
    uop *r = lower(k, ri->repl, idx, gate);
    k->via_repl--;
    return r;
  }
  uop *sm = pm_get(&s->small, u);
  if (sm) {
    /* the broadcast of its small form, stored by a kernel built now */
    if (!is_marked(s, sm)) {
      mark(s, sm);
      if (build_kernel(s, sm) < 0) { k->failed = true; return idx_const(0); }
    }
    return lower(k, uop1(OP_EXPAND, u->dtype, sm, arg_ints(u->shape, u->ndim)), idx, gate);
  }
  switch (u->op) {
  case OP_AFTER: {
    /* the buffer after some assigns: depend on their kernels; reading it is
     * not a read of the old contents */
    for (int i = 1; i < u->nsrc; i++) {
      rinfo *di = is_marked(s, u->src[i]) ? info_of(s, u->src[i]) : NULL;
      if (di && di->kernel >= 0) VEC_PUSH(k->deps, di->kernel);
    }
    k->via_repl++;
    uop *r = lower(k, u->src[0], idx, gate);
    k->via_repl--;
    return r;
  }
  case OP_BUFFER: {
    tg_buffer *b = u->arg.p;
    if (!k->via_repl) VEC_PUSH(k->raw_reads, b);
    uop *g = global_for(k, b);
    uop *ix = gate ? uop3(OP_INDEX, g->dtype, g, simplify_given_gate(uop_simplify(idx[0]), gate), gate, arg_none())
                   : uop2(OP_INDEX, g->dtype, g, idx[0], arg_none());
    return uop1(OP_LOAD, dt_scalar(b->dtype), ix, arg_none());
  }
  case OP_CONST: case OP_DEFINE_VAR: return u;
  case OP_ARANGE: return idx[0];
  case OP_RESHAPE: {
    uop *src = u->src[0];
    uop *flat = flat_index(idx, u->shape, nd);
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
    return lower(k, src, sidx, gate);
  }
  case OP_PERMUTE:
    for (int i = 0; i < nd; i++) sidx[u->arg.v[i]] = idx[i];
    return lower(k, u->src[0], sidx, gate);
  case OP_EXPAND:
    for (int i = 0; i < nd; i++) sidx[i] = u->src[0]->shape[i] == 1 && u->shape[i] != 1 ? idx_const(0) : idx[i];
    return lower(k, u->src[0], sidx, gate);
  case OP_SHRINK:
    for (int i = 0; i < nd; i++) sidx[i] = uop_addi(idx[i], u->arg.v[2 * i]);
    return lower(k, u->src[0], sidx, gate);
  case OP_SHRINK_VAR:   /* the loops over the axis end at the variable */
    return lower(k, u->src[0], idx, gate);
  case OP_UNSHRINK_VAR: {   /* 0 past the variable, like a PAD */
    uop *valid = uop_alu(OP_CMPLT, idx[u->arg.i], u->src[1]);
    uop *v = lower(k, u->src[0], idx, bool_and(gate, valid));
    return uop_where(valid, v, uop_const(u->dtype, 0));
  }
  case OP_FLIP:
    for (int i = 0; i < nd; i++) sidx[i] = u->arg.v[i] ? uop_alu(OP_SUB, idx_const(u->shape[i] - 1), idx[i]) : idx[i];
    return lower(k, u->src[0], sidx, gate);
  case OP_WINDOW: {
    /* window (o, k) of axis i reads i = o*stride + k*dilation */
    int n = (int)u->arg.v[0], lead = u->src[0]->ndim - n;
    for (int i = 0; i < lead; i++) sidx[i] = idx[i];
    for (int j = 0; j < n; j++)
      sidx[lead + j] = uop_alu(OP_ADD, uop_muli(idx[lead + j], u->arg.v[1 + n + j]), uop_muli(idx[lead + n + j], u->arg.v[1 + 2 * n + j]));
    return lower(k, u->src[0], sidx, gate);
  }
  case OP_TAKE: {
    /* row r = index[i...] (a value loaded in the kernel): reads table[r, j...];
     * an index outside the table reads 0 (and a store through it is dropped) */
    uop *tab = u->src[0], *ix = u->src[1];
    int m = ix->ndim;
    uop *row = uop_cast(lower(k, ix, idx, gate), DT_INDEX);
    uop *valid = uop_simplify(bool_and(uop_alu(OP_CMPLT, idx_const(-1), row), uop_alu(OP_CMPLT, row, idx_const(tab->shape[0]))));
    /* a loaded row's range is unknown; the address uses (uint32)row % n,
     * which is row wherever valid and provably in [0, n) for the index math */
    if (!uop_is_const(valid, 1) && tab->shape[0] > 0 && tab->shape[0] <= UINT32_MAX) {
      dtype_t u32 = dt_scalar(TG_U32);
      row = uop_cast(uop_alu(OP_MOD, uop_cast(row, u32), uop_const_int(u32, tab->shape[0])), DT_INDEX);
    }
    sidx[0] = row;
    for (int i = 1; i < tab->ndim; i++) sidx[i] = idx[m + i - 1];
    if (uop_is_const(valid, 1)) return lower(k, tab, sidx, gate);
    uop *v = lower(k, tab, sidx, bool_and(gate, valid));
    return uop_where(valid, v, uop_const(u->dtype, 0));
  }
  case OP_PAD: {
    uop *valid = NULL;
    for (int i = 0; i < nd; i++) {
      int64_t b = u->arg.v[2 * i], size = u->src[0]->shape[i];
      sidx[i] = uop_addi(idx[i], -b);
      if (b > 0) valid = bool_and(valid, uop_alu(OP_CMPLT, idx_const(b - 1), idx[i]));
      if (u->arg.v[2 * i + 1] > 0) valid = bool_and(valid, uop_alu(OP_CMPLT, idx[i], idx_const(b + size)));
    }
    if (valid) valid = uop_simplify(valid);
    if (!valid || uop_is_const(valid, 1)) return lower(k, u->src[0], sidx, gate);
    if (uop_is_const(valid, 0)) return uop_const(u->dtype, 0);
    uop *v = lower(k, u->src[0], sidx, bool_and(gate, valid));
    return uop_where(valid, v, uop_const(u->dtype, 0));
  }
  case OP_REDUCE_AXIS: {
    uop *src = u->src[0];
    uop *srcs[TG_MAX_DIMS + 1];
    int nr = 0;
    for (int i = 0; i < nd; i++) sidx[i] = idx[i];
    for (int a = 1; a < u->arg.n; a++) {
      int ax = (int)u->arg.v[a];
      int64_t rarg[2] = { k->next_range++, RANGE_REDUCE };
      uop *r = uop1(OP_RANGE, DT_INDEX, axis_end(src, ax), arg_ints(rarg, 2));
      sidx[ax] = r;
      srcs[1 + nr++] = r;
    }
    srcs[0] = lower(k, src, sidx, gate);
    return uop_new(OP_REDUCE, u->dtype, srcs, 1 + nr, arg_int(u->arg.v[0]));
  }
  case OP_CONTIGUOUS: case OP_DETACH: case OP_UNIQUE:
    return lower(k, u->src[0], idx, gate);
  default:
    if (uop_is_alu(u->op)) {
      uop *srcs[3];
      for (int i = 0; i < u->nsrc; i++) srcs[i] = lower(k, u->src[i], idx, gate);
      return uop_new(u->op, u->dtype, srcs, u->nsrc, u->arg);
    }
    tg_seterr("schedule: cannot lower %s inside a kernel", uop_op_name(u->op));
    k->failed = true;
    return idx_const(0);
  }
}

static uop *lower(kctx *k, uop *u, uop *const *idx, uop *gate) {
  uop *key_src[TG_MAX_DIMS * 4 + 2];
  key_src[0] = u;
  key_src[1] = gate ? gate : uop_const_int(DT_BOOL, 1);
  int nd = u->ndim > 0 ? u->ndim : 0;
  for (int i = 0; i < nd; i++) key_src[2 + i] = idx[i];
  uop *key = uop_new(OP_NOOP, DT_VOID, key_src, 2 + nd, arg_none());
  uop *r = pm_get(&k->memo, key);
  if (r) return r;
  r = lower_uncached(k, u, idx, gate);
  pm_put(&k->memo, key, r);
  return r;
}

/* Does the kernel value v load from buffer g at an index other than ix? */
static bool reads_elsewhere(uop *v, uop *g, uop *ix) {
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

/* The kernel's name says its shape: E_ for elementwise, r_ with a reduce,
 * then the loop sizes (outputs first, then reduces). */
static void kernel_name(uop *ast, char *buf, size_t n) {
  uop_list l = uop_toposort(ast);
  uop *sizes[2][64];
  int cnt[2] = { 0, 0 };
  int64_t ids[2][64];
  for (int i = 0; i < l.n; i++) {
    uop *r = l.v[i];
    if (r->op != OP_RANGE) continue;
    int kind = r->arg.v[1] == RANGE_REDUCE;
    if (cnt[kind] < 64) { ids[kind][cnt[kind]] = r->arg.v[0]; sizes[kind][cnt[kind]++] = r->src[0]; }
  }
  free(l.v);
  /* order by range id */
  for (int kind = 0; kind < 2; kind++)
    for (int i = 1; i < cnt[kind]; i++)
      for (int j = i; j > 0 && ids[kind][j - 1] > ids[kind][j]; j--) {
        int64_t t = ids[kind][j]; ids[kind][j] = ids[kind][j - 1]; ids[kind][j - 1] = t;
        uop *ts = sizes[kind][j]; sizes[kind][j] = sizes[kind][j - 1]; sizes[kind][j - 1] = ts;
      }
  size_t k = (size_t)snprintf(buf, n, "%s", cnt[1] ? "r" : "E");
  for (int kind = 0; kind < 2; kind++)
    for (int i = 0; i < cnt[kind] && k + 24 < n; i++) {
      uop *e = sizes[kind][i];
      if (e->op == OP_CONST) k += (size_t)snprintf(buf + k, n - k, "_%lld", (long long)e->arg.i);
      else k += (size_t)snprintf(buf + k, n - k, "_%.20s", e->op == OP_DEFINE_VAR ? e->arg.s : "var");
    }
  if (!cnt[0] && !cnt[1]) snprintf(buf + k, n - k, "_1");
}

static tg_device *device_of(sctx *s, uop *u) {
  tg_device *d = pm_get(&s->device, u);
  return d ? d : s->default_dev;
}

/* Drops everything a lowering built (when its kernel is not kept). */
static void kctx_free(kctx *k) {
  pm_free(&k->memo); VEC_FREE(k->bufs); VEC_FREE(k->globals); VEC_FREE(k->deps); VEC_FREE(k->raw_reads);
}

/* The order to store an intermediate in (perm[j]: the logical axis at
 * physical position j, outermost first): the layout of the biggest buffer
 * its kernel reads, when that reads it in another order than u's own (a
 * ReLU or batch norm of a convolution computed channels-last). Stored in
 * that order, the kernel reads and writes memory in step, and so does the
 * next kernel over both. false: u's own order. Only for elementwise
 * intermediates nobody asked for by name, with every axis a constant. */
#define LAYOUT_MIN_ELEMENTS (1 << 16)
static bool pick_layout(kctx *k, uop *u, uop *v, uop *const *oidx, int nd, int *perm) {
  if (!uop_is_alu(u->op) || pm_get(&k->s->roots, u) || nd < 2 || uop_has_var_dims(u) || setting_on(SET_TG_NO_LAYOUT)) return false;
  int64_t numel = numel_of(u);
  if (numel < LAYOUT_MIN_ELEMENTS) return false;
  uop *axes[TG_MAX_DIMS * 4];
  int na = 0;
  for (int i = 0; i < nd; i++) if (oidx[i]->op == OP_RANGE) axes[na++] = oidx[i];
  /* the biggest buffer read (at least half of u's elements: an operand,
   * not a broadcast parameter) */
  uop_list l = uop_toposort(v);
  uop *best = NULL;
  size_t best_bytes = 0;
  for (int i = 0; i < l.n; i++) {
    uop *x = l.v[i];
    if (x->op != OP_LOAD || x->src[0]->op != OP_INDEX || x->src[0]->src[0]->op != OP_DEFINE_GLOBAL) continue;
    tg_buffer *b = k->bufs.v[x->src[0]->src[0]->arg.i];
    if (b->nbytes > best_bytes && b->numel * 2 >= numel) best = x->src[0]->src[1], best_bytes = b->nbytes;
  }
  free(l.v);
  if (!best) return false;
  int64_t st[TG_MAX_DIMS * 4];
  for (int i = 0; i < nd; i++) {
    st[i] = oidx[i]->op == OP_RANGE ? index_stride(best, oidx[i], axes, na) : 0;
    if (st[i] == INT64_MIN || st[i] < 0) return false;
    perm[i] = i;
  }
  /* outermost: the largest stride (stable: ties keep u's order) */
  for (int i = 1; i < nd; i++)
    for (int j = i; j > 0 && st[perm[j]] > st[perm[j - 1]]; j--) { int t = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = t; }
  bool same = true;
  for (int i = 0; i < nd; i++) same &= perm[i] == i;
  return !same;
}

/* The buffer a kernel AST copies into `out` unchanged (one store of one
 * ungated load at the same index, same size and dtype), or NULL. */
static tg_buffer *plain_copy_source(kctx *k, uop *ast, tg_buffer *out) {
  if (ast->op != OP_SINK || ast->nsrc != 1 || ast->src[0]->op != OP_STORE) return NULL;
  uop *st = ast->src[0], *ld = st->src[1];
  if (ld->op != OP_LOAD || ld->src[0]->op != OP_INDEX || ld->src[0]->nsrc != 2 || st->src[0]->nsrc != 2) return NULL;
  uop *g = ld->src[0]->src[0];
  if (g->op != OP_DEFINE_GLOBAL || ld->src[0]->src[1] != st->src[0]->src[1]) return NULL;
  tg_buffer *b = k->bufs.v[g->arg.i];
  if (b == out || b->numel != out->numel || b->dtype != out->dtype || b->dev != out->dev) return NULL;
  return b;
}

/* ------------------------------------------------------------ lowering once per structure
 *
 * A model's layers give kernels that differ only in their buffers (each
 * layer's weights, caches and activations). A kernel's structure is its
 * value's graph with every boundary made anonymous: a BUFFER becomes a
 * placeholder numbered by first appearance (with its size, dtype and
 * whether it is read through a stored node's view), a stored input becomes
 * its view over such a placeholder, exactly where lowering stops. Kernels of
 * equal structure lower to the same AST (globals number in the same order),
 * so the first is lowered and the others take its AST with their own
 * buffers. The walk collects what lowering would: dependencies and raw
 * reads. A node with a small form (which lowering turns into a kernel of
 * its own) or an input not built yet: no key, lowered as usual. */
typedef struct {
  uop *ast;             /* retained */
  int nbufs;
  int *ord;             /* global i (>= 1): the placeholder number of its buffer */
  bool permuted;
  int nd;
  int64_t pshape[TG_MAX_DIMS * 4], back[TG_MAX_DIMS * 4];
  char name[sizeof ((sched_item *)0)->name];
} lowered_kernel;

typedef struct {
  sctx *s;
  uop *root;
  ptrmap memo[2];                 /* by whether a view of a stored node is being walked */
  ptrmap ord;                     /* tg_buffer* -> placeholder number + 1 */
  VEC(tg_buffer *) bufs;          /* by placeholder number */
  VEC(int) deps;
  VEC(tg_buffer *) raw_reads;
  bool unkeyed;
} structure_walk;

static uop *structure_of(structure_walk *w, uop *u, int via) {
  uop *m = pm_get(&w->memo[via], u);
  if (m) return m;
  uop *r = u;
  if (u != w->root && is_marked(w->s, u)) {
    rinfo *ri = info_of(w->s, u);
    if (!ri) { w->unkeyed = true; return u; }
    if (ri->kernel >= 0) VEC_PUSH(w->deps, ri->kernel);
    r = structure_of(w, ri->repl, 1);
  } else if (pm_get(&w->s->small, u)) {
    w->unkeyed = true;
  } else if (u->op == OP_BUFFER) {
    tg_buffer *b = u->arg.p;
    intptr_t o = (intptr_t)pm_get(&w->ord, b);
    if (!o) { VEC_PUSH(w->bufs, b); o = w->bufs.n; pm_put(&w->ord, b, (void *)o); }
    if (!via) VEC_PUSH(w->raw_reads, b);
    /* the placeholder must have the BUFFER's shape (the nodes over it
     * compute theirs from it): AFTER(ARANGE(numel), number, via), a form no
     * tensor graph has (a real AFTER's other sources are kernels) */
    r = uop3(OP_AFTER, u->dtype, uop0(OP_ARANGE, DT_INDEX, arg_int(b->numel)), uop_const_int(DT_INDEX, o - 1), uop_const_int(DT_INDEX, via), arg_none());
  } else if (u->op == OP_AFTER) {
    for (int i = 1; i < u->nsrc; i++) {
      rinfo *di = is_marked(w->s, u->src[i]) ? info_of(w->s, u->src[i]) : NULL;
      if (di && di->kernel >= 0) VEC_PUSH(w->deps, di->kernel);
    }
    r = uop1(OP_AFTER, u->dtype, structure_of(w, u->src[0], 1), arg_none());
  } else if (u->nsrc) {
    uop *stack[8], **src = u->nsrc <= 8 ? stack : tg_xmalloc(sizeof(uop *) * (size_t)u->nsrc);
    for (int i = 0; i < u->nsrc && !w->unkeyed; i++) src[i] = structure_of(w, u->src[i], via);
    if (!w->unkeyed) r = uop_replace_src(u, src, u->nsrc);
    if (src != stack) free(src);
  }
  pm_put(&w->memo[via], u, r);
  return r;
}

static void structure_walk_free(structure_walk *w) {
  pm_free(&w->memo[0]); pm_free(&w->memo[1]); pm_free(&w->ord);
  VEC_FREE(w->bufs); VEC_FREE(w->deps); VEC_FREE(w->raw_reads);
}

/* The key of the kernel storing u's value (retained), or NULL. */
static uop *lower_key(structure_walk *w, uop *u, uop *value, tg_device *dev, tg_buffer *out) {
  if (setting_on(SET_TG_NO_LOWER_CACHE)) return NULL;
  uop *v = structure_of(w, value, 0);
  if (w->unkeyed) return NULL;
  int64_t a[8 + TG_MAX_DIMS * 4];
  int n = 0;
  a[n++] = u->op; a[n++] = pm_get(&w->s->roots, u) != NULL; a[n++] = (int64_t)(intptr_t)dev;
  a[n++] = out->numel; a[n++] = out->dtype; a[n++] = value->ndim;
  for (int i = 0; i < value->ndim && n < (int)(sizeof a / sizeof a[0]); i++) a[n++] = value->shape[i];
  uop *key = uop1(OP_NOOP, DT_VOID, v, arg_ints(a, n));
  uop_retain(key);
  return key;
}

static void lowered_free(ptrmap *m) {
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    lowered_kernel *e = m->vals[i];
    if (e) { uop_release(e->ast); free(e->ord); free(e); }
    uop_release((uop *)m->keys[i]);
  }
  pm_free(m);
}

/* Builds the kernel that stores node u. */
static int build_kernel(sctx *s, uop *u) {
  tg_device *dev = device_of(s, u);
  rinfo *ri = tg_xcalloc(1, sizeof *ri);
  VEC_PUSH(s->infos, ri);
  int kidx = s->out->n;
  uop *view = NULL, *value = u;
  tg_buffer *out;
  if (u->op == OP_ASSIGN) {
    view = assign_view(u);
    out = view_buffer(view);
    buffer_retain(out);
    value = u->src[1];
    ri->repl = view;
  } else {
    int64_t numel = 1;
    for (int i = 0; i < u->ndim; i++) numel *= u->shape[i];
    out = buffer_new(dev, (tg_dtype)u->dtype.scalar, numel);
    uop *b = uop0(OP_BUFFER, dt_scalar(out->dtype), arg_ptr(out));
    ri->repl = uop_with_dims_of(u->ndim == 1 ? b : uop1(OP_RESHAPE, u->dtype, b, arg_ints(u->shape, u->ndim)), u);
    if (u->op == OP_CONTIGUOUS) value = u->src[0];
  }
  ri->buf = out;
  ri->kernel = kidx;
  if (u->ndim > 0) {
    /* nothing to compute for an empty output: the buffer is the answer */
    bool empty = false;
    for (int i = 0; i < u->ndim; i++) empty |= u->shape[i] == 0;
    if (empty) { ri->kernel = -1; buffer_release(out); pm_put(&s->marked, u, ri); return 0; }
  }

  sched_item it = { 0 };
  it.dev = dev;
  if (u->op == OP_COPY) {
    tg_buffer *src = NULL;
    uop *x = u->src[0];
    rinfo *si = is_marked(s, x) ? info_of(s, x) : NULL;
    src = si ? si->buf : view_buffer(x);
    it.nbufs = 2;
    it.bufs = tg_xmalloc(2 * sizeof(tg_buffer *));
    it.bufs[0] = out; it.bufs[1] = src; buffer_retain(src);
    snprintf(it.name, sizeof it.name, "copy %s->%s", src->dev->name, dev->name);
    int *d = tg_xmalloc(sizeof(int));
    int nd = 0;
    if (si && si->kernel >= 0) d[nd++] = si->kernel;
    VEC_PUSH(s->deps, d); VEC_PUSH(s->ndeps, nd);
    VEC_PUSH(s->reads, NULL); VEC_PUSH(s->nreads, 0);
    VEC_PUSH(s->writes, out);
    VEC_PUSH(*s->out, it);
    pm_put(&s->marked, u, ri);
    return 0;
  }

  kctx k;
  uop *g0, *store_ix, *v;
  uop *oidx[TG_MAX_DIMS * 4];
  int nd = value->ndim < 0 ? 0 : value->ndim;
  int perm[TG_MAX_DIMS * 4];   /* physical axis order (with `permuted`) */
  int64_t pshape[TG_MAX_DIMS * 4], back[TG_MAX_DIMS * 4];
  bool permuted = false;
  /* a kernel of a structure lowered before (the same layer again) */
  structure_walk w = { 0 };
  w.s = s; w.root = u;
  uop *key = u->op != OP_ASSIGN ? lower_key(&w, u, value, dev, out) : NULL;
  lowered_kernel *seen = key ? pm_get(&s->lowered, key) : NULL;
  if (seen) {
    uop_release(key);
    uop_retain(seen->ast);
    it.ast = seen->ast;
    it.nbufs = seen->nbufs;
    it.bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)seen->nbufs);
    it.bufs[0] = out;
    for (int i = 1; i < seen->nbufs; i++) { it.bufs[i] = w.bufs.v[seen->ord[i]]; buffer_retain(it.bufs[i]); }
    snprintf(it.name, sizeof it.name, "%s", seen->name);
    if (seen->permuted) {
      uop *b = uop0(OP_BUFFER, dt_scalar(out->dtype), arg_ptr(out));
      ri->repl = uop1(OP_PERMUTE, u->dtype, uop1(OP_RESHAPE, u->dtype, b, arg_ints(seen->pshape, seen->nd)), arg_ints(seen->back, seen->nd));
    }
    ri->kernel = s->out->n;
    VEC_PUSH(*s->out, it);
    VEC_PUSH(s->deps, w.deps.v); VEC_PUSH(s->ndeps, w.deps.n);
    VEC_PUSH(s->reads, w.raw_reads.v); VEC_PUSH(s->nreads, w.raw_reads.n);
    VEC_PUSH(s->writes, out);
    w.deps.v = NULL; w.raw_reads.v = NULL;   /* the schedule owns them now */
    structure_walk_free(&w);
    pm_put(&s->marked, u, ri);
    return 0;
  }
retry:
  memset(&k, 0, sizeof k);
  k.s = s; k.root = u;
  g0 = global_for(&k, out);
  for (int j = 0; j < nd; j++) {
    /* loops nest in the order memory is laid out (range ids give the order) */
    int i = permuted ? perm[j] : j;
    /* an assign through a symbolic view writes only its valid part */
    const uop *ax = view && !uop_dim_var(value, i) && uop_dim_var(view, i) ? view : value;
    if (value->shape[i] == 1 && !uop_dim_var(ax, i)) { oidx[i] = idx_const(0); continue; }
    int64_t rarg[2] = { k.next_range++, RANGE_LOOP };
    oidx[i] = uop1(OP_RANGE, DT_INDEX, axis_end(ax, i), arg_ints(rarg, 2));
  }
  if (u->op == OP_ASSIGN) {
    /* the store goes through the target's view: lower it as an index (a
     * padded view gives a gated store that writes only the real elements) */
    k.via_repl++;
    uop *probe = lower(&k, view, oidx, NULL);
    k.via_repl--;
    if (probe->op == OP_WHERE) probe = probe->src[1];
    if (probe->op != OP_LOAD) { tg_seterr("internal: assign target did not lower to a load"); return -1; }
    store_ix = probe->src[0];
    if (u->src[0]->op == OP_ASSIGN && is_marked(s, u->src[0])) {
      rinfo *pi = info_of(s, u->src[0]);
      if (pi && pi->kernel >= 0) VEC_PUSH(k.deps, pi->kernel);
    }
    v = lower(&k, value, oidx, NULL);
    /* Reading the target at other positions than the one being written
     * (a = a.T, a[1:] = a[:-1], a[0] = a.sum(0)) races with the writes:
     * compute the value into a temporary first. */
    if (!k.failed && !is_marked(s, value) && reads_elsewhere(v, g0, store_ix)) {
      kctx_free(&k);
      mark(s, value);
      if (build_kernel(s, value) < 0) { buffer_release(out); return -1; }
      kidx = s->out->n;
      ri->kernel = kidx;
      goto retry;
    }
  } else {
    v = lower(&k, value, oidx, NULL);
    if (!k.failed && !permuted && pick_layout(&k, u, v, oidx, nd, perm)) {
      kctx_free(&k);
      permuted = true;
      goto retry;
    }
    /* the loops must cover exactly the output buffer: a kernel never writes past it */
    int64_t cover = 1;
    for (int i = 0; i < nd; i++) cover *= value->shape[i];
    if (cover != out->numel) { tg_seterr("internal: kernel for %s covers %lld elements, buffer has %lld", uop_op_name(u->op), (long long)cover, (long long)out->numel); k.failed = true; }
    if (permuted) {
      /* stored in physical order; u becomes the view that puts its axes back */
      uop *pidx[TG_MAX_DIMS * 4];
      for (int j = 0; j < nd; j++) { pidx[j] = oidx[perm[j]]; pshape[j] = value->shape[perm[j]]; back[perm[j]] = j; }
      store_ix = uop2(OP_INDEX, g0->dtype, g0, flat_index(pidx, pshape, nd), arg_none());
      uop *b = uop0(OP_BUFFER, dt_scalar(out->dtype), arg_ptr(out));
      ri->repl = uop1(OP_PERMUTE, u->dtype, uop1(OP_RESHAPE, u->dtype, b, arg_ints(pshape, nd)), arg_ints(back, nd));
    } else store_ix = uop2(OP_INDEX, g0->dtype, g0, flat_index(oidx, value->shape, nd), arg_none());
  }
  if (k.failed) { kctx_free(&k); buffer_release(out); uop_release(key); structure_walk_free(&w); return -1; }
  uop *st = uop2(OP_STORE, DT_VOID, store_ix, v, arg_none());
  uop *ast = uop_simplify(uop1(OP_SINK, DT_VOID, st, arg_none()));
  /* a CONTIGUOUS that copies a buffer just stored in this schedule element
   * for element, in order (a channels-last copy of a value the layout
   * choice already stored channels-last): no kernel, it is that buffer */
  tg_buffer *same = u->op == OP_CONTIGUOUS && k.deps.n == 1 ? plain_copy_source(&k, ast, out) : NULL;
  if (same) {
    buffer_release(out);
    ri->buf = same;   /* borrowed, like every rinfo's: its kernel's item owns it */
    ri->kernel = k.deps.v[0];
    uop *b = uop0(OP_BUFFER, dt_scalar(same->dtype), arg_ptr(same));
    ri->repl = uop_with_dims_of(u->ndim == 1 ? b : uop1(OP_RESHAPE, u->dtype, b, arg_ints(u->shape, u->ndim)), u);
    kctx_free(&k);
    uop_release(key);
    structure_walk_free(&w);
    pm_put(&s->marked, u, ri);
    return 0;
  }
  uop_retain(ast);
  it.ast = ast;
  it.nbufs = k.bufs.n;
  it.bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)k.bufs.n);
  for (int i = 0; i < k.bufs.n; i++) { it.bufs[i] = k.bufs.v[i]; if (i) buffer_retain(k.bufs.v[i]); }
  kernel_name(ast, it.name, sizeof it.name);
  if (key) {
    /* remembered for the next kernel of this structure */
    lowered_kernel *e = tg_xcalloc(1, sizeof *e);
    e->nbufs = k.bufs.n;
    e->ord = tg_xcalloc((size_t)(k.bufs.n ? k.bufs.n : 1), sizeof(int));
    bool ok = true;
    for (int i = 1; i < k.bufs.n; i++) {
      intptr_t o = (intptr_t)pm_get(&w.ord, k.bufs.v[i]);
      ok &= o > 0 && k.bufs.v[i] != out;
      e->ord[i] = (int)o - 1;
    }
    if (ok) {
      uop_retain(ast);
      e->ast = ast;
      e->permuted = permuted;
      e->nd = nd;
      memcpy(e->pshape, pshape, sizeof pshape);
      memcpy(e->back, back, sizeof back);
      snprintf(e->name, sizeof e->name, "%s", it.name);
      pm_put(&s->lowered, key, e);
    } else { free(e->ord); free(e); uop_release(key); }
    key = NULL;
  }
  structure_walk_free(&w);
  ri->kernel = s->out->n;   /* kernels built while lowering this one came first */
  VEC_PUSH(*s->out, it);
  VEC_PUSH(s->deps, k.deps.v); VEC_PUSH(s->ndeps, k.deps.n);
  VEC_PUSH(s->reads, k.raw_reads.v); VEC_PUSH(s->nreads, k.raw_reads.n);
  VEC_PUSH(s->writes, out);
  pm_free(&k.memo); VEC_FREE(k.bufs); VEC_FREE(k.globals);
  pm_put(&s->marked, u, ri);
  return 0;
}

/* ---- function calls (call.h): a CALL's body runs as its instantiated
 * schedule. All CALL nodes of one body over the same arguments (its
 * outputs) share one instance. */
struct call_made {
  call_body *body;
  uop *const *args;      /* the CALL's sources (alive as long as the graph) */
  int nargs;
  call_instance inst;
  int base;              /* index of its first item in the schedule */
};

/* An argument that is memory in its logical order already: reshapes of a
 * whole buffer. */
static tg_buffer *plain_buffer(uop *u) {
  int64_t numel = numel_of(u);
  while (u->op == OP_RESHAPE || u->op == OP_DETACH) u = u->src[0];
  return u->op == OP_BUFFER && ((tg_buffer *)u->arg.p)->numel == numel ? u->arg.p : NULL;
}

static int build_call(sctx *s, uop *u) {
  uop_call_target *t = u->arg.p;
  call_body *b = t->body;
  struct call_made *cm = NULL;
  for (int i = 0; i < s->calls.n && !cm; i++) {
    struct call_made *c = s->calls.v[i];
    if (c->body == b && c->nargs == u->nsrc && !memcmp(c->args, u->src, sizeof(uop *) * (size_t)u->nsrc)) cm = c;
  }
  if (!cm) {
    if (u->nsrc != b->nparams) return tg_seterr("internal: call of %s with %d arguments for %d parameters", b->name, u->nsrc, b->nparams);
    tg_buffer **args = tg_xcalloc((size_t)(u->nsrc ? u->nsrc : 1), sizeof(tg_buffer *));
    VEC(int) argdeps = { 0 };
    VEC(tg_buffer *) argreads = { 0 };
    for (int j = 0; j < u->nsrc; j++) {
      uop *a = u->src[j];
      if (is_marked(s, a)) {
        rinfo *ri = info_of(s, a);
        args[j] = ri ? plain_buffer(ri->repl) : NULL;
        if (ri && ri->kernel >= 0) VEC_PUSH(argdeps, ri->kernel);
      } else {
        args[j] = plain_buffer(a);
        if (args[j]) VEC_PUSH(argreads, args[j]);
      }
      if (!args[j]) { free(args); VEC_FREE(argdeps); VEC_FREE(argreads); return tg_seterr("internal: argument %d of a call of %s is not contiguous memory", j, b->name); }
    }
    cm = tg_xcalloc(1, sizeof *cm);
    cm->body = b; cm->args = u->src; cm->nargs = u->nsrc;
    int rc = call_instantiate(b, s->default_dev->name, args, &cm->inst);
    /* an argument the body assigns to is written in place: it must be the
     * caller's memory, not a copy stored for the call */
    for (int j = 0; j < u->nsrc && rc == 0; j++)
      if (b->param_written[j] && is_marked(s, u->src[j]))
        rc = tg_seterr("tg_function %s: input %d is assigned inside the function, so it must be a realized tensor (not a lazy value or a view)", b->name, j);
    free(args);
    if (rc < 0) { call_instance_free(&cm->inst); free(cm); VEC_FREE(argdeps); VEC_FREE(argreads); return -1; }
    VEC_PUSH(s->calls, cm);
    cm->base = s->out->n;
    /* each item after the one before it and after the arguments' kernels;
     * reads: the memory it shares with the caller (ordering against the
     * caller's assigns) */
    for (int i = 0; i < cm->inst.nitems; i++) {
      sched_item *it = &cm->inst.items[i];
      int *d = tg_xmalloc(sizeof(int) * (size_t)(argdeps.n + 1));
      int nd = 0;
      if (i) d[nd++] = cm->base + i - 1;
      else for (int j = 0; j < argdeps.n; j++) d[nd++] = argdeps.v[j];
      tg_buffer **r = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(it->nbufs ? it->nbufs : 1));
      int nr = 0;
      for (int j = 1; j < it->nbufs; j++)
        for (int k = 0; k < argreads.n; k++) if (it->bufs[j] == argreads.v[k]) { r[nr++] = it->bufs[j]; break; }
      VEC_PUSH(*s->out, *it);
      VEC_PUSH(s->deps, d); VEC_PUSH(s->ndeps, nd);
      VEC_PUSH(s->reads, r); VEC_PUSH(s->nreads, nr);
      VEC_PUSH(s->writes, it->nbufs ? it->bufs[0] : NULL);
      it->bufs = NULL;   /* the schedule owns it now */
    }
    VEC_FREE(argdeps); VEC_FREE(argreads);
  }
  rinfo *ri = tg_xcalloc(1, sizeof *ri);
  VEC_PUSH(s->infos, ri);
  int k = t->out;
  ri->buf = cm->inst.out_buf[k];
  ri->repl = uop_with_dims_of(cm->inst.out_repl[k], u);
  ri->kernel = cm->inst.out_item[k] >= 0 ? cm->base + cm->inst.out_item[k] : -1;
  if (cm->inst.out_param[k] >= 0) {
    /* a view of an argument: whatever computed the argument */
    rinfo *ai = is_marked(s, u->src[cm->inst.out_param[k]]) ? info_of(s, u->src[cm->inst.out_param[k]]) : NULL;
    ri->kernel = ai ? ai->kernel : -1;
  }
  pm_put(&s->marked, u, ri);
  return 0;
}

static void merge_sibling_kernels(schedule *out);

/* Orders kernels: producers before consumers (RAW), and readers of a
 * buffer's old contents before the kernel that assigns it (WAR). Edges are
 * lists and reachability is bit rows, so a model's few thousand kernels
 * order in well under a millisecond. */
static void order_kernels(sctx *s) {
  int n = s->out->n;
  if (n < 2) return;
  size_t words = ((size_t)n + 63) / 64;
  /* reach[b]: the kernels b depends on, transitively, through RAW edges
   * (dependencies always point at kernels built before) */
  uint64_t *reach = tg_xcalloc((size_t)n * words, sizeof(uint64_t));
  VEC(int) *succ = tg_xcalloc((size_t)n, sizeof *succ);
  int *indeg = tg_xcalloc((size_t)n, sizeof(int));
  for (int b = 0; b < n; b++)
    for (int i = 0; i < s->ndeps.v[b]; i++) {
      int a = s->deps.v[b][i];
      if (a == b || (reach[(size_t)b * words + (size_t)a / 64] >> (a % 64) & 1)) continue;
      reach[(size_t)b * words + (size_t)a / 64] |= 1ull << (a % 64);
      for (size_t w = 0; w < words; w++) reach[(size_t)b * words + w] |= reach[(size_t)a * words + w];
    }
  for (int b = 0; b < n; b++)
    for (int i = 0; i < s->ndeps.v[b]; i++) {
      int a = s->deps.v[b][i];
      if (a != b) { VEC_PUSH(succ[a], b); indeg[b]++; }
    }
  /* WAR: a reader r of a buffer that kernel w writes runs first, unless w
   * already comes before r (a cycle otherwise) */
  ptrmap writers = { 0 };   /* tg_buffer* -> 1 + the first kernel writing it; chained by next_writer */
  int *next_writer = tg_xmalloc(sizeof(int) * (size_t)n);
  for (int w = n - 1; w >= 0; w--) {
    next_writer[w] = -1;
    if (!s->writes.v[w]) continue;
    intptr_t first = (intptr_t)pm_get(&writers, s->writes.v[w]);
    next_writer[w] = (int)first - 1;
    pm_put(&writers, s->writes.v[w], (void *)(intptr_t)(w + 1));
  }
  for (int r = 0; r < n; r++)
    for (int i = 0; i < s->nreads.v[r]; i++)
      for (int w = (int)(intptr_t)pm_get(&writers, s->reads.v[r][i]) - 1; w >= 0; w = next_writer[w]) {
        if (w == r || (reach[(size_t)r * words + (size_t)w / 64] >> (w % 64) & 1)) continue;
        VEC_PUSH(succ[r], w); indeg[w]++;
      }
  pm_free(&writers); free(next_writer);
  /* Kahn's algorithm, stable by original index */
  sched_item *sorted = tg_xmalloc(sizeof(sched_item) * (size_t)n);
  bool *done = tg_xcalloc((size_t)n, 1);
  int m = 0;
  while (m < n) {
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++) if (!done[i] && indeg[i] == 0) pick = i;
    if (pick < 0) for (int i = 0; i < n && pick < 0; i++) if (!done[i]) pick = i;   /* cycle: keep order */
    done[pick] = true;
    sorted[m++] = s->out->v[pick];
    for (int i = 0; i < succ[pick].n; i++) indeg[succ[pick].v[i]]--;
  }
  memcpy(s->out->v, sorted, sizeof(sched_item) * (size_t)n);
  for (int i = 0; i < n; i++) VEC_FREE(succ[i]);
  free(succ); free(sorted); free(done); free(indeg); free(reach);
}

int schedule_create(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes) {
  memset(out, 0, sizeof *out);
  sctx s = { 0 };
  s.out = out;
  s.default_dev = device_get(default_device);
  if (!s.default_dev) return -1;
  uop *sink = uop_new(OP_SINK, DT_VOID, roots, n, arg_none());
  uop_list topo = uop_toposort(sink);

  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    for (int j = 0; j < u->nsrc; j++) pm_put(&s.nchildren, u->src[j], (void *)((intptr_t)pm_get(&s.nchildren, u->src[j]) + 1));
    tg_device *d = NULL;
    if (u->op == OP_BUFFER) d = ((tg_buffer *)u->arg.p)->dev;
    else if (u->op == OP_COPY) d = device_get(u->arg.s);
    else for (int j = 0; j < u->nsrc && !d; j++) d = pm_get(&s.device, u->src[j]);
    if (d) pm_put(&s.device, u, d);
  }
  for (int i = 0; i < n; i++) pm_put(&s.roots, roots[i], (void *)1);
  for (int i = 0; i < n; i++) {
    uop *r = roots[i];
    if (r->op == OP_CONTIGUOUS && is_buffer_view(r->src[0])) continue;
    uop *view = slice_view(r);
    if (view) { pm_put(becomes, r, view); continue; }
    if (!is_buffer_view(r)) mark(&s, r);
    else if (r != strip_after(r)) pm_put(becomes, r, strip_after(r));   /* its assigns run below */
  }
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    switch (u->op) {
    case OP_CONTIGUOUS:
      if (!is_buffer_view(u->src[0])) mark(&s, u);
      break;
    case OP_COPY:
      mark(&s, u);
      if (!is_buffer_view(u->src[0])) mark(&s, u->src[0]);
      break;
    case OP_ASSIGN:
      mark(&s, u);
      break;
    case OP_CALL:
      /* a call's result is its body's output buffers; its arguments are
       * memory in their logical layout (roots keep theirs) */
      mark(&s, u);
      for (int j = 0; j < u->nsrc; j++)
        if (!plain_buffer(u->src[j])) { mark(&s, u->src[j]); pm_put(&s.roots, u->src[j], (void *)1); }
      break;
    case OP_REDUCE_AXIS:
      if ((intptr_t)pm_get(&s.nchildren, u) > 1) mark(&s, u);
      mark_reduces_below(&s, u->src[0]);
      break;
    case OP_EXPAND: case OP_PAD: case OP_WINDOW:   /* a window repeats elements too */
      mark_reduces_below(&s, u->src[0]);
      if (u->op != OP_PAD) mark_costly_expand_source(&s, u);
      break;
    default: break;
    }
  }
  if (!setting_on(SET_TG_NO_SHARED_STORE)) mark_shared_costly(&s, &topo);
  if (!setting_on(SET_TG_NO_SMALL_FORMS)) find_small_forms(&s, &topo);
  /* build kernels in topological order; a CONTIGUOUS of memory that is
   * already contiguous becomes that memory */
  int rc = 0;
  for (int i = 0; i < topo.n && rc == 0; i++) {
    uop *u = topo.v[i];
    if (u == sink) continue;
    if (u->op == OP_CONTIGUOUS && !is_marked(&s, u) && is_buffer_view(u->src[0])) {
      pm_put(becomes, u, strip_after(u->src[0]));
      continue;
    }
    if (u->op == OP_AFTER && !is_marked(&s, u)) continue;
    if (!is_marked(&s, u)) continue;
    rc = u->op == OP_CALL ? build_call(&s, u) : build_kernel(&s, u);
  }
  if (rc == 0) {
    for (int i = 0; i < topo.n; i++) {
      rinfo *ri = info_of(&s, topo.v[i]);
      if (ri) pm_put(becomes, topo.v[i], ri->repl);
    }
    order_kernels(&s);
    uop_pool_push();
    merge_sibling_kernels(s.out);
    uop_pool_pop();
  }
  for (int i = 0; i < s.infos.n; i++) free(s.infos.v[i]);
  for (int i = 0; i < s.deps.n; i++) { free(s.deps.v[i]); free(s.reads.v[i]); }
  VEC_FREE(s.infos); VEC_FREE(s.deps); VEC_FREE(s.ndeps); VEC_FREE(s.reads); VEC_FREE(s.nreads); VEC_FREE(s.writes);
  for (size_t i = 0; i < s.small.cap; i++) if (s.small.keys[i]) uop_release(s.small.vals[i]);
  pm_free(&s.marked); pm_free(&s.walked); pm_free(&s.nchildren); pm_free(&s.device); pm_free(&s.roots); pm_free(&s.small);
  lowered_free(&s.lowered);
  for (int i = 0; i < s.calls.n; i++) { call_instance_free(&s.calls.v[i]->inst); free(s.calls.v[i]); }
  VEC_FREE(s.calls);
  free(topo.v);
  if (rc < 0) schedule_free(out);
  return rc;
}

/* ---- multi-output kernels: consecutive elementwise kernels over the same
 * loops that do not touch each other's outputs become one kernel with
 * several stores (their loads of shared inputs then happen once). */

static bool same_reduce_ranges(const uop *a, const uop *b) {
  return a->nsrc == b->nsrc && !memcmp(a->src + 1, b->src + 1, sizeof(uop *) * (size_t)(a->nsrc - 1));
}

/* The loop ranges of a plain store kernel, sorted by id, and its kind:
 * elementwise (no reduce; output loops only), reduce (every store a REDUCE
 * over the same ranges and no other reduce, as a batch norm's gradient
 * sums; output loops and reduce ranges), or neither. */
enum { LOOPS_NONE, LOOPS_ELEMENTWISE, LOOPS_REDUCE };
static int kernel_loops(uop *ast, uop **rs, int *n) {
  if (!ast || ast->op != OP_SINK || !ast->nsrc) return LOOPS_NONE;
  uop *first = ast->src[0]->op == OP_STORE ? ast->src[0]->src[1] : NULL;
  uop *red = first && first->op == OP_REDUCE ? first : NULL;
  for (int i = 0; i < ast->nsrc && red; i++) {
    uop *st = ast->src[i];
    if (st->op != OP_STORE || st->src[1]->op != OP_REDUCE || !same_reduce_ranges(st->src[1], red)) return LOOPS_NONE;
  }
  uop_list l = uop_toposort(ast);
  bool ok = true;
  *n = 0;
  for (int i = 0; i < l.n && ok; i++) {
    uop *u = l.v[i];
    if (u->op == OP_REDUCE) ok = red && same_reduce_ranges(u, red);
    else if (u->op == OP_RANGE) {
      bool kind_ok = u->arg.v[1] == RANGE_LOOP || (red && u->arg.v[1] == RANGE_REDUCE);
      if (!kind_ok || *n == 16) ok = false;
      else rs[(*n)++] = u;
    }
  }
  free(l.v);
  for (int i = 1; i < *n; i++) for (int j = i; j > 0 && rs[j - 1]->arg.v[0] > rs[j]->arg.v[0]; j--) { uop *t = rs[j]; rs[j] = rs[j - 1]; rs[j - 1] = t; }
  return !ok ? LOOPS_NONE : red ? LOOPS_REDUCE : LOOPS_ELEMENTWISE;
}

/* What merging asks of a kernel, worked out once per kernel (merging
 * looks at each kernel many times): its loops and kind (kernel_loops), and
 * the buffers it stores to and loads from. */
typedef struct {
  bool valid;
  int kind, nr;
  uop *rs[16];
  VEC(tg_buffer *) st, ld;
} kernel_facts;

static bool has_buf(tg_buffer *const *v, int n, const tg_buffer *b) {
  for (int i = 0; i < n; i++) if (v[i] == b) return true;
  return false;
}

static kernel_facts *facts_of(kernel_facts *f, const sched_item *it) {
  if (f->valid) return f;
  f->valid = true;
  f->st.n = f->ld.n = 0;
  f->kind = LOOPS_NONE;
  if (!it->ast) {   /* a copy between devices: writes bufs[0], reads bufs[1] */
    if (it->nbufs >= 2) { VEC_PUSH(f->st, it->bufs[0]); VEC_PUSH(f->ld, it->bufs[1]); }
    return f;
  }
  f->kind = kernel_loops(it->ast, f->rs, &f->nr);
  uop_list l = uop_toposort(it->ast);
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_STORE && u->op != OP_LOAD) continue;
    uop *g = u->src[0]->src[0];
    if (g->op != OP_DEFINE_GLOBAL) continue;
    tg_buffer *b = it->bufs[g->arg.i];
    if (u->op == OP_STORE) { if (!has_buf(f->st.v, f->st.n, b)) VEC_PUSH(f->st, b); }
    else if (!has_buf(f->ld.v, f->ld.n, b)) VEC_PUSH(f->ld, b);
  }
  free(l.v);
  return f;
}

/* May later kernel b run together with (or before) kernel a? Not when b
 * reads or writes what a writes, or writes what a reads. */
static bool no_hazard(const kernel_facts *a, const kernel_facts *b) {
  for (int i = 0; i < a->st.n; i++) if (has_buf(b->ld.v, b->ld.n, a->st.v[i]) || has_buf(b->st.v, b->st.n, a->st.v[i])) return false;
  for (int i = 0; i < b->st.n; i++) if (has_buf(a->ld.v, a->ld.n, b->st.v[i])) return false;
  return true;
}

static bool can_merge(const sched_item *a, kernel_facts *fa, const sched_item *b, kernel_facts *fb) {
  if (a->dev != b->dev) return false;
  facts_of(fa, a);
  facts_of(fb, b);
  if (fa->kind == LOOPS_NONE || fb->kind != fa->kind || fa->nr != fb->nr) return false;
  for (int i = 0; i < fa->nr; i++) if (fa->rs[i] != fb->rs[i]) return false;
  return a->nbufs + b->nbufs <= 64 && no_hazard(fa, fb);
}

/* Appends b's stores to a (renumbering b's buffers) and frees b. */
static void merge_into(sched_item *a, sched_item *b) {
  ptrmap remap = { 0 };
  uop_list l = uop_toposort(b->ast);
  a->bufs = tg_xrealloc(a->bufs, sizeof(tg_buffer *) * (size_t)(a->nbufs + b->nbufs));
  for (int i = 0; i < l.n; i++) {
    uop *g = l.v[i];
    if (g->op != OP_DEFINE_GLOBAL) continue;
    tg_buffer *buf = b->bufs[g->arg.i];
    int k = 0;
    while (k < a->nbufs && a->bufs[k] != buf) k++;
    if (k == a->nbufs) { a->bufs[a->nbufs++] = buf; buffer_retain(buf); }
    pm_put(&remap, g, uop0(OP_DEFINE_GLOBAL, g->dtype, arg_int(k)));
  }
  free(l.v);
  uop *bs = graph_substitute(b->ast, &remap);
  pm_free(&remap);
  uop **st = tg_xmalloc(sizeof(uop *) * (size_t)(a->ast->nsrc + bs->nsrc));
  int n = 0;
  for (int i = 0; i < a->ast->nsrc; i++) st[n++] = a->ast->src[i];
  for (int i = 0; i < bs->nsrc; i++) st[n++] = bs->src[i];
  uop *ast = uop_new(OP_SINK, DT_VOID, st, n, a->ast->arg);
  free(st);
  uop_retain(ast);
  uop_release(a->ast);
  a->ast = ast;
  kernel_name(ast, a->name, sizeof a->name);
  uop_release(b->ast);
  for (int j = 0; j < b->nbufs; j++) buffer_release(b->bufs[j]);
  free(b->bufs);
}

/* May kernel b run before the kernels out->v[lo..hi-1]? */
static bool independent_of(const schedule *out, kernel_facts *f, int lo, int hi, kernel_facts *fb) {
  for (int k = lo; k < hi; k++) if (!no_hazard(facts_of(&f[k], &out->v[k]), fb)) return false;
  return true;
}

#define MERGE_LOOKBACK 6   /* kernels searched back for a reduce to merge with */
static void merge_sibling_kernels(schedule *out) {
  if (setting_int(SET_TG_NO_MULTI_OUTPUT)) return;
  kernel_facts *f = tg_xcalloc((size_t)(out->n ? out->n : 1), sizeof *f);
  int w = 0;
  for (int i = 0; i < out->n; i++) {
    sched_item *b = &out->v[i];
    kernel_facts *fb = &f[i];
    int j = -1;
    if (b->merged) goto keep;
    if (w > 0 && out->v[w - 1].ast && b->ast && !out->v[w - 1].merged && can_merge(&out->v[w - 1], &f[w - 1], b, fb)) j = w - 1;
    /* sums over the same loops a few kernels apart (with small kernels
     * between that use the first): one pass over what they read */
    if (j < 0 && b->ast && facts_of(fb, b)->kind == LOOPS_REDUCE)
      for (int c = w - 2; c >= 0 && c >= w - MERGE_LOOKBACK && j < 0; c--)
        if (out->v[c].ast && !out->v[c].merged && can_merge(&out->v[c], &f[c], b, fb) && independent_of(out, f, c + 1, w, fb)) j = c;
    if (j >= 0) {
      merge_into(&out->v[j], b);
      f[j].valid = false;   /* its stores and loads grew */
      VEC_FREE(fb->st); VEC_FREE(fb->ld);
      continue;
    }
  keep:
    if (w != i) {
      VEC_FREE(f[w].st); VEC_FREE(f[w].ld);
      f[w] = *fb;
      memset(fb, 0, sizeof *fb);
    }
    out->v[w++] = *b;
  }
  for (int i = 0; i < out->n; i++) { VEC_FREE(f[i].st); VEC_FREE(f[i].ld); }
  free(f);
  out->n = w;
}

void schedule_free(schedule *s) {
  for (int i = 0; i < s->n; i++) {
    sched_item *it = &s->v[i];
    if (it->ast) uop_release(it->ast);
    for (int j = 0; j < it->nbufs; j++) buffer_release(it->bufs[j]);
    free(it->bufs);
  }
  VEC_FREE(*s);
}
