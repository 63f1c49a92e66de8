/* conv.c: convolutions like tinygrad's Tensor.conv2d / conv_transpose2d:
 * the padded input is viewed as sliding windows (nn_pool_view: movement ops
 * only), broadcast against the weight per group, multiplied and summed, so a
 * convolution with its bias (and a following activation) is one kernel. */
#include "tensor/nn_internal.h"
#include "util/settings.h"

/* inputs at least this big (elements, after padding) get their padding stored */
#define CONV_STORE_PADDED_MIN (1 << 15)
/* a weight gradient sums over groups of samples whose input is about this big
 * (half of L2: 2^21 made the 64-channel 8x8 case 5x slower, too few groups) */
#define WGRAD_GROUP_BYTES (1 << 19)

typedef struct { int n; int64_t s[3], d[3], pads[6]; int64_t groups; } conv_params;

static bool check_float(tg_tensor *t, const char *what, const char *op) {
  if (!tg_dtype_is_float(tg_dtype_of(t))) { tg_seterr("%s: %s must be a float tensor, not %s", op, what, tg_dtype_name(tg_dtype_of(t))); return false; }
  return true;
}

/* A big padded input is stored once: the conv's loads then need no bounds
 * checks and walk memory in SIMD lanes (a padded view gates every load,
 * about 10x slower). Small ones stay index math: one fused kernel. */
static tg_tensor *padded_input(tg_tensor *x, const conv_params *p) {
  tg_tensor *xp = nn_pad_spatial(x, p->n, p->pads, 0);
  bool padded = false;
  for (int j = 0; j < 2 * p->n; j++) padded |= p->pads[j] > 0;
  if (padded && tg_numel(xp) >= CONV_STORE_PADDED_MIN && tg_dim(xp, -1) >= 8) xp = tg_contiguous(xp);
  return xp;
}

static tg_tensor *conv_core(tg_tensor *x, tg_tensor *w, tg_tensor *b, const conv_params *p, const char *op);
static tg_tensor *conv_window_lanes(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *k, const int64_t *o);
static bool wants_channel_lanes(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *o);

/* (N, C, *sp) as a view of a channels-last copy (N, *sp, C): the same values,
 * but stepping along C is stepping by one in memory */
static tg_tensor *channels_last(tg_tensor *t, int n) {
  tg_axes to = { 2 + n, { 0 } }, back = { 2 + n, { 0 } };
  for (int j = 0; j < n; j++) to.a[1 + j] = 2 + j;
  to.a[1 + n] = 1;
  back.a[1] = 1 + n;
  for (int j = 0; j < n; j++) back.a[2 + j] = 1 + j;
  return tg_permute(tg_contiguous(tg_permute(t, to)), back);
}

/* gw[co, ci, *k] = sum over (batch, *o) of g[b, co, *o] * windows[b, ci, *o, *k].
 * Computed as gw[co, *k, ci]; when the output rows are short, from
 * channels-last copies of g and the padded input, so the loads and the store
 * step along ci (SIMD lanes; long rows get lanes along them instead). First
 * per group of samples, then over the groups: each output tile of the first
 * kernel streams only its group's input (sized to stay in L2) instead of
 * the whole batch from memory. */
static tg_tensor *weight_grad(tg_tensor *X, tg_tensor *G, const conv_params *p, const int64_t *k, bool g_channels_last) {
  int n = p->n;
  tg_tensor *xp = padded_input(X, p);
  int64_t bs = tg_dim(X, 0), cin = tg_dim(X, 1), cout = tg_dim(G, 1);
  int64_t per_sample = tg_numel(xp) / bs * 4, group = 1;
  while (group * 2 * per_sample <= WGRAD_GROUP_BYTES && bs % (group * 2) == 0) group *= 2;
  if (bs / group < 2) group = bs;   /* too small to split */
  /* channels-last pays when the output rows are too short for lanes along
   * them, or do not fill whole 16-lane vectors while the channels do (rows
   * of 20: 4-lane partial sums; 2.5x slower at 512x32x20x20, 5x5) */
  int64_t row = tg_dim(G, 1 + n);
  bool cl = cin >= 16 && (row < 8 || (cin % 16 == 0 && row % 16 != 0));
  tg_tensor *v = nn_pool_view(cl ? channels_last(xp, n) : xp, n, k, p->s, p->d);   /* (b, ci, *o, *k) */
  tg_tensor *gc = cl ? channels_last(G, n) : G;
  /* a gradient computed channels-last (the output of conv_channel_lanes)
   * with too few input channels for lanes: lanes along co instead, the
   * result stored as (*k, ci, co) */
  bool co_last = !cl && g_channels_last;
  /* both as (b/group, group, *o, co, *k, ci), or (b/group, group, *o, *k, ci, co) */
  tg_axes gp = { 2 + n, { 0 } }, vp = { 2 + 2 * n, { 0 } };
  for (int j = 0; j < n; j++) gp.a[1 + j] = 2 + j;
  gp.a[1 + n] = 1;
  for (int j = 0; j < n; j++) { vp.a[1 + j] = 2 + j; vp.a[1 + n + j] = 2 + n + j; }
  vp.a[1 + 2 * n] = 1;
  tg_shape gs = { 2, { bs / group, group } }, vs = { 2, { bs / group, group } };
  for (int j = 0; j < n; j++) { gs.d[gs.ndim++] = tg_dim(G, 2 + j); vs.d[vs.ndim++] = tg_dim(G, 2 + j); }
  if (!co_last) { gs.d[gs.ndim++] = cout; vs.d[vs.ndim++] = 1; }
  for (int j = 0; j < n; j++) { gs.d[gs.ndim++] = 1; vs.d[vs.ndim++] = k[j]; }
  gs.d[gs.ndim++] = 1; vs.d[vs.ndim++] = cin;
  if (co_last) { gs.d[gs.ndim++] = cout; vs.d[vs.ndim++] = 1; }
  tg_axes red = { 1 + n, { 1 } };
  for (int j = 0; j < n; j++) red.a[1 + j] = 2 + j;
  tg_tensor *part = tg_sum(tg_mul(tg_reshape(tg_permute(gc, gp), gs), tg_reshape(tg_permute(v, vp), vs)), red, false);
  tg_tensor *gw = tg_contiguous(tg_sum(part, TG_AXES(0), false));   /* stored as computed: (co, *k, ci) or (*k, ci, co) */
  tg_axes back = { 2 + n, { 0, 1 + n } };
  if (co_last) { back.a[0] = 1 + n; back.a[1] = n; }
  for (int j = 0; j < n; j++) back.a[2 + j] = co_last ? j : 1 + j;
  return tg_permute(gw, back);
}

/* The gradients of a stride-1 convolution as convolutions (custom gradient,
 * see autograd_set_custom): the input's is the output gradient convolved
 * with the weight flipped and its channel axes swapped, padded by k-1-pad
 * (a transposed convolution: one reduce kernel); the weight's sums the output
 * gradient against the input's windows. The generic rules would instead
 * store a gradient for every window element and add up k^n shifted slices. */
typedef struct { conv_params p; const char *device; } conv_grad_ctx;

static void conv_grad(const void *ctx, uop *g, uop *const *srcs, int nsrc, uop **grads) {
  const conv_grad_ctx *c = ctx;
  const conv_params *p = &c->p;
  int n = p->n;
  (void)nsrc;
  tg_scope_begin();
  const char *dev = c->device;
  tg_tensor *G = tensor_wrap(g, dev), *X = tensor_wrap(srcs[0], dev), *W = tensor_wrap(srcs[1], dev);
  conv_params q = *p;
  tg_axes sp = { n, { 0 } };
  int64_t k[3];
  for (int j = 0; j < n; j++) {
    k[j] = tg_dim(W, 2 + j);
    sp.a[j] = 2 + j;
    q.pads[2 * j] = k[j] - 1 - p->pads[2 * j];
    q.pads[2 * j + 1] = k[j] - 1 - p->pads[2 * j + 1];
  }
  tg_tensor *gx = conv_core(G, tg_flip(tg_transpose(W, 0, 1), sp), NULL, &q, "conv gradient");
  int64_t o[3];
  for (int j = 0; j < n; j++) o[j] = tg_dim(G, 2 + j);
  tg_tensor *gw = weight_grad(X, G, p, k, wants_channel_lanes(X, W, p, o));
  if (gx && tg_dtype_of(gx) != tg_dtype_of(X)) gx = tg_cast(gx, tg_dtype_of(X));
  if (gw && tg_dtype_of(gw) != tg_dtype_of(W)) gw = tg_cast(gw, tg_dtype_of(W));
  if (gx) { grads[0] = gx->u; uop_pool_keep(gx->u); }
  if (gw) { grads[1] = gw->u; uop_pool_keep(gw->u); }
  tg_scope_end();
}

/* Which convolutions take conv_grad: one group, stride and dilation 1,
 * padding within 0..k-1 on each side (the transposed conv's padding is then
 * not negative), input and weight of one dtype. */
static bool has_transposed_grad(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *k) {
  if (p->groups != 1 || tg_dtype_of(x) != tg_dtype_of(w) || setting_on(SET_TG_CONV_GENERIC_GRAD)) return false;
  for (int j = 0; j < p->n; j++)
    if (p->s[j] != 1 || p->d[j] != 1 || p->pads[2 * j] < 0 || p->pads[2 * j + 1] < 0 || p->pads[2 * j] > k[j] - 1 || p->pads[2 * j + 1] > k[j] - 1) return false;
  return true;
}

/* out[b, *o, co] = sum over (ci, *k) of windows[b, ci, *o, *k] * w[co, ci, *k],
 * computed channels-last and returned as the (b, co, *o) view of it: the
 * SIMD lanes run along the output channels, which a (ci, *k, co) copy of the
 * weight (small) makes contiguous, and each window value is broadcast to
 * them. A matmul's shape (the heuristic's panel tile: 32 or 64 channels by
 * up to 8 output positions), for output rows that whole 16-lane vectors do
 * not fill (20, 10, 6: lanes along them were 4-wide or scalar). */
static tg_tensor *conv_channel_lanes(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *k) {
  int n = p->n;
  int64_t cin = tg_dim(w, 1), cout = tg_dim(w, 0);
  tg_tensor *v = nn_pool_view(padded_input(x, p), n, k, p->s, p->d);   /* (b, ci, *o, *k) */
  tg_axes pv = { 2 + 2 * n, { 0 } }, pw = { 2 + n, { 0 } }, back = { 2 + n, { 0, 1 + n } };
  for (int j = 0; j < n; j++) pv.a[1 + j] = 2 + j;
  pv.a[1 + n] = 1;
  for (int j = 0; j < n; j++) pv.a[2 + n + j] = 2 + n + j;
  tg_shape vs = tg_shape_of(v), ws = { 0, { 0 } };
  tg_shape vr = { 0, { vs.d[0] } };
  vr.ndim = 1;
  for (int j = 0; j < n; j++) vr.d[vr.ndim++] = vs.d[2 + j];
  vr.d[vr.ndim++] = cin;
  for (int j = 0; j < n; j++) vr.d[vr.ndim++] = k[j];
  vr.d[vr.ndim++] = 1;   /* (b, *o, ci, *k, 1) */
  for (int j = 0; j <= n; j++) ws.d[ws.ndim++] = 1;
  ws.d[ws.ndim++] = cin;
  for (int j = 0; j < n; j++) ws.d[ws.ndim++] = k[j];
  ws.d[ws.ndim++] = cout;   /* (1, *1, ci, *k, co) */
  for (int j = 0; j <= n; j++) pw.a[j] = j + 1;
  pw.a[1 + n] = 0;
  tg_tensor *wt = tg_reshape(tg_contiguous(tg_permute(w, pw)), ws);
  tg_axes red = { 1 + n, { 0 } };
  for (int j = 0; j <= n; j++) red.a[j] = 1 + n + j;
  tg_tensor *out = tg_sum(tg_mul(tg_reshape(tg_permute(v, pv), vr), wt), red, false);   /* (b, *o, co) */
  for (int j = 0; j < n; j++) back.a[2 + j] = 1 + j;
  return tg_permute(out, back);
}

/* Does conv_channel_lanes suit this convolution: one group, a CPU kernel,
 * whole vectors of output channels, output rows that whole vectors do not
 * fill, and a matmul's worth of work? */
static bool wants_channel_lanes(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *o) {
  if (p->groups != 1 || !tensor_wide_layouts(x) || setting_on(SET_TG_CONV_NO_CHANNEL_LANES)) return false;
  int64_t cout = tg_dim(w, 0);
  double work = (double)tg_dim(x, 0) * (double)cout * (double)tg_dim(w, 1);   /* a size estimate: may pass int64 */
  for (int j = 0; j < p->n; j++) work *= (double)o[j] * (double)tg_dim(w, 2 + j);
  int64_t row = o[p->n - 1];
  return cout % 32 == 0 && cout <= 64 && row % 16 != 0 && work >= (1 << 24);
}

/* x (N, Cin, *sp) (already batched), w (Cout, Cin/g, *k): validated here */
static tg_tensor *conv_core(tg_tensor *x, tg_tensor *w, tg_tensor *b, const conv_params *p, const char *op) {
  int n = p->n;
  tg_shape xs = tg_shape_of(x), ws = tg_shape_of(w);
  int64_t cin_ = xs.d[1], cout = ws.d[0], cin = ws.d[1], g = p->groups;
  char b1[128], b2[128];
  if (g <= 0) TG_FAIL("%s: groups must be positive, got %lld", op, (long long)g);
  if (cin_ % g) TG_FAIL("%s: groups %lld does not divide the %lld input channels", op, (long long)g, (long long)cin_);
  if (cout % g) TG_FAIL("%s: groups %lld does not divide the %lld output channels", op, (long long)g, (long long)cout);
  if (cin_ / g != cin)
    TG_FAIL("%s: input %s has %lld channels but weight %s expects %lld (groups %lld x %lld)", op, nn_shape_str(x, b1, 128),
            (long long)cin_, nn_shape_str(w, b2, 128), (long long)(cin * g), (long long)g, (long long)cin);
  int64_t k[3], o[3];
  for (int j = 0; j < n; j++) {
    int64_t i = xs.d[2 + j], pb = p->pads[2 * j], pa = p->pads[2 * j + 1];
    k[j] = ws.d[2 + j];
    if (p->s[j] <= 0) TG_FAIL("%s: stride %lld on spatial axis %d must be positive", op, (long long)p->s[j], j);
    if (p->d[j] <= 0) TG_FAIL("%s: dilation %lld on spatial axis %d must be positive", op, (long long)p->d[j], j);
    if (k[j] <= 0) TG_FAIL("%s: kernel size %lld on spatial axis %d must be positive", op, (long long)k[j], j);
    if (-pb > i || -pa > i) TG_FAIL("%s: padding (%lld, %lld) crops more than the size %lld of spatial axis %d", op, (long long)pb, (long long)pa, (long long)i, j);
    int64_t padded = i + pb + pa, ek;
    if (tg_mul_overflow_i64(p->d[j], k[j] - 1, &ek) || ek >= TG_MAX_NUMEL)
      TG_FAIL("%s: kernel size %lld with dilation %lld on spatial axis %d spans more than 2^59 elements", op, (long long)k[j], (long long)p->d[j], j);
    ek += 1;
    if (padded < ek)
      TG_FAIL("%s: kernel size %lld (dilated: %lld) is larger than the padded input size %lld on spatial axis %d (input %s, padding %lld, %lld)",
              op, (long long)k[j], (long long)ek, (long long)padded, j, nn_shape_str(x, b1, 128), (long long)pb, (long long)pa);
    o[j] = (padded - ek) / p->s[j] + 1;
  }
  if (b) {
    if (tg_ndim(b) != 1 || tg_dim(b, 0) != cout) TG_FAIL("%s: bias shape %s must be (%lld)", op, nn_shape_str(b, b1, 128), (long long)cout);
    if (!check_float(b, "bias", op)) return NULL;
  }
  tg_scope_begin();
  tg_tensor *out;
  if (wants_channel_lanes(x, w, p, o)) out = conv_channel_lanes(x, w, p, k);
  else out = conv_window_lanes(x, w, p, k, o);
  if (out && has_transposed_grad(x, w, p, k)) {
    conv_grad_ctx gc = { *p, x->device };
    autograd_set_custom(out->u, (uop *[]){ x->u, w->u }, 2, conv_grad, &gc, sizeof gc);
  }
  if (b) {
    tg_shape bsh = { 2 + n, { 1, cout } };
    for (int j = 0; j < n; j++) bsh.d[2 + j] = 1;
    out = tg_add(out, tg_reshape(b, bsh));
  }
  return nn_done(out);
}

/* The convolution as tinygrad writes it: the windows broadcast against the
 * weight per group, (b, g, cout/g, *o, cin/g, *k), summed over (cin/g, *k). */
static tg_tensor *conv_window_lanes(tg_tensor *x, tg_tensor *w, const conv_params *p, const int64_t *k, const int64_t *o) {
  int n = p->n;
  int64_t bs = tg_dim(x, 0), cout = tg_dim(w, 0), cin = tg_dim(w, 1), g = p->groups;
  int64_t rcout = cout / g;
  tg_tensor *v = nn_pool_view(padded_input(x, p), n, k, p->s, p->d);   /* (bs, cin_, *o, *k) */
  tg_shape r = { 0, { 0 } }, e = { 0, { 0 } };
  int64_t head[4] = { bs, g, cin, 1 };
  for (int i = 0; i < 4; i++) { r.d[r.ndim++] = head[i]; e.d[e.ndim++] = i == 3 ? rcout : head[i]; }
  for (int j = 0; j < n; j++) { r.d[r.ndim++] = o[j]; e.d[e.ndim++] = o[j]; }
  for (int j = 0; j < n; j++) { r.d[r.ndim++] = k[j]; e.d[e.ndim++] = k[j]; }
  v = tg_expand(tg_reshape(v, r), e);
  /* (bs, g, rcout, *o, cin, *k) */
  tg_axes perm = { 4 + 2 * n, { 0, 1, 3 } };
  int q = 3;
  for (int j = 0; j < n; j++) perm.a[q++] = 4 + j;
  perm.a[q++] = 2;
  for (int j = 0; j < n; j++) perm.a[q++] = 4 + n + j;
  v = tg_permute(v, perm);
  tg_shape wr = { 0, { 1, g, rcout } };
  wr.ndim = 3;
  for (int j = 0; j < n; j++) wr.d[wr.ndim++] = 1;
  wr.d[wr.ndim++] = cin;
  for (int j = 0; j < n; j++) wr.d[wr.ndim++] = k[j];
  tg_axes red = { 1 + n, { 0 } };
  for (int j = 0; j <= n; j++) red.a[j] = -1 - j;
  tg_tensor *out = tg_sum(tg_mul(v, tg_reshape(w, wr)), red, false);   /* (bs, g, rcout, *o) */
  tg_shape os = { 2 + n, { bs, cout } };
  for (int j = 0; j < n; j++) os.d[2 + j] = o[j];
  return tg_reshape(out, os);
}

/* Common shape checks; batches an unbatched input. want: spatial axes
 * required (0: any of 1..3). */
static bool conv_shapes(tg_tensor *x, tg_tensor *w, int want, int *n, bool *unbatched, const char *op) {
  char b1[128], b2[128];
  int wn = tg_ndim(w), xn = tg_ndim(x);
  if (wn < 3 || wn > 5) { tg_seterr("%s: weight %s must have 1 to 3 spatial axes after (out, in) channels", op, nn_shape_str(w, b1, 128)); return false; }
  *n = wn - 2;
  if (want && *n != want) { tg_seterr("%s: weight %s must be %d-D", op, nn_shape_str(w, b1, 128), want + 2); return false; }
  if (xn != wn && xn != wn - 1) {
    tg_seterr("%s: input %s must be %d-D (batched) or %d-D (unbatched) for weight %s", op, nn_shape_str(x, b1, 128), wn, wn - 1, nn_shape_str(w, b2, 128));
    return false;
  }
  *unbatched = xn == wn - 1;
  return check_float(x, "input", op) && check_float(w, "weight", op);
}

static tg_tensor *conv_entry(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *o, int want, const char *op) {
  NEED(x, op); NEED(w, op);
  int n;
  bool unb;
  if (!conv_shapes(x, w, want, &n, &unb, op)) return NULL;
  conv_params p = { .n = n, .groups = o && o->groups ? o->groups : 1 };
  for (int j = 0; j < n; j++) {
    p.s[j] = o && o->stride[j] ? o->stride[j] : 1;
    p.d[j] = o && o->dilation[j] ? o->dilation[j] : 1;
    p.pads[2 * j] = o ? o->padding[2 * j] : 0;
    p.pads[2 * j + 1] = o ? o->padding[2 * j + 1] : 0;
  }
  if (!unb) return conv_core(x, w, b, &p, op);
  tg_scope_begin();
  return nn_done(tg_squeeze(conv_core(tg_unsqueeze(x, 0), w, b, &p, op), 0));
}

tg_tensor *tg_conv(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *o) { return conv_entry(x, w, b, o, 0, "tg_conv"); }
tg_tensor *tg_conv1d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *o) { return conv_entry(x, w, b, o, 1, "tg_conv1d"); }
tg_tensor *tg_conv2d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *o) { return conv_entry(x, w, b, o, 2, "tg_conv2d"); }
tg_tensor *tg_conv3d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_opts *o) { return conv_entry(x, w, b, o, 3, "tg_conv3d"); }

/* ---------------------------------------------------------------- transposed */

static tg_tensor *conv_transpose_entry(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_transpose_opts *o, int want, const char *op) {
  NEED(x, op); NEED(w, op);
  int n;
  bool unb;
  if (!conv_shapes(x, w, want, &n, &unb, op)) return NULL;
  char b1[128], b2[128];
  int64_t g = o && o->groups ? o->groups : 1;
  tg_shape ws = tg_shape_of(w);
  int64_t cin = ws.d[0], rcout = ws.d[1];
  int64_t xc = tg_dim(x, unb ? 0 : 1);
  if (g <= 0) TG_FAIL("%s: groups must be positive, got %lld", op, (long long)g);
  if (xc != cin) TG_FAIL("%s: input %s has %lld channels but weight %s has %lld input channels", op, nn_shape_str(x, b1, 128), (long long)xc, nn_shape_str(w, b2, 128), (long long)cin);
  if (cin % g) TG_FAIL("%s: groups %lld does not divide the %lld input channels", op, (long long)g, (long long)cin);
  conv_params p = { .n = n, .groups = g };
  int64_t s[3], pb[3], pa[3], op_[3], d[3], k[3];
  bool asym = false;
  for (int j = 0; o && j < 6; j++) asym |= o->pads[j] != 0;
  if (asym && (o->padding[0] || o->padding[1] || o->padding[2])) TG_FAIL("%s: give padding[] or pads[], not both", op);
  for (int j = 0; j < n; j++) {
    s[j] = o && o->stride[j] ? o->stride[j] : 1;
    d[j] = o && o->dilation[j] ? o->dilation[j] : 1;
    pb[j] = !o ? 0 : asym ? o->pads[2 * j] : o->padding[j];
    pa[j] = !o ? 0 : asym ? o->pads[2 * j + 1] : o->padding[j];
    op_[j] = o ? o->output_padding[j] : 0;
    k[j] = ws.d[2 + j];
    if (s[j] <= 0) TG_FAIL("%s: stride %lld on spatial axis %d must be positive", op, (long long)s[j], j);
    if (d[j] <= 0) TG_FAIL("%s: dilation %lld on spatial axis %d must be positive", op, (long long)d[j], j);
    if (pb[j] < 0 || pa[j] < 0)
      TG_FAIL("%s: padding %lld on spatial axis %d must not be negative", op, (long long)(pb[j] < 0 ? pb[j] : pa[j]), j);
    if (op_[j] < 0 || (op_[j] >= s[j] && op_[j] >= d[j]))
      TG_FAIL("%s: output_padding %lld on spatial axis %d must be smaller than the stride %lld or the dilation %lld", op, (long long)op_[j], j, (long long)s[j], (long long)d[j]);
    int64_t i = tg_dim(x, (unb ? 1 : 2) + j), is, kd;
    /* each term within 2^59, so the sums below stay inside int64 */
    if (tg_mul_overflow_i64(i > 0 ? i - 1 : 0, s[j], &is) || is > TG_MAX_NUMEL || tg_mul_overflow_i64(d[j], k[j] - 1, &kd) || kd > TG_MAX_NUMEL)
      TG_FAIL("%s: output size on spatial axis %d passes 2^59 (input %lld, kernel %lld, stride %lld, dilation %lld)", op, j, (long long)i, (long long)k[j], (long long)s[j], (long long)d[j]);
    if (pb[j] > TG_MAX_NUMEL || pa[j] > TG_MAX_NUMEL) TG_FAIL("%s: padding on spatial axis %d passes 2^59", op, j);
    int64_t out = (i - 1) * s[j] - (pb[j] + pa[j]) + kd + op_[j] + 1;
    if (out <= 0)
      TG_FAIL("%s: output size %lld on spatial axis %d is not positive (input %lld, kernel %lld, stride %lld, padding %lld, %lld)", op,
              (long long)out, j, (long long)i, (long long)k[j], (long long)s[j], (long long)pb[j], (long long)pa[j]);
    p.s[j] = 1; p.d[j] = d[j];
    /* tinygrad: a stride-1 conv of the dilated input padded by
     * (k-1)*d - before and (k-1)*d - after + output_padding */
    p.pads[2 * j] = kd - pb[j];
    p.pads[2 * j + 1] = kd - pa[j] + op_[j];
  }
  tg_scope_begin();
  tg_tensor *xx = unb ? tg_unsqueeze(x, 0) : x;
  /* weight (cin, rcout, *k) -> (g, cin/g, rcout, *k) -> (g, rcout, cin/g, *k), flipped -> (g*rcout, cin/g, *k) */
  tg_shape u = { 3 + n, { g, cin / g, rcout } };
  for (int j = 0; j < n; j++) u.d[3 + j] = k[j];
  tg_axes fl = { n, { 0 } };
  for (int j = 0; j < n; j++) fl.a[j] = 3 + j;
  tg_tensor *wt = tg_flip(tg_transpose(tg_reshape(w, u), 1, 2), fl);
  tg_shape wf = { 2 + n, { g * rcout, cin / g } };
  for (int j = 0; j < n; j++) wf.d[2 + j] = k[j];
  wt = tg_reshape(wt, wf);
  bool strided = false;
  for (int j = 0; j < n; j++) strided |= s[j] > 1;
  if (strided && xx) {
    /* insert s-1 zeros between input elements: (i) -> (i, 1) -> pad (i, s) -> (i*s) -> first i*s - (s-1) */
    tg_shape xs = tg_shape_of(xx), r1 = { 2 + 2 * n, { xs.d[0], xs.d[1] } }, r2 = { 2 + n, { xs.d[0], xs.d[1] } };
    int64_t pads[2 * TG_MAX_DIMS] = { 0 }, st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS] = { xs.d[0], xs.d[1] };
    for (int j = 0; j < n; j++) {
      r1.d[2 + 2 * j] = xs.d[2 + j]; r1.d[3 + 2 * j] = 1;
      pads[2 * (3 + 2 * j) + 1] = s[j] - 1;
      r2.d[2 + j] = xs.d[2 + j] * s[j];
      en[2 + j] = xs.d[2 + j] * s[j] - (s[j] - 1);
    }
    xx = tg_shrink(tg_reshape(tg_pad(tg_reshape(xx, r1), pads, 2 + 2 * n, 0), r2), st, en);
  }
  tg_tensor *r = xx && wt ? conv_core(xx, wt, b, &p, op) : NULL;
  if (unb) r = tg_squeeze(r, 0);
  return nn_done(r);
}

tg_tensor *tg_conv_transpose(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_transpose_opts *o) { return conv_transpose_entry(x, w, b, o, 0, "tg_conv_transpose"); }
tg_tensor *tg_conv_transpose1d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_transpose_opts *o) { return conv_transpose_entry(x, w, b, o, 1, "tg_conv_transpose1d"); }
tg_tensor *tg_conv_transpose2d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_transpose_opts *o) { return conv_transpose_entry(x, w, b, o, 2, "tg_conv_transpose2d"); }
tg_tensor *tg_conv_transpose3d(tg_tensor *x, tg_tensor *w, tg_tensor *b, const tg_conv_transpose_opts *o) { return conv_transpose_entry(x, w, b, o, 3, "tg_conv_transpose3d"); }
