/* test_llm_embed.c: tg_llm_embed (mean-pooled last hidden state) on the
 * tiny llama of tests/gen/gen_llm.py, against tests/gen/gen_llm_embed.py's
 * numpy forward of the same file. The sequences cover each prompt chunk
 * size (7 = 4+1+1+1, 21 = 16+4+1, 32 = the whole context, 1). */
#include "test.h"
#include "util/util.h"

TEST(llm_embed_llama) {
  size_t n;
  unsigned char *g = test_read_file("goldens/llm_llama_embed.bin", &n);
  CHECK_MSG(g != NULL, "goldens/llm_llama_embed.bin is missing (python3 tests/gen/gen_llm_embed.py)");
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .cache_type = "f32" });   /* f16 keys/values: 1e-3 */
  CHECK_OK(m);
  if (!g || !m) { free(g); tg_llm_free(m); return; }
  int dim = tg_llm_config_of(m)->dim, count;
  size_t at = 0;
  memcpy(&count, g, 4);
  at += 4;
  float *got = tg_xmalloc(sizeof(float) * (size_t)dim);
  for (int s = 0; s < count && at + 4 <= n; s++) {
    int len;
    memcpy(&len, g + at, 4);
    at += 4;
    int32_t *toks = tg_xmalloc(sizeof(int32_t) * (size_t)len);
    memcpy(toks, g + at, sizeof(int32_t) * (size_t)len);
    at += sizeof(int32_t) * (size_t)len;
    float *want = tg_xmalloc(sizeof(float) * (size_t)dim);
    memcpy(want, g + at, sizeof(float) * (size_t)dim);
    at += sizeof(float) * (size_t)dim;
    CHECK_OK(tg_llm_embed(m, toks, len, got) == 0);
    char what[48];
    snprintf(what, sizeof what, "sequence %d (%d tokens)", s, len);
    CHECK(test_close_f32(got, want, (size_t)dim, 1e-5, 1e-5, what));
    CHECK_EQ_INT(tg_llm_n_past(m), len);   /* the cache holds the sequence, as after an eval */
    free(toks);
    free(want);
  }
  /* bad calls are errors, not crashes */
  int32_t bad[2] = { 1, 9999 };
  CHECK(tg_llm_embed(m, bad, 2, got) < 0 && strstr(tg_error(), "vocabulary"));
  CHECK(tg_llm_embed(m, bad, 0, got) < 0);
  CHECK(tg_llm_embed(m, bad, 33, got) < 0);
  CHECK(tg_llm_embed(NULL, bad, 1, got) < 0);
  /* generation after an embedding starts from a clean cache */
  float logits_a[53], logits_b[53];
  int32_t p[3] = { 1, 5, 9 };
  tg_llm_rewind(m, 0);
  CHECK_OK(tg_llm_eval(m, p, 3, logits_a) == 0);
  CHECK_OK(tg_llm_embed(m, p + 1, 2, got) == 0);
  tg_llm_rewind(m, 0);
  CHECK_OK(tg_llm_eval(m, p, 3, logits_b) == 0);
  CHECK(test_close_f32(logits_a, logits_b, 53, 1e-6, 1e-6, "logits after an embedding"));
  free(got);
  free(g);
  tg_llm_free(m);
}
