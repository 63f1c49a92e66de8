/* renderer.h: kernel ASTs to source code. One C-style core; per-dialect
 * tables for types and function names (C now; OpenCL C and CUDA C later). */
#ifndef TG_RENDERER_H
#define TG_RENDERER_H

#include "uop/uop.h"

/* Renders the kernel as a C function `name` with the tg_kernel_fn signature.
 * Returns malloc'd source, or NULL with tg_error set. */
char *render_c(uop *ast, const char *name);

#endif
