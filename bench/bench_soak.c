/* bench_soak.c: resident memory over a long run of a JIT'd training step
 * (docs/security.md, "Leaks"). A two-layer MLP on 64 x 256 inputs with an
 * SGD update of both weights (tg_assign in place), fed new inputs from the
 * host every step as a training loop is, replayed SOAK_STEPS times (default
 * 10000). Resident memory (VmRSS) is read after the warm-up (10% of the
 * steps) and at the end:
 *
 *   bench soak_jit steps=N rss_warm_kb=A rss_end_kb=B growth_pct=G ratio=A/B
 *
 * ratio >= 0.95 is flat memory (the bar: growth within 5%); below it the
 * line is followed by "bench FAIL" and the exit status is 1. The loss must
 * also fall (the step computes what it should). */
#include "bench.h"

enum { BATCH = 64, IN = 256, HID = 128, OUT = 10 };

typedef struct { tg_tensor *w1, *w2; } mlp;

static int train_step(void *p, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  mlp *m = p;
  tg_tensor *h = tg_relu(tg_matmul(in[0], m->w1));
  tg_tensor *d = tg_sub(tg_matmul(h, m->w2), in[1]);
  tg_tensor *loss = tg_mean(tg_mul(d, d), TG_ALL, false);
  tg_tensor *g[2] = { NULL, NULL }, *w[2] = { m->w1, m->w2 };
  if (tg_gradient(loss, w, 2, g) < 0) return -1;
  for (int i = 0; i < 2; i++) tg_assign(w[i], tg_sub(w[i], tg_muls(g[i], 0.05)));
  out[0] = loss;
  return 0;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f)) if (!strncmp(line, "VmRSS:", 6)) kb = strtol(line + 6, NULL, 10);
  fclose(f);
  return kb;
}

int main(void) {
  const char *e = getenv("SOAK_STEPS");
  long steps = e ? strtol(e, NULL, 10) : 10000;
  if (steps < 20) steps = 20;
  if (rss_kb() < 0) { bench_skip("soak_jit", "no /proc/self/status"); return 0; }
  float *x = bench_alloc(sizeof(float) * BATCH * IN), *y = bench_alloc(sizeof(float) * BATCH * OUT);
  float *w1 = bench_alloc(sizeof(float) * IN * HID), *w2 = bench_alloc(sizeof(float) * HID * OUT);
  uint64_t s = 12345;
  for (int i = 0; i < IN * HID; i++) { s = s * 6364136223846793005ULL + 1; w1[i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * 0.1f; }
  for (int i = 0; i < HID * OUT; i++) { s = s * 6364136223846793005ULL + 1; w2[i] = ((float)(s >> 40) / (float)(1 << 24) - 0.5f) * 0.1f; }
  mlp m = { tg_from_data(w1, TG_SHAPE(IN, HID), TG_F32), tg_from_data(w2, TG_SHAPE(HID, OUT), TG_F32) };
  tg_jit *j = tg_jit_new(train_step, &m);
  long warm = 0;
  double first_loss = 0, last_loss = 0;
  for (long step = 0; step < steps; step++) {
    /* a fixed target function of the inputs, so the loss can fall */
    for (int i = 0; i < BATCH * IN; i++) x[i] = (float)(((i * 7 + step * 13) % 17) - 8) / 8.0f;
    for (int b = 0; b < BATCH; b++)
      for (int o = 0; o < OUT; o++) y[b * OUT + o] = x[b * IN + o] - 0.5f * x[b * IN + o + OUT];
    tg_scope_begin();
    tg_tensor *in[2] = { tg_from_data(x, TG_SHAPE(BATCH, IN), TG_F32), tg_from_data(y, TG_SHAPE(BATCH, OUT), TG_F32) };
    tg_tensor *loss = NULL;
    if (tg_jit_call(j, in, 2, &loss, 1) < 0) bench_fail("soak_jit", "step %ld", step);
    if (step == 0 || step == steps - 1) {
      float v = 0;
      if (tg_data(loss, &v, sizeof v) < 0) bench_fail("soak_jit", "reading the loss");
      if (step == 0) first_loss = v; else last_loss = v;
    }
    tg_scope_end();
    if (step == steps / 10) warm = rss_kb();
  }
  long end = rss_kb();
  tg_jit_free(j);
  double ratio = end > 0 ? (double)warm / (double)end : 0;
  printf("bench soak_jit steps=%ld rss_warm_kb=%ld rss_end_kb=%ld growth_pct=%.2f loss_first=%.4f loss_last=%.4f ratio=%.3f\n", steps, warm, end,
         100.0 * ((double)end - (double)warm) / (double)warm, first_loss, last_loss, ratio);
  if (!(last_loss < first_loss)) bench_fail("soak_jit", "the loss did not fall (%g -> %g)", first_loss, last_loss);
  if (ratio < 0.95) bench_fail("soak_jit", "resident memory grew by more than 5%% after the warm-up");
  return 0;
}
