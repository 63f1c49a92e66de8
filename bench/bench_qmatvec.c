/* bench_qmatvec.c: quantized matrix-vector products y = W @ x, the shape of
 * LLM decoding with ggml-quantized weights.
 *
 *   qmatvec_TYPE_ROWSxCOLS   W: raw ggml blocks of TYPE (Q8_0 Q4_0 Q4_K
 *                            Q6_K), x float32: tg_matmul(tg_dequantize(W), x),
 *                            one kernel reading the packed bytes
 *   qmatvec_q8act_TYPE_ROWSxCOLS
 *                            the same W and x through tg_quant_matmul: x
 *                            quantized to Q8_0 (Q8_K for the K-quants) by
 *                            small kernels, integer block dot products
 *                            (ggml's way); tg's time counts all kernels
 *   qmatvec_rows_TYPE_ROWSxCOLS
 *                            the same through tg_quant_pack_rows (packed
 *                            once, before timing) and tg_quant_matmul_rows:
 *                            16 rows side by side, byte dot products
 *
 * Matvec is bound by reading the weights once, so GB/s counts the packed
 * bytes. The reference is the read bandwidth of a hand OpenMP loop over the
 * same bytes (all cores, rows split between them, each row summed as 64-bit
 * words): what any kernel reading those bytes could at best reach. ratio =
 * tg GB/s / loop GB/s. tg runs as decoding runs it, replayed by the JIT
 * (tg_jit_call), and its time is the wall time of that call (every kernel,
 * x's quantization too, and their launches); the loops' is their wall time.
 * They take turns and the best of each counts. (Timing tg_realize instead
 * would also build and schedule the graph each time, which takes
 * milliseconds and evicts the matrix from this machine's share of the
 * caches.)
 *
 * For context, hand_gbs is a plain C matvec over the same bytes (OpenMP over
 * rows; each row decoded block by block the way ggml's dequantize_row_*
 * does, into a small buffer, then a dot product with x; compiled -O3
 * -march=native): what straightforward hand-written float code reaches.
 * hand_ratio = tg GB/s / hand GB/s. (ggml's own fast path is different: it
 * quantizes x to int8 and uses integer dot products.)
 *
 * The check: 64 sampled rows against float64 dot products of the
 * dequantized weights (tg_dequantize realized on its own), to a tolerance
 * of summation order (the fused kernel may contract multiply-adds). The
 * q8act lines differ from that by x's quantization: per block at most
 * 0.6 * (max|x| / 127) * sum|w| (half a step, plus the fp16 scale's
 * rounding); tests/test_quant_matmul*.c check them against ggml's code. */
#include <math.h>
#include "bench.h"

/* Random bytes with every fp16 scale field set to a modest value (no inf or
 * NaN): byte offsets of those fields per type. */
static void fill_blocks(unsigned char *p, int64_t nblocks, int bpb, const int *scale_at, int nscale) {
  uint64_t h = 0x243F6A8885A308D3ull;
  for (int64_t b = 0; b < nblocks; b++) {
    unsigned char *q = p + b * bpb;
    for (int i = 0; i < bpb; i++) {
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      q[i] = (unsigned char)(h >> 56);
    }
    for (int s = 0; s < nscale; s++) {
      uint16_t f = (uint16_t)(0x1C00 + ((b * 7 + s) % 512));   /* about 2^-8 .. 2^-7 */
      q[scale_at[s]] = (unsigned char)f, q[scale_at[s] + 1] = (unsigned char)(f >> 8);
    }
  }
}

/* Sums each row's bytes as 64-bit words: a pure read of the packed matrix. */
__attribute__((noinline)) static void omp_read_rows(const unsigned char *restrict w, float *restrict y, long rows, long row_bytes) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < rows; i++) {
    const uint64_t *p = (const uint64_t *)(const void *)(w + i * row_bytes);
    uint64_t s = 0;
    for (long k = 0; k < row_bytes / 8; k++) s += p[k];
    y[i] = (float)(s & 0xFFFF);
  }
}

static inline float f16(const unsigned char *p) { _Float16 h; memcpy(&h, p, 2); return (float)h; }

/* One row's values, decoded block by block (ggml's dequantize_row_*). */
static void hand_row(int t, const unsigned char *q, float *y, long n) {
  if (t == TG_GGML_Q8_0)
    for (long b = 0; b < n / 32; b++, q += 34) {
      float d = f16(q);
      for (int j = 0; j < 32; j++) y[b * 32 + j] = (float)(signed char)q[2 + j] * d;
    }
  else if (t == TG_GGML_Q4_0)
    for (long b = 0; b < n / 32; b++, q += 18) {
      float d = f16(q);
      for (int j = 0; j < 16; j++) {
        y[b * 32 + j] = (float)((q[2 + j] & 15) - 8) * d;
        y[b * 32 + 16 + j] = (float)((q[2 + j] >> 4) - 8) * d;
      }
    }
  else if (t == TG_GGML_Q4_K)
    for (long b = 0; b < n / 256; b++, q += 144) {
      const unsigned char *s = q + 4, *qs = q + 16;
      float d = f16(q), dmin = f16(q + 2);
      for (int c = 0; c < 4; c++)
        for (int h = 0; h < 2; h++) {
          int j = 2 * c + h, sc, m;
          if (j < 4) sc = s[j] & 63, m = s[j + 4] & 63;
          else sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4), m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
          float d1 = d * (float)sc, m1 = dmin * (float)m;
          for (int l = 0; l < 32; l++) y[b * 256 + c * 64 + h * 32 + l] = d1 * (float)((qs[c * 32 + l] >> (4 * h)) & 15) - m1;
        }
    }
  else   /* Q6_K */
    for (long b = 0; b < n / 256; b++, q += 210) {
      float d = f16(q + 208);
      for (int nn = 0; nn < 2; nn++)
        for (int k = 0; k < 4; k++)
          for (int l = 0; l < 32; l++) {
            int lo = (q[nn * 64 + (k % 2) * 32 + l] >> (4 * (k / 2))) & 15, hi = (q[128 + nn * 32 + l] >> (2 * k)) & 3;
            y[b * 256 + nn * 128 + k * 32 + l] = d * (float)(signed char)q[192 + nn * 8 + k * 2 + l / 16] * (float)((lo | hi << 4) - 32);
          }
    }
}

__attribute__((noinline)) static void omp_hand_matvec(int t, const unsigned char *restrict w, const float *restrict x, float *restrict y,
                                                      long rows, long cols, long row_bytes) {
#pragma omp parallel
  {
    float *buf = malloc(sizeof(float) * (size_t)cols);
#pragma omp for schedule(static)
    for (long i = 0; i < rows; i++) {
      hand_row(t, w + i * row_bytes, buf, cols);
      float acc[16] = { 0 }, s = 0;   /* 16 partial sums: vectorizable without reassociation */
      for (long k = 0; k < cols; k += 16)
        for (int j = 0; j < 16; j++) acc[j] += buf[k + j] * x[k + j];
      for (int j = 0; j < 16; j++) s += acc[j];
      y[i] = s;
    }
    free(buf);
  }
}

typedef struct { const char *type; int scale_at[2], nscale; } qcase;

enum { MODE_FLOAT, MODE_Q8ACT, MODE_ROWS };
enum { RUNS = 4 };   /* back-to-back runs per contender and repetition */
static const char *const mode_prefix[] = { "", "q8act_", "rows_" };

typedef struct { int mode, type; int64_t rows, cols; tg_tensor *w, *scales, *quants; } qstep_ctx;

/* y = W @ x, the JIT's function */
static int qmatvec_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  const qstep_ctx *c = ctx;
  tg_shape ws = TG_SHAPE(c->rows, c->cols);
  if (c->mode == MODE_ROWS) out[0] = tg_quant_matmul_rows(in[0], c->scales, c->quants, c->type, ws);
  else if (c->mode == MODE_Q8ACT) out[0] = tg_quant_matmul(in[0], c->w, c->type, ws);
  else out[0] = tg_matmul(tg_dequantize(c->w, c->type, ws), in[0]);
  return out[0] ? 0 : -1;
}

static void bench_qmatvec(const qcase *c, int64_t rows, int64_t cols, int reps, int mode) {
  char name[96];
  const bool q8act = mode != MODE_FLOAT;   /* x quantized to 8 bits */
  snprintf(name, sizeof name, "qmatvec_%s%s_%lldx%lld%s", mode_prefix[mode], c->type, (long long)rows, (long long)cols, bench_name_suffix());
  int t = tg_ggml_type_from_name(c->type);
  int64_t nbytes = tg_ggml_nbytes(t, rows * cols), row_bytes = nbytes / rows;
  int64_t nblocks = rows * cols / (t == TG_GGML_Q8_0 || t == TG_GGML_Q4_0 ? 32 : 256);
  unsigned char *raw = bench_alloc((size_t)nbytes);
  fill_blocks(raw, nblocks, (int)(nbytes / nblocks), c->scale_at, c->nscale);
  float *x = bench_alloc_f32((size_t)cols), *got = bench_alloc_f32((size_t)rows), *sink = bench_alloc_f32((size_t)rows);
  for (int64_t i = 0; i < cols; i++) x[i] = bench_eighths((uint64_t)i, 5);
  const double gb = (double)nbytes * 1e-9;

  tg_scope_begin();
  tg_tensor *w = tg_from_data(raw, TG_SHAPE(nbytes), TG_U8), *xv = tg_from_data(x, TG_SHAPE(cols), TG_F32);
  if (!w || !xv || tg_realize(w) < 0 || tg_realize(xv) < 0) bench_fail(name, "tg_from_data failed");
  tg_tensor *scales = NULL, *quants = NULL;
  if (mode == MODE_ROWS && (tg_quant_pack_rows(w, t, TG_SHAPE(rows, cols), &scales, &quants) < 0 || tg_realize(scales) < 0 || tg_realize(quants) < 0))
    bench_fail(name, "tg_quant_pack_rows: %s", tg_error());
  double loop_s = 1e30, hand_s = 1e30, tg_s = 1e30, first_s = 0;
  qstep_ctx ctx = { mode, t, rows, cols, w, scales, quants };
  tg_jit *jit = tg_jit_new(qmatvec_step, &ctx);
  int64_t compiles = 0;
  /* Each contender runs RUNS times in a row and all but the first run
   * count: the others read other copies of the bytes in between, and the
   * matrix only partly fits in this machine's share of the caches, so a
   * first run would measure whoever had the caches last. */
  for (int r = 0; r <= reps; r++) {   /* repetition 0 warms up (tg compiles) and checks */
    double t0 = 0, dt;
    for (int k = 0; k < RUNS; k++) {
      t0 = bench_now();
      omp_read_rows(raw, sink, (long)rows, (long)row_bytes);
      dt = bench_now() - t0;
      if (r && k && dt < loop_s) loop_s = dt;
    }
    bench_settle(0.02);   /* the OpenMP workers stop spinning */
    for (int k = 0; k < RUNS; k++) {
      tg_counters c0 = tg_get_counters();
      tg_tensor *y = NULL;
      t0 = bench_now();
      if (tg_jit_call(jit, &xv, 1, &y, 1) < 0) bench_fail(name, "tg_jit_call: %s", tg_error());
      dt = bench_now() - t0;
      if (r == 0 && k == 0) first_s = dt;
      else if (r > 0) compiles += bench_tg_diff(c0, tg_get_counters(), dt).compiled;
      if (r > 0 && k > 0 && dt < tg_s) tg_s = dt;
      if (r == reps && k == RUNS - 1 && tg_data(y, got, (size_t)rows * sizeof(float)) < 0) bench_fail(name, "tg_data failed");
    }
    for (int k = 0; k < 2; k++) { t0 = bench_now(); omp_hand_matvec(t, raw, x, sink, (long)rows, (long)cols, (long)row_bytes); }
    dt = bench_now() - t0;
    if (r && dt < hand_s) hand_s = dt;
    bench_settle(0.02);   /* the OpenMP workers stop spinning, the cores' clocks recover from its AVX-512 */
  }
  const int kernels = tg_jit_stats(jit).kernels;
  tg_jit_free(jit);
  /* check 64 rows spread over the matrix (every (rows/64)-th, dequantized
   * by one kernel) */
  float *wrow = bench_alloc_f32((size_t)(64 * cols));
  const int64_t step = rows / 64;
  int64_t st[3] = { 0, 0, 0 }, en[3] = { 64, 1, cols };
  tg_tensor *ws = tg_shrink(tg_reshape(tg_dequantize(w, t, TG_SHAPE(rows, cols)), TG_SHAPE(64, step, cols)), st, en);
  if (!ws || tg_data(ws, wrow, (size_t)(64 * cols) * sizeof(float)) < 0) bench_fail(name, "dequantizing the checked rows failed");
  for (int s = 0; s < 64; s++) {
    int64_t i = s * step;
    double ref = 0, mag = 0, xq_err = 0;
    for (int64_t k = 0; k < cols; k++) ref += (double)wrow[s * cols + k] * x[k], mag += fabs((double)wrow[s * cols + k] * x[k]);
    const int64_t qb = nblocks / rows == cols / 32 ? 32 : 256;   /* x's blocks: Q8_0 or Q8_K */
    for (int64_t b = 0; q8act && b < cols / qb; b++) {
      double amax = 0, wsum = 0;
      for (int64_t j = 0; j < qb; j++) amax = fmax(amax, fabs(x[b * qb + j])), wsum += fabs(wrow[s * cols + b * qb + j]);
      xq_err += 0.6 * amax / 127 * wsum;
    }
    if (!(fabs(got[i] - ref) <= 1e-5 * mag + xq_err + 1e-30)) bench_fail(name, "row %lld: tg %.9g, float64 %.9g", (long long)i, got[i], ref);
  }
  tg_scope_end();
  printf("bench %s type=%s rows=%lld cols=%lld mbytes=%.1f opts=%s kernels=%d first_ms=%.1f tg_ms=%.3f "
         "tg_gbs=%.2f hand_gbs=%.2f hand_ratio=%.3f read_ms=%.3f read_gbs=%.2f recompiles=%lld ratio=%.3f\n",
         name, c->type, (long long)rows, (long long)cols, (double)nbytes * 1e-6, bench_opts_label(), kernels,
         first_s * 1e3, tg_s * 1e3, gb / tg_s, gb / hand_s, hand_s / tg_s, loop_s * 1e3, gb / loop_s,
         (long long)compiles, loop_s / tg_s);
  fflush(stdout);
  free(raw); free(x); free(got); free(sink); free(wrow);
}

int main(int argc, char **argv) {
  static const qcase cases[] = {
    { "Q8_0", { 0 }, 1 }, { "Q4_0", { 0 }, 1 }, { "Q4_K", { 0, 2 }, 2 }, { "Q6_K", { 208 }, 1 },
  };
  static const int64_t shapes[][2] = { { 4096, 4096 }, { 11008, 4096 } };
  int reps = bench_reps(10);
  /* argv[1] picks lines by a part of their name ("Q4_0", "q8act") */
  for (int s = 0; s < 2; s++)
    for (int mode = MODE_FLOAT; mode <= MODE_ROWS; mode++)
      for (int c = 0; c < 4; c++) {
        char key[32];
        snprintf(key, sizeof key, "%s%s", mode_prefix[mode], cases[c].type);
        if (argc < 2 || strstr(key, argv[1])) bench_qmatvec(&cases[c], shapes[s][0], shapes[s][1], reps, mode);
      }
  return 0;
}
