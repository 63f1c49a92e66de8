/* fuzz_dequant.c: packed blocks of every ggml type tg dequantizes, from
 * untrusted bytes, decoded on the CPU by the generated kernels (the table
 * lookups of the IQ types index with bits of the data). The first byte picks
 * the type, the second the row count (1-4 rows of two blocks); the rest
 * fills the blocks (zeros past the end). F16 and BF16 must give exactly the
 * scalar conversions' values. Each (type, rows) runs through a tg_jit, so
 * after its first inputs only the captured kernels run (no scheduling and
 * compiling per input). */
#include <math.h>
#include "fuzz.h"

static int types[64], ntypes;
typedef struct { int type; int64_t rows, cols; tg_jit *jit; } dq_case;
static dq_case cases[64][4];

static int dequant_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  const dq_case *c = ctx;
  out[0] = tg_dequantize(in[0], c->type, TG_SHAPE(c->rows, c->cols));
  return out[0] ? 0 : -1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  for (int t = 0; t < 64; t++)
    if (tg_ggml_type_dequantizable(t)) types[ntypes++] = t;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || !ntypes) return 0;
  int t = types[data[0] % ntypes], rows = 1 + data[1] % 4;
  int64_t bs = 0;
  for (int64_t k = 1; k <= 256 && !bs; k++) if (tg_ggml_nbytes(t, k) > 0) bs = k;   /* the block size */
  if (!bs) __builtin_trap();
  int64_t cols = 2 * bs, numel = rows * cols, nbytes = tg_ggml_nbytes(t, numel);
  uint8_t *raw = calloc((size_t)nbytes, 1);
  memcpy(raw, data + 2, size - 2 < (size_t)nbytes ? size - 2 : (size_t)nbytes);
  float *out = malloc((size_t)numel * sizeof *out);
  dq_case *c = &cases[data[0] % ntypes][rows - 1];
  if (!c->jit) *c = (dq_case){ t, rows, cols, tg_jit_new(dequant_step, c) };
  tg_scope_begin();
  tg_tensor *r = tg_from_data(raw, TG_SHAPE(nbytes), TG_U8), *v = NULL;
  if (tg_jit_call(c->jit, &r, 1, &v, 1) < 0 || tg_data(v, out, (size_t)numel * sizeof *out) < 0) {
    fprintf(stderr, "dequantize %s: %s\n", tg_ggml_type_name(t), tg_error());
    __builtin_trap();
  }
  for (int64_t i = 0; i < numel && (t == TG_GGML_F16 || t == TG_GGML_BF16); i++) {
    uint16_t h = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
    float want = t == TG_GGML_F16 ? tg_f16_to_f32(h) : tg_bf16_to_f32(h);
    if (!(out[i] == want || (isnan(out[i]) && isnan(want)))) __builtin_trap();
  }
  tg_scope_end();
  free(out);
  free(raw);
  return 0;
}
