/* bench_matvec.c: matrix-vector product y = W @ x (the shape of LLM decoding),
 * tg against a hand-written OpenMP loop.
 *
 *   matvec_f32_4096   W float32 (4096, 4096), x float32 (4096): tg_matmul(W, x)
 *   matvec_f16_4096   W float16, x float32: tg_matmul(tg_cast(W, f32), x),
 *                     which fuses into one kernel reading the 2-byte weights;
 *                     the loop widens 16 weights at a time with vcvtph2ps
 *                     (AVX-512 or F16C)
 *
 * Matvec is bound by reading the weights once: GB/s counts the weight bytes
 * (64 MB for f32, 32 MB for f16). The loop is OpenMP over the rows (all
 * cores, like tg's pool), each row a dot product with four vector
 * accumulators. ratio = tg GB/s / loop GB/s. tg's time is
 * the kernel time from tg_get_counters(); the loop's is the wall time of its
 * call. Each repetition builds the lazy product anew (the kernel compiles in
 * the warm-up repetition, which is not counted); tg and the loop take turns
 * and the best of each counts.
 *
 * Inputs are multiples of 1/8 in [-1, 1] (exact in float16): every product
 * and partial sum is exact in float32, so the check is exact equality. */
#include "bench.h"

#define N 4096

typedef _Float16 half;

/* Dot products with 4 vector accumulators (AVX-512, else AVX2+F16C, else
 * plain C); the f16 weights are widened with vcvtph2ps. */
#if defined(__AVX512F__)
#include <immintrin.h>
#define VW 16
typedef __m512 vf;
#define V_ZERO() _mm512_setzero_ps()
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_LOADH(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_SUM(a) _mm512_reduce_add_ps(a)
#elif defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#include <immintrin.h>
#define VW 8
typedef __m256 vf;
#define V_ZERO() _mm256_setzero_ps()
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_LOADH(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static inline float V_SUM(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}
#endif

static inline float dot_f32(const float *restrict w, const float *restrict x, long n) {
  long k = 0;
  float s = 0;
#ifdef VW
  vf a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
  for (; k + 4 * VW <= n; k += 4 * VW) {
    a0 = V_FMA(V_LOAD(w + k), V_LOAD(x + k), a0);
    a1 = V_FMA(V_LOAD(w + k + VW), V_LOAD(x + k + VW), a1);
    a2 = V_FMA(V_LOAD(w + k + 2 * VW), V_LOAD(x + k + 2 * VW), a2);
    a3 = V_FMA(V_LOAD(w + k + 3 * VW), V_LOAD(x + k + 3 * VW), a3);
  }
  s = V_SUM(a0) + V_SUM(a1) + V_SUM(a2) + V_SUM(a3);
#endif
  for (; k < n; k++) s += w[k] * x[k];
  return s;
}

static inline float dot_f16(const half *restrict w, const float *restrict x, long n) {
  long k = 0;
  float s = 0;
#ifdef VW
  vf a0 = V_ZERO(), a1 = V_ZERO(), a2 = V_ZERO(), a3 = V_ZERO();
  for (; k + 4 * VW <= n; k += 4 * VW) {
    a0 = V_FMA(V_LOADH(w + k), V_LOAD(x + k), a0);
    a1 = V_FMA(V_LOADH(w + k + VW), V_LOAD(x + k + VW), a1);
    a2 = V_FMA(V_LOADH(w + k + 2 * VW), V_LOAD(x + k + 2 * VW), a2);
    a3 = V_FMA(V_LOADH(w + k + 3 * VW), V_LOAD(x + k + 3 * VW), a3);
  }
  s = V_SUM(a0) + V_SUM(a1) + V_SUM(a2) + V_SUM(a3);
#endif
  for (; k < n; k++) s += (float)w[k] * x[k];
  return s;
}

__attribute__((noinline)) static void omp_matvec_f32(const float *restrict w, const float *restrict x, float *restrict y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < rows; i++) y[i] = dot_f32(w + i * cols, x, cols);
}

__attribute__((noinline)) static void omp_matvec_f16(const half *restrict w, const float *restrict x, float *restrict y, long rows, long cols) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < rows; i++) y[i] = dot_f16(w + i * cols, x, cols);
}

static void bench_matvec(tg_dtype wdt, int reps) {
  char name[64];
  const bool f16 = wdt == TG_F16;
  snprintf(name, sizeof name, "matvec_%s_%d%s", f16 ? "f16" : "f32", N, bench_name_suffix());
  const size_t nn = (size_t)N * N, wbytes = nn * (f16 ? 2 : 4);
  const double gb = (double)wbytes * 1e-9;
  float *w32 = bench_alloc_f32(nn), *x = bench_alloc_f32(N), *want = bench_alloc_f32(N), *got = bench_alloc_f32(N);
  half *w16 = bench_alloc(nn * sizeof(half));
  for (size_t i = 0; i < nn; i++) {
    w32[i] = bench_eighths(i, 3);
    w16[i] = (half)w32[i];
  }
  for (size_t i = 0; i < N; i++) x[i] = bench_eighths(i, 4);

  tg_scope_begin();
  /* tg's float16 is IEEE binary16, the bits of _Float16 */
  tg_tensor *w = tg_from_data(f16 ? (const void *)w16 : (const void *)w32, TG_SHAPE(N, N), wdt);
  tg_tensor *xv = tg_from_data(x, TG_SHAPE(N), TG_F32);
  if (!w || !xv) bench_fail(name, "tg_from_data failed");
  double loop_s = 1e30;
  bench_tg_run first = { 0 }, best = { 1e30, 1e30, 0, 0 };
  int64_t compiles = 0;
  for (int r = 0; r <= reps; r++) {   /* repetition 0 warms up (tg compiles) */
    double t0 = bench_now();
    if (f16) omp_matvec_f16(w16, x, want, N, N);
    else omp_matvec_f32(w32, x, want, N, N);
    double dt = bench_now() - t0;
    if (r && dt < loop_s) loop_s = dt;
    bench_settle(0.002);   /* OpenMP workers stop spinning */

    tg_scope_begin();
    tg_tensor *y = tg_matmul(f16 ? tg_cast(w, TG_F32) : w, xv);
    bench_tg_run t = bench_tg_realize(y, name);
    if (r == 0) {
      first = t;
      if (tg_data(y, got, N * sizeof(float)) < 0) bench_fail(name, "tg_data failed");
      for (int i = 0; i < N; i++)
        if (got[i] != want[i]) bench_fail(name, "wrong result at %d: tg %.9g, loop %.9g", i, got[i], want[i]);
    } else {
      compiles += t.compiled;
      if (t.kernel_s < best.kernel_s) best = t;
    }
    tg_scope_end();
  }
  tg_scope_end();
  if (best.kernel_s <= 0) bench_fail(name, "no kernel time recorded (is TG_DEVICE=NULL set?)");
  printf("bench %s n=%d wdtype=%s opts=%s kernels=%lld first_ms=%.1f tg_ms=%.3f tg_wall_ms=%.3f tg_gbs=%.2f "
         "omp_ms=%.3f omp_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         name, N, f16 ? "float16" : "float32", bench_opts_label(), (long long)best.kernels, first.wall_s * 1e3,
         best.kernel_s * 1e3, best.wall_s * 1e3, gb / best.kernel_s, loop_s * 1e3, gb / loop_s, (long long)compiles,
         loop_s / best.kernel_s);
  fflush(stdout);
  free(w32); free(w16); free(x); free(want); free(got);
}

int main(void) {
  int reps = bench_reps(10);
  bench_matvec(TG_F32, reps);
  bench_matvec(TG_F16, reps);
  return 0;
}
