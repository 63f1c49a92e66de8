/* kernel_builder.h: the builder behind tg_kernel.h. A tg_kb collects the
 * STOREs a custom kernel's build function writes and checks them as they
 * come (dtypes, indices inside their buffers by their value ranges, reduce
 * loops used only inside their reductions); kb_finish makes the kernel
 * AST the scheduler would: SINK(STORE(INDEX(DEFINE_GLOBAL i, flat), value)...)
 * with the outputs as DEFINE_GLOBAL 0..nout-1 and the inputs after them.
 * A tg_kv is a uop (borrowed from the caller's pool). */
#ifndef TG_KERNEL_BUILDER_H
#define TG_KERNEL_BUILDER_H

#include "tg_kernel.h"
#include "uop/uop.h"
#include "util/util.h"

#define KB_MAX_IO 32       /* inputs, and outputs, of one kernel */
#define KB_MAX_RANGES 32   /* the codegen's opts add their own, up to 64 */

typedef struct {
  int ndim;
  int64_t shape[TG_MAX_DIMS];
  int64_t numel;
  tg_dtype dtype;
  uop *global;             /* its DEFINE_GLOBAL */
  uop *var[TG_MAX_DIMS];   /* an input's symbolic axes: the DEFINE_VAR it runs to (borrowed), NULL when static */
} kb_buffer;

struct tg_kb {
  char name[64];
  int nin, nout;
  kb_buffer bufs[2 * KB_MAX_IO];   /* outputs, then inputs (DEFINE_GLOBAL order) */
  uop *ranges[KB_MAX_RANGES];
  int nranges;
  VEC(uop *) stores;
  int64_t covered[KB_MAX_IO];      /* per output: elements its stores' loops run over (saturating) */
  ptrmap free_memo;                /* for kb_free_ranges */
  bool failed;
  char err[480];
  char opts[256];                  /* tg_k_opts: the kernel's own opts, "" for the heuristic's */
};

/* A builder for outputs outs[0..nout) and inputs of the given shapes and
 * dtypes (checked by the caller). Inside a uop pool. */
void kb_init(tg_kb *kb, const char *name, const tg_kernel_out *outs, int nout, const kb_buffer *in, int nin);
/* The kernel AST (borrowed), or NULL with the first error in kb->err. */
uop *kb_finish(tg_kb *kb);
void kb_free(tg_kb *kb);
/* The RANGEs (bits by id; the builder's ids are the order of creation) u's
 * value varies with: a REDUCE closes its own. memo: uop -> 1 + mask. */
uint64_t kb_free_ranges(ptrmap *memo, uop *u);
/* sink with its RANGEs numbered 0.. in nesting order: the loops by their
 * ids, then the reduce loops (borrowed). */
uop *kb_number_ranges(uop *sink);
/* For devices with work groups (kernel_split.c): the outermost REDUCEs of
 * ast that use no output loop (at most max) move into a kernel of their
 * own, *pre, which stores reduce k into a one-element buffer, DEFINE_GLOBAL
 * k (its inputs follow, at nsplit + j); the kernel returned loads it from
 * DEFINE_GLOBAL nout + nin + k. *nsplit gets the count, sdt[k] the dtypes;
 * none: ast itself and *pre NULL. Borrowed. */
uop *kb_split_reduces(uop *ast, int nout, int nin, int max, uop **pre, tg_dtype *sdt, int *nsplit);

#endif
