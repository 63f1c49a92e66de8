/* nn_functional.c: einsum, linear, layer/batch norm, softmin, scaled dot
 * product attention, dropout and interpolate, each a composition of tensor
 * ops (torch.nn.functional semantics, tinygrad's formulations). */
#include <ctype.h>
#include <math.h>
#include "tensor/nn_internal.h"

/* ---------------------------------------------------------------- einsum */

/* Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (ASCII order, so sorting
 * ids sorts like Python's sorted()); ellipsis axes 52 + j. */
#define EIN_LETTERS 52
#define EIN_MAX (EIN_LETTERS + TG_MAX_DIMS)
static int ein_id(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? 26 + c - 'a' : -1; }

/* Parses one operand's subscripts (between s and e) against ndim: ids of its
 * axes in order into ids, the ellipsis axes counted right-aligned against
 * nell (the most ellipsis axes of any operand, filled in later: here the
 * ellipsis axis j of cnt gets 52 + j, fixed up by the caller). */
static int ein_parse_term(const char *s, const char *e, int ndim, int *ids, int *ell_count, const char *op, int which) {
  int nlet = 0, ell = -1;
  for (const char *p = s; p < e; p++) {
    if (*p == '.') {
      if (e - p < 3 || p[1] != '.' || p[2] != '.' || ell >= 0) return tg_seterr("%s: operand %d: bad ellipsis in \"%.*s\"", op, which, (int)(e - s), s);
      ell = nlet; p += 2;
    } else if (ein_id(*p) >= 0) nlet++;
    else if (!isspace((unsigned char)*p)) return tg_seterr("%s: operand %d: bad subscript character '%c'", op, which, *p);
  }
  int ne = ell >= 0 ? ndim - nlet : 0;
  if (ne < 0 || (ell < 0 && nlet != ndim))
    return tg_seterr("%s: operand %d has %d dimensions but subscripts \"%.*s\" name %d", op, which, ndim, (int)(e - s), s, nlet);
  int k = 0;
  for (const char *p = s; p < e; p++) {
    if (*p == '.') { for (int j = 0; j < ne; j++) ids[k++] = -1 - j; p += 2; }
    else if (ein_id(*p) >= 0) ids[k++] = ein_id(*p);
  }
  *ell_count = ell >= 0 ? ne : 0;
  return k;
}

/* The diagonal of axes a < b (equal sizes n) of x, as the last axis. */
static tg_tensor *diagonal(tg_tensor *x, int a, int b) {
  int nd = tg_ndim(x);
  int64_t n = tg_dim(x, a);
  tg_axes o = { nd, { 0 } };
  int k = 0;
  for (int i = 0; i < nd; i++) if (i != a && i != b) o.a[k++] = i;
  o.a[k++] = a; o.a[k++] = b;
  x = tg_permute(x, o);
  tg_shape s = tg_shape_of(x);
  /* (..., n*n) padded by n -> (..., n, n+1): column 0 is the diagonal */
  s.ndim = nd - 1; s.d[nd - 2] = n * n;
  x = tg_reshape(x, s);
  int64_t pads[2 * TG_MAX_DIMS] = { 0 };
  pads[2 * (nd - 2) + 1] = n;
  x = tg_pad(x, pads, nd - 1, 0);
  s.ndim = nd; s.d[nd - 2] = n; s.d[nd - 1] = n + 1;
  x = tg_reshape(x, s);
  int64_t st[TG_MAX_DIMS] = { 0 }, en[TG_MAX_DIMS];
  for (int i = 0; i < nd; i++) en[i] = s.d[i];
  en[nd - 1] = 1;
  s.ndim = nd - 1;
  return tg_reshape(tg_shrink(x, st, en), s);
}

tg_tensor *tg_einsum(const char *subscripts, tg_tensor *const *operands, int n) {
  const char *op = "tg_einsum";
  if (!subscripts) TG_FAIL("%s: subscripts are NULL", op);
  if (n <= 0 || !operands) TG_FAIL("%s: needs at least one operand", op);
  for (int i = 0; i < n; i++) NEED(operands[i], op);
  const char *arrow = strstr(subscripts, "->");
  const char *lhs_end = arrow ? arrow : subscripts + strlen(subscripts);
  /* split the inputs at commas */
  int ids[64][TG_MAX_DIMS], nax[64], ell[64], nterm = 0, max_ell = 0;
  if (n > 64) TG_FAIL("%s: at most 64 operands", op);
  const char *s = subscripts;
  for (;;) {
    const char *c = memchr(s, ',', (size_t)(lhs_end - s));
    const char *e = c ? c : lhs_end;
    if (nterm >= n) TG_FAIL("%s: \"%s\" has more terms than the %d operands given", op, subscripts, n);
    nax[nterm] = ein_parse_term(s, e, tg_ndim(operands[nterm]), ids[nterm], &ell[nterm], op, nterm);
    if (nax[nterm] < 0) return NULL;
    if (ell[nterm] > max_ell) max_ell = ell[nterm];
    nterm++;
    if (!c) break;
    s = c + 1;
  }
  if (nterm != n) TG_FAIL("%s: \"%s\" has %d terms but %d operands were given", op, subscripts, nterm, n);
  /* ellipsis axis j of a term with cnt of them is global ellipsis axis max_ell - cnt + j */
  for (int t = 0; t < n; t++)
    for (int i = 0; i < nax[t]; i++)
      if (ids[t][i] < 0) ids[t][i] = EIN_LETTERS + max_ell - ell[t] + (-1 - ids[t][i]);
  /* sizes, with broadcasting of size-1 axes */
  int64_t size[EIN_MAX];
  int count[EIN_MAX] = { 0 };
  for (int l = 0; l < EIN_MAX; l++) size[l] = -1;
  for (int t = 0; t < n; t++)
    for (int i = 0; i < nax[t]; i++) {
      int l = ids[t][i];
      int64_t d = tg_dim(operands[t], i);
      count[l]++;
      if (size[l] < 0 || size[l] == 1) size[l] = d;
      else if (d != 1 && d != size[l]) {
        if (l < EIN_LETTERS) TG_FAIL("%s: subscript '%c' has sizes %lld and %lld", op, l < 26 ? 'A' + l : 'a' + l - 26, (long long)size[l], (long long)d);
        TG_FAIL("%s: ellipsis dimensions %lld and %lld do not broadcast", op, (long long)size[l], (long long)d);
      }
    }
  /* output labels */
  int out[EIN_MAX], nout = 0;
  bool in_out[EIN_MAX] = { 0 };
  if (arrow) {
    const char *p = arrow + 2;
    bool had_ell = false;
    for (; *p; p++) {
      if (*p == '.') {
        if (p[1] != '.' || p[2] != '.' || had_ell) TG_FAIL("%s: bad ellipsis in the output of \"%s\"", op, subscripts);
        had_ell = true; p += 2;
        for (int j = 0; j < max_ell; j++) { out[nout++] = EIN_LETTERS + j; in_out[EIN_LETTERS + j] = true; }
        continue;
      }
      if (isspace((unsigned char)*p)) continue;
      int l = ein_id(*p);
      if (l < 0) TG_FAIL("%s: bad output subscript character '%c'", op, *p);
      if (in_out[l]) TG_FAIL("%s: output subscript '%c' appears more than once", op, *p);
      if (!count[l]) TG_FAIL("%s: output subscript '%c' does not appear in the inputs", op, *p);
      out[nout++] = l; in_out[l] = true;
    }
    /* torch: without "..." in the output, ellipsis axes are summed */
  } else {
    for (int j = 0; j < max_ell; j++) { out[nout++] = EIN_LETTERS + j; in_out[EIN_LETTERS + j] = true; }
    for (int l = 0; l < EIN_LETTERS; l++) if (count[l] == 1) { out[nout++] = l; in_out[l] = true; }
  }
  /* global axis order: every label in use, by id */
  int glob[EIN_MAX], ng = 0, pos[EIN_MAX];
  for (int l = 0; l < EIN_MAX; l++) if (count[l]) { pos[l] = ng; glob[ng++] = l; }
  if (ng > TG_MAX_DIMS) TG_FAIL("%s: %d distinct labels; at most %d", op, ng, TG_MAX_DIMS);
  tg_scope_begin();
  tg_tensor *prod = NULL;
  for (int t = 0; t < n; t++) {
    tg_tensor *x = operands[t];
    int lab[TG_MAX_DIMS], nl = nax[t];
    memcpy(lab, ids[t], sizeof(int) * (size_t)nl);
    /* repeated labels: take diagonals (the diagonal becomes the last axis) */
    for (bool again = true; again && x;) {
      again = false;
      for (int a = 0; a < nl && !again; a++)
        for (int b = a + 1; b < nl && !again; b++)
          if (lab[a] == lab[b]) {
            if (tg_dim(x, a) != tg_dim(x, b)) {
              tg_seterr("%s: repeated subscript in operand %d has sizes %lld and %lld", op, t, (long long)tg_dim(x, a), (long long)tg_dim(x, b));
              x = NULL;
              break;
            }
            int keep = lab[a], k = 0;
            x = diagonal(x, a, b);
            for (int i = 0; i < nl; i++) if (i != a && i != b) lab[k++] = lab[i];
            lab[k++] = keep;
            nl = k;
            again = true;
          }
    }
    if (!x) { prod = NULL; break; }
    /* permute to global order, then reshape with 1 for absent labels */
    tg_axes perm = { nl, { 0 } };
    int k = 0;
    for (int g = 0; g < ng; g++)
      for (int i = 0; i < nl; i++) if (lab[i] == glob[g]) perm.a[k++] = i;
    x = tg_permute(x, perm);
    tg_shape r = { ng, { 0 } };
    for (int g = 0; g < ng; g++) r.d[g] = 1;
    for (int i = 0; i < nl; i++) r.d[pos[lab[perm.a[i]]]] = tg_dim(x, i);
    x = tg_reshape(x, r);
    prod = t == 0 ? x : tg_mul(prod, x);
    if (!prod) break;
  }
  if (prod) {
    /* make every label its full size (a label present only with size 1 keeps 1) */
    tg_shape full = { ng, { 0 } };
    for (int g = 0; g < ng; g++) full.d[g] = size[glob[g]];
    prod = tg_expand(prod, full);
    tg_axes red = { 0, { 0 } };
    for (int g = 0; g < ng; g++) if (!in_out[glob[g]]) red.a[red.n++] = g;
    tg_dtype dt = tg_dtype_of(prod);
    tg_tensor *r = red.n ? tg_sum(prod, red, false) : prod;
    if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
    /* remaining axes are the output labels in id order; permute to the output order */
    int rem[EIN_MAX], nr = 0;
    for (int g = 0; g < ng; g++) if (in_out[glob[g]]) rem[nr++] = glob[g];
    tg_axes perm = { nout, { 0 } };
    for (int i = 0; i < nout; i++)
      for (int j = 0; j < nr; j++) if (rem[j] == out[i]) perm.a[i] = j;
    prod = nout ? tg_permute(r, perm) : r;
  }
  return nn_done(prod);
}

/* ---------------------------------------------------------------- linear */

tg_tensor *tg_linear(tg_tensor *x, tg_tensor *w, tg_tensor *b) {
  NEED(x, "tg_linear"); NEED(w, "tg_linear");
  char b1[128], b2[128];
  int wn = tg_ndim(w);
  if (wn != 1 && wn != 2) TG_FAIL("tg_linear: weight %s must be 1-D or 2-D (out, in)", nn_shape_str(w, b1, 128));
  if (tg_ndim(x) < 1) TG_FAIL("tg_linear: input must have at least 1 dimension");
  if (tg_dim(x, -1) != tg_dim(w, -1))
    TG_FAIL("tg_linear: input %s has %lld features but weight %s expects %lld", nn_shape_str(x, b1, 128), (long long)tg_dim(x, -1), nn_shape_str(w, b2, 128), (long long)tg_dim(w, -1));
  tg_scope_begin();
  tg_tensor *r = tg_matmul(x, wn == 2 ? tg_T(w) : w);
  if (b) r = tg_add(r, b);
  return nn_done(r);
}

/* ---------------------------------------------------------------- normalization */

static bool same_shape(const tg_tensor *t, const int64_t *d, int nd) {
  if (tg_ndim(t) != nd) return false;
  for (int i = 0; i < nd; i++) if (tg_dim(t, i) != d[i]) return false;
  return true;
}

tg_tensor *tg_layernorm(tg_tensor *x, tg_shape ns, tg_tensor *w, tg_tensor *b, double eps) {
  NEED(x, "tg_layernorm");
  char b1[128];
  int nd = tg_ndim(x);
  if (ns.ndim < 1 || ns.ndim > nd) TG_FAIL("tg_layernorm: normalized_shape has %d dimensions for an input %s", ns.ndim, nn_shape_str(x, b1, 128));
  for (int i = 0; i < ns.ndim; i++)
    if (tg_dim(x, nd - ns.ndim + i) != ns.d[i]) TG_FAIL("tg_layernorm: normalized_shape does not match the last %d dimensions of input %s", ns.ndim, nn_shape_str(x, b1, 128));
  if (w && !same_shape(w, ns.d, ns.ndim)) TG_FAIL("tg_layernorm: weight %s must have the normalized shape", nn_shape_str(w, b1, 128));
  if (b && !same_shape(b, ns.d, ns.ndim)) TG_FAIL("tg_layernorm: bias %s must have the normalized shape", nn_shape_str(b, b1, 128));
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("tg_layernorm: input must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x)));
  if (!(eps >= 0)) TG_FAIL("tg_layernorm: eps %g must be >= 0", eps);
  tg_scope_begin();
  tg_axes ax = { ns.ndim, { 0 } };
  for (int i = 0; i < ns.ndim; i++) ax.a[i] = -1 - i;
  tg_tensor *d = tg_sub(x, tg_mean(x, ax, true));
  tg_tensor *var = tg_mean(tg_mul(d, d), ax, true);
  tg_tensor *r = tg_mul(d, tg_rsqrt(tg_adds(var, eps)));
  if (w) r = tg_mul(r, w);
  if (b) r = tg_add(r, b);
  return nn_done(r);
}

static tg_axes batch_axes(int nd) {
  tg_axes a = { 0, { 0 } };
  for (int i = 0; i < nd; i++) if (i != 1) a.a[a.n++] = i;
  return a;
}

int tg_batchnorm_stats(tg_tensor *x, tg_tensor **mean, tg_tensor **var) {
  if (mean) *mean = NULL;
  if (var) *var = NULL;
  if (!x) { tensor_null_input("tg_batchnorm_stats"); return -1; }
  if (!mean || !var) return tg_seterr("tg_batchnorm_stats: %s output pointer is NULL", !mean ? "mean" : "var");
  if (tg_ndim(x) < 2) return tg_seterr("tg_batchnorm_stats: input must be (N, C, ...), got %d dimensions", tg_ndim(x));
  if (!tg_dtype_is_float(tg_dtype_of(x))) return tg_seterr("tg_batchnorm_stats: input must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x)));
  tg_scope_begin();
  tg_axes a = batch_axes(tg_ndim(x));
  tg_tensor *m = tg_mean(x, a, true);
  tg_tensor *d = tg_sub(x, m);
  tg_tensor *v = tg_mean(tg_mul(d, d), a, false);
  m = tg_reshape(m, TG_SHAPE(-1));
  if (m) tg_keep(m);
  if (v) tg_keep(v);
  tg_scope_end();
  if (!m || !v) return -1;
  if (mean) *mean = m;
  if (var) *var = v;
  return 0;
}

tg_tensor *tg_batchnorm(tg_tensor *x, tg_tensor *mean, tg_tensor *var, tg_tensor *w, tg_tensor *b, double eps) {
  NEED(x, "tg_batchnorm");
  char b1[128], b2[128];
  int nd = tg_ndim(x);
  if (nd < 2) TG_FAIL("tg_batchnorm: input %s must be (N, C, ...)", nn_shape_str(x, b1, 128));
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("tg_batchnorm: input must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x)));
  if ((mean == NULL) != (var == NULL)) TG_FAIL("tg_batchnorm: give both mean and var (inference) or neither (batch statistics)");
  int64_t c = tg_dim(x, 1);
  tg_tensor *const ps[4] = { mean, var, w, b };
  const char *names[4] = { "mean", "var", "weight", "bias" };
  for (int i = 0; i < 4; i++)
    if (ps[i] && !same_shape(ps[i], &c, 1)) TG_FAIL("tg_batchnorm: %s %s must be (%lld), the channels of input %s", names[i], nn_shape_str(ps[i], b1, 128), (long long)c, nn_shape_str(x, b2, 128));
  if (!(eps >= 0)) TG_FAIL("tg_batchnorm: eps %g must be >= 0", eps);
  tg_scope_begin();
  tg_shape cs = { nd, { 0 } };
  for (int i = 0; i < nd; i++) cs.d[i] = i == 1 ? c : 1;
  tg_tensor *m = mean, *v = var;
  if (!m && tg_batchnorm_stats(x, &m, &v) < 0) return nn_done(NULL);
  tg_tensor *r = tg_mul(tg_sub(x, tg_reshape(m, cs)), tg_rsqrt(tg_adds(tg_reshape(v, cs), eps)));
  if (w) r = tg_mul(r, tg_reshape(w, cs));
  if (b) r = tg_add(r, tg_reshape(b, cs));
  return nn_done(r);
}

/* ---------------------------------------------------------------- softmin, dropout */

tg_tensor *tg_softmin(tg_tensor *x, int axis) {
  NEED(x, "tg_softmin");
  tg_scope_begin();
  tg_tensor *xf = tg_dtype_is_float(tg_dtype_of(x)) ? x : tg_cast(x, (tg_dtype)dtype_least_upper_float(x->u->dtype).scalar);
  return nn_done(tg_softmax(tg_neg(xf), axis));
}

tg_tensor *tg_dropout(tg_tensor *x, double p, bool training) {
  NEED(x, "tg_dropout");
  if (!(p >= 0 && p <= 1)) TG_FAIL("tg_dropout: probability %g must be in [0, 1]", p);
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("tg_dropout: input must be a float tensor, not %s", tg_dtype_name(tg_dtype_of(x)));
  if (!training || p == 0) return tg_reshape(x, tg_shape_of(x));
  if (p == 1) return tg_zeros_like(x);
  tg_scope_begin();
  tg_tensor *keep = tg_ge(tg_rand(tg_shape_of(x), TG_F32), tg_scalar(p, TG_F32));
  tg_tensor *r = tg_muls(tg_where(keep, x, tg_scalar(0, tg_dtype_of(x))), 1.0 / (1.0 - p));
  return nn_done(r);
}

/* ---------------------------------------------------------------- attention */

tg_tensor *tg_scaled_dot_product_attention(tg_tensor *q, tg_tensor *k, tg_tensor *v, const tg_sdpa_opts *o) {
  const char *op = "tg_scaled_dot_product_attention";
  NEED(q, op); NEED(k, op); NEED(v, op);
  tg_sdpa_opts d = { 0 };
  if (!o) o = &d;
  char b1[128], b2[128], b3[128];
  int nq = tg_ndim(q), nk = tg_ndim(k), nv = tg_ndim(v);
  if (nq < 2 || nk < 2 || nv < 2) TG_FAIL("%s: query, key and value need at least 2 dimensions (..., L, E)", op);
  for (int i = 0; i < 3; i++) {
    tg_tensor *t = i == 0 ? q : i == 1 ? k : v;
    if (!tg_dtype_is_float(tg_dtype_of(t))) TG_FAIL("%s: %s must be a float tensor, not %s", op, i == 0 ? "query" : i == 1 ? "key" : "value", tg_dtype_name(tg_dtype_of(t)));
  }
  int64_t L = tg_dim(q, -2), E = tg_dim(q, -1), S = tg_dim(k, -2);
  if (tg_dim(k, -1) != E) TG_FAIL("%s: query %s and key %s have different embedding sizes", op, nn_shape_str(q, b1, 128), nn_shape_str(k, b2, 128));
  if (tg_dim(v, -2) != S) TG_FAIL("%s: key %s and value %s have different sequence lengths", op, nn_shape_str(k, b1, 128), nn_shape_str(v, b3, 128));
  if (o->is_causal && o->attn_mask) TG_FAIL("%s: is_causal and attn_mask cannot both be set", op);
  if (!(o->dropout_p >= 0 && o->dropout_p <= 1)) TG_FAIL("%s: dropout_p %g must be in [0, 1]", op, o->dropout_p);
  int64_t rep = 1;
  if (o->enable_gqa) {
    if (nq < 3 || nk < 3 || nv < 3) TG_FAIL("%s: enable_gqa needs a head axis (..., H, L, E)", op);
    int64_t hq = tg_dim(q, -3), hk = tg_dim(k, -3), hv = tg_dim(v, -3);
    if (hk != hv || hk <= 0 || hq % hk) TG_FAIL("%s: enable_gqa: query heads %lld must be a multiple of the key heads %lld (= value heads %lld)", op, (long long)hq, (long long)hk, (long long)hv);
    rep = hq / hk;
  }
  if (o->attn_mask) {
    tg_dtype mdt = tg_dtype_of(o->attn_mask);
    if (mdt != TG_BOOL && !tg_dtype_is_float(mdt)) TG_FAIL("%s: attn_mask must be bool or float, not %s", op, tg_dtype_name(mdt));
  }
  double scale = o->scale != 0 ? o->scale : 1.0 / sqrt((double)E);
  tg_scope_begin();
  if (rep > 1) {
    /* repeat_interleave along the head axis */
    tg_tensor *kv[2] = { k, v };
    for (int i = 0; i < 2; i++) {
      tg_shape s = tg_shape_of(kv[i]), u = s, e;
      int h = s.ndim - 3;
      for (int j = s.ndim; j > h + 1; j--) u.d[j] = u.d[j - 1];
      u.d[h + 1] = 1; u.ndim = s.ndim + 1;
      e = u; e.d[h + 1] = rep;
      s.d[h] *= rep;
      kv[i] = tg_reshape(tg_expand(tg_reshape(kv[i], u), e), s);
    }
    k = kv[0]; v = kv[1];
  }
  tg_tensor *sc = tg_muls(tg_matmul(q, tg_transpose(k, -1, -2)), scale);
  tg_dtype dt = tg_dtype_of(sc);
  tg_tensor *ninf = tg_scalar(-INFINITY, dt);
  if (o->is_causal) {
    tg_tensor *i = tg_reshape(tg_arange(0, (double)L, 1, TG_I32), TG_SHAPE(L, 1));
    tg_tensor *j = tg_reshape(tg_arange(0, (double)S, 1, TG_I32), TG_SHAPE(1, S));
    sc = tg_where(tg_le(j, i), sc, ninf);
  }
  if (o->attn_mask) {
    if (tg_dtype_of(o->attn_mask) == TG_BOOL) sc = tg_where(o->attn_mask, sc, ninf);
    else sc = tg_add(sc, o->attn_mask);
  }
  tg_tensor *w = tg_softmax(sc, -1);
  if (o->dropout_p > 0) w = tg_dropout(w, o->dropout_p, true);
  return nn_done(tg_matmul(w, v));
}

/* ---------------------------------------------------------------- interpolate */

/* Resamples axis `axis` of x (length n) to m positions: output j is
 * sum_i x[i] * w[j, i] over the taps where sel[j, i], with sel (m, n) bool
 * and w (m, n) (NULL: 1). A one-hot reduce (like tinygrad's gather), one
 * kernel per axis; unselected elements never enter the sum, so an inf
 * elsewhere in x does not turn the result into NaN. */
static tg_tensor *resample_axis(tg_tensor *x, int axis, tg_tensor *sel, tg_tensor *w) {
  int nd = tg_ndim(x);
  tg_dtype dt = tg_dtype_of(x);
  tg_tensor *xm = tg_unsqueeze(nn_moveaxis(x, axis, nd - 1), -2);   /* (..., 1, n) */
  tg_tensor *v = w ? tg_mul(xm, w) : xm;
  tg_tensor *r = tg_sum(tg_where(sel, v, tg_scalar(0, dt)), TG_AXES(-1), false);
  if (r && tg_dtype_of(r) != dt) r = tg_cast(r, dt);
  return nn_moveaxis(r, nd - 1, axis);
}

tg_tensor *tg_interpolate(tg_tensor *x, const int64_t *size, int nsize, tg_interp_mode mode, bool align_corners) {
  const char *op = "tg_interpolate";
  NEED(x, op);
  char b1[128];
  int nd = tg_ndim(x);
  if (!size) TG_FAIL("%s: size is NULL", op);
  if (nsize != nd - 2 || nsize < 1 || nsize > 3) TG_FAIL("%s: %d sizes for input %s; give one per spatial axis (N, C, *spatial), 1 to 3", op, nsize, nn_shape_str(x, b1, 128));
  bool linear = mode == TG_INTERP_LINEAR || mode == TG_INTERP_BILINEAR;
  if (mode == TG_INTERP_LINEAR && nsize != 1) TG_FAIL("%s: linear mode needs a 3-D input (N, C, W), got %s", op, nn_shape_str(x, b1, 128));
  if (mode == TG_INTERP_BILINEAR && nsize != 2) TG_FAIL("%s: bilinear mode needs a 4-D input (N, C, H, W), got %s", op, nn_shape_str(x, b1, 128));
  if ((int)mode < 0 || mode > TG_INTERP_BILINEAR) TG_FAIL("%s: unknown mode %d", op, (int)mode);
  if (align_corners && !linear) TG_FAIL("%s: align_corners is only for the linear modes", op);
  if (!tg_dtype_is_float(tg_dtype_of(x))) TG_FAIL("%s: input must be a float tensor, not %s", op, tg_dtype_name(tg_dtype_of(x)));
  for (int i = 0; i < nsize; i++) {
    if (size[i] <= 0) TG_FAIL("%s: output size %lld on spatial axis %d must be positive", op, (long long)size[i], i);
    if (tg_dim(x, 2 + i) <= 0) TG_FAIL("%s: input %s has an empty spatial axis", op, nn_shape_str(x, b1, 128));
  }
  tg_scope_begin();
  tg_tensor *r = x;
  for (int i = nsize - 1; i >= 0 && r; i--) {
    int axis = 2 + i;
    int64_t in = tg_dim(x, axis), out = size[i];
    tg_tensor *dst = tg_arange(0, (double)out, 1, TG_F32);
    if (!linear) {
      /* torch: float scale in/out, floor(dst * scale) (or (dst + 0.5) * scale), at most in-1 */
      float scale = (float)in / (float)out;
      tg_tensor *src = mode == TG_INTERP_NEAREST_EXACT ? tg_adds(dst, 0.5) : dst;
      tg_tensor *ix = tg_cast(tg_muls(src, scale), TG_I32);   /* >= 0: truncation is floor */
      ix = tg_minimum(ix, tg_scalar((double)(in - 1), TG_I32));
      r = resample_axis(r, axis, nn_one_hot_bool(ix, in), NULL);
      continue;
    }
    /* torch's area_pixel_compute_source_index: align_corners: scale*dst with
     * scale (in-1)/(out-1) (0 when out is 1); else scale*(dst+0.5)-0.5 with
     * scale in/out, clamped at 0 */
    tg_tensor *src;
    if (align_corners) {
      float scale = out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
      src = tg_muls(dst, scale);
    } else {
      float scale = (float)in / (float)out;
      src = tg_maximum(tg_subs(tg_muls(tg_adds(dst, 0.5), scale), 0.5), tg_scalar(0, TG_F32));
    }
    tg_tensor *i0 = tg_minimum(tg_cast(src, TG_I32), tg_scalar((double)(in - 1), TG_I32));
    tg_tensor *i1 = tg_minimum(tg_adds(i0, 1), tg_scalar((double)(in - 1), TG_I32));
    tg_tensor *l1 = tg_sub(src, tg_cast(i0, TG_F32));
    tg_tensor *l0 = tg_sub(tg_scalar(1, TG_F32), l1);
    /* one (out, in) weight matrix holding both taps */
    tg_dtype dt = tg_dtype_of(x);
    tg_tensor *oh0 = nn_one_hot_bool(i0, in), *oh1 = nn_one_hot_bool(i1, in);
    tg_tensor *zero = tg_scalar(0, dt);
    l0 = tg_unsqueeze(tg_cast(l0, dt), -1);
    l1 = tg_unsqueeze(tg_cast(l1, dt), -1);
    tg_tensor *w = tg_add(tg_where(oh0, l0, zero), tg_where(oh1, l1, zero));
    r = resample_axis(r, axis, tg_logical_or(oh0, oh1), w);
  }
  if (r == x) r = tg_reshape(x, tg_shape_of(x));
  return nn_done(r);
}
