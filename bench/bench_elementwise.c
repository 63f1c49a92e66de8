/* bench_elementwise.c: memory-bound kernels, tg against hand-written OpenMP
 * loops (all cores, like tg's thread pool).
 *
 *   fused_elementwise  c = (a+b)*2-0.5 over 16M float32, a fresh output
 *                      tensor every repetition (what `c = ...; realize(c)`
 *                      costs, including the first touch of new memory unless
 *                      tg's allocator reuses a freed buffer), against the
 *                      OpenMP loop writing memory it touched before (the
 *                      strict comparison); the loop writing a freshly
 *                      malloc'd buffer (paying its page faults) is printed
 *                      as omp_fresh_gbs
 *   fused_inplace      the same expression assigned into an existing tensor
 *                      (tg_assign), against the same loop: the kernel alone
 *   sum_N              sum of N float32 to one scalar (16M, 64M)
 *
 * tg's time is the kernel time from tg_get_counters() (launch to return; no
 * scheduling, compiling or allocation). The loops are compiled in this file
 * with the bench flags (-O3 -march=native -fopenmp). ratio = tg GB/s / OpenMP
 * loop GB/s; the single-threaded loop is printed for information.
 *
 * Every repetition builds the lazy expression anew, so every repetition
 * really runs the kernel; the compiled kernel is cached, so only the first
 * build compiles (that first run is the warm-up and is not counted). The best
 * of BENCH_REPS repetitions counts. */
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
/* The plain loop: one float accumulator, in order. */
__attribute__((noinline)) static float loop_sum(const float *restrict x, long n) {
  float s = 0;
  for (long i = 0; i < n; i++) s += x[i];
  return s;
}
__attribute__((noinline)) static float omp_sum(const float *restrict x, long n) {
  float s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
  for (long i = 0; i < n; i++) s += x[i];
  return s;
}

/* ---------------------------------------------------------------- checks */

static void check_equal(const char *name, const float *got, const float *want, long n) {
  for (long i = 0; i < n; i++)
    if (got[i] != want[i]) bench_fail(name, "wrong result at %ld: tg %.9g, loop %.9g", i, got[i], want[i]);
}

/* ---------------------------------------------------------------- cases */

/* One repetition of the references: the single-threaded loop, the OpenMP loop
 * into touched memory and the OpenMP loop into fresh memory (best kept). */
static void fused_refs(const float *ha, const float *hb, float *want, float *ref, long n, double *loop_s, double *omp_s,
                       double *fresh_s) {
  double t0 = bench_now();
  loop_fused(ha, hb, want, n);
  double t1 = bench_now();
  omp_fused(ha, hb, ref, n);
  double t2 = bench_now();
  if (t1 - t0 < *loop_s) *loop_s = t1 - t0;
  if (t2 - t1 < *omp_s) *omp_s = t2 - t1;
  float *fresh = malloc((size_t)n * sizeof(float));   /* large: a fresh mmap, untouched */
  if (!fresh) bench_fail("fused_elementwise", "out of memory");
  double t3 = bench_now();
  omp_fused(ha, hb, fresh, n);
  double t4 = bench_now();
  if (t4 - t3 < *fresh_s) *fresh_s = t4 - t3;
  if (fresh[n - 1] != want[n - 1]) bench_fail("fused_elementwise", "OpenMP loop into fresh memory disagrees");
  free(fresh);
  bench_settle(0.002);   /* OpenMP workers stop spinning */
}

static void bench_fused(int reps) {
  const long n = N_ELEMWISE;
  const size_t nb = (size_t)n * sizeof(float);
  const double gb = 3.0 * (double)nb * 1e-9;
  float *ha = bench_alloc_f32((size_t)n), *hb = bench_alloc_f32((size_t)n);
  float *want = bench_alloc_f32((size_t)n), *ref = bench_alloc_f32((size_t)n), *got = bench_alloc_f32((size_t)n);
  for (long i = 0; i < n; i++) {
    ha[i] = (float)(i % 1000) * 0.001f;
    hb[i] = (float)((i * 7919) % 1013) * -0.01f;
  }

  tg_scope_begin();
  tg_tensor *a = tg_from_data(ha, TG_SHAPE(n), TG_F32);   /* realized: a copy in device memory */
  tg_tensor *b = tg_from_data(hb, TG_SHAPE(n), TG_F32);
  if (!a || !b) bench_fail("fused_elementwise", "tg_from_data failed");

  /* References and tg take turns (the machine's load varies); repetition 0
   * is the warm-up (tg compiles) and is checked, not counted. A fresh output
   * tensor per repetition. */
  double loop_s = 1e30, omp_s = 1e30, fresh_s = 1e30, d = 1e30;
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {
    fused_refs(ha, hb, want, ref, n, r ? &loop_s : &d, r ? &omp_s : &d, r ? &fresh_s : &d);
    tg_scope_begin();
    tg_tensor *c = tg_subs(tg_muls(tg_add(a, b), 2), 0.5);
    bench_tg_run x = bench_tg_realize(c, "fused_elementwise");
    if (r == 0) {
      first = x;
      check_equal("fused_elementwise(omp)", ref, want, n);
      memset(got, 0, nb);
      if (tg_data(c, got, nb) < 0) bench_fail("fused_elementwise", "tg_data failed");
      check_equal("fused_elementwise", got, want, n);
    } else {
      compiles += x.compiled;
      if (x.kernel_s < best.kernel_s) best = x;
    }
    tg_scope_end();
  }
  if (best.kernel_s <= 0) bench_fail("fused_elementwise", "no kernel time recorded (is TG_DEVICE=NULL set?)");
  printf("bench fused_elementwise n=%ld opts=%s kernels=%lld first_ms=%.1f tg_ms=%.2f tg_wall_ms=%.2f tg_gbs=%.2f "
         "omp_fresh_ms=%.2f omp_fresh_gbs=%.2f omp_gbs=%.2f loop_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         n, bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3, best.wall_s * 1e3,
         gb / best.kernel_s, fresh_s * 1e3, gb / fresh_s, gb / omp_s, gb / loop_s, (long long)compiles,
         omp_s / best.kernel_s);
  fflush(stdout);

  /* in place: the output buffer exists (and is touched) before timing */
  tg_tensor *dst = tg_zeros(TG_SHAPE(n), TG_F32);
  if (!dst || tg_realize(dst) < 0) bench_fail("fused_inplace", "tg_zeros failed");
  best = (bench_tg_run){ 1e30, 1e30, 0, 0 };
  compiles = 0;
  for (int r = 0; r <= reps; r++) {
    fused_refs(ha, hb, want, ref, n, &loop_s, &omp_s, &fresh_s);
    tg_scope_begin();
    tg_tensor *v = tg_subs(tg_muls(tg_add(a, b), 2), 0.5);
    if (!tg_assign(dst, v)) bench_fail("fused_inplace", "tg_assign failed");
    bench_tg_run x = bench_tg_realize(dst, "fused_inplace");
    if (r == 0) first = x;
    else {
      compiles += x.compiled;
      if (x.kernel_s < best.kernel_s) best = x;
    }
    tg_scope_end();
  }
  memset(got, 0, nb);
  if (tg_data(dst, got, nb) < 0) bench_fail("fused_inplace", "tg_data failed");
  check_equal("fused_inplace", got, want, n);
  printf("bench fused_inplace n=%ld opts=%s kernels=%lld first_ms=%.1f tg_ms=%.2f tg_wall_ms=%.2f tg_gbs=%.2f "
         "omp_ms=%.2f omp_gbs=%.2f loop_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         n, bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3, best.wall_s * 1e3,
         gb / best.kernel_s, omp_s * 1e3, gb / omp_s, gb / loop_s, (long long)compiles, omp_s / best.kernel_s);
  fflush(stdout);
  tg_scope_end();
  free(ha); free(hb); free(want); free(ref); free(got);
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

  tg_scope_begin();
  tg_tensor *x = tg_from_data(hx, TG_SHAPE(n), TG_F32);
  if (!x) bench_fail(name, "tg_from_data failed");
  double loop_s = 1e30, omp_s = 1e30;
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {   /* repetition 0 warms up */
    double t0 = bench_now();
    float lv = loop_sum(hx, n);
    double t1 = bench_now();
    float ov = omp_sum(hx, n);
    double t2 = bench_now();
    if (lv != (float)want || ov != (float)want)
      bench_fail(name, "reference loops disagree: %g %g, want %lld", lv, ov, (long long)want);
    if (r && t1 - t0 < loop_s) loop_s = t1 - t0;
    if (r && t2 - t1 < omp_s) omp_s = t2 - t1;
    bench_settle(0.002);
    tg_scope_begin();
    tg_tensor *s = tg_sum(x, TG_ALL, false);
    bench_tg_run t = bench_tg_realize(s, name);
    double got = tg_item(s);
    if (got != (double)want) bench_fail(name, "wrong sum: tg %.9g, want %lld", got, (long long)want);
    if (r == 0) first = t;
    else {
      compiles += t.compiled;
      if (t.kernel_s < best.kernel_s) best = t;
    }
    tg_scope_end();
  }
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  tg_scope_end();
  printf("bench %s n=%ld opts=%s kernels=%lld first_ms=%.1f tg_ms=%.2f tg_gbs=%.2f omp_ms=%.2f omp_gbs=%.2f "
         "loop_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         name, n, bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3,
         gb / best.kernel_s, omp_s * 1e3, gb / omp_s, gb / loop_s, (long long)compiles, omp_s / best.kernel_s);
  fflush(stdout);
  free(hx);
}

/* fused_elementwise_DEV: the same expression on a GPU or OpenCL device,
 * against a plain copy kernel on that device (c = a, as tg's own copy):
 * ratio = fused GB/s / copy GB/s. Checked against the loop bit for bit. */
static void bench_fused_device(const char *dev, int reps) {
  char name[96];
  snprintf(name, sizeof name, "fused_elementwise_%.31s", dev);
  const long n = N_ELEMWISE;
  const size_t nb = (size_t)n * sizeof(float);
  float *ha = bench_alloc_f32((size_t)n), *hb = bench_alloc_f32((size_t)n), *want = bench_alloc_f32((size_t)n), *got = bench_alloc_f32((size_t)n);
  for (long i = 0; i < n; i++) { ha[i] = (float)(i % 1000) * 0.001f; hb[i] = (float)((i * 7919) % 1013) * -0.01f; }
  loop_fused(ha, hb, want, n);
  tg_scope_begin();
  tg_tensor *a = tg_to(tg_from_data(ha, TG_SHAPE(n), TG_F32), dev), *b = tg_to(tg_from_data(hb, TG_SHAPE(n), TG_F32), dev);
  if (!a || !b || tg_realize(a) < 0 || tg_realize(b) < 0) bench_fail(name, "%s", tg_error());
  tg_tensor *dst = tg_to(tg_zeros(TG_SHAPE(n), TG_F32), dev);
  if (!dst || tg_realize(dst) < 0) bench_fail(name, "%s", tg_error());
  bench_tg_run best = { 1e30, 1e30, 0, 0 }, copy = { 1e30, 1e30, 0, 0 };
  for (int r = 0; r <= reps; r++) {
    tg_scope_begin();
    tg_tensor *c = tg_subs(tg_muls(tg_add(a, b), 2), 0.5);
    bench_tg_run x = bench_tg_realize(c, name);
    if (r == 0) {
      if (tg_data(c, got, nb) < 0) bench_fail(name, "tg_data: %s", tg_error());
      check_equal(name, got, want, n);
    } else if (x.kernel_s < best.kernel_s) best = x;
    if (!tg_assign(dst, a)) bench_fail(name, "tg_assign: %s", tg_error());
    bench_tg_run y = bench_tg_realize(dst, name);
    if (r && y.kernel_s < copy.kernel_s) copy = y;
    tg_scope_end();
  }
  tg_scope_end();
  double gb = 3.0 * (double)nb * 1e-9, gbc = 2.0 * (double)nb * 1e-9;
  printf("bench %s n=%ld device=%s correct=1 tg_ms=%.3f tg_gbs=%.2f copy_gbs=%.2f ratio=%.3f\n", name, n, dev, best.kernel_s * 1e3,
         gb / best.kernel_s, copy.kernel_s > 0 && copy.kernel_s < 1e29 ? gbc / copy.kernel_s : 0,
         copy.kernel_s > 0 && copy.kernel_s < 1e29 ? (gb / best.kernel_s) / (gbc / copy.kernel_s) : 0);
  fflush(stdout);
  free(ha); free(hb); free(want); free(got);
}

int main(void) {
  int reps = bench_reps(10);
  char devs[8][32];
  int ndev = bench_gpu_devices("fused_elementwise", devs, 8);
  setenv("TG_KERNEL_TIMES", "1", 1);   /* queued launches timed one by one, into the counters */
  for (int i = 0; i < ndev; i++) bench_fused_device(devs[i], reps < 5 ? reps : 5);
  unsetenv("TG_KERNEL_TIMES");
  if (bench_devices_only()) return 0;
  bench_fused(reps);
  bench_sum(16L << 20, reps);
  bench_sum(64L << 20, reps > 5 ? 5 : reps);
  return 0;
}
