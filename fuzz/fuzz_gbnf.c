/* fuzz_gbnf.c: a GBNF grammar from untrusted bytes (a request's "grammar"
 * field, tg run --grammar), and text matched against it. The bytes up to
 * the first NUL are the grammar, the rest is the text: fed byte by byte as
 * a sampler feeds tokens, then the masks of stories260K's vocabulary (512
 * tokens) along it. A grammar that compiles must come with no error; one
 * that does not must say why. The parser's and matcher's bounds (grammar.h)
 * keep every input finite: nothing may hang or grow without bound. */
#include "fuzz.h"

static tg_tokenizer *tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  tok = tg_tokenizer_load(fuzz_testdata("models/stories260K.gguf"));
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t glen = nul ? (size_t)(nul - data) : size;
  const char *text = nul ? (const char *)nul + 1 : "";
  size_t tlen = nul ? size - glen - 1 : 0;
  if (tlen > 256) tlen = 256;
  tg_grammar *g = tg_grammar_new((const char *)data, glen);
  if (!g) {
    if (!tg_error()[0]) __builtin_trap();
    return 0;
  }
  uint8_t allowed[512];
  bool masks = tok && tg_tokenizer_n_vocab(tok) <= 512;
  for (size_t i = 0; i < tlen; i++) {
    if (masks && i % 16 == 0 && tg_grammar_mask(g, tok, allowed) < 0) break;
    if (tg_grammar_accept(g, text + i, 1)) break;
  }
  tg_grammar_can_end(g);
  tg_grammar_free(g);
  return 0;
}
