/* gbnf_parse.c: GBNF text -> flat rules, accepting what llama.cpp's
 * llama-grammar.cpp accepts (grammars/README.md): `name ::= alternatives`,
 * `|`, groups `( )`, literals "..." and classes [...] / [^...] with ranges
 * and \x \u \U \t \n \r \\ \" \[ \] escapes, `.` (any character), rule
 * references, `#` comments, and the repetitions * + ? {m} {m,} {m,n}, which
 * become generated rules as llama.cpp writes them (x{2,4} is x x x_1, with
 * x_1 ::= x x_2 | and x_2 ::= x |). A rule defined twice keeps its last
 * definition, as in llama.cpp. Rejected, with line and column: syntax
 * errors, undefined rules, no root rule, left recursion (which would make
 * the matcher expand forever), repetitions over GRAMMAR_MAX_REPEAT, groups
 * nested deeper than GRAMMAR_MAX_NEST, more than GRAMMAR_MAX_ELEMS elements.
 * Token references (<[id]>, <name>) are not supported. */
#include <string.h>
#include "grammar/grammar.h"
#include "tokenizer/strmap.h"
#include "util/util.h"

typedef VEC(gelem) elem_vec;
typedef struct {
  char *name;
  elem_vec body;
  bool defined;
  int line, col;       /* first reference (for "undefined rule" errors) */
} prule;

typedef struct {
  const char *src, *p, *end;
  VEC(prule) rules;
  strmap names;        /* rule name -> id (keys are the rules' names) */
  int64_t total;       /* elements so far */
  int nest;
  bool err;
} parser;

static void where(const parser *ps, const char *at, int *line, int *col) {
  *line = 1; *col = 1;
  for (const char *c = ps->src; c < at && c < ps->end; c++) {
    if (*c == '\n') { (*line)++; *col = 1; }
    else (*col)++;
  }
}

static int fail(parser *ps, const char *at, const char *what) {
  if (ps->err) return -1;
  int line, col;
  where(ps, at, &line, &col);
  ps->err = true;
  return tg_seterr("grammar: %s at line %d, column %d", what, line, col);
}

static bool at_end(const parser *ps, const char *p) { return p >= ps->end; }
static bool is_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }

/* Skips blanks and comments; newlines too when newline_ok. */
static const char *skip_space(const parser *ps, const char *p, bool newline_ok) {
  while (!at_end(ps, p)) {
    if (*p == ' ' || *p == '\t') p++;
    else if (*p == '#') { while (!at_end(ps, p) && *p != '\n' && *p != '\r') p++; }
    else if (newline_ok && (*p == '\n' || *p == '\r')) p++;
    else break;
  }
  return p;
}

/* A new rule named name; it takes the name in the lookup unless another
 * rule has it (a generated x_5 never replaces a rule the text names x_5). */
static int add_rule(parser *ps, const char *name, size_t n, const char *at) {
  prule r = { 0 };
  r.name = tg_xmalloc(n + 1);
  memcpy(r.name, name, n);
  r.name[n] = 0;
  where(ps, at, &r.line, &r.col);
  VEC_PUSH(ps->rules, r);
  strmap_put(&ps->names, r.name, n, ps->rules.n - 1, NULL);
  return ps->rules.n - 1;
}

static int find_rule(parser *ps, const char *name, size_t n, const char *at) {
  int32_t id = strmap_get(&ps->names, name, n);
  return id >= 0 ? id : add_rule(ps, name, n, at);
}

/* A fresh rule named base_N. */
static int new_rule(parser *ps, int base) {
  char name[256];
  snprintf(name, sizeof name, "%.200s_%d", ps->rules.v[base].name, ps->rules.n);
  int id = add_rule(ps, name, strlen(name), ps->p);
  ps->rules.v[id].defined = true;   /* its body comes next */
  return id;
}

static int push(parser *ps, elem_vec *v, uint32_t type, uint32_t value) {
  if (++ps->total > GRAMMAR_MAX_ELEMS) return fail(ps, ps->p, "the grammar is too large (more than 4M elements once repetitions are expanded)");
  VEC_PUSH(*v, ((gelem){ type, value }));
  return 0;
}

static void set_rule(parser *ps, int id, elem_vec *body) {
  prule *r = &ps->rules.v[id];
  VEC_FREE(r->body);
  r->body = *body;
  r->defined = true;
  *body = (elem_vec){ 0 };
}

/* One UTF-8 character at *p into *cp. */
static int decode_utf8(parser *ps, const char **p, uint32_t *cp) {
  const unsigned char *s = (const unsigned char *)*p;
  int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (!n || (const char *)s + n > ps->end) return fail(ps, *p, "invalid UTF-8");
  uint32_t v = n == 1 ? s[0] : s[0] & (0x7F >> n);
  for (int i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return fail(ps, *p, "invalid UTF-8");
    v = v << 6 | (s[i] & 0x3F);
  }
  *cp = v;
  *p += n;
  return 0;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A character of a literal or class, escapes decoded. */
static int parse_char(parser *ps, const char **p, uint32_t *cp) {
  if (at_end(ps, *p)) return fail(ps, *p, "unexpected end of input");
  if (**p != '\\') return decode_utf8(ps, p, cp);
  const char *at = *p;
  if (at_end(ps, at + 1)) return fail(ps, at, "unexpected end of input after '\\'");
  char c = at[1];
  int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
      int d = at_end(ps, at + 2 + i) ? -1 : hex_digit(at[2 + i]);
      if (d < 0) return fail(ps, at, "expecting hex digits after the escape");
      v = v << 4 | (uint32_t)d;
    }
    if (v > 0x10FFFF) return fail(ps, at, "escaped code point is beyond U+10FFFF");
    *cp = v;
    *p = at + 2 + digits;
    return 0;
  }
  switch (c) {
  case 't': *cp = '\t'; break;
  case 'r': *cp = '\r'; break;
  case 'n': *cp = '\n'; break;
  case '\\': case '"': case '[': case ']': *cp = (uint32_t)c; break;
  default: return fail(ps, at, "unknown escape");
  }
  *p = at + 2;
  return 0;
}

static int parse_alternates(parser *ps, const char **p, int rule, bool nested);

/* x{min,max} over the elements of out from `from` on (max < 0: unbounded),
 * as llama.cpp's handle_repetitions writes it. */
static int repeat(parser *ps, elem_vec *out, int from, int rule, int64_t min, int64_t max) {
  if (from == out->n) return fail(ps, ps->p, "expecting an item before the repetition");
  int len = out->n - from;
  int64_t n_opt = max < 0 ? 1 : max - min;
  if (min > GRAMMAR_MAX_REPEAT || max > GRAMMAR_MAX_REPEAT) return fail(ps, ps->p, "repetition count is over 2000");
  if ((min + n_opt) * (len + 3) + ps->total > GRAMMAR_MAX_ELEMS)
    return fail(ps, ps->p, "the grammar is too large (more than 4M elements once repetitions are expanded)");
  gelem *item = tg_xmalloc(sizeof(gelem) * (size_t)len);
  memcpy(item, out->v + from, sizeof(gelem) * (size_t)len);
  if (min == 0) { out->n = from; ps->total -= len; }
  for (int64_t i = 1; i < min; i++)
    for (int k = 0; k < len; k++) push(ps, out, item[k].type, item[k].value);
  int last = -1;
  for (int64_t i = 0; i < n_opt; i++) {
    int id = new_rule(ps, rule);
    elem_vec body = { 0 };
    for (int k = 0; k < len; k++) push(ps, &body, item[k].type, item[k].value);
    if (i > 0 || max < 0) push(ps, &body, GE_RULE, (uint32_t)(max < 0 ? id : last));
    push(ps, &body, GE_ALT, 0);
    push(ps, &body, GE_END, 0);
    set_rule(ps, id, &body);
    last = id;
  }
  if (n_opt > 0) push(ps, out, GE_RULE, (uint32_t)last);
  free(item);
  return ps->err ? -1 : 0;
}

static const char *parse_int(const parser *ps, const char *p, int64_t *v) {
  *v = 0;
  while (!at_end(ps, p) && *p >= '0' && *p <= '9') {
    if (*v < 100000000) *v = *v * 10 + (*p - '0');
    p++;
  }
  return p;
}

static int parse_sequence(parser *ps, const char **pp, int rule, elem_vec *out, bool nested) {
  const char *p = *pp;
  int last_start = out->n;
  while (!at_end(ps, p) && !ps->err) {
    ps->p = p;
    char c = *p;
    if (c == '"') {
      p++;
      last_start = out->n;
      while (!at_end(ps, p) && *p != '"') {
        uint32_t cp;
        if (parse_char(ps, &p, &cp) || push(ps, out, GE_CHAR, cp)) return -1;
      }
      if (at_end(ps, p)) return fail(ps, ps->p, "unterminated string literal");
      p = skip_space(ps, p + 1, nested);
    } else if (c == '[') {
      p++;
      last_start = out->n;
      uint32_t first = GE_CHAR;
      if (!at_end(ps, p) && *p == '^') { p++; first = GE_CHAR_NOT; }
      if (!at_end(ps, p) && *p == ']') return fail(ps, ps->p, "empty character class");
      while (!at_end(ps, p) && *p != ']') {
        uint32_t cp;
        if (parse_char(ps, &p, &cp) || push(ps, out, last_start == out->n ? first : GE_CHAR_ALT, cp)) return -1;
        if (!at_end(ps, p + 1) && p[0] == '-' && p[1] != ']') {
          p++;
          uint32_t hi;
          if (parse_char(ps, &p, &hi) || push(ps, out, GE_RNG_UPPER, hi)) return -1;
        }
      }
      if (at_end(ps, p)) return fail(ps, ps->p, "unterminated character class");
      p = skip_space(ps, p + 1, nested);
    } else if (is_word(c)) {
      const char *s = p;
      while (!at_end(ps, p) && is_word(*p)) p++;
      if ((size_t)(p - s) > 200) return fail(ps, s, "rule name longer than 200 characters");
      int id = find_rule(ps, s, (size_t)(p - s), s);
      last_start = out->n;
      if (push(ps, out, GE_RULE, (uint32_t)id)) return -1;
      p = skip_space(ps, p, nested);
    } else if (c == '(') {
      if (++ps->nest > GRAMMAR_MAX_NEST) return fail(ps, p, "groups nested more than 256 deep");
      p = skip_space(ps, p + 1, true);
      int id = new_rule(ps, rule);
      if (parse_alternates(ps, &p, id, true)) return -1;
      last_start = out->n;
      if (push(ps, out, GE_RULE, (uint32_t)id)) return -1;
      if (at_end(ps, p) || *p != ')') return fail(ps, p, "expecting ')'");
      ps->nest--;
      p = skip_space(ps, p + 1, nested);
    } else if (c == '.') {
      last_start = out->n;
      if (push(ps, out, GE_ANY, 0)) return -1;
      p = skip_space(ps, p + 1, nested);
    } else if (c == '*' || c == '+' || c == '?') {
      if (repeat(ps, out, last_start, rule, c == '+' ? 1 : 0, c == '?' ? 1 : -1)) return -1;
      p = skip_space(ps, p + 1, nested);
    } else if (c == '{') {
      p = skip_space(ps, p + 1, nested);
      int64_t min, max;
      if (at_end(ps, p) || *p < '0' || *p > '9') return fail(ps, p, "expecting an int");
      p = skip_space(ps, parse_int(ps, p, &min), nested);
      if (!at_end(ps, p) && *p == '}') max = min;
      else if (!at_end(ps, p) && *p == ',') {
        p = skip_space(ps, p + 1, nested);
        if (!at_end(ps, p) && *p >= '0' && *p <= '9') p = skip_space(ps, parse_int(ps, p, &max), nested);
        else max = -1;
        if (max >= 0 && max < min) return fail(ps, p, "repetition maximum is below its minimum");
      } else return fail(ps, p, "expecting ',' or '}'");
      if (at_end(ps, p) || *p != '}') return fail(ps, p, "expecting '}'");
      if (repeat(ps, out, last_start, rule, min, max)) return -1;
      p = skip_space(ps, p + 1, nested);
    } else if (c == '<') {
      return fail(ps, p, "token references (<...>) are not supported");
    } else break;
  }
  *pp = p;
  return ps->err ? -1 : 0;
}

static int parse_alternates(parser *ps, const char **p, int rule, bool nested) {
  elem_vec body = { 0 };
  if (parse_sequence(ps, p, rule, &body, nested)) { VEC_FREE(body); return -1; }
  while (!at_end(ps, *p) && **p == '|') {
    push(ps, &body, GE_ALT, 0);
    *p = skip_space(ps, *p + 1, true);
    if (parse_sequence(ps, p, rule, &body, nested)) { VEC_FREE(body); return -1; }
  }
  push(ps, &body, GE_END, 0);
  set_rule(ps, rule, &body);
  return ps->err ? -1 : 0;
}

static int parse_rule(parser *ps, const char **pp) {
  const char *p = *pp, *s = p;
  while (!at_end(ps, p) && is_word(*p)) p++;
  if (p == s) return fail(ps, p, "expecting a rule name");
  if ((size_t)(p - s) > 200) return fail(ps, s, "rule name longer than 200 characters");
  int id = find_rule(ps, s, (size_t)(p - s), s);
  p = skip_space(ps, p, false);
  if (ps->end - p < 3 || memcmp(p, "::=", 3) != 0) return fail(ps, p, "expecting ::=");
  p = skip_space(ps, p + 3, true);
  if (parse_alternates(ps, &p, id, false)) return -1;
  if (!at_end(ps, p) && *p == '\r') p += (!at_end(ps, p + 1) && p[1] == '\n') ? 2 : 1;
  else if (!at_end(ps, p) && *p == '\n') p++;
  else if (!at_end(ps, p)) return fail(ps, p, "expecting a newline or the end");
  *pp = skip_space(ps, p, true);
  return 0;
}

/* Left recursion: rule r reaching itself before consuming a character.
 * nullable[] first (a fixed point), then a walk over the leftmost
 * references. state: 0 unvisited, 1 on the path, 2 done. */
static bool alt_nullable(const parser *ps, const gelem *e, const bool *nullable) {
  for (; e->type != GE_END && e->type != GE_ALT; e++)
    if (e->type != GE_RULE || !nullable[e->value]) return false;
  return true;
}

static int left_recursive(const parser *ps, int r, const bool *nullable, uint8_t *state, int depth) {
  if (state[r] == 2) return -1;
  if (state[r] == 1) return r;
  if (depth > GRAMMAR_MAX_CHAIN) return -2;   /* too deep to check (and to expand): refused */
  state[r] = 1;
  const gelem *e = ps->rules.v[r].body.v;
  for (int alt_start = 1; e->type != GE_END; e++) {
    if (e->type == GE_ALT) { alt_start = 1; continue; }
    if (alt_start && e->type == GE_RULE) {
      int hit = left_recursive(ps, (int)e->value, nullable, state, depth + 1);
      if (hit >= 0 || hit == -2) return hit;
    }
    /* the next element is leftmost too while everything before is nullable */
    alt_start = alt_start && e->type == GE_RULE && nullable[e->value];
  }
  state[r] = 2;
  return -1;
}

static int check_rules(parser *ps, int *root, const char *root_name) {
  for (int i = 0; i < ps->rules.n; i++)
    if (!ps->rules.v[i].defined) {
      ps->err = true;
      return tg_seterr("grammar: undefined rule '%s' (used at line %d, column %d)", ps->rules.v[i].name,
                       ps->rules.v[i].line, ps->rules.v[i].col);
    }
  *root = -1;
  for (int i = 0; i < ps->rules.n; i++) if (!strcmp(ps->rules.v[i].name, root_name)) *root = i;
  if (*root < 0) return tg_seterr("grammar: no '%s' rule", root_name);
  int n = ps->rules.n;
  bool *nullable = tg_xcalloc((size_t)n, 1);
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < n; i++) {
      if (nullable[i]) continue;
      const gelem *e = ps->rules.v[i].body.v;
      for (const gelem *a = e;; ) {
        if (alt_nullable(ps, a, nullable)) { nullable[i] = changed = true; break; }
        while (a->type != GE_END && a->type != GE_ALT) a++;
        if (a->type == GE_END) break;
        a++;
      }
    }
  }
  uint8_t *state = tg_xcalloc((size_t)n, 1);
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    int hit = left_recursive(ps, i, nullable, state, 0);
    if (hit >= 0) rc = tg_seterr("grammar: rule '%s' is left-recursive (it can reach itself before matching a character)", ps->rules.v[hit].name);
    else if (hit == -2) rc = tg_seterr("grammar: rule '%s' starts a chain of more than 20000 rules before a character", ps->rules.v[i].name);
  }
  free(state);
  free(nullable);
  return rc;
}

int gbnf_parse(tg_grammar *g, const char *text, size_t len, const char *root_name) {
  parser ps = { .src = text, .p = text, .end = text + len };
  strmap_init(&ps.names, 64);
  const char *p = skip_space(&ps, text, true);
  int rc = 0;
  if (memchr(text, 0, len)) rc = tg_seterr("grammar: the text holds a NUL byte");
  while (!rc && !at_end(&ps, p)) rc = parse_rule(&ps, &p);
  if (!rc && ps.rules.n == 0) rc = tg_seterr("grammar: no rules");
  int root = -1;
  if (!rc) rc = check_rules(&ps, &root, root_name);
  if (!rc) {
    g->n_rules = ps.rules.n;
    g->root = root;
    g->rule_at = tg_xmalloc(sizeof(int32_t) * (size_t)ps.rules.n);
    g->rule_names = tg_xmalloc(sizeof(char *) * (size_t)ps.rules.n);
    int64_t total = 0;
    for (int i = 0; i < ps.rules.n; i++) total += ps.rules.v[i].body.n;
    g->elems = tg_xmalloc(sizeof(gelem) * (size_t)(total ? total : 1));
    for (int i = 0; i < ps.rules.n; i++) {
      g->rule_at[i] = g->n_elems;
      memcpy(g->elems + g->n_elems, ps.rules.v[i].body.v, sizeof(gelem) * (size_t)ps.rules.v[i].body.n);
      g->n_elems += ps.rules.v[i].body.n;
      g->rule_names[i] = ps.rules.v[i].name;
      ps.rules.v[i].name = NULL;
    }
  }
  for (int i = 0; i < ps.rules.n; i++) { free(ps.rules.v[i].name); VEC_FREE(ps.rules.v[i].body); }
  VEC_FREE(ps.rules);
  strmap_free(&ps.names);
  return rc;
}
