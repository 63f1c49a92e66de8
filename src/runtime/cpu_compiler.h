/* cpu_compiler.h: internals shared by the runtime's .c files (not a public
 * interface): the device singletons and a few hooks for tests. */
#ifndef TG_CPU_COMPILER_H
#define TG_CPU_COMPILER_H

#include "runtime/backends.h"

/* The flags every CPU kernel is compiled with (part of the cache key). */
extern const char *const cpu_compile_flags;

/* Forget the in-process map of loaded kernels (cache key -> dlopen handle), as
 * if a new process started: the next compile of a known source goes to the
 * disk cache. Handles stay open, so programs already returned keep working.
 * For tests. */
void cpu_forget_loaded(void);

#endif
