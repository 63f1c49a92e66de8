/* rewrite.h: rewrite rules as data, and the engine that applies them.
 *
 * A rule is a pattern string, and either a replacement template or a C
 * callback. Patterns are s-expressions:
 *
 *   x              any node, bound to the name x (a name used twice must bind
 *                  the same node)
 *   _              any node, not bound
 *   0  1.5  -1     a CONST with that value
 *   x:CONST        a node of that op, bound to x ("x:{ADD,MUL}" for a set)
 *   (ADD a b)      a node of op ADD whose sources match a and b, in order; for
 *                  commutative ops both orders are tried
 *   (ADD@n a b)    the same, and the node itself is bound to n
 *   ({ADD,MUL} a b) any op of the set
 *   (ADD.int a b)  dtype filter after the op: int, uint, sint, float, bool,
 *                  or a scalar name (f32, i64, ...); also on names: x.int
 *   (SINK ...)     "..." after the listed sources allows any further sources
 *
 * A template builds the replacement from the bindings with the same syntax:
 * a name is the bound node; (OP a b) builds a node whose dtype is the first
 * source's (bool for comparisons); a number is a CONST of the matched root's
 * dtype.
 *
 *   static const tg_rule symbolic[] = {
 *     { "(ADD x 0)", "x" },
 *     { "(MUL x 1)", "x" },
 *     { "({ADD,MUL}@n a:CONST b:CONST)", .fn = fold_binary },
 *   };
 */
#ifndef TG_REWRITE_H
#define TG_REWRITE_H

#include "uop/uop.h"

#define RW_MAX_BINDS 16

/* The bindings of one successful match, by name. */
typedef struct {
  int n;
  const char *names[RW_MAX_BINDS];
  uop *vals[RW_MAX_BINDS];
  uop *root;               /* the node the rule matched */
} rw_match;
/* The node bound to name (NULL when absent). */
uop *rw_get(const rw_match *m, const char *name);

/* A callback returns the replacement (borrowed, from uop_new) or NULL when
 * the rule does not apply after all. ctx is graph_rewrite's ctx. */
typedef uop *(*rw_fn)(void *ctx, const rw_match *m);

typedef struct {
  const char *pattern;
  const char *replace;     /* template, or NULL when fn is set */
  rw_fn fn;
  const char *name;        /* optional, for traces; defaults to the pattern */
} tg_rule;

typedef struct tg_matcher tg_matcher;
/* Compiles rules (once); aborts with a message on a malformed pattern, since
 * rules are part of the program. The rules array must outlive the matcher. */
tg_matcher *matcher_new(const tg_rule *rules, int n);
/* A matcher with the rules of a and then of b. */
tg_matcher *matcher_concat(const tg_matcher *a, const tg_matcher *b);
void matcher_free(tg_matcher *m);

/* One pass of rules on one node: the first rule that applies, or NULL. */
uop *matcher_apply(const tg_matcher *m, uop *u, void *ctx);

/* Rewrites children first, then applies rules to each rebuilt node until
 * none matches (fixed point). Returns a borrowed node. */
uop *graph_rewrite(uop *root, const tg_matcher *m, void *ctx);

/* Substitutes nodes: every node that is a key of map (uop* -> uop*) is
 * replaced by its value, and parents are rebuilt. */
uop *graph_substitute(uop *root, const void *map /* ptrmap* */);

/* TRACK_REWRITES=1 prints each rule that fires (pattern, before, after). */

#endif
