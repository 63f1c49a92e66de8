/* quantize_legacy.c: ggml's first block formats (32 values per block, one
 * fp16 scale d, and a min m for the _1 kinds) plus plain F32/F16/BF16 rows.
 * Values are rounded the way ggml's reference quantizers round: a float
 * x/d plus 8.5 (or 16.5, 0.5) truncated by an integer cast, so a value just
 * below a half-way point stays below it. */
#include <float.h>
#include <math.h>
#include <string.h>
#include "quant/quantize.h"
#include "dtype/fpconv.h"

uint16_t quant_f32_to_f16(float x) { return tg_cvt_f32_f16(x); }
float quant_f16_to_f32(uint16_t h) { return tg_cvt_f16_f32(h); }

void quantize_row_f32(const float *x, void *y, int64_t k) { memcpy(y, x, (size_t)k * 4); }

void quantize_row_f16(const float *x, void *y, int64_t k) {
  uint8_t *p = y;
  for (int64_t i = 0; i < k; i++) quant_put_f16(p + 2 * i, x[i]);
}

void quantize_row_bf16(const float *x, void *y, int64_t k) {
  uint8_t *p = y;
  for (int64_t i = 0; i < k; i++) {
    uint16_t h = tg_cvt_f32_bf16(x[i]);
    p[2 * i] = (uint8_t)h; p[2 * i + 1] = (uint8_t)(h >> 8);
  }
}

static void min_max(const float *x, int n, float *mn, float *mx) {
  *mn = FLT_MAX; *mx = -FLT_MAX;
  for (int j = 0; j < n; j++) {
    if (x[j] < *mn) *mn = x[j];
    if (x[j] > *mx) *mx = x[j];
  }
}

/* Q4_0 (18 bytes): d, then 16 bytes of 4-bit q (value j low nibble, j+16
 * high); x = d * (q - 8), d = -max/8 so the largest |x| maps to q = 0. */
void quantize_row_q4_0(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 18) {
    float amax;
    const float d = quant_signed_absmax(x, 32, &amax) / -8;
    const float id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b, d);
    for (int j = 0; j < 16; j++) {
      int q0 = (int8_t)(x[j] * id + 8.5f), q1 = (int8_t)(x[j + 16] * id + 8.5f);
      if (q0 > 15) q0 = 15;
      if (q1 > 15) q1 = 15;
      b[2 + j] = (uint8_t)(q0 | q1 << 4);
    }
  }
}

/* Q4_1 (20 bytes): d, m, 16 bytes of nibbles; x = d*q + m. */
void quantize_row_q4_1(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 20) {
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float d = (mx - mn) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b, d);
    quant_put_f16(b + 2, mn);
    for (int j = 0; j < 16; j++) {
      int q0 = (int8_t)((x[j] - mn) * id + 0.5f), q1 = (int8_t)((x[j + 16] - mn) * id + 0.5f);
      if (q0 > 15) q0 = 15;
      if (q1 > 15) q1 = 15;
      b[4 + j] = (uint8_t)(q0 | q1 << 4);
    }
  }
}

/* Packs 32 5-bit values: low nibbles as in Q4, the fifth bits into a
 * little-endian u32 (bit j for value j). */
static void pack5(const uint8_t *q, uint8_t *qh, uint8_t *qs) {
  uint32_t h = 0;
  for (int j = 0; j < 16; j++) {
    qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
    h |= (uint32_t)(q[j] >> 4 & 1) << j;
    h |= (uint32_t)(q[j + 16] >> 4 & 1) << (j + 16);
  }
  for (int j = 0; j < 4; j++) qh[j] = (uint8_t)(h >> 8 * j);
}

/* Q5_0 (22 bytes): d, qh (4), qs (16); x = d * (q - 16), d = -max/16. */
void quantize_row_q5_0(const float *x, void *y, int64_t k) {
  uint8_t *b = y, q[32];
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 22) {
    float amax;
    const float d = quant_signed_absmax(x, 32, &amax) / -16;
    const float id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b, d);
    for (int j = 0; j < 32; j++) {
      int v = (int8_t)(x[j] * id + 16.5f);
      q[j] = (uint8_t)(v > 31 ? 31 : v);
    }
    pack5(q, b + 2, b + 6);
  }
}

/* Q5_1 (24 bytes): d, m, qh (4), qs (16); x = d*q + m. */
void quantize_row_q5_1(const float *x, void *y, int64_t k) {
  uint8_t *b = y, q[32];
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 24) {
    float mn, mx;
    min_max(x, 32, &mn, &mx);
    const float d = (mx - mn) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b, d);
    quant_put_f16(b + 2, mn);
    for (int j = 0; j < 32; j++) q[j] = (uint8_t)((x[j] - mn) * id + 0.5f);
    pack5(q, b + 4, b + 8);
  }
}

/* Q8_0 (34 bytes): d = absmax/127, then 32 int8 round(x/d). */
void quantize_row_q8_0(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 34) {
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b, d);
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
  }
}
