/* jit_internal.h: what a tg_jit holds once it has captured its step, for
 * jit.c (capture, planning, replay) and jit_export.c (writing the step out
 * as one C file). */
#ifndef TG_JIT_INTERNAL_H
#define TG_JIT_INTERNAL_H

#include "engine/realize.h"
#include "engine/linear.h"
#include "runtime/buffer.h"
#include "tensor/tensor.h"

/* each kernel argument: fixed memory (weights, state written in place), an
 * input, an output, or a slot of the intermediates' memory plan */
enum { ARG_FIXED, ARG_INPUT, ARG_OUTPUT, ARG_SLOT };
typedef struct { int kind, index; } jit_arg;

/* var[i]: an output's symbolic axis (retained DEFINE_VAR), NULL when static */
typedef struct { tg_shape shape; tg_dtype dtype; const char *device; uop *var[TG_MAX_DIMS]; } tensor_sig;

/* How a replay launches the captured kernels, built once after planning:
 * each kernel's buffer pointers with the fixed and planned ones filled in
 * (a call patches in its inputs and outputs), and the kernels in batches
 * (consecutive kernels of a device that launches batches: one launch each,
 * JIT_BATCH_SIZE kernels first, twice as many for each batch after; on a
 * device with graphs, each batch one graph kept and relaunched). */
typedef struct { int k, a, kind, index; } replay_patch;
typedef struct {
  void ***ptrs;              /* per kernel, per buffer */
  replay_patch *patch;       /* the input and output arguments */
  int npatch;
  int64_t (*vars)[32];       /* per kernel: its variables' values this call */
  tg_program **progs;        /* per kernel */
  const int64_t **varp;      /* per kernel: vars[k] */
  int *batch_end;            /* batch b: kernels [batch_end[b-1], batch_end[b]) */
  int nbatches;
  bool *batched;             /* per batch: launched with launch_batch or launch_graph */
  int *nbufs, *nvars;        /* per kernel: its argument counts (launch_graph) */
  void **graphs;             /* per batch: the device's graph (launch_graph), or NULL */
  double flops;              /* of one replay */
} replay_plan;

struct tg_jit {
  tg_jit_fn fn;
  void *ctx;
  int calls;
  kernel_capture cap;
  jit_arg **args;            /* per kernel, per buffer */
  int nin, nout;
  tensor_sig *in_sig, *out_sig;
  void **slots;              /* memory of the plan's slots */
  size_t *slot_bytes;
  tg_device **slot_dev;
  int nslots;
  int64_t inter_bytes, planned_bytes;
  bool prune;
  int pruned;
  tg_buffer **pinned;        /* results of pruned kernels (one reference each) */
  int npinned;
  bool reuse_outputs;
  bool capture_first;        /* the first call captures (tg_jit_set_capture_first) */
  bool captured_first;       /* ... and it did: calls counts one more than were made */
  tg_buffer *outb[256];      /* with reuse_outputs: the outputs' memory, kept across calls */
  replay_plan *rp;           /* built on the first replay */
};

#endif
