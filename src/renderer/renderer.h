/* renderer.h: kernel programs to source code, one table per dialect.
 *
 * A renderer is what a device says about the code it runs: the dialect its
 * kernels are written in (C for the CPU, OpenCL C, CUDA C) and the
 * capabilities the optimizer reads (threads, work groups and local memory,
 * SIMD vector types, byte dot products, native half). Every dialect shares
 * one C-style core (cstyle.c) and its rules for the code of each op
 * (code_for_op.c); a dialect is one file with a table and its own rules
 * (dialect_c.c, dialect_opencl.c, dialect_cuda.c) plus one line in
 * renderer_by_name. Devices copy a table and fill in what they learn at
 * run time (a GPU's local memory size, its work-group limits). */
#ifndef TG_RENDERER_H
#define TG_RENDERER_H

#include <stdbool.h>
#include <stdint.h>
#include "uop/uop.h"

typedef struct render_dialect render_dialect;

/* A tensor core: one warp-wide matrix multiply-accumulate D = A*B + C of
 * an m x k tile of A by a k x n tile of B, in dtype `in`, accumulated in
 * `acc`. Each of the warp's 32 lanes holds a fragment: lane l has
 * g = l / 4 and t = l % 4, and its element e of
 *   A sits at row g + a_row[e], column 2t + a_col[e]   (na elements)
 *   B sits at row 2t + b_k[e],  column g               (nb elements)
 *   C sits at row g + c_row[e], column 2t + c_col[e]   (nc elements)
 * which is the layout of PTX's mma.sync m16n8k* shapes. `helper` names
 * the dialect's function tg_wmma_<helper>(float *acc, a..., b...). */
typedef struct tg_tensor_core {
  const char *helper;
  int m, n, k;
  tg_dtype in, acc;
  int na, nb, nc;
  signed char a_row[8], a_col[8], b_k[8], c_row[4], c_col[4];
} tg_tensor_core;

/* mma.sync.aligned.m16n8k16 with f32 accumulation: f16 and bf16 inputs
 * (NVIDIA sm_80 and later). */
extern const tg_tensor_core tensor_cores_mma_m16n8k16[2];

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
  const tg_tensor_core *tensor_cores;   /* what the TC opt may use (NULL: none) */
  int n_tensor_cores;
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
