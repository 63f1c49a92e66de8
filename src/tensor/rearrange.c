/* rearrange.c: einops-style tg_rearrange, the subset tinygrad supports:
 * unflatten the left side's groups, permute to the right side's order,
 * flatten the right side's groups. Only views (reshape, permute). */
#include <ctype.h>
#include "tensor/indexing.h"

#define RA_MAX 48        /* names on one side, after "..." is expanded */
#define RA_NAME 32

typedef struct {
  char name[RA_MAX][RA_NAME];
  int nnames;
  struct { int first, count; bool group; } item[RA_MAX];
  int nitems;
  int ellipsis;          /* index of the "..." name, -1 when none */
} ra_side;

/* Parses one side of the pattern into names and items (a name, or a group
 * of names). "1" and "()" are empty groups (a size-1 axis). */
static bool ra_parse(const char *s, const char *end, ra_side *out, const char *pattern) {
  memset(out, 0, sizeof *out);
  out->ellipsis = -1;
  bool in_group = false;
  while (s < end) {
    unsigned char c = (unsigned char)*s;
    if (isspace(c)) { s++; continue; }
    if (out->nitems >= RA_MAX || out->nnames >= RA_MAX) { tg_seterr("tg_rearrange: too many axes in \"%s\"", pattern); return false; }
    if (c == '(') {
      if (in_group) { tg_seterr("tg_rearrange: nested parentheses in \"%s\"", pattern); return false; }
      in_group = true;
      out->item[out->nitems].first = out->nnames; out->item[out->nitems].count = 0; out->item[out->nitems].group = true;
      s++; continue;
    }
    if (c == ')') {
      if (!in_group) { tg_seterr("tg_rearrange: unbalanced ')' in \"%s\"", pattern); return false; }
      in_group = false; out->nitems++;
      s++; continue;
    }
    const char *t = s;
    bool ell = false;
    if (!strncmp(s, "...", 3)) { s += 3; ell = true; }
    else if (!strncmp(s, "\xe2\x80\xa6", 3)) { s += 3; ell = true; }   /* U+2026 */
    else if (isdigit(c)) {
      while (s < end && isalnum((unsigned char)*s)) s++;
      if (s - t != 1 || *t != '1') { tg_seterr("tg_rearrange: numeric axis \"%.*s\" in \"%s\" (only 1 is allowed)", (int)(s - t), t, pattern); return false; }
      if (in_group) continue;   /* (a 1 b) is (a b) */
      out->item[out->nitems].first = out->nnames; out->item[out->nitems].count = 0; out->item[out->nitems].group = true;
      out->nitems++;
      continue;
    } else if (isalpha(c) || c == '_') {
      while (s < end && (isalnum((unsigned char)*s) || *s == '_')) s++;
      if (*t == '_' || s[-1] == '_') { tg_seterr("tg_rearrange: invalid axis name \"%.*s\" (may not start or end with _)", (int)(s - t), t); return false; }
    } else { tg_seterr("tg_rearrange: unexpected character '%c' in \"%s\"", c, pattern); return false; }
    if (s - t >= RA_NAME) { tg_seterr("tg_rearrange: axis name \"%.*s\" is too long", (int)(s - t), t); return false; }
    if (ell) {
      if (out->ellipsis >= 0) { tg_seterr("tg_rearrange: more than one ellipsis on a side of \"%s\"", pattern); return false; }
      out->ellipsis = out->nnames;
      strcpy(out->name[out->nnames], "...");
    } else {
      memcpy(out->name[out->nnames], t, (size_t)(s - t));
      out->name[out->nnames][s - t] = 0;
    }
    for (int i = 0; i < out->nnames; i++)
      if (!strcmp(out->name[i], out->name[out->nnames])) { tg_seterr("tg_rearrange: axis \"%s\" appears twice on one side of \"%s\"", out->name[i], pattern); return false; }
    if (in_group) out->item[out->nitems].count++;
    else { out->item[out->nitems].first = out->nnames; out->item[out->nitems].count = 1; out->item[out->nitems].group = false; out->nitems++; }
    out->nnames++;
  }
  if (in_group) { tg_seterr("tg_rearrange: unbalanced '(' in \"%s\"", pattern); return false; }
  return true;
}

/* Replaces "..." by n names "...0", "...1", ... */
static bool ra_expand_ellipsis(ra_side *sd, int n) {
  if (sd->ellipsis < 0) return true;
  if (sd->nnames - 1 + n > RA_MAX) { tg_seterr("tg_rearrange: too many axes"); return false; }
  int e = sd->ellipsis;
  memmove(sd->name[e + n], sd->name[e + 1], sizeof sd->name[0] * (size_t)(sd->nnames - e - 1));
  for (int i = 0; i < n; i++) snprintf(sd->name[e + i], RA_NAME, "...%d", i);
  sd->nnames += n - 1;
  for (int i = 0; i < sd->nitems; i++) {
    if (sd->item[i].first > e) sd->item[i].first += n - 1;
    else if (sd->item[i].first <= e && e < sd->item[i].first + sd->item[i].count) sd->item[i].count += n - 1;
  }
  /* a bare "..." item stands for n separate axes: split it */
  for (int i = 0; i < sd->nitems; i++) {
    if (sd->item[i].group || sd->item[i].first != e) continue;
    if (sd->nitems - 1 + n > RA_MAX) { tg_seterr("tg_rearrange: too many axes"); return false; }
    memmove(&sd->item[i + n], &sd->item[i + 1], sizeof sd->item[0] * (size_t)(sd->nitems - i - 1));
    for (int k = 0; k < n; k++) { sd->item[i + k].first = e + k; sd->item[i + k].count = 1; sd->item[i + k].group = false; }
    sd->nitems += n - 1;
    break;
  }
  sd->ellipsis = -1;
  return true;
}

static int ra_find(const ra_side *sd, const char *name) {
  for (int i = 0; i < sd->nnames; i++) if (!strcmp(sd->name[i], name)) return i;
  return -1;
}

tg_tensor *tg_rearrange(tg_tensor *a, const char *pattern, const char *sizes) {
  NEED(a, "tg_rearrange");
  if (!pattern) TG_FAIL("tg_rearrange: pattern is NULL");
  const char *arrow = strstr(pattern, "->");
  if (!arrow || strstr(arrow + 2, "->")) TG_FAIL("tg_rearrange: need exactly one \"->\" in \"%s\"", pattern);
  static __thread ra_side L, R;
  if (!ra_parse(pattern, arrow, &L, pattern) || !ra_parse(arrow + 2, arrow + strlen(arrow), &R, pattern)) return NULL;
  /* the same names on both sides */
  if (L.nnames != R.nnames) TG_FAIL("tg_rearrange: the two sides of \"%s\" name different axes", pattern);
  for (int i = 0; i < L.nnames; i++)
    if (ra_find(&R, L.name[i]) < 0) TG_FAIL("tg_rearrange: axis \"%s\" is on the left of \"%s\" but not on the right", L.name[i], pattern);
  for (int i = 0; i < L.nitems; i++)
    if (L.item[i].group && L.ellipsis >= L.item[i].first && L.ellipsis < L.item[i].first + L.item[i].count)
      TG_FAIL("tg_rearrange: an ellipsis cannot be inside a group on the left of \"%s\"", pattern);
  int nd = a->u->ndim;
  int fixed = L.nitems - (L.ellipsis >= 0 ? 1 : 0);
  if (L.ellipsis >= 0) {
    int n = nd - fixed;
    if (n < 0) TG_FAIL("tg_rearrange: \"%s\" needs at least %d axes, the tensor has %d", pattern, fixed, nd);
    if (!ra_expand_ellipsis(&L, n) || !ra_expand_ellipsis(&R, n)) return NULL;
  } else if (L.nitems != nd) TG_FAIL("tg_rearrange: the left side of \"%s\" has %d axes, the tensor has %d", pattern, L.nitems, nd);
  /* sizes given by the caller */
  int64_t given[RA_MAX];
  for (int i = 0; i < RA_MAX; i++) given[i] = -1;
  for (const char *s = sizes; s && *s;) {
    while (*s && (isspace((unsigned char)*s) || *s == ',')) s++;
    if (!*s) break;
    const char *t = s;
    while (*s && (isalnum((unsigned char)*s) || *s == '_')) s++;
    int len = (int)(s - t);
    char name[RA_NAME];
    if (len == 0 || len >= RA_NAME || *s != '=') TG_FAIL("tg_rearrange: bad sizes \"%s\" (expected \"name=size ...\")", sizes);
    memcpy(name, t, (size_t)len); name[len] = 0;
    char *e;
    long long v = strtoll(s + 1, &e, 10);
    if (e == s + 1 || v < 0) TG_FAIL("tg_rearrange: bad size for \"%s\" in \"%s\"", name, sizes);
    s = e;
    int k = ra_find(&L, name);
    if (k < 0) TG_FAIL("tg_rearrange: axis \"%s\" of the sizes is not in \"%s\"", name, pattern);
    given[k] = v;
  }
  /* the size of each left name */
  int64_t sz[RA_MAX];
  for (int it = 0; it < L.nitems; it++) {
    int64_t len = a->u->shape[it];
    int f = L.item[it].first, c = L.item[it].count;
    if (!L.item[it].group) {
      if (given[f] >= 0 && given[f] != len) TG_FAIL("tg_rearrange: size %lld given for \"%s\" but the axis has %lld", (long long)given[f], L.name[f], (long long)len);
      sz[f] = len;
      continue;
    }
    int64_t known = 1;
    int unknown = -1;
    for (int k = f; k < f + c; k++) {
      if (given[k] >= 0) {
        if (tg_mul_overflow_i64(known, given[k], &known) || known > TG_MAX_NUMEL)
          TG_FAIL("tg_rearrange: the sizes given for the group of axis %d multiply past 2^59 (at \"%s\" = %lld)", it, L.name[k], (long long)given[k]);
        sz[k] = given[k];
        continue;
      }
      if (unknown >= 0) TG_FAIL("tg_rearrange: cannot split axis %d into \"%s\" and \"%s\" without their sizes", it, L.name[unknown], L.name[k]);
      unknown = k;
    }
    if (unknown >= 0) {
      if (known == 0 || len % known) TG_FAIL("tg_rearrange: axis %d of length %lld does not split by %lld for \"%s\"", it, (long long)len, (long long)known, L.name[unknown]);
      sz[unknown] = len / known;
    } else if (known != len) TG_FAIL("tg_rearrange: group %d of \"%s\" has size %lld but the axis has %lld", it, pattern, (long long)known, (long long)len);
  }
  if (L.nnames > TG_MAX_DIMS || R.nitems > TG_MAX_DIMS) TG_FAIL("tg_rearrange: more than %d axes", TG_MAX_DIMS);
  tg_shape un = { L.nnames, { 0 } }, fin = { R.nitems, { 0 } };
  tg_axes perm = { R.nnames, { 0 } };
  for (int i = 0; i < L.nnames; i++) un.d[i] = sz[i];
  for (int i = 0; i < R.nnames; i++) perm.a[i] = ra_find(&L, R.name[i]);
  for (int it = 0; it < R.nitems; it++) {
    int64_t p = 1;
    for (int k = R.item[it].first; k < R.item[it].first + R.item[it].count; k++)
      if (tg_mul_overflow_i64(p, sz[ra_find(&L, R.name[k])], &p) || p > TG_MAX_NUMEL)
        TG_FAIL("tg_rearrange: output group %d of \"%s\" has more than 2^59 elements", it, pattern);
    fin.d[it] = p;
  }
  tg_scope_begin();
  return mvx_keep(tg_reshape(tg_permute(tg_reshape(a, un), perm), fin));
}
