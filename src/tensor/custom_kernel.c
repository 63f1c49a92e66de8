/* custom_kernel.c: tg_custom_kernel (tg_kernel.h). A custom kernel is a
 * function body (schedule/call.h) whose schedule is given instead of
 * built: one item, the AST the user's build function wrote, over the
 * outputs (DEFINE_GLOBAL 0..nout-1, fresh per call) and the inputs (the
 * parameters). Its outputs are CALL nodes, so the scheduler orders the
 * kernel after its inputs' producers, stores lazy inputs first, never
 * merges it with other kernels, and the JIT, BEAM and every renderer see
 * an ordinary kernel. The gradient is the user's function, reached through
 * the body's grad hook. */
#include "runtime/device.h"
#include "schedule/call.h"
#include "tensor/indexing.h"
#include "tensor/kernel_builder.h"
#include "tensor/tensor.h"
#include "uop/dims.h"

/* what the body keeps for its gradient */
typedef struct {
  tg_kernel_grad_fn grad;
  void *ctx;
  const char *device;
} kernel_data;

static void kernel_grad(call_body *b, uop *u, uop *g, const bool *need, uop **sg) {
  kernel_data *d = b->owner_data;
  if (!d->grad) {
    fprintf(stderr, "tg: custom kernel %s has no gradient function; its inputs get no gradient\n", b->name);
    return;
  }
  tg_scope_begin();
  tg_tensor *in[KB_MAX_IO], *out[KB_MAX_IO], *gout[KB_MAX_IO] = { 0 }, *gin[KB_MAX_IO] = { 0 };
  int k = ((uop_call_target *)u->arg.p)->out;
  for (int j = 0; j < u->nsrc; j++) in[j] = tensor_wrap(u->src[j], d->device);
  for (int i = 0; i < b->nouts; i++)
    out[i] = tensor_wrap(uop_new(OP_CALL, b->outs[i]->dtype, u->src, u->nsrc, arg_ptr(&b->targets[i])), d->device);
  gout[k] = tensor_wrap(g, d->device);
  if (d->grad(d->ctx, in, u->nsrc, out, gout, b->nouts, gin) != 0) {
    fprintf(stderr, "tg: the gradient function of custom kernel %s failed (%s); its inputs get no gradient\n", b->name, tg_error() ? tg_error() : "no message");
  } else {
    for (int j = 0; j < u->nsrc; j++) {
      if (!need[j] || !gin[j]) continue;
      const uop *x = u->src[j], *gx = gin[j]->u;
      char s1[96], s2[96];
      if (gx->ndim != x->ndim || memcmp(gx->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim)) {
        fprintf(stderr, "tg: the gradient function of custom kernel %s gave input %d a gradient of shape %s, the input is %s; it gets no gradient\n",
                b->name, j, mvx_shape_str(gx->shape, gx->ndim, s1, sizeof s1), mvx_shape_str(x->shape, x->ndim, s2, sizeof s2));
        continue;
      }
      sg[j] = gx->dtype.scalar == x->dtype.scalar ? gin[j]->u : uop_cast(gin[j]->u, x->dtype);
      uop_pool_keep(sg[j]);
    }
  }
  tg_scope_end();
}

/* the program's name: a C identifier */
static void kernel_name(const char *name, char *out, size_t n) {
  snprintf(out, n, "%s", name && *name ? name : "custom_kernel");
  for (char *p = out; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) *p = '_';
  if (out[0] >= '0' && out[0] <= '9') out[0] = '_';
}

static int check_args(const char *name, const tg_kernel_out *outs, int nout, tg_tensor *const *in, int nin, tg_kernel_build_fn build, tg_tensor **out) {
  char sh[96];
  if (!out) return tg_seterr("tg_custom_kernel %s: out is NULL", name);
  if (nout < 1 || nout > KB_MAX_IO) return tg_seterr("tg_custom_kernel %s: %d outputs (1 to %d)", name, nout, KB_MAX_IO);
  for (int k = 0; k < nout; k++) out[k] = NULL;
  if (!outs) return tg_seterr("tg_custom_kernel %s: outs is NULL", name);
  if (nin < 0 || nin > KB_MAX_IO) return tg_seterr("tg_custom_kernel %s: %d inputs (0 to %d)", name, nin, KB_MAX_IO);
  if (nin && !in) return tg_seterr("tg_custom_kernel %s: in is NULL", name);
  if (!build) return tg_seterr("tg_custom_kernel %s: build is NULL", name);
  for (int k = 0; k < nout; k++) {
    const tg_kernel_out *o = &outs[k];
    if ((int)o->dtype < 0 || (int)o->dtype >= TG_DTYPE_COUNT) return tg_seterr("tg_custom_kernel %s: output %d: %d is not a dtype", name, k, (int)o->dtype);
    if (o->shape.ndim < 0 || o->shape.ndim > TG_MAX_DIMS) return tg_seterr("tg_custom_kernel %s: output %d has %d axes (0 to %d)", name, k, o->shape.ndim, TG_MAX_DIMS);
    for (int a = 0; a < o->shape.ndim; a++)
      if (o->shape.d[a] < 1)
        return tg_seterr("tg_custom_kernel %s: output %d has shape %s (every axis at least 1)", name, k, mvx_shape_str(o->shape.d, o->shape.ndim, sh, sizeof sh));
    if (!shape_ok(o->shape.d, o->shape.ndim, "tg_custom_kernel")) return -1;
  }
  for (int j = 0; j < nin; j++) {
    if (!in[j]) return tg_seterr("tg_custom_kernel %s: input %d is NULL", name, j);
    const uop *u = in[j]->u;
    for (int a = 0; a < u->ndim; a++)
      if (u->shape[a] < 1) return tg_seterr("tg_custom_kernel %s: input %d has shape %s (every axis at least 1)", name, j, mvx_shape_str(u->shape, u->ndim, sh, sizeof sh));
    if (strcmp(in[j]->device, in[0]->device))
      return tg_seterr("tg_custom_kernel %s: input %d is on %s, input 0 on %s (a kernel runs on one device: tg_to first)", name, j, in[j]->device, in[0]->device);
  }
  return 0;
}

/* Appends a kernel over bufs[0..n) to b's schedule. */
static void add_item(call_body *b, uop *ast, const char *name, tg_device *dev, tg_buffer *const *bufs, int n) {
  sched_item it = { .ast = ast, .nbufs = n, .dev = dev, .merged = true };
  uop_retain(ast);
  snprintf(it.name, sizeof it.name, "%s", name);
  it.bufs = tg_xmalloc(sizeof(tg_buffer *) * (size_t)n);
  for (int i = 0; i < n; i++) { it.bufs[i] = bufs[i]; buffer_retain(bufs[i]); }
  VEC_PUSH(b->sched, it);
}

/* The body: placeholders for the inputs and outputs, and its schedule (the
 * one kernel). NULL with tg_error. */
static call_body *make_body(const char *name, tg_device *dev, const tg_kernel_out *outs, int nout, tg_tensor *const *in, int nin,
                            tg_kernel_build_fn build, void *ctx) {
  uop *params[KB_MAX_IO], *results[KB_MAX_IO];
  kb_buffer ib[KB_MAX_IO];
  for (int j = 0; j < nin; j++) {
    const uop *u = in[j]->u;
    if (!(params[j] = call_param_new(dev, u->dtype, u->shape, u->ndim))) return NULL;
    ib[j] = (kb_buffer){ .ndim = u->ndim, .dtype = (tg_dtype)u->dtype.scalar };
    memcpy(ib[j].shape, u->shape, sizeof(int64_t) * (size_t)u->ndim);
    for (int a = 0; a < u->ndim; a++) ib[j].var[a] = uop_dim_var(u, a);   /* the buffer is the axis's maximum; tg_k_dim gives its length */
  }
  for (int k = 0; k < nout; k++)
    if (!(results[k] = call_param_new(dev, dt_scalar(outs[k].dtype), outs[k].shape.d, outs[k].shape.ndim))) return NULL;
  tg_kb kb;
  kb_init(&kb, name, outs, nout, ib, nin);
  int rc = build(ctx, &kb);
  uop *ast = NULL;
  if (rc != 0 && !kb.failed) {
    char why[512];
    snprintf(why, sizeof why, "%s", tg_error() ? tg_error() : "(no message)");
    tg_seterr("tg_custom_kernel %s: the build function failed: %s", name, why);
  }
  else if (kb.failed || !(ast = kb_finish(&kb))) tg_seterr("tg_custom_kernel %s: %s", name, kb.err);
  kb_free(&kb);
  if (!ast) return NULL;

  /* its buffers: the outputs and any scratch (fresh per call), the inputs
   * (the call's arguments) */
  tg_buffer *bufs[3 * KB_MAX_IO];
  /* with work groups, a reduce that uses no output loop runs first, in a
   * kernel of its own (kernel_split.c) */
  uop *pre = NULL;
  tg_dtype sdt[KB_MAX_IO];
  int ns = 0;
  if (dev->renderer && dev->renderer->has_local) ast = kb_split_reduces(ast, nout, nin, 2 * KB_MAX_IO - nout - nin, &pre, sdt, &ns);
  for (int k = 0; k < ns; k++) {
    uop *s = call_param_new(dev, dt_scalar(sdt[k]), (int64_t[]){ 1 }, 1);
    if (!s) return NULL;
    bufs[nout + nin + k] = s->arg.p;
  }
  call_body *b = call_body_new(name, params, nin, results, nout);
  b->out_repl = tg_xcalloc((size_t)nout, sizeof(uop *));
  for (int k = 0; k < nout; k++) {
    bufs[k] = results[k]->op == OP_BUFFER ? results[k]->arg.p : results[k]->src[0]->arg.p;
    b->out_repl[k] = results[k]; uop_retain(results[k]);
  }
  for (int j = 0; j < nin; j++) {
    bufs[nout + j] = b->param_bufs[j];
    pm_put(&b->role, b->param_bufs[j], (void *)(intptr_t)(1 + j));
  }
  for (int k = 0; k < nout + nin + ns; k++)
    if (k < nout || k >= nout + nin) {
      buffer_retain(bufs[k]);
      VEC_PUSH(b->internal, bufs[k]);
      pm_put(&b->role, bufs[k], (void *)(intptr_t)-(intptr_t)b->internal.n);
    }
  char pre_name[80];
  snprintf(pre_name, sizeof pre_name, "%s_reduce", name);
  if (pre) {
    tg_buffer *pb[3 * KB_MAX_IO];
    for (int k = 0; k < ns; k++) pb[k] = bufs[nout + nin + k];
    for (int j = 0; j < nin; j++) pb[ns + j] = bufs[nout + j];
    add_item(b, pre, pre_name, dev, pb, ns + nin);
  }
  add_item(b, ast, name, dev, bufs, nout + nin + ns);
  b->param_written = tg_xcalloc((size_t)(nin ? nin : 1), sizeof(bool));
  call_body_plan(b);
  b->scheduled = true;
  return b;
}

int tg_custom_kernel(const char *name, const tg_kernel_out *outs, int nout, tg_tensor *const *in, int nin,
                     tg_kernel_build_fn build, tg_kernel_grad_fn grad, void *ctx, tg_tensor **out) {
  char kname[64];
  kernel_name(name, kname, sizeof kname);
  if (check_args(kname, outs, nout, in, nin, build, out) < 0) return -1;
  const char *device = nin ? in[0]->device : tg_default_device();
  tg_device *dev = device_get(device);
  if (!dev) return tg_seterr("tg_custom_kernel %s: no device %s", kname, device ? device : "(none)");
  device = dev->name;
  uop_pool_push();
  call_body *b = make_body(kname, dev, outs, nout, in, nin, build, ctx);
  if (!b) { uop_pool_pop(); return -1; }
  kernel_data *d = tg_xcalloc(1, sizeof *d);
  *d = (kernel_data){ grad, ctx, device };
  b->owner_data = d; b->owner_free = free;
  b->grad = kernel_grad;
  uop *src[KB_MAX_IO];
  for (int j = 0; j < nin; j++) src[j] = in[j]->u;
  for (int k = 0; k < nout; k++) out[k] = tensor_wrap(uop_new(OP_CALL, b->outs[k]->dtype, src, nin, arg_ptr(&b->targets[k])), device);
  call_body_release(b);   /* the CALL nodes hold it */
  uop_pool_pop();
  return 0;
}

int tg_custom_kernel_into(const char *name, tg_tensor *const *targets, int nout, tg_tensor *const *in, int nin,
                          tg_kernel_build_fn build, tg_kernel_grad_fn grad, void *ctx) {
  char kname[64];
  kernel_name(name, kname, sizeof kname);
  if (!targets) return tg_seterr("tg_custom_kernel_into %s: targets is NULL", kname);
  if (nout < 1 || nout > KB_MAX_IO) return tg_seterr("tg_custom_kernel_into %s: %d outputs (1 to %d)", kname, nout, KB_MAX_IO);
  if (nin < 0 || (nin && !in)) return tg_seterr("tg_custom_kernel_into %s: %s", kname, nin < 0 ? "negative input count" : "in is NULL");
  const char *device = nin && in[0] ? in[0]->device : tg_default_device();
  tg_device *dev = device_get(device);
  tg_kernel_out spec[KB_MAX_IO];
  for (int k = 0; k < nout; k++) {
    tg_tensor *t = targets[k];
    if (!t) return tg_seterr("tg_custom_kernel_into %s: target %d is NULL", kname, k);
    if (t->u->dim_var) return tg_seterr("tg_custom_kernel_into %s: target %d has a symbolic axis", kname, k);
    if (!tensor_assignable(t))
      return tg_seterr("tg_custom_kernel_into %s: target %d is not memory or a view of memory (realize it, or make it with tg_empty)", kname, k);
    if (!dev || device_get(t->device) != dev)
      return tg_seterr("tg_custom_kernel_into %s: target %d is on %s, the kernel runs on %s", kname, k, t->device, device ? device : "(none)");
    for (int j = 0; j < k; j++)
      if (targets[j] == t) return tg_seterr("tg_custom_kernel_into %s: targets %d and %d are one tensor", kname, j, k);
    spec[k] = (tg_kernel_out){ tg_shape_of(t), tg_dtype_of(t) };
  }
  tg_scope_begin();
  tg_tensor *res[KB_MAX_IO];
  int rc = tg_custom_kernel(name, spec, nout, in, nin, build, grad, ctx, res);
  for (int k = 0; k < nout && rc == 0; k++) if (!tg_assign(targets[k], res[k])) rc = -1;   /* checked above: cannot fail */
  tg_scope_end();
  return rc;
}
