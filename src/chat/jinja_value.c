/* jinja_value.c: the value model. Semantics follow Python, as Jinja's do:
 * truthiness, == between ints/floats/bools, str() and repr() of containers,
 * json.dumps output for tojson. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja.h"

jv jv_strn(jheap *h, const char *p, size_t n) {
  char *s = jalloc(h, n + 1);
  if (n) memcpy(s, p, n);
  return jv_strref(s, n);
}

jv jv_str(jheap *h, const char *s) { return jv_strn(h, s, strlen(s)); }

jv jv_list(jheap *h, int cap) {
  jlist *l = jalloc(h, sizeof *l);
  if (cap > 0) {
    l->v = jalloc(h, (size_t)cap * sizeof(jv));
    l->cap = cap;
  }
  jv v = { .k = JV_LIST, .l = l };
  return v;
}

jv jv_dict(jheap *h) {
  jv v = { .k = JV_DICT, .d = jalloc(h, sizeof(jdict)) };
  return v;
}

void jlist_push(jheap *h, jlist *l, jv x) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 4;
    jv *v = jalloc(h, (size_t)cap * sizeof(jv));
    if (l->n) memcpy(v, l->v, (size_t)l->n * sizeof(jv));
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
}

jv *jdict_get(const jdict *d, jv key) {
  for (int i = 0; i < d->n; i++)
    if (jv_equal(d->keys[i], key)) return &d->vals[i];
  return NULL;
}

jv *jdict_gets(const jdict *d, const char *key) {
  size_t n = strlen(key);
  for (int i = 0; i < d->n; i++)
    if (d->keys[i].k == JV_STR && d->keys[i].s.n == n && !memcmp(d->keys[i].s.p, key, n)) return &d->vals[i];
  return NULL;
}

void jdict_set(jheap *h, jdict *d, jv key, jv val) {
  jv *slot = jdict_get(d, key);
  if (slot) { *slot = val; return; }
  if (d->n == d->cap) {
    int cap = d->cap ? d->cap * 2 : 4;
    jv *k = jalloc(h, (size_t)cap * sizeof(jv)), *v = jalloc(h, (size_t)cap * sizeof(jv));
    if (d->n) {
      memcpy(k, d->keys, (size_t)d->n * sizeof(jv));
      memcpy(v, d->vals, (size_t)d->n * sizeof(jv));
    }
    d->keys = k;
    d->vals = v;
    d->cap = cap;
  }
  d->keys[d->n] = key;
  d->vals[d->n] = val;
  d->n++;
}

void jdict_sets(jheap *h, jdict *d, const char *key, jv val) { jdict_set(h, d, jv_strref(key, strlen(key)), val); }

bool jdict_del(jdict *d, jv key) {
  for (int i = 0; i < d->n; i++)
    if (jv_equal(d->keys[i], key)) {
      memmove(d->keys + i, d->keys + i + 1, (size_t)(d->n - i - 1) * sizeof(jv));
      memmove(d->vals + i, d->vals + i + 1, (size_t)(d->n - i - 1) * sizeof(jv));
      d->n--;
      return true;
    }
  return false;
}

bool jv_truthy(jv v) {
  switch (v.k) {
  case JV_UNDEF: case JV_NONE: return false;
  case JV_BOOL: return v.b;
  case JV_INT: return v.i != 0;
  case JV_FLOAT: return v.f != 0;
  case JV_STR: return v.s.n > 0;
  case JV_LIST: return v.l->n > 0;
  case JV_DICT: return v.d->n > 0;
  case JV_FUNC: return true;
  }
  return false;
}

bool jv_is_number(jv v) { return v.k == JV_INT || v.k == JV_FLOAT || v.k == JV_BOOL; }

double jv_num(jv v) {
  return v.k == JV_INT ? (double)v.i : v.k == JV_FLOAT ? v.f : v.k == JV_BOOL ? (double)v.b : 0;
}

/* containers can contain themselves (x.append(x)); recursion stops here */
enum { MAX_VALUE_DEPTH = 256 };

static bool equal_at(jv a, jv b, int depth) {
  if (depth > MAX_VALUE_DEPTH) return false;
  if (jv_is_number(a) && jv_is_number(b)) {
    if (a.k == JV_FLOAT || b.k == JV_FLOAT) return jv_num(a) == jv_num(b);
    return (a.k == JV_BOOL ? a.b : a.i) == (b.k == JV_BOOL ? b.b : b.i);
  }
  if (a.k != b.k) return false;
  switch (a.k) {
  case JV_UNDEF: case JV_NONE: return true;
  case JV_STR: return a.s.n == b.s.n && !memcmp(a.s.p, b.s.p, a.s.n);
  case JV_LIST:
    if (a.l->n != b.l->n) return false;
    for (int i = 0; i < a.l->n; i++)
      if (!equal_at(a.l->v[i], b.l->v[i], depth + 1)) return false;
    return true;
  case JV_DICT:
    if (a.d->n != b.d->n) return false;
    for (int i = 0; i < a.d->n; i++) {
      jv *o = jdict_get(b.d, a.d->keys[i]);
      if (!o || !equal_at(a.d->vals[i], *o, depth + 1)) return false;
    }
    return true;
  case JV_FUNC: return a.fn == b.fn;
  default: return false;
  }
}

bool jv_equal(jv a, jv b) { return equal_at(a, b, 0); }

const char *jv_kind_name(jv v) {
  static const char *names[] = { "undefined", "none", "bool", "int", "float", "string", "list", "dict", "function" };
  if (v.k == JV_LIST && v.l->tuple) return "tuple";
  return names[v.k];
}

static int compare_at(jheap *h, jv a, jv b, int depth) {
  if (depth > MAX_VALUE_DEPTH) jfail(h->err, "values nested too deeply to compare");
  if (jv_is_number(a) && jv_is_number(b)) {
    double x = jv_num(a), y = jv_num(b);
    if (a.k != JV_FLOAT && b.k != JV_FLOAT) {
      int64_t p = a.k == JV_BOOL ? a.b : a.i, q = b.k == JV_BOOL ? b.b : b.i;
      return p < q ? -1 : p > q;
    }
    return x < y ? -1 : x > y;
  }
  if (a.k == JV_STR && b.k == JV_STR) {
    size_t n = a.s.n < b.s.n ? a.s.n : b.s.n;
    int c = memcmp(a.s.p, b.s.p, n);
    if (c) return c < 0 ? -1 : 1;
    return a.s.n < b.s.n ? -1 : a.s.n > b.s.n;
  }
  if (a.k == JV_LIST && b.k == JV_LIST) {
    for (int i = 0; i < a.l->n && i < b.l->n; i++) {
      int c = compare_at(h, a.l->v[i], b.l->v[i], depth + 1);
      if (c) return c;
    }
    return a.l->n < b.l->n ? -1 : a.l->n > b.l->n;
  }
  jfail(h->err, "cannot compare %s with %s", jv_kind_name(a), jv_kind_name(b));
}

int jv_compare(jheap *h, jv a, jv b) { return compare_at(h, a, b, 0); }

/* ---- buffers ---- */

void jbuf_put(jheap *h, jbuf *b, const char *p, size_t n) {
  if (b->limit && b->n + n > b->limit)
    jfail(h->err, "template output exceeds the limit of %zu bytes", b->limit);
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *q = jalloc(h, cap);
    if (b->n) memcpy(q, b->p, b->n);
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, p, n);
  b->n += n;
  b->p[b->n] = 0;
}

void jbuf_printf(jheap *h, jbuf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) { jbuf_put(h, b, tmp, (size_t)n); return; }
  char *big = jalloc(h, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  jbuf_put(h, b, big, (size_t)n);
}

/* ---- printing ---- */

void jv_format_float(double f, char *out, size_t cap) {
  if (isnan(f)) { snprintf(out, cap, "nan"); return; }
  if (isinf(f)) { snprintf(out, cap, f < 0 ? "-inf" : "inf"); return; }
  /* shortest digits that read back as f, like Python's repr */
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(out, cap, "%.*g", prec, f);
    if (strtod(out, NULL) == f) break;
  }
  double a = fabs(f);
  if (strchr(out, 'e') && a >= 1e-4 && a < 1e16) {
    /* Python writes these without an exponent */
    for (int d = 0; d <= 20; d++) {
      snprintf(out, cap, "%.*f", d, f);
      if (strtod(out, NULL) == f) break;
    }
  }
  if (!strchr(out, '.') && !strchr(out, 'e') && !strchr(out, 'n') && strlen(out) + 3 < cap) strcat(out, ".0");
}

static void write_quoted_repr(jheap *h, jbuf *b, const char *p, size_t n) {
  bool has_sq = memchr(p, '\'', n) != NULL, has_dq = memchr(p, '"', n) != NULL;
  char q = has_sq && !has_dq ? '"' : '\'';
  jbuf_put(h, b, &q, 1);
  for (size_t i = 0; i < n; i++) {
    char c = p[i];
    if (c == q || c == '\\') { jbuf_put(h, b, "\\", 1); jbuf_put(h, b, &c, 1); }
    else if (c == '\n') jbuf_puts(h, b, "\\n");
    else if (c == '\r') jbuf_puts(h, b, "\\r");
    else if (c == '\t') jbuf_puts(h, b, "\\t");
    else jbuf_put(h, b, &c, 1);
  }
  jbuf_put(h, b, &q, 1);
}

static void write_scalar(jheap *h, jbuf *b, jv v) {
  char tmp[64];
  switch (v.k) {
  case JV_UNDEF: break;
  case JV_NONE: jbuf_puts(h, b, "None"); break;
  case JV_BOOL: jbuf_puts(h, b, v.b ? "True" : "False"); break;
  case JV_INT: jbuf_printf(h, b, "%lld", (long long)v.i); break;
  case JV_FLOAT: jv_format_float(v.f, tmp, sizeof tmp); jbuf_puts(h, b, tmp); break;
  case JV_FUNC: jbuf_puts(h, b, "<function>"); break;
  default: break;
  }
}

static void write_repr(jheap *h, jbuf *b, jv v, int depth) {
  if (depth > MAX_VALUE_DEPTH) jfail(h->err, "value nested too deeply to print (does it contain itself?)");
  if (v.k == JV_STR) { write_quoted_repr(h, b, v.s.p, v.s.n); return; }
  if (v.k == JV_LIST) {
    jbuf_puts(h, b, v.l->tuple ? "(" : "[");
    for (int i = 0; i < v.l->n; i++) {
      if (i) jbuf_puts(h, b, ", ");
      write_repr(h, b, v.l->v[i], depth + 1);
    }
    if (v.l->tuple && v.l->n == 1) jbuf_puts(h, b, ",");
    jbuf_puts(h, b, v.l->tuple ? ")" : "]");
    return;
  }
  if (v.k == JV_DICT) {
    jbuf_puts(h, b, "{");
    for (int i = 0; i < v.d->n; i++) {
      if (i) jbuf_puts(h, b, ", ");
      write_repr(h, b, v.d->keys[i], depth + 1);
      jbuf_puts(h, b, ": ");
      write_repr(h, b, v.d->vals[i], depth + 1);
    }
    jbuf_puts(h, b, "}");
    return;
  }
  write_scalar(h, b, v);
}

void jv_write_repr(jheap *h, jbuf *b, jv v) { write_repr(h, b, v, 0); }

void jv_write_str(jheap *h, jbuf *b, jv v) {
  if (v.k == JV_STR) jbuf_put(h, b, v.s.p, v.s.n);
  else jv_write_repr(h, b, v);
}

jv jv_to_str(jheap *h, jv v) {
  if (v.k == JV_STR) return v;
  jbuf b = { 0 };
  jv_write_str(h, &b, v);
  return jv_from_buf(&b);
}

/* ---- JSON ---- */

static void write_json_string(jheap *h, jbuf *b, const char *p, size_t n) {
  jbuf_put(h, b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    const char *esc = NULL;
    char tmp[8];
    switch (c) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    case '\b': esc = "\\b"; break;
    case '\f': esc = "\\f"; break;
    default:
      if (c < 0x20) { snprintf(tmp, sizeof tmp, "\\u%04x", c); esc = tmp; }
    }
    if (esc) {
      jbuf_put(h, b, p + i - run, run);
      run = 0;
      jbuf_puts(h, b, esc);
    } else {
      run++;
    }
  }
  jbuf_put(h, b, p + n - run, run);
  jbuf_put(h, b, "\"", 1);
}

static void json_newline(jheap *h, jbuf *b, int indent, int level) {
  jbuf_put(h, b, "\n", 1);
  for (int i = 0; i < indent * level; i++) jbuf_put(h, b, " ", 1);
}

static int cmp_keys(const void *x, const void *y) {
  const jv *a = *(const jv *const *)x, *c = *(const jv *const *)y;
  if (a->k == JV_STR && c->k == JV_STR) {
    size_t n = a->s.n < c->s.n ? a->s.n : c->s.n;
    int r = memcmp(a->s.p, c->s.p, n);
    return r ? r : (a->s.n > c->s.n) - (a->s.n < c->s.n);
  }
  double p = jv_num(*a), q = jv_num(*c);
  return (p > q) - (p < q);
}

static void write_json(jheap *h, jbuf *b, jv v, int indent, bool sort_keys, int level) {
  char tmp[64];
  if (level > MAX_VALUE_DEPTH) jfail(h->err, "value nested too deeply for tojson (does it contain itself?)");
  switch (v.k) {
  case JV_UNDEF: case JV_NONE: case JV_FUNC: jbuf_puts(h, b, "null"); return;
  case JV_BOOL: jbuf_puts(h, b, v.b ? "true" : "false"); return;
  case JV_INT: jbuf_printf(h, b, "%lld", (long long)v.i); return;
  case JV_FLOAT:
    if (isnan(v.f)) jbuf_puts(h, b, "NaN");
    else if (isinf(v.f)) jbuf_puts(h, b, v.f < 0 ? "-Infinity" : "Infinity");
    else { jv_format_float(v.f, tmp, sizeof tmp); jbuf_puts(h, b, tmp); }
    return;
  case JV_STR: write_json_string(h, b, v.s.p, v.s.n); return;
  case JV_LIST:
    if (v.l->n == 0) { jbuf_puts(h, b, "[]"); return; }
    jbuf_puts(h, b, "[");
    for (int i = 0; i < v.l->n; i++) {
      if (i) jbuf_puts(h, b, indent >= 0 ? "," : ", ");
      if (indent >= 0) json_newline(h, b, indent, level + 1);
      write_json(h, b, v.l->v[i], indent, sort_keys, level + 1);
    }
    if (indent >= 0) json_newline(h, b, indent, level);
    jbuf_puts(h, b, "]");
    return;
  case JV_DICT: {
    if (v.d->n == 0) { jbuf_puts(h, b, "{}"); return; }
    const jv **order = jalloc(h, (size_t)v.d->n * sizeof *order);
    for (int i = 0; i < v.d->n; i++) order[i] = &v.d->keys[i];
    if (sort_keys) qsort(order, (size_t)v.d->n, sizeof *order, cmp_keys);
    jbuf_puts(h, b, "{");
    for (int i = 0; i < v.d->n; i++) {
      const jv *k = order[i];
      if (i) jbuf_puts(h, b, indent >= 0 ? "," : ", ");
      if (indent >= 0) json_newline(h, b, indent, level + 1);
      jv ks = k->k == JV_STR ? *k : k->k == JV_BOOL ? jv_strref(k->b ? "true" : "false", k->b ? 4 : 5)
            : k->k == JV_NONE ? jv_strref("null", 4) : jv_to_str(h, *k);
      write_json_string(h, b, ks.s.p, ks.s.n);
      jbuf_puts(h, b, ": ");
      write_json(h, b, v.d->vals[k - v.d->keys], indent, sort_keys, level + 1);
    }
    if (indent >= 0) json_newline(h, b, indent, level);
    jbuf_puts(h, b, "}");
    return;
  }
  }
}

void jv_write_json(jheap *h, jbuf *b, jv v, int indent, bool sort_keys) { write_json(h, b, v, indent, sort_keys, 0); }

jv jv_from_cjson(jheap *h, const cJSON *j) {
  if (!j || cJSON_IsNull(j)) return jv_none();
  if (cJSON_IsBool(j)) return jv_bool(cJSON_IsTrue(j));
  if (cJSON_IsNumber(j)) {
    double d = j->valuedouble;
    /* cJSON keeps one double; integral values within int64 become ints */
    if (d == floor(d) && fabs(d) < 9e15) return jv_int((int64_t)d);
    return jv_float(d);
  }
  if (cJSON_IsString(j)) return jv_str(h, j->valuestring ? j->valuestring : "");
  if (cJSON_IsArray(j)) {
    jv l = jv_list(h, cJSON_GetArraySize(j));
    for (const cJSON *c = j->child; c; c = c->next) jlist_push(h, l.l, jv_from_cjson(h, c));
    l.l->frozen = true;
    return l;
  }
  if (cJSON_IsObject(j)) {
    jv d = jv_dict(h);
    for (const cJSON *c = j->child; c; c = c->next) jdict_set(h, d.d, jv_str(h, c->string ? c->string : ""), jv_from_cjson(h, c));
    d.d->frozen = true;
    return d;
  }
  return jv_none();
}
