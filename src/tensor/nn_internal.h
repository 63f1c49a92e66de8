/* nn_internal.h: helpers shared by the neural-network ops (conv.c, pool.c,
 * nn_functional.c, losses.c, random_ops.c). They build on the public tensor
 * API; every helper returns a tensor in the current scope (NULL with an
 * error on failure, NULL in gives NULL out). */
#ifndef TG_NN_INTERNAL_H
#define TG_NN_INTERNAL_H

#include "tensor/tensor.h"

/* Ends a scope opened with tg_scope_begin, moving r (if any) out of it. */
static inline tg_tensor *nn_done(tg_tensor *r) {
  if (r) tg_keep(r);
  tg_scope_end();
  return r;
}

/* tinygrad's Tensor._pool: the sliding windows of the last n axes of x
 * (..., i_1..i_n) as a view (..., o_1..o_n, k_1..k_n), with
 * o = ceil((i - d*(k-1)) / s); built from movement ops only. The caller has
 * checked d*(k-1)+1 <= i. */
tg_tensor *nn_pool_view(tg_tensor *x, int n, const int64_t *k, const int64_t *s, const int64_t *d);

/* x padded on its last n axes: pads[2*j], pads[2*j+1] before/after spatial
 * axis j (negative crops), with value. */
tg_tensor *nn_pad_spatial(tg_tensor *x, int n, const int64_t *pads, double value);

/* x repeated reps[i] times along each axis (tinygrad's Tensor.repeat). */
tg_tensor *nn_repeat(tg_tensor *x, const int64_t *reps);

/* The comparison (index == arange(n)) broadcast on a new last axis: bool
 * (*index.shape, n). */
tg_tensor *nn_one_hot_bool(tg_tensor *index, int64_t n);

/* Moves axis `from` to position `to` (both normalized). */
tg_tensor *nn_moveaxis(tg_tensor *x, int from, int to);

/* "(2,3,4)" into buf. */
const char *nn_shape_str(const tg_tensor *t, char *buf, int n);

/* The lowest value of a dtype (-inf for floats), for max pooling pads. */
double nn_dtype_min(tg_dtype dt);

/* True when t is a realized, contiguous buffer whose values can be read
 * without running anything; copies them as int64 into out (n values). */
bool nn_read_realized_ints(const tg_tensor *t, int64_t *out, int64_t n);

#endif
