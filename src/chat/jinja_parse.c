/* jinja_parse.c: tokens -> syntax tree, by recursive descent. Operator
 * precedence follows jinja2's parser: ternary < or < and < not < comparisons
 * < + - < ~ < * / // % < ** < unary minus < postfix (. [] ()) and filters /
 * tests, so `a + b | length` filters b only and `not x is defined` negates
 * the test. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja_ast.h"
#include "util/util.h"

enum { MAX_NESTING = 200 };

typedef struct parser {
  jheap *h;
  const char *src;
  jtok *t;
  int i;
  int loop_depth;   /* for break/continue outside a loop */
  int nesting;
} parser;

static _Noreturn void pfail_at(parser *P, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void pfail_at(parser *P, size_t pos, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  jinja_position(P->src, pos, &line, &col);
  jfail(P->h->err, "template syntax error: %s at line %d, column %d", msg, line, col);
}

static jtok *cur(parser *P) { return &P->t[P->i]; }
static bool is_op(const jtok *t, const char *op) { return t->k == T_OP && t->n == strlen(op) && !memcmp(t->p, op, t->n); }
static bool is_name(const jtok *t, const char *s) { return t->k == T_NAME && t->n == strlen(s) && !memcmp(t->p, s, t->n); }
static bool accept_op(parser *P, const char *op) { if (is_op(cur(P), op)) { P->i++; return true; } return false; }
static bool accept_name(parser *P, const char *s) { if (is_name(cur(P), s)) { P->i++; return true; } return false; }

static const char *tok_desc(const jtok *t) {
  static _Thread_local char buf[80];   /* only used to build one error message */
  switch (t->k) {
  case T_EOF: return "end of template";
  case T_VAR_END: return "'}}'";
  case T_BLOCK_END: return "'%}'";
  case T_STR: return "a string";
  default:
    if (t->p && t->n) { snprintf(buf, sizeof buf, "'%.*s'", (int)(t->n < 40 ? t->n : 40), t->p); return buf; }
    return "a token";
  }
}

static void expect_op(parser *P, const char *op) {
  if (!accept_op(P, op)) pfail_at(P, cur(P)->pos, "expected '%s', found %s", op, tok_desc(cur(P)));
}

static const char *expect_ident(parser *P) {
  jtok *t = cur(P);
  if (t->k != T_NAME) pfail_at(P, t->pos, "expected a name, found %s", tok_desc(t));
  P->i++;
  char *s = jalloc(P->h, t->n + 1);
  memcpy(s, t->p, t->n);
  return s;
}

static void expect_block_end(parser *P) {
  if (cur(P)->k != T_BLOCK_END) pfail_at(P, cur(P)->pos, "expected '%%}', found %s", tok_desc(cur(P)));
  P->i++;
}

static jnode *mk(parser *P, jnode_kind k, size_t pos) {
  jnode *n = jalloc(P->h, sizeof *n);
  n->k = k;
  n->pos = pos;
  return n;
}

static void push(parser *P, jnodes *a, jnode *x) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 4;
    jnode **v = jalloc(P->h, (size_t)cap * sizeof *v);
    if (a->n) memcpy(v, a->v, (size_t)a->n * sizeof *v);
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = x;
}

/* keyword names parallel to args: grows kw to args.cap */
static void push_arg(parser *P, jnode *call, jnode *x, const char *kw) {
  int old_cap = call->args.cap;
  push(P, &call->args, x);
  if (call->args.cap != old_cap) {
    const char **k = jalloc(P->h, (size_t)call->args.cap * sizeof *k);
    if (call->kw) memcpy(k, call->kw, (size_t)old_cap * sizeof *k);
    call->kw = k;
  }
  call->kw[call->args.n - 1] = kw;
}

static jnode *parse_expr(parser *P);
static jnode *parse_or(parser *P);
static jnode *parse_unary(parser *P, bool with_filter);

static jnode *binop(parser *P, const char *op, jnode *a, jnode *b, size_t pos) {
  jnode *n = mk(P, N_BIN, pos);
  n->name = op;
  n->a = a;
  n->b = b;
  return n;
}

/* `(` already consumed: positional, name=value, *splat and **splat arguments */
static void parse_call_args(parser *P, jnode *call) {
  while (!accept_op(P, ")")) {
    if (accept_op(P, "**")) push_arg(P, call, parse_expr(P), "**");
    else if (accept_op(P, "*")) push_arg(P, call, parse_expr(P), "*");
    else if (cur(P)->k == T_NAME && is_op(&P->t[P->i + 1], "=")) {
      const char *kw = expect_ident(P);
      P->i++;
      push_arg(P, call, parse_expr(P), kw);
    } else {
      push_arg(P, call, parse_expr(P), NULL);
    }
    if (!accept_op(P, ",")) { expect_op(P, ")"); break; }
  }
}

static jnode *parse_primary(parser *P) {
  jtok *t = cur(P);
  size_t pos = t->pos;
  switch (t->k) {
  case T_NAME: {
    P->i++;
    jnode *n = mk(P, N_LIT, pos);
    if (is_name(t, "true") || is_name(t, "True")) n->lit = jv_bool(true);
    else if (is_name(t, "false") || is_name(t, "False")) n->lit = jv_bool(false);
    else if (is_name(t, "none") || is_name(t, "None")) n->lit = jv_none();
    else {
      n->k = N_NAME;
      n->name = jv_strn(P->h, t->p, t->n).s.p;
    }
    return n;
  }
  case T_STR: {
    jbuf b = { 0 };
    while (cur(P)->k == T_STR) {   /* adjacent literals concatenate */
      jbuf_put(P->h, &b, cur(P)->p, cur(P)->n);
      P->i++;
    }
    jnode *n = mk(P, N_LIT, pos);
    n->lit = jv_from_buf(&b);
    return n;
  }
  case T_INT: P->i++; { jnode *n = mk(P, N_LIT, pos); n->lit = jv_int(t->i); return n; }
  case T_FLOAT: P->i++; { jnode *n = mk(P, N_LIT, pos); n->lit = jv_float(t->f); return n; }
  case T_OP:
    if (accept_op(P, "(")) {
      if (accept_op(P, ")")) return mk(P, N_TUPLE, pos);
      jnode *e = parse_expr(P);
      if (!is_op(cur(P), ",")) { expect_op(P, ")"); return e; }
      jnode *tup = mk(P, N_TUPLE, pos);
      push(P, &tup->args, e);
      while (accept_op(P, ",") && !is_op(cur(P), ")")) push(P, &tup->args, parse_expr(P));
      expect_op(P, ")");
      return tup;
    }
    if (accept_op(P, "[")) {
      jnode *l = mk(P, N_LIST, pos);
      while (!accept_op(P, "]")) {
        push(P, &l->args, parse_expr(P));
        if (!accept_op(P, ",")) { expect_op(P, "]"); break; }
      }
      return l;
    }
    if (accept_op(P, "{")) {
      jnode *d = mk(P, N_DICT, pos);
      while (!accept_op(P, "}")) {
        push(P, &d->args, parse_expr(P));
        expect_op(P, ":");
        push(P, &d->args, parse_expr(P));
        if (!accept_op(P, ",")) { expect_op(P, "}"); break; }
      }
      return d;
    }
    break;
  default: break;
  }
  pfail_at(P, pos, "unexpected %s", tok_desc(t));
}

static jnode *parse_postfix(parser *P, jnode *n) {
  for (;;) {
    size_t pos = cur(P)->pos;
    if (accept_op(P, ".")) {
      jnode *a = mk(P, N_ATTR, pos);
      a->a = n;
      if (cur(P)->k == T_INT) {   /* x.0 is x[0] */
        a->k = N_INDEX;
        a->b = mk(P, N_LIT, pos);
        a->b->lit = jv_int(cur(P)->i);
        P->i++;
      } else {
        a->name = expect_ident(P);
      }
      n = a;
    } else if (accept_op(P, "[")) {
      jnode *parts[3] = { 0 };
      bool slice = false;
      for (int k = 0; k < 3; k++) {
        if (!is_op(cur(P), ":") && !is_op(cur(P), "]")) parts[k] = parse_expr(P);
        if (k < 2 && accept_op(P, ":")) slice = true;
        else break;
      }
      expect_op(P, "]");
      jnode *s = mk(P, slice ? N_SLICE : N_INDEX, pos);
      s->a = n;
      if (!slice && !parts[0]) pfail_at(P, pos, "empty subscript");
      s->b = slice ? NULL : parts[0];
      if (slice) { push(P, &s->args, parts[0]); push(P, &s->args, parts[1]); push(P, &s->args, parts[2]); }
      n = s;
    } else if (accept_op(P, "(")) {
      jnode *c = mk(P, N_CALL, pos);
      c->a = n;
      parse_call_args(P, c);
      n = c;
    } else {
      return n;
    }
  }
}

static bool starts_test_arg(const jtok *t) {
  if (t->k == T_NAME) return !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and") && !is_name(t, "if");
  return t->k == T_STR || t->k == T_INT || t->k == T_FLOAT || is_op(t, "[") || is_op(t, "{");
}

static jnode *parse_filter_expr(parser *P, jnode *n) {
  for (;;) {
    size_t pos = cur(P)->pos;
    if (accept_op(P, "|")) {
      jnode *f = mk(P, N_FILTER, pos);
      f->a = n;
      f->name = expect_ident(P);
      if (accept_op(P, "(")) parse_call_args(P, f);
      n = f;
    } else if (accept_name(P, "is")) {
      jnode *t = mk(P, N_TEST, pos);
      t->a = n;
      t->negate = accept_name(P, "not");
      if (is_op(cur(P), "==") || is_op(cur(P), "!=") || is_op(cur(P), "<") || is_op(cur(P), ">")) {
        t->name = jv_strn(P->h, cur(P)->p, cur(P)->n).s.p;
        P->i++;
      } else {
        t->name = expect_ident(P);
      }
      if (accept_op(P, "(")) parse_call_args(P, t);
      else if (starts_test_arg(cur(P))) push_arg(P, t, parse_postfix(P, parse_primary(P)), NULL);
      n = t;
    } else {
      return n;
    }
  }
}

static jnode *parse_unary(parser *P, bool with_filter) {
  size_t pos = cur(P)->pos;
  if (++P->nesting > MAX_NESTING) pfail_at(P, pos, "expression nested too deeply");
  jnode *n;
  if (accept_op(P, "-")) {
    n = mk(P, N_NEG, pos);
    n->a = parse_unary(P, false);
  } else if (accept_op(P, "+")) {
    n = parse_unary(P, false);
  } else {
    n = parse_primary(P);
  }
  n = parse_postfix(P, n);
  if (with_filter) n = parse_filter_expr(P, n);
  P->nesting--;
  return n;
}

static jnode *parse_pow(parser *P) {
  jnode *n = parse_unary(P, true);
  while (is_op(cur(P), "**")) {
    size_t pos = cur(P)->pos;
    P->i++;
    n = binop(P, "**", n, parse_unary(P, true), pos);
  }
  return n;
}

static jnode *parse_math2(parser *P) {
  jnode *n = parse_pow(P);
  for (;;) {
    jtok *t = cur(P);
    const char *op = is_op(t, "*") ? "*" : is_op(t, "/") ? "/" : is_op(t, "//") ? "//" : is_op(t, "%") ? "%" : NULL;
    if (!op) return n;
    P->i++;
    n = binop(P, op, n, parse_pow(P), t->pos);
  }
}

static jnode *parse_concat(parser *P) {
  jnode *n = parse_math2(P);
  while (is_op(cur(P), "~")) {
    size_t pos = cur(P)->pos;
    P->i++;
    n = binop(P, "~", n, parse_math2(P), pos);
  }
  return n;
}

static jnode *parse_math1(parser *P) {
  jnode *n = parse_concat(P);
  for (;;) {
    jtok *t = cur(P);
    const char *op = is_op(t, "+") ? "+" : is_op(t, "-") ? "-" : NULL;
    if (!op) return n;
    P->i++;
    n = binop(P, op, n, parse_concat(P), t->pos);
  }
}

static jnode *parse_compare(parser *P) {
  jnode *n = parse_math1(P);
  for (;;) {
    jtok *t = cur(P);
    static const char *ops[] = { "==", "!=", "<=", ">=", "<", ">" };
    const char *op = NULL;
    for (size_t k = 0; k < 6; k++)
      if (is_op(t, ops[k])) op = ops[k];
    if (op) P->i++;
    else if (accept_name(P, "in")) op = "in";
    else if (is_name(t, "not") && is_name(&P->t[P->i + 1], "in")) { P->i += 2; op = "not in"; }
    else return n;
    n = binop(P, op, n, parse_math1(P), t->pos);
  }
}

static jnode *parse_not(parser *P) {
  size_t pos = cur(P)->pos;
  if (accept_name(P, "not")) {
    if (++P->nesting > MAX_NESTING) pfail_at(P, pos, "expression nested too deeply");
    jnode *n = mk(P, N_NOT, pos);
    n->a = parse_not(P);
    P->nesting--;
    return n;
  }
  return parse_compare(P);
}

static jnode *parse_and(parser *P) {
  jnode *n = parse_not(P);
  while (is_name(cur(P), "and")) {
    jnode *a = mk(P, N_AND, cur(P)->pos);
    P->i++;
    a->a = n;
    a->b = parse_not(P);
    n = a;
  }
  return n;
}

static jnode *parse_or(parser *P) {
  jnode *n = parse_and(P);
  while (is_name(cur(P), "or")) {
    jnode *o = mk(P, N_OR, cur(P)->pos);
    P->i++;
    o->a = n;
    o->b = parse_and(P);
    n = o;
  }
  return n;
}

static jnode *parse_expr(parser *P) {
  size_t pos = cur(P)->pos;
  if (++P->nesting > MAX_NESTING) pfail_at(P, pos, "expression nested too deeply");
  jnode *n = parse_or(P);
  if (is_name(cur(P), "if")) {
    P->i++;
    jnode *c = mk(P, N_COND, pos);
    c->a = n;
    c->b = parse_or(P);
    if (accept_name(P, "else")) c->c = parse_expr(P);
    n = c;
  }
  P->nesting--;
  return n;
}

/* `a = ...` right-hand sides and `{{ }}` may be bare tuples: `1, 2` */
static jnode *parse_expr_or_tuple(parser *P) {
  size_t pos = cur(P)->pos;
  jnode *e = parse_expr(P);
  if (!is_op(cur(P), ",")) return e;
  jnode *tup = mk(P, N_TUPLE, pos);
  push(P, &tup->args, e);
  while (accept_op(P, ",")) {
    if (cur(P)->k == T_BLOCK_END || cur(P)->k == T_VAR_END) break;
    push(P, &tup->args, parse_expr(P));
  }
  return tup;
}

/* ---- statements ---- */

static const char *const END_WORDS[] = {
  "endif", "elif", "else", "endfor", "endset", "endmacro", "endcall", "endfilter", "endgeneration", "endraw", NULL
};

typedef struct opener { const char *name; size_t pos; } opener;

/* Parses statements until a `{% word %}` with word in stop (NULL-terminated);
 * returns that word with the parser just after it. `open` names the block
 * being parsed, for "Unterminated ..." errors; NULL at the top level. */
static const char *parse_body(parser *P, jnodes *out, const char *const *stop, const opener *open);

static void parse_names(parser *P, jnode *n) {
  int cap = 4;
  n->targets = jalloc(P->h, (size_t)cap * sizeof *n->targets);
  bool paren = accept_op(P, "(");
  do {
    if (n->ntargets == cap) {
      const char **t = jalloc(P->h, (size_t)cap * 2 * sizeof *t);
      memcpy(t, n->targets, (size_t)cap * sizeof *t);
      n->targets = t;
      cap *= 2;
    }
    n->targets[n->ntargets++] = expect_ident(P);
  } while (accept_op(P, ","));
  if (paren) expect_op(P, ")");
}

static jnode *parse_if(parser *P, size_t pos) {
  jnode *n = mk(P, S_IF, pos);
  n->a = parse_expr(P);
  expect_block_end(P);
  static const char *const stop[] = { "elif", "else", "endif", NULL };
  opener o = { "if", pos };
  const char *w = parse_body(P, &n->body, stop, &o);
  if (!strcmp(w, "elif")) {
    push(P, &n->orelse, parse_if(P, P->t[P->i - 1].pos));
    return n;
  }
  if (!strcmp(w, "else")) {
    expect_block_end(P);
    static const char *const stop_end[] = { "endif", NULL };
    parse_body(P, &n->orelse, stop_end, &o);
  }
  expect_block_end(P);
  return n;
}

static jnode *parse_for(parser *P, size_t pos) {
  jnode *n = mk(P, S_FOR, pos);
  parse_names(P, n);
  if (!accept_name(P, "in")) pfail_at(P, cur(P)->pos, "expected 'in' in for loop, found %s", tok_desc(cur(P)));
  n->a = parse_or(P);
  if (accept_name(P, "if")) n->b = parse_expr(P);
  accept_name(P, "recursive");
  expect_block_end(P);
  opener o = { "for", pos };
  static const char *const stop[] = { "else", "endfor", NULL };
  P->loop_depth++;
  const char *w = parse_body(P, &n->body, stop, &o);
  P->loop_depth--;
  if (!strcmp(w, "else")) {
    expect_block_end(P);
    static const char *const stop_end[] = { "endfor", NULL };
    parse_body(P, &n->orelse, stop_end, &o);
  }
  expect_block_end(P);
  return n;
}

static jnode *parse_set(parser *P, size_t pos) {
  jnode *n = mk(P, S_SET, pos);
  const char *first = expect_ident(P);
  if (is_op(cur(P), ".")) {            /* ns.attr = value */
    P->i++;
    n->a = mk(P, N_NAME, pos);
    n->a->name = first;
    n->name = expect_ident(P);
  } else {
    n->targets = jalloc(P->h, 16 * sizeof *n->targets);
    n->targets[n->ntargets++] = first;
    while (accept_op(P, ",")) {
      if (n->ntargets == 16) pfail_at(P, cur(P)->pos, "too many names in set");
      n->targets[n->ntargets++] = expect_ident(P);
    }
  }
  if (accept_op(P, "=")) {
    n->b = parse_expr_or_tuple(P);
    expect_block_end(P);
    return n;
  }
  if (n->a || n->ntargets != 1) pfail_at(P, cur(P)->pos, "expected '=' in set");
  n->k = S_SET_BLOCK;
  expect_block_end(P);
  static const char *const stop[] = { "endset", NULL };
  opener o = { "set", pos };
  parse_body(P, &n->body, stop, &o);
  expect_block_end(P);
  return n;
}

/* `(a, b=default, ...)`: names in kw, defaults (or NULL) in args */
static void parse_params(parser *P, jnode *n) {
  expect_op(P, "(");
  while (!accept_op(P, ")")) {
    const char *name = expect_ident(P);
    push_arg(P, n, accept_op(P, "=") ? parse_expr(P) : NULL, name);
    if (!accept_op(P, ",")) { expect_op(P, ")"); break; }
  }
}

static jnode *parse_macro(parser *P, size_t pos) {
  jnode *n = mk(P, S_MACRO, pos);
  n->name = expect_ident(P);
  parse_params(P, n);
  expect_block_end(P);
  int saved = P->loop_depth;
  P->loop_depth = 0;
  static const char *const stop[] = { "endmacro", NULL };
  opener o = { "macro", pos };
  parse_body(P, &n->body, stop, &o);
  P->loop_depth = saved;
  accept_name(P, n->name);   /* {% endmacro name %} */
  expect_block_end(P);
  return n;
}

static jnode *parse_call_block(parser *P, size_t pos) {
  jnode *n = mk(P, S_CALL_BLOCK, pos);
  if (is_op(cur(P), "(")) parse_params(P, n);   /* {% call(x) f() %}: the caller's parameters */
  n->a = parse_expr(P);
  expect_block_end(P);
  static const char *const stop[] = { "endcall", NULL };
  opener o = { "call", pos };
  int saved = P->loop_depth;
  P->loop_depth = 0;
  parse_body(P, &n->body, stop, &o);
  P->loop_depth = saved;
  expect_block_end(P);
  if (n->a->k != N_CALL) pfail_at(P, pos, "Invalid call block syntax - expected function call");
  return n;
}

static jnode *parse_filter_block(parser *P, size_t pos) {
  jnode *n = mk(P, S_FILTER_BLOCK, pos);
  jnode *chain = mk(P, N_BLOCK_INPUT, pos);
  do {
    jnode *f = mk(P, N_FILTER, cur(P)->pos);
    f->a = chain;
    f->name = expect_ident(P);
    if (accept_op(P, "(")) parse_call_args(P, f);
    chain = f;
  } while (accept_op(P, "|"));
  n->a = chain;
  expect_block_end(P);
  static const char *const stop[] = { "endfilter", NULL };
  opener o = { "filter", pos };
  parse_body(P, &n->body, stop, &o);
  expect_block_end(P);
  return n;
}

static bool in_list(const jtok *t, const char *const *words) {
  for (; words && *words; words++)
    if (is_name(t, *words)) return true;
  return false;
}

static const char *parse_body(parser *P, jnodes *out, const char *const *stop, const opener *open) {
  for (;;) {
    jtok *t = cur(P);
    switch (t->k) {
    case T_EOF:
      if (open) pfail_at(P, open->pos, "Unterminated %s", open->name);
      return NULL;
    case T_TEXT: {
      jnode *n = mk(P, S_TEXT, t->pos);
      n->lit = jv_strref(t->p, t->n);
      push(P, out, n);
      P->i++;
      break;
    }
    case T_VAR_BEGIN: {
      P->i++;
      jnode *n = mk(P, S_OUT, t->pos);
      n->a = parse_expr_or_tuple(P);
      if (cur(P)->k != T_VAR_END) pfail_at(P, cur(P)->pos, "expected '}}', found %s", tok_desc(cur(P)));
      P->i++;
      push(P, out, n);
      break;
    }
    case T_BLOCK_BEGIN: {
      P->i++;
      jtok *kw = cur(P);
      size_t pos = t->pos;
      if (kw->k != T_NAME) pfail_at(P, kw->pos, "expected a statement name, found %s", tok_desc(kw));
      if (in_list(kw, stop)) {
        P->i++;
        for (const char *const *w = stop;; w++)
          if (is_name(kw, *w)) return *w;
      }
      if (in_list(kw, END_WORDS)) {
        if (open) {
          int line, col;
          jinja_position(P->src, kw->pos, &line, &col);
          pfail_at(P, open->pos, "Unterminated %s (unexpected '%.*s' at line %d, column %d)", open->name,
                   (int)kw->n, kw->p, line, col);
        }
        pfail_at(P, kw->pos, "Unexpected %.*s", (int)kw->n, kw->p);
      }
      P->i++;
      if (++P->nesting > MAX_NESTING) pfail_at(P, pos, "blocks nested too deeply");
      jnode *n;
      if (is_name(kw, "if")) n = parse_if(P, pos);
      else if (is_name(kw, "for")) n = parse_for(P, pos);
      else if (is_name(kw, "set")) n = parse_set(P, pos);
      else if (is_name(kw, "macro")) n = parse_macro(P, pos);
      else if (is_name(kw, "call")) n = parse_call_block(P, pos);
      else if (is_name(kw, "filter")) n = parse_filter_block(P, pos);
      else if (is_name(kw, "break") || is_name(kw, "continue")) {
        bool brk = is_name(kw, "break");
        if (P->loop_depth == 0) pfail_at(P, pos, "%s outside of a loop", brk ? "break" : "continue");
        n = mk(P, brk ? S_BREAK : S_CONTINUE, pos);
        expect_block_end(P);
      } else if (is_name(kw, "generation")) {   /* HF transformers' marker block: renders its body */
        n = mk(P, S_GROUP, pos);
        expect_block_end(P);
        static const char *const gstop[] = { "endgeneration", NULL };
        opener o = { "generation", pos };
        parse_body(P, &n->body, gstop, &o);
        expect_block_end(P);
      } else {
        pfail_at(P, kw->pos, "unknown statement '%.*s'", (int)kw->n, kw->p);
      }
      P->nesting--;
      push(P, out, n);
      break;
    }
    default:
      pfail_at(P, t->pos, "unexpected %s", tok_desc(t));
    }
  }
}

static void parse_template(jinja_template *t, size_t n, jinja_options opt) {
  if (!opt.keep_trailing_newline && n > 0 && t->src[n - 1] == '\n') {   /* jinja drops one final newline */
    n--;
    if (n > 0 && t->src[n - 1] == '\r') n--;
  }
  jheap h = { t->ar, &t->err };
  jtoks toks = { 0 };
  jinja_lex(&h, t->src, n, opt, &toks);
  parser P = { .h = &h, .src = t->src, .t = toks.v };
  t->root = mk(&P, S_GROUP, 0);
  parse_body(&P, &t->root->body, NULL, NULL);
}

jinja_template *jinja_parse(const char *src, size_t n, jinja_options opt) {
  jinja_template *t = tg_xcalloc(1, sizeof *t);
  t->ar = jarena_new((size_t)1 << 30);
  t->src = tg_xmalloc(n + 1);
  memcpy(t->src, src, n);
  t->src[n] = 0;
  if (setjmp(t->err.jb)) {
    tg_seterr("%s", t->err.msg);
    jinja_free(t);
    return NULL;
  }
  parse_template(t, n, opt);
  return t;
}

void jinja_free(jinja_template *t) {
  if (!t) return;
  jarena_free(t->ar);
  free(t->src);
  free(t);
}
