/* jinja_eval.c: runs a parsed template. Scopes: the render's variables and
 * globals at the root, a new scope per for loop and per macro call (so a
 * `set` inside a loop does not leak out, which is why templates use
 * namespace()); `if` opens none. Missing names, keys and attributes are
 * undefined: they print as nothing, are false and fail `is defined`. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja_eval.h"
#include "util/util.h"

enum { CTRL_NONE, CTRL_BREAK, CTRL_CONTINUE };

_Noreturn void jctx_fail(jctx *c, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  jinja_position(c->src, c->pos, &line, &col);
  jfail(&c->err, "%s (template line %d, column %d)", msg, line, col);
}

void jctx_charge(jctx *c, int64_t n) {
  c->iterations += n;
  if (c->iterations > c->lim.max_iterations)
    jctx_fail(c, "template exceeded its work limit (%lld loop iterations and items visited)", (long long)c->lim.max_iterations);
}

jinja_limits jinja_default_limits(void) {
  return (jinja_limits){
    .max_output = (size_t)64 << 20,
    .max_memory = (size_t)512 << 20,
    .max_iterations = 10000000,
    .max_depth = 100,
    .max_range = 1000000,
  };
}

static jscope *new_scope(jctx *c, jscope *parent) {
  jscope *s = jalloc(&c->h, sizeof *s);
  s->vars = jv_dict(&c->h).d;
  s->parent = parent;
  return s;
}

static jv lookup(jscope *s, const char *name) {
  for (; s; s = s->parent) {
    jv *v = jdict_gets(s->vars, name);
    if (v) return *v;
  }
  return jv_undef();
}

static jv eval(jctx *c, const jnode *n, jscope *s);
static void exec_body(jctx *c, const jnodes *body, jscope *s, jbuf *out);

/* ---- values from expressions ---- */

jlist *jinja_iter_items(jctx *c, jv v) {
  jheap *h = &c->h;
  jctx_charge(c, v.k == JV_LIST ? v.l->n : v.k == JV_DICT ? v.d->n : v.k == JV_STR ? (int64_t)v.s.n : 0);
  switch (v.k) {
  case JV_LIST: return v.l;
  case JV_UNDEF: case JV_NONE: return jv_list(h, 0).l;
  case JV_DICT: {
    jlist *l = jv_list(h, v.d->n).l;
    for (int i = 0; i < v.d->n; i++) jlist_push(h, l, v.d->keys[i]);
    return l;
  }
  case JV_STR: {   /* one item per UTF-8 character */
    jlist *l = jv_list(h, (int)v.s.n).l;
    for (size_t i = 0; i < v.s.n;) {
      size_t k = 1;
      while (i + k < v.s.n && ((unsigned char)v.s.p[i + k] & 0xC0) == 0x80) k++;
      jlist_push(h, l, jv_strref(v.s.p + i, k));
      i += k;
    }
    return l;
  }
  default: jctx_fail(c, "'%s' object is not iterable", jv_kind_name(v));
  }
}

jv jinja_getattr(jctx *c, jv obj, jv key) {
  (void)c;
  if (obj.k == JV_DICT) {
    jv *v = jdict_get(obj.d, key);
    return v ? *v : jv_undef();
  }
  if ((obj.k == JV_LIST || obj.k == JV_STR) && (key.k == JV_INT || key.k == JV_BOOL)) {
    int64_t n = obj.k == JV_LIST ? obj.l->n : (int64_t)obj.s.n;
    int64_t i = key.k == JV_INT ? key.i : key.b;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return jv_undef();
    return obj.k == JV_LIST ? obj.l->v[i] : jv_strref(obj.s.p + i, 1);
  }
  return jv_undef();
}

static int64_t slice_bound(jctx *c, jv v, int64_t n, int64_t step, bool is_start) {
  if (v.k == JV_UNDEF || v.k == JV_NONE) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
  if (v.k != JV_INT) jctx_fail(c, "slice indices must be integers");
  int64_t i = v.i;
  if (i < 0) i += n;
  if (step > 0) return i < 0 ? 0 : i > n ? n : i;
  return i < -1 ? -1 : i >= n ? n - 1 : i;
}

static jv eval_slice(jctx *c, const jnode *n, jscope *s) {
  jv obj = eval(c, n->a, s);
  jv parts[3];
  for (int k = 0; k < 3; k++) parts[k] = n->args.v[k] ? eval(c, n->args.v[k], s) : jv_none();
  int64_t step = parts[2].k == JV_INT ? parts[2].i : 1;
  if (step == 0) jctx_fail(c, "slice step cannot be zero");
  if (obj.k != JV_LIST && obj.k != JV_STR) {
    if (obj.k == JV_UNDEF || obj.k == JV_NONE) return jv_undef();
    jctx_fail(c, "cannot slice a %s", jv_kind_name(obj));
  }
  int64_t len = obj.k == JV_LIST ? obj.l->n : (int64_t)obj.s.n;
  jctx_charge(c, len);
  int64_t a = slice_bound(c, parts[0], len, step, true), b = slice_bound(c, parts[1], len, step, false);
  if (obj.k == JV_LIST) {
    jv out = jv_list(&c->h, 0);
    for (int64_t i = a; step > 0 ? i < b : i > b;) {
      jlist_push(&c->h, out.l, obj.l->v[i]);
      if (tg_add_overflow_i64(i, step, &i)) break;   /* a huge step: past either end */
    }
    return out;
  }
  jbuf out = { 0 };
  for (int64_t i = a; step > 0 ? i < b : i > b;) {
    jbuf_put(&c->h, &out, obj.s.p + i, 1);
    if (tg_add_overflow_i64(i, step, &i)) break;
  }
  return jv_from_buf(&out);
}

static jv arith(jctx *c, const char *op, jv a, jv b) {
  jheap *h = &c->h;
  if (!strcmp(op, "~")) {
    jbuf out = { 0 };
    jv_write_str(h, &out, a);
    jv_write_str(h, &out, b);
    return jv_from_buf(&out);
  }
  if (!strcmp(op, "+")) {
    if (a.k == JV_LIST && b.k == JV_LIST) {
      jctx_charge(c, a.l->n + b.l->n);
      jv out = jv_list(h, a.l->n + b.l->n);
      for (int i = 0; i < a.l->n; i++) jlist_push(h, out.l, a.l->v[i]);
      for (int i = 0; i < b.l->n; i++) jlist_push(h, out.l, b.l->v[i]);
      return out;
    }
    if (a.k == JV_STR || b.k == JV_STR) return arith(c, "~", a, b);   /* minja: str + x concatenates */
  }
  if (!strcmp(op, "*") && ((a.k == JV_STR && b.k == JV_INT) || (a.k == JV_INT && b.k == JV_STR) ||
                           (a.k == JV_LIST && b.k == JV_INT))) {
    jv seq = a.k == JV_INT ? b : a;
    int64_t times = a.k == JV_INT ? a.i : b.i;
    if (times < 0) times = 0;
    size_t unit = seq.k == JV_STR ? seq.s.n : (size_t)seq.l->n * sizeof(jv);
    if (unit && (uint64_t)times > c->lim.max_output / unit) jctx_fail(c, "repetition result is too large");
    if (seq.k == JV_STR) {
      jbuf out = { 0 };
      for (int64_t i = 0; i < times; i++) jbuf_put(h, &out, seq.s.p, seq.s.n);
      return jv_from_buf(&out);
    }
    jv out = jv_list(h, 0);
    for (int64_t i = 0; i < times; i++)
      for (int k = 0; k < seq.l->n; k++) jlist_push(h, out.l, seq.l->v[k]);
    return out;
  }
  if (!strcmp(op, "%") && a.k == JV_STR) return jinja_percent_format(c, a, b);
  if (!jv_is_number(a) || !jv_is_number(b))
    jctx_fail(c, "unsupported operand types for %s: %s and %s", op, jv_kind_name(a), jv_kind_name(b));
  bool ints = a.k != JV_FLOAT && b.k != JV_FLOAT;
  int64_t x = a.k == JV_BOOL ? a.b : a.i, y = b.k == JV_BOOL ? b.b : b.i, r;
  double fx = jv_num(a), fy = jv_num(b);
  /* integers are 64-bit: where Python's would grow past that, a template error */
#define INT_OVERFLOW() jctx_fail(c, "integer overflow: %lld %s %lld does not fit in 64 bits", (long long)x, op, (long long)y)
  switch (op[0]) {
  case '+':
    if (!ints) return jv_float(fx + fy);
    if (tg_add_overflow_i64(x, y, &r)) INT_OVERFLOW();
    return jv_int(r);
  case '-':
    if (!ints) return jv_float(fx - fy);
    if (tg_sub_overflow_i64(x, y, &r)) INT_OVERFLOW();
    return jv_int(r);
  case '*':
    if (op[1] == '*') {
      if (ints && y >= 0) {
        if (x == 0 || x == 1) return jv_int(y == 0 ? 1 : x);
        if (x == -1) return jv_int(y % 2 ? -1 : 1);
        r = 1;   /* |x| >= 2: overflows within 63 steps */
        for (int64_t i = 0; i < y; i++)
          if (tg_mul_overflow_i64(r, x, &r)) INT_OVERFLOW();
        return jv_int(r);
      }
      return jv_float(pow(fx, fy));
    }
    if (!ints) return jv_float(fx * fy);
    if (tg_mul_overflow_i64(x, y, &r)) INT_OVERFLOW();
    return jv_int(r);
  case '/':
    if (fy == 0) jctx_fail(c, "division by zero");
    if (op[1] == '/') {
      if (ints) {   /* floor division, as Python */
        if (x == INT64_MIN && y == -1) INT_OVERFLOW();
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
        return jv_int(q);
      }
      return jv_float(floor(fx / fy));
    }
    return jv_float(fx / fy);
  case '%':
    if (fy == 0) jctx_fail(c, "modulo by zero");
    if (ints) {   /* the sign of the divisor, as Python */
      if (y == -1) return jv_int(0);   /* INT64_MIN % -1 traps in C */
      r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return jv_int(r);
    }
    return jv_float(fx - floor(fx / fy) * fy);
  }
#undef INT_OVERFLOW
  jctx_fail(c, "unknown operator %s", op);
}

static bool contains(jctx *c, jv container, jv x) {
  switch (container.k) {
  case JV_STR:
    if (x.k != JV_STR) jctx_fail(c, "'in <string>' requires a string on the left, not %s", jv_kind_name(x));
    if (x.s.n == 0) return true;
    return memmem(container.s.p, container.s.n, x.s.p, x.s.n) != NULL;
  case JV_LIST:
    jctx_charge(c, container.l->n);
    for (int i = 0; i < container.l->n; i++)
      if (jv_equal(container.l->v[i], x)) return true;
    return false;
  case JV_DICT: return jdict_get(container.d, x) != NULL;
  case JV_UNDEF: case JV_NONE: return false;
  default: jctx_fail(c, "argument of type '%s' is not iterable", jv_kind_name(container));
  }
}

static jv eval_binary(jctx *c, const jnode *n, jscope *s) {
  jv a = eval(c, n->a, s), b = eval(c, n->b, s);
  c->pos = n->pos;
  const char *op = n->name;
  if (!strcmp(op, "==")) return jv_bool(jv_equal(a, b));
  if (!strcmp(op, "!=")) return jv_bool(!jv_equal(a, b));
  if (!strcmp(op, "in")) return jv_bool(contains(c, b, a));
  if (!strcmp(op, "not in")) return jv_bool(!contains(c, b, a));
  if (op[0] == '<' || op[0] == '>') {
    if (!((jv_is_number(a) && jv_is_number(b)) || (a.k == JV_STR && b.k == JV_STR) || (a.k == JV_LIST && b.k == JV_LIST)))
      jctx_fail(c, "'%s' not supported between %s and %s", op, jv_kind_name(a), jv_kind_name(b));
    int r = jv_compare(&c->h, a, b);
    if (!strcmp(op, "<")) return jv_bool(r < 0);
    if (!strcmp(op, ">")) return jv_bool(r > 0);
    if (!strcmp(op, "<=")) return jv_bool(r <= 0);
    return jv_bool(r >= 0);
  }
  return arith(c, op, a, b);
}

/* evaluates call arguments, expanding *list and **dict */
static void eval_args(jctx *c, const jnode *n, jscope *s, jargs *out) {
  jheap *h = &c->h;
  jlist *pos = jv_list(h, n->args.n).l;
  jdict *kw = jv_dict(h).d;
  for (int i = 0; i < n->args.n; i++) {
    jv v = eval(c, n->args.v[i], s);
    const char *k = n->kw ? n->kw[i] : NULL;
    if (!k) jlist_push(h, pos, v);
    else if (!strcmp(k, "*")) {
      jlist *items = jinja_iter_items(c, v);
      for (int j = 0; j < items->n; j++) jlist_push(h, pos, items->v[j]);
    } else if (!strcmp(k, "**")) {
      if (v.k != JV_DICT) jctx_fail(c, "argument after ** must be a mapping");
      for (int j = 0; j < v.d->n; j++) jdict_set(h, kw, v.d->keys[j], v.d->vals[j]);
    } else {
      jdict_sets(h, kw, k, v);
    }
  }
  out->pos = pos->v;
  out->npos = pos->n;
  out->kwn = jalloc(h, (size_t)(kw->n + 1) * sizeof(char *));
  out->kwv = kw->vals;
  for (int i = 0; i < kw->n; i++) out->kwn[i] = kw->keys[i].k == JV_STR ? kw->keys[i].s.p : "";
  out->nkw = kw->n;
}

static jv call_macro(jctx *c, jfunc *f, jargs *a, jv caller) {
  if (++c->depth > c->lim.max_depth)
    jctx_fail(c, "macro recursion too deep (more than %d nested calls of '%s')", c->lim.max_depth, f->name ? f->name : "caller");
  const jnode *m = f->node;
  jscope *s = new_scope(c, f->closure);
  for (int i = 0; i < m->args.n; i++) {
    const char *pname = m->kw[i];
    jv *v = i < a->npos ? &a->pos[i] : jarg(a, -1, pname);
    jdict_sets(&c->h, s->vars, pname, v ? *v : m->args.v[i] ? eval(c, m->args.v[i], s) : jv_undef());
  }
  if (caller.k == JV_FUNC) jdict_sets(&c->h, s->vars, "caller", caller);
  jbuf out = { .limit = c->lim.max_output };
  int saved_ctrl = c->ctrl;
  exec_body(c, &m->body, s, &out);
  c->ctrl = saved_ctrl;
  c->depth--;
  return jv_from_buf(&out);
}

jv jinja_call(jctx *c, jv fn, jargs *a) {
  if (fn.k != JV_FUNC) jctx_fail(c, "%s is not callable", fn.k == JV_UNDEF ? "an undefined value" : jv_kind_name(fn));
  jfunc *f = fn.fn;
  switch (f->kind) {
  case JF_BUILTIN: return f->fn(c, a);
  case JF_MACRO: return call_macro(c, f, a, jv_undef());
  case JF_CYCLE: {
    if (a->npos == 0) return jv_undef();
    return a->pos[f->state.i % a->npos];
  }
  case JF_JOINER:
    if (!f->used) { f->used = true; return jv_strref("", 0); }
    return f->state;
  }
  return jv_undef();
}

static jv eval_call(jctx *c, const jnode *n, jscope *s, jv caller) {
  jargs a;
  const jnode *callee = n->a;
  if (callee->k == N_ATTR) {
    jv obj = eval(c, callee->a, s);
    eval_args(c, n, s, &a);
    c->pos = n->pos;
    if (obj.k == JV_DICT) {
      jv *member = jdict_gets(obj.d, callee->name);
      if (member && member->k == JV_FUNC) {
        if (caller.k == JV_FUNC && member->fn->kind == JF_MACRO) return call_macro(c, member->fn, &a, caller);
        return jinja_call(c, *member, &a);
      }
    }
    bool found = false;
    jv r = jinja_method(c, obj, callee->name, &a, &found);
    if (!found) jctx_fail(c, "%s has no method '%s'", jv_kind_name(obj), callee->name);
    return r;
  }
  jv fn = eval(c, callee, s);
  eval_args(c, n, s, &a);
  c->pos = n->pos;
  if (fn.k != JV_FUNC) {
    if (callee->k == N_NAME) jctx_fail(c, "'%s' is %s, not a function", callee->name, fn.k == JV_UNDEF ? "undefined" : jv_kind_name(fn));
    jctx_fail(c, "cannot call a %s", jv_kind_name(fn));
  }
  if (caller.k == JV_FUNC && fn.fn->kind == JF_MACRO) return call_macro(c, fn.fn, &a, caller);
  return jinja_call(c, fn, &a);
}

static jv eval(jctx *c, const jnode *n, jscope *s) {
  jheap *h = &c->h;
  switch (n->k) {
  case N_LIT: return n->lit;
  case N_NAME: return lookup(s, n->name);
  case N_LIST: case N_TUPLE: {
    jv l = jv_list(h, n->args.n);
    l.l->tuple = n->k == N_TUPLE;
    for (int i = 0; i < n->args.n; i++) jlist_push(h, l.l, eval(c, n->args.v[i], s));
    return l;
  }
  case N_DICT: {
    jv d = jv_dict(h);
    for (int i = 0; i + 1 < n->args.n; i += 2) jdict_set(h, d.d, eval(c, n->args.v[i], s), eval(c, n->args.v[i + 1], s));
    return d;
  }
  case N_ATTR: case N_INDEX: {
    /* as jinja2: a missing key gives undefined, but reading into an
     * undefined value is an error (minja's probes rely on it) */
    jv obj = eval(c, n->a, s), key = n->k == N_ATTR ? jv_strref(n->name, strlen(n->name)) : eval(c, n->b, s);
    if (obj.k == JV_UNDEF) {
      c->pos = n->pos;
      jbuf what = { 0 };
      jv_write_repr(h, &what, key);
      jctx_fail(c, "cannot read %s of an undefined value%s%s", what.p, n->a->k == N_NAME ? ": " : "",
                n->a->k == N_NAME ? n->a->name : "");
    }
    return jinja_getattr(c, obj, key);
  }
  case N_SLICE: return eval_slice(c, n, s);
  case N_CALL: return eval_call(c, n, s, jv_undef());
  case N_FILTER: {
    jv in = eval(c, n->a, s);
    jargs a;
    eval_args(c, n, s, &a);
    c->pos = n->pos;
    return jinja_filter(c, n->name, in, &a);
  }
  case N_TEST: {
    jv in = eval(c, n->a, s);
    jargs a;
    eval_args(c, n, s, &a);
    c->pos = n->pos;
    return jv_bool(jinja_test(c, n->name, in, &a) != n->negate);
  }
  case N_NOT: return jv_bool(!jv_truthy(eval(c, n->a, s)));
  case N_NEG: {
    jv v = eval(c, n->a, s);
    c->pos = n->pos;
    if (v.k == JV_INT) {
      if (v.i == INT64_MIN) jctx_fail(c, "integer overflow: -(%lld) does not fit in 64 bits", (long long)v.i);
      return jv_int(-v.i);
    }
    if (v.k == JV_FLOAT) return jv_float(-v.f);
    if (v.k == JV_BOOL) return jv_int(-(int64_t)v.b);
    jctx_fail(c, "bad operand type for unary -: %s", jv_kind_name(v));
  }
  case N_AND: {
    jv a = eval(c, n->a, s);
    return jv_truthy(a) ? eval(c, n->b, s) : a;
  }
  case N_OR: {
    jv a = eval(c, n->a, s);
    return jv_truthy(a) ? a : eval(c, n->b, s);
  }
  case N_COND:
    if (jv_truthy(eval(c, n->b, s))) return eval(c, n->a, s);
    return n->c ? eval(c, n->c, s) : jv_undef();
  case N_BIN: return eval_binary(c, n, s);
  case N_BLOCK_INPUT: return c->block_input;
  default: break;
  }
  jctx_fail(c, "internal error: not an expression");
}

/* ---- statements ---- */

static void assign_targets(jctx *c, jscope *s, const char *const *names, int n, jv v) {
  if (n == 1) { jdict_sets(&c->h, s->vars, names[0], v); return; }
  if (v.k != JV_LIST) jctx_fail(c, "cannot unpack a %s into %d names", jv_kind_name(v), n);
  if (v.l->n != n) jctx_fail(c, "cannot unpack %d values into %d names", v.l->n, n);
  for (int i = 0; i < n; i++) jdict_sets(&c->h, s->vars, names[i], v.l->v[i]);
}

static void exec_for(jctx *c, const jnode *n, jscope *s, jbuf *out) {
  jheap *h = &c->h;
  jv seq = eval(c, n->a, s);
  c->pos = n->pos;
  jlist *items = jinja_iter_items(c, seq);
  jscope *ls = new_scope(c, s);
  if (n->b) {   /* loop filter: loop.* counts only the kept items */
    jlist *kept = jv_list(h, items->n).l;
    for (int i = 0; i < items->n; i++) {
      jctx_charge(c, 1);
      assign_targets(c, ls, n->targets, n->ntargets, items->v[i]);
      if (jv_truthy(eval(c, n->b, ls))) jlist_push(h, kept, items->v[i]);
    }
    items = kept;
  }
  if (items->n == 0) {
    exec_body(c, &n->orelse, s, out);
    return;
  }
  /* loop.* lives in one dict whose slots are overwritten per iteration */
  static const char *const keys[] = { "index", "index0", "revindex", "revindex0", "first", "last", "length",
                                      "depth", "depth0", "previtem", "nextitem", "cycle" };
  enum { NKEYS = sizeof keys / sizeof keys[0] };
  jv loop = jv_dict(h);
  for (int k = 0; k < NKEYS; k++) jdict_sets(h, loop.d, keys[k], jv_undef());
  jfunc *cycle = jalloc(h, sizeof *cycle);
  cycle->kind = JF_CYCLE;
  cycle->name = "cycle";
  jdict_sets(h, ls->vars, "loop", loop);
  int len = items->n;
  for (int i = 0; i < len; i++) {
    c->pos = n->pos;
    jctx_charge(c, 1);
    assign_targets(c, ls, n->targets, n->ntargets, items->v[i]);
    cycle->state = jv_int(i);
    jv vals[NKEYS] = {
      jv_int(i + 1), jv_int(i), jv_int(len - i), jv_int(len - i - 1), jv_bool(i == 0), jv_bool(i == len - 1),
      jv_int(len), jv_int(1), jv_int(0), i > 0 ? items->v[i - 1] : jv_undef(), i + 1 < len ? items->v[i + 1] : jv_undef(),
      { .k = JV_FUNC, .fn = cycle },
    };
    if (loop.d->n != NKEYS) jctx_fail(c, "the loop variable was modified");
    memcpy(loop.d->vals, vals, sizeof vals);
    exec_body(c, &n->body, ls, out);
    if (c->ctrl == CTRL_BREAK) { c->ctrl = CTRL_NONE; break; }
    if (c->ctrl == CTRL_CONTINUE) c->ctrl = CTRL_NONE;
  }
}

static void exec_stmt(jctx *c, const jnode *n, jscope *s, jbuf *out) {
  jheap *h = &c->h;
  switch (n->k) {
  case S_TEXT: jbuf_put(h, out, n->lit.s.p, n->lit.s.n); return;
  case S_OUT: {
    jv v = eval(c, n->a, s);
    jv_write_str(h, out, v);
    return;
  }
  case S_IF:
    if (jv_truthy(eval(c, n->a, s))) exec_body(c, &n->body, s, out);
    else exec_body(c, &n->orelse, s, out);
    return;
  case S_FOR: exec_for(c, n, s, out); return;
  case S_SET: {
    jv v = eval(c, n->b, s);
    c->pos = n->pos;
    if (n->a) {
      jv target = eval(c, n->a, s);
      if (target.k != JV_DICT) jctx_fail(c, "cannot set attribute '%s' on %s '%s'", n->name, jv_kind_name(target), n->a->name);
      jdict_sets(h, target.d, n->name, v);
      return;
    }
    assign_targets(c, s, n->targets, n->ntargets, v);
    return;
  }
  case S_SET_BLOCK: {
    jbuf b = { .limit = c->lim.max_output };
    exec_body(c, &n->body, s, &b);
    jdict_sets(h, s->vars, n->targets[0], jv_from_buf(&b));
    return;
  }
  case S_MACRO: {
    jfunc *f = jalloc(h, sizeof *f);
    f->kind = JF_MACRO;
    f->name = n->name;
    f->node = n;
    f->closure = s;
    jdict_sets(h, s->vars, n->name, (jv){ .k = JV_FUNC, .fn = f });
    return;
  }
  case S_CALL_BLOCK: {
    jfunc *f = jalloc(h, sizeof *f);
    f->kind = JF_MACRO;
    f->node = n;
    f->closure = s;
    jv r = eval_call(c, n->a, s, (jv){ .k = JV_FUNC, .fn = f });
    jv_write_str(h, out, r);
    return;
  }
  case S_FILTER_BLOCK: {
    jbuf b = { .limit = c->lim.max_output };
    exec_body(c, &n->body, s, &b);
    jv saved = c->block_input;
    c->block_input = jv_from_buf(&b);
    jv r = eval(c, n->a, s);
    c->block_input = saved;
    jv_write_str(h, out, r);
    return;
  }
  case S_BREAK: c->ctrl = CTRL_BREAK; return;
  case S_CONTINUE: c->ctrl = CTRL_CONTINUE; return;
  case S_GROUP: exec_body(c, &n->body, s, out); return;
  default: jctx_fail(c, "internal error: not a statement");
  }
}

static void exec_body(jctx *c, const jnodes *body, jscope *s, jbuf *out) {
  for (int i = 0; i < body->n && c->ctrl == CTRL_NONE; i++) {
    c->pos = body->v[i]->pos;
    exec_stmt(c, body->v[i], s, out);
  }
}

char *jinja_render(const jinja_template *t, const jinja_render_args *args) {
  jctx *c = tg_xcalloc(1, sizeof *c);
  c->lim = args->limits;
  c->h.ar = jarena_new(c->lim.max_memory);
  c->h.err = &c->err;
  c->src = t->src;
  c->now = args->now;
  if (setjmp(c->err.jb)) {
    tg_seterr("%s", c->err.msg);
    jarena_free(c->h.ar);
    free(c);
    return NULL;
  }
  jscope *root = new_scope(c, NULL);
  jinja_add_globals(c, root->vars);
  if (args->vars) {
    jv vars = jv_from_cjson(&c->h, args->vars);
    if (vars.k == JV_DICT)
      for (int i = 0; i < vars.d->n; i++) jdict_set(&c->h, root->vars, vars.d->keys[i], vars.d->vals[i]);
  }
  jbuf out = { .limit = c->lim.max_output };
  exec_body(c, &t->root->body, new_scope(c, root), &out);
  char *r = tg_xmalloc(out.n + 1);
  if (out.n) memcpy(r, out.p, out.n);
  r[out.n] = 0;
  jarena_free(c->h.ar);
  free(c);
  return r;
}
