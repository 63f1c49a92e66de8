/* spm.c: SentencePiece-style BPE (tokenizer.ggml.model "llama"): start from
 * UTF-8 characters, repeatedly merge the adjacent pair whose concatenation is
 * the vocabulary token with the highest score, then emit each symbol's token,
 * or its bytes as <0xXX> tokens when it has none. */
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
  bigram_push(&s->heap, (bigram){ s->t->score[id], left, right, n });
}

void spm_encode(const tg_tokenizer *t, const char *text, size_t n, ids_vec *out) {
  spm_state s = { t, text, { 0 }, { 0 } };
  for (size_t off = 0; off < n;) {
    size_t len = (size_t)utf8_seq_len((unsigned char)text[off]);
    if (len > n - off) len = n - off;
    int i = s.syms.n;
    VEC_PUSH(s.syms, ((merge_symbol){ i - 1, off + len == n ? -1 : i + 1, off, len }));
    off += len;
  }
  for (int i = 1; i < s.syms.n; i++) spm_add_pair(&s, i - 1, i);
  bigram_merge_all(&s.heap, s.syms.v, spm_add_pair, &s);
  for (int i = s.syms.n ? 0 : -1; i >= 0; i = s.syms.v[i].next) {
    const merge_symbol *sym = &s.syms.v[i];
    int32_t id = strmap_get(&t->ids, text + sym->off, sym->n);
    if (id >= 0) {
      VEC_PUSH(*out, id);
      continue;
    }
    for (size_t j = 0; j < sym->n; j++) {   /* byte fallback */
      int32_t b = t->byte_token[(unsigned char)text[sym->off + j]];
      if (b >= 0) VEC_PUSH(*out, b);
    }
  }
  VEC_FREE(s.syms);
  VEC_FREE(s.heap);
}
