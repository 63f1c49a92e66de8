/* fashion_mnist.c: trains tinygrad's beautiful_mnist CNN on Fashion-MNIST
 * (Debian's dataset-fashion-mnist) with Adam, batch 512, a JIT'd step, and
 * prints the test accuracy.
 *
 *   make train          (installs the dataset if missing, builds, runs)
 *   ./build/examples/fashion_mnist [steps] [data dir]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "tg.h"

#define BATCH 512
/* learning rate: a linear warm-up over the first 10% of the steps to
 * LR_PEAK, then a cosine decay to 0 (a one-cycle schedule) */
#define LR_PEAK 4e-3

/* ---------------------------------------------------------------- data */

/* Reads a gzip'd idx file: magic, dims, then bytes. NULL on error. */
static unsigned char *read_idx(const char *dir, const char *name, int *n, int expect_dims) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  gzFile f = gzopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s (install dataset-fashion-mnist)\n", path); return NULL; }
  unsigned char hdr[16];
  int hlen = 4 + 4 * expect_dims;
  if (gzread(f, hdr, (unsigned)hlen) != hlen || hdr[2] != 8 || hdr[3] != expect_dims) { fprintf(stderr, "%s: not an idx file\n", path); gzclose(f); return NULL; }
  size_t total = 1;
  for (int d = 0; d < expect_dims; d++) {
    size_t v = (size_t)hdr[4 + 4 * d] << 24 | (size_t)hdr[5 + 4 * d] << 16 | (size_t)hdr[6 + 4 * d] << 8 | hdr[7 + 4 * d];
    if (d == 0) *n = (int)v;
    total *= v;
  }
  unsigned char *data = malloc(total);
  if (!data || gzread(f, data, (unsigned)total) != (int)total) { fprintf(stderr, "%s: truncated\n", path); free(data); gzclose(f); return NULL; }
  gzclose(f);
  return data;
}

/* ---------------------------------------------------------------- model */

typedef struct {
  tg_tensor *c1, *c1b, *c2, *c2b, *bn1w, *bn1b, *bn1m, *bn1v;
  tg_tensor *c3, *c3b, *c4, *c4b, *bn2w, *bn2b, *bn2m, *bn2v;
  tg_tensor *lw, *lb;
  tg_tensor *params[14];
  tg_tensor *adam_m[14], *adam_v[14], *t;
} model;

static tg_tensor *param(tg_tensor *t) { tg_realize(t); return tg_requires_grad(t, true); }
static tg_tensor *uniform_fan(tg_shape s, int fan_in) { double b = 1 / sqrt((double)fan_in); return tg_uniform(s, -b, b, TG_F32); }

static void model_init(model *m) {
  m->c1 = param(tg_kaiming_uniform(TG_SHAPE(32, 1, 5, 5), sqrt(5), TG_F32)); m->c1b = param(uniform_fan(TG_SHAPE(32), 25));
  m->c2 = param(tg_kaiming_uniform(TG_SHAPE(32, 32, 5, 5), sqrt(5), TG_F32)); m->c2b = param(uniform_fan(TG_SHAPE(32), 800));
  m->bn1w = param(tg_ones(TG_SHAPE(32), TG_F32)); m->bn1b = param(tg_zeros(TG_SHAPE(32), TG_F32));
  m->c3 = param(tg_kaiming_uniform(TG_SHAPE(64, 32, 3, 3), sqrt(5), TG_F32)); m->c3b = param(uniform_fan(TG_SHAPE(64), 288));
  m->c4 = param(tg_kaiming_uniform(TG_SHAPE(64, 64, 3, 3), sqrt(5), TG_F32)); m->c4b = param(uniform_fan(TG_SHAPE(64), 576));
  m->bn2w = param(tg_ones(TG_SHAPE(64), TG_F32)); m->bn2b = param(tg_zeros(TG_SHAPE(64), TG_F32));
  m->lw = param(tg_kaiming_uniform(TG_SHAPE(10, 576), sqrt(5), TG_F32)); m->lb = param(uniform_fan(TG_SHAPE(10), 576));
  m->bn1m = tg_zeros(TG_SHAPE(32), TG_F32); m->bn1v = tg_ones(TG_SHAPE(32), TG_F32);
  m->bn2m = tg_zeros(TG_SHAPE(64), TG_F32); m->bn2v = tg_ones(TG_SHAPE(64), TG_F32);
  tg_tensor *ps[14] = { m->c1, m->c1b, m->c2, m->c2b, m->bn1w, m->bn1b, m->c3, m->c3b, m->c4, m->c4b, m->bn2w, m->bn2b, m->lw, m->lb };
  memcpy(m->params, ps, sizeof ps);
  for (int i = 0; i < 14; i++) {
    m->adam_m[i] = tg_zeros_like(ps[i]); m->adam_v[i] = tg_zeros_like(ps[i]);
  }
  m->t = tg_zeros(TG_SHAPE(1), TG_F32);
  tg_tensor *all[] = { m->bn1m, m->bn1v, m->bn2m, m->bn2v, m->t };
  tg_realize_all(all, 5);
  for (int i = 0; i < 14; i++) { tg_realize(m->adam_m[i]); tg_realize(m->adam_v[i]); }
}

/* BatchNorm2d: batch statistics (and running-stat updates) when training */
static tg_tensor *bn(tg_tensor *x, tg_tensor *w, tg_tensor *b, tg_tensor *rm, tg_tensor *rv, bool train) {
  if (!train) return tg_batchnorm(x, rm, rv, w, b, 1e-5);
  tg_tensor *mean, *var;
  if (tg_batchnorm_stats(x, &mean, &var) < 0) return NULL;
  double n = (double)tg_numel(x) / (double)tg_dim(x, 1);
  tg_assign(rm, tg_add(tg_muls(rm, 0.9), tg_muls(tg_detach(mean), 0.1)));
  tg_assign(rv, tg_add(tg_muls(rv, 0.9), tg_muls(tg_detach(var), 0.1 * n / (n - 1))));
  return tg_batchnorm(x, mean, var, w, b, 1e-5);
}

static tg_tensor *forward(model *m, tg_tensor *x, bool train) {
  tg_conv_opts o = { 0 };
  tg_pool_opts p = { .kernel = { 2, 2 } };
  x = tg_relu(tg_conv2d(x, m->c1, m->c1b, &o));
  x = tg_relu(tg_conv2d(x, m->c2, m->c2b, &o));
  x = tg_max_pool2d(bn(x, m->bn1w, m->bn1b, m->bn1m, m->bn1v, train), &p, NULL);
  x = tg_relu(tg_conv2d(x, m->c3, m->c3b, &o));
  x = tg_relu(tg_conv2d(x, m->c4, m->c4b, &o));
  x = tg_max_pool2d(bn(x, m->bn2w, m->bn2b, m->bn2m, m->bn2v, train), &p, NULL);
  return tg_linear(tg_flatten(x, 1, -1), m->lw, m->lb);
}

/* Adam (lr from the schedule, betas 0.9/0.999, eps 1e-8), state updated in place */
static void adam_step(model *m, tg_tensor **ps, int np, tg_tensor *lr) {
  tg_assign(m->t, tg_adds(m->t, 1));
  tg_tensor *c1 = tg_adds(tg_neg(tg_exp2(tg_muls(m->t, log2(0.9)))), 1);   /* 1 - b1^t */
  tg_tensor *c2 = tg_adds(tg_neg(tg_exp2(tg_muls(m->t, log2(0.999)))), 1);
  for (int i = 0; i < np; i++) {
    tg_tensor *g = tg_grad(ps[i]);
    tg_assign(m->adam_m[i], tg_add(tg_muls(m->adam_m[i], 0.9), tg_muls(g, 0.1)));
    tg_assign(m->adam_v[i], tg_add(tg_muls(m->adam_v[i], 0.999), tg_muls(tg_mul(g, g), 0.001)));
    tg_tensor *mh = tg_div(m->adam_m[i], c1), *vh = tg_div(m->adam_v[i], c2);
    tg_assign(ps[i], tg_sub(ps[i], tg_mul(tg_div(mh, tg_adds(tg_sqrt(vh), 1e-8)), lr)));
  }
}

/* ---------------------------------------------------------------- training */

static int train_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  model *m = ctx;
  tg_tensor *logits = forward(m, in[0], true);
  tg_tensor *loss = tg_sparse_categorical_crossentropy(logits, in[1], NULL);
  if (!loss) return -1;
  for (int i = 0; i < 14; i++) tg_zero_grad(m->params[i]);
  if (tg_backward(loss) < 0) return -1;
  adam_step(m, m->params, 14, in[2]);
  out[0] = loss;
  return 0;
}

static float learning_rate(int step, int steps) {
  int warm = steps / 10 > 0 ? steps / 10 : 1;
  if (step < warm) return (float)(LR_PEAK * (step + 1) / warm);
  return (float)(LR_PEAK * 0.5 * (1 + cos(M_PI * (step - warm) / (double)(steps - warm))));
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void normalize(const unsigned char *src, float *dst, int n) {
  for (int i = 0; i < n; i++) dst[i] = src[i] / 255.0f;
}

int main(int argc, char **argv) {
  int steps = 200;   /* about 1.7 epochs: 88% in about 2 minutes here */
  if (argc > 1) {
    char *end;
    long v = strtol(argv[1], &end, 10);
    if (*argv[1] == '\0' || *end || v < 1 || v > 1000000) { fprintf(stderr, "steps must be a whole number from 1 to 1000000, not '%s'\n", argv[1]); return 2; }
    steps = (int)v;
  }
  const char *dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist";
  int ntrain, ntest, nl, ntl;
  unsigned char *xtr = read_idx(dir, "train-images-idx3-ubyte.gz", &ntrain, 3);
  unsigned char *ytr = read_idx(dir, "train-labels-idx1-ubyte.gz", &nl, 1);
  unsigned char *xte = read_idx(dir, "t10k-images-idx3-ubyte.gz", &ntest, 3);
  unsigned char *yte = read_idx(dir, "t10k-labels-idx1-ubyte.gz", &ntl, 1);
  if (!xtr || !ytr || !xte || !yte || nl != ntrain || ntl != ntest) return 1;
  printf("Fashion-MNIST: %d train, %d test images; beautiful_mnist CNN, Adam, batch %d, %d steps\n", ntrain, ntest, BATCH, steps);
  tg_manual_seed(1337);
  srand(1337);
  model m;
  model_init(&m);
  tg_jit *jit = tg_jit_new(train_step, &m);
  float *xb = malloc(sizeof(float) * BATCH * 784);
  int *yb = malloc(sizeof(int) * BATCH);
  double t0 = now(), t_first = 0;
  float loss_v = 0;
  for (int s = 0; s < steps; s++) {
    tg_scope_begin();
    for (int i = 0; i < BATCH; i++) {
      int k = rand() % ntrain;
      normalize(xtr + (size_t)k * 784, xb + (size_t)i * 784, 784);
      yb[i] = ytr[k];
    }
    float lr = learning_rate(s, steps);
    tg_tensor *in[3] = { tg_from_data(xb, TG_SHAPE(BATCH, 1, 28, 28), TG_F32), tg_from_data(yb, TG_SHAPE(BATCH), TG_I32),
                         tg_from_data(&lr, TG_SHAPE(), TG_F32) };
    tg_tensor *loss = NULL;
    if (tg_jit_call(jit, in, 3, &loss, 1) < 0) { fprintf(stderr, "\nstep %d: %s\n", s, tg_error()); return 1; }
    if (s % 10 == 0 || s == steps - 1) loss_v = (float)tg_item(loss);
    tg_scope_end();
    if (s == 2) t_first = now();   /* from here on the JIT replays */
    double el = now() - t0;
    double rate = s >= 3 ? (s - 2) * (double)BATCH / (now() - t_first) : (s + 1) * (double)BATCH / el;
    double eta = (steps - s - 1) * BATCH / (rate > 0 ? rate : 1);
    int bar = 30 * (s + 1) / steps;
    printf("\r[%.*s%*s] step %4d/%d  loss %.4f  %7.0f samples/s  ETA %4.0fs ", bar, "==============================", 30 - bar, "", s + 1, steps, loss_v, rate, eta);
    fflush(stdout);
  }
  double t_end = now(), train_s = t_end - t0;
  /* test accuracy, eval mode (running statistics) */
  int correct = 0;
  float *xt = malloc(sizeof(float) * 1000 * 784);
  for (int b = 0; b < ntest; b += 1000) {
    tg_scope_begin();
    normalize(xte + (size_t)b * 784, xt, 1000 * 784);
    tg_tensor *pred = tg_argmax(forward(&m, tg_from_data(xt, TG_SHAPE(1000, 1, 28, 28), TG_F32), false), 1, false);
    int p[1000];
    if (tg_data(pred, p, sizeof p) < 0) { fprintf(stderr, "\neval: %s\n", tg_error()); return 1; }
    for (int i = 0; i < 1000; i++) correct += p[i] == yte[b + i];
    tg_scope_end();
  }
  tg_counters c = tg_get_counters();
  double replay_rate = steps > 3 ? (steps - 3) * (double)BATCH / (t_end - t_first) : 0;
  printf("\ntrained %d steps in %.1f s; test accuracy %.2f%% (%lld kernels compiled, %lld from cache)\n",
         steps, train_s, 100.0 * correct / ntest, (long long)c.kernels_compiled, (long long)c.kernels_cached);
  /* for bench/bench_fmnist.c */
  printf("result steps=%d samples_per_s=%.1f accuracy=%.4f\n", steps, replay_rate, (double)correct / ntest);
  tg_jit_free(jit);
  free(xb); free(yb); free(xt); free(xtr); free(ytr); free(xte); free(yte);
  return 0;
}
