/* bench_sgemm.c: float32 matrix multiply, tg_matmul against OpenBLAS and
 * against a hand-written OpenMP loop.
 *
 *   sgemm_N       C = A @ B, N x N float32 (N = 512, 1024, 2048), against
 *                 OpenBLAS's cblas_sgemm on as many threads as tg uses.
 *                 Built only when the Makefile finds OpenBLAS (it then
 *                 defines BENCH_HAVE_OPENBLAS and links -lopenblas); without
 *                 it one line "bench sgemm_openblas skipped reason=..."
 *   sgemm_loop_N  the same against the i-k-j triple loop with OpenMP over the
 *                 rows (the inner j loop vectorizes): always runs
 *
 * ratio = tg GFLOPS / reference GFLOPS, with 2*N^3 flops. tg's time is the
 * kernel time from tg_get_counters(); the reference's is the wall time of
 * its call. Each repetition builds the lazy matmul anew (the kernel compiles
 * once, in the warm-up repetition, which is not counted); tg and the
 * reference take turns and the best of each counts.
 *
 * The inputs are multiples of 1/8 in [-1, 1], so every product and partial
 * sum is exact in float32: any correct summation order (OpenBLAS's blocked
 * FMAs included) gives the same bits, and the check is exact equality.
 *
 * With BEAM=n in the environment tg searches kernel opts (once per kernel,
 * then cached) instead of using its heuristic: names get a _beamN suffix.
 * The search starts from the heuristic's choice, so it takes seconds. */
#include <unistd.h>
#include "bench.h"

#ifdef BENCH_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char *openblas_get_config(void);
char *openblas_get_corename(void);
#endif

__attribute__((noinline)) static void omp_matmul(const float *restrict a, const float *restrict b, float *restrict c, long n) {
#pragma omp parallel for schedule(static)
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

typedef enum { REF_OPENBLAS, REF_LOOP } ref_kind;

#define BACK_TO_BACK 2   /* timed runs in a row per contender and repetition */

static void run_ref(ref_kind kind, const float *a, const float *b, float *c, long n) {
#ifdef BENCH_HAVE_OPENBLAS
  if (kind == REF_OPENBLAS) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, a, (int)n, b, (int)n, 0.0f, c, (int)n);
    return;
  }
#endif
  omp_matmul(a, b, c, n);
}

static void bench_sgemm(ref_kind kind, long n, int reps, int threads) {
  char name[64];
  snprintf(name, sizeof name, "sgemm_%s%ld%s", kind == REF_LOOP ? "loop_" : "", n, bench_name_suffix());
  const double gflop = 2.0 * (double)n * (double)n * (double)n * 1e-9;
  const size_t nn = (size_t)(n * n), nb = nn * sizeof(float);
  float *ha = bench_alloc_f32(nn), *hb = bench_alloc_f32(nn), *want = bench_alloc_f32(nn), *got = bench_alloc_f32(nn);
  for (size_t i = 0; i < nn; i++) {
    ha[i] = bench_eighths(i, 1);
    hb[i] = bench_eighths(i, 2);
  }

  tg_scope_begin();
  tg_tensor *a = tg_from_data(ha, TG_SHAPE(n, n), TG_F32);
  tg_tensor *b = tg_from_data(hb, TG_SHAPE(n, n), TG_F32);
  if (!a || !b) bench_fail(name, "tg_from_data failed");
  double ref_s = 1e30;
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {   /* repetition 0 warms up (tg compiles, or searches with BEAM) */
    /* each contender runs BACK_TO_BACK times in a row and its best run
     * counts: on this kind of VM a core that has slept (bench_settle) reads
     * its caches at half speed for tens of milliseconds, which would
     * otherwise fall on whoever runs right after the settle */
    for (int j = 0; j < (r ? BACK_TO_BACK : 1); j++) {
      tg_scope_begin();
      tg_tensor *c = tg_matmul(a, b);
      bench_tg_run x = bench_tg_realize(c, name);
      if (r == 0) {
        first = x;
        if (tg_data(c, got, nb) < 0) bench_fail(name, "tg_data failed");
      } else {
        compiles += x.compiled;
        if (x.kernel_s < best.kernel_s) best = x;
      }
      tg_scope_end();
    }

    for (int j = 0; j < (r ? BACK_TO_BACK : 1); j++) {
      double t0 = bench_now();
      run_ref(kind, ha, hb, want, n);
      double dt = bench_now() - t0;
      if (r && dt < ref_s) ref_s = dt;
    }
    /* OpenBLAS's workers spin for a while after a call: let them sleep
     * before tg runs again */
    bench_settle(kind == REF_OPENBLAS ? 0.15 : 0.002);
    if (r == 0)
      for (size_t i = 0; i < nn; i++)
        if (got[i] != want[i])
          bench_fail(name, "wrong result at (%zu, %zu): tg %.9g, %s %.9g", i / (size_t)n, i % (size_t)n, got[i],
                     kind == REF_OPENBLAS ? "OpenBLAS" : "loop", want[i]);
  }
  tg_scope_end();
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  printf("bench %s n=%ld opts=%s threads=%d kernels=%lld first_ms=%.1f tg_ms=%.2f tg_wall_ms=%.2f tg_gflops=%.2f "
         "%s_ms=%.2f %s_gflops=%.2f recompiles=%lld ratio=%.3f\n",
         name, n, bench_opts_label(), threads, (long long)best.kernels, first.wall_s * 1e3, best.kernel_s * 1e3,
         best.wall_s * 1e3, gflop / best.kernel_s, kind == REF_OPENBLAS ? "openblas" : "omp", ref_s * 1e3,
         kind == REF_OPENBLAS ? "openblas" : "omp", gflop / ref_s, (long long)compiles, ref_s / best.kernel_s);
  fflush(stdout);
  free(ha); free(hb); free(want); free(got);
}

int main(int argc, char **argv) {
  (void)argc;
#ifdef BENCH_HAVE_OPENBLAS
  /* OpenBLAS reads these when the library is loaded, before main: a forced
   * core type or cache size (set for other programs on some machines) would
   * skew the reference. Run again without them. */
  if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE")) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    fflush(stdout);
    execv("/proc/self/exe", argv);
    bench_fail("sgemm_openblas", "could not re-run itself without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE");
  }
#else
  (void)argv;
#endif
  int threads = bench_threads();
  int reps = bench_reps(3);
#ifdef BENCH_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
  fprintf(stderr, "bench_sgemm: OpenBLAS %s, core %s, %d threads\n", openblas_get_config(), openblas_get_corename(),
          openblas_get_num_threads());
  bench_sgemm(REF_OPENBLAS, 512, bench_reps(5), threads);
  bench_sgemm(REF_OPENBLAS, 1024, reps, threads);
  bench_sgemm(REF_OPENBLAS, 2048, bench_reps(2), threads);
#else
  bench_skip("sgemm_openblas", "OpenBLAS not found when building (Debian: apt-get install -y libopenblas-dev, then make bench)");
#endif
  bench_sgemm(REF_LOOP, 1024, reps, threads);
  return 0;
}
