/* schedule_list.c: tg_schedule_list, the kernels a realize would run, in
 * order, without running them (for tests and tools that look at what the
 * scheduler made: fusion, function calls, copies), and the entry that
 * describes one call, shared with tg_schedule_call and tg_jit_entries. */
#include "engine/linear.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"
#include "tensor/shard.h"

void schedule_entry_fill(tg_schedule_entry *e, const char *name, const tg_device *dev, tg_buffer *const *bufs, int nbufs, bool copy) {
  memset(e, 0, sizeof *e);
  snprintf(e->name, sizeof e->name, "%s", name);
  e->device = dev->name;
  e->nbufs = nbufs;
  e->copy = copy;
  for (int b = 0; b < nbufs; b++) {
    e->bytes += (int64_t)bufs[b]->nbytes;
    if (b < 8) e->buf_ids[b] = bufs[b]->id;
  }
}

int tg_schedule_list(tg_tensor *const *ts, int n, tg_schedule_entry *out, int max) {
  if (n < 0 || (n > 0 && !ts)) return tg_seterr("tg_schedule_list: %s (n %d)", ts ? "negative count" : "NULL tensor array", n);
  if (max < 0 || (max > 0 && !out)) return tg_seterr("tg_schedule_list: %s (max %d)", out ? "negative max" : "NULL output array", max);
  for (int i = 0; i < n; i++) if (!ts[i]) { tensor_null_input("tg_schedule_list"); return -1; }
  if (n == 0) return 0;
  uop_pool_push();
  uop **roots = tg_xmalloc(sizeof(uop *) * (size_t)n);
  for (int i = 0; i < n; i++) roots[i] = ts[i]->u;
  if (shard_graph_has_multi(roots, n)) {   /* sharded: the per-device graphs */
    uop **low = shard_lower_roots(roots, n, &n);
    free(roots);
    roots = low;
  }
  ptrmap becomes = { 0 };
  schedule s;
  int rc = roots ? schedule_create(roots, n, shard_first_device(ts[0]->device), &s, &becomes) : -1;
  if (rc == 0) {
    for (int i = 0; i < s.n && i < max; i++) schedule_entry_fill(&out[i], s.v[i].name, s.v[i].dev, s.v[i].bufs, s.v[i].nbufs, s.v[i].ast == NULL);
    rc = s.n;
    schedule_free(&s);
  }
  pm_free(&becomes);
  free(roots);
  uop_pool_pop();
  return rc;
}
