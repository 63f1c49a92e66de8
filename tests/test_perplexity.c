/* test_perplexity.c: tg_llm_perplexity and tg_llm_eval_all against
 * tests/gen/gen_llm.py's numpy reference (perplexity(): llama.cpp's
 * llama-perplexity method on the tiny llama, 53 tokens in chunks of 16
 * with BOS 1), and `tg perplexity` on stories260K: the per-chunk line, the
 * final estimate, and clear errors for bad input. */
#include "test.h"
#include <sys/wait.h>
#include <unistd.h>

static const char *PPL_MODEL = "goldens/llm_llama.gguf";

typedef struct { int n; double ppl[8]; } chunk_log;
static void log_chunk(void *user, int chunk, double ppl) {
  chunk_log *l = user;
  if (chunk == l->n && l->n < 8) l->ppl[l->n++] = ppl;
}

static void check_ppl_of(const char *name, int n_batch) {
  size_t nt, ng;
  char tpath[128], gpath[128], mpath[128];
  snprintf(tpath, sizeof tpath, "goldens/llm_%s.ppl_tokens.bin", name);
  snprintf(gpath, sizeof gpath, "goldens/llm_%s.ppl.bin", name);
  snprintf(mpath, sizeof mpath, "goldens/llm_%s.gguf", name);
  int32_t *toks = test_read_file(tpath, &nt);
  double *want = test_read_file(gpath, &ng);
  tg_llm *m = tg_llm_load(mpath, &(tg_llm_opts){ .cache_type = "f32" });
  CHECK_MSG(toks && want && m, "goldens or model missing: %s", tg_error());
  if (toks && want && m) {
    int n = (int)(nt / sizeof(int32_t)), chunks = (int)(ng / sizeof(double)) - 2;
    chunk_log log = { 0 };
    tg_ppl_opts o = { .n_ctx = 16, .n_batch = n_batch, .add_bos = true, .bos = 1, .on_chunk = log_chunk, .user = &log };
    tg_ppl_result r;
    CHECK_OK(tg_llm_perplexity(m, toks, n, &o, &r) == 0);
    CHECK_EQ_INT(r.n_chunks, chunks);
    CHECK_EQ_INT(r.n_scored, chunks * 7);
    CHECK_EQ_INT(r.n_tokens, chunks * 16);
    CHECK_NEAR(r.ppl / want[0], 1, 1e-4);
    CHECK_NEAR(r.ppl_err / want[1], 1, 1e-4);
    CHECK_EQ_INT(log.n, chunks);
    for (int i = 0; i < chunks && i < log.n; i++) CHECK_NEAR(log.ppl[i] / want[2 + i], 1, 1e-4);
    /* --chunks 2: the first two chunks' estimate */
    o.n_chunks = 2;
    log.n = 0;
    CHECK_OK(tg_llm_perplexity(m, toks, n, &o, &r) == 0);
    CHECK_EQ_INT(r.n_chunks, 2);
    CHECK_NEAR(r.ppl / want[3], 1, 1e-4);
  }
  tg_llm_free(m);
  free(toks);
  free(want);
}

static void check_ppl(int n_batch) { check_ppl_of("llama", n_batch); }

TEST(llm_perplexity_tiny_llama) { check_ppl(0); }
/* Qwen3.5: each chunk starts from empty delta-net states (n_past 0), in
 * one piece or in pieces of 5 (the states carried between them) */
TEST(llm_perplexity_tiny_qwen35) { check_ppl_of("qwen35", 0); check_ppl_of("qwen35", 5); }
/* batches of 5: pieces 5, 5, 5, 1 per chunk give the same numbers */
TEST(llm_perplexity_tiny_llama_batches) { check_ppl(5); }

/* every position's logits: the last row is tg_llm_eval's (the golden after
 * the prompt), and the cache advances as with tg_llm_eval */
TEST(llm_eval_all_tiny_llama) {
  size_t nw;
  float *want = test_read_file("goldens/llm_llama.logits.bin", &nw);
  tg_llm *m = tg_llm_load(PPL_MODEL, &(tg_llm_opts){ .cache_type = "f32" });
  CHECK_MSG(want && m, "model or golden missing: %s", tg_error());
  if (want && m) {
    int V = tg_llm_config_of(m)->n_vocab;
    int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 }, next = 30;
    float *all = malloc(sizeof(float) * 7 * (size_t)V), *one = malloc(sizeof(float) * (size_t)V);
    CHECK_OK(tg_llm_eval_all(m, prompt, 7, all) == 0);
    test_close_f32(all + 6 * (size_t)V, want, (size_t)V, 1e-4, 1e-4, "eval_all last row");
    CHECK_EQ_INT(tg_llm_n_past(m), 7);
    CHECK_OK(tg_llm_eval(m, &next, 1, one) == 0);   /* the decode step continues its cache */
    test_close_f32(one, want + V, (size_t)V, 1e-4, 1e-4, "decode after eval_all");
    /* row 2 is the prompt's first three tokens' last logits */
    tg_llm_rewind(m, 0);
    CHECK_OK(tg_llm_eval(m, prompt, 3, one) == 0);
    test_close_f32(all + 2 * (size_t)V, one, (size_t)V, 1e-4, 1e-4, "eval_all row 2");
    /* pieces of 2 at positions 0, 2, 4: the third call replays the JIT
     * captured at position 2; its rows are tg_llm_eval's at 4 and 5 */
    tg_llm_rewind(m, 0);
    float *two = malloc(sizeof(float) * 2 * (size_t)V);
    for (int p = 0; p < 6; p += 2) CHECK_OK(tg_llm_eval_all(m, prompt + p, 2, two) == 0);
    tg_llm_rewind(m, 0);
    CHECK_OK(tg_llm_eval(m, prompt, 5, one) == 0);
    test_close_f32(two, one, (size_t)V, 1e-4, 1e-4, "replayed piece row 0");
    CHECK_OK(tg_llm_eval(m, prompt + 5, 1, one) == 0);
    test_close_f32(two + V, one, (size_t)V, 1e-4, 1e-4, "replayed piece row 1");
    free(two);
    tg_llm_rewind(m, 3);
    /* bad input: nothing changes */
    int32_t bad = V;
    CHECK(tg_llm_eval_all(m, &bad, 1, all) == -1);
    CHECK(tg_llm_eval_all(m, prompt, 0, all) == -1);
    CHECK(tg_llm_eval_all(m, prompt, 7, NULL) == -1);
    CHECK_EQ_INT(tg_llm_n_past(m), 3);
    free(all);
    free(one);
  }
  tg_llm_free(m);
  free(want);
}

TEST(llm_perplexity_bad_input) {
  tg_llm *m = tg_llm_load(PPL_MODEL, NULL);
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  int32_t toks[64];
  for (int i = 0; i < 64; i++) toks[i] = i % 50;
  tg_ppl_result r;
  CHECK(tg_llm_perplexity(m, toks, 31, &(tg_ppl_opts){ .n_ctx = 16 }, &r) == -1);   /* fewer than 2 * n_ctx */
  CHECK_MSG(strstr(tg_error(), "at least 32"), "%s", tg_error());
  CHECK_OK(tg_llm_perplexity(m, toks, 32, &(tg_ppl_opts){ .n_ctx = 16 }, &r) == 0);   /* exactly 2 * n_ctx: two chunks */
  CHECK_EQ_INT(r.n_chunks, 2);
  CHECK_EQ_INT(r.n_scored, 14);
  CHECK(tg_llm_perplexity(m, toks, 64, &(tg_ppl_opts){ .n_ctx = 2 }, &r) == -1);
  CHECK(tg_llm_perplexity(m, toks, 64, &(tg_ppl_opts){ .n_ctx = 64 }, &r) == -1);   /* over the cache (32) */
  CHECK(tg_llm_perplexity(m, toks, 64, &(tg_ppl_opts){ .n_ctx = 16, .n_batch = -1 }, &r) == -1);
  CHECK(tg_llm_perplexity(m, toks, 64, &(tg_ppl_opts){ .n_ctx = 16, .add_bos = true, .bos = 99 }, &r) == -1);
  toks[40] = 1000;
  CHECK(tg_llm_perplexity(m, toks, 64, &(tg_ppl_opts){ .n_ctx = 16 }, &r) == -1);   /* outside the vocabulary */
  CHECK(tg_llm_perplexity(m, NULL, 64, NULL, &r) == -1);
  CHECK(tg_llm_perplexity(m, toks, 64, NULL, NULL) == -1);
  tg_llm_free(m);
}

/* `tg perplexity ARGS`: its exit status, stdout and stderr in out. */
static int run_tg(const char *args, char *out, size_t cap) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s perplexity %s 2>&1", getenv("TG_BIN"), args);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(perplexity_cli_stories260K) {
  const char *bin = getenv("TG_BIN"), *model = "../../shared/testdata/models/stories260K.gguf";
  if (!bin || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  static char out[1 << 16];
  char args[512];
  /* data/ppl_story.txt: 524 tokens, 8 chunks of 64 (the model's context is 128) */
  snprintf(args, sizeof args, "-m %s -f data/ppl_story.txt -c 64", model);
  CHECK_EQ_INT(run_tg(args, out, sizeof out), 0);
  CHECK_MSG(strstr(out, "[1]") && strstr(out, ",[8]"), "no per-chunk line: %s", out);
  const char *fin = strstr(out, "Final estimate: PPL = ");
  CHECK_MSG(fin, "no final estimate: %s", out);
  double ppl = 0, err = 0;
  if (fin) CHECK_EQ_INT(sscanf(fin, "Final estimate: PPL = %lf +/- %lf", &ppl, &err), 2);
  CHECK_MSG(ppl > 1 && ppl < 20 && err > 0, "ppl %g +/- %g", ppl, err);
  /* the same with batches of 16 */
  snprintf(args, sizeof args, "-m %s -f data/ppl_story.txt -c 64 -b 16 --chunks 8", model);
  static char out2[1 << 16];
  CHECK_EQ_INT(run_tg(args, out2, sizeof out2), 0);
  const char *fin2 = strstr(out2, "Final estimate: PPL = ");
  double ppl2 = 0;
  if (fin2) sscanf(fin2, "Final estimate: PPL = %lf", &ppl2);
  CHECK_NEAR(ppl2, ppl, 1e-3 * ppl);
  /* bad input: a missing file, an empty one, too short a text, a bad -c */
  snprintf(args, sizeof args, "-m %s -f data/no_such_file.txt", model);
  CHECK_EQ_INT(run_tg(args, out, sizeof out), 1);
  CHECK_MSG(strstr(out, "no_such_file.txt"), "%s", out);
  char empty[] = "/tmp/tg_ppl_empty_XXXXXX";
  int fd = mkstemp(empty);
  if (fd >= 0) {
    close(fd);
    snprintf(args, sizeof args, "-m %s -f %s -c 64", model, empty);
    CHECK_EQ_INT(run_tg(args, out, sizeof out), 1);
    CHECK_MSG(strstr(out, "is empty"), "%s", out);
    FILE *f = fopen(empty, "w");
    if (f) { fputs("Once upon a time, there was a little girl.", f); fclose(f); }
    CHECK_EQ_INT(run_tg(args, out, sizeof out), 1);
    CHECK_MSG(strstr(out, "you need at least 128 tokens"), "%s", out);
    unlink(empty);
  }
  snprintf(args, sizeof args, "-m %s -f data/ppl_story.txt -c x", model);
  CHECK_EQ_INT(run_tg(args, out, sizeof out), 2);
  snprintf(args, sizeof args, "-f data/ppl_story.txt");
  CHECK_EQ_INT(run_tg(args, out, sizeof out), 2);
}

/* a model with sliding-window rings (gemma2: window 4, ring 67 rows of a
 * 128-position cache): eval_all runs pieces of 64 that the ring holds; the
 * last row after gen_llm.py's 70-token prompt is its golden */
TEST(llm_eval_all_sliding_ring_gemma2) {
  size_t nw;
  float *want = test_read_file("goldens/llm_gemma2_long.logits.bin", &nw);
  tg_llm *m = tg_llm_load("goldens/llm_gemma2.gguf", &(tg_llm_opts){ .n_ctx = 128, .cache_type = "f32" });
  CHECK_MSG(want && m, "model or golden missing: %s", tg_error());
  if (want && m) {
    int V = tg_llm_config_of(m)->n_vocab;
    int32_t prompt[70];
    for (int i = 0; i < 70; i++) prompt[i] = (i * 7 + 3) % 53;   /* gen_llm.py's LONG */
    float *all = malloc(sizeof(float) * 70 * (size_t)V);
    CHECK_OK(tg_llm_eval_all(m, prompt, 70, all) == 0);
    test_close_f32(all + 69 * (size_t)V, want, (size_t)V, 1e-4, 1e-4, "gemma2 eval_all last row");
    free(all);
  }
  tg_llm_free(m);
  free(want);
}
