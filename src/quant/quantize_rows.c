/* quantize_rows.c: the table of row quantizers by ggml type, and quantizing
 * many rows on the CPU thread pool (rows are independent, so any split
 * gives the same bytes). */
#include "quant/quantize.h"
#include "io/ggml_types.h"
#include "runtime/thread_pool.h"
#include "util/util.h"

quant_row_fn quant_row_func(uint32_t t) {
  switch (t) {
    case GGML_TYPE_F32: return quantize_row_f32;
    case GGML_TYPE_F16: return quantize_row_f16;
    case GGML_TYPE_BF16: return quantize_row_bf16;
    case GGML_TYPE_Q4_0: return quantize_row_q4_0;
    case GGML_TYPE_Q4_1: return quantize_row_q4_1;
    case GGML_TYPE_Q5_0: return quantize_row_q5_0;
    case GGML_TYPE_Q5_1: return quantize_row_q5_1;
    case GGML_TYPE_Q8_0: return quantize_row_q8_0;
    case GGML_TYPE_Q2_K: return quantize_row_q2_k;
    case GGML_TYPE_Q3_K: return quantize_row_q3_k;
    case GGML_TYPE_Q4_K: return quantize_row_q4_k;
    case GGML_TYPE_Q5_K: return quantize_row_q5_k;
    case GGML_TYPE_Q6_K: return quantize_row_q6_k;
    case GGML_TYPE_IQ4_NL: return quantize_row_iq4_nl;
    case GGML_TYPE_IQ4_XS: return quantize_row_iq4_xs;
    case GGML_TYPE_TQ1_0: return quantize_row_tq1_0;
    case GGML_TYPE_TQ2_0: return quantize_row_tq2_0;
    case GGML_TYPE_MXFP4: return quantize_row_mxfp4;
    default: return NULL;
  }
}

typedef struct {
  quant_row_fn fn;
  const float *src;
  unsigned char *dst;
  int64_t nrows, n_per_row;
  uint64_t row_bytes;
} quant_job;

static void quant_worker(void *arg, int core, int ncores) {
  const quant_job *j = arg;
  int64_t per = (j->nrows + ncores - 1) / ncores, r0 = core * per, r1 = r0 + per < j->nrows ? r0 + per : j->nrows;
  for (int64_t r = r0; r < r1; r++) j->fn(j->src + r * j->n_per_row, j->dst + (uint64_t)r * j->row_bytes, j->n_per_row);
}

int64_t quant_rows(uint32_t t, const float *src, void *dst, int64_t nrows, int64_t n_per_row) {
  quant_row_fn fn = quant_row_func(t);
  const ggml_type_traits *tt = ggml_type_info(t);
  if (!fn || !tt) return tg_seterr("quantize: tg cannot write ggml type %u (%s)", t, tt ? tt->name : "unknown");
  quant_job j = { fn, src, dst, nrows, n_per_row, 0 };
  if (!ggml_row_bytes(t, n_per_row, &j.row_bytes))
    return tg_seterr("quantize: a row of %lld values is not a multiple of %s's block size %d", (long long)n_per_row, tt->name,
                     tt->block_size);
  /* about 64K values per thread at least, so small tensors stay on one */
  int64_t want = nrows * n_per_row / 65536;
  int ncores = want < 1 ? 1 : want > nrows ? (int)(nrows < 1 ? 1 : nrows) : (int)(want > 1024 ? 1024 : want);
  if (nrows > 0) tg_pool_run(quant_worker, &j, ncores);
  return (int64_t)(j.row_bytes * (uint64_t)nrows);
}
