/* detokenize.c: token -> piece (cached per id at load), whole-sequence
 * detokenize with llama.cpp's space handling, and the streaming decoder. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/util.h"

typedef VEC(char) char_vec;

static void put_bytes(char_vec *v, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) VEC_PUSH(*v, s[i]);
}

/* SPM/WPM and BPE with escape_spaces: "▁" -> " " */
static void unescape_spaces(const char *s, size_t n, char_vec *out) {
  for (size_t i = 0; i < n; i++) {
    if (i + 2 < n && !memcmp(s + i, "\xE2\x96\x81", 3)) { VEC_PUSH(*out, ' '); i += 2; }
    else VEC_PUSH(*out, s[i]);
  }
}

/* byte-level BPE: each character back to the byte it stands for */
static void unmap_bytes(const char *s, size_t n, char_vec *out) {
  for (size_t i = 0; i < n;) {
    size_t adv;
    uint32_t cp = utf8_decode(s + i, n - i, &adv);
    int b = gpt2_cp_to_byte(cp);
    if (b >= 0) VEC_PUSH(*out, (char)b);
    else {   /* as llama.cpp: [UNK_BYTE_0x<hex of the character><token text>] */
      char hex[8];
      put_bytes(out, "[UNK_BYTE_0x", 12);
      for (size_t k = 0; k < adv; k++) { snprintf(hex, sizeof hex, "%02x", (unsigned char)s[i + k]); put_bytes(out, hex, 2); }
      put_bytes(out, s, n);
      VEC_PUSH(*out, ']');
    }
    i += adv;
  }
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 0;
}

void tokenizer_build_pieces(tg_tokenizer *t) {
  t->piece = tg_xcalloc((size_t)t->n_vocab, sizeof *t->piece);
  t->piece_len = tg_xcalloc((size_t)t->n_vocab, sizeof *t->piece_len);
  for (int id = 0; id < t->n_vocab; id++) {
    const char *s = t->text[id];
    size_t n = t->text_len[id];
    uint16_t a = t->attr[id];
    char_vec p = { 0 };
    if (t->kind == TOK_RWKV) {   /* every token: its bytes */
      char *b = tg_xmalloc(n + 1);
      put_bytes(&p, b, rwkv_unescape(s, n, b));
      free(b);
    } else if (t->kind == TOK_PLAMO2) {   /* <0xXX> byte tokens, else the text as it is */
      if ((a & TOK_ATTR_BYTE) && n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && isxdigit((unsigned char)s[3]) &&
          isxdigit((unsigned char)s[4]))
        VEC_PUSH(p, (char)(hexval(s[3]) * 16 + hexval(s[4])));
      else put_bytes(&p, s, n);
    } else if (a & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED)) put_bytes(&p, s, n);
    else if (a & TOK_ATTR_NORMAL) {
      if (t->kind == TOK_BPE && !t->escape_spaces) unmap_bytes(s, n, &p);
      else unescape_spaces(s, n, &p);
    } else if ((a & TOK_ATTR_BYTE) && t->kind != TOK_WPM && n >= 5) {
      VEC_PUSH(p, (char)(hexval(s[3]) * 16 + hexval(s[4])));   /* "<0xXX>" */
    }
    VEC_PUSH(p, 0);
    t->piece[id] = p.v;
    t->piece_len[id] = (uint32_t)(p.n - 1);
  }
}

/* The piece of id, "" for control/unknown tokens unless special. */
static const char *piece_of(const tg_tokenizer *t, int32_t id, bool special, size_t *n) {
  if (!special && (t->attr[id] & (TOK_ATTR_UNKNOWN | TOK_ATTR_CONTROL))) { *n = 0; return ""; }
  *n = t->piece_len[id];
  return t->piece[id];
}

int tg_token_to_piece(const tg_tokenizer *t, int32_t id, bool special, char *buf, int cap) {
  if (!t || id < 0 || id >= t->n_vocab) {
    tg_seterr("tg_token_to_piece: token id %d out of range (vocab %d)", id, t ? t->n_vocab : 0);
    return 0;
  }
  size_t n;
  const char *p = piece_of(t, id, special, &n);
  if ((size_t)cap < n || cap < 0) return -(int)n;
  if (n && !buf) { tg_seterr("tg_token_to_piece: NULL buf with cap %d", cap); return 0; }
  if (n) memcpy(buf, p, n);
  return (int)n;
}

/* llama.cpp's clean_up_tokenization_spaces: " ?" " !" " ." " ," lose the
 * space; " ' " becomes "'"; " 's" " 'm" " 're" " 've" lose the space. */
static size_t clean_spaces(char *s, size_t n) {
  size_t m = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) m--;
    s[m++] = x;
  }
  n = m; m = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') { m--; s[++i] = 0; }
    s[m++] = x;
  }
  n = m; m = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = s[i];
    if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      char x1 = s[i + 1];
      if (x1 == 's' || x1 == 'm') m--;
      else if (i + 2 < n && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e'))) m--;
    }
    s[m++] = x;
  }
  return m;
}

char *tg_detokenize(const tg_tokenizer *t, const int32_t *ids, int n, bool remove_special, bool special,
                    size_t *len) {
  if (!t) { tg_seterr("tg_detokenize: no tokenizer"); return NULL; }
  if (n < 0 || (n > 0 && !ids)) { tg_seterr("tg_detokenize: %s ids (n %d)", ids ? "bad count of" : "NULL", n); return NULL; }
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->n_vocab) {
      tg_seterr("tg_detokenize: token id %d (at %d) out of range (vocab %d)", ids[i], i, t->n_vocab);
      return NULL;
    }
  bool remove_space = t->add_space_prefix;
  bool add_bos = t->kind == TOK_WPM || t->add_bos;
  if (remove_special && add_bos && n > 0 && ids[0] == t->bos) { remove_space = false; ids++; n--; }
  if (remove_special && t->add_eos && n > 0 && ids[n - 1] == t->eos) n--;
  char_vec out = { 0 };
  for (int i = 0; i < n; i++) {
    size_t pn;
    const char *p = piece_of(t, ids[i], special, &pn);
    if (remove_space && pn && p[0] == ' ') { p++; pn--; }   /* the space SPM added in front */
    remove_space = false;
    put_bytes(&out, p, pn);
  }
  size_t m = t->clean_spaces ? clean_spaces(out.v, (size_t)out.n) : (size_t)out.n;
  VEC_PUSH(out, 0);
  out.v[m] = 0;
  if (len) *len = m;
  return out.v;
}

/* ---- streaming */
struct tg_token_stream {
  const tg_tokenizer *t;
  bool special;
  char_vec held;      /* bytes not yet released (an incomplete character) */
  char_vec ready;     /* what the last call returned */
};

tg_token_stream *tg_token_stream_new(const tg_tokenizer *t, bool special) {
  if (!t) { tg_seterr("tg_token_stream_new: no tokenizer"); return NULL; }
  tg_token_stream *s = tg_xcalloc(1, sizeof *s);
  s->t = t;
  s->special = special;
  return s;
}

const char *tg_token_stream_push(tg_token_stream *s, int32_t id, size_t *len) {
  size_t dummy;
  if (!len) len = &dummy;
  *len = 0;
  if (!s) { tg_seterr("tg_token_stream_push: no stream"); return NULL; }
  if (id < 0 || id >= s->t->n_vocab) {
    tg_seterr("tg_token_stream_push: token id %d out of range (vocab %d)", id, s->t->n_vocab);
    return NULL;
  }
  size_t pn;
  const char *p = piece_of(s->t, id, s->special, &pn);
  put_bytes(&s->held, p, pn);
  size_t k = utf8_complete_prefix(s->held.v, (size_t)s->held.n);
  s->ready.n = 0;
  put_bytes(&s->ready, s->held.v, k);
  if (k) memmove(s->held.v, s->held.v + k, (size_t)s->held.n - k);   /* held.v is NULL until a byte arrives */
  s->held.n -= (int)k;
  VEC_PUSH(s->ready, 0);
  *len = k;
  return s->ready.v;
}

const char *tg_token_stream_flush(tg_token_stream *s, size_t *len) {
  size_t dummy;
  if (!len) len = &dummy;
  *len = 0;
  if (!s) { tg_seterr("tg_token_stream_flush: no stream"); return NULL; }
  s->ready.n = 0;
  put_bytes(&s->ready, s->held.v, (size_t)s->held.n);
  *len = (size_t)s->held.n;
  s->held.n = 0;
  VEC_PUSH(s->ready, 0);
  return s->ready.v;
}

void tg_token_stream_free(tg_token_stream *s) {
  if (!s) return;
  VEC_FREE(s->held);
  VEC_FREE(s->ready);
  free(s);
}
