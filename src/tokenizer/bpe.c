/* bpe.c: byte-level BPE (tokenizer.ggml.model "gpt2"): pre-tokenize into
 * words, map each byte to GPT-2's printable character, then repeatedly merge
 * the adjacent pair with the lowest merge rank (a hash map of
 * "left\xFFright" -> rank). Results are cached per word within one call. */
#include <string.h>
#include "tokenizer/bigram_heap.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

typedef struct {
  const tg_tokenizer *t;
  const char *word;            /* the byte-encoded word */
  symbol_vec syms;
  bigram_heap heap;
  char *key;                   /* scratch for merge keys */
  size_t key_cap;
} bpe_state;

static void bpe_add_pair(void *ctx, int left, int right) {
  bpe_state *s = ctx;
  if (left < 0 || right < 0) return;
  const merge_symbol *l = &s->syms.v[left], *r = &s->syms.v[right];
  size_t n = l->n + r->n + 1;
  if (n > s->key_cap) {
    s->key_cap = n * 2;
    s->key = tg_xrealloc(s->key, s->key_cap);
  }
  memcpy(s->key, s->word + l->off, l->n);
  s->key[l->n] = (char)0xFF;
  memcpy(s->key + l->n + 1, s->word + r->off, r->n);
  int32_t rank = strmap_get(&s->t->merges, s->key, n);
  if (rank < 0) return;
  bigram_push(&s->heap, (bigram){ -(double)rank, left, right, l->n + r->n });
}

/* The ids of one byte-encoded word (w, n bytes; one symbol per source byte:
 * sym_len[i] bytes each). */
static void bpe_word(bpe_state *s, const char *w, size_t n, const uint8_t *sym_len, int n_syms, ids_vec *out) {
  const tg_tokenizer *t = s->t;
  if (t->ignore_merges) {
    int32_t id = strmap_get(&t->ids, w, n);
    if (id >= 0) { VEC_PUSH(*out, id); return; }
  }
  s->word = w;
  s->syms.n = 0;
  s->heap.n = 0;
  size_t off = 0;
  for (int i = 0; i < n_syms; i++) {
    VEC_PUSH(s->syms, ((merge_symbol){ i - 1, i + 1 == n_syms ? -1 : i + 1, off, sym_len[i] }));
    off += sym_len[i];
  }
  for (int i = 1; i < n_syms; i++) bpe_add_pair(s, i - 1, i);
  bigram_merge_all(&s->heap, s->syms.v, bpe_add_pair, s);
  for (int i = n_syms ? 0 : -1; i >= 0; i = s->syms.v[i].next) {
    const merge_symbol *sym = &s->syms.v[i];
    int32_t id = strmap_get(&t->ids, w + sym->off, sym->n);
    if (id >= 0) { VEC_PUSH(*out, id); continue; }
    /* no token: llama.cpp tries each byte of the encoded text alone */
    for (size_t j = 0; j < sym->n; j++) {
      int32_t b = strmap_get(&t->ids, w + sym->off + j, 1);
      if (b >= 0) VEC_PUSH(*out, b);
    }
  }
}

int bpe_encode(const tg_tokenizer *t, const char *raw, size_t raw_n, ids_vec *out) {
  size_t n;
  char *text = utf8_sanitize(raw, raw_n, &n);   /* PCRE2 needs valid UTF-8; llama.cpp makes it so too */
  pretok_span *words;
  int n_words = pretok_split(t->pre, text, n, &words);
  if (n_words < 0) {
    free(text);
    return -1;
  }

  /* per-call cache: word bytes -> [first, count) in `cached` */
  strmap cache = { 0 };
  ids_vec cached = { 0 };
  VEC(uint64_t) spans = { 0 };
  strmap_init(&cache, 1024);

  bpe_state s = { t, NULL, { 0 }, { 0 }, NULL, 0 };
  char *enc = NULL;
  uint8_t *sym_len = NULL;
  size_t enc_cap = 0;
  for (int w = 0; w < n_words; w++) {
    const char *word = text + words[w].start;
    size_t wn = words[w].len;
    int32_t hit = strmap_get(&cache, word, wn);
    if (hit >= 0) {
      uint64_t sp = spans.v[hit];
      for (uint32_t k = 0; k < (uint32_t)sp; k++) VEC_PUSH(*out, cached.v[(sp >> 32) + k]);
      continue;
    }
    if (wn * 2 > enc_cap) {
      enc_cap = wn * 2 + 16;
      enc = tg_xrealloc(enc, enc_cap);
      sym_len = tg_xrealloc(sym_len, enc_cap);
    }
    size_t en = 0;
    for (size_t i = 0; i < wn; i++) {
      int l = gpt2_byte_to_utf8((unsigned char)word[i], enc + en);
      sym_len[i] = (uint8_t)l;
      en += (size_t)l;
    }
    int first = out->n;
    bpe_word(&s, enc, en, sym_len, (int)wn, out);
    if (cache.n < 65536 && out->n - first < 1024) {   /* bounded memory for huge inputs */
      uint64_t sp = ((uint64_t)cached.n << 32) | (uint32_t)(out->n - first);
      for (int k = first; k < out->n; k++) VEC_PUSH(cached, out->v[k]);
      strmap_put(&cache, word, wn, spans.n, NULL);
      VEC_PUSH(spans, sp);
    }
  }
  free(enc);
  free(sym_len);
  free(s.key);
  VEC_FREE(s.syms);
  VEC_FREE(s.heap);
  strmap_free(&cache);
  VEC_FREE(cached);
  VEC_FREE(spans);
  free(words);
  free(text);
  return 0;
}
