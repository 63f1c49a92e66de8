/* tensor.c: tensor handles, scopes, the live-tensor list, creation,
 * inspection, and realization entry points. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include "tensor/tensor.h"
#include "engine/realize.h"
#include "runtime/buffer.h"
#include "uop/symbolic.h"
#include "uop/dims.h"
#include "tensor/shard.h"
#include "util/settings.h"

/* ---- per-thread tensor contexts. Every thread that makes tensors has one:
 * its stack of open scopes and the list of the live tensors it made, behind
 * its own lock, so threads that build, realize and free their own graphs do
 * not wait on each other (nor see each other's scopes). A tensor may still be
 * used, kept or freed from any thread: it records its context and takes that
 * lock. The passes that must see every live tensor (substitution after a
 * realize, assigns, gradients) walk all contexts (lock order: ctxs_lock,
 * then one context's lock). A context outlives its thread while tensors it
 * made are alive; an empty one is freed when its thread ends. */
typedef struct tg_scope { tg_tensor **v; int n, cap; struct tg_scope *up; } tg_scope;
typedef struct tensor_ctx {
  pthread_mutex_t lock;        /* the live list and the slots of every scope below */
  tg_tensor *live;             /* tensors this thread made, not yet freed */
  tg_scope *scope;             /* the innermost open scope (NULL: none) */
  struct tensor_ctx *prev, *next;   /* every context, under ctxs_lock */
} tensor_ctx;
static tensor_ctx *ctxs;
static pthread_mutex_t ctxs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ctx_key;
static _Thread_local tensor_ctx *my_ctx;

/* at thread exit: forget the context when nothing of it is left */
static void ctx_thread_end(void *p) {
  tensor_ctx *c = p;
  pthread_mutex_lock(&ctxs_lock);
  pthread_mutex_lock(&c->lock);
  bool empty = !c->live && !c->scope;
  pthread_mutex_unlock(&c->lock);
  if (empty) {
    if (c->prev) c->prev->next = c->next; else ctxs = c->next;
    if (c->next) c->next->prev = c->prev;
  }
  pthread_mutex_unlock(&ctxs_lock);
  if (empty) { pthread_mutex_destroy(&c->lock); free(c); }
}
static void ctx_key_init(void) { pthread_key_create(&ctx_key, ctx_thread_end); }

static tensor_ctx *ctx_here(void) {
  if (my_ctx) return my_ctx;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, ctx_key_init);
  tensor_ctx *c = tg_xcalloc(1, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  pthread_mutex_lock(&ctxs_lock);
  c->next = ctxs; if (ctxs) ctxs->prev = c; ctxs = c;
  pthread_mutex_unlock(&ctxs_lock);
  pthread_setspecific(ctx_key, c);
  return my_ctx = c;
}

/* Calls fn on every live tensor of every thread, each context locked in turn. */
static void each_live(void (*fn)(tg_tensor *t, void *arg), void *arg) {
  pthread_mutex_lock(&ctxs_lock);
  for (tensor_ctx *c = ctxs; c; c = c->next) {
    pthread_mutex_lock(&c->lock);
    for (tg_tensor *t = c->live; t; t = t->next) fn(t, arg);
    pthread_mutex_unlock(&c->lock);
  }
  pthread_mutex_unlock(&ctxs_lock);
}

static void scope_add(tg_scope *s, tg_tensor *t) {
  if (s->n == s->cap) { s->cap = s->cap ? s->cap * 2 : 16; s->v = tg_xrealloc(s->v, sizeof(tg_tensor *) * (size_t)s->cap); }
  t->scope = s; t->scope_slot = s->n;
  s->v[s->n++] = t;
}
/* the caller holds t->ctx->lock */
static void scope_remove(tg_tensor *t) {
  if (t->scope) t->scope->v[t->scope_slot] = NULL;
  t->scope = NULL;
}
static void live_unlink(tg_tensor *t) {   /* the caller holds t->ctx->lock */
  if (t->prev) t->prev->next = t->next; else t->ctx->live = t->next;
  if (t->next) t->next->prev = t->prev;
}

static void init_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, buffer_init_hooks);
}

static _Thread_local bool no_grad_mode;
void tg_set_no_grad(bool on) { no_grad_mode = on; }
bool tg_no_grad(void) { return no_grad_mode; }

tg_tensor *tensor_wrap(uop *u, const char *device) {
  init_once();
  if (u->dim_err) { tg_seterr("symbolic dimension: %s", u->dim_err); return NULL; }
  if (no_grad_mode) {
    /* results carry no gradient; views of memory stay views */
    const uop *x = u;
    while (uop_is_movement(x->op)) x = x->src[0];
    if (x->op != OP_BUFFER && x->op != OP_DETACH) u = uop1(OP_DETACH, u->dtype, u, arg_none());
  }
  tg_tensor *t = tg_xcalloc(1, sizeof *t);
  t->u = u; uop_retain(u);
  t->device = device;
  tensor_ctx *c = ctx_here();
  t->ctx = c;
  pthread_mutex_lock(&c->lock);
  if (c->scope) scope_add(c->scope, t);
  t->next = c->live; if (c->live) c->live->prev = t; c->live = t;
  pthread_mutex_unlock(&c->lock);
  return t;
}

/* Frees t, out of its scope and unlinked, and the gradients it owns (each
 * unlinked under its own context's lock: a gradient may come from another
 * thread). */
static void tensor_destroy(tg_tensor *t) {
  while (t) {
    tg_tensor *g = t->grad;
    uop_release(t->u);
    free(t);
    if (g) { pthread_mutex_lock(&g->ctx->lock); live_unlink(g); pthread_mutex_unlock(&g->ctx->lock); }
    t = g;
  }
}

void tensor_adopt(tg_tensor *owner, tg_tensor *t) {
  pthread_mutex_lock(&t->ctx->lock);
  scope_remove(t);
  t->owner = owner;
  pthread_mutex_unlock(&t->ctx->lock);
}

typedef struct { tg_tensor **out; int n, max; } pending_list;
static void add_pending(tg_tensor *t, void *arg) {
  pending_list *p = arg;
  if (t->u->op == OP_ASSIGN && p->n < p->max) p->out[p->n++] = t;
}
int tensors_pending_assigns(tg_tensor **out, int max) {
  pending_list p = { out, 0, max };
  each_live(add_pending, &p);
  return p.n;
}

typedef struct { void (*fn)(tg_tensor *t, void *ctx); void *ctx; } grad_visit;
static void visit_requiring_grad(tg_tensor *t, void *arg) {
  grad_visit *v = arg;
  if (t->requires_grad) v->fn(t, v->ctx);
}
void tensors_each_requiring_grad(void (*fn)(tg_tensor *t, void *ctx), void *ctx) {
  each_live(visit_requiring_grad, &(grad_visit){ fn, ctx });
}

void tg_scope_begin(void) {
  tensor_ctx *c = ctx_here();
  tg_scope *s = tg_xcalloc(1, sizeof *s);
  pthread_mutex_lock(&c->lock);
  s->up = c->scope; c->scope = s;
  pthread_mutex_unlock(&c->lock);
}

void tg_scope_end(void) {
  tensor_ctx *c = ctx_here();
  pthread_mutex_lock(&c->lock);
  tg_scope *s = c->scope;
  if (!s) { pthread_mutex_unlock(&c->lock); return; }   /* no scope open */
  c->scope = s->up;
  int n = 0;
  for (int i = 0; i < s->n; i++) if (s->v[i]) { s->v[i]->scope = NULL; live_unlink(s->v[i]); s->v[n++] = s->v[i]; }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < n; i++) tensor_destroy(s->v[i]);
  free(s->v); free(s);
}

tg_tensor *tg_keep(tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_keep", "t"); return NULL; }
  pthread_mutex_lock(&t->ctx->lock);
  tg_scope *s = t->scope;
  if (s && !t->owner) {   /* to the enclosing scope, or to none */
    scope_remove(t);
    if (s->up) scope_add(s->up, t);
  }
  pthread_mutex_unlock(&t->ctx->lock);
  return t;
}

void tg_release_cached_memory(void) { buffer_cache_trim(); }

void tg_free(tg_tensor *t) {
  if (!t || t->owner) return;   /* a gradient belongs to its tensor */
  pthread_mutex_lock(&t->ctx->lock);
  scope_remove(t);
  live_unlink(t);
  pthread_mutex_unlock(&t->ctx->lock);
  tensor_destroy(t);
}

/* Rebuilds u with buf replaced by repl, not entering ASSIGN nodes (an
 * assign's own reads keep reading the old contents). */
static uop *subst_outside_assigns(uop *u, uop *buf, uop *repl, ptrmap *memo) {
  if (u == buf) return repl;
  if (u->op == OP_ASSIGN || u->op == OP_BUFFER || u->op == OP_CONST) return u;
  uop *m = pm_get(memo, u);
  if (m) return m;
  uop *src[64];
  for (int i = 0; i < u->nsrc; i++) src[i] = subst_outside_assigns(u->src[i], buf, repl, memo);
  uop *r = uop_replace_src(u, src, u->nsrc);
  pm_put(memo, u, r);
  return r;
}

typedef struct { uop *buf, *after; const tg_tensor *except; } assign_visit;
static void see_assign(tg_tensor *t, void *arg) {
  assign_visit *a = arg;
  if (t == a->except) return;
  /* only tensors that are the memory itself (views of the buffer) see the
   * write; a lazy computation reads the buffer when it runs, ordered
   * before the assign when both are in one schedule */
  const uop *x = t->u;
  while (uop_is_movement(x->op) || x->op == OP_AFTER) x = x->src[0];
  if (x != a->buf) return;
  ptrmap memo = { 0 };
  uop *nu = subst_outside_assigns(t->u, a->buf, a->after, &memo);
  pm_free(&memo);
  if (nu != t->u) { uop_retain(nu); uop_release(t->u); t->u = nu; }
}
void tensors_after_assign(uop *buf, uop *assign, const tg_tensor *except) {
  uop_pool_push();
  uop *after = uop2(OP_AFTER, buf->dtype, buf, assign, arg_none());
  each_live(see_assign, &(assign_visit){ buf, after, except });
  uop_pool_pop();
}

/* AFTER(x, deps) whose deps have all run (none is an ASSIGN any more) is x. */
static uop *drop_done_afters(uop *u, ptrmap *memo) {
  if (!u->has_after) return u;
  uop *m = pm_get(memo, u);
  if (m) return m;
  uop *r = u;
  if (u->op == OP_AFTER) {
    bool pending = false;
    for (int i = 1; i < u->nsrc; i++) pending |= u->src[i]->op == OP_ASSIGN;
    if (!pending) r = drop_done_afters(u->src[0], memo);
  }
  if (r == u && u->nsrc && u->op != OP_BUFFER) {
    uop *src[64];
    for (int i = 0; i < u->nsrc; i++) src[i] = drop_done_afters(u->src[i], memo);
    r = uop_replace_src(u, src, u->nsrc);
  }
  pm_put(memo, u, r);
  return r;
}

/* What a realize replaces: the oldest replaced node's id, and the
 * distinct leaf summaries of the replaced nodes (all = true: too many to
 * test, every graph younger than the oldest is walked). */
typedef struct { const ptrmap *becomes; uint64_t oldest; uint64_t leaves[8]; int nleaves; bool all; } subst_pass;

static void substitute_one(tg_tensor *t, void *arg) {
  const subst_pass *p = arg;
  /* a graph that holds no replaced node is its own substitute: skip the
   * walk (a loader realizing each of N weights would otherwise walk all N
   * lazy graphs each time). A node's sources are made before it (ids count
   * up), so a graph whose root is older than every replaced node holds
   * none; nor does one whose leaves lack some replaced node's. */
  if (t->u->id < p->oldest) return;
  bool touched = p->all;
  for (int i = 0; i < p->nleaves && !touched; i++) touched = (p->leaves[i] & ~t->u->leaves) == 0;
  uop *nu = touched ? graph_substitute(t->u, p->becomes) : t->u;
  if (nu->has_after) {
    ptrmap memo = { 0 };
    nu = drop_done_afters(nu, &memo);
    pm_free(&memo);
  }
  if (nu != t->u) { uop_retain(nu); uop_release(t->u); t->u = nu; }
}
void tensors_substitute(const ptrmap *becomes) {
  if (!becomes->n) return;
  subst_pass p = { .becomes = becomes, .oldest = UINT64_MAX };
  for (size_t i = 0; i < becomes->cap; i++) {
    const uop *k = becomes->e[i].key;
    if (!k) continue;
    if (k->id < p.oldest) p.oldest = k->id;
    int j = 0;
    while (j < p.nleaves && p.leaves[j] != k->leaves) j++;
    if (j < p.nleaves || p.all) continue;
    if (p.nleaves == 8) p.all = true;
    else p.leaves[p.nleaves++] = k->leaves;
  }
  each_live(substitute_one, &p);
}

void tensor_null_input(const char *op) {
  if (!tg_error()[0]) tg_seterr("%s: input is NULL (an earlier call failed)", op);
}
void tensor_null_arg(const char *op, const char *arg) {
  if (!tg_error()[0]) tg_seterr("%s: %s is NULL", op, arg);
}

/* ---- devices */
/* atomic: the first tensors of several threads may all look it up */
static const char *_Atomic default_device_name;
int tg_set_default_device(const char *name) {
  tg_device *d = device_get(name);
  if (!d) return -1;
  atomic_store(&default_device_name, d->name);
  return 0;
}
/* A thread's device for new tensors while an op builds a graph over
 * tensors of another device (tensor_device_begin), else NULL. */
static _Thread_local const char *device_override;
const char *tensor_device_begin(const char *device) {
  const char *prev = device_override;
  device_override = device;
  return prev;
}
void tensor_device_end(const char *prev) { device_override = prev; }

const char *tg_default_device(void) {
  if (device_override) return device_override;
  const char *name = atomic_load(&default_device_name);
  if (!name) {
    const char *env = setting_str(SET_TG_DEVICE);
    tg_device *d = env && *env ? device_get(env) : NULL;
    const char *found = d ? d->name : device_get("CPU")->name;
    /* a tg_set_default_device that ran meanwhile wins */
    if (!atomic_compare_exchange_strong(&default_device_name, &name, found)) return name;
    name = found;
  }
  return name;
}
const char *tg_device_of(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_device_of", "t"); return NULL; }
  return t->device;
}

bool tensor_wide_layouts(const tg_tensor *t) {
  tg_device *d = t ? device_get(shard_first_device(t->device)) : NULL;
  return d && d->renderer && d->renderer->wide_layouts;
}

/* ---- inspection */
tg_shape tg_shape_of(const tg_tensor *t) {
  tg_shape s = { 0, { 0 } };
  if (!t) { s.ndim = -1; return s; }
  s.ndim = t->u->ndim;
  for (int i = 0; i < s.ndim && i < TG_MAX_DIMS; i++) s.d[i] = t->u->shape[i];
  return s;
}
int tg_ndim(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_ndim", "t"); return -1; }
  return t->u->ndim;
}
int norm_axis(int axis, int ndim, const char *op) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) return tg_seterr("%s: axis %d out of range for a %d-D tensor", op, axis, ndim);
  return a;
}
int64_t tg_dim(const tg_tensor *t, int axis) {
  if (!t) { tensor_null_arg("tg_dim", "t"); return -1; }
  int a = norm_axis(axis, t->u->ndim, "tg_dim");
  return a < 0 ? -1 : t->u->shape[a];
}
int64_t shape_numel(const int64_t *shape, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++)
    if (tg_mul_overflow_i64(n, shape[i], &n)) return -1;
  return n;
}
bool shape_ok(const int64_t *shape, int nd, const char *op) {
  if (tg_checked_numel(shape, nd) >= 0) return true;
  char s[200];
  int k = snprintf(s, sizeof s, "(");
  for (int i = 0; i < nd && k < (int)sizeof s - 24; i++) k += snprintf(s + k, sizeof s - (size_t)k, i ? ",%lld" : "%lld", (long long)shape[i]);
  snprintf(s + k, sizeof s - (size_t)k, ")");
  for (int i = 0; i < nd; i++)
    if (shape[i] < 0) { tg_seterr("%s: shape %s has a negative dimension (axis %d)", op, s, i); return false; }
  tg_seterr("%s: shape %s has more than 2^59 elements (the most a tensor may hold)", op, s);
  return false;
}
int64_t tg_numel(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_numel", "t"); return -1; }
  return shape_numel(t->u->shape, t->u->ndim);
}
tg_dtype tg_dtype_of(const tg_tensor *t) { return t ? (tg_dtype)t->u->dtype.scalar : TG_F32; }
void tg_print_graph(const tg_tensor *t) {
  if (!t) { printf("(null tensor)\n"); return; }
  uop_print(stdout, t->u);
}

/* ---- movement UOps (shapes already validated) */
uop *mv_reshape(uop *u, const int64_t *shape, int nd) {
  /* chains of reshapes stay in the graph (autograd finds tensors by their
   * node); the scheduler sees through them */
  if (u->ndim == nd && !memcmp(u->shape, shape, sizeof(int64_t) * (size_t)nd)) return u;
  return uop1(OP_RESHAPE, u->dtype, u, arg_ints(shape, nd));
}
uop *mv_expand(uop *u, const int64_t *shape, int nd) {
  if (u->ndim == nd && !memcmp(u->shape, shape, sizeof(int64_t) * (size_t)nd)) return u;
  return uop1(OP_EXPAND, u->dtype, u, arg_ints(shape, nd));
}
uop *mv_permute(uop *u, const int64_t *order) {
  bool ident = true;
  for (int i = 0; i < u->ndim; i++) ident &= order[i] == i;
  return ident ? u : uop1(OP_PERMUTE, u->dtype, u, arg_ints(order, u->ndim));
}
uop *const_like(double v, dtype_t dt, const int64_t *shape, int nd) {
  uop *c = uop_const(dt, v);
  if (nd == 0) return c;
  int64_t ones[TG_MAX_DIMS * 4];
  for (int i = 0; i < nd; i++) ones[i] = 1;
  return mv_expand(mv_reshape(c, ones, nd), shape, nd);
}

/* ---- shared helpers */

/* Every bit set, broadcast to x's shape. Not const_like(-1): uop_const goes
 * through a double, and 2^64-1 (uint64's all-ones) is not one. */
static uop *all_ones_like(uop *x) {
  int bits = 8 * tg_dtype_size((tg_dtype)x->dtype.scalar);
  uop *c = uop_const_int(x->dtype, dt_is_unsigned(x->dtype) && bits < 64 ? (int64_t)((1ULL << bits) - 1) : -1);
  if (x->ndim == 0) return c;
  int64_t ones[TG_MAX_DIMS * 4];
  for (int i = 0; i < x->ndim; i++) ones[i] = 1;
  return mv_expand(mv_reshape(c, ones, x->ndim), x->shape, x->ndim);
}
uop *order_inverse(uop *x) {
  if (x->dtype.scalar == TG_BOOL) return uop_alu(OP_CMPEQ, x, const_like(0, x->dtype, x->shape, x->ndim));
  if (dt_is_int(x->dtype)) return uop_alu(OP_XOR, x, all_ones_like(x));
  return uop_alu1(OP_NEG, x);
}

/* ---- creation */

/* Tensors made by creation ops are distinct tensors even when their values
 * are equal: two tg_zeros must realize into two buffers, or an assign to one
 * would change the other. UNIQUE is free in kernels (lowering skips it). */
uop *make_unique(uop *u) {
  static int64_t next = 1;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  int64_t id = next++;
  pthread_mutex_unlock(&mu);
  return uop1(OP_UNIQUE, u->dtype, u, arg_int(id));
}
static bool check_shape(tg_shape s, const char *op) {
  if (s.ndim < 0 || s.ndim > TG_MAX_DIMS) { tg_seterr("%s: bad number of dimensions %d", op, s.ndim); return false; }
  for (int i = 0; i < s.ndim; i++)
    if (s.d[i] < 0) { tg_seterr("%s: negative dimension %lld at axis %d", op, (long long)s.d[i], i); return false; }
  return shape_ok(s.d, s.ndim, op);
}
static bool check_dtype(tg_dtype dt, const char *op) {
  if ((int)dt < 0 || dt >= TG_DTYPE_COUNT) { tg_seterr("%s: unknown dtype %d", op, (int)dt); return false; }
  return true;
}

/* device NULL: the default device. A device tuple (an op building over
 * sharded tensors makes its tables there) gets the value on every device:
 * made on the first, replicated (tg_shard, axis -1). */
static tg_tensor *new_buffer_tensor_on(const char *device, tg_shape shape, tg_dtype dt, const void *data, const char *op) {
  if (!check_shape(shape, op) || !check_dtype(dt, op)) return NULL;
  if (!device) device = tg_default_device();
  if (shard_used() && shard_is_multi_name(device)) {
    tg_tensor *t = new_buffer_tensor_on(shard_first_device(device), shape, dt, data, op);
    return t ? shard_replicate_on(t, device) : NULL;
  }
  tg_device *dev = device_get(device);
  if (!dev) return NULL;
  int64_t n = shape_numel(shape.d, shape.ndim);
  tg_buffer *b = buffer_new(dev, dt, n);
  if (data && (buffer_alloc(b) < 0 || buffer_copyin(b, data, (size_t)n * (size_t)tg_dtype_size(dt)) < 0)) {
    buffer_release(b);
    return NULL;
  }
  API_BEGIN;
  init_once();
  uop *u = uop0(OP_BUFFER, dt_scalar(dt), arg_ptr(b));
  buffer_release(b);   /* the BUFFER node holds it now */
  u = mv_reshape(u, shape.d, shape.ndim);
  API_RETURN(tensor_wrap(u, dev->name));
}

static tg_tensor *new_buffer_tensor(tg_shape shape, tg_dtype dt, const void *data, const char *op) {
  return new_buffer_tensor_on(NULL, shape, dt, data, op);
}

tg_tensor *tg_from_data(const void *data, tg_shape shape, tg_dtype dt) {
  if (!data) TG_FAIL("tg_from_data: data is NULL");
  return new_buffer_tensor(shape, dt, data, "tg_from_data");
}
tg_tensor *tg_empty(tg_shape shape, tg_dtype dt) { return new_buffer_tensor(shape, dt, NULL, "tg_empty"); }

tg_tensor *tg_full(tg_shape shape, double value, tg_dtype dt) {
  if (!check_shape(shape, "tg_full") || !check_dtype(dt, "tg_full")) return NULL;
  API_BEGIN;
  API_RETURN(tensor_wrap(make_unique(const_like(value, dt_scalar(dt), shape.d, shape.ndim)), tg_default_device()));
}
tg_tensor *tg_zeros(tg_shape shape, tg_dtype dt) { return tg_full(shape, 0, dt); }
tg_tensor *tg_ones(tg_shape shape, tg_dtype dt) { return tg_full(shape, 1, dt); }
tg_tensor *tg_scalar(double value, tg_dtype dt) { return tg_full(TG_SHAPE(), value, dt); }
tg_tensor *tensor_const(double value, tg_dtype dt) {
  if (!check_dtype(dt, "tensor_const")) return NULL;
  API_BEGIN;
  API_RETURN(tensor_wrap(uop_const(dt_scalar(dt), value), tg_default_device()));
}
static tg_tensor *full_like(const tg_tensor *t, double value, const char *op) {
  if (!t) { tensor_null_arg(op, "t"); return NULL; }
  API_BEGIN;
  API_RETURN(tensor_wrap(make_unique(const_like(value, t->u->dtype, t->u->shape, t->u->ndim)), t->device));
}
tg_tensor *tg_full_like(const tg_tensor *t, double value) { return full_like(t, value, "tg_full_like"); }
tg_tensor *tg_zeros_like(const tg_tensor *t) { return full_like(t, 0, "tg_zeros_like"); }
tg_tensor *tg_ones_like(const tg_tensor *t) { return full_like(t, 1, "tg_ones_like"); }
tg_tensor *tg_empty_like(const tg_tensor *t) {
  if (!t) { tensor_null_arg("tg_empty_like", "t"); return NULL; }
  tg_shape s = { t->u->ndim, { 0 } };
  for (int i = 0; i < s.ndim; i++) s.d[i] = t->u->shape[i];
  return new_buffer_tensor_on(t->device, s, (tg_dtype)t->u->dtype.scalar, NULL, "tg_empty_like");
}

tg_tensor *tg_arange(double start, double stop, double step, tg_dtype dt) {
  if (!check_dtype(dt, "tg_arange")) return NULL;
  if (step == 0 || isnan(start) || isnan(stop) || isnan(step)) TG_FAIL("tg_arange: step must be nonzero and bounds finite");
  double cnt = ceil((stop - start) / step);   /* NaN for inf - inf: no elements */
  if (cnt > 9e15) TG_FAIL("tg_arange: %g elements (%g to %g by %g) is too many", cnt, start, stop, step);   /* before any cast */
  int64_t n = cnt > 0 ? (int64_t)cnt : 0;
  if (n == 1) step = 1;   /* one value: the step (maybe huge) plays no part */
  if (n > 0 && !tg_dtype_is_float(dt) && !(fabs(start) < 0x1p63 && fabs(start + (double)(n - 1) * step) < 0x1p63 && fabs(step) < 0x1p63))
    TG_FAIL("tg_arange: values %g..%g by %g do not fit int64 index arithmetic", start, start + (double)(n - 1) * step, step);
  if (n > 0) {
    double last = start + (double)(n - 1) * step;
    dtype_t d = dt_scalar(dt);
    double lo = fmin(start, last), hi = fmax(start, last);
    if (dt == TG_BOOL ? (lo < 0 || hi > 1) : (lo < dt_min(d) || hi > dt_max(d)))
      TG_FAIL("tg_arange: values %g..%g overflow %s (range %g..%g)", start, last, tg_dtype_name(dt), dt_min(d), dt_max(d));
    if (!tg_dtype_is_float(dt) && (start != floor(start) || step != floor(step)))
      TG_FAIL("tg_arange: non-integer start/step for integer dtype %s", tg_dtype_name(dt));
  }
  API_BEGIN;
  /* value i = start + i*step, computed in float64 (ints exactly in int64) */
  uop *idx = uop0(OP_ARANGE, DT_INDEX, arg_int(n));
  int64_t sh[1] = { n };
  uop *v;
  if (tg_dtype_is_float(dt)) {
    v = uop_cast(idx, DT_F64);
    v = uop_alu(OP_ADD, uop_alu(OP_MUL, v, const_like(step, DT_F64, sh, 1)), const_like(start, DT_F64, sh, 1));
  } else {
    v = uop_alu(OP_ADD, uop_alu(OP_MUL, idx, const_like(step, DT_INDEX, sh, 1)), const_like(start, DT_INDEX, sh, 1));
  }
  API_RETURN(tensor_wrap(make_unique(uop_cast(v, dt_scalar(dt))), tg_default_device()));
}

tg_tensor *tg_eye(int64_t n, tg_dtype dt) {
  if (n < 0) TG_FAIL("tg_eye: negative size %lld", (long long)n);
  if (!check_dtype(dt, "tg_eye") || !shape_ok((int64_t[2]){ n, n }, 2, "tg_eye")) return NULL;
  API_BEGIN;
  uop *idx = uop0(OP_ARANGE, DT_INDEX, arg_int(n));
  int64_t col[2] = { n, 1 }, row[2] = { 1, n }, full[2] = { n, n };
  uop *a = mv_expand(mv_reshape(idx, col, 2), full, 2);
  uop *b = mv_expand(mv_reshape(idx, row, 2), full, 2);
  API_RETURN(tensor_wrap(make_unique(uop_cast(uop_alu(OP_CMPEQ, a, b), dt_scalar(dt))), tg_default_device()));
}

/* ---- realization */
int tg_realize_all(tg_tensor **ts, int n) {
  if (n < 0 || (n > 0 && !ts)) return tg_seterr("tg_realize_all: %s (n %d)", ts ? "negative count" : "NULL tensor array", n);
  for (int i = 0; i < n; i++) if (!ts[i]) { tensor_null_input("tg_realize"); return -1; }
  if (n == 0) return 0;
  /* already memory: nothing to schedule */
  bool all_memory = true;
  for (int i = 0; i < n && all_memory; i++) {
    const uop *u = ts[i]->u;
    while (u->op == OP_RESHAPE || u->op == OP_SHRINK_VAR) u = u->src[0];
    all_memory = u->op == OP_BUFFER;
  }
  if (all_memory) return 0;
  uop_pool_push();
  uop **roots = tg_xmalloc(sizeof(uop *) * (size_t)n);
  for (int i = 0; i < n; i++) roots[i] = ts[i]->u;
  ptrmap becomes = { 0 };
  int rc = shard_graph_has_multi(roots, n) ? shard_realize(roots, n, ts[0]->device, &becomes)
                                           : engine_realize(roots, n, shard_first_device(ts[0]->device), &becomes);
  if (rc == 0) { autograd_note_realized(&becomes); tensors_substitute(&becomes); }
  pm_free(&becomes);
  free(roots);
  uop_pool_pop();
  return rc;
}
int tg_realize(tg_tensor *t) { return tg_realize_all(&t, 1); }

int tg_data(tg_tensor *t, void *out, size_t nbytes) {
  if (!t) { tensor_null_input("tg_data"); return -1; }
  if (!out) return tg_seterr("tg_data: output pointer is NULL");
  size_t need = (size_t)tg_numel(t) * (size_t)tg_dtype_size(tg_dtype_of(t));
  if (nbytes < need) return tg_seterr("tg_data: buffer of %zu bytes is too small for %zu bytes", nbytes, need);
  if (shard_is_multi_name(t->device)) return shard_data(t, out, nbytes);   /* gathered */
  if (tg_realize(t) < 0) return -1;
  if (need == 0) return 0;
  tg_buffer *b = uop_contiguous_buffer(t->u);
  if (!b) {
    /* A realized view that is not contiguous memory (an assign to a slice
     * leaves its target as that view of the base): read it through a
     * contiguous copy, and leave t pointing at the base's memory. */
    tg_scope_begin();
    tg_tensor *c = tg_contiguous(t);
    int rc = c && tg_realize(c) == 0 ? 0 : -1;
    tg_buffer *cb = rc == 0 ? uop_contiguous_buffer(c->u) : NULL;
    if (rc == 0 && !cb) rc = tg_seterr("tg_data: internal: realized tensor has no contiguous buffer");
    if (rc == 0) rc = buffer_alloc(cb) < 0 ? -1 : buffer_copyout(cb, out, need);
    tg_scope_end();
    return rc;
  }
  if (buffer_alloc(b) < 0) return -1;
  return buffer_copyout(b, out, need);
}

double tg_item(tg_tensor *t) {
  if (!t) { tensor_null_input("tg_item"); return NAN; }
  if (tg_numel(t) != 1) { tg_seterr("tg_item: tensor has %lld elements, not 1", (long long)tg_numel(t)); return NAN; }
  unsigned char buf[16];
  if (tg_data(t, buf, sizeof buf) < 0) return NAN;
  return dt_load_scalar(buf, tg_dtype_of(t));
}
