/* cmd_perplexity.c: `tg perplexity -m FILE.gguf -f TEXT [-c N] [--chunks N]
 * [-b N] [--cache-type T]`, as llama.cpp's llama-perplexity: the text
 * tokenized with BOS (as the vocabulary says), chunks of -c tokens (512)
 * scored on their second half (tg_llm_perplexity); prints the running
 * estimate per chunk, "[1]12.3456,[2]...", then "Final estimate: PPL = X
 * +/- Y". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tg.h"
#include "commands.h"
#include "llm_args.h"

static int ppl_usage(void) {
  fprintf(stderr, "usage: tg perplexity -m FILE.gguf -f TEXT_FILE [-c N] [--chunks N] [-b N] [--cache-type T]\n"
                  "  -c N          tokens per chunk (default 512); the text needs at least 2 * N tokens\n"
                  "  --chunks N    score at most N chunks (default: all)\n"
                  "  -b N          tokens per batched evaluation (default: N of -c)\n"
                  "  --cache-type T  the KV cache's type: f16 (default), bf16, f32, q8_0\n");
  return 2;
}

/* The whole file as a malloc'd string (*n bytes); NULL with a message. */
static char *read_text(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "tg perplexity: %s: %s\n", path, strerror(errno)); return NULL; }
  size_t cap = 1 << 16;
  char *b = malloc(cap);
  *n = 0;
  for (size_t got; b && (got = fread(b + *n, 1, cap - *n, f)) > 0;) {
    *n += got;
    if (*n == cap) b = realloc(b, cap *= 2);
  }
  bool err = ferror(f) || !b;
  fclose(f);
  if (err) { fprintf(stderr, "tg perplexity: %s: read error\n", path); free(b); return NULL; }
  return b;
}

static bool parse_int(const char *s, const char *opt, int lo, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > (1 << 20)) { fprintf(stderr, "tg perplexity: %s %s: expected an integer from %d to %d\n", opt, s, lo, 1 << 20); return false; }
  *out = (int)v;
  return true;
}

static void print_chunk(void *user, int chunk, double ppl) {
  (void)user;
  printf("[%d]%.4f,", chunk + 1, ppl);
  fflush(stdout);
}

int cmd_perplexity(int argc, char **argv) {
  llm_args a;
  llm_args_init(&a);
  a.n_ctx = 512;   /* llama-perplexity's default */
  const char *file = NULL;
  int n_chunks = -1, n_batch = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    bool val = !strcmp(o, "-m") || !strcmp(o, "--model") || !strcmp(o, "-f") || !strcmp(o, "--file") || !strcmp(o, "-c") ||
               !strcmp(o, "--ctx-size") || !strcmp(o, "--chunks") || !strcmp(o, "-b") || !strcmp(o, "--batch-size") || !strcmp(o, "--cache-type");
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return ppl_usage();
    if (!val) { fprintf(stderr, "tg perplexity: unexpected argument '%s'\n", o); return ppl_usage(); }
    if (++i >= argc) { fprintf(stderr, "tg perplexity: %s needs a value\n", o); return ppl_usage(); }
    const char *v = argv[i];
    if (!strcmp(o, "-m") || !strcmp(o, "--model")) a.model = v;
    else if (!strcmp(o, "-f") || !strcmp(o, "--file")) file = v;
    else if (!strcmp(o, "--cache-type")) a.cache_type = v;
    else if (!strcmp(o, "-c") || !strcmp(o, "--ctx-size")) { if (!parse_int(v, o, 3, &a.n_ctx)) return 2; }
    else if (!strcmp(o, "--chunks")) { if (!parse_int(v, o, 1, &n_chunks)) return 2; }
    else if (!parse_int(v, o, 1, &n_batch)) return 2;
  }
  if (!a.model || !file) return ppl_usage();
  size_t len;
  char *text = read_text(file, &len);
  if (!text) return 1;
  if (len == 0) { fprintf(stderr, "tg perplexity: %s is empty\n", file); free(text); return 1; }
  tg_llm *m;
  tg_tokenizer *tok;
  if (!llm_args_load(&a, "tg perplexity", &m, &tok)) { free(text); return 1; }
  int32_t *ids = NULL;
  int n = tg_tokenize(tok, text, len, true, false, &ids);   /* as llama.cpp: special tokens, no parsing of their text */
  free(text);
  int rc = 1;
  if (n < 0) fprintf(stderr, "tg perplexity: %s\n", tg_error());
  else if (n < 2 * a.n_ctx)
    fprintf(stderr, "tg perplexity: you need at least %d tokens to evaluate perplexity with a context of %d\n"
                    "tg perplexity: the data file you provided tokenizes to only %d tokens\n", 2 * a.n_ctx, a.n_ctx, n);
  else {
    int chunks = n / a.n_ctx < n_chunks || n_chunks < 0 ? n / a.n_ctx : n_chunks;
    fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, %d tokens\n", chunks, a.n_ctx,
            n_batch && n_batch < a.n_ctx ? n_batch : a.n_ctx, n);
    tg_ppl_opts po = { .n_ctx = a.n_ctx, .n_chunks = n_chunks, .n_batch = n_batch, .add_bos = tg_tokenizer_add_bos(tok),
                       .bos = tg_tokenizer_bos(tok), .on_chunk = print_chunk };
    tg_ppl_result r;
    if (tg_llm_perplexity(m, ids, n, &po, &r) < 0) fflush(stdout), fprintf(stderr, "\ntg perplexity: %s\n", tg_error());
    else {
      printf("\n");
      if (r.ppl_err == r.ppl_err) printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_err), rc = 0;
      else fprintf(stderr, "tg perplexity: unexpected negative standard deviation of log(prob)\n");
      fflush(stdout);   /* before the stderr line */
      fprintf(stderr, "perplexity: %d tokens in %.2f s (%.1f tok/s), %d scored\n", r.n_tokens, r.seconds,
              r.seconds > 0 ? r.n_tokens / r.seconds : 0.0, r.n_scored);
    }
  }
  free(ids);
  tg_llm_free(m);
  tg_tokenizer_free(tok);
  return rc;
}
