/* jinja_lex.c: template text -> tokens. Whitespace control is applied here,
 * to the text tokens: `{%-`/`-%}` strip all whitespace on that side,
 * trim_blocks drops the newline after a block or comment tag, lstrip_blocks
 * drops spaces and tabs between a line start and a tag. Like minja (and so
 * llama.cpp), lstrip_blocks applies before `{{` too, not only before `{%`. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja_ast.h"

void jinja_position(const char *src, size_t pos, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < pos && src[i]; i++) {
    if (src[i] == '\n') { l++; c = 1; }
    else c++;
  }
  *line = l;
  *col = c;
}

typedef struct lexer {
  jheap *h;
  const char *src;
  size_t n;
  jtoks *out;
} lexer;

static _Noreturn void lex_fail(lexer *L, size_t pos, const char *what) {
  int line, col;
  jinja_position(L->src, pos, &line, &col);
  jfail(L->h->err, "%s at line %d, column %d", what, line, col);
}

static jtok *emit(lexer *L, jtok_kind k, size_t pos, const char *p, size_t n) {
  jtoks *t = L->out;
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 64;
    jtok *v = jalloc(L->h, (size_t)cap * sizeof *v);
    if (t->n) memcpy(v, t->v, (size_t)t->n * sizeof *v);
    t->v = v;
    t->cap = cap;
  }
  jtok *tk = &t->v[t->n++];
  *tk = (jtok){ .k = k, .pos = pos, .p = p, .n = n };
  return tk;
}

static bool starts(const lexer *L, size_t p, const char *s) {
  size_t k = strlen(s);
  return p + k <= L->n && !memcmp(L->src + p, s, k);
}

static size_t find_tag(const lexer *L, size_t p) {
  for (; p + 1 < L->n; p++)
    if (L->src[p] == '{' && (L->src[p + 1] == '{' || L->src[p + 1] == '%' || L->src[p + 1] == '#')) return p;
  return L->n;
}

static void put_utf8(jheap *h, jbuf *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) { u[0] = (char)cp; n = 1; }
  else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 63)); n = 2; }
  else if (cp < 0x10000) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 63)); u[2] = (char)(0x80 | (cp & 63)); n = 3; }
  else { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 63)); u[2] = (char)(0x80 | (cp >> 6 & 63)); u[3] = (char)(0x80 | (cp & 63)); n = 4; }
  jbuf_put(h, b, u, n);
}

/* a quoted literal starting at p; returns the offset after the closing quote */
static size_t lex_string(lexer *L, size_t p) {
  char q = L->src[p];
  size_t start = p++;
  jbuf b = { 0 };
  for (;;) {
    if (p >= L->n) lex_fail(L, start, "unterminated string literal");
    char c = L->src[p];
    if (c == q) break;
    if (c != '\\' || p + 1 >= L->n) { jbuf_put(L->h, &b, &c, 1); p++; continue; }
    char e = L->src[p + 1];
    p += 2;
    switch (e) {
    case 'n': jbuf_puts(L->h, &b, "\n"); break;
    case 't': jbuf_puts(L->h, &b, "\t"); break;
    case 'r': jbuf_puts(L->h, &b, "\r"); break;
    case 'b': jbuf_puts(L->h, &b, "\b"); break;
    case 'f': jbuf_puts(L->h, &b, "\f"); break;
    case '0': jbuf_put(L->h, &b, "\0", 1); break;
    case '\\': case '\'': case '"': jbuf_put(L->h, &b, &e, 1); break;
    case 'x': case 'u': case 'U': {
      int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      unsigned cp = 0;
      int d = 0;
      for (; d < digits && p < L->n && isxdigit((unsigned char)L->src[p]); d++, p++) {
        char x = L->src[p];
        cp = cp * 16 + (unsigned)(isdigit((unsigned char)x) ? x - '0' : (tolower((unsigned char)x) - 'a' + 10));
      }
      if (d != digits || cp > 0x10FFFF) lex_fail(L, p, "bad escape in string literal");
      put_utf8(L->h, &b, cp);
      break;
    }
    case '\n': break;   /* backslash-newline continues the line, as in Python */
    default: jbuf_put(L->h, &b, "\\", 1); jbuf_put(L->h, &b, &e, 1);
    }
  }
  emit(L, T_STR, start, b.p ? b.p : "", b.n);
  return p + 1;
}

static size_t lex_number(lexer *L, size_t p) {
  size_t start = p;
  const char *s = L->src;
  while (p < L->n && (isdigit((unsigned char)s[p]) || s[p] == '_')) p++;
  bool is_float = false;
  if (p + 1 < L->n && s[p] == '.' && isdigit((unsigned char)s[p + 1])) {
    is_float = true;
    p++;
    while (p < L->n && isdigit((unsigned char)s[p])) p++;
  }
  if (p < L->n && (s[p] == 'e' || s[p] == 'E')) {
    size_t q = p + 1;
    if (q < L->n && (s[q] == '+' || s[q] == '-')) q++;
    if (q < L->n && isdigit((unsigned char)s[q])) {
      is_float = true;
      p = q;
      while (p < L->n && isdigit((unsigned char)s[p])) p++;
    }
  }
  char tmp[64];
  size_t k = 0;
  for (size_t i = start; i < p && k + 1 < sizeof tmp; i++)
    if (s[i] != '_') tmp[k++] = s[i];
  tmp[k] = 0;
  jtok *t = emit(L, is_float ? T_FLOAT : T_INT, start, s + start, p - start);
  if (is_float) t->f = strtod(tmp, NULL);
  else {
    errno = 0;
    t->i = strtoll(tmp, NULL, 10);
    if (errno == ERANGE || k + 1 >= sizeof tmp) lex_fail(L, start, "integer literal does not fit in 64 bits");
  }
  return p;
}

/* the inside of a {{ }} or {% %} tag, from p; returns the offset after the
 * closing marker and reports whether it carried `-` */
static size_t lex_tag_body(lexer *L, size_t p, bool block, size_t tag_pos, bool *strip_after, bool *plus) {
  const char *close = block ? "%}" : "}}";
  int depth = 0;
  *strip_after = *plus = false;
  for (;;) {
    while (p < L->n && isspace((unsigned char)L->src[p])) p++;
    if (p >= L->n) lex_fail(L, tag_pos, block ? "unterminated block tag (missing %})" : "unterminated expression (missing }})");
    if (depth == 0) {
      if (L->src[p] == '-' && starts(L, p + 1, close)) { *strip_after = true; emit(L, block ? T_BLOCK_END : T_VAR_END, p, NULL, 0); return p + 3; }
      if (L->src[p] == '+' && starts(L, p + 1, close)) { *plus = true; emit(L, block ? T_BLOCK_END : T_VAR_END, p, NULL, 0); return p + 3; }
      if (starts(L, p, close)) { emit(L, block ? T_BLOCK_END : T_VAR_END, p, NULL, 0); return p + 2; }
    }
    char c = L->src[p];
    if (c == '\'' || c == '"') { p = lex_string(L, p); continue; }
    if (isdigit((unsigned char)c)) { p = lex_number(L, p); continue; }
    if (isalpha((unsigned char)c) || c == '_') {
      size_t s = p;
      while (p < L->n && (isalnum((unsigned char)L->src[p]) || L->src[p] == '_')) p++;
      emit(L, T_NAME, s, L->src + s, p - s);
      continue;
    }
    static const char *two[] = { "==", "!=", "<=", ">=", "//", "**" };
    bool done = false;
    for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
      if (starts(L, p, two[i])) { emit(L, T_OP, p, L->src + p, 2); p += 2; done = true; break; }
    if (done) continue;
    if (!strchr("+-*/%~<>=()[]{}.,:|", c)) lex_fail(L, p, "unexpected character in tag");
    if (c == '(' || c == '[' || c == '{') depth++;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
    emit(L, T_OP, p, L->src + p, 1);
    p++;
  }
}

/* `{% raw %}` at q (tag body starting at p): emits the verbatim text up to
 * `{% endraw %}`; returns the offset after it, or 0 when this is no raw tag */
static size_t lex_raw(lexer *L, size_t q, size_t p, bool *strip_after) {
  while (p < L->n && isspace((unsigned char)L->src[p])) p++;
  if (!starts(L, p, "raw") || (p + 3 < L->n && (isalnum((unsigned char)L->src[p + 3]) || L->src[p + 3] == '_'))) return 0;
  p += 3;
  while (p < L->n && isspace((unsigned char)L->src[p])) p++;
  bool strip_in = false;
  if (p < L->n && L->src[p] == '-') { strip_in = true; p++; }
  if (!starts(L, p, "%}")) lex_fail(L, q, "malformed raw tag");
  size_t body = p + 2;
  for (size_t k = body; (k = find_tag(L, k)) < L->n; k++) {
    size_t r = k + 2;
    bool strip_before = r < L->n && L->src[r] == '-';
    if (strip_before) r++;
    while (r < L->n && isspace((unsigned char)L->src[r])) r++;
    if (L->src[k + 1] != '%' || !starts(L, r, "endraw")) continue;
    r += 6;
    while (r < L->n && isspace((unsigned char)L->src[r])) r++;
    *strip_after = r < L->n && L->src[r] == '-';
    if (*strip_after) r++;
    if (!starts(L, r, "%}")) continue;
    size_t s = body, e = k;
    if (strip_in) while (s < e && isspace((unsigned char)L->src[s])) s++;
    if (strip_before) while (e > s && isspace((unsigned char)L->src[e - 1])) e--;
    if (e > s) emit(L, T_TEXT, s, L->src + s, e - s);
    return r + 2;
  }
  lex_fail(L, q, "Unterminated raw block");
}

void jinja_lex(jheap *h, const char *src, size_t n, jinja_options opt, jtoks *out) {
  lexer L = { h, src, n, out };
  size_t p = 0;
  bool strip_next = false, trim_newline = false;
  while (p <= n) {
    size_t q = find_tag(&L, p), s = p, e = q;
    if (strip_next) {
      while (s < e && isspace((unsigned char)src[s])) s++;
    } else if (trim_newline) {
      if (s < e && src[s] == '\n') s++;
      else if (s + 1 < e && src[s] == '\r' && src[s + 1] == '\n') s += 2;
    }
    if (q < n) {
      char m = q + 2 < n ? src[q + 2] : 0;
      if (m == '-') {
        while (e > s && isspace((unsigned char)src[e - 1])) e--;
      } else if (m != '+' && opt.lstrip_blocks) {
        size_t k = e;
        while (k > s && (src[k - 1] == ' ' || src[k - 1] == '\t')) k--;
        if (k == 0 || src[k - 1] == '\n') e = k;
      }
    }
    if (e > s) emit(&L, T_TEXT, s, src + s, e - s);
    strip_next = trim_newline = false;
    if (q >= n) break;
    char kind = src[q + 1];
    p = q + 2;
    if (p < n && (src[p] == '-' || src[p] == '+')) p++;
    if (kind == '#') {
      size_t r = q + 2;
      while (r + 1 < n && !(src[r] == '#' && src[r + 1] == '}')) r++;
      if (r + 1 >= n) lex_fail(&L, q, "Missing end of comment tag");
      strip_next = r > q + 2 && src[r - 1] == '-';
      trim_newline = opt.trim_blocks;
      p = r + 2;
      continue;
    }
    bool plus = false;
    if (kind == '%') {
      size_t r = lex_raw(&L, q, p, &strip_next);
      if (r) { p = r; trim_newline = opt.trim_blocks; continue; }
    }
    emit(&L, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, q, NULL, 0);
    p = lex_tag_body(&L, p, kind == '%', q, &strip_next, &plus);
    trim_newline = kind == '%' && opt.trim_blocks && !plus;
  }
  emit(&L, T_EOF, n, NULL, 0);
}
