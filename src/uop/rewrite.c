/* rewrite.c: the pattern language of rewrite.h and the rewrite engine.
 *
 * Each rule's pattern and template are parsed once, at matcher_new, into
 * trees of pnode. Rules are indexed by the op of their root, so matching a
 * node only tries the rules that can apply to its op, in rule order.
 *
 * Matching is a small backtracking search over a stack of goals (pattern
 * node, uop). Commutative nodes try both source orders, bindings are undone
 * when a branch fails, and a callback that declines (returns NULL) makes the
 * search continue with the next possible match before giving up on the rule.
 *
 * graph_rewrite and graph_substitute use explicit stacks, so graphs of any
 * depth are fine. */
#include <math.h>
#include <pthread.h>
#include "util/counters.h"
#include "uop/rewrite.h"
#include "util/util.h"
#include "viz/viz.h"
#include "util/settings.h"

#define OPW ((OP_COUNT + 63) / 64)
#define MAX_GOALS 64          /* pattern nodes per rule */
#define MAX_REWRITES 1000     /* rewrites of one node before we call it a loop */

enum { DTF_NONE, DTF_INT, DTF_UINT, DTF_SINT, DTF_FLOAT, DTF_SMALL, DTF_BOOL, DTF_SCALAR };

typedef struct pnode pnode;
struct pnode {
  uint64_t ops[OPW];   /* op set; unused when anyop */
  bool anyop;
  uint8_t dtf, dts;    /* dtype filter kind, and the scalar for DTF_SCALAR */
  int slot;            /* binding slot, -1 when unbound */
  bool lit;            /* literal CONST value */
  double litv;
  bool paren;          /* has an explicit source list */
  bool ellipsis;       /* "..." after the sources */
  bool comm;           /* two sources and a commutative op is possible */
  int nsrc;
  pnode **src;
  int op;              /* templates: the op to build */
};

typedef struct {
  const tg_rule *rule;
  pnode *pat, *tmpl;
  int nnames;
  char *names[RW_MAX_BINDS];
  const char *label;
  int npat;            /* pattern nodes: the most goals a match has pending */
  const pnode *first;  /* the root's first source when it fixes its op (and the root is not commutative): a quick test */
  VEC(pnode *) nodes;  /* every pnode, for freeing */
} crule;

struct tg_matcher {
  const char *name;    /* for VIZ; NULL: "rewrite" */
  int n;
  crule *rules;
  int *idx[OP_COUNT];
  int nidx[OP_COUNT];
};

/* ------------------------------------------------------------ the parser */

typedef struct {
  const char *s;       /* the text */
  const char *what;    /* "pattern" or "template" */
  int pos;
  bool tmpl;
  crule *r;
  int npat;            /* pattern nodes, for the goal stack */
} parser;

static _Noreturn void perr(parser *p, const char *msg) {
  fprintf(stderr, "tg: malformed rewrite %s at position %d: %s\n    %s\n    %*s^\n", p->what, p->pos, msg, p->s,
          p->pos, "");
  abort();
}

static void skip_ws(parser *p) {
  while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n') p->pos++;
}
static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

/* Reads an identifier; returns its length (0 when none) and its start. */
static int read_id(parser *p, const char **start) {
  *start = p->s + p->pos;
  if (!is_id0(p->s[p->pos])) return 0;
  int n = 0;
  while (is_id(p->s[p->pos])) { p->pos++; n++; }
  return n;
}

static bool id_is(const char *s, int n, const char *w) { return (int)strlen(w) == n && !memcmp(s, w, (size_t)n); }

static pnode *new_pnode(parser *p) {
  pnode *n = tg_xcalloc(1, sizeof *n);
  n->slot = -1;
  n->op = -1;
  VEC_PUSH(p->r->nodes, n);
  if (!p->tmpl && ++p->npat > MAX_GOALS) perr(p, "pattern too large");
  return n;
}

static void set_op(pnode *n, int op) { n->ops[op / 64] |= 1ULL << (op % 64); }
static bool has_op(const pnode *n, int op) { return n->anyop || (n->ops[op / 64] >> (op % 64)) & 1; }

/* Op groups allowed inside {...}. */
static bool add_group(pnode *n, const char *s, int len) {
  bool (*pred)(uop_op) = NULL;
  int extra = 0;
  if (id_is(s, len, "ALU")) pred = uop_is_alu;
  else if (id_is(s, len, "UNARY")) pred = uop_is_unary;
  else if (id_is(s, len, "BINARY")) pred = uop_is_binary;
  else if (id_is(s, len, "COMMUTATIVE")) pred = uop_is_commutative;
  else if (id_is(s, len, "CMP")) pred = uop_is_comparison;
  else if (id_is(s, len, "TERNARY")) extra = 1;
  else return false;
  if (extra) { set_op(n, OP_WHERE); set_op(n, OP_MULACC); return true; }
  for (int op = 0; op < OP_COUNT; op++)
    if (pred((uop_op)op)) set_op(n, op);
  return true;
}

/* OPNAME | {OP,GROUP,!OP,...} | _ */
static void parse_opspec(parser *p, pnode *n) {
  skip_ws(p);
  const char *id;
  int len;
  if (p->s[p->pos] == '{') {
    if (p->tmpl) perr(p, "op sets are not allowed in templates");
    p->pos++;
    pnode out = { 0 };   /* the ops after '!', taken out at the end */
    bool any_in = false;
    for (;;) {
      skip_ws(p);
      bool excl = p->s[p->pos] == '!';
      if (excl) p->pos++;
      pnode *to = excl ? &out : n;
      if (!(len = read_id(p, &id))) perr(p, "expected an op name in the set");
      int op = uop_op_from_name(id, len);
      if (op >= 0) set_op(to, op);
      else if (!add_group(to, id, len)) { p->pos -= len; perr(p, "unknown op"); }
      any_in |= !excl;
      skip_ws(p);
      if (p->s[p->pos] == ',') { p->pos++; continue; }
      if (p->s[p->pos] == '}') { p->pos++; break; }
      perr(p, "expected ',' or '}'");
    }
    if (!any_in) memset(n->ops, 0xff, sizeof n->ops);   /* only exclusions: every other op */
    for (int w = 0; w < OPW; w++) n->ops[w] &= ~out.ops[w];
    return;
  }
  if (!(len = read_id(p, &id))) perr(p, "expected an op name, {OP,...} or _");
  if (id_is(id, len, "_")) {
    if (p->tmpl) { p->pos -= len; perr(p, "a template must name its op"); }
    n->anyop = true;
    return;
  }
  int op = uop_op_from_name(id, len);
  if (op < 0) { p->pos -= len; perr(p, "unknown op"); }
  set_op(n, op);
  n->op = op;
}

static const struct { const char *name; uint8_t dtf, dts; } dtype_names[] = {
  { "int", DTF_INT, 0 }, { "uint", DTF_UINT, 0 }, { "sint", DTF_SINT, 0 }, { "float", DTF_FLOAT, 0 },
  { "small", DTF_SMALL, 0 }, { "bool", DTF_BOOL, 0 },
  { "f16", DTF_SCALAR, TG_F16 }, { "bf16", DTF_SCALAR, TG_BF16 }, { "f32", DTF_SCALAR, TG_F32 },
  { "f64", DTF_SCALAR, TG_F64 }, { "fp8e4m3", DTF_SCALAR, TG_FP8E4M3 }, { "fp8e5m2", DTF_SCALAR, TG_FP8E5M2 },
  { "i8", DTF_SCALAR, TG_I8 }, { "i16", DTF_SCALAR, TG_I16 }, { "i32", DTF_SCALAR, TG_I32 },
  { "i64", DTF_SCALAR, TG_I64 }, { "u8", DTF_SCALAR, TG_U8 }, { "u16", DTF_SCALAR, TG_U16 },
  { "u32", DTF_SCALAR, TG_U32 }, { "u64", DTF_SCALAR, TG_U64 },
};

/* after a '.': a dtype filter name */
static void parse_dtype(parser *p, pnode *n) {
  const char *id;
  int len = read_id(p, &id);
  if (!len) perr(p, "expected a dtype name after '.'");
  if (n->dtf != DTF_NONE) { p->pos -= len; perr(p, "two dtype filters"); }
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (id_is(id, len, dtype_names[i].name)) {
      if (p->tmpl && dtype_names[i].dtf != DTF_SCALAR && dtype_names[i].dtf != DTF_BOOL) {
        p->pos -= len;
        perr(p, "a template dtype must be a scalar type (f32, i64, bool, ...)");
      }
      n->dtf = dtype_names[i].dtf;
      n->dts = dtype_names[i].dtf == DTF_BOOL ? TG_BOOL : dtype_names[i].dts;
      return;
    }
  p->pos -= len;
  perr(p, "unknown dtype (int, uint, sint, float, small, bool, f16, bf16, f32, f64, i8..i64, u8..u64)");
}

static int name_slot(parser *p, const char *id, int len) {
  for (int i = 0; i < p->r->nnames; i++)
    if (id_is(id, len, p->r->names[i])) return i;
  if (p->tmpl) { p->pos -= len; perr(p, "name not bound by the pattern"); }
  if (p->r->nnames == RW_MAX_BINDS) { p->pos -= len; perr(p, "too many names in one rule"); }
  char *nm = tg_xmalloc((size_t)len + 1);
  memcpy(nm, id, (size_t)len);
  nm[len] = 0;
  p->r->names[p->r->nnames] = nm;
  return p->r->nnames++;
}

static pnode *parse_node(parser *p);

static pnode *parse_paren(parser *p) {
  p->pos++;   /* '(' */
  pnode *n = new_pnode(p);
  n->paren = true;
  parse_opspec(p, n);
  for (;;) {   /* modifiers: @name and .dtype, in any order */
    char c = p->s[p->pos];
    if (c == '@') {
      if (p->tmpl) perr(p, "'@' is not allowed in templates");
      if (n->slot >= 0) perr(p, "two '@' bindings");
      p->pos++;
      const char *id;
      int len = read_id(p, &id);
      if (!len || id_is(id, len, "_")) perr(p, "expected a name after '@'");
      n->slot = name_slot(p, id, len);
    } else if (c == '.') {
      p->pos++;
      parse_dtype(p, n);
    } else break;
  }
  VEC(pnode *) srcs = { 0 };
  for (;;) {
    skip_ws(p);
    char c = p->s[p->pos];
    if (c == ')') { p->pos++; break; }
    if (c == 0) perr(p, "missing ')'");
    if (!strncmp(p->s + p->pos, "...", 3)) {
      if (p->tmpl) perr(p, "'...' is not allowed in templates");
      p->pos += 3;
      skip_ws(p);
      if (p->s[p->pos] != ')') perr(p, "'...' must be last in its source list");
      p->pos++;
      n->ellipsis = true;
      break;
    }
    VEC_PUSH(srcs, parse_node(p));
  }
  n->nsrc = srcs.n;
  n->src = srcs.v;
  if (!p->tmpl && n->nsrc == 2 && !n->ellipsis) {
    for (int op = 0; op < OP_COUNT && !n->comm; op++)
      if (uop_is_commutative((uop_op)op) && has_op(n, op)) n->comm = true;
  }
  if (p->tmpl) {
    if (n->op == OP_CAST || n->op == OP_BITCAST || n->op == OP_CONST) perr(p, "templates cannot build CAST, BITCAST or CONST (use a callback)");
    if (n->nsrc == 0 && n->dtf == DTF_NONE) perr(p, "a template node without sources needs a dtype (OP.f32)");
  }
  return n;
}

static pnode *parse_node(parser *p) {
  skip_ws(p);
  char c = p->s[p->pos];
  if (c == '(') return parse_paren(p);
  if ((c >= '0' && c <= '9') || ((c == '-' || c == '+' || c == '.') && p->s[p->pos + 1] >= '0' && p->s[p->pos + 1] <= '9') ||
      ((c == '-' || c == '+') && p->s[p->pos + 1] == '.')) {
    char *end;
    double v = strtod(p->s + p->pos, &end);
    if (end == p->s + p->pos) perr(p, "bad number");
    pnode *n = new_pnode(p);
    n->lit = true;
    n->litv = v;
    if (!p->tmpl) set_op(n, OP_CONST);
    p->pos = (int)(end - p->s);
    if (is_id(p->s[p->pos])) perr(p, "unexpected text after a number");
    return n;
  }
  const char *id;
  int len = read_id(p, &id);
  if (!len) perr(p, c ? "expected '(', a name or a number" : "unexpected end");
  pnode *n = new_pnode(p);
  bool wild = id_is(id, len, "_");
  if (wild && p->tmpl) { p->pos -= len; perr(p, "'_' is not allowed in templates"); }
  if (!wild) n->slot = name_slot(p, id, len);
  n->anyop = true;
  if (p->s[p->pos] == ':') {
    if (p->tmpl) perr(p, "':' is not allowed in templates");
    p->pos++;
    n->anyop = false;
    parse_opspec(p, n);
  }
  if (p->s[p->pos] == '.') {
    if (p->tmpl) perr(p, "dtype filters are not allowed on template names");
    p->pos++;
    parse_dtype(p, n);
  }
  return n;
}

static pnode *parse_all(parser *p) {
  if (!p->s) perr(p, "missing");
  pnode *n = parse_node(p);
  skip_ws(p);
  if (p->s[p->pos]) perr(p, "unexpected text after the end");
  return n;
}

static void compile_rule(crule *r, const tg_rule *src) {
  memset(r, 0, sizeof *r);
  r->rule = src;
  r->label = src->name ? src->name : src->pattern ? src->pattern : "?";
  parser p = { src->pattern ? src->pattern : "", "pattern", 0, false, r, 0 };
  if (!src->pattern) perr(&p, "rule has no pattern");
  r->pat = parse_all(&p);
  r->npat = p.npat;
  if (r->pat->paren && r->pat->nsrc > 0 && !r->pat->comm && !r->pat->src[0]->anyop) r->first = r->pat->src[0];
  if (src->replace && src->fn) perr(&p, "rule has both a template and a callback");
  if (src->replace) {
    parser t = { src->replace, "template", 0, true, r, 0 };
    r->tmpl = parse_all(&t);
  }
}

static void free_rule(crule *r) {
  for (int i = 0; i < r->nodes.n; i++) { free(r->nodes.v[i]->src); free(r->nodes.v[i]); }
  VEC_FREE(r->nodes);
  for (int i = 0; i < r->nnames; i++) free(r->names[i]);
}

static tg_matcher *build_matcher(const tg_rule *const *rules, int n) {
  tg_matcher *m = tg_xcalloc(1, sizeof *m);
  m->n = n;
  m->rules = tg_xcalloc((size_t)(n ? n : 1), sizeof(crule));
  for (int i = 0; i < n; i++) compile_rule(&m->rules[i], rules[i]);
  for (int op = 0; op < OP_COUNT; op++) {
    int k = 0;
    for (int i = 0; i < n; i++) k += has_op(m->rules[i].pat, op);
    m->nidx[op] = k;
    m->idx[op] = k ? tg_xmalloc(sizeof(int) * (size_t)k) : NULL;
    k = 0;
    for (int i = 0; i < n; i++)
      if (has_op(m->rules[i].pat, op)) m->idx[op][k++] = i;
  }
  return m;
}

tg_matcher *matcher_new(const tg_rule *rules, int n) {
  const tg_rule **v = tg_xmalloc(sizeof(*v) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) v[i] = &rules[i];
  tg_matcher *m = build_matcher(v, n);
  free(v);
  return m;
}

tg_matcher *matcher_concat(const tg_matcher *a, const tg_matcher *b) {
  int n = a->n + b->n;
  const tg_rule **v = tg_xmalloc(sizeof(*v) * (size_t)(n ? n : 1));
  for (int i = 0; i < a->n; i++) v[i] = a->rules[i].rule;
  for (int i = 0; i < b->n; i++) v[a->n + i] = b->rules[i].rule;
  tg_matcher *m = build_matcher(v, n);
  free(v);
  return m;
}

void matcher_set_name(tg_matcher *m, const char *name) { m->name = name; }

const tg_matcher *matcher_once(tg_matcher **slot, const tg_rule *rules, int n, const char *name) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  tg_matcher *m = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (m) return m;
  pthread_mutex_lock(&lock);
  if (!(m = *slot)) {
    m = matcher_new(rules, n);
    matcher_set_name(m, name);
    __atomic_store_n(slot, m, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lock);
  return m;
}

void matcher_free(tg_matcher *m) {
  if (!m) return;
  for (int i = 0; i < m->n; i++) free_rule(&m->rules[i]);
  for (int op = 0; op < OP_COUNT; op++) free(m->idx[op]);
  free(m->rules);
  free(m);
}

/* ------------------------------------------------------------ matching */

uop *rw_get(const rw_match *m, const char *name) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->names[i], name)) return m->vals[i];
  return NULL;
}

static bool dtype_ok(const pnode *p, dtype_t d) {
  int s = d.scalar;
  switch (p->dtf) {
  case DTF_NONE: return true;
  case DTF_INT: return s >= TG_I8 && s <= TG_U64;
  case DTF_UINT: return s == TG_U8 || s == TG_U16 || s == TG_U32 || s == TG_U64;
  case DTF_SINT: return s == TG_I8 || s == TG_I16 || s == TG_I32 || s == TG_I64;
  case DTF_FLOAT: return s >= TG_FP8E4M3 && s <= TG_F64;
  case DTF_SMALL: return s == TG_F16 || s == TG_BF16 || s == TG_FP8E4M3 || s == TG_FP8E5M2;
  case DTF_BOOL: return s == TG_BOOL;
  default: return s == p->dts;
  }
}

static bool node_ok(const pnode *p, const uop *u) {
  if (!has_op(p, u->op)) return false;
  if (!dtype_ok(p, u->dtype)) return false;
  if (p->lit) {
    /* exact: the value and the sign, so "0" does not match -0.0 */
    double v = uop_const_value(u);
    if (!(v == p->litv) || signbit(v) != signbit(p->litv)) return false;
  }
  if (p->paren && (p->ellipsis ? u->nsrc < p->nsrc : u->nsrc != p->nsrc)) return false;
  return true;
}

typedef struct { const pnode *p; uop *u; } goal;
typedef struct {
  const crule *r;
  void *ctx;
  rw_match m;
  goal *goals;         /* npat of them: on the caller's stack (lowering recurses through matches) */
  int sp;
  bool match_only;     /* matcher_match: a match the guard accepts is the result */
  uop *result;
} mstate;

static uop *build(const pnode *t, const rw_match *m, dtype_t numdt) {
  if (t->slot >= 0) return m->vals[t->slot];
  if (t->lit) return uop_const(numdt, t->litv);
  uop *srcs[64];
  if (t->nsrc > 64) { fprintf(stderr, "tg: template node with too many sources\n"); abort(); }
  bool cmp = uop_is_comparison((uop_op)t->op);
  if (t->dtf != DTF_NONE && !cmp) numdt = dt_scalar(t->dts);
  /* numbers take the dtype of their first non-number sibling (for WHERE:
   * among the two values) */
  int v0 = t->op == OP_WHERE ? 1 : 0, first = -1;
  for (int i = v0; i < t->nsrc && first < 0; i++)
    if (!t->src[i]->lit) first = i;
  dtype_t sib = numdt;
  if (first >= 0) { srcs[first] = build(t->src[first], m, numdt); sib = srcs[first]->dtype; }
  for (int i = 0; i < t->nsrc; i++)
    if (i != first) srcs[i] = build(t->src[i], m, i < v0 ? DT_BOOL : sib);
  dtype_t dt;
  if (t->dtf != DTF_NONE) dt = dt_scalar(t->dts);
  else if (cmp) dt = dt_vec(DT_BOOL, srcs[0]->dtype.count);
  else dt = srcs[t->op == OP_WHERE && t->nsrc > 1 ? 1 : 0]->dtype;
  return uop_new((uop_op)t->op, dt, srcs, t->nsrc, arg_none());
}

static bool accept(mstate *st) {
  const crule *r = st->r;
  uop *root = st->m.root;
  if (r->rule->guard && !r->rule->guard(st->ctx, &st->m)) return false;
  if (st->match_only) { st->result = root; return true; }
  if (!r->tmpl && !r->rule->fn) return false;   /* a match-only rule never rewrites */
  uop *res = r->tmpl ? build(r->tmpl, &st->m, root->dtype) : r->rule->fn(st->ctx, &st->m);
  if (!res || res == root) return false;   /* declined: keep searching */
  st->result = res;
  return true;
}

static bool solve(mstate *st) {
  if (st->sp == 0) return accept(st);
  goal g = st->goals[--st->sp];
  const pnode *p = g.p;
  uop *u = g.u;
  int base = st->sp;
  if (!node_ok(p, u)) { st->goals[st->sp++] = g; return false; }
  bool bound_here = false;
  if (p->slot >= 0) {
    uop *b = st->m.vals[p->slot];
    if (b && b != u) { st->goals[st->sp++] = g; return false; }
    if (!b) { st->m.vals[p->slot] = u; bound_here = true; }
  }
  bool ok;
  if (!p->paren || p->nsrc == 0) {
    ok = solve(st);
  } else {
    /* pushed in reverse, so src[0] is matched first */
    for (int i = p->nsrc - 1; i >= 0; i--) st->goals[st->sp++] = (goal){ p->src[i], u->src[i] };
    ok = solve(st);
    st->sp = base;
    if (!ok && p->comm && u->nsrc == 2 && uop_is_commutative(u->op) && u->src[0] != u->src[1]) {
      st->goals[st->sp++] = (goal){ p->src[1], u->src[0] };
      st->goals[st->sp++] = (goal){ p->src[0], u->src[1] };
      ok = solve(st);
      st->sp = base;
    }
  }
  if (!ok) {
    if (bound_here) st->m.vals[p->slot] = NULL;
    st->goals[st->sp++] = g;
  }
  return ok;
}

static uop *try_rule(const crule *r, uop *u, void *ctx, rw_match *match_out) {
  counters_add_work(1);
  mstate st;
  st.r = r;
  st.ctx = ctx;
  st.match_only = match_out != NULL;
  st.m.n = r->nnames;
  for (int i = 0; i < r->nnames; i++) { st.m.names[i] = r->names[i]; st.m.vals[i] = NULL; }
  st.m.root = u;
  st.sp = 1;
  goal goals[r->npat];
  st.goals = goals;
  st.goals[0] = (goal){ r->pat, u };
  st.result = NULL;
  if (!solve(&st)) return NULL;
  if (match_out) *match_out = st.m;
  return st.result;
}

/* The first rule that applies to u (match_out: that matches it, with its
 * bindings there), its index in *which. */
static uop *apply_rules(const tg_matcher *m, uop *u, void *ctx, int *which, rw_match *match_out) {
  int n = m->nidx[u->op];
  const int *ix = m->idx[u->op];
  for (int k = 0; k < n; k++) {
    const crule *c = &m->rules[ix[k]];
    if (c->first && u->nsrc > 0 && !has_op(c->first, u->src[0]->op)) continue;   /* fails at the first source anyway */
    uop *r = try_rule(c, u, ctx, match_out);
    if (r) { *which = ix[k]; return r; }
  }
  return NULL;
}

uop *matcher_apply(const tg_matcher *m, uop *u, void *ctx) {
  int which;
  return u ? apply_rules(m, u, ctx, &which, NULL) : NULL;
}

int matcher_match(const tg_matcher *m, uop *u, void *ctx, rw_match *out) {
  int which = -1;
  return u && apply_rules(m, u, ctx, &which, out) ? which : -1;
}

static void trace(int level, const tg_matcher *m, const crule *r, uop *before, uop *after);

rw_pass matcher_pass_begin(const tg_matcher *m) {
  return (rw_pass){ (int)setting_int(SET_TRACK_REWRITES), viz_on && viz_pass_begin(m->name) };
}

uop *matcher_rewrite_node(const tg_matcher *m, const rw_pass *p, uop *u, void *ctx) {
  int which;
  uop *r = u ? apply_rules(m, u, ctx, &which, NULL) : NULL;
  if (r && p->tracing) trace(p->tracing, m, &m->rules[which], u, r);
  if (r && p->viz) viz_pass_step(m->rules[which].label, u, r);
  return r;
}

void matcher_pass_end(const rw_pass *p) { if (p->viz) viz_pass_end(); }

/* ------------------------------------------------------------ graph_rewrite */

static char active_mark;
#define ACTIVE ((uop *)&active_mark)

static void describe(const uop *u, char *buf, int n) {
  char dts[32], args[96];
  dt_str(u->dtype, dts, sizeof dts);
  uop_arg_str(u, args, sizeof args);
  snprintf(buf, (size_t)n, "%s:%s%s%s #%llu", uop_op_name(u->op), dts, args[0] ? " " : "", args, (unsigned long long)u->id);
}

static void trace(int level, const tg_matcher *m, const crule *r, uop *before, uop *after) {
  char b[160], a[160];
  describe(before, b, sizeof b);
  describe(after, a, sizeof a);
  fprintf(stderr, "rewrite %s [%s]: %s -> %s\n", m->name ? m->name : "rewrite", r->label, b, a);
  if (level >= 2) { uop_print(stderr, before); fprintf(stderr, "  ->\n"); uop_print(stderr, after); }
}

void matcher_trace_text(const tg_matcher *m, int level, int rule, uop *before, const char *after) {
  if (level <= 0 || rule < 0 || rule >= m->n) return;
  char b[160];
  describe(before, b, sizeof b);
  fprintf(stderr, "rewrite %s [%s]: %s -> %s\n", m->name ? m->name : "rewrite", m->rules[rule].label, b, after);
  if (level >= 2) uop_print(stderr, before);
}

void matcher_viz_text(const tg_matcher *m, int rule, uop *before, const char *after) {
  if (viz_on && rule >= 0 && rule < m->n) viz_pass_step_text(m->rules[rule].label, before, after);
}

const char *matcher_name(const tg_matcher *m) { return m ? m->name : NULL; }

static _Noreturn void rule_bug(const crule *r, uop *u, const char *why) {
  char b[160];
  describe(u, b, sizeof b);
  fprintf(stderr, "tg: graph_rewrite: %s (last rule: \"%s\", on %s); the rules are wrong\n", why, r ? r->label : "?", b);
  abort();
}

typedef struct { uop *n; int i; int chain0; int nrw; } frame;

uop *graph_rewrite(uop *root, const tg_matcher *m, void *ctx) {
  if (!root) return NULL;
  int tracing = (int)setting_int(SET_TRACK_REWRITES);
  bool viz = viz_on && viz_pass_begin(m->name);
  ptrmap memo = { 0 };
  VEC(frame) st = { 0 };
  VEC(uop *) chain = { 0 };   /* nodes (original and intermediate) awaiting their final result */
  VEC(uop *) srcs = { 0 };
  const crule *last = NULL;
  uop *result = NULL;
  pm_put(&memo, root, ACTIVE);
  VEC_PUSH(st, ((frame){ root, 0, 0, 0 }));
  while (st.n) {
    frame *f = &st.v[st.n - 1];
    uop *n = f->n;
    /* 1. sources first */
    bool pushed = false;
    while (f->i < n->nsrc) {
      uop *s = n->src[f->i];
      uop *ms = pm_get(&memo, s);
      if (ms == ACTIVE) rule_bug(last, s, "a rule built a node that contains a node being rewritten (a rule cycle)");
      if (ms) { f->i++; continue; }
      pm_put(&memo, s, ACTIVE);
      VEC_PUSH(st, ((frame){ s, 0, chain.n, 0 }));
      pushed = true;
      break;
    }
    if (pushed) continue;
    f = &st.v[st.n - 1];
    /* 2. rebuild with the rewritten sources */
    srcs.n = 0;
    for (int i = 0; i < n->nsrc; i++) VEC_PUSH(srcs, (uop *)pm_get(&memo, n->src[i]));
    uop *x = uop_replace_src(n, srcs.v, n->nsrc);
    uop *done = NULL;
    if (x != n) {
      uop *mx = pm_get(&memo, x);
      if (mx == ACTIVE) rule_bug(last, x, "a rule cycle");
      if (mx) done = mx;
      else {
        VEC_PUSH(chain, n);
        pm_put(&memo, x, ACTIVE);
        f->n = x; f->i = 0;
        continue;   /* its sources are all final: step 1 finds them in memo */
      }
    } else {
      /* 3. rules, until none applies */
      int which = -1;
      uop *y = apply_rules(m, n, ctx, &which, NULL);
      if (!y) done = n;
      else {
        last = &m->rules[which];
        if (tracing) trace(tracing, m, last, n, y);
        if (viz) viz_pass_step(last->label, n, y);
        if (++f->nrw > MAX_REWRITES) rule_bug(last, n, "a node was rewritten more than 1000 times (a rule loop)");
        uop *my = pm_get(&memo, y);
        if (my == ACTIVE) rule_bug(last, y, "a rule rewrote a node back to one being rewritten (a rule cycle)");
        if (my) done = my;
        else {
          VEC_PUSH(chain, n);
          pm_put(&memo, y, ACTIVE);
          f->n = y; f->i = 0;
          continue;
        }
      }
    }
    /* 4. finished: the node and every intermediate map to the result */
    pm_put(&memo, f->n, done);
    for (int i = f->chain0; i < chain.n; i++) pm_put(&memo, chain.v[i], done);
    chain.n = f->chain0;
    st.n--;
    if (!st.n) result = done;
  }
  pm_free(&memo);
  VEC_FREE(st); VEC_FREE(chain); VEC_FREE(srcs);
  if (viz) viz_pass_end();
  return result;
}

/* ------------------------------------------------------------ graph_substitute */

uop *graph_substitute(uop *root, const void *mapp) {
  ptrmap memo = { 0 };
  uop *r = graph_substitute_memo(root, mapp, &memo);
  pm_free(&memo);
  return r;
}

uop *graph_substitute_memo(uop *root, const void *mapp, void *memop) {
  const ptrmap *map = mapp;
  ptrmap *memo = memop;
  if (!root) return NULL;
  if (!map || !map->n) return root;
  uop *done = pm_get(memo, root);
  if (done) return done;
  VEC(uop *) st = { 0 };
  VEC(int) idx = { 0 };
  VEC(uop *) srcs = { 0 };
  uop *result = NULL;
  uop *r0 = pm_get(map, root);
  if (r0) { return r0; }
  VEC_PUSH(st, root); VEC_PUSH(idx, 0);
  while (st.n) {
    uop *n = st.v[st.n - 1];
    int *i = &idx.v[idx.n - 1];
    bool pushed = false;
    while (*i < n->nsrc) {
      uop *s = n->src[*i];
      if (pm_get(memo, s)) { (*i)++; continue; }
      uop *rep = pm_get(map, s);
      if (rep) { pm_put(memo, s, rep); (*i)++; continue; }
      VEC_PUSH(st, s); VEC_PUSH(idx, 0);
      pushed = true;
      break;
    }
    if (pushed) continue;
    srcs.n = 0;
    for (int k = 0; k < n->nsrc; k++) VEC_PUSH(srcs, (uop *)pm_get(memo, n->src[k]));
    uop *x = uop_replace_src(n, srcs.v, n->nsrc);
    pm_put(memo, n, x);
    st.n--; idx.n--;
    if (!st.n) result = x;
  }
  VEC_FREE(st); VEC_FREE(idx); VEC_FREE(srcs);
  return result;
}

uop *graph_map(uop *root, uop *(*fn)(uop *u, void *ctx), void *ctx) {
  uop_list l = uop_toposort(root);
  ptrmap m = { 0 };
  uop *cur = root;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    uop *stack_src[16], **src = u->nsrc <= 16 ? stack_src : tg_xmalloc(sizeof(uop *) * (size_t)u->nsrc);
    for (int j = 0; j < u->nsrc; j++) { uop *x = pm_get(&m, u->src[j]); src[j] = x ? x : u->src[j]; }
    uop *nu = fn(uop_replace_src(u, src, u->nsrc), ctx);
    if (src != stack_src) free(src);
    if (nu != u) pm_put(&m, u, nu);
    if (i == l.n - 1) cur = nu;
  }
  free(l.v);
  pm_free(&m);
  return cur;
}
