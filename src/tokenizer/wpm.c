/* wpm.c: WordPiece (tokenizer.ggml.model "bert") as llama.cpp does it: BERT
 * normalization (drop control characters, optionally lowercase and strip
 * accents), split at whitespace and around punctuation / CJK characters,
 * then per word the longest vocabulary prefix of "▁word" repeatedly; a word
 * that cannot be covered becomes [UNK]. Continuations are the vocabulary's
 * "##" pieces, found because "▁" marks only word starts. */
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

static bool is_chinese(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) ||
         (c >= 0x2B920 && c <= 0x2CEAF) ||   /* sic: HF's range (not 0x2B820) */
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static void wpm_word(const tg_tokenizer *t, const char *word, size_t wn, ids_vec *out) {
  if (wn == 0) return;
  /* "▁" + word */
  char stack[256], *w = wn + 3 <= sizeof stack ? stack : tg_xmalloc(wn + 3);
  memcpy(w, "\xE2\x96\x81", 3);
  memcpy(w + 3, word, wn);
  int n = (int)wn + 3, first = out->n;
  for (int i = 0; i < n; i++) {
    bool match = false;
    int hi = i + t->max_token_len + 1 < n ? i + t->max_token_len + 1 : n;
    for (int j = hi; j > i; j--) {
      int32_t id = strmap_get(&t->ids, w + i, (size_t)(j - i));
      if (id >= 0) {
        VEC_PUSH(*out, id);
        match = true;
        i = j - 1;
        break;
      }
    }
    if (!match) { out->n = first; break; }   /* discard the word's pieces */
  }
  if (out->n == first && t->unk >= 0) VEC_PUSH(*out, t->unk);
  if (w != stack) free(w);
}

void wpm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out) {
  VEC(char) word = { 0 };
  for (size_t i = 0; i < n;) {
    size_t adv;
    uint32_t cp = utf8_decode(text + i, n - i, &adv);
    i += adv;
    if (t->strip_accents) cp = ucp_nfd_first(cp);
    unsigned cls = ucp_class(cp);
    if (cls & UCP_SPACE) {
      wpm_word(t, word.v, (size_t)word.n, out);
      word.n = 0;
      continue;
    }
    if (cp == 0 || cp == UCP_REPLACEMENT || (cls & UCP_CONTROL)) continue;
    if (t->strip_accents && (cls & UCP_MARK)) continue;
    char buf[4];
    int bl = utf8_encode(t->lowercase ? ucp_tolower(cp) : cp, buf);
    bool alone = (cls & UCP_PUNCT) || (cp < 0x7F && (cls & UCP_SYMBOL)) || is_chinese(cp);
    if (alone) {
      wpm_word(t, word.v, (size_t)word.n, out);
      wpm_word(t, buf, (size_t)bl, out);
      word.n = 0;
    } else {
      for (int k = 0; k < bl; k++) VEC_PUSH(word, buf[k]);
    }
  }
  wpm_word(t, word.v, (size_t)word.n, out);
  VEC_FREE(word);
}
