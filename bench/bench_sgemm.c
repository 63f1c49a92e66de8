/* bench_sgemm.c: float32 matrix multiply, tg_matmul against a naive loop.
 *
 *   sgemm_N  C = A @ B with N x N float32 matrices (N = 512, 1024)
 *
 * The reference is the naive i-k-j triple loop compiled in this file with the
 * bench flags (-O3 -march=native: the inner j loop vectorizes). tg's time is
 * the kernel time from tg_get_counters(); the best of BENCH_REPS repetitions
 * (default 3 at 512, 1 at 1024; the loop runs at least 3 times) counts, each
 * building the lazy matmul anew (the kernel compiles once).
 * ratio = tg GFLOPS / loop GFLOPS, with 2*N^3 flops.
 *
 * The inputs are multiples of 1/8 in [-1, 1], so every product and partial
 * sum is exact in float32: any correct summation order gives the same bits,
 * and the check is exact equality. */
#include <string.h>
#include "bench.h"

__attribute__((noinline)) static void loop_matmul(const float *restrict a, const float *restrict b, float *restrict c, long n) {
  for (long i = 0; i < n; i++) {
    float *restrict ci = c + i * n;
    for (long j = 0; j < n; j++) ci[j] = 0;
    for (long k = 0; k < n; k++) {
      float aik = a[i * n + k];
      const float *restrict bk = b + k * n;
      for (long j = 0; j < n; j++) ci[j] += aik * bk[j];
    }
  }
}

static void bench_sgemm(long n, int reps) {
  char name[32];
  snprintf(name, sizeof name, "sgemm_%ld", n);
  const double gflop = 2.0 * (double)n * (double)n * (double)n * 1e-9;
  float *ha = bench_alloc_f32((size_t)(n * n)), *hb = bench_alloc_f32((size_t)(n * n));
  float *want = bench_alloc_f32((size_t)(n * n)), *got = bench_alloc_f32((size_t)(n * n));
  for (long i = 0; i < n * n; i++) {
    ha[i] = (float)((i * 37 + 11) % 17 - 8) / 8.0f;
    hb[i] = (float)((i * 53 + 5) % 17 - 8) / 8.0f;
  }

  double loop_s = 1e30;
  for (int r = 0; r < (reps < 3 ? 3 : reps); r++) {
    double t0 = bench_now();
    loop_matmul(ha, hb, want, n);
    double dt = bench_now() - t0;
    if (dt < loop_s) loop_s = dt;
  }

  tg_scope_begin();
  tg_tensor *a = tg_from_data(ha, TG_SHAPE(n, n), TG_F32);
  tg_tensor *b = tg_from_data(hb, TG_SHAPE(n, n), TG_F32);
  if (!a || !b) bench_fail(name, "tg_from_data failed");
  double tg_s = 1e30, first_s = 0;
  int64_t kernels = 0;
  for (int r = 0; r < reps; r++) {   /* the first run also compiles (not in its kernel time) */
    tg_scope_begin();
    tg_tensor *c = tg_matmul(a, b);
    tg_counters c0 = tg_get_counters();
    double t0 = bench_now();
    if (tg_realize(c) < 0) bench_fail(name, "tg_realize failed");
    double wall = bench_now() - t0;
    tg_counters c1 = tg_get_counters();
    double dt = c1.kernel_seconds - c0.kernel_seconds;
    if (r == 0) {
      first_s = wall;
      memset(got, 0, (size_t)(n * n) * sizeof(float));
      if (tg_data(c, got, (size_t)(n * n) * sizeof(float)) < 0) bench_fail(name, "tg_data failed");
      for (long i = 0; i < n * n; i++)
        if (got[i] != want[i])
          bench_fail(name, "wrong result at (%ld, %ld): tg %.9g, loop %.9g", i / n, i % n, got[i], want[i]);
    }
    if (dt < tg_s) {
      tg_s = dt;
      kernels = c1.kernels_run - c0.kernels_run;
    }
    tg_scope_end();
  }
  tg_scope_end();
  if (tg_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  printf("bench %s n=%ld kernels=%lld first_ms=%.1f tg_ms=%.2f tg_gflops=%.2f loop_ms=%.2f loop_gflops=%.2f ratio=%.3f\n",
         name, n, (long long)kernels, first_s * 1e3, tg_s * 1e3, gflop / tg_s, loop_s * 1e3, gflop / loop_s, loop_s / tg_s);
  fflush(stdout);
  free(ha); free(hb); free(want); free(got);
}

int main(void) {
  /* tg's 1024 kernel is still a naive loop (seconds per run): one run there
   * unless BENCH_REPS asks for more */
  const char *e = getenv("BENCH_REPS");
  bench_sgemm(512, bench_reps(3));
  bench_sgemm(1024, e && *e ? bench_reps(1) : 1);
  return 0;
}
