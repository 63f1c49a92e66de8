/* tg_layers.h: part of the public API of tg (neural-network layers, state
 * dicts, optimizers and learning-rate schedules, like tinygrad's nn and
 * nn.optim). Included by tg.h; see docs/nn.md for a walk-through.
 *
 * Lifetime rule. A layer (tg_*_new) owns its parameter and buffer tensors:
 * they belong to no scope (tg_scope_end never frees them) and live until the
 * layer's tg_*_free. They are realized (in memory) when the layer is made,
 * so they can be targets of tg_assign (loading weights, optimizer updates).
 * Parameters require grad; buffers (BatchNorm running statistics) do not.
 * An optimizer likewise owns its state (momenta, step counters, lr) until
 * tg_optim_free; it borrows the parameters, which must outlive it. A state
 * dict borrows its tensors and owns only the names.
 *
 * Initializations are tinygrad's (nn/__init__.py):
 *   Linear, Conv*, ConvTranspose2d: weight kaiming_uniform(a = sqrt(5)),
 *     bias uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in =
 *     prod(weight.shape[1:]);
 *   norms: weight ones, bias zeros; BatchNorm running_mean zeros,
 *     running_var ones, num_batches_tracked 0 (int64);
 *   Embedding: weight glorot_uniform;
 *   LSTMCell: every weight and bias uniform(-1/sqrt(hidden), 1/sqrt(hidden)).
 * Parameters are float32. Failures return NULL (or -1) with tg_error(). */
#ifndef TG_LAYERS_H
#define TG_LAYERS_H
#ifndef TG_H
#include "tg.h"
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- state dicts */

/* Named tensors, in insertion order (names like torch's: "fc1.weight"). */
typedef struct {
  int n, cap;
  char **names;          /* owned */
  tg_tensor **tensors;   /* borrowed */
} tg_state_dict;

TG_API tg_state_dict *tg_state_dict_new(void);
TG_API void tg_state_dict_free(tg_state_dict *sd);    /* frees the names, not the tensors */
/* Appends (name, t); a name already present is an error. 0 or -1. */
TG_API int tg_state_dict_add(tg_state_dict *sd, const char *name, tg_tensor *t);
/* The tensor named name, or NULL (no error set) when there is none; NULL
 * with an error when sd or name is NULL. */
TG_API tg_tensor *tg_state_dict_get(const tg_state_dict *sd, const char *name);
/* The tensors that require grad (the trainable parameters, not buffers),
 * into out[0..max); returns how many there are (may exceed max), or -1. out
 * may be NULL to only count. */
TG_API int tg_state_dict_parameters(const tg_state_dict *sd, tg_tensor **out, int max);
/* Realizes every tensor (pending assigns, e.g. running statistics). */
TG_API int tg_state_dict_realize(const tg_state_dict *sd);

/* Every layer has tg_<layer>_state(layer, sd, prefix): adds its tensors as
 * "<prefix>.<name>" ("<name>" when prefix is NULL or ""); 0 or -1 (a NULL
 * layer or sd, a name already in sd, a name over 511 bytes). tg_optim_state
 * does the same for an optimizer. */

/* ---------------------------------------------------------------- layers */

/* Linear: y = x @ weight.T + bias; weight (out, in), bias (out). */
typedef struct { tg_tensor *weight, *bias; int64_t in, out; } tg_linear_layer;
TG_API tg_linear_layer *tg_linear_new(int64_t in, int64_t out, bool bias);
TG_API tg_tensor *tg_linear_forward(tg_linear_layer *l, tg_tensor *x);
TG_API int tg_linear_state(const tg_linear_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_linear_free(tg_linear_layer *l);

/* Conv1d / Conv2d: weight (out, in/groups, *kernel), bias (out); opts as
 * tg_conv (NULL: stride 1, no padding, ...). One type for both. */
typedef struct { tg_tensor *weight, *bias; int nd; tg_conv_opts opts; } tg_conv_layer;
TG_API tg_conv_layer *tg_conv1d_new(int64_t in, int64_t out, int k, const tg_conv_opts *opts, bool bias);
TG_API tg_conv_layer *tg_conv2d_new(int64_t in, int64_t out, int kh, int kw, const tg_conv_opts *opts, bool bias);
TG_API tg_tensor *tg_conv_layer_forward(tg_conv_layer *l, tg_tensor *x);
TG_API int tg_conv_layer_state(const tg_conv_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_conv_layer_free(tg_conv_layer *l);

/* ConvTranspose2d: weight (in, out/groups, kh, kw), bias (out). */
typedef struct { tg_tensor *weight, *bias; tg_conv_transpose_opts opts; } tg_conv_transpose_layer;
TG_API tg_conv_transpose_layer *tg_conv_transpose2d_new(int64_t in, int64_t out, int kh, int kw, const tg_conv_transpose_opts *opts, bool bias);
TG_API tg_tensor *tg_conv_transpose_layer_forward(tg_conv_transpose_layer *l, tg_tensor *x);
TG_API int tg_conv_transpose_layer_state(const tg_conv_transpose_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_conv_transpose_layer_free(tg_conv_transpose_layer *l);

/* BatchNorm over axis 1 of (N, C, ...) (BatchNorm1d/2d/3d). training (the
 * default after new): normalize with the batch's mean and biased variance
 * and update running_mean/running_var in place (tg_assign):
 *   running = (1 - momentum) * running + momentum * batch_stat,
 * with the unbiased variance (n/(n-1)) for running_var, like torch, and
 * num_batches_tracked += 1. The updates are lazy: they run with the next
 * realize of those tensors (tg_state_dict_realize, or a JIT step, which
 * realizes pending assigns with its outputs). Eval (training = false), or
 * track_running_stats off: running statistics (off: batch statistics always).
 * torch's defaults: eps 1e-5, momentum 0.1, affine, track_running_stats. */
typedef struct {
  tg_tensor *weight, *bias, *running_mean, *running_var, *num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
  bool training, track_running_stats;
} tg_batchnorm_layer;
TG_API tg_batchnorm_layer *tg_batchnorm_new(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats);
TG_API tg_tensor *tg_batchnorm_forward(tg_batchnorm_layer *l, tg_tensor *x);
TG_API int tg_batchnorm_state(const tg_batchnorm_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_batchnorm_free(tg_batchnorm_layer *l);

/* LayerNorm over the trailing axes normalized_shape (eps 1e-5). */
typedef struct { tg_tensor *weight, *bias; tg_shape normalized_shape; double eps; } tg_layernorm_layer;
TG_API tg_layernorm_layer *tg_layernorm_new(tg_shape normalized_shape, double eps, bool elementwise_affine);
TG_API tg_tensor *tg_layernorm_forward(tg_layernorm_layer *l, tg_tensor *x);
TG_API int tg_layernorm_state(const tg_layernorm_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_layernorm_free(tg_layernorm_layer *l);

/* RMSNorm over the last axis (dim): x * rsqrt(mean(x^2) + eps) * weight,
 * computed in float32 (tinygrad's default eps 1e-6). */
typedef struct { tg_tensor *weight; int64_t dim; double eps; } tg_rmsnorm_layer;
TG_API tg_rmsnorm_layer *tg_rmsnorm_new(int64_t dim, double eps, bool elementwise_affine);
TG_API tg_tensor *tg_rmsnorm_forward(tg_rmsnorm_layer *l, tg_tensor *x);
TG_API int tg_rmsnorm_state(const tg_rmsnorm_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_rmsnorm_free(tg_rmsnorm_layer *l);

/* GroupNorm of (N, C, ...): channels in num_groups groups, each normalized
 * over its channels and spatial axes; then per-channel weight and bias.
 * InstanceNorm is GroupNorm with one group per channel (affine like
 * tinygrad's default, not torch's InstanceNorm2d affine=False; no running
 * statistics). eps 1e-5. */
typedef struct { tg_tensor *weight, *bias; int64_t num_groups, num_channels; double eps; } tg_groupnorm_layer;
TG_API tg_groupnorm_layer *tg_groupnorm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine);
TG_API tg_groupnorm_layer *tg_instancenorm_new(int64_t num_features, double eps, bool affine);
TG_API tg_tensor *tg_groupnorm_forward(tg_groupnorm_layer *l, tg_tensor *x);
TG_API int tg_groupnorm_state(const tg_groupnorm_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_groupnorm_free(tg_groupnorm_layer *l);

/* Embedding: weight (vocab, dim); forward of integer indices (...) gives
 * (..., dim). */
typedef struct { tg_tensor *weight; int64_t vocab_size, dim; } tg_embedding_layer;
TG_API tg_embedding_layer *tg_embedding_new(int64_t vocab_size, int64_t dim);
TG_API tg_tensor *tg_embedding_forward(tg_embedding_layer *l, tg_tensor *idx);
TG_API int tg_embedding_state(const tg_embedding_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_embedding_free(tg_embedding_layer *l);

/* LSTMCell: gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh,
 * split (i, f, g, o); c' = sigmoid(f)*c + sigmoid(i)*tanh(g), h' =
 * sigmoid(o)*tanh(c'). weight_ih (4H, in), weight_hh (4H, H). h and c
 * (N, H) may be NULL (zeros). Writes *h_out and *c_out; 0 or -1. */
typedef struct { tg_tensor *weight_ih, *weight_hh, *bias_ih, *bias_hh; int64_t input_size, hidden_size; } tg_lstmcell_layer;
TG_API tg_lstmcell_layer *tg_lstmcell_new(int64_t input_size, int64_t hidden_size, bool bias);
TG_API int tg_lstmcell_forward(tg_lstmcell_layer *l, tg_tensor *x, tg_tensor *h, tg_tensor *c, tg_tensor **h_out, tg_tensor **c_out);
TG_API int tg_lstmcell_state(const tg_lstmcell_layer *l, tg_state_dict *sd, const char *prefix);
TG_API void tg_lstmcell_free(tg_lstmcell_layer *l);

/* ---------------------------------------------------------------- optimizers */

/* An optimizer over params (borrowed, realized, float). The learning rate
 * and Adam's bias-correction powers b1^t, b2^t are tensors (0-d float32)
 * updated in place, so a step captured by tg_jit replays correctly: call
 * tg_optim_set_lr between JIT calls (never inside the step function, where
 * it would be captured once). Defaults (tinygrad's):
 *   SGD   lr 0.001, momentum 0, weight_decay 0, nesterov off
 *         (torch's formula: g += wd*p; b = momentum*b + g; g = nesterov ?
 *         g + momentum*b : b; p -= lr*g)
 *   Adam  lr 0.001, b1 0.9, b2 0.999, eps 1e-8
 *   AdamW lr 0.001, b1 0.9, b2 0.999, eps 1e-8, weight_decay 0.01
 *         (decoupled: p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p))
 *   LAMB  lr 0.001, b1 0.9, b2 0.999, eps 1e-6, weight_decay 0
 *         (the Adam-style update scaled by the trust ratio
 *         |p| / |update| per tensor, 1 when either norm is 0). */
typedef struct tg_optim tg_optim;
TG_API tg_optim *tg_sgd_new(tg_tensor *const *params, int n, double lr, double momentum, double weight_decay, bool nesterov);
TG_API tg_optim *tg_adam_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps);
TG_API tg_optim *tg_adamw_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps, double weight_decay);
TG_API tg_optim *tg_lamb_new(tg_tensor *const *params, int n, double lr, double b1, double b2, double eps, double weight_decay);
TG_API void tg_optim_free(tg_optim *o);

/* One update from tg_grad of each parameter (parameters without a gradient
 * are left alone): the parameters and the optimizer state are written with
 * tg_assign and realized together (tinygrad's step()). Under tg_jit this is
 * captured as part of the step. Realize what must read the old parameters
 * (the loss) before calling it. 0 or -1. */
TG_API int tg_optim_step(tg_optim *o);
/* The same assigns, left lazy (tinygrad's schedule_step()): they run with
 * the next realize of the parameters, or with a JIT step's outputs. */
TG_API int tg_optim_schedule_step(tg_optim *o);
/* tg_zero_grad on every parameter. */
TG_API void tg_optim_zero_grad(tg_optim *o);
/* Writes the learning-rate tensor (a copy into its memory; no new kernel
 * source, so schedules cost no compiles). 0 or -1. */
TG_API int tg_optim_set_lr(tg_optim *o, double lr);
TG_API double tg_optim_get_lr(const tg_optim *o);   /* NaN (with an error) when o is NULL */
/* The 0-d float32 lr tensor, owned by the optimizer. */
TG_API tg_tensor *tg_optim_lr(const tg_optim *o);
/* The optimizer's state tensors (lr, step powers, momenta) as "lr", "b1_t",
 * "m.<i>", "v.<i>", "b.<i>" (i: the parameter's index). */
TG_API int tg_optim_state(const tg_optim *o, tg_state_dict *sd, const char *prefix);

/* ---------------------------------------------------------------- lr schedules */

/* Learning rate at step `step` (0-based), like torch's schedulers:
 * StepLR: base * gamma^floor(step / step_size). */
TG_API double tg_lr_step(double base, int64_t step, int64_t step_size, double gamma);
/* CosineAnnealingLR: eta_min + (base - eta_min) * (1 + cos(pi * step / t_max)) / 2. */
TG_API double tg_lr_cosine(double base, int64_t step, int64_t t_max, double eta_min);
/* OneCycleLR (anneal_strategy 'cos', three_phase off): warms up from
 * max_lr/div_factor to max_lr over pct_start*total_steps - 1 steps, then
 * anneals to max_lr/div_factor/final_div_factor at step total_steps - 1.
 * torch's defaults: pct_start 0.3, div_factor 25, final_div_factor 1e4. */
TG_API double tg_lr_one_cycle(double max_lr, int64_t step, int64_t total_steps, double pct_start, double div_factor, double final_div_factor);
/* Linear warmup, base * (step + 1) / warmup for step < warmup (base at step
 * warmup - 1), then cosine from base to eta_min at step total. */
TG_API double tg_lr_warmup_cosine(double base, int64_t step, int64_t warmup, int64_t total, double eta_min);

#ifdef __cplusplus
}
#endif
#endif
