/* schedule_memo.c: see schedule_memo.h. */
#include <inttypes.h>
#include <pthread.h>
#include "schedule/schedule_memo.h"
#include "schedule/call.h"
#include "runtime/device.h"
#include "uop/rewrite.h"
#include "uop/uop_serial.h"
#include "util/build_id.h"
#include "util/settings.h"
#include "viz/viz.h"

/* A template's stand-in for a buffer: AFTER(ARANGE(numel), role, MARK), a
 * form no tensor graph has, with the buffer's shape (nodes over it compute
 * theirs from it) */
#define MEMO_MARK (-7)
#define MEMO_MAX_ENTRIES 4096
#define MEMO_MAX_KEY_BYTES ((size_t)256 << 20)

/* ---- the structure text */

typedef struct {
  ptrmap ord;                 /* tg_buffer* -> number + 1 */
  memo_buffers *ext;          /* buffers by number */
} walk;

static void device_text(strbuf *sb, const tg_device *d) {
  const char *ren = d->renderer ? d->renderer->name : "";
  sb_printf(sb, " %zu:%s %zu:%s %d", strlen(d->name), d->name, strlen(ren), ren, d->host_memory);
}

/* " b N", and the buffer's description the first time it is met */
static void buffer_text(walk *w, strbuf *sb, tg_buffer *b) {
  intptr_t o = (intptr_t)pm_get(&w->ord, b);
  if (o) { sb_puts(sb, " b"); uop_put_int(sb, o - 1); return; }
  VEC_PUSH(*w->ext, b);
  pm_put(&w->ord, b, (void *)(intptr_t)w->ext->n);
  sb_puts(sb, " B");
  uop_put_int(sb, w->ext->n - 1);
  uop_put_int(sb, b->dtype);
  uop_put_int(sb, b->numel);
  uop_put_int(sb, b->placeholder);
  uop_put_int(sb, b->base != NULL);
  device_text(sb, b->dev);
}

static bool body_structure(call_body *b);

static int key_arg(strbuf *sb, const uop *u, void *ctx) {
  walk *w = ctx;
  /* a creation's or an assign's identity (its number) is not structure */
  if (u->op == OP_UNIQUE || u->op == OP_ASSIGN) { sb_puts(sb, u->op == OP_UNIQUE ? " u" : " a"); return 1; }
  if (u->op == OP_BUFFER) { buffer_text(w, sb, u->arg.p); return 1; }
  if (u->op == OP_CALL) {
    const uop_call_target *t = u->arg.p;
    call_body *b = t->body;
    if (!body_structure(b)) return -1;
    sb_printf(sb, " c %016" PRIx64 "%016" PRIx64, b->structure[0], b->structure[1]);
    uop_put_int(sb, t->out);
    uop_put_int(sb, b->structure_fixed.n);
    for (int i = 0; i < b->structure_fixed.n; i++) buffer_text(w, sb, b->structure_fixed.v[i]);
    return 1;
  }
  return u->arg.kind == ARG_PTR ? -1 : 0;
}

/* A body's structure: its graph's text, then which number each parameter
 * is; the memory it reads besides its parameters is named by the caller's
 * walk (the same body over other weights is the same structure). */
static void make_body_structure(call_body *b, const uop_list *topo) {
  b->structure_state = -1;
  if (b->grad) return;   /* a custom kernel's body: its kernel is not its graph */
  strbuf sb = { 0 };
  memo_buffers ext = { 0 };
  walk w = { { 0 }, &ext };
  bool ok = uop_serialize_nodes(&sb, topo, key_arg, &w);
  for (int i = 0; i < b->nparams && ok; i++) uop_put_int(&sb, (int64_t)(intptr_t)pm_get(&w.ord, b->param_bufs[i]) - 1);
  uop_put_int(&sb, b->nouts);
  if (ok) {
    b->structure[0] = tg_hash_bytes(sb.s, sb.n, 0x7363686564756c65ull);
    b->structure[1] = tg_hash_bytes(sb.s, sb.n, 0x626f647973747275ull);
    for (int i = 0; i < ext.n; i++) if (!ext.v[i]->placeholder) VEC_PUSH(b->structure_fixed, ext.v[i]);
    b->structure_state = 1;
  }
  VEC_FREE(ext);
  pm_free(&w.ord);
  sb_free(&sb);
}

void schedule_memo_body(call_body *b, const uop_list *topo) {
  pthread_mutex_lock(&b->lock);
  if (!b->structure_state) make_body_structure(b, topo);
  pthread_mutex_unlock(&b->lock);
}

/* b's structure, made now unless its builder made it (under b's lock:
 * a nested body's lock is taken inside, never the other way round) */
static bool body_structure(call_body *b) {
  pthread_mutex_lock(&b->lock);
  if (!b->structure_state) {
    uop_pool_push();
    uop_list l = uop_toposort(uop_new(OP_SINK, DT_VOID, b->outs, b->nouts, arg_none()));
    make_body_structure(b, &l);
    free(l.v);
    uop_pool_pop();
  }
  bool ok = b->structure_state > 0;
  pthread_mutex_unlock(&b->lock);
  return ok;
}

/* ---- entries */

typedef struct { tg_device *dev; tg_dtype dtype; int64_t numel; int64_t base; int64_t offset; } fresh_desc;   /* base: a role, or INT64_MIN */
typedef struct { uop *ast; int nbufs; int64_t *roles; tg_device *dev; char name[96]; bool merged; } memo_item;
typedef struct { int node; uop *tmpl; } memo_repl;
typedef struct {
  char *key; size_t keylen; uint64_t hash;
  int next;                   /* the graph's buffer count */
  fresh_desc *fresh; int nfresh;
  memo_item *items; int nitems;
  memo_repl *repl; int nrepl;
} memo_entry;
/* a role: >= 0 the graph's buffer of that number, < 0 fresh buffer -1 - role */

static void entry_free(memo_entry *e) {
  if (!e) return;
  for (int i = 0; i < e->nitems; i++) { if (e->items[i].ast) uop_release(e->items[i].ast); free(e->items[i].roles); }
  for (int i = 0; i < e->nrepl; i++) uop_release(e->repl[i].tmpl);
  free(e->key); free(e->fresh); free(e->items); free(e->repl);
  free(e);
}

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static VEC(memo_entry *) memo_all;
static size_t memo_key_bytes;
static int64_t memo_hit_count;

static void forget_locked(void) {
  for (int i = 0; i < memo_all.n; i++) entry_free(memo_all.v[i]);
  VEC_FREE(memo_all);
  memo_key_bytes = 0;
}

void schedule_memo_forget(void) {
  pthread_mutex_lock(&memo_lock);
  forget_locked();
  pthread_mutex_unlock(&memo_lock);
}

int64_t schedule_memo_hits(void) { return __atomic_load_n(&memo_hit_count, __ATOMIC_RELAXED); }

static memo_entry *find_locked(const schedule_memo_key *k) {
  for (int i = 0; i < memo_all.n; i++) {
    memo_entry *e = memo_all.v[i];
    if (e->hash == k->hash && e->keylen == k->text.n && !memcmp(e->key, k->text.s, e->keylen)) return e;
  }
  return NULL;
}

/* Takes e (dropped when one of its key is there already). */
static void put_locked(memo_entry *e) {
  if (find_locked(&(schedule_memo_key){ .text = { e->key, e->keylen, e->keylen }, .hash = e->hash })) { entry_free(e); return; }
  if (memo_all.n >= MEMO_MAX_ENTRIES || memo_key_bytes + e->keylen > MEMO_MAX_KEY_BYTES) forget_locked();
  VEC_PUSH(memo_all, e);
  memo_key_bytes += e->keylen;
}

/* ---- instantiating an entry over a graph */

typedef struct { tg_buffer **ext; tg_buffer **fresh; } role_ctx;

static tg_buffer *role_buffer(const role_ctx *c, int64_t r) { return r >= 0 ? c->ext[r] : c->fresh[-1 - r]; }

static bool is_marker(const uop *u) {
  return u->op == OP_AFTER && u->nsrc == 3 && u->src[0]->op == OP_ARANGE && u->src[1]->op == OP_CONST && u->src[2]->op == OP_CONST &&
         u->src[2]->arg.i == MEMO_MARK;
}

static uop *from_marker(uop *u, void *p) {
  if (!is_marker(u)) return u;
  return uop0(OP_BUFFER, u->dtype, arg_ptr(role_buffer(p, u->src[1]->arg.i)));
}

static bool instantiate(const memo_entry *e, const schedule_memo_key *k, const uop_list *topo, schedule *out, ptrmap *becomes) {
  role_ctx c = { k->ext.v, tg_xcalloc((size_t)(e->nfresh ? e->nfresh : 1), sizeof(tg_buffer *)) };
  bool ok = true;
  for (int f = 0; f < e->nfresh && ok; f++) {
    const fresh_desc *d = &e->fresh[f];
    c.fresh[f] = d->base == INT64_MIN ? buffer_new(d->dev, d->dtype, d->numel) : buffer_view(role_buffer(&c, d->base), d->offset, d->numel);
    ok = c.fresh[f] != NULL;
  }
  if (ok) {
    for (int i = 0; i < e->nitems; i++) {
      const memo_item *m = &e->items[i];
      sched_item it = { 0 };
      it.ast = m->ast;
      if (it.ast) uop_retain(it.ast);
      it.nbufs = m->nbufs;
      it.bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(m->nbufs ? m->nbufs : 1));
      for (int j = 0; j < m->nbufs; j++) { it.bufs[j] = role_buffer(&c, m->roles[j]); buffer_retain(it.bufs[j]); }
      it.dev = m->dev;
      memcpy(it.name, m->name, sizeof it.name);
      it.merged = m->merged;
      VEC_PUSH(*out, it);
    }
    for (int i = 0; i < e->nrepl; i++) pm_put(becomes, topo->v[e->repl[i].node], graph_map(e->repl[i].tmpl, from_marker, &c));
  } else {
    tg_clear_error();
  }
  /* the items and the replacements' BUFFER nodes hold the fresh buffers now */
  for (int f = 0; f < e->nfresh; f++) buffer_release(c.fresh[f]);
  free(c.fresh);
  return ok;
}

/* ---- recording a schedule */

typedef struct {
  ptrmap role;                /* tg_buffer* -> role + 1 (ext: number + 1; fresh: role, negative) */
  VEC(fresh_desc) fresh;
  int64_t first_id;
  bool bad;
} record_ctx;

/* key: what names the buffer in the role map (b itself, or for a call's
 * intermediate not made yet its slot in the call's table, with b the
 * body's buffer describing it) */
static int64_t role_of_key(record_ctx *c, const void *key, tg_buffer *b) {
  intptr_t r = (intptr_t)pm_get(&c->role, key);
  if (r > 0) return r - 1;
  if (r < 0) return r;
  fresh_desc d = { b->dev, b->dtype, b->numel, INT64_MIN, 0 };
  if (b->base) {
    size_t item = (size_t)tg_dtype_size(b->base->dtype);
    if (b->dtype != b->base->dtype || b->base->base || b->offset % item) { c->bad = true; return 0; }
    d.base = role_of_key(c, b->base, b->base);   /* (a fresh base is recorded before its views) */
    d.offset = (int64_t)(b->offset / item);
  }
  VEC_PUSH(c->fresh, d);
  int64_t role = -(int64_t)c->fresh.n;
  pm_put(&c->role, key, (void *)(intptr_t)role);
  return role;
}
static int64_t role_of(record_ctx *c, tg_buffer *b) { return role_of_key(c, b, b); }

/* buffer j of kernel k of call ci, made or not */
static int64_t call_role(record_ctx *c, const call_instance *ci, int k, int j) {
  tg_buffer *b = call_instance_buf(ci, k, j);
  if (b) return role_of(c, b);
  const call_body *body = ci->body;
  int i = -body->roles[body->role_at[k] + j] - 1;   /* an intermediate (only those are NULL) */
  return role_of_key(c, &ci->tab[body->nparams + i], body->internal.v[i]);
}

static uop *to_marker(uop *u, void *p) {
  record_ctx *c = p;
  if (u->op == OP_BUFFER) {
    tg_buffer *b = u->arg.p;
    int64_t r = role_of(c, b);
    return uop3(OP_AFTER, u->dtype, uop0(OP_ARANGE, DT_INDEX, arg_int(b->numel)), uop_const_int(DT_INDEX, r), uop_const_int(DT_INDEX, MEMO_MARK), arg_none());
  }
  /* a replacement that holds a creation's or an assign's identity (a lazy
   * view of a node that was not stored) is this graph's alone: another
   * graph's node must not take it over */
  if (u->op == OP_UNIQUE || u->op == OP_ASSIGN || u->arg.kind == ARG_PTR || is_marker(u)) c->bad = true;
  return u;
}

/* ---- on disk */

#define MEMO_MAGIC "tg schedule v2\n"

static char *disk_path(const schedule_memo_key *k) {
  return compile_cache_path(k->text.s, "schedule memo", tg_build_identity(), ".sched");
}

static void dev_field(strbuf *sb, const tg_device *d) { sb_printf(sb, " %zu:%s", strlen(d->name), d->name); }

/* Every distinct AST of e once, in one graph (kernels share index math),
 * then the items (name, device, merged, buffers' roles, AST number or -1
 * for a copy), then the replacements, also one graph. */
static void write_entry(const char *path, const memo_entry *e) {
  ptrmap num = { 0 };
  VEC(uop *) asts = { 0 };
  for (int i = 0; i < e->nitems; i++)
    if (e->items[i].ast && !pm_get(&num, e->items[i].ast)) { VEC_PUSH(asts, e->items[i].ast); pm_put(&num, e->items[i].ast, (void *)(intptr_t)asts.n); }
  strbuf body = { 0 }, g = { 0 };
  uop_pool_push();
  bool ok = uop_serialize(&g, uop_new(OP_SINK, DT_VOID, asts.v, asts.n, arg_none()));
  sb_printf(&body, "%d %d %d %d %d %zu\n", e->next, e->nfresh, e->nitems, e->nrepl, asts.n, g.n);
  sb_append(&body, g.s, g.n);
  /* each AST's digest: the engine's program cache keys by it, and a
   * process reading this entry then need not serialize the AST again */
  for (int i = 0; ok && i < asts.n; i++) {
    char d[65];
    ok = uop_text_digest(asts.v[i], d);
    sb_printf(&body, " %d:%s", 64, d);
  }
  sb_puts(&body, "\n");
  for (int f = 0; f < e->nfresh; f++) {
    const fresh_desc *d = &e->fresh[f];
    dev_field(&body, d->dev);
    sb_printf(&body, " %d %" PRId64 " %" PRId64 " %" PRId64 "\n", (int)d->dtype, d->numel, d->base, d->offset);
  }
  for (int i = 0; i < e->nitems; i++) {
    const memo_item *m = &e->items[i];
    sb_printf(&body, " %zu:%s", strlen(m->name), m->name);
    dev_field(&body, m->dev);
    sb_printf(&body, " %d %d", m->merged, m->nbufs);
    for (int j = 0; j < m->nbufs; j++) uop_put_int(&body, m->roles[j]);
    uop_put_int(&body, m->ast ? (int64_t)(intptr_t)pm_get(&num, m->ast) - 1 : -1);
    sb_puts(&body, "\n");
  }
  uop **t = tg_xmalloc(sizeof(uop *) * (size_t)(e->nrepl ? e->nrepl : 1));
  for (int i = 0; i < e->nrepl; i++) { t[i] = e->repl[i].tmpl; uop_put_int(&body, e->repl[i].node); }
  sb_free(&g);
  ok = ok && uop_serialize(&g, uop_new(OP_SINK, DT_VOID, t, e->nrepl, arg_none()));
  uop_pool_pop();
  sb_printf(&body, " %zu\n", g.n);
  sb_append(&body, g.s, g.n);
  if (ok) cache_write_checked(path, MEMO_MAGIC, body.s, body.n);
  free(t);
  pm_free(&num);
  VEC_FREE(asts);
  sb_free(&g);
  sb_free(&body);
}

typedef struct { const char *p, *end; bool bad; } reader;

static int64_t rd_int(reader *r, int64_t lo, int64_t hi) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\n')) r->p++;
  char *e;
  long long v = r->p < r->end ? strtoll(r->p, &e, 10) : 0;
  if (r->bad || r->p >= r->end || e == r->p || e > r->end || v < lo || v > hi) { r->bad = true; return lo; }
  r->p = e;
  return v;
}
/* " N:text" into buf */
static void rd_str(reader *r, char *buf, size_t cap) {
  int64_t n = rd_int(r, 0, (int64_t)cap - 1);
  if (r->bad || r->p >= r->end || *r->p != ':' || r->end - r->p - 1 < n) { r->bad = true; buf[0] = 0; return; }
  memcpy(buf, r->p + 1, (size_t)n);
  buf[n] = 0;
  r->p += 1 + n;
}
/* LEN bytes of a serialized SINK of n graphs (after the "\n" ending the
 * line before): the SINK, borrowed (pool) */
static uop *rd_sink(reader *r, int64_t len, int64_t n) {
  if (r->bad || r->p >= r->end || *r->p != '\n' || r->end - r->p - 1 < len) { r->bad = true; return NULL; }
  r->p++;
  uop *u = uop_deserialize(r->p, (size_t)len);
  r->p += len;
  if (!u || u->op != OP_SINK || u->nsrc != n) { r->bad = true; return NULL; }
  return u;
}

static tg_device *rd_dev(reader *r) {
  char name[64];
  rd_str(r, name, sizeof name);
  tg_device *d = r->bad ? NULL : device_get(name);
  if (!d) r->bad = true;
  return d;
}

static memo_entry *read_entry(const char *path, const schedule_memo_key *k, const uop_list *topo) {
  size_t n = 0;
  char *data = cache_read_checked(path, MEMO_MAGIC, &n);
  if (!data) return NULL;
  reader r = { data, data + n, false };
  memo_entry *e = tg_xcalloc(1, sizeof *e);
  e->next = (int)rd_int(&r, k->ext.n, k->ext.n);
  e->nfresh = (int)rd_int(&r, 0, 1 << 24);
  int nitems = (int)rd_int(&r, 0, 1 << 24), nrepl = (int)rd_int(&r, 0, topo->n), nasts = (int)rd_int(&r, 0, 1 << 24);
  int64_t alen = rd_int(&r, 0, INT64_MAX);
  uop_pool_push();
  uop *asts = rd_sink(&r, alen, nasts);
  for (int i = 0; i < nasts && !r.bad; i++) {
    char d[65];
    rd_str(&r, d, sizeof d);
    if (r.bad || strlen(d) != 64 || strspn(d, "0123456789abcdef") != 64) { r.bad = true; break; }
    char again[65] = "";
    if (setting_on(SET_TG_SCHEDULE_CACHE_CHECK) && (!uop_text_digest(asts->src[i], again) || strcmp(again, d))) {
      fprintf(stderr, "TG_SCHEDULE_CACHE_CHECK: %s: kernel AST %d's digest %s is not its text's (%s)\n", path, i, d, again);
      abort();
    }
    uop_text_digest_note(asts->src[i], d);
  }
  if (!r.bad) {
    e->fresh = tg_xcalloc((size_t)(e->nfresh ? e->nfresh : 1), sizeof(fresh_desc));
    e->items = tg_xcalloc((size_t)(nitems ? nitems : 1), sizeof(memo_item));
    e->repl = tg_xcalloc((size_t)(nrepl ? nrepl : 1), sizeof(memo_repl));
  }
  for (int f = 0; f < e->nfresh && !r.bad; f++) {
    fresh_desc *d = &e->fresh[f];
    d->dev = rd_dev(&r);
    d->dtype = (tg_dtype)rd_int(&r, 0, TG_DTYPE_COUNT - 1);
    d->numel = rd_int(&r, 0, INT64_MAX);
    d->base = rd_int(&r, INT64_MIN, e->next - 1);
    if (d->base != INT64_MIN && d->base < -f) r.bad = true;   /* a fresh base is made before its views */
    d->offset = rd_int(&r, 0, INT64_MAX);
  }
  for (int i = 0; i < nitems && !r.bad; i++) {
    memo_item *m = &e->items[e->nitems++];
    rd_str(&r, m->name, sizeof m->name);
    m->dev = rd_dev(&r);
    m->merged = rd_int(&r, 0, 1);
    m->nbufs = (int)rd_int(&r, 0, 4096);
    m->roles = tg_xcalloc((size_t)(m->nbufs ? m->nbufs : 1), sizeof(int64_t));
    for (int j = 0; j < m->nbufs; j++) m->roles[j] = rd_int(&r, -(int64_t)e->nfresh, e->next - 1);
    int64_t a = rd_int(&r, -1, nasts - 1);
    if (r.bad) break;
    m->ast = a >= 0 ? asts->src[a] : NULL;
    if (m->ast) uop_retain(m->ast);
    if (m->ast ? m->ast->op != OP_SINK : m->nbufs != 2) r.bad = true;   /* a copy has no AST: dst, src */
  }
  for (int i = 0; i < nrepl && !r.bad; i++) e->repl[i].node = (int)rd_int(&r, 0, topo->n - 1);
  int64_t tlen = rd_int(&r, 0, INT64_MAX);
  uop *t = rd_sink(&r, tlen, nrepl);
  for (int i = 0; i < nrepl && !r.bad; i++) {
    uop_list l = uop_toposort(t->src[i]);   /* every stand-in must name a role there is */
    for (int j = 0; j < l.n; j++)
      if (is_marker(l.v[j]) && (l.v[j]->src[1]->arg.i < -(int64_t)e->nfresh || l.v[j]->src[1]->arg.i >= e->next)) r.bad = true;
    free(l.v);
    e->repl[i].tmpl = t->src[i];
    uop_retain(t->src[i]);
    e->nrepl++;
  }
  uop_pool_pop();
  free(data);
  if (r.bad) { entry_free(e); return NULL; }
  e->key = tg_xmalloc(k->text.n);
  memcpy(e->key, k->text.s, k->text.n);
  e->keylen = k->text.n;
  e->hash = k->hash;
  return e;
}

/* ---- the API */

#define MEMO_KEY_HEAD "tg schedule memo v1 "

/* The entry of k, from memory or else from disk, with memo_lock held; or
 * NULL (unlocked). */
static memo_entry *entry_of(const schedule_memo_key *k, const uop_list *topo) {
  pthread_mutex_lock(&memo_lock);
  memo_entry *e = find_locked(k);
  if (e) return e;
  pthread_mutex_unlock(&memo_lock);
  char *path = disk_path(k);
  memo_entry *d = path ? read_entry(path, k, topo) : NULL;
  free(path);
  if (!d) return NULL;
  pthread_mutex_lock(&memo_lock);
  put_locked(d);
  if (!(e = find_locked(k))) pthread_mutex_unlock(&memo_lock);
  return e;
}

/* whether the schedule made a view of memory (a zero-kernel slice) */
static bool has_views(const memo_entry *e) {
  for (int f = 0; f < e->nfresh; f++) if (e->fresh[f].base != INT64_MIN) return true;
  return false;
}

bool schedule_memo_find(const uop_list *topo, tg_device *default_dev, schedule_memo_key *k, schedule *out, ptrmap *becomes) {
  memset(k, 0, sizeof *k);
  if (setting_on(SET_TG_NO_SCHEDULE_CACHE) || viz_on || setting_int(SET_VIZ) || setting_int(SET_TRACK_REWRITES)) return false;
  /* what steers the scheduler besides the graph */
  /* whether views are allowed first (at MEMO_VIEWS_AT), then what else
   * steers the scheduler besides the graph */
  bool views = schedule_allow_views(true);
  schedule_allow_views(views);
  sb_printf(&k->text, "%s%d %d %d %d %d %" PRId64 " %" PRId64 " %" PRId64, MEMO_KEY_HEAD, views, setting_on(SET_TG_NO_LAYOUT),
            setting_on(SET_TG_NO_SHARED_STORE), setting_on(SET_TG_NO_SMALL_FORMS), (int)setting_int(SET_TG_NO_MULTI_OUTPUT),
            setting_int(SET_TG_RING), setting_int(SET_TG_RING_ALLREDUCE_THRESHOLD), setting_int(SET_TG_ALLREDUCE_BUCKET));
  device_text(&k->text, default_dev);
  sb_puts(&k->text, "\n");
  walk w = { { 0 }, &k->ext };
  k->keyed = uop_serialize_nodes(&k->text, topo, key_arg, &w);
  pm_free(&w.ord);
  if (!k->keyed) return false;
  k->hash = tg_hash_bytes(k->text.s, k->text.n, 0x6d656d6f);
  bool hit = false;
  memo_entry *e = entry_of(k, topo);
  if (e) {
    hit = instantiate(e, k, topo, out, becomes);
    pthread_mutex_unlock(&memo_lock);
  } else if (!views) {
    /* a JIT's capture allows no views: the same graph scheduled with views
     * allowed is this schedule when it made none (one entry, not two) */
    schedule_memo_key alt = *k;
    alt.text = (strbuf){ 0 };
    sb_append(&alt.text, k->text.s, k->text.n);
    alt.text.s[strlen(MEMO_KEY_HEAD)] = '1';
    alt.hash = tg_hash_bytes(alt.text.s, alt.text.n, 0x6d656d6f);
    if ((e = entry_of(&alt, topo))) {
      if (!has_views(e)) hit = instantiate(e, k, topo, out, becomes);
      pthread_mutex_unlock(&memo_lock);
    }
    sb_free(&alt.text);
  }
  if (e && !hit) schedule_free(out), memset(out, 0, sizeof *out);
  if (hit) __atomic_add_fetch(&memo_hit_count, 1, __ATOMIC_RELAXED);
  k->first_id = buffer_next_id();
  return hit;
}

void schedule_memo_add(schedule_memo_key *k, const uop_list *topo, const schedule *out, const ptrmap *becomes) {
  if (!k->keyed) return;
  record_ctx c = { { 0 }, { 0 }, k->first_id, false };
  for (int i = 0; i < k->ext.n; i++) if (!pm_get(&c.role, k->ext.v[i])) pm_put(&c.role, k->ext.v[i], (void *)(intptr_t)(i + 1));
  memo_entry *e = tg_xcalloc(1, sizeof *e);
  e->next = k->ext.n;
  /* flat: an item standing for a call (schedule_create_calls) is its kernels */
  int nk = 0;
  for (int i = 0; i < out->n; i++) nk += out->v[i].call ? out->v[i].call->body->sched.n : 1;
  e->items = tg_xcalloc((size_t)(nk ? nk : 1), sizeof(memo_item));
  for (int i = 0; i < out->n && !c.bad; i++) {
    const call_instance *ci = out->v[i].call;
    for (int k = 0; k < (ci ? ci->body->sched.n : 1) && !c.bad; k++) {
      const sched_item *it = ci ? &ci->body->sched.v[k] : &out->v[i];
      memo_item *m = &e->items[e->nitems++];
      m->ast = it->ast;
      if (m->ast) uop_retain(m->ast);
      m->nbufs = it->nbufs;
      m->roles = tg_xcalloc((size_t)(it->nbufs ? it->nbufs : 1), sizeof(int64_t));
      for (int j = 0; j < it->nbufs; j++) m->roles[j] = ci ? call_role(&c, ci, k, j) : role_of(&c, it->bufs[j]);
      m->dev = it->dev;
      memcpy(m->name, it->name, sizeof m->name);
      m->merged = it->merged || ci;
    }
  }
  uop_pool_push();
  for (int i = 0; i < topo->n && !c.bad; i++) {
    uop *r = pm_get(becomes, topo->v[i]);
    if (!r) continue;
    if (!e->nrepl) e->repl = tg_xcalloc((size_t)topo->n, sizeof(memo_repl));
    uop *t = graph_map(r, to_marker, &c);
    uop_retain(t);
    e->repl[e->nrepl++] = (memo_repl){ i, t };
  }
  uop_pool_pop();
  e->fresh = c.fresh.v;
  e->nfresh = c.fresh.n;
  pm_free(&c.role);
  if (c.bad) { entry_free(e); return; }
  e->key = tg_xmalloc(k->text.n);
  memcpy(e->key, k->text.s, k->text.n);
  e->keylen = k->text.n;
  e->hash = k->hash;
  if (e->nitems) {   /* (one with no kernel is quicker to make than to read) */
    char *path = disk_path(k);
    if (path) write_entry(path, e);
    free(path);
  }
  pthread_mutex_lock(&memo_lock);
  put_locked(e);
  pthread_mutex_unlock(&memo_lock);
}

void schedule_memo_key_free(schedule_memo_key *k) {
  sb_free(&k->text);
  VEC_FREE(k->ext);
  memset(k, 0, sizeof *k);
}

/* ---- checking a found schedule against one made anew (TG_SCHEDULE_CACHE_CHECK) */

typedef struct { ptrmap fwd, back, seen; const char *why; } same_ctx;

/* a and b the same buffer, or fresh buffers that correspond one to one
 * (same description, views of corresponding bases) */
static bool same_buffer(same_ctx *c, tg_buffer *a, tg_buffer *b) {
  if (a == b) return true;
  tg_buffer *fa = pm_get(&c->fwd, a), *fb = pm_get(&c->back, b);
  if (fa || fb) return fa == b && fb == a;
  if (a->dev != b->dev || a->dtype != b->dtype || a->numel != b->numel || a->offset != b->offset || !a->base != !b->base ||
      a->placeholder != b->placeholder || (a->base && !same_buffer(c, a->base, b->base)))
    return false;
  pm_put(&c->fwd, a, b);
  pm_put(&c->back, b, a);
  return true;
}

/* a and b the same graph, buffers matched by same_buffer */
static bool same_graph(same_ctx *c, uop *a, uop *b) {
  if (a == b) return true;
  if (pm_get(&c->seen, a) == b) return true;
  if (a->op != b->op || a->dtype.bits != b->dtype.bits || a->nsrc != b->nsrc) return false;
  if (a->op == OP_BUFFER) { if (!same_buffer(c, a->arg.p, b->arg.p)) return false; }
  else if (a->arg.kind != b->arg.kind || (a->arg.kind == ARG_PTR ? a->arg.p != b->arg.p : !uop_arg_equal(&a->arg, &b->arg))) return false;
  for (int i = 0; i < a->nsrc; i++) if (!same_graph(c, a->src[i], b->src[i])) return false;
  pm_put(&c->seen, a, b);
  return true;
}

void schedule_memo_check(const uop_list *topo, const schedule *found, const ptrmap *found_becomes, const schedule *made, const ptrmap *made_becomes) {
  same_ctx c = { { 0 }, { 0 }, { 0 }, NULL };
  if (found->n != made->n) c.why = "another number of kernels";
  for (int i = 0; i < found->n && !c.why; i++) {
    const sched_item *a = &found->v[i], *b = &made->v[i];
    if (a->ast != b->ast || a->nbufs != b->nbufs || a->dev != b->dev || a->merged != b->merged || strcmp(a->name, b->name)) c.why = "another kernel";
    for (int j = 0; j < a->nbufs && !c.why; j++) if (!same_buffer(&c, a->bufs[j], b->bufs[j])) c.why = "a kernel's buffers differ";
  }
  for (int i = 0; i < topo->n && !c.why; i++) {
    uop *ra = pm_get(found_becomes, topo->v[i]), *rb = pm_get(made_becomes, topo->v[i]);
    if (!ra != !rb || (ra && !same_graph(&c, ra, rb))) {
      c.why = "a node became something else";
      fprintf(stderr, "node %d (%s) became:\n", i, uop_op_name(topo->v[i]->op));
      if (ra) uop_print(stderr, ra);
      fprintf(stderr, "and made anew:\n");
      if (rb) uop_print(stderr, rb);
    }
  }
  pm_free(&c.fwd); pm_free(&c.back); pm_free(&c.seen);
  if (!c.why) return;
  fprintf(stderr, "TG_SCHEDULE_CACHE_CHECK: a cached schedule differs from one made anew: %s (%d kernels found, %d made)\n", c.why, found->n, made->n);
  for (int i = 0; i < found->n || i < made->n; i++)
    fprintf(stderr, "  %3d %-40s %s\n", i, i < found->n ? found->v[i].name : "-", i < made->n ? made->v[i].name : "-");
  abort();
}
