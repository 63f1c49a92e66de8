/* order.c: the kernels of a schedule in an order that runs each after what it reads. */
#include "schedule/schedule_internal.h"

static void heap_push(int *h, int *n, int v) {
  int i = (*n)++;
  for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = v;
}
static int heap_pop(int *h, int *n) {
  int top = h[0], v = h[--*n], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= v) break;
    h[i] = h[c]; i = c;
  }
  h[i] = v;
  return top;
}

/* Orders kernels: producers before consumers (RAW), and readers of a
 * buffer's old contents before the kernel that assigns it (WAR). Edges are
 * lists and reachability is bit rows, so a model's few thousand kernels
 * order in well under a millisecond. */
void sched_order_kernels(sctx *s) {
  int n = s->out->n;
  if (n < 2) return;
  size_t words = ((size_t)n + 63) / 64;
  /* reach[b]: the kernels b depends on, transitively, through RAW edges
   * (dependencies always point at kernels built before) */
  uint64_t *reach = tg_xcalloc((size_t)n * words, sizeof(uint64_t));
  VEC(int) *succ = tg_xcalloc((size_t)n, sizeof *succ);
  int *indeg = tg_xcalloc((size_t)n, sizeof(int));
  for (int b = 0; b < n; b++)
    for (int i = 0; i < s->links.v[b].ndeps; i++) {
      int a = s->links.v[b].deps[i];
      if (a == b || (reach[(size_t)b * words + (size_t)a / 64] >> (a % 64) & 1)) continue;
      reach[(size_t)b * words + (size_t)a / 64] |= 1ull << (a % 64);
      for (size_t w = 0; w < words; w++) reach[(size_t)b * words + w] |= reach[(size_t)a * words + w];
    }
  for (int b = 0; b < n; b++)
    for (int i = 0; i < s->links.v[b].ndeps; i++) {
      int a = s->links.v[b].deps[i];
      if (a != b) { VEC_PUSH(succ[a], b); indeg[b]++; }
    }
  /* WAR: a reader r of a buffer that kernel w writes runs first, unless w
   * already comes before r (a cycle otherwise) */
  ptrmap writers = { 0 };   /* tg_buffer* -> 1 + the first kernel writing it; chained by next_writer */
  int *next_writer = tg_xmalloc(sizeof(int) * (size_t)n);
  for (int w = n - 1; w >= 0; w--) {
    next_writer[w] = -1;
    if (!s->links.v[w].write) continue;
    intptr_t first = (intptr_t)pm_get(&writers, s->links.v[w].write);
    next_writer[w] = (int)first - 1;
    pm_put(&writers, s->links.v[w].write, (void *)(intptr_t)(w + 1));
  }
  /* a function call's item writes several buffers (the arguments its body
   * assigns to): those few are looked through directly */
  VEC(int) multi = { 0 };
  for (int w = 0; w < n; w++) if (s->links.v[w].nwrites) VEC_PUSH(multi, w);
  for (int r = 0; r < n; r++)
    for (int i = 0; i < s->links.v[r].nreads; i++) {
      tg_buffer *rb = s->links.v[r].reads[i];
      for (int w = (int)(intptr_t)pm_get(&writers, rb) - 1; w >= 0; w = next_writer[w]) {
        if (w == r || (reach[(size_t)r * words + (size_t)w / 64] >> (w % 64) & 1)) continue;
        VEC_PUSH(succ[r], w); indeg[w]++;
      }
      for (int m = 0; m < multi.n; m++) {
        int w = multi.v[m];
        bool writes = false;
        for (int k = 0; k < s->links.v[w].nwrites && !writes; k++) writes = s->links.v[w].writes[k] == rb;
        if (!writes || w == r || (reach[(size_t)r * words + (size_t)w / 64] >> (w % 64) & 1)) continue;
        VEC_PUSH(succ[r], w); indeg[w]++;
      }
    }
  VEC_FREE(multi);
  pm_free(&writers); free(next_writer);
  /* Kahn's algorithm, stable by original index: the ready kernels in a
   * min-heap (a model's hundreds of calls made a scan per pick quadratic) */
  sched_item *sorted = tg_xmalloc(sizeof(sched_item) * (size_t)n);
  bool *done = tg_xcalloc((size_t)n, 1);
  int *heap = tg_xmalloc(sizeof(int) * (size_t)(n + 1)), nheap = 0, m = 0, lo = 0;
  for (int i = 0; i < n; i++) if (indeg[i] == 0) heap_push(heap, &nheap, i);
  while (m < n) {
    int pick = -1;
    while (nheap && pick < 0) { int i = heap_pop(heap, &nheap); if (!done[i]) pick = i; }
    if (pick < 0) { while (done[lo]) lo++; pick = lo; }   /* cycle: keep order */
    done[pick] = true;
    sorted[m++] = s->out->v[pick];
    for (int i = 0; i < succ[pick].n; i++)
      if (--indeg[succ[pick].v[i]] == 0 && !done[succ[pick].v[i]]) heap_push(heap, &nheap, succ[pick].v[i]);
  }
  free(heap);
  memcpy(s->out->v, sorted, sizeof(sched_item) * (size_t)n);
  for (int i = 0; i < n; i++) VEC_FREE(succ[i]);
  free(succ); free(sorted); free(done); free(indeg); free(reach);
}

