/* bench_perplexity.c: `tg perplexity` on stories260K over
 * tests/data/ppl_story.txt in chunks of 64: the evaluation's tokens/s (the
 * second run, compile cache warm) and the final estimate. With
 * LLAMA_PERPLEXITY=/path/to/llama-perplexity, llama.cpp runs on the same
 * file and text (-c 64 -t 2): ratio= is tg's tok/s over its prompt-eval
 * tok/s, and the two estimates must agree within 0.5% (else bench FAIL). */
#include <ctype.h>
#include <math.h>
#include "bench.h"

#ifndef BENCH_BUILD
#define BENCH_BUILD "build"
#endif
#ifndef BENCH_DIR
#define BENCH_DIR "bench"
#endif
#define PPL_MODEL BENCH_DIR "/../../shared/testdata/models/stories260K.gguf"
#define PPL_TEXT BENCH_DIR "/../tests/data/ppl_story.txt"

/* Runs cmd: the number after "Final estimate: PPL = ", and the number just
 * before the first speed_key (llama.cpp's first "tokens per second" is the
 * prompt eval's). */
static int run_ppl(const char *cmd, const char *speed_key, double *ppl, double *tok_s) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[4096];
  *ppl = *tok_s = -1;
  while (fgets(line, sizeof line, p)) {
    const char *f = strstr(line, "Final estimate: PPL = ");
    if (f) *ppl = atof(f + strlen("Final estimate: PPL = "));
    const char *s = strstr(line, speed_key);
    if (s && *tok_s < 0) {
      const char *b = s;
      while (b > line && (b[-1] == ' ' || b[-1] == '(')) b--;
      while (b > line && (isdigit((unsigned char)b[-1]) || b[-1] == '.')) b--;
      *tok_s = atof(b);
    }
  }
  pclose(p);
  return *ppl > 0 && *tok_s > 0 ? 0 : -1;
}

int main(void) {
  if (bench_devices_only()) return 0;
  if (access(BENCH_BUILD "/tg", X_OK) != 0) { printf("bench llm_perplexity skipped reason=no_" BENCH_BUILD "/tg\n"); return 0; }
  if (access(PPL_MODEL, R_OK) != 0) { printf("bench llm_perplexity skipped reason=no_stories260K\n"); return 0; }
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "./" BENCH_BUILD "/tg perplexity -m %s -f %s -c 64 2>&1", PPL_MODEL, PPL_TEXT);
  double ppl, tok_s;
  for (int run = 0; run < 2; run++)   /* the first fills the compile cache */
    if (run_ppl(cmd, "tok/s", &ppl, &tok_s) < 0) { printf("bench FAIL llm_perplexity: tg perplexity failed\n"); return 1; }
  const char *llama = getenv("LLAMA_PERPLEXITY");
  if (!llama || !*llama) {
    printf("bench llm_perplexity skipped reason=no_LLAMA_PERPLEXITY model=stories260K c=64 tg_tok_s=%.1f ppl=%.4f\n", tok_s, ppl);
    return 0;
  }
  snprintf(cmd, sizeof cmd, "%s -m %s -f %s -c 64 -t 2 2>&1", llama, PPL_MODEL, PPL_TEXT);
  double ref_ppl, ref_tok_s;
  if (run_ppl(cmd, "tokens per second", &ref_ppl, &ref_tok_s) < 0) {
    printf("bench llm_perplexity skipped reason=llama-perplexity_failed tg_tok_s=%.1f ppl=%.4f\n", tok_s, ppl);
    return 0;
  }
  double rel = fabs(ppl / ref_ppl - 1);
  printf("bench llm_perplexity model=stories260K c=64 tg_tok_s=%.1f llama_tok_s=%.1f ppl=%.4f llama_ppl=%.4f rel_diff=%.5f ratio=%.2f\n",
         tok_s, ref_tok_s, ppl, ref_ppl, rel, tok_s / ref_tok_s);
  if (rel > 5e-3) { printf("bench FAIL llm_perplexity: estimates differ by %.3f%%\n", 100 * rel); return 1; }
  return 0;
}
