/* prefetch.c: software prefetches for kernels that stream a big operand once.
 *
 * A matrix-vector product (LLM decoding) reads every weight once: the one
 * output loop walks groups of rows, the reduce loop walks along them, and
 * the vector loads of a row group are a few interleaved streams. When the
 * weights are not in cache, the hardware prefetchers do not run far enough
 * ahead of such streams: measured on a 2-core Xeon, a Q8_0 4096x768 matvec
 * over cold weights read 6-7 GB/s while a plain read loop reached 15.
 * Prefetching the same place one row group (at least PREFETCH_AHEAD bytes)
 * ahead brought it to 11-12.5 GB/s. A prefetch never faults, so running
 * past the end of the buffer is harmless. Only packed (byte) weights get
 * them: float matvecs read one row after the other. */
#include "codegen/codegen.h"
#include "codegen/opts.h"
#include "uop/kernel_ir.h"
#include "uop/symbolic.h"

#define PREFETCH_AHEAD (2 << 10)       /* bytes: at least this far ahead */
#define PREFETCH_MAX_STEP (64 << 10)   /* one outer step further than this is no stream */
#define PREFETCH_MIN_BYTES (256 << 10) /* smaller operands stay in cache */
#define PREFETCH_MIN_LOAD 16           /* bytes: vector loads only (one per line or so) */
#define PREFETCH_LINE 64

/* Is load u within a cache line of one already planned (same buffer, index
 * a constant away)? Then its prefetch would repeat that one's. */
static bool near_planned(uop *u, int64_t item, uop *const *planned, int n) {
  for (int i = 0; i < n; i++) {
    if (planned[i]->src[0]->src[0] != u->src[0]->src[0]) continue;
    uop *d = uop_simplify(uop_alu(OP_SUB, u->src[0]->src[1], planned[i]->src[0]->src[1]));
    if (d->op == OP_CONST && d->arg.i * item < PREFETCH_LINE && d->arg.i * item > -PREFETCH_LINE) return true;
  }
  return false;
}

int kernel_prefetch_plan(uop *ast, ptrmap *ahead) {
  uop_list l = uop_toposort(ast);
  uop *axes[64], *outer = NULL;
  int n = 0, nouter = 0, nreduce = 0;
  for (int i = 0; i < l.n && n < 64; i++) {
    uop *u = l.v[i];
    if (u->op != OP_RANGE) continue;
    axes[n++] = u;
    if (u->arg.v[1] == RANGE_REDUCE) nreduce++;
    else if (range_max_size(u) > 1) outer = u, nouter++;
  }
  uop *planned[64];
  int np = 0;
  /* float weights alone: a matvec reads them one row after the other (no
   * register tile, cpu_heuristic.c), a stream the hardware follows, and
   * prefetches only cost (F16 decode 11.8-12.7 ms a token without them,
   * 13.4-14.3 with, one core, AMD Zen 4). Packed weights (bytes) get them,
   * and so do their scales. */
  bool packed = false;
  for (int i = 0; i < l.n && !packed; i++) packed = l.v[i]->op == OP_LOAD && dt_itemsize(dt_scalar(l.v[i]->dtype.scalar)) == 1;
  if (nouter != 1 || nreduce == 0 || !packed) { free(l.v); return 0; }
  const int64_t trips = range_max_size(outer);
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_LOAD) continue;
    uop *index = u->src[0]->src[1];
    const int64_t item = dt_itemsize(dt_scalar(u->dtype.scalar));
    if (item * u->dtype.count < PREFETCH_MIN_LOAD) continue;
    const int64_t step = index_stride(index, outer, axes, n);
    if (step <= 0 || step == INT64_MIN || step * item > PREFETCH_MAX_STEP || step * item * trips < PREFETCH_MIN_BYTES) continue;
    bool along_reduce = false;   /* read inside the reduce loop, not once per row group */
    for (int a = 0; a < n && !along_reduce; a++)
      if (axes[a]->arg.v[1] == RANGE_REDUCE) along_reduce = index_stride(index, axes[a], axes, n) != 0;
    if (!along_reduce || near_planned(u, item, planned, np) || np == 64) continue;
    const int64_t steps_ahead = (PREFETCH_AHEAD + step * item - 1) / (step * item);
    pm_put(ahead, u, (void *)(intptr_t)(steps_ahead * step * item));
    planned[np++] = u;
  }
  free(l.v);
  return np;
}
