/* spm.c: SentencePiece-style BPE (tokenizer.ggml.model "llama"): start from
 * UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is
 * the vocabulary token with the highest score, then emit each symbol's token,
 * or its bytes as <0xXX> tokens when it has none. */
#include <string.h>
#include "tokenizer/bigram_heap.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

typedef struct {
  const tg_tokenizer *t;
  const char *text;
  symbol_vec syms;
  bigram_heap heap;
} spm_state;

static void spm_add_pair(void *ctx, int left, int right) {
  spm_state *s = ctx;
  if (left < 0 || right < 0) return;
  const merge_symbol *l = &s->syms.v[left], *r = &s->syms.v[right];
  size_t n = l->n + r->n;
  int32_t id = strmap_get(&s->t->ids, s->text + l->off, n);
  if (id < 0) return;
  bigram_push(&s->heap, (bigram){ s->t->score[id], left, right, n, id });
}

static bool is_space_sym(const spm_state *s, int i) {
  const merge_symbol *m = &s->syms.v[i];
  return m->n == 3 && !memcmp(s->text + m->off, "\xE2\x96\x81", 3);
}

/* Emits the tokens of the merged symbols linked from first. */
static void spm_emit(const spm_state *s, int first, ids_vec *out) {
  const tg_tokenizer *t = s->t;
  for (int i = first; i >= 0; i = s->syms.v[i].next) {
    const merge_symbol *sym = &s->syms.v[i];
    int32_t id = sym->id != SYM_ID_UNKNOWN ? sym->id : strmap_get(&t->ids, s->text + sym->off, sym->n);
    if (id >= 0) {
      VEC_PUSH(*out, id);
      continue;
    }
    for (size_t j = 0; j < sym->n; j++) {   /* byte fallback */
      int32_t b = t->byte_token[(unsigned char)s->text[sym->off + j]];
      if (b >= 0) VEC_PUSH(*out, b);
    }
  }
}

void spm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out) {
  spm_state s = { t, text, { 0 }, { 0 } };
  for (size_t off = 0; off < n;) {
    size_t len = (size_t)utf8_seq_len((unsigned char)text[off]);
    if (len > n - off) len = n - off;
    int i = s.syms.n;
    VEC_PUSH(s.syms, ((merge_symbol){ i - 1, off + len == n ? -1 : i + 1, off, len, SYM_ID_UNKNOWN }));
    off += len;
  }
  /* llama.cpp merges the whole text at once; when the vocabulary allows
   * (t->spm_split_words), each word (from a "▁" that follows another
   * character) merges alone: same result, a small heap instead of a huge one */
  int first = 0, ns = s.syms.n;
  for (int i = 1; i <= ns; i++) {
    if (i < ns && !(t->spm_split_words && is_space_sym(&s, i) && !is_space_sym(&s, i - 1))) continue;
    s.syms.v[first].prev = -1;
    s.syms.v[i - 1].next = -1;
    for (int k = first + 1; k < i; k++) spm_add_pair(&s, k - 1, k);
    bigram_merge_all(&s.heap, s.syms.v, spm_add_pair, &s);
    spm_emit(&s, first, out);
    first = i;
  }
  VEC_FREE(s.syms);
  VEC_FREE(s.heap);
}
