/* test_quant_matmul.c: tg_quant_matmul (tg_quant.h), x @ W.T computed the
 * way ggml's CPU backend does: x quantized to Q8_0, integer block sums.
 *
 * The reference below is ggml's generic C code, restated: x quantized by
 * quantize_row_q8_0_ref (d = amax / 127 stored as fp16, id = d ? 1/d : 0,
 * q = roundf(x * id)), then ggml_vec_dot_q8_0_q8_0_generic /
 * ggml_vec_dot_q4_0_q8_0_generic (an int sum per block, scaled by the two
 * fp16 scales in float, summed over blocks). The quantized x and every
 * integer block sum are exact, so they must match exactly (the identity
 * test pins x's quantization bit for bit); the float sum over blocks runs in
 * another order (16 lane sums per block, SIMD accumulators), so results are
 * compared to a relative tolerance of 1e-5 of the sum of |block terms|. */
#include <stdint.h>
#include "test.h"
#include "quant_experts_check.h"

static float f16_bits_to_f32(uint16_t h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }
static uint16_t f32_to_f16_bits(float v) { _Float16 f = (_Float16)v; uint16_t h; memcpy(&h, &f, 2); return h; }

/* ggml's quantize_row_q8_0_ref: q (k) and the fp16 scales as floats (k/32);
 * and quantize_row_q8_1's s (k/32): fp16(d * sum of q), d unrounded */
static void ref_quantize_q8_1(const float *x, int64_t k, int8_t *q, float *d, float *s) {
  for (int64_t b = 0; b < k / 32; b++) {
    float amax = 0;
    for (int j = 0; j < 32; j++) { float v = fabsf(x[b * 32 + j]); amax = amax > v ? amax : v; }
    const float dd = amax / 127, id = dd ? 1.0f / dd : 0.0f;
    d[b] = f16_bits_to_f32(f32_to_f16_bits(dd));
    int sum = 0;
    for (int j = 0; j < 32; j++) q[b * 32 + j] = (int8_t)roundf(x[b * 32 + j] * id), sum += q[b * 32 + j];
    s[b] = f16_bits_to_f32(f32_to_f16_bits((float)sum * dd));
  }
}

static void ref_quantize_q8_0(const float *x, int64_t k, int8_t *q, float *d) {
  float *s = malloc(sizeof(float) * (size_t)(k / 32));
  ref_quantize_q8_1(x, k, q, d, s);
  free(s);
}

/* kvalues_iq4nl: IQ4_NL's and IQ4_XS's 16 levels */
static const int8_t iq4nl_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

/* kvalues_mxfp4: MXFP4's E2M1 values doubled */
static const int8_t mxfp4_levels[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* ggml_e8m0_to_fp32_half: 2^(e-128) from its bits */
static float e8m0_half(uint8_t e) {
  uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static int block_bytes(int t) {
  return t == TG_GGML_MXFP4 ? 17 : t == TG_GGML_Q8_0 ? 34 : t == TG_GGML_Q5_0 ? 22 : t == TG_GGML_Q4_1 ? 20 : t == TG_GGML_Q5_1 ? 24 : 18;
}

/* ggml_vec_dot_{q8_0,q4_0,q5_0,iq4_nl}_q8_0_generic and
 * ggml_vec_dot_{q4_1,q5_1}_q8_1_generic of one weight row; *mag gets the sum
 * of |block terms|. */
static float ref_dot(int t, const uint8_t *w, const int8_t *q, const float *dx, const float *sx, int64_t k, double *mag) {
  float sumf = 0;
  *mag = 0;
  for (int64_t b = 0; b < k / 32; b++) {
    const uint8_t *blk = w + b * block_bytes(t);
    const float dw = f16_bits_to_f32((uint16_t)(blk[0] | blk[1] << 8));
    int sumi = 0;
    float term;
    if (t == TG_GGML_Q4_1 || t == TG_GGML_Q5_1) {
      const float mw = f16_bits_to_f32((uint16_t)(blk[2] | blk[3] << 8));
      const bool q5 = t == TG_GGML_Q5_1;
      const uint8_t *qs = blk + (q5 ? 8 : 4);
      uint32_t qh = 0;
      if (q5) memcpy(&qh, blk + 4, 4);
      for (int j = 0; j < 16; j++) {
        const int xh0 = q5 ? (int)(((qh >> j) << 4) & 0x10) : 0, xh1 = q5 ? (int)((qh >> (j + 12)) & 0x10) : 0;
        sumi += ((qs[j] & 0x0F) | xh0) * q[b * 32 + j] + ((qs[j] >> 4) | xh1) * q[b * 32 + 16 + j];
      }
      term = (dw * dx[b]) * sumi + mw * sx[b];
    } else if (t == TG_GGML_IQ4_NL) {   /* ggml_vec_dot_iq4_nl_q8_0_generic */
      int s1 = 0, s2 = 0;
      for (int j = 0; j < 16; j++) s1 += q[b * 32 + j] * iq4nl_levels[blk[2 + j] & 0xF], s2 += q[b * 32 + 16 + j] * iq4nl_levels[blk[2 + j] >> 4];
      term = (dw * dx[b]) * (s1 + s2);
    } else if (t == TG_GGML_MXFP4) {   /* ggml_vec_dot_mxfp4_q8_0_generic */
      int s1 = 0, s2 = 0;
      for (int j = 0; j < 16; j++) s1 += q[b * 32 + j] * mxfp4_levels[blk[1 + j] & 0xF], s2 += q[b * 32 + 16 + j] * mxfp4_levels[blk[1 + j] >> 4];
      term = (dx[b] * e8m0_half(blk[0])) * (s1 + s2);
    } else if (t == TG_GGML_Q8_0) {
      for (int j = 0; j < 32; j++) sumi += (int8_t)blk[2 + j] * q[b * 32 + j];
      term = sumi * (dw * dx[b]);
    } else if (t == TG_GGML_Q5_0) {   /* ggml_vec_dot_q5_0_q8_0_generic */
      uint32_t qh;
      memcpy(&qh, blk + 2, 4);
      for (int j = 0; j < 16; j++) {
        const uint8_t xh0 = ((qh >> j) << 4) & 0x10, xh1 = (qh >> (j + 12)) & 0x10;
        sumi += (((blk[6 + j] & 0x0F) | xh0) - 16) * q[b * 32 + j] + (((blk[6 + j] >> 4) | xh1) - 16) * q[b * 32 + 16 + j];
      }
      term = (dw * dx[b]) * sumi;
    } else {
      int s0 = 0, s1 = 0;
      for (int j = 0; j < 16; j++) {
        s0 += ((blk[2 + j] & 0x0F) - 8) * q[b * 32 + j];
        s1 += ((blk[2 + j] >> 4) - 8) * q[b * 32 + 16 + j];
      }
      sumi = s0 + s1;
      term = sumi * dw * dx[b];
    }
    sumf += term;
    *mag += fabs((double)term);
  }
  return sumf;
}

/* Random blocks with modest fp16 scales, some negative (and mins: Q4_1,
 * Q5_1; MXFP4: an E8M0 exponent near 2^0). */
static uint8_t *random_weights(int t, int64_t n, int64_t k, int64_t *nbytes) {
  uint8_t *p = test_random_blocks((uint64_t)t, n * k / 32, block_bytes(t), 0, nbytes);
  for (int64_t b = 0; t == TG_GGML_MXFP4 && b < n * k / 32; b++) p[b * 17] = (uint8_t)(120 + b % 16);
  for (int64_t b = 0; (t == TG_GGML_Q4_1 || t == TG_GGML_Q5_1) && b < n * k / 32; b++)
    p[b * block_bytes(t) + 2] = (uint8_t)(b * 13), p[b * block_bytes(t) + 3] = (uint8_t)(b % 3 ? 0x20 : 0xA0);
  return p;
}

/* x: blocks of different ranges, a block of zeros, ties of roundf */
static void fill_x(float *x, int64_t m, int64_t k) {
  for (int64_t i = 0; i < m * k; i++) {
    int64_t b = i / 32;
    float scale = b % 7 == 3 ? 0 : (float)(1 + b % 5) * (b % 3 ? 1.0f : 1e-3f);
    x[i] = scale * (float)((i * 7919 + i / 13) % 1001 - 500) / 97.0f;
  }
}

/* rows: through tg_quant_pack_rows / tg_quant_matmul_rows */
static void check_path(const char *type, int64_t m, int64_t n, int64_t k, bool rows) {
  int t = tg_ggml_type_from_name(type);
  int64_t nbytes;
  uint8_t *w = random_weights(t, n, k, &nbytes);
  float *x = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(m * n)), *dx = malloc(sizeof(float) * (size_t)(k / 32));
  float *sx = malloc(sizeof(float) * (size_t)(k / 32));
  int8_t *q = malloc((size_t)k);
  fill_x(x, m, k);
  tg_scope_begin();
  tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *xv = tg_from_data(x, TG_SHAPE(m, k), TG_F32);
  tg_tensor *yv = NULL, *sc = NULL, *qs = NULL;
  if (!rows) yv = tg_quant_matmul(xv, raw, t, TG_SHAPE(n, k));
  else if (tg_quant_pack_rows(raw, t, TG_SHAPE(n, k), &sc, &qs) == 0 && tg_realize(sc) == 0 && tg_realize(qs) == 0)
    yv = tg_quant_matmul_rows(xv, sc, qs, t, TG_SHAPE(n, k));
  CHECK_OK(yv);
  CHECK_MSG(yv && tg_data(yv, y, sizeof(float) * (size_t)(m * n)) == 0, "%s: %s", type, tg_error());
  int bad = 0;
  for (int64_t r = 0; r < m; r++) {
    ref_quantize_q8_1(x + r * k, k, q, dx, sx);
    for (int64_t i = 0; i < n; i++) {
      double mag;
      float want = ref_dot(t, w + i * (nbytes / n), q, dx, sx, k, &mag);
      if (!(fabs((double)y[r * n + i] - want) <= 1e-5 * mag)) {
        if (bad++ < 5) test_fail(__FILE__, __LINE__, "%s [%lld, %lld]: tg %.9g, ggml %.9g (mag %.3g)", type, (long long)r, (long long)i,
                                 y[r * n + i], want, mag);
      }
    }
  }
  CHECK_EQ_INT(bad, 0);
  tg_scope_end();
  free(w), free(x), free(y), free(dx), free(sx), free(q);
}

static void check_type(const char *type, int64_t m, int64_t n, int64_t k) { check_path(type, m, n, k, false); }

TEST(quant_matmul_q8_0_vs_ggml) { check_type("Q8_0", 3, 40, 512); }
TEST(quant_matmul_q4_0_vs_ggml) { check_type("Q4_0", 3, 40, 512); }
TEST(quant_matmul_matvec_vs_ggml) { check_type("Q8_0", 1, 64, 4096); check_type("Q4_0", 1, 64, 4096); }

/* W = the identity in Q8_0 (scale 1): y[i] = q[i] * d of i's block, so y
 * shows x's quantization exactly: ggml's roundf (ties away from zero: 2.5
 * -> 3, -0.5 -> -1, where round-to-even gives 2 and -0), the fp16 scale, a
 * block of zeros (d = 0, q = 0). */
TEST(quant_matmul_quantizes_x_like_ggml) {
  enum { K = 128 };
  static uint8_t w[K * K / 32 * 34];
  memset(w, 0, sizeof w);
  for (int i = 0; i < K; i++)
    for (int b = 0; b < K / 32; b++) {
      uint8_t *blk = w + ((int64_t)i * (K / 32) + b) * 34;
      blk[0] = 0x00, blk[1] = 0x3C;   /* 1.0 */
      if (i / 32 == b) blk[2 + i % 32] = 1;
    }
  float x[K], y[K], dx[K / 32];
  int8_t q[K];
  for (int j = 0; j < 32; j++) x[j] = j == 0 ? 127.0f : (float)(j - 16) + 0.5f;   /* d = 1: ties of .5 */
  for (int j = 32; j < 64; j++) x[j] = 0;
  for (int j = 64; j < 96; j++) x[j] = (float)(j - 80) * 0.37f;
  for (int j = 96; j < K; j++) x[j] = (float)(j - 100) * 1e-6f;   /* a tiny scale: subnormal in fp16 */
  ref_quantize_q8_0(x, K, q, dx);
  CHECK(q[1] == -15 && q[16] == 1 && q[15] == -1 && q[18] == 3);   /* the ties, rounded away from zero */
  tg_scope_begin();
  tg_tensor *yv = tg_quant_matmul(tg_from_data(x, TG_SHAPE(K), TG_F32), tg_from_data(w, TG_SHAPE(sizeof w), TG_U8), TG_GGML_Q8_0,
                                  TG_SHAPE(K, K));
  CHECK_MSG(yv && tg_data(yv, y, sizeof y) == 0, "%s", tg_error());
  for (int i = 0; i < K; i++) CHECK_MSG(y[i] == (float)q[i] * dx[i / 32], "x[%d] = %g: tg %g, ggml %d * %g", i, x[i], y[i], q[i], dx[i / 32]);
  tg_scope_end();
}

/* One kernel quantizes x (its values and scales together, after a small
 * reduce for the block maxima), then ONE kernel reads the packed weights,
 * on NULL and CPU. Leading dims of x stay. */
TEST(quant_matmul_kernel_count) {
  const int64_t n = 48, k = 256;
  for (int t = 0; t < 2; t++) {
    int type = t ? TG_GGML_Q4_0 : TG_GGML_Q8_0;
    int64_t nbytes;
    uint8_t *w = random_weights(type, n, k, &nbytes);
    float x[2 * 3 * 256];
    fill_x(x, 6, k);
    for (int d = 0; d < 2; d++) {
      tg_set_default_device(d ? "CPU" : "NULL");
      tg_scope_begin();
      tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *xv = tg_from_data(x, TG_SHAPE(2, 3, k), TG_F32);
      CHECK_OK(tg_realize(raw) == 0 && tg_realize(xv) == 0 ? raw : NULL);
      int64_t k0 = tg_get_counters().kernels_run;
      tg_tensor *y = tg_quant_matmul(xv, raw, type, TG_SHAPE(n, k));
      CHECK_MSG(y && tg_realize(y) == 0, "%s", tg_error());
      CHECK_EQ_INT(tg_get_counters().kernels_run - k0, 3);   /* block maxima, quantized x, the product */
      CHECK(y && tg_ndim(y) == 3 && tg_dim(y, 0) == 2 && tg_dim(y, 1) == 3 && tg_dim(y, 2) == n);
      tg_scope_end();
    }
    tg_set_default_device("CPU");
    free(w);
  }
}

/* x's leading axes stay as they are, so a symbolic one (an LLM's prompt
 * rows) works: rows [0, n) of the same kernels for every n. */
TEST(quant_matmul_symbolic_rows) {
  enum { MAXR = 6, N = 16, K = 64 };
  int64_t nbytes;
  uint8_t *w = random_weights(TG_GGML_Q8_0, N, K, &nbytes);
  float x[MAXR * K], y[MAXR * N], dx[K / 32];
  int8_t q[K];
  fill_x(x, MAXR, K);
  CHECK_OK(tg_variable("qmm_rows", 1, MAXR));
  for (int n = 1; n <= MAXR; n += 2) {
    tg_scope_begin();
    CHECK(tg_bind("qmm_rows", n) == 0);
    tg_tensor *xs = tg_shrink_var(tg_from_data(x, TG_SHAPE(MAXR, K), TG_F32), 0, "qmm_rows");
    tg_tensor *yv = tg_quant_matmul(xs, tg_from_data(w, TG_SHAPE(nbytes), TG_U8), TG_GGML_Q8_0, TG_SHAPE(N, K));
    CHECK_MSG(yv && tg_dim_is_symbolic(yv, 0) && tg_data(yv, y, sizeof y) == 0, "%s", tg_error());
    for (int r = 0; r < n; r++) {
      ref_quantize_q8_0(x + r * K, K, q, dx);
      for (int i = 0; i < N; i++) {
        double mag;
        float want = ref_dot(TG_GGML_Q8_0, w + i * (nbytes / N), q, dx, NULL, K, &mag);
        CHECK_MSG(fabs((double)y[r * N + i] - want) <= 1e-5 * mag, "n=%d [%d, %d]: %g vs %g", n, r, i, y[r * N + i], want);
      }
    }
    tg_scope_end();
  }
  free(w);
}

/* Types without an integer path: the float product of tg_dequantize. */
TEST(quant_matmul_other_types_float) {
  const int64_t n = 8, k = 256;
  static uint8_t raw[8 * 176];   /* Q5_K */
  for (size_t i = 0; i < sizeof raw; i++) raw[i] = (uint8_t)(i * 131 + 7);
  for (int r = 0; r < 8; r++) raw[r * 176 + 1] = 0x1C, raw[r * 176 + 3] = 0x1C;   /* modest d, dmin */
  float x[256], got[8], want[8];
  for (int i = 0; i < k; i++) x[i] = (float)(i % 17) / 8 - 1;
  tg_scope_begin();
  tg_tensor *w = tg_from_data(raw, TG_SHAPE(sizeof raw), TG_U8), *xv = tg_from_data(x, TG_SHAPE(1, k), TG_F32);
  tg_tensor *a = tg_quant_matmul(xv, w, TG_GGML_Q5_K, TG_SHAPE(n, k));
  tg_tensor *b = tg_matmul(xv, tg_T(tg_dequantize(w, TG_GGML_Q5_K, TG_SHAPE(n, k))));
  CHECK_MSG(a && b && tg_data(a, got, sizeof got) == 0 && tg_data(b, want, sizeof want) == 0, "%s", tg_error());
  for (int i = 0; i < n; i++) CHECK_MSG(got[i] == want[i], "row %d: %g vs %g", i, got[i], want[i]);
  tg_scope_end();
}

TEST(quant_matmul_errors) {
  tg_scope_begin();
  uint8_t raw[34 * 4] = { 0 };
  tg_tensor *w = tg_from_data(raw, TG_SHAPE(sizeof raw), TG_U8);
  CHECK(tg_quant_matmul(tg_zeros(TG_SHAPE(1, 64), TG_F32), w, TG_GGML_Q8_0, TG_SHAPE(2, 64)) != NULL);
  CHECK(tg_quant_matmul(tg_zeros(TG_SHAPE(1, 32), TG_F32), w, TG_GGML_Q8_0, TG_SHAPE(2, 64)) == NULL && strstr(tg_error(), "K = 64"));
  CHECK(tg_quant_matmul(tg_zeros(TG_SHAPE(1, 64), TG_F32), w, TG_GGML_Q8_0, TG_SHAPE(4, 64)) == NULL && strstr(tg_error(), "bytes"));
  CHECK(tg_quant_matmul(tg_zeros(TG_SHAPE(1, 64), TG_I32), w, TG_GGML_Q8_0, TG_SHAPE(2, 64)) == NULL && strstr(tg_error(), "float"));
  CHECK(tg_quant_matmul(tg_zeros(TG_SHAPE(1, 64), TG_F32), w, TG_GGML_Q8_0, TG_SHAPE(128)) == NULL && strstr(tg_error(), "2-D"));
  CHECK(tg_quant_matmul(NULL, w, TG_GGML_Q8_0, TG_SHAPE(2, 64)) == NULL);
  tg_scope_end();
}

/* x (many rows) @ dequantize(w).T in float, the LLM's prefill path: one
 * kernel that decodes w inside the matmul, 8 rows of x sharing each decoded
 * vector (the heuristic's tile), against a float64 loop over the values
 * tg_dequantize gives (checked bit for bit against ggml elsewhere). */
static void check_float_prefill(const char *type, int64_t m, int64_t n, int64_t k) {
  int t = tg_ggml_type_from_name(type);
  int64_t nbytes;
  uint8_t *w = random_weights(t, n, k, &nbytes);
  float *x = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(m * n)), *wf = malloc(sizeof(float) * (size_t)(n * k));
  fill_x(x, m, k);
  tg_scope_begin();
  tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *xv = tg_from_data(x, TG_SHAPE(m, k), TG_F32);
  CHECK_OK(tg_realize(raw) == 0 && tg_realize(xv) == 0);
  CHECK_OK(tg_data(tg_dequantize(raw, t, TG_SHAPE(n, k)), wf, sizeof(float) * (size_t)(n * k)) == 0);
  int64_t k0 = tg_get_counters().kernels_run;
  tg_tensor *yv = tg_matmul(xv, tg_T(tg_dequantize(raw, t, TG_SHAPE(n, k))));
  CHECK_MSG(yv && tg_data(yv, y, sizeof(float) * (size_t)(m * n)) == 0, "%s: %s", type, tg_error());
  CHECK_EQ_INT(tg_get_counters().kernels_run - k0, 1);
  int bad = 0;
  for (int64_t r = 0; r < m; r++)
    for (int64_t i = 0; i < n; i++) {
      double want = 0, mag = 0;
      for (int64_t j = 0; j < k; j++) want += (double)x[r * k + j] * wf[i * k + j], mag += fabs((double)x[r * k + j] * wf[i * k + j]);
      if (!(fabs((double)y[r * n + i] - want) <= 1e-5 * mag + 1e-30) && bad++ < 5)
        test_fail(__FILE__, __LINE__, "%s [%lld, %lld]: tg %.9g, float64 %.9g", type, (long long)r, (long long)i, y[r * n + i], want);
    }
  CHECK_EQ_INT(bad, 0);
  tg_scope_end();
  free(w), free(x), free(y), free(wf);
}
TEST(quant_float_prefill_tile_exact) {
  check_float_prefill("Q8_0", 32, 64, 256);
  check_float_prefill("Q4_0", 24, 40, 512);
  check_float_prefill("Q8_0", 17, 6, 96);   /* rows that 8 does not divide: no tile */
}

/* Row-packed Q4_0, Q5_0 and Q8_0 (the LLM's path): the same numbers as ggml's,
 * for one row of x, a few rows, a prefill's many, and the widths of the
 * 125M model's matrices. */
TEST(quant_matmul_rows_q4_0_vs_ggml) {
  check_path("Q4_0", 1, 64, 512, true);
  check_path("Q4_0", 3, 32, 256, true);
  check_path("Q4_0", 1, 256, 2048, true);
  check_path("Q4_0", 40, 48, 768, true);
}
TEST(quant_matmul_rows_q5_0_vs_ggml) {
  check_path("Q5_0", 1, 64, 512, true);
  check_path("Q5_0", 3, 32, 256, true);
  check_path("Q5_0", 40, 48, 896, true);   /* a 0.5B qwen2's width, which K-quants do not divide */
}
/* Q4_1 and Q5_1: x quantized as quantize_row_q8_1, the min term m_w * s_x */
TEST(quant_matmul_rows_q4_1_vs_ggml) {
  check_path("Q4_1", 1, 64, 512, true);
  check_path("Q4_1", 3, 32, 256, true);
  check_path("Q4_1", 40, 48, 768, true);
}
TEST(quant_matmul_rows_q5_1_vs_ggml) {
  check_path("Q5_1", 1, 64, 512, true);
  check_path("Q5_1", 3, 32, 256, true);
  check_path("Q5_1", 40, 48, 896, true);
}
/* IQ4_NL: the levels stored as Q8_0's bytes */
TEST(quant_matmul_rows_iq4_nl_vs_ggml) {
  check_path("IQ4_NL", 1, 64, 512, true);
  check_path("IQ4_NL", 3, 32, 256, true);
  check_path("IQ4_NL", 40, 48, 896, true);
}
/* MXFP4: IQ4_NL's form with the doubled E2M1 levels and an E8M0 scale */
TEST(quant_matmul_rows_mxfp4_vs_ggml) {
  check_path("MXFP4", 1, 64, 512, true);
  check_path("MXFP4", 3, 32, 256, true);
  check_path("MXFP4", 40, 48, 768, true);
}
TEST(quant_matmul_rows_q8_0_vs_ggml) {
  check_path("Q8_0", 1, 64, 512, true);
  check_path("Q8_0", 3, 32, 256, true);
  check_path("Q8_0", 40, 48, 768, true);
}

/* ggml's vec_dot of x's row (quantized to Q8_0, or Q8_1 for Q4_1 and
 * Q5_1) with one row of type t (check_quant_experts's reference). */
static float ref_row_dot(int t, const uint8_t *row, const float *x, int64_t k, double *mag) {
  float *dx = malloc(sizeof(float) * (size_t)(k / 32)), *sx = malloc(sizeof(float) * (size_t)(k / 32));
  int8_t *q = malloc((size_t)k);
  ref_quantize_q8_1(x, k, q, dx, sx);
  float r = ref_dot(t, row, q, dx, sx, k, mag);
  free(dx), free(sx), free(q);
  return r;
}

/* Experts (E, N, K) packed as one (E * N, K) matrix, multiplied by the
 * chosen ones (tg_quant_matmul_rows_experts, the MoE path):
 * check_quant_experts against ggml's vec_dot; then bad arguments. */
static void check_experts(const char *type, int64_t e, int64_t n, int64_t k, bool x_per_expert) {
  int t = tg_ggml_type_from_name(type);
  int64_t nbytes;
  uint8_t *w = random_weights(t, e * n, k, &nbytes);
  check_quant_experts(t, w, nbytes, e, n, k, x_per_expert, fill_x, ref_row_dot);
  tg_scope_begin();
  tg_tensor *sc = NULL, *qs = NULL;
  CHECK_OK(tg_quant_pack_rows(tg_from_data(w, TG_SHAPE(nbytes), TG_U8), t, TG_SHAPE(e * n, k), &sc, &qs) == 0);
  tg_tensor *x1 = tg_zeros(TG_SHAPE(1, 1, k), TG_F32), *i1 = tg_zeros(TG_SHAPE(1, 2), TG_I32);
  CHECK(!tg_quant_matmul_rows_experts(x1, sc, qs, t, TG_SHAPE(e, n + 16, k), i1) && strstr(tg_error(), "not tg_quant_pack_rows's"));
  CHECK(!tg_quant_matmul_rows_experts(x1, sc, qs, t, TG_SHAPE(e * n, k), i1) && strstr(tg_error(), "3-D"));
  CHECK(!tg_quant_matmul_rows_experts(tg_zeros(TG_SHAPE(1, k), TG_F32), sc, qs, t, TG_SHAPE(e, n, k), i1) && strstr(tg_error(), "index's shape"));
  CHECK(!tg_quant_matmul_rows_experts(x1, sc, qs, t, TG_SHAPE(e, n, k), tg_zeros(TG_SHAPE(1, 2), TG_F32)) && strstr(tg_error(), "integer"));
  tg_scope_end();
  free(w);
}
TEST(quant_matmul_rows_experts_vs_ggml) {
  check_experts("MXFP4", 4, 32, 256, false);
  check_experts("MXFP4", 4, 64, 32, true);
  check_experts("MXFP4", 4, 32, 64, false);
  check_experts("MXFP4", 4, 64, 32, false);
  check_experts("Q8_0", 4, 16, 128, true);
  check_experts("Q5_0", 4, 32, 64, true);
  check_experts("Q4_1", 4, 32, 64, false);
}

/* tg_dequantize_rows gives tg_dequantize's (ggml's) values bit for bit, and
 * bad arguments are errors. */
TEST(quant_rows_dequantize_exact) {
  static const struct { const char *type; int bpb, block, scale_at; } cases[] = {
    { "Q4_0", 18, 32, 0 }, { "Q5_0", 22, 32, 0 }, { "Q4_1", 20, 32, 0 }, { "Q5_1", 24, 32, 0 }, { "Q8_0", 34, 32, 0 }, { "IQ4_NL", 18, 32, 0 }, { "MXFP4", 17, 32, 0 }, { "IQ4_XS", 136, 256, 0 }, { "Q3_K", 110, 256, 108 }, { "Q2_K", 84, 256, 80 }, { "Q4_K", 144, 256, 0 }, { "Q5_K", 176, 256, 0 }, { "Q6_K", 210, 256, 208 },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int64_t n = 32, k = 512;
    int t = tg_ggml_type_from_name(cases[c].type);
    int64_t nbytes;
    uint8_t *w = test_random_blocks((uint64_t)t + 7, n * k / cases[c].block, cases[c].bpb, cases[c].scale_at, &nbytes);
    for (int64_t b = 0; (t == TG_GGML_Q4_1 || t == TG_GGML_Q5_1) && b < nbytes / cases[c].bpb; b++)   /* a modest min */
      w[b * cases[c].bpb + 2] = (uint8_t)(b * 29), w[b * cases[c].bpb + 3] = (uint8_t)(b % 2 ? 0x24 : 0xA4);
    tg_scope_begin();
    tg_tensor *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *sc = NULL, *qs = NULL;
    CHECK_OK(tg_quant_pack_rows(raw, t, TG_SHAPE(n, k), &sc, &qs) == 0 && tg_realize(sc) == 0 && tg_realize(qs) == 0);
    float *a = malloc(sizeof(float) * (size_t)(n * k)), *b = malloc(sizeof(float) * (size_t)(n * k));
    tg_tensor *want = tg_dequantize(raw, t, TG_SHAPE(n, k)), *got = tg_dequantize_rows(sc, qs, t, TG_SHAPE(n, k));
    CHECK_MSG(got && tg_data(got, a, sizeof(float) * (size_t)(n * k)) == 0 && tg_data(want, b, sizeof(float) * (size_t)(n * k)) == 0, "%s: %s",
              cases[c].type, tg_error());
    int bad = 0;
    for (int64_t i = 0; i < n * k; i++)
      if (memcmp(&a[i], &b[i], sizeof(float)) && bad++ < 3) test_fail(__FILE__, __LINE__, "%s [%lld]: rows %.9g, tg_dequantize %.9g", cases[c].type, (long long)i, a[i], b[i]);
    CHECK_EQ_INT(bad, 0);
    /* wrong shapes and types */
    CHECK(tg_dequantize_rows(sc, qs, t, TG_SHAPE(n + 16, k)) == NULL && strstr(tg_error(), "not tg_quant_pack_rows's"));
    CHECK(tg_quant_matmul_rows(tg_zeros(TG_SHAPE(1, k), TG_F32), sc, qs, t, TG_SHAPE(n, k + 256)) == NULL);
    free(a), free(b), free(w);
    tg_scope_end();
  }
  tg_tensor *sc, *qs;
  CHECK(tg_quant_pack_rows(tg_zeros(TG_SHAPE(66 * 16), TG_U8), TG_GGML_IQ2_XXS, TG_SHAPE(16, 256), &sc, &qs) < 0 && strstr(tg_error(), "no row-packed form"));
  CHECK(tg_quant_pack_rows(tg_zeros(TG_SHAPE(18 * 8), TG_U8), TG_GGML_Q4_0, TG_SHAPE(8, 32), &sc, &qs) < 0 && strstr(tg_error(), "multiple of 16"));
  CHECK(tg_quant_pack_rows(tg_zeros(TG_SHAPE(17), TG_U8), TG_GGML_Q4_0, TG_SHAPE(16, 32), &sc, &qs) < 0 && strstr(tg_error(), "bytes"));
}
