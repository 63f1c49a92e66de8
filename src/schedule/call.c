/* call.c: function bodies, scheduled once and instantiated per call (see
 * call.h). */
#include "schedule/call.h"
#include "uop/rewrite.h"

/* ---- bodies */

static void hook_retain(void *b) { call_body_retain(b); }
static void hook_release(void *b) { call_body_release(b); }
static const char *hook_name(void *b) { return ((call_body *)b)->name; }
static const uop_call_hooks hooks = { hook_retain, hook_release, hook_name };
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static void install_hooks(void) { uop_set_call_hooks(&hooks); }

uop *call_param_new(tg_device *dev, dtype_t dt, const int64_t *shape, int ndim) {
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) if (tg_mul_overflow_i64(numel, shape[i], &numel)) { tg_seterr("function parameter: shape too large"); return NULL; }
  tg_buffer *b = buffer_new(dev, (tg_dtype)dt.scalar, numel);
  if (!b) return NULL;
  b->placeholder = true;
  uop *u = uop0(OP_BUFFER, dt_scalar(b->dtype), arg_ptr(b));
  buffer_release(b);   /* the BUFFER node holds it */
  return ndim == 1 && shape[0] == numel ? u : uop1(OP_RESHAPE, dt, u, arg_ints(shape, ndim));
}

bool call_is_param_buffer(const tg_buffer *b) { return b && b->placeholder; }

static tg_buffer *view_buffer(uop *u) {
  while (u->op == OP_RESHAPE || u->op == OP_SHRINK_VAR) u = u->src[0];
  return u->op == OP_BUFFER ? u->arg.p : NULL;
}

call_body *call_body_new(const char *name, uop *const *params, int nparams, uop *const *outs, int nouts) {
  pthread_once(&hooks_once, install_hooks);
  call_body *b = tg_xcalloc(1, sizeof *b);
  b->refcnt = 1;
  snprintf(b->name, sizeof b->name, "%s", name && *name ? name : "function");
  b->nparams = nparams; b->nouts = nouts;
  b->params = tg_xcalloc((size_t)(nparams ? nparams : 1), sizeof(uop *));
  b->param_bufs = tg_xcalloc((size_t)(nparams ? nparams : 1), sizeof(tg_buffer *));
  for (int i = 0; i < nparams; i++) {
    b->params[i] = params[i]; uop_retain(params[i]);
    b->param_bufs[i] = view_buffer(params[i]); buffer_retain(b->param_bufs[i]);
  }
  b->outs = tg_xcalloc((size_t)(nouts ? nouts : 1), sizeof(uop *));
  b->targets = tg_xcalloc((size_t)(nouts ? nouts : 1), sizeof(uop_call_target));
  for (int i = 0; i < nouts; i++) {
    b->outs[i] = outs[i]; uop_retain(outs[i]);
    b->targets[i] = (uop_call_target){ outs[i], b, i };
  }
  pthread_mutex_init(&b->lock, NULL);
  return b;
}

void call_body_retain(call_body *b) { if (b) __atomic_add_fetch(&b->refcnt, 1, __ATOMIC_RELAXED); }

void call_body_release(call_body *b) {
  if (!b || __atomic_sub_fetch(&b->refcnt, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (b->owner_free) b->owner_free(b->owner_data);
  if (b->scheduled) {
    schedule_free(&b->sched);
    for (int i = 0; i < b->nouts; i++) uop_release(b->out_repl[i]);
    free(b->out_repl);
    for (int i = 0; i < b->internal.n; i++) buffer_release(b->internal.v[i]);
    VEC_FREE(b->internal);
    pm_free(&b->role);
    free(b->param_written);
    free(b->roles); free(b->role_at); free(b->out_item); free(b->out_param); free(b->out_slot); free(b->internal_out);
  }
  VEC_FREE(b->structure_fixed);
  for (int i = 0; i < b->nouts; i++) uop_release(b->outs[i]);
  for (int i = 0; i < b->nparams; i++) { uop_release(b->params[i]); buffer_release(b->param_bufs[i]); }
  free(b->outs); free(b->targets); free(b->params); free(b->param_bufs);
  pthread_mutex_destroy(&b->lock);
  free(b);
}

/* ---- scheduling the body once */

/* each buffer of the body's schedule: a parameter, an intermediate (fresh
 * per call), or fixed (memory the body reads that is not a parameter) */
static void classify(call_body *b, tg_buffer *buf, const ptrmap *graph_bufs) {
  if (pm_get(&b->role, buf) || pm_get(graph_bufs, buf)) return;
  for (int i = 0; i < b->nparams; i++)
    if (b->param_bufs[i] == buf) { pm_put(&b->role, buf, (void *)(intptr_t)(1 + i)); return; }
  buffer_retain(buf);
  VEC_PUSH(b->internal, buf);
  pm_put(&b->role, buf, (void *)(intptr_t)-(intptr_t)b->internal.n);
}

void call_body_plan(call_body *b) {
  int n = b->sched.n, total = 0;
  b->role_at = tg_xmalloc(sizeof(int) * (size_t)(n ? n : 1));
  for (int i = 0; i < n; i++) { b->role_at[i] = total; total += b->sched.v[i].nbufs; }
  b->roles = tg_xmalloc(sizeof(int) * (size_t)(total ? total : 1));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < b->sched.v[i].nbufs; j++) b->roles[b->role_at[i] + j] = (int)(intptr_t)pm_get(&b->role, b->sched.v[i].bufs[j]);
  int m = b->nouts ? b->nouts : 1;
  b->out_item = tg_xmalloc(sizeof(int) * (size_t)m);
  b->out_param = tg_xmalloc(sizeof(int) * (size_t)m);
  b->out_slot = tg_xmalloc(sizeof(int) * (size_t)m);
  b->internal_out = tg_xcalloc((size_t)(b->internal.n ? b->internal.n : 1), sizeof(bool));
  for (int k = 0; k < b->nouts; k++) {
    uop *v = b->out_repl[k];
    while (v->op == OP_PERMUTE || v->op == OP_RESHAPE || v->op == OP_SHRINK_VAR) v = v->src[0];
    tg_buffer *ob = v->op == OP_BUFFER ? v->arg.p : NULL;
    intptr_t r = ob ? (intptr_t)pm_get(&b->role, ob) : 0;
    b->out_param[k] = r > 0 ? (int)r - 1 : -1;
    b->out_slot[k] = r < 0 ? (int)(-r - 1) : -1;
    /* every buffer an output's view reads is the call's own */
    uop_list l = uop_toposort(b->out_repl[k]);
    for (int i = 0; i < l.n; i++) {
      intptr_t q = l.v[i]->op == OP_BUFFER ? (intptr_t)pm_get(&b->role, l.v[i]->arg.p) : 0;
      if (q < 0) b->internal_out[-q - 1] = true;
    }
    free(l.v);
    for (int j = 0; j < k && b->out_slot[k] >= 0; j++) if (b->out_slot[j] == b->out_slot[k]) b->out_slot[k] = b->out_slot[j] = -1;   /* one buffer, two outputs */
    b->out_item[k] = -1;
    for (int i = 0; i < n && ob; i++)
      for (int j = 0; j < b->sched.v[i].nbufs; j++) if (b->sched.v[i].bufs[j] == ob) b->out_item[k] = i;
  }
}

static int schedule_body(call_body *b, const char *default_device) {
  /* the parameters' device first: the body runs where its inputs live */
  const char *dev = b->nparams ? b->param_bufs[0]->dev->name : default_device;
  ptrmap becomes = { 0 };
  uop_pool_push();
  int rc = schedule_create(b->outs, b->nouts, dev, &b->sched, &becomes);
  if (rc == 0) {
    /* the buffers the graph itself reads are fixed (weights read inside) */
    ptrmap graph_bufs = { 0 };
    uop *sink = uop_new(OP_SINK, DT_VOID, b->outs, b->nouts, arg_none());
    uop_list topo = uop_toposort(sink);
    for (int i = 0; i < topo.n; i++)
      if (topo.v[i]->op == OP_BUFFER && !((tg_buffer *)topo.v[i]->arg.p)->placeholder) pm_put(&graph_bufs, topo.v[i]->arg.p, (void *)1);
    free(topo.v);
    for (int i = 0; i < b->sched.n; i++)
      for (int j = 0; j < b->sched.v[i].nbufs; j++) classify(b, b->sched.v[i].bufs[j], &graph_bufs);
    /* which parameters its kernels store to (assigns): their arguments are
     * written in place */
    b->param_written = tg_xcalloc((size_t)(b->nparams ? b->nparams : 1), sizeof(bool));
    for (int i = 0; i < b->sched.n; i++) {
      const sched_item *it = &b->sched.v[i];
      if (!it->ast) { intptr_t r = it->nbufs ? (intptr_t)pm_get(&b->role, it->bufs[0]) : 0; if (r > 0) b->param_written[r - 1] = true; continue; }
      uop_list l = uop_toposort(it->ast);
      for (int k = 0; k < l.n; k++) {
        if (l.v[k]->op != OP_STORE) continue;
        int64_t g = l.v[k]->src[0]->src[0]->arg.i;
        intptr_t r = g >= 0 && g < it->nbufs ? (intptr_t)pm_get(&b->role, it->bufs[g]) : 0;
        if (r > 0) b->param_written[r - 1] = true;
      }
      free(l.v);
    }
    b->out_repl = tg_xcalloc((size_t)(b->nouts ? b->nouts : 1), sizeof(uop *));
    for (int k = 0; k < b->nouts; k++) {
      uop *r = pm_get(&becomes, b->outs[k]);
      b->out_repl[k] = r ? r : b->outs[k];
      uop_retain(b->out_repl[k]);
      /* an output that is a view of a parameter or of fixed memory needs no
       * classification; one over a buffer of the schedule has it already */
      uop *ov = b->out_repl[k];
      while (ov->op == OP_SHRINK_VAR) ov = ov->src[0];
      tg_buffer *ob = view_buffer(ov->op == OP_PERMUTE ? ov->src[0] : ov);
      if (ob) classify(b, ob, &graph_bufs);
    }
    pm_free(&graph_bufs);
    call_body_plan(b);
    b->scheduled = true;
  }
  pm_free(&becomes);
  uop_pool_pop();
  return rc;
}

/* ---- instantiating a call */

typedef struct { call_body *b; tg_buffer *const *args; tg_buffer **fresh; } remap_ctx;

static tg_buffer *remap(remap_ctx *c, tg_buffer *buf) {
  intptr_t r = (intptr_t)pm_get(&c->b->role, buf);
  if (r > 0) return c->args[r - 1];
  if (r < 0) return c->fresh[-r - 1];
  return buf;
}

static uop *remap_buffers(uop *u, void *p) {
  remap_ctx *c = p;
  if (u->op != OP_BUFFER) return u;
  tg_buffer *nb = remap(c, u->arg.p);
  return nb == u->arg.p ? u : uop0(OP_BUFFER, u->dtype, arg_ptr(nb));
}

/* an output's view over the call's buffers: a chain of views (one source
 * each) rebuilt directly, anything else by graph_map */
static uop *remap_view(uop *u, remap_ctx *c) {
  if (u->op == OP_BUFFER) return remap_buffers(u, c);
  if (u->nsrc != 1) return graph_map(u, remap_buffers, c);
  uop *s = remap_view(u->src[0], c);
  return s == u->src[0] ? u : uop_replace_src(u, &s, 1);
}

int call_body_schedule(call_body *b, const char *default_device) {
  pthread_mutex_lock(&b->lock);
  int rc = b->scheduled ? 0 : schedule_body(b, default_device);
  pthread_mutex_unlock(&b->lock);
  return rc;
}

bool call_output_placeable(const call_body *b, int k) { return b->scheduled && k >= 0 && k < b->nouts && b->out_slot[k] >= 0; }

int call_instantiate(call_body *b, const char *default_device, tg_buffer *const *args, tg_buffer *const *into, call_instance *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < b->nparams; i++) {
    tg_buffer *p = b->param_bufs[i], *a = args[i];
    if (!a || a->dtype != p->dtype || a->numel != p->numel || a->dev != p->dev)
      return tg_seterr("internal: call of %s: argument %d does not match its parameter", b->name, i);
  }
  if (call_body_schedule(b, default_device) < 0) return -1;
  call_body_retain(b);
  out->body = b;
  out->tab = tg_xcalloc((size_t)(b->nparams + b->internal.n ? b->nparams + b->internal.n : 1), sizeof(tg_buffer *));
  for (int i = 0; i < b->nparams; i++) { out->tab[i] = args[i]; buffer_retain(args[i]); }
  tg_buffer **fresh = out->tab + b->nparams;
  remap_ctx c = { b, args, fresh };
  for (int k = 0; into && k < b->nouts; k++) {
    int f = b->out_slot[k];
    tg_buffer *t = f >= 0 ? b->internal.v[f] : NULL, *m = into[k];
    if (m && t && m->dtype == t->dtype && m->numel == t->numel) { fresh[f] = m; buffer_retain(m); }
  }
  for (int i = 0; i < b->internal.n; i++) {   /* the outputs' buffers; intermediates when listed */
    tg_buffer *t = b->internal.v[i];
    if (!fresh[i] && b->internal_out[i]) fresh[i] = buffer_new(t->dev, t->dtype, t->numel);
  }
  int n = b->nouts ? b->nouts : 1;
  out->out_repl = tg_xcalloc((size_t)n, sizeof(uop *));
  out->out_buf = tg_xcalloc((size_t)n, sizeof(tg_buffer *));
  out->out_item = b->out_item;
  out->out_param = b->out_param;
  for (int k = 0; k < b->nouts; k++) {
    out->out_repl[k] = remap_view(b->out_repl[k], &c);
    uop *v = out->out_repl[k];
    while (v->op == OP_PERMUTE || v->op == OP_RESHAPE || v->op == OP_SHRINK_VAR) v = v->src[0];
    out->out_buf[k] = v->op == OP_BUFFER ? v->arg.p : NULL;
  }
  return 0;
}

void call_instance_fresh(call_instance *c) {
  const call_body *b = c->body;
  for (int i = 0; i < b->internal.n; i++) {
    tg_buffer *t = b->internal.v[i], **f = &c->tab[b->nparams + i];
    if (!*f) *f = buffer_new(t->dev, t->dtype, t->numel);
  }
}

void call_instance_item(call_instance *c, int i, sched_item *out) {
  call_instance_fresh(c);
  const sched_item *src = &c->body->sched.v[i];
  *out = *src;
  out->merged = true;
  out->call = NULL;
  if (out->ast) uop_retain(out->ast);
  out->bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)(src->nbufs ? src->nbufs : 1));
  for (int j = 0; j < src->nbufs; j++) { out->bufs[j] = call_instance_buf(c, i, j); buffer_retain(out->bufs[j]); }
}

void call_instance_free(call_instance *c) {
  if (c->body) {
    for (int i = 0; i < c->body->nparams + c->body->internal.n; i++) if (c->tab[i]) buffer_release(c->tab[i]);
    call_body_release(c->body);
  }
  free(c->tab); free(c->out_repl); free(c->out_buf);
  memset(c, 0, sizeof *c);
}
