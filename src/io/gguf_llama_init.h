/* gguf_llama_init.h: a random-weight llama model as a GGUF file (`tg
 * llm-init`), with llama.cpp's tensor names and metadata and a synthetic
 * SentencePiece ("llama") vocabulary, for benchmarks and loader tests.
 * Weights are N(0, std) (norms 1), generated and written a few million
 * values at a time on all cores; the same seed gives the same file. */
#ifndef TG_IO_GGUF_LLAMA_INIT_H
#define TG_IO_GGUF_LLAMA_INIT_H

#include <stdint.h>
#include <stdio.h>
#include "quant/quantize.h"

typedef struct {
  int dim, layers, heads, kv_heads, ffn, vocab, ctx;
  const quant_ftype *ft; /* llama.cpp file type: the 2-D weights get the
                         * types llama-quantize would give them (norms stay
                         * F32) */
  uint64_t seed;
  float std, rope_freq_base, rms_eps;
  const char *name;     /* general.name */
  int experts, experts_used; /* > 0: every layer's feed-forward is a
                              * mixture of `experts` experts of ffn rows,
                              * the top experts_used chosen (a Mixtral
                              * llama: ffn_gate_inp, ffn_{gate,up,down}_exps) */
} llama_init_params;

/* dim 768, 12 layers, 12 heads, 4 kv heads, ffn 2048, vocab 32000, ctx
 * 2048, file type F32, seed 0, std 0.02, rope base 10000, eps 1e-5, no
 * experts. */
llama_init_params llama_init_defaults(void);

/* Writes the model to path; progress lines to log when not NULL. Returns
 * the number of parameters, or -1 + tg_error. */
int64_t llama_init_write(const char *path, const llama_init_params *p, FILE *log);

#endif
