/* quantize.h: float32 rows -> ggml's block formats, byte for byte what ggml's
 * ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL) writes, i.e.
 * what llama-quantize writes without an importance matrix (for the K-quants
 * that is ggml's quantize_row_*_ref path; IQ4_NL/IQ4_XS use the chunk path's
 * 7 scale trials).
 *
 * Bit-exactness depends on doing ggml's float operations in ggml's order,
 * with no FMA contraction (the Makefile builds src/quant/quantize_*.c with
 * -ffp-contract=off) and ggml's rounding helpers: nearest_int's
 * add-1.5*2^23 trick, and truncating casts such as (int8_t)(x*id + 8.5f) in
 * the legacy formats. Inputs must be finite. */
#ifndef TG_QUANT_QUANTIZE_H
#define TG_QUANT_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "io/gguf_file.h"

/* Quantizes k floats (a multiple of the type's block size) into k/block
 * blocks at y. */
typedef void (*quant_row_fn)(const float *x, void *y, int64_t k);

void quantize_row_f32(const float *x, void *y, int64_t k);
void quantize_row_f16(const float *x, void *y, int64_t k);
void quantize_row_bf16(const float *x, void *y, int64_t k);
void quantize_row_q4_0(const float *x, void *y, int64_t k);
void quantize_row_q4_1(const float *x, void *y, int64_t k);
void quantize_row_q5_0(const float *x, void *y, int64_t k);
void quantize_row_q5_1(const float *x, void *y, int64_t k);
void quantize_row_q8_0(const float *x, void *y, int64_t k);
void quantize_row_q2_k(const float *x, void *y, int64_t k);
void quantize_row_q3_k(const float *x, void *y, int64_t k);
void quantize_row_q4_k(const float *x, void *y, int64_t k);
void quantize_row_q5_k(const float *x, void *y, int64_t k);
void quantize_row_q6_k(const float *x, void *y, int64_t k);
void quantize_row_iq4_nl(const float *x, void *y, int64_t k);
void quantize_row_iq4_xs(const float *x, void *y, int64_t k);
void quantize_row_tq1_0(const float *x, void *y, int64_t k);
void quantize_row_tq2_0(const float *x, void *y, int64_t k);
void quantize_row_mxfp4(const float *x, void *y, int64_t k);

/* The row quantizer of ggml type t, or NULL when tg cannot write t. */
quant_row_fn quant_row_func(uint32_t t);
static inline bool quant_can_write(uint32_t t) { return quant_row_func(t) != 0; }

/* Quantizes nrows rows of n_per_row floats (n_per_row a multiple of the
 * block size) to type t, spread over the CPU thread pool by rows. Returns
 * the bytes written, or -1 + tg_error for a type tg cannot write or a row
 * length that is not a multiple of the block size. */
int64_t quant_rows(uint32_t t, const float *src, void *dst, int64_t nrows, int64_t n_per_row);

/* ---- shared by the quantize_*.c files */

/* ggml's nearest_int: round to nearest, ties to even, via the float
 * addition of 1.5 * 2^23 (|x| must be below 2^22). */
static inline int quant_nearest_int(float x) {
  float v = x + 12582912.f;
  int32_t i;
  __builtin_memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

/* The value of largest magnitude, with its sign (the first on ties; 0 for
 * an all-zero block); *amax gets its magnitude. */
static inline float quant_signed_absmax(const float *x, int n, float *amax) {
  float a = 0, m = 0;
  for (int i = 0; i < n; i++) {
    float v = x[i] < 0 ? -x[i] : x[i];
    if (v > a) { a = v; m = x[i]; }
  }
  *amax = a;
  return m;
}

/* fp16 / bf16 conversions with round-to-nearest-even (ggml's). */
uint16_t quant_f32_to_f16(float x);
float quant_f16_to_f32(uint16_t h);
static inline void quant_put_f16(uint8_t *p, float x) {
  uint16_t h = quant_f32_to_f16(x);
  p[0] = (uint8_t)h; p[1] = (uint8_t)(h >> 8);
}
static inline float quant_get_f16(const uint8_t *p) { return quant_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* ---- llama.cpp's file types and tensor rules (quantize_plan.c) */

/* A llama.cpp file type (LLAMA_FTYPE, stored as general.file_type) tg can
 * write: its name as llama-quantize spells it, and its default tensor type. */
typedef struct {
  const char *name;
  int ftype;
  uint32_t type;
} quant_ftype;

/* The file type called name, case-insensitive ("Q4_K_M"; "Q3_K", "Q4_K",
 * "Q5_K" are llama-quantize's aliases of the _M types), or NULL. */
const quant_ftype *quant_ftype_by_name(const char *name);
/* All of them, in llama-quantize's order; *n gets the count. */
const quant_ftype *quant_ftypes(int *n);

/* What llama.cpp's choice of each tensor's type depends on: the file type,
 * facts about the model, and counters advanced as tensors are typed (in
 * llama.cpp's tensor order, quant_tensor_cmp). */
typedef struct {
  const quant_ftype *ft;
  bool pure;            /* every quantizable tensor gets ft->type (--pure) */
  bool has_output;      /* false: token_embd.weight doubles as the output */
  bool falcon, is_70b;
  int n_gqa, n_expert, n_layer, n_attention_wv;
  int i_attention_wv, i_ffn_down, i_ffn_gate, i_ffn_up;
} quant_plan;

/* A plan for the model in f (architecture, head counts, expert count,
 * block count, tensor names). */
void quant_plan_for_file(quant_plan *p, const quant_ftype *ft, bool pure, const gguf_file *f);

/* The ggml type tensor `name` (ggml `type`, n_dims, ne) gets, as llama.cpp's
 * llama-quantize decides without an importance matrix or overrides: only
 * F32/F16/BF16 weights ("...weight") of 2+ dims change, never norms and the
 * other small tensors llama.cpp leaves alone; output.weight (or token_embd
 * when tied) becomes Q6_K (Q8_0 stays Q8_0; rows not a multiple of the
 * block: Q8_0); the _S/_M/_L mixtures give some attn_v / ffn_down /
 * attn_output layers more bits; a row length the type cannot hold falls
 * back (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/TQ* -> Q4_0,
 * IQ4_XS -> IQ4_NL, then F16). Call once per tensor, in llama.cpp's order. */
uint32_t quant_plan_type(quant_plan *p, const char *name, uint32_t type, int n_dims, const int64_t *ne);

/* llama.cpp's tensor order (strcmp-like): tensors outside "blk.N." first,
 * then by layer N, then by name. */
int quant_tensor_cmp(const char *a, const char *b);

/* ---- whole GGUF files (quantize_model.c; `tg quantize`) */

typedef struct {
  bool pure;        /* see quant_plan */
  FILE *log;        /* per-tensor progress lines and the size summary, or NULL */
} quant_model_opts;

/* Reads the GGUF file in and writes out as llama-quantize would: tensors in
 * llama.cpp's order, each typed by quant_plan_type and converted with
 * quant_rows (others copied), all metadata copied (split keys dropped) with
 * general.quantization_version = 2 and general.file_type moved to the end.
 * 0 or -1. */
int quant_model(const char *in, const char *out, const quant_ftype *ft, const quant_model_opts *opts);

#endif
