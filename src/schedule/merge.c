/* merge.c: sibling kernels merged into multi-output kernels (the last
 * phase of schedule_create). */
#include "schedule/schedule_internal.h"
#include "uop/rewrite.h"
#include "util/settings.h"

/* ---- multi-output kernels: consecutive elementwise kernels over the same
 * loops that do not touch each other's outputs become one kernel with
 * several stores (their loads of shared inputs then happen once). */

static bool same_reduce_ranges(const uop *a, const uop *b) {
  return a->nsrc == b->nsrc && !memcmp(a->src + 1, b->src + 1, sizeof(uop *) * (size_t)(a->nsrc - 1));
}

/* The loop ranges of a plain store kernel, sorted by id, and its kind:
 * elementwise (no reduce; output loops only), reduce (every store a REDUCE
 * over the same ranges and no other reduce, as a batch norm's gradient
 * sums; output loops and reduce ranges), or neither. */
enum { LOOPS_NONE, LOOPS_ELEMENTWISE, LOOPS_REDUCE };
static int kernel_loops(uop *ast, uop **rs, int *n) {
  if (!ast || ast->op != OP_SINK || !ast->nsrc) return LOOPS_NONE;
  uop *first = ast->src[0]->op == OP_STORE ? ast->src[0]->src[1] : NULL;
  uop *red = first && first->op == OP_REDUCE ? first : NULL;
  for (int i = 0; i < ast->nsrc && red; i++) {
    uop *st = ast->src[i];
    if (st->op != OP_STORE || st->src[1]->op != OP_REDUCE || !same_reduce_ranges(st->src[1], red)) return LOOPS_NONE;
  }
  uop_list l = uop_toposort(ast);
  bool ok = true;
  *n = 0;
  for (int i = 0; i < l.n && ok; i++) {
    uop *u = l.v[i];
    if (u->op == OP_REDUCE) ok = red && same_reduce_ranges(u, red);
    else if (u->op == OP_RANGE) {
      bool kind_ok = u->arg.v[1] == RANGE_LOOP || (red && u->arg.v[1] == RANGE_REDUCE);
      if (!kind_ok || *n == 16) ok = false;
      else rs[(*n)++] = u;
    }
  }
  free(l.v);
  for (int i = 1; i < *n; i++) for (int j = i; j > 0 && rs[j - 1]->arg.v[0] > rs[j]->arg.v[0]; j--) { uop *t = rs[j]; rs[j] = rs[j - 1]; rs[j - 1] = t; }
  return !ok ? LOOPS_NONE : red ? LOOPS_REDUCE : LOOPS_ELEMENTWISE;
}

/* What merging asks of a kernel, worked out once per kernel (merging
 * looks at each kernel many times): its loops and kind (kernel_loops), and
 * the buffers it stores to and loads from. */
typedef struct {
  bool valid;
  int kind, nr;
  uop *rs[16];
  VEC(tg_buffer *) st, ld;
} kernel_facts;

static bool has_buf(tg_buffer *const *v, int n, const tg_buffer *b) {
  for (int i = 0; i < n; i++) if (v[i] == b) return true;
  return false;
}

static kernel_facts *facts_of(kernel_facts *f, const sched_item *it) {
  if (f->valid) return f;
  f->valid = true;
  f->st.n = f->ld.n = 0;
  f->kind = LOOPS_NONE;
  if (!it->ast) {   /* a copy between devices: writes bufs[0], reads bufs[1] */
    if (it->nbufs >= 2) { VEC_PUSH(f->st, it->bufs[0]); VEC_PUSH(f->ld, it->bufs[1]); }
    return f;
  }
  f->kind = kernel_loops(it->ast, f->rs, &f->nr);
  uop_list l = uop_toposort(it->ast);
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_STORE && u->op != OP_LOAD) continue;
    uop *g = u->src[0]->src[0];
    if (g->op != OP_DEFINE_GLOBAL) continue;
    tg_buffer *b = it->bufs[g->arg.i];
    if (u->op == OP_STORE) { if (!has_buf(f->st.v, f->st.n, b)) VEC_PUSH(f->st, b); }
    else if (!has_buf(f->ld.v, f->ld.n, b)) VEC_PUSH(f->ld, b);
  }
  free(l.v);
  return f;
}

/* May later kernel b run together with (or before) kernel a? Not when b
 * reads or writes what a writes, or writes what a reads. */
static bool no_hazard(const kernel_facts *a, const kernel_facts *b) {
  for (int i = 0; i < a->st.n; i++) if (has_buf(b->ld.v, b->ld.n, a->st.v[i]) || has_buf(b->st.v, b->st.n, a->st.v[i])) return false;
  for (int i = 0; i < b->st.n; i++) if (has_buf(a->ld.v, a->ld.n, b->st.v[i])) return false;
  return true;
}

static bool can_merge(const sched_item *a, kernel_facts *fa, const sched_item *b, kernel_facts *fb) {
  if (a->dev != b->dev) return false;
  facts_of(fa, a);
  facts_of(fb, b);
  if (fa->kind == LOOPS_NONE || fb->kind != fa->kind || fa->nr != fb->nr) return false;
  for (int i = 0; i < fa->nr; i++) if (fa->rs[i] != fb->rs[i]) return false;
  return a->nbufs + b->nbufs <= 64 && no_hazard(fa, fb);
}

/* Appends b's stores to a (renumbering b's buffers) and frees b. */
static void merge_into(sched_item *a, sched_item *b) {
  ptrmap remap = { 0 };
  uop_list l = uop_toposort(b->ast);
  a->bufs = tg_xrealloc(a->bufs, sizeof(tg_buffer *) * (size_t)(a->nbufs + b->nbufs));
  for (int i = 0; i < l.n; i++) {
    uop *g = l.v[i];
    if (g->op != OP_DEFINE_GLOBAL) continue;
    tg_buffer *buf = b->bufs[g->arg.i];
    int k = 0;
    while (k < a->nbufs && a->bufs[k] != buf) k++;
    if (k == a->nbufs) { a->bufs[a->nbufs++] = buf; buffer_retain(buf); }
    pm_put(&remap, g, uop0(OP_DEFINE_GLOBAL, g->dtype, arg_int(k)));
  }
  free(l.v);
  uop *bs = graph_substitute(b->ast, &remap);
  pm_free(&remap);
  uop **st = tg_xmalloc(sizeof(uop *) * (size_t)(a->ast->nsrc + bs->nsrc));
  int n = 0;
  for (int i = 0; i < a->ast->nsrc; i++) st[n++] = a->ast->src[i];
  for (int i = 0; i < bs->nsrc; i++) st[n++] = bs->src[i];
  uop *ast = uop_new(OP_SINK, DT_VOID, st, n, a->ast->arg);
  free(st);
  uop_retain(ast);
  uop_release(a->ast);
  a->ast = ast;
  sched_kernel_name(ast, a->name, sizeof a->name);
  uop_release(b->ast);
  for (int j = 0; j < b->nbufs; j++) buffer_release(b->bufs[j]);
  free(b->bufs);
}

/* May kernel b run before the kernels out->v[lo..hi-1]? */
static bool independent_of(const schedule *out, kernel_facts *f, int lo, int hi, kernel_facts *fb) {
  for (int k = lo; k < hi; k++) if (out->v[k].call || !no_hazard(facts_of(&f[k], &out->v[k]), fb)) return false;   /* a call: its kernels are not looked into */
  return true;
}

#define MERGE_LOOKBACK 6   /* kernels searched back for a reduce to merge with */
void sched_merge_sibling_kernels(schedule *out) {
  if (setting_int(SET_TG_NO_MULTI_OUTPUT)) return;
  kernel_facts *f = tg_xcalloc((size_t)(out->n ? out->n : 1), sizeof *f);
  int w = 0;
  for (int i = 0; i < out->n; i++) {
    sched_item *b = &out->v[i];
    kernel_facts *fb = &f[i];
    int j = -1;
    if (b->merged) goto keep;
    if (w > 0 && out->v[w - 1].ast && b->ast && !out->v[w - 1].merged && can_merge(&out->v[w - 1], &f[w - 1], b, fb)) j = w - 1;
    /* sums over the same loops a few kernels apart (with small kernels
     * between that use the first): one pass over what they read */
    if (j < 0 && b->ast && facts_of(fb, b)->kind == LOOPS_REDUCE)
      for (int c = w - 2; c >= 0 && c >= w - MERGE_LOOKBACK && j < 0; c--)
        if (out->v[c].ast && !out->v[c].merged && can_merge(&out->v[c], &f[c], b, fb) && independent_of(out, f, c + 1, w, fb)) j = c;
    if (j >= 0) {
      merge_into(&out->v[j], b);
      f[j].valid = false;   /* its stores and loads grew */
      VEC_FREE(fb->st); VEC_FREE(fb->ld);
      continue;
    }
  keep:
    if (w != i) {
      VEC_FREE(f[w].st); VEC_FREE(f[w].ld);
      f[w] = *fb;
      memset(fb, 0, sizeof *fb);
    }
    out->v[w++] = *b;
  }
  for (int i = 0; i < out->n; i++) { VEC_FREE(f[i].st); VEC_FREE(f[i].ld); }
  free(f);
  out->n = w;
}

