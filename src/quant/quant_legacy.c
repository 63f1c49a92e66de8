/* quant_legacy.c: the 32-value block formats Q4_0 Q4_1 Q5_0 Q5_1 Q8_0.
 * Value j of a block sits in the low nibble of qs[j] for j < 16 and in the
 * high nibble of qs[j-16] above; Q5 adds bit j of a 32-bit word qh. */
#include "quant/quant.h"

static tg_tensor *nibbles32(tg_tensor *blk, int off) { return qt_fields(blk, off, 1, 16, 2, 4); }
/* Bit j of the little-endian 32-bit word at off, moved to bit 4: (nb, 32). */
static tg_tensor *fifth_bits(tg_tensor *blk, int off) { return tg_lshifts(qt_fields(blk, off, 4, 1, 8, 1), 4); }

/* q*d, or q*d + m when m is given (ggml: one multiply, then the add). */
static tg_tensor *scale(tg_tensor *q, tg_tensor *d, tg_tensor *m) {
  tg_tensor *y = tg_mul(qt_f32(q), d);
  return m ? tg_add(y, m) : y;
}

tg_tensor *dq_q4_0(tg_tensor *blk) { return scale(tg_subs(nibbles32(blk, 2), 8), qt_f16(blk, 0), NULL); }
tg_tensor *dq_q4_1(tg_tensor *blk) { return scale(nibbles32(blk, 4), qt_f16(blk, 0), qt_f16(blk, 2)); }
tg_tensor *dq_q5_0(tg_tensor *blk) {
  return scale(tg_subs(qt_or(nibbles32(blk, 6), fifth_bits(blk, 2)), 16), qt_f16(blk, 0), NULL);
}
tg_tensor *dq_q5_1(tg_tensor *blk) { return scale(qt_or(nibbles32(blk, 8), fifth_bits(blk, 4)), qt_f16(blk, 0), qt_f16(blk, 2)); }
tg_tensor *dq_q8_0(tg_tensor *blk) { return scale(qt_i8(blk, 2, 32), qt_f16(blk, 0), NULL); }
