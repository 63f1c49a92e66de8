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
/* n bytes of fresh zero pages of their own (mmap), or NULL: made at once
 * when populate (MADV_POPULATE_WRITE: one call, not a fault per 4 KiB
 * page as they are first written), else as they are touched; from 2 MiB on
 * at a 2 MiB boundary and offered to transparent huge pages (one page per
 * 2 MiB; fewer TLB misses when streamed). tg_unmap_pages(p, n) with the
 * same n gives them back. For big tables and buffers. */
void *tg_map_pages(size_t n, bool populate);
void tg_unmap_pages(void *p, size_t n);
/* Makes the pages of [p, p + n) of a mapping at once (MADV_POPULATE_WRITE:
 * what populate does; read: MADV_POPULATE_READ, a file's pages mapped as
 * read), from any thread. Advice only: where the kernel refuses it the
 * pages fault in as they are touched. */
void tg_populate_pages(void *p, size_t n, bool write);
/* mkdir -p (mode 0755); 0 when path is (now) a directory, else -1. */
int tg_mkdir_p(const char *path);
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

/* ---- pointer -> pointer map (open addressing); keys are never NULL. A
 * key and its value share a slot (one cache line read per lookup). Walk
 * the entries as: for i < cap, if e[i].key: e[i].key, e[i].val. */
typedef struct { void *key, *val; } ptrmap_entry;
typedef struct { ptrmap_entry *e; size_t cap, n; } ptrmap;
void *pm_get(const ptrmap *m, const void *key);       /* NULL when absent */
void pm_put(ptrmap *m, const void *key, void *val);
/* Puts key -> val when key is absent: true; false (nothing changed) when present. */
bool pm_add(ptrmap *m, const void *key, void *val);
/* Where key's value is stored (stable until the next pm_put), or NULL. */
void **pm_slot_value(const ptrmap *m, const void *key);
void pm_free(ptrmap *m);
/* Makes an empty m room for n keys (no rehash while it fills). */
void pm_reserve(ptrmap *m, size_t n);

/* ---- checked arithmetic: every shape, size and offset computation that a
 * caller's numbers reach goes through these. Each returns true when the
 * result overflowed (then *r is unspecified), like __builtin_*_overflow. */
static inline bool tg_mul_overflow_i64(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool tg_add_overflow_i64(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool tg_sub_overflow_i64(int64_t a, int64_t b, int64_t *r) { return __builtin_sub_overflow(a, b, r); }
/* a * b for estimates of work (products of loop sizes, which several
 * reduces in one kernel can take past int64): INT64_MAX when the product
 * overflows. Sizes are not negative; never use this for a real size. */
static inline int64_t tg_mul_sat_i64(int64_t a, int64_t b) {
  int64_t r;
  return tg_mul_overflow_i64(a, b, &r) ? INT64_MAX : r;
}
/* The most elements a tensor (or any shape tg builds) may have: 2^59, so
 * that its size in bytes (8 per element at most) and index sums over it
 * (offsets, pads, strides) stay far inside int64. */
#define TG_MAX_NUMEL ((int64_t)1 << 59)
/* The product of n dims; -1 when a dim is negative or the product passes
 * TG_MAX_NUMEL. Zero dims count as ones for the bound, so every partial
 * product of the dims, in any order, fits too. */
static inline int64_t tg_checked_numel(const int64_t *dims, int n) {
  int64_t p = 1, nz = 1;
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] > 0 && (tg_mul_overflow_i64(nz, dims[i], &nz) || nz > TG_MAX_NUMEL)) return -1;
    p = dims[i] == 0 ? 0 : p;
  }
  return p ? nz : 0;
}
/* A double converted to int64 when it is finite and fits (truncated toward
 * zero, like a C cast); false otherwise (a plain cast would be undefined). */
static inline bool tg_f64_to_i64(double d, int64_t *r) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;   /* NaN fails too */
  *r = (int64_t)d;
  return true;
}


/* ---- time: seconds on the monotonic clock */
double tg_now_seconds(void);

#endif
