/* schedule.h: the scheduler turns a tensor graph into kernels. It decides
 * which nodes are stored to memory (realized) and lowers each realized node
 * into a kernel AST: a SINK of STOREs whose values are written with RANGE
 * loops, REDUCE accumulations and LOADs from DEFINE_GLOBAL buffers. Movement
 * ops become index arithmetic; they never make a kernel of their own. The
 * kernel vocabulary (range kinds) is uop/kernel_ir.h. */
#ifndef TG_SCHEDULE_H
#define TG_SCHEDULE_H

#include "runtime/buffer.h"
#include "uop/kernel_ir.h"
#include "uop/uop.h"
#include "util/util.h"

typedef struct {
  uop *ast;              /* retained; NULL for a copy between devices */
  tg_buffer **bufs;      /* retained; bufs[i] is DEFINE_GLOBAL i (copy: dst, src) */
  int nbufs;
  tg_device *dev;
  char name[96];
  bool merged;           /* a function body's kernel, instantiated: merged with its siblings already */
  struct call_instance *call;   /* this item stands for a whole function call (its kernels, ordered
                                 * and merged as one; schedule/call.h): inside schedule_create, and in
                                 * a schedule from schedule_create_calls, which owns it; NULL else */
} sched_item;

typedef struct { sched_item *v; int n, cap; } schedule;

/* Builds the schedule for roots. becomes gets node -> replacement for every
 * realized node (borrowed from the caller's pool). 0 or -1 with tg_error. */
int schedule_create(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes);
/* As schedule_create, but a function call stays one item (call != NULL,
 * ast and bufs NULL) standing for its body's kernels over the call's
 * buffer table (schedule/call.h: call_instance_buf), so that nothing is
 * made per kernel per call here. A schedule found by the structure memo
 * (schedule_memo.h) is flat (the memo records a call's kernels). */
int schedule_create_calls(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes);
/* Replaces each item standing for a call by the call's kernels. */
void schedule_expand_calls(schedule *s);
void schedule_free(schedule *s);
/* Whether roots that are contiguous slices of realized memory become views
 * of it with no kernel (on by default; the JIT's capture turns it off on
 * its thread). Returns the previous setting. */
bool schedule_allow_views(bool on);

#endif
