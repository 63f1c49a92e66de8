/* schedule.c: a tensor graph into kernels (schedule_create): the phases of
 * schedule_internal.h, in order: graph facts (consumers, devices), the
 * fusion choices, a kernel per stored node in topological order, ordering,
 * merging. */
#include "schedule/schedule_internal.h"
#include "schedule/call.h"
#include "schedule/schedule_memo.h"
#include "util/counters.h"
#include "util/settings.h"

static int schedule_anew(uop *const *roots, int n, tg_device *dev, uop *sink, const uop_list *topo_in, schedule *out, ptrmap *becomes,
                         schedule_memo_key *memo, bool keep_calls);

static int create(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes, bool keep_calls) {
  memset(out, 0, sizeof *out);
  tg_device *dev = device_get(default_device);
  if (!dev) return -1;
  uop *sink = uop_new(OP_SINK, DT_VOID, roots, n, arg_none());
  uop_list topo = uop_toposort(sink);
  counters_add_work(topo.n);
  /* the same structure scheduled before (schedule_memo.h) */
  schedule_memo_key memo;
  int rc = 0;
  if (schedule_memo_find(&topo, dev, &memo, out, becomes)) {
    if (setting_on(SET_TG_SCHEDULE_CACHE_CHECK)) {   /* the found one against a schedule made anew */
      schedule again;
      ptrmap again_becomes = { 0 };
      if (schedule_anew(roots, n, dev, sink, &topo, &again, &again_becomes, NULL, false) == 0) {
        schedule_memo_check(&topo, out, becomes, &again, &again_becomes);
        schedule_free(&again);
      }
      pm_free(&again_becomes);
    }
  } else {
    rc = schedule_anew(roots, n, dev, sink, &topo, out, becomes, &memo, keep_calls);
  }
  schedule_memo_key_free(&memo);
  free(topo.v);
  if (rc == 0) counters_add_work(out->n);
  return rc;
}

int schedule_create(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes) {
  return create(roots, n, default_device, out, becomes, false);
}

int schedule_create_calls(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes) {
  return create(roots, n, default_device, out, becomes, true);
}

/* schedule_create's work, for topo (the toposort of sink, the SINK of the
 * roots); records it under memo when given; keep_calls: a call stays one
 * item (schedule_create_calls) */
static int schedule_anew(uop *const *roots, int n, tg_device *dev, uop *sink, const uop_list *topo_in, schedule *out, ptrmap *becomes,
                         schedule_memo_key *memo, bool keep_calls) {
  memset(out, 0, sizeof *out);
  sctx s = { 0 };
  s.out = out;
  s.default_dev = dev;
  uop_list topo = *topo_in;

  /* graph facts: each node's consumer count, and the device it is on */
  pm_reserve(&s.nchildren, (size_t)topo.n);
  pm_reserve(&s.device, (size_t)topo.n);
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    for (int j = 0; j < u->nsrc; j++) pm_put(&s.nchildren, u->src[j], (void *)((intptr_t)pm_get(&s.nchildren, u->src[j]) + 1));
    tg_device *d = NULL;
    if (u->op == OP_BUFFER) d = ((tg_buffer *)u->arg.p)->dev;
    else if (u->op == OP_COPY) d = device_get(u->arg.s);
    else for (int j = 0; j < u->nsrc && !d; j++) d = pm_get(&s.device, u->src[j]);
    if (d) pm_put(&s.device, u, d);
  }
  sched_mark_stored(&s, roots, n, &topo, becomes);
  sched_find_into(&s, &topo);
  /* build kernels in topological order; a CONTIGUOUS of memory that is
   * already contiguous becomes that memory */
  int rc = 0;
  for (int i = 0; i < topo.n && rc == 0; i++) {
    uop *u = topo.v[i];
    if (u == sink) continue;
    if (u->op == OP_CONTIGUOUS && !is_marked(&s, u) && sched_is_buffer_view(u->src[0])) {
      pm_put(becomes, u, sched_strip_after(u->src[0]));
      continue;
    }
    if (u->op == OP_AFTER && !is_marked(&s, u)) continue;
    if (!is_marked(&s, u)) continue;
    rc = u->op == OP_CALL ? sched_build_call(&s, u) : sched_build_kernel(&s, u);
  }
  if (rc == 0) {
    for (int i = 0; i < topo.n; i++) {
      rinfo *ri = info_of(&s, topo.v[i]);
      if (ri) pm_put(becomes, topo.v[i], ri->repl);
    }
    sched_order_kernels(&s);
    uop_pool_push();
    sched_merge_sibling_kernels(s.out);
    uop_pool_pop();
    if (!keep_calls) schedule_expand_calls(s.out);
    if (memo) schedule_memo_add(memo, &topo, out, becomes);
  }
  for (int i = 0; i < s.infos.n; i++) free(s.infos.v[i]);
  for (int i = 0; i < s.links.n; i++) { free(s.links.v[i].deps); free(s.links.v[i].reads); free(s.links.v[i].writes); }
  VEC_FREE(s.infos); VEC_FREE(s.links);
  for (size_t i = 0; i < s.small.cap; i++) if (s.small.e[i].key) uop_release(s.small.e[i].val);
  pm_free(&s.marked); pm_free(&s.walked); pm_free(&s.nchildren); pm_free(&s.device); pm_free(&s.roots); pm_free(&s.small);
  sched_calls_free(&s);
  for (size_t i = 0; i < s.into.cap; i++) if (s.into.e[i].key) free(s.into.e[i].val);
  pm_free(&s.into);
  if (rc < 0) schedule_free(out);
  return rc;
}

void schedule_free(schedule *s) {
  for (int i = 0; i < s->n; i++) {
    sched_item *it = &s->v[i];
    if (it->call) { call_instance_free(it->call); free(it->call); }
    if (it->ast) uop_release(it->ast);
    for (int j = 0; j < it->nbufs; j++) buffer_release(it->bufs[j]);
    free(it->bufs);
  }
  VEC_FREE(*s);
}

