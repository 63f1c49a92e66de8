/* math_internal.h: helpers shared by the math op files (math_ops.c,
 * math_act.c, reduce_ops.c, scan_sort.c): small builders on tensor-graph
 * UOps. Every builder returns a borrowed UOp (call inside API_BEGIN /
 * API_RETURN) and expects its operands to have one shape (and, for binary
 * ALU ops, one dtype). */
#ifndef TG_MATH_INTERNAL_H
#define TG_MATH_INTERNAL_H

#include "tensor/tensor.h"

/* ---- constants shaped like x */
uop *mt_c(uop *x, double v);                 /* x's dtype */
uop *mt_ct(uop *x, double v, dtype_t dt);    /* dtype dt */
uop *mt_min_value(uop *x);                   /* -inf for floats, the dtype's minimum for ints, false for bool */
uop *mt_max_value(uop *x);                   /* +inf / maximum / true */

/* ---- arithmetic (same shape and dtype) */
static inline uop *mt_add(uop *a, uop *b) { return uop_alu(OP_ADD, a, b); }
static inline uop *mt_sub(uop *a, uop *b) { return uop_alu(OP_SUB, a, b); }
static inline uop *mt_mul(uop *a, uop *b) { return uop_alu(OP_MUL, a, b); }
static inline uop *mt_div(uop *a, uop *b) { return uop_alu(OP_FDIV, a, b); }
static inline uop *mt_neg(uop *a) { return uop_alu1(OP_NEG, a); }
static inline uop *mt_lt(uop *a, uop *b) { return uop_alu(OP_CMPLT, a, b); }
static inline uop *mt_eq(uop *a, uop *b) { return uop_alu(OP_CMPEQ, a, b); }
static inline uop *mt_ne(uop *a, uop *b) { return uop_alu(OP_CMPNE, a, b); }
static inline uop *mt_and(uop *a, uop *b) { return uop_alu(OP_AND, a, b); }
static inline uop *mt_or(uop *a, uop *b) { return uop_alu(OP_OR, a, b); }
static inline uop *mt_where(uop *c, uop *a, uop *b) { return uop_where(c, a, b); }
static inline uop *mt_adds(uop *a, double v) { return mt_add(a, mt_c(a, v)); }
static inline uop *mt_muls(uop *a, double v) { return mt_mul(a, mt_c(a, v)); }
uop *mt_not(uop *b);                         /* logical not of a bool */
uop *mt_max(uop *a, uop *b);                 /* NaN-propagating */
uop *mt_min(uop *a, uop *b);                 /* NaN-propagating */
uop *mt_abs(uop *a);
uop *mt_sign(uop *a);                        /* -1, 0, 1 (0 for NaN) */
uop *mt_floor(uop *a);
uop *mt_ceil(uop *a);

/* ---- float functions (x must be a float) */
uop *mt_exp(uop *x);
uop *mt_log(uop *x);
uop *mt_sqrt(uop *x);
uop *mt_recip(uop *x);
uop *mt_expm1(uop *x);
uop *mt_log1p(uop *x);
uop *mt_sigmoid(uop *x);
uop *mt_tanh(uop *x);
uop *mt_sin(uop *x);
uop *mt_cos(uop *x);
uop *mt_isnan(uop *x);                       /* bool; false for ints */
uop *mt_isinf(uop *x);                       /* bool; false for ints */
uop *mt_signbit(uop *x);                     /* bool: the sign bit (of -0.0 and NaN too) */
/* where(c, f(x), ...) needs f's input to be safe where c is false, or the
 * unused branch's gradient (0 * inf) poisons the backward pass: */
static inline uop *mt_safe(uop *c, uop *x, double v) { return mt_where(c, x, mt_c(x, v)); }

/* ---- dtypes */
dtype_t mt_float_of(dtype_t d);              /* d if a float, else promoted with tg_default_float() */
uop *mt_to_float(uop *x);                    /* cast to mt_float_of */
dtype_t mt_sum_dtype(dtype_t d);             /* tinygrad's sum accumulation dtype */

/* Small floats (float16, bfloat16, fp8) compute in float32 and round once
 * at the end, like PyTorch's opmath: the dtype to compute out in. */
dtype_t mt_compute_dtype(dtype_t out);
/* An elementwise function of one tensor with parameters p. */
typedef uop *(*mt_ufn)(uop *x, const double *p);
/* Applies f to a in its compute dtype; to_float makes ints and bools tg_default_float(). */
tg_tensor *mt_unary(tg_tensor *a, mt_ufn f, const double *p, bool to_float, const char *name);

/* ---- shapes */
/* Both tensors broadcast to one shape and the promoted dtype (or `force`
 * when it is not TG_VOID); false with an error naming op. */
bool mt_broadcast2(tg_tensor *a, tg_tensor *b, uop **ua, uop **ub, int force, const char *op);
bool mt_broadcast3(tg_tensor *a, tg_tensor *b, tg_tensor *c, uop **ua, uop **ub, uop **uc, int force, const char *op);
/* u (of lower or equal rank) reshaped with leading 1s and expanded to shape. */
uop *mt_broadcast_to(uop *u, const int64_t *shape, int nd);
/* A tensor holding a scalar: the dtype a Python scalar takes next to a
 * (tinygrad: a's dtype when it fits the class, else tg_default_float() / int32). */
dtype_t mt_scalar_dtype(const tg_tensor *a, double v);
/* Axes into flags; false with an error on a bad or repeated axis. */
bool mt_axes_flags(tg_axes axes, int nd, bool *flags, const char *op);
/* REDUCE_AXIS (ADD, MUL or MAX) over the flagged axes; keepdim keeps them as 1. */
uop *mt_reduce(uop *x, uop_op op, const bool *flags, bool keepdim);
uop *mt_reduce1(uop *x, uop_op op, int axis, bool keepdim);
/* ARANGE(n) (int64 index values) as an axis of an nd-D tensor: shape 1
 * everywhere but axis, expanded to shape when shape is not NULL. */
uop *mt_arange_along(int64_t n, int axis, int nd, const int64_t *shape);
/* Axis of a scan or sort: a 0-d tensor takes 0 or -1 (treated as shape (1)). */
int mt_scan_axis(int axis, int ndim, const char *op);

#endif
