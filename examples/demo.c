/* demo.c: a tour of tg in one small program (`make demo` runs it).
 *
 * A tiny 2-layer MLP classifies 4 inputs into 3 classes:
 *   probs = softmax(relu(x @ w1 + b1) @ w2 + b2)
 * Everything is lazy until the data is asked for; then tg schedules the graph
 * into a few fused kernels, writes them as C, compiles them (once: they are
 * cached on disk) and runs them. Try:
 *   DEBUG=2 ./build/examples/demo    one line per kernel run
 *   DEBUG=4 ./build/examples/demo    and the generated C source */
#include <math.h>
#include <stdio.h>
#include "tg.h"

#define BATCH 4
#define IN 8
#define HIDDEN 16
#define CLASSES 3

/* Random weights: normal, scaled by 1/sqrt(fan_in). tg_randn is lazy too:
 * the numbers are computed (threefry2x32) inside the kernels that use them. */
static tg_tensor *weights(int64_t fan_in, int64_t fan_out) {
  return tg_muls(tg_randn(TG_SHAPE(fan_in, fan_out), TG_F32), 1.0 / sqrt((double)fan_in));
}

static void print_matrix(const char *name, const float *v, int rows, int cols) {
  printf("%s =\n", name);
  for (int r = 0; r < rows; r++) {
    printf("  [");
    for (int c = 0; c < cols; c++) printf("%s%7.4f", c ? ", " : "", v[r * cols + c]);
    printf("]\n");
  }
}

int main(void) {
  printf("tg demo on device %s\n\n", tg_default_device());
  tg_scope_begin();   /* every tensor below belongs to this scope */

  /* ---- inputs: 4 samples of 8 features, copied from a C array */
  float xs[BATCH][IN];
  for (int i = 0; i < BATCH; i++)
    for (int j = 0; j < IN; j++) xs[i][j] = (float)((i * 5 + j * 3 + i * j) % 7 - 3) / 2.0f;
  tg_tensor *x = tg_from_data(xs, TG_SHAPE(BATCH, IN), TG_F32);

  /* ---- the model (the seed makes every run print the same numbers) */
  tg_manual_seed(10);
  tg_tensor *w1 = weights(IN, HIDDEN);
  tg_tensor *b1 = tg_full(TG_SHAPE(HIDDEN), 0.1, TG_F32);
  tg_tensor *w2 = weights(HIDDEN, CLASSES);
  tg_tensor *b2 = tg_zeros(TG_SHAPE(CLASSES), TG_F32);

  /* ---- the forward pass: builds a graph, runs nothing yet */
  tg_tensor *h = tg_relu(tg_add(tg_matmul(x, w1), b1));        /* (4, 16) */
  tg_tensor *logits = tg_add(tg_matmul(h, w2), b2);            /* (4, 3) */
  tg_tensor *probs = tg_softmax(logits, -1);                   /* rows sum to 1 */
  tg_tensor *pred = tg_argmax(probs, -1, false);               /* (4,) int32 */
  if (!pred) {   /* ops given NULL return NULL: one check covers the block */
    fprintf(stderr, "building the model failed: %s\n", tg_error());
    return 1;
  }
  tg_shape ps = tg_shape_of(probs);
  printf("probs: shape (%lld, %lld), dtype %s; kernels run so far: %lld (lazy)\n", (long long)ps.d[0],
         (long long)ps.d[1], tg_dtype_name(tg_dtype_of(probs)), (long long)tg_get_counters().kernels_run);

  /* ---- realize both outputs in one schedule, then read them */
  tg_tensor *outs[] = { probs, pred };
  float p[BATCH][CLASSES] = { { 0 } };   /* TG_DEVICE=NULL runs nothing: these stay 0 */
  int32_t cls[BATCH] = { 0 };
  if (tg_realize_all(outs, 2) < 0 || tg_data(probs, p, sizeof p) < 0 || tg_data(pred, cls, sizeof cls) < 0) {
    fprintf(stderr, "running the model failed: %s\n", tg_error());
    return 1;
  }
  print_matrix("softmax(logits)", &p[0][0], BATCH, CLASSES);
  printf("argmax = [%d, %d, %d, %d]\n", cls[0], cls[1], cls[2], cls[3]);

  /* ---- a scalar: tg_item computes and returns one value */
  double total = tg_item(tg_sum(probs, TG_ALL, false));
  printf("sum of all probabilities = %.4f (expect %d)\n", total, BATCH);

  /* ---- what ran */
  tg_counters c = tg_get_counters();
  printf("\nkernels run: %lld, compiled: %lld, from the cache: %lld, schedules: %lld, kernel time: %.3f ms\n",
         (long long)c.kernels_run, (long long)c.kernels_compiled, (long long)c.kernels_cached,
         (long long)c.schedules, c.kernel_seconds * 1e3);
  if (c.kernels_compiled) printf("(run it again: the kernels then come from the on-disk cache)\n");

  /* ---- errors never abort: a bad broadcast returns NULL and says why */
  tg_tensor *bad = tg_add(probs, tg_ones(TG_SHAPE(BATCH), TG_F32));   /* (4,3) + (4,) */
  printf("\n(4,3) + (4,) -> %s\n  tg_error(): %s\n", bad ? "a tensor?!" : "NULL", tg_error());
  tg_tensor *after = tg_sum(tg_exp(bad), TG_ALL, false);              /* NULL flows through */
  printf("ops on NULL give NULL: %s\n", after ? "no?!" : "yes");
  tg_clear_error();

  tg_scope_end();   /* frees every tensor made since tg_scope_begin */
  return 0;
}
