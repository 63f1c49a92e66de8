/* linear.h: a schedule as a program (tinygrad's LINEAR of CALLs): the
 * kernels and copies a realize runs, each with its compiled program and its
 * buffers, in run order. engine_realize builds one and runs it once;
 * tg_linear keeps one to run again with other variable values; the JIT's
 * capture is the linears its step ran, appended. */
#ifndef TG_LINEAR_H
#define TG_LINEAR_H

#include "engine/vars.h"
#include "runtime/device.h"
#include "uop/uop.h"
#include "util/util.h"

#define LINEAR_MAX_VARS 32

struct call_instance;
struct linear_body;

/* One call: a kernel (prog), a copy between devices (prog NULL: bufs are
 * dst, src), or a whole function call (call != NULL: the body's kernels,
 * body->k, over the call's buffer table; see linear_body). */
typedef struct {
  tg_program *prog;
  tg_device *dev;
  struct tg_buffer **bufs;    /* retained, one reference per call */
  int nbufs;
  double flops;
  const char *name;           /* interned (util/intern.h): lives as long as the process */
  const char *const *varnames;   /* symbolic variables, in vars[] order (nvars of them; borrowed
                                 * from the program cache, which keeps every program's) */
  int nvars;
  uint64_t writes;            /* bit i: the call stores to bufs[i] (a copy: bufs[0]) */
  const char *src;            /* its source (the program cache's), NULL for a copy */
  bool zeros;                 /* it only stores zeros to its one buffer: while that buffer has no
                               * memory, the device's zeroed memory stands in for running it */
  bool bufs_in_block;         /* bufs lies in one of the linear's blocks (a function call's kernels
                               * share one), freed with the linear; else its own allocation */
  /* a function call's entry: its instance (owned; bufs is its table, nbufs
   * its size, with NULL for the intermediates, which are not made) and its
   * body's kernels as this linear runs them */
  struct call_instance *call;
  const struct linear_body *body;
} linear_call;

/* A function body as a linear runs its calls, one per body per linear
 * (not per call): each kernel's call without buffers (k[i].bufs NULL),
 * and the memory its calls' intermediates run in. The calls of one body
 * run one after another, and an intermediate is dead once its call's
 * kernels ran, so every call of the body uses the same scratch buffers:
 * intermediate i of the body is scratch[slot[i]] (-1: an output, the
 * call's own). Intermediates of one call whose uses do not overlap and
 * whose sizes are equal share a slot (they would share memory from the
 * allocator's cache anyway). A linear that must list each kernel with
 * its own buffers (the JIT's capture, tg_schedule_call) is flattened
 * first (linear_flatten): each call's kernels over fresh intermediates,
 * as a flat schedule has them. */
typedef struct linear_body {
  struct call_body *body;     /* retained */
  linear_call *k;             /* one per kernel of body->sched (bufs NULL) */
  int nk;
  int *var_at;                /* where kernel i's variable values start among the body's (nvars in all) */
  int nvars, index;           /* index: its place in the linear's bodies */
  int *slot;                  /* per internal buffer of the body: its scratch buffer, or -1 */
  struct tg_buffer **scratch; /* retained; memory only while a run uses it */
  int nscratch;
} linear_body;

typedef struct {
  linear_call *v;
  int n, cap;
  VEC(void *) blocks;         /* buffer tables of several calls each (bufs_in_block) */
  VEC(linear_body *) bodies;  /* the function bodies its call entries run */
} linear;

/* Schedules and compiles what the roots need, into l (nothing runs). On
 * success fills `becomes` like engine_realize. 0 or -1 with tg_error. */
int engine_linearize(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *l);
/* Runs l's calls in order; a variable takes its value from given (NULL:
 * none) or else its tg_bind value. Every value is resolved before the first
 * call runs, so an unbound variable fails with nothing run. A buffer only
 * l (and a capture) holds is an intermediate: its memory goes back after
 * its last call. While a capture is active, l's calls are appended to it. */
int linear_run(linear *l, const var_values *given);
void linear_free(linear *l);
/* Appends a call (its buffers retained again); not a function call's entry. */
void linear_push(linear *l, const linear_call *c);
/* Replaces each function call's entry by its kernels, each with its
 * buffers (the call's intermediates made now). */
void linear_flatten(linear *l);
/* The kernels and copies l runs (a function call's entry counts its
 * body's kernels). */
int linear_count(const linear *l);

/* A tg_schedule_entry for a call (tg_schedule_list, tg_schedule_call,
 * tg_jit_entries). */
void schedule_entry_fill(tg_schedule_entry *e, const char *name, const tg_device *dev, struct tg_buffer *const *bufs, int nbufs, bool copy);

/* ---- kernel capture (for the JIT): while a capture is active on this
 * thread, every linear run is appended to it. keep_memory: the captured
 * intermediates keep their memory to the end (the JIT's pruning keeps some
 * results in them); else an intermediate's memory goes back after its last
 * user, as outside a capture. */
typedef struct { linear l; bool keep_memory; } kernel_capture;
void engine_capture_begin(kernel_capture *c);
void engine_capture_end(void);
void kernel_capture_free(kernel_capture *c);

#endif
