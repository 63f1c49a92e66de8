/* quantize_ternary.c: TQ1_0 and TQ2_0, ggml's ternary formats (values -1, 0,
 * +1 times an fp16 d = absmax, 256 per block; round half away from zero).
 *   TQ1_0 (54 bytes): qs[48] hold 5 trits each, qh[4] hold 4, d. A byte
 *     stores the base-3 number of its trits (first trit most significant)
 *     scaled to 0..255 by ceil(q * 256 / 243), so trit n is the top digit
 *     of byte * 3^n.
 *   TQ2_0 (66 bytes): qs[64] hold 4 2-bit codes (t + 1) each, then d. */
#include <math.h>
#include "quant/quantize.h"

static float absmax(const float *x, int n) {
  float m = 0;
  for (int j = 0; j < n; j++) m = fmaxf(m, fabsf(x[j]));
  return m;
}

/* Code 0..2 of x*id: -1, 0, +1 -> 0, 1, 2. */
static int trit(float x, float id) { return (int)lroundf(x * id) + 1; }

/* The byte for n trits of x taken every `stride` values (n < 5: padded
 * with zero trits at the low end). */
static uint8_t pack_trits(const float *x, int stride, int n, float id) {
  unsigned q = 0;
  for (int t = 0; t < n; t++) q = q * 3 + (unsigned)trit(x[t * stride], id);
  for (int t = n; t < 5; t++) q *= 3;
  return (uint8_t)((q * 256 + 242) / 243);
}

void quantize_row_tq1_0(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 256; i++, x += 256, b += 54) {
    const float d = absmax(x, 256), id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b + 52, d);
    for (int m = 0; m < 32; m++) b[m] = pack_trits(x + m, 32, 5, id);          /* values 0..159 */
    for (int m = 0; m < 16; m++) b[32 + m] = pack_trits(x + 160 + m, 16, 5, id); /* 160..239 */
    for (int j = 0; j < 4; j++) b[48 + j] = pack_trits(x + 240 + j, 4, 4, id);   /* 240..255 */
  }
}

void quantize_row_tq2_0(const float *x, void *y, int64_t k) {
  uint8_t *b = y;
  for (int64_t i = 0; i < k / 256; i++, x += 256, b += 66) {
    const float d = absmax(x, 256), id = d ? 1.0f / d : 0.0f;
    quant_put_f16(b + 64, d);
    for (int j = 0; j < 64; j += 32)
      for (int m = 0; m < 32; m++) {
        unsigned q = 0;
        for (int n = 0; n < 4; n++) q |= (unsigned)(trit(x[128 * (j / 32) + m + 32 * n], id) & 3) << (2 * n);
        b[j + m] = (uint8_t)q;
      }
  }
}
