/* json_schema.c: a JSON schema -> GBNF, after llama.cpp's
 * json-schema-to-grammar: the text the grammar accepts is JSON that
 * validates against the schema, written the way a model writes it:
 *   - an object's properties come in a fixed order: the required ones in
 *     the order of "properties", then the optional ones in that order, then
 *     additional ones; a missing "additionalProperties" means none (as in
 *     llama.cpp and OpenAI's strict mode), true or a schema allows them
 *     (keys other than the named properties, without escapes);
 *   - white space is llama.cpp's: after every token "", " " or a newline
 *     and up to 20 blanks;
 *   - numbers: at most 16 digits before and after the point; an
 *     "integer" has neither point nor exponent;
 *   - "oneOf" is read as "anyOf" (give it disjoint branches).
 * Keywords: type (a name or a list), properties, required,
 * additionalProperties, items, minItems, maxItems, minLength, maxLength,
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum on integers
 * (int_range.c),
 * enum, const, anyOf, oneOf, $ref (into this document: "#", "#/$defs/x",
 * "#/definitions/x", any JSON pointer), format date, time, date-time and
 * uuid (other formats are annotations, as JSON Schema says), and the
 * annotations (title, description, default, examples, $schema, ...).
 * Any other keyword that constrains (pattern, allOf, bounds on a number...) is an
 * error naming it and where, never silently ignored. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include "grammar/grammar.h"
#include "util/util.h"

typedef struct {
  const cJSON *root;
  strbuf out;          /* the rules written so far */
  int n_rules;
  bool used_prim[16];
  VEC(char *) ref_names;   /* "$ref" string, then its rule, pairwise */
  int depth;
  bool failed;
} conv;

/* The primitive rules, written once each when used (llama.cpp's, with
 * JSON's "\/" escape and raw DEL allowed as JSON allows them). */
enum { P_SPACE, P_BOOLEAN, P_NULL, P_CHAR, P_STRING, P_INTEGRAL, P_DECIMAL, P_INTEGER, P_NUMBER,
       P_VALUE, P_OBJECT, P_ARRAY, P_DATE, P_TIME, P_UUID, P_COUNT };
static const struct { const char *name, *body; int deps[4]; } prims[P_COUNT] = {
  [P_SPACE]    = { "space", "| \" \" | \"\\n\" [ \\t]{0,20}", { -1 } },
  [P_BOOLEAN]  = { "boolean", "(\"true\" | \"false\") space", { P_SPACE, -1 } },
  [P_NULL]     = { "null", "\"null\" space", { P_SPACE, -1 } },
  [P_CHAR]     = { "char", "[^\"\\\\\\x00-\\x1F] | [\\\\] ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})", { -1 } },
  [P_STRING]   = { "string", "\"\\\"\" char* \"\\\"\" space", { P_CHAR, P_SPACE, -1 } },
  [P_INTEGRAL] = { "integral-part", "[0] | [1-9] [0-9]{0,15}", { -1 } },
  [P_DECIMAL]  = { "decimal-part", "[0-9]{1,16}", { -1 } },
  [P_INTEGER]  = { "integer", "(\"-\"? integral-part) space", { P_INTEGRAL, P_SPACE, -1 } },
  [P_NUMBER]   = { "number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? [0-9]{1,16})? space",
                   { P_INTEGRAL, P_DECIMAL, P_SPACE, -1 } },
  [P_VALUE]    = { "value", "object | array | string | number | boolean | null",
                   { P_OBJECT, P_ARRAY, P_STRING, P_NUMBER } },
  [P_OBJECT]   = { "object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space",
                   { P_STRING, P_VALUE, P_SPACE, -1 } },
  [P_ARRAY]    = { "array", "\"[\" space ( value (\",\" space value)* )? \"]\" space", { P_VALUE, P_SPACE, -1 } },
  [P_DATE]     = { "date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )", { -1 } },
  [P_TIME]     = { "time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? "
                   "( \"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )", { -1 } },
  [P_UUID]     = { "uuid", "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                   "[0-9a-fA-F]{12} \"\\\"\" space", { P_SPACE, -1 } },
};

static const char *prim(conv *c, int p) {
  if (!c->used_prim[p]) {
    c->used_prim[p] = true;
    sb_printf(&c->out, "%s ::= %s\n", prims[p].name, prims[p].body);
    for (int i = 0; i < 4 && prims[p].deps[i] >= 0; i++) prim(c, prims[p].deps[i]);
    if (p == P_VALUE) { prim(c, P_BOOLEAN); prim(c, P_NULL); }
  }
  return prims[p].name;
}

static int fail(conv *c, const char *path, const char *fmt, const char *what) {
  if (!c->failed) {
    c->failed = true;
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    tg_seterr("json schema: %s (at %s)", msg, *path ? path : "the root");
  }
  return -1;
}

/* A new rule name into name[32]. */
static void new_name(conv *c, const char *hint, char *name) {
  snprintf(name, 32, "%s%d", hint, ++c->n_rules);
}

/* text as a GBNF literal "..." */
static void put_literal(strbuf *b, const char *s, size_t n) {
  sb_puts(b, "\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"') sb_puts(b, "\\\"");
    else if (ch == '\\') sb_puts(b, "\\\\");
    else if (ch == '\n') sb_puts(b, "\\n");
    else if (ch == '\r') sb_puts(b, "\\r");
    else if (ch == '\t') sb_puts(b, "\\t");
    else if (ch < 0x20 || ch == 0x7F) sb_printf(b, "\\x%02X", ch);
    else sb_append(b, s + i, 1);
  }
  sb_puts(b, "\"");
}

/* A JSON value written compactly, as a literal followed by space. */
static int put_json_literal(conv *c, strbuf *b, const cJSON *v, const char *path) {
  char *js = cJSON_PrintUnformatted(v);
  if (!js) return fail(c, path, "%s", "could not print a value of enum/const");
  put_literal(b, js, strlen(js));
  sb_printf(b, " %s", prim(c, P_SPACE));
  free(js);
  return 0;
}

static const char *const annotations[] = {
  "title", "description", "default", "examples", "$schema", "$id", "$comment", "$defs", "definitions",
  "deprecated", "readOnly", "writeOnly", "$anchor", "contentMediaType", "contentEncoding", NULL,
};
static const char *const handled[] = {
  "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
  "maxLength", "enum", "const", "anyOf", "oneOf", "$ref", "format",
  "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL,
};

static bool in_list(const char *const *l, const char *s) {
  for (; *l; l++) if (!strcmp(*l, s)) return true;
  return false;
}

static int visit(conv *c, const cJSON *s, const char *path, char *name);

/* Whether value v has the JSON type named t. */
static bool has_type(const cJSON *v, const char *t) {
  if (!strcmp(t, "string")) return cJSON_IsString(v);
  if (!strcmp(t, "number")) return cJSON_IsNumber(v);
  if (!strcmp(t, "integer")) return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
  if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
  if (!strcmp(t, "null")) return cJSON_IsNull(v);
  if (!strcmp(t, "array")) return cJSON_IsArray(v);
  if (!strcmp(t, "object")) return cJSON_IsObject(v);
  return false;
}

/* Whether an enum/const value fits the schema's "type" (absent: any). */
static bool fits_type(const cJSON *v, const cJSON *type) {
  if (cJSON_IsString(type)) return has_type(v, type->valuestring);
  if (!cJSON_IsArray(type)) return true;
  const cJSON *t;
  cJSON_ArrayForEach(t, type) if (cJSON_IsString(t) && has_type(v, t->valuestring)) return true;
  return false;
}

/* name ::= body (body written by the caller between rule_open and rule_close) */
static void rule_open(conv *c, strbuf *b, const char *name) { (void)c; sb_printf(b, "%s ::= ", name); }
static void rule_close(conv *c, strbuf *b) { sb_puts(b, "\n"); sb_append(&c->out, b->s, b->n); sb_free(b); }

static int get_count(conv *c, const cJSON *s, const char *key, const char *path, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);
  if (!v) return 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble != floor(v->valuedouble))
    return fail(c, path, "'%s' must be a non-negative integer", key);
  if (v->valuedouble > GRAMMAR_MAX_REPEAT) return fail(c, path, "'%s' over 2000 is not supported", key);
  *out = (int64_t)v->valuedouble;
  return 0;
}

static void put_repeat(strbuf *b, int64_t min, int64_t max) {
  if (max < 0) sb_printf(b, "{%lld,}", (long long)min);
  else sb_printf(b, "{%lld,%lld}", (long long)min, (long long)max);
}

static int visit_string(conv *c, const cJSON *s, const char *path, const char *name) {
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
  strbuf b = { 0 };
  rule_open(c, &b, name);
  if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "uuid")) sb_puts(&b, prim(c, P_UUID));
  else if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "date")) sb_printf(&b, "\"\\\"\" %s \"\\\"\" %s", prim(c, P_DATE), prim(c, P_SPACE));
  else if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "time")) sb_printf(&b, "\"\\\"\" %s \"\\\"\" %s", prim(c, P_TIME), prim(c, P_SPACE));
  else if (cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "date-time"))
    sb_printf(&b, "\"\\\"\" %s \"T\" %s \"\\\"\" %s", prim(c, P_DATE), prim(c, P_TIME), prim(c, P_SPACE));
  else {
    int64_t min = 0, max = -1;
    if (get_count(c, s, "minLength", path, &min) || get_count(c, s, "maxLength", path, &max)) { sb_free(&b); return -1; }
    if (max >= 0 && max < min) { sb_free(&b); return fail(c, path, "%s", "maxLength is below minLength: no string fits"); }
    if (min == 0 && max < 0) sb_puts(&b, prim(c, P_STRING));
    else {
      sb_printf(&b, "\"\\\"\" %s", prim(c, P_CHAR));
      put_repeat(&b, min, max);
      sb_printf(&b, " \"\\\"\" %s", prim(c, P_SPACE));
    }
  }
  rule_close(c, &b);
  return 0;
}

static int visit_array(conv *c, const cJSON *s, const char *path, const char *name) {
  const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
  int64_t min = 0, max = -1;
  if (get_count(c, s, "minItems", path, &min) || get_count(c, s, "maxItems", path, &max)) return -1;
  if (max >= 0 && max < min) return fail(c, path, "%s", "maxItems is below minItems: no array fits");
  char item[32];
  if (!items || cJSON_IsTrue(items)) snprintf(item, sizeof item, "%s", prim(c, P_VALUE));
  else if (cJSON_IsFalse(items)) max = 0;
  else {
    char sub[512];
    snprintf(sub, sizeof sub, "%.480s.items", path);
    if (visit(c, items, sub, item)) return -1;
  }
  if (max == 0 && min > 0) return fail(c, path, "%s", "\"items\": false with minItems > 0: no array fits");
  strbuf b = { 0 };
  rule_open(c, &b, name);
  const char *sp = prim(c, P_SPACE);
  sb_printf(&b, "\"[\" %s ", sp);
  if (max == 0) ;
  else if (min == 0) {
    sb_printf(&b, "( %s ( \",\" %s %s )", item, sp, item);
    if (max < 0) sb_puts(&b, "*");
    else if (max > 1) put_repeat(&b, 0, max - 1);
    else sb_puts(&b, "{0}");
    sb_puts(&b, " )?");
  } else {
    sb_printf(&b, "%s ( \",\" %s %s )", item, sp, item);
    put_repeat(&b, min - 1, max < 0 ? -1 : max - 1);
  }
  sb_printf(&b, " \"]\" %s", sp);
  rule_close(c, &b);
  return 0;
}

/* ---- objects */

/* The property names as a trie of code points (for keys that must be none
 * of them). */
typedef struct ktrie { uint32_t ch; bool end; struct ktrie *kid, *next; } ktrie;

/* The next code point of s (a byte that is not UTF-8 stands for itself). */
static uint32_t next_cp(const char **s) {
  const unsigned char *u = (const unsigned char *)*s;
  int n = u[0] < 0x80 ? 1 : (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 0;
  uint32_t v = n == 1 ? u[0] : u[0] & (0x7F >> n);
  for (int i = 1; i < n; i++) {
    if ((u[i] & 0xC0) != 0x80) { n = 0; break; }
    v = v << 6 | (u[i] & 0x3F);
  }
  if (n == 0) { *s += 1; return u[0]; }
  *s += n;
  return v;
}

static void ktrie_add(ktrie *t, const char *s) {
  while (*s) {
    uint32_t cp = next_cp(&s);
    ktrie *k = t->kid;
    while (k && k->ch != cp) k = k->next;
    if (!k) { k = tg_xcalloc(1, sizeof *k); k->ch = cp; k->next = t->kid; t->kid = k; }
    t = k;
  }
  t->end = true;
}

static void ktrie_free(ktrie *t) {
  while (t) { ktrie *n = t->next; ktrie_free(t->kid); free(t); t = n; }
}

/* The key text (between the quotes) that is none of the names below t:
 * end here (unless a name ends here), go on along a name, or leave every
 * name with another character or an escape. */
static void put_not_names(conv *c, strbuf *b, const ktrie *t) {
  const char *ch = prim(c, P_CHAR);
  sb_puts(b, "(");
  bool alt = false;
  if (!t->end) { sb_puts(b, " \"\""); alt = true; }
  strbuf cls = { 0 };
  sb_puts(&cls, "[^\"\\\\\\x00-\\x1F");
  for (const ktrie *k = t->kid; k; k = k->next) {
    sb_printf(b, "%s\"\\U%08X\" ", alt ? " | " : " ", k->ch);
    alt = true;
    put_not_names(c, b, k);
    sb_printf(&cls, "\\U%08X", k->ch);
  }
  sb_puts(&cls, "]");
  sb_printf(b, "%s %s %s* | [\\\\] ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) %s* )", alt ? " |" : "", cls.s, ch, ch);
  sb_free(&cls);
}

static int visit_object(conv *c, const cJSON *s, const char *path, const char *name) {
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
  const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
  const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
  if (props && !cJSON_IsObject(props)) return fail(c, path, "%s", "'properties' must be an object");
  if (req && !cJSON_IsArray(req)) return fail(c, path, "%s", "'required' must be an array of strings");
  const cJSON *r;
  for (const cJSON *p = props ? props->child : NULL; p; p = p->next)
    if (strlen(p->string) > GRAMMAR_MAX_NAME) return fail(c, path, "%s", "a property name is longer than 1000 bytes");
  cJSON_ArrayForEach(r, req) {
    if (!cJSON_IsString(r)) return fail(c, path, "%s", "'required' must be an array of strings");
    if (!cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
      return fail(c, path, "required property '%s' is not in 'properties' (not supported)", r->valuestring);
  }
  const char *sp = prim(c, P_SPACE);
  if (!props && (!ap || cJSON_IsTrue(ap))) {   /* any object */
    strbuf b = { 0 };
    rule_open(c, &b, name);
    sb_puts(&b, prim(c, P_OBJECT));
    rule_close(c, &b);
    return 0;
  }
  /* kv rules, required first then optional, each in properties' order */
  int n = cJSON_GetArraySize(props), k = 0;
  char (*kv)[32] = tg_xcalloc((size_t)n + 1, 32);
  const cJSON **order = tg_xcalloc((size_t)n + 1, sizeof *order);
  int n_req = 0;
  for (int pass = 0; pass < 2; pass++) {
    const cJSON *p;
    cJSON_ArrayForEach(p, props) {
      bool is_req = false;
      cJSON_ArrayForEach(r, req) if (!strcmp(r->valuestring, p->string)) is_req = true;
      if (is_req != (pass == 0)) continue;
      order[k++] = p;
      n_req += is_req;
    }
  }
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    char sub[512], val[32];
    snprintf(sub, sizeof sub, "%.300s.properties.%.180s", path, order[i]->string);
    rc = visit(c, order[i], sub, val);
    if (rc) break;
    new_name(c, "kv", kv[i]);
    strbuf b = { 0 };
    rule_open(c, &b, kv[i]);
    cJSON *key = cJSON_CreateString(order[i]->string);
    char *js = cJSON_PrintUnformatted(key);
    put_literal(&b, js, strlen(js));
    free(js);
    cJSON_Delete(key);
    sb_printf(&b, " %s \":\" %s %s", sp, sp, val);
    rule_close(c, &b);
  }
  /* additional properties: a kv rule whose key is none of the names */
  bool extra = ap && !cJSON_IsFalse(ap);
  char extra_kv[32] = "";
  if (!rc && extra) {
    char val[32], sub[512];
    snprintf(sub, sizeof sub, "%.480s.additionalProperties", path);
    if (cJSON_IsTrue(ap)) snprintf(val, sizeof val, "%s", prim(c, P_VALUE));
    else rc = visit(c, ap, sub, val);
    if (!rc) {
      ktrie t = { 0 };
      for (int i = 0; i < n; i++) ktrie_add(&t, order[i]->string);
      new_name(c, "kv", extra_kv);
      strbuf b = { 0 };
      rule_open(c, &b, extra_kv);
      sb_puts(&b, "\"\\\"\" ");
      if (n) put_not_names(c, &b, &t);
      else sb_printf(&b, "%s*", prim(c, P_CHAR));
      sb_printf(&b, " \"\\\"\" %s \":\" %s %s", sp, sp, val);
      rule_close(c, &b);
      ktrie_free(t.kid);
    }
  }
  if (!rc) {
    /* rest[i]: the optional properties from i on, each after a comma;
     * the last rest is the additional ones */
    int n_opt = n - n_req;
    char (*rest)[32] = tg_xcalloc((size_t)n_opt + 1, 32);
    for (int i = n_opt; i >= 0; i--) {
      new_name(c, "rest", rest[i]);
      strbuf b = { 0 };
      rule_open(c, &b, rest[i]);
      if (i == n_opt) {
        if (extra) sb_printf(&b, "( \",\" %s %s )*", sp, extra_kv);
        else sb_puts(&b, "\"\"");   /* an empty body would run into the next line */
      }
      else sb_printf(&b, "( \",\" %s %s )? %s", sp, kv[n_req + i], rest[i + 1]);
      rule_close(c, &b);
    }
    strbuf b = { 0 };
    rule_open(c, &b, name);
    sb_printf(&b, "\"{\" %s ", sp);
    if (n_req) {
      for (int i = 0; i < n_req; i++) sb_printf(&b, "%s%s ", i ? "\",\" space " : "", kv[i]);
      sb_puts(&b, rest[0]);
    } else if (n_opt || extra) {
      sb_puts(&b, "( ");
      for (int i = 0; i < n_opt; i++) sb_printf(&b, "%s%s %s", i ? " | " : "", kv[i], rest[i + 1]);
      if (extra) sb_printf(&b, "%s%s %s", n_opt ? " | " : "", extra_kv, rest[n_opt]);
      sb_puts(&b, " )?");
    }
    sb_printf(&b, " \"}\" %s", sp);
    rule_close(c, &b);
    free(rest);
  }
  free(kv);
  free(order);
  return rc;
}

/* ---- references */

/* The schema a local "$ref" names (a JSON pointer into the document). */
static const cJSON *resolve(conv *c, const char *ref, const char *path) {
  if (ref[0] != '#') { fail(c, path, "$ref '%s' is not into this document (only \"#...\" refs are supported)", ref); return NULL; }
  const cJSON *at = c->root;
  const char *p = ref + 1;
  if (*p && *p != '/') { fail(c, path, "$ref '%s' is not a JSON pointer", ref); return NULL; }
  while (*p == '/') {
    p++;
    char key[256];
    size_t n = 0;
    for (; *p && *p != '/'; p++) {
      char ch = *p;
      if (ch == '~' && p[1] == '0') { ch = '~'; p++; }
      else if (ch == '~' && p[1] == '1') { ch = '/'; p++; }
      if (n + 1 < sizeof key) key[n++] = ch;
    }
    key[n] = 0;
    at = cJSON_IsArray(at) ? cJSON_GetArrayItem(at, atoi(key)) : cJSON_GetObjectItemCaseSensitive(at, key);
    if (!at) { fail(c, path, "$ref '%s' names nothing in the schema", ref); return NULL; }
  }
  return at;
}

static int visit_ref(conv *c, const char *ref, const char *path, char *name) {
  for (int i = 0; i + 1 < c->ref_names.n; i += 2)
    if (!strcmp(c->ref_names.v[i], ref)) { snprintf(name, 32, "%s", c->ref_names.v[i + 1]); return 0; }
  const cJSON *target = resolve(c, ref, path);
  if (!target) return -1;
  new_name(c, "ref", name);
  VEC_PUSH(c->ref_names, tg_xstrdup(ref));
  VEC_PUSH(c->ref_names, tg_xstrdup(name));
  char inner[32], sub[512];
  snprintf(sub, sizeof sub, "%.500s", ref);
  if (visit(c, target, sub, inner)) return -1;
  sb_printf(&c->out, "%s ::= %s\n", name, inner);
  return 0;
}

/* ---- any schema */

/* An integer with minimum / maximum / exclusiveMinimum / exclusiveMaximum. */
static int visit_int_range(conv *c, const cJSON *s, const char *path, char *name) {
  static const char *const keys[4] = { "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum" };
  bool has_lo = false, has_hi = false;
  double lo = 0, hi = 0;
  for (int k = 0; k < 4; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, keys[k]);
    if (!v) continue;
    if (!cJSON_IsNumber(v)) return fail(c, path, "'%s' must be a number", keys[k]);
    double x = v->valuedouble;
    if (k < 2) {   /* the least integer allowed */
      double m = k == 0 ? ceil(x) : floor(x) + 1;
      if (!has_lo || m > lo) lo = m;
      has_lo = true;
    } else {
      double m = k == 2 ? floor(x) : ceil(x) - 1;
      if (!has_hi || m < hi) hi = m;
      has_hi = true;
    }
  }
  const double lim = 1e17;   /* past the grammar's 16 digits: no bound that side */
  strbuf b = { 0 };
  new_name(c, "int", name);
  sb_printf(&b, "%s ::= ", name);
  if (gbnf_int_range(&b, has_lo && lo > -lim, has_lo ? (int64_t)fmax(fmin(lo, lim), -lim) : 0,
                     has_hi && hi < lim, has_hi ? (int64_t)fmax(fmin(hi, lim), -lim) : 0)) {
    sb_free(&b);
    return fail(c, path, "%s", "no integer lies between minimum and maximum");
  }
  sb_printf(&b, " %s\n", prim(c, P_SPACE));
  sb_append(&c->out, b.s, b.n);
  sb_free(&b);
  return 0;
}

static int visit_type(conv *c, const cJSON *s, const char *type, const char *path, char *name) {
  bool ranged = cJSON_GetObjectItemCaseSensitive(s, "minimum") || cJSON_GetObjectItemCaseSensitive(s, "maximum") ||
                cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum") || cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum");
  if (ranged && !strcmp(type, "integer")) return visit_int_range(c, s, path, name);
  if (ranged && !strcmp(type, "number"))
    return fail(c, path, "%s", "minimum/maximum on a \"number\" are not supported (only on an \"integer\")");
  static const struct { const char *type; int prim; } simple[] = {
    { "boolean", P_BOOLEAN }, { "null", P_NULL }, { "integer", P_INTEGER }, { "number", P_NUMBER },
  };
  for (size_t i = 0; i < sizeof simple / sizeof *simple; i++)
    if (!strcmp(type, simple[i].type)) { snprintf(name, 32, "%s", prim(c, simple[i].prim)); return 0; }
  new_name(c, type[0] == 's' ? "str" : type[0] == 'a' ? "arr" : "obj", name);
  if (!strcmp(type, "string")) return visit_string(c, s, path, name);
  if (!strcmp(type, "array")) return visit_array(c, s, path, name);
  if (!strcmp(type, "object")) return visit_object(c, s, path, name);
  return fail(c, path, "unknown type '%s' (string, number, integer, boolean, null, array, object)", type);
}

/* name ::= alt_1 | alt_2 ... over the schemas of list (anyOf/oneOf) */
static int visit_union(conv *c, const cJSON *list, const char *key, const char *path, char *name) {
  if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) return fail(c, path, "'%s' must be a non-empty array of schemas", key);
  VEC(char *) alts = { 0 };
  const cJSON *a;
  int i = 0, rc = 0;
  cJSON_ArrayForEach(a, list) {
    char sub[512], alt[32];
    snprintf(sub, sizeof sub, "%.480s.%s[%d]", path, key, i++);
    if ((rc = visit(c, a, sub, alt))) break;
    VEC_PUSH(alts, tg_xstrdup(alt));
  }
  if (!rc) {
    new_name(c, "alt", name);
    sb_printf(&c->out, "%s ::=", name);
    for (int k = 0; k < alts.n; k++) sb_printf(&c->out, "%s %s", k ? " |" : "", alts.v[k]);
    sb_puts(&c->out, "\n");
  }
  for (int k = 0; k < alts.n; k++) free(alts.v[k]);
  VEC_FREE(alts);
  return rc;
}

static int visit(conv *c, const cJSON *s, const char *path, char *name) {
  if (c->failed) return -1;
  if (++c->depth > GRAMMAR_MAX_NEST) return fail(c, path, "%s", "schemas nested more than 256 deep");
  int rc = 0;
  if (cJSON_IsTrue(s)) snprintf(name, 32, "%s", prim(c, P_VALUE));
  else if (cJSON_IsFalse(s)) rc = fail(c, path, "%s", "the schema false allows no value here");
  else if (!cJSON_IsObject(s)) rc = fail(c, path, "%s", "a schema must be an object or a boolean");
  else {
    for (const cJSON *k = s->child; k && !rc; k = k->next)
      if (!in_list(annotations, k->string) && !in_list(handled, k->string))
        rc = fail(c, path, "the keyword '%s' is not supported", k->string);
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    const cJSON *cnst = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(s, "oneOf");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (rc) ;
    else if (ref) rc = cJSON_IsString(ref) ? visit_ref(c, ref->valuestring, path, name) : fail(c, path, "%s", "'$ref' must be a string");
    else if (cnst || en) {
      if (en && (!cJSON_IsArray(en) || cJSON_GetArraySize(en) == 0)) rc = fail(c, path, "%s", "'enum' must be a non-empty array");
      else {
        new_name(c, cnst ? "const" : "enum", name);
        strbuf b = { 0 };
        rule_open(c, &b, name);
        /* values of another type than "type" says are left out (they do not validate) */
        bool first = true;
        if (cnst) {
          if (fits_type(cnst, type)) { first = false; rc = put_json_literal(c, &b, cnst, path); }
        } else {
          const cJSON *v;
          cJSON_ArrayForEach(v, en) {
            if (!fits_type(v, type)) continue;
            if (!first) sb_puts(&b, " | ");
            first = false;
            if ((rc = put_json_literal(c, &b, v, path))) break;
          }
        }
        if (!rc && first) rc = fail(c, path, "%s", "no value of 'enum'/'const' has the schema's 'type'");
        if (rc) sb_free(&b);
        else rule_close(c, &b);
      }
    } else if (any || one) {
      if (any && one) rc = fail(c, path, "%s", "'anyOf' and 'oneOf' together are not supported");
      else if (type || cJSON_GetObjectItemCaseSensitive(s, "properties") || cJSON_GetObjectItemCaseSensitive(s, "items"))
        rc = fail(c, path, "%s", "'anyOf'/'oneOf' beside 'type', 'properties' or 'items' is not supported (move them into the branches)");
      else rc = visit_union(c, any ? any : one, any ? "anyOf" : "oneOf", path, name);
    } else if (cJSON_IsArray(type)) {
      if (cJSON_GetArraySize(type) == 0) rc = fail(c, path, "%s", "'type' must not be an empty list");
      VEC(char *) alts = { 0 };
      const cJSON *t;
      cJSON_ArrayForEach(t, type) {
        if (rc) break;
        char alt[32];
        if (!cJSON_IsString(t)) rc = fail(c, path, "%s", "'type' must be a string or a list of strings");
        else if (!(rc = visit_type(c, s, t->valuestring, path, alt))) VEC_PUSH(alts, tg_xstrdup(alt));
      }
      if (!rc) {
        new_name(c, "types", name);
        sb_printf(&c->out, "%s ::=", name);
        for (int k = 0; k < alts.n; k++) sb_printf(&c->out, "%s %s", k ? " |" : "", alts.v[k]);
        sb_puts(&c->out, "\n");
      }
      for (int k = 0; k < alts.n; k++) free(alts.v[k]);
      VEC_FREE(alts);
    } else if (type && !cJSON_IsString(type)) rc = fail(c, path, "%s", "'type' must be a string or a list of strings");
    else if (type) rc = visit_type(c, s, type->valuestring, path, name);
    else if (cJSON_GetObjectItemCaseSensitive(s, "properties") || cJSON_GetObjectItemCaseSensitive(s, "additionalProperties"))
      rc = visit_type(c, s, "object", path, name);
    else if (cJSON_GetObjectItemCaseSensitive(s, "items")) rc = visit_type(c, s, "array", path, name);
    else {
      /* a type's keyword with no type: it would bind only values of that type */
      static const char *const typed[] = { "minLength", "maxLength", "format", "minItems", "maxItems", "minimum",
                                           "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL };
      for (const char *const *k = typed; *k && !rc; k++)
        if (cJSON_GetObjectItemCaseSensitive(s, *k)) rc = fail(c, path, "'%s' without a 'type' is not supported", *k);
      if (!rc) snprintf(name, 32, "%s", prim(c, P_VALUE));
    }
  }
  c->depth--;
  return rc;
}

char *tg_json_schema_to_gbnf(const char *schema, size_t len) {
  if (!schema) TG_FAIL("tg_json_schema_to_gbnf: the schema is NULL");
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(schema, len, &end, false);
  if (!root) TG_FAIL("tg_json_schema_to_gbnf: the schema is not valid JSON");
  while (end < schema + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  if (end < schema + len) { cJSON_Delete(root); TG_FAIL("tg_json_schema_to_gbnf: bytes after the schema's JSON value (from byte %zu)", (size_t)(end - schema)); }
  conv c = { .root = root };
  char name[32];
  int rc = visit(&c, root, "", name);
  char *out = NULL;
  if (!rc) {
    strbuf b = { 0 };
    sb_printf(&b, "root ::= %s\n", name);
    sb_append(&b, c.out.s, c.out.n);
    out = b.s;
  }
  sb_free(&c.out);
  for (int i = 0; i < c.ref_names.n; i++) free(c.ref_names.v[i]);
  VEC_FREE(c.ref_names);
  cJSON_Delete(root);
  if (!out) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tg_error());
    TG_FAIL("tg_json_schema_to_gbnf: %s", msg);
  }
  return out;
}
