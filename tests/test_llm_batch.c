/* test_llm_batch.c: several sequences in one model (tg_llm_opts.n_seq,
 * tg_llm_set_seq, tg_llm_decode_batch) against the numpy goldens of
 * tests/gen/gen_llm.py (the same files test_llm.c reads): one sequence
 * runs the golden's prompt and tokens while the others hold different
 * text at different lengths and decode beside it in the same batches, and
 * its logits must still be the golden's. For the sliding-window models the
 * golden is the long greedy run (its rings wrap). */
#include "test.h"
#include "llm/llm.h"

static int32_t other_token(int s, int i) { return (int32_t)((s * 11 + i * 5 + 2) % 40 + 1); }

/* model's golden run (prompt, then tokens fed[0..n_fed)) on sequence `me`
 * of n_seq, decoding in batches of all sequences: logits after the prompt
 * and after each fed token against want (rows of V). */
static void batch_run(const char *model, const char *cache, int n_ctx, int n_seq, int me, const int32_t *prompt, int n_prompt,
                      const int32_t *fed, int n_fed, const float *want, double tol) {
  char path[256];
  snprintf(path, sizeof path, "goldens/llm_%s.gguf", model);
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = n_ctx, .cache_type = cache, .n_seq = n_seq });
  CHECK_MSG(m != NULL, "load %s: %s", path, tg_error());
  if (!m) return;
  int V = m->cfg.n_vocab;
  CHECK_EQ_INT(tg_llm_n_seq(m), n_seq);
  float *got = malloc(sizeof(float) * (size_t)V * (size_t)n_seq), *mine = malloc(sizeof(float) * (size_t)V);
  /* the others first: prompts of different lengths */
  for (int s = 0; s < n_seq; s++) {
    if (s == me) continue;
    int32_t p[20];
    int n = 3 + 4 * s;
    for (int i = 0; i < n; i++) p[i] = other_token(s, i);
    CHECK_OK(tg_llm_set_seq(m, s) == 0 && tg_llm_eval(m, p, n, NULL) == 0);
  }
  CHECK_OK(tg_llm_set_seq(m, me) == 0 && tg_llm_eval(m, prompt, n_prompt, mine) == 0);
  char what[96];
  snprintf(what, sizeof what, "%s prompt on sequence %d of %d", model, me, n_seq);
  test_close_f32(mine, want, (size_t)V, tol, tol, what);
  CHECK_OK(tg_llm_set_seq(m, 0) == 0);   /* the batch does not depend on the current sequence */
  for (int i = 0; i < n_fed; i++) {
    /* every sequence, or (every third step) only some of them with ours */
    int seqs[8], n = 0;
    int32_t toks[8];
    for (int s = 0; s < n_seq; s++) {
      if (i % 3 == 2 && s != me && s % 2 == 0) continue;
      seqs[n] = s;
      toks[n++] = s == me ? fed[i] : other_token(s, 20 + i);
    }
    int row = 0;
    while (seqs[row] != me) row++;
    CHECK_OK(tg_llm_decode_batch(m, seqs, toks, n, got) == 0);
    snprintf(what, sizeof what, "%s token %d in a batch of %d", model, i, n);
    test_close_f32(got + (size_t)row * V, want + (size_t)(i + 1) * V, (size_t)V, tol, tol, what);
  }
  CHECK_OK(tg_llm_set_seq(m, me) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), n_prompt + n_fed);
  const int32_t *h = tg_llm_history(m);
  bool same = h != NULL;
  for (int i = 0; same && i < n_prompt; i++) same = h[i] == prompt[i];
  for (int i = 0; same && i < n_fed; i++) same = h[n_prompt + i] == fed[i];
  CHECK_MSG(same, "%s: sequence %d's history is not its tokens", model, me);
  free(got);
  free(mine);
  tg_llm_free(m);
}

/* The 7-token prompt and three tokens of gen_llm.py's main golden. */
static void batch_golden(const char *model, const char *cache, int n_seq, int me) {
  char lpath[256];
  snprintf(lpath, sizeof lpath, "goldens/llm_%s.logits.bin", model);
  size_t n;
  float *want = test_read_file(lpath, &n);
  CHECK_MSG(want != NULL, "missing %s", lpath);
  if (!want) return;
  int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 }, next[] = { 30, 2, 41 };
  batch_run(model, cache, 0, n_seq, me, prompt, 7, next, 3, want, 1e-4);
  free(want);
}

/* five sequences: batches of 5 and 3 rows are padded to 8 and 4 */
TEST(llm_batch_llama) { batch_golden("llama", "f32", 5, 4); }
TEST(llm_batch_qwen3moe) { batch_golden("qwen3moe", "f32", 3, 0); }
TEST(llm_batch_deepseek2_mla) { batch_golden("deepseek2", "f32", 2, 1); }
/* a q8_0 cache: each sequence's blocks and scales in its own rows */
TEST(llm_batch_llama_q8_0_cache) { batch_golden("llama_q8kv", "q8_0", 3, 1); }

/* Past the sliding window: the long greedy goldens, whose rings wrap. */
static void batch_long(const char *model) {
  char lpath[128], gpath[128];
  snprintf(lpath, sizeof lpath, "goldens/llm_%s_long.logits.bin", model);
  snprintf(gpath, sizeof gpath, "goldens/llm_%s_long.greedy.bin", model);
  size_t nl, ng;
  float *want = test_read_file(lpath, &nl);
  int32_t *toks = test_read_file(gpath, &ng);
  CHECK_MSG(want && toks, "missing %s or %s", lpath, gpath);
  if (want && toks) {
    int32_t prompt[70];
    for (int i = 0; i < 70; i++) prompt[i] = (i * 7 + 3) % 53;
    batch_run(model, "f32", 128, 3, 1, prompt, 70, toks, (int)(ng / sizeof(int32_t)) - 1, want, 1e-4);
  }
  free(want);
  free(toks);
}
TEST(llm_batch_gemma3_ring) { batch_long("gemma3"); }
TEST(llm_batch_gptoss_ring_sinks) { batch_long("gptoss"); }
/* Qwen3.5: each sequence's conv and recurrent states in its own rows (a
 * batch's rows read and write their sequences' states) */
TEST(llm_batch_qwen35) { batch_golden("qwen35", "f32", 3, 1); }
TEST(llm_batch_qwen35moe_long) { batch_long("qwen35moe"); }

TEST(llm_batch_errors) {
  for (int bad = -1; bad <= 65; bad += 66) {
    tg_clear_error();
    CHECK_MSG(tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_seq = bad }) == NULL && strstr(tg_error(), "n_seq"),
              "n_seq %d: %s", bad, tg_error());
  }
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = 8, .n_seq = 2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  int V = m->cfg.n_vocab;
  float *lg = malloc(sizeof(float) * 2 * (size_t)V);
  int32_t t[2] = { 3, 4 };
  CHECK_FAILS(tg_llm_set_seq(m, 2), "sequence 2 is out of range");
  CHECK_FAILS(tg_llm_set_seq(m, -1), "out of range");
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 0 }, t, 2, lg), "appears twice");
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 5 }, t, 2, lg), "sequence 5 is out of range");
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 1 }, (int32_t[]){ 3, V }, 2, lg), "outside the vocabulary");
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 1, 0 }, (int32_t[]){ 3, 4, 5 }, 3, lg), "3 rows");
  CHECK_FAILS(tg_llm_decode_batch(m, NULL, t, 2, lg), "NULL");
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 1 }, t, 0, lg), "0 rows");
  /* fill sequence 1: then it has no room, and nothing changes */
  CHECK_OK(tg_llm_set_seq(m, 1) == 0 && tg_llm_eval(m, (int32_t[]){ 1, 2, 3, 4, 5, 6, 7, 8 }, 8, NULL) == 0);
  CHECK_FAILS(tg_llm_decode_batch(m, (int[]){ 0, 1 }, t, 2, lg), "sequence 1 is full");
  CHECK_EQ_INT(tg_llm_n_past(m), 8);
  CHECK_OK(tg_llm_set_seq(m, 0) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), 0);
  CHECK_OK(tg_llm_decode_batch(m, (int[]){ 0 }, t, 1, lg) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), 1);
  free(lg);
  tg_llm_free(m);
  CHECK_FAILS(tg_llm_set_seq(NULL, 0), "NULL");
  CHECK_FAILS(tg_llm_n_seq(NULL), "NULL");
}
