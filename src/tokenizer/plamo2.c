/* plamo2.c: PLaMo 2's tokenizer (tokenizer.ggml.model "plamo2"), a port of
 * llama.cpp's llm_tokenizer_plamo2 (itself PLaMo's Aho-Corasick Viterbi):
 * every token text and each of its suffixes (by code points) is a state;
 * the states sorted by their reversed bytes each own a block of table rows,
 * one per prefix of the state that is itself a state (longest first) and a
 * sentinel. Right to left, the state of position i is found from that of
 * i + 1 by the code point at i; its rows are the tokens starting at i, each
 * scored round(score * 1e4); the lowest total wins (ties to the longest),
 * and a code point no token covers falls back to its UTF-8 byte tokens. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/util.h"

enum { INVALID_SCORE = -20000000, UNKNOWN_SCORE = -10000000 };

typedef struct { int32_t len, id, score, state; } plamo2_row;   /* len in code points */

struct plamo2_model {
  int32_t bytes[256];        /* byte -> its <0xXX> token */
  pairmap next;              /* (code point, state of the rest) -> first row of the state */
  plamo2_row *rows;
  int n_rows;
};

typedef struct {
  char *s;
  uint32_t n;
  float score;               /* NaN: a suffix that is no token */
  int32_t row;               /* its block's first row */
} plamo2_state;

typedef VEC(uint32_t) cp_vec;
typedef VEC(plamo2_state) state_vec;

void plamo2_free(struct plamo2_model *m) {
  if (!m) return;
  pairmap_free(&m->next);
  free(m->rows);
  free(m);
}

static void decode_cps(const char *s, size_t n, cp_vec *out) {
  out->n = 0;
  for (size_t off = 0, adv; off < n; off += adv) VEC_PUSH(*out, utf8_decode(s + off, n - off, &adv));
}

static size_t encode_cps(const uint32_t *c, int k, char *buf) {
  size_t n = 0;
  for (int i = 0; i < k; i++) n += (size_t)utf8_encode(c[i], buf + n);
  return n;
}

/* Adds the state s (or, when it is there and score is a token's, sets its score). */
static void add_state(strmap *set, state_vec *v, const char *s, size_t n, float score, bool token) {
  int32_t i = strmap_get(set, s, n);
  if (i >= 0) {
    if (token) v->v[i].score = score;
    return;
  }
  char *copy = tg_xmalloc(n + 1);
  memcpy(copy, s, n);
  copy[n] = 0;
  VEC_PUSH(*v, ((plamo2_state){ copy, (uint32_t)n, score, 0 }));
  strmap_put(set, copy, n, v->n - 1, NULL);
}

static int by_reversed(const void *a, const void *b, void *ctx) {
  const plamo2_state *x = &((const plamo2_state *)ctx)[*(const int *)a], *y = &((const plamo2_state *)ctx)[*(const int *)b];
  for (uint32_t k = 0; k < x->n && k < y->n; k++) {
    unsigned char p = (unsigned char)x->s[x->n - 1 - k], q = (unsigned char)y->s[y->n - 1 - k];
    if (p != q) return p < q ? -1 : 1;
  }
  return x->n < y->n ? -1 : x->n > y->n;
}

static int32_t table_score(float score) {
  if (!isfinite(score)) return INVALID_SCORE;
  double s = round((double)score * 1e4);
  return s >= INT32_MAX ? INT32_MAX : s <= INT32_MIN ? INT32_MIN : (int32_t)s;
}

/* One state's rows (n_rows counts them when rows is NULL). */
static int state_rows(const tg_tokenizer *t, const strmap *set, const state_vec *v, const cp_vec *cps, char *buf,
                      plamo2_row *rows) {
  int n = 0;
  for (int len = cps->n; len > 0; len--) {
    size_t pn = encode_cps(cps->v, len, buf);
    int32_t j = strmap_get(set, buf, pn);
    if (j < 0) continue;
    if (rows)
      rows[n] = (plamo2_row){ len, strmap_get(&t->ids, buf, pn), table_score(v->v[j].score), v->v[j].row };
    n++;
  }
  if (rows) rows[n] = (plamo2_row){ 1, -1, UNKNOWN_SCORE, 0 };   /* state 0 is the empty string's */
  return n + 1;
}

int plamo2_build(tg_tokenizer *t) {
  struct plamo2_model *m = t->plamo2 = tg_xcalloc(1, sizeof *m);
  for (int id = 0; id < t->n_vocab; id++) {
    const char *s = t->text[id];
    if ((t->attr[id] & TOK_ATTR_BYTE) && t->text_len[id] == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' &&
        isxdigit((unsigned char)s[3]) && isxdigit((unsigned char)s[4]))
      m->bytes[strtol(s + 3, NULL, 16)] = id;
  }
  for (int b = 0; b < 256; b++)   /* (id 0 counts as missing, as in llama.cpp) */
    if (!m->bytes[b]) return tg_seterr("tokenizer: plamo2 vocabulary has no byte token <0x%02X>", b);

  strmap set = { 0 };
  state_vec v = { 0 };
  cp_vec cps = { 0 };
  char *buf = tg_xmalloc((size_t)t->max_token_len * 4 + 4);
  strmap_init(&set, (size_t)t->n_vocab * 4);
  for (int id = 0; id < t->n_vocab; id++) {
    if (t->attr[id] & TOK_ATTR_BYTE) continue;
    add_state(&set, &v, t->text[id], t->text_len[id], t->score[id], true);
    decode_cps(t->text[id], t->text_len[id], &cps);
    for (int i = 1; i < cps.n; i++)
      add_state(&set, &v, buf, encode_cps(cps.v + i, cps.n - i, buf), NAN, false);
  }
  VEC_PUSH(v, ((plamo2_state){ tg_xstrdup(""), 0, NAN, 0 }));   /* the empty state, first once sorted */
  int *order = tg_xmalloc((size_t)v.n * sizeof *order);
  for (int i = 0; i < v.n; i++) order[i] = i;
  qsort_r(order, (size_t)v.n, sizeof *order, by_reversed, v.v);

  int n_rows = 0;
  for (int k = 0; k < v.n; k++) {
    plamo2_state *st = &v.v[order[k]];
    st->row = n_rows;
    decode_cps(st->s, st->n, &cps);
    if (cps.n) {
      size_t rn = encode_cps(cps.v + 1, cps.n - 1, buf);
      int32_t rest = strmap_get(&set, buf, rn);
      /* the rest sorts first when the state is valid UTF-8; else its row may
       * not be set yet, and llama.cpp's map then reads 0 */
      pairmap_set(&m->next, (int32_t)cps.v[0], rest >= 0 ? v.v[rest].row : 0, n_rows, 0);
    }
    n_rows += state_rows(t, &set, &v, &cps, buf, NULL);
  }
  m->rows = tg_xmalloc((size_t)n_rows * sizeof *m->rows);
  for (int k = 0, at = 0; k < v.n; k++) {
    decode_cps(v.v[order[k]].s, v.v[order[k]].n, &cps);
    at += state_rows(t, &set, &v, &cps, buf, m->rows + at);
  }
  m->n_rows = n_rows;
  for (int i = 0; i < v.n; i++) free(v.v[i].s);
  VEC_FREE(v);
  VEC_FREE(cps);
  strmap_free(&set);
  free(order);
  free(buf);
  return 0;
}

void plamo2_encode(const tg_tokenizer *t, const char *text, size_t len, ids_vec *out) {
  const struct plamo2_model *m = t->plamo2;
  cp_vec cps = { 0 };
  decode_cps(text, len, &cps);
  const uint32_t *c = cps.v;
  int n = cps.n;
  if (n && c[0] == 0xFEFF) { c++; n--; }   /* a leading byte order mark is dropped */
  if (n <= 0) { VEC_FREE(cps); return; }
  int64_t *score = tg_xmalloc(((size_t)n + 1) * sizeof *score);
  int32_t *step = tg_xcalloc((size_t)n + 1, sizeof *step), *tok = tg_xcalloc((size_t)n + 1, sizeof *tok);
  for (int i = 0; i < n; i++) score[i] = (int64_t)1 << 60;
  score[n] = 0;
  int state = 0;
  for (int i = n - 1; i >= 0; i--) {
    for (int p = state; p < m->n_rows; p++) {
      const pairmap_entry *e = pairmap_get(&m->next, (int32_t)c[i], m->rows[p].state);
      state = e ? e->rank : 0;
      if (state > 0 || m->rows[p].score == UNKNOWN_SCORE) break;
    }
    for (int p = state; p < m->n_rows; p++) {
      const plamo2_row *r = &m->rows[p];
      if (r->score > INVALID_SCORE && i + r->len <= n) {
        int64_t s = score[i + r->len] - r->score;
        if (s < score[i]) { score[i] = s; step[i] = r->len; tok[i] = r->id; }
      }
      if (r->score == UNKNOWN_SCORE) break;
    }
  }
  for (int pos = 0; pos < n && step[pos] > 0; pos += step[pos]) {
    if (tok[pos] >= 0) { VEC_PUSH(*out, tok[pos]); continue; }
    uint32_t cp = c[pos];   /* llama.cpp's UTF-8 bytes of the code point */
    int k = 1 + (cp >= 0x80) + (cp >= 0x800) + (cp >= 0x10000);
    for (int i = 0; i < k; i++) {
      unsigned b = k == 1 ? (cp & 0xFF) : i == 0 ? (0xF00u >> k) & 0xFF : 0x80;
      VEC_PUSH(*out, m->bytes[(b | ((cp >> ((k - i - 1) * 6)) & 0x3F)) & 0xFF]);
    }
  }
  free(score);
  free(step);
  free(tok);
  VEC_FREE(cps);
}
