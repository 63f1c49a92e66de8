/* pretok_custom.c: see pretok_custom.h. Each splitter follows llama.cpp's
 * unicode.cpp function of the same name step by step, on code points; where
 * that code differs from the regex it stands for (Kimi's letters are \p{L}
 * only, not \p{M}; the digit groups glue the text before a digit run to its
 * first group), tg does what llama.cpp does. */
#include "tokenizer/pretok_custom.h"
#include "tokenizer/unicode.h"

/* The code points of text[start, start+len) and the byte offset of each
 * (off[n] = the end); returns n. */
static size_t decode_span(const char *text, size_t start, size_t len, uint32_t **cps, size_t **offs) {
  uint32_t *cp = tg_xmalloc((len + 1) * sizeof *cp);
  size_t *off = tg_xmalloc((len + 1) * sizeof *off);
  size_t n = 0;
  for (size_t i = 0; i < len; n++) {
    size_t adv;
    off[n] = start + i;
    cp[n] = utf8_decode(text + start + i, len - i, &adv);
    i += adv;
  }
  off[n] = start + len;
  *cps = cp;
  *offs = off;
  return n;
}

/* The splitting state: code points [0, n) of one span, the end of the last
 * word emitted, and where the words go. */
typedef struct {
  const uint32_t *cp;
  const size_t *off;
  size_t n, prev_end;
  pretok_span_vec *out;
} cursor;

static void add_word(cursor *c, size_t end) {
  if (end > c->prev_end) VEC_PUSH(*c->out, ((pretok_span){ c->off[c->prev_end], c->off[end] - c->off[c->prev_end] }));
  c->prev_end = end;
}

#define OUT_OF_RANGE 0xFFFFFFFFu
static uint32_t cp_at(const cursor *c, size_t i) { return i < c->n ? c->cp[i] : OUT_OF_RANGE; }
/* llama.cpp's flags: none past the span (every code point inside has some) */
static bool in_span(const cursor *c, size_t i) { return i < c->n; }
static bool is_letter(const cursor *c, size_t i) { return in_span(c, i) && (ucp_class(c->cp[i]) & UCP_LETTER); }
static bool is_number(const cursor *c, size_t i) { return in_span(c, i) && (ucp_class(c->cp[i]) & UCP_NUMBER); }
static bool is_space(const cursor *c, size_t i) { return in_span(c, i) && ucp_is_space(c->cp[i]); }

/* llama.cpp's unicode_cpt_is_han */
static bool is_han(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0x2CEB0 && cp <= 0x2EBEF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}
static bool is_word_letter(const cursor *c, size_t i) { return is_letter(c, i) && !is_han(c->cp[i]); }

/* A character that may lead a word: [^\r\n\p{L}\p{N}] */
static bool is_lead(const cursor *c, size_t i) {
  uint32_t cp = c->cp[i];
  return !(cp == '\r' || cp == '\n' || is_letter(c, i) || is_number(c, i));
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at pos: its length, or 0 */
static size_t contraction_len(const cursor *c, size_t pos) {
  if (cp_at(c, pos) != '\'' || pos + 1 >= c->n) return 0;
  uint32_t a = ucp_tolower(c->cp[pos + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= c->n) return 0;
  uint32_t b = ucp_tolower(c->cp[pos + 2]);
  return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}

/* Kimi K2 (tokenization_kimi.py):
 * [\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 * |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:...)?
 * |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * as llama.cpp runs it: a letter run is \p{L} without Han, case ignored. */
static void split_kimi_k2(cursor *c) {
  for (size_t pos = 0; pos < c->n;) {
    uint32_t cp = c->cp[pos];
    if (is_han(cp)) {                                    /* [\p{Han}]+ */
      while (pos < c->n && is_han(c->cp[pos])) pos++;
      add_word(c, pos);
      continue;
    }
    /* letter words, with an optional leading character and contraction */
    if (is_word_letter(c, pos) || (is_lead(c, pos) && is_word_letter(c, pos + 1))) {
      if (is_lead(c, pos)) pos++;
      while (is_word_letter(c, pos)) pos++;
      pos += contraction_len(c, pos);
      add_word(c, pos);
      continue;
    }
    if (is_number(c, pos)) {                             /* \p{N}{1,3} */
      size_t ini = pos;
      while (is_number(c, pos))
        if (++pos - ini >= 3) { add_word(c, pos); ini = pos; }
      add_word(c, pos);
      continue;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t q = cp == ' ' ? pos + 1 : pos;
    if (in_span(c, q) && !is_space(c, q) && !is_letter(c, q) && !is_number(c, q)) {
      pos = q;
      while (in_span(c, pos) && !is_space(c, pos) && !is_letter(c, pos) && !is_number(c, pos)) pos++;
      while (cp_at(c, pos) == '\r' || cp_at(c, pos) == '\n') pos++;
      add_word(c, pos);
      continue;
    }
    /* whitespace: \s*[\r\n]+ | \s+(?!\S) | \s+ */
    size_t n_ws = 0, last_nl_end = 0;
    while (is_space(c, pos + n_ws)) {
      uint32_t w = c->cp[pos + n_ws];
      if (w == '\r' || w == '\n') last_nl_end = pos + n_ws + 1;
      n_ws++;
    }
    if (last_nl_end > 0) pos = last_nl_end;
    else if (n_ws > 1 && in_span(c, pos + n_ws)) pos += n_ws - 1;
    else if (n_ws > 0) pos += n_ws;
    else pos++;                                          /* nothing matched: one character */
    add_word(c, pos);
  }
}

/* Digit runs (\p{N}) in groups of three from the right, the first group
 * taking the 1-2 left over; whatever precedes a run joins its first group. */
static void split_digit_groups(cursor *c) {
  for (size_t pos = 0; pos < c->n;) {
    if (!is_number(c, pos)) { pos++; continue; }
    size_t first = pos;
    while (is_number(c, pos)) pos++;
    size_t at = first, rem = (pos - first) % 3;
    if (rem) add_word(c, at += rem);
    while (at < pos) add_word(c, at += 3);
  }
  add_word(c, c->n);
}

void pretok_custom_split(pretok_custom kind, const char *text, size_t start, size_t len, pretok_span_vec *out) {
  uint32_t *cp;
  size_t *off;
  size_t n = decode_span(text, start, len, &cp, &off);
  cursor c = { cp, off, n, 0, out };
  if (kind == PRETOK_KIMI_K2) split_kimi_k2(&c);
  else split_digit_groups(&c);
  free(cp);
  free(off);
}
