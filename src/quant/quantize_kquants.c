/* quantize_kquants.c: ggml's K-quants (super-blocks of 256 values made of
 * 16 or 32-value sub-blocks whose scales are themselves quantized against
 * one fp16 d, and dmin for the kinds with a min). Without an importance
 * matrix llama-quantize uses ggml's reference quantizers; these follow them
 * operation for operation (see quantize.h on exactness).
 *
 * Block layouts (bytes):
 *   Q2_K  84: scales[16] (scale | min << 4), qs[64] (2-bit), d, dmin
 *   Q3_K 110: hmask[32] (high bits), qs[64] (low 2 bits), scales[12] (6-bit), d
 *   Q4_K 144: d, dmin, scales[12] (6-bit scale/min pairs), qs[128]
 *   Q5_K 176: d, dmin, scales[12], qh[32], qs[128]
 *   Q6_K 210: ql[128], qh[64], scales[16] (int8), d */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include "quant/quantize.h"

#define QK_K 256
#define GROUP_MAX_EPS 1e-15f

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Symmetric levels l in [-nmax, nmax) with x ~ scale * l, weighting each
 * value by x^2 and trying 18 scales around nmax/max; L gets l + nmax. */
static float fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
  float amax, max = quant_signed_absmax(x, n, &amax);
  if (amax < GROUP_MAX_EPS) { memset(L, 0, (size_t)n); return 0.f; }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)(l + nmax);
    float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; i++) {
      int l = clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
      float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

/* Q3_K's variant: start at nmax/max, then up to 5 passes moving single
 * levels while the x^2-weighted fit improves. L gets l + nmax. */
static float fit_symmetric_q3(int n, int nmax, const float *x, int8_t *L) {
  float amax, max = quant_signed_absmax(x, n, &amax);
  if (amax < GROUP_MAX_EPS) { memset(L, 0, (size_t)n); return 0.f; }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = clampi(quant_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)l;
    float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int pass = 0; pass < 5; pass++) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
      float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx <= 0) continue;
      float sl2 = suml2 - w * L[i] * L[i];
      int nl = clampi(quant_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (nl == L[i]) continue;
      slx += w * x[i] * nl;
      sl2 += w * nl * nl;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = (int8_t)nl; sumlx = slx; suml2 = sl2;
        changed++;
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Levels l in [0, nmax] with x ~ scale*l - the_min (the_min >= 0): weighted
 * least squares (or least absolute error with use_mad) over nstep+1 trial
 * scales (rmin + rdelta*is + nmax)/(max - min). */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, float rmin,
                        float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) { memset(L, 0, (size_t)n); *the_min = -min; return 0.f; }
  float iscale = nmax / (max - min), scale = 1 / iscale, best_error = 0;
  for (int i = 0; i < n; i++) {
    L[i] = (uint8_t)clampi(quant_nearest_int(iscale * (x[i] - min)), 0, nmax);
    float diff = scale * L[i] + min - x[i];
    best_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
  }
  uint8_t Laux[32];
  for (int is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      int l = clampi(quant_nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = (uint8_t)l;
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (!(D > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    if (this_min > 0) { this_min = 0; this_scale = sum_xl / sum_l2; }
    float cur_error = 0;
    for (int i = 0; i < n; i++) {
      float diff = this_scale * Laux[i] + this_min - x[i];
      cur_error += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    if (cur_error < best_error) {
      memcpy(L, Laux, (size_t)n);
      best_error = cur_error; scale = this_scale; min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

/* Packs 2-bit levels: byte l of each 32-byte group holds values l, l+32,
 * l+64, l+96 of that 128-value half. */
static void pack2(const uint8_t *L, uint8_t *qs) {
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; l++)
      qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

void quantize_row_q2_k(const float *x, void *y, int64_t k) {
  uint8_t *b = y, L[QK_K];
  float w[16], mins[16], scales[16];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, b += 84) {
    uint8_t *sc = b, *qs = b + 16;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; j++) {
      for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
      scales[j] = fit_affine(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; j++) sc[j] = (uint8_t)quant_nearest_int(iscale * scales[j]);
      quant_put_f16(b + 80, max_scale / 15.f);
    } else {
      memset(sc, 0, 16);
      quant_put_f16(b + 80, 0.f);
    }
    if (max_min > 0) {
      float iscale = 15.f / max_min;
      for (int j = 0; j < 16; j++) sc[j] |= (uint8_t)(quant_nearest_int(iscale * mins[j]) << 4);
      quant_put_f16(b + 82, max_min / 15.f);
    } else {
      quant_put_f16(b + 82, 0.f);
    }
    const float d_all = quant_get_f16(b + 80), m_all = quant_get_f16(b + 82);
    for (int j = 0; j < 16; j++) {
      const float d = d_all * (sc[j] & 0xF);
      if (!d) continue;
      const float dm = m_all * (sc[j] >> 4);
      for (int ii = 0; ii < 16; ii++) L[16 * j + ii] = (uint8_t)clampi(quant_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
    }
    pack2(L, qs);
  }
}

void quantize_row_q3_k(const float *x, void *y, int64_t k) {
  int8_t L[QK_K];
  uint8_t *b = y;
  float scales[16];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, b += 110) {
    uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    for (int j = 0; j < 16; j++) scales[j] = fit_symmetric_q3(16, 4, x + 16 * j, L + 16 * j);
    float amax, max_scale = quant_signed_absmax(scales, 16, &amax);
    memset(sc, 0, 12);
    if (max_scale) {
      /* 6-bit scales (offset 32): low nibbles in bytes 0..7, the top two
       * bits of scale j at bits 2*(j/4) of byte 8 + j%4 */
      float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; j++) {
        int8_t l8 = (int8_t)quant_nearest_int(iscale * scales[j]);
        int l = clampi(l8, -32, 31) + 32;
        if (j < 8) sc[j] = (uint8_t)(l & 0xF);
        else sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
        sc[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
      }
      quant_put_f16(b + 108, 1 / iscale);
    } else {
      quant_put_f16(b + 108, 0.f);
    }
    const float d_all = quant_get_f16(b + 108);
    for (int j = 0; j < 16; j++) {
      int s = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
      s = (s | ((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
      const float d = d_all * s;
      if (!d) continue;
      for (int ii = 0; ii < 16; ii++) L[16 * j + ii] = (int8_t)(clampi(quant_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    /* high bit of value j goes to bit j/32 of hmask[j%32] */
    memset(hmask, 0, 32);
    uint8_t low[QK_K];
    for (int j = 0; j < QK_K; j++) {
      low[j] = (uint8_t)L[j];
      if (L[j] > 3) { hmask[j % 32] |= (uint8_t)(1 << (j / 32)); low[j] = (uint8_t)(L[j] - 4); }
    }
    pack2(low, qs);
  }
}

/* Q4_K/Q5_K: eight 32-value sub-blocks fitted with fit_affine, their
 * scales and mins quantized to 6 bits against d = max_scale/63 and
 * dmin = max_min/63, then the values re-quantized with those. */
static void kquant_affine_block(const float *x, uint8_t *hdr, uint8_t *L, int nmax, float rmin, int nstep) {
  float w[32], mins[8], scales[8], max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; j++) {
    const float *xb = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; l++) sum_x2 += xb[l] * xb[l];
    float av_x = sqrtf(sum_x2 / 32);
    for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(xb[l]);
    scales[j] = fit_affine(32, nmax, xb, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  /* scales[12]: j < 4 -> bytes j (scale) and j+4 (min), 6 bits; j >= 4 ->
   * low nibbles in byte j+4, top 2 bits in bits 6-7 of bytes j-4 / j */
  uint8_t *sc = hdr + 4;
  float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f, inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; j++) {
    uint8_t ls = (uint8_t)quant_nearest_int(inv_scale * scales[j]), lm = (uint8_t)quant_nearest_int(inv_min * mins[j]);
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    if (j < 4) { sc[j] = ls; sc[j + 4] = lm; }
    else {
      sc[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
      sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
      sc[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  quant_put_f16(hdr, max_scale / 63.f);
  quant_put_f16(hdr + 2, max_min / 63.f);
  const float d_all = quant_get_f16(hdr), m_all = quant_get_f16(hdr + 2);
  for (int j = 0; j < 8; j++) {
    uint8_t s, m;
    if (j < 4) { s = sc[j] & 63; m = sc[j + 4] & 63; }
    else { s = (uint8_t)((sc[j + 4] & 0xF) | (sc[j - 4] >> 6) << 4); m = (uint8_t)((sc[j + 4] >> 4) | (sc[j] >> 6) << 4); }
    const float d = d_all * s;
    if (!d) continue;
    const float dm = m_all * m;
    for (int ii = 0; ii < 32; ii++) L[32 * j + ii] = (uint8_t)clampi(quant_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
  }
}

void quantize_row_q4_k(const float *x, void *y, int64_t k) {
  uint8_t *b = y, L[QK_K];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, b += 144) {
    memset(b, 0, 16);
    kquant_affine_block(x, b, L, 15, -1.f, 20);
    uint8_t *q = b + 16;
    for (int j = 0; j < QK_K; j += 64, q += 32)
      for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
  }
}

void quantize_row_q5_k(const float *x, void *y, int64_t k) {
  uint8_t *b = y, L[QK_K];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, b += 176) {
    memset(b, 0, 16);
    kquant_affine_block(x, b, L, 31, -0.5f, 15);
    /* qh[l] bit 2*(j/64) / 2*(j/64)+1: fifth bit of values j+l / j+l+32 */
    uint8_t *qh = b + 16, *ql = b + 48;
    memset(qh, 0, 32);
    for (int j = 0, s = 0; j < QK_K; j += 64, s += 2, ql += 32)
      for (int l = 0; l < 32; l++) {
        int l1 = L[j + l], l2 = L[j + l + 32];
        if (l1 > 15) { l1 -= 16; qh[l] |= (uint8_t)(1 << s); }
        if (l2 > 15) { l2 -= 16; qh[l] |= (uint8_t)(2 << s); }
        ql[l] = (uint8_t)(l1 | l2 << 4);
      }
  }
}

void quantize_row_q6_k(const float *x, void *y, int64_t k) {
  int8_t L[QK_K];
  uint8_t *b = y;
  float scales[16];
  for (int64_t i = 0; i < k / QK_K; i++, x += QK_K, b += 210) {
    uint8_t *ql = b, *qh = b + 128;
    int8_t *sc = (int8_t *)(b + 192);
    for (int j = 0; j < 16; j++) scales[j] = fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
    float max_abs, max_scale = quant_signed_absmax(scales, 16, &max_abs);
    if (max_abs < GROUP_MAX_EPS) { memset(b, 0, 210); continue; }
    float iscale = -128.f / max_scale;
    quant_put_f16(b + 208, 1 / iscale);
    for (int j = 0; j < 16; j++) {
      int v = quant_nearest_int(iscale * scales[j]);
      sc[j] = (int8_t)(v < 127 ? v : 127);
    }
    const float d_all = quant_get_f16(b + 208);
    for (int j = 0; j < 16; j++) {
      const float d = d_all * sc[j];
      if (!d) continue;
      for (int ii = 0; ii < 16; ii++) L[16 * j + ii] = (int8_t)(clampi(quant_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
    /* per 128 values: ql[l] = low nibbles of l | l+64, ql[l+32] = of l+32 |
     * l+96; qh[l] = the top two bits of l, l+32, l+64, l+96 */
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
      for (int l = 0; l < 32; l++) {
        const int8_t *v = L + j + l;
        ql[l] = (uint8_t)((v[0] & 0xF) | (v[64] & 0xF) << 4);
        ql[l + 32] = (uint8_t)((v[32] & 0xF) | (v[96] & 0xF) << 4);
        qh[l] = (uint8_t)((v[0] >> 4) | (v[32] >> 4) << 2 | (v[64] >> 4) << 4 | (v[96] >> 4) << 6);
      }
  }
}
