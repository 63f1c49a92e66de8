/* bpe.c: BPE with merges. tokenizer.ggml.model "gpt2" is byte-level:
 * pre-tokenize into words, map each byte to GPT-2's printable character,
 * then repeatedly merge the adjacent pair with the lowest merge rank (a hash
 * map of token-id pair -> rank; symbols carry their token ids). The
 * SentencePiece-style pre-tokenizers (gemma4, sarvam-moe) and whitespace
 * (raw_utf8) start from the UTF-8 characters instead and fall back to
 * <0xXX> byte tokens; model "whitespace" drops whitespace and pre-tokenizes
 * each run between on its own.
 * Results are cached per word within one call. */
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

/* Rank of a merge with a non-token side, from the string map. */
static int32_t string_rank(bpe_state *s, const char *l, size_t ln, const char *r, size_t rn) {
  size_t n = ln + rn + 1;
  if (n > s->key_cap) {
    s->key_cap = n * 2;
    s->key = tg_xrealloc(s->key, s->key_cap);
  }
  memcpy(s->key, l, ln);
  s->key[ln] = (char)0xFF;
  memcpy(s->key + ln + 1, r, rn);
  return strmap_get(&s->t->merges, s->key, n);
}

static void bpe_add_pair(void *ctx, int left, int right) {
  bpe_state *s = ctx;
  if (left < 0 || right < 0) return;
  const merge_symbol *l = &s->syms.v[left], *r = &s->syms.v[right];
  int32_t rank, id;
  if (l->id >= 0 && r->id >= 0) {   /* two tokens: the id-pair map has every such merge */
    const pairmap_entry *e = pairmap_get(&s->t->pair_ranks, l->id, r->id);
    if (!e) return;
    rank = e->rank;
    id = e->id;
  } else {
    rank = string_rank(s, s->word + l->off, l->n, s->word + r->off, r->n);
    if (rank < 0) return;
    id = strmap_get(&s->t->ids, s->word + l->off, l->n + r->n);   /* the symbols are adjacent */
  }
  bigram_push(&s->heap, (bigram){ -(double)rank, left, right, l->n + r->n, id });
}

int32_t bpe_pair_rank(const tg_tokenizer *t, const char *left, size_t ln, const char *right, size_t rn) {
  int32_t a = strmap_get(&t->ids, left, ln), b = strmap_get(&t->ids, right, rn);
  if (a >= 0 && b >= 0) {
    const pairmap_entry *e = pairmap_get(&t->pair_ranks, a, b);
    return e ? e->rank : -1;
  }
  bpe_state s = { t, NULL, { 0 }, { 0 }, NULL, 0 };
  int32_t r = string_rank(&s, left, ln, right, rn);
  free(s.key);
  return r;
}

static bool only_newlines(const char *w, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (w[i] != '\n') return false;
  return true;
}

/* The ids of one encoded word (w, n bytes; n_syms initial symbols of
 * sym_len[i] bytes and token sym_id[i] each). */
static void bpe_word(bpe_state *s, const char *w, size_t n, const int32_t *sym_id, const uint8_t *sym_len, int n_syms,
                     ids_vec *out) {
  const tg_tokenizer *t = s->t;
  if (t->ignore_merges || (t->newlines_whole && only_newlines(w, n))) {
    int32_t id = strmap_get(&t->ids, w, n);
    if (id >= 0) { VEC_PUSH(*out, id); return; }
  }
  s->word = w;
  s->syms.n = 0;
  s->heap.n = 0;
  size_t off = 0;
  for (int i = 0; i < n_syms; i++) {
    VEC_PUSH(s->syms, ((merge_symbol){ i - 1, i + 1 == n_syms ? -1 : i + 1, off, sym_len[i], sym_id[i] }));
    off += sym_len[i];
  }
  for (int i = 1; i < n_syms; i++) bpe_add_pair(s, i - 1, i);
  bigram_merge_all(&s->heap, s->syms.v, bpe_add_pair, s);
  for (int i = n_syms ? 0 : -1; i >= 0; i = s->syms.v[i].next) {
    const merge_symbol *sym = &s->syms.v[i];
    if (sym->id >= 0) { VEC_PUSH(*out, sym->id); continue; }
    /* no token: llama.cpp tries each byte of the encoded text alone, as
     * itself (byte-level) or as its <0xXX> token (raw UTF-8) */
    for (size_t j = 0; j < sym->n; j++) {
      const char *c = w + sym->off + j;
      int32_t id = t->raw_utf8 ? t->byte_token[(unsigned char)*c] : strmap_get(&t->ids, c, 1);
      if (id >= 0) VEC_PUSH(*out, id);
    }
  }
}

/* Model "whitespace": text (sanitized as utf8_sanitize does) without its
 * whitespace, lowercased when the normalizer says so, with a 0xFF byte
 * (never in UTF-8) ending each run of the rest; *n gets the length. */
#define RUN_END '\xFF'
static char *between_spaces(const tg_tokenizer *t, const char *s, size_t len, size_t *n) {
  char *out = tg_xmalloc(len * 3 + 1), *o = out;   /* worst case: every byte -> U+FFFD */
  bool in_run = false;
  for (size_t i = 0; i < len;) {
    size_t adv;
    uint32_t cp = utf8_decode(s + i, len - i, &adv);
    i += adv;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = UCP_REPLACEMENT;
    if (ucp_is_space(cp)) {
      if (in_run) *o++ = RUN_END;
      in_run = false;
      continue;
    }
    o += utf8_encode(t->lowercase ? ucp_tolower(cp) : cp, o);
    in_run = true;
  }
  if (in_run) *o++ = RUN_END;
  *n = (size_t)(o - out);
  return out;
}

/* The words of text[0, n): the pre-tokenizer's split; for drop_spaces, its
 * split of each run. -1 with tg_error when PCRE2 fails. */
static int split_words(const tg_tokenizer *t, const char *text, size_t n, pretok_span **words) {
  if (!t->drop_spaces) return pretok_split(t->pre, text, n, words);
  VEC(pretok_span) all = { 0 };
  for (size_t at = 0; at < n;) {
    size_t len = (size_t)((const char *)memchr(text + at, RUN_END, n - at) - (text + at));
    pretok_span *w;
    int k = pretok_split(t->pre, text + at, len, &w);
    if (k < 0) {
      VEC_FREE(all);
      return -1;
    }
    for (int i = 0; i < k; i++) VEC_PUSH(all, ((pretok_span){ at + w[i].start, w[i].len }));
    free(w);
    at += len + 1;
  }
  *words = all.v ? all.v : tg_xmalloc(sizeof(pretok_span));
  return all.n;
}

int bpe_encode(const tg_tokenizer *t, const char *raw, size_t raw_n, ids_vec *out) {
  size_t n;
  /* PCRE2 needs valid UTF-8; llama.cpp makes it so too */
  char *text = t->drop_spaces ? between_spaces(t, raw, raw_n, &n) : utf8_sanitize(raw, raw_n, &n);
  pretok_span *words;
  int n_words = split_words(t, text, n, &words);
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
  int32_t *sym_id = NULL;
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
      sym_id = tg_xrealloc(sym_id, enc_cap * sizeof *sym_id);
    }
    int first = out->n, n_syms = 0;
    if (t->raw_utf8) {   /* one symbol per character (valid UTF-8 here) */
      for (size_t i = 0; i < wn; n_syms++) {
        size_t l = (size_t)utf8_seq_len((unsigned char)word[i]);
        if (l > wn - i) l = wn - i;
        sym_len[n_syms] = (uint8_t)l;
        sym_id[n_syms] = strmap_get(&t->ids, word + i, l);
        i += l;
      }
      bpe_word(&s, word, wn, sym_id, sym_len, n_syms, out);
    } else {             /* one per byte: its GPT-2 character, whose token is the byte's */
      size_t en = 0;
      for (size_t i = 0; i < wn; i++, n_syms++) {
        int l = gpt2_byte_to_utf8((unsigned char)word[i], enc + en);
        sym_len[i] = (uint8_t)l;
        sym_id[i] = t->byte_token[(unsigned char)word[i]];
        en += (size_t)l;
      }
      bpe_word(&s, enc, en, sym_id, sym_len, n_syms, out);
    }
    if (cache.n < 65536 && out->n - first < 1024) {   /* bounded memory for huge inputs */
      uint64_t sp = ((uint64_t)cached.n << 32) | (uint32_t)(out->n - first);
      for (int k = first; k < out->n; k++) VEC_PUSH(cached, out->v[k]);
      strmap_put(&cache, word, wn, spans.n, NULL);
      VEC_PUSH(spans, sp);
    }
  }
  free(enc);
  free(sym_len);
  free(sym_id);
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
