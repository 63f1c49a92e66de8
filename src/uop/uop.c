/* uop.c: hash-consed, reference-counted UOp nodes, pools, toposort, printer. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include "uop/uop.h"
#include "uop/uop_buffer.h"
#include "uop/uop_call.h"
#include "uop/dims.h"
#include "util/counters.h"
#include "util/util.h"

static const char *op_names[] = {
#define TG_OP_NAME(n) #n,
  TG_OPS(TG_OP_NAME)
#undef TG_OP_NAME
};
const char *uop_op_name(uop_op op) { return op < OP_COUNT ? op_names[op] : "?"; }
int uop_op_from_name(const char *name, int len) {
  for (int i = 0; i < OP_COUNT; i++)
    if ((int)strlen(op_names[i]) == len && !memcmp(op_names[i], name, (size_t)len)) return i;
  return -1;
}

bool uop_is_unary(uop_op op) { return op >= OP_EXP2 && op <= OP_BITCAST; }
bool uop_is_binary(uop_op op) { return op >= OP_ADD && op <= OP_THREEFRY; }
bool uop_is_alu(uop_op op) { return op >= OP_EXP2 && op <= OP_MULACC; }
bool uop_is_comparison(uop_op op) { return op == OP_CMPLT || op == OP_CMPNE || op == OP_CMPEQ; }
bool uop_is_costly(uop_op op) {
  return op == OP_SQRT || op == OP_EXP2 || op == OP_LOG2 || op == OP_SIN || op == OP_FDIV || op == OP_RECIPROCAL;
}
bool uop_is_commutative(uop_op op) {
  return op == OP_ADD || op == OP_MUL || op == OP_MAX || op == OP_CMPNE || op == OP_CMPEQ ||
         op == OP_AND || op == OP_OR || op == OP_XOR;
}
bool uop_is_movement(uop_op op) { return op >= OP_RESHAPE && op <= OP_FLIP; }

/* ---- buffer hooks: the runtime tells the IR how to hold a BUFFER's payload */
static const uop_buffer_hooks *buf_hooks;
void uop_set_buffer_hooks(const uop_buffer_hooks *h) { buf_hooks = h; }
/* ---- call hooks: the function layer tells the IR how to hold a CALL's body */
static const uop_call_hooks *call_hooks;
void uop_set_call_hooks(const uop_call_hooks *h) { call_hooks = h; }

/* ---- the hash-cons table. One lock guards the table and all refcounts:
 * graphs are built by one thread at a time in practice, and the lock is
 * uncontended. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Open addressing, linear probing, at most half full. A slot keeps the
 * node's hash beside it, so a probe compares hashes in the table and only
 * reads a node whose hash matches: the table outgrows the caches (every
 * node of every live graph), and chasing chained nodes was a cache miss
 * per node passed. */
typedef struct { uint64_t hash; uop *u; } table_slot;
static table_slot *table;
static size_t table_cap, table_n;
static uint64_t next_id;

static uint64_t arg_hash(const uop_arg *a) {
  uint64_t h = a->kind;
  switch (a->kind) {
  case ARG_INT: h = tg_hash_mix(h, (uint64_t)a->i); break;
  case ARG_FLOAT: { uint64_t b; memcpy(&b, &a->f, 8); h = tg_hash_mix(h, b); break; }
  case ARG_INTS: h = tg_hash_mix(h, tg_hash_bytes(a->v, sizeof(int64_t) * (size_t)a->n, (uint64_t)a->n)); break;
  case ARG_STR: h = tg_hash_mix(h, tg_hash_bytes(a->s, strlen(a->s), 7)); break;
  case ARG_PTR: h = tg_hash_mix(h, (uint64_t)(uintptr_t)a->p); break;
  }
  return h;
}
static bool arg_eq(const uop_arg *a, const uop_arg *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case ARG_NONE: return true;
  case ARG_INT: return a->i == b->i;
  case ARG_FLOAT: return memcmp(&a->f, &b->f, 8) == 0;
  case ARG_INTS: return a->n == b->n && (a->n == 0 || !memcmp(a->v, b->v, sizeof(int64_t) * (size_t)a->n));
  case ARG_STR: return !strcmp(a->s, b->s);
  case ARG_PTR: return a->p == b->p;
  }
  return false;
}
bool uop_arg_equal(const uop_arg *a, const uop_arg *b) { return arg_eq(a, b); }

static void table_grow(void) {
  size_t ncap = table_cap ? table_cap * 2 : 4096;
  table_slot *nt = tg_xcalloc(ncap, sizeof *nt);
  for (size_t i = 0; i < table_cap; i++) {
    if (!table[i].u) continue;
    size_t s = table[i].hash & (ncap - 1);
    while (nt[s].u) s = (s + 1) & (ncap - 1);
    nt[s] = table[i];
  }
  free(table);
  table = nt; table_cap = ncap;
}

/* Takes node d out of its slot; the slots after it that probed past it
 * move back (no tombstones). */
static void table_remove(const uop *d) {
  size_t mask = table_cap - 1, i = d->hash & mask;
  while (table[i].u != d) i = (i + 1) & mask;
  for (size_t j = i;;) {
    j = (j + 1) & mask;
    if (!table[j].u) break;
    size_t home = table[j].hash & mask;
    /* j's entry may fill hole i when its home is not within (i, j] (cyclically) */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) { table[i] = table[j]; i = j; }
  }
  table[i] = (table_slot){ 0, NULL };
  table_n--;
}

/* ---- pools */
typedef struct pool { uop **v; int n, cap; struct pool *up; } pool;
static _Thread_local pool *pools;
/* One popped pool (with its array, up to SPARE_CAP entries) kept for the
 * thread's next push: every API call pushes and pops one, and two allocations
 * per call showed in loaders' profiles. Freed when the thread ends. */
enum { SPARE_CAP = 1024 };
static _Thread_local pool *spare;
static pthread_key_t spare_key;
static void spare_free(void *p) {   /* at thread exit; p may be a pool in use by then */
  if (p != spare) return;
  spare = NULL;
  free(((pool *)p)->v); free(p);
}
static void spare_key_init(void) { pthread_key_create(&spare_key, spare_free); }

void uop_pool_push(void) {
  pool *p = spare;
  if (p) spare = NULL;
  else p = tg_xcalloc(1, sizeof *p);
  p->up = pools; pools = p;
}
void uop_pool_pop(void) {
  pool *p = pools;
  if (!p) return;
  pools = p->up;
  for (int i = 0; i < p->n; i++) uop_release(p->v[i]);
  p->n = 0;
  if (!spare && p->cap <= SPARE_CAP) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, spare_key_init);
    spare = p;
    pthread_setspecific(spare_key, p);   /* the destructor frees it at thread exit */
    return;
  }
  free(p->v); free(p);
}
static void pool_add(uop *u) {
  if (!pools) uop_pool_push();   /* a root pool that lives for the thread */
  pool *p = pools;
  if (p->n == p->cap) { p->cap = p->cap ? p->cap * 2 : 64; p->v = tg_xrealloc(p->v, sizeof(uop *) * (size_t)p->cap); }
  p->v[p->n++] = u;
}

void uop_pool_keep(uop *u) {
  uop_retain(u);
  pool_add(u);
}

/* ---- shapes */
static void set_shape(uop *u) {
  u->ndim = -1; u->shape = NULL;
  const uop *s0 = u->nsrc ? u->src[0] : NULL;
  int nd = -1;
  int64_t tmp[64];
  switch (u->op) {
  case OP_CONST: case OP_DEFINE_VAR: case OP_BIND: nd = 0; break;
  case OP_BUFFER: nd = 1; tmp[0] = buf_hooks ? buf_hooks->numel(u->arg.p) : 0; break;
  case OP_ARANGE: nd = 1; tmp[0] = u->arg.i; break;
  case OP_CALL: {
    const uop *v = ((const uop_call_target *)u->arg.p)->value;
    nd = v->ndim; memcpy(tmp, v->shape, sizeof(int64_t) * (size_t)nd); break;
  }
  case OP_RESHAPE: case OP_EXPAND:
    nd = u->arg.n; memcpy(tmp, u->arg.v, sizeof(int64_t) * (size_t)nd); break;
  case OP_PERMUTE:
    nd = s0->ndim; for (int i = 0; i < nd; i++) tmp[i] = s0->shape[u->arg.v[i]]; break;
  case OP_PAD:
    nd = s0->ndim; for (int i = 0; i < nd; i++) tmp[i] = s0->shape[i] + u->arg.v[2 * i] + u->arg.v[2 * i + 1]; break;
  case OP_SHRINK:
    nd = s0->ndim; for (int i = 0; i < nd; i++) tmp[i] = u->arg.v[2 * i + 1] - u->arg.v[2 * i]; break;
  case OP_WINDOW: {
    /* arg (n, k[n], s[n], d[n]): the last n axes (i) become (o) then (k) */
    int n = (int)u->arg.v[0], lead = s0->ndim - n;
    nd = lead + 2 * n;
    memcpy(tmp, s0->shape, sizeof(int64_t) * (size_t)lead);
    for (int j = 0; j < n; j++) {
      int64_t k = u->arg.v[1 + j], st = u->arg.v[1 + n + j], dl = u->arg.v[1 + 2 * n + j];
      tmp[lead + j] = (s0->shape[lead + j] - dl * (k - 1) - 1) / st + 1;
      tmp[lead + n + j] = k;
    }
    break;
  }
  case OP_TAKE: {
    /* rows of src[0] picked by the integers of src[1]: index shape + row shape */
    const uop *ix = u->src[1];
    nd = ix->ndim + s0->ndim - 1;
    memcpy(tmp, ix->shape, sizeof(int64_t) * (size_t)ix->ndim);
    memcpy(tmp + ix->ndim, s0->shape + 1, sizeof(int64_t) * (size_t)(s0->ndim - 1));
    break;
  }
  case OP_MULTI:
    /* parts side by side on axis arg.i (-1: copies of one value) */
    nd = s0->ndim; memcpy(tmp, s0->shape, sizeof(int64_t) * (size_t)nd);
    if (u->arg.i >= 0 && u->arg.i < nd)
      for (int i = 1; i < u->nsrc; i++) tmp[u->arg.i] += u->src[i]->shape[u->arg.i];
    break;
  case OP_ALLREDUCE:
    nd = s0->ndim; memcpy(tmp, s0->shape, sizeof(int64_t) * (size_t)nd); break;
  case OP_REDUCE_AXIS:
    nd = s0->ndim; memcpy(tmp, s0->shape, sizeof(int64_t) * (size_t)nd);
    for (int i = 1; i < u->arg.n; i++) tmp[u->arg.v[i]] = 1;
    break;
  case OP_FLIP: case OP_SHRINK_VAR: case OP_UNSHRINK_VAR: case OP_CONTIGUOUS: case OP_COPY: case OP_DETACH: case OP_ASSIGN: case OP_UNIQUE: case OP_AFTER:
    if (s0 && s0->ndim >= 0) { nd = s0->ndim; memcpy(tmp, s0->shape, sizeof(int64_t) * (size_t)nd); }
    break;
  default:
    if (uop_is_alu(u->op)) {
      /* the first source with a shape (WHERE's condition has one too) */
      for (int i = 0; i < u->nsrc; i++)
        if (u->src[i]->ndim >= 0) { nd = u->src[i]->ndim; memcpy(tmp, u->src[i]->shape, sizeof(int64_t) * (size_t)nd); break; }
      /* a scalar CONST first and a shaped source later: prefer the shaped one */
      for (int i = 0; i < u->nsrc; i++)
        if (u->src[i]->ndim > nd) { nd = u->src[i]->ndim; memcpy(tmp, u->src[i]->shape, sizeof(int64_t) * (size_t)nd); }
    }
  }
  if (nd >= 0) {
    u->ndim = nd;
    u->shape = tg_xmalloc(sizeof(int64_t) * (size_t)(nd ? nd : 1));
    memcpy(u->shape, tmp, sizeof(int64_t) * (size_t)nd);
  }
}

uop *uop_new(uop_op op, dtype_t dt, uop *const *src, int nsrc, uop_arg arg) {
  counters_add_work(1);
  uint64_t h = tg_hash_mix((uint64_t)op, dt.bits);
  for (int i = 0; i < nsrc; i++) h = tg_hash_mix(h, src[i]->hash);
  h = tg_hash_mix(h, arg_hash(&arg));
  pthread_mutex_lock(&lock);
  if ((table_n + 1) * 2 > table_cap) table_grow();
  size_t mask = table_cap - 1, slot = h & mask;
  for (; table[slot].u; slot = (slot + 1) & mask) {
    if (table[slot].hash != h) continue;
    uop *u = table[slot].u;
    if (u->op != op || u->dtype.bits != dt.bits || u->nsrc != nsrc) continue;
    bool same = arg_eq(&u->arg, &arg);
    for (int i = 0; same && i < nsrc; i++) same = u->src[i] == src[i];
    if (!same) continue;
    u->refcnt++;
    pthread_mutex_unlock(&lock);
    /* another thread may have just made it: its shape and dims come after
     * the table insert (they create nodes, so not under the lock) */
    while (!__atomic_load_n(&u->ready, __ATOMIC_ACQUIRE)) sched_yield();
    pool_add(u);
    return u;
  }
  uop *u = tg_xcalloc(1, sizeof *u);
  u->op = op; u->dtype = dt; u->nsrc = nsrc; u->hash = h; u->refcnt = 1; u->id = next_id++;
  u->src = tg_xmalloc(sizeof(uop *) * (size_t)(nsrc ? nsrc : 1));
  for (int i = 0; i < nsrc; i++) { u->src[i] = src[i]; src[i]->refcnt++; }
  u->leaves = nsrc || op == OP_CONST ? 0 : 1ull << (h >> 58);
  u->has_after = op == OP_AFTER;
  for (int i = 0; i < nsrc; i++) { u->leaves |= src[i]->leaves; u->has_after |= src[i]->has_after; }
  u->arg = arg;
  if (arg.kind == ARG_INTS) {
    int64_t *v = tg_xmalloc(sizeof(int64_t) * (size_t)(arg.n ? arg.n : 1));
    if (arg.n) memcpy(v, arg.v, sizeof(int64_t) * (size_t)arg.n);
    u->arg.v = v;
  } else if (arg.kind == ARG_STR) {
    u->arg.s = tg_xstrdup(arg.s);
  } else if (arg.kind == ARG_PTR && op == OP_BUFFER && buf_hooks) {
    buf_hooks->retain(arg.p);
  } else if (arg.kind == ARG_PTR && op == OP_CALL && call_hooks) {
    call_hooks->retain(((uop_call_target *)arg.p)->body);
  }
  table[slot] = (table_slot){ h, u };   /* the empty slot the probe ended at */
  table_n++;
  pthread_mutex_unlock(&lock);
  set_shape(u);
  uop_set_dims(u);
  __atomic_store_n(&u->ready, true, __ATOMIC_RELEASE);
  pool_add(u);
  return u;
}

void uop_retain(uop *u) {
  if (!u) return;
  pthread_mutex_lock(&lock);
  u->refcnt++;
  pthread_mutex_unlock(&lock);
}

void uop_release(uop *u) {
  if (!u) return;
  /* iterative, so freeing a deep graph cannot overflow the stack */
  VEC(uop *) dead = { 0 };
  VEC(void *) bufs = { 0 }, bodies = { 0 };
  pthread_mutex_lock(&lock);
  if (--u->refcnt == 0) VEC_PUSH(dead, u);
  while (dead.n) {
    uop *d = dead.v[--dead.n];
    table_remove(d);
    for (int i = 0; i < d->nsrc; i++)
      if (--d->src[i]->refcnt == 0) VEC_PUSH(dead, d->src[i]);
    if (d->arg.kind == ARG_INTS) free((void *)d->arg.v);
    else if (d->arg.kind == ARG_STR) free((void *)d->arg.s);
    else if (d->op == OP_BUFFER && d->arg.kind == ARG_PTR) VEC_PUSH(bufs, d->arg.p);
    else if (d->op == OP_CALL && d->arg.kind == ARG_PTR) VEC_PUSH(bodies, ((uop_call_target *)d->arg.p)->body);
    free(d->src); free(d->shape); free(d->dim_var);
    if (d->dim_err_own) free((void *)d->dim_err);
    free(d);
  }
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < bufs.n; i++) if (buf_hooks) buf_hooks->release(bufs.v[i]);
  /* a body's release may free its graph: outside the lock */
  for (int i = 0; i < bodies.n; i++) if (call_hooks) call_hooks->release(bodies.v[i]);
  VEC_FREE(dead); VEC_FREE(bufs); VEC_FREE(bodies);
}

int64_t uop_live_count(void) {
  pthread_mutex_lock(&lock);
  int64_t n = (int64_t)table_n;
  pthread_mutex_unlock(&lock);
  return n;
}

/* ---- convenience constructors */
uop *uop0(uop_op op, dtype_t dt, uop_arg arg) { return uop_new(op, dt, NULL, 0, arg); }
uop *uop1(uop_op op, dtype_t dt, uop *a, uop_arg arg) { return uop_new(op, dt, &a, 1, arg); }
uop *uop2(uop_op op, dtype_t dt, uop *a, uop *b, uop_arg arg) { uop *s[2] = { a, b }; return uop_new(op, dt, s, 2, arg); }
uop *uop3(uop_op op, dtype_t dt, uop *a, uop *b, uop *c, uop_arg arg) { uop *s[3] = { a, b, c }; return uop_new(op, dt, s, 3, arg); }
uop *uop_replace_src(uop *u, uop *const *src, int nsrc) {
  if (nsrc == u->nsrc) {
    bool same = true;
    for (int i = 0; same && i < nsrc; i++) same = src[i] == u->src[i];
    if (same) return u;
  }
  return uop_new(u->op, u->dtype, src, nsrc, u->arg);
}

uop *uop_const(dtype_t dt, double v) {
  dtype_t s = dt_base(dt);
  uop *c;
  if (dt_is_float(s)) c = uop0(OP_CONST, s, arg_float(dt_cast_value(v, s)));
  else if (s.scalar == TG_BOOL) c = uop0(OP_CONST, s, arg_int(v != 0));
  else if (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) c = uop_const_int(s, (int64_t)v);
  else if (v == floor(v) && v >= 0 && v < 18446744073709551616.0) c = uop_const_int(s, (int64_t)(uint64_t)v);
  else c = uop_const_int(s, (int64_t)dt_cast_value(v, s));
  if (dt.count > 1) {
    uop *lanes[256];
    for (int i = 0; i < dt.count; i++) lanes[i] = c;
    c = uop_new(OP_VECTORIZE, dt, lanes, dt.count, arg_none());
  }
  return c;
}
/* Integer constants are stored wrapped to their dtype's width (two's
 * complement; uint64 keeps its bits in the int64). */
uop *uop_const_int(dtype_t dt, int64_t v) {
  if (dt_is_float(dt)) return uop_const(dt, (double)v);
  int bits = dt_itemsize(dt) * 8;
  if (dt.scalar == TG_BOOL) v = v != 0;
  else if (bits < 64) {
    uint64_t m = (1ULL << bits) - 1, u = (uint64_t)v & m;
    if (!dt_is_unsigned(dt) && (u >> (bits - 1))) u |= ~m;
    v = (int64_t)u;
  }
  return uop0(OP_CONST, dt_base(dt), arg_int(v));
}
double uop_const_value(const uop *u) {
  if (u->op != OP_CONST) return NAN;
  return u->arg.kind == ARG_FLOAT ? u->arg.f : (double)u->arg.i;
}
bool uop_is_const(const uop *u, double v) { return u && u->op == OP_CONST && uop_const_value(u) == v; }

uop *uop_alu(uop_op op, uop *a, uop *b) {
  dtype_t dt = uop_is_comparison(op) ? dt_vec(DT_BOOL, a->dtype.count) : a->dtype;
  return uop2(op, dt, a, b, arg_none());
}
uop *uop_alu1(uop_op op, uop *a) { return uop1(op, a->dtype, a, arg_none()); }
uop *uop_where(uop *c, uop *a, uop *b) { return uop3(OP_WHERE, a->dtype, c, a, b, arg_none()); }
uop *uop_cast(uop *a, dtype_t dt) { return dt_eq(a->dtype, dt) ? a : uop1(OP_CAST, dt, a, arg_none()); }
uop *uop_addi(uop *a, int64_t b) { return b == 0 ? a : uop_alu(OP_ADD, a, uop_const_int(a->dtype, b)); }
uop *uop_muli(uop *a, int64_t b) { return b == 1 ? a : uop_alu(OP_MUL, a, uop_const_int(a->dtype, b)); }

/* ---- traversal */
static int own_srcs(void *ctx, uop *u, uop *const **out) { (void)ctx; *out = u->src; return u->nsrc; }
uop_list uop_toposort(uop *root) { return uop_toposort_by(root, own_srcs, NULL); }

/* Depth first, one source at a time, so the stack is the path from the
 * root: a node is marked when it is pushed (a DAG reaches no node on its
 * own path again) and listed when its sources are; one map probe per edge. */
uop_list uop_toposort_by(uop *root, uop_srcs_fn srcs, void *ctx) {
  uop_list out = { 0 };
  if (!root) return out;
  ptrmap seen = { 0 };
  typedef struct { uop *u; int next; } frame;
  VEC(frame) stack = { 0 };
  pm_add(&seen, root, (void *)1);
  VEC_PUSH(stack, ((frame){ root, 0 }));
  while (stack.n) {
    frame *f = &stack.v[stack.n - 1];
    uop *const *us;
    int ns = srcs(ctx, f->u, &us);
    if (f->next < ns) {
      uop *s = us[f->next++];
      if (pm_add(&seen, s, (void *)1)) VEC_PUSH(stack, ((frame){ s, 0 }));
      continue;
    }
    VEC_PUSH(out, f->u);
    stack.n--;
  }
  VEC_FREE(stack); pm_free(&seen);
  return out;
}

/* ---- printing */
void uop_arg_str(const uop *u, char *buf, int n) {
  buf[0] = 0;
  if (u->op == OP_REDUCE && u->arg.kind == ARG_INT) { snprintf(buf, (size_t)n, "%s", uop_op_name((uop_op)u->arg.i)); return; }
  if (u->op == OP_REDUCE_AXIS && u->arg.kind == ARG_INTS && u->arg.n > 0) {
    int k = snprintf(buf, (size_t)n, "(%s, (", uop_op_name((uop_op)u->arg.v[0]));
    for (int i = 1; i < u->arg.n && k < n - 24; i++) k += snprintf(buf + k, (size_t)(n - k), i > 1 ? ",%lld" : "%lld", (long long)u->arg.v[i]);
    snprintf(buf + k, (size_t)(n - k), u->arg.n == 2 ? ",))" : "))");
    return;
  }
  switch (u->arg.kind) {
  case ARG_INT:
    if (u->op == OP_CONST && u->dtype.scalar == TG_BOOL) snprintf(buf, (size_t)n, "%s", u->arg.i ? "True" : "False");
    else snprintf(buf, (size_t)n, "%lld", (long long)u->arg.i);
    break;
  case ARG_FLOAT: snprintf(buf, (size_t)n, "%.9g", u->arg.f); break;
  case ARG_STR: snprintf(buf, (size_t)n, "'%s'", u->arg.s); break;
  case ARG_PTR: snprintf(buf, (size_t)n, "%s", u->op == OP_BUFFER && buf_hooks ? buf_hooks->describe(u->arg.p)
             : u->op == OP_CALL && call_hooks ? call_hooks->name(((const uop_call_target *)u->arg.p)->body) : "<ptr>"); break;
  case ARG_INTS: {
    int k = snprintf(buf, (size_t)n, "(");
    for (int i = 0; i < u->arg.n && k < n - 24; i++)
      k += snprintf(buf + k, (size_t)(n - k), i ? ",%lld" : "%lld", (long long)u->arg.v[i]);
    snprintf(buf + k, (size_t)(n - k), u->arg.n == 1 ? ",)" : ")");
    break;
  }
  default: break;
  }
}

static void print_to(strbuf *sb, uop *root) {
  uop_list l = uop_toposort(root);
  ptrmap num = { 0 };
  for (int i = 0; i < l.n; i++) {
    uop *u = l.v[i];
    pm_put(&num, u, (void *)(intptr_t)(i + 1));
    char dts[32], args[256], shp[160] = "";
    dt_str(u->dtype, dts, sizeof dts);
    uop_arg_str(u, args, sizeof args);
    if (u->ndim >= 0) {
      int k = snprintf(shp, sizeof shp, "(");
      for (int d = 0; d < u->ndim && k < (int)sizeof shp - 24; d++) k += snprintf(shp + k, sizeof shp - (size_t)k, d ? ",%lld" : "%lld", (long long)u->shape[d]);
      snprintf(shp + k, sizeof shp - (size_t)k, u->ndim == 1 ? ",)" : ")");
    }
    sb_printf(sb, "%4d %-13s %-12s %-14s [", i, uop_op_name(u->op), dts, shp);
    for (int s = 0; s < u->nsrc; s++)
      sb_printf(sb, s ? ",%d" : "%d", (int)(intptr_t)pm_get(&num, u->src[s]) - 1);
    sb_printf(sb, "] %s\n", args);
  }
  pm_free(&num);
  free(l.v);
}
char *uop_to_string(uop *root) {
  strbuf sb = { 0 };
  print_to(&sb, root);
  if (!sb.s) return tg_xstrdup("");
  return sb.s;
}
void uop_print(FILE *f, uop *root) {
  char *s = uop_to_string(root);
  fputs(s, f);
  free(s);
}
