/* call.h: function bodies and their calls in the schedule.
 *
 * A body is a tensor graph over parameter placeholders: BUFFER nodes whose
 * buffers are never allocated, one per parameter, with the parameter's
 * shape, dtype and device. CALL(args...) (uop_call.h) applies output k of a
 * body to args. The body is scheduled once, the first time a schedule meets
 * one of its calls; every call then instantiates that schedule: the same
 * kernel ASTs (so the same compiled programs) over the call's argument
 * buffers and fresh buffers for the body's intermediates and outputs.
 * Nothing of the body is lowered, optimized or rendered again, which is what
 * makes N identical layers cost one layer's scheduling. */
#ifndef TG_CALL_H
#define TG_CALL_H

#include <pthread.h>
#include "schedule/schedule.h"
#include "uop/uop_call.h"

typedef struct call_body call_body;
struct call_body {
  int refcnt;                 /* CALL nodes, the function's cache, grad bodies */
  char name[64];
  int nparams, nouts;
  uop **params;               /* placeholder views (retained): what the body's graph reads */
  tg_buffer **param_bufs;     /* their buffers (retained, never allocated) */
  uop **outs;                 /* the body's outputs (retained) */
  uop_call_target *targets;   /* one per output: what CALL nodes point at */
  /* owned by the layer that built the body (tensor/function.c: gradient
   * bodies); freed with it */
  void *owner_data;
  void (*owner_free)(void *owner_data);
  /* a body with no graph of its own to differentiate (a custom kernel,
   * tensor/custom_kernel.c): the gradients of CALL u's sources given its
   * gradient g (as function_call_grad); NULL: from the body's graph */
  void (*grad)(call_body *b, uop *u, uop *g, const bool *need, uop **sg);

  /* the schedule, built on first use */
  pthread_mutex_t lock;
  bool scheduled;
  schedule sched;
  uop **out_repl;             /* retained: output k as a view of its buffer after the schedule */
  ptrmap role;                /* tg_buffer* -> 1+param index, or -(1+internal index); absent: fixed */
  VEC(tg_buffer *) internal;  /* intermediates and outputs: fresh per call */
  bool *param_written;        /* per parameter: a kernel of the body stores to it (an assign) */
  /* what every call repeats, worked out once: buffer j of item i has role
   * roles[role_at[i] + j] (as in role: > 0 parameter, < 0 fresh, 0 fixed);
   * output k is last touched by item out_item[k] (-1: none) and is a view
   * of parameter out_param[k] (-1: not one), held in fresh buffer
   * out_slot[k] (-1: none of its own) */
  int *roles, *role_at, *out_item, *out_param, *out_slot;
  /* per internal buffer: whether an output is (a view of) it. Those are
   * made for every call (call_instantiate); the others, the body's
   * intermediates, only when a call's kernels are listed one by one
   * (call_instance_fresh): a linear runs a call's intermediates in memory
   * it keeps per body (engine/linear.h) */
  bool *internal_out;

  /* its structure as the schedule memo names it (schedule_memo.c), made on
   * first use under lock: 1 made, -1 none (a custom kernel's body, whose
   * kernel is not in its graph), 0 not yet */
  int structure_state;
  uint64_t structure[2];      /* a digest of its graph and parameters */
  VEC(tg_buffer *) structure_fixed;   /* memory its graph reads that no parameter is (borrowed: outs hold it) */
};

/* A body over params (placeholder views, see call_param_new) with outputs
 * outs; refcount 1 (the caller's). */
call_body *call_body_new(const char *name, uop *const *params, int nparams, uop *const *outs, int nouts);
void call_body_retain(call_body *b);
void call_body_release(call_body *b);

/* A parameter placeholder: RESHAPE(BUFFER) of the given shape over a buffer
 * that is never allocated (buffer_alloc refuses it). Borrowed (pool). */
uop *call_param_new(tg_device *dev, dtype_t dt, const int64_t *shape, int ndim);
/* Whether b is such a placeholder's buffer. */
bool call_is_param_buffer(const tg_buffer *b);

/* One call of a body, instantiated: a table of the call's buffers, over
 * which the body's kernels (b->sched, shared by every call) run. Buffer j
 * of the body's kernel i is call_instance_buf(c, i, j): the call's
 * argument, a fresh buffer of the call, or the body's own (fixed) memory.
 * The fresh buffers of the body's outputs are made with the call; an
 * intermediate's slot stays NULL until a consumer lists the call's kernels
 * one by one (call_instance_fresh: call_instance_item, a linear flattened
 * for the JIT or tg_schedule_call). Nothing is made per kernel per call. */
typedef struct call_instance {
  call_body *body;            /* retained */
  tg_buffer **tab;            /* retained: the arguments (nparams), then the fresh buffers (internal.n;
                               * an intermediate's NULL until call_instance_fresh) */
  uop **out_repl;             /* per output: its view over the call's buffers (borrowed, pool) */
  tg_buffer **out_buf;        /* per output: the buffer that view reads (borrowed) */
  const int *out_item;        /* per output: the last item touching out_buf, or -1 (the body's) */
  const int *out_param;       /* per output: the parameter it is a view of, or -1 (the body's) */
} call_instance;

/* NULL for an intermediate not made yet (call_instance_fresh makes it) */
static inline tg_buffer *call_instance_buf(const call_instance *c, int i, int j) {
  const call_body *b = c->body;
  int r = b->roles[b->role_at[i] + j];
  return r > 0 ? c->tab[r - 1] : r < 0 ? c->tab[b->nparams - r - 1] : b->sched.v[i].bufs[j];
}
/* Makes the call's intermediates (fresh buffers, as the body's) where
 * they are not made yet. */
void call_instance_fresh(call_instance *c);
/* Kernel i of the call as a schedule item of its own (its ast and
 * buffers retained, bufs allocated): what a flat schedule holds. Makes
 * the call's intermediates first. */
void call_instance_item(call_instance *c, int i, sched_item *out);

/* Schedules b unless it is (thread-safe): 0 or -1. A graph whose whole
 * schedule was found by its structure (schedule_memo.h) instantiates none
 * of its calls' bodies, so they may be unscheduled. */
int call_body_schedule(call_body *b, const char *default_device);
/* Works out b's roles, out_item and out_param from its schedule, role map
 * and out_repl (schedule_body does; a body given its schedule calls it). */
void call_body_plan(call_body *b);
/* Schedules b (once; thread-safe) and instantiates it over args (one
 * contiguous buffer per parameter, of its dtype and size). into (NULL, or
 * one per output, NULL for none): memory output k is written to instead
 * of a fresh buffer (its dtype and size; used only where the output has a
 * fresh buffer of its own). 0 or -1. */
int call_instantiate(call_body *b, const char *default_device, tg_buffer *const *args, tg_buffer *const *into, call_instance *out);
/* Whether output k of b (scheduled) may be given memory by call_instantiate's into. */
bool call_output_placeable(const call_body *b, int k);
/* Releases what call_instantiate made. */
void call_instance_free(call_instance *c);

#endif
