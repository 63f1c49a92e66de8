/* test_tokenizer_gemma4.c: the SentencePiece-style BPE tokenizers
 * (tokenizer.ggml.model gemma4; pre gemma4, granite-embed-multi-311m,
 * sarvam-moe) against llama.cpp's own output, from the goldens that
 * tests/gen/gen_tok_gemma4.py writes (the format is at the top of that
 * script; tok_check_golden in tok_golden.c compares them). */
#include <stdint.h>
#include "test.h"
#include "tok_golden.h"
#include "tokenizer/tokenizer.h"

TEST(tok_gemma4_llamacpp) { tok_check_golden("tok_gemma4"); }
TEST(tok_granite311m_llamacpp) { tok_check_golden("tok_granite311m"); }
TEST(tok_sarvam_llamacpp) { tok_check_golden("tok_sarvam"); }

/* Without specials, detokenize gives back any valid UTF-8 text exactly: the
 * byte tokens cover every character, and this alphabet has none of the
 * patterns clean_up_tokenization_spaces changes (gemma4 keeps it on) and no
 * "▁" (which comes back as a space). */
TEST(tok_gemma4_roundtrip) {
  static const char *const alphabet[] = { "a", "the", " ", "  ", "\n", "\n\n", "\t", "\xC3\xA9", "\xE4\xB8\xAD",
                                          "\xF0\x9F\xA6\x99", "<", "|", ">", "<eos>", "1", "\r", "w", "o" };
  const char *files[] = { "goldens/tok_gemma4.gguf", "goldens/tok_sarvam.gguf" };
  uint64_t seed = 4242;
  for (int f = 0; f < 2; f++) {
    tg_tokenizer *t = tg_tokenizer_load(files[f]);
    CHECK_OK(t);
    for (int r = 0; t && r < 300; r++) {
      char text[512];
      size_t n = 0;
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      for (int k = 0, parts = (int)(seed >> 58); k < parts; k++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *a = alphabet[(seed >> 33) % 18];
        memcpy(text + n, a, strlen(a));
        n += strlen(a);
      }
      int32_t *ids;
      int c = tg_tokenize(t, text, n, false, false, &ids);
      size_t dn;
      char *d = tg_detokenize(t, ids, c, false, false, &dn);
      CHECK_MSG(d && dn == n && !memcmp(d, text, n), "%s: '%.*s' does not round-trip", files[f], (int)n, text);
      free(d);
      free(ids);
    }
    tg_tokenizer_free(t);
  }
}
