/* code_for_op.c: the code of each ALU node, as rules (tinygrad's
 * code_for_op, the renderer's string_rewrite). A rule is a pattern in
 * rewrite.h's language and the expression the node becomes, "{a}" standing
 * for the code of the node bound to a; a rule whose code needs more (a
 * type name, a flag for the prelude) names a function instead.
 *
 * A node's code comes from the first rule that matches it: its dialect's
 * tables first (cstyle.h: the dialect's bit casts, libm's float names, ...),
 * then the core's below, which every C-style dialect shares, and last C's
 * infix operators. Vector nodes (lanes, byte dot products) match their
 * dialect's vector table and then the infix operators, with operands
 * spelled by the dialect (broadcast to vectors); a dialect without a vector
 * table cannot render them. Each dialect's rules are compiled once, on
 * first use, into matchers named "render <dialect>" and "render <dialect>
 * vectors", so TRACK_REWRITES=1 prints the rule behind every expression.
 * The rules are match-only (rewrite.h's matcher_match): the pattern
 * language matches, the code is text. */
#include <pthread.h>
#include "renderer/cstyle.h"

/* ---- the core's rules */

static bool positive_divisor(void *ctx, const rw_match *m) { return uop_const_value(m->root->src[1]) > 0; }

static const char *S(rctx *c, const rw_match *m, int i) { return rname(c, m->root->src[i]); }

/* x/0 is 0, and MIN/-1 wraps to MIN (through unsigned) like the other ops */
static char *idiv_signed(rctx *c, const rw_match *m) {
  const char *a = S(c, m, 0), *b = S(c, m, 1);
  return rfmt("(%s==0?0:%s==-1?(%s)(0%s-(%s)%s):%s/%s)", b, b, rctype(c, m->root->dtype), c->d->u64_suffix, c->d->scalar_type[TG_U64], a, a, b);
}

static char *threefry(rctx *c, const rw_match *m) {
  c->need_threefry = true;
  return rfmt("tg_threefry(%s,%s)", S(c, m, 0), S(c, m, 1));
}

/* small floats (bit patterns) convert through the prelude's helpers */
static char *cast(rctx *c, const rw_match *m) {
  const char *x = S(c, m, 0);
  dtype_t from = m->root->src[0]->dtype, to = m->root->dtype;
  const char *fs = rsmall_tag(from), *ts = rsmall_tag(to);
  if (fs || ts) c->need_fpconv = true;
  if (fs && ts) return rfmt("tg_cvt_f32_%s(tg_cvt_%s_f32(%s))", ts, fs, x);
  if (fs) return rfmt("((%s)tg_cvt_%s_f32(%s))", rctype(c, to), fs, x);
  if (ts) return from.scalar == TG_F32 ? rfmt("tg_cvt_f32_%s(%s)", ts, x) : rfmt("tg_cvt_f64_%s((double)%s)", ts, x);
  return rfmt("((%s)%s)", rctype(c, to), x);
}

/* one lane of a vector */
static char *gep(rctx *c, const rw_match *m) { return rfmt("%s[%lld]", S(c, m, 0), (long long)m->root->arg.i); }

#define R(p, c) { .pattern = p, .code = c }
#define F(p, f) { .pattern = p, .fn = f }

/* C's infix operators, the same on scalars and on gcc/clang vectors: the
 * last table of both passes */
static const render_rule infix_rules[] = {
  R("(ADD a b)", "({a}+{b})"),
  R("(SUB a b)", "({a}-{b})"),
  R("(MUL a b)", "({a}*{b})"),
  R("(FDIV a b)", "({a}/{b})"),
  R("(NEG a)", "(-{a})"),
  R("(CMPLT a b)", "({a}<{b})"),
  R("(CMPNE a b)", "({a}!={b})"),
  R("(CMPEQ a b)", "({a}=={b})"),
  R("(AND a b)", "({a}&{b})"),
  R("(OR a b)", "({a}|{b})"),
  R("(XOR a b)", "({a}^{b})"),
  R("(SHL a b)", "({a}<<{b})"),
  R("(SHR a b)", "({a}>>{b})"),
};
static const render_table infix_table = RENDER_TABLE(infix_rules);

/* Scalars in every C-style dialect. libm's names are overloads here
 * (OpenCL C); C and CUDA C add cstyle_libm_f32 for float32's own names. */
static const render_rule core_rules[] = {
  /* integer division and remainder never trap: by 0 they give 0 */
  R("(IDIV.float a b)", "trunc({a}/{b})"),
  { .pattern = "(IDIV a b:CONST)", .code = "({a}/{b})", .guard = positive_divisor, .name = "(IDIV a b:CONST) b > 0" },
  R("(IDIV.uint a b)", "({b}==0?0:{a}/{b})"),
  F("(IDIV a b)", idiv_signed),
  R("(MOD.float a b)", "fmod({a},{b})"),
  { .pattern = "(MOD a b:CONST)", .code = "({a}%{b})", .guard = positive_divisor, .name = "(MOD a b:CONST) b > 0" },
  R("(MOD.uint a b)", "({b}==0?0:{a}%{b})"),
  R("(MOD a b)", "(({b}==0||{b}==-1)?0:{a}%{b})"),
  R("(MAX.float a b)", "(({a}!={a}||{a}>{b})?{a}:{b})"),   /* NaN propagates */
  R("(MAX a b)", "({a}>{b}?{a}:{b})"),
  R("(POW a b)", "pow({a},{b})"),
  F("(THREEFRY x key)", threefry),
  R("(NEG.bool a)", "(!{a})"),
  R("(EXP2 a)", "exp2({a})"),
  R("(LOG2 a)", "log2({a})"),
  R("(SIN a)", "sin({a})"),
  R("(SQRT a)", "sqrt({a})"),
  R("(TRUNC.float a)", "trunc({a})"),
  R("(TRUNC a)", "{a}"),
  R("(RECIPROCAL.f32 a)", "(1.0f/{a})"),
  R("(RECIPROCAL a)", "(1.0/{a})"),
  R("(WHERE c a b)", "({c}?{a}:{b})"),
  R("(MULACC a b c)", "(({a}*{b})+{c})"),
  F("(CAST x)", cast),
  F("(GEP v)", gep),
};
static const render_table core_table = RENDER_TABLE(core_rules);

static const render_rule libm_f32_rules[] = {
  R("(IDIV.f32 a b)", "truncf({a}/{b})"),
  R("(MOD.f32 a b)", "fmodf({a},{b})"),
  R("(POW.f32 a b)", "powf({a},{b})"),
  R("(EXP2.f32 a)", "exp2f({a})"),
  R("(LOG2.f32 a)", "log2f({a})"),
  R("(SIN.f32 a)", "sinf({a})"),
  R("(SQRT.f32 a)", "sqrtf({a})"),
  R("(TRUNC.f32 a)", "truncf({a})"),
};
const render_table cstyle_libm_f32 = RENDER_TABLE(libm_f32_rules);

/* ---- the pass */

/* A dialect's rules for scalar or vector nodes, compiled: the matcher, the
 * rule by the matcher's rule index, and how code spells operands (NULL:
 * by their names). */
typedef struct {
  tg_matcher *m;
  const render_rule **rule;
  char *(*operand)(rctx *c, uop *root, uop *x);
} code_pass;

static code_pass *compile_pass(const render_table *const *tables, int ntables, const char *name, char *(*operand)(rctx *, uop *, uop *)) {
  int n = 0;
  for (int t = 0; t < ntables; t++) n += tables[t]->n;
  if (!n) return NULL;
  code_pass *p = tg_xcalloc(1, sizeof *p);
  tg_rule *rules = tg_xcalloc((size_t)n, sizeof *rules);   /* kept with the matcher, for the process */
  p->rule = tg_xcalloc((size_t)n, sizeof *p->rule);
  p->operand = operand;
  int k = 0;
  for (int t = 0; t < ntables; t++)
    for (int i = 0; i < tables[t]->n; i++, k++) {
      const render_rule *r = &tables[t]->rules[i];
      if (!r->code == !r->fn) { fprintf(stderr, "tg: render rule \"%s\" needs code or a function (one of them)\n", r->pattern); abort(); }
      rules[k] = (tg_rule){ .pattern = r->pattern, .guard = r->guard, .name = r->name };
      p->rule[k] = r;
    }
  p->m = matcher_new(rules, n);
  matcher_set_name(p->m, name);
  return p;
}

/* the compiled passes of each dialect, [0] scalar and [1] vector nodes */
typedef struct { const render_dialect *d; code_pass *pass[2]; } dialect_passes;
static dialect_passes compiled[8];
static int ncompiled;

static const dialect_passes *passes_of(const render_dialect *d) {
  int n = __atomic_load_n(&ncompiled, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (compiled[i].d == d) return &compiled[i];
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  n = ncompiled;
  const dialect_passes *found = NULL;
  for (int i = 0; i < n && !found; i++)
    if (compiled[i].d == d) found = &compiled[i];
  if (!found) {
    if (n == (int)(sizeof compiled / sizeof compiled[0])) { fprintf(stderr, "tg: more render dialects than code_for_op.c holds\n"); abort(); }
    const render_table *scalar[RENDER_MAX_TABLES + 2];
    int ns = 0;
    for (int t = 0; t < RENDER_MAX_TABLES && d->code[t]; t++) scalar[ns++] = d->code[t];
    scalar[ns++] = &core_table;
    scalar[ns++] = &infix_table;
    const render_table *vector[2] = { d->vector_code, &infix_table };
    compiled[n].d = d;
    compiled[n].pass[0] = compile_pass(scalar, ns, rfmt("render %s", d->name), NULL);   /* names live with the matchers */
    compiled[n].pass[1] = d->vector_code ? compile_pass(vector, 2, rfmt("render %s vectors", d->name), d->vector_operand) : NULL;
    found = &compiled[n];
    __atomic_store_n(&ncompiled, n + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&lock);
  return found;
}

/* the rule's code with each {name} replaced by the code of its node (the
 * pass's operand spelling, or the node's name): the pieces first, then one
 * allocation */
static char *expand(rctx *c, const code_pass *pass, const render_rule *r, const rw_match *m) {
  enum { MAXP = 32 };
  const char *piece[MAXP];
  size_t len[MAXP], total = 0;
  int np = 0;
  for (const char *p = r->code; *p;) {
    if (np == MAXP) { fprintf(stderr, "tg: render rule \"%s\": code of more than %d pieces\n", r->pattern, MAXP); abort(); }
    /* "{name}"; other braces ("(float4){0}") are text */
    const char *close = p[0] == '{' && ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z') || p[1] == '_') ? strchr(p, '}') : NULL;
    if (!close) {
      len[np] = 1 + strcspn(p + 1, "{");
      piece[np] = p;
      p += len[np];
      total += len[np++];
      continue;
    }
    uop *x = NULL;
    size_t nl = (size_t)(close - p - 1);
    for (int i = 0; i < m->n && !x; i++)
      if (!strncmp(m->names[i], p + 1, nl) && !m->names[i][nl]) x = m->vals[i];
    if (!x) { fprintf(stderr, "tg: render rule \"%s\": %.*s is not bound by its pattern\n", r->pattern, (int)nl + 2, p); abort(); }
    piece[np] = pass->operand ? rtemp(c, pass->operand(c, m->root, x)) : rname(c, x);
    len[np] = strlen(piece[np]);
    total += len[np++];
    p = close + 1;
  }
  char *out = tg_xmalloc(total + 1), *o = out;
  for (int i = 0; i < np; i++) { memcpy(o, piece[i], len[i]); o += len[i]; }
  *o = 0;
  return out;
}

const char *rtemp(rctx *c, char *s) {
  if (c->ntemp == RCTX_TEMPS) { fprintf(stderr, "tg: render: more than %d operand strings for one node\n", RCTX_TEMPS); abort(); }
  return c->temp[c->ntemp++] = s;
}

char *render_code(rctx *c, uop *u) {
  const code_pass *p = passes_of(c->d)->pass[u->op == OP_DOT4 || u->dtype.count > 1];
  rw_match m;
  int k = p ? matcher_match(p->m, u, c, &m) : -1;
  if (k < 0) return NULL;
  const render_rule *r = p->rule[k];
  char *s = r->fn ? r->fn(c, &m) : expand(c, p, r, &m);
  for (int i = 0; i < c->ntemp; i++) free(c->temp[i]);
  c->ntemp = 0;
  if (s && c->tracing) matcher_trace_text(p->m, c->tracing, k, u, s);
  if (s && c->viz) matcher_viz_text(p->m, k, u, s);
  return s;
}

const char *render_pass_name(const render_dialect *d) {
  const code_pass *p = passes_of(d)->pass[0];
  return p ? matcher_name(p->m) : "render";
}
