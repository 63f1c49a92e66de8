/* ggml_types.c: the ggml type table (ids, block sizes, block bytes from
 * ggml's type traits; ids 4, 5, 31-33, 36-38 were removed from ggml). */
#include <strings.h>
#include "io/ggml_types.h"

static const ggml_type_traits traits[GGML_TYPE_COUNT] = {
  [GGML_TYPE_F32] = { "F32", 1, 4 },          [GGML_TYPE_F16] = { "F16", 1, 2 },
  [GGML_TYPE_Q4_0] = { "Q4_0", 32, 18 },      [GGML_TYPE_Q4_1] = { "Q4_1", 32, 20 },
  [GGML_TYPE_Q5_0] = { "Q5_0", 32, 22 },      [GGML_TYPE_Q5_1] = { "Q5_1", 32, 24 },
  [GGML_TYPE_Q8_0] = { "Q8_0", 32, 34 },      [GGML_TYPE_Q8_1] = { "Q8_1", 32, 36 },
  [GGML_TYPE_Q2_K] = { "Q2_K", 256, 84 },     [GGML_TYPE_Q3_K] = { "Q3_K", 256, 110 },
  [GGML_TYPE_Q4_K] = { "Q4_K", 256, 144 },    [GGML_TYPE_Q5_K] = { "Q5_K", 256, 176 },
  [GGML_TYPE_Q6_K] = { "Q6_K", 256, 210 },    [GGML_TYPE_Q8_K] = { "Q8_K", 256, 292 },
  [GGML_TYPE_IQ2_XXS] = { "IQ2_XXS", 256, 66 }, [GGML_TYPE_IQ2_XS] = { "IQ2_XS", 256, 74 },
  [GGML_TYPE_IQ3_XXS] = { "IQ3_XXS", 256, 98 }, [GGML_TYPE_IQ1_S] = { "IQ1_S", 256, 50 },
  [GGML_TYPE_IQ4_NL] = { "IQ4_NL", 32, 18 },  [GGML_TYPE_IQ3_S] = { "IQ3_S", 256, 110 },
  [GGML_TYPE_IQ2_S] = { "IQ2_S", 256, 82 },   [GGML_TYPE_IQ4_XS] = { "IQ4_XS", 256, 136 },
  [GGML_TYPE_I8] = { "I8", 1, 1 },            [GGML_TYPE_I16] = { "I16", 1, 2 },
  [GGML_TYPE_I32] = { "I32", 1, 4 },          [GGML_TYPE_I64] = { "I64", 1, 8 },
  [GGML_TYPE_F64] = { "F64", 1, 8 },          [GGML_TYPE_IQ1_M] = { "IQ1_M", 256, 56 },
  [GGML_TYPE_BF16] = { "BF16", 1, 2 },        [GGML_TYPE_TQ1_0] = { "TQ1_0", 256, 54 },
  [GGML_TYPE_TQ2_0] = { "TQ2_0", 256, 66 },   [GGML_TYPE_MXFP4] = { "MXFP4", 32, 17 },
};

const ggml_type_traits *ggml_type_info(uint32_t t) {
  return t < GGML_TYPE_COUNT && traits[t].name ? &traits[t] : 0;
}

int ggml_type_by_name(const char *name) {
  for (int t = 0; t < GGML_TYPE_COUNT; t++)
    if (traits[t].name && !strcasecmp(traits[t].name, name)) return t;
  return -1;
}

bool ggml_row_bytes(uint32_t t, int64_t n, uint64_t *out) {
  const ggml_type_traits *tr = ggml_type_info(t);
  if (!tr || n < 0 || n % tr->block_size) return false;
  uint64_t blocks = (uint64_t)(n / tr->block_size);
  if (blocks > UINT64_MAX / (uint64_t)tr->type_size) return false;
  *out = blocks * (uint64_t)tr->type_size;
  return true;
}
