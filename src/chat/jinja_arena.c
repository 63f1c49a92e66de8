/* jinja_arena.c: the bump allocator behind parses and renders. A render's
 * values are never freed one by one (lists and dicts are shared by reference,
 * as in Python); the arena goes away with the render, and its byte limit is
 * what bounds a template's memory. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/jinja.h"
#include "util/util.h"

typedef struct jchunk {
  struct jchunk *next;
  size_t used, cap;
  max_align_t data[];
} jchunk;

struct jarena {
  jchunk *head;
  size_t total, limit;
};

jarena *jarena_new(size_t limit_bytes) {
  jarena *a = tg_xcalloc(1, sizeof *a);
  a->limit = limit_bytes;
  return a;
}

void jarena_free(jarena *a) {
  if (!a) return;
  for (jchunk *c = a->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(a);
}

void *jarena_try_alloc(jarena *a, size_t n) {
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  if (n == 0) n = sizeof(max_align_t);
  jchunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    if (a->total + cap > a->limit) return NULL;
    c = tg_xmalloc(sizeof *c + cap);
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
    a->total += cap;
  }
  void *p = (char *)c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

_Noreturn void jfail(jerr *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  longjmp(e->jb, 1);
}

void *jalloc(jheap *h, size_t n) {
  void *p = jarena_try_alloc(h->ar, n);
  if (!p) jfail(h->err, "template render exceeded its memory limit");
  return p;
}
