/* beam.h: BEAM search over kernel opts. With BEAM=n, a kernel's opts are
 * searched once per machine: beams of n candidates are grown one opt at a
 * time, every candidate is compiled (in parallel) and timed on scratch
 * buffers, and the fastest opts are cached on disk, so later runs pay
 * nothing. */
#ifndef TG_BEAM_H
#define TG_BEAM_H

#include "codegen/opts.h"
#include "schedule/schedule.h"

/* The best opts for the kernel (from the disk cache or a search); returns
 * their count (0: no opts beat the plain kernel), or -1 on error. */
int beam_opts(sched_item *it, int width, kopt *out, int max);

#endif
