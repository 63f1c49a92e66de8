/* shard_lower.c: from a tensor graph over MULTI nodes to one graph per
 * device (tinygrad's multi rewrite). Every node lowers to either a plain
 * value (a graph on one device, or on none: constants) or parts: one graph
 * per device and the axis they split (-1: each part the whole value).
 *
 *  - elementwise ops run part by part; a plain or replicated operand is cut
 *    to each part's rows (and copied to its device when it lives on another);
 *  - movement ops run part by part with the sharded axis followed (a
 *    reshape keeps it where the parts stay boxes of the new shape; a shrink
 *    of exactly one part is that part);
 *  - a reduction over the sharded axis reduces each part, then ALLREDUCE
 *    nodes sum the partial results onto every device (replicated);
 *  - COPY (tg_to) gathers: each part copied to the target and put in place;
 *  - anything else gathers its operands onto the first device and runs
 *    there (correct, not parallel).
 * The invariant: parts[i] lives on dev[i], and the parts side by side on
 * the axis (or any one part, when replicated) are the unsharded value. */
#include <string.h>
#include "tensor/shard.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "schedule/allreduce.h"
#include "util/settings.h"

typedef struct {
  int n;                                   /* parts; 0: plain */
  int axis;                                /* split axis, -1 replicated */
  uop *u;                                  /* plain: the node */
  uop *part[SHARD_MAX_DEVICES];
  tg_device *dev[SHARD_MAX_DEVICES];
} mval;

typedef struct {
  ptrmap memo;                             /* uop -> mval* */
  ptrmap devs;                             /* plain uop -> tg_device* (&no_device: none) */
  struct { mval **v; int n, cap; } all;
  bool failed;
} lctx;

static char no_device;

static tg_device *plain_device(lctx *c, uop *u) {
  void *d = pm_get(&c->devs, u);
  if (d) return d == &no_device ? NULL : d;
  tg_device *r = NULL;
  if (u->op == OP_BUFFER) r = ((tg_buffer *)u->arg.p)->dev;
  else if (u->op == OP_COPY) r = device_get(u->arg.s);
  else for (int i = 0; i < u->nsrc && !r; i++) r = plain_device(c, u->src[i]);
  pm_put(&c->devs, u, r ? (void *)r : &no_device);
  return r;
}

static mval *new_val(lctx *c) {
  mval *m = tg_xcalloc(1, sizeof *m);
  VEC_PUSH(c->all, m);
  return m;
}
static mval *plain(lctx *c, uop *u) { mval *m = new_val(c); m->u = u; m->axis = -1; return m; }

static int64_t part_lo(const mval *m, int i) {
  int64_t lo = 0;
  for (int j = 0; j < i; j++) lo += m->part[j]->shape[m->axis];
  return lo;
}

static uop *shrink_axis(uop *u, int axis, int64_t lo, int64_t hi) {
  int64_t s[TG_MAX_DIMS * 4], e[TG_MAX_DIMS * 4];
  for (int i = 0; i < u->ndim; i++) { s[i] = 0; e[i] = u->shape[i]; }
  s[axis] = lo; e[axis] = hi;
  return mv_shrink(u, s, e);
}

static uop *on_device(lctx *c, uop *u, tg_device *d) {
  tg_device *have = plain_device(c, u);
  return !have || have == d ? u : uop1(OP_COPY, u->dtype, u, arg_str(d->name));
}

/* Sums of values that are zero outside their own rows: OR for bools. */
static uop *combine(uop_op op, uop *a, uop *b) {
  if (a->dtype.scalar == TG_BOOL) op = op == OP_MAX || op == OP_ADD ? OP_OR : op;
  return uop_alu(op, a, b);
}

/* The whole value of m on device d. */
static uop *gather(lctx *c, const mval *m, tg_device *d) {
  if (m->n == 0) return on_device(c, m->u, d);
  if (m->axis < 0) {
    for (int i = 0; i < m->n; i++) if (m->dev[i] == d) return m->part[i];
    return on_device(c, m->part[0], d);
  }
  int64_t total = part_lo(m, m->n);
  uop *acc = NULL;
  for (int i = 0; i < m->n; i++) {
    uop *p = on_device(c, m->part[i], d);
    int64_t pads[TG_MAX_DIMS * 8] = { 0 }, lo = part_lo(m, i);
    pads[2 * m->axis] = lo; pads[2 * m->axis + 1] = total - lo - p->shape[m->axis];
    p = mv_pad(p, pads, 0);
    acc = acc ? combine(OP_ADD, acc, p) : p;
  }
  return acc;
}

static bool same_parts(const mval *a, const mval *b) {
  if (a->n != b->n || a->axis != b->axis) return false;
  for (int i = 0; i < a->n; i++) {
    if (a->dev[i] != b->dev[i]) return false;
    if (a->axis >= 0 && a->part[i]->shape[a->axis] != b->part[i]->shape[b->axis]) return false;
  }
  return true;
}
static bool same_devices(const mval *a, const mval *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) if (a->dev[i] != b->dev[i]) return false;
  return true;
}

/* src as part i of the layout `like`. */
static uop *as_part(lctx *c, const mval *src, int i, const mval *like) {
  bool cut = like->axis >= 0;
  int64_t lo = cut ? part_lo(like, i) : 0, hi = cut ? lo + like->part[i]->shape[like->axis] : 0;
  uop *x;
  if (src->n && same_parts(src, like)) return src->part[i];
  if (src->n && src->axis < 0 && same_devices(src, like)) x = src->part[i];
  else if (src->n == 0) x = src->u;
  else x = gather(c, src, like->dev[i]);
  if (cut && x->ndim == like->part[i]->ndim && x->ndim > 0) x = shrink_axis(x, like->axis, lo, hi);
  return on_device(c, x, like->dev[i]);
}

/* u rebuilt per part of like, its sources taken as parts of like. */
static mval *per_part(lctx *c, uop *u, mval **s, const mval *like, int axis) {
  mval *m = new_val(c);
  m->n = like->n; m->axis = axis;
  memcpy(m->dev, like->dev, sizeof m->dev);
  for (int i = 0; i < like->n; i++) {
    uop *src[64];
    for (int j = 0; j < u->nsrc; j++) src[j] = as_part(c, s[j], i, like);
    m->part[i] = uop_replace_src(u, src, u->nsrc);
  }
  return m;
}

/* The op with a new argument (and shape) per part: build(u, part, i, ctx). */
static mval *per_part_arg(lctx *c, uop *u, const mval *x, int axis, uop_arg (*arg)(const uop *u, const mval *x, int i, int b, int64_t *buf), int64_t *buf) {
  mval *m = new_val(c);
  m->n = x->n; m->axis = axis;
  memcpy(m->dev, x->dev, sizeof m->dev);
  for (int i = 0; i < x->n; i++) m->part[i] = uop_new(u->op, u->dtype, &x->part[i], 1, arg(u, x, i, axis, buf));
  return m;
}

/* Shapes of movement ops per part: the op's own shape with the sharded
 * axis (old index a, new index b) at the part's size. */
static int reshape_axis(const uop *u, const mval *x) {
  const uop *in = u->src[0];
  int a = x->axis, nd = u->arg.n;
  int64_t P = 1, Q = 1, S = in->shape[a];
  for (int i = 0; i < a; i++) P *= in->shape[i];
  for (int i = a + 1; i < in->ndim; i++) Q *= in->shape[i];
  int64_t prefix = 1;
  for (int b = 0; b < nd; prefix *= u->arg.v[b], b++) {
    if (prefix != P || u->arg.v[b] == 1) continue;
    int64_t R = 1;
    for (int k = b + 1; k < nd; k++) R *= u->arg.v[k];
    if (u->arg.v[b] * R != S * Q) return -1;
    for (int i = 0; i <= x->n; i++) if ((part_lo(x, i) * Q) % R) return -1;
    return b;
  }
  return -1;
}
static uop_arg arg_reshape(const uop *u, const mval *x, int i, int b, int64_t *buf) {
  memcpy(buf, u->arg.v, sizeof(int64_t) * (size_t)u->arg.n);
  int64_t Q = 1;
  for (int k = x->axis + 1; k < u->src[0]->ndim; k++) Q *= u->src[0]->shape[k];
  int64_t R = 1;
  for (int k = b + 1; k < u->arg.n; k++) R *= u->arg.v[k];
  buf[b] = x->part[i]->shape[x->axis] * Q / R;
  return arg_ints(buf, u->arg.n);
}
static uop_arg arg_expand(const uop *u, const mval *x, int i, int b, int64_t *buf) {
  (void)b;
  memcpy(buf, u->arg.v, sizeof(int64_t) * (size_t)u->arg.n);
  buf[x->axis] = x->part[i]->shape[x->axis];
  return arg_ints(buf, u->arg.n);
}
static uop_arg arg_pairs(const uop *u, const mval *x, int i, int b, int64_t *buf) {
  (void)b;
  memcpy(buf, u->arg.v, sizeof(int64_t) * (size_t)u->arg.n);
  if (u->op == OP_SHRINK) { buf[2 * x->axis] = 0; buf[2 * x->axis + 1] = x->part[i]->shape[x->axis]; }
  return arg_ints(buf, u->arg.n);
}

/* Whether axis a of reduce u is reduced. */
static bool reduces_axis(const uop *u, int a) {
  for (int i = 1; i < u->arg.n; i++) if (u->arg.v[i] == a) return true;
  return false;
}

/* Per-part reduce, then the sum over the parts onto every device. With
 * ALLREDUCE_CAST (on unless TG_ALLREDUCE_CAST=0), a sum of a smaller float
 * type accumulated wider moves between devices in the smaller type, as
 * tinygrad does: half the bytes for half/bfloat16 tensors. */
static mval *reduce_across(lctx *c, uop *u, const mval *x) {
  mval *m = new_val(c);
  m->n = x->n; m->axis = -1;
  memcpy(m->dev, x->dev, sizeof m->dev);
  uop *partial[SHARD_MAX_DEVICES];
  dtype_t move = u->dtype;
  const uop *in = u->src[0];
  if (in->op == OP_CAST && dt_is_float(in->dtype) && dt_is_float(in->src[0]->dtype) &&
      dt_itemsize(in->src[0]->dtype) < dt_itemsize(in->dtype) && setting_int(SET_TG_ALLREDUCE_CAST))
    move = in->src[0]->dtype;
  for (int i = 0; i < x->n; i++) partial[i] = uop_cast(uop_replace_src(u, &x->part[i], 1), move);
  for (int i = 0; i < x->n; i++) {
    int64_t a[2] = { u->arg.v[0], i };
    m->part[i] = uop_cast(uop_new(OP_ALLREDUCE, move, partial, x->n, arg_ints(a, 2)), u->dtype);
  }
  return m;
}

static mval *lower(lctx *c, uop *u);

/* The fallback: every sharded operand gathered on the first device. */
static mval *gathered(lctx *c, uop *u, mval **s, const mval *first) {
  uop *src[64];
  for (int j = 0; j < u->nsrc; j++) src[j] = s[j]->n ? gather(c, s[j], first->dev[0]) : s[j]->u;
  return plain(c, uop_replace_src(u, src, u->nsrc));
}

/* Rows picked from a table sharded on another axis (a KV cache split by kv
 * heads; a sequence's block of it) by a plain or replicated index: each
 * part takes the same rows, its own copy of the index (never cut: it
 * counts rows, not the split axis). */
static mval *take_rows(lctx *c, uop *u, mval **s, const mval *x) {
  mval *m = new_val(c);
  m->n = x->n; m->axis = u->src[1]->ndim + x->axis - 1;
  memcpy(m->dev, x->dev, sizeof m->dev);
  for (int i = 0; i < x->n; i++) {
    uop *index = s[1]->n ? s[1]->part[i] : on_device(c, s[1]->u, x->dev[i]);
    m->part[i] = uop_replace_src(u, (uop *[]){ x->part[i], index }, 2);
  }
  return m;
}

static mval *lower_multi(lctx *c, uop *u, mval **s) {
  mval *m = new_val(c);
  m->n = u->nsrc; m->axis = (int)u->arg.i;
  for (int i = 0; i < u->nsrc; i++) {
    tg_device *d = s[i]->n ? s[i]->dev[0] : plain_device(c, s[i]->u);
    if (!d) { tg_seterr("tg_shard: internal: part %d has no device", i); c->failed = true; d = device_get("CPU"); }
    m->part[i] = s[i]->n ? gather(c, s[i], d) : s[i]->u;
    m->dev[i] = d;
  }
  return m;
}

static mval *lower_node(lctx *c, uop *u) {
  mval *s[64];
  const mval *first = NULL, *like = NULL;
  uop *src[64];
  for (int j = 0; j < u->nsrc; j++) {
    s[j] = lower(c, u->src[j]);
    if (s[j]->n && !first) first = s[j];
    if (s[j]->n && s[j]->axis >= 0 && !like) like = s[j];
  }
  if (u->op == OP_MULTI) return lower_multi(c, u, s);
  if (!first) {
    for (int j = 0; j < u->nsrc; j++) src[j] = s[j]->u;
    return plain(c, uop_replace_src(u, src, u->nsrc));
  }
  if (u->op == OP_COPY) return plain(c, gather(c, first, device_get(u->arg.s)));
  if (!like) {   /* every sharded operand replicated: anything runs part by part */
    if (u->op == OP_REDUCE_AXIS || u->op == OP_ASSIGN || u->op == OP_AFTER || uop_is_alu(u->op) || uop_is_movement(u->op) ||
        u->op == OP_CONTIGUOUS || u->op == OP_DETACH || u->op == OP_UNIQUE || u->op == OP_WINDOW || u->op == OP_TAKE)
      return per_part(c, u, s, first, -1);
    return gathered(c, u, s, first);
  }
  const mval *x = s[0];
  int a = x->axis;
  int64_t buf[TG_MAX_DIMS * 8];
  if (uop_is_alu(u->op) || u->op == OP_CONTIGUOUS || u->op == OP_DETACH || u->op == OP_UNIQUE || u->op == OP_AFTER)
    return per_part(c, u, s, like, like->axis);
  if (u->op == OP_ASSIGN) {
    if (!x->n) return plain(c, uop_replace_src(u, (uop *[]){ x->u, gather(c, s[1], plain_device(c, x->u)) }, 2));
    return per_part(c, u, s, x, x->axis);
  }
  if (u->op == OP_TAKE && s[1] == like && s[0]->axis < 0) {
    /* a sharded index into a replicated (or plain) table: rows per part */
    mval *m = new_val(c);
    m->n = like->n; m->axis = like->axis;
    memcpy(m->dev, like->dev, sizeof m->dev);
    for (int i = 0; i < like->n; i++) {
      uop *table = s[0]->n && same_devices(s[0], like) ? s[0]->part[i] : gather(c, s[0], like->dev[i]);
      m->part[i] = uop_replace_src(u, (uop *[]){ table, like->part[i] }, 2);
    }
    return m;
  }
  if (x != like) return gathered(c, u, s, first);   /* the first operand is not the sharded one */
  if (u->op == OP_TAKE && a >= 1 && s[1]->axis < 0 && (s[1]->n == 0 || same_devices(s[1], x))) return take_rows(c, u, s, x);
  switch (u->op) {
  case OP_RESHAPE: {
    int b = reshape_axis(u, x);
    if (b >= 0) return per_part_arg(c, u, x, b, arg_reshape, buf);
    break;
  }
  case OP_PERMUTE:
    for (int j = 0; j < u->arg.n; j++) if (u->arg.v[j] == a) return per_part(c, u, s, x, j);
    break;
  case OP_EXPAND:
    if (u->arg.v[a] == u->src[0]->shape[a]) return per_part_arg(c, u, x, a, arg_expand, buf);
    break;
  case OP_PAD:
    if (u->arg.v[2 * a] == 0 && u->arg.v[2 * a + 1] == 0) return per_part_arg(c, u, x, a, arg_pairs, buf);
    break;
  case OP_SHRINK: {
    int64_t lo = u->arg.v[2 * a], hi = u->arg.v[2 * a + 1];
    if (lo == 0 && hi == u->src[0]->shape[a]) return per_part_arg(c, u, x, a, arg_pairs, buf);
    for (int i = 0; i < x->n; i++)
      if (lo == part_lo(x, i) && hi == part_lo(x, i + 1)) {
        /* exactly part i: the shrink of the other axes on that part */
        int64_t b2[TG_MAX_DIMS * 8];
        memcpy(b2, u->arg.v, sizeof(int64_t) * (size_t)u->arg.n);
        b2[2 * a] = 0; b2[2 * a + 1] = hi - lo;
        return plain(c, uop1(OP_SHRINK, u->dtype, x->part[i], arg_ints(b2, u->arg.n)));
      }
    break;
  }
  case OP_SHRINK_VAR:   /* a symbolic length (the KV cache's attended rows) on another axis */
    if (u->arg.i != a) return per_part(c, u, s, x, a);
    break;
  case OP_FLIP:
    if (!u->arg.v[a]) return per_part(c, u, s, x, a);
    break;
  case OP_WINDOW:
    if (a < u->src[0]->ndim - (int)u->arg.v[0]) return per_part(c, u, s, x, a);
    break;
  case OP_REDUCE_AXIS:
    return reduces_axis(u, a) ? reduce_across(c, u, x) : per_part(c, u, s, x, a);
  default: break;
  }
  return gathered(c, u, s, first);
}

static mval *lower(lctx *c, uop *u) {
  mval *m = pm_get(&c->memo, u);
  if (m) return m;
  m = lower_node(c, u);
  pm_put(&c->memo, u, m);
  return m;
}

static void lctx_free(lctx *c) {
  for (int i = 0; i < c->all.n; i++) free(c->all.v[i]);
  VEC_FREE(c->all);
  pm_free(&c->memo); pm_free(&c->devs);
}

int shard_axis_of(uop *u) {
  lctx c = { 0 };
  uop_pool_push();
  mval *m = lower(&c, u);
  int axis = m->n ? m->axis : -2;
  uop_pool_pop();
  lctx_free(&c);
  return axis;
}

static tg_device *device_fn(void *ctx, uop *u) { return plain_device(ctx, u); }

bool shard_graph_has_multi(uop *const *roots, int n) {
  if (!shard_used()) return false;
  uop *sink = uop_new(OP_SINK, DT_VOID, roots, n, arg_none());
  uop_list topo = uop_toposort(sink);
  bool any = false;
  for (int i = 0; i < topo.n && !any; i++) any = topo.v[i]->op == OP_MULTI;
  free(topo.v);
  return any;
}

typedef struct { uop **v; int n, cap; } uop_vec;

/* Every root lowered (low[i]), their parts listed in order, allreduces
 * expanded: the graphs to schedule (malloc'd), or NULL with tg_error. */
static uop **lower_all(lctx *c, uop *const *roots, int n, mval **low, int *nout, ptrmap *rebuilt) {
  uop_vec flat = { 0 };
  for (int i = 0; i < n; i++) {
    low[i] = lower(c, roots[i]);
    if (low[i]->n == 0) VEC_PUSH(flat, low[i]->u);
    else for (int k = 0; k < low[i]->n; k++) VEC_PUSH(flat, low[i]->part[k]);
  }
  uop **ex = c->failed ? NULL : allreduce_expand(flat.v, flat.n, device_fn, c, rebuilt);
  *nout = flat.n;
  VEC_FREE(flat);
  return ex;
}

uop **shard_lower_roots(uop *const *roots, int n, int *nout) {
  lctx c = { 0 };
  mval **low = tg_xmalloc(sizeof(mval *) * (size_t)(n ? n : 1));
  uop **ex = lower_all(&c, roots, n, low, nout, NULL);
  free(low);
  lctx_free(&c);
  return ex;
}

/* The tensor-graph nodes inside the roots whose parts were stored (the
 * schedule's contiguous values, a layer's outputs): each becomes the MULTI
 * of its parts' memory, as on one device each stored node becomes its
 * buffer, so that the live tensors over them stop holding (and every
 * later realize stops walking) the whole graph below. got maps what was
 * scheduled, rebuilt the lowered nodes the allreduces' expansion rebuilt. */
static void stored_inside(lctx *c, const ptrmap *got, const ptrmap *rebuilt, ptrmap *becomes) {
  for (size_t k = 0; k < c->memo.cap; k++) {
    uop *u = c->memo.e[k].key;
    const mval *m = u ? c->memo.e[k].val : NULL;
    if (!m || u->op == OP_MULTI || pm_get(becomes, u)) continue;
    int np = m->n ? m->n : 1;
    uop *parts[SHARD_MAX_DEVICES];
    bool all = true;
    for (int i = 0; i < np && all; i++) {
      uop *p = m->n ? m->part[i] : m->u, *x = pm_get(rebuilt, p);
      all = (parts[i] = pm_get(got, x ? x : p)) != NULL;
    }
    if (all) pm_put(becomes, u, m->n ? uop_new(OP_MULTI, u->dtype, parts, np, arg_int(m->axis)) : parts[0]);
  }
}

/* The roots lowered to per-device graphs, then realized (lin NULL) or
 * made into a linear to run later (tg_schedule); either way `becomes`
 * says what each root and stored node is then (a MULTI of the parts). */
static int shard_schedule(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *lin) {
  lctx c = { 0 };
  mval **low = tg_xmalloc(sizeof(mval *) * (size_t)(n ? n : 1));
  int nflat = 0;
  ptrmap rebuilt = { 0 };
  uop **ex = lower_all(&c, roots, n, low, &nflat, &rebuilt);
  int rc = ex ? 0 : -1;
  ptrmap got = { 0 };
  if (rc == 0) {
    const char *first = shard_first_device(default_device);
    rc = lin ? engine_linearize(ex, nflat, first, &got, lin) : engine_realize(ex, nflat, first, &got);
  }
  if (rc == 0) {
    for (size_t k = 0; k < got.cap; k++) if (got.e[k].key) pm_put(becomes, got.e[k].key, got.e[k].val);
    int f = 0;
    for (int i = 0; i < n; i++) {
      int np = low[i]->n ? low[i]->n : 1;
      uop *parts[SHARD_MAX_DEVICES];
      for (int k = 0; k < np; k++, f++) { uop *r = pm_get(&got, ex[f]); parts[k] = r ? r : ex[f]; }
      uop *r = low[i]->n ? uop_new(OP_MULTI, roots[i]->dtype, parts, np, arg_int(low[i]->axis)) : parts[0];
      if (r != roots[i]) pm_put(becomes, roots[i], r);
    }
    stored_inside(&c, &got, &rebuilt, becomes);
  }
  pm_free(&rebuilt);
  pm_free(&got);
  free(ex);
  free(low);
  lctx_free(&c);
  return rc;
}

int shard_realize(uop *const *roots, int n, const char *default_device, ptrmap *becomes) { return shard_schedule(roots, n, default_device, becomes, NULL); }
int shard_linearize(uop *const *roots, int n, const char *default_device, ptrmap *becomes, linear *lin) {
  return shard_schedule(roots, n, default_device, becomes, lin);
}
