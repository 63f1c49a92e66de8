/* tg_nn.h: part of the public API of tg (neural-network functional ops: convolution, pooling, normalization, attention, losses, and random initializers).
 * Included by tg.h; see tg.h for the conventions: lazy tensors, NULL plus
 * tg_error() on failure, ops given NULL return NULL, axes may be negative.
 *
 * Every op here follows PyTorch's torch.nn.functional semantics (shapes,
 * defaults, formulas) and is written, like tinygrad's, as a composition of
 * the basic tensor ops: a convolution is a padded, strided window view of the
 * input (movement ops only), multiplied by the weight and summed, so it is one
 * fused kernel (with its bias and activation). Options with many torch
 * keyword arguments come in small structs where a zero field means torch's
 * default, and a NULL struct pointer means all defaults.
 *
 * Differences from PyTorch, all on purpose (tinygrad's choices):
 *  - index outputs (max_pool2d indices, multinomial) are int32, not int64;
 *  - random numbers come from tg's counter-based generator, so values differ
 *    from torch's for the same seed (distributions are the same);
 *  - data-dependent checks torch makes while running (a class index out of
 *    range, negative probabilities in multinomial) are made only when the
 *    tensor is already realized memory; otherwise out-of-range targets count
 *    for nothing. */
#ifndef TG_NN_H
#define TG_NN_H
#ifndef TG_H
#include "tg.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- convolution */

/* Options of tg_conv1d/2d/3d (and tg_conv); zero fields are torch's defaults.
 * Spatial axis i is axis 2+i of the input (i < 3).
 *   stride[i]       step of the window along spatial axis i (0: 1)
 *   padding[2*i]    zeros added before spatial axis i, padding[2*i+1] after
 *                   it; a negative value crops instead (torch's padding=p is
 *                   padding[2*i] = padding[2*i+1] = p; tinygrad's asymmetric
 *                   padding is any pair)
 *   dilation[i]     spacing between kernel taps along axis i (0: 1)
 *   groups          input and output channels split into this many groups
 *                   (0: 1); groups must divide both channel counts */
typedef struct {
  int stride[3];
  int padding[6];
  int dilation[3];
  int groups;
} tg_conv_opts;

/* Convolution (cross-correlation, like torch) of x (N, Cin, *spatial) with
 * weight (Cout, Cin/groups, *kernel), plus bias (Cout) when not NULL. The
 * number of spatial axes is weight's ndim - 2; x may also be unbatched
 * (Cin, *spatial), as in torch. Output (N, Cout, *out) with
 * out_i = (in_i + pad_before_i + pad_after_i - dilation_i*(k_i-1) - 1) / stride_i + 1.
 * x and weight must be float tensors; the result has their promoted dtype. */
TG_API tg_tensor *tg_conv(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_opts *opts);
TG_API tg_tensor *tg_conv1d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_opts *opts);
TG_API tg_tensor *tg_conv2d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_opts *opts);
TG_API tg_tensor *tg_conv3d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_opts *opts);

/* Options of the transposed convolutions; zero fields are torch's defaults.
 *   stride[i]          (0: 1)
 *   padding[i]         torch's padding: dilation*(k-1) - padding zeros are
 *                      added to each side of the (stride-dilated) input;
 *                      symmetric per axis, >= 0
 *   output_padding[i]  extra size added to one side of the output (torch's
 *                      output_padding); must be smaller than stride or
 *                      dilation
 *   dilation[i]        (0: 1)
 *   groups             (0: 1)
 *   pads[2*i], pads[2*i+1]
 *                      asymmetric padding instead (tinygrad's): removes
 *                      pads[2*i] from the start and pads[2*i+1] from the
 *                      end of output axis i, both >= 0; when any is nonzero
 *                      padding[] must be 0 (tg_resolve_pool_pads converts
 *                      tinygrad's forms) */
typedef struct {
  int stride[3];
  int padding[3];
  int output_padding[3];
  int dilation[3];
  int groups;
  int pads[6];
} tg_conv_transpose_opts;

/* Transposed convolution (the gradient of tg_conv with respect to its input)
 * of x (N, Cin, *spatial) with weight (Cin, Cout/groups, *kernel), plus bias
 * (Cout). out_i = (in_i - 1)*stride_i - 2*padding_i + dilation_i*(k_i-1)
 * + output_padding_i + 1 (with pads: - (pads[2i] + pads[2i+1]) for
 * - 2*padding_i). x may be unbatched (Cin, *spatial). */
TG_API tg_tensor *tg_conv_transpose(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_transpose_opts *opts);
TG_API tg_tensor *tg_conv_transpose1d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_transpose_opts *opts);
TG_API tg_tensor *tg_conv_transpose2d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_transpose_opts *opts);
TG_API tg_tensor *tg_conv_transpose3d(tg_tensor *x, tg_tensor *weight, tg_tensor *bias, const tg_conv_transpose_opts *opts);

/* ---------------------------------------------------------------- pooling */

/* Options of the 2-D pools (entry i is spatial axis i: 0 height, 1 width).
 *   kernel[i]     window size (required, > 0)
 *   stride[i]     (0: the kernel size, torch's default)
 *   padding[i]    implicit padding on both sides of axis i, at most half the
 *                 kernel (torch's rule); max pool pads with -inf (the
 *                 dtype's minimum for ints), avg pool with zeros
 *   pads[2*i], pads[2*i+1]
 *                 asymmetric padding before and after axis i instead
 *                 (tinygrad's padding of 2*ndim values, which
 *                 tg_resolve_pool_pads converts from torch's F.pad order);
 *                 when any is nonzero padding[] must be 0. Any size; a
 *                 negative value crops, by at most the axis size, and the
 *                 padded input must still hold one (dilated) window
 *   dilation[i]   max pool only (0: 1)
 *   ceil_mode     output size rounds up (a last window may start in the
 *                 input or the left padding, never in the right padding)
 *   exclude_pad   avg pool: divide by the number of input elements in the
 *                 window, not by the window size (torch's
 *                 count_include_pad=False) */
typedef struct {
  int kernel[3];
  int stride[3];
  int padding[3];
  int dilation[3];
  bool ceil_mode;
  bool exclude_pad;
  int pads[4];
} tg_pool_opts;

/* tinygrad's resolve_pool_pads: n padding values for ndims (1 to 3) spatial
 * axes, as tinygrad's pools and convs take them, into before/after pairs
 * per spatial axis in axis order (out[2*i], out[2*i+1] for axis i, what
 * tg_pool_opts.pads and tg_conv_opts.padding hold):
 *   n == 1          the same padding on every side;
 *   n == ndims      padding[i] on both sides of axis i;
 *   n == 2*ndims    torch's F.pad order, the last axis first: (left, right,
 *                   top, bottom) for 2-D.
 * Returns 0, or -1 with an error for any other n. */
TG_API int tg_resolve_pool_pads(const int *padding, int n, int ndims, int *out);

/* Average pooling of x (N, C, H, W) or (C, H, W). x must be float. */
TG_API tg_tensor *tg_avg_pool2d(tg_tensor *x, const tg_pool_opts *opts);
/* Max pooling of x (N, C, H, W) or (C, H, W). When indices is not NULL it
 * receives (in the current scope) the int32 position of each maximum in its
 * channel plane (h*W + w of the unpadded input, the first maximum of the
 * window on ties), like torch's return_indices=True. */
TG_API tg_tensor *tg_max_pool2d(tg_tensor *x, const tg_pool_opts *opts, tg_tensor **indices);
/* The partial inverse of tg_max_pool2d: x (N, C, h, w) values are put at
 * their indices (N, C, h, w; any int dtype) in a zero plane of size
 * output_size[0] x output_size[1], or, when output_size is NULL, of size
 * (h-1)*stride - 2*padding + dilation*(kernel-1) + 1 per axis (torch's). An
 * index hit by several windows (overlapping pools) gets their common value. */
TG_API tg_tensor *tg_max_unpool2d(tg_tensor *x, tg_tensor *indices, const tg_pool_opts *opts, const int64_t *output_size);

/* ---------------------------------------------------------------- resampling */

typedef enum {
  TG_INTERP_NEAREST,        /* torch 'nearest': src = floor(dst * in/out) */
  TG_INTERP_NEAREST_EXACT,  /* torch 'nearest-exact': src = floor((dst + 0.5) * in/out) */
  TG_INTERP_LINEAR,         /* torch 'linear' (1 spatial axis) */
  TG_INTERP_BILINEAR,       /* torch 'bilinear' (2 spatial axes) */
} tg_interp_mode;

/* Resizes the spatial axes of x (N, C, *spatial) to size[0..nsize), like
 * torch.nn.functional.interpolate(x, size=..., mode=..., align_corners=...).
 * nsize must be ndim - 2 (1 for LINEAR, 2 for BILINEAR, 1 to 3 for the
 * nearest modes). align_corners is for the linear modes only (torch's rule).
 * Float x; the result keeps its dtype. */
TG_API tg_tensor *tg_interpolate(tg_tensor *x, const int64_t *size, int nsize, tg_interp_mode mode, bool align_corners);

/* ---------------------------------------------------------------- linear algebra */

/* Einstein summation like torch.einsum: "ij,jk->ik", implicit output
 * ("ij,jk": the labels that appear once, sorted), "..." for broadcast axes,
 * repeated labels within an operand for diagonals and traces ("ii->",
 * "ii->i"), letters a-z and A-Z. The operands broadcast like torch's
 * (size-1 axes of a label stretch); the result has their promoted dtype. */
TG_API tg_tensor *tg_einsum(const char *subscripts, tg_tensor *const *operands, int n);

/* torch.nn.functional.linear: x (..., in) @ weight (out, in).T + bias (out);
 * weight may be 1-D (in), giving (...); bias may be NULL. */
TG_API tg_tensor *tg_linear(tg_tensor *x, tg_tensor *weight, tg_tensor *bias);

/* ---------------------------------------------------------------- normalization */

/* torch.nn.functional.layer_norm: normalizes over the trailing axes given by
 * normalized_shape (which must equal x's last dims), (x - mean) /
 * sqrt(var + eps) with the biased variance, then * weight + bias (each of
 * normalized_shape, either may be NULL). torch's default eps is 1e-5. */
TG_API tg_tensor *tg_layernorm(tg_tensor *x, tg_shape normalized_shape, tg_tensor *weight, tg_tensor *bias, double eps);

/* torch.nn.functional.batch_norm over axis 1 of x (N, C, ...): (x - mean) /
 * sqrt(var + eps) * weight + bias, each of shape (C) and each may be NULL.
 * mean and var both given: inference with running statistics; both NULL:
 * training mode, the batch's mean and biased variance over every axis but
 * 1. torch's default eps is 1e-5. Running-statistic updates are the
 * caller's (see tg_batchnorm_stats). */
TG_API tg_tensor *tg_batchnorm(tg_tensor *x, tg_tensor *mean, tg_tensor *var, tg_tensor *weight, tg_tensor *bias, double eps);
/* The batch statistics tg_batchnorm uses in training mode: *mean and *var
 * (biased), each (C), in the current scope. 0 or -1 (then both are NULL);
 * mean and var must not be NULL. */
TG_API int tg_batchnorm_stats(tg_tensor *x, tg_tensor **mean, tg_tensor **var);

/* ---------------------------------------------------------------- activations and attention */

/* softmax(-x) along axis, like torch.nn.functional.softmin. */
TG_API tg_tensor *tg_softmin(tg_tensor *x, int axis);

/* Options of tg_scaled_dot_product_attention; zero fields are the defaults.
 *   attn_mask   NULL, or a bool mask (true: may attend) or a float mask added
 *               to the scores, broadcast to (..., L, S)
 *   dropout_p   probability of dropping an attention weight (uses tg_rand)
 *   is_causal   query i attends keys j <= i (top-left aligned, torch's);
 *               not together with attn_mask
 *   scale       score scale (0: 1/sqrt(E))
 *   enable_gqa  key/value may have fewer heads (axis -3) than query; each
 *               is repeated to the query's head count, which it must divide */
typedef struct {
  tg_tensor *attn_mask;
  double dropout_p;
  bool is_causal;
  double scale;
  bool enable_gqa;
} tg_sdpa_opts;

/* softmax(q @ k^T * scale + mask) @ v for q (..., L, E), k (..., S, E),
 * v (..., S, Ev): (..., L, Ev), like torch's (math) implementation. */
TG_API tg_tensor *tg_scaled_dot_product_attention(tg_tensor *q, tg_tensor *k, tg_tensor *v, const tg_sdpa_opts *opts);

/* Zeroes each element with probability p and scales the rest by 1/(1-p)
 * when training; a copy of x (no randomness) when !training or p == 0.
 * 0 <= p <= 1 (p == 1 gives zeros). Float x. */
TG_API tg_tensor *tg_dropout(tg_tensor *x, double p, bool training);

/* ---------------------------------------------------------------- losses */

typedef enum { TG_LOSS_MEAN = 0, TG_LOSS_SUM, TG_LOSS_NONE } tg_reduction;   /* renamed by the lead: TG_REDUCE_* is taken by tg_movement.h */

/* Options of the losses; zero fields are torch's defaults.
 *   reduction         mean (default), sum, or none (per-sample losses)
 *   weight            cross_entropy / nll_loss: per-class weights (C);
 *                     binary losses: per-element weights, broadcast; NULL: 1
 *   pos_weight        binary_crossentropy_logits: weight of the positive
 *                     term, broadcast along the last axis; NULL: 1
 *   has_ignore_index  use ignore_index; otherwise torch's default -100
 *   ignore_index      class-index targets equal to it count for nothing (in
 *                     the loss and in the mean's denominator)
 *   label_smoothing   in [0, 1]: the target becomes (1-s)*target + s/C */
typedef struct {
  tg_reduction reduction;
  tg_tensor *weight;
  tg_tensor *pos_weight;
  bool has_ignore_index;
  int64_t ignore_index;
  double label_smoothing;
} tg_loss_opts;

/* torch.nn.functional.cross_entropy of logits (N, C, d1, ...) or (C): target
 * of an int dtype holds class indices (N, d1, ...) or (); a float target
 * holds class probabilities, the logits' shape. Classes are axis 1 (axis 0
 * for 1-D logits). With mean reduction and class indices the sum is divided
 * by the total weight of the non-ignored targets (NaN when there is none). */
TG_API tg_tensor *tg_cross_entropy(tg_tensor *logits, tg_tensor *target, const tg_loss_opts *opts);
/* torch.nn.functional.nll_loss: -logp[target] (times weight[target]) with
 * the shapes of tg_cross_entropy's class-index form; label_smoothing must
 * be 0. */
TG_API tg_tensor *tg_nll_loss(tg_tensor *logp, tg_tensor *target, const tg_loss_opts *opts);
/* tinygrad's sparse_categorical_crossentropy: tg_cross_entropy with class
 * indices, but the classes are the LAST axis of logits (..., C) and target
 * is (...). */
TG_API tg_tensor *tg_sparse_categorical_crossentropy(tg_tensor *logits, tg_tensor *target, const tg_loss_opts *opts);
/* torch.nn.functional.binary_cross_entropy of probabilities p and targets y
 * (same shape): -(y*log(p) + (1-y)*log(1-p)), each log clamped to >= -100
 * like torch; opts->weight multiplies each element. */
TG_API tg_tensor *tg_binary_crossentropy(tg_tensor *p, tg_tensor *y, const tg_loss_opts *opts);
/* torch.nn.functional.binary_cross_entropy_with_logits: the same loss on
 * sigmoid(x), computed stably: (1-y)*x + (1 + (pw-1)*y) * (log(1+exp(-|x|))
 * + max(-x, 0)), with pw = opts->pos_weight (1 when NULL). */
TG_API tg_tensor *tg_binary_crossentropy_logits(tg_tensor *x, tg_tensor *y, const tg_loss_opts *opts);

/* ---------------------------------------------------------------- random */

/* All of these draw from tg_rand / tg_randn, so tg_manual_seed makes them
 * reproducible. dt must be a float dtype unless said otherwise. */
/* Uniform integers in [low, high) of an int dtype (from a float32 uniform:
 * exactly uniform for ranges up to 2^23). */
TG_API tg_tensor *tg_randint(tg_shape shape, int64_t low, int64_t high, tg_dtype dt);
/* Uniform in [low, high): (high - low) * rand + low (tinygrad's). */
TG_API tg_tensor *tg_uniform(tg_shape shape, double low, double high, tg_dtype dt);
/* Normal with the given mean and standard deviation: std * randn + mean. */
TG_API tg_tensor *tg_normal(tg_shape shape, double mean, double std, tg_dtype dt);
/* num_samples category indices (int32) drawn from the non-negative weights
 * probs (C) or (B, C) (need not sum to 1): (num_samples) or
 * (B, num_samples). With replacement: inverse-CDF sampling; without:
 * weighted sampling without replacement (exponential keys, largest first),
 * num_samples <= C. */
TG_API tg_tensor *tg_multinomial(tg_tensor *probs, int64_t num_samples, bool replacement);
/* A random permutation of 0..n-1 of an int dtype (ranks of random keys). */
TG_API tg_tensor *tg_randperm(int64_t n, tg_dtype dt);
/* He initialization (tinygrad's formulas, fan_in = prod(shape[1:])):
 * uniform in +-sqrt(3) * sqrt(2 / (1 + a^2)) / sqrt(fan_in), or normal with
 * std sqrt(2 / (1 + a^2)) / sqrt(fan_in). a is the leaky-relu slope (0 for
 * relu; torch's nn default for Linear/Conv is sqrt(5)). */
TG_API tg_tensor *tg_kaiming_uniform(tg_shape shape, double a, tg_dtype dt);
TG_API tg_tensor *tg_kaiming_normal(tg_shape shape, double a, tg_dtype dt);
/* Xavier/Glorot uniform: uniform in +-sqrt(6 / (shape[0] + prod(shape[1:]))). */
TG_API tg_tensor *tg_glorot_uniform(tg_shape shape, tg_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
