/* quant_ternary_fp4.c: the ternary formats TQ1_0 and TQ2_0 and the OCP
 * microscaling format MXFP4. */
#include "quant/quant.h"

/* TQ2_0: 2-bit codes 0..2 meaning -1, 0, 1, laid out like Q2_K. */
tg_tensor *dq_tq2_0(tg_tensor *blk) {
  return tg_mul(qt_f32(tg_subs(qt_fields(blk, 0, 2, 32, 4, 2), 1)), qt_f16(blk, 64));
}

/* TQ1_0 packs 5 trits per byte as a base-3 fraction: the trit of position
 * n is the top "digit" of byte*3^n (mod 256), i.e. (byte*3^n mod 256)*3 >> 8.
 * Values: 32 bytes x 5 trits, then 16 bytes x 5, then the 4 bytes of qh x 4;
 * within a run, value n*len + m comes from byte m. */
static tg_tensor *trits(tg_tensor *blk, int off, int len, int n) {
  static const int pow3[6] = { 1, 3, 9, 27, 81, 243 };
  tg_tensor *b = qt_repeat(qt_u8(blk, off, len), 1, n);
  tg_tensor *p = tg_reshape(qt_lut(tg_arange(0, n, 1, TG_I32), pow3, 6), TG_SHAPE(n, 1));
  tg_tensor *q = qt_and(tg_mul(b, p), 255);
  tg_tensor *t = tg_rshifts(tg_muls(q, 3), 8);
  return tg_reshape(t, TG_SHAPE(tg_dim(blk, 0), (int64_t)len * n));
}
tg_tensor *dq_tq1_0(tg_tensor *blk) {
  tg_tensor *parts[3] = { trits(blk, 0, 32, 5), trits(blk, 32, 16, 5), trits(blk, 48, 4, 4) };
  return tg_mul(qt_f32(tg_subs(tg_cat(parts, 3, 1), 1)), qt_f16(blk, 52));
}

/* MXFP4's 16 E2M1 values doubled (ggml's kvalues_mxfp4): ggml keeps the
 * codes as integers and halves the scale. */
const int qt_kvalues_mxfp4[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

tg_tensor *qt_e8m0_half(tg_tensor *e) {
  tg_tensor *bits = tg_where(tg_lt(e, tg_scalar(2, TG_I32)), tg_lshift(tg_scalar(0x00200000, TG_I32), e),
                             tg_lshifts(tg_subs(e, 1), 23));
  return tg_bitcast(tg_cast(bits, TG_U32), TG_F32);
}

/* MXFP4: an E8M0 exponent byte e and 32 E2M1 codes: the doubled value
 * times 2^(e-128), per value from the spread byte. */
tg_tensor *dq_mxfp4(tg_tensor *blk) {
  tg_tensor *d = qt_e8m0_half(qt_spread(qt_u8(blk, 0, 1), 32));
  return tg_mul(qt_f32(qt_lut(qt_fields(blk, 1, 1, 16, 2, 4), qt_kvalues_mxfp4, 16)), d);
}
