/* test_llm_batch_mixed.c: tg_llm_eval_batch's mixed steps (llama.cpp's
 * unified batch): pieces of several prompts at different positions and
 * single decode tokens in one forward pass. Each row's logits must equal
 * the same token's logits when its sequence alone is fed one token at a
 * time through tg_llm_eval on a model of one sequence (the decode path,
 * checked against the numpy goldens in test_llm.c). */
#include "test.h"
#include "llm/llm.h"

#define MIX_SEQS 3
#define MIX_MAX 150

static int32_t mix_token(int s, int i) { return (int32_t)((s * 17 + i * 7 + 3) % 50 + 1); }

/* Every token's logits of sequence s's first n tokens, one tg_llm_eval each. */
static float *reference(const char *path, const char *cache, int n_ctx, int s, int n, int V) {
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = n_ctx, .cache_type = cache });
  CHECK_MSG(m != NULL, "load %s: %s", path, tg_error());
  if (!m) return NULL;
  float *want = malloc(sizeof(float) * (size_t)n * (size_t)V);
  for (int i = 0; i < n; i++) {
    int32_t t = mix_token(s, i);
    CHECK_OK(tg_llm_eval(m, &t, 1, want + (size_t)i * V) == 0);
  }
  tg_llm_free(m);
  return want;
}

/* Sequences of len[s] tokens fed in steps: step k gives sequence s
 * pieces[(k + s) % np] tokens (at most what is left and what one sequence
 * may have), so prompt pieces of several lengths meet single tokens; every
 * row's logits are asked for but those of rows with (pos % 3 == 1) (rows
 * without logits between rows with them). */
static void mixed_run(const char *model, const char *cache, int n_ctx, const int len[MIX_SEQS], bool want_ring) {
  char path[256];
  snprintf(path, sizeof path, "goldens/llm_%s.gguf", model);
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = n_ctx, .cache_type = cache, .n_seq = MIX_SEQS });
  CHECK_MSG(m != NULL, "load %s: %s", path, tg_error());
  if (!m) return;
  CHECK_MSG(!want_ring || m->ring > 0, "%s: no sliding-window ring at n_ctx %d", model, n_ctx);
  int V = m->cfg.n_vocab, per = tg_llm_batch_seq_rows(m);
  float *want[MIX_SEQS] = { 0 };
  for (int s = 0; s < MIX_SEQS; s++) want[s] = reference(path, cache, n_ctx, s, len[s], V);
  static const int pieces[] = { 7, 1, 13, 1, 64, 2, 1, 30 };
  int np = (int)(sizeof pieces / sizeof pieces[0]), fed[MIX_SEQS] = { 0 };
  int seqs[LLM_MAX_BATCH];
  int32_t toks[LLM_MAX_BATCH], pos[LLM_MAX_BATCH];
  bool ask[LLM_MAX_BATCH];
  float *got = malloc(sizeof(float) * LLM_MAX_BATCH * (size_t)V);
  for (int k = 0; want[0] && want[1] && want[2]; k++) {
    int n = 0;
    for (int s = 0; s < MIX_SEQS; s++) {
      int take = pieces[(k + s) % np], left = len[s] - fed[s];
      if (take > left) take = left;
      if (take > per) take = per;
      for (int i = 0; i < take && n < LLM_MAX_BATCH; i++, n++)
        seqs[n] = s, pos[n] = fed[s] + i, toks[n] = mix_token(s, fed[s] + i), ask[n] = pos[n] % 3 != 1;
      fed[s] += take;
    }
    if (!n) break;
    if (tg_llm_eval_batch(m, seqs, k % 2 ? pos : NULL, toks, n, ask, got) != 0) {
      CHECK_MSG(0, "%s: step %d of %d rows: %s", model, k, n, tg_error());
      break;
    }
    for (int i = 0, r = 0; i < n; i++) {
      if (!ask[i]) continue;
      char what[128];
      snprintf(what, sizeof what, "%s step %d: row %d (sequence %d, position %d) of %d", model, k, i, seqs[i], pos[i], n);
      test_close_f32(got + (size_t)r++ * V, want[seqs[i]] + (size_t)pos[i] * V, (size_t)V, 1e-4, 1e-4, what);
    }
  }
  for (int s = 0; s < MIX_SEQS; s++) {
    CHECK_OK(tg_llm_set_seq(m, s) == 0);
    CHECK_EQ_INT(tg_llm_n_past(m), len[s]);
    const int32_t *h = tg_llm_history(m);
    for (int i = 0; h && i < len[s]; i++) CHECK_MSG(h[i] == mix_token(s, i), "%s: sequence %d's history at %d", model, s, i);
  }
  for (int s = 0; s < MIX_SEQS; s++) free(want[s]);
  free(got);
  tg_llm_free(m);
}

TEST(llm_batch_mixed_llama) { mixed_run("llama", "f32", 0, (int[]){ 32, 9, 25 }, false); }
TEST(llm_batch_mixed_llama_q8_0_cache) { mixed_run("llama_q8kv", "q8_0", 0, (int[]){ 30, 12, 20 }, false); }
TEST(llm_batch_mixed_qwen3moe) { mixed_run("qwen3moe", "f32", 0, (int[]){ 20, 5, 14 }, false); }
TEST(llm_batch_mixed_deepseek2_mla) { mixed_run("deepseek2", "f32", 0, (int[]){ 20, 11, 6 }, false); }
/* past the window: the rings wrap, a piece's rows see their own windows */
TEST(llm_batch_mixed_gemma3_ring) { mixed_run("gemma3", "f32", 128, (int[]){ 120, 70, 100 }, true); }
TEST(llm_batch_mixed_gptoss_ring_sinks) { mixed_run("gptoss", "f32", 128, (int[]){ 110, 90, 40 }, true); }
/* delta-net: one row per sequence (tg_llm_batch_seq_rows), decode only */
TEST(llm_batch_mixed_qwen35) { mixed_run("qwen35", "f32", 0, (int[]){ 8, 5, 6 }, false); }

/* One sequence: the rows of a step are its consecutive tokens. */
TEST(llm_batch_mixed_one_seq) {
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = 32 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  int V = m->cfg.n_vocab;
  float *want = reference("goldens/llm_llama.gguf", NULL, 32, 0, 12, V), *got = malloc(sizeof(float) * 12 * (size_t)V);
  int32_t t[12];
  int seqs[12] = { 0 };
  for (int i = 0; i < 12; i++) t[i] = mix_token(0, i);
  CHECK_OK(tg_llm_eval_batch(m, seqs, NULL, t, 5, NULL, got) == 0);
  CHECK_OK(tg_llm_eval_batch(m, seqs, NULL, t + 5, 7, NULL, got + 5 * (size_t)V) == 0);
  if (want) test_close_f32(got, want, 12 * (size_t)V, 1e-4, 1e-4, "one sequence, steps of 5 and 7 rows");
  CHECK_EQ_INT(tg_llm_n_past(m), 12);
  free(want);
  free(got);
  tg_llm_free(m);
}

TEST(llm_batch_mixed_errors) {
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = 8, .n_seq = 2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  int V = m->cfg.n_vocab;
  float *lg = malloc(sizeof(float) * (LLM_MAX_BATCH + 1) * (size_t)V);
  int32_t t[LLM_MAX_BATCH + 1] = { 0 };
  int s[LLM_MAX_BATCH + 1] = { 0 };
  CHECK_FAILS(tg_llm_eval_batch(NULL, s, NULL, t, 1, NULL, lg), "NULL");
  CHECK_FAILS(tg_llm_eval_batch(m, NULL, NULL, t, 1, NULL, lg), "NULL");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, NULL, 1, NULL, lg), "NULL");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, t, 0, NULL, lg), "0 rows");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, t, -3, NULL, lg), "-3 rows");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, t, LLM_MAX_BATCH + 1, NULL, lg), "129 rows");
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 2 }, NULL, t, 2, NULL, lg), "sequence 2 is out of range");
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ -1 }, NULL, t, 1, NULL, lg), "sequence -1 is out of range");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, (int32_t[]){ V }, 1, NULL, lg), "outside the vocabulary");
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, (int32_t[]){ -1 }, 1, NULL, lg), "outside the vocabulary");
  /* positions: not the next, a gap, out of order, repeated */
  CHECK_FAILS(tg_llm_eval_batch(m, s, (int32_t[]){ 1 }, t, 1, NULL, lg), "not its next (0)");
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 0 }, (int32_t[]){ 0, 2 }, t, 2, NULL, lg), "position 2 of sequence 0");
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 0 }, (int32_t[]){ 1, 0 }, t, 2, NULL, lg), "not its next");
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 0 }, (int32_t[]){ 0, 0 }, t, 2, NULL, lg), "not its next (1)");
  /* the context: 9 rows of one sequence in 8 positions; then a full one */
  CHECK_FAILS(tg_llm_eval_batch(m, s, NULL, t, 9, NULL, lg), "sequence 0 is full");
  CHECK_EQ_INT(tg_llm_n_past(m), 0);
  CHECK_OK(tg_llm_eval_batch(m, (int[]){ 1, 1, 1, 1, 1, 1, 1, 1 }, NULL, t, 8, NULL, NULL) == 0);
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 1 }, NULL, t, 2, NULL, lg), "sequence 1 is full");
  CHECK_OK(tg_llm_set_seq(m, 1) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), 8);
  CHECK_OK(tg_llm_set_seq(m, 0) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), 0);
  /* no row asked for: nothing written */
  CHECK_OK(tg_llm_eval_batch(m, s, NULL, t, 2, (bool[]){ false, false }, lg) == 0);
  CHECK_EQ_INT(tg_llm_n_past(m), 2);
  free(lg);
  tg_llm_free(m);
  /* delta-net layers: one row per sequence */
  m = tg_llm_load("goldens/llm_qwen35.gguf", &(tg_llm_opts){ .n_ctx = 16, .n_seq = 2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  CHECK_EQ_INT(tg_llm_batch_seq_rows(m), 1);
  CHECK_FAILS(tg_llm_eval_batch(m, (int[]){ 0, 1, 0 }, NULL, (int32_t[]){ 1, 2, 3 }, 3, NULL, NULL), "delta-net");
  tg_llm_free(m);
  CHECK_FAILS(tg_llm_batch_seq_rows(NULL), "NULL");
}
