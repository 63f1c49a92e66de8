/* realize.h: from tensor-graph roots to computed buffers. */
#ifndef TG_REALIZE_H
#define TG_REALIZE_H

#include "runtime/device.h"
#include "uop/uop.h"
#include "util/util.h"

/* Schedules, compiles and runs what the roots need. On success fills
 * `becomes` with each realized node -> its buffer-backed replacement
 * (RESHAPE(BUFFER) or a view of the assigned buffer; borrowed from the
 * caller's pool) and returns 0; on failure returns -1 with tg_error set. */
int engine_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes);

/* JITBEAM (jit.c): the BEAM width for kernels compiled on this thread from
 * now on, 0 for $BEAM's; returns the previous setting. */
int engine_set_beam(int width);

/* ---- kernel observer (for tests that check every kernel against another
 * target): while set, fn sees the AST of every kernel about to run, cached
 * or not, on any thread. */
typedef void (*kernel_observer)(uop *ast, const char *name, void *ctx);
void engine_set_kernel_observer(kernel_observer fn, void *ctx);

/* For tests: the in-memory programs (and loaded CPU kernels) are set aside,
 * kept but no longer found, so the next realize of the same kernels goes to
 * the disk caches as a new process would. */
void engine_forget_programs(void);

/* The buffer behind a realized, contiguous tensor node (RESHAPE(BUFFER) or
 * BUFFER), or NULL. */
struct tg_buffer *uop_contiguous_buffer(const uop *u);

/* DEBUG=2's line for one kernel run (tag "***" when realized, "JIT" when
 * replayed); dt in seconds. */
void engine_print_kernel_run(const char *tag, const char *device, const char *name, int nbufs, double dt, double flops, double bytes);
double engine_now_s(void);   /* a monotonic clock, in seconds */

#endif
