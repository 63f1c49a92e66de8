/* jit_internal.h: what a tg_jit holds once it has captured its step, for
 * jit.c (capture, planning, replay) and jit_export.c (writing the step out
 * as one C file). */
#ifndef TG_JIT_INTERNAL_H
#define TG_JIT_INTERNAL_H

#include "engine/realize.h"
#include "runtime/buffer.h"
#include "tensor/tensor.h"

/* each kernel argument: fixed memory (weights, state written in place), an
 * input, an output, or a slot of the intermediates' memory plan */
enum { ARG_FIXED, ARG_INPUT, ARG_OUTPUT, ARG_SLOT };
typedef struct { int kind, index; } jit_arg;

/* var[i]: an output's symbolic axis (retained DEFINE_VAR), NULL when static */
typedef struct { tg_shape shape; tg_dtype dtype; const char *device; uop *var[TG_MAX_DIMS]; } tensor_sig;

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
  tg_buffer *outb[256];      /* with reuse_outputs: the outputs' memory, kept across calls */
};

#endif
