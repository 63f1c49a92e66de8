/* function.c: tg_function, a C function of tensors wrapped as a body built
 * once per input signature (shapes, dtypes, devices) and called as CALL
 * nodes (schedule/call.h). Calls with equal signatures share the body, its
 * schedule and its compiled kernels. Gradients flow through calls: the
 * gradient of a call is a call of the body's gradient body (the body's
 * graph differentiated once, over the same parameters and the output's
 * gradient), or of the user's gradient function when one is set. */
#include <pthread.h>
#include "runtime/device.h"
#include "schedule/call.h"
#include "schedule/schedule_memo.h"
#include "tensor/tensor.h"
#include "uop/dims.h"

#define FUNCTION_MAX_IO 64

/* what a body of a tg_function keeps besides the graph */
typedef struct {
  struct grad_entry { int out; uint64_t need; call_body *body; } *grads;
  int ngrads;
  tg_function_grad_fn user_grad;
  void *user_ctx;
  const char *out_device[2 * FUNCTION_MAX_IO];
  int nvisible;   /* the function's outputs; the rest are its assigns */
} body_data;

static void body_data_free(void *p) {
  body_data *d = p;
  for (int i = 0; i < d->ngrads; i++) call_body_release(d->grads[i].body);
  free(d->grads);
  free(d);
}

/* an input's signature; var[i]: the variable axis i runs to (DEFINE_VAR,
 * retained by the signature's entry), NULL when static */
typedef struct {
  int ndim;
  int64_t shape[TG_MAX_DIMS];
  int dtype;
  const char *device;
  uop *var[TG_MAX_DIMS];
} param_sig;

typedef struct { param_sig *sig; call_body *body; } signature_entry;

struct tg_function {
  char name[64];
  tg_jit_fn fn;
  void *ctx;
  int nin, nout;
  bool allow_implicit;
  tg_function_grad_fn grad;
  void *grad_ctx;
  pthread_mutex_t lock;        /* recursive: a body may call other functions */
  VEC(signature_entry) bodies;
  int calls;
  int building;                /* > 0 while fn builds a body */
};

tg_function *tg_function_new(const char *name, tg_jit_fn fn, void *ctx, int nin, int nout) {
  if (!fn) TG_FAIL("tg_function_new: fn is NULL");
  if (nin < 0 || nin > FUNCTION_MAX_IO) TG_FAIL("tg_function_new: %d inputs (0 to %d)", nin, FUNCTION_MAX_IO);
  if (nout < 1 || nout > FUNCTION_MAX_IO) TG_FAIL("tg_function_new: %d outputs (1 to %d)", nout, FUNCTION_MAX_IO);
  tg_function *f = tg_xcalloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name && *name ? name : "function");
  f->fn = fn; f->ctx = ctx; f->nin = nin; f->nout = nout;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&f->lock, &a);
  pthread_mutexattr_destroy(&a);
  return f;
}

void tg_function_free(tg_function *f) {
  if (!f) return;
  /* calls still in tensor graphs keep their bodies alive */
  for (int i = 0; i < f->bodies.n; i++) {
    for (int j = 0; j < f->nin; j++)
      for (int a = 0; a < f->bodies.v[i].sig[j].ndim; a++) if (f->bodies.v[i].sig[j].var[a]) uop_release(f->bodies.v[i].sig[j].var[a]);
    free(f->bodies.v[i].sig);
    call_body_release(f->bodies.v[i].body);
  }
  VEC_FREE(f->bodies);
  pthread_mutex_destroy(&f->lock);
  free(f);
}

void tg_function_allow_implicit(tg_function *f, bool on) { if (f) f->allow_implicit = on; }

void tg_function_set_grad(tg_function *f, tg_function_grad_fn grad, void *ctx) {
  if (!f) return;
  f->grad = grad; f->grad_ctx = ctx;
}

tg_function_info tg_function_stats(const tg_function *f) {
  tg_function_info r = { 0 };
  if (!f) return r;
  r.calls = f->calls;
  r.bodies = f->bodies.n;
  for (int i = 0; i < f->bodies.n; i++) {
    call_body *b = f->bodies.v[i].body;
    r.grad_bodies += ((const body_data *)b->owner_data)->ngrads;
    /* a body a cached whole schedule stood in for is scheduled for the count */
    if (call_body_schedule(b, tg_default_device()) < 0) tg_clear_error();
    r.body_kernels += b->scheduled ? b->sched.n : 0;
  }
  return r;
}

static bool same_sig(const param_sig *a, const param_sig *b, int n) {
  for (int i = 0; i < n; i++) {
    if (a[i].ndim != b[i].ndim || a[i].dtype != b[i].dtype || strcmp(a[i].device, b[i].device)) return false;
    if (memcmp(a[i].shape, b[i].shape, sizeof(int64_t) * (size_t)a[i].ndim)) return false;
    if (memcmp(a[i].var, b[i].var, sizeof(uop *) * (size_t)a[i].ndim)) return false;
  }
  return true;
}

/* Why a body cannot be a function body, or NULL: memory it reads that is
 * not a parameter (unless allowed), assigns (state written inside a body
 * would be written by every call), another function's parameters. */
static bool is_param_buffer_of(const uop *buf, uop *const *params, int n) {
  for (int j = 0; j < n; j++) {
    const uop *p = params[j];
    while (p->op == OP_RESHAPE) p = p->src[0];
    if (p == buf) return true;
  }
  return false;
}
static const uop *assign_base(const uop *u) {
  while (u->op != OP_BUFFER && u->nsrc) u = u->src[0];
  return u;
}

/* (topo: the toposort of the SINK of outs, the caller's to free) */
static const char *check_body(tg_function *f, uop *const *outs, int nouts, uop *const *params, int64_t first_id, strbuf *why, uop_list *topo_out) {
  uop *sink = uop_new(OP_SINK, DT_VOID, outs, nouts, arg_none());
  uop_list topo = *topo_out = uop_toposort(sink);
  int implicit = 0;
  for (int i = 0; i < topo.n; i++) {
    uop *u = topo.v[i];
    if (u->op == OP_ASSIGN && !is_param_buffer_of(assign_base(u), params, f->nin)) {
      sb_printf(why, "the body assigns to a tensor that is not one of its inputs (state a function writes must be an input)");
      break;
    }
    if (u->op != OP_BUFFER) continue;
    tg_buffer *b = u->arg.p;
    if (is_param_buffer_of(u, params, f->nin)) continue;
    if (b->placeholder) { sb_printf(why, "the body reads a parameter of another function"); break; }
    /* memory the body made itself (a table of constants) is part of it */
    if (f->allow_implicit || b->id >= first_id) continue;
    if (!implicit++) sb_printf(why, "the body reads tensors that are not its inputs (pass them as inputs, or allow them with tg_function_allow_implicit):");
    if (implicit <= 8) sb_printf(why, " %s[%lld] on %s", tg_dtype_name(b->dtype), (long long)b->numel, b->dev->name);
  }
  if (implicit > 8) sb_printf(why, " and %d more", implicit - 8);
  return why->n ? why->s : NULL;
}

static call_body *build_body(tg_function *f, tg_tensor *const *in) {
  uop_pool_push();
  tg_scope_begin();
  tg_tensor *params[FUNCTION_MAX_IO], *outs[FUNCTION_MAX_IO] = { 0 };
  uop *pu[FUNCTION_MAX_IO], *ou[2 * FUNCTION_MAX_IO];
  int nou = f->nout;
  call_body *b = NULL;
  bool ok = true;
  for (int j = 0; j < f->nin && ok; j++) {
    uop *p = call_param_new(device_get(in[j]->device), in[j]->u->dtype, in[j]->u->shape, in[j]->u->ndim);
    ok = p != NULL;
    /* a symbolic input: the body sees the parameter's valid part, with
     * the input's variables (one body for every value) */
    if (ok) { pu[j] = p; params[j] = tensor_wrap(uop_with_dims_of(p, in[j]->u), in[j]->device); }
  }
  int64_t first_id = buffer_next_id();
  /* the assigns pending before the body runs (the caller's own) */
  tg_tensor *before[FUNCTION_MAX_IO];
  uop *before_u[FUNCTION_MAX_IO];
  int nbefore = tensors_pending_assigns(before, FUNCTION_MAX_IO);
  for (int i = 0; i < nbefore; i++) before_u[i] = before[i]->u;
  if (ok && f->fn(f->ctx, params, f->nin, outs, f->nout) != 0) {
    char why[512];
    snprintf(why, sizeof why, "%s", tg_error() ? tg_error() : "(no message)");
    tg_seterr("tg_function %s: the body failed: %s", f->name, why);
    ok = false;
  }
  for (int k = 0; k < f->nout && ok; k++) {
    if (!outs[k]) { tg_seterr("tg_function %s: the body left output %d NULL", f->name, k); ok = false; }
    else ou[k] = outs[k]->u;
  }
  /* assigns the body made to its inputs (a cache write) run with every
   * call: hidden outputs of the body, after the visible ones */
  tg_tensor *pend[FUNCTION_MAX_IO];
  int np = tensors_pending_assigns(pend, FUNCTION_MAX_IO);
  for (int i = 0; i < np; i++) {
    int was = -1;
    for (int k = 0; k < nbefore; k++) if (before[k] == pend[i]) was = k;
    if (was >= 0 && before_u[was] == pend[i]->u) continue;   /* the caller's, untouched */
    if (!is_param_buffer_of(assign_base(pend[i]->u), pu, f->nin)) {
      /* memory outside written by the body: refused, and the tensor is put
       * back as it was (views of it may still read the write and fail) */
      if (ok) tg_seterr("tg_function %s: the body assigns to a tensor that is not one of its inputs (state a function writes must be an input)", f->name);
      ok = false;
      uop *prev = was >= 0 ? before_u[was] : pend[i]->u->src[0];
      uop_retain(prev); uop_release(pend[i]->u); pend[i]->u = prev;
      continue;
    }
    if (!ok) continue;
    bool seen = false;
    for (int k = 0; k < nou; k++) seen |= ou[k] == pend[i]->u;
    if (!seen) ou[nou++] = pend[i]->u;
  }
  uop_list topo = { 0 };
  if (ok) {
    strbuf why = { 0 };
    if (check_body(f, ou, nou, pu, first_id, &why, &topo)) { tg_seterr("tg_function %s: %s", f->name, why.s); ok = false; }
    sb_free(&why);
  }
  if (ok) {
    b = call_body_new(f->name, pu, f->nin, ou, nou);
    schedule_memo_body(b, &topo);   /* its structure while the toposort is at hand */
    body_data *d = tg_xcalloc(1, sizeof *d);
    d->user_grad = f->grad; d->user_ctx = f->grad_ctx;
    d->nvisible = f->nout;
    for (int k = 0; k < nou; k++) d->out_device[k] = k < f->nout ? outs[k]->device : in[0]->device;
    b->owner_data = d; b->owner_free = body_data_free;
  }
  free(topo.v);
  tg_scope_end();
  uop_pool_pop();
  return b;
}

int tg_function_call(tg_function *f, tg_tensor *const *in, tg_tensor **out) {
  if (!f) return tg_seterr("tg_function_call: f is NULL");
  if (!out) return tg_seterr("tg_function_call %s: out is NULL", f->name);
  for (int k = 0; k < f->nout; k++) out[k] = NULL;
  if (f->nin && !in) return tg_seterr("tg_function_call %s: in is NULL", f->name);
  param_sig sig[FUNCTION_MAX_IO];
  for (int j = 0; j < f->nin; j++) {
    if (!in[j]) return tg_seterr("tg_function_call %s: input %d is NULL", f->name, j);
    const uop *u = in[j]->u;
    if (u->ndim > TG_MAX_DIMS) return tg_seterr("tg_function_call %s: input %d has %d axes (at most %d)", f->name, j, u->ndim, TG_MAX_DIMS);
    memset(&sig[j], 0, sizeof sig[j]);
    sig[j].ndim = u->ndim; sig[j].dtype = (int)u->dtype.scalar; sig[j].device = in[j]->device;
    memcpy(sig[j].shape, u->shape, sizeof(int64_t) * (size_t)u->ndim);
    for (int a = 0; a < u->ndim; a++) sig[j].var[a] = uop_dim_var(u, a);
  }
  pthread_mutex_lock(&f->lock);
  call_body *b = NULL;
  for (int i = 0; i < f->bodies.n && !b; i++) if (same_sig(f->bodies.v[i].sig, sig, f->nin)) b = f->bodies.v[i].body;
  if (!b && f->building) {
    pthread_mutex_unlock(&f->lock);
    return tg_seterr("tg_function_call %s: the body calls its own function (recursion is not supported)", f->name);
  }
  if (!b) {
    /* a new signature: build its body (a different signature is not an error) */
    f->building++;
    b = build_body(f, in);
    f->building--;
    if (b) {
      signature_entry e = { tg_xmalloc(sizeof(param_sig) * (size_t)(f->nin ? f->nin : 1)), b };
      memcpy(e.sig, sig, sizeof(param_sig) * (size_t)f->nin);
      for (int j = 0; j < f->nin; j++)
        for (int a = 0; a < sig[j].ndim; a++) if (sig[j].var[a]) uop_retain(sig[j].var[a]);
      VEC_PUSH(f->bodies, e);
    }
  }
  if (b) f->calls++;
  pthread_mutex_unlock(&f->lock);
  if (!b) return -1;
  uop_pool_push();
  uop *src[FUNCTION_MAX_IO];
  for (int j = 0; j < f->nin; j++) src[j] = in[j]->u;
  const body_data *d = b->owner_data;
  for (int k = 0; k < f->nout; k++)
    out[k] = tensor_wrap(uop_new(OP_CALL, b->outs[k]->dtype, src, f->nin, arg_ptr(&b->targets[k])), d->out_device[k]);
  uop_pool_pop();
  return 0;
}

/* ---- gradients (autograd.c calls this for a CALL node) */

/* The body of d(output k)/d(params in need): parameters (the body's, then
 * the output's gradient), one output per needed parameter. */
static call_body *grad_body(call_body *b, int k, uint64_t need) {
  body_data *d = b->owner_data;
  for (int i = 0; i < d->ngrads; i++) if (d->grads[i].out == k && d->grads[i].need == need) return d->grads[i].body;
  uop *o = b->outs[k];
  tg_device *dev = device_get(d->out_device[k]);
  uop *seed = call_param_new(dev, o->dtype, o->shape, o->ndim);
  if (!seed) return NULL;
  uop *params[FUNCTION_MAX_IO + 1], *targets[FUNCTION_MAX_IO], *grads[FUNCTION_MAX_IO];
  int nt = 0;
  for (int j = 0; j < b->nparams; j++) {
    params[j] = b->params[j];
    if (need >> j & 1) targets[nt++] = b->params[j];
  }
  params[b->nparams] = seed;
  autograd_vjp(o, uop_with_dims_of(seed, o), targets, nt, grads);   /* a symbolic output's gradient: its valid part */
  char name[80];
  snprintf(name, sizeof name, "%s_grad", b->name);
  call_body *g = call_body_new(name, params, b->nparams + 1, grads, nt);
  body_data *gd = tg_xcalloc(1, sizeof *gd);
  gd->nvisible = nt;
  g->owner_data = gd; g->owner_free = body_data_free;
  for (int i = 0; i < nt; i++) gd->out_device[i] = d->out_device[k];
  d->grads = tg_xrealloc(d->grads, sizeof(struct grad_entry) * (size_t)(d->ngrads + 1));
  d->grads[d->ngrads++] = (struct grad_entry){ k, need, g };
  return g;
}

static void user_grad(call_body *b, body_data *d, uop *u, uop *g, const bool *need, uop **sg) {
  tg_scope_begin();
  tg_tensor *in[FUNCTION_MAX_IO], *gout[2 * FUNCTION_MAX_IO] = { 0 }, *gin[FUNCTION_MAX_IO] = { 0 };
  int k = ((uop_call_target *)u->arg.p)->out;
  for (int j = 0; j < u->nsrc; j++) in[j] = tensor_wrap(u->src[j], d->out_device[k]);
  gout[k] = tensor_wrap(g, d->out_device[k]);
  if (d->user_grad(d->user_ctx, in, u->nsrc, gout, d->nvisible, gin) != 0)
    fprintf(stderr, "tg: the gradient function of %s failed (%s); its inputs get no gradient\n", b->name, tg_error() ? tg_error() : "no message");
  else
    for (int j = 0; j < u->nsrc; j++)
      if (need[j] && gin[j]) { sg[j] = gin[j]->u; uop_pool_keep(sg[j]); }
  tg_scope_end();
}

void function_call_grad(uop *u, uop *g, const bool *need, uop **sg) {
  uop_call_target *t = u->arg.p;
  call_body *b = t->body;
  body_data *d = b->owner_data;
  for (int j = 0; j < u->nsrc; j++) sg[j] = NULL;
  if (b->grad) { b->grad(b, u, g, need, sg); return; }
  if (!d) return;
  if (d->user_grad) { user_grad(b, d, u, g, need, sg); return; }
  uint64_t mask = 0;
  for (int j = 0; j < u->nsrc; j++) if (need[j]) mask |= 1ull << j;
  if (!mask) return;
  call_body *gb = grad_body(b, t->out, mask);
  if (!gb) return;
  uop *src[FUNCTION_MAX_IO + 1];
  for (int j = 0; j < u->nsrc; j++) src[j] = u->src[j];
  src[u->nsrc] = g->dtype.scalar == u->dtype.scalar ? g : uop_cast(g, u->dtype);
  int i = 0;
  for (int j = 0; j < u->nsrc; j++)
    if (mask >> j & 1) { sg[j] = uop_new(OP_CALL, gb->outs[i]->dtype, src, u->nsrc + 1, arg_ptr(&gb->targets[i])); i++; }
}
