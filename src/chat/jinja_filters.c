/* jinja_filters.c: filters (`x | f`) and tests (`x is t`). Where jinja2
 * and minja differ, minja (llama.cpp's renderer) wins: `map` returns a list,
 * `safe` returns the string unchanged, `None | trim` is "". */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja_eval.h"
#include "util/util.h"

/* ---- tests ---- */

bool jinja_test(jctx *c, const char *name, jv v, jargs *a) {
  #define IS(s) (!strcmp(name, s))
  if (IS("defined")) return v.k != JV_UNDEF;
  if (IS("undefined")) return v.k == JV_UNDEF;
  if (IS("none")) return v.k == JV_NONE;
  if (IS("string")) return v.k == JV_STR;
  if (IS("number")) return jv_is_number(v);
  if (IS("integer")) return v.k == JV_INT;
  if (IS("float")) return v.k == JV_FLOAT;
  if (IS("boolean")) return v.k == JV_BOOL;
  if (IS("true")) return v.k == JV_BOOL && v.b;
  if (IS("false")) return v.k == JV_BOOL && !v.b;
  if (IS("mapping")) return v.k == JV_DICT;
  if (IS("iterable")) return v.k == JV_LIST || v.k == JV_DICT || v.k == JV_STR;
  if (IS("sequence")) return v.k == JV_LIST || v.k == JV_DICT || v.k == JV_STR;
  if (IS("callable")) return v.k == JV_FUNC;
  if (IS("odd") || IS("even")) {
    if (v.k != JV_INT) jctx_fail(c, "test '%s' needs an integer", name);
    return (v.i % 2 != 0) == IS("odd");
  }
  if (IS("divisibleby")) {
    int64_t d = jinja_to_int(c, jarg_or(a, 0, "num", jv_int(1)), 1);
    return d != 0 && v.k == JV_INT && (d == -1 || v.i % d == 0);   /* INT64_MIN % -1 traps */
  }
  if (IS("lower") || IS("upper")) {
    if (v.k != JV_STR) return false;
    for (size_t i = 0; i < v.s.n; i++)
      if (IS("lower") ? isupper((unsigned char)v.s.p[i]) : islower((unsigned char)v.s.p[i])) return false;
    return true;
  }
  jv other = jarg_or(a, 0, NULL, jv_undef());
  if (IS("equalto") || IS("eq") || IS("==") || IS("sameas")) return jv_equal(v, other);
  if (IS("ne") || IS("!=")) return !jv_equal(v, other);
  if (IS("lt") || IS("<") || IS("gt") || IS(">") || IS("le") || IS("<=") || IS("ge") || IS(">=")) {
    int r = jv_compare(&c->h, v, other);
    if (IS("lt") || IS("<")) return r < 0;
    if (IS("gt") || IS(">")) return r > 0;
    if (IS("le") || IS("<=")) return r <= 0;
    return r >= 0;
  }
  if (IS("in")) {
    if (other.k == JV_STR) return v.k == JV_STR && memmem(other.s.p, other.s.n, v.s.p, v.s.n) != NULL;
    if (other.k == JV_DICT) return jdict_get(other.d, v) != NULL;
    if (other.k == JV_LIST)
      for (int i = 0; i < other.l->n; i++)
        if (jv_equal(other.l->v[i], v)) return true;
    return false;
  }
  #undef IS
  jctx_fail(c, "unknown test '%s'", name);
}

/* ---- filters ---- */

/* arguments after the first `skip` positional ones, as a fresh jargs */
static jargs shift_args(jargs *a, int skip) {
  jargs r = *a;
  r.npos = a->npos > skip ? a->npos - skip : 0;
  r.pos = a->npos > skip ? a->pos + skip : NULL;   /* no arguments: pos may be NULL (NULL + 0 is undefined) */
  return r;
}

/* select / reject / selectattr / rejectattr */
static jv select_items(jctx *c, jv in, jargs *a, bool by_attr, bool keep) {
  jlist *items = jinja_iter_items(c, in);
  jv out = jv_list(&c->h, 0);
  jv attr = by_attr ? jarg_or(a, 0, NULL, jv_undef()) : jv_undef();
  int test_at = by_attr ? 1 : 0;
  jv *test = jarg(a, test_at, NULL);
  jargs rest = shift_args(a, test_at + 1);
  for (int i = 0; i < items->n; i++) {
    jv x = by_attr ? jinja_getattr(c, items->v[i], attr) : items->v[i];
    bool ok;
    if (!test) ok = jv_truthy(x);
    else {
      if (test->k != JV_STR) jctx_fail(c, "test name must be a string");
      ok = jinja_test(c, test->s.p, x, &rest);
    }
    if (ok == keep) jlist_push(&c->h, out.l, items->v[i]);
  }
  return out;
}

static int cmp_values(jctx *c, jv x, jv y, bool case_sensitive) {
  if (!case_sensitive && x.k == JV_STR && y.k == JV_STR) {
    x = jinja_change_case(c, x, 1);
    y = jinja_change_case(c, y, 1);
  }
  return jv_compare(&c->h, x, y);
}

typedef struct sort_key { jv attr; bool reverse, case_sensitive; int pair_index; } sort_key;

static int sort_cmp(jctx *c, const sort_key *k, jv p, jv q) {
  jctx_charge(c, 1);
  if (k->pair_index >= 0) { p = p.l->v[k->pair_index]; q = q.l->v[k->pair_index]; }
  else if (k->attr.k != JV_UNDEF) { p = jinja_getattr(c, p, k->attr); q = jinja_getattr(c, q, k->attr); }
  int r = cmp_values(c, p, q, k->case_sensitive);
  return k->reverse ? -r : r;
}

/* stable merge sort; comparisons may fail the render, so no qsort */
static void merge_sort(jctx *c, const sort_key *k, jv *v, jv *tmp, int n) {
  if (n < 2) return;
  int mid = n / 2;
  merge_sort(c, k, v, tmp, mid);
  merge_sort(c, k, v + mid, tmp, n - mid);
  int i = 0, j = mid, o = 0;
  while (i < mid && j < n) tmp[o++] = sort_cmp(c, k, v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < mid) tmp[o++] = v[i++];
  while (j < n) tmp[o++] = v[j++];
  memcpy(v, tmp, (size_t)n * sizeof(jv));
}

static void sort_list(jctx *c, jlist *l, jv attr, bool reverse, bool case_sensitive, int pair_index) {
  sort_key k = { attr, reverse, case_sensitive, pair_index };
  jv *tmp = jalloc(&c->h, (size_t)(l->n + 1) * sizeof(jv));
  merge_sort(c, &k, l->v, tmp, l->n);
}

static jv copy_list(jctx *c, jlist *src) {
  jv out = jv_list(&c->h, src->n);
  for (int i = 0; i < src->n; i++) jlist_push(&c->h, out.l, src->v[i]);
  return out;
}

static jv indent(jctx *c, jv s, jargs *a) {
  jv w = jarg_or(a, 0, "width", jv_int(4));
  bool first = jv_truthy(jarg_or(a, 1, "first", jv_bool(false)));
  bool blank = jv_truthy(jarg_or(a, 2, "blank", jv_bool(false)));
  jbuf pad = { 0 };
  if (w.k == JV_STR) jbuf_put(&c->h, &pad, w.s.p, w.s.n);
  else for (int64_t i = 0; i < jinja_to_int(c, w, 4) && i < 1000; i++) jbuf_put(&c->h, &pad, " ", 1);
  /* jinja2: lines = (s + "\n").splitlines(); the first line is left alone
   * unless `first`; empty lines stay empty unless `blank` */
  jbuf b = { 0 };
  if (first) jbuf_put(&c->h, &b, pad.p ? pad.p : "", pad.n);
  size_t i = 0;
  bool first_line = true;
  while (i < s.s.n) {
    const char *nl = memchr(s.s.p + i, '\n', s.s.n - i);
    size_t e = nl ? (size_t)(nl - s.s.p) : s.s.n;
    if (!first_line) {
      jbuf_put(&c->h, &b, "\n", 1);
      if (e > i || blank) jbuf_put(&c->h, &b, pad.p ? pad.p : "", pad.n);
    }
    jbuf_put(&c->h, &b, s.s.p + i, e - i);
    first_line = false;
    i = e + 1;
    if (!nl) break;
    if (i == s.s.n) {   /* trailing newline: one more, empty, line */
      jbuf_put(&c->h, &b, "\n", 1);
      if (blank) jbuf_put(&c->h, &b, pad.p ? pad.p : "", pad.n);
    }
  }
  return jv_from_buf(&b);
}

static jv escape_html(jctx *c, jv v) {
  jv s = jv_to_str(&c->h, v);
  jbuf b = { 0 };
  for (size_t i = 0; i < s.s.n; i++) {
    switch (s.s.p[i]) {
    case '&': jbuf_puts(&c->h, &b, "&amp;"); break;
    case '<': jbuf_puts(&c->h, &b, "&lt;"); break;
    case '>': jbuf_puts(&c->h, &b, "&gt;"); break;
    case '"': jbuf_puts(&c->h, &b, "&#34;"); break;
    case '\'': jbuf_puts(&c->h, &b, "&#39;"); break;
    default: jbuf_put(&c->h, &b, s.s.p + i, 1);
    }
  }
  return jv_from_buf(&b);
}

jv jinja_filter(jctx *c, const char *name, jv in, jargs *a) {
  jheap *h = &c->h;
  #define IS(s) (!strcmp(name, s))
  if (IS("tojson")) {
    jv ind = jarg_or(a, 0, "indent", jv_none());
    jbuf b = { 0 };
    jv_write_json(h, &b, in, ind.k == JV_INT ? (int)ind.i : -1, jv_truthy(jarg_or(a, -1, "sort_keys", jv_bool(false))));
    return jv_from_buf(&b);
  }
  if (IS("safe")) return in;
  if (IS("string")) return jv_to_str(h, in);
  if (IS("trim")) {
    if (in.k == JV_NONE || in.k == JV_UNDEF) return jv_strref("", 0);
    return jinja_strip(jv_to_str(h, in), jarg(a, 0, "chars"), true, true);
  }
  if (IS("length") || IS("count")) {
    switch (in.k) {
    case JV_STR: {
      int64_t n = 0;
      for (size_t i = 0; i < in.s.n; i++) n += ((unsigned char)in.s.p[i] & 0xC0) != 0x80;
      return jv_int(n);
    }
    case JV_LIST: return jv_int(in.l->n);
    case JV_DICT: return jv_int(in.d->n);
    case JV_UNDEF: return jv_int(0);
    default: jctx_fail(c, "object of type '%s' has no len()", jv_kind_name(in));
    }
  }
  if (IS("items")) return jinja_items(c, in);
  if (IS("list")) return copy_list(c, jinja_iter_items(c, in));
  if (IS("join")) {
    jlist *items = jinja_iter_items(c, in);
    jv *attr = jarg(a, 1, "attribute");
    if (attr) {
      jv mapped = jv_list(h, items->n);
      for (int i = 0; i < items->n; i++) jlist_push(h, mapped.l, jinja_getattr(c, items->v[i], *attr));
      items = mapped.l;
    }
    return jinja_join(c, items, jarg_or(a, 0, "d", jv_strref("", 0)));
  }
  if (IS("upper") || IS("lower") || IS("capitalize") || IS("title"))
    return jinja_change_case(c, jv_to_str(h, in), IS("upper") ? 0 : IS("lower") ? 1 : IS("capitalize") ? 2 : 3);
  if (IS("replace")) {
    jv s = jv_to_str(h, in);
    return jinja_replace(c, s, jv_to_str(h, jarg_or(a, 0, "old", jv_strref("", 0))), jv_to_str(h, jarg_or(a, 1, "new", jv_strref("", 0))),
                   jinja_to_int(c, jarg_or(a, 2, "count", jv_int(-1)), -1));
  }
  if (IS("default") || IS("d")) {
    bool boolean = jv_truthy(jarg_or(a, 1, "boolean", jv_bool(false)));
    if (in.k == JV_UNDEF || (boolean && !jv_truthy(in))) return jarg_or(a, 0, "default_value", jv_strref("", 0));
    return in;
  }
  if (IS("first") || IS("last")) {
    jlist *items = jinja_iter_items(c, in);
    if (items->n == 0) return jv_undef();
    return items->v[IS("first") ? 0 : items->n - 1];
  }
  if (IS("select")) return select_items(c, in, a, false, true);
  if (IS("reject")) return select_items(c, in, a, false, false);
  if (IS("selectattr")) return select_items(c, in, a, true, true);
  if (IS("rejectattr")) return select_items(c, in, a, true, false);
  if (IS("map")) {
    jlist *items = jinja_iter_items(c, in);
    jv out = jv_list(h, items->n);
    jv *attr = jarg(a, -1, "attribute");
    jv *filt = jarg(a, 0, NULL);
    jargs rest = shift_args(a, 1);
    for (int i = 0; i < items->n; i++) {
      jv x;
      if (attr) {
        x = jinja_getattr(c, items->v[i], *attr);
        if (x.k == JV_UNDEF) x = jarg_or(a, -1, "default", x);
      } else if (filt && filt->k == JV_STR) {
        x = jinja_filter(c, filt->s.p, items->v[i], &rest);
      } else {
        jctx_fail(c, "map needs a filter name or attribute=");
      }
      jlist_push(h, out.l, x);
    }
    return out;
  }
  if (IS("unique")) {
    jlist *items = jinja_iter_items(c, in);
    jv out = jv_list(h, 0);
    for (int i = 0; i < items->n; i++) {
      bool seen = false;
      jctx_charge(c, out.l->n);
      for (int k = 0; k < out.l->n && !seen; k++) seen = jv_equal(out.l->v[k], items->v[i]) && out.l->v[k].k == items->v[i].k;
      if (!seen) jlist_push(h, out.l, items->v[i]);
    }
    return out;
  }
  if (IS("sort")) {
    jv out = copy_list(c, jinja_iter_items(c, in));
    sort_list(c, out.l, jarg_or(a, 2, "attribute", jv_undef()), jv_truthy(jarg_or(a, 0, "reverse", jv_bool(false))),
              jv_truthy(jarg_or(a, 1, "case_sensitive", jv_bool(false))), -1);
    return out;
  }
  if (IS("dictsort")) {
    jv pairs = jinja_items(c, in);
    jv by = jarg_or(a, 1, "by", jv_strref("key", 3));
    bool by_value = by.k == JV_STR && by.s.n == 5 && !memcmp(by.s.p, "value", 5);
    sort_list(c, pairs.l, jv_undef(), jv_truthy(jarg_or(a, 2, "reverse", jv_bool(false))),
              jv_truthy(jarg_or(a, 0, "case_sensitive", jv_bool(false))), by_value ? 1 : 0);
    return pairs;
  }
  if (IS("reverse")) {
    if (in.k == JV_STR) {
      char *p = jalloc(h, in.s.n + 1);
      for (size_t i = 0; i < in.s.n; i++) p[i] = in.s.p[in.s.n - 1 - i];
      return jv_strref(p, in.s.n);
    }
    jlist *items = jinja_iter_items(c, in);
    jv out = jv_list(h, items->n);
    for (int i = items->n - 1; i >= 0; i--) jlist_push(h, out.l, items->v[i]);
    return out;
  }
  if (IS("int")) return jv_int(jinja_to_int(c, in, jinja_to_int(c, jarg_or(a, 0, "default", jv_int(0)), 0)));
  if (IS("float")) {
    if (jv_is_number(in)) return jv_float(jv_num(in));
    if (in.k == JV_STR) {
      jv s = jinja_strip(in, NULL, true, true);
      char tmp[64];
      size_t n = s.s.n < 63 ? s.s.n : 63;
      memcpy(tmp, s.s.p, n);
      tmp[n] = 0;
      char *end;
      double d = strtod(tmp, &end);
      if (end != tmp && !*end) return jv_float(d);
    }
    return jarg_or(a, 0, "default", jv_float(0));
  }
  if (IS("abs")) {
    if (in.k == JV_INT) {
      if (in.i == INT64_MIN) jctx_fail(c, "abs(%lld) does not fit in a 64-bit integer", (long long)in.i);
      return jv_int(in.i < 0 ? -in.i : in.i);
    }
    if (jv_is_number(in)) return jv_float(fabs(jv_num(in)));
    jctx_fail(c, "bad operand type for abs(): %s", jv_kind_name(in));
  }
  if (IS("round")) {
    int64_t prec = jinja_to_int(c, jarg_or(a, 0, "precision", jv_int(0)), 0);
    jv method = jarg_or(a, 1, "method", jv_strref("common", 6));
    double m = pow(10, (double)prec), x = jv_num(in) * m;
    double r = method.k == JV_STR && method.s.n == 4 && !memcmp(method.s.p, "ceil", 4) ? ceil(x)
             : method.k == JV_STR && method.s.n == 5 && !memcmp(method.s.p, "floor", 5) ? floor(x) : round(x);
    return jv_float(r / m);
  }
  if (IS("sum") || IS("min") || IS("max")) {
    jlist *items = jinja_iter_items(c, in);
    if (IS("sum")) {
      jv acc = jarg_or(a, 1, "start", jv_int(0));
      jv *attr = jarg(a, 0, "attribute");
      for (int i = 0; i < items->n; i++) {
        jv x = attr ? jinja_getattr(c, items->v[i], *attr) : items->v[i];
        if (!jv_is_number(x) || !jv_is_number(acc)) jctx_fail(c, "sum needs numbers");
        if (acc.k == JV_FLOAT || x.k == JV_FLOAT) { acc = jv_float(jv_num(acc) + jv_num(x)); continue; }
        int64_t s0 = acc.k == JV_BOOL ? acc.b : acc.i, s1 = x.k == JV_BOOL ? x.b : x.i, sum;
        if (tg_add_overflow_i64(s0, s1, &sum)) jctx_fail(c, "sum: integer overflow (%lld + %lld does not fit in 64 bits)", (long long)s0, (long long)s1);
        acc = jv_int(sum);
      }
      return acc;
    }
    if (items->n == 0) return jv_undef();
    jv best = items->v[0];
    for (int i = 1; i < items->n; i++) {
      int r = cmp_values(c, items->v[i], best, false);
      if (IS("min") ? r < 0 : r > 0) best = items->v[i];
    }
    return best;
  }
  if (IS("indent")) return indent(c, jv_to_str(h, in), a);
  if (IS("escape") || IS("e") || IS("forceescape")) return escape_html(c, in);
  if (IS("wordcount")) return jv_int(jinja_split(c, jv_to_str(h, in), NULL, -1).l->n);
  if (IS("batch")) {
    int64_t n = jinja_to_int(c, jarg_or(a, 0, "linecount", jv_int(1)), 1);
    if (n <= 0) jctx_fail(c, "batch size must be positive");
    jlist *items = jinja_iter_items(c, in);
    jv out = jv_list(h, 0), cur = jv_undef();
    for (int i = 0; i < items->n; i++) {
      if (i % n == 0) { cur = jv_list(h, (int)(n < items->n ? n : items->n)); jlist_push(h, out.l, cur); }
      jlist_push(h, cur.l, items->v[i]);
    }
    return out;
  }
  #undef IS
  jctx_fail(c, "unknown filter '%s'", name);
}
