/* util.h: small helpers every layer uses: errors, growable arrays, string
 * buffers, a pointer-keyed hash map and hashing. */
#ifndef TG_UTIL_H
#define TG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors: a thread-local message, set by the layer that failed.
 * tg_seterr returns -1 so `return tg_seterr(...)` reads naturally; TG_FAIL
 * sets the message and returns NULL from the current function. */
int tg_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define TG_FAIL(...) do { tg_seterr(__VA_ARGS__); return NULL; } while (0)

/* ---- allocation that never returns NULL (aborts only on real OOM) */
void *tg_xmalloc(size_t n);
void *tg_xcalloc(size_t n, size_t sz);
void *tg_xrealloc(void *p, size_t n);
char *tg_xstrdup(const char *s);

/* ---- growable arrays: struct { T *v; int n, cap; } */
#define VEC(T) struct { T *v; int n, cap; }
#define VEC_PUSH(a, x) do { if ((a).n == (a).cap) { (a).cap = (a).cap ? (a).cap * 2 : 8; \
  (a).v = tg_xrealloc((a).v, (size_t)(a).cap * sizeof(*(a).v)); } (a).v[(a).n++] = (x); } while (0)
#define VEC_FREE(a) do { free((a).v); (a).v = NULL; (a).n = (a).cap = 0; } while (0)

/* ---- string buffer */
typedef struct { char *s; size_t n, cap; } strbuf;
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_puts(strbuf *b, const char *s);
/* Appends n bytes (which may hold NULs); keeps the buffer NUL-terminated. */
void sb_append(strbuf *b, const void *p, size_t n);
void sb_free(strbuf *b);

/* ---- hashing */
uint64_t tg_hash_bytes(const void *p, size_t n, uint64_t seed);
static inline uint64_t tg_hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 29;
  return h;
}

/* ---- pointer -> pointer map (open addressing); keys are never NULL */
typedef struct { void **keys; void **vals; size_t cap, n; } ptrmap;
void *pm_get(const ptrmap *m, const void *key);       /* NULL when absent */
void pm_put(ptrmap *m, const void *key, void *val);
/* Where key's value is stored (stable until the next pm_put), or NULL. */
void **pm_slot_value(const ptrmap *m, const void *key);
void pm_free(ptrmap *m);

/* ---- environment */
int64_t tg_getenv_int(const char *name, int64_t dflt);

#endif
