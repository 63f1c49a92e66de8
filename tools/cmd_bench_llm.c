/* cmd_bench_llm.c: `tg bench-llm -m MODEL.gguf [-p 64] [-n 128] [-c CTX]
 * [-d DEPTH] [--cache-type T] [-r 3]` measures prompt processing (pp: one
 * prompt of p tokens) and decoding (tg: n tokens one at a time) in tokens
 * per second, like llama-bench's pp64 and tg128, on random token ids; with
 * -d, after DEPTH tokens already in the cache (llama-bench -d: the depth's
 * prompt is not timed; it is filled once, and each pass rewinds to it). The
 * first pass compiles (and is not timed); the kernels compiled in it and in
 * the timed passes are counted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tg.h"
#include "commands.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Median of n values (sorts them). */
static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) { double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long long compiles(void) {
  tg_counters c = tg_get_counters();
  return (long long)(c.kernels_compiled + c.kernels_cached);
}

int cmd_bench_llm(int argc, char **argv) {
  const char *model = NULL;
  const char *cache = NULL, *devices = NULL;
  int pp = 64, tg = 128, ctx = 0, reps = 3, depth = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-m") && v) model = argv[++i];
    else if (!strcmp(a, "-p") && v) pp = atoi(argv[++i]);
    else if (!strcmp(a, "-n") && v) tg = atoi(argv[++i]);
    else if (!strcmp(a, "-c") && v) ctx = atoi(argv[++i]);
    else if (!strcmp(a, "-r") && v) reps = atoi(argv[++i]);
    else if (!strcmp(a, "-d") && v) depth = atoi(argv[++i]);
    else if (!strcmp(a, "--cache-type") && v) cache = argv[++i];
    else if (!strcmp(a, "--devices") && v) devices = argv[++i];
    else { fprintf(stderr, "tg bench-llm: unknown argument '%s'\n", a); model = NULL; break; }
  }
  if (!model || pp < 1 || tg < 1 || reps < 1 || reps > 100 || depth < 0 || depth > (1 << 24)) {
    fprintf(stderr, "usage: tg bench-llm -m MODEL.gguf [-p PROMPT_TOKENS=64] [-n GEN_TOKENS=128] [-c CTX] [-d DEPTH=0] [--cache-type f16|bf16|f32|q8_0] [-r REPS=3]\n"
                    "                     [--devices CPU:0,CPU:1]  (tensor parallel, as tg run)\n");
    return 2;
  }
  /* the warm-up runs the prompt then 3 single tokens from position 0 */
  if (ctx <= 0) ctx = depth + pp + tg + 1 > pp + 4 ? depth + pp + tg + 1 : pp + 4;
  tg_llm *m = tg_llm_load(model, &(tg_llm_opts){ .n_ctx = ctx, .cache_type = cache, .devices = devices });
  if (!m) { fprintf(stderr, "tg bench-llm: %s\n", tg_error()); return 1; }
  const tg_llm_config *c = tg_llm_config_of(m);
  int ntoks = depth > pp ? depth : pp;
  if (tg > ntoks) ntoks = tg;
  if (ntoks < 3) ntoks = 3;
  int32_t *toks = malloc(sizeof(int32_t) * (size_t)ntoks);
  srand(1);
  for (int i = 0; i < ntoks; i++) toks[i] = rand() % c->n_vocab;
  int rc = 0;
  double pp_t[100], tg_t[100];
  /* warm-up: compiles every chunk size, and the decode JIT captures */
  long long c0 = compiles();
  if (tg_llm_eval(m, toks, pp, NULL) < 0) rc = -1;
  for (int i = 0; i < 3 && rc == 0; i++) rc = tg_llm_eval(m, &toks[i], 1, NULL);
  if (depth > 0 && rc == 0) {   /* the depth's tokens, once */
    tg_llm_rewind(m, 0);
    rc = tg_llm_eval(m, toks, depth, NULL);
  }
  long long c1 = compiles();
  for (int r = 0; r < reps && rc == 0; r++) {
    tg_llm_rewind(m, depth);
    double t0 = now();
    rc = tg_llm_eval(m, toks, pp, NULL);
    pp_t[r] = now() - t0;
    tg_llm_rewind(m, depth);
    t0 = now();
    for (int i = 0; i < tg && rc == 0; i++) rc = tg_llm_eval(m, &toks[i], 1, NULL);
    tg_t[r] = now() - t0;
  }
  if (rc < 0) { fprintf(stderr, "tg bench-llm: %s\n", tg_error()); free(toks); tg_llm_free(m); return 1; }
  printf("model %s: %s, %d layers, dim %d, vocab %d, ctx %d, cache %s\n", model, c->arch, c->n_layers, c->dim, c->n_vocab, ctx, cache ? cache : "f16");
  char at[32] = "";
  if (depth) snprintf(at, sizeof at, " @ d%d", depth);
  printf("pp%d%s: %.1f tok/s\n", pp, at, pp / median(pp_t, reps));
  printf("tg%d%s: %.1f tok/s\n", tg, at, tg / median(tg_t, reps));
  printf("kernels compiled: %lld in the warm-up, %lld in the timed passes\n", c1 - c0, compiles() - c1);
  free(toks);
  tg_llm_free(m);
  return 0;
}
