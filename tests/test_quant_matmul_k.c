/* test_quant_matmul_k.c: tg_quant_matmul for the K-quants (Q4_K, Q6_K; Q5_K row-packed):
 * x quantized to Q8_K, integer sub-block dots.
 *
 * The reference is ggml's generic C code, restated: quantize_row_q8_K_ref
 * (max = the first value of largest |x|, iscale = -127 / max, q =
 * min(127, nearest_int(iscale * x)) rounding half to even, d = 1 / iscale)
 * and ggml_vec_dot_{q4_K,q5_K,q6_K}_q8_K_generic (int32 lanes of scale * q_w *
 * q_x per super-block, scaled by d_w * d_x in float; Q4_K and Q5_K subtract dmin_w
 * * d_x * sum of m * x's sums per 16). The quantized x is checked bit for
 * bit (W the identity); dot products to 1e-5 of the sum of |block terms|
 * (the float sums run in another order). */
#include <stdint.h>
#include "test.h"
#include "quant_experts_check.h"

static float f16_to_f32(uint16_t h) { _Float16 f; memcpy(&f, &h, 2); return (float)f; }

static int nearest_int(float fval) {
  float val = fval + 12582912.f;
  int i;
  memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

/* quantize_row_q8_K_ref: q (k), d (k/256), bsums (k/16) */
static void ref_quantize_q8_k(const float *x, int64_t k, int8_t *q, float *d, int *bsums) {
  for (int64_t b = 0; b < k / 256; b++, x += 256) {
    float max = 0, amax = 0;
    for (int j = 0; j < 256; j++) {
      float ax = fabsf(x[j]);
      if (ax > amax) amax = ax, max = x[j];
    }
    if (!amax) {
      d[b] = 0;
      memset(q + b * 256, 0, 256);
    } else {
      const float iscale = -127.f / max;
      for (int j = 0; j < 256; j++) {
        int v = nearest_int(iscale * x[j]);
        q[b * 256 + j] = (int8_t)(v < 127 ? v : 127);
      }
      d[b] = 1 / iscale;
    }
    for (int j = 0; j < 16; j++) {
      int s = 0;
      for (int i = 0; i < 16; i++) s += q[b * 256 + j * 16 + i];
      bsums[b * 16 + j] = s;
    }
  }
}

static void get_scale_min_k4(int j, const uint8_t *q, int *d, int *m) {
  if (j < 4) *d = q[j] & 63, *m = q[j + 4] & 63;
  else *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
}

static int block_bytes(int t) { return t == TG_GGML_Q4_K ? 144 : t == TG_GGML_Q5_K ? 176 : t == TG_GGML_IQ4_XS ? 136 : t == TG_GGML_Q3_K ? 110 : t == TG_GGML_Q2_K ? 84 : 210; }

/* ggml_vec_dot_q2_K_q8_K_generic: the 4-bit scales times the sub-blocks'
 * sums of q * x, less the 4-bit mins times x's sums */
static float ref_dot_q2_k(const uint8_t *w, const int8_t *q8, const float *dx, const int *bsums, int64_t k, double *mag) {
  float sumf = 0;
  for (int64_t b = 0; b < k / 256; b++) {
    const uint8_t *blk = w + b * 84, *q2 = blk + 16, *sc = blk;
    const int8_t *y = q8 + b * 256;
    int summs = 0, isum = 0, is = 0;
    for (int j = 0; j < 16; j++) summs += bsums[b * 16 + j] * (sc[j] >> 4);
    for (int n = 0; n < 2; n++, q2 += 32)
      for (int j = 0; j < 4; j++, y += 32)
        for (int h = 0; h < 2; h++) {
          int isuml = 0;
          for (int l = 16 * h; l < 16 * h + 16; l++) isuml += y[l] * ((q2[l] >> (2 * j)) & 3);
          isum += (sc[is++] & 0xF) * isuml;
        }
    const float dall = dx[b] * f16_to_f32((uint16_t)(blk[80] | blk[81] << 8)), dmin = dx[b] * f16_to_f32((uint16_t)(blk[82] | blk[83] << 8));
    sumf += dall * isum - dmin * summs;
    *mag += fabs((double)dall * isum) + fabs((double)dmin * summs);
  }
  return sumf;
}

static const int8_t iq4nl_levels[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

/* ggml_vec_dot_iq4_xs_q8_K_generic: per pair of sub-blocks, ls from scales_l's
 * nibbles and scales_h's 2-bit fields, d4d8 * (ls - 32) * sum */
static float ref_dot_iq4_xs(const uint8_t *w, const int8_t *q8, const float *dx, int64_t k, double *mag) {
  float sumf = 0;
  for (int64_t b = 0; b < k / 256; b++) {
    const uint8_t *blk = w + b * 136, *qs = blk + 8;
    const int8_t *y = q8 + b * 256;
    const float d4d8 = f16_to_f32((uint16_t)(blk[0] | blk[1] << 8)) * dx[b];
    uint16_t h = (uint16_t)(blk[2] | blk[3] << 8);
    for (int ib = 0; ib < 8; ib += 2) {
      const int ls1 = (blk[4 + ib / 2] & 0xF) | ((h << 4) & 0x30), ls2 = (blk[4 + ib / 2] >> 4) | ((h << 2) & 0x30);
      h >>= 4;
      for (int half = 0; half < 2; half++, qs += 16, y += 32) {
        int sumi = 0;
        for (int j = 0; j < 16; j++) sumi += y[j] * iq4nl_levels[qs[j] & 0xF] + y[j + 16] * iq4nl_levels[qs[j] >> 4];
        const float term = d4d8 * ((half ? ls2 : ls1) - 32) * sumi;
        sumf += term, *mag += fabs((double)term);
      }
    }
  }
  return sumf;
}

/* ggml_vec_dot_{q4_K,q5_K,q6_K}_q8_K_generic of one weight row; *mag gets the
 * sum of |block terms|. */
static float ref_dot(int t, const uint8_t *w, const int8_t *q8, const float *dx, const int *bsums, int64_t k, double *mag) {
  float sums[8] = { 0 }, sumf = 0;
  *mag = 0;
  if (t == TG_GGML_IQ4_XS) return ref_dot_iq4_xs(w, q8, dx, k, mag);
  if (t == TG_GGML_Q2_K) return ref_dot_q2_k(w, q8, dx, bsums, k, mag);
  for (int64_t b = 0; b < k / 256; b++) {
    const uint8_t *blk = w + b * block_bytes(t);
    const int8_t *y = q8 + b * 256;
    int8_t a[256];
    int aux32[8] = { 0 }, sc[16];
    float d;
    if (t == TG_GGML_Q4_K || t == TG_GGML_Q5_K) {
      const bool q5 = t == TG_GGML_Q5_K;
      const uint8_t *qs = blk + (q5 ? 48 : 16), *qh = blk + 16;
      for (int j = 0; j < 4; j++)
        for (int l = 0; l < 32; l++) {
          a[j * 64 + l] = (int8_t)((qs[j * 32 + l] & 0xF) + (q5 && (qh[l] >> (2 * j) & 1) ? 16 : 0));
          a[j * 64 + 32 + l] = (int8_t)((qs[j * 32 + l] >> 4) + (q5 && (qh[l] >> (2 * j + 1) & 1) ? 16 : 0));
        }
      int sumi = 0;
      for (int j = 0; j < 8; j++) {
        int s, m;
        get_scale_min_k4(j, blk + 4, &s, &m);
        sc[2 * j] = sc[2 * j + 1] = s;
        sumi += (bsums[b * 16 + 2 * j] + bsums[b * 16 + 2 * j + 1]) * m;
      }
      const float dmin = f16_to_f32((uint16_t)(blk[2] | blk[3] << 8)) * dx[b];
      sumf -= dmin * sumi;
      *mag += fabs((double)dmin * sumi);
      d = f16_to_f32((uint16_t)(blk[0] | blk[1] << 8)) * dx[b];
    } else if (t == TG_GGML_Q3_K) {   /* ggml_vec_dot_q3_K_q8_K_generic */
      const uint8_t *q3 = blk + 32, *hm = blk;
      uint8_t m = 1;
      for (int n = 0; n < 2; n++, q3 += 32)
        for (int j = 0; j < 4; j++, m = (uint8_t)(m << 1))
          for (int l = 0; l < 32; l++) a[n * 128 + j * 32 + l] = (int8_t)(((q3[l] >> (2 * j)) & 3) - (hm[l] & m ? 0 : 4));
      const uint8_t *s = blk + 96;
      for (int i = 0; i < 16; i++) {
        int q = i / 4, r = i % 4;
        sc[i] = (((s[r + 4 * (q & 1)] >> (4 * (q >> 1))) & 0xF) | (((s[8 + r] >> (2 * q)) & 3) << 4)) - 32;
      }
      d = f16_to_f32((uint16_t)(blk[108] | blk[109] << 8)) * dx[b];
    } else {
      const uint8_t *ql = blk, *qh = blk + 128;
      for (int n = 0; n < 2; n++, ql += 64, qh += 32)
        for (int l = 0; l < 32; l++) {
          a[n * 128 + l] = (int8_t)((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
          a[n * 128 + l + 32] = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          a[n * 128 + l + 64] = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          a[n * 128 + l + 96] = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        }
      for (int j = 0; j < 16; j++) sc[j] = (int8_t)blk[192 + j];
      d = f16_to_f32((uint16_t)(blk[208] | blk[209] << 8)) * dx[b];
    }
    for (int j = 0; j < 256; j++) aux32[j % 8] += sc[j / 16] * (int16_t)(y[j] * a[j]);
    for (int l = 0; l < 8; l++) sums[l] += d * aux32[l], *mag += fabs((double)d * aux32[l]);
  }
  for (int l = 0; l < 8; l++) sumf += sums[l];
  return sumf;
}

static uint8_t *random_k(int t, int64_t n, int64_t k, int64_t *nbytes) {
  int bpb = block_bytes(t);
  bool mins = t == TG_GGML_Q4_K || t == TG_GGML_Q5_K;
  uint8_t *p = test_random_blocks((uint64_t)t, n * k / 256, bpb, t == TG_GGML_Q6_K ? 208 : t == TG_GGML_Q3_K ? 108 : t == TG_GGML_Q2_K ? 80 : 0, nbytes);
  for (int64_t b = 0; t == TG_GGML_Q2_K && b < *nbytes / bpb; b++) p[b * bpb + 82] = (uint8_t)(b * 7), p[b * bpb + 83] = 0x1C;   /* dmin */
  for (int64_t b = 0; mins && b < *nbytes / bpb; b++) p[b * bpb + 2] = (uint8_t)(b * 11), p[b * bpb + 3] = 0x18;   /* dmin */
  return p;
}

/* x: blocks of different ranges, a block of zeros, a block whose largest
 * |x| comes first as a negative and then as a positive value */
static void fill_x(float *x, int64_t m, int64_t k) {
  for (int64_t i = 0; i < m * k; i++) {
    int64_t b = i / 256;
    float scale = b % 7 == 3 ? 0 : (float)(1 + b % 5) * (b % 3 ? 1.0f : 1e-3f);
    x[i] = scale * (float)((i * 7919 + i / 13) % 1001 - 500) / 97.0f;
  }
  if (k >= 512) x[256 + 3] = -40, x[256 + 9] = 40;
}

/* rows: through tg_quant_pack_rows / tg_quant_matmul_rows */
static void check_k_path(int t, int64_t m, int64_t n, int64_t k, bool rows) {
  int64_t nbytes;
  uint8_t *w = random_k(t, n, k, &nbytes);
  float *x = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(m * n)), *dx = malloc(sizeof(float) * (size_t)(k / 256));
  int8_t *q = malloc((size_t)k);
  int *bs = malloc(sizeof(int) * (size_t)(k / 16));
  fill_x(x, m, k);
  tg_scope_begin();
  tg_tensor *xv = tg_from_data(x, TG_SHAPE(m, k), TG_F32), *raw = tg_from_data(w, TG_SHAPE(nbytes), TG_U8), *yv = NULL, *sc, *qs;
  if (!rows) yv = tg_quant_matmul(xv, raw, t, TG_SHAPE(n, k));
  else if (tg_quant_pack_rows(raw, t, TG_SHAPE(n, k), &sc, &qs) == 0 && tg_realize(sc) == 0 && tg_realize(qs) == 0)
    yv = tg_quant_matmul_rows(xv, sc, qs, t, TG_SHAPE(n, k));
  CHECK_MSG(yv && tg_data(yv, y, sizeof(float) * (size_t)(m * n)) == 0, "%s", tg_error());
  int bad = 0;
  for (int64_t r = 0; r < m; r++) {
    ref_quantize_q8_k(x + r * k, k, q, dx, bs);
    for (int64_t i = 0; i < n; i++) {
      double mag;
      float want = ref_dot(t, w + i * (nbytes / n), q, dx, bs, k, &mag);
      if (!(fabs((double)y[r * n + i] - want) <= 1e-5 * mag) && bad++ < 5)
        test_fail(__FILE__, __LINE__, "%s [%lld, %lld]: tg %.9g, ggml %.9g (mag %.3g)", tg_ggml_type_name(t), (long long)r, (long long)i,
                  y[r * n + i], want, mag);
    }
  }
  CHECK_EQ_INT(bad, 0);
  tg_scope_end();
  free(w), free(x), free(y), free(dx), free(q), free(bs);
}

static void check_k(int t, int64_t m, int64_t n, int64_t k) { check_k_path(t, m, n, k, false); }

TEST(quant_matmul_q4_k_vs_ggml) { check_k(TG_GGML_Q4_K, 3, 24, 1024); check_k(TG_GGML_Q4_K, 1, 16, 4096); }
TEST(quant_matmul_q6_k_vs_ggml) { check_k(TG_GGML_Q6_K, 3, 24, 1024); check_k(TG_GGML_Q6_K, 1, 16, 4096); }
/* row-packed Q4_K and Q6_K (the LLM's path) */
TEST(quant_matmul_rows_q4_k_vs_ggml) { check_k_path(TG_GGML_Q4_K, 3, 32, 1024, true); check_k_path(TG_GGML_Q4_K, 1, 64, 768, true); }
TEST(quant_matmul_rows_q5_k_vs_ggml) { check_k_path(TG_GGML_Q5_K, 3, 32, 1024, true); check_k_path(TG_GGML_Q5_K, 1, 64, 768, true); }
TEST(quant_matmul_rows_q2_k_vs_ggml) { check_k_path(TG_GGML_Q2_K, 3, 32, 1024, true); check_k_path(TG_GGML_Q2_K, 1, 64, 768, true); }
TEST(quant_matmul_rows_q3_k_vs_ggml) { check_k_path(TG_GGML_Q3_K, 3, 32, 1024, true); check_k_path(TG_GGML_Q3_K, 1, 64, 768, true); }
TEST(quant_matmul_rows_iq4_xs_vs_ggml) { check_k_path(TG_GGML_IQ4_XS, 3, 32, 1024, true); check_k_path(TG_GGML_IQ4_XS, 1, 64, 768, true); }
TEST(quant_matmul_rows_q6_k_vs_ggml) { check_k_path(TG_GGML_Q6_K, 3, 32, 1024, true); check_k_path(TG_GGML_Q6_K, 1, 64, 768, true); }
/* ggml's vec_dot of x's row (quantized to Q8_K) with one row of type t
 * (check_quant_experts's reference). */
static float ref_row_dot_k(int t, const uint8_t *row, const float *x, int64_t k, double *mag) {
  float *dx = malloc(sizeof(float) * (size_t)(k / 256));
  int8_t *q = malloc((size_t)k);
  int *bs = malloc(sizeof(int) * (size_t)(k / 16));
  ref_quantize_q8_k(x, k, q, dx, bs);
  float r = ref_dot(t, row, q, dx, bs, k, mag);
  free(dx), free(q), free(bs);
  return r;
}

/* Experts (E, N, K) of the 256-value types packed as one (E * N, K)
 * matrix, multiplied by the chosen ones (tg_quant_matmul_rows_experts, an
 * MoE layer's path) against ggml's vec_dot (check_quant_experts). */
static void check_k_experts(int t, int64_t e, int64_t n, int64_t k, bool x_per_expert) {
  int64_t nbytes;
  uint8_t *w = random_k(t, e * n, k, &nbytes);
  check_quant_experts(t, w, nbytes, e, n, k, x_per_expert, fill_x, ref_row_dot_k);
  free(w);
}
TEST(quant_matmul_rows_k_experts_vs_ggml) {
  static const int types[] = { TG_GGML_Q4_K, TG_GGML_Q5_K, TG_GGML_Q6_K, TG_GGML_Q2_K, TG_GGML_Q3_K, TG_GGML_IQ4_XS };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    check_k_experts(types[i], 4, 32, 512, false);
    check_k_experts(types[i], 4, 16, 768, true);
  }
}

/* A prefill-sized chunk (128 rows of x) over a matrix whose 16-row slices
 * are small (1280 x 768, q|k|v of a 768-wide model): the scheduler had stored each decoded slice of the
 * weights as a buffer of its own (a broadcast's cheap source), 257 buffers
 * for one kernel, which then failed to compile (tg perplexity on Q2_K,
 * Q3_K, Q5_K and Q6_K files). */
TEST(quant_matmul_rows_k_big_chunk_vs_ggml) {
  check_k_path(TG_GGML_Q6_K, 128, 1280, 768, true);
  check_k_path(TG_GGML_Q3_K, 128, 1280, 768, true);
}

/* W = the identity in Q6_K (d = 1, scales 1, q - 32 = 1 on the diagonal):
 * y[i] = q[i] * d of i's block, x's Q8_K quantization bit for bit: ties
 * of nearest_int (half to even), the sign of the first largest |x|, a block
 * of zeros. */
TEST(quant_matmul_quantizes_x_like_q8_k) {
  enum { K = 512 };
  static uint8_t w[K * K / 256 * 210];
  memset(w, 0, sizeof w);
  float x[K], y[K], dx[K / 256];
  int8_t q[K];
  int bs[K / 16];
  for (int i = 0; i < K; i++) {
    for (int b = 0; b < K / 256; b++) {
      uint8_t *blk = w + ((int64_t)i * (K / 256) + b) * 210;
      memset(blk, 0, 128);
      memset(blk + 128, 0xAA, 64);   /* top bits 2 of every value: q - 32 = the low bits */
      memset(blk + 192, 1, 16);
      blk[208] = 0x00, blk[209] = 0x3C;
    }
    /* value i % 256 of block i / 256 gets low bits 1 (q - 32 = 1) */
    int j = i % 256, n = j / 128, kk = (j % 128) / 32, l = j % 32;
    uint8_t *blk = w + ((int64_t)i * (K / 256) + i / 256) * 210;
    blk[n * 64 + (kk % 2) * 32 + l] |= (uint8_t)(1 << (4 * (kk / 2)));
  }
  for (int j = 0; j < 256; j++) x[j] = j == 5 ? -127.0f : j == 200 ? 127.0f : (float)(j % 64 - 32) + 0.5f;   /* iscale 1: ties */
  for (int j = 256; j < K; j++) x[j] = j < 384 ? 0 : (float)(j - 400) * 0.37f;
  ref_quantize_q8_k(x, K, q, dx, bs);
  CHECK(dx[0] == 1.0f && q[5] == -127 && q[200] == 127 && q[6] == -26);   /* max = x[5]; -25.5 -> -26, half to even */
  tg_scope_begin();
  tg_tensor *yv = tg_quant_matmul(tg_from_data(x, TG_SHAPE(K), TG_F32), tg_from_data(w, TG_SHAPE(sizeof w), TG_U8), TG_GGML_Q6_K, TG_SHAPE(K, K));
  CHECK_MSG(yv && tg_data(yv, y, sizeof y) == 0, "%s", tg_error());
  for (int i = 0; i < K; i++) CHECK_MSG(y[i] == (float)q[i] * dx[i / 256], "x[%d] = %g: tg %g, ggml %d * %g", i, x[i], y[i], q[i], dx[i / 256]);
  tg_scope_end();
}

/* Matrices stacked by rows (a model's q|k|v) packed each where it lies
 * (tg_quant_pack_rows_stacked) give the bytes that packing their
 * concatenation gives; rows that are not whole row groups are refused. */
static void check_stacked(int type, int64_t cols) {
  const int64_t rows[3] = { 32, 16, 48 };
  int64_t nb[3], total = 0;
  uint8_t *bytes[3];
  uint32_t seed = 12345u + (uint32_t)type;
  for (int i = 0; i < 3; i++) {
    nb[i] = tg_ggml_nbytes(type, rows[i] * cols);
    bytes[i] = malloc((size_t)nb[i]);
    for (int64_t k = 0; k < nb[i]; k++) { seed = seed * 1664525u + 1013904223u; bytes[i][k] = (uint8_t)(seed >> 24); }
    total += nb[i];
  }
  uint8_t *all = malloc((size_t)total);
  for (int i = 0, off = 0; i < 3; off += (int)nb[i], i++) memcpy(all + off, bytes[i], (size_t)nb[i]);
  tg_scope_begin();
  tg_tensor *parts[3], *s1, *q1, *s2, *q2;
  for (int i = 0; i < 3; i++) parts[i] = tg_from_data(bytes[i], TG_SHAPE(nb[i]), TG_U8);
  tg_tensor *cat = tg_from_data(all, TG_SHAPE(total), TG_U8);
  CHECK_MSG(tg_quant_pack_rows(cat, type, TG_SHAPE(96, cols), &s1, &q1) == 0, "%s", tg_error());
  CHECK_MSG(tg_quant_pack_rows_stacked(parts, rows, 3, type, cols, &s2, &q2) == 0, "%s", tg_error());
  if (s1 && s2) {
    size_t ns = (size_t)tg_numel(s1) * 2, nq = (size_t)tg_numel(q1);
    uint8_t *a = malloc(ns + nq), *b = malloc(ns + nq);
    CHECK(tg_numel(s2) == tg_numel(s1) && tg_numel(q2) == tg_numel(q1));
    CHECK(tg_data(s1, a, ns) == 0 && tg_data(q1, a + ns, nq) == 0 && tg_data(s2, b, ns) == 0 && tg_data(q2, b + ns, nq) == 0);
    CHECK_MSG(!memcmp(a, b, ns + nq), "type %d: stacked packing differs", type);
    free(a), free(b);
  }
  /* 8 rows: not a whole group of 16 */
  const int64_t bad[2] = { 8, 24 };
  CHECK(tg_quant_pack_rows_stacked(parts, bad, 2, type, cols, &s2, &q2) < 0);
  CHECK_MSG(strstr(tg_error(), "multiple of 16"), "%s", tg_error());
  /* a part of the wrong size */
  CHECK(tg_quant_pack_rows_stacked((tg_tensor *[]){ parts[1], parts[0] }, rows, 2, type, cols, &s2, &q2) < 0);
  CHECK_MSG(strstr(tg_error(), "must be U8 with"), "%s", tg_error());
  tg_scope_end();
  for (int i = 0; i < 3; i++) free(bytes[i]);
  free(all);
}
TEST(quant_pack_rows_stacked_as_concatenated) {
  check_stacked(TG_GGML_Q4_K, 512);
  check_stacked(TG_GGML_Q6_K, 256);
  check_stacked(TG_GGML_Q5_K, 256);
  check_stacked(TG_GGML_Q8_0, 64);
  check_stacked(TG_GGML_Q5_0, 64);
}
