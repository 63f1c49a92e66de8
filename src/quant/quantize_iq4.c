/* quantize_iq4.c: IQ4_NL (32 values: fp16 d, 16 bytes of 4-bit indices into
 * a fixed non-linear table) and IQ4_XS (256 values: fp16 d, 6-bit scales for
 * eight 32-value sub-blocks, the same indices). As ggml_quantize_chunk does
 * without an importance matrix: weights x^2 and 15 trial scales per
 * sub-block (ggml's quantize_row_iq4_nl_impl with ntry = 7).
 *
 * IQ4_XS layout (136 bytes): d, scales_h (u16: top 2 bits of scale ib at
 * bits 2*ib), scales_l[4] (low nibbles, two per byte), qs[128]. */
#include <math.h>
#include <string.h>
#include "quant/quantize.h"

#define GROUP_MAX_EPS 1e-15f
static const int8_t iq4_values[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

/* Index of the table value nearest x (the lower one on ties). */
static int nearest_value(float x) {
  if (x <= iq4_values[0]) return 0;
  if (x >= iq4_values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (x < iq4_values[mid]) hi = mid; else lo = mid;
  }
  return x - iq4_values[hi - 1] < iq4_values[hi] - x ? hi - 1 : hi;
}

/* Weighted fit of one 32-value sub-block: the best of the start scale and
 * 15 trials around -max/127 (sum of w*q*x over sum of w*q^2). L gets the
 * indices of the start scale. */
static float fit_block(const float *x, uint8_t *L) {
  enum { NTRY = 7 };
  float amax, max = quant_signed_absmax(x, 32, &amax), w[32];
  for (int j = 0; j < 32; j++) w[j] = x[j] * x[j];
  if (amax < GROUP_MAX_EPS) return 0;
  float d = -max / iq4_values[0], id = 1 / d, sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; j++) {
    int l = nearest_value(id * x[j]);
    L[j] = (uint8_t)l;
    float q = iq4_values[l];
    sumqx += w[j] * q * x[j];
    sumq2 += w[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -NTRY; itry <= NTRY; itry++) {
    id = (itry + iq4_values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; j++) {
      float q = iq4_values[nearest_value(id * x[j])];
      sumqx += w[j] * q * x[j];
      sumq2 += w[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) { d = sumqx / sumq2; best = d * sumqx; }
  }
  return d;
}

/* value 32i+j in the low nibble of byte 16i+j, 32i+16+j in its high one */
static void pack_nibbles(const uint8_t *L, uint8_t *qs, int n) {
  for (int i = 0; i < n / 32; i++)
    for (int j = 0; j < 16; j++) qs[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

void quantize_row_iq4_nl(const float *x, void *y, int64_t k) {
  uint8_t *b = y, L[32];
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 18) {
    float d = fit_block(x, L);
    quant_put_f16(b, d);
    float id = d ? 1 / d : 0;
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)nearest_value(id * x[j]);
    pack_nibbles(L, b + 2, 32);
  }
}

void quantize_row_iq4_xs(const float *x, void *y, int64_t k) {
  uint8_t *b = y, L[256];
  float scales[8];
  for (int64_t i = 0; i < k / 256; i++, x += 256, b += 136) {
    for (int ib = 0; ib < 8; ib++) scales[ib] = fit_block(x + 32 * ib, L + 32 * ib);
    float amax_scale, max_scale = quant_signed_absmax(scales, 8, &amax_scale);
    /* the sub-block scales become 6-bit multiples of d (d itself is used
     * unrounded for the indices, as ggml does) */
    float d = -max_scale / 32;
    quant_put_f16(b, d);
    float id = d ? 1 / d : 0.f;
    uint16_t sh = 0;
    uint8_t *sl = b + 4;
    for (int ib = 0; ib < 8; ib++) {
      int l = quant_nearest_int(id * scales[ib]);
      l = l < -32 ? -32 : l > 31 ? 31 : l;
      float dl = d * l, idl = dl ? 1 / dl : 0.f;
      for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)nearest_value(idl * x[32 * ib + j]);
      l += 32;
      if (ib % 2 == 0) sl[ib / 2] = (uint8_t)(l & 0xF);
      else sl[ib / 2] |= (uint8_t)((l & 0xF) << 4);
      sh |= (uint16_t)((l >> 4) << 2 * ib);
    }
    b[2] = (uint8_t)sh; b[3] = (uint8_t)(sh >> 8);
    pack_nibbles(L, b + 8, 256);
  }
}
