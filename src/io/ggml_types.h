/* ggml_types.h: ggml's tensor type ids (as stored in GGUF tensor infos) with
 * their block sizes (elements per block) and bytes per block. */
#ifndef TG_IO_GGML_TYPES_H
#define TG_IO_GGML_TYPES_H

#include <stdbool.h>
#include <stdint.h>

enum {
  GGML_TYPE_F32 = 0, GGML_TYPE_F16 = 1, GGML_TYPE_Q4_0 = 2, GGML_TYPE_Q4_1 = 3,
  GGML_TYPE_Q5_0 = 6, GGML_TYPE_Q5_1 = 7, GGML_TYPE_Q8_0 = 8, GGML_TYPE_Q8_1 = 9,
  GGML_TYPE_Q2_K = 10, GGML_TYPE_Q3_K = 11, GGML_TYPE_Q4_K = 12, GGML_TYPE_Q5_K = 13,
  GGML_TYPE_Q6_K = 14, GGML_TYPE_Q8_K = 15, GGML_TYPE_IQ2_XXS = 16, GGML_TYPE_IQ2_XS = 17,
  GGML_TYPE_IQ3_XXS = 18, GGML_TYPE_IQ1_S = 19, GGML_TYPE_IQ4_NL = 20, GGML_TYPE_IQ3_S = 21,
  GGML_TYPE_IQ2_S = 22, GGML_TYPE_IQ4_XS = 23, GGML_TYPE_I8 = 24, GGML_TYPE_I16 = 25,
  GGML_TYPE_I32 = 26, GGML_TYPE_I64 = 27, GGML_TYPE_F64 = 28, GGML_TYPE_IQ1_M = 29,
  GGML_TYPE_BF16 = 30, GGML_TYPE_TQ1_0 = 34, GGML_TYPE_TQ2_0 = 35, GGML_TYPE_MXFP4 = 39,
  GGML_TYPE_COUNT = 40
};

typedef struct {
  const char *name;    /* NULL: not a type (removed ids) */
  int block_size;      /* elements per block */
  int type_size;       /* bytes per block */
} ggml_type_traits;

/* Traits of type id t, or NULL when t is not a known ggml type. */
const ggml_type_traits *ggml_type_info(uint32_t t);
/* The id called name ("Q4_K", case-insensitive), or -1. */
int ggml_type_by_name(const char *name);
/* Bytes of a row of n elements of type t; false when n is not a multiple
 * of the block size. */
bool ggml_row_bytes(uint32_t t, int64_t n, uint64_t *out);

#endif
