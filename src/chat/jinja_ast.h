/* jinja_ast.h: tokens and the syntax tree, shared by the lexer, the parser
 * and the evaluator. */
#ifndef TG_CHAT_JINJA_AST_H
#define TG_CHAT_JINJA_AST_H

#include "chat/jinja.h"

typedef enum {
  T_TEXT, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END,
  T_NAME, T_STR, T_INT, T_FLOAT, T_OP, T_EOF
} jtok_kind;

typedef struct jtok {
  jtok_kind k;
  size_t pos;            /* byte offset in the source, for error positions */
  const char *p;         /* text, name, operator, or the decoded string literal */
  size_t n;
  int64_t i;
  double f;
} jtok;

typedef struct jtoks { jtok *v; int n, cap; } jtoks;

/* Tokenizes src (already without its trailing newline when that option is
 * off); string literals are decoded into the heap. Fails via h->err. */
void jinja_lex(jheap *h, const char *src, size_t n, jinja_options opt, jtoks *out);
/* "line L, column C" of a byte offset */
void jinja_position(const char *src, size_t pos, int *line, int *col);

typedef enum {
  /* expressions */
  N_LIT, N_NAME, N_LIST, N_TUPLE, N_DICT, N_ATTR, N_INDEX, N_SLICE, N_CALL,
  N_FILTER, N_TEST, N_NOT, N_NEG, N_BIN, N_AND, N_OR, N_COND, N_BLOCK_INPUT,
  /* statements */
  S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SET_BLOCK, S_MACRO, S_CALL_BLOCK,
  S_FILTER_BLOCK, S_BREAK, S_CONTINUE, S_GROUP
} jnode_kind;

typedef struct jnode jnode;
typedef struct jnodes { jnode **v; int n, cap; } jnodes;

struct jnode {
  jnode_kind k;
  size_t pos;
  jv lit;                 /* N_LIT value; N_TEXT text */
  const char *name;       /* N_NAME, N_ATTR, N_FILTER, N_TEST, N_BIN operator, S_MACRO */
  jnode *a, *b, *c;       /* operands; S_IF/S_FOR: a = condition/iterable, b = loop filter */
  jnodes args;            /* list/tuple items, dict key/value pairs, call arguments, macro defaults */
  const char **kw;        /* kw[i]: keyword of args.v[i] (NULL = positional); macro parameter names */
  const char **targets;   /* S_FOR / S_SET names */
  int ntargets;
  bool negate;            /* N_TEST: `is not` */
  jnodes body, orelse;
};

struct jinja_template {
  jarena *ar;
  jerr err;
  char *src;
  jnode *root;            /* S_GROUP */
};

#endif
