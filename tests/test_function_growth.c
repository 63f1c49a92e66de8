/* test_function_growth.c: what a stack of identical transformer blocks
 * costs to build and schedule in its first forward, with each block a
 * tg_function call (issue [2.5] item 1), on the NULL device with the
 * schedule and lowering caches off (so the first forward is one): the
 * kernels optimized and rendered for 24 layers are those of 1 layer,
 * exactly; and the time of the first forward of 24 layers over that of 1
 * layer, measured two ways, best of interleaved rounds (the machine may be
 * shared):
 *   - graph build + schedule (the measure): the function, its
 *     calls and tg_schedule_new (scheduled and compiled, nothing run);
 *   - the same realized (tg_realize: the NULL device's launches and the
 *     memory plan of every kernel too).
 * Both are printed. And the work of each, counted in units that do not
 * depend on the machine's load (util/counters.h): a further call must cost
 * O(its buffer bindings), and 24 layers at most 1.10x one layer's work.
 * See docs/functions.md for the bounds and the figures. */
#include <time.h>
#include "test.h"
#include "engine/realize.h"
#include "util/counters.h"

enum { GT = 32, GDIM = 256, GH = 4, GHD = 64, GHID = 1024, GL = 24 };

static int tblock(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)ctx; (void)nin; (void)nout;
  tg_tensor *x = in[0], *qkv[3];
  tg_tensor *h = tg_layernorm(x, TG_SHAPE(GDIM), NULL, NULL, 1e-5);
  for (int i = 0; i < 3; i++) qkv[i] = tg_permute(tg_reshape(tg_matmul(h, in[1 + i]), TG_SHAPE(GT, GH, GHD)), TG_AXES(1, 0, 2));
  tg_sdpa_opts o = { .is_causal = true };
  tg_tensor *a = tg_reshape(tg_permute(tg_scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], &o), TG_AXES(1, 0, 2)), TG_SHAPE(GT, GDIM));
  x = tg_add(x, tg_matmul(a, in[4]));
  tg_tensor *h2 = tg_layernorm(x, TG_SHAPE(GDIM), NULL, NULL, 1e-5);
  out[0] = tg_add(x, tg_matmul(tg_gelu(tg_matmul(h2, in[5])), in[6]));
  return out[0] ? 0 : -1;
}

static tg_tensor *gw[GL][6], *gx;
/* the process's CPU time: what the work costs, not what other jobs on a
 * shared machine take from it (wall time is printed too) */
static double cpu_s(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }
static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }

/* a first forward of nl layers (a fresh function: its body is built and
 * scheduled here), scheduled only or realized; CPU seconds (wall seconds
 * in *wall), and the programs it needed in *progs */
static double first_forward(int nl, bool run, int64_t *progs, double *wall, int64_t *work) {
  engine_forget_programs();
  tg_counters c0 = tg_get_counters();
  int64_t w0 = counters_work();
  double t0 = now_s(), c = cpu_s();
  tg_function *f = tg_function_new("tblock", tblock, NULL, 7, 1);
  tg_scope_begin();
  tg_tensor *h = gx;
  for (int l = 0; l < nl && h; l++) {
    tg_tensor *in[7] = { h, gw[l][0], gw[l][1], gw[l][2], gw[l][3], gw[l][4], gw[l][5] }, *o = NULL;
    if (tg_function_call(f, in, &o) != 0) o = NULL;
    h = o;
  }
  if (run) CHECK_MSG(h && tg_realize(h) == 0, "%d layers: %s", nl, tg_error());
  else {
    tg_schedule *s = h ? tg_schedule_new(&h, 1) : NULL;
    CHECK_MSG(s, "%d layers: %s", nl, tg_error());
    tg_schedule_free(s);
  }
  tg_scope_end();
  tg_function_free(f);
  double t = cpu_s() - c;
  *wall = now_s() - t0;
  *work = counters_work() - w0;
  tg_counters c1 = tg_get_counters();
  *progs = c1.kernels_rendered + c1.programs_cached - c0.kernels_rendered - c0.programs_cached;
  return t;
}

/* Bounds: a body lowered per layer would be about 20x. What the issue asks
 * (1.10) is checked on the work counted (below), which no load changes;
 * the times are printed, and their checks leave room for a loaded 2-core
 * machine (see docs/functions.md, "First forward"), and more under the
 * sanitizers, whose malloc and free cost most of the per-call work. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GROWTH_SCHEDULE_BOUND 2.0
#define GROWTH_REALIZE_BOUND 2.0
#else
#define GROWTH_SCHEDULE_BOUND 1.25
#define GROWTH_REALIZE_BOUND 1.25
#endif
/* The work bound, load-independent: a call binds 8 buffers (7 inputs, 1
 * output); it may cost at most 4 units of work each (now about 2.4; a call
 * whose linear had an entry per kernel and a buffer per intermediate cost
 * about 7) */
#define GROWTH_BINDINGS 8
#define GROWTH_WORK_PER_BINDING 4

TEST(function_first_forward_growth) {
  char prev_dev[64];
  snprintf(prev_dev, sizeof prev_dev, "%s", tg_default_device());
  if (tg_set_default_device("NULL") != 0) SKIP("no NULL device");
  bool had_s = getenv("TG_NO_SCHEDULE_CACHE"), had_l = getenv("TG_NO_LOWER_CACHE");
  setenv("TG_NO_SCHEDULE_CACHE", "1", 1);
  setenv("TG_NO_LOWER_CACHE", "1", 1);
  gx = tg_zeros(TG_SHAPE(GT, GDIM), TG_F32);
  CHECK(tg_realize(gx) == 0);
  const int64_t sh[6][2] = { { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GDIM }, { GDIM, GHID }, { GHID, GDIM } };
  for (int l = 0; l < GL; l++)
    for (int i = 0; i < 6; i++) { gw[l][i] = tg_zeros(TG_SHAPE(sh[i][0], sh[i][1]), TG_F32); CHECK(tg_realize(gw[l][i]) == 0); }
  double t[2][2] = { { 1e9, 1e9 }, { 1e9, 1e9 } }, w[2][2] = { { 1e9, 1e9 }, { 1e9, 1e9 } };   /* [run][1 layer, 24 layers] */
  int64_t p[2][2] = { { 0 } }, wk[2][2] = { { 0 } };
  for (int r = 0; r < 12; r++)   /* best of 12, interleaved: a few ms each */
    for (int run = 0; run < 2; run++)
      for (int k = 0; k < 2; k++) {
        double wt, ct = first_forward(k ? GL : 1, run, &p[run][k], &wt, &wk[run][k]);
        if (ct < t[run][k]) t[run][k] = ct;
        if (wt < w[run][k]) w[run][k] = wt;
      }
  for (int run = 0; run < 2; run++) {
    CHECK(p[run][0] > 0);
    CHECK_EQ_INT(p[run][1], p[run][0]);   /* the body's kernels, once */
  }
  double gs = t[0][1] / t[0][0], gr = t[1][1] / t[1][0];
  /* the work each further call adds (load-independent, util/counters.h:
   * UOp nodes asked for, rewrite rules tried, buffers, graph nodes the
   * scheduler is given, schedule items, linear entries): bounded by the
   * call's buffer bindings (its 7 inputs and 1 output), not by its body's
   * 16 kernels or 21 buffers. Running adds one launch per kernel, which
   * is not counted. */
  int64_t w1 = wk[0][0], w24 = wk[0][1];
  double per_call = (double)(w24 - w1) / (GL - 1), wg = (double)w24 / (double)w1;
  printf("     work, build + schedule: 1 layer %lld, %d layers %lld (x%.4f), %.1f per further call (%d buffer bindings)\n", (long long)w1, GL,
         (long long)w24, wg, per_call, GROWTH_BINDINGS);
  CHECK_EQ_INT(wk[1][0], w1);   /* realizing builds and schedules the same */
  CHECK_MSG(per_call <= GROWTH_WORK_PER_BINDING * GROWTH_BINDINGS, "a further call costs %.1f units of work, over %d per buffer binding", per_call,
            GROWTH_WORK_PER_BINDING);
  CHECK_MSG(wg <= 1.10, "24 layers took %.3fx one layer's work", wg);
  printf("     first forward, build + schedule: 1 layer %.2f ms, %d layers %.2f ms of CPU (x%.3f; the issue asks <= 1.10), wall x%.3f\n",
         t[0][0] * 1e3, GL, t[0][1] * 1e3, gs, w[0][1] / w[0][0]);
  printf("     first forward, realized: 1 layer %.2f ms, %d layers %.2f ms of CPU (x%.3f), wall x%.3f, %lld programs each\n",
         t[1][0] * 1e3, GL, t[1][1] * 1e3, gr, w[1][1] / w[1][0], (long long)p[1][0]);
  CHECK_MSG(gs < GROWTH_SCHEDULE_BOUND, "24 layers took %.2fx one layer's build + schedule", gs);
  CHECK_MSG(gr < GROWTH_REALIZE_BOUND, "24 layers took %.2fx one layer's first forward", gr);
  if (!had_s) unsetenv("TG_NO_SCHEDULE_CACHE");
  if (!had_l) unsetenv("TG_NO_LOWER_CACHE");
  tg_set_default_device(prev_dev);
}
