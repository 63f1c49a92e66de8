/* quant_iq.c: the lattice formats IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S
 * IQ1_S IQ1_M. Groups of 8 (IQ3: 4) values are one row of a fixed grid
 * (iq_grids.c) picked by an index of 8..11 bits; IQ2/IQ3 add per-value sign
 * bits, IQ1 a shift of +-1/8. Every type has 8 sub-blocks of 32 values.
 *
 * The grid lookup is tg_take over the grid as a tensor; the sign patterns
 * of IQ2_XXS/IQ2_XS/IQ3_XXS (ggml's ksigns_iq2xs: 7 stored bits plus an even
 * parity bit) are computed, not looked up. */
#include "quant/quant.h"
#include "tensor/tensor.h"

/* The last axis cut to [start, start+len). */
static tg_tensor *cols(tg_tensor *x, int start, int len) {
  int nd = tg_ndim(x);
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  for (int k = 0; k < nd; k++) en[k] = tg_dim(x, k);
  st[nd - 1] = start, en[nd - 1] = start + len;
  return tg_shrink(x, st, en);
}

/* A grid as a (n, width) I32 tensor of its bytes (signed for IQ1). */
static tg_tensor *grid(const void *g, int n, int width, bool is_signed) {
  tg_tensor *t = tg_from_data(g, TG_SHAPE(n, width), TG_U8);
  return tg_cast(is_signed ? tg_bitcast(t, TG_I8) : t, TG_I32);
}

/* The values' shape (nb, 8 sub-blocks, 4 rows, 8 values): fields are
 * broadcast to it as raw bytes and decoded per value (see qt_spread). */
static tg_tensor *per_value(tg_tensor *x) {
  while (tg_ndim(x) < 4) x = tg_unsqueeze(x, -1);
  return tg_expand(x, TG_SHAPE(tg_dim(x, 0), 8, 4, 8));
}
/* Bytes [start, start+n) of each sub-block's `stride` bytes at off: (nb, 8, n). */
static tg_tensor *sub_bytes(tg_tensor *blk, int off, int stride, int start, int n) {
  return cols(tg_reshape(qt_u8(blk, off, 8 * stride), TG_SHAPE(tg_dim(blk, 0), 8, stride)), start, n);
}

/* The sign bit (1: negative) of value j of its row, from the row's 7-bit
 * ksigns index i (per value): bit j of i, and for j = 7 the bit that makes
 * the pattern's number of set bits even. */
static tg_tensor *ksign_of(tg_tensor *i) {
  tg_tensor *p = tg_bitwise_xor(i, tg_rshifts(i, 4));
  p = tg_bitwise_xor(p, tg_rshifts(p, 2));
  p = qt_and(tg_bitwise_xor(p, tg_rshifts(p, 1)), 1);
  tg_tensor *j = tg_reshape(tg_arange(0, 8, 1, TG_I32), TG_SHAPE(1, 1, 1, 8));
  return qt_and(tg_rshift(qt_or(i, tg_lshifts(p, 7)), j), 1);
}
/* ksign_of the index of row l: bits 7l.. of the sub-block's 32-bit word
 * (its bytes b0..b3, per value). */
static tg_tensor *ksign_bit(tg_tensor *b0, tg_tensor *b1, tg_tensor *b2, tg_tensor *b3) {
  tg_tensor *w = qt_or(qt_or(tg_cast(b0, TG_I64), tg_lshifts(tg_cast(b1, TG_I64), 8)),
                       qt_or(tg_lshifts(tg_cast(b2, TG_I64), 16), tg_lshifts(tg_cast(b3, TG_I64), 24)));
  tg_tensor *l7 = tg_reshape(tg_arange(0, 28, 7, TG_I64), TG_SHAPE(1, 1, 4, 1));
  return ksign_of(tg_cast(qt_and(tg_rshift(w, l7), 127), TG_I32));
}
/* The sub-blocks' 32-bit words (bytes [start, start+4) of each sub-block's
 * `stride` bytes at off), byte by byte per value: sign indices and a scale. */
static void sub_words(tg_tensor *blk, int off, int stride, int start, tg_tensor **b) {
  for (int k = 0; k < 4; k++) b[k] = per_value(sub_bytes(blk, off, stride, start + k, 1));
}

/* db * grid value, negated where the sign bit is set (ggml multiplies by -1). */
static tg_tensor *signed_values(tg_tensor *db, tg_tensor *g, tg_tensor *sign) {
  tg_tensor *v = tg_mul(db, qt_f32(g));
  return tg_where(tg_ne(sign, tensor_const(0, TG_I32)), tg_neg(v), v);
}
/* (d * (0.5 + s)) * k: the IQ2/IQ3_XXS sub-block scale. */
static tg_tensor *half_scale(tg_tensor *d, tg_tensor *s, double k) {
  return tg_muls(tg_mul(d, tg_adds(qt_f32(s), 0.5)), k);
}
static tg_tensor *flat(tg_tensor *x) { return tg_reshape(x, TG_SHAPE(tg_dim(x, 0), 256)); }
/* (nb, a) -> (nb, a, 1, ...) with `extra` trailing ones, for broadcasting. */
static tg_tensor *trail(tg_tensor *x, int extra) {
  for (int k = 0; k < extra; k++) x = tg_unsqueeze(x, -1);
  return x;
}

tg_tensor *dq_iq2_xxs(tg_tensor *blk) {
  /* per sub-block 8 bytes: 4 grid indices, then a 32-bit word holding four
   * 7-bit sign indices and a 4-bit scale on top */
  tg_tensor *b[4];
  sub_words(blk, 2, 8, 4, b);
  tg_tensor *db = half_scale(per_value(qt_f16(blk, 0)), tg_rshifts(b[3], 4), 0.25);
  tg_tensor *g = qt_gather_rows(grid(qt_iq2xxs_grid, 256, 8, false), sub_bytes(blk, 2, 8, 0, 4));
  return flat(signed_values(db, g, ksign_bit(b[0], b[1], b[2], b[3])));
}

/* IQ2_XS/IQ2_S: two 4-bit scales per sub-block, one per 16 values. */
static tg_tensor *iq2_scales(tg_tensor *blk, int off) {
  int64_t nb = tg_dim(blk, 0);
  tg_tensor *s = qt_repeat(qt_unpack(qt_u8(blk, off, 8), 2, 2, 4), 3, 2);   /* (nb, 8, 2, 2) */
  return half_scale(tg_unsqueeze(qt_f16(blk, 0), -1), tg_reshape(s, TG_SHAPE(nb, 8, 4)), 0.25);
}

tg_tensor *dq_iq2_xs(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* 16-bit words: 9-bit grid index, 7-bit sign index */
  tg_tensor *w = tg_reshape(qt_u16(blk, 2, 32), TG_SHAPE(nb, 8, 4));
  tg_tensor *g = qt_gather_rows(grid(qt_iq2xs_grid, 512, 8, false), qt_and(w, 511));
  return flat(signed_values(trail(iq2_scales(blk, 66), 1), g, ksign_of(per_value(tg_rshifts(w, 9)))));
}

tg_tensor *dq_iq2_s(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* grid index: a byte of qs plus 2 bits of qh[sub-block]; signs stored whole */
  tg_tensor *hi = qt_unpack(qt_u8(blk, 66, 8), 2, 4, 2);
  tg_tensor *idx = qt_or(tg_reshape(qt_u8(blk, 2, 32), TG_SHAPE(nb, 8, 4)), tg_lshifts(hi, 8));
  tg_tensor *g = qt_gather_rows(grid(qt_iq2s_grid, 1024, 8, false), idx);
  tg_tensor *s = qt_unpack(tg_reshape(qt_u8(blk, 34, 32), TG_SHAPE(nb, 8, 4)), -1, 8, 1);
  return flat(signed_values(trail(iq2_scales(blk, 74), 1), g, s));
}

/* IQ3: 8 grid rows of 4 values per sub-block, as (nb, 8, 4, 8). */
static tg_tensor *iq3_rows(tg_tensor *idx, const uint32_t *gr, int n) {
  int64_t nb = tg_dim(idx, 0);
  return tg_reshape(qt_gather_rows(grid(gr, n, 4, false), idx), TG_SHAPE(nb, 8, 4, 8));
}

tg_tensor *dq_iq3_xxs(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* the sub-blocks' 32-bit words at 66: four 7-bit sign indices, a 4-bit scale */
  tg_tensor *b[4];
  sub_words(blk, 66, 4, 0, b);
  tg_tensor *db = half_scale(per_value(qt_f16(blk, 0)), tg_rshifts(b[3], 4), 0.5);
  tg_tensor *g = iq3_rows(tg_reshape(qt_u8(blk, 2, 64), TG_SHAPE(nb, 8, 8)), qt_iq3xxs_grid, 256);
  return flat(signed_values(db, g, ksign_bit(b[0], b[1], b[2], b[3])));
}

tg_tensor *dq_iq3_s(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* grid index: a byte of qs plus bit k of qh[sub-block] as bit 8 */
  tg_tensor *idx = qt_or(tg_reshape(qt_u8(blk, 2, 64), TG_SHAPE(nb, 8, 8)), tg_lshifts(qt_unpack(qt_u8(blk, 66, 8), 2, 8, 1), 8));
  tg_tensor *g = iq3_rows(idx, qt_iq3s_grid, 512);
  tg_tensor *s = qt_unpack(tg_reshape(qt_u8(blk, 74, 32), TG_SHAPE(nb, 8, 4)), -1, 8, 1);
  tg_tensor *sc = tg_reshape(qt_unpack(qt_u8(blk, 106, 4), 2, 2, 4), TG_SHAPE(nb, 8));
  tg_tensor *db = tg_mul(qt_f16(blk, 0), qt_f32(tg_adds(tg_muls(sc, 2), 1)));
  return flat(signed_values(trail(db, 2), g, s));
}

/* IQ1: dl * (grid + delta), delta = -1/8 where the sign bit is set. */
static tg_tensor *iq1_values(tg_tensor *dl, tg_tensor *idx, tg_tensor *neg) {
  tg_tensor *g = qt_f32(qt_gather_rows(grid(qt_iq1s_grid, 2048, 8, true), idx));
  tg_tensor *delta = tg_where(tg_ne(neg, tensor_const(0, TG_I32)), tensor_const(-0.125, TG_F32), tensor_const(0.125, TG_F32));
  return flat(tg_mul(dl, tg_add(g, tg_unsqueeze(delta, -1))));
}
static tg_tensor *odd_scale(tg_tensor *d, tg_tensor *s) { return tg_mul(d, qt_f32(tg_adds(tg_muls(s, 2), 1))); }

tg_tensor *dq_iq1_s(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* per sub-block a 16-bit word: four 3-bit index tops, a 3-bit scale, the sign of delta */
  tg_tensor *qh = qt_u16(blk, 34, 8);
  tg_tensor *idx = qt_or(tg_reshape(qt_u8(blk, 2, 32), TG_SHAPE(nb, 8, 4)), tg_lshifts(qt_unpack(qh, 2, 4, 3), 8));
  tg_tensor *dl = odd_scale(qt_f16(blk, 0), qt_and(tg_rshifts(qh, 12), 7));
  return iq1_values(trail(dl, 2), idx, trail(tg_rshifts(qh, 15), 1));
}

tg_tensor *dq_iq1_m(tg_tensor *blk) {
  int64_t nb = tg_dim(blk, 0);
  /* four 16-bit words: the top nibbles make the fp16 scale, the low 12 bits
   * four 3-bit sub-scales (two per sub-block, one per 16 values) */
  tg_tensor *sc = qt_u16(blk, 48, 4), *dbits = NULL;
  for (int k = 0; k < 4; k++) {   /* per value, from the raw bytes */
    tg_tensor *f = tg_lshifts(tg_rshifts(per_value(qt_u8(blk, 49 + 2 * k, 1)), 4), 4 * k);
    dbits = k ? qt_or(dbits, f) : f;
  }
  tg_tensor *s = tg_reshape(qt_repeat(tg_reshape(qt_unpack(sc, 2, 4, 3), TG_SHAPE(nb, 8, 2)), 3, 2), TG_SHAPE(nb, 8, 4));
  tg_tensor *dl = odd_scale(qt_f16_bits(dbits), per_value(s));
  /* each grid row has a nibble of qh: 3 index bits and the delta sign */
  tg_tensor *nib = tg_reshape(qt_unpack(qt_u8(blk, 32, 16), 2, 2, 4), TG_SHAPE(nb, 8, 4));
  tg_tensor *idx = qt_or(tg_reshape(qt_u8(blk, 0, 32), TG_SHAPE(nb, 8, 4)), tg_lshifts(qt_and(nib, 7), 8));
  return iq1_values(dl, idx, tg_rshifts(nib, 3));
}
