/* quant_iq4.c: IQ4_NL (32 values) and IQ4_XS (256 values in 8 sub-blocks
 * with 6-bit scales): 4-bit indices into a fixed non-linear table of 16
 * levels (qt_kvalues_iq4nl), nibbles laid out like Q4_0. */
#include "quant/quant.h"

static tg_tensor *levels(tg_tensor *nibbles) { return qt_f32(qt_lut(nibbles, qt_kvalues_iq4nl, 16)); }

tg_tensor *dq_iq4_nl(tg_tensor *blk) { return tg_mul(qt_f16(blk, 0), levels(qt_fields(blk, 2, 1, 16, 2, 4))); }

tg_tensor *dq_iq4_xs(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* scale of sub-block ib: nibble ib of the 4 bytes at 4, top 2 bits from
   * bits 2ib.. of the 16-bit word at 2 */
  tg_tensor *lo = qt_spread(tg_reshape(qt_unpack(qt_u8(blk, 4, 4), 2, 2, 4), TG_SHAPE(nb, 8)), 32);
  tg_tensor *hi = qt_spread(tg_reshape(qt_unpack(qt_u16(blk, 2, 1), 2, 8, 2), TG_SHAPE(nb, 8)), 32);
  tg_tensor *ls = tg_subs(qt_or(lo, tg_lshifts(hi, 4)), 32);
  tg_tensor *dl = tg_mul(qt_f16(blk, 0), qt_f32(ls));
  return tg_mul(dl, levels(qt_fields(blk, 8, 8, 16, 2, 4)));
}
