/* renderer.h: kernel programs to source code, one table per dialect.
 *
 * A renderer is what a device says about the code it runs: the dialect its
 * kernels are written in (C for the CPU, OpenCL C, CUDA C) and the
 * capabilities the optimizer reads (threads, work groups and local memory,
 * SIMD vector types, byte dot products, native half). Every dialect shares
 * one C-style core (cstyle.c); a dialect is one file with a table
 * (dialect_c.c, dialect_opencl.c, dialect_cuda.c) plus one line in
 * renderer_by_name. Devices copy a table and fill in what they learn at
 * run time (a GPU's local memory size, its work-group limits). */
#ifndef TG_RENDERER_H
#define TG_RENDERER_H

#include <stdbool.h>
#include <stdint.h>
#include "uop/uop.h"

typedef struct render_dialect render_dialect;

typedef struct tg_renderer {
  const char *name;             /* "c", "opencl", "cuda" */
  const render_dialect *dialect;
  /* ---- capabilities */
  bool has_threads;             /* kernels split a loop over CPU cores (THREAD) */
  bool has_local;               /* work groups: group/local ids, LOCAL/GROUP opts, barriers */
  int64_t local_mem;            /* bytes of local (shared) memory per group */
  int max_local;                /* threads per group */
  int64_t global_max[3];        /* groups per grid dimension */
  int64_t local_max[3];         /* threads per group dimension */
  bool simd_vectors;            /* UPCAST lanes as gcc/clang vector types */
  bool byte_dot;                /* int32 sums of 4 byte products (DOT4, vpdpbusd) */
  bool prefetch;                /* software prefetches for streamed operands */
  bool native_half;             /* half arithmetic without going through float */
  bool has_tc;                  /* tensor-core MMA */
  bool wide_layouts;            /* the front end's CPU-cache layouts pay off (panel-packed
                                 * matmul operands, channel lanes in convolutions) */
} tg_renderer;

/* The built-in tables (dialect_*.c), and the same by name ("c", "opencl",
 * "cuda"; NULL when unknown). */
extern const tg_renderer renderer_c, renderer_opencl, renderer_cuda;
const tg_renderer *renderer_by_name(const char *name);

/* Renders a linearizable kernel (after opts, lanes and the target's
 * lowering: see codegen.h) as a kernel `name` in r's dialect. Returns
 * malloc'd source, or NULL with tg_error set. */
char *render_kernel(const tg_renderer *r, uop *ast, const char *name);

#endif
