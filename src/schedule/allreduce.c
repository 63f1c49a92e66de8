/* allreduce.c: ALLREDUCE nodes to copies and elementwise ops (see
 * allreduce.h): buckets of independent allreduces, then naive or ring. */
#include <string.h>
#include "schedule/allreduce.h"
#include "uop/rewrite.h"
#include "util/util.h"
#include "util/settings.h"

#define AR_MAX_DEVICES 16

allreduce_kind allreduce_choose(int ndev, int64_t numel) {
  int64_t ring = setting_int(SET_TG_RING);
  if (ring >= 2) return ALLREDUCE_RING;
  if (ring >= 1 && ndev > 2 && numel > setting_int(SET_TG_RING_ALLREDUCE_THRESHOLD)) return ALLREDUCE_RING;
  return ALLREDUCE_NAIVE;
}

/* one allreduce: the partial values, and the nodes that want the result
 * on each device (NULL where none does) */
typedef struct {
  uop *const *src;
  int n;
  int64_t op;
  uop *dest[AR_MAX_DEVICES];
  int level;          /* 1 + the deepest allreduce below it; INT_MAX when none is above it */
  bool done;
} ar_group;

typedef struct { ar_group *v; int n, cap; } ar_groups;

/* ---- 1-D builders */
static uop *flat1(uop *u) { int64_t n = 1; for (int i = 0; i < u->ndim; i++) n *= u->shape[i]; return u->ndim == 1 ? u : uop1(OP_RESHAPE, u->dtype, u, arg_ints(&n, 1)); }
static uop *shrink1(uop *u, int64_t lo, int64_t hi) {
  int64_t a[2] = { lo, hi };
  return lo == 0 && hi == u->shape[0] ? u : uop1(OP_SHRINK, u->dtype, u, arg_ints(a, 2));
}
static uop *pad1(uop *u, int64_t before, int64_t after) {
  int64_t a[2] = { before, after };
  return before == 0 && after == 0 ? u : uop1(OP_PAD, u->dtype, u, arg_ints(a, 2));
}
static uop *copy_to(uop *u, tg_device *from, tg_device *to) { return from == to ? u : uop1(OP_COPY, u->dtype, u, arg_str(to->name)); }
static uop *fold(int64_t op, uop *a, uop *b) {
  uop_op o = (uop_op)op;
  if (a->dtype.scalar == TG_BOOL) o = OP_OR;
  return uop_alu(o, a, b);
}

/* op over f[0..n) (f[j] on dev[j]) onto every device: r[d]. */
static void naive(int64_t op, uop **f, tg_device **dev, int n, uop **r) {
  for (int d = 0; d < n; d++) {
    uop *acc = NULL;
    for (int j = 0; j < n; j++) {
      uop *x = copy_to(f[j], dev[j], dev[d]);
      acc = acc ? fold(op, acc, x) : x;
    }
    r[d] = acc;
  }
}

static void ring(int64_t op, uop **f, tg_device **dev, int n, uop **r) {
  int64_t N = f[0]->shape[0], bound[AR_MAX_DEVICES + 1];
  for (int c = 0; c <= n; c++) bound[c] = N / n * c + (c < N % n ? c : N % n);
  uop *have[AR_MAX_DEVICES][AR_MAX_DEVICES];   /* have[c][d]: reduced chunk c on device d */
  for (int c = 0; c < n; c++) {
    /* reduce-scatter: chunk c starts on device c+1 and ends, summed, on c */
    int d0 = (c + 1) % n;
    uop *acc = shrink1(f[d0], bound[c], bound[c + 1]);
    for (int k = 2; k <= n; k++) {
      int d = (c + k) % n, prev = (c + k - 1) % n;
      acc = fold(op, copy_to(acc, dev[prev], dev[d]), shrink1(f[d], bound[c], bound[c + 1]));
    }
    have[c][c] = acc;
    /* all-gather: on around the ring */
    for (int k = 1; k < n; k++) {
      int d = (c + k) % n, prev = (c + k - 1) % n;
      have[c][d] = copy_to(have[c][prev], dev[prev], dev[d]);
    }
  }
  for (int d = 0; d < n; d++) {
    uop *acc = NULL;
    for (int c = 0; c < n; c++) {
      uop *p = pad1(have[c][d], bound[c], N - bound[c + 1]);
      acc = acc ? fold(OP_ADD, acc, p) : p;
    }
    r[d] = acc;
  }
}

static int64_t numel_of(const uop *u) { int64_t n = 1; for (int i = 0; i < u->ndim; i++) n *= u->shape[i]; return n; }

/* Expands groups g[0..ng) (same devices, op and dtype) as one flat
 * allreduce; their sources already have earlier allreduces replaced (via
 * repl). Puts each dest node's result into repl. */
static int expand_bucket(ar_group **g, int ng, ptrmap *repl, allreduce_device_fn device_of, void *ctx) {
  int n = g[0]->n;
  tg_device *dev[AR_MAX_DEVICES];
  uop *f[AR_MAX_DEVICES], *r[AR_MAX_DEVICES];
  int64_t off[256 + 1];
  int64_t total = 0;
  for (int k = 0; k < ng; k++) { off[k] = total; total += numel_of(g[k]->src[0]); }
  off[ng] = total;
  for (int d = 0; d < n; d++) {
    uop *acc = NULL;
    for (int k = 0; k < ng; k++) {
      uop *s = flat1(graph_substitute(g[k]->src[d], repl));
      if (k == 0) {
        dev[d] = device_of(ctx, s);
        if (!dev[d]) return tg_seterr("allreduce: part %d has no device", d);
      }
      uop *p = ng == 1 ? s : pad1(s, off[k], total - off[k + 1]);
      acc = acc ? fold(OP_ADD, acc, p) : p;
    }
    f[d] = acc;
  }
  if (allreduce_choose(n, total) == ALLREDUCE_RING && total >= n) ring(g[0]->op, f, dev, n, r);
  else naive(g[0]->op, f, dev, n, r);
  for (int k = 0; k < ng; k++) {
    const uop *like = g[k]->src[0];
    for (int d = 0; d < n; d++) {
      if (!g[k]->dest[d]) continue;
      uop *x = shrink1(r[d], off[k], off[k + 1]);
      if (like->ndim != 1) x = uop1(OP_RESHAPE, x->dtype, x, arg_ints(like->shape, like->ndim));
      pm_put(repl, g[k]->dest[d], x);
    }
    g[k]->done = true;
  }
  return 0;
}

static int find_group(ar_groups *gs, uop *u) {
  for (int i = 0; i < gs->n; i++) {
    ar_group *g = &gs->v[i];
    if (g->n == u->nsrc && g->op == u->arg.v[0] && !memcmp(g->src, u->src, sizeof(uop *) * (size_t)u->nsrc)) return i;
  }
  ar_group g = { u->src, u->nsrc, u->arg.v[0], { 0 }, 0, false };
  VEC_PUSH(*gs, g);
  return gs->n - 1;
}

/* Groups that may share a bucket: same devices (their first sources'),
 * op, dtype and level. */
static bool bucket_mates(const ar_group *a, const ar_group *b, allreduce_device_fn device_of, void *ctx) {
  if (a->n != b->n || a->op != b->op || a->level != b->level || !dt_eq(a->src[0]->dtype, b->src[0]->dtype)) return false;
  for (int d = 0; d < a->n; d++) if (device_of(ctx, a->src[d]) != device_of(ctx, b->src[d])) return false;
  return true;
}

uop **allreduce_expand(uop *const *roots, int n, allreduce_device_fn device_of, void *ctx, ptrmap *rebuilt) {
  uop *sink = uop_new(OP_SINK, DT_VOID, roots, n, arg_none());
  uop_list topo = uop_toposort(sink);
  ar_groups gs = { 0 };
  ptrmap level = { 0 }, feeds = { 0 }, repl = { 0 };
  /* level of each node: how many allreduces deep its value is */
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    intptr_t l = 0;
    for (int j = 0; j < u->nsrc; j++) { intptr_t s = (intptr_t)pm_get(&level, u->src[j]); if (s > l) l = s; }
    if (u->op == OP_ALLREDUCE) {
      if (u->nsrc > AR_MAX_DEVICES || u->arg.n != 2 || u->arg.v[1] < 0 || u->arg.v[1] >= u->nsrc) {
        free(topo.v); VEC_FREE(gs); pm_free(&level);
        tg_seterr("allreduce: malformed ALLREDUCE node");
        return NULL;
      }
      l++;
      int g = find_group(&gs, u);
      gs.v[g].dest[u->arg.v[1]] = u;
      gs.v[g].level = (int)l;
    }
    if (l) pm_put(&level, u, (void *)l);
  }
  /* which nodes feed an allreduce: groups that feed none go last, in one bucket */
  for (int i = topo.n - 1; i >= 0; i--) {
    uop *u = topo.v[i];
    if (u->op == OP_ALLREDUCE || pm_get(&feeds, u)) for (int j = 0; j < u->nsrc; j++) pm_put(&feeds, u->src[j], (void *)1);
  }
  for (int i = 0; i < gs.n; i++) {
    bool feeds_other = false;
    for (int d = 0; d < gs.v[i].n; d++) feeds_other |= gs.v[i].dest[d] && pm_get(&feeds, gs.v[i].dest[d]);
    if (!feeds_other) gs.v[i].level = 1 << 30;
  }
  bool bucket = setting_int(SET_TG_ALLREDUCE_BUCKET) != 0;
  int rc = 0;
  for (;;) {
    int first = -1;
    for (int i = 0; i < gs.n; i++) if (!gs.v[i].done && (first < 0 || gs.v[i].level < gs.v[first].level)) first = i;
    if (first < 0) break;
    ar_group *b[256];
    int nb = 0;
    b[nb++] = &gs.v[first];
    for (int i = first + 1; bucket && i < gs.n && nb < 256; i++)
      if (!gs.v[i].done && bucket_mates(&gs.v[first], &gs.v[i], device_of, ctx)) b[nb++] = &gs.v[i];
    if ((rc = expand_bucket(b, nb, &repl, device_of, ctx)) < 0) break;
  }
  uop **out = NULL;
  if (rc == 0) {
    out = tg_xmalloc(sizeof(uop *) * (size_t)(n ? n : 1));
    ptrmap memo = { 0 };
    for (int i = 0; i < n; i++) out[i] = graph_substitute_memo(roots[i], &repl, rebuilt ? rebuilt : &memo);
    pm_free(&memo);
  }
  free(topo.v);
  VEC_FREE(gs);
  pm_free(&level); pm_free(&feeds); pm_free(&repl);
  return out;
}
