/* llm_kv_q8.c: the q8_0 KV cache (`--cache-type q8_0`): keys and values
 * kept as ggml's Q8_0 blocks, 32 values of int8 under one float16 scale,
 * split into two tensors (the int8 values in the cache's own shape, the
 * scales a 32nd of its last axis), so writing a token's rows and reading
 * the cache are plain tensor ops: quantizing fuses into the kernel that
 * writes the rows, dequantizing into the attention kernels that read them.
 * Half the bytes of an f16 cache (17/16 of a byte per value), so twice the
 * context in the same memory and half the reads per decoded token at depth. */
#include "llm/llm.h"

/* s (..., n) with its last axis split into (n / 32, 32) */
static tg_shape in_blocks(tg_shape s) {
  s.d[s.ndim - 1] /= LLM_KV_Q8_BLOCK;
  s.d[s.ndim++] = LLM_KV_Q8_BLOCK;
  return s;
}

/* ggml's quantize_row_q8_0_ref, block by block: d = amax / 127 (float),
 * each value x * (1/d) rounded half away from zero (roundf), d stored in
 * float16. x is (..., n), n a multiple of 32. */
void llm_kv_q8_quantize(tg_tensor *x, tg_tensor **q, tg_tensor **d) {
  tg_shape s = tg_shape_of(x), b = in_blocks(s);
  tg_tensor *blocks = tg_reshape(tg_cast(x, TG_F32), b);
  tg_tensor *zero = tg_scalar(0, TG_F32), *half = tg_scalar(0.5, TG_F32);
  tg_tensor *scale = tg_divs(tg_max(tg_abs(blocks), TG_AXES(-1), true), 127.0);
  tg_tensor *inv = tg_where(tg_eq(scale, zero), zero, tg_reciprocal(scale));
  tg_tensor *v = tg_mul(blocks, inv);                        /* |v| <= 127 */
  tg_tensor *whole = tg_cast(tg_cast(v, TG_I32), TG_F32);     /* toward zero */
  tg_tensor *frac = tg_sub(v, whole);                         /* exact */
  tg_tensor *up = tg_cast(tg_ge(frac, half), TG_F32), *down = tg_cast(tg_le(frac, tg_neg(half)), TG_F32);
  *q = tg_reshape(tg_cast(tg_add(whole, tg_sub(up, down)), TG_I8), s);
  tg_shape ds = b;
  ds.ndim--;   /* (..., n / 32) */
  *d = tg_reshape(tg_cast(scale, TG_F16), ds);
}

/* The float32 values of blocks q (..., n) int8 under scales d (..., n / 32)
 * (ggml's dequantize_row_q8_0: q * d). */
tg_tensor *llm_kv_q8_values(tg_tensor *q, tg_tensor *d) {
  tg_shape s = tg_shape_of(q);
  tg_tensor *v = tg_mul(tg_cast(tg_reshape(q, in_blocks(s)), TG_F32), tg_unsqueeze(tg_cast(d, TG_F32), -1));
  return tg_reshape(v, s);
}
