/* kernel_ir.h: the vocabulary of a kernel AST, which the scheduler writes
 * and the kernel optimizer, codegen and renderers read.
 *
 * A kernel is a SINK of STOREs into DEFINE_GLOBAL buffers (arg: the buffer's
 * index in the kernel's argument list). Values are computed inside RANGE
 * loops; REDUCE accumulates over reduce RANGEs; LOADs read DEFINE_GLOBALs at
 * index expressions of the ranges (movement ops are gone by then);
 * DEFINE_VAR is a symbolic size or a runtime value bound at launch. */
#ifndef TG_KERNEL_IR_H
#define TG_KERNEL_IR_H

#include "uop/uop.h"

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

/* The RANGE's id and kind (its arg), and the size opts may split: the trip
 * count, or 1 for a symbolic axis (nothing to split). */
static inline int range_id(const uop *r) { return (int)r->arg.v[0]; }
static inline int range_kind(const uop *r) { return (int)r->arg.v[1]; }
static inline int64_t range_static_size(const uop *r) { return range_is_symbolic(r) ? 1 : range_max_size(r); }
/* qsort order of RANGE pointers: by id (nesting order) */
static inline int range_by_id(const void *a, const void *b) { return range_id(*(uop *const *)a) - range_id(*(uop *const *)b); }

#endif
