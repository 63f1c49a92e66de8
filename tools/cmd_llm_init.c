/* cmd_llm_init.c: `tg llm-init OUT.gguf [options]` writes a random-weight
 * llama model (a Mixtral one with --experts) that llama.cpp can load
 * (src/io/gguf_llama_init.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tg.h"
#include "commands.h"
#include "io/gguf_llama_init.h"
#include "quant/quantize.h"

static int usage(void) {
  fprintf(stderr, "usage: tg llm-init OUT.gguf [--dim 768] [--layers 12] [--heads 12] [--kv-heads 4] [--ffn 2048]\n"
                  "                   [--vocab 32000] [--ctx 2048] [--type f32|f16|bf16|q8_0|q4_0|q4_k_m|...] [--seed S]\n"
                  "                   [--experts E --experts-used K]  (a mixture of E experts of --ffn rows, top K)\n");
  return 2;
}

/* A positive int option value, or -1. */
static int int_arg(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  return *end || v <= 0 || v > 1 << 30 ? -1 : (int)v;
}

int cmd_llm_init(int argc, char **argv) {
  llama_init_params p = llama_init_defaults();
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') { if (out) return usage(); out = a; continue; }
    if (i + 1 >= argc) return usage();
    const char *v = argv[++i];
    int *dst = !strcmp(a, "--dim") ? &p.dim : !strcmp(a, "--layers") ? &p.layers : !strcmp(a, "--heads") ? &p.heads
             : !strcmp(a, "--kv-heads") ? &p.kv_heads : !strcmp(a, "--ffn") ? &p.ffn : !strcmp(a, "--vocab") ? &p.vocab
             : !strcmp(a, "--ctx") ? &p.ctx : !strcmp(a, "--experts") ? &p.experts : !strcmp(a, "--experts-used") ? &p.experts_used : NULL;
    if (dst) {
      if ((*dst = int_arg(v)) < 0) { fprintf(stderr, "tg llm-init: %s needs a positive integer\n", a); return 2; }
    } else if (!strcmp(a, "--seed")) {
      p.seed = strtoull(v, NULL, 10);
    } else if (!strcmp(a, "--type")) {
      if (!(p.ft = quant_ftype_by_name(v))) {
        fprintf(stderr, "tg llm-init: unknown or unsupported type '%s' (see tg quantize)\n", v);
        return 2;
      }
    } else {
      return usage();
    }
  }
  if (!out) return usage();
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int64_t n = llama_init_write(out, &p, stdout);
  if (n < 0) { fprintf(stderr, "tg llm-init: %s\n", tg_error()); return 1; }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("wrote %s: %lld parameters (%.1fM) in %.2f s\n", out, (long long)n, (double)n / 1e6,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
  return 0;
}
