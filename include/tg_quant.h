/* tg_quant.h: ggml's quantized block formats as lazy tensor graphs.
 * Included by tg.h. See docs/quant.md.
 *
 * A quantized weight stays in memory as its packed bytes (a U8 tensor); its
 * values are a graph of ordinary tensor ops over those bytes (bit shifts,
 * masks, small table lookups, the block scales), so using them (a matmul,
 * say) fuses the dequantization into the consumer's kernel: W @ x reads the
 * packed bytes once and never stores float weights.
 *
 * The values are exactly ggml's dequantize_row_* results (float32, same
 * order of operations, no fused multiply-add). */
#ifndef TG_QUANT_H
#define TG_QUANT_H

#include "tg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ggml type ids as stored in GGUF files (a subset; see docs/quant.md). */
enum {
  TG_GGML_F32 = 0, TG_GGML_F16 = 1, TG_GGML_Q4_0 = 2, TG_GGML_Q4_1 = 3, TG_GGML_Q5_0 = 6,
  TG_GGML_Q5_1 = 7, TG_GGML_Q8_0 = 8, TG_GGML_Q2_K = 10, TG_GGML_Q3_K = 11, TG_GGML_Q4_K = 12,
  TG_GGML_Q5_K = 13, TG_GGML_Q6_K = 14, TG_GGML_IQ2_XXS = 16, TG_GGML_IQ2_XS = 17,
  TG_GGML_IQ3_XXS = 18, TG_GGML_IQ1_S = 19, TG_GGML_IQ4_NL = 20, TG_GGML_IQ3_S = 21,
  TG_GGML_IQ2_S = 22, TG_GGML_IQ4_XS = 23, TG_GGML_IQ1_M = 29, TG_GGML_BF16 = 30,
  TG_GGML_TQ1_0 = 34, TG_GGML_TQ2_0 = 35, TG_GGML_MXFP4 = 39
};

/* The id called name ("Q4_K", case-insensitive), or -1 (no error set for
 * an unknown name; an error for NULL). */
TG_API int tg_ggml_type_from_name(const char *name);
/* "Q4_K", ...; NULL for an unknown id. */
TG_API const char *tg_ggml_type_name(int ggml_type);
/* True when tg_dequantize handles the type. */
TG_API bool tg_ggml_type_dequantizable(int ggml_type);
/* Bytes holding numel values of the type, or -1 (with an error) when numel
 * is not a whole number of blocks, the type is unknown or the size passes
 * int64. */
TG_API int64_t tg_ggml_nbytes(int ggml_type, int64_t numel);

/* The values of a tensor of ggml type ggml_type and (tg) shape `shape`,
 * whose packed bytes are raw: a U8 tensor of tg_ggml_nbytes(...) elements
 * (any shape), in ggml's block order. Returns a lazy F32 tensor of `shape`
 * computed from raw by tensor ops. The last dimension must be a multiple of
 * the block size (ggml's rows are whole blocks). Types: F32 F16 BF16 Q4_0
 * Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ2_XXS IQ2_XS IQ2_S IQ3_XXS
 * IQ3_S IQ1_S IQ1_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4. */
TG_API tg_tensor *tg_dequantize(tg_tensor *raw, int ggml_type, tg_shape shape);

/* x @ W.T the way ggml's CPU backend computes it (llama.cpp's numbers, not
 * tg_matmul(x, tg_T(tg_dequantize(...)))'s; see docs/quant.md): x (..., K)
 * float is quantized to Q8_0 once (per 32 values: d = max|x| / 127 stored
 * as fp16, q = roundf(x * (1/d)) as int8: quantize_row_q8_0_ref), each
 * block of W (N, K), whose packed bytes are raw (as for tg_dequantize), is
 * multiplied with x's block in integers (exact), and the block sums are
 * scaled by the two fp16 scales in float and added: ggml's
 * ggml_vec_dot_<TYPE>_q8_0, up to the order of the float additions.
 * Returns a lazy (..., N) F32 tensor: two small kernels quantize x, one
 * kernel reads the packed bytes. Integer path: Q8_0 and Q4_0; other types
 * give tg_matmul(x, tg_T(tg_dequantize(raw, ggml_type, w_shape))). */
TG_API tg_tensor *tg_quant_matmul(tg_tensor *x, tg_tensor *raw, int ggml_type, tg_shape w_shape);

/* Row-packed copies of a quantized W (N, K) for matmuls, as llama.cpp's
 * CPU backend repacks Q4_0: the blocks of 16 rows side by side, 4 bytes of
 * each row at a time, so one 64-byte SIMD vector holds 4 values of 16 rows
 * and one byte dot product (vpdpbusd on x86 with AVX512-VNNI) multiplies
 * them with 4 values of x. Types: Q4_0, Q5_0 (the fifth bits regrouped), Q4_1
 * and Q5_1 (as Q4_0 and Q5_0, with their mins), Q8_0 (values stored plus 128),
 * IQ4_NL (its levels stored as Q8_0's bytes), IQ4_XS (the levels as bytes, int8
 * sub-block scales), Q2_K (its 4-bit scales and mins unpacked to bytes), Q3_K
 * (its 16 scales unpacked to int8 bytes, qs and hmask regrouped), Q4_K, Q5_K (Q4_K's form and its fifth bits), Q6_K
 * and MXFP4 (IQ4_NL's form with its doubled E2M1 levels; its E8M0 scale as F32); N a multiple of 16. Returns 0 and two tensors made from raw
 * (as for tg_dequantize), realized: *scales (N/16, S * K/B, 16) F16 (F32 for MXFP4)
 * (the blocks' fp16 scales, S of them: Q4_1's, Q5_1's, Q2_K's, Q4_K's and Q5_K's d of every block, then its
 * m or dmin; B = 32, or 256 for the K-quants) and *quants (N/16, K/B, bytes) U8
 * (the rest of the blocks' bytes, reordered; Q4_K's 6-bit scales and mins
 * unpacked to bytes); -1 and tg_error for another type or shape. The
 * functions below also take the scales as the same memory viewed as
 * (N/16, S, K/B, 16), plane s holding every block's scale s: the view in
 * which a split of W's columns (whole blocks) is one box, so a sharded
 * tensor (tg_shard on axis 2, the quants on axis 1) can hold it. */
#define TG_QUANT_PACK_ROWS 16   /* the rows tg_quant_pack_rows puts side by side */
TG_API int tg_quant_pack_rows(tg_tensor *raw, int ggml_type, tg_shape w_shape, tg_tensor **scales, tg_tensor **quants);
/* The same for n matrices of one type stacked by rows (rows[i] rows each, a
 * multiple of 16; cols columns): raws[i] holds matrix i's blocks, and each
 * is packed into its rows of *scales and *quants by kernels of its own (a
 * model's q|k|v or gate|up read where they lie in the file). */
TG_API int tg_quant_pack_rows_stacked(tg_tensor *const *raws, const int64_t *rows, int n, int ggml_type, int64_t cols, tg_tensor **scales, tg_tensor **quants);
/* x (..., K) @ W.T from tg_quant_pack_rows's tensors: tg_quant_matmul's
 * numbers (x quantized to Q8_0, Q8_1 for Q4_1 and Q5_1, or Q8_K for the K-quants and IQ4_XS; exact integer block sums,
 * scaled by the two scales), up to the order of the float additions. Lazy
 * (..., N) F32: small kernels quantize x and sum its blocks, one reads the
 * packed W. */
TG_API tg_tensor *tg_quant_matmul_rows(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int ggml_type, tg_shape w_shape);
/* Experts: W (E, N, K), packed by tg_quant_pack_rows as the (E * N, K)
 * matrix; index (...) integer, the expert of each product (a router's
 * top-k; an index outside [0, E) reads expert index mod E, as an unsigned
 * 32-bit value); x (..., K) with
 * index's axes (or 1 on any of them, broadcast). Returns (..., N): x @
 * W[index].T, tg_quant_matmul_rows's numbers, reading only the chosen
 * experts' rows. Types: every one tg_quant_pack_rows packs; N a
 * multiple of 16. The packed tensors may also come viewed per
 * expert, the same memory: quants (E, N/16, K/B, bytes), scales (E, N/16,
 * S * K/B, 16) or (E, N/16, S, K/B, 16): the view in which a split of
 * every expert's rows (tensor parallel: tg_shard on axis 1) is one box. */
TG_API tg_tensor *tg_quant_matmul_rows_experts(tg_tensor *x, tg_tensor *scales, tg_tensor *quants, int ggml_type, tg_shape w_shape, tg_tensor *index);
/* W's values (N, K) F32 from tg_quant_pack_rows's tensors (experts (E,
 * N, K), packed as the (E * N, K) matrix or viewed per expert as for
 * tg_quant_matmul_rows_experts, as well): exactly
 * tg_dequantize's (ggml's) numbers, so a model can keep the packed copy
 * alone. Lazy, fuses into its consumer like tg_dequantize. */
TG_API tg_tensor *tg_dequantize_rows(tg_tensor *scales, tg_tensor *quants, int ggml_type, tg_shape w_shape);

#ifdef __cplusplus
}
#endif
#endif
