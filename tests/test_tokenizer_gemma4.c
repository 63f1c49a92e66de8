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
  const char *const files[] = { "goldens/tok_gemma4.gguf", "goldens/tok_sarvam.gguf" };
  tok_check_roundtrip(files, 2, alphabet, (int)(sizeof alphabet / sizeof alphabet[0]), 4242);
}
