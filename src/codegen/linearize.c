/* linearize.c: place every node of a kernel AST inside the loops it needs. */
#include "codegen/codegen.h"
#include "uop/kernel_ir.h"
#include "util/util.h"

typedef struct {
  uop_list reduces;       /* every REDUCE of the kernel */
  ptrmap emitted;
  ptrmap free_ranges;     /* uop -> (bitmask of RANGE ids it depends on) + 1 */
  uint64_t open;          /* ranges whose loops are open */
  lprogram *out;
} lctx;

/* The ranges a node's value varies with; REDUCE closes its own. */
static uint64_t free_of(lctx *c, uop *u) {
  void *p = pm_get(&c->free_ranges, u);
  if (p) return (uint64_t)(uintptr_t)p - 1;
  uint64_t m = 0;
  if (u->op == OP_RANGE) m = 1ULL << range_id(u);
  else if (u->op == OP_REDUCE) {
    m = free_of(c, u->src[0]);
    for (int i = 1; i < u->nsrc; i++) m &= ~(1ULL << range_id(u->src[i]));
  } else for (int i = 0; i < u->nsrc; i++) m |= free_of(c, u->src[i]);
  pm_put(&c->free_ranges, u, (void *)(uintptr_t)(m + 1));
  return m;
}

static bool loop_before(const uop *a, const uop *b) {
  bool ta = a->arg.v[1] == RANGE_THREAD, tb = b->arg.v[1] == RANGE_THREAD;
  if (ta != tb) return ta;
  return range_id(a) < range_id(b);
}

static void push(lctx *c, linst_kind k, uop *u) { VEC_PUSH(*c->out, ((linst){ k, u })); }

static void emit(lctx *c, uop *u);

static bool same_ranges(const uop *a, const uop *b) {
  if (a->nsrc != b->nsrc) return false;
  for (int i = 1; i < a->nsrc; i++) if (a->src[i] != b->src[i]) return false;
  return true;
}

/* Emits r together with every other pending REDUCE over the same loops
 * (upcast lanes): one loop nest, one accumulator each. */
static void emit_reduce(lctx *c, uop *r) {
  uint64_t mine = 0;
  for (int i = 1; i < r->nsrc; i++) mine |= 1ULL << range_id(r->src[i]);
  uop *group[512];
  int ng = 0;
  for (int i = 0; i < c->reduces.n && ng < 512; i++) {
    uop *o = c->reduces.v[i];
    if (o == r || (!pm_get(&c->emitted, o) && same_ranges(o, r) && (free_of(c, o) & ~c->open) == 0)) group[ng++] = o;
  }
  /* hoist what does not vary with these loops */
  for (int gi = 0; gi < ng; gi++) {
    uop_list l = uop_toposort(group[gi]->src[0]);
    for (int i = 0; i < l.n; i++) {
      uop *w = l.v[i];
      if (w->op == OP_RANGE || pm_get(&c->emitted, w)) continue;
      uint64_t f = free_of(c, w);
      if (!(f & mine) && (f & ~c->open) == 0) emit(c, w);
    }
    free(l.v);
  }
  for (int gi = 0; gi < ng; gi++) push(c, LI_ACC_INIT, group[gi]);
  /* open loops in id order */
  uop *rs[64];
  int n = 0;
  for (int i = 1; i < r->nsrc; i++) rs[n++] = r->src[i];
  for (int i = 1; i < n; i++) for (int j = i; j > 0 && range_id(rs[j - 1]) > range_id(rs[j]); j--) { uop *t = rs[j]; rs[j] = rs[j - 1]; rs[j - 1] = t; }
  for (int i = 0; i < n; i++) { emit(c, rs[i]->src[0]); push(c, LI_LOOP, rs[i]); c->open |= 1ULL << range_id(rs[i]); }
  for (int gi = 0; gi < ng; gi++) emit(c, group[gi]->src[0]);
  for (int gi = 0; gi < ng; gi++) push(c, LI_ACC_UPDATE, group[gi]);
  for (int i = n - 1; i >= 0; i--) { push(c, LI_ENDLOOP, rs[i]); c->open &= ~(1ULL << range_id(rs[i])); }
  /* nodes emitted inside those loops are out of scope now */
  for (int gi = 0; gi < ng; gi++) {
    uop_list l2 = uop_toposort(group[gi]->src[0]);
    for (int i = 0; i < l2.n; i++) if (free_of(c, l2.v[i]) & mine) pm_put(&c->emitted, l2.v[i], NULL);
    free(l2.v);
    pm_put(&c->emitted, group[gi], (void *)1);
  }
}

static void emit(lctx *c, uop *u) {
  if (pm_get(&c->emitted, u)) return;
  if (u->op == OP_RANGE) return;   /* loops are opened by their owners */
  if (u->op == OP_REDUCE) { emit_reduce(c, u); return; }
  for (int i = 0; i < u->nsrc; i++) emit(c, u->src[i]);
  push(c, LI_OP, u);
  pm_put(&c->emitted, u, (void *)1);
}

int linearize(uop *ast, lprogram *out) {
  memset(out, 0, sizeof *out);
  lctx c = { 0 };
  c.out = out;
  uop_list l = uop_toposort(ast);
  uop *loops[64];
  int nl = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (u->op != OP_RANGE) continue;
    if (range_id(u) >= 64) { free(l.v); return tg_seterr("codegen: kernel has more than 64 loops"); }
    if (u->arg.v[1] != RANGE_REDUCE && u->arg.v[1] != RANGE_UNROLL) loops[nl++] = u;
  }
  for (int i = 0; i < l.n; i++) if (l.v[i]->op == OP_REDUCE) VEC_PUSH(c.reduces, l.v[i]);
  free(l.v);
  /* the thread loop outermost, then by id */
  for (int i = 1; i < nl; i++)
    for (int j = i; j > 0 && loop_before(loops[j], loops[j - 1]); j--) { uop *t = loops[j]; loops[j] = loops[j - 1]; loops[j - 1] = t; }
  /* buffers first, so they are declared at the top */
  uop_list all = uop_toposort(ast);
  for (int i = 0; i < all.n; i++) if (all.v[i]->op == OP_DEFINE_GLOBAL) emit(&c, all.v[i]);
  free(all.v);
  /* a REDUCE that varies with no loop (a custom kernel's amax beside its
   * elementwise stores) runs once, before the output loops open */
  for (int i = 0; i < c.reduces.n && nl; i++) if (!free_of(&c, c.reduces.v[i])) emit(&c, c.reduces.v[i]);
  for (int i = 0; i < nl; i++) { emit(&c, loops[i]->src[0]); push(&c, LI_LOOP, loops[i]); c.open |= 1ULL << range_id(loops[i]); }
  for (int i = 0; i < ast->nsrc; i++) emit(&c, ast->src[i]);
  for (int i = nl - 1; i >= 0; i--) push(&c, LI_ENDLOOP, loops[i]);
  pm_free(&c.emitted); pm_free(&c.free_ranges);
  free(c.reduces.v);
  return 0;
}

void lprogram_free(lprogram *p) { VEC_FREE(*p); }

/* ALU ops times their trip counts; with `weigh`, a transcendental counts as
 * the 16 or so ops its libm call or expansion costs. */
static double alu_ops(uop *ast, bool weigh) {
  /* each ALU op runs once per iteration of the loops it varies with */
  lctx c = { 0 };
  uop_list l = uop_toposort(ast);
  int64_t size[64] = { 0 };
  for (int i = 0; i < l.n; i++)
    if (l.v[i]->op == OP_RANGE && range_id(l.v[i]) < 64) size[range_id(l.v[i])] = range_max_size(l.v[i]);   /* symbolic: at most */
  double flops = 0;
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    if (!uop_is_alu(u->op) && u->op != OP_REDUCE) continue;
    if (u->op == OP_CAST || u->op == OP_BITCAST) continue;
    if (u->dtype.scalar == TG_I64 && !uop_is_comparison(u->op)) continue;   /* index math */
    double trips = 1;
    uint64_t f = free_of(&c, u);
    if (u->op == OP_REDUCE) for (int k = 1; k < u->nsrc; k++) f |= 1ULL << range_id(u->src[k]);
    for (int b = 0; b < 64; b++) if (f >> b & 1) trips *= (double)size[b];
    bool transcendental = u->op == OP_EXP2 || u->op == OP_LOG2 || u->op == OP_SIN || u->op == OP_POW;
    flops += trips * (weigh && transcendental ? KERNEL_COST_TRANSCENDENTAL : 1);
  }
  free(l.v);
  pm_free(&c.free_ranges);
  return flops;
}

double kernel_flops(uop *ast) { return alu_ops(ast, false); }
double kernel_cost(uop *ast) { return alu_ops(ast, true); }
