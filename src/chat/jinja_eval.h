/* jinja_eval.h: what the evaluator shares with the built-in filters and
 * tests (jinja_filters.c), methods (jinja_methods.c) and globals
 * (jinja_globals.c). */
#ifndef TG_CHAT_JINJA_EVAL_H
#define TG_CHAT_JINJA_EVAL_H

#include "chat/jinja_ast.h"

typedef struct jscope {
  jdict *vars;
  struct jscope *parent;
} jscope;

/* call arguments, already evaluated */
typedef struct jargs {
  jv *pos;
  int npos;
  const char **kwn;
  jv *kwv;
  int nkw;
} jargs;

typedef struct jctx jctx;
typedef jv (*jbuiltin_fn)(jctx *c, jargs *a);

typedef enum { JF_BUILTIN, JF_MACRO, JF_CYCLE, JF_JOINER } jfunc_kind;
typedef struct jfunc {
  jfunc_kind kind;
  const char *name;
  jbuiltin_fn fn;          /* JF_BUILTIN */
  const jnode *node;       /* JF_MACRO: S_MACRO, or the S_CALL_BLOCK whose body a `caller()` renders */
  jscope *closure;
  jv state;                /* JF_CYCLE: the loop index; JF_JOINER: separator, used flag in b */
  bool used;
} jfunc;

struct jctx {
  jheap h;
  jerr err;
  const char *src;
  size_t pos;              /* source offset of the node being evaluated, for messages */
  jinja_limits lim;
  int64_t iterations;
  int depth;
  int64_t now;
  jv block_input;          /* the captured body of a {% filter %} block */
  int ctrl;                /* pending break / continue */
};

/* fails the render with the message and the current source position */
_Noreturn void jctx_fail(jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* counts n units of work (loop iterations, items visited) against the limit */
void jctx_charge(jctx *c, int64_t n);

jv jinja_call(jctx *c, jv fn, jargs *a);
jv jinja_filter(jctx *c, const char *name, jv input, jargs *a);
bool jinja_test(jctx *c, const char *name, jv input, jargs *a);
/* obj.name(args): Python methods of str, list and dict; *found false when none */
jv jinja_method(jctx *c, jv obj, const char *name, jargs *a, bool *found);
void jinja_add_globals(jctx *c, jdict *globals);
/* Python's `fmt % args` for strings (%s %r %d %i %f %x %%, with width and precision) */
jv jinja_percent_format(jctx *c, jv fmt, jv args);

/* string helpers (jinja_methods.c), shared by methods and filters */
jv jinja_strip(jv s, const jv *chars, bool left, bool right);   /* chars NULL: whitespace */
jv jinja_change_case(jctx *c, jv s, int mode);                  /* 0 upper, 1 lower, 2 capitalize, 3 title */
jv jinja_replace(jctx *c, jv s, jv old, jv new_, int64_t count);   /* count < 0: all */
jv jinja_split(jctx *c, jv s, const jv *sep, int64_t maxsplit);    /* sep NULL: runs of whitespace */
jv jinja_join(jctx *c, jlist *items, jv sep);
jv jinja_items(jctx *c, jv d);                                  /* (key, value) tuples of a dict */
int64_t jinja_to_int(jctx *c, jv v, int64_t dflt);              /* int(v), or dflt when v has none */

/* argument helpers: the i-th positional argument, or the keyword `kw`, or NULL */
jv *jarg(jargs *a, int i, const char *kw);
jv jarg_or(jargs *a, int i, const char *kw, jv dflt);
/* items of an iterable (list, tuple, dict keys, string characters) */
jlist *jinja_iter_items(jctx *c, jv v);
jv jinja_getattr(jctx *c, jv obj, jv key);

#endif
