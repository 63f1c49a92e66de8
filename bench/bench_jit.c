/* bench_jit.c: JIT replay overhead per kernel. A step of 100 tiny kernels
 * (each x = contiguous(x + 1) on 16 floats) is replayed by tg_jit_call and
 * compared with launching the same compiled kernels directly through the
 * runtime (device launch in a loop). ratio = direct us/kernel / jit us/kernel.
 * On the default device (TG_DEVICE=CUDA: the replay's batches are CUDA
 * graphs); a device that queues launches is waited for inside the timing. */
#include <stdio.h>
#include <time.h>
#include "tg.h"
#include "engine/linear.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

enum { KERNELS = 100, N = 16, REPS = 2000 };

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void wait_for(tg_device *d) { if (d && d->synchronize) d->synchronize(d); }

static int step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  tg_tensor *x = in[0];
  for (int i = 0; i < KERNELS - 1; i++) x = tg_contiguous(tg_adds(x, 1));
  out[0] = tg_adds(x, 1);
  return 0;
}

int main(void) {
  float x0[N] = { 0 };
  tg_jit *j = tg_jit_new(step, NULL);
  tg_tensor *in = tg_from_data(x0, TG_SHAPE(N), TG_F32), *out = NULL;
  for (int i = 0; i < 3; i++) if (tg_jit_call(j, &in, 1, &out, 1) < 0) { fprintf(stderr, "bench jit: %s\n", tg_error()); return 1; }
  float got[N];
  tg_data(out, got, sizeof got);
  if (got[0] != KERNELS) { fprintf(stderr, "bench FAIL jit_replay: got %g want %d\n", got[0], KERNELS); return 1; }
  int nk = tg_jit_stats(j).kernels;
  tg_device *dev = device_get(tg_default_device());
  double best_jit = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < REPS / 5; i++) {
      tg_scope_begin();
      tg_jit_call(j, &in, 1, &out, 1);
      tg_scope_end();
    }
    wait_for(dev);
    double dt = (now() - t0) / (REPS / 5) / nk;
    if (dt < best_jit) best_jit = dt;
  }
  /* the same kernels, launched directly */
  kernel_capture cap = { 0 };
  engine_capture_begin(&cap);
  tg_tensor *o2 = NULL;
  step(NULL, &in, 1, &o2, 1);
  tg_realize(o2);
  engine_capture_end();
  double best_direct = 1e9;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int i = 0; i < REPS / 5; i++)
      for (int k = 0; k < cap.l.n; k++) {
        void *ptrs[8];
        for (int a = 0; a < cap.l.v[k].nbufs && a < 8; a++) ptrs[a] = cap.l.v[k].bufs[a]->ptr;
        cap.l.v[k].dev->launch(cap.l.v[k].dev, cap.l.v[k].prog, ptrs, cap.l.v[k].nbufs, NULL, 0);
      }
    wait_for(dev);
    double dt = (now() - t0) / (REPS / 5) / (cap.l.n ? cap.l.n : 1);
    if (dt < best_direct) best_direct = dt;
  }
  printf("bench jit_replay dev=%s kernels=%d jit_us_per_kernel=%.3f direct_us_per_kernel=%.3f overhead_us=%.3f ratio=%.3f\n",
         dev ? dev->name : "?", nk, best_jit * 1e6, best_direct * 1e6, (best_jit - best_direct) * 1e6, best_direct / best_jit);
  kernel_capture_free(&cap);
  tg_jit_free(j);
  return 0;
}
