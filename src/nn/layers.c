/* layers.c: tinygrad's nn layers (nn/__init__.py) as C structs of tensors.
 * Parameters are made in a scratch scope, realized and taken out of every
 * scope (nn_own), so they live until the layer's free function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nn/nn_layers.h"
#include "util/util.h"

/* uniform(-bound, bound) of shape, owned. */
static tg_tensor *uniform_param(tg_shape s, double bound) {
  return nn_own(tg_uniform(s, -bound, bound, TG_F32), true);
}

static int64_t fan_in(tg_shape s) {
  int64_t f = 1;
  for (int i = 1; i < s.ndim; i++) f *= s.d[i];
  return f;
}

/* kaiming_uniform(a=sqrt(5)) weight and uniform(+-1/sqrt(fan_in)) bias. */
static int init_weight_bias(tg_shape ws, int64_t nbias, bool bias, tg_tensor **w, tg_tensor **b) {
  tg_scope_begin();
  *w = nn_own(tg_kaiming_uniform(ws, sqrt(5.0), TG_F32), true);
  *b = NULL;
  if (*w && bias) *b = uniform_param(TG_SHAPE(nbias), 1.0 / sqrt((double)fan_in(ws)));
  tg_scope_end();
  if (!*w || (bias && !*b)) { tg_free(*w); tg_free(*b); *w = *b = NULL; return -1; }
  return 0;
}

/* ---------------------------------------------------------------- Linear */

tg_linear_layer *tg_linear_new(int64_t in, int64_t out, bool bias) {
  if (in <= 0 || out <= 0) TG_FAIL("tg_linear_new: sizes %lld, %lld must be positive", (long long)in, (long long)out);
  tg_linear_layer *l = tg_xcalloc(1, sizeof *l);
  l->in = in; l->out = out;
  if (init_weight_bias(TG_SHAPE(out, in), out, bias, &l->weight, &l->bias) < 0) { free(l); return NULL; }
  return l;
}

tg_tensor *tg_linear_forward(tg_linear_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_linear_forward: layer is NULL");
  return tg_linear(x, l->weight, l->bias);
}

int tg_linear_state(const tg_linear_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_linear_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ? -1 : 0;
}

void tg_linear_free(tg_linear_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); free(l);
}

/* ---------------------------------------------------------------- Conv1d / Conv2d */

static tg_conv_layer *conv_new(const char *fn, int64_t in, int64_t out, int nd, const int *k, const tg_conv_opts *opts, bool bias) {
  int groups = opts && opts->groups ? opts->groups : 1;
  if (in <= 0 || out <= 0 || groups <= 0 || in % groups || out % groups)
    TG_FAIL("%s: channels %lld -> %lld do not split into %d groups", fn, (long long)in, (long long)out, groups);
  for (int i = 0; i < nd; i++) if (k[i] <= 0) TG_FAIL("%s: kernel size %d must be positive", fn, k[i]);
  tg_conv_layer *l = tg_xcalloc(1, sizeof *l);
  l->nd = nd;
  if (opts) l->opts = *opts;
  tg_shape ws = { 2 + nd, { out, in / groups } };
  for (int i = 0; i < nd; i++) ws.d[2 + i] = k[i];
  if (init_weight_bias(ws, out, bias, &l->weight, &l->bias) < 0) { free(l); return NULL; }
  return l;
}

tg_conv_layer *tg_conv1d_new(int64_t in, int64_t out, int k, const tg_conv_opts *opts, bool bias) {
  return conv_new("tg_conv1d_new", in, out, 1, &k, opts, bias);
}

tg_conv_layer *tg_conv2d_new(int64_t in, int64_t out, int kh, int kw, const tg_conv_opts *opts, bool bias) {
  int k[2] = { kh, kw };
  return conv_new("tg_conv2d_new", in, out, 2, k, opts, bias);
}

tg_tensor *tg_conv_layer_forward(tg_conv_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_conv_layer_forward: layer is NULL");
  return tg_conv(x, l->weight, l->bias, &l->opts);
}

int tg_conv_layer_state(const tg_conv_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_conv_layer_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ? -1 : 0;
}

void tg_conv_layer_free(tg_conv_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); free(l);
}

/* ---------------------------------------------------------------- ConvTranspose2d */

tg_conv_transpose_layer *tg_conv_transpose2d_new(int64_t in, int64_t out, int kh, int kw, const tg_conv_transpose_opts *opts, bool bias) {
  int groups = opts && opts->groups ? opts->groups : 1;
  if (in <= 0 || out <= 0 || groups <= 0 || in % groups || out % groups)
    TG_FAIL("tg_conv_transpose2d_new: channels %lld -> %lld do not split into %d groups", (long long)in, (long long)out, groups);
  if (kh <= 0 || kw <= 0) TG_FAIL("tg_conv_transpose2d_new: kernel %dx%d must be positive", kh, kw);
  tg_conv_transpose_layer *l = tg_xcalloc(1, sizeof *l);
  if (opts) l->opts = *opts;
  if (init_weight_bias(TG_SHAPE(in, out / groups, kh, kw), out, bias, &l->weight, &l->bias) < 0) { free(l); return NULL; }
  return l;
}

tg_tensor *tg_conv_transpose_layer_forward(tg_conv_transpose_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_conv_transpose_layer_forward: layer is NULL");
  return tg_conv_transpose(x, l->weight, l->bias, &l->opts);
}

int tg_conv_transpose_layer_state(const tg_conv_transpose_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_conv_transpose_layer_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ? -1 : 0;
}

void tg_conv_transpose_layer_free(tg_conv_transpose_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); free(l);
}

/* ---------------------------------------------------------------- norms: common */

/* ones (weight) and zeros (bias) of shape s when affine. */
static int affine_params(tg_shape s, bool affine, tg_tensor **w, tg_tensor **b) {
  *w = *b = NULL;
  if (!affine) return 0;
  tg_scope_begin();
  *w = nn_own(tg_ones(s, TG_F32), true);
  *b = nn_own(tg_zeros(s, TG_F32), true);
  tg_scope_end();
  if (!*w || !*b) { tg_free(*w); tg_free(*b); *w = *b = NULL; return -1; }
  return 0;
}

/* (C) -> (1, C, 1, ...) for an input of nd axes. */
static tg_tensor *per_channel(tg_tensor *p, int nd) {
  if (!p) return NULL;
  tg_shape s = { nd, { 1 } };
  for (int i = 0; i < nd; i++) s.d[i] = 1;
  s.d[1] = tg_dim(p, 0);
  return tg_reshape(p, s);
}

/* ---------------------------------------------------------------- BatchNorm */

tg_batchnorm_layer *tg_batchnorm_new(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats) {
  if (num_features <= 0) TG_FAIL("tg_batchnorm_new: num_features %lld must be positive", (long long)num_features);
  tg_batchnorm_layer *l = tg_xcalloc(1, sizeof *l);
  l->num_features = num_features; l->eps = eps; l->momentum = momentum;
  l->training = true; l->track_running_stats = track_running_stats;
  bool ok = affine_params(TG_SHAPE(num_features), affine, &l->weight, &l->bias) == 0;
  if (ok && track_running_stats) {
    tg_scope_begin();
    l->running_mean = nn_own(tg_zeros(TG_SHAPE(num_features), TG_F32), false);
    l->running_var = nn_own(tg_ones(TG_SHAPE(num_features), TG_F32), false);
    l->num_batches_tracked = nn_own(tg_zeros(TG_SHAPE(), TG_I64), false);
    tg_scope_end();
    ok = l->running_mean && l->running_var && l->num_batches_tracked;
  }
  if (!ok) { tg_batchnorm_free(l); return NULL; }
  return l;
}

tg_tensor *tg_batchnorm_forward(tg_batchnorm_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_batchnorm_forward: layer is NULL");
  if (!x) return tg_batchnorm(NULL, NULL, NULL, NULL, NULL, l->eps);
  if (tg_ndim(x) < 2 || tg_dim(x, 1) != l->num_features)
    TG_FAIL("tg_batchnorm_forward: input needs axis 1 of size %lld", (long long)l->num_features);
  if (!l->training && l->track_running_stats)
    return tg_batchnorm(x, l->running_mean, l->running_var, l->weight, l->bias, l->eps);
  tg_tensor *mean = NULL, *var = NULL;
  if (tg_batchnorm_stats(x, &mean, &var) < 0) return NULL;
  tg_tensor *out = tg_batchnorm(x, mean, var, l->weight, l->bias, l->eps);
  if (out && l->training && l->track_running_stats) {
    double n = (double)(tg_numel(x) / l->num_features), m = l->momentum;
    bool ng = tg_no_grad();
    tg_set_no_grad(true);
    tg_tensor *md = tg_detach(mean), *vd = tg_detach(var);
    tg_assign(l->running_mean, tg_add(tg_muls(l->running_mean, 1 - m), tg_muls(md, m)));
    tg_assign(l->running_var, tg_add(tg_muls(l->running_var, 1 - m), tg_muls(vd, m * n / (n > 1 ? n - 1 : 1))));
    tg_assign(l->num_batches_tracked, tg_adds(l->num_batches_tracked, 1));
    tg_set_no_grad(ng);
  }
  return out;
}

int tg_batchnorm_state(const tg_batchnorm_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_batchnorm_state", l, sd) < 0) return -1;
  if (nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ||
      nn_state_add(sd, prefix, "running_mean", l->running_mean) < 0 || nn_state_add(sd, prefix, "running_var", l->running_var) < 0 ||
      nn_state_add(sd, prefix, "num_batches_tracked", l->num_batches_tracked) < 0) return -1;
  return 0;
}

void tg_batchnorm_free(tg_batchnorm_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); tg_free(l->running_mean); tg_free(l->running_var); tg_free(l->num_batches_tracked);
  free(l);
}

/* ---------------------------------------------------------------- LayerNorm */

tg_layernorm_layer *tg_layernorm_new(tg_shape ns, double eps, bool affine) {
  if (ns.ndim < 1 || ns.ndim > TG_MAX_DIMS) TG_FAIL("tg_layernorm_new: normalized_shape needs 1 to %d axes", TG_MAX_DIMS);
  for (int i = 0; i < ns.ndim; i++) if (ns.d[i] <= 0) TG_FAIL("tg_layernorm_new: normalized_shape sizes must be positive");
  tg_layernorm_layer *l = tg_xcalloc(1, sizeof *l);
  l->normalized_shape = ns; l->eps = eps;
  if (affine_params(ns, affine, &l->weight, &l->bias) < 0) { free(l); return NULL; }
  return l;
}

tg_tensor *tg_layernorm_forward(tg_layernorm_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_layernorm_forward: layer is NULL");
  return tg_layernorm(x, l->normalized_shape, l->weight, l->bias, l->eps);
}

int tg_layernorm_state(const tg_layernorm_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_layernorm_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ? -1 : 0;
}

void tg_layernorm_free(tg_layernorm_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); free(l);
}

/* ---------------------------------------------------------------- RMSNorm */

tg_rmsnorm_layer *tg_rmsnorm_new(int64_t dim, double eps, bool affine) {
  if (dim <= 0) TG_FAIL("tg_rmsnorm_new: dim %lld must be positive", (long long)dim);
  tg_rmsnorm_layer *l = tg_xcalloc(1, sizeof *l);
  l->dim = dim; l->eps = eps;
  if (affine) {
    tg_scope_begin();
    l->weight = nn_own(tg_ones(TG_SHAPE(dim), TG_F32), true);
    tg_scope_end();
    if (!l->weight) { free(l); return NULL; }
  }
  return l;
}

tg_tensor *tg_rmsnorm_forward(tg_rmsnorm_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_rmsnorm_forward: layer is NULL");
  if (!x) return tg_rsqrt(NULL);
  if (tg_ndim(x) < 1 || tg_dim(x, -1) != l->dim) TG_FAIL("tg_rmsnorm_forward: the last axis must have size %lld", (long long)l->dim);
  tg_dtype dt = tg_dtype_of(x);
  tg_tensor *xf = tg_cast(x, TG_F32);
  tg_tensor *r = tg_mul(xf, tg_rsqrt(tg_adds(tg_mean(tg_mul(xf, xf), TG_AXES(-1), true), l->eps)));
  r = tg_cast(r, dt);
  return l->weight ? tg_mul(r, l->weight) : r;
}

int tg_rmsnorm_state(const tg_rmsnorm_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_rmsnorm_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight);
}

void tg_rmsnorm_free(tg_rmsnorm_layer *l) {
  if (!l) return;
  tg_free(l->weight); free(l);
}

/* ---------------------------------------------------------------- GroupNorm / InstanceNorm */

tg_groupnorm_layer *tg_groupnorm_new(int64_t num_groups, int64_t num_channels, double eps, bool affine) {
  if (num_groups <= 0 || num_channels <= 0 || num_channels % num_groups)
    TG_FAIL("tg_groupnorm_new: %lld channels do not split into %lld groups", (long long)num_channels, (long long)num_groups);
  tg_groupnorm_layer *l = tg_xcalloc(1, sizeof *l);
  l->num_groups = num_groups; l->num_channels = num_channels; l->eps = eps;
  if (affine_params(TG_SHAPE(num_channels), affine, &l->weight, &l->bias) < 0) { free(l); return NULL; }
  return l;
}

tg_groupnorm_layer *tg_instancenorm_new(int64_t num_features, double eps, bool affine) {
  return tg_groupnorm_new(num_features, num_features, eps, affine);
}

tg_tensor *tg_groupnorm_forward(tg_groupnorm_layer *l, tg_tensor *x) {
  if (!l) TG_FAIL("tg_groupnorm_forward: layer is NULL");
  if (!x) return tg_layernorm(NULL, TG_SHAPE(1), NULL, NULL, l->eps);
  int nd = tg_ndim(x);
  if (nd < 2 || tg_dim(x, 1) != l->num_channels)
    TG_FAIL("tg_groupnorm_forward: input needs axis 1 of size %lld", (long long)l->num_channels);
  int64_t rest = tg_numel(x) / (tg_dim(x, 0) * l->num_groups);
  tg_tensor *g = tg_reshape(x, TG_SHAPE(tg_dim(x, 0), l->num_groups, rest));
  tg_tensor *r = tg_reshape(tg_layernorm(g, TG_SHAPE(rest), NULL, NULL, l->eps), tg_shape_of(x));
  if (l->weight) r = tg_add(tg_mul(r, per_channel(l->weight, nd)), per_channel(l->bias, nd));
  return r;
}

int tg_groupnorm_state(const tg_groupnorm_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_groupnorm_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight) < 0 || nn_state_add(sd, prefix, "bias", l->bias) < 0 ? -1 : 0;
}

void tg_groupnorm_free(tg_groupnorm_layer *l) {
  if (!l) return;
  tg_free(l->weight); tg_free(l->bias); free(l);
}

/* ---------------------------------------------------------------- Embedding */

tg_embedding_layer *tg_embedding_new(int64_t vocab_size, int64_t dim) {
  if (vocab_size <= 0 || dim <= 0) TG_FAIL("tg_embedding_new: sizes %lld, %lld must be positive", (long long)vocab_size, (long long)dim);
  tg_embedding_layer *l = tg_xcalloc(1, sizeof *l);
  l->vocab_size = vocab_size; l->dim = dim;
  tg_scope_begin();
  l->weight = nn_own(tg_glorot_uniform(TG_SHAPE(vocab_size, dim), TG_F32), true);
  tg_scope_end();
  if (!l->weight) { free(l); return NULL; }
  return l;
}

tg_tensor *tg_embedding_forward(tg_embedding_layer *l, tg_tensor *idx) {
  if (!l) TG_FAIL("tg_embedding_forward: layer is NULL");
  if (!idx) return tg_index_select(l->weight, 0, NULL);
  if (!tg_dtype_is_int(tg_dtype_of(idx))) TG_FAIL("tg_embedding_forward: indices must be integers, not %s", tg_dtype_name(tg_dtype_of(idx)));
  tg_shape s = tg_shape_of(idx);
  if (s.ndim >= TG_MAX_DIMS) TG_FAIL("tg_embedding_forward: indices have too many axes");
  tg_tensor *flat = tg_reshape(idx, TG_SHAPE(-1));
  tg_tensor *r = tg_index_select(l->weight, 0, flat);
  s.d[s.ndim++] = l->dim;
  return tg_reshape(r, s);
}

int tg_embedding_state(const tg_embedding_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_embedding_state", l, sd) < 0) return -1;
  return nn_state_add(sd, prefix, "weight", l->weight);
}

void tg_embedding_free(tg_embedding_layer *l) {
  if (!l) return;
  tg_free(l->weight); free(l);
}

/* ---------------------------------------------------------------- LSTMCell */

tg_lstmcell_layer *tg_lstmcell_new(int64_t input_size, int64_t hidden_size, bool bias) {
  if (input_size <= 0 || hidden_size <= 0) TG_FAIL("tg_lstmcell_new: sizes %lld, %lld must be positive", (long long)input_size, (long long)hidden_size);
  tg_lstmcell_layer *l = tg_xcalloc(1, sizeof *l);
  l->input_size = input_size; l->hidden_size = hidden_size;
  double s = 1.0 / sqrt((double)hidden_size);
  tg_scope_begin();
  l->weight_ih = uniform_param(TG_SHAPE(4 * hidden_size, input_size), s);
  l->weight_hh = uniform_param(TG_SHAPE(4 * hidden_size, hidden_size), s);
  if (bias) {
    l->bias_ih = uniform_param(TG_SHAPE(4 * hidden_size), s);
    l->bias_hh = uniform_param(TG_SHAPE(4 * hidden_size), s);
  }
  tg_scope_end();
  if (!l->weight_ih || !l->weight_hh || (bias && (!l->bias_ih || !l->bias_hh))) { tg_lstmcell_free(l); return NULL; }
  return l;
}

int tg_lstmcell_forward(tg_lstmcell_layer *l, tg_tensor *x, tg_tensor *h, tg_tensor *c, tg_tensor **h_out, tg_tensor **c_out) {
  if (h_out) *h_out = NULL;
  if (c_out) *c_out = NULL;
  if (!l || !x || !h_out || !c_out) return tg_seterr("tg_lstmcell_forward: %s is NULL", !l ? "layer" : !x ? "input" : "an output pointer");
  if (tg_ndim(x) != 2 || tg_dim(x, 1) != l->input_size)
    return tg_seterr("tg_lstmcell_forward: input must be (N, %lld)", (long long)l->input_size);
  int64_t N = tg_dim(x, 0), H = l->hidden_size;
  if (!h) h = tg_zeros(TG_SHAPE(N, H), tg_dtype_of(x));
  if (!c) c = tg_zeros(TG_SHAPE(N, H), tg_dtype_of(x));
  tg_tensor *gates = tg_add(tg_linear(x, l->weight_ih, l->bias_ih), tg_linear(h, l->weight_hh, l->bias_hh));
  tg_tensor *p[4] = { 0 };
  if (!gates || tg_chunk(gates, 4, 1, p, 4) != 4) return -1;
  tg_tensor *i = tg_sigmoid(p[0]), *f = tg_sigmoid(p[1]), *g = tg_tanh(p[2]), *o = tg_sigmoid(p[3]);
  tg_tensor *nc = tg_add(tg_mul(f, c), tg_mul(i, g));
  tg_tensor *nh = tg_mul(o, tg_tanh(nc));
  if (!nc || !nh) return -1;
  *h_out = nh; *c_out = nc;
  return 0;
}

int tg_lstmcell_state(const tg_lstmcell_layer *l, tg_state_dict *sd, const char *prefix) {
  if (nn_state_args("tg_lstmcell_state", l, sd) < 0) return -1;
  if (nn_state_add(sd, prefix, "weight_ih", l->weight_ih) < 0 || nn_state_add(sd, prefix, "weight_hh", l->weight_hh) < 0 ||
      nn_state_add(sd, prefix, "bias_ih", l->bias_ih) < 0 || nn_state_add(sd, prefix, "bias_hh", l->bias_hh) < 0) return -1;
  return 0;
}

void tg_lstmcell_free(tg_lstmcell_layer *l) {
  if (!l) return;
  tg_free(l->weight_ih); tg_free(l->weight_hh); tg_free(l->bias_ih); tg_free(l->bias_hh); free(l);
}
