/* gpu_dims.c: a kernel's loops onto a GPU's grid. After opts and lane
 * expansion:
 *   1. every REDUCE over a GROUP range reduces its own share per thread,
 *      stores the partial into a local array, waits at a barrier, and
 *      reduces the array along a new loop (each thread of the group gets the
 *      same total);
 *   2. static output loops become group ids (SPECIAL kind 0), LOCAL and
 *      GROUP ranges thread ids in a group (SPECIAL kind 1): the innermost
 *      output axis is dimension 0, so neighbouring threads touch
 *      neighbouring memory; output axes beyond three are merged into the
 *      last dimension. An axis whose group count passes the device's limit,
 *      or whose size is symbolic, stays a loop inside each thread.
 * global[d] is the number of groups along d, local[d] the threads per
 * group; unused dimensions are 1. */
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/rewrite.h"
#include "uop/symbolic.h"
#include "uop/kernel_ir.h"

static int by_id_desc(const void *a, const void *b) { return range_id(*(uop *const *)b) - range_id(*(uop *const *)a); }

static uop *special(int kind, int dim, int64_t size) {
  int64_t a[2] = { kind, dim };
  return uop1(OP_SPECIAL, DT_INDEX, uop_const_int(DT_INDEX, size), arg_ints(a, 2));
}

/* Step 1 for one REDUCE r: the partial per thread, through local memory. */
static uop *group_reduce(uop *r, uop *const *threads, int nthreads, int64_t nthread_total, int *lid, int *next_range, ptrmap *second) {
  uop *keep[64], *groups[8];
  int nk = 0, ng = 0;
  for (int i = 1; i < r->nsrc; i++) {
    if (range_kind(r->src[i]) == RANGE_GROUP && ng < 8) groups[ng++] = r->src[i];
    else if (nk < 64) keep[nk++] = r->src[i];
  }
  if (!ng) return r;
  uop *src[65];
  src[0] = r->src[0];
  for (int i = 0; i < nk; i++) src[1 + i] = keep[i];
  uop *partial = nk ? uop_new(OP_REDUCE, r->dtype, src, 1 + nk, r->arg) : r->src[0];
  /* thread t of the group writes slot t */
  uop *slot = uop_const_int(DT_INDEX, 0);
  for (int i = 0; i < nthreads; i++) slot = uop_alu(OP_ADD, uop_muli(slot, range_max_size(threads[i])), threads[i]);
  int64_t la[2] = { (*lid)++, nthread_total };
  uop *buf = uop0(OP_DEFINE_LOCAL, dt_ptr(dt_base(r->dtype), ADDR_LOCAL), arg_ints(la, 2));
  uop *st = uop2(OP_STORE, DT_VOID, uop2(OP_INDEX, buf->dtype, buf, uop_simplify(slot), arg_none()), partial, arg_none());
  uop *bar = uop1(OP_BARRIER, DT_VOID, st, arg_none());
  /* then every thread sums the slots: the group ranges become loops (one
   * new loop per group range, shared by all the reduces over it) */
  ptrmap sub = { 0 };
  uop *loops[8];
  for (int i = 0; i < ng; i++) {
    uop *l = pm_get(second, groups[i]);
    if (!l) {
      int64_t a[2] = { (*next_range)++, RANGE_REDUCE };
      l = uop1(OP_RANGE, DT_INDEX, groups[i]->src[0], arg_ints(a, 2));
      pm_put(second, groups[i], l);
    }
    loops[i] = l;
    pm_put(&sub, groups[i], l);
  }
  uop *read_slot = uop_simplify(graph_substitute(slot, &sub));
  pm_free(&sub);
  uop *ld = uop2(OP_LOAD, dt_base(r->dtype), uop2(OP_INDEX, buf->dtype, buf, read_slot, arg_none()), bar, arg_none());
  uop *s2[9];
  s2[0] = ld;
  for (int i = 0; i < ng; i++) s2[1 + i] = loops[i];
  return uop_new(OP_REDUCE, r->dtype, s2, 1 + ng, r->arg);
}

typedef struct {
  uop *const *threads;
  int nthreads;
  int64_t total;
  int lid, next_range;
  int64_t local_bytes;
  ptrmap second;
} group_ctx;

static uop *group_reduce_node(uop *u, void *ctx) {
  group_ctx *g = ctx;
  if (u->op != OP_REDUCE) return u;
  int before = g->lid;
  uop *r = group_reduce(u, g->threads, g->nthreads, g->total, &g->lid, &g->next_range, &g->second);
  if (g->lid != before) g->local_bytes += g->total * dt_itemsize(u->dtype);
  return r;
}

uop *kernel_gpu_lower(uop *ast, const tg_renderer *ren, int64_t global[3], int64_t local[3]) {
  for (int d = 0; d < 3; d++) global[d] = local[d] = 1;
  uop_list l = uop_toposort(ast);
  uop *outs[64], *locs[64], *grps[8];
  int no = 0, nl = 0, ngr = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_RANGE) continue;
    int k = range_kind(u);
    if (k == RANGE_LOOP && !range_is_symbolic(u) && no < 64) outs[no++] = u;
    else if (k == RANGE_LOCAL && nl < 64) locs[nl++] = u;
    else if (k == RANGE_GROUP && ngr < 8) grps[ngr++] = u;
  }
  free(l.v);
  /* the threads of a group, in slot order */
  uop *threads[72];
  int nt = 0;
  int64_t total = 1;
  /* a tensor core's warp (a LOCAL that split no axis: tensor_cores.c)
   * comes first, so its 32 lanes are dimension 0: one hardware warp */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < nl; i++)
      if ((locs[i]->arg.n == 2) == (pass == 0)) { threads[nt++] = locs[i]; total *= range_max_size(locs[i]); }
  for (int i = 0; i < ngr; i++) { threads[nt++] = grps[i]; total *= range_max_size(grps[i]); }
  if (total > ren->max_local) TG_FAIL("kernel: %lld threads per work group, more than the device's %d", (long long)total, ren->max_local);
  if (ngr) {
    /* step 1 */
    group_ctx g = { threads, nt, total, 0, kernel_next_range_id(ast), 0, { 0 } };
    ast = graph_map(ast, group_reduce_node, &g);
    pm_free(&g.second);
    int64_t local_bytes = g.local_bytes;
    if (local_bytes > ren->local_mem)
      TG_FAIL("kernel: its grouped reduces need %lld bytes of local memory, more than the device's %lld", (long long)local_bytes, (long long)ren->local_mem);
  }
  /* step 2: dimensions. Output axes innermost first; their local halves
   * (LOCAL ranges remember the axis they split) share the dimension. */
  qsort(outs, (size_t)no, sizeof(uop *), by_id_desc);
  typedef struct { uop *g[64]; int ng; uop *l; } dim_t;
  dim_t dims[3];
  memset(dims, 0, sizeof dims);
  int nd = 0;
  bool used_local[64] = { 0 };
  /* a group's threads that split no remaining output axis (a GROUP, or a
   * LOCAL that took the whole axis) take dimensions of their own */
  for (int i = 0; i < nt && nd < 3; i++) {
    uop *t = threads[i];
    bool paired = false;
    if (range_kind(t) == RANGE_LOCAL && t->arg.n > 2)
      for (int j = 0; j < no; j++) paired |= range_id(outs[j]) == t->arg.v[2] - 1;
    if (!paired) { dims[nd].l = t; nd++; if (i < 64) used_local[i] = true; }
  }
  ptrmap sub = { 0 };
  for (int j = 0; j < no; j++) {
    uop *g = outs[j];
    uop *partner = NULL;
    int pi = -1;
    for (int i = 0; i < nt; i++)
      if (!used_local[i] && range_kind(threads[i]) == RANGE_LOCAL && threads[i]->arg.n > 2 && threads[i]->arg.v[2] - 1 == range_id(g)) partner = threads[i], pi = i;
    if (nd < 3) {
      dims[nd].g[dims[nd].ng++] = g;
      dims[nd].l = partner;
      if (pi >= 0) used_local[pi] = true;
      nd++;
    } else if (!partner && dims[2].ng) {
      dims[2].g[dims[2].ng++] = g;   /* merged into the last dimension (outermost) */
    }
  }
  for (int d = 0; d < nd; d++) {
    dim_t *D = &dims[d];
    int64_t groups = 1;
    for (int i = 0; i < D->ng; i++) groups *= range_max_size(D->g[i]);
    int64_t lsz = D->l ? range_max_size(D->l) : 1;
    if (groups > ren->global_max[d] || lsz > ren->local_max[d]) {
      /* too many for this dimension: its axes stay loops */
      if (D->l && !D->ng) TG_FAIL("kernel: %lld threads along work-group dimension %d, more than the device's %lld", (long long)lsz, d, (long long)ren->local_max[d]);
      if (D->l) { D->ng = 0; }   /* keep the local thread, loop the rest */
      else continue;
      groups = 1;
    }
    global[d] = groups;
    local[d] = lsz;
    if (D->l) pm_put(&sub, D->l, special(1, d, lsz));
    /* merged axes: the group id in mixed radix, outermost axis slowest */
    if (D->ng) {
      uop *s = special(0, d, groups);
      int64_t inner = 1;
      for (int i = 0; i < D->ng; i++) {
        int64_t sz = range_max_size(D->g[i]);
        uop *v = uop_alu(OP_IDIV, s, uop_const_int(DT_INDEX, inner));
        if (i + 1 < D->ng) v = uop_alu(OP_MOD, v, uop_const_int(DT_INDEX, sz));
        pm_put(&sub, D->g[i], D->ng == 1 ? s : v);
        inner *= sz;
      }
    }
  }
  uop *res = uop_simplify(graph_substitute(ast, &sub));
  pm_free(&sub);
  return res;
}
