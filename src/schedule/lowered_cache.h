/* lowered_cache.h: kernels lowered before, by structure (kernel_build.c's
 * lower_key), for every schedule of the process and across processes.
 *
 * A decoding step's schedule, the JIT's capture of it, each prefill chunk
 * and every layer body meet the same kernels; lowering a big one (a
 * row-packed K-quant matvec) takes tens of milliseconds, most of a model's
 * time to its first token. In memory, entries never change once in (past
 * LOWERED_MAX the map starts over); on disk (next to the compile cache,
 * .low files) they are keyed by the structure's exact text, the device, and
 * tg's build id, and checked by a hash of their contents when read back.
 * TG_NOCACHE=1 disables disk reads. */
#ifndef TG_LOWERED_CACHE_H
#define TG_LOWERED_CACHE_H

#include "schedule/schedule_internal.h"

typedef struct {
  uop *ast;             /* retained */
  int nbufs;
  int *ord;             /* global i (>= 1): the placeholder number of its buffer */
  bool permuted;
  int nd;
  int64_t pshape[TG_MAX_DIMS * 4], back[TG_MAX_DIMS * 4];
  char name[sizeof ((sched_item *)0)->name];
} lowered_kernel;

/* The kernel of structure key lowered on dev before (in this process, else
 * on disk) into *out (its ast retained, ord malloc'd: lowered_kernel_clear
 * frees them), or false. */
bool lowered_find(uop *key, tg_device *dev, lowered_kernel *out);
void lowered_kernel_clear(lowered_kernel *e);
/* Files e (malloc'd) under key (retained); both belong to the cache now.
 * Also written to disk. */
void lowered_add(uop *key, tg_device *dev, lowered_kernel *e);
/* For tests: empties the in-memory map (the disk then answers, as for a new
 * process). */
void lowered_cache_forget(void);

#endif
