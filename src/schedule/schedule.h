/* schedule.h: the scheduler turns a tensor graph into kernels. It decides
 * which nodes are stored to memory (realized) and lowers each realized node
 * into a kernel AST: a SINK of STOREs whose values are written with RANGE
 * loops, REDUCE accumulations and LOADs from DEFINE_GLOBAL buffers. Movement
 * ops become index arithmetic; they never make a kernel of their own. */
#ifndef TG_SCHEDULE_H
#define TG_SCHEDULE_H

#include "runtime/buffer.h"
#include "uop/uop.h"
#include "util/util.h"

/* RANGE arg: (id, kind). Output loops are LOOP, reduce loops REDUCE; the
 * kernel optimizer (codegen/opts.c) makes THREAD (split across cores),
 * UPCAST (output lanes kept in registers), UNROLL (reduce lanes), LOCAL
 * (output threads of a GPU work group) and GROUP (reduce threads of a work
 * group). Loops nest by id. */
enum { RANGE_LOOP = 0, RANGE_REDUCE = 1, RANGE_UPCAST = 2, RANGE_UNROLL = 3, RANGE_THREAD = 4, RANGE_LOCAL = 5, RANGE_GROUP = 6 };

/* A RANGE's end is a CONST, or a DEFINE_VAR for a symbolic axis (the loop
 * runs to the value bound when the kernel runs). */
static inline bool range_is_symbolic(const uop *r) { return r->src[0]->op != OP_CONST; }
/* Its trip count: the constant, or the variable's max (an upper bound). */
static inline int64_t range_max_size(const uop *r) {
  const uop *e = r->src[0];
  return e->op == OP_CONST ? e->arg.i : e->op == OP_DEFINE_VAR ? e->src[1]->arg.i : 1;
}

typedef struct {
  uop *ast;              /* retained; NULL for a copy between devices */
  tg_buffer **bufs;      /* retained; bufs[i] is DEFINE_GLOBAL i (copy: dst, src) */
  int nbufs;
  tg_device *dev;
  char name[96];
  bool merged;           /* a function body's kernel, instantiated: merged with its siblings already */
} sched_item;

typedef struct { sched_item *v; int n, cap; } schedule;

/* Builds the schedule for roots. becomes gets node -> replacement for every
 * realized node (borrowed from the caller's pool). 0 or -1 with tg_error. */
int schedule_create(uop *const *roots, int n, const char *default_device, schedule *out, ptrmap *becomes);
void schedule_free(schedule *s);
/* Whether roots that are contiguous slices of realized memory become views
 * of it with no kernel (on by default; the JIT's capture turns it off on
 * its thread). Returns the previous setting. */
bool schedule_allow_views(bool on);

#endif
