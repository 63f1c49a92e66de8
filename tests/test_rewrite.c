/* test_rewrite.c: the pattern language, the matcher and graph_rewrite. */
#include "test.h"
#include "uop/rewrite.h"
#include "uop/uop.h"
#include "uop/uop_serial.h"
#include "util/util.h"

#define R(p, t) { .pattern = p, .replace = t }
#define F(p, f) { .pattern = p, .fn = f }
#define NRULES(a) ((int)(sizeof(a) / sizeof((a)[0])))

static uop *ci(int64_t v) { return uop_const_int(DT_I32, v); }
static uop *cf(double v) { return uop_const(DT_F32, v); }
static uop *ivar(const char *name) {
  uop *s[2] = { ci(0), ci(100) };
  return uop_new(OP_DEFINE_VAR, DT_I32, s, 2, arg_str(name));
}
static uop *fvar(const char *name) { return uop0(OP_DEFINE_GLOBAL, DT_F32, arg_str(name)); }
static uop *add(uop *a, uop *b) { return uop_alu(OP_ADD, a, b); }
static uop *mul(uop *a, uop *b) { return uop_alu(OP_MUL, a, b); }

TEST(rewrite_hash_consing) {
  int64_t live0 = uop_live_count();
  uop_pool_push();
  uop *x = ivar("x");
  uop *a = add(x, ci(3)), *b = add(x, ci(3));
  CHECK(a == b);
  CHECK(add(x, ci(4)) != a);
  CHECK(ci(7) == ci(7));
  CHECK(uop_live_count() > live0);
  uop_pool_pop();
  CHECK_EQ_INT(uop_live_count(), live0);
}

/* A graph's text reads back as the same nodes (hash-consed: the same
 * pointer), floats to the bit; every cut-off prefix of the text and a
 * pointer argument give no graph rather than a wrong one. */
TEST(rewrite_serialize_roundtrip) {
  int64_t live0 = uop_live_count();
  uop_pool_push();
  uop *x = ivar("x");
  int64_t shape[3] = { 2, -5, 7 };
  uop *f = uop_alu(OP_MUL, uop_const(DT_F32, 0.1), uop_cast(x, DT_F32));
  uop *g = uop1(OP_NOOP, DT_VOID, uop2(OP_ADD, DT_F32, f, uop_const(DT_F32, -1e-30), arg_none()), arg_ints(shape, 3));
  strbuf sb = { 0 };
  CHECK(uop_serialize(&sb, g));
  CHECK(uop_deserialize(sb.s, sb.n) == g);
  int whole = 0;
  for (size_t cut = 0; cut < sb.n; cut++) {
    uop *r = uop_deserialize(sb.s, cut);
    CHECK(r == NULL || r != g);
    whole += r != NULL;
  }
  CHECK_MSG(whole < (int)sb.n / 4, "%d prefixes parsed as graphs", whole);
  sb_free(&sb);
  strbuf bad = { 0 };
  CHECK(!uop_serialize(&bad, uop0(OP_NOOP, DT_VOID, arg_ptr(&bad))));
  sb_free(&bad);
  CHECK(uop_deserialize("999 0 0 0\n", 10) == NULL);
  CHECK(uop_deserialize("0 0 1 5 0\n", 10) == NULL);   /* a source that does not exist */
  uop_pool_pop();
  CHECK_EQ_INT(uop_live_count(), live0);
}

TEST(rewrite_match_commutative) {
  static const tg_rule rules[] = { R("(ADD x 0)", "x"), R("(SUB x 0)", "x") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x");
  CHECK(matcher_apply(m, add(x, ci(0)), NULL) == x);
  CHECK(matcher_apply(m, add(ci(0), x), NULL) == x);            /* both orders */
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, ci(0)), NULL) == x);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, ci(0), x), NULL) == NULL);   /* SUB is not commutative */
  CHECK(matcher_apply(m, add(x, ci(1)), NULL) == NULL);
  CHECK(matcher_apply(m, mul(x, ci(0)), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_op_sets_and_groups) {
  static const tg_rule r2[] = { R("({ADD,MUL} x 0)", "x"), R("({CMP} a b)", "a") };
  tg_matcher *m = matcher_new(r2, NRULES(r2));
  uop_pool_push();
  uop *x = ivar("x");
  CHECK(matcher_apply(m, add(x, ci(0)), NULL) == x);
  CHECK(matcher_apply(m, mul(ci(0), x), NULL) == x);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, ci(0)), NULL) == NULL);
  CHECK(matcher_apply(m, uop_alu(OP_CMPLT, x, ci(5)), NULL) == x);
  CHECK(matcher_apply(m, uop_alu(OP_CMPNE, x, ci(5)), NULL) == x);
  CHECK(matcher_apply(m, uop_alu(OP_MAX, x, ci(5)), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

/* "!OP" and "!GROUP" take ops out of a set; a set of exclusions only is
 * every other op. */
TEST(rewrite_op_set_exclusions) {
  static const tg_rule rules[] = { R("({ALU,!CAST,!CMP} x ...)", "x"), R("({!ALU,!DEFINE_VAR} x ...)", "x") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x");
  CHECK(matcher_apply(m, add(x, ci(1)), NULL) == x);
  CHECK(matcher_apply(m, uop_alu1(OP_NEG, x), NULL) == x);
  CHECK(matcher_apply(m, uop_cast(x, DT_I64), NULL) == NULL);
  CHECK(matcher_apply(m, uop_alu(OP_CMPLT, x, ci(5)), NULL) == NULL);
  CHECK(matcher_apply(m, x, NULL) == NULL);   /* DEFINE_VAR: taken out */
  uop *s = uop1(OP_SINK, DT_VOID, x, arg_none());
  CHECK(matcher_apply(m, s, NULL) == x);
  uop_pool_pop();
  matcher_free(m);
}

/* .small: the storage floats (f16, bf16, fp8), not f32 or ints. */
TEST(rewrite_small_float_filter) {
  static const tg_rule rules[] = { R("(ADD.small x y)", "x"), R("(MUL x.small y)", "y") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *f = fvar("f"), *x = ivar("x");
  dtype_t smalls[4] = { dt_scalar(TG_F16), dt_scalar(TG_BF16), dt_scalar(TG_FP8E4M3), dt_scalar(TG_FP8E5M2) };
  for (int i = 0; i < 4; i++) {
    uop *h = uop_cast(f, smalls[i]), *one = uop_const(smalls[i], 1);
    CHECK(matcher_apply(m, add(h, one), NULL) == h);
    CHECK(matcher_apply(m, mul(h, one), NULL) == one);
  }
  CHECK(matcher_apply(m, add(f, cf(1)), NULL) == NULL);
  CHECK(matcher_apply(m, mul(f, cf(2)), NULL) == NULL);
  CHECK(matcher_apply(m, add(x, ci(1)), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

/* A guard decides after the pattern matched: false goes on with the other
 * binding (commutative order) and the next rule, for templates too. */
static bool guard_a_is_const(void *ctx, const rw_match *m) {
  (void)ctx;
  return rw_get(m, "a")->op == OP_CONST;
}
static int n_guarded_calls;
static uop *guarded_fn(void *ctx, const rw_match *m) {
  (void)ctx;
  n_guarded_calls++;
  return rw_get(m, "b");
}
TEST(rewrite_guards) {
  static const tg_rule rules[] = {
    { .pattern = "(ADD a b)", .replace = "(MUL b a)", .guard = guard_a_is_const },
    { .pattern = "(SUB a b)", .fn = guarded_fn, .guard = guard_a_is_const },
    R("(SUB a b)", "a"),
  };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x"), *y = ivar("y");
  CHECK(matcher_apply(m, add(x, ci(3)), NULL) == mul(x, ci(3)));   /* the second order passes the guard */
  CHECK(matcher_apply(m, add(x, y), NULL) == NULL);
  n_guarded_calls = 0;
  CHECK(matcher_apply(m, uop_alu(OP_SUB, ci(3), x), NULL) == x);
  CHECK_EQ_INT(n_guarded_calls, 1);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, y), NULL) == x);   /* guard false: the next rule */
  CHECK_EQ_INT(n_guarded_calls, 1);
  uop_pool_pop();
  matcher_free(m);
}

/* Match-only rules (no template, no callback; the renderers' code rules):
 * matcher_match gives the first rule whose pattern and guard accept the
 * node, with its bindings (after a commutative swap too); they never fire
 * in a rewrite. */
TEST(rewrite_match_only) {
  static const tg_rule rules[] = {
    { .pattern = "(ADD a b)", .guard = guard_a_is_const },
    { .pattern = "(ADD.float a b)" },
    { .pattern = "(MUL x (ADD y z))" },
    R("(SUB a b)", "a"),
  };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x"), *y = ivar("y"), *f = fvar("f");
  rw_match mt;
  CHECK_EQ_INT(matcher_match(m, add(x, ci(3)), NULL, &mt), 0);   /* the guard passes once a is the CONST */
  CHECK(mt.root == add(x, ci(3)) && rw_get(&mt, "a") == ci(3) && rw_get(&mt, "b") == x);
  CHECK_EQ_INT(matcher_match(m, add(x, y), NULL, &mt), -1);
  uop *g = fvar("g");
  CHECK_EQ_INT(matcher_match(m, add(f, g), NULL, &mt), 1);   /* rule 0's guard fails both orders */
  CHECK(rw_get(&mt, "a") == f && rw_get(&mt, "b") == g);
  uop *e = mul(add(x, y), x);   /* commutative MUL: x binds the second source */
  CHECK_EQ_INT(matcher_match(m, e, NULL, &mt), 2);
  CHECK(rw_get(&mt, "x") == x && rw_get(&mt, "y") == x && rw_get(&mt, "z") == y);
  CHECK_EQ_INT(matcher_match(m, uop_alu(OP_SUB, x, y), NULL, &mt), 3);   /* a rewriting rule matches too */
  CHECK_EQ_INT(matcher_match(m, NULL, NULL, &mt), -1);
  /* rewriting: match-only rules decline */
  CHECK(matcher_apply(m, add(ci(1), x), NULL) == NULL);
  CHECK(graph_rewrite(e, m, NULL) == e);
  CHECK(graph_rewrite(uop_alu(OP_SUB, e, y), m, NULL) == e);
  uop_pool_pop();
  matcher_free(m);
}

/* matcher_once compiles a static table once; matcher_rewrite_node is
 * matcher_apply (with tracing). */
TEST(rewrite_matcher_once) {
  static const tg_rule rules[] = { R("(ADD x 0)", "x") };
  static tg_matcher *slot;
  const tg_matcher *m = matcher_once(&slot, rules, RW_NRULES(rules), "test pass");
  CHECK(m == slot);
  CHECK(matcher_once(&slot, rules, RW_NRULES(rules), "test pass") == m);
  uop_pool_push();
  uop *x = ivar("x");
  rw_pass p = matcher_pass_begin(m);
  CHECK(matcher_rewrite_node(m, &p, add(x, ci(0)), NULL) == x);
  CHECK(matcher_rewrite_node(m, &p, add(x, ci(1)), NULL) == NULL);
  matcher_pass_end(&p);
  uop_pool_pop();
}

static int n_alu_calls;
static uop *count_alu(void *ctx, const rw_match *m) {
  (void)ctx;
  CHECK(rw_get(m, "n") == m->root);
  n_alu_calls++;
  return NULL;
}

TEST(rewrite_group_alu) {
  static const tg_rule rules[] = { F("n:{ALU}", count_alu) };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x");
  n_alu_calls = 0;
  CHECK(matcher_apply(m, add(x, ci(1)), NULL) == NULL);
  CHECK(matcher_apply(m, x, NULL) == NULL);
  CHECK(matcher_apply(m, uop_where(uop_alu(OP_CMPLT, x, ci(1)), x, x), NULL) == NULL);
  CHECK_EQ_INT(n_alu_calls, 2);
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_dtype_filters) {
  static const tg_rule rules[] = {
    R("(ADD x.float y)", "y"),
    R("(MUL.i32 x 2)", "x"),
    R("(MUL.sint x 3)", "x"),
    R("(MUL x.uint 4)", "x"),
    R("(SUB x:DEFINE_VAR.int y)", "y"),
  };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x"), *f = fvar("f");
  uop *u = uop_cast(x, DT_U32), *l = uop_cast(x, DT_I64);
  CHECK(matcher_apply(m, add(f, cf(1)), NULL) != NULL);
  CHECK(matcher_apply(m, add(x, ci(1)), NULL) == NULL);
  CHECK(matcher_apply(m, mul(x, ci(2)), NULL) == x);
  CHECK(matcher_apply(m, mul(l, uop_const_int(DT_I64, 2)), NULL) == NULL);
  CHECK(matcher_apply(m, mul(l, uop_const_int(DT_I64, 3)), NULL) == l);
  CHECK(matcher_apply(m, mul(u, uop_const_int(DT_U32, 3)), NULL) == NULL);
  CHECK(matcher_apply(m, mul(u, uop_const_int(DT_U32, 4)), NULL) == u);
  CHECK(matcher_apply(m, mul(x, ci(4)), NULL) == NULL);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, ci(4)), NULL) == ci(4));
  CHECK(matcher_apply(m, uop_alu(OP_SUB, add(x, x), ci(4)), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_literals) {
  static const tg_rule rules[] = { R("(ADD x -0.0)", "x"), R("(MUL x 1.5)", "x"), R("(SUB x -3)", "x") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *f = fvar("f"), *x = ivar("x");
  CHECK(matcher_apply(m, add(f, cf(-0.0)), NULL) == f);
  CHECK(matcher_apply(m, add(f, cf(0.0)), NULL) == NULL);   /* the sign of zero matters */
  CHECK(matcher_apply(m, mul(f, cf(1.5)), NULL) == f);
  CHECK(matcher_apply(m, mul(f, cf(1.25)), NULL) == NULL);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, ci(-3)), NULL) == x);
  CHECK(matcher_apply(m, uop_alu(OP_SUB, x, ci(3)), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_same_name) {
  static const tg_rule rules[] = { R("(ADD x x)", "(MUL x 2)") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x"), *y = ivar("y");
  uop *r = matcher_apply(m, add(x, x), NULL);
  CHECK(r == mul(x, ci(2)));
  CHECK(r && r->src[1]->dtype.scalar == TG_I32);
  CHECK(matcher_apply(m, add(x, y), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

static uop *first_src(void *ctx, const rw_match *m) { (void)ctx; return rw_get(m, "x"); }

TEST(rewrite_ellipsis) {
  static const tg_rule rules[] = { F("(SINK x ...)", first_src) };
  static const tg_rule exact[] = { F("(SINK x)", first_src) };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  tg_matcher *e = matcher_new(exact, NRULES(exact));
  uop_pool_push();
  uop *a = ivar("a"), *b = ivar("b"), *c = ivar("c");
  uop *s3[3] = { a, b, c };
  CHECK(matcher_apply(m, uop1(OP_SINK, DT_VOID, a, arg_none()), NULL) == a);
  CHECK(matcher_apply(m, uop_new(OP_SINK, DT_VOID, s3, 3, arg_none()), NULL) == a);
  CHECK(matcher_apply(m, uop0(OP_SINK, DT_VOID, arg_none()), NULL) == NULL);
  CHECK(matcher_apply(e, uop1(OP_SINK, DT_VOID, a, arg_none()), NULL) == a);
  CHECK(matcher_apply(e, uop_new(OP_SINK, DT_VOID, s3, 3, arg_none()), NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
  matcher_free(e);
}

static uop *check_binds(void *ctx, const rw_match *m) {
  uop *n = rw_get(m, "n"), *a = rw_get(m, "a"), *b = rw_get(m, "b"), *c = rw_get(m, "c");
  CHECK(n == m->root);
  CHECK(n && n->op == OP_ADD);
  CHECK(b && b->op == OP_CONST && c && c->op == OP_CONST);
  CHECK(rw_get(m, "zzz") == NULL);
  *(int *)ctx += 1;
  return a;
}

TEST(rewrite_callback_bindings) {
  static const tg_rule rules[] = { F("(ADD@n (MUL a b:CONST) c:CONST)", check_binds) };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x");
  int calls = 0;
  CHECK(matcher_apply(m, add(ci(1), mul(x, ci(3))), &calls) == x);
  CHECK(matcher_apply(m, add(mul(ci(3), x), ci(1)), &calls) == x);
  CHECK(matcher_apply(m, add(mul(x, x), ci(1)), &calls) == NULL);
  CHECK_EQ_INT(calls, 2);
  uop_pool_pop();
  matcher_free(m);
}

static int decline_calls;
static uop *only_const_first(void *ctx, const rw_match *m) {
  (void)ctx;
  decline_calls++;
  uop *x = rw_get(m, "x");
  return x->op == OP_CONST ? rw_get(m, "y") : NULL;
}

TEST(rewrite_backtracking) {
  /* nested commutative: the inner order must change for the outer x to agree */
  static const tg_rule rules[] = { R("(ADD (MUL x y) x)", "y") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  /* a callback that declines one binding order gets the other */
  static const tg_rule dec[] = { F("(ADD x y)", only_const_first) };
  tg_matcher *d = matcher_new(dec, NRULES(dec));
  uop_pool_push();
  uop *a = ivar("a"), *b = ivar("b");
  CHECK(matcher_apply(m, add(mul(a, b), b), NULL) == a);
  CHECK(matcher_apply(m, add(mul(a, b), a), NULL) == b);
  CHECK(matcher_apply(m, add(b, mul(a, b)), NULL) == a);
  CHECK(matcher_apply(m, add(mul(a, a), b), NULL) == NULL);
  decline_calls = 0;
  CHECK(matcher_apply(d, add(a, ci(5)), NULL) == a);
  CHECK_EQ_INT(decline_calls, 2);
  decline_calls = 0;
  CHECK(matcher_apply(d, add(a, b), NULL) == NULL);
  CHECK_EQ_INT(decline_calls, 2);
  uop_pool_pop();
  matcher_free(m);
  matcher_free(d);
}

TEST(rewrite_templates) {
  static const tg_rule rules[] = {
    R("(NEG x.int)", "(CMPLT x 3)"),
    R("(SQRT x.f32)", "1.5"),
    R("(MAX c a.int)", "(WHERE c 7 a)"),
    R("(TRUNC x)", "(ADD.f32 1 2)"),
  };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *x = ivar("x"), *f = fvar("f");
  uop *r = matcher_apply(m, uop_alu1(OP_NEG, x), NULL);
  CHECK(r && r->op == OP_CMPLT && r->dtype.scalar == TG_BOOL);
  CHECK(r && r->src[0] == x && r->src[1] == ci(3));
  r = matcher_apply(m, uop_alu1(OP_SQRT, f), NULL);
  CHECK(r == cf(1.5));
  uop *c = uop_alu(OP_CMPLT, x, ci(1));
  r = matcher_apply(m, uop2(OP_MAX, DT_I32, c, x, arg_none()), NULL);   /* ill-typed, but a fine test */
  CHECK(r && r->op == OP_WHERE && r->dtype.scalar == TG_I32 && r->src[1] == ci(7) && r->src[2] == x);
  r = matcher_apply(m, uop_alu1(OP_TRUNC, f), NULL);
  CHECK(r && r->op == OP_ADD && r->dtype.scalar == TG_F32 && r->src[0] == cf(1));
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_fixed_point) {
  static const tg_rule rules[] = {
    R("(SUB x y)", "(ADD x (NEG y))"),
    R("(NEG (NEG x))", "x"),
    R("(ADD x 0)", "x"),
  };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *a = ivar("a"), *b = ivar("b");
  uop *e = a;
  for (int i = 0; i < 6; i++) e = uop_alu1(OP_NEG, e);
  CHECK(graph_rewrite(add(e, ci(0)), m, NULL) == a);
  /* the replacement has new sources that need rewriting too */
  uop *s = uop_alu(OP_SUB, a, uop_alu1(OP_NEG, b));
  CHECK(graph_rewrite(s, m, NULL) == add(a, b));
  uop *t = mul(uop_alu(OP_SUB, a, uop_alu1(OP_NEG, add(b, ci(0)))), ci(0));
  CHECK(graph_rewrite(t, m, NULL) == mul(add(a, b), ci(0)));
  CHECK(graph_rewrite(a, m, NULL) == a);
  CHECK(graph_rewrite(NULL, m, NULL) == NULL);
  uop_pool_pop();
  matcher_free(m);
}

static int visits;
static uop *count_visit(void *ctx, const rw_match *m) { (void)ctx; (void)m; visits++; return NULL; }

TEST(rewrite_memo_dag) {
  static const tg_rule rules[] = { F("x", count_visit) };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  uop_pool_push();
  uop *a = ivar("a");
  uop *e = a;
  /* a diamond chain: 2^40 paths, 40*2 + few nodes */
  for (int i = 0; i < 40; i++) e = add(mul(e, ci(2)), e);
  uop_list l = uop_toposort(e);
  visits = 0;
  CHECK(graph_rewrite(e, m, NULL) == e);
  CHECK_EQ_INT(visits, l.n);
  free(l.v);
  uop_pool_pop();
  matcher_free(m);
}

TEST(rewrite_deep_chain) {
  static const tg_rule rules[] = { R("(ADD x 0)", "x"), R("(MUL x 1)", "x") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  int64_t live0 = uop_live_count();
  uop_pool_push();
  uop *a = ivar("a");
  uop *e = a, *want = a;
  const int n = 100000;
  for (int i = 0; i < n; i++) {
    uop *v = ci(i % 7 + 1);
    e = add(mul(add(e, ci(0)), ci(1)), v);
    want = add(want, v);
  }
  CHECK(graph_rewrite(e, m, NULL) == want);
  CHECK(graph_rewrite(want, m, NULL) == want);
  /* substitute the leaf at the bottom of the chain */
  ptrmap map = { 0 };
  uop *b = ivar("b");
  pm_put(&map, a, b);
  uop *sub = graph_substitute(want, &map);
  CHECK(sub != want && sub->src[1] == want->src[1]);
  uop *s = sub;
  for (int i = 0; i < n; i++) s = s->src[0];
  CHECK(s == b);
  pm_free(&map);
  uop_pool_pop();
  CHECK_EQ_INT(uop_live_count(), live0);
  matcher_free(m);
}

TEST(rewrite_substitute) {
  uop_pool_push();
  uop *a = ivar("a"), *b = ivar("b"), *c = ivar("c");
  uop *left = mul(a, ci(2));
  uop *e = add(add(left, b), mul(b, ci(3)));
  ptrmap map = { 0 };
  pm_put(&map, a, c);
  CHECK(graph_substitute(e, &map) == add(add(mul(c, ci(2)), b), mul(b, ci(3))));
  /* a key's value is taken as is, and keys inside other keys are not reached */
  pm_put(&map, left, a);
  CHECK(graph_substitute(e, &map) == add(add(a, b), mul(b, ci(3))));
  ptrmap root = { 0 };
  pm_put(&root, e, c);
  CHECK(graph_substitute(e, &root) == c);
  ptrmap none = { 0 };
  CHECK(graph_substitute(e, &none) == e);
  pm_free(&map); pm_free(&root);
  uop_pool_pop();
}

static uop *ret1(void *ctx, const rw_match *m) { (void)ctx; (void)m; return ci(1); }
static uop *ret2(void *ctx, const rw_match *m) { (void)ctx; (void)m; return ci(2); }

TEST(rewrite_concat) {
  static const tg_rule ra[] = { F("(NEG x)", ret1), R("(ADD x 0)", "x") };
  static const tg_rule rb[] = { F("(NEG x)", ret2), R("(MUL x 1)", "x") };
  tg_matcher *a = matcher_new(ra, NRULES(ra)), *b = matcher_new(rb, NRULES(rb));
  tg_matcher *ab = matcher_concat(a, b), *ba = matcher_concat(b, a);
  uop_pool_push();
  uop *x = ivar("x");
  CHECK(matcher_apply(ab, uop_alu1(OP_NEG, x), NULL) == ci(1));
  CHECK(matcher_apply(ba, uop_alu1(OP_NEG, x), NULL) == ci(2));
  CHECK(graph_rewrite(mul(add(x, ci(0)), ci(1)), ab, NULL) == x);
  CHECK(graph_rewrite(mul(add(x, ci(0)), ci(1)), a, NULL) == mul(x, ci(1)));
  uop_pool_pop();
  matcher_free(ab); matcher_free(ba); matcher_free(a); matcher_free(b);
}

TEST(rewrite_no_leak) {
  static const tg_rule rules[] = { R("(SUB x y)", "(ADD x (NEG y))"), R("(NEG (NEG x))", "x") };
  tg_matcher *m = matcher_new(rules, NRULES(rules));
  int64_t live0 = uop_live_count();
  uop_pool_push();
  uop *a = ivar("a"), *b = ivar("b");
  uop *e = a;
  for (int i = 0; i < 100; i++) e = uop_alu(OP_SUB, e, uop_alu1(OP_NEG, i % 2 ? a : b));
  uop *r = graph_rewrite(e, m, NULL);
  uop_retain(r);   /* kept past the pool */
  uop_pool_pop();
  CHECK(uop_live_count() > live0);
  uop_release(r);
  CHECK_EQ_INT(uop_live_count(), live0);
  matcher_free(m);
}
