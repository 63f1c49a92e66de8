/* quant_experts_check.h: tg_quant_matmul_rows_experts against a reference
 * dot product, shared by the 32-value types' tests (test_quant_matmul.c)
 * and the 256-value ones' (test_quant_matmul_k.c), each with its own
 * reference (ggml's vec_dot after x's quantization to its type's
 * vec_dot_type). */
#ifndef TG_QUANT_EXPERTS_CHECK_H
#define TG_QUANT_EXPERTS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

/* ggml's product of x's row (k floats) with one row of type t in ggml's
 * blocks; *mag: the sum of its terms' magnitudes (the tolerance's scale). */
typedef float (*experts_ref_dot)(int t, const uint8_t *row, const float *x, int64_t k, double *mag);

/* Experts W (E, N, K) in ggml's blocks w (nbytes, E * N rows) packed as one
 * (E * N, K) matrix and multiplied by the chosen ones: x (fill(x, rows, k)
 * fills it) shared by a token's 2 experts (gate, up) or one per expert
 * (down); T = 4, then 1, then 4 rows (a batch's decoding steps), each
 * product within 1e-5 of its magnitude of ref's. E >= 4. */
void check_quant_experts(int t, const uint8_t *w, int64_t nbytes, int64_t e, int64_t n, int64_t k, bool x_per_expert,
                         void (*fill)(float *x, int64_t rows, int64_t k), experts_ref_dot ref);

#endif
