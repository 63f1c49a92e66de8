/* program_cache.h: rendered kernels on disk, keyed by their AST.
 *
 * The compile cache (runtime/compile_cache.c) saves the compiler's work, but
 * a new process still optimizes and renders every kernel before it can look
 * a source up there: for a model with big kernels (row-packed K-quant
 * matvecs) that is most of the time to the first token. This cache keeps
 * what codegen_program produced (the source and how to launch it) under a
 * hash of everything that decides it: the AST node by node (exactly, not
 * its printout: the SHA-256 of its uop_serialize text, which a schedule
 * read from the schedule cache brings along), the kernel's name, the device and its renderer's limits,
 * the opts setting (TG_OPTS, NOOPT, BEAM), the settings codegen reads
 * (TG_NOVEC, TG_NO_PREFETCH, the worker count the heuristic plans for), and
 * the build of tg itself (its GNU build id), so a rebuilt tg never reads an
 * older tg's programs. Files go where the compile cache's go; TG_NOCACHE=1
 * disables reads. */
#ifndef TG_PROGRAM_CACHE_H
#define TG_PROGRAM_CACHE_H

#include "codegen/codegen.h"
#include "schedule/schedule.h"

/* The file for kernel it with the opts setting opts_key (malloc'd), or NULL
 * when it cannot be cached (an AST holding a pointer, no cache directory). */
char *program_cache_path(const sched_item *it, const char *opts_key);
/* What the engine counts and checks about a kernel besides running it,
 * kept beside its program so that a process reading the program does not
 * walk the AST again for them. */
#define PROGRAM_FACTS_NAMES 256
typedef struct {
  double flops;          /* kernel_flops */
  uint64_t writes;       /* bit i: the kernel stores to buffer i (i < 64) */
  int nvars;             /* its variables, in kernel_var_names's order ... */
  char names[PROGRAM_FACTS_NAMES];   /* ... one after another, each ending in '\0' */
} program_facts;

/* Fills kp and facts from the file (true), or false when absent or not a
 * whole entry. */
bool program_cache_read(const char *path, kernel_program *kp, program_facts *facts);
/* Stores kp and facts (errors are ignored: the cache is only an
 * optimization). */
void program_cache_write(const char *path, const kernel_program *kp, const program_facts *facts);

#endif
