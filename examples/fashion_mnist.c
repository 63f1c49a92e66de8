/* fashion_mnist.c: trains tinygrad's beautiful_mnist CNN on Fashion-MNIST
 * (Debian's dataset-fashion-mnist) with Adam, batch 512, a JIT'd step, and
 * prints the test accuracy.
 *
 *   make train          (installs the dataset if missing, builds, runs)
 *   ./build/examples/fashion_mnist [steps] [data dir] [options]
 *
 * Options (docs/distributed.md):
 *   --distributed   data-parallel over the ranks of mpirun: every rank
 *                   takes its share of each batch, and the gradients (and
 *                   the loss) are averaged over the ranks in one flat
 *                   allreduce per step; rank 0 prints and evaluates.
 *                   mpirun -np 2 build/examples/fashion_mnist --distributed
 *   --split N       one process, each batch as N parts through the step
 *                   --distributed runs (batch-norm statistics per part, as
 *                   N ranks compute them), their gradients averaged in
 *                   host memory as the allreduce averages them: the loss
 *                   curve --distributed must give on N ranks (the
 *                   running statistics, for the test set, see every part
 *                   in turn, rank 0's only its own)
 *   --devices A,B   one process, data-parallel over several devices
 *                   (CPU:0,CPU:1): each batch sharded by rows over them
 *                   (tg_shard), the weights and optimizer state replicated;
 *                   the gradients' sums over the batch allreduce across
 *                   the devices (one bucket per step), batch-norm
 *                   statistics are the whole batch's: the curve of one
 *                   device within float rounding
 *                   build/examples/fashion_mnist --devices CPU:0,CPU:1
 *   --batch N       the global batch (default 512)
 *   --lr X          the peak learning rate (default 4e-3)
 *   --print-loss    print every step's loss ("loss STEP VALUE")
 *   --no-eval       skip the test set
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "tg.h"
#include "tg_dist.h"

#define BATCH 512   /* the default global batch */
/* learning rate: a linear warm-up over the first 10% of the steps to
 * LR_PEAK, then a cosine decay to 0 (a one-cycle schedule) */
#define LR_PEAK 4e-3   /* --lr changes it */
static double lr_peak = LR_PEAK;

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
/* --devices: the devices each step shards its batch over (n > 1) */
static const char *shard_devs[16];
static int shard_n;
static tg_tensor *replicate(tg_tensor *t) {
  tg_tensor *r = tg_shard(t, shard_devs, shard_n, -1);
  if (r && tg_realize(r) < 0) r = NULL;
  return r;
}
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

/* BatchNorm2d: batch statistics (and, with update, running-stat updates)
 * when training */
static tg_tensor *bn(tg_tensor *x, tg_tensor *w, tg_tensor *b, tg_tensor *rm, tg_tensor *rv, bool train, bool update) {
  if (!train) return tg_batchnorm(x, rm, rv, w, b, 1e-5);
  tg_tensor *mean, *var;
  if (tg_batchnorm_stats(x, &mean, &var) < 0) return NULL;
  double n = (double)tg_numel(x) / (double)tg_dim(x, 1);
  if (update) {
    tg_assign(rm, tg_add(tg_muls(rm, 0.9), tg_muls(tg_detach(mean), 0.1)));
    tg_assign(rv, tg_add(tg_muls(rv, 0.9), tg_muls(tg_detach(var), 0.1 * n / (n - 1))));
  }
  return tg_batchnorm(x, mean, var, w, b, 1e-5);
}

static tg_tensor *forward(model *m, tg_tensor *x, bool train, bool update) {
  tg_conv_opts o = { 0 };
  tg_pool_opts p = { .kernel = { 2, 2 } };
  x = tg_relu(tg_conv2d(x, m->c1, m->c1b, &o));
  x = tg_relu(tg_conv2d(x, m->c2, m->c2b, &o));
  x = tg_max_pool2d(bn(x, m->bn1w, m->bn1b, m->bn1m, m->bn1v, train, update), &p, NULL);
  x = tg_relu(tg_conv2d(x, m->c3, m->c3b, &o));
  x = tg_relu(tg_conv2d(x, m->c4, m->c4b, &o));
  x = tg_max_pool2d(bn(x, m->bn2w, m->bn2b, m->bn2m, m->bn2v, train, update), &p, NULL);
  return tg_linear(tg_flatten(x, 1, -1), m->lw, m->lb);
}

/* The training loss of a batch (its statistics update the running ones) */
static tg_tensor *batch_loss(model *m, tg_tensor *x, tg_tensor *y) {
  return tg_sparse_categorical_crossentropy(forward(m, x, true, true), y, NULL);
}

/* Adam (lr from the schedule, betas 0.9/0.999, eps 1e-8), state updated in
 * place; gs[i] is the gradient of ps[i] */
static void adam_step(model *m, tg_tensor **ps, tg_tensor **gs, int np, tg_tensor *lr) {
  tg_assign(m->t, tg_adds(m->t, 1));
  tg_tensor *c1 = tg_adds(tg_neg(tg_exp2(tg_muls(m->t, log2(0.9)))), 1);   /* 1 - b1^t */
  tg_tensor *c2 = tg_adds(tg_neg(tg_exp2(tg_muls(m->t, log2(0.999)))), 1);
  for (int i = 0; i < np; i++) {
    tg_tensor *g = gs[i];
    tg_assign(m->adam_m[i], tg_add(tg_muls(m->adam_m[i], 0.9), tg_muls(g, 0.1)));
    tg_assign(m->adam_v[i], tg_add(tg_muls(m->adam_v[i], 0.999), tg_muls(tg_mul(g, g), 0.001)));
    tg_tensor *mh = tg_div(m->adam_m[i], c1), *vh = tg_div(m->adam_v[i], c2);
    tg_assign(ps[i], tg_sub(ps[i], tg_mul(tg_div(mh, tg_adds(tg_sqrt(vh), 1e-8)), lr)));
  }
}

/* ---------------------------------------------------------------- training */

static int train_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  model *m = ctx;
  tg_tensor *x = in[0], *y = in[1], *lr = in[2];
  if (shard_n > 1) {   /* --devices: the batch's rows split over the devices */
    x = tg_shard(x, shard_devs, shard_n, 0);
    y = tg_shard(y, shard_devs, shard_n, 0);
    lr = tg_shard(lr, shard_devs, shard_n, -1);
  }
  tg_tensor *loss = batch_loss(m, x, y);
  if (!loss) return -1;
  for (int i = 0; i < 14; i++) tg_zero_grad(m->params[i]);
  if (tg_backward(loss) < 0) return -1;
  tg_tensor *gs[14];
  for (int i = 0; i < 14; i++) gs[i] = tg_grad(m->params[i]);
  adam_step(m, m->params, gs, 14, lr);
  out[0] = shard_n > 1 ? tg_to(loss, shard_devs[0]) : loss;   /* the JIT returns memory on one device */
  return 0;
}

/* --devices: every weight, statistic and optimizer state replicated on
 * the devices (the same values: the one-device model's) */
static int model_replicate(model *m) {
  tg_tensor **slots[] = { &m->c1, &m->c1b, &m->c2, &m->c2b, &m->bn1w, &m->bn1b, &m->bn1m, &m->bn1v,
                          &m->c3, &m->c3b, &m->c4, &m->c4b, &m->bn2w, &m->bn2b, &m->bn2m, &m->bn2v, &m->lw, &m->lb, &m->t };
  for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
    bool is_param = false;
    for (int j = 0; j < 14; j++) is_param |= m->params[j] == *slots[i];
    tg_tensor *r = replicate(*slots[i]);
    if (!r) return -1;
    if (is_param) tg_requires_grad(r, true);
    *slots[i] = r;
  }
  tg_tensor *ps[14] = { m->c1, m->c1b, m->c2, m->c2b, m->bn1w, m->bn1b, m->c3, m->c3b, m->c4, m->c4b, m->bn2w, m->bn2b, m->lw, m->lb };
  memcpy(m->params, ps, sizeof ps);
  for (int i = 0; i < 14; i++)
    if (!(m->adam_m[i] = replicate(m->adam_m[i])) || !(m->adam_v[i] = replicate(m->adam_v[i]))) return -1;
  return 0;
}

/* --distributed (and --split): a step is two JIT'd halves around one
 * allreduce. The first takes this rank's share of the batch to every
 * gradient and the loss, flattened into one vector; the ranks average it in
 * place (tg_dist_allreduce_inplace); the second steps Adam with its
 * slices. */
static int grad_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  model *m = ctx;
  tg_tensor *loss = batch_loss(m, in[0], in[1]);
  if (!loss) return -1;
  for (int i = 0; i < 14; i++) tg_zero_grad(m->params[i]);
  if (tg_backward(loss) < 0) return -1;
  tg_tensor *flat[15];
  for (int i = 0; i < 14; i++) flat[i] = tg_flatten(tg_grad(m->params[i]), 0, -1);
  flat[14] = tg_reshape(loss, TG_SHAPE(1));
  out[0] = tg_cat(flat, 15, 0);
  return out[0] ? 0 : -1;
}

static int apply_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  model *m = ctx;
  tg_tensor *gs[14];
  int64_t off = 0;
  for (int i = 0; i < 14; i++) {
    int64_t n = tg_numel(m->params[i]), s[1] = { off }, e[1] = { off + n };
    gs[i] = tg_reshape(tg_shrink(in[0], s, e), tg_shape_of(m->params[i]));
    off += n;
  }
  adam_step(m, m->params, gs, 14, in[1]);
  int64_t s[1] = { off }, e[1] = { off + 1 };
  out[0] = tg_reshape(tg_shrink(in[0], s, e), TG_SHAPE());   /* the mean loss */
  return 0;
}

static float learning_rate(int step, int steps) {
  int warm = steps / 10 > 0 ? steps / 10 : 1;
  if (step < warm) return (float)(lr_peak * (step + 1) / warm);
  return (float)(lr_peak * 0.5 * (1 + cos(M_PI * (step - warm) / (double)(steps - warm))));
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void normalize(const unsigned char *src, float *dst, int n) {
  for (int i = 0; i < n; i++) dst[i] = src[i] / 255.0f;
}

/* --split: part k's gradients into acc, which after the last part holds
 * their mean, summed and divided in float32 as the allreduce does */
static int accumulate(float *acc, tg_tensor *flat, int64_t n, int k, int parts) {
  if (k == 0) return tg_data(flat, acc, sizeof(float) * (size_t)n);
  float *g = malloc(sizeof(float) * (size_t)n);
  int rc = g ? tg_data(flat, g, sizeof(float) * (size_t)n) : -1;
  for (int64_t i = 0; rc == 0 && i < n; i++) acc[i] += g[i];
  if (rc == 0 && k == parts - 1) for (int64_t i = 0; i < n; i++) acc[i] /= (float)parts;
  free(g);
  return rc;
}

static int parse_count(const char *what, const char *s, long max, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end || v < 1 || v > max) { fprintf(stderr, "%s must be a whole number from 1 to %ld, not '%s'\n", what, max, s); return -1; }
  *out = (int)v;
  return 0;
}

int main(int argc, char **argv) {
  int steps = 200;   /* about 1.7 epochs: 88% in about 2 minutes here */
  const char *dir = "/usr/share/datasets/fashion-mnist";
  int batch = BATCH, split = 1, npos = 0;
  bool distributed = false, print_loss = false, eval = true;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--distributed")) distributed = true;
    else if (!strcmp(argv[a], "--print-loss")) print_loss = true;
    else if (!strcmp(argv[a], "--no-eval")) eval = false;
    else if (!strcmp(argv[a], "--split") && a + 1 < argc) { if (parse_count("--split", argv[++a], 64, &split) < 0) return 2; }
    else if (!strcmp(argv[a], "--devices") && a + 1 < argc) {
      static char list[512];
      snprintf(list, sizeof list, "%s", argv[++a]);
      shard_n = 0;
      for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
        if (shard_n < 16) shard_devs[shard_n++] = tok;
      if (shard_n < 1) { fprintf(stderr, "--devices wants a comma-separated list of devices (CPU:0,CPU:1)\n"); return 2; }
    }
    else if (!strcmp(argv[a], "--batch") && a + 1 < argc) { if (parse_count("--batch", argv[++a], 65536, &batch) < 0) return 2; }
    else if (!strcmp(argv[a], "--lr") && a + 1 < argc) {
      char *end;
      lr_peak = strtod(argv[++a], &end);
      if (*end || !(lr_peak > 0 && lr_peak < 1)) { fprintf(stderr, "--lr must be a number between 0 and 1, not '%s'\n", argv[a]); return 2; }
    }
    else if (!strncmp(argv[a], "--", 2)) { fprintf(stderr, "unknown option '%s' (--distributed, --split N, --devices A,B, --batch N, --lr X, --print-loss, --no-eval)\n", argv[a]); return 2; }
    else if (npos == 0) { if (parse_count("steps", argv[a], 1000000, &steps) < 0) return 2; npos++; }
    else if (npos == 1) { dir = argv[a]; npos++; }
    else { fprintf(stderr, "too many arguments: '%s'\n", argv[a]); return 2; }
  }
  int rank = 0, ranks = 1;
  if (distributed) {
    if (tg_dist_init() < 0) { fprintf(stderr, "--distributed: %s\n", tg_error()); return 1; }
    rank = tg_dist_rank();
    ranks = tg_dist_size();
    if (split > 1) { fprintf(stderr, "--split and --distributed do not go together\n"); return 2; }
  }
  if (shard_n > 1 && (distributed || split > 1)) { fprintf(stderr, "--devices goes with neither --distributed nor --split\n"); return 2; }
  int parts = distributed ? ranks : shard_n > 1 ? shard_n : split;
  if (batch % parts) { fprintf(stderr, "the batch (%d) must split evenly into %d parts\n", batch, parts); return 2; }
  int local = distributed ? batch / ranks : batch;   /* the rows this process draws */
  int part = batch / parts;                          /* the rows of one pass through the model */
  bool two_step = distributed || split > 1;
  int ntrain, ntest, nl, ntl;
  unsigned char *xtr = read_idx(dir, "train-images-idx3-ubyte.gz", &ntrain, 3);
  unsigned char *ytr = read_idx(dir, "train-labels-idx1-ubyte.gz", &nl, 1);
  unsigned char *xte = read_idx(dir, "t10k-images-idx3-ubyte.gz", &ntest, 3);
  unsigned char *yte = read_idx(dir, "t10k-labels-idx1-ubyte.gz", &ntl, 1);
  if (!xtr || !ytr || !xte || !yte || nl != ntrain || ntl != ntest) return 1;
  FILE *con = rank == 0 ? stdout : fopen("/dev/null", "w");   /* rank 0 speaks for all */
  if (!con) con = stdout;
  fprintf(con, "Fashion-MNIST: %d train, %d test images; beautiful_mnist CNN, Adam, batch %d, %d steps", ntrain, ntest, batch, steps);
  if (distributed) fprintf(con, "; %d ranks (%s), %d rows each", ranks, tg_dist_backend(), local);
  if (split > 1) fprintf(con, "; %d parts", split);
  if (shard_n > 1) fprintf(con, "; sharded over %d devices", shard_n);
  fprintf(con, "\n");
  tg_manual_seed(1337);
  srand(1337);
  model m;
  model_init(&m);
  if (distributed)   /* the same seed gives every rank the same weights; make sure */
    for (int i = 0; i < 14; i++)
      if (tg_dist_broadcast_inplace(m.params[i], 0) < 0) { fprintf(stderr, "rank %d: %s\n", rank, tg_error()); return 1; }
  if (shard_n > 1 && model_replicate(&m) < 0) { fprintf(stderr, "--devices: %s\n", tg_error()); return 1; }
  tg_jit *jit = two_step ? NULL : tg_jit_new(train_step, &m);
  tg_jit *jit_grad = two_step ? tg_jit_new(grad_step, &m) : NULL, *jit_apply = two_step ? tg_jit_new(apply_step, &m) : NULL;
  float *acc = NULL;   /* --split: the gradients' sum */
  int64_t nflat = 1;
  for (int i = 0; i < 14; i++) nflat += tg_numel(m.params[i]);
  if (split > 1) acc = malloc(sizeof(float) * (size_t)nflat);
  float *xb = malloc(sizeof(float) * (size_t)local * 784);
  int *yb = malloc(sizeof(int) * (size_t)local);
  double t0 = now(), t_first = 0;
  float loss_v = 0;
  for (int s = 0; s < steps; s++) {
    tg_scope_begin();
    /* every rank draws the whole batch (the same numbers) and keeps its rows */
    for (int i = 0; i < batch; i++) {
      int k = rand() % ntrain, r = i - rank * local;
      if (r < 0 || r >= local) continue;
      normalize(xtr + (size_t)k * 784, xb + (size_t)r * 784, 784);
      yb[r] = ytr[k];
    }
    float lr = learning_rate(s, steps);
    tg_tensor *lrt = tg_from_data(&lr, TG_SHAPE(), TG_F32);
    tg_tensor *loss = NULL;
    int rc = 0;
    if (!two_step) {
      tg_tensor *in[3] = { tg_from_data(xb, TG_SHAPE(batch, 1, 28, 28), TG_F32), tg_from_data(yb, TG_SHAPE(batch), TG_I32), lrt };
      rc = tg_jit_call(jit, in, 3, &loss, 1);
    } else {
      tg_tensor *flat = NULL;
      for (int k = 0; k * part < local && rc == 0; k++) {
        tg_tensor *in[2] = { tg_from_data(xb + (size_t)k * part * 784, TG_SHAPE(part, 1, 28, 28), TG_F32),
                             tg_from_data(yb + (size_t)k * part, TG_SHAPE(part), TG_I32) };
        rc = tg_jit_call(jit_grad, in, 2, &flat, 1);
        if (rc == 0 && split > 1) rc = accumulate(acc, flat, nflat, k, split);
      }
      if (rc == 0 && split > 1) flat = tg_from_data(acc, TG_SHAPE(nflat), TG_F32);
      else if (rc == 0) rc = tg_dist_allreduce_inplace(flat, TG_DIST_MEAN);   /* one flat allreduce per step */
      tg_tensor *in2[2] = { flat, lrt };
      if (rc == 0) rc = tg_jit_call(jit_apply, in2, 2, &loss, 1);
    }
    if (rc < 0) { fprintf(stderr, "\nrank %d, step %d: %s\n", rank, s, tg_error()); return 1; }
    if (print_loss || s % 10 == 0 || s == steps - 1) loss_v = (float)tg_item(loss);
    if (print_loss) fprintf(con, "loss %d %.9g\n", s, loss_v);
    tg_scope_end();
    if (s == 2) t_first = now();   /* from here on the JIT replays */
    double el = now() - t0;
    double rate = s >= 3 ? (s - 2) * (double)batch / (now() - t_first) : (s + 1) * (double)batch / el;
    double eta = (steps - s - 1) * batch / (rate > 0 ? rate : 1);
    int bar = 30 * (s + 1) / steps;
    if (!print_loss) fprintf(con, "\r[%.*s%*s] step %4d/%d  loss %.4f  %7.0f samples/s  ETA %4.0fs ", bar, "==============================", 30 - bar, "", s + 1, steps, loss_v, rate, eta);
    fflush(con);
  }
  double t_end = now(), train_s = t_end - t0;
  /* test accuracy, eval mode (running statistics); rank 0's model */
  int correct = 0;
  float *xt = malloc(sizeof(float) * 1000 * 784);
  for (int b = 0; eval && rank == 0 && b < ntest; b += 1000) {
    tg_scope_begin();
    normalize(xte + (size_t)b * 784, xt, 1000 * 784);
    tg_tensor *xe = tg_from_data(xt, TG_SHAPE(1000, 1, 28, 28), TG_F32);
    if (shard_n > 1) xe = tg_shard(xe, shard_devs, shard_n, 1000 % shard_n ? -1 : 0);   /* beside the replicated weights */
    tg_tensor *pred = tg_argmax(forward(&m, xe, false, false), 1, false);
    int p[1000];
    if (tg_data(pred, p, sizeof p) < 0) { fprintf(stderr, "\neval: %s\n", tg_error()); return 1; }
    for (int i = 0; i < 1000; i++) correct += p[i] == yte[b + i];
    tg_scope_end();
  }
  tg_counters c = tg_get_counters();
  double replay_rate = steps > 3 ? (steps - 3) * (double)batch / (t_end - t_first) : 0;
  fprintf(con, "\ntrained %d steps in %.1f s; test accuracy %.2f%% (%lld kernels compiled, %lld from cache)\n",
          steps, train_s, 100.0 * correct / ntest, (long long)c.kernels_compiled, (long long)c.kernels_cached);
  /* for bench/bench_fmnist.c and bench/bench_dist.c */
  fprintf(con, "result steps=%d samples_per_s=%.1f accuracy=%.4f", steps, replay_rate, (double)correct / ntest);
  if (distributed) fprintf(con, " ranks=%d", ranks);
  fprintf(con, "\n");
  fflush(con);
  if (con != stdout) fclose(con);
  tg_jit_free(jit);
  tg_jit_free(jit_grad);
  tg_jit_free(jit_apply);
  if (distributed && tg_dist_finalize() < 0) { fprintf(stderr, "rank %d: %s\n", rank, tg_error()); return 1; }
  free(acc); free(xb); free(yb); free(xt); free(xtr); free(ytr); free(xte); free(yte);
  return 0;
}
