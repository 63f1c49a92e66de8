/* indexing.h: helpers shared by the files of tg_movement.h (join_split.c,
 * pad_modes.c, rearrange.c, indexing.c, gather_scatter.c). Internal to the tensor layer. */
#ifndef TG_TENSOR_INDEXING_H
#define TG_TENSOR_INDEXING_H

#include "tensor/tensor.h"

/* Ends the scope opened by the caller, moving r (made in it) out; r may be
 * NULL. Never pass an input tensor: it would move the caller's tensor. */
static inline tg_tensor *mvx_keep(tg_tensor *r) {
  if (r) tg_keep(r);
  tg_scope_end();
  return r;
}
/* A new handle on the same value (to return "a unchanged" from a scope). */
static inline tg_tensor *mvx_same(tg_tensor *a) { return tg_reshape(a, tg_shape_of(a)); }

/* "(2,3,4)" into buf. */
const char *mvx_shape_str(const int64_t *s, int nd, char *buf, int n);
/* Fails (false, error naming op) unless t has an integer dtype. */
bool mvx_check_index(const tg_tensor *t, const char *what, const char *op);
/* 0, 1, ..., n-1 as int32 (int64 when n does not fit). */
tg_tensor *mvx_arange(int64_t n);
/* idx == arange(n) along a new axis of size n placed `after` axes before
 * the end of idx's shape broadcast: the arange has shape (n, 1 * after). */
tg_tensor *mvx_one_hot_along(tg_tensor *idx, int64_t n, int after);
/* The same tensor with shape sh (tg_reshape with a plain array). */
tg_tensor *mvx_reshape(tg_tensor *a, const int64_t *sh, int nd);
/* Numpy broadcast of two shapes into out (returns ndim, -1 and an error
 * naming op when they do not broadcast). */
int mvx_broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out, const char *op);
/* Merges values into base along `axis` of values and mask, which have base's
 * shape with one more axis there: where mask has a true along that axis,
 * the value at the last true wins; elsewhere base's value stays. values
 * must have base's dtype. */
tg_tensor *mvx_merge_last(tg_tensor *base, tg_tensor *values, tg_tensor *mask, int axis);
/* Whether t is movement ops (no expand) over a buffer: tg_assign can write it. */
bool mvx_assignable(const tg_tensor *t);

#endif
