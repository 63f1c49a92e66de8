/* codegen.h: from a kernel AST (SINK of STOREs with RANGEs and REDUCEs) to a
 * flat program with explicit loops, ready to render. */
#ifndef TG_CODEGEN_H
#define TG_CODEGEN_H

#include "uop/uop.h"
#include "util/util.h"
#include "renderer/renderer.h"

/* ---- the one entry point: a kernel AST to a program for a renderer */

/* What a device needs to run a rendered kernel. */
typedef struct {
  char *src;              /* malloc'd source */
  int max_cores;          /* CPU: cores the kernel splits over (1 = no THREAD axis) */
  int64_t global[3];      /* GPU: groups per dimension */
  int64_t local[3];       /* GPU: threads per group per dimension */
  int nbuf_args;          /* buffer parameters the kernel declares */
  char opts[512];         /* the opts applied, as TG_OPTS would write them */
} kernel_program;

/* Applies opts o[0..n) to the kernel (with skip_misfits, an opt that does
 * not fit is left out, as for the heuristic's picks; else it is an error
 * naming the kernel), expands lanes (SIMD where the renderer has vectors),
 * maps loops onto work groups (GPU renderers), rewrites small-float math
 * into float32 where the target has no native type, linearizes and
 * renders. 0, or -1 with tg_error. realize, BEAM and the JIT (through
 * realize) all come here. */
struct kopt;
int codegen_program(uop *ast, const char *name, const tg_renderer *r, const struct kopt *o, int n, bool skip_misfits, kernel_program *out);

/* Step of codegen_program for renderers with work groups: grouped reduces
 * through local memory, loops onto group and thread ids (gpu_dims.c).
 * NULL + tg_error when the kernel does not fit the device. (borrowed) */
uop *kernel_gpu_lower(uop *ast, const tg_renderer *ren, int64_t global[3], int64_t local[3]);

/* Whether the kernel multiplies on tensor cores (has WMMA nodes). */
bool kernel_has_wmma(uop *ast);

typedef enum {
  LI_OP,          /* compute u (or emit a STORE) */
  LI_LOOP,        /* open the loop of RANGE u */
  LI_ENDLOOP,     /* close the loop of RANGE u */
  LI_ACC_INIT,    /* declare REDUCE u's accumulator, set to the identity */
  LI_ACC_UPDATE,  /* fold REDUCE u's value into its accumulator */
} linst_kind;

typedef struct { linst_kind kind; uop *u; } linst;
typedef struct { linst *v; int n, cap; } lprogram;

/* Rewrites ALU math on float16/bfloat16/fp8 into float32 math with casts at
 * the edges, for targets without native small floats (returns borrowed). */
uop *decompose_small_floats(uop *ast);

/* Orders the kernel into loops: output loops outermost, each REDUCE's loops
 * around the part of its value that depends on them; everything else is
 * hoisted as far out as its ranges allow. NULL + tg_error when the kernel has
 * more than 64 ranges. */
int linearize(uop *ast, lprogram *out);
void lprogram_free(lprogram *p);

/* The DEFINE_VAR names a kernel uses, sorted (the order of its vars[]
 * argument); the count, at most max. Names point into the AST. */
int kernel_var_names(uop *ast, const char **names, int max);

/* Software prefetches for a kernel that streams a big operand once (one
 * output loop over row groups, loads along a reduce loop: a matvec): maps
 * each chosen LOAD to how many bytes ahead of its address to prefetch
 * (intptr_t values in `ahead`). Returns how many loads got one. */
int kernel_prefetch_plan(uop *ast, ptrmap *ahead);

/* Estimated FLOPs of one run (ALU ops times their loop trip counts). */
double kernel_flops(uop *ast);
/* The same with each transcendental (exp2, log2, sin, pow) counted as
 * KERNEL_COST_TRANSCENDENTAL ops: an estimate of the work, for deciding
 * whether to use threads. */
double kernel_cost(uop *ast);
/* What kernel_cost counts for one transcendental (exp2, log2, sin, pow):
 * about the ops of its libm call or vector expansion. */
#define KERNEL_COST_TRANSCENDENTAL 16

#endif
