/* tokenize.c: tg_tokenize: split the text at special tokens (longest first,
 * as llama.cpp's tokenizer_st_partition), encode the raw fragments with the
 * model's encoder, add BOS/EOS/SEP; and the vocabulary accessors. */
#include <ctype.h>
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "util/util.h"

/* A fragment of the input: a special token (id >= 0) or raw bytes. */
typedef struct { int32_t id; size_t start, len; } fragment;
typedef VEC(fragment) fragment_vec;

static void push_raw(fragment_vec *v, size_t start, size_t len) {
  if (len) VEC_PUSH(*v, ((fragment){ -1, start, len }));
}

/* Splits every raw fragment of *frags at each occurrence of special token id. */
static void split_at(const tg_tokenizer *t, const char *text, int32_t id, fragment_vec *frags) {
  const char *tok = t->text[id];
  size_t tl = t->text_len[id];
  uint16_t a = t->attr[id];
  fragment_vec next = { 0 };
  for (int f = 0; f < frags->n; f++) {
    fragment fr = frags->v[f];
    const char *m = fr.id < 0 ? memmem(text + fr.start, fr.len, tok, tl) : NULL;
    if (!m) { VEC_PUSH(next, fr); continue; }
    size_t off = fr.start, len = fr.len;
    while (m) {
      size_t at = (size_t)(m - text), left = at - off;
      if (a & TOK_ATTR_LSTRIP)
        while (left > 0 && isspace((unsigned char)text[off + left - 1])) left--;
      push_raw(&next, off, left);
      VEC_PUSH(next, ((fragment){ id, 0, 0 }));
      size_t r_off = at + tl, r_len = off + len - r_off;
      if (a & TOK_ATTR_RSTRIP)
        while (r_len > 0 && isspace((unsigned char)text[r_off])) { r_off++; r_len--; }
      off = r_off;
      len = r_len;
      m = len ? memmem(text + off, len, tok, tl) : NULL;
    }
    push_raw(&next, off, len);
  }
  VEC_FREE(*frags);
  *frags = next;
}

typedef VEC(char) char_vec;

/* s with every space as "▁" (and one in front when prefix) into buf. */
static void escape_spaces(const char *s, size_t n, bool prefix, char_vec *buf) {
  buf->n = 0;
  if (prefix) { VEC_PUSH(*buf, '\xE2'); VEC_PUSH(*buf, '\x96'); VEC_PUSH(*buf, '\x81'); }
  for (size_t i = 0; i < n; i++) {
    if (s[i] == ' ') { VEC_PUSH(*buf, '\xE2'); VEC_PUSH(*buf, '\x96'); VEC_PUSH(*buf, '\x81'); }
    else VEC_PUSH(*buf, s[i]);
  }
}

/* SPM: spaces become "▁", and a fragment at the start or after a special
 * token gets a leading space when add_space_prefix. */
static void spm_fragment(const tg_tokenizer *t, const char *s, size_t n, bool prefix, ids_vec *out) {
  char_vec buf = { 0 };
  escape_spaces(s, n, prefix, &buf);
  spm_encode(t, buf.v, (size_t)buf.n, out);
  VEC_FREE(buf);
}

/* BPE: the SentencePiece-style pre-tokenizers escape spaces first (never a
 * prefix: llama.cpp's BPE has no add_space_prefix). */
static int bpe_fragment(const tg_tokenizer *t, const char *s, size_t n, ids_vec *out) {
  int (*encode)(const tg_tokenizer *, const char *, size_t, ids_vec *) = t->dna ? dna_encode : bpe_encode;
  if (!t->escape_spaces) return encode(t, s, n, out);
  char_vec buf = { 0 };
  escape_spaces(s, n, false, &buf);
  int rc = encode(t, buf.v ? buf.v : "", (size_t)buf.n, out);
  VEC_FREE(buf);
  return rc;
}

int tg_tokenize(const tg_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                int32_t **ids) {
  if (!ids) return tg_seterr("tg_tokenize: NULL ids (where the token array goes)");
  *ids = NULL;
  if (!t) return tg_seterr("tg_tokenize: no tokenizer");
  if (!text && len) return tg_seterr("tg_tokenize: NULL text");
  if (len > (size_t)INT32_MAX / 2) return tg_seterr("tg_tokenize: text of %zu bytes is too long", len);
  fragment_vec frags = { 0 };
  push_raw(&frags, 0, len);
  for (int i = 0; i < t->n_specials; i++) {
    int32_t id = t->specials[i];
    if (!parse_special && (t->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) continue;   /* user-defined always */
    split_at(t, text, id, &frags);
  }

  ids_vec out = { 0 };
  /* (ids checked: a BERT vocab may lack its default [CLS]/[SEP] ids; RWKV
   * and PLaMo-2 never add any, as in llama.cpp) */
  if (t->kind == TOK_RWKV || t->kind == TOK_PLAMO2) add_special = false;
  bool bos = add_special && (t->kind == TOK_WPM || t->add_bos) && t->bos >= 0;
  if (bos) VEC_PUSH(out, t->bos);
  bool prev_special = true;
  for (int f = 0; f < frags.n; f++) {
    const fragment *fr = &frags.v[f];
    if (fr->id >= 0) {
      VEC_PUSH(out, fr->id);
      prev_special = true;
      continue;
    }
    const char *s = text + fr->start;
    switch (t->kind) {
    case TOK_SPM: spm_fragment(t, s, fr->len, t->add_space_prefix && prev_special, &out); break;
    case TOK_BPE:
      if (bpe_fragment(t, s, fr->len, &out) < 0) {
        VEC_FREE(out);
        VEC_FREE(frags);
        return -1;
      }
      break;
    case TOK_WPM: wpm_encode(t, s, fr->len, &out); break;
    case TOK_UGM:
      if (ugm_encode(t, s, fr->len, &out) < 0) {
        VEC_FREE(out);
        VEC_FREE(frags);
        return -1;
      }
      break;
    case TOK_RWKV: rwkv_encode(t, s, fr->len, &out); break;
    case TOK_PLAMO2: plamo2_encode(t, s, fr->len, &out); break;
    }
    prev_special = false;
  }
  if (add_special && t->kind == TOK_WPM) { if (t->sep >= 0) VEC_PUSH(out, t->sep); }
  else if (add_special && t->add_eos) VEC_PUSH(out, t->eos);
  VEC_FREE(frags);
  *ids = out.v ? out.v : tg_xmalloc(sizeof(int32_t));
  return out.n;
}

/* ---- accessors */
int tg_tokenizer_n_vocab(const tg_tokenizer *t) { return t ? t->n_vocab : tg_seterr("tg_tokenizer_n_vocab: tok is NULL"); }
int32_t tg_tokenizer_bos(const tg_tokenizer *t) { return t ? t->bos : tg_seterr("tg_tokenizer_bos: tok is NULL"); }
int32_t tg_tokenizer_eos(const tg_tokenizer *t) { return t ? t->eos : tg_seterr("tg_tokenizer_eos: tok is NULL"); }
int32_t tg_tokenizer_eot(const tg_tokenizer *t) { return t ? t->eot : tg_seterr("tg_tokenizer_eot: tok is NULL"); }
bool tg_tokenizer_add_bos(const tg_tokenizer *t) { return t && (t->kind == TOK_WPM || t->add_bos); }
bool tg_tokenizer_is_eog(const tg_tokenizer *t, int32_t id) {
  return t && id >= 0 && id < t->n_vocab && t->eog[id];
}
int32_t tg_tokenizer_find(const tg_tokenizer *t, const char *text) {
  if (!t || !text) return tg_seterr("tg_tokenizer_find: %s is NULL", !t ? "tok" : "text");
  return strmap_get(&t->ids, text, strlen(text));
}
const char *tg_tokenizer_token_text(const tg_tokenizer *t, int32_t id) {
  if (!t) TG_FAIL("tg_tokenizer_token_text: tok is NULL");
  return id >= 0 && id < t->n_vocab ? t->text[id] : NULL;
}
