/* counters.h: the global counters behind tg_get_counters. Any layer may add. */
#ifndef TG_COUNTERS_H
#define TG_COUNTERS_H
#include "tg.h"
void counters_add_run(double flops, double bytes, double seconds);
/* n kernel runs at once (a JIT replay), their totals */
void counters_add_runs(int64_t n, double flops, double bytes, double seconds);
void counters_add_compile(bool cached);
/* A kernel optimized and rendered (cached: its program read from the disk
 * instead, engine/program_cache.h). */
void counters_add_render(bool cached);
void counters_add_schedule(void);
/* Buffer memory taken (+) or given back (-). */
void counters_mem(int64_t delta);

/* Work counted on the calling thread, in units that do not depend on the
 * machine's load (tests of how scheduling cost grows, where instruction
 * counters are not available): a UOp node asked for (made, or found by
 * hash-consing), a rewrite rule tried on a node, a buffer made, a node of
 * a graph the scheduler is given (its toposort), a schedule item, a
 * linear entry (a function body's kernels once per linear). */
extern _Thread_local int64_t counters_work_done;
static inline void counters_add_work(int64_t n) { counters_work_done += n; }   /* inline: the rewrite loop counts every rule */
static inline int64_t counters_work(void) { return counters_work_done; }
#endif
