/* fusion.c: which nodes of the tensor graph are stored, i.e. end a kernel
 * (the rest is computed inside the kernel that consumes it).
 *
 * Fusion rules (tinygrad's):
 *  - roots, CONTIGUOUS, COPY and ASSIGN are stored;
 *  - a REDUCE_AXIS is stored when it would otherwise be recomputed: when it is
 *    broadcast back by an EXPAND (softmax, layernorm), sits under a PAD, feeds
 *    another reduce, or has several consumers;
 *  - costly values two kernels would compute are stored once, and small
 *    forms of broadcast values are found (below);
 *  - everything else (elementwise chains, movement ops) is computed inside
 *    the kernel that consumes it. */
#include "schedule/schedule_internal.h"
#include "uop/symbolic.h"
#include "uop/dims.h"
#include "util/settings.h"

/* A BUFFER under reshapes (and AFTERs, DETACHes, symbolic axes):
 * contiguous memory. */
bool sched_is_buffer_view(const uop *u) {
  while (u->op == OP_RESHAPE || u->op == OP_AFTER || u->op == OP_DETACH || u->op == OP_SHRINK_VAR) u = u->src[0];
  return u->op == OP_BUFFER;
}
/* What such a view becomes once its AFTERs ran: RESHAPE(BUFFER) or BUFFER,
 * with its symbolic axes. */
uop *sched_strip_after(uop *u) {
  uop *b = u, *r;
  while (b->op != OP_BUFFER) b = b->src[0];
  uop *x = u;
  while (x->op == OP_SHRINK_VAR) x = x->src[0];
  if (u->ndim == 1 && u->shape[0] == b->shape[0]) r = b;
  else if (x->op == OP_RESHAPE && x->src[0] == b) r = x;
  else r = uop1(OP_RESHAPE, u->dtype, b, arg_ints(u->shape, u->ndim));
  return uop_with_dims_of(r, u);
}
tg_buffer *sched_view_buffer(const uop *u) {
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

tg_buffer *sched_contiguous_range(const uop *v, int64_t *offset) {
  const uop *u = v;
  while (u->op == OP_RESHAPE) u = u->src[0];
  *offset = 0;
  if (u->op == OP_BUFFER) { tg_buffer *b = u->arg.p; return b->placeholder || b->numel != numel_of(v) ? NULL : b; }
  if (u->op != OP_SHRINK) return NULL;
  const uop *s0 = u->src[0], *x = s0;
  while (x->op == OP_RESHAPE) x = x->src[0];
  if (x->op != OP_BUFFER || s0->dim_var) return NULL;
  tg_buffer *b = x->arg.p;
  if (b->placeholder || numel_of(s0) != b->numel) return NULL;
  /* contiguous: after the last axis that is not whole, every axis is; before it, one index each */
  const int64_t *a = u->arg.v;
  int nd = s0->ndim, k = -1;
  for (int i = 0; i < nd; i++) if (a[2 * i] != 0 || a[2 * i + 1] != s0->shape[i]) k = i;
  if (k < 0) return b;
  for (int i = 0; i < k; i++) if (a[2 * i + 1] - a[2 * i] != 1) return NULL;
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) { *offset += a[2 * i] * stride; stride *= s0->shape[i]; }
  return b;
}

bool sched_views_allowed(void) { return !no_views; }

uop *sched_slice_view(uop *r) {
  if (no_views || r->dim_var) return NULL;
  uop *u = r->op == OP_CONTIGUOUS ? r->src[0] : r;
  while (u->op == OP_RESHAPE) u = u->src[0];
  if (u->op != OP_SHRINK) return NULL;
  int64_t offset;
  tg_buffer *b = sched_contiguous_range(u, &offset);
  if (!b || !b->dev->host_memory || (offset == 0 && numel_of(u) == b->numel)) return NULL;
  tg_buffer *v = buffer_view(b, offset, numel_of(u));
  if (!v) { tg_clear_error(); return NULL; }   /* no view: the root is stored by a kernel as before */
  uop *bv = uop0(OP_BUFFER, dt_scalar(v->dtype), arg_ptr(v));
  buffer_release(v);   /* the node holds it */
  return r->ndim == 1 ? bv : uop1(OP_RESHAPE, r->dtype, bv, arg_ints(r->shape, r->ndim));
}

/* the view an ASSIGN writes through (following chained assigns) */
uop *sched_assign_view(uop *u) {
  while (u->op == OP_ASSIGN) u = u->src[0];
  return u;
}

/* An argument that is memory in its logical order already: reshapes of a
 * whole buffer. */
tg_buffer *sched_plain_buffer(uop *u) {
  int64_t numel = numel_of(u);
  /* a symbolic view of a whole buffer is the whole buffer (a function's
   * body reads its valid part through its own parameter view) */
  while (u->op == OP_RESHAPE || u->op == OP_DETACH || u->op == OP_SHRINK_VAR) u = u->src[0];
  return u->op == OP_BUFFER && ((tg_buffer *)u->arg.p)->numel == numel ? u->arg.p : NULL;
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

/* Does a costly op (a division, a square root, a transcendental) sit below
 * u before stored nodes? Only bit and integer ops (packed weights decoded:
 * 16 rows of a row-packed Q6_K matrix's values, broadcast over a prefill's
 * 128 rows of x) are no reason to store a broadcast source: stored, each
 * decoded slice became a buffer of its own, 256 of them for one matmul. */
static bool costly_below(sctx *s, uop *u) {
  ptrmap seen = { 0 };
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, u);
  bool found = false;
  for (int walked = 0; stack.n && !found && walked < COMPUTE_WALK_MAX; walked++) {
    uop *x = stack.v[--stack.n];
    if (pm_get(&seen, x) || x->op == OP_BUFFER || (x != u && is_marked(s, x))) continue;
    pm_put(&seen, x, (void *)1);
    found = uop_is_alu(x->op) && uop_is_costly(x->op);
    for (int i = 0; i < x->nsrc; i++) VEC_PUSH(stack, x->src[i]);
  }
  VEC_FREE(stack); pm_free(&seen);
  return found;
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
  if (before <= EXPAND_SMALL_SOURCE && after >= EXPAND_BIG_CONSUMER && after >= before * EXPAND_HEAVY_REUSE && costly_below(s, src)) limit = EXPAND_HEAVY_LIMIT;
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
  /* only a reduce or elementwise work is ever stored here (a graph of
   * calls over memory has none) */
  bool any = false;
  for (int i = 0; i < topo->n && !any; i++) any = topo->v[i]->op == OP_REDUCE_AXIS || uop_is_alu(topo->v[i]->op);
  if (!any) return;
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

/* Decides which nodes are stored (marked): the roots (or, for a root that is
 * a contiguous slice of memory, a view of it: *becomes), then the rules
 * above over the graph in topological order. */
void sched_mark_stored(sctx *s, uop *const *roots, int n, const uop_list *topo, ptrmap *becomes) {
  for (int i = 0; i < n; i++) pm_put(&s->roots, roots[i], (void *)1);
  for (int i = 0; i < n; i++) {
    uop *r = roots[i];
    if (r->op == OP_CONTIGUOUS && sched_is_buffer_view(r->src[0])) continue;
    uop *view = sched_slice_view(r);
    if (view) { pm_put(becomes, r, view); continue; }
    if (!sched_is_buffer_view(r)) mark(s, r);
    else if (r != sched_strip_after(r)) pm_put(becomes, r, sched_strip_after(r));   /* its assigns run below */
  }
  for (int i = 0; i < topo->n; i++) {
    uop *u = topo->v[i];
    switch (u->op) {
    case OP_CONTIGUOUS:
      if (!sched_is_buffer_view(u->src[0])) mark(s, u);
      break;
    case OP_COPY:
      mark(s, u);
      if (!sched_is_buffer_view(u->src[0])) mark(s, u->src[0]);
      break;
    case OP_ASSIGN:
      mark(s, u);
      break;
    case OP_CALL:
      /* a call's result is its body's output buffers; its arguments are
       * memory in their logical layout (roots keep theirs) */
      mark(s, u);
      for (int j = 0; j < u->nsrc; j++)
        if (!sched_plain_buffer(u->src[j])) { mark(s, u->src[j]); pm_put(&s->roots, u->src[j], (void *)1); }
      break;
    case OP_REDUCE_AXIS:
      if ((intptr_t)pm_get(&s->nchildren, u) > 1) mark(s, u);
      mark_reduces_below(s, u->src[0]);
      break;
    case OP_EXPAND: case OP_PAD: case OP_WINDOW:   /* a window repeats elements too */
      mark_reduces_below(s, u->src[0]);
      if (u->op != OP_PAD) mark_costly_expand_source(s, u);
      break;
    default: break;
    }
  }
  if (!setting_on(SET_TG_NO_SHARED_STORE)) mark_shared_costly(s, topo);
  if (!setting_on(SET_TG_NO_SMALL_FORMS)) find_small_forms(s, topo);
}
