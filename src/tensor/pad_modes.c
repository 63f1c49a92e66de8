/* pad_modes.c: tg_pad_mode, torch.nn.functional.pad's constant, reflect,
 * replicate and circular modes, from shrink, flip (negative-step slices),
 * expand, repeat and cat, like tinygrad's Tensor.pad. */
#include "tensor/indexing.h"

/* a[:, ..., start:stop:step, ...] on one axis (Python slice semantics) */
static tg_tensor *slice_axis(tg_tensor *a, int ax, int64_t start, int64_t stop, bool has_stop, int64_t step) {
  tg_index ix[TG_MAX_DIMS];
  for (int d = 0; d < a->u->ndim; d++) ix[d] = TG_ALLIDX;
  ix[ax] = (tg_index){ TG_IDX_SLICE, start, stop, step, true, has_stop };
  return tg_getitem(a, ix, a->u->ndim);
}

tg_tensor *tg_pad_mode(tg_tensor *a, const int64_t *pads, int npads, tg_pad_kind mode, double value) {
  NEED(a, "tg_pad_mode");
  int nd = a->u->ndim;
  if (npads < 0 || npads % 2 || npads / 2 > nd || (npads && !pads))
    TG_FAIL("tg_pad_mode: %d pad values for a %d-D tensor (need an even number, at most %d)", npads, nd, 2 * nd);
  /* no axis is longer than 2^59, so a pad past +-2^59 always fails; refused
   * here, every sum below stays inside int64 */
  for (int i = 0; i < npads; i++)
    if (pads[i] > TG_MAX_NUMEL || pads[i] < -TG_MAX_NUMEL)
      TG_FAIL("tg_pad_mode: pad %lld (value %d) is past 2^59, the longest an axis can be", (long long)pads[i], i);
  /* torch order (last axis first) to per-axis (before, after) */
  int64_t pb[TG_MAX_DIMS] = { 0 }, pa[TG_MAX_DIMS] = { 0 };
  for (int i = 0; i < npads / 2; i++) { pb[nd - 1 - i] = pads[2 * i]; pa[nd - 1 - i] = pads[2 * i + 1]; }
  int64_t flat[2 * TG_MAX_DIMS];
  for (int d = 0; d < nd; d++) { flat[2 * d] = pb[d]; flat[2 * d + 1] = pa[d]; }
  if (mode == TG_PAD_CONSTANT) {
    for (int d = 0; d < nd; d++) {
      int64_t s = a->u->shape[d];
      if (s + pb[d] + pa[d] < 0 || -pb[d] > s || -pa[d] > s)
        TG_FAIL("tg_pad_mode: padding (%lld, %lld) removes more than axis %d of size %lld", (long long)pb[d], (long long)pa[d], d, (long long)s);
    }
    return tg_pad(a, flat, nd, value);
  }
  if (mode != TG_PAD_REFLECT && mode != TG_PAD_REPLICATE && mode != TG_PAD_CIRCULAR) TG_FAIL("tg_pad_mode: unknown mode %d", (int)mode);
  static const char *const names[] = { "constant", "reflect", "replicate", "circular" };
  const char *mname = names[mode];
  tg_scope_begin();
  tg_tensor *x = a;
  int64_t st[TG_MAX_DIMS], en[TG_MAX_DIMS];
  if (mode == TG_PAD_CIRCULAR) {
    /* negative pads cut first, then each side wraps around at most once */
    for (int d = 0; d < nd; d++) {
      int64_t s = x->u->shape[d];
      st[d] = pb[d] < 0 ? -pb[d] : 0; en[d] = pa[d] < 0 ? s + pa[d] : s;
      if (st[d] > en[d]) { tg_seterr("tg_pad_mode: circular padding (%lld, %lld) removes more than axis %d of size %lld", (long long)pb[d], (long long)pa[d], d, (long long)s); return mvx_keep(NULL); }
    }
    x = tg_shrink(x, st, en);
    tg_shape rep = { nd, { 0 } };
    for (int d = 0; d < nd; d++) {
      int64_t s = x->u->shape[d], b = pb[d] > 0 ? pb[d] : 0, e = pa[d] > 0 ? pa[d] : 0;
      if (b > s || e > s) { tg_seterr("tg_pad_mode: circular padding (%lld, %lld) wraps more than once around axis %d of size %lld", (long long)b, (long long)e, d, (long long)s); return mvx_keep(NULL); }
      rep.d[d] = 1 + (b > 0) + (e > 0);
    }
    int64_t osh[TG_MAX_DIMS];
    for (int d = 0; d < nd; d++) osh[d] = x->u->shape[d];
    x = tg_repeat(x, rep);
    for (int d = 0; d < nd; d++) {
      int64_t b = pb[d] > 0 ? pb[d] : 0, e = pa[d] > 0 ? pa[d] : 0, xs = x->u->shape[d];
      st[d] = b == 0 ? 0 : osh[d] - b;
      en[d] = e == 0 ? xs : xs - osh[d] + e;
    }
    return mvx_keep(tg_shrink(x, st, en));
  }
  /* reflect / replicate: the positive pads by concatenating mirrored or
   * repeated edges, axis by axis; negative pads cut afterwards */
  for (int d = 0; d < nd && x; d++) {
    int64_t b = pb[d] > 0 ? pb[d] : 0, e = pa[d] > 0 ? pa[d] : 0, s = x->u->shape[d];
    if (!b && !e) continue;
    tg_tensor *pieces[3];
    int np = 0;
    if (mode == TG_PAD_REFLECT) {
      if (b >= s || e >= s) { tg_seterr("tg_pad_mode: reflect padding (%lld, %lld) must be less than the size %lld of axis %d", (long long)b, (long long)e, (long long)s, d); return mvx_keep(NULL); }
      if (b) pieces[np++] = slice_axis(x, d, b, 0, true, -1);
      pieces[np++] = x;
      if (e) pieces[np++] = slice_axis(x, d, s - 2, s - 2 - e, s - 2 - e >= 0, -1);
    } else {
      if (s == 0) { tg_seterr("tg_pad_mode: replicate padding of the empty axis %d", d); return mvx_keep(NULL); }
      for (int k = 0; k < nd; k++) { st[k] = 0; en[k] = x->u->shape[k]; }
      tg_shape es = tg_shape_of(x);
      if (b) { st[d] = 0; en[d] = 1; es.d[d] = b; pieces[np++] = tg_expand(tg_shrink(x, st, en), es); }
      pieces[np++] = x;
      if (e) { st[d] = s - 1; en[d] = s; es.d[d] = e; pieces[np++] = tg_expand(tg_shrink(x, st, en), es); }
    }
    x = tg_cat(pieces, np, d);
  }
  if (!x) return mvx_keep(NULL);
  for (int d = 0; d < nd; d++) {
    int64_t s = x->u->shape[d];
    st[d] = pb[d] < 0 ? -pb[d] : 0; en[d] = pa[d] < 0 ? s + pa[d] : s;
    if (st[d] > en[d]) { tg_seterr("tg_pad_mode: %s padding (%lld, %lld) removes more than axis %d has", mname, (long long)pb[d], (long long)pa[d], d); return mvx_keep(NULL); }
  }
  return mvx_keep(tg_shrink(x, st, en));
}
