/* jinja_builtins.c: filters, tests, Python methods on str/list/dict, and
 * the globals chat templates call (range, namespace, raise_exception,
 * strftime_now, joiner). Where jinja2 and minja differ, minja (llama.cpp's
 * renderer) wins: `map` returns a list, `safe` returns the string unchanged,
 * `None | trim` is "". */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "chat/jinja_eval.h"

jv *jarg(jargs *a, int i, const char *kw) {
  if (i >= 0 && i < a->npos) return &a->pos[i];
  if (kw)
    for (int k = 0; k < a->nkw; k++)
      if (!strcmp(a->kwn[k], kw)) return &a->kwv[k];
  return NULL;
}

jv jarg_or(jargs *a, int i, const char *kw, jv dflt) {
  jv *v = jarg(a, i, kw);
  return v ? *v : dflt;
}

static jv str_arg(jctx *c, jargs *a, int i, const char *kw, const char *what) {
  jv *v = jarg(a, i, kw);
  if (!v || v->k != JV_STR) jctx_fail(c, "%s expects a string argument", what);
  return *v;
}

static jv mkstr(jbuf *b) { return jv_strref(b->p ? b->p : "", b->n); }

static bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* strip chars (whitespace when chars is NULL) from the left and/or right */
static jv strip(jv s, const jv *chars, bool left, bool right) {
  size_t a = 0, b = s.s.n;
  #define STRIPPABLE(ch) (chars && chars->k == JV_STR ? memchr(chars->s.p, (ch), chars->s.n) != NULL : is_space(ch))
  if (left) while (a < b && STRIPPABLE(s.s.p[a])) a++;
  if (right) while (b > a && STRIPPABLE(s.s.p[b - 1])) b--;
  #undef STRIPPABLE
  return jv_strref(s.s.p + a, b - a);
}

static jv change_case(jctx *c, jv s, int mode) {   /* 0 upper, 1 lower, 2 capitalize, 3 title */
  char *p = jalloc(&c->h, s.s.n + 1);
  bool prev_alpha = false;
  for (size_t i = 0; i < s.s.n; i++) {
    unsigned char ch = (unsigned char)s.s.p[i];
    int r = ch;
    switch (mode) {
    case 0: r = toupper(ch); break;
    case 1: r = tolower(ch); break;
    case 2: r = i == 0 ? toupper(ch) : tolower(ch); break;
    case 3: r = prev_alpha ? tolower(ch) : toupper(ch); prev_alpha = isalpha(ch) || ch >= 0x80; break;
    }
    p[i] = (char)r;
  }
  return jv_strref(p, s.s.n);
}

static jv replace(jctx *c, jv s, jv old, jv new_, int64_t count) {
  if (old.s.n == 0) return s;
  jbuf b = { 0 };
  size_t i = 0;
  for (int64_t done = 0; i < s.s.n && (count < 0 || done < count); done++) {
    const char *hit = memmem(s.s.p + i, s.s.n - i, old.s.p, old.s.n);
    if (!hit) break;
    size_t k = (size_t)(hit - s.s.p);
    jbuf_put(&c->h, &b, s.s.p + i, k - i);
    jbuf_put(&c->h, &b, new_.s.p, new_.s.n);
    i = k + old.s.n;
  }
  jbuf_put(&c->h, &b, s.s.p + i, s.s.n - i);
  return mkstr(&b);
}

static jv split(jctx *c, jv s, const jv *sep, int64_t maxsplit) {
  jheap *h = &c->h;
  jv out = jv_list(h, 0);
  if (!sep || sep->k == JV_NONE || sep->k == JV_UNDEF) {
    size_t i = 0;
    int64_t n = 0;
    for (;;) {
      while (i < s.s.n && is_space(s.s.p[i])) i++;
      if (i >= s.s.n) break;
      if (maxsplit >= 0 && n == maxsplit) {
        size_t e = s.s.n;
        while (e > i && is_space(s.s.p[e - 1])) e--;
        jlist_push(h, out.l, jv_strref(s.s.p + i, e - i));
        break;
      }
      size_t k = i;
      while (k < s.s.n && !is_space(s.s.p[k])) k++;
      jlist_push(h, out.l, jv_strref(s.s.p + i, k - i));
      n++;
      i = k;
    }
    return out;
  }
  if (sep->k != JV_STR || sep->s.n == 0) jctx_fail(c, "split: empty or non-string separator");
  size_t i = 0;
  for (int64_t n = 0; maxsplit < 0 || n < maxsplit; n++) {
    const char *hit = memmem(s.s.p + i, s.s.n - i, sep->s.p, sep->s.n);
    if (!hit) break;
    jlist_push(h, out.l, jv_strref(s.s.p + i, (size_t)(hit - s.s.p) - i));
    i = (size_t)(hit - s.s.p) + sep->s.n;
  }
  jlist_push(h, out.l, jv_strref(s.s.p + i, s.s.n - i));
  return out;
}

static bool affix_match(jv s, jv x, bool prefix) {
  if (x.k == JV_LIST) {
    for (int i = 0; i < x.l->n; i++)
      if (affix_match(s, x.l->v[i], prefix)) return true;
    return false;
  }
  if (x.k != JV_STR || x.s.n > s.s.n) return false;
  return !memcmp(prefix ? s.s.p : s.s.p + s.s.n - x.s.n, x.s.p, x.s.n);
}

static jv join(jctx *c, jlist *items, jv sep) {
  jbuf b = { 0 };
  for (int i = 0; i < items->n; i++) {
    if (i && sep.k == JV_STR) jbuf_put(&c->h, &b, sep.s.p, sep.s.n);
    jv_write_str(&c->h, &b, items->v[i]);
  }
  return mkstr(&b);
}

static jv items_of(jctx *c, jv d) {
  if (d.k == JV_UNDEF) return jv_list(&c->h, 0);
  if (d.k != JV_DICT) jctx_fail(c, "Can only get item pairs from a mapping");
  jv out = jv_list(&c->h, d.d->n);
  for (int i = 0; i < d.d->n; i++) {
    jv pair = jv_list(&c->h, 2);
    pair.l->tuple = true;
    jlist_push(&c->h, pair.l, d.d->keys[i]);
    jlist_push(&c->h, pair.l, d.d->vals[i]);
    jlist_push(&c->h, out.l, pair);
  }
  return out;
}

static int64_t to_int(jctx *c, jv v, int64_t dflt) {
  (void)c;
  switch (v.k) {
  case JV_INT: return v.i;
  case JV_BOOL: return v.b;
  case JV_FLOAT: return isfinite(v.f) ? (int64_t)v.f : dflt;
  case JV_STR: {
    char tmp[64];
    size_t n = v.s.n < 63 ? v.s.n : 63;
    memcpy(tmp, v.s.p, n);
    tmp[n] = 0;
    char *end;
    long long r = strtoll(tmp, &end, 10);
    while (*end && is_space(*end)) end++;
    if (end != tmp && !*end) return r;
    double d = strtod(tmp, &end);
    while (*end && is_space(*end)) end++;
    return end != tmp && !*end && isfinite(d) ? (int64_t)d : dflt;
  }
  default: return dflt;
  }
}

/* a private copy of a frozen (caller-owned) container, for mutating methods */
static jv thaw(jctx *c, jv obj) {
  if (obj.k == JV_LIST && obj.l->frozen) {
    jv copy = jv_list(&c->h, obj.l->n);
    for (int i = 0; i < obj.l->n; i++) jlist_push(&c->h, copy.l, obj.l->v[i]);
    return copy;
  }
  if (obj.k == JV_DICT && obj.d->frozen) {
    jv copy = jv_dict(&c->h);
    for (int i = 0; i < obj.d->n; i++) jdict_set(&c->h, copy.d, obj.d->keys[i], obj.d->vals[i]);
    return copy;
  }
  return obj;
}

jv jinja_percent_format(jctx *c, jv fmt, jv args) {
  jheap *h = &c->h;
  jlist *items = args.k == JV_LIST && args.l->tuple ? args.l : NULL;
  int next = 0;
  jbuf b = { 0 };
  for (size_t i = 0; i < fmt.s.n; i++) {
    char ch = fmt.s.p[i];
    if (ch != '%') { jbuf_put(h, &b, &ch, 1); continue; }
    size_t start = i++;
    while (i < fmt.s.n && strchr("-+ #0123456789.", fmt.s.p[i])) i++;
    if (i >= fmt.s.n) jctx_fail(c, "incomplete format");
    char conv = fmt.s.p[i];
    if (conv == '%') { jbuf_put(h, &b, "%", 1); continue; }
    jv v;
    if (items) {
      if (next >= items->n) jctx_fail(c, "not enough arguments for format string");
      v = items->v[next++];
    } else {
      if (next++) jctx_fail(c, "not enough arguments for format string");
      v = args;
    }
    char spec[32];
    size_t flen = i - start;
    if (flen > 20) jctx_fail(c, "format specifier too long");
    memcpy(spec, fmt.s.p + start, flen);
    switch (conv) {
    case 's': case 'r': {
      jbuf t = { 0 };
      if (conv == 's') jv_write_str(h, &t, v);
      else jv_write_repr(h, &t, v);
      spec[flen] = 's';
      spec[flen + 1] = 0;
      jbuf_printf(h, &b, spec, t.p ? t.p : "");
      break;
    }
    case 'd': case 'i': case 'x': case 'X':
      if (!jv_is_number(v)) jctx_fail(c, "%%%c format: a number is required, not %s", conv, jv_kind_name(v));
      memcpy(spec + flen, "ll", 2);
      spec[flen + 2] = conv == 'i' ? 'd' : conv;
      spec[flen + 3] = 0;
      jbuf_printf(h, &b, spec, (long long)jv_num(v));
      break;
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
      if (!jv_is_number(v)) jctx_fail(c, "%%%c format: a number is required, not %s", conv, jv_kind_name(v));
      spec[flen] = conv;
      spec[flen + 1] = 0;
      jbuf_printf(h, &b, spec, jv_num(v));
      break;
    default: jctx_fail(c, "unsupported format character '%c'", conv);
    }
  }
  if (items && next < items->n) jctx_fail(c, "not all arguments converted during string formatting");
  return mkstr(&b);
}

/* str.format: {} {0} {name}, {{ and }}; a format spec after ':' is ignored */
static jv str_format(jctx *c, jv fmt, jargs *a) {
  jheap *h = &c->h;
  jbuf b = { 0 };
  int auto_index = 0;
  for (size_t i = 0; i < fmt.s.n; i++) {
    char ch = fmt.s.p[i];
    if ((ch == '{' || ch == '}') && i + 1 < fmt.s.n && fmt.s.p[i + 1] == ch) { jbuf_put(h, &b, &ch, 1); i++; continue; }
    if (ch != '{') { jbuf_put(h, &b, &ch, 1); continue; }
    const char *close = memchr(fmt.s.p + i, '}', fmt.s.n - i);
    if (!close) jctx_fail(c, "single '{' encountered in format string");
    size_t end = (size_t)(close - fmt.s.p), k = i + 1;
    size_t name_end = k;
    while (name_end < end && fmt.s.p[name_end] != ':' && fmt.s.p[name_end] != '!') name_end++;
    jv *v;
    char name[64];
    size_t nl = name_end - k < sizeof name - 1 ? name_end - k : sizeof name - 1;
    memcpy(name, fmt.s.p + k, nl);
    name[nl] = 0;
    if (nl == 0) v = jarg(a, auto_index++, NULL);
    else if (name[0] >= '0' && name[0] <= '9') v = jarg(a, atoi(name), NULL);
    else v = jarg(a, -1, name);
    if (!v) jctx_fail(c, "format: no argument for {%s}", name);
    jv_write_str(h, &b, *v);
    i = end;
  }
  return mkstr(&b);
}

jv jinja_method(jctx *c, jv obj, const char *name, jargs *a, bool *found) {
  jheap *h = &c->h;
  *found = true;
  static const char *const mutating[] = { "append", "extend", "pop", "insert", "update", "setdefault", NULL };
  for (int i = 0; mutating[i]; i++)
    if (!strcmp(name, mutating[i])) obj = thaw(c, obj);
  #define IS(s) (!strcmp(name, s))
  if (obj.k == JV_STR) {
    if (IS("strip")) return strip(obj, jarg(a, 0, "chars"), true, true);
    if (IS("lstrip")) return strip(obj, jarg(a, 0, "chars"), true, false);
    if (IS("rstrip")) return strip(obj, jarg(a, 0, "chars"), false, true);
    if (IS("upper")) return change_case(c, obj, 0);
    if (IS("lower")) return change_case(c, obj, 1);
    if (IS("capitalize")) return change_case(c, obj, 2);
    if (IS("title")) return change_case(c, obj, 3);
    if (IS("split")) return split(c, obj, jarg(a, 0, "sep"), to_int(c, jarg_or(a, 1, "maxsplit", jv_int(-1)), -1));
    if (IS("startswith")) return jv_bool(affix_match(obj, jarg_or(a, 0, "prefix", jv_none()), true));
    if (IS("endswith")) return jv_bool(affix_match(obj, jarg_or(a, 0, "suffix", jv_none()), false));
    if (IS("replace"))
      return replace(c, obj, str_arg(c, a, 0, "old", "replace"), str_arg(c, a, 1, "new", "replace"),
                     to_int(c, jarg_or(a, 2, "count", jv_int(-1)), -1));
    if (IS("join")) return join(c, jinja_iter_items(c, jarg_or(a, 0, "iterable", jv_none())), obj);
    if (IS("format")) return str_format(c, obj, a);
    if (IS("find") || IS("count")) {
      jv sub = str_arg(c, a, 0, "sub", name);
      int64_t n = 0;
      for (size_t i = 0; i + sub.s.n <= obj.s.n;) {
        if (!memcmp(obj.s.p + i, sub.s.p, sub.s.n)) {
          if (IS("find")) return jv_int((int64_t)i);
          n++;
          i += sub.s.n ? sub.s.n : 1;
        } else {
          i++;
        }
      }
      return jv_int(IS("find") ? -1 : n);
    }
    if (IS("isspace") || IS("isdigit") || IS("isalpha") || IS("isalnum") || IS("islower") || IS("isupper")) {
      if (obj.s.n == 0) return jv_bool(false);
      for (size_t i = 0; i < obj.s.n; i++) {
        int ch = (unsigned char)obj.s.p[i];
        bool ok = IS("isspace") ? is_space((char)ch) : IS("isdigit") ? isdigit(ch) : IS("isalpha") ? isalpha(ch)
                : IS("isalnum") ? isalnum(ch) : IS("islower") ? !isupper(ch) : !islower(ch);
        if (!ok) return jv_bool(false);
      }
      return jv_bool(true);
    }
  } else if (obj.k == JV_DICT) {
    if (IS("items")) return items_of(c, obj);
    if (IS("keys") || IS("values")) {
      jv out = jv_list(h, obj.d->n);
      for (int i = 0; i < obj.d->n; i++) jlist_push(h, out.l, IS("keys") ? obj.d->keys[i] : obj.d->vals[i]);
      return out;
    }
    if (IS("get")) {
      jv *v = jdict_get(obj.d, jarg_or(a, 0, "key", jv_none()));
      return v ? *v : jarg_or(a, 1, "default", jv_none());
    }
    if (IS("pop")) {
      jv *key = jarg(a, 0, "key");
      if (!key) jctx_fail(c, "pop expected at least 1 argument, got 0");
      jv *v = jdict_get(obj.d, *key);
      if (!v) {
        jv *dflt = jarg(a, 1, "default");
        if (dflt) return *dflt;
        jbuf b = { 0 };
        jv_write_repr(h, &b, *key);
        jctx_fail(c, "KeyError: %s", b.p);
      }
      jv r = *v;
      jdict_del(obj.d, *key);
      return r;
    }
    if (IS("update")) {
      jv other = jarg_or(a, 0, NULL, jv_undef());
      if (other.k == JV_DICT)
        for (int i = 0; i < other.d->n; i++) jdict_set(h, obj.d, other.d->keys[i], other.d->vals[i]);
      for (int i = 0; i < a->nkw; i++) jdict_sets(h, obj.d, a->kwn[i], a->kwv[i]);
      return jv_none();
    }
    if (IS("setdefault")) {
      jv key = jarg_or(a, 0, "key", jv_none());
      jv *v = jdict_get(obj.d, key);
      if (v) return *v;
      jv d = jarg_or(a, 1, "default", jv_none());
      jdict_set(h, obj.d, key, d);
      return d;
    }
  } else if (obj.k == JV_LIST) {
    if (IS("append")) { jlist_push(h, obj.l, jarg_or(a, 0, "object", jv_none())); return jv_none(); }
    if (IS("extend")) {
      jlist *it = jinja_iter_items(c, jarg_or(a, 0, "iterable", jv_none()));
      int n = it->n;
      for (int i = 0; i < n; i++) jlist_push(h, obj.l, it->v[i]);
      return jv_none();
    }
    if (IS("pop")) {
      if (obj.l->n == 0) jctx_fail(c, "pop from empty list");
      int64_t i = to_int(c, jarg_or(a, 0, "index", jv_int(-1)), -1);
      if (i < 0) i += obj.l->n;
      if (i < 0 || i >= obj.l->n) jctx_fail(c, "pop index out of range");
      jv r = obj.l->v[i];
      memmove(obj.l->v + i, obj.l->v + i + 1, (size_t)(obj.l->n - i - 1) * sizeof(jv));
      obj.l->n--;
      return r;
    }
    if (IS("insert")) {
      int64_t i = to_int(c, jarg_or(a, 0, "index", jv_int(0)), 0);
      jlist_push(h, obj.l, jv_none());
      int n = obj.l->n - 1;
      if (i < 0) i += n;
      if (i < 0) i = 0;
      if (i > n) i = n;
      memmove(obj.l->v + i + 1, obj.l->v + i, (size_t)(n - i) * sizeof(jv));
      obj.l->v[i] = jarg_or(a, 1, "object", jv_none());
      return jv_none();
    }
    if (IS("index") || IS("count")) {
      jv x = jarg_or(a, 0, "value", jv_none());
      int64_t n = 0;
      for (int i = 0; i < obj.l->n; i++)
        if (jv_equal(obj.l->v[i], x)) {
          if (IS("index")) return jv_int(i);
          n++;
        }
      if (IS("index")) jctx_fail(c, "value is not in list");
      return jv_int(n);
    }
  }
  #undef IS
  *found = false;
  return jv_undef();
}

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
    int64_t d = to_int(c, jarg_or(a, 0, "num", jv_int(1)), 1);
    return d != 0 && v.k == JV_INT && v.i % d == 0;
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
  r.pos = a->pos + (a->npos > skip ? skip : a->npos);
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
    x = change_case(c, x, 1);
    y = change_case(c, y, 1);
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
  else for (int64_t i = 0; i < to_int(c, w, 4) && i < 1000; i++) jbuf_put(&c->h, &pad, " ", 1);
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
  return mkstr(&b);
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
  return mkstr(&b);
}

jv jinja_filter(jctx *c, const char *name, jv in, jargs *a) {
  jheap *h = &c->h;
  #define IS(s) (!strcmp(name, s))
  if (IS("tojson")) {
    jv ind = jarg_or(a, 0, "indent", jv_none());
    jbuf b = { 0 };
    jv_write_json(h, &b, in, ind.k == JV_INT ? (int)ind.i : -1, jv_truthy(jarg_or(a, -1, "sort_keys", jv_bool(false))));
    return mkstr(&b);
  }
  if (IS("safe")) return in;
  if (IS("string")) return jv_to_str(h, in);
  if (IS("trim")) {
    if (in.k == JV_NONE || in.k == JV_UNDEF) return jv_strref("", 0);
    return strip(jv_to_str(h, in), jarg(a, 0, "chars"), true, true);
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
  if (IS("items")) return items_of(c, in);
  if (IS("list")) return copy_list(c, jinja_iter_items(c, in));
  if (IS("join")) {
    jlist *items = jinja_iter_items(c, in);
    jv *attr = jarg(a, 1, "attribute");
    if (attr) {
      jv mapped = jv_list(h, items->n);
      for (int i = 0; i < items->n; i++) jlist_push(h, mapped.l, jinja_getattr(c, items->v[i], *attr));
      items = mapped.l;
    }
    return join(c, items, jarg_or(a, 0, "d", jv_strref("", 0)));
  }
  if (IS("upper") || IS("lower") || IS("capitalize") || IS("title"))
    return change_case(c, jv_to_str(h, in), IS("upper") ? 0 : IS("lower") ? 1 : IS("capitalize") ? 2 : 3);
  if (IS("replace")) {
    jv s = jv_to_str(h, in);
    return replace(c, s, jv_to_str(h, jarg_or(a, 0, "old", jv_strref("", 0))), jv_to_str(h, jarg_or(a, 1, "new", jv_strref("", 0))),
                   to_int(c, jarg_or(a, 2, "count", jv_int(-1)), -1));
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
    jv pairs = items_of(c, in);
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
  if (IS("int")) return jv_int(to_int(c, in, to_int(c, jarg_or(a, 0, "default", jv_int(0)), 0)));
  if (IS("float")) {
    if (jv_is_number(in)) return jv_float(jv_num(in));
    if (in.k == JV_STR) {
      jv s = strip(in, NULL, true, true);
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
    if (in.k == JV_INT) return jv_int(in.i < 0 ? -in.i : in.i);
    if (jv_is_number(in)) return jv_float(fabs(jv_num(in)));
    jctx_fail(c, "bad operand type for abs(): %s", jv_kind_name(in));
  }
  if (IS("round")) {
    int64_t prec = to_int(c, jarg_or(a, 0, "precision", jv_int(0)), 0);
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
        acc = acc.k == JV_FLOAT || x.k == JV_FLOAT ? jv_float(jv_num(acc) + jv_num(x)) : jv_int((int64_t)jv_num(acc) + (x.k == JV_BOOL ? x.b : x.i));
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
  if (IS("wordcount")) return jv_int(split(c, jv_to_str(h, in), NULL, -1).l->n);
  if (IS("batch")) {
    int64_t n = to_int(c, jarg_or(a, 0, "linecount", jv_int(1)), 1);
    if (n <= 0) jctx_fail(c, "batch size must be positive");
    jlist *items = jinja_iter_items(c, in);
    jv out = jv_list(h, 0), cur = jv_undef();
    for (int i = 0; i < items->n; i++) {
      if (i % n == 0) { cur = jv_list(h, (int)n); jlist_push(h, out.l, cur); }
      jlist_push(h, cur.l, items->v[i]);
    }
    return out;
  }
  #undef IS
  jctx_fail(c, "unknown filter '%s'", name);
}

/* ---- globals ---- */

static jv g_range(jctx *c, jargs *a) {
  int64_t start = 0, stop, step = 1;
  for (int i = 0; i < a->npos; i++)
    if (a->pos[i].k != JV_INT) jctx_fail(c, "range() arguments must be integers");
  if (a->npos == 1) stop = a->pos[0].i;
  else if (a->npos >= 2) {
    start = a->pos[0].i;
    stop = a->pos[1].i;
    if (a->npos >= 3) step = a->pos[2].i;
  } else {
    jctx_fail(c, "range expected at least 1 argument");
  }
  if (step == 0) jctx_fail(c, "range() step must not be zero");
  double count = ceil(((double)stop - (double)start) / (double)step);
  if (count < 0) count = 0;
  if (count > (double)c->lim.max_range)
    jctx_fail(c, "range() of %.0f items exceeds the limit of %lld", count, (long long)c->lim.max_range);
  jv out = jv_list(&c->h, (int)count);
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) jlist_push(&c->h, out.l, jv_int(i));
  return out;
}

static jv g_namespace(jctx *c, jargs *a) {
  jv d = jv_dict(&c->h);
  d.d->ns = true;
  if (a->npos > 0 && a->pos[0].k == JV_DICT)
    for (int i = 0; i < a->pos[0].d->n; i++) jdict_set(&c->h, d.d, a->pos[0].d->keys[i], a->pos[0].d->vals[i]);
  for (int i = 0; i < a->nkw; i++) jdict_sets(&c->h, d.d, a->kwn[i], a->kwv[i]);
  return d;
}

static jv g_dict(jctx *c, jargs *a) {
  jv d = g_namespace(c, a);
  d.d->ns = false;
  return d;
}

/* the message alone, so a caller can show the template's own words */
static jv g_raise_exception(jctx *c, jargs *a) {
  jv msg = jv_to_str(&c->h, jarg_or(a, 0, "message", jv_strref("raise_exception called", 22)));
  jfail(&c->err, "%.*s", (int)(msg.s.n < 900 ? msg.s.n : 900), msg.s.p);
}

static jv g_strftime_now(jctx *c, jargs *a) {
  jv fmt = jarg_or(a, 0, "format", jv_strref("%Y-%m-%d", 8));
  if (fmt.k != JV_STR) jctx_fail(c, "strftime_now expects a format string");
  char f[256], out[512];
  size_t n = fmt.s.n < sizeof f - 1 ? fmt.s.n : sizeof f - 1;
  memcpy(f, fmt.s.p, n);
  f[n] = 0;
  time_t t = c->now ? (time_t)c->now : time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t k = strftime(out, sizeof out, f, &tm);
  return jv_strn(&c->h, out, k);
}

static jv g_joiner(jctx *c, jargs *a) {
  jfunc *f = jalloc(&c->h, sizeof *f);
  f->kind = JF_JOINER;
  f->name = "joiner";
  f->state = jv_to_str(&c->h, jarg_or(a, 0, "sep", jv_strref(", ", 2)));
  return (jv){ .k = JV_FUNC, .fn = f };
}

void jinja_add_globals(jctx *c, jdict *globals) {
  static const struct { const char *name; jbuiltin_fn fn; } table[] = {
    { "range", g_range }, { "namespace", g_namespace }, { "dict", g_dict },
    { "raise_exception", g_raise_exception }, { "strftime_now", g_strftime_now }, { "joiner", g_joiner },
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    jfunc *f = jalloc(&c->h, sizeof *f);
    f->kind = JF_BUILTIN;
    f->name = table[i].name;
    f->fn = table[i].fn;
    jdict_sets(&c->h, globals, table[i].name, (jv){ .k = JV_FUNC, .fn = f });
  }
}
