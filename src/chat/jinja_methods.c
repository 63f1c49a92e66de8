/* jinja_methods.c: Python methods on str, list and dict values
 * (`s.strip()`, `d.items()`, `l.append(x)`), string formatting (`%` and
 * str.format), and the string helpers the filters share. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja_eval.h"
#include "util/util.h"

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


static bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* strip chars (whitespace when chars is NULL) from the left and/or right */
jv jinja_strip(jv s, const jv *chars, bool left, bool right) {
  size_t a = 0, b = s.s.n;
  #define STRIPPABLE(ch) (chars && chars->k == JV_STR ? memchr(chars->s.p, (ch), chars->s.n) != NULL : is_space(ch))
  if (left) while (a < b && STRIPPABLE(s.s.p[a])) a++;
  if (right) while (b > a && STRIPPABLE(s.s.p[b - 1])) b--;
  #undef STRIPPABLE
  return jv_strref(s.s.p + a, b - a);
}

jv jinja_change_case(jctx *c, jv s, int mode) {   /* 0 upper, 1 lower, 2 capitalize, 3 title */
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

jv jinja_replace(jctx *c, jv s, jv old, jv new_, int64_t count) {
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
  return jv_from_buf(&b);
}

jv jinja_split(jctx *c, jv s, const jv *sep, int64_t maxsplit) {
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

jv jinja_join(jctx *c, jlist *items, jv sep) {
  jbuf b = { 0 };
  for (int i = 0; i < items->n; i++) {
    if (i && sep.k == JV_STR) jbuf_put(&c->h, &b, sep.s.p, sep.s.n);
    jv_write_str(&c->h, &b, items->v[i]);
  }
  return jv_from_buf(&b);
}

jv jinja_items(jctx *c, jv d) {
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

/* a float that has no 64-bit integer value: NaN gives the default (Python's
 * ValueError, which Jinja's int filter catches), infinities and magnitudes
 * from 2^63 up a template error (Python's would be a bigint or OverflowError) */
static int64_t float_to_int(jctx *c, double d, int64_t dflt) {
  int64_t r;
  if (isnan(d)) return dflt;
  if (!tg_f64_to_i64(d, &r)) jctx_fail(c, "cannot convert %g to an integer: it does not fit in 64 bits", d);
  return r;
}

int64_t jinja_to_int(jctx *c, jv v, int64_t dflt) {
  switch (v.k) {
  case JV_INT: return v.i;
  case JV_BOOL: return v.b;
  case JV_FLOAT: return float_to_int(c, v.f, dflt);
  case JV_STR: {
    char tmp[64];
    size_t n = v.s.n < 63 ? v.s.n : 63;
    memcpy(tmp, v.s.p, n);
    tmp[n] = 0;
    char *end;
    errno = 0;
    long long r = strtoll(tmp, &end, 10);
    bool range = errno == ERANGE;
    while (*end && is_space(*end)) end++;
    if (end != tmp && !*end) {
      if (range) jctx_fail(c, "cannot convert '%s' to an integer: it does not fit in 64 bits", tmp);
      return r;
    }
    double d = strtod(tmp, &end);
    while (*end && is_space(*end)) end++;
    return end != tmp && !*end ? float_to_int(c, d, dflt) : dflt;
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
    for (size_t k = start + 1, run = 0; k < i; k++)   /* a width or precision of 10^4 or more: an output bomb */
      if ((run = fmt.s.p[k] >= '0' && fmt.s.p[k] <= '9' ? run + 1 : 0) > 4) jctx_fail(c, "format width or precision too large");
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
      jbuf_printf(h, &b, spec, (long long)jinja_to_int(c, v, 0));
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
  return jv_from_buf(&b);
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
  return jv_from_buf(&b);
}

jv jinja_method(jctx *c, jv obj, const char *name, jargs *a, bool *found) {
  jheap *h = &c->h;
  *found = true;
  static const char *const mutating[] = { "append", "extend", "pop", "insert", "update", "setdefault", NULL };
  for (int i = 0; mutating[i]; i++)
    if (!strcmp(name, mutating[i])) obj = thaw(c, obj);
  #define IS(s) (!strcmp(name, s))
  if (obj.k == JV_STR) {
    if (IS("strip")) return jinja_strip(obj, jarg(a, 0, "chars"), true, true);
    if (IS("lstrip")) return jinja_strip(obj, jarg(a, 0, "chars"), true, false);
    if (IS("rstrip")) return jinja_strip(obj, jarg(a, 0, "chars"), false, true);
    if (IS("upper")) return jinja_change_case(c, obj, 0);
    if (IS("lower")) return jinja_change_case(c, obj, 1);
    if (IS("capitalize")) return jinja_change_case(c, obj, 2);
    if (IS("title")) return jinja_change_case(c, obj, 3);
    if (IS("split")) return jinja_split(c, obj, jarg(a, 0, "sep"), jinja_to_int(c, jarg_or(a, 1, "maxsplit", jv_int(-1)), -1));
    if (IS("startswith")) return jv_bool(affix_match(obj, jarg_or(a, 0, "prefix", jv_none()), true));
    if (IS("endswith")) return jv_bool(affix_match(obj, jarg_or(a, 0, "suffix", jv_none()), false));
    if (IS("replace"))
      return jinja_replace(c, obj, str_arg(c, a, 0, "old", "replace"), str_arg(c, a, 1, "new", "replace"),
                     jinja_to_int(c, jarg_or(a, 2, "count", jv_int(-1)), -1));
    if (IS("join")) return jinja_join(c, jinja_iter_items(c, jarg_or(a, 0, "iterable", jv_none())), obj);
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
    if (IS("items")) return jinja_items(c, obj);
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
      int64_t i = jinja_to_int(c, jarg_or(a, 0, "index", jv_int(-1)), -1);
      if (i < 0) i += obj.l->n;
      if (i < 0 || i >= obj.l->n) jctx_fail(c, "pop index out of range");
      jv r = obj.l->v[i];
      memmove(obj.l->v + i, obj.l->v + i + 1, (size_t)(obj.l->n - i - 1) * sizeof(jv));
      obj.l->n--;
      return r;
    }
    if (IS("insert")) {
      int64_t i = jinja_to_int(c, jarg_or(a, 0, "index", jv_int(0)), 0);
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
