/* autograd.c: reverse-mode gradients computed on the UOp graph, like
 * tinygrad's gradient.py. Every rule returns ordinary tensor-graph UOps, so a
 * backward pass is scheduled and fused like any other graph. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include "viz/viz.h"
#include "uop/rewrite.h"
#include "tensor/tensor.h"
#include "util/settings.h"

/* ---- small builders on tensor-graph UOps (shapes already consistent) */
static uop *cl(uop *like, double v) { return const_like(v, like->dtype, like->shape, like->ndim); }
static uop *add(uop *a, uop *b) { return uop_alu(OP_ADD, a, b); }
static uop *mul(uop *a, uop *b) { return uop_alu(OP_MUL, a, b); }
static uop *neg(uop *a) { return uop_alu1(OP_NEG, a); }

/* sum g over the axes where `to` has size 1 but g does not; keeps rank */
static uop *sum_to(uop *g, const uop *to) {
  int64_t arg[TG_MAX_DIMS * 4 + 1];
  int n = 0;
  arg[n++] = OP_ADD;
  for (int i = 0; i < g->ndim; i++) if (to->shape[i] == 1 && g->shape[i] != 1) arg[n++] = i;
  if (n == 1) return g;
  return uop1(OP_REDUCE_AXIS, g->dtype, g, arg_ints(arg, n));
}

/* The gradient of a sliding-window view: every window position (o, k) sends
 * its gradient back to input position o*stride + k*dilation. One term per
 * kernel offset k: the (o) slice placed by padding (stride 1) or spread
 * out first (stride > 1); the terms add up. */
static uop *window_grad(uop *u, uop *g) {
  uop *a = u->src[0];
  int n = (int)u->arg.v[0], lead = a->ndim - n;
  const int64_t *K = u->arg.v + 1, *S = u->arg.v + 1 + n, *D = u->arg.v + 1 + 2 * n;
  /* windows that tile the input without overlap (a 2x2 pool with stride 2):
   * each input element is in one window at most, so the gradient is g with
   * its (o, k) axes interleaved back into o*k + k, padded with zeros where
   * no window reached: movement only, no sum of gated terms */
  bool tiles = true;
  for (int j = 0; j < n; j++) tiles &= S[j] == K[j] && D[j] == 1;
  if (tiles) {
    int64_t order[TG_MAX_DIMS * 4] = { 0 }, shape[TG_MAX_DIMS * 4], pd[TG_MAX_DIMS * 8] = { 0 };
    for (int i = 0; i < lead; i++) order[i] = i;
    for (int j = 0; j < n; j++) { order[lead + 2 * j] = lead + j; order[lead + 2 * j + 1] = lead + n + j; }
    uop *x = mv_permute(g, order);
    for (int i = 0; i < lead; i++) shape[i] = g->shape[i];
    for (int j = 0; j < n; j++) {
      shape[lead + j] = g->shape[lead + j] * K[j];
      pd[2 * (lead + j) + 1] = a->shape[lead + j] - shape[lead + j];
    }
    x = mv_reshape(x, shape, lead + n);
    bool any = false;
    for (int j = 0; j < n; j++) any |= pd[2 * (lead + j) + 1] > 0;
    return any ? mv_pad(x, pd, 0) : x;
  }
  int64_t terms = 1;
  for (int j = 0; j < n; j++) terms *= K[j];
  uop *sum = NULL;
  for (int64_t t = 0; t < terms; t++) {
    int64_t kk[3], rem = t;
    for (int j = n - 1; j >= 0; j--) { kk[j] = rem % K[j]; rem /= K[j]; }
    int64_t st[TG_MAX_DIMS * 4], en[TG_MAX_DIMS * 4];
    for (int i = 0; i < g->ndim; i++) { st[i] = 0; en[i] = g->shape[i]; }
    for (int j = 0; j < n; j++) { st[lead + n + j] = kk[j]; en[lead + n + j] = kk[j] + 1; }
    uop *x = mv_reshape(mv_shrink(g, st, en), g->shape, lead + n);   /* (..., O) */
    for (int j = 0; j < n; j++) {
      int ax = lead + j;
      int64_t O = x->shape[ax], span = O;
      if (S[j] > 1) {
        /* spread: (O) -> (O, 1) -> pad to (O, s) -> (O*s) -> first (O-1)*s+1 */
        int64_t sh[TG_MAX_DIMS * 4], pd[TG_MAX_DIMS * 8] = { 0 };
        int m = 0;
        for (int i = 0; i < x->ndim; i++) { sh[m++] = x->shape[i]; if (i == ax) sh[m++] = 1; }
        uop *y = mv_reshape(x, sh, m);
        pd[2 * (ax + 1) + 1] = S[j] - 1;
        y = mv_pad(y, pd, 0);
        int64_t flat[TG_MAX_DIMS * 4];
        for (int i = 0; i < x->ndim; i++) flat[i] = i == ax ? O * S[j] : x->shape[i];
        y = mv_reshape(y, flat, x->ndim);
        span = (O - 1) * S[j] + 1;
        int64_t s2[TG_MAX_DIMS * 4], e2[TG_MAX_DIMS * 4];
        for (int i = 0; i < y->ndim; i++) { s2[i] = 0; e2[i] = i == ax ? span : y->shape[i]; }
        x = mv_shrink(y, s2, e2);
      }
      int64_t pd[TG_MAX_DIMS * 8] = { 0 };
      pd[2 * ax] = kk[j] * D[j];
      pd[2 * ax + 1] = a->shape[ax] - span - kk[j] * D[j];
      x = mv_pad(x, pd, 0);
    }
    sum = sum ? add(sum, x) : x;
  }
  return sum;
}

/* ---- the gradient rules (tinygrad's pm_gradient), one per op: the
 * gradients of u's sources given g = dL/du, in out[i] (left NULL for a
 * source that gets none). An op without a rule passes no gradient:
 * comparisons, bit ops, DETACH, ASSIGN, leaves. */
typedef void grad_fn(uop *u, uop *g, uop **out);
#define A (u->src[0])
#define B (u->src[1])

static void d_add(uop *u, uop *g, uop **o) { o[0] = g; o[1] = g; }
static void d_sub(uop *u, uop *g, uop **o) { o[0] = g; o[1] = neg(g); }
static void d_mul(uop *u, uop *g, uop **o) { o[0] = mul(g, B); o[1] = mul(g, A); }
static void d_fdiv(uop *u, uop *g, uop **o) { o[0] = uop_alu(OP_FDIV, g, B); o[1] = neg(uop_alu(OP_FDIV, mul(g, A), mul(B, B))); }
static void d_neg(uop *u, uop *g, uop **o) { o[0] = neg(g); }
static void d_exp2(uop *u, uop *g, uop **o) { o[0] = mul(g, mul(u, cl(u, M_LN2))); }
static void d_log2(uop *u, uop *g, uop **o) { o[0] = uop_alu(OP_FDIV, g, mul(A, cl(A, M_LN2))); }
static void d_sin(uop *u, uop *g, uop **o) { o[0] = mul(g, uop_alu1(OP_SIN, uop_alu(OP_SUB, cl(A, M_PI / 2), A))); }
static void d_sqrt(uop *u, uop *g, uop **o) { o[0] = uop_alu(OP_FDIV, g, mul(u, cl(u, 2))); }
static void d_reciprocal(uop *u, uop *g, uop **o) { o[0] = neg(mul(g, mul(u, u))); }
static void d_cast(uop *u, uop *g, uop **o) { if (dt_is_float(A->dtype)) o[0] = uop_cast(g, A->dtype); }
static void d_trunc(uop *u, uop *g, uop **o) { o[0] = cl(A, 0); }
static void d_identity(uop *u, uop *g, uop **o) { o[0] = g; }
static void d_reshape(uop *u, uop *g, uop **o) { o[0] = mv_reshape(g, A->shape, A->ndim); }
static void d_expand(uop *u, uop *g, uop **o) { o[0] = sum_to(g, A); }
static void d_flip(uop *u, uop *g, uop **o) { o[0] = uop1(OP_FLIP, g->dtype, g, u->arg); }
static void d_shrink_var(uop *u, uop *g, uop **o) { o[0] = uop2(OP_UNSHRINK_VAR, g->dtype, g, B, u->arg); }
static void d_unshrink_var(uop *u, uop *g, uop **o) { o[0] = uop2(OP_SHRINK_VAR, g->dtype, g, B, u->arg); }
static void d_window(uop *u, uop *g, uop **o) { o[0] = window_grad(u, g); }

/* ties share the gradient, like PyTorch's maximum */
static void d_max(uop *u, uop *g, uop **o) {
  uop *half = mul(g, cl(g, 0.5)), *zero = cl(g, 0), *ne = uop_alu(OP_CMPNE, A, B);
  o[0] = uop_where(uop_alu(OP_CMPLT, B, A), g, uop_where(ne, zero, half));
  o[1] = uop_where(uop_alu(OP_CMPLT, A, B), g, uop_where(ne, zero, half));
}
static void d_where(uop *u, uop *g, uop **o) {
  uop *zero = cl(g, 0);
  o[1] = uop_where(A, g, zero);
  o[2] = uop_where(A, zero, g);
}
static void d_permute(uop *u, uop *g, uop **o) {
  int64_t inv[TG_MAX_DIMS * 4];
  for (int i = 0; i < u->ndim; i++) inv[u->arg.v[i]] = i;
  o[0] = mv_permute(g, inv);
}
static void d_pad(uop *u, uop *g, uop **o) {
  int64_t sh[TG_MAX_DIMS * 8];
  for (int i = 0; i < A->ndim; i++) { sh[2 * i] = u->arg.v[2 * i]; sh[2 * i + 1] = u->arg.v[2 * i] + A->shape[i]; }
  o[0] = uop1(OP_SHRINK, g->dtype, g, arg_ints(sh, 2 * A->ndim));
}
static void d_shrink(uop *u, uop *g, uop **o) {
  int64_t pd[TG_MAX_DIMS * 8];
  for (int i = 0; i < A->ndim; i++) { pd[2 * i] = u->arg.v[2 * i]; pd[2 * i + 1] = A->shape[i] - u->arg.v[2 * i + 1]; }
  o[0] = uop1(OP_PAD, g->dtype, g, arg_ints(pd, 2 * A->ndim));
}

/* u's reduce arg with the reduce op replaced (the same axes) */
static uop *reduce_like(uop *u, uop_op rop, uop *x) {
  int64_t arg[TG_MAX_DIMS + 1];
  for (int i = 0; i < u->arg.n; i++) arg[i] = u->arg.v[i];
  arg[0] = rop;
  return uop1(OP_REDUCE_AXIS, x->dtype, x, arg_ints(arg, u->arg.n));
}
static void d_reduce(uop *u, uop *g, uop **o) {
  uop *a = A, *ge = mv_expand(g, a->shape, a->ndim);
  uop_op rop = (uop_op)u->arg.v[0];
  if (rop == OP_ADD) o[0] = ge;
  else if (rop == OP_MAX) {
    /* split among the maxima, like tinygrad */
    uop *mask = uop_cast(uop_alu(OP_CMPEQ, a, mv_expand(u, a->shape, a->ndim)), a->dtype);
    o[0] = uop_alu(OP_FDIV, mul(mask, ge), mv_expand(reduce_like(u, OP_ADD, mask), a->shape, a->ndim));
  } else if (rop == OP_MUL) {
    /* d prod / d x_i = product of the others: prod / x_i where x_i != 0;
     * at a zero, the product of the non-zeros if it is the only zero */
    uop *zero = cl(a, 0), *one = cl(a, 1);
    uop *isz = uop_alu(OP_CMPEQ, a, zero);
    uop *prod_nz = mv_expand(reduce_like(u, OP_MUL, uop_where(isz, one, a)), a->shape, a->ndim);
    uop *zc = mv_expand(reduce_like(u, OP_ADD, uop_cast(isz, a->dtype)), a->shape, a->ndim);
    uop *at_zero = uop_where(uop_alu(OP_CMPEQ, zc, one), prod_nz, zero);
    uop *others = uop_where(isz, at_zero, uop_alu(OP_FDIV, mv_expand(u, a->shape, a->ndim), uop_where(isz, one, a)));
    o[0] = mul(ge, others);
  }
}
#undef A
#undef B

/* The rules as data (tinygrad's pm_gradient): a pattern on the node, read
 * as the algebra, the function that builds its sources' gradients, and the
 * formula, which names the rule in TRACK_REWRITES and VIZ (pass
 * "gradient"). The patterns are match-only rules: matcher_match picks the
 * first that accepts the node, and a node no pattern accepts passes no
 * gradient (comparisons, bit ops, DETACH, ASSIGN, a cast from an integer). */
#define GRAD_RULES(X) \
  X("(ADD a b)", d_add, "d(a+b) = g, g") \
  X("(SUB a b)", d_sub, "d(a-b) = g, -g") \
  X("(MUL a b)", d_mul, "d(a*b) = g*b, g*a") \
  X("(FDIV a b)", d_fdiv, "d(a/b) = g/b, -g*a/b^2") \
  X("(NEG a)", d_neg, "d(-a) = -g") \
  X("(EXP2 a)", d_exp2, "d(2^a) = g*2^a*ln2") \
  X("(LOG2 a)", d_log2, "d(log2 a) = g/(a*ln2)") \
  X("(SIN a)", d_sin, "d(sin a) = g*sin(pi/2-a)") \
  X("(SQRT a)", d_sqrt, "d(sqrt a) = g/(2*sqrt a)") \
  X("(RECIPROCAL a)", d_reciprocal, "d(1/a) = -g/a^2") \
  X("(MAX a b)", d_max, "d(max(a,b)): g to the larger, halves on ties") \
  X("(WHERE c a b)", d_where, "d(c?a:b) = -, c?g:0, c?0:g") \
  X("(CAST a.float)", d_cast, "d(cast a) = cast g (a float source)") \
  X("(TRUNC a)", d_trunc, "d(trunc a) = 0") \
  X("(REDUCE_AXIS a)", d_reduce, "d(sum) = expand g; max: split among maxima; prod: the others' product") \
  X("(RESHAPE a ...)", d_reshape, "reshape g back") \
  X("(PERMUTE a)", d_permute, "inverse permute of g") \
  X("(EXPAND a ...)", d_expand, "sum g over the expanded axes") \
  X("(PAD a)", d_pad, "shrink g to the unpadded part") \
  X("(SHRINK a)", d_shrink, "pad g back with zeros") \
  X("(FLIP a)", d_flip, "flip g") \
  X("(SHRINK_VAR a n)", d_shrink_var, "unshrink g") \
  X("(UNSHRINK_VAR a n)", d_unshrink_var, "shrink g") \
  X("(WINDOW a ...)", d_window, "each window position's g back to its input") \
  X("(CONTIGUOUS a ...)", d_identity, "g") \
  X("(UNIQUE a ...)", d_identity, "g") \
  X("(AFTER a ...)", d_identity, "g") \
  X("(COPY a ...)", d_identity, "g (single device: the copy back is the identity)")
#define GRAD_PATTERN(pat, fn, formula) { .pattern = pat, .name = formula },
#define GRAD_FN(pat, fn, formula) fn,
static const tg_rule grad_patterns[] = { GRAD_RULES(GRAD_PATTERN) };
static grad_fn *const grad_fns[] = { GRAD_RULES(GRAD_FN) };
static tg_matcher *grad_matcher;

/* The gradients of u's sources into out (NULL where none); the rule that
 * gave them traced (TRACK_REWRITES, a VIZ step when the pass records). */
static void grad_rule(uop *u, uop *g, uop **out, bool viz) {
  for (int i = 0; i < u->nsrc; i++) out[i] = NULL;
  const tg_matcher *m = matcher_once(&grad_matcher, grad_patterns, RW_NRULES(grad_patterns), "gradient");
  rw_match mt;
  int r = matcher_match(m, u, NULL, &mt);
  if (r < 0) return;
  grad_fns[r](u, g, out);
  int level = (int)setting_int(SET_TRACK_REWRITES), n = 0;
  if (!level && !viz) return;
  uop *got[256];
  for (int i = 0; i < u->nsrc && n < 256; i++) if (out[i]) got[n++] = out[i];
  uop *after = n ? uop_new(OP_SINK, DT_VOID, got, n, arg_none()) : NULL;   /* the gradients, one graph */
  if (level && after) matcher_trace_text(m, level, r, u, "the sources' gradients");
  if (viz && after) viz_pass_step(grad_patterns[r].name, u, after);
}

/* ---- gradients through realized tensors
 * Realizing replaces a computed node by a buffer in every tensor, which would
 * cut the path from a loss to the leaves. So when a realized node depended on
 * a tensor that requires grad, remember where its buffer came from: the
 * gradient walk steps from the buffer view back into the computation (its
 * values are recomputed inside the backward kernels). */
static ptrmap grad_origin;   /* buffer view -> the lazy node it replaced (both retained) */
/* recursive: a custom gradient (conv_grad) builds ops that register custom
 * gradients of their own while compute_gradient holds the lock */
static pthread_mutex_t origin_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Thread_local int in_gradient;   /* > 0 inside compute_gradient */

typedef struct { ptrmap leaves; int n; } leaf_ctx;
static void add_leaf(tg_tensor *t, void *p) { leaf_ctx *c = p; pm_put(&c->leaves, t->u, (void *)1); c->n++; }

/* Does u depend on a leaf through a differentiable path (sources and
 * recorded origins, not DETACH)? memo: 1 no, 2 yes, 3 being visited (a
 * node met again while in progress counts as no, so nothing loops). */
static bool reaches_leaf(uop *root, const ptrmap *leaves, ptrmap *memo) {
  VEC(uop *) stack = { 0 };
  VEC_PUSH(stack, root);
  while (stack.n) {
    uop *u = stack.v[stack.n - 1];
    void *state = pm_get(memo, u);
    if (state == (void *)1 || state == (void *)2) { stack.n--; continue; }
    if (pm_get(leaves, u)) { pm_put(memo, u, (void *)2); stack.n--; continue; }
    if (u->op == OP_DETACH) { pm_put(memo, u, (void *)1); stack.n--; continue; }
    /* children first; then u is 2 if any child is */
    uop *o = pm_get(&grad_origin, u);
    bool pending = false;
    if (!state) {
      pm_put(memo, u, (void *)3);
      if (o && !pm_get(memo, o)) { VEC_PUSH(stack, o); pending = true; }
      for (int i = 0; i < u->nsrc; i++) if (!pm_get(memo, u->src[i])) { VEC_PUSH(stack, u->src[i]); pending = true; }
    }
    if (pending) continue;
    bool r = o && pm_get(memo, o) == (void *)2;
    for (int i = 0; i < u->nsrc && !r; i++) r = pm_get(memo, u->src[i]) == (void *)2;
    pm_put(memo, u, (void *)(intptr_t)(r ? 2 : 1));
    stack.n--;
  }
  VEC_FREE(stack);
  return pm_get(memo, root) == (void *)2;
}

/* Set once any tensor has required grad: until then (inference) a
 * realize need not walk the live tensors for leaves. */
static atomic_bool grad_ever;

void autograd_note_realized(const ptrmap *becomes) {
  if (!atomic_load_explicit(&grad_ever, memory_order_relaxed)) return;
  leaf_ctx c = { 0 };
  tensors_each_requiring_grad(add_leaf, &c);
  if (!c.n) { pm_free(&c.leaves); return; }
  pthread_mutex_lock(&origin_lock);
  /* forget origins nobody can reach any more (only this map holds the
   * buffer view, and with it the buffer: an eval loop's activations) */
  ptrmap live = { 0 };
  for (size_t i = 0; i < grad_origin.cap; i++) {
    uop *k = grad_origin.e[i].key;
    if (!k) continue;
    if (k->refcnt == 1) { uop_release(grad_origin.e[i].val); uop_release(k); }
    else pm_put(&live, k, grad_origin.e[i].val);
  }
  pm_free(&grad_origin);
  grad_origin = live;
  ptrmap memo = { 0 };
  for (size_t i = 0; i < becomes->cap; i++) {
    uop *node = becomes->e[i].key, *repl = becomes->e[i].val;
    /* assigns write state (optimizer moments, running stats): not values a
     * gradient flows back through, and following them would chain every
     * step's graph to the last */
    if (!node || !repl || node == repl || pm_get(&c.leaves, node) || node->op == OP_ASSIGN) continue;
    /* memory that already existed (a CONTIGUOUS of a realized tensor
     * becomes that tensor): nothing was computed */
    if (node->op == OP_DETACH) continue;
    if (node->op == OP_CONTIGUOUS) {
      uop_list sub = uop_toposort(node);
      bool existing = false;
      for (int k = 0; k < sub.n && !existing; k++) existing = sub.v[k] == repl || (sub.v[k]->op == OP_BUFFER && repl->op == OP_RESHAPE && repl->src[0] == sub.v[k]);
      free(sub.v);
      if (existing) continue;
    }
    if (!reaches_leaf(node, &c.leaves, &memo)) continue;
    if (pm_get(&grad_origin, repl)) continue;
    uop_retain(repl); uop_retain(node);
    pm_put(&grad_origin, repl, node);
  }
  pm_free(&memo);
  pthread_mutex_unlock(&origin_lock);
  pm_free(&c.leaves);
}

/* ---- custom gradients (see tensor.h); guarded by origin_lock */
typedef struct {
  uop *src[AUTOGRAD_CUSTOM_MAX_SRCS];   /* retained */
  int n;
  autograd_custom_fn fn;
  _Alignas(max_align_t) unsigned char ctx[AUTOGRAD_CUSTOM_MAX_CTX];
} custom_grad;
static ptrmap custom_grads;   /* out (retained) -> custom_grad* */
static size_t custom_live_after_sweep;

static void custom_free(uop *key, custom_grad *c) {
  for (int i = 0; i < c->n; i++) uop_release(c->src[i]);
  free(c);
  uop_release(key);
}

/* drops entries whose node only this map still holds */
static void custom_sweep(void) {
  ptrmap live = { 0 };
  for (size_t i = 0; i < custom_grads.cap; i++) {
    uop *k = custom_grads.e[i].key;
    if (!k) continue;
    if (k->refcnt == 1) custom_free(k, custom_grads.e[i].val);
    else pm_put(&live, k, custom_grads.e[i].val);
  }
  pm_free(&custom_grads);
  custom_grads = live;
  custom_live_after_sweep = live.n;
}

void autograd_set_custom(uop *out, uop *const *srcs, int n, autograd_custom_fn fn, const void *ctx, size_t ctx_size) {
  if (n > AUTOGRAD_CUSTOM_MAX_SRCS || ctx_size > AUTOGRAD_CUSTOM_MAX_CTX) return;   /* the generic rules still apply */
  pthread_mutex_lock(&origin_lock);
  if (!pm_get(&custom_grads, out)) {
    /* each entry holds its sources (a convolution's input: tens of MB), so
     * the dead ones go at once, not after some number of them (an eval loop
     * over batches kept GBs of inputs alive) */
    if (!in_gradient && custom_grads.n > custom_live_after_sweep) custom_sweep();
    custom_grad *c = tg_xcalloc(1, sizeof *c);
    c->n = n;
    c->fn = fn;
    for (int i = 0; i < n; i++) { c->src[i] = srcs[i]; uop_retain(srcs[i]); }
    if (ctx_size) memcpy(c->ctx, ctx, ctx_size);
    uop_retain(out);
    pm_put(&custom_grads, out, c);
  }
  pthread_mutex_unlock(&origin_lock);
}

/* u's sources for the gradient walk: a realized view steps to its origin, a
 * node with a custom gradient to its custom sources */
static int grad_srcs(uop *u, const ptrmap *targets, uop **out) {
  if (pm_get(targets, u)) goto plain;
  uop *o = pm_get(&grad_origin, u);
  if (o) { out[0] = o; return 1; }
  custom_grad *c = pm_get(&custom_grads, u);
  if (c) { for (int i = 0; i < c->n; i++) out[i] = c->src[i]; return c->n; }
plain:
  for (int i = 0; i < u->nsrc; i++) out[i] = u->src[i];
  return u->nsrc;
}

/* children before parents, following origins and custom sources */
static int origin_srcs(void *ctx, uop *u, uop *const **out) {
  const ptrmap *targets = ctx;
  if (!pm_get(targets, u)) {
    uop *const *o = (uop *const *)pm_slot_value(&grad_origin, u);
    if (o && *o) { *out = o; return 1; }
    custom_grad *c = pm_get(&custom_grads, u);
    if (c) { *out = c->src; return c->n; }
  }
  *out = u->src;
  return u->nsrc;
}
static uop_list grad_toposort(uop *root, const ptrmap *targets) { return uop_toposort_by(root, origin_srcs, (void *)targets); }

/* dL/dx for every x in targets that root depends on, given dL/droot.
 * Returns a map uop -> grad (borrowed UOps). */
static void compute_gradient(uop *root, uop *root_grad, const ptrmap *targets, ptrmap *grads) {
  pthread_mutex_lock(&origin_lock);
  in_gradient++;
  bool viz = viz_on && viz_pass_begin("gradient");
  uop_list topo = grad_toposort(root, targets);
  /* keep only nodes on a path from root to a target */
  ptrmap on_path = { 0 };
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    bool p = pm_get(targets, u) != NULL;
    uop *src[256];
    int ns = grad_srcs(u, targets, src);
    if (!p && u->op != OP_DETACH && u->op != OP_ASSIGN)
      for (int j = 0; j < ns && !p; j++) p = pm_get(&on_path, src[j]) != NULL;
    if (p) pm_put(&on_path, u, (void *)1);
  }
  pm_put(grads, root, root_grad);
  for (int i = topo.n - 1; i >= 0; i--) {
    uop *u = topo.v[i];
    uop *g = pm_get(grads, u);
    if (!g || !pm_get(&on_path, u)) continue;
    uop *sg[256], *src[256];
    int ns = grad_srcs(u, targets, src);
    bool via_origin = !pm_get(targets, u) && pm_get(&grad_origin, u);
    custom_grad *cg = pm_get(targets, u) || via_origin ? NULL : pm_get(&custom_grads, u);
    if (via_origin) sg[0] = g;   /* a realized view: its origin gets the gradient */
    else if (u->op == OP_CALL) {
      bool need[256];
      for (int j = 0; j < ns; j++) need[j] = pm_get(&on_path, src[j]) != NULL;
      function_call_grad(u, g, need, sg);
    }
    else if (cg) { for (int j = 0; j < cg->n; j++) sg[j] = NULL; cg->fn(cg->ctx, g, cg->src, cg->n, sg); }
    else grad_rule(u, g, sg, viz);
    for (int j = 0; j < ns; j++) {
      uop *s = src[j];
      if (!sg[j] || !pm_get(&on_path, s)) continue;
      uop *prev = pm_get(grads, s);
      pm_put(grads, s, prev ? add(prev, sg[j]) : sg[j]);
    }
  }
  /* a target the loss reads only through non-differentiable ops (a sign, a
   * comparison) has gradient zero, like PyTorch */
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    if (pm_get(targets, u) && !pm_get(grads, u)) pm_put(grads, u, const_like(0, u->dtype, u->shape, u->ndim));
  }
  pm_free(&on_path);
  free(topo.v);
  if (viz) viz_pass_end();
  in_gradient--;
  pthread_mutex_unlock(&origin_lock);
}

void autograd_vjp(uop *root, uop *seed, uop *const *targets, int n, uop **grads) {
  ptrmap t = { 0 }, g = { 0 };
  for (int i = 0; i < n; i++) pm_put(&t, targets[i], (void *)1);
  compute_gradient(root, seed, &t, &g);
  for (int i = 0; i < n; i++) {
    grads[i] = pm_get(&g, targets[i]);
    if (!grads[i]) grads[i] = const_like(0, targets[i]->dtype, targets[i]->shape, targets[i]->ndim);
  }
  pm_free(&t); pm_free(&g);
}

/* ---- public API */

tg_tensor *tg_requires_grad(tg_tensor *t, bool on) {
  NEED(t, "tg_requires_grad");
  if (on && !tg_dtype_is_float(tg_dtype_of(t))) TG_FAIL("tg_requires_grad: only float tensors can require grad (got %s)", tg_dtype_name(tg_dtype_of(t)));
  if (on) atomic_store(&grad_ever, true);
  t->requires_grad = on;
  return t;
}
bool tg_get_requires_grad(const tg_tensor *t) { return t && t->requires_grad; }
tg_tensor *tg_grad(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_grad", "t"); return NULL; }
  return t->grad;
}
void tg_zero_grad(tg_tensor *t) {
  if (!t || !t->grad) return;
  tg_tensor *g = t->grad;
  t->grad = NULL;
  g->owner = NULL;
  tg_free(g);
}

tg_tensor *tg_detach(tg_tensor *t) {
  NEED(t, "tg_detach");
  API_BEGIN;
  API_RETURN(tensor_wrap(t->u->op == OP_DETACH ? t->u : uop1(OP_DETACH, t->u->dtype, t->u, arg_none()), t->device));
}

static int check_loss(tg_tensor *loss, const char *op) {
  if (!loss) { tensor_null_input(op); return -1; }
  if (tg_numel(loss) != 1) return tg_seterr("%s: loss must have one element, it has shape with %lld elements", op, (long long)tg_numel(loss));
  if (!tg_dtype_is_float(tg_dtype_of(loss))) return tg_seterr("%s: loss must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(loss)));
  return 0;
}

typedef struct { VEC(tg_tensor *) ts; ptrmap targets; } collect_ctx;
static void collect(tg_tensor *t, void *p) {
  collect_ctx *c = p;
  VEC_PUSH(c->ts, t);
  pm_put(&c->targets, t->u, (void *)1);
}

int tg_backward(tg_tensor *loss) {
  if (check_loss(loss, "tg_backward") < 0) return -1;
  collect_ctx c = { 0 };
  tensors_each_requiring_grad(collect, &c);
  uop_pool_push();
  ptrmap grads = { 0 };
  compute_gradient(loss->u, cl(loss->u, 1), &c.targets, &grads);
  int found = 0;
  for (int i = 0; i < c.ts.n; i++) {
    tg_tensor *t = c.ts.v[i];
    uop *g = pm_get(&grads, t->u);
    if (!g) continue;
    found++;
    uop *acc = t->grad ? add(t->grad->u, g) : g;
    if (t->grad) {
      uop_retain(acc); uop_release(t->grad->u); t->grad->u = acc;
    } else {
      tg_tensor *gt = tensor_wrap(acc, t->device);
      tensor_adopt(t, gt);
      t->grad = gt;
    }
  }
  pm_free(&grads);
  uop_pool_pop();
  VEC_FREE(c.ts); pm_free(&c.targets);
  if (!found) return tg_seterr("tg_backward: the loss does not depend on any tensor that requires grad");
  return 0;
}

int tg_gradient(tg_tensor *loss, tg_tensor *const *wrt, int n, tg_tensor **out) {
  if (check_loss(loss, "tg_gradient") < 0) return -1;
  for (int i = 0; i < n; i++) if (!wrt[i]) { tensor_null_input("tg_gradient"); return -1; }
  uop_pool_push();
  ptrmap targets = { 0 }, grads = { 0 };
  for (int i = 0; i < n; i++) pm_put(&targets, wrt[i]->u, (void *)1);
  compute_gradient(loss->u, cl(loss->u, 1), &targets, &grads);
  for (int i = 0; i < n; i++) {
    uop *g = pm_get(&grads, wrt[i]->u);
    if (!g) g = const_like(0, wrt[i]->u->dtype, wrt[i]->u->shape, wrt[i]->u->ndim);
    out[i] = tensor_wrap(g, wrt[i]->device);
  }
  pm_free(&targets); pm_free(&grads);
  uop_pool_pop();
  return 0;
}
