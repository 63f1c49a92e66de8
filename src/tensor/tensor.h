/* tensor.h: internals of the tensor layer. A tg_tensor is a handle on a UOp
 * of the tensor graph, owned by a scope, and listed globally so that
 * realization can point every tensor at the computed buffers. */
#ifndef TG_TENSOR_INTERNAL_H
#define TG_TENSOR_INTERNAL_H

#include "tg.h"
#include "uop/uop.h"
#include "util/util.h"

struct tg_scope;
struct tg_tensor {
  uop *u;                    /* retained */
  const char *device;        /* a device's static name ("CPU", "NULL") */
  struct tensor_ctx *ctx;    /* the context (thread) that made it: tensor.c */
  struct tg_scope *scope;    /* NULL: no scope (made with none open, kept out of the last, or a gradient) */
  int scope_slot;
  tg_tensor *prev, *next;    /* its context's list of live tensors */
  bool requires_grad;
  tg_tensor *grad;           /* accumulated gradient, owned by this tensor */
  tg_tensor *owner;          /* for a gradient: the tensor owning it */
};

/* Takes t out of its scope: from now on `owner` frees it. */
void tensor_adopt(tg_tensor *owner, tg_tensor *t);
/* Calls fn on every live tensor (of every thread) that requires grad (under
 * the tensor locks: fn must not create or free tensors). */
void tensors_each_requiring_grad(void (*fn)(tg_tensor *t, void *ctx), void *ctx);

/* Until tensor_device_end(prev), tensors this thread makes from nothing
 * (constants, aranges, tables from data) go to device (a tensor's device
 * name) instead of the default: for ops that build a graph over their
 * input's device, such as tg_dequantize. Returns the previous override. */
const char *tensor_device_begin(const char *device);
void tensor_device_end(const char *prev);

/* Wraps u (retains it) in a new tensor in the current scope. */
tg_tensor *tensor_wrap(uop *u, const char *device);
/* Whether t's device runs kernels that gain from the CPU-cache layouts of
 * the front end (panel-packed matmul operands, conv channel lanes): its
 * renderer's wide_layouts capability, never its name. */
bool tensor_wide_layouts(const tg_tensor *t);
/* A weight matrix w (N, K), N a multiple of TENSOR_PANEL, as the panels a
 * matmul reads on wide-layout devices: (N/32, K, 32), contiguous (tg_matmul packs
 * b = w.T the same way per call; a model packs its weights once).
 * tensor_rows_of_panels is w again (a lazy view), tensor_matmul_panels is
 * x (..., K) @ w.T from the panels: (..., N). */
#define TENSOR_PANEL 32
tg_tensor *tensor_panels_of_rows(tg_tensor *w);
tg_tensor *tensor_rows_of_panels(tg_tensor *panels);
tg_tensor *tensor_matmul_panels(tg_tensor *x, tg_tensor *panels);
/* An op given NULL returns NULL. The message of the failure that made the
 * NULL is kept (it says what went wrong); only when there is none does this
 * set "op: input is NULL". */
void tensor_null_input(const char *op);
/* The same for a call that names the argument ("tg_numel: t is NULL"). */
void tensor_null_arg(const char *op, const char *arg);
#define NEED(t, op) do { if (!(t)) { tensor_null_input(op); return NULL; } } while (0)

/* Every tensor op runs between these: a UOp pool for the graph it builds. */
#define API_BEGIN uop_pool_push()
#define API_RETURN(x) do { tg_tensor *r_ = (x); uop_pool_pop(); return r_; } while (0)

/* Builds (borrowed) UOps for tensor-graph movement, with shapes checked by
 * the caller. */
uop *mv_reshape(uop *u, const int64_t *shape, int nd);
uop *mv_expand(uop *u, const int64_t *shape, int nd);
uop *mv_permute(uop *u, const int64_t *order);
/* PAD by pads[2*i], pads[2*i+1] (filled with value); SHRINK to [starts, ends). */
uop *mv_pad(uop *u, const int64_t *pads, double value);
uop *mv_shrink(uop *u, const int64_t *starts, const int64_t *ends);
/* -x for floats, ~x for ints, !x for bools: reverses the order exactly, so
 * min is order_inverse(max(order_inverse(x))). */
uop *order_inverse(uop *x);
/* Broadcast a scalar CONST to a shape. */
uop *const_like(double v, dtype_t dt, const int64_t *shape, int nd);
/* The number of elements of a shape (checked multiplication: -1 past
 * TG_MAX_NUMEL, which shape_ok keeps every tensor under). */
int64_t shape_numel(const int64_t *shape, int nd);
/* Whether shape[nd] is one a tensor may have: no negative dimension and at
 * most TG_MAX_NUMEL elements (zero dims counted as ones, so no partial
 * product overflows either; util.h's tg_checked_numel). Otherwise false,
 * with "op: shape (a,b) has more than 2^59 elements ..." as the error. Every
 * op that takes a shape from its caller, or computes one from the caller's
 * numbers (reshape, expand, pad, broadcasting, repeat, cat), checks here. */
bool shape_ok(const int64_t *shape, int nd, const char *op);

/* Wraps a freshly created value so it is distinct from equal values. */
uop *make_unique(uop *u);
/* A scalar constant for an operand inside a library function (a mask, a
 * shift, an offset): unlike tg_scalar it has no identity of its own (no
 * UNIQUE), so equal ones are one node and the broadcasts of repeated
 * operands are shared, which keeps traced graphs small. Never realize one
 * into a buffer something may assign to: equal constants are the same. */
tg_tensor *tensor_const(double value, tg_dtype dt);

/* After an assign A to buffer node buf: every live tensor but `except` that
 * is a view of buf (movement ops over it) reads AFTER(buf, A) instead, so
 * reading the base after assigning to a slice sees the write. */
void tensors_after_assign(uop *buf, uop *assign, const tg_tensor *except);

/* Remembers the computations behind realized nodes that depend on tensors
 * requiring grad, so gradients flow through realized tensors (autograd.c). */
void autograd_note_realized(const ptrmap *becomes);

/* A custom gradient for a node built from several ops (a convolution's
 * input gradient as a transposed convolution instead of the window view's
 * col2im sum): the gradient walk steps from out straight to srcs and asks fn
 * for their gradients given out's gradient g (borrowed UOps; NULL for none).
 * ctx (ctx_size bytes) is copied. */
typedef void (*autograd_custom_fn)(const void *ctx, uop *g, uop *const *srcs, int n, uop **grads);
#define AUTOGRAD_CUSTOM_MAX_SRCS 4
#define AUTOGRAD_CUSTOM_MAX_CTX 256
void autograd_set_custom(uop *out, uop *const *srcs, int n, autograd_custom_fn fn, const void *ctx, size_t ctx_size);

/* Gradients of root with respect to targets[0..n) given root's gradient
 * seed, into grads (borrowed; a zero constant for a target root does not
 * reach): what a function's gradient body is built from (function.c). */
void autograd_vjp(uop *root, uop *seed, uop *const *targets, int n, uop **grads);
/* The gradients of a CALL node's sources given its gradient g, for the
 * sources need[] marks (function.c); sg[j] NULL where none. */
void function_call_grad(uop *u, uop *g, const bool *need, uop **sg);

/* Live tensors whose value is a pending assign (up to max); the count. */
int tensors_pending_assigns(tg_tensor **out, int max);

/* Replace nodes in every live tensor's graph (after realization). */
void tensors_substitute(const ptrmap *becomes);
/* Whether tg_assign accepts t as a target (memory, or a view of memory
 * without expands, pending assigns followed). */
bool tensor_assignable(const tg_tensor *t);

/* tinygrad's least_upper_float (a float dtype stays; others promote with
 * tg_default_float()) and sum_acc_dtype (ints accumulate in at least
 * int32 / uint32, floats in at least tg_sum_acc_float()); dtype_settings.c. */
dtype_t dtype_least_upper_float(dtype_t d);
dtype_t dtype_sum_acc(dtype_t d);
/* Forgets the setters' values: the next use reads DEFAULT_FLOAT and
 * SUM_DTYPE from the environment again (for tests). */
void dtype_settings_reload(void);

/* Normalizes an axis against ndim (negative counts from the end); -1 and an
 * error when out of range. */
int norm_axis(int axis, int ndim, const char *op);

#endif
