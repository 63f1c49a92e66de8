/* test_layers.c: nn layers, state dicts, optimizers and lr schedules
 * (include/tg_layers.h), against goldens from tests/gen/gen_torch_layers.py
 * (tests/goldens/torch_layers_*.bin; the case layout is described at the top
 * of that script), plus statistical checks of tinygrad's initializations and
 * a JIT'd training step against the plain loop. */
#include <stdint.h>
#include "golden_io.h"
#include "test.h"

static golden_file *load(const char *path) {
  const char *err = NULL;
  golden_file *g = golden_load(path, &err);
  if (!g) test_fail(__FILE__, __LINE__, "%s: %s", path, err ? err : "?");
  return g;
}

static int ints3(const golden_case *c, const char *key, int *out) {
  int64_t v[3] = { 0 };
  int n = golden_ints(c, key, v, 3);
  for (int i = 0; i < 3; i++) out[i] = (int)v[i];
  return n;
}

/* ---------------------------------------------------------------- golden layers */

/* A layer built from a case: its state dict, a forward, a free. */
typedef struct {
  void *layer;
  tg_state_dict *sd;
  int (*forward)(void *layer, tg_tensor **x, int nx, tg_tensor **out);
  void (*free)(void *layer);
} test_layer;

static int fwd_linear(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_linear_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_conv(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_conv_layer_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_convt(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_conv_transpose_layer_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_bn(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_batchnorm_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_ln(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_layernorm_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_rms(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_rmsnorm_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_gn(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_groupnorm_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_emb(void *l, tg_tensor **x, int nx, tg_tensor **out) { out[0] = tg_embedding_forward(l, x[0]); return out[0] ? 0 : -1; }
static int fwd_lstm(void *l, tg_tensor **x, int nx, tg_tensor **out) {
  return tg_lstmcell_forward(l, x[0], nx > 1 ? x[1] : NULL, nx > 2 ? x[2] : NULL, &out[0], &out[1]);
}
static void free_linear(void *l) { tg_linear_free(l); }
static void free_conv(void *l) { tg_conv_layer_free(l); }
static void free_convt(void *l) { tg_conv_transpose_layer_free(l); }
static void free_bn(void *l) { tg_batchnorm_free(l); }
static void free_ln(void *l) { tg_layernorm_free(l); }
static void free_rms(void *l) { tg_rmsnorm_free(l); }
static void free_gn(void *l) { tg_groupnorm_free(l); }
static void free_emb(void *l) { tg_embedding_free(l); }
static void free_lstm(void *l) { tg_lstmcell_free(l); }

static bool make_layer(const golden_case *c, test_layer *t) {
  memset(t, 0, sizeof *t);
  t->sd = tg_state_dict_new();
  const char *op = c->op;
  bool bias = golden_int(c, "bias", 1) != 0;
  double eps = golden_f64(c, "eps", 1e-5);
  if (!strcmp(op, "linear")) {
    tg_linear_layer *l = tg_linear_new(golden_int(c, "in_features", 0), golden_int(c, "out_features", 0), bias);
    t->layer = l; t->forward = fwd_linear; t->free = free_linear;
    if (l) tg_linear_state(l, t->sd, NULL);
  } else if (!strcmp(op, "conv1d") || !strcmp(op, "conv2d")) {
    int k[3], st[3], pd[3], dl[3];
    int nd = ints3(c, "kernel", k);
    ints3(c, "stride", st); ints3(c, "padding", pd); ints3(c, "dilation", dl);
    tg_conv_opts o = { .groups = (int)golden_int(c, "groups", 1) };
    for (int i = 0; i < nd; i++) { o.stride[i] = st[i]; o.padding[2 * i] = o.padding[2 * i + 1] = pd[i]; o.dilation[i] = dl[i]; }
    int64_t ci = golden_int(c, "in_channels", 0), co = golden_int(c, "out_channels", 0);
    tg_conv_layer *l = nd == 1 ? tg_conv1d_new(ci, co, k[0], &o, bias) : tg_conv2d_new(ci, co, k[0], k[1], &o, bias);
    t->layer = l; t->forward = fwd_conv; t->free = free_conv;
    if (l) tg_conv_layer_state(l, t->sd, NULL);
  } else if (!strcmp(op, "conv_transpose2d")) {
    int k[3];
    ints3(c, "kernel", k);
    tg_conv_transpose_opts o = { .groups = (int)golden_int(c, "groups", 1) };
    ints3(c, "stride", o.stride); ints3(c, "padding", o.padding); ints3(c, "output_padding", o.output_padding); ints3(c, "dilation", o.dilation);
    tg_conv_transpose_layer *l = tg_conv_transpose2d_new(golden_int(c, "in_channels", 0), golden_int(c, "out_channels", 0), k[0], k[1], &o, bias);
    t->layer = l; t->forward = fwd_convt; t->free = free_convt;
    if (l) tg_conv_transpose_layer_state(l, t->sd, NULL);
  } else if (!strcmp(op, "batchnorm")) {
    tg_batchnorm_layer *l = tg_batchnorm_new(golden_int(c, "num_features", 0), eps, golden_f64(c, "momentum", 0.1), true, true);
    if (l) l->training = golden_int(c, "train", 1) != 0;
    t->layer = l; t->forward = fwd_bn; t->free = free_bn;
    if (l) tg_batchnorm_state(l, t->sd, NULL);
  } else if (!strcmp(op, "layernorm")) {
    int64_t ns[3];
    int n = golden_ints(c, "normalized_shape", ns, 3);
    tg_shape s = { n, { 0 } };
    for (int i = 0; i < n; i++) s.d[i] = ns[i];
    tg_layernorm_layer *l = tg_layernorm_new(s, eps, true);
    t->layer = l; t->forward = fwd_ln; t->free = free_ln;
    if (l) tg_layernorm_state(l, t->sd, NULL);
  } else if (!strcmp(op, "rmsnorm")) {
    tg_rmsnorm_layer *l = tg_rmsnorm_new(golden_int(c, "dim", 0), eps, true);
    t->layer = l; t->forward = fwd_rms; t->free = free_rms;
    if (l) tg_rmsnorm_state(l, t->sd, NULL);
  } else if (!strcmp(op, "groupnorm") || !strcmp(op, "instancenorm")) {
    tg_groupnorm_layer *l = !strcmp(op, "groupnorm")
      ? tg_groupnorm_new(golden_int(c, "num_groups", 0), golden_int(c, "num_channels", 0), eps, true)
      : tg_instancenorm_new(golden_int(c, "num_features", 0), eps, true);
    t->layer = l; t->forward = fwd_gn; t->free = free_gn;
    if (l) tg_groupnorm_state(l, t->sd, NULL);
  } else if (!strcmp(op, "embedding")) {
    tg_embedding_layer *l = tg_embedding_new(golden_int(c, "vocab_size", 0), golden_int(c, "dim", 0));
    t->layer = l; t->forward = fwd_emb; t->free = free_emb;
    if (l) tg_embedding_state(l, t->sd, NULL);
  } else if (!strcmp(op, "lstmcell")) {
    tg_lstmcell_layer *l = tg_lstmcell_new(golden_int(c, "input_size", 0), golden_int(c, "hidden_size", 0), bias);
    t->layer = l; t->forward = fwd_lstm; t->free = free_lstm;
    if (l) tg_lstmcell_state(l, t->sd, NULL);
  }
  return t->layer != NULL;
}

/* Writes the golden array into a layer tensor (in place). */
static bool load_into(tg_tensor *dst, const golden_array *a, const char *what) {
  tg_tensor *src = golden_tensor(a);
  if (!tg_assign(dst, src) || tg_realize(dst) < 0) {
    test_fail(__FILE__, __LINE__, "%s: loading: %s", what, tg_error());
    return false;
  }
  return true;
}

static void run_layer_case(const golden_case *c) {
  int nx = (int)golden_int(c, "nx", 1), nout = (int)golden_int(c, "nout", 1), np = (int)golden_int(c, "np", 0);
  int nbuf = (int)golden_int(c, "nbuf", 0);
  bool gx = golden_int(c, "gx", 0) != 0;
  char what[256];
  test_layer t;
  if (!make_layer(c, &t)) { test_fail(__FILE__, __LINE__, "%s: layer: %s", c->label, tg_error()); tg_state_dict_free(t.sd); return; }
  tg_tensor *params[8];
  int n = tg_state_dict_parameters(t.sd, params, 8);
  CHECK_MSG(n == np, "%s: %d parameters, golden has %d", c->label, n, np);
  CHECK_MSG(c->nin == nx + nout + np + nbuf, "%s: %d inputs", c->label, c->nin);
  bool ok = n == np && c->nin == nx + nout + np + nbuf;
  static const char *bufnames[] = { "running_mean", "running_var" };
  for (int i = 0; ok && i < np; i++) {
    snprintf(what, sizeof what, "%s param %d", c->label, i);
    ok = load_into(params[i], &c->in[nx + nout + i], what);
  }
  for (int i = 0; ok && i < nbuf; i++) ok = load_into(tg_state_dict_get(t.sd, bufnames[i]), &c->in[nx + nout + np + i], c->label);
  if (ok) {
    tg_scope_begin();
    tg_tensor *x[3] = { 0 }, *out[2] = { 0 };
    for (int i = 0; i < nx; i++) x[i] = golden_tensor(&c->in[i]);
    if (gx) tg_requires_grad(x[0], true);
    if (t.forward(t.layer, x, nx, out) < 0) test_fail(__FILE__, __LINE__, "%s: forward: %s", c->label, tg_error());
    else {
      tg_tensor *L = NULL;
      for (int k = 0; k < nout; k++) {
        tg_tensor *term = tg_sum(tg_mul(out[k], golden_tensor(&c->in[nx + k])), TG_ALL, false);
        L = L ? tg_add(L, term) : term;
      }
      for (int k = 0; k < nout; k++) {
        snprintf(what, sizeof what, "%s out %d", c->label, k);
        golden_check(out[k], &c->out[k], c, what);
      }
      if (tg_backward(L) < 0) test_fail(__FILE__, __LINE__, "%s: backward: %s", c->label, tg_error());
      else {
        for (int i = 0; i < np; i++) {
          snprintf(what, sizeof what, "%s grad %s", c->label, t.sd->names[i]);
          tg_tensor *g = tg_grad(params[i]);
          if (!g) test_fail(__FILE__, __LINE__, "%s: no gradient", what);
          else golden_check(g, &c->out[nout + i], c, what);
        }
        if (gx) {
          snprintf(what, sizeof what, "%s grad x", c->label);
          golden_check(tg_grad(x[0]), &c->out[nout + np], c, what);
        }
      }
      for (int i = 0; i < nbuf; i++) {
        snprintf(what, sizeof what, "%s %s", c->label, bufnames[i]);
        golden_check(tg_state_dict_get(t.sd, bufnames[i]), &c->out[nout + np + (gx ? 1 : 0) + i], c, what);
      }
    }
    tg_scope_end();
  }
  t.free(t.layer);
  tg_state_dict_free(t.sd);
}

TEST(layers_golden_torch) {
  golden_file *g = load("goldens/torch_layers_layers.bin");
  for (int i = 0; g && i < g->ncases; i++) run_layer_case(&g->cases[i]);
  golden_free(g);
}

/* ---------------------------------------------------------------- golden optimizers */

static void run_optim_case(const golden_case *c) {
  tg_tensor *X = golden_tensor(&c->in[0]), *Y = golden_tensor(&c->in[1]);
  tg_tensor *P[2] = { golden_tensor(&c->in[2]), golden_tensor(&c->in[3]) };
  tg_requires_grad(P[0], true); tg_requires_grad(P[1], true);
  int kind = (int)golden_int(c, "kind", 0), steps = (int)golden_int(c, "steps", 1);
  double lr = golden_f64(c, "lr", 0.001), b1 = golden_f64(c, "b1", 0.9), b2 = golden_f64(c, "b2", 0.999), eps = golden_f64(c, "eps", 1e-8);
  double wd = golden_f64(c, "weight_decay", 0);
  tg_optim *o = kind == 0 ? tg_sgd_new(P, 2, lr, golden_f64(c, "momentum", 0), wd, golden_int(c, "nesterov", 0) != 0)
              : kind == 1 ? tg_adam_new(P, 2, lr, b1, b2, eps)
              : kind == 2 ? tg_adamw_new(P, 2, lr, b1, b2, eps, wd)
              : tg_lamb_new(P, 2, lr, b1, b2, eps, wd);
  if (!o) { test_fail(__FILE__, __LINE__, "%s: %s", c->label, tg_error()); return; }
  const golden_param *lrs = golden_param_get(c, "lrs");
  char what[256];
  for (int s = 0; s < steps; s++) {
    tg_scope_begin();
    if (lrs) {
      double v = lrs->type == GOLDEN_FLOATS ? lrs->f[s] : (double)lrs->i[s];
      CHECK(tg_optim_set_lr(o, v) == 0);
      CHECK_NEAR(tg_optim_get_lr(o), v, 0);
    }
    tg_optim_zero_grad(o);
    tg_tensor *d = tg_sub(tg_add(tg_matmul(X, P[0]), P[1]), Y);
    tg_tensor *loss = tg_mean(tg_mul(d, d), TG_ALL, false);
    if (tg_backward(loss) < 0 || tg_optim_step(o) < 0) { test_fail(__FILE__, __LINE__, "%s step %d: %s", c->label, s, tg_error()); tg_scope_end(); break; }
    snprintf(what, sizeof what, "%s step %d W", c->label, s);
    golden_check(P[0], &c->out[2 * s], c, what);
    snprintf(what, sizeof what, "%s step %d b", c->label, s);
    golden_check(P[1], &c->out[2 * s + 1], c, what);
    tg_scope_end();
  }
  tg_optim_free(o);
}

TEST(layers_optim_golden_torch) {
  golden_file *g = load("goldens/torch_layers_optim.bin");
  for (int i = 0; g && i < g->ncases; i++) run_optim_case(&g->cases[i]);
  golden_free(g);
}

TEST(layers_lr_schedules_golden_torch) {
  golden_file *g = load("goldens/torch_layers_sched.bin");
  for (int i = 0; g && i < g->ncases; i++) {
    const golden_case *c = &g->cases[i];
    int n = (int)golden_int(c, "n", 0);
    float *got = malloc(sizeof(float) * (size_t)n), *want = malloc(sizeof(float) * (size_t)n);
    for (int s = 0; s < n; s++) {
      double v = NAN;
      if (!strcmp(c->op, "step")) v = tg_lr_step(golden_f64(c, "base", 0), s, golden_int(c, "step_size", 1), golden_f64(c, "gamma", 1));
      else if (!strcmp(c->op, "cosine")) v = tg_lr_cosine(golden_f64(c, "base", 0), s, golden_int(c, "t_max", 1), golden_f64(c, "eta_min", 0));
      else if (!strcmp(c->op, "one_cycle"))
        v = tg_lr_one_cycle(golden_f64(c, "max_lr", 0), s, golden_int(c, "total_steps", 1), golden_f64(c, "pct_start", 0.3),
                            golden_f64(c, "div_factor", 25), golden_f64(c, "final_div_factor", 1e4));
      got[s] = (float)v;
      want[s] = (float)golden_value(&c->out[0], s);
    }
    test_close_f32(got, want, (size_t)n, 1e-6, 1e-9, c->label);
    free(got); free(want);
  }
  golden_free(g);
  /* warmup + cosine: linear ramp to base, then down to eta_min */
  CHECK_NEAR(tg_lr_warmup_cosine(1.0, 0, 4, 12, 0.0), 0.25, 1e-12);
  CHECK_NEAR(tg_lr_warmup_cosine(1.0, 3, 4, 12, 0.0), 1.0, 1e-12);
  CHECK_NEAR(tg_lr_warmup_cosine(1.0, 4, 4, 12, 0.0), 1.0, 1e-12);
  CHECK_NEAR(tg_lr_warmup_cosine(1.0, 8, 4, 12, 0.1), 0.55, 1e-12);
  CHECK_NEAR(tg_lr_warmup_cosine(1.0, 12, 4, 12, 0.1), 0.1, 1e-12);
}

/* ---------------------------------------------------------------- initialization statistics */

/* All values within +-bound (and using it: max |v| > 0.9 bound), mean ~ 0,
 * std ~ bound/sqrt(3) (uniform). */
static void check_uniform(tg_tensor *t, double bound, const char *what) {
  int64_t n = tg_numel(t);
  float *v = malloc(sizeof(float) * (size_t)n);
  if (tg_data(t, v, sizeof(float) * (size_t)n) < 0) { test_fail(__FILE__, __LINE__, "%s: %s", what, tg_error()); free(v); return; }
  double s = 0, s2 = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) { s += v[i]; s2 += (double)v[i] * v[i]; if (fabs(v[i]) > mx) mx = fabs(v[i]); }
  double mean = s / (double)n, sd = sqrt(s2 / (double)n - mean * mean), want_sd = bound / sqrt(3.0);
  /* the sample mean's std is want_sd/sqrt(n): allow 5 of them */
  CHECK_MSG(fabs(mean) < 5 * want_sd / sqrt((double)n), "%s: mean %g (bound %g, n %lld)", what, mean, bound, (long long)n);
  CHECK_MSG(fabs(sd - want_sd) < 0.06 * want_sd, "%s: std %g, want %g", what, sd, want_sd);
  CHECK_MSG(mx <= bound * (1 + 1e-6) && mx > 0.9 * bound, "%s: max |v| %g, bound %g", what, mx, bound);
  free(v);
}

static void check_const(tg_tensor *t, float want, const char *what) {
  int64_t n = tg_numel(t);
  float *v = malloc(sizeof(float) * (size_t)n);
  CHECK(tg_data(t, v, sizeof(float) * (size_t)n) == 0);
  for (int64_t i = 0; i < n; i++) if (v[i] != want) { test_fail(__FILE__, __LINE__, "%s[%lld] = %g, want %g", what, (long long)i, v[i], want); break; }
  free(v);
}

TEST(layers_init_distributions) {
  tg_manual_seed(1234);
  /* Linear: kaiming_uniform(a=sqrt(5)) -> bound sqrt(6/(1+5))/sqrt(fan_in) = 1/sqrt(in) */
  tg_linear_layer *l = tg_linear_new(256, 128, true);
  CHECK_OK(l);
  if (l) {
    CHECK(tg_get_requires_grad(l->weight) && tg_get_requires_grad(l->bias));
    CHECK_EQ_INT(tg_dim(l->weight, 0), 128); CHECK_EQ_INT(tg_dim(l->weight, 1), 256);
    check_uniform(l->weight, 1.0 / 16, "linear.weight");
    check_uniform(l->bias, 1.0 / 16, "linear.bias");
  }
  tg_linear_free(l);
  tg_conv_layer *c = tg_conv2d_new(8, 64, 3, 3, NULL, true);
  CHECK_OK(c);
  if (c) { check_uniform(c->weight, 1.0 / sqrt(72.0), "conv2d.weight"); check_uniform(c->bias, 1.0 / sqrt(72.0), "conv2d.bias"); }
  tg_conv_layer_free(c);
  tg_conv_layer *c1 = tg_conv1d_new(16, 32, 5, NULL, false);
  CHECK_OK(c1);
  if (c1) { CHECK(c1->bias == NULL); check_uniform(c1->weight, 1.0 / sqrt(80.0), "conv1d.weight"); }
  tg_conv_layer_free(c1);
  tg_conv_transpose_layer *ct = tg_conv_transpose2d_new(16, 8, 4, 4, NULL, true);
  CHECK_OK(ct);
  if (ct) { CHECK_EQ_INT(tg_dim(ct->weight, 0), 16); check_uniform(ct->weight, 1.0 / sqrt(128.0), "convT.weight"); check_uniform(ct->bias, 1.0 / sqrt(128.0), "convT.bias"); }
  tg_conv_transpose_layer_free(ct);
  tg_embedding_layer *e = tg_embedding_new(300, 64);
  CHECK_OK(e);
  if (e) check_uniform(e->weight, sqrt(6.0 / 364.0), "embedding.weight");
  tg_embedding_free(e);
  tg_lstmcell_layer *ls = tg_lstmcell_new(32, 64, true);
  CHECK_OK(ls);
  if (ls) { check_uniform(ls->weight_ih, 1.0 / 8, "lstm.weight_ih"); check_uniform(ls->weight_hh, 1.0 / 8, "lstm.weight_hh"); check_uniform(ls->bias_hh, 1.0 / 8, "lstm.bias_hh"); }
  tg_lstmcell_free(ls);
  tg_batchnorm_layer *bn = tg_batchnorm_new(5, 1e-5, 0.1, true, true);
  CHECK_OK(bn);
  if (bn) {
    check_const(bn->weight, 1, "bn.weight"); check_const(bn->bias, 0, "bn.bias");
    check_const(bn->running_mean, 0, "bn.running_mean"); check_const(bn->running_var, 1, "bn.running_var");
    CHECK(!tg_get_requires_grad(bn->running_mean) && tg_get_requires_grad(bn->weight));
  }
  tg_batchnorm_free(bn);
  tg_groupnorm_layer *gn = tg_groupnorm_new(2, 4, 1e-5, false);
  CHECK_OK(gn);
  if (gn) CHECK(gn->weight == NULL && gn->bias == NULL);
  tg_groupnorm_free(gn);
  /* bad configurations fail with a message */
  CHECK(tg_groupnorm_new(3, 4, 1e-5, true) == NULL && strstr(tg_error(), "groups"));
  CHECK(tg_linear_new(0, 3, true) == NULL);
  CHECK(tg_conv2d_new(3, 4, 3, 3, &(tg_conv_opts){ .groups = 2 }, true) == NULL);
}

/* ---------------------------------------------------------------- state dicts and lifetime */

TEST(layers_state_dict_names_and_lifetime) {
  tg_linear_layer *fc;
  tg_batchnorm_layer *bn;
  tg_scope_begin();
  fc = tg_linear_new(4, 3, true);
  bn = tg_batchnorm_new(3, 1e-5, 0.1, true, true);
  tg_scope_end();   /* the layers' tensors belong to no scope: still alive */
  CHECK_OK(fc); CHECK_OK(bn);
  if (!fc || !bn) { tg_linear_free(fc); tg_batchnorm_free(bn); return; }
  float w[12];
  CHECK(tg_data(fc->weight, w, sizeof w) == 0);
  tg_state_dict *sd = tg_state_dict_new();
  CHECK(tg_linear_state(fc, sd, "fc1") == 0);
  CHECK(tg_batchnorm_state(bn, sd, "layers.0.bn") == 0);
  static const char *want[] = { "fc1.weight", "fc1.bias", "layers.0.bn.weight", "layers.0.bn.bias", "layers.0.bn.running_mean",
                                "layers.0.bn.running_var", "layers.0.bn.num_batches_tracked" };
  CHECK_EQ_INT(sd->n, 7);
  for (int i = 0; i < 7 && i < sd->n; i++) CHECK_MSG(!strcmp(sd->names[i], want[i]), "name %d: %s, want %s", i, sd->names[i], want[i]);
  CHECK(tg_state_dict_get(sd, "fc1.bias") == fc->bias);
  CHECK(tg_state_dict_get(sd, "nope") == NULL);
  tg_tensor *ps[8];
  CHECK_EQ_INT(tg_state_dict_parameters(sd, ps, 8), 4);   /* running stats are buffers */
  CHECK(tg_state_dict_add(sd, "fc1.weight", fc->weight) < 0 && strstr(tg_error(), "already"));
  tg_state_dict *sd2 = tg_state_dict_new();
  CHECK(tg_linear_state(fc, sd2, NULL) == 0 && !strcmp(sd2->names[0], "weight"));
  tg_state_dict_free(sd2);
  /* num_batches_tracked counts training forwards */
  float x[2 * 3];
  for (int i = 0; i < 6; i++) x[i] = (float)i;
  tg_scope_begin();
  for (int k = 0; k < 2; k++) CHECK_OK(tg_batchnorm_forward(bn, tg_from_data(x, TG_SHAPE(2, 3), TG_F32)));
  CHECK(tg_state_dict_realize(sd) == 0);
  CHECK_NEAR(tg_item(bn->num_batches_tracked), 2, 0);
  tg_scope_end();
  tg_state_dict_free(sd);
  tg_linear_free(fc);
  tg_batchnorm_free(bn);
}

/* ---------------------------------------------------------------- JIT training step */

typedef struct { tg_linear_layer *l1, *l2; tg_optim *opt; } mlp;

static tg_tensor *mlp_loss(mlp *m, tg_tensor *x, tg_tensor *y) {
  tg_tensor *h = tg_relu(tg_linear_forward(m->l1, x));
  tg_tensor *d = tg_sub(tg_linear_forward(m->l2, h), y);
  return tg_mean(tg_mul(d, d), TG_ALL, false);
}

static int train_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  mlp *m = ctx;
  tg_optim_zero_grad(m->opt);
  tg_tensor *loss = mlp_loss(m, in[0], in[1]);
  if (tg_backward(loss) < 0 || tg_realize(loss) < 0 || tg_optim_step(m->opt) < 0) return -1;
  out[0] = loss;
  return 0;
}

static void mlp_params(mlp *m, tg_tensor **p) { p[0] = m->l1->weight; p[1] = m->l1->bias; p[2] = m->l2->weight; p[3] = m->l2->bias; }

TEST(layers_jit_training_step_matches_loop) {
  enum { N = 6, I = 4, H = 8, O = 3, STEPS = 5 };
  tg_manual_seed(7);
  mlp a = { tg_linear_new(I, H, true), tg_linear_new(H, O, true), NULL }, b = { tg_linear_new(I, H, true), tg_linear_new(H, O, true), NULL };
  CHECK_OK(a.l1); CHECK_OK(a.l2); CHECK_OK(b.l1); CHECK_OK(b.l2);
  if (!a.l1 || !a.l2 || !b.l1 || !b.l2) goto done;
  tg_tensor *pa[4], *pb[4];
  mlp_params(&a, pa); mlp_params(&b, pb);
  /* b starts from a's weights (copied through host memory: see the report
   * on assigning a detached parameter to another parameter) */
  for (int i = 0; i < 4; i++) {
    float buf[I * H];
    CHECK(tg_data(pa[i], buf, sizeof buf) == 0);
    CHECK(tg_assign(pb[i], tg_from_data(buf, tg_shape_of(pb[i]), TG_F32)) != NULL);
    CHECK(tg_realize(pb[i]) == 0);
  }
  a.opt = tg_adam_new(pa, 4, 0.01, 0.9, 0.999, 1e-8);
  b.opt = tg_adam_new(pb, 4, 0.01, 0.9, 0.999, 1e-8);
  CHECK_OK(a.opt); CHECK_OK(b.opt);
  if (!a.opt || !b.opt) goto done;
  tg_jit *j = tg_jit_new(train_step, &b);
  for (int s = 0; s < STEPS; s++) {
    tg_scope_begin();
    float x[N * I], y[N * O];
    for (int i = 0; i < N * I; i++) x[i] = (float)sin(0.7 * i + s);
    for (int i = 0; i < N * O; i++) y[i] = (float)cos(0.3 * i - s);
    /* a schedule: the lr changes every step, through the lr tensor */
    double lr = tg_lr_cosine(0.02, s, STEPS, 0.001);
    CHECK(tg_optim_set_lr(a.opt, lr) == 0 && tg_optim_set_lr(b.opt, lr) == 0);
    tg_tensor *loss_a = NULL, *loss_b = NULL;
    CHECK(train_step(&a, (tg_tensor *[]){ tg_from_data(x, TG_SHAPE(N, I), TG_F32), tg_from_data(y, TG_SHAPE(N, O), TG_F32) }, 2, &loss_a, 1) == 0);
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(N, I), TG_F32), tg_from_data(y, TG_SHAPE(N, O), TG_F32) };
    CHECK_MSG(tg_jit_call(j, in, 2, &loss_b, 1) == 0, "step %d: %s", s, tg_error());
    if (loss_a && loss_b) CHECK_NEAR(tg_item(loss_b), tg_item(loss_a), 1e-5);
    tg_scope_end();
  }
  CHECK_EQ_INT(tg_jit_stats(j).calls, STEPS);
  for (int i = 0; i < 4; i++) {
    int64_t n = tg_numel(pa[i]);
    float *va = malloc(sizeof(float) * (size_t)n), *vb = malloc(sizeof(float) * (size_t)n);
    CHECK(tg_data(pa[i], va, sizeof(float) * (size_t)n) == 0 && tg_data(pb[i], vb, sizeof(float) * (size_t)n) == 0);
    char what[32];
    snprintf(what, sizeof what, "param %d", i);
    test_close_f32(vb, va, (size_t)n, 1e-5, 1e-6, what);
    free(va); free(vb);
  }
  /* the step counter lives in a tensor: 5 steps -> b1^5 */
  tg_state_dict *sd = tg_state_dict_new();
  CHECK(tg_optim_state(b.opt, sd, "opt") == 0);
  tg_tensor *b1t = tg_state_dict_get(sd, "opt.b1_t");
  CHECK(b1t != NULL);
  if (b1t) CHECK_NEAR(tg_item(b1t), pow(0.9, STEPS), 1e-6);
  tg_state_dict_free(sd);
  tg_jit_free(j);
done:
  tg_optim_free(a.opt); tg_optim_free(b.opt);
  tg_linear_free(a.l1); tg_linear_free(a.l2); tg_linear_free(b.l1); tg_linear_free(b.l2);
}

/* ---------------------------------------------------------------- errors */

TEST(layers_errors_do_not_abort) {
  tg_linear_layer *l = tg_linear_new(3, 2, false);
  CHECK_OK(l);
  CHECK(tg_linear_forward(l, NULL) == NULL);
  CHECK(tg_linear_forward(NULL, NULL) == NULL && strstr(tg_error(), "NULL"));
  float x[4] = { 1, 2, 3, 4 };
  CHECK(tg_linear_forward(l, tg_from_data(x, TG_SHAPE(1, 4), TG_F32)) == NULL);   /* 4 features into a 3-input layer */
  tg_tensor *nul[1] = { NULL };
  CHECK(tg_adam_new(nul, 1, 0.001, 0.9, 0.999, 1e-8) == NULL && strstr(tg_error(), "NULL"));
  CHECK(tg_sgd_new(&l->weight, 1, 0.1, 0, 0, true) == NULL && strstr(tg_error(), "nesterov"));
  CHECK(tg_adam_new(&l->weight, 1, 0.1, 1.5, 0.999, 1e-8) == NULL);
  tg_tensor *ints = tg_zeros(TG_SHAPE(2), TG_I32);
  CHECK(tg_sgd_new(&ints, 1, 0.1, 0, 0, false) == NULL);
  CHECK(tg_optim_step(NULL) < 0);
  /* a parameter without a gradient is left alone */
  tg_optim *o = tg_sgd_new(&l->weight, 1, 0.1, 0.9, 0, false);
  CHECK_OK(o);
  float before[6], after[6];
  CHECK(tg_data(l->weight, before, sizeof before) == 0);
  CHECK(tg_optim_step(o) == 0);
  CHECK(tg_data(l->weight, after, sizeof after) == 0);
  CHECK(memcmp(before, after, sizeof before) == 0);
  tg_embedding_layer *e = tg_embedding_new(4, 2);
  CHECK(tg_embedding_forward(e, tg_from_data(x, TG_SHAPE(4), TG_F32)) == NULL && strstr(tg_error(), "integer"));
  tg_tensor *h = NULL, *c = NULL;
  tg_lstmcell_layer *ls = tg_lstmcell_new(2, 3, true);
  CHECK(tg_lstmcell_forward(ls, tg_from_data(x, TG_SHAPE(1, 4), TG_F32), NULL, NULL, &h, &c) < 0 && h == NULL && c == NULL);
  tg_lstmcell_free(ls);
  tg_embedding_free(e);
  tg_optim_free(o);
  tg_linear_free(l);
}

/* ---------------------------------------------------------------- JIT with BatchNorm and a lazy step */

typedef struct { tg_linear_layer *fc; tg_batchnorm_layer *bn; tg_optim *opt; bool lazy; } bn_net;

static int bn_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  bn_net *m = ctx;
  tg_optim_zero_grad(m->opt);
  tg_tensor *h = tg_batchnorm_forward(m->bn, tg_linear_forward(m->fc, in[0]));
  tg_tensor *loss = tg_mean(tg_mul(h, in[1]), TG_ALL, false);
  if (tg_backward(loss) < 0 || tg_realize(loss) < 0) return -1;
  if (m->lazy ? tg_optim_schedule_step(m->opt) < 0 : tg_optim_step(m->opt) < 0) return -1;
  out[0] = loss;
  return 0;
}

/* running statistics and a momentum SGD step captured by the JIT (the JIT
 * realizes the lazy assigns with its outputs) vs the plain loop (which
 * realizes them through the state dict) */
TEST(layers_jit_batchnorm_running_stats_and_lazy_step) {
  enum { N = 5, I = 3, C = 4, STEPS = 5 };
  bn_net a = { tg_linear_new(I, C, true), tg_batchnorm_new(C, 1e-5, 0.1, true, true), NULL, false };
  bn_net b = { tg_linear_new(I, C, true), tg_batchnorm_new(C, 1e-5, 0.1, true, true), NULL, true };
  if (!a.fc || !a.bn || !b.fc || !b.bn) { test_fail(__FILE__, __LINE__, "%s", tg_error()); goto done; }
  tg_state_dict *sa = tg_state_dict_new(), *sb = tg_state_dict_new();
  tg_linear_state(a.fc, sa, "fc"); tg_batchnorm_state(a.bn, sa, "bn");
  tg_linear_state(b.fc, sb, "fc"); tg_batchnorm_state(b.bn, sb, "bn");
  for (int i = 0; i < sa->n; i++) {
    float buf[16] = { 0 };
    if (tg_dtype_of(sa->tensors[i]) != TG_F32) continue;
    CHECK(tg_data(sa->tensors[i], buf, sizeof buf) == 0);
    CHECK(tg_assign(sb->tensors[i], tg_from_data(buf, tg_shape_of(sb->tensors[i]), TG_F32)) && tg_realize(sb->tensors[i]) == 0);
  }
  tg_tensor *pa[4], *pb[4];
  int na = tg_state_dict_parameters(sa, pa, 4), nb = tg_state_dict_parameters(sb, pb, 4);
  a.opt = tg_sgd_new(pa, na, 0.1, 0.9, 0.01, false);
  b.opt = tg_sgd_new(pb, nb, 0.1, 0.9, 0.01, false);
  tg_jit *j = tg_jit_new(bn_step, &b);
  for (int s = 0; s < STEPS; s++) {
    tg_scope_begin();
    float x[N * I], w[N * C];
    for (int i = 0; i < N * I; i++) x[i] = (float)sin(1.3 * i + 0.5 * s) * 2 + 1;
    for (int i = 0; i < N * C; i++) w[i] = (float)cos(0.9 * i + s);
    tg_tensor *loss_a = NULL, *loss_b = NULL;
    CHECK(bn_step(&a, (tg_tensor *[]){ tg_from_data(x, TG_SHAPE(N, I), TG_F32), tg_from_data(w, TG_SHAPE(N, C), TG_F32) }, 2, &loss_a, 1) == 0);
    CHECK(tg_state_dict_realize(sa) == 0);
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(N, I), TG_F32), tg_from_data(w, TG_SHAPE(N, C), TG_F32) };
    CHECK_MSG(tg_jit_call(j, in, 2, &loss_b, 1) == 0, "step %d: %s", s, tg_error());
    if (loss_a && loss_b) CHECK_NEAR(tg_item(loss_b), tg_item(loss_a), 1e-5);
    tg_scope_end();
  }
  for (int i = 0; i < sa->n; i++) {
    if (tg_dtype_of(sa->tensors[i]) != TG_F32) {
      CHECK_NEAR(tg_item(sb->tensors[i]), STEPS, 0);   /* num_batches_tracked */
      continue;
    }
    float va[16], vb[16];
    int64_t n = tg_numel(sa->tensors[i]);
    CHECK(tg_data(sa->tensors[i], va, sizeof va) == 0 && tg_data(sb->tensors[i], vb, sizeof vb) == 0);
    test_close_f32(vb, va, (size_t)n, 1e-5, 1e-6, sa->names[i]);
  }
  /* the running mean moved away from its init */
  float rm[C];
  CHECK(tg_data(b.bn->running_mean, rm, sizeof rm) == 0);
  CHECK(rm[0] != 0 || rm[1] != 0);
  tg_jit_free(j);
  tg_state_dict_free(sa); tg_state_dict_free(sb);
done:
  tg_optim_free(a.opt); tg_optim_free(b.opt);
  tg_linear_free(a.fc); tg_linear_free(b.fc); tg_batchnorm_free(a.bn); tg_batchnorm_free(b.bn);
}
