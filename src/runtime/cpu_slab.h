/* cpu_slab.h: medium CPU buffers from shared huge-page chunks (cpu_slab.c). */
#ifndef TG_CPU_SLAB_H
#define TG_CPU_SLAB_H

#include <stdbool.h>
#include <stddef.h>

#define CPU_SLAB_MIN ((size_t)256 << 10)
#define CPU_SLAB_MAX ((size_t)2 << 20)   /* from here on a buffer is huge pages of its own */

/* Whether a buffer of n bytes comes from the chunks. */
bool cpu_slab_serves(size_t n);
/* n bytes (page-aligned, not zeroed) from a chunk, or NULL when n is not
 * served here or no chunk can be mapped. */
void *cpu_slab_alloc(size_t n);
/* Gives p back when it came from a chunk (true); false otherwise. */
bool cpu_slab_free(void *p);
/* The chunks mapped now (for tests). */
int cpu_slab_chunks(void);

#endif
