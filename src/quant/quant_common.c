/* quant_common.c: the shared building blocks of the dequantizers (quant.h):
 * byte fields, fp16 scales, bit-field unpacking, small lookup tables. */
#include "quant/quant.h"
#include "tensor/tensor.h"

static tg_tensor *field(tg_tensor *blk, int start, int len) {
  int64_t st[2] = { 0, start }, en[2] = { tg_dim(blk, 0), start + len };
  return tg_shrink(blk, st, en);
}

tg_tensor *qt_u8(tg_tensor *blk, int start, int len) { return tg_cast(field(blk, start, len), TG_I32); }
tg_tensor *qt_i8(tg_tensor *blk, int start, int len) { return tg_cast(tg_bitcast(field(blk, start, len), TG_I8), TG_I32); }
tg_tensor *qt_f32(tg_tensor *x) { return tg_cast(x, TG_F32); }

tg_tensor *qt_and(tg_tensor *x, int64_t mask) { return tg_bitwise_and(x, tensor_const((double)mask, tg_dtype_of(x))); }
tg_tensor *qt_or(tg_tensor *a, tg_tensor *b) { return tg_bitwise_or(a, b); }

tg_tensor *qt_u16(tg_tensor *blk, int start, int n) {
  int64_t nb = tg_dim(blk, 0);
  tg_tensor *w = tg_reshape(qt_u8(blk, start, 2 * n), TG_SHAPE(nb, n, 2));
  int64_t st[3] = { 0, 0, 0 }, en[3] = { nb, n, 1 };
  tg_tensor *lo = tg_shrink(w, st, en);
  st[2] = 1, en[2] = 2;
  tg_tensor *hi = tg_shrink(w, st, en);
  return tg_reshape(qt_or(lo, tg_lshifts(hi, 8)), TG_SHAPE(nb, n));
}

/* fp16 -> f32 is exact; tg's cast from float16 converts bit for bit. */
tg_tensor *qt_f16_bits(tg_tensor *bits) { return tg_cast(tg_bitcast(tg_cast(bits, TG_U16), TG_F16), TG_F32); }
tg_tensor *qt_f16(tg_tensor *blk, int off) { return qt_f16_bits(qt_u16(blk, off, 1)); }

tg_tensor *qt_repeat(tg_tensor *x, int axis, int n) {
  tg_tensor *u = tg_unsqueeze(x, axis);
  if (!u) return NULL;
  tg_shape s = tg_shape_of(u);
  s.d[axis < 0 ? axis + s.ndim : axis] = n;
  return tg_expand(u, s);
}

tg_tensor *qt_unpack(tg_tensor *x, int axis, int n, int bits) {
  tg_tensor *r = qt_repeat(x, axis, n);
  if (!r) return NULL;
  int nd = tg_ndim(r), ax = axis < 0 ? axis + nd : axis;
  /* the shift amounts 0, bits, 2*bits, ... along the new axis */
  tg_shape ss = { .ndim = nd - ax };
  ss.d[0] = n;
  for (int k = 1; k < ss.ndim; k++) ss.d[k] = 1;
  tg_tensor *sh = tg_reshape(tg_arange(0, (double)n * bits, bits, tg_dtype_of(x)), ss);
  return qt_and(tg_rshift(r, sh), (1 << bits) - 1);
}

tg_tensor *qt_lut(tg_tensor *idx, const int *table, int n) {
  return tg_take(tg_from_data(table, TG_SHAPE(n), TG_I32), idx);
}

tg_tensor *qt_gather_rows(tg_tensor *table, tg_tensor *idx) {
  int64_t n = tg_dim(table, 0), w = tg_dim(table, 1);
  tg_tensor *col = tg_arange(0, (double)w, 1, TG_I32);
  tg_tensor *flat = tg_add(tg_muls(tg_unsqueeze(idx, -1), (double)w), col);   /* (..., w) */
  return tg_take(tg_reshape(table, TG_SHAPE(n * w)), flat);
}

void qt_scale_min_k4(tg_tensor *blk, int off, int len, tg_tensor **sc, tg_tensor **mn) {
  /* sub-blocks j < 4 keep 6 bits in bytes j (scale) and 4+j (min); j >= 4
   * take their low 4 bits from byte 8+j-4 and their top 2 bits from the
   * spare top bits of bytes j-4 and j. Each value reads the bytes of its
   * sub-block j at j%4 of the three 4-byte groups. */
  int64_t nb = tg_dim(blk, 0);
  tg_tensor *g[3];
  for (int k = 0; k < 3; k++)
    g[k] = qt_spread(tg_reshape(qt_repeat(qt_u8(blk, off + 4 * k, 4), 1, 2), TG_SHAPE(nb, 8)), len);
  tg_tensor *a = g[0], *b = g[1], *c = g[2];
  /* j < 4, made per sub-block and spread (a test on the value's own index
   * would hide from codegen that it is constant within a sub-block) */
  tg_tensor *first = qt_spread(tg_reshape(tg_lt(tg_arange(0, 8, 1, TG_I32), tensor_const(4, TG_I32)), TG_SHAPE(1, 8)), len);
  *sc = tg_where(first, qt_and(a, 63), qt_or(qt_and(c, 15), tg_lshifts(tg_rshifts(a, 6), 4)));
  *mn = tg_where(first, qt_and(b, 63), qt_or(tg_rshifts(c, 4), tg_lshifts(tg_rshifts(b, 6), 4)));
}

tg_tensor *qt_spread(tg_tensor *x, int len) {
  return tg_reshape(qt_repeat(x, 2, len), TG_SHAPE(tg_dim(x, 0), tg_dim(x, 1) * len));
}

tg_tensor *qt_fields(tg_tensor *blk, int off, int groups, int bytes, int n, int bits) {
  int64_t nb = tg_dim(blk, 0);
  tg_tensor *b = tg_reshape(qt_u8(blk, off, groups * bytes), TG_SHAPE(nb, groups, bytes));
  return tg_reshape(qt_unpack(b, 2, n, bits), TG_SHAPE(nb, (int64_t)groups * n * bytes));
}
