/* bench_llm.c: LLM decode and prefill speed on a 125M-parameter llama (dim
 * 768, 12 layers, 12 heads, 4 kv heads, ffn 2048, vocab 32000; random weights
 * from `tg llm-init`) in F32, F16, Q8_0 and Q4_0, measured by `tg bench-llm`
 * (tg128 decode, pp64 prefill) against llama.cpp:
 *   - LLAMA_BENCH=/path/to/llama-bench: llama.cpp runs on the same files in
 *     this bench (2 threads), ref=llama-bench;
 *   - otherwise the llama.cpp figures recorded on this machine (2 threads)
 *     in the issue that set the bar, ref=recorded (midpoints of their ranges).
 *   bench llm_decode type=q4_0 tg_tok_s=.. llama_tok_s=.. ref=.. ratio=tg/llama
 * Models are made once under build/bench/models (BENCH_LLM_DIR overrides). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct { const char *type; double decode_ref, prefill_ref; } model_case;
/* llama.cpp, 2 threads, this machine: decode 73-87 (F32), 122-163 (F16),
 * 136-194 (Q8_0), 270-337 (Q4_0) tok/s; pp64 Q8_0 703-1059 tok/s */
static const model_case cases[] = {
  { "f32", 80, 0 }, { "f16", 142.5, 0 }, { "q8_0", 165, 881 }, { "q4_0", 303.5, 0 },
};

/* Runs `tg bench-llm`; its "pp64: X tok/s" and "tg128: Y tok/s" lines. */
static int tg_bench(const char *cmd, double *pp, double *tg) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[4096];
  *pp = *tg = -1;
  while (fgets(line, sizeof line, p)) {
    if (!strncmp(line, "pp64: ", 6)) *pp = atof(line + 6);
    if (!strncmp(line, "tg128: ", 7)) *tg = atof(line + 7);
  }
  pclose(p);
  return *pp > 0 && *tg > 0 ? 0 : -1;
}

/* llama-bench's CSV: the avg_ts column of the pp and tg rows. */
static int llama_bench(const char *bin, const char *model, double *pp, double *tg) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s -m %s -p 64 -n 128 -t 2 -o csv 2>/dev/null", bin, model);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[8192];
  int col = -1;
  *pp = *tg = -1;
  while (fgets(line, sizeof line, p)) {
    char *fields[128];
    int n = 0;
    for (char *s = strtok(line, ",\n"); s && n < 128; s = strtok(NULL, ",\n")) fields[n++] = s;
    if (col < 0) {
      for (int i = 0; i < n; i++) if (strstr(fields[i], "avg_ts")) col = i;
      continue;
    }
    if (col >= n) continue;
    /* n_prompt and n_gen columns tell the row kind: the row whose n_gen is 0 is pp */
    double ts = atof(fields[col][0] == '"' ? fields[col] + 1 : fields[col]);
    bool is_pp = false;
    for (int i = 0; i < n; i++) if (strstr(fields[i], "\"0\"") && i > 0) is_pp = true;
    if (is_pp) *pp = ts; else *tg = ts;
  }
  pclose(p);
  return *tg > 0 ? 0 : -1;
}

int main(void) {
  const char *dir = getenv("BENCH_LLM_DIR") ? getenv("BENCH_LLM_DIR") : "build/bench/models";
  const char *llama = getenv("LLAMA_BENCH");
  if (access("build/tg", X_OK) != 0) { printf("bench llm_decode skipped reason=no-build/tg\n"); return 0; }
  mkdir("build/bench", 0755);
  mkdir(dir, 0755);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const model_case *c = &cases[i];
    char path[1024], cmd[2048];
    snprintf(path, sizeof path, "%s/llama125m-%s.gguf", dir, c->type);
    if (access(path, R_OK) != 0) {
      snprintf(cmd, sizeof cmd, "./build/tg llm-init %s --type %s --seed 1 >/dev/null", path, c->type);
      if (system(cmd) != 0) { printf("bench FAIL llm_decode type=%s: tg llm-init failed\n", c->type); return 1; }
    }
    snprintf(cmd, sizeof cmd, "./build/tg bench-llm -m %s -p 64 -n 128 -r 3", path);
    double pp, tg;
    if (tg_bench(cmd, &pp, &tg) < 0) { printf("bench FAIL llm_decode type=%s: tg bench-llm failed\n", c->type); return 1; }
    double ref_pp = c->prefill_ref, ref_tg = c->decode_ref;
    const char *ref = "recorded";
    if (llama && llama_bench(llama, path, &ref_pp, &ref_tg) == 0) ref = "llama-bench";
    printf("bench llm_decode type=%s tg_tok_s=%.1f llama_tok_s=%.1f ref=%s ratio=%.2f\n", c->type, tg, ref_tg, ref, tg / ref_tg);
    if (ref_pp > 0) printf("bench llm_prefill type=%s pp=64 tg_tok_s=%.1f llama_tok_s=%.1f ref=%s ratio=%.2f\n", c->type, pp, ref_pp, ref, pp / ref_pp);
    fflush(stdout);
  }
  return 0;
}
