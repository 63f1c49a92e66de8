/* tg_movement.h: part of the public API of tg (joining, splitting, repeating, indexing with tensors, gather/scatter).
 * Included by tg.h; see tg.h for the conventions: lazy tensors, NULL plus
 * tg_error() on failure, ops given NULL return NULL, axes may be negative.
 *
 * Everything here is built from the movement ops of tg.h (reshape, permute,
 * expand, pad, shrink, flip) and elementwise/reduce ops, like tinygrad's
 * Tensor: a pure rearrangement (cat, stack, repeat, roll, tril, ...) is one
 * kernel when realized; indexing with tensors is a one-hot compare
 * (arange == index) and a sum, so it is differentiable and fuses.
 * Semantics follow PyTorch (torch.cat, torch.Tensor.unfold, F.pad, ...);
 * differences are noted at each function and in docs/ops_movement.md. */
#ifndef TG_MOVEMENT_H
#define TG_MOVEMENT_H
#ifndef TG_H
#include "tg.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- joining */

/* Concatenates n >= 1 tensors along axis. Shapes must agree except on axis;
 * dtypes are promoted (tinygrad's lattice) to a common one. */
TG_API tg_tensor *tg_cat(tg_tensor *const *ts, int n, int axis);
/* Joins n >= 1 tensors of one shape along a new axis (-(ndim+1) .. ndim). */
TG_API tg_tensor *tg_stack(tg_tensor *const *ts, int n, int axis);

/* ---------------------------------------------------------------- splitting
 * These fill out[] (views of a, new tensors in the current scope) and return
 * how many there are, or -1 with an error. out may be NULL to only count;
 * otherwise it must have room for max_out tensors (fewer is an error). */

/* Pieces of the given sizes along axis; the sizes must add up to its length. */
TG_API int tg_split(tg_tensor *a, const int64_t *sizes, int nsizes, int axis, tg_tensor **out, int max_out);
/* Pieces of `size` along axis, the last one smaller when it does not divide
 * (torch.split(a, size)); an empty axis gives one empty piece. */
TG_API int tg_split_size(tg_tensor *a, int64_t size, int axis, tg_tensor **out, int max_out);
/* torch.chunk: pieces of ceil(len/chunks), so possibly fewer than chunks; an
 * empty axis gives `chunks` empty pieces. */
TG_API int tg_chunk(tg_tensor *a, int chunks, int axis, tg_tensor **out, int max_out);
/* Coordinate grids of n 0-D or 1-D tensors: out[i] has shape (len0, len1, ...)
 * for indexing "ij" (or NULL), with the first two swapped for "xy". Returns n. */
TG_API int tg_meshgrid(tg_tensor *const *ts, int n, const char *indexing, tg_tensor **out, int max_out);

/* ---------------------------------------------------------------- repeating, reshaping */

/* torch.Tensor.repeat: tiles a; repeats has at least a's ndim entries (extra
 * leading ones add axes), each >= 0. */
TG_API tg_tensor *tg_repeat(tg_tensor *a, tg_shape repeats);
/* Each element repeated `repeats` times along axis (TG_NOAXIS: of the
 * flattened tensor). */
TG_API tg_tensor *tg_repeat_interleave(tg_tensor *a, int64_t repeats, int axis);
/* torch.roll: shifts[i] along axes.a[i] (wrapping around); with TG_ALL, the
 * flattened tensor rolls by shifts[0] and keeps its shape. */
TG_API tg_tensor *tg_roll(tg_tensor *a, const int64_t *shifts, tg_axes axes);
/* torch.Tensor.unfold: windows of `size` every `step` along axis; axis becomes
 * the window count (len - size) / step + 1 and a last axis of `size` is added. */
TG_API tg_tensor *tg_unfold(tg_tensor *a, int axis, int64_t size, int64_t step);
/* Splits axis into `sizes` (one entry may be -1, inferred). */
TG_API tg_tensor *tg_unflatten(tg_tensor *a, int axis, tg_shape sizes);
/* einops-style rearrange, the subset tinygrad supports: names, parenthesized
 * groups on either side, one "..." (not inside a left group), "1" or "()"
 * for a size-1 axis. Examples: "b c (h w) -> b h w c", "b ... -> ... b",
 * "(b1 b2) h -> b1 (b2 h)". `sizes` gives axis sizes needed to split a group,
 * as "h=2 w=3" (commas also separate), or NULL. */
TG_API tg_tensor *tg_rearrange(tg_tensor *a, const char *pattern, const char *sizes);

/* ---------------------------------------------------------------- triangles and diagonals */

/* The lower (tril) or upper (triu) triangle of the last two axes, the rest 0;
 * k shifts the diagonal (k > 0 above the main one). Needs ndim >= 2. */
TG_API tg_tensor *tg_tril(tg_tensor *a, int64_t k);
TG_API tg_tensor *tg_triu(tg_tensor *a, int64_t k);
/* torch.diag: a 1-D tensor becomes a square matrix with it on diagonal k;
 * a 2-D tensor gives its diagonal k as a 1-D tensor. */
TG_API tg_tensor *tg_diag(tg_tensor *a, int64_t k);
/* torch.diagonal: the diagonal `offset` of axes (axis1, axis2), which are
 * removed; the diagonal becomes the last axis. A view. */
TG_API tg_tensor *tg_diagonal(tg_tensor *a, int64_t offset, int axis1, int axis2);
/* A new last axis of num_classes with 1 at each value (an integer tensor).
 * Returns int32 like tinygrad (torch: int64); values outside [0,
 * num_classes) give a row of zeros (torch: an error). num_classes = -1 uses
 * max(a) + 1, which reads the data (realizes a). */
TG_API tg_tensor *tg_one_hot(tg_tensor *a, int64_t num_classes);

/* ---------------------------------------------------------------- padding modes */

typedef enum { TG_PAD_CONSTANT, TG_PAD_REFLECT, TG_PAD_REPLICATE, TG_PAD_CIRCULAR } tg_pad_kind;
/* torch.nn.functional.pad: pads holds (before, after) pairs starting from
 * the LAST axis: (left, right, top, bottom, ...); npads is even and at most
 * 2*ndim. Negative pads remove elements. Constant fills with value. Reflect
 * mirrors without the edge (each pad < the axis size); replicate repeats the
 * edge; circular wraps around (each pad <= the axis size). Unlike torch,
 * every mode works on any number of axes (torch limits non-constant modes to
 * the last 1-3 axes of a batched input). */
TG_API tg_tensor *tg_pad_mode(tg_tensor *a, const int64_t *pads, int npads, tg_pad_kind mode, double value);

/* ---------------------------------------------------------------- indexing with tensors */

/* One entry of an advanced index: a basic index (int, slice, new axis,
 * ellipsis), or, with kind TG_IDX_TENSOR, the integer tensor `tensor`
 * (NULL there, e.g. from a failed call, makes the indexing fail). */
#define TG_IDX_TENSOR ((tg_index_kind)16)
typedef struct { tg_index basic; tg_tensor *tensor; } tg_aindex;
#define TG_AI(i) ((tg_aindex){ (i), NULL })            /* wraps a tg_index: TG_AI(TG_I(2)) */
#define TG_AT(t) ((tg_aindex){ { TG_IDX_TENSOR, 0, 0, 1, false, false }, (t) })   /* a tensor of indices */
/* a[idx...] with PyTorch's rules: ints and slices apply first (an int removes
 * its axis, as torch does); then each tensor index picks along its axis. The
 * index tensors broadcast together to shape B; the result has B in place of
 * the indexed axes when they are adjacent, and B first otherwise. Negative
 * indices count from the end. An index out of range at run time reads 0
 * (tinygrad; torch raises). Boolean masks are not supported (the result's
 * shape would depend on the data). */
TG_API tg_tensor *tg_getitem_adv(tg_tensor *a, const tg_aindex *idx, int n);
#define TG_GET_ADV(a, ...) tg_getitem_adv((a), (tg_aindex[]){ __VA_ARGS__ }, sizeof((tg_aindex[]){ __VA_ARGS__ }) / sizeof(tg_aindex))

/* a[idx...] = value, in place: value broadcasts to the shape a[idx...] has
 * and is cast to a's dtype. With only basic indices this is tg_assign on
 * the view; with tensor indices, on the view with the tensor axes left
 * whole, of where(hit, value, old) (when an element is indexed several
 * times, the last index wins). a must be a realized tensor or a view of
 * one; any other a is realized first. Returns a (the write happens when a,
 * or anything reading its memory, is realized). */
TG_API tg_tensor *tg_setitem(tg_tensor *a, const tg_aindex *idx, int n, tg_tensor *value);
#define TG_SET(a, value, ...) tg_setitem((a), (tg_aindex[]){ __VA_ARGS__ }, sizeof((tg_aindex[]){ __VA_ARGS__ }) / sizeof(tg_aindex), (value))

/* torch.index_select: the entries index (1-D integer) of axis; negative
 * indices count from the end. */
TG_API tg_tensor *tg_index_select(tg_tensor *a, int axis, tg_tensor *index);

/* ---------------------------------------------------------------- gather and scatter */

/* Rows of a picked by an integer tensor (an embedding lookup): out has shape
 * index.shape + a.shape[1:], out[i..., j...] = a[index[i...], j...]. Each
 * output element reads one element of a (no one-hot mask): the index is
 * loaded inside the kernel. Indices outside [0, a.shape[0]) read 0. The
 * result is a view that tg_assign can write through (a KV-cache write at a
 * symbolic position: tg_take(cache, tg_add(pos, tg_arange(...)))); indices
 * that repeat make such a write race. No gradient flows through it. */
TG_API tg_tensor *tg_take(tg_tensor *a, tg_tensor *index);

/* torch.gather: out[i][j][k] = a[index[i][j][k]][j][k] for axis 0 (and so on).
 * index has a's ndim and, except on axis, no larger sizes. Out-of-range
 * indices read 0 (torch raises). */
TG_API tg_tensor *tg_gather(tg_tensor *a, int axis, tg_tensor *index);
/* torch.scatter (out of place): a copy of a with a[index[i][j]][j] = src[i][j]
 * for axis 0. src has a's dtype and, like a except on axis, sizes no smaller
 * than index's. When an element is written several times the last index
 * (in row-major order of index) wins. */
TG_API tg_tensor *tg_scatter(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src);
/* The same with every written value equal to value. */
TG_API tg_tensor *tg_scatter_value(tg_tensor *a, int axis, tg_tensor *index, double value);

typedef enum { TG_REDUCE_SUM, TG_REDUCE_PROD, TG_REDUCE_MEAN, TG_REDUCE_AMAX, TG_REDUCE_AMIN } tg_reduce_kind;
/* torch.scatter_reduce (out of place): combines every src value sent to an
 * element with the reduction, together with a's value when include_self
 * (elements nothing is sent to keep a's value). Integer mean rounds down,
 * like torch. */
TG_API tg_tensor *tg_scatter_reduce(tg_tensor *a, int axis, tg_tensor *index, tg_tensor *src, tg_reduce_kind reduce, bool include_self);

/* torch.masked_select: the elements of a where mask (broadcast with a) is
 * true, as a 1-D tensor in row-major order. Its length depends on the data,
 * so this realizes the mask's count. */
TG_API tg_tensor *tg_masked_select(tg_tensor *a, tg_tensor *mask);

#ifdef __cplusplus
}
#endif
#endif
