/* kernel_split.c: kb_split_reduces (kernel_builder.h). On a device with
 * work groups every group runs the whole kernel body for its elements, so a
 * reduction that uses no output loop (the amax of a quantizer beside its
 * elementwise stores) would be recomputed by every group: N^2 work. It
 * moves to a kernel of its own that stores it into a one-element buffer,
 * and the main kernel loads it, as the scheduler stores a reduce that is
 * broadcast. (On the CPU the linearizer runs such a reduce once, before the
 * loops, so the kernel stays whole there.) */
#include "tensor/kernel_builder.h"
#include "uop/symbolic.h"

/* the outermost loop-free REDUCEs below u, into found[0..*n) */
static void find(ptrmap *memo, ptrmap *seen, uop *u, uop **found, int *n, int max) {
  if (pm_get(seen, u) || *n >= max) return;
  pm_put(seen, u, (void *)1);
  if (u->op == OP_REDUCE && !kb_free_ranges(memo, u)) { found[(*n)++] = u; return; }
  for (int i = 0; i < u->nsrc; i++) find(memo, seen, u->src[i], found, n, max);
}

uop *kb_split_reduces(uop *ast, int nout, int nin, int max, uop **pre, tg_dtype *sdt, int *nsplit) {
  *pre = NULL; *nsplit = 0;
  ptrmap memo = { 0 }, seen = { 0 };
  uop *found[KB_MAX_IO];
  int n = 0;
  if (max > KB_MAX_IO) max = KB_MAX_IO;
  if (kb_free_ranges(&memo, ast)) find(&memo, &seen, ast, found, &n, max);
  pm_free(&memo); pm_free(&seen);
  if (!n) return ast;
  /* the reduce kernel: scratch k is global k, input j global n + j */
  ptrmap inputs = { 0 }, repl = { 0 };
  uop *stores[KB_MAX_IO];
  for (int k = 0; k < n; k++) {
    uop_list l = uop_toposort(found[k]);
    for (int i = 0; i < l.n; i++) {
      uop *g = l.v[i];
      if (g->op == OP_DEFINE_GLOBAL && !pm_get(&inputs, g)) pm_put(&inputs, g, uop0(OP_DEFINE_GLOBAL, g->dtype, arg_int(g->arg.i - nout + n)));
    }
    free(l.v);
  }
  for (int k = 0; k < n; k++) {
    dtype_t dt = found[k]->dtype;
    sdt[k] = (tg_dtype)dt.scalar;
    uop *zero = uop_const_int(DT_INDEX, 0);
    uop *mine = uop0(OP_DEFINE_GLOBAL, dt_ptr(dt, ADDR_GLOBAL), arg_int(k));
    stores[k] = uop2(OP_STORE, DT_VOID, uop2(OP_INDEX, mine->dtype, mine, zero, arg_none()), graph_substitute(found[k], &inputs), arg_none());
    uop *theirs = uop0(OP_DEFINE_GLOBAL, mine->dtype, arg_int(nout + nin + k));
    pm_put(&repl, found[k], uop1(OP_LOAD, dt, uop2(OP_INDEX, theirs->dtype, theirs, zero, arg_none()), arg_none()));
  }
  *pre = uop_simplify(kb_number_ranges(uop_new(OP_SINK, DT_VOID, stores, n, arg_none())));
  uop *main = uop_simplify(kb_number_ranges(graph_substitute(ast, &repl)));
  pm_free(&inputs); pm_free(&repl);
  *nsplit = n;
  return main;
}
