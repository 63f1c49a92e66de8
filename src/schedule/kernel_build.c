/* kernel_build.c: one stored node into one kernel AST: its store's layout,
 * the lowering of its value, plain copies, the reuse of an identical
 * kernel's lowering; and function calls (an OP_CALL's body instantiated). */
#include "schedule/lowered_cache.h"
#include "uop/symbolic.h"
#include "uop/dims.h"
#include "util/settings.h"
#include "viz/viz.h"

/* The kernel's name says its shape: E_ for elementwise, r_ with a reduce,
 * then the loop sizes (outputs first, then reduces). */
void sched_kernel_name(uop *ast, char *buf, size_t n) {
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
  sctx *s;
  uop *root;
  ptrmap memo[2];                 /* by whether a view of a stored node is being walked */
  ptrmap ord;                     /* tg_buffer* -> placeholder number + 1 */
  VEC(tg_buffer *) bufs;          /* by placeholder number */
  VEC(int) deps;
  VEC(tg_buffer *) raw_reads;
  bool unkeyed;
  int depth, deep_from;           /* structure_of calls in progress; where a bottom-up walk began */
} structure_walk;

static uop *structure_of(structure_walk *w, uop *u, int via);

/* Whether structure_of takes u through its last, generic branch (its
 * sources at the same via). */
static bool generic_node(structure_walk *w, uop *u) {
  return u->nsrc && !(u != w->root && is_marked(w->s, u)) && !pm_get(&w->s->small, u) && u->op != OP_UNIQUE && u->op != OP_BUFFER &&
         u->op != OP_AFTER;
}

/* As lower.c's lower_alu_chain_first: past STRUCTURE_DEEP nested calls,
 * the generic nodes below u are walked bottom-up first, from an explicit
 * stack, so a chain thousands deep does not overflow the stack. */
#define STRUCTURE_DEEP 256
#define STRUCTURE_MAX_NEST 2048
/* u's generic sources not walked yet (uop_toposort_by's edges) */
typedef struct { structure_walk *w; int via; VEC(uop *) srcs; } generic_edges;
static int generic_sources(void *ctx, uop *u, uop *const **out) {
  generic_edges *e = ctx;
  e->srcs.n = 0;
  for (int i = 0; i < u->nsrc; i++)
    if (!pm_get(&e->w->memo[e->via], u->src[i]) && generic_node(e->w, u->src[i])) VEC_PUSH(e->srcs, u->src[i]);
  *out = e->srcs.v;
  return e->srcs.n;
}
static void structure_chain_first(structure_walk *w, uop *u, int via) {
  generic_edges e = { w, via, { 0 } };
  uop_list l = uop_toposort_by(u, generic_sources, &e);   /* children first, u last */
  for (int i = 0; i < l.n - 1 && !w->unkeyed; i++) structure_of(w, l.v[i], via);
  free(l.v);
  VEC_FREE(e.srcs);
}

static uop *structure_of(structure_walk *w, uop *u, int via) {
  uop *m = pm_get(&w->memo[via], u);
  if (m) return m;
  if (w->depth >= STRUCTURE_MAX_NEST) { w->unkeyed = true; return u; }   /* no key: lowered as usual (lower.c's limit) */
  if (w->depth > w->deep_from + STRUCTURE_DEEP && generic_node(w, u)) {
    int was = w->deep_from;
    w->deep_from = w->depth;   /* the walk's own calls start no walk of their own unless as deep again */
    structure_chain_first(w, u, via);
    w->deep_from = was;
  }
  w->depth++;
  uop *r = u;
  if (u != w->root && is_marked(w->s, u)) {
    rinfo *ri = info_of(w->s, u);
    if (!ri) { w->unkeyed = true; w->depth--; return u; }
    if (ri->kernel >= 0) VEC_PUSH(w->deps, ri->kernel);
    r = structure_of(w, ri->repl, 1);
  } else if (pm_get(&w->s->small, u)) {
    w->unkeyed = true;
  } else if (u->op == OP_UNIQUE) {
    /* a creation op's identity matters for buffers, not inside a kernel
     * (lowering skips it): each forward's fresh tg_scalar(15) is one key */
    r = structure_of(w, u->src[0], via);
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
  w->depth--;
  pm_put(&w->memo[via], u, r);
  return r;
}

static void structure_walk_free(structure_walk *w) {
  pm_free(&w->memo[0]); pm_free(&w->memo[1]); pm_free(&w->ord);
  VEC_FREE(w->bufs); VEC_FREE(w->deps); VEC_FREE(w->raw_reads);
}

/* The key of the kernel storing u's value (retained), or NULL. */
static uop *lower_key(structure_walk *w, uop *u, uop *value, tg_device *dev, tg_buffer *out) {
  if (setting_on(SET_TG_NO_LOWER_CACHE) || viz_on) return NULL;   /* VIZ shows the lowering run */
  uop *v = structure_of(w, value, 0);
  if (w->unkeyed) return NULL;
  int64_t a[8 + TG_MAX_DIMS * 4];
  int n = 0;
  a[n++] = u->op; a[n++] = pm_get(&w->s->roots, u) != NULL; a[n++] = (int64_t)(intptr_t)dev; a[n++] = setting_on(SET_TG_NO_LAYOUT);
  a[n++] = out->numel; a[n++] = out->dtype; a[n++] = value->ndim;
  for (int i = 0; i < value->ndim && n < (int)(sizeof a / sizeof a[0]); i++) a[n++] = value->shape[i];
  uop *key = uop1(OP_NOOP, DT_VOID, v, arg_ints(a, n));
  uop_retain(key);
  return key;
}

/* Builds the kernel that stores node u. */
int sched_build_kernel(sctx *s, uop *u) {
  tg_device *dev = device_of(s, u);
  rinfo *ri = tg_xcalloc(1, sizeof *ri);
  VEC_PUSH(s->infos, ri);
  int kidx = s->out->n;
  uop *view = NULL, *value = u;
  tg_buffer *out;
  if (u->op == OP_ASSIGN) {
    view = sched_assign_view(u);
    out = sched_view_buffer(view);
    buffer_retain(out);
    value = u->src[1];
    ri->repl = view;
    /* a call wrote the value into the target already (sched_find_into): no kernel */
    sched_into *in = pm_get(&s->into, value);
    rinfo *ci = in && in->assign == u && is_marked(s, value) ? info_of(s, value) : NULL;
    if (ci && ci->buf && (ci->buf == in->base || ci->buf->base == in->base)) {
      ri->buf = out;
      ri->kernel = ci->kernel;
      buffer_release(out);   /* the view holds it */
      pm_put(&s->marked, u, ri);
      return 0;
    }
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
    src = si ? si->buf : sched_view_buffer(x);
    it.nbufs = 2;
    it.bufs = tg_xmalloc(2 * sizeof(tg_buffer *));
    it.bufs[0] = out; it.bufs[1] = src; buffer_retain(src);
    snprintf(it.name, sizeof it.name, "copy %s->%s", src->dev->name, dev->name);
    int *d = tg_xmalloc(sizeof(int));
    int nd = 0;
    if (si && si->kernel >= 0) d[nd++] = si->kernel;
    VEC_PUSH(s->links, ((kernel_links){ d, nd, NULL, 0, out, NULL, 0 }));
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
  lowered_kernel seen_k, *seen = key && lowered_find(key, dev, &seen_k) ? &seen_k : NULL;
  for (int i = 1; seen && i < seen->nbufs; i++)   /* (one read from disk must fit this walk) */
    if (seen->ord[i] < 0 || seen->ord[i] >= w.bufs.n) { lowered_kernel_clear(seen); seen = NULL; }
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
    VEC_PUSH(s->links, ((kernel_links){ w.deps.v, w.deps.n, w.raw_reads.v, w.raw_reads.n, out, NULL, 0 }));
    w.deps.v = NULL; w.raw_reads.v = NULL;   /* the schedule owns them now */
    structure_walk_free(&w);
    lowered_kernel_clear(seen);
    pm_put(&s->marked, u, ri);
    return 0;
  }
retry:
  memset(&k, 0, sizeof k);
  k.s = s; k.root = u;
  g0 = sched_global_for(&k, out);
  for (int j = 0; j < nd; j++) {
    /* loops nest in the order memory is laid out (range ids give the order) */
    int i = permuted ? perm[j] : j;
    /* an assign through a symbolic view writes only its valid part */
    const uop *ax = view && !uop_dim_var(value, i) && uop_dim_var(view, i) ? view : value;
    if (value->shape[i] == 1 && !uop_dim_var(ax, i)) { oidx[i] = idx_const(0); continue; }
    int64_t rarg[2] = { k.next_range++, RANGE_LOOP };
    oidx[i] = uop1(OP_RANGE, DT_INDEX, sched_axis_end(ax, i), arg_ints(rarg, 2));
  }
  if (u->op == OP_ASSIGN) {
    /* the store goes through the target's view: lower it as an index (a
     * padded view gives a gated store that writes only the real elements) */
    k.via_repl++;
    uop *probe = sched_lower(&k, view, oidx, NULL);
    k.via_repl--;
    if (probe->op == OP_WHERE) probe = probe->src[1];
    if (probe->op != OP_LOAD) { tg_seterr("internal: assign target did not lower to a load"); return -1; }
    store_ix = probe->src[0];
    if (u->src[0]->op == OP_ASSIGN && is_marked(s, u->src[0])) {
      rinfo *pi = info_of(s, u->src[0]);
      if (pi && pi->kernel >= 0) VEC_PUSH(k.deps, pi->kernel);
    }
    v = sched_lower(&k, value, oidx, NULL);
    /* Reading the target at other positions than the one being written
     * (a = a.T, a[1:] = a[:-1], a[0] = a.sum(0)) races with the writes:
     * compute the value into a temporary first. */
    if (!k.failed && !is_marked(s, value) && sched_reads_elsewhere(v, g0, store_ix)) {
      kctx_free(&k);
      mark(s, value);
      if (sched_build_kernel(s, value) < 0) { buffer_release(out); return -1; }
      kidx = s->out->n;
      ri->kernel = kidx;
      goto retry;
    }
  } else {
    v = sched_lower(&k, value, oidx, NULL);
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
      store_ix = uop2(OP_INDEX, g0->dtype, g0, sched_flat_index(pidx, pshape, nd), arg_none());
      uop *b = uop0(OP_BUFFER, dt_scalar(out->dtype), arg_ptr(out));
      ri->repl = uop1(OP_PERMUTE, u->dtype, uop1(OP_RESHAPE, u->dtype, b, arg_ints(pshape, nd)), arg_ints(back, nd));
    } else store_ix = uop2(OP_INDEX, g0->dtype, g0, sched_flat_index(oidx, value->shape, nd), arg_none());
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
  sched_kernel_name(ast, it.name, sizeof it.name);
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
      lowered_add(key, dev, e);
    } else { free(e->ord); free(e); uop_release(key); }
    key = NULL;
  }
  structure_walk_free(&w);
  ri->kernel = s->out->n;   /* kernels built while lowering this one came first */
  VEC_PUSH(*s->out, it);
  VEC_PUSH(s->links, ((kernel_links){ k.deps.v, k.deps.n, k.raw_reads.v, k.raw_reads.n, out, NULL, 0 }));
  pm_free(&k.memo); VEC_FREE(k.bufs); VEC_FREE(k.globals);
  pm_put(&s->marked, u, ri);
  return 0;
}

/* ---- function calls (call.h): a CALL's body runs as its instantiated
 * schedule. All CALL nodes of one body over the same arguments (its
 * outputs) share one instance. */
struct call_made {
  call_body *body;
  call_instance *inst;   /* owned by the item standing for the call (schedule_free frees it) */
  tg_buffer **inst_args;  /* the argument buffers it was instantiated over (borrowed) */
  int base;              /* index of the item standing for it in the schedule */
};

void sched_calls_free(sctx *s) {
  for (int i = 0; i < s->calls.n; i++) { free(s->calls.v[i]->inst_args); free(s->calls.v[i]); }
  VEC_FREE(s->calls);
  pm_free(&s->call_made_of);
}

void schedule_expand_calls(schedule *out) {
  int n = 0;
  bool any = false;
  for (int i = 0; i < out->n; i++) { n += out->v[i].call ? out->v[i].call->body->sched.n : 1; any |= out->v[i].call != NULL; }
  if (!any) return;
  sched_item *v = tg_xmalloc(sizeof(sched_item) * (size_t)(n ? n : 1));
  int m = 0;
  for (int i = 0; i < out->n; i++) {
    call_instance *c = out->v[i].call;
    if (!c) { v[m++] = out->v[i]; continue; }
    for (int k = 0; k < c->body->sched.n; k++) call_instance_item(c, k, &v[m++]);
    call_instance_free(c);
    free(c);
  }
  free(out->v);
  out->v = v; out->n = m; out->cap = n ? n : 1;
}


#define CALL_MAX_OUTS 64   /* outputs of one call that may be written into assigns' targets */

/* Whether the graph of u may read memory of base (itself or a view of
 * it): a walk of at most WALK_BUDGET nodes, past which it answers yes (the
 * copy then stays), so a call deep in a long graph costs no more than that. */
#define WALK_BUDGET 512
static bool reads_memory(uop *u, const tg_buffer *base) {
  ptrmap seen = { 0 };
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, u);
  bool r = false;
  int visited = 0;
  while (stack.n && !r) {
    uop *x = stack.v[--stack.n];
    if (pm_get(&seen, x)) continue;
    pm_put(&seen, x, (void *)1);
    if (++visited > WALK_BUDGET) { r = true; break; }
    if (x->op == OP_BUFFER) { const tg_buffer *b = x->arg.p; r = b == base || b->base == base; }
    for (int i = 0; i < x->nsrc; i++) VEC_PUSH(stack, x->src[i]);
  }
  VEC_FREE(stack);
  pm_free(&seen);
  return r;
}

void sched_find_into(sctx *s, const uop_list *topo) {
  for (int i = 0; i < topo->n; i++) {
    uop *a = topo->v[i];
    if (a->op != OP_ASSIGN || !is_marked(s, a) || a->src[0]->op == OP_ASSIGN) continue;
    uop *c = a->src[1], *view = a->src[0];
    if (c->op != OP_CALL || (intptr_t)pm_get(&s->nchildren, c) != 1 || pm_get(&s->roots, c) || view->dim_var || c->dim_var) continue;
    int64_t off;
    tg_buffer *base = sched_contiguous_range(view, &off);
    if (!base || base->dtype != (tg_dtype)c->dtype.scalar || numel_of(view) != numel_of(c) || base->dev != device_of(s, c)) continue;
    /* a range of the memory needs a view of it (host memory, and not while the JIT captures) */
    bool whole = off == 0 && numel_of(view) == base->numel;
    if (!whole && (!base->dev->host_memory || !sched_views_allowed())) continue;
    /* the kernels would read what they write */
    bool reads = false;
    for (int j = 0; j < c->nsrc && !reads; j++) reads = reads_memory(c->src[j], base);
    if (reads) continue;
    sched_into *t = tg_xmalloc(sizeof *t);
    *t = (sched_into){ a, base, off };
    pm_put(&s->into, c, t);
  }
}

int sched_build_call(sctx *s, uop *u) {
  uop_call_target *t = u->arg.p;
  call_body *b = t->body;
  /* the call's outputs share one instance: found by its output 0, the
   * one node naming the body and the arguments */
  uop *key = t->out == 0 || !b->nouts ? u : uop_new(OP_CALL, b->outs[0]->dtype, u->src, u->nsrc, arg_ptr(&b->targets[0]));
  struct call_made *cm = pm_get(&s->call_made_of, key);
  if (!cm) {
    if (u->nsrc != b->nparams) return tg_seterr("internal: call of %s with %d arguments for %d parameters", b->name, u->nsrc, b->nparams);
    tg_buffer **args = tg_xcalloc((size_t)(u->nsrc ? u->nsrc : 1), sizeof(tg_buffer *));
    VEC(int) argdeps = { 0 };
    VEC(tg_buffer *) argreads = { 0 };
    for (int j = 0; j < u->nsrc; j++) {
      uop *a = u->src[j];
      if (is_marked(s, a)) {
        rinfo *ri = info_of(s, a);
        args[j] = ri ? sched_plain_buffer(ri->repl) : NULL;
        if (ri && ri->kernel >= 0) VEC_PUSH(argdeps, ri->kernel);
      } else {
        args[j] = sched_plain_buffer(a);
        if (args[j]) VEC_PUSH(argreads, args[j]);
      }
      if (!args[j]) { free(args); VEC_FREE(argdeps); VEC_FREE(argreads); return tg_seterr("internal: argument %d of a call of %s is not contiguous memory", j, b->name); }
    }
    cm = tg_xcalloc(1, sizeof *cm);
    cm->body = b; cm->inst_args = args;
    /* outputs that an assign takes as they are: written into its target */
    tg_buffer *into[CALL_MAX_OUTS] = { 0 }, *into_base[CALL_MAX_OUTS] = { 0 };
    bool any_into = false;
    int rc = b->nouts <= CALL_MAX_OUTS ? call_body_schedule(b, s->default_dev->name) : 0;
    for (int k = 0; k < b->nouts && k < CALL_MAX_OUTS && rc == 0 && s->into.n; k++) {
      uop *ck = k == t->out ? u : uop_new(OP_CALL, b->outs[k]->dtype, u->src, u->nsrc, arg_ptr(&b->targets[k]));
      sched_into *in = pm_get(&s->into, ck);
      if (!in || !call_output_placeable(b, k)) continue;
      int64_t numel = numel_of(ck);
      into[k] = in->offset == 0 && numel == in->base->numel ? in->base : buffer_view(in->base, in->offset, numel);
      if (!into[k]) { tg_clear_error(); continue; }
      into_base[k] = in->base;
      any_into = true;
    }
    cm->inst = tg_xcalloc(1, sizeof *cm->inst);
    if (rc == 0) rc = call_instantiate(b, s->default_dev->name, args, any_into ? into : NULL, cm->inst);
    for (int k = 0; k < CALL_MAX_OUTS; k++) if (into[k] && into[k] != into_base[k]) buffer_release(into[k]);
    /* an argument the body assigns to is written in place: it must be the
     * caller's memory, not a copy stored for the call */
    for (int j = 0; j < u->nsrc && rc == 0; j++)
      if (b->param_written[j] && is_marked(s, u->src[j]))
        rc = tg_seterr("tg_function %s: input %d is assigned inside the function, so it must be a realized tensor (not a lazy value or a view)", b->name, j);
    if (rc < 0) { call_instance_free(cm->inst); free(cm->inst); free(cm); free(args); VEC_FREE(argdeps); VEC_FREE(argreads); return -1; }
    VEC_PUSH(s->calls, cm);
    pm_put(&s->call_made_of, key, cm);
    /* one item stands for the call's kernels until the schedule is ordered
     * and merged (schedule_expand_calls, or for good: schedule_create_calls): it runs after the arguments' kernels,
     * reads the memory it shares with the caller, and writes the arguments
     * the body assigns to (ordering against the caller's assigns) */
    cm->base = s->out->n;
    tg_buffer **r = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(argreads.n ? argreads.n : 1));
    if (argreads.n) memcpy(r, argreads.v, sizeof(tg_buffer *) * (size_t)argreads.n);
    tg_buffer **w = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(u->nsrc ? u->nsrc : 1));
    int nw = 0;
    for (int j = 0; j < u->nsrc; j++) if (b->param_written[j]) w[nw++] = cm->inst_args[j];
    /* and the memory its outputs are written into */
    for (int k = 0; k < b->nouts && k < CALL_MAX_OUTS; k++)
      if (into_base[k] && cm->inst->out_buf[k] && (cm->inst->out_buf[k] == into_base[k] || cm->inst->out_buf[k]->base == into_base[k])) {
        w = tg_xrealloc(w, sizeof(tg_buffer *) * (size_t)(nw + 1));
        w[nw++] = into_base[k];
      }
    sched_item ph = { .dev = b->sched.n ? b->sched.v[0].dev : s->default_dev, .merged = true, .call = cm->inst };
    snprintf(ph.name, sizeof ph.name, "%s", b->name);
    VEC_PUSH(*s->out, ph);
    VEC_PUSH(s->links, ((kernel_links){ argdeps.v, argdeps.n, r, argreads.n, NULL, w, nw }));
    argdeps.v = NULL;
    VEC_FREE(argdeps); VEC_FREE(argreads);
  }
  rinfo *ri = tg_xcalloc(1, sizeof *ri);
  VEC_PUSH(s->infos, ri);
  int k = t->out;
  ri->buf = cm->inst->out_buf[k];
  ri->repl = uop_with_dims_of(cm->inst->out_repl[k], u);
  ri->kernel = cm->inst->out_item[k] >= 0 ? cm->base : -1;   /* the item standing for the call */
  if (cm->inst->out_param[k] >= 0) {
    /* a view of an argument: whatever computed the argument */
    rinfo *ai = is_marked(s, u->src[cm->inst->out_param[k]]) ? info_of(s, u->src[cm->inst->out_param[k]]) : NULL;
    ri->kernel = ai ? ai->kernel : -1;
  }
  pm_put(&s->marked, u, ri);
  return 0;
}

