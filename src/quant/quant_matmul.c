/* quant_matmul.c: tg_quant_matmul (tg_quant.h), x @ W.T computed the way
 * ggml's CPU backend does for quantized weights: x is quantized to 8-bit
 * blocks once (Q8_0: 32 values, one fp16 scale), each weight block's dot
 * product with x's block is an integer sum, and the sums are scaled by the
 * two blocks' scales in float.
 *
 * All of it is tensor ops. x's block maxima are one small reduce kernel,
 * its int values and fp16 scales one elementwise kernel; the product is one
 * kernel over the packed weight bytes. In that kernel a block is 16 lanes
 * (value l and value l + 16 of the block, multiplied in int16 and added:
 * exact) that become one SIMD vector: int16 multiplies, one conversion to
 * float and one multiply-add with the block's scale per 16 lanes, where
 * tg_dequantize's float path decodes, converts and multiplies every value. */
#include "io/ggml_types.h"
#include "quant/quant.h"
#include "tensor/tensor.h"
#include "util/util.h"

/* ggml's roundf: half away from zero (tg_round is half to even). v - trunc(v)
 * is exact, so the test on the fraction is too. */
static tg_tensor *round_half_away(tg_tensor *v) {
  tg_tensor *t = tg_trunc(v);
  tg_tensor *up = tg_ge(tg_abs(tg_sub(v, t)), tensor_const(0.5, TG_F32));
  return tg_add(t, tg_where(up, tg_sign(v), tensor_const(0, TG_F32)));
}

/* [lo, hi) of x's last axis. */
tg_tensor *qm_slice_last(tg_tensor *x, int64_t lo, int64_t hi) {
  int nd = tg_ndim(x);
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) en[i] = tg_dim(x, i);
  st[nd - 1] = lo, en[nd - 1] = hi;
  return tg_shrink(x, st, en);
}

/* x's shape with its last axis replaced by the n sizes in d. */
tg_shape qm_lead_with(const tg_tensor *x, int drop, int n, const int64_t *d) {
  tg_shape s = tg_shape_of(x);
  s.ndim -= drop;
  for (int i = 0; i < n; i++) s.d[s.ndim++] = d[i];
  return s;
}

tg_shape qm_with_tail(const tg_tensor *x, int n, const int64_t *d) { return qm_lead_with(x, 1, n, d); }

void qm_quantize_q8_0(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d) { qm_quantize_q8_1(x, qdtype, q, d, NULL); }

void qm_quantize_q8_1(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d, tg_tensor **s) {
  int64_t nb = tg_dim(x, tg_ndim(x) - 1) / 32;
  tg_tensor *xb = tg_reshape(tg_cast(x, TG_F32), qm_with_tail(x, 2, (int64_t[]){ nb, 32 }));
  tg_tensor *amax = tg_max(tg_abs(xb), TG_AXES(-1), true);
  tg_tensor *dd = tg_div(amax, tensor_const(127, TG_F32));
  tg_tensor *zero = tensor_const(0, TG_F32);
  tg_tensor *id = tg_where(tg_ne(dd, zero), tg_div(tensor_const(1, TG_F32), dd), zero);
  *q = tg_contiguous(tg_cast(round_half_away(tg_mul(xb, id)), qdtype));
  /* stored once per value (like q), so one kernel writes both */
  tg_tensor *dfull = tg_contiguous(tg_expand(tg_cast(tg_cast(dd, TG_F16), TG_F32), tg_shape_of(xb)));
  *d = qm_slice_last(dfull, 0, 1);
  if (s)   /* the unrounded d times the block's integer sum, rounded to fp16 */
    *s = tg_cast(tg_cast(tg_mul(tg_cast(tg_sum(tg_cast(*q, TG_I32), TG_AXES(-1), true), TG_F32), dd), TG_F16), TG_F32);
}

/* The integer values of every weight block as (N*nb, 32) I16, in the
 * block's order. NULL for types without an integer path.
 * 16-bit lanes: a product with x's int8 (|q| <= 127) fits in them exactly
 * (|w| <= 128), and 16-bit multiplies are what the CPU does fast. */
static tg_tensor *weight_ints(tg_tensor *blk, int t) {
  int64_t nb = tg_dim(blk, 0);
  tg_tensor *q = NULL;
  switch (t) {
  case GGML_TYPE_Q8_0: q = tg_cast(qt_i8(blk, 2, 32), TG_I16); break;
  case GGML_TYPE_Q4_0:   /* low nibbles of the 16 bytes, then high nibbles */
    q = tg_subs(qt_unpack(tg_cast(qt_u8(blk, 2, 16), TG_I16), 1, 2, 4), 8);
    break;
  default: return NULL;
  }
  return tg_reshape(q, TG_SHAPE(nb, 32));
}

static bool has_int_path(int t) {
  return t == GGML_TYPE_Q8_0 || t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q6_K;
}

void qm_quantize_q8_k(tg_tensor *x, tg_dtype qdtype, tg_tensor **q, tg_tensor **d) {
  int64_t nb = tg_dim(x, tg_ndim(x) - 1) / 256;
  tg_tensor *xb = tg_reshape(tg_cast(x, TG_F32), qm_with_tail(x, 2, (int64_t[]){ nb, 256 }));
  tg_tensor *zero = tensor_const(0, TG_F32);
  /* ggml's max: the value of largest |x|, the first one of a tie, in one
   * reduction of a key (|x|'s bits, then 255 - j, then x's sign) instead of
   * a max, an argmax and a pick (three kernels a matvec of a decode step) */
  tg_tensor *abits = tg_cast(tg_bitcast(tg_abs(xb), TG_I32), TG_I64);
  tg_tensor *later = tg_cast(tg_sub(tensor_const(255, TG_I32), tg_arange(0, 256, 1, TG_I32)), TG_I64);
  tg_tensor *key = tg_add(tg_add(tg_lshifts(abits, 9), tg_lshifts(later, 1)), tg_cast(tg_lt(xb, zero), TG_I64));
  tg_tensor *best = tg_max(key, TG_AXES(-1), true);
  tg_tensor *amax = tg_bitcast(tg_cast(tg_rshifts(best, 9), TG_I32), TG_F32);
  tg_tensor *nz = tg_ne(amax, zero);
  tg_tensor *mx = tg_where(tg_cast(tg_bitwise_and(best, tensor_const(1, TG_I64)), TG_BOOL), tg_neg(amax), amax);
  tg_tensor *iscale = tg_div(tensor_const(-127, TG_F32), tg_where(nz, mx, tensor_const(1, TG_F32)));
  tg_tensor *v = tg_minimum(tg_round(tg_mul(iscale, xb)), tensor_const(127, TG_F32));
  *q = tg_contiguous(tg_cast(tg_where(nz, v, zero), qdtype));
  /* one scale per block (stored once per value, beside q, it took a kernel
   * of its own anyway: 2 divisions per value) */
  *d = tg_contiguous(tg_where(nz, tg_div(tensor_const(1, TG_F32), iscale), zero));
}

/* Element p of every pair of the last axis (..., 2m) -> (..., m). */
static tg_tensor *pair_elem(tg_tensor *v, int p) {
  int nd = tg_ndim(v);
  int64_t m = tg_dim(v, nd - 1) / 2;
  tg_tensor *pairs = tg_reshape(v, qm_with_tail(v, 2, (int64_t[]){ m, 2 }));
  return tg_reshape(qm_slice_last(pairs, p, p + 1), qm_with_tail(v, 1, (int64_t[]){ m }));
}

/* The int32 sums of adjacent products (value 2l with 2l + 1) of the last
 * axis: (..., 2m) -> (..., m). Each becomes one vpmaddwd when its sum is
 * not added to another such sum in int32 (clang reassociates the adds and
 * loses the pattern), so callers convert or scale it first. */
static tg_tensor *pair_dots(tg_tensor *w, tg_tensor *x) {
  tg_tensor *acc = NULL;
  for (int p = 0; p < 2; p++) {
    tg_tensor *prod = tg_mul(tg_cast(pair_elem(w, p), TG_I32), tg_cast(pair_elem(x, p), TG_I32));
    acc = acc ? tg_add(acc, prod) : prod;
  }
  return acc;
}

/* y (..., n) = x (..., k) @ W.T in ggml's way, for a type with an integer
 * path. Each lane adds adjacent products (value 2l with 2l + 1) as int32:
 * in the kernel that is one vpmaddwd of the block's int16 values (a wide
 * load, see vectorize.c). Q8_0 has 16 lanes per block, Q4_0 8 per nibble
 * half (both halves come from the same bytes). The lane sums (exact) are
 * scaled in float and summed: what the whole block's integer sum times the
 * scales gives, up to float rounding (ggml's own AVX2 code also keeps lane
 * sums in float). */
static tg_tensor *int_matmul(tg_tensor *x, tg_tensor *raw, int t, int64_t n, int64_t k) {
  const ggml_type_traits *tr = ggml_type_info((uint32_t)t);
  int64_t nb = k / 32, h = t == GGML_TYPE_Q4_0 ? 2 : 1;
  tg_tensor *blk = tg_reshape(raw, TG_SHAPE(n * nb, tr->type_size));
  tg_tensor *wq = tg_reshape(weight_ints(blk, t), TG_SHAPE(n, nb, h, 32 / h));
  tg_tensor *dw = tg_reshape(qt_f16(blk, 0), TG_SHAPE(n, nb, 1, 1));
  tg_tensor *xq, *dx;
  qm_quantize_q8_0(x, TG_I16, &xq, &dx);
  xq = tg_reshape(xq, qm_with_tail(x, 4, (int64_t[]){ 1, nb, h, 32 / h }));
  dx = tg_reshape(dx, qm_with_tail(x, 4, (int64_t[]){ 1, nb, 1, 1 }));
  tg_tensor *lanes = qt_f32(pair_dots(wq, xq));   /* (..., n, nb, h, 16 / h) */
  /* ggml: sumi * (dw * dx) (Q4_0's generic code multiplies by dw, then dx;
   * with lane sums the rounding differs anyway, and one scale is cheaper) */
  tg_tensor *blk_dot = tg_mul(lanes, tg_mul(dw, dx));
  return tg_sum(blk_dot, TG_AXES(-3, -2, -1), false);
}

/* The K-quants (Q4_K, Q6_K) against x quantized to Q8_K, like ggml's
 * ggml_vec_dot_{q4_K,q6_K}_q8_K: per 16 values of a sub-block, 8 lanes of
 * adjacent products times the sub-block's scale (int32, exact), scaled by
 * d_w * d_x in float; Q4_K subtracts dmin_w * d_x * m times x's sums. */
static tg_tensor *kquant_matmul(tg_tensor *x, tg_tensor *raw, int t, int64_t n, int64_t k) {
  const ggml_type_traits *tr = ggml_type_info((uint32_t)t);
  int64_t nb = k / 256;
  tg_tensor *blk = tg_reshape(raw, TG_SHAPE(n * nb, tr->type_size));
  tg_tensor *q, *sc, *m = NULL, *dw, *dmin = NULL;
  if (t == GGML_TYPE_Q4_K) qk_q4_k_ints(blk, &q, &sc, &m), dw = qt_f16(blk, 0), dmin = qt_f16(blk, 2);
  else qk_q6_k_ints(blk, &q, &sc), dw = qt_f16(blk, 208);
  const tg_shape per16 = TG_SHAPE(n, nb, 16, 16), one = TG_SHAPE(n, nb, 1, 1);
  tg_tensor *wq = tg_reshape(tg_cast(q, TG_I16), per16);
  tg_tensor *xq, *dx;
  qm_quantize_q8_k(x, TG_I16, &xq, &dx);
  xq = tg_reshape(xq, qm_with_tail(x, 4, (int64_t[]){ 1, nb, 16, 16 }));
  dx = tg_reshape(dx, qm_with_tail(x, 4, (int64_t[]){ 1, nb, 1, 1 }));
  tg_tensor *sc16 = qm_slice_last(tg_reshape(sc, per16), 0, 1);                                /* (n, nb, 16, 1) */
  tg_tensor *dot = tg_mul(qt_f32(tg_mul(pair_dots(wq, xq), sc16)), tg_mul(tg_reshape(dw, one), dx));
  if (m) {
    tg_tensor *xs = tg_add(tg_cast(pair_elem(xq, 0), TG_I32), tg_cast(pair_elem(xq, 1), TG_I32));
    tg_tensor *m16 = qm_slice_last(tg_reshape(m, per16), 0, 1);
    dot = tg_sub(dot, tg_mul(qt_f32(tg_mul(xs, m16)), tg_mul(tg_reshape(dmin, one), dx)));
  }
  return tg_sum(dot, TG_AXES(-3, -2, -1), false);
}

tg_tensor *tg_quant_matmul(tg_tensor *x, tg_tensor *raw, int t, tg_shape w_shape) {
  if (!x || !raw) return tg_seterr("tg_quant_matmul: x or raw is NULL"), NULL;
  if (w_shape.ndim != 2) return tg_seterr("tg_quant_matmul: W must be 2-D (N, K), not %d-D", w_shape.ndim), NULL;
  int64_t n = w_shape.d[0], k = w_shape.d[1];
  int nd = tg_ndim(x);
  if (nd < 1 || tg_dim(x, nd - 1) != k)
    return tg_seterr("tg_quant_matmul: x's last dimension must be K = %lld", (long long)k), NULL;
  if (!tg_dtype_is_float(tg_dtype_of(x))) return tg_seterr("tg_quant_matmul: x must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x))), NULL;
  tg_scope_begin();
  const char *dev_prev = tensor_device_begin(tg_device_of(raw));   /* constants and tables on raw's device */
  /* tg_dequantize checks the type and raw's size; its graph is also the
   * float path of the types without an integer one */
  tg_tensor *w = tg_dequantize(raw, t, w_shape), *r = NULL;
  if (w && !has_int_path(t)) r = tg_matmul(x, tg_T(w));
  else if (w) r = t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q6_K ? kquant_matmul(x, raw, t, n, k) : int_matmul(x, raw, t, n, k);
  if (r) tg_keep(r);
  tensor_device_end(dev_prev);
  tg_scope_end();
  return r;
}
