/* fuzz_tokenizer.c: text and token ids from untrusted bytes through every
 * tokenizer type (SPM, byte-level BPE with each pre-tokenizer of the test
 * vocabularies, SentencePiece-style BPE (gemma4, sarvam-moe), Kimi K2's and afmoe's custom splitters, BPE between
 * whitespace (model "whitespace"), DNA k-mers (model "hybriddna"), WordPiece, unigram (model "t5", with and
 * without a precompiled charsmap), RWKV World, PLaMo 2). The first byte picks the vocabulary and the
 * flags; the rest is text to tokenize (then detokenized and streamed back)
 * and, read as 16-bit ids, ids to detokenize and stream (out-of-range ids
 * included). Properties beyond "no crash": detokenizing what was tokenized
 * works, and a stream gives every byte detokenize gives (no strip, no
 * removed specials), in order. */
#include "fuzz.h"

static const char *const vocabs[] = {
  "llama-spm", "phi-3", "baichuan", "gpt-2", "falcon", "starcoder", "mpt", "refact",
  "deepseek-coder", "deepseek-llm", "gpt-neox", "bert-bge",
};
/* the repository's own (tests/gen/gen_tok_gemma4.py), from the repo root as run.sh runs */
static const char *const repo_vocabs[] = { "tests/goldens/tok_gemma4.gguf", "tests/goldens/tok_sarvam.gguf",
                                            /* tests/gen/gen_tok_pretok.py: kimi-k2, afmoe, models
                                               whitespace and hybriddna */
                                            "tests/goldens/tok_pre_bytes.gguf", "tests/goldens/tok_pre_afmoe.gguf",
                                            "tests/goldens/tok_pre_raw.gguf", "tests/goldens/tok_pre_dna.gguf",
                                            /* tests/gen/gen_tok_models.py: t5 (with and without a charsmap),
                                               rwkv, plamo2 */
                                            "tests/goldens/tok_ugm.gguf", "tests/goldens/tok_ugm_raw.gguf",
                                            "tests/goldens/tok_rwkv.gguf", "tests/goldens/tok_plamo2.gguf" };
#define NV (int)(sizeof vocabs / sizeof *vocabs)
#define NR (int)(sizeof repo_vocabs / sizeof *repo_vocabs)
static tg_tokenizer *toks[NV + NR];
static int ntoks;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  for (int i = 0; i < NV + NR; i++) {
    char rel[128];
    const char *path = repo_vocabs[i < NV ? 0 : i - NV];
    if (i < NV) {
      snprintf(rel, sizeof rel, "vocab/ggml-vocab-%s.gguf", vocabs[i]);
      path = fuzz_testdata(rel);
    }
    tg_tokenizer *t = tg_tokenizer_load(path);
    if (t) toks[ntoks++] = t;
    else fprintf(stderr, "fuzz_tokenizer: %s\n", tg_error());
  }
  if (!ntoks) { fprintf(stderr, "fuzz_tokenizer: skipped: no vocabularies (set TG_FUZZ_TESTDATA)\n"); exit(0); }
  return 0;
}

/* Streams n ids; the bytes out must equal want (when given). */
static void stream(const tg_tokenizer *tok, const int32_t *ids, int n, bool special, const char *want, size_t want_len) {
  tg_token_stream *s = tg_token_stream_new(tok, special);
  if (!s) __builtin_trap();
  char *got = malloc(64);
  size_t at = 0, cap = 64;
  bool ok = true;
  for (int i = 0; i <= n; i++) {
    size_t len = 0;
    const char *p = i < n ? tg_token_stream_push(s, ids[i], &len) : tg_token_stream_flush(s, &len);
    if (!p) { ok = false; continue; }
    if (at + len > cap) got = realloc(got, cap = (at + len) * 2);
    if (len) memcpy(got + at, p, len);
    at += len;
  }
  if (want && ok && (at != want_len || (at && memcmp(got, want, at)))) {
    fprintf(stderr, "stream gave %zu bytes, detokenize %zu\n", at, want_len);
    __builtin_trap();
  }
  free(got);
  tg_token_stream_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const tg_tokenizer *tok = toks[data[0] % ntoks];
  unsigned flags = data[0] / ntoks;
  bool add_special = flags & 1, parse_special = flags & 2, special = flags & 4;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;

  int32_t *ids = NULL;
  int n = tg_tokenize(tok, text, len, add_special, parse_special, &ids);
  if (n < 0 || !ids) __builtin_trap();
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= tg_tokenizer_n_vocab(tok)) __builtin_trap();
  size_t dlen = 0;
  char *back = tg_detokenize(tok, ids, n, !add_special, special, &dlen);
  if (!back) __builtin_trap();
  free(back);
  back = tg_detokenize(tok, ids, n, false, special, &dlen);
  /* detokenize removes SPM's leading space; the stream keeps it */
  stream(tok, ids, n, special, NULL, 0);
  free(back);
  free(ids);

  /* the bytes as ids, any value */
  int m = (int)(len / 2);
  int32_t *raw = malloc((size_t)(m ? m : 1) * sizeof *raw);
  for (int i = 0; i < m; i++) {
    raw[i] = (int32_t)(data[1 + 2 * i] | data[2 + 2 * i] << 8);
    if (flags & 8) raw[i] -= 16;   /* negative ids too */
    char piece[64];
    tg_token_to_piece(tok, raw[i], special, piece, (int)(flags & 16 ? 3 : sizeof piece));
    tg_tokenizer_token_text(tok, raw[i]);
    tg_tokenizer_is_eog(tok, raw[i]);
  }
  back = tg_detokenize(tok, raw, m, flags & 32, special, &dlen);
  stream(tok, raw, m, special, NULL, 0);
  free(back);
  free(raw);
  char *z = fuzz_str((const uint8_t *)text, len < 64 ? len : 64);
  tg_tokenizer_find(tok, z);
  free(z);
  return 0;
}
