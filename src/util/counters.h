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
#endif
