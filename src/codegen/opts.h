/* opts.h: named kernel optimizations (tinygrad's OptOps), applied to a
 * kernel AST before it is linearized.
 *
 * A kernel's axes are its loops in nesting order: first the output axes
 * (LOOP and THREAD ranges, by id), then the reduce axes (REDUCE ranges).
 *
 *   UPCAST  axis amt   split an output axis; the inner amt lanes are computed
 *                      together (register tile, vectorizable)
 *   UNROLL  axis amt   split a reduce axis (axis counts from the first reduce
 *                      axis); amt partial accumulators are kept and combined
 *   THREAD  axis amt   run an output axis across amt cores
 *   PADTO   axis amt   round an output axis up to a multiple of amt (the extra
 *                      lanes are computed, never stored)
 *   SWAP    axis other swap the nesting order of two output axes
 *   LOCAL   axis amt   split an output axis; the inner amt run as the threads
 *                      of a work group (GPU dialects)
 *   GROUP   axis amt   split a reduce axis; amt threads of a work group each
 *                      sum every amt-th element, then combine their partial
 *                      sums through local memory after a barrier
 *   GROUPTOP axis amt  the same with each thread summing one contiguous chunk
 *   TC      tc   0     the kernel's matmul on tensor cores (tc: which of the
 *                      renderer's tensor cores, -1 the first that fits;
 *                      tensor_cores.c); first, before any other opt
 * A device's renderer (renderer.h) says which opts its kernels take: THREAD
 * needs has_threads, LOCAL and the GROUPs has_local, TC tensor_cores.
 */
#ifndef TG_OPTS_H
#define TG_OPTS_H

#include "uop/uop.h"
#include "renderer/renderer.h"
#include "util/util.h"

typedef enum { OPT_UPCAST, OPT_UNROLL, OPT_THREAD, OPT_PADTO, OPT_SWAP, OPT_LOCAL, OPT_GROUP, OPT_GROUPTOP, OPT_TC, OPT_COUNT } kopt_op;
typedef struct kopt { kopt_op op; int axis; int arg; } kopt;

const char *kopt_name(kopt_op op);
/* "UPCAST:1:16,UNROLL:0:4" -> opts; returns the count or -1 with tg_error. */
int kopts_parse(const char *spec, kopt *out, int max);
/* Writes "UPCAST:1:16,..." into buf. */
void kopts_format(const kopt *o, int n, char *buf, size_t size);

/* The most lanes (UPCAST times UNROLL) a kernel may compute side by side. */
#define KOPT_MAX_LANES 256

/* Whether u depends on range r (memo: u -> 1 no, 2 yes; the caller frees). */
bool kernel_depends_on(uop *u, uop *r, ptrmap *memo);

/* The kernel's axes (RANGE nodes) in nesting order: outputs then reduces.
 * Returns the count; *first_reduce gets the index of the first reduce axis. */
int kernel_axes(uop *ast, uop **axes, int max, int *first_reduce);

/* One more than the highest RANGE id of the kernel (a fresh id). */
int kernel_next_range_id(uop *ast);

/* Applies one opt; on success replaces *ast (borrowed) and returns 0, else -1
 * with tg_error saying why the opt does not fit this kernel. */
int kernel_apply_opt(uop **ast, kopt o, const tg_renderer *ren);
int kernel_apply_opts(uop **ast, const kopt *o, int n, const tg_renderer *ren);

/* The TC opt (tensor_cores.c). On a tensor-core kernel (kernel_has_wmma)
 * UNROLL, GROUP, GROUPTOP and PADTO no longer apply. */
int kernel_apply_tc(uop **ast, kopt o, const tg_renderer *ren);
/* Whether TC applies (asks without setting tg_error). */
bool kernel_tc_fits(uop *ast, const tg_renderer *ren);

/* Opts picked by hand-written rules for the renderer's target: a CPU with
 * ncores cores (matvec, matmul, reduce and elementwise cases), or a GPU
 * (gpu_heuristic.c). Returns the count. */
int kernel_heuristic_opts(uop *ast, const tg_renderer *ren, int ncores, kopt *out, int max);
int gpu_heuristic_opts(uop *ast, const tg_renderer *ren, kopt *out, int max);

/* Removes UPCAST and UNROLL ranges by computing their lanes side by side:
 * each store is repeated per upcast lane, each reduce keeps one accumulator
 * per unroll lane and combines them after its loop. With simd, one upcast
 * axis becomes vector lanes where it can (kernel_vectorize). (borrowed) */
uop *kernel_expand_lanes(uop *ast, bool simd);

/* Turns UPCAST range `lane_range` into SIMD lanes (vector dtypes, vector
 * loads/stores where addresses are consecutive; with `gather`, other 4-byte
 * loads and stores go lane by lane). NULL when some node cannot be
 * vectorized (the caller expands scalar lanes instead). (borrowed) */
uop *kernel_vectorize(uop *ast, uop *lane_range, bool gather);

/* How many cores the kernel splits across (1 without a THREAD axis). */
int kernel_thread_count(uop *ast);

#endif
