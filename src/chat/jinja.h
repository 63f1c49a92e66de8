/* jinja.h: tg's Jinja interpreter (the subset chat templates use), internal
 * to src/chat. Layout:
 *   jinja_arena.c    bump allocator every parse and render allocates from
 *   jinja_value.c    the value model: constructors, truthiness, equality,
 *                    str()/repr(), tojson, cJSON conversion
 *   jinja_lex.c      template text -> tokens (whitespace control lives here)
 *   jinja_parse.c    tokens -> syntax tree
 *   jinja_eval.c     syntax tree + variables -> output
 *   jinja_filters.c  filters and tests
 *   jinja_methods.c  methods on str/list/dict, string formatting
 *   jinja_globals.c  range, namespace, raise_exception, strftime_now, ...
 * Errors inside a parse or a render longjmp to the entry point, which turns
 * them into tg_seterr; everything allocated lives in an arena that is freed
 * in one go, so an error path cannot leak. */
#ifndef TG_CHAT_JINJA_H
#define TG_CHAT_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- arena ---- */
typedef struct jarena jarena;
jarena *jarena_new(size_t limit_bytes);
void jarena_free(jarena *a);
/* NULL when the arena's limit would be passed (callers turn that into an error) */
void *jarena_try_alloc(jarena *a, size_t n);

/* ---- errors: one jump target per parse or render ---- */
typedef struct jerr {
  jmp_buf jb;
  char msg[1024];
} jerr;
_Noreturn void jfail(jerr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- values ---- */
typedef enum { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_FUNC } jv_kind;

struct jlist;
struct jdict;
struct jfunc;
typedef struct jv {
  jv_kind k;
  union {
    bool b;
    int64_t i;
    double f;
    struct { const char *p; size_t n; } s;
    struct jlist *l;
    struct jdict *d;
    struct jfunc *fn;
  };
} jv;

/* `frozen`: came from the caller's variables; methods that would mutate it
 * work on a copy instead, so a render never changes its inputs (as minja) */
typedef struct jlist { jv *v; int n, cap; bool tuple, frozen; } jlist;
/* insertion-ordered; keys are any scalar value. `ns` marks a namespace()
 * object, the one kind of dict whose attributes `set` may assign. */
typedef struct jdict { jv *keys, *vals; int n, cap; bool ns, frozen; } jdict;

/* Everything a render allocates from, plus its error target. */
typedef struct jheap {
  jarena *ar;
  jerr *err;
} jheap;

void *jalloc(jheap *h, size_t n);            /* zeroed; fails the render on the memory limit */
static inline jv jv_undef(void) { jv v = { .k = JV_UNDEF }; return v; }
static inline jv jv_none(void) { jv v = { .k = JV_NONE }; return v; }
static inline jv jv_bool(bool b) { jv v = { .k = JV_BOOL, .b = b }; return v; }
static inline jv jv_int(int64_t i) { jv v = { .k = JV_INT, .i = i }; return v; }
static inline jv jv_float(double f) { jv v = { .k = JV_FLOAT, .f = f }; return v; }
jv jv_strn(jheap *h, const char *p, size_t n);   /* copies */
jv jv_str(jheap *h, const char *s);
static inline jv jv_strref(const char *p, size_t n) { jv v = { .k = JV_STR }; v.s.p = p; v.s.n = n; return v; }
jv jv_list(jheap *h, int cap);
jv jv_dict(jheap *h);
void jlist_push(jheap *h, jlist *l, jv x);
jv *jdict_get(const jdict *d, jv key);        /* NULL when absent */
jv *jdict_gets(const jdict *d, const char *key);
void jdict_set(jheap *h, jdict *d, jv key, jv val);
void jdict_sets(jheap *h, jdict *d, const char *key, jv val);
bool jdict_del(jdict *d, jv key);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
bool jv_is_number(jv v);                       /* int, float or bool, as in Python */
double jv_num(jv v);
/* Python ordering (numbers, strings, lists); fails the render on other types */
int jv_compare(jheap *h, jv a, jv b);
const char *jv_kind_name(jv v);

/* a growable byte buffer in the arena; jbuf_put fails the render beyond `limit` */
typedef struct jbuf { char *p; size_t n, cap, limit; } jbuf;
void jbuf_put(jheap *h, jbuf *b, const char *p, size_t n);
static inline void jbuf_puts(jheap *h, jbuf *b, const char *s) { jbuf_put(h, b, s, strlen(s)); }
void jbuf_printf(jheap *h, jbuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* the buffer's bytes as a string value (no copy) */
static inline jv jv_from_buf(const jbuf *b) { return jv_strref(b->p ? b->p : "", b->n); }

void jv_write_str(jheap *h, jbuf *b, jv v);    /* Python str(): what {{ v }} prints */
void jv_write_repr(jheap *h, jbuf *b, jv v);   /* Python repr() */
jv jv_to_str(jheap *h, jv v);                  /* str() as a string value (strings returned as they are) */
/* json.dumps(v, ensure_ascii=False, indent=indent) with Python's separators;
 * indent < 0 means none. sort_keys orders dict keys. */
void jv_write_json(jheap *h, jbuf *b, jv v, int indent, bool sort_keys);
void jv_format_float(double f, char *out, size_t cap);   /* Python repr(float) */

/* cJSON <-> values (cJSON objects keep their key order) */
struct cJSON;
jv jv_from_cjson(jheap *h, const struct cJSON *j);

/* ---- templates ---- */
typedef struct jinja_options {
  bool trim_blocks, lstrip_blocks, keep_trailing_newline;
} jinja_options;

typedef struct jinja_template jinja_template;
/* NULL + tg_seterr("... at line L, column C") on a syntax error */
jinja_template *jinja_parse(const char *src, size_t n, jinja_options opt);
void jinja_free(jinja_template *t);

/* Limits that keep a hostile template from running away. */
typedef struct jinja_limits {
  size_t max_output;      /* bytes of rendered text */
  size_t max_memory;      /* bytes the render may allocate */
  int64_t max_iterations; /* work: loop iterations plus items that filters, `in` and sorts visit */
  int max_depth;          /* nested macro calls */
  int64_t max_range;      /* items range() may produce */
} jinja_limits;
jinja_limits jinja_default_limits(void);

/* Variables are passed as a cJSON object; `now` feeds strftime_now (unix seconds). */
typedef struct jinja_render_args {
  const struct cJSON *vars;
  int64_t now;
  jinja_limits limits;
} jinja_render_args;
/* malloc'd output, or NULL + tg_seterr (raise_exception's message is the
 * error text itself, prefixed with nothing). */
char *jinja_render(const jinja_template *t, const jinja_render_args *args);

#endif
