/* dna_kmers.c: tokenizer.ggml.model "hybriddna" (llama.cpp's
 * llm_tokenizer_hybriddna_session): text between <dna> and </dna> becomes
 * k-mer tokens of 6 bases, the rest byte-level BPE. The k-mers' texts carry
 * a U+E000 suffix in the file that keeps them apart from equal BPE tokens
 * (e.g. CCCCCC); tokenizer_unmark_kmers drops it from their texts. */
#include <string.h>
#include "tokenizer/tokenizer.h"

#define KMER_MARK "\xEE\x80\x80"
#define KMER_MARK_LEN 3
#define KMER_LEN 6

void tokenizer_unmark_kmers(tg_tokenizer *t) {
  int32_t oov = strmap_get(&t->ids, "<oov>", 5);
  if (oov < 0) return;
  for (int i = oov + 1; i < t->n_vocab; i++) {   /* the k-mers follow <oov> */
    size_t n = t->text_len[i];
    if (n <= KMER_MARK_LEN || memcmp(t->text[i] + n - KMER_MARK_LEN, KMER_MARK, KMER_MARK_LEN)) continue;
    VEC_PUSH(t->marked_texts, t->text[i]);       /* still the id map's key */
    n -= KMER_MARK_LEN;
    char *s = tg_xmalloc(n + 1);
    memcpy(s, t->text[i], n);
    s[n] = 0;
    t->text[i] = s;
    t->text_len[i] = (uint32_t)n;
  }
}

/* The k-mers of seq (uppercased; the last one padded with A), each its
 * token or <oov>. */
static void emit_kmers(const tg_tokenizer *t, const char *seq, size_t n, int32_t oov, ids_vec *out) {
  for (size_t i = 0; i < n; i += KMER_LEN) {
    char k[KMER_LEN + KMER_MARK_LEN];
    for (size_t j = 0; j < KMER_LEN; j++) {
      char c = i + j < n ? seq[i + j] : 'A';
      k[j] = c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
    }
    memcpy(k + KMER_LEN, KMER_MARK, KMER_MARK_LEN);
    int32_t id = strmap_get(&t->ids, k, sizeof k);
    VEC_PUSH(*out, id >= 0 ? id : oov);
  }
}

int dna_encode(const tg_tokenizer *t, const char *s, size_t n, ids_vec *out) {
  int32_t open = strmap_get(&t->ids, "<dna>", 5), close = strmap_get(&t->ids, "</dna>", 6),
          oov = strmap_get(&t->ids, "<oov>", 5);
  if (open < 0 || close < 0 || oov < 0) return bpe_encode(t, s, n, out);   /* plain BPE, as llama.cpp */
  for (size_t pos = 0; pos < n;) {
    const char *m = memmem(s + pos, n - pos, "<dna>", 5);
    if (!m) return bpe_encode(t, s + pos, n - pos, out);
    size_t start = (size_t)(m - s);
    if (start > pos && bpe_encode(t, s + pos, start - pos, out) < 0) return -1;
    VEC_PUSH(*out, open);
    size_t from = start + 5;
    const char *e = memmem(s + from, n - from, "</dna>", 6);
    size_t end = e ? (size_t)(e - s) : n;
    emit_kmers(t, s + from, end - from, oov, out);
    if (!e) break;
    VEC_PUSH(*out, close);
    pos = end + 6;
  }
  return 0;
}
