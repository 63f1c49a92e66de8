/* ugm.c: SentencePiece unigram (tokenizer.ggml.model "t5"), as llama.cpp's
 * llm_tokenizer_ugm: the text is normalized (user-defined tokens kept as
 * they are, the precompiled charsmap's replacements, invalid bytes to
 * U+FFFD; spaces escaped to "▁", a space prefix, runs of spaces merged when
 * remove_extra_whitespaces), then the best-scoring segmentation is found by
 * Viterbi over the pieces' log probabilities: user-defined tokens score 0,
 * a code point no piece starts with is the unknown token at the lowest
 * normal score minus 10, and runs of unknown tokens become one. */
#include <float.h>
#include <string.h>
#include "tokenizer/byte_trie.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/ugm_charsmap.h"
#include "tokenizer/unicode.h"
#include "util/util.h"

struct ugm_model {
  byte_trie pieces;          /* normal, user-defined and unused tokens -> id */
  byte_trie user;            /* user-defined tokens (their presence only) */
  ugm_charsmap charsmap;
  float unknown_score;
  bool merge_spaces;         /* tokenizer.ggml.remove_extra_whitespaces */
};

void ugm_free(struct ugm_model *m) {
  if (!m) return;
  byte_trie_free(&m->pieces);
  byte_trie_free(&m->user);
  ugm_charsmap_free(&m->charsmap);
  free(m);
}

int ugm_build(tg_tokenizer *t, const gguf_file *f) {
  struct ugm_model *m = t->ugm = tg_xcalloc(1, sizeof *m);
  byte_trie_init(&m->pieces);
  byte_trie_init(&m->user);
  if (ugm_charsmap_load(&m->charsmap, f) < 0) return -1;
  gguf_get_bool(f, "tokenizer.ggml.remove_extra_whitespaces", &m->merge_spaces);
  float min_score = FLT_MAX;
  int n_normal = 0;
  for (int id = 0; id < t->n_vocab; id++) {
    uint16_t a = t->attr[id];
    if (a & TOK_ATTR_NORMAL) {
      n_normal++;
      if (t->score[id] < min_score) min_score = t->score[id];
    }
    if (a & (TOK_ATTR_NORMAL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNUSED))
      byte_trie_insert(&m->pieces, t->text[id], t->text_len[id], id);
    if (a & TOK_ATTR_USER_DEFINED) byte_trie_insert(&m->user, t->text[id], t->text_len[id], id);
  }
  if (!n_normal) return tg_seterr("tokenizer: t5 vocabulary of %d tokens has no normal piece", t->n_vocab);
  m->unknown_score = min_score - 10.0f;
  return 0;
}

typedef VEC(char) char_vec;

static void put(char_vec *v, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) VEC_PUSH(*v, s[i]);
}

/* llama.cpp's normalize: one fragment of raw text into out. */
static int ugm_normalize(const tg_tokenizer *t, const char *s, size_t n, char_vec *out) {
  const struct ugm_model *m = t->ugm;
  static const char space[] = "\xE2\x96\x81";
  bool prepended = false, in_word = false;
  for (size_t off = 0; off < n;) {
    const char *r = s + off;
    size_t rn, used = byte_trie_walk(&m->user, s + off, n - off);
    if (used) rn = used;   /* a prefix of a user-defined token stays as it is */
    else {
      int64_t k = ugm_charsmap_match(&m->charsmap, s + off, n - off, &r, &rn);
      if (k < 0) return -1;
      used = (size_t)k;
      if (!used) {
        size_t adv;
        uint32_t cp = utf8_decode(s + off, n - off, &adv);
        bool invalid = cp == UCP_REPLACEMENT && adv == 1 && (unsigned char)s[off] >= 0x80;
        r = invalid ? "\xEF\xBF\xBD" : s + off;   /* an invalid byte: U+FFFD */
        rn = invalid ? 3 : adv;
        used = adv;
      }
    }
    for (size_t i = 0; i < rn; i++) {
      if (r[i] != ' ') {
        if (!in_word) {
          in_word = true;
          if ((t->add_space_prefix && !prepended) || m->merge_spaces) {
            put(out, space, 3);
            prepended = true;
          }
        }
        VEC_PUSH(*out, r[i]);
      } else {
        in_word = false;
        if (!m->merge_spaces) put(out, space, 3);
      }
    }
    off += used;
  }
  return 0;
}

typedef struct {
  int32_t id;
  size_t from;
  double score;
} best_path;

int ugm_encode(const tg_tokenizer *t, const char *text, size_t len, ids_vec *out) {
  const struct ugm_model *m = t->ugm;
  char_vec norm = { 0 };
  if (ugm_normalize(t, text, len, &norm) < 0) { VEC_FREE(norm); return -1; }
  size_t n = (size_t)norm.n;
  if (!n) return 0;
  const char *s = norm.v;
  best_path *best = tg_xmalloc((n + 1) * sizeof *best);
  for (size_t i = 0; i <= n; i++) best[i] = (best_path){ t->unk, 0, -DBL_MAX };
  best[0].score = 0;
  for (size_t off = 0; off < n;) {
    size_t cp_len = (size_t)utf8_seq_len((unsigned char)s[off]);
    if (cp_len > n - off) cp_len = n - off;
    bool whole_cp = false;
    double here = best[off].score;
    int node = 0;
    for (size_t end = off; end < n && (node = byte_trie_child(&m->pieces, node, (unsigned char)s[end])) >= 0;) {
      end++;
      int32_t id = byte_trie_value(&m->pieces, node);
      if (id < 0) continue;
      if (end - off == cp_len) whole_cp = true;
      /* double sums, as SentencePiece (and the HF tokenizer) */
      double score = here + ((t->attr[id] & TOK_ATTR_USER_DEFINED) ? 0.0 : (double)t->score[id]);
      if (score > best[end].score) best[end] = (best_path){ id, off, score };
    }
    if (!whole_cp) {
      double score = here + (double)m->unknown_score;
      if (score > best[off + cp_len].score) best[off + cp_len] = (best_path){ t->unk, off, score };
    }
    off += cp_len;
  }
  int first = out->n;
  bool prev_unknown = false;
  for (size_t at = n;;) {
    const best_path *b = &best[at];
    bool unknown = b->id == t->unk;
    if (!(prev_unknown && unknown)) VEC_PUSH(*out, b->id);
    if (b->from == 0) break;
    prev_unknown = unknown;
    at = b->from;
  }
  for (int i = first, j = out->n - 1; i < j; i++, j--) {
    int32_t x = out->v[i];
    out->v[i] = out->v[j];
    out->v[j] = x;
  }
  free(best);
  VEC_FREE(norm);
  return 0;
}
