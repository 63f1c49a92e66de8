/* schedule_internal.h: what the scheduler's files share (schedule.h is the
 * scheduler's API). The phases, each in its file:
 *   fusion.c        which nodes are stored (the fusion choices)
 *   lower.c         a node's value at symbolic indices: loads, gates, ALU
 *   kernel_build.c  one stored node -> one kernel AST (layout, reuse of
 *                   identical kernels' lowering), and function calls
 *   order.c         the kernels in an order that respects RAW and WAR
 *   merge.c         sibling elementwise kernels merged into multi-output ones
 *   schedule.c      the driver: schedule_create runs them in that order. */
#ifndef TG_SCHEDULE_INTERNAL_H
#define TG_SCHEDULE_INTERNAL_H

#include "schedule/schedule.h"
#include "schedule/call.h"
#include "uop/rewrite.h"

typedef struct {
  tg_buffer *buf;       /* the buffer the node's value lands in */
  uop *repl;            /* what the node becomes: a view over BUFFER(buf) */
  int kernel;           /* the kernel computing it, -1 when none */
} rinfo;

/* What ordering needs of each kernel, in schedule order. */
typedef struct {
  int *deps, ndeps;        /* kernels it reads the output of (malloc'd) */
  tg_buffer **reads;       /* buffers it reads as they are, written by no kernel here (malloc'd) */
  int nreads;
  tg_buffer *write;        /* the buffer it writes, or NULL */
  tg_buffer **writes;      /* a function call's item: the arguments it writes (malloc'd) */
  int nwrites;
} kernel_links;

typedef struct {
  ptrmap marked;        /* nodes to store: uop -> rinfo* (NULL until built) */
  ptrmap walked;        /* nodes already searched for reduces under an expand */
  ptrmap nchildren;     /* uop -> consumer count */
  ptrmap device;        /* uop -> tg_device* */
  ptrmap roots;         /* the nodes asked for: stored in their own layout */
  ptrmap small;         /* big node -> its values before the broadcast (retained), see small_form */
  tg_device *default_dev;
  schedule *out;
  VEC(rinfo *) infos;
  VEC(kernel_links) links;   /* one per kernel of out */
  VEC(struct call_made *) calls;   /* function calls instantiated so far (sched_build_call) */
  ptrmap call_made_of;  /* a call's output 0 (the CALL node) -> its struct call_made */
  ptrmap into;          /* CALL -> its sched_into: an output written straight into an assign's target */
} sctx;

/* A call output whose one consumer assigns it to memory that can hold it
 * (sched_find_into): the call writes it there, and the assign is no kernel. */
typedef struct {
  uop *assign;
  tg_buffer *base;      /* the target's memory */
  int64_t offset;       /* elements into base where the target starts */
} sched_into;

/* A kernel being lowered: its buffers, their DEFINE_GLOBALs, its ranges. */
typedef struct {
  sctx *s;
  uop *root;
  ptrmap memo;
  int next_range;
  VEC(tg_buffer *) bufs;
  VEC(uop *) globals;
  VEC(int) deps;
  VEC(tg_buffer *) raw_reads;
  int via_repl;           /* > 0 while lowering a stored node's replacement */
  int depth;              /* sched_lower calls in progress (the lowering pass is open) */
  int deep_from;          /* the depth a bottom-up walk of a deep chain began at (lower.c) */
  rw_pass pass;           /* the lowering pass, while depth > 0 */
  bool failed;
} kctx;

static inline bool is_marked(sctx *s, const uop *u) { return pm_get(&s->marked, u) != NULL; }
static inline void mark(sctx *s, uop *u) { if (!is_marked(s, u)) pm_put(&s->marked, u, (void *)1); }
static inline rinfo *info_of(sctx *s, const uop *u) {
  void *p = pm_get(&s->marked, u);
  return p == (void *)1 ? NULL : p;
}
static inline int64_t numel_of(const uop *u) {
  int64_t n = 1;
  for (int i = 0; i < u->ndim; i++) n *= u->shape[i];
  return n;
}

/* ---- fusion.c */
/* A BUFFER under reshapes (and AFTERs, DETACHes, symbolic axes): contiguous memory. */
bool sched_is_buffer_view(const uop *u);
/* What such a view becomes once its AFTERs ran: RESHAPE(BUFFER) or BUFFER. */
uop *sched_strip_after(uop *u);
tg_buffer *sched_view_buffer(const uop *u);
/* A root that is a contiguous range of a realized host buffer as a view of it, or NULL. */
uop *sched_slice_view(uop *r);
/* The memory v (a whole buffer, or a contiguous range of one: reshapes
 * and a shrink) is, with its first element's offset; NULL when it is not. */
tg_buffer *sched_contiguous_range(const uop *v, int64_t *offset);
/* Whether views of memory may stand for stored values (not while the JIT captures). */
bool sched_views_allowed(void);
/* the view an ASSIGN writes through (following chained assigns) */
uop *sched_assign_view(uop *u);
/* An argument that is memory in its logical order already: reshapes of a whole buffer. */
tg_buffer *sched_plain_buffer(uop *u);
void sched_mark_stored(sctx *s, uop *const *roots, int n, const uop_list *topo, ptrmap *becomes);

/* ---- lower.c */
uop *sched_lower(kctx *k, uop *u, uop *const *idx, uop *gate);
/* the buffer's DEFINE_GLOBAL in this kernel, added on first use */
uop *sched_global_for(kctx *k, tg_buffer *b);
/* flat = sum(idx[i] * stride[i]) for a contiguous shape */
uop *sched_flat_index(uop *const *idx, const int64_t *shape, int nd);
/* Where the loop over axis i of u ends: its size, or its variable. */
uop *sched_axis_end(const uop *u, int i);
bool sched_reads_elsewhere(uop *v, uop *g, uop *ix);
static inline uop *idx_const(int64_t v) { return uop_const_int(DT_INDEX, v); }

/* ---- kernel_build.c */
/* The kernel computing stored node u (and, first, any it needs); 0 or -1. */
int sched_build_kernel(sctx *s, uop *u);
/* A function call: its body's kernels, instantiated for u's arguments. */
int sched_build_call(sctx *s, uop *u);
/* Finds the call outputs that can be written straight into the target of
 * the assign that is their one consumer (s->into). */
void sched_find_into(sctx *s, const uop_list *topo);
void sched_kernel_name(uop *ast, char *buf, size_t n);
/* the calls sched_build_call made (s->calls) */
void sched_calls_free(sctx *s);

/* ---- order.c */
void sched_order_kernels(sctx *s);

/* ---- merge.c */
void sched_merge_sibling_kernels(schedule *out);

#endif
