/* quantize_mxfp4.c: MXFP4 (OCP microscaling FP4, 32 values, 17 bytes): an
 * E8M0 exponent byte e, then 16 bytes of 4-bit E2M1 codes (value j in the
 * low nibble of byte 1+j, value 16+j in its high nibble). As ggml does: the
 * scale is 2^(floor(log2(absmax)) - 2), applied to the codes' doubled
 * values (0, 1, 2, 3, 4, 6, 8, 12), and each value takes the nearest code.
 * floor(log2f()) comes from the C library, as in ggml, so results at exact
 * powers of two follow libm. */
#include <math.h>
#include "quant/quantize.h"

static const int8_t mxfp4_values[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* 2^(e - 128): half of the E8M0 value, to go with the doubled codes. */
static float e8m0_half(uint8_t e) {
  uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

static int nearest_code(float x, float d) {
  int best = 0;
  float best_err = fabsf(mxfp4_values[0] * d - x);
  for (int i = 1; i < 16; i++) {
    float err = fabsf(mxfp4_values[i] * d - x);
    if (err < best_err) { best = i; best_err = err; }
  }
  return best;
}

void quantize_row_mxfp4(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 32; i++, x += 32, b += 17) {
    float amax = 0;
    for (int j = 0; j < 32; j++)
      if (amax < fabsf(x[j])) amax = fabsf(x[j]);
    const uint8_t e = amax > 0.0f ? (uint8_t)(int)(floorf(log2f(amax)) - 2 + 127) : 0;
    const float d = e8m0_half(e);
    b[0] = e;
    for (int j = 0; j < 16; j++) b[1 + j] = (uint8_t)(nearest_code(x[j], d) | nearest_code(x[j + 16], d) << 4);
  }
}
