/* quant_k.c: the K-quants Q2_K Q3_K Q4_K Q5_K Q6_K (256-value super-blocks
 * of 16 or 8 sub-blocks, each with its own small integer scale).
 *
 * The 2-bit types store 128 values in 32 bytes four times over: value
 * n*128 + j*32 + l is bits 2j..2j+1 of byte n*32 + l. Q4_K/Q5_K store 64
 * values in 32 bytes (low nibbles, then high nibbles). */
#include "quant/quant.h"

static tg_tensor *crumbs256(tg_tensor *blk, int off) { return qt_fields(blk, off, 2, 32, 4, 2); }
static tg_tensor *nibbles256(tg_tensor *blk, int off) { return qt_fields(blk, off, 4, 32, 2, 4); }
/* Bit k of byte l of the 32 bytes at off is the extra bit of value k*32 + l. */
static tg_tensor *bits256(tg_tensor *blk, int off) { return qt_fields(blk, off, 1, 32, 8, 1); }

/* dl * q - ml with dl = d * sc and ml = dmin * m (sc, m spread per value). */
static tg_tensor *affine(tg_tensor *q, tg_tensor *d, tg_tensor *sc, tg_tensor *dmin, tg_tensor *m) {
  tg_tensor *y = tg_mul(tg_mul(d, qt_f32(sc)), qt_f32(q));
  return m ? tg_sub(y, tg_mul(dmin, qt_f32(m))) : y;
}

tg_tensor *dq_q2_k(tg_tensor *blk) {
  tg_tensor *sc = qt_spread(qt_u8(blk, 0, 16), 16);
  return affine(crumbs256(blk, 16), qt_f16(blk, 80), qt_and(sc, 15), qt_f16(blk, 82), tg_rshifts(sc, 4));
}

tg_tensor *dq_q3_k(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* 16 6-bit scales: low nibbles from bytes 0..7 (low halves first), top
   * 2 bits from bytes 8..11 (2 bits per scale, 4 scales per byte column) */
  tg_tensor *lo = qt_spread(tg_reshape(qt_unpack(qt_u8(blk, 96, 8), 1, 2, 4), TG_SHAPE(nb, 16)), 16);
  tg_tensor *hi = qt_spread(tg_reshape(qt_unpack(qt_u8(blk, 104, 4), 1, 4, 2), TG_SHAPE(nb, 16)), 16);
  tg_tensor *sc = tg_subs(qt_or(lo, tg_lshifts(hi, 4)), 32);
  /* a clear hmask bit subtracts 4 */
  tg_tensor *q = tg_add(tg_subs(crumbs256(blk, 32), 4), tg_lshifts(bits256(blk, 0), 2));
  return affine(q, qt_f16(blk, 108), sc, NULL, NULL);
}

void qk_q4_k_ints(tg_tensor *blk, tg_tensor **q, tg_tensor **sc, tg_tensor **m) {
  qt_scale_min_k4(blk, 4, 32, sc, m);
  *q = nibbles256(blk, 16);
}

tg_tensor *dq_q4_k(tg_tensor *blk) {
  tg_tensor *q, *sc, *m;
  qk_q4_k_ints(blk, &q, &sc, &m);
  return affine(q, qt_f16(blk, 0), sc, qt_f16(blk, 2), m);
}

tg_tensor *dq_q5_k(tg_tensor *blk) {
  tg_tensor *sc, *m;
  qt_scale_min_k4(blk, 4, 32, &sc, &m);
  tg_tensor *q = qt_or(nibbles256(blk, 48), tg_lshifts(bits256(blk, 16), 4));
  return affine(q, qt_f16(blk, 0), sc, qt_f16(blk, 2), m);
}

void qk_q6_k_ints(tg_tensor *blk, tg_tensor **q, tg_tensor **sc) {
  /* value n*128 + k*32 + l: low 4 bits from nibble k/2 of ql[n*64 + (k%2)*32 + l],
   * top 2 bits from bits 2k.. of qh[n*32 + l] */
  tg_tensor *ql = qt_fields(blk, 0, 2, 64, 2, 4), *qh = qt_fields(blk, 128, 2, 32, 4, 2);
  *q = tg_subs(qt_or(ql, tg_lshifts(qh, 4)), 32);
  *sc = qt_spread(qt_i8(blk, 192, 16), 16);
}

tg_tensor *dq_q6_k(tg_tensor *blk) {
  tg_tensor *q, *sc;
  qk_q6_k_ints(blk, &q, &sc);
  return affine(q, qt_f16(blk, 208), sc, NULL, NULL);
}
