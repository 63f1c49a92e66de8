/* jinja_globals.c: the global functions chat templates call: range,
 * namespace, dict, raise_exception, strftime_now, joiner. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "chat/jinja_eval.h"

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
  /* the count, exactly, in unsigned arithmetic (stop - start and -step may
   * not fit in int64); each item is start + k*step, which does fit */
  uint64_t count = 0;
  if (step > 0 && start < stop) count = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
  if (step < 0 && start > stop) count = ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1;
  if (count > (uint64_t)c->lim.max_range)
    jctx_fail(c, "range() of %llu items exceeds the limit of %lld", (unsigned long long)count, (long long)c->lim.max_range);
  jv out = jv_list(&c->h, (int)count);
  for (uint64_t k = 0; k < count; k++) jlist_push(&c->h, out.l, jv_int((int64_t)((uint64_t)start + k * (uint64_t)step)));
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
