/* rewrite.h: rewrite rules as data, and the engine that applies them.
 *
 * A rule is a pattern string, and either a replacement template or a C
 * callback. Patterns are s-expressions:
 *
 *   x              any node, bound to the name x (a name used twice must bind
 *                  the same node)
 *   _              any node, not bound
 *   0  1.5  -1     a CONST with that value (the sign of zero counts: 0 does
 *                  not match -0.0; bool true is 1)
 *   x:CONST        a node of that op, bound to x ("x:{ADD,MUL}" for a set;
 *                  sets may name groups: ALU, UNARY, BINARY, TERNARY,
 *                  COMMUTATIVE, CMP; "!OP" or "!GROUP" takes ops out:
 *                  "{ALU,REDUCE,!CAST,!BITCAST}"; a set of exclusions only,
 *                  "{!SINK}", is every other op)
 *   (ADD a b)      a node of op ADD whose sources match a and b, in order; for
 *                  commutative ops both orders are tried
 *   (ADD@n a b)    the same, and the node itself is bound to n
 *   ({ADD,MUL} a b) any op of the set
 *   (ADD.int a b)  dtype filter after the op: int, uint, sint, float, bool,
 *                  small (the storage floats: f16, bf16, fp8e4m3, fp8e5m2),
 *                  or a scalar name (f32, i64, ...); also on names: x.int
 *   (SINK ...)     "..." after the listed sources allows any further sources
 *
 * A template builds the replacement from the bindings with the same syntax:
 * a name is the bound node; (OP a b) builds a node whose dtype is the first
 * source's (the second's for WHERE, bool for comparisons; "(OP.f32 ...)" sets
 * it); CAST, BITCAST and CONST need a callback. A number is a CONST of the
 * dtype of its first non-number sibling, or else of the matched root's dtype.
 *
 *   static const tg_rule symbolic[] = {
 *     { .pattern = "(ADD x.int 0)", .replace = "x" },
 *     { .pattern = "(MUL x 1)", .replace = "x" },
 *     { .pattern = "({ADD,MUL}@n a:CONST b:CONST)", .fn = fold_binary },
 *   };
 *
 * See docs/rewrite.md.
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
 * the rule does not apply after all; the matcher then tries the other
 * bindings (e.g. the other order of a commutative op) and the next rules.
 * ctx is graph_rewrite's ctx. */
typedef uop *(*rw_fn)(void *ctx, const rw_match *m);

/* A guard: whether a rule applies to this match (a condition the pattern
 * cannot say, e.g. on vector widths or ranges). false: the search goes on, as
 * when a callback declines. */
typedef bool (*rw_guard)(void *ctx, const rw_match *m);

typedef struct {
  const char *pattern;
  const char *replace;     /* template, or NULL when fn is set (neither: a
                            * match-only rule, for matcher_match) */
  rw_fn fn;
  const char *name;        /* optional, for traces; defaults to the pattern */
  rw_guard guard;          /* optional: checked before the template or callback */
} tg_rule;

typedef struct tg_matcher tg_matcher;
/* Compiles rules (once); aborts with a message on a malformed pattern, since
 * rules are part of the program. The rules array must outlive the matcher. */
tg_matcher *matcher_new(const tg_rule *rules, int n);
/* The matcher of a static rule table, compiled on first use (thread-safe)
 * into *slot and kept for the process, named for traces:
 *   static tg_matcher *m;
 *   graph_rewrite(ast, matcher_once(&m, rules, RW_NRULES(rules), "name"), ctx); */
const tg_matcher *matcher_once(tg_matcher **slot, const tg_rule *rules, int n, const char *name);
#define RW_NRULES(a) ((int)(sizeof(a) / sizeof((a)[0])))
/* A matcher with the rules of a and then of b. */
tg_matcher *matcher_concat(const tg_matcher *a, const tg_matcher *b);
void matcher_free(tg_matcher *m);
/* Names the matcher's passes in VIZ traces (a static string). */
void matcher_set_name(tg_matcher *m, const char *name);

/* One pass of rules on one node: the first rule that applies, or NULL. */
uop *matcher_apply(const tg_matcher *m, uop *u, void *ctx);

/* For passes whose rules produce something other than nodes (the
 * renderers' rules produce code): the index (in m's rule order) of the
 * first rule whose pattern and guard accept u, its bindings in *out; -1
 * when none does. Rules without template or callback are match-only: they
 * serve matcher_match and never fire in a rewrite. */
int matcher_match(const tg_matcher *m, uop *u, void *ctx, rw_match *out);
/* TRACK_REWRITES for such a pass (level: the setting's value; 0 prints
 * nothing): "rewrite PASS [rule]: OP:dtype #id -> after"; level 2 also
 * prints the node's graph. */
void matcher_trace_text(const tg_matcher *m, int level, int rule, uop *before, const char *after);
/* The same as a step of the VIZ pass being recorded (viz_pass_begin with
 * matcher_name(m)), when one is. */
void matcher_viz_text(const tg_matcher *m, int rule, uop *before, const char *after);
/* The name the matcher was given (matcher_set_name, matcher_once), or NULL. */
const char *matcher_name(const tg_matcher *m);

/* For passes that walk the graph themselves (top-down, with their own memo,
 * like the scheduler's lowering): matcher_pass_begin opens the pass (reads
 * TRACK_REWRITES once, opens a VIZ pass named after m); matcher_rewrite_node
 * is matcher_apply with the rule that fired traced as graph_rewrite traces
 * it; matcher_pass_end closes the pass. */
typedef struct { int tracing; bool viz; } rw_pass;
rw_pass matcher_pass_begin(const tg_matcher *m);
uop *matcher_rewrite_node(const tg_matcher *m, const rw_pass *p, uop *u, void *ctx);
void matcher_pass_end(const rw_pass *p);

/* Rewrites children first, then applies rules to each rebuilt node until
 * none matches (fixed point); nodes a rule returns are rewritten the same
 * way. Memoized per call; iterative, so any depth is fine. Aborts, naming the
 * rule, when rules loop. Returns a borrowed node. */
uop *graph_rewrite(uop *root, const tg_matcher *m, void *ctx);

/* Substitutes nodes: every node that is a key of map (uop* -> uop*) is
 * replaced by its value (taken as is), and parents are rebuilt. */
uop *graph_substitute(uop *root, const void *map /* ptrmap* */);
/* The same with the caller's memo (ptrmap*: node -> its replacement), kept
 * across calls: several roots rebuilt once, and afterwards the memo says
 * what each node they reach became. */
uop *graph_substitute_memo(uop *root, const void *map /* ptrmap* */, void *memo /* ptrmap* */);

/* Rebuilds the graph bottom-up: each node gets its sources' results, then
 * fn(rebuilt node, ctx) says what it becomes (return it unchanged to keep
 * it). Returns the root's result (borrowed). */
uop *graph_map(uop *root, uop *(*fn)(uop *u, void *ctx), void *ctx);

/* TRACK_REWRITES=1 prints each rule that fires (the matcher's name, the
 * rule, before, after) to stderr; TRACK_REWRITES=2 also prints both graphs. */

#endif
