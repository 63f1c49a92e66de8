/* bench_elementwise.c: memory-bound kernels, tg against a hand-written loop.
 *
 *   fused_elementwise  c = (a+b)*2-0.5 over 16M float32, a fresh output
 *                      tensor every repetition (what `c = ...; realize(c)`
 *                      costs, including the first touch of new memory)
 *   fused_inplace      the same expression assigned into an existing tensor
 *                      (tg_assign): the kernel alone, as the loop runs
 *   sum_N              sum of N float32 to one scalar
 *
 * tg's time is the kernel time from tg_get_counters() (launch to return; no
 * scheduling, compiling or allocation). The loops are compiled in this file
 * with the bench flags (-O3 -march=native); the ratio compares against the
 * single-threaded loop because tg runs kernels on one thread for now, and the
 * OpenMP loop (all cores) is printed for information.
 *
 * Every repetition builds the lazy expression anew, so every repetition
 * really runs the kernel; the compiled kernel is cached, so only the first
 * build compiles. The best of BENCH_REPS repetitions counts. */
#include <stdint.h>
#include <string.h>
#include "bench.h"

#define N_ELEMWISE (16 << 20)

/* ---------------------------------------------------------------- loops */

__attribute__((noinline)) static void loop_fused(const float *restrict a, const float *restrict b, float *restrict c, long n) {
  for (long i = 0; i < n; i++) c[i] = (a[i] + b[i]) * 2.0f - 0.5f;
}
__attribute__((noinline)) static void omp_fused(const float *restrict a, const float *restrict b, float *restrict c, long n) {
#pragma omp parallel for simd schedule(static)
  for (long i = 0; i < n; i++) c[i] = (a[i] + b[i]) * 2.0f - 0.5f;
}
/* The plain loop: one float accumulator, in order (what a naive kernel does). */
__attribute__((noinline)) static float loop_sum(const float *restrict x, long n) {
  float s = 0;
  for (long i = 0; i < n; i++) s += x[i];
  return s;
}
/* 16 partial sums: the compiler vectorizes this (a good hand-written loop). */
__attribute__((noinline)) static float loop_sum16(const float *restrict x, long n) {
  float acc[16] = { 0 };
  long i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 16; j++) acc[j] += x[i + j];
  float s = 0;
  for (int j = 0; j < 16; j++) s += acc[j];
  for (; i < n; i++) s += x[i];
  return s;
}
__attribute__((noinline)) static float omp_sum(const float *restrict x, long n) {
  float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
  for (long i = 0; i < n; i++) s += x[i];
  return s;
}

/* ---------------------------------------------------------------- tg */

typedef struct { double kernel_s, wall_s; int64_t kernels, compiled; } tg_run;

static tg_run counters_diff(tg_counters c0, tg_counters c1, double wall) {
  tg_run r = { c1.kernel_seconds - c0.kernel_seconds, wall, c1.kernels_run - c0.kernels_run,
               c1.kernels_compiled + c1.kernels_cached - c0.kernels_compiled - c0.kernels_cached };
  return r;
}

/* (a+b)*2-0.5 into a fresh tensor; copies the result to out when out != NULL. */
static tg_run tg_fused(tg_tensor *a, tg_tensor *b, float *out, long n, const char *name) {
  tg_scope_begin();
  tg_tensor *c = tg_subs(tg_muls(tg_add(a, b), 2), 0.5);
  tg_counters c0 = tg_get_counters();
  double t0 = bench_now();
  if (tg_realize(c) < 0) bench_fail(name, "tg_realize failed");
  double wall = bench_now() - t0;
  tg_run r = counters_diff(c0, tg_get_counters(), wall);
  if (out && tg_data(c, out, (size_t)n * sizeof(float)) < 0) bench_fail(name, "tg_data failed");
  tg_scope_end();
  return r;
}

/* dst <- (a+b)*2-0.5 in place. */
static tg_run tg_fused_inplace(tg_tensor *a, tg_tensor *b, tg_tensor *dst, const char *name) {
  tg_scope_begin();
  tg_tensor *v = tg_subs(tg_muls(tg_add(a, b), 2), 0.5);
  if (!tg_assign(dst, v)) bench_fail(name, "tg_assign failed");
  tg_counters c0 = tg_get_counters();
  double t0 = bench_now();
  if (tg_realize(dst) < 0) bench_fail(name, "tg_realize failed");
  double wall = bench_now() - t0;
  tg_run r = counters_diff(c0, tg_get_counters(), wall);
  tg_scope_end();
  return r;
}

static tg_run tg_sum_all(tg_tensor *x, double *value, const char *name) {
  tg_scope_begin();
  tg_tensor *s = tg_sum(x, TG_ALL, false);
  tg_counters c0 = tg_get_counters();
  double t0 = bench_now();
  if (tg_realize(s) < 0) bench_fail(name, "tg_realize failed");
  double wall = bench_now() - t0;
  tg_run r = counters_diff(c0, tg_get_counters(), wall);
  *value = tg_item(s);
  if (*value != *value) bench_fail(name, "tg_item failed");
  tg_scope_end();
  return r;
}

/* ---------------------------------------------------------------- checks */

static void check_equal(const char *name, const float *got, const float *want, long n) {
  for (long i = 0; i < n; i++)
    if (got[i] != want[i]) bench_fail(name, "wrong result at %ld: tg %.9g, loop %.9g", i, got[i], want[i]);
}

/* ---------------------------------------------------------------- cases */

static void bench_fused(int reps) {
  const long n = N_ELEMWISE;
  const double gb = 3.0 * (double)n * sizeof(float) * 1e-9;
  float *ha = bench_alloc_f32((size_t)n), *hb = bench_alloc_f32((size_t)n);
  float *want = bench_alloc_f32((size_t)n), *got = bench_alloc_f32((size_t)n);
  for (long i = 0; i < n; i++) {
    ha[i] = (float)(i % 1000) * 0.001f;
    hb[i] = (float)((i * 7919) % 1013) * -0.01f;
  }

  /* the loops: best of reps */
  double loop_s = 1e30, omp_s = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    loop_fused(ha, hb, want, n);
    double t1 = bench_now();
    omp_fused(ha, hb, got, n);
    double t2 = bench_now();
    if (t1 - t0 < loop_s) loop_s = t1 - t0;
    if (t2 - t1 < omp_s) omp_s = t2 - t1;
  }
  check_equal("fused_elementwise(omp)", got, want, n);

  tg_scope_begin();
  tg_tensor *a = tg_from_data(ha, TG_SHAPE(n), TG_F32);   /* realized: a copy in device memory */
  tg_tensor *b = tg_from_data(hb, TG_SHAPE(n), TG_F32);
  if (!a || !b) bench_fail("fused_elementwise", "tg_from_data failed");

  /* a fresh output tensor per repetition; the first run compiles */
  memset(got, 0, (size_t)n * sizeof(float));
  tg_run first = tg_fused(a, b, got, n, "fused_elementwise");
  check_equal("fused_elementwise", got, want, n);
  tg_run best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r < reps; r++) {
    tg_run x = tg_fused(a, b, NULL, n, "fused_elementwise");
    compiles += x.compiled;
    if (x.kernel_s < best.kernel_s) best = x;
  }
  if (best.kernel_s <= 0) bench_fail("fused_elementwise", "no kernel time recorded (is TG_DEVICE=NULL set?)");
  printf("bench fused_elementwise n=%ld kernels=%lld first_ms=%.1f tg_ms=%.2f tg_wall_ms=%.2f tg_gbs=%.2f "
         "loop_ms=%.2f loop_gbs=%.2f omp_ms=%.2f omp_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         n, (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3, best.wall_s * 1e3, gb / best.kernel_s,
         loop_s * 1e3, gb / loop_s, omp_s * 1e3, gb / omp_s, (long long)compiles, loop_s / best.kernel_s);
  fflush(stdout);

  /* in place: the output buffer exists (and is touched) before timing */
  tg_tensor *dst = tg_zeros(TG_SHAPE(n), TG_F32);
  if (!dst || tg_realize(dst) < 0) bench_fail("fused_inplace", "tg_zeros failed");
  best = (tg_run){ 1e30, 1e30, 0, 0 };
  for (int r = 0; r < reps + 1; r++) {
    tg_run x = tg_fused_inplace(a, b, dst, "fused_inplace");
    if (x.kernel_s < best.kernel_s) best = x;
  }
  memset(got, 0, (size_t)n * sizeof(float));
  if (tg_data(dst, got, (size_t)n * sizeof(float)) < 0) bench_fail("fused_inplace", "tg_data failed");
  check_equal("fused_inplace", got, want, n);
  printf("bench fused_inplace n=%ld kernels=%lld tg_ms=%.2f tg_wall_ms=%.2f tg_gbs=%.2f loop_ms=%.2f loop_gbs=%.2f "
         "omp_gbs=%.2f ratio=%.3f\n",
         n, (long long)best.kernels, best.kernel_s * 1e3, best.wall_s * 1e3, gb / best.kernel_s, loop_s * 1e3,
         gb / loop_s, gb / omp_s, loop_s / best.kernel_s);
  fflush(stdout);
  tg_scope_end();
  free(ha); free(hb); free(want); free(got);
}

static void bench_sum(long n, int reps) {
  char name[32];
  snprintf(name, sizeof name, "sum_%ldM", n >> 20);
  const double gb = (double)n * sizeof(float) * 1e-9;
  float *hx = bench_alloc_f32((size_t)n);
  /* Small integers (mean 1/8 plus a pseudo-random -1/0/+1): every partial sum
   * in any order stays an integer below 2^24, so every correct float sum is
   * exact and equal to the int64 reference. */
  int64_t want = 0;
  for (long i = 0; i < n; i++) {
    int v = ((i & 7) == 0) + (int)(((uint32_t)i * 2654435761u) >> 30) % 3 - 1;
    hx[i] = (float)v;
    want += v;
  }
  double loop_s = 1e30, vec_s = 1e30, omp_s = 1e30;
  float lv = 0, vv = 0, ov = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = bench_now();
    lv = loop_sum(hx, n);
    double t1 = bench_now();
    vv = loop_sum16(hx, n);
    double t2 = bench_now();
    ov = omp_sum(hx, n);
    double t3 = bench_now();
    if (t1 - t0 < loop_s) loop_s = t1 - t0;
    if (t2 - t1 < vec_s) vec_s = t2 - t1;
    if (t3 - t2 < omp_s) omp_s = t3 - t2;
  }
  if (lv != (float)want || vv != (float)want || ov != (float)want)
    bench_fail(name, "reference loops disagree: %g %g %g, want %lld", lv, vv, ov, (long long)want);

  tg_scope_begin();
  tg_tensor *x = tg_from_data(hx, TG_SHAPE(n), TG_F32);
  if (!x) bench_fail(name, "tg_from_data failed");
  double got = 0;
  tg_run first = tg_sum_all(x, &got, name);
  if (got != (double)want) bench_fail(name, "wrong sum: tg %.9g, want %lld", got, (long long)want);
  tg_run best = { 1e30, 1e30, 0, 0 };
  for (int r = 0; r < reps; r++) {
    tg_run t = tg_sum_all(x, &got, name);
    if (got != (double)want) bench_fail(name, "wrong sum: tg %.9g, want %lld", got, (long long)want);
    if (t.kernel_s < best.kernel_s) best = t;
  }
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  tg_scope_end();
  printf("bench %s n=%ld kernels=%lld first_ms=%.1f tg_ms=%.2f tg_gbs=%.2f loop_ms=%.2f loop_gbs=%.2f "
         "loop16_gbs=%.2f omp_gbs=%.2f ratio=%.3f\n",
         name, n, (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3, gb / best.kernel_s, loop_s * 1e3,
         gb / loop_s, gb / vec_s, gb / omp_s, loop_s / best.kernel_s);
  fflush(stdout);
  free(hx);
}

int main(void) {
  int reps = bench_reps(10);
  bench_fused(reps);
  bench_sum(16L << 20, reps);
  bench_sum(64L << 20, reps > 5 ? 5 : reps);
  return 0;
}
