/* bench_function.c: what a stack of identical blocks costs to build and
 * schedule, with each block a tg_function call and without. The blocks are
 * pre-norm MLP blocks (x + W2 gelu(W1 layernorm(x))) on the NULL device, so
 * the time is graph building, scheduling and codegen only (no kernels run).
 *
 *   growth: the first forward of 24 layers over that of 1 layer, each with
 *           a fresh function (its body built, scheduled and lowered in that
 *           forward: the schedule and lowering caches off), realized;
 *   growth_sched: the same, graph build + schedule only (tg_schedule_new:
 *           scheduled and compiled, nothing run), the measure, whose
 *           bound is 1.10;
 *   ratio:  a forward of 24 plain layers over a forward of 24 calls, bodies
 *           warm (the steady state of a model run without the JIT). */
#include "bench.h"

enum { ROWS = 32, DIM = 256, HID = 1024, LAYERS = 24 };

static int block(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *h = tg_layernorm(in[0], TG_SHAPE(DIM), NULL, NULL, 1e-5);
  h = tg_gelu(tg_matmul(h, in[1]));
  out[0] = tg_add(in[0], tg_matmul(h, in[2]));
  return out[0] ? 0 : -1;
}

static tg_tensor *w1[LAYERS], *w2[LAYERS];

static bool schedule_only;   /* forward: tg_schedule_new instead of tg_realize */

/* one forward of nl layers through f (inline when NULL), realized (or
 * scheduled only); seconds */
static double forward(tg_function *f, int nl, tg_tensor *x) {
  double t0 = bench_now();
  tg_scope_begin();
  tg_tensor *h = x;
  for (int l = 0; l < nl; l++) {
    tg_tensor *in[3] = { h, w1[l], w2[l] }, *o = NULL;
    if (f ? tg_function_call(f, in, &o) : block(NULL, in, 3, &o, 1)) { fprintf(stderr, "bench FAIL function_layers: %s\n", tg_error()); exit(1); }
    h = o;
  }
  tg_schedule *s = schedule_only ? tg_schedule_new(&h, 1) : NULL;
  if (schedule_only ? !s : tg_realize(h) != 0) { fprintf(stderr, "bench FAIL function_layers: %s\n", tg_error()); exit(1); }
  tg_schedule_free(s);
  tg_scope_end();
  return bench_now() - t0;
}

static double best_of(int reps, double (*run)(int), int arg) {
  double best = 1e9;
  for (int r = 0; r < reps; r++) { double t = run(arg); if (t < best) best = t; }
  return best;
}

static tg_tensor *x0;
static double fresh_fn(int nl) {
  tg_function *f = tg_function_new("block", block, NULL, 3, 1);
  double t = forward(f, nl, x0);
  tg_function_free(f);
  return t;
}
static tg_function *warm;
static double warm_fn(int nl) { return forward(warm, nl, x0); }
static double plain(int nl) { return forward(NULL, nl, x0); }

int main(void) {
  if (tg_set_default_device("NULL") != 0) { printf("bench function_layers skipped reason=no NULL device\n"); return 0; }
  x0 = tg_zeros(TG_SHAPE(ROWS, DIM), TG_F32);
  tg_realize(x0);
  for (int l = 0; l < LAYERS; l++) {
    w1[l] = tg_zeros(TG_SHAPE(DIM, HID), TG_F32); tg_realize(w1[l]);
    w2[l] = tg_zeros(TG_SHAPE(HID, DIM), TG_F32); tg_realize(w2[l]);
  }
  /* warm the kernel caches of both forms */
  fresh_fn(1);
  plain(LAYERS);
  /* a first forward as in a new process: nothing of the body's schedule
   * or lowering found in a cache (its programs may be) */
  setenv("TG_NO_SCHEDULE_CACHE", "1", 1);
  setenv("TG_NO_LOWER_CACHE", "1", 1);
  double f1 = best_of(5, fresh_fn, 1), f24 = best_of(5, fresh_fn, LAYERS);
  schedule_only = true;
  double s1 = best_of(9, fresh_fn, 1), s24 = best_of(9, fresh_fn, LAYERS);
  schedule_only = false;
  unsetenv("TG_NO_SCHEDULE_CACHE");
  unsetenv("TG_NO_LOWER_CACHE");
  warm = tg_function_new("block", block, NULL, 3, 1);
  warm_fn(1);
  double w24 = best_of(5, warm_fn, LAYERS), p24 = best_of(5, plain, LAYERS), p1 = best_of(5, plain, 1);
  tg_function_free(warm);
  printf("bench function_layers layers=%d first_1=%.2fms first_24=%.2fms growth=%.3f sched_1=%.2fms sched_24=%.2fms growth_sched=%.3f "
         "plain_1=%.2fms plain_24=%.2fms calls_24=%.2fms ratio=%.2f\n",
         LAYERS, f1 * 1e3, f24 * 1e3, f24 / f1, s1 * 1e3, s24 * 1e3, s24 / s1, p1 * 1e3, p24 * 1e3, w24 * 1e3, p24 / w24);
  return 0;
}
