/* strmap.c: see strmap.h. */
#include "tokenizer/strmap.h"
#include <string.h>
#include "util/util.h"

static uint64_t strmap_hash(const char *key, size_t len) { return tg_hash_bytes(key, len, 0x7f4a7c15); }

/* A vocabulary's table is megabytes (151,936 tokens: 12 MiB): pages of its
 * own, made at once, rather than a page fault per 4 KiB as keys land in it
 * (a third of loading such a vocabulary) */
#if defined(__SANITIZE_ADDRESS__)
#define MAPPED_TABLE SIZE_MAX
#else
#define MAPPED_TABLE ((size_t)1 << 20)
#endif
static strmap_entry *table_new(size_t cap) {
  size_t bytes = cap * sizeof(strmap_entry);
  strmap_entry *e = bytes >= MAPPED_TABLE ? tg_map_pages(bytes, true) : NULL;
  return e ? e : tg_xcalloc(cap, sizeof(strmap_entry));
}
static void table_free(strmap_entry *e, size_t cap) {
  size_t bytes = cap * sizeof(strmap_entry);
  if (bytes >= MAPPED_TABLE) tg_unmap_pages(e, bytes);
  else free(e);
}

void strmap_init(strmap *m, size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;   /* load factor <= 1/2 */
  m->e = table_new(cap);
  m->cap = cap;
  m->n = 0;
}

static size_t strmap_slot(const strmap *m, const char *key, size_t len, uint64_t h) {
  size_t i = (size_t)h & (m->cap - 1);
  for (;;) {
    const strmap_entry *e = &m->e[i];
    if (!e->key || (e->hash == h && e->len == len && !memcmp(e->key, key, len))) return i;
    i = (i + 1) & (m->cap - 1);
  }
}

static void strmap_grow(strmap *m) {
  strmap old = *m;
  m->cap *= 2;
  m->e = table_new(m->cap);
  for (size_t i = 0; i < old.cap; i++)
    if (old.e[i].key) m->e[strmap_slot(m, old.e[i].key, old.e[i].len, old.e[i].hash)] = old.e[i];
  table_free(old.e, old.cap);
}

bool strmap_put(strmap *m, const char *key, size_t len, int32_t val, int32_t *old) {
  if (!m->cap) strmap_init(m, 8);
  if ((m->n + 1) * 2 > m->cap) strmap_grow(m);
  uint64_t h = strmap_hash(key, len);
  strmap_entry *e = &m->e[strmap_slot(m, key, len, h)];
  if (e->key) {
    if (old) *old = e->val;
    return false;
  }
  *e = (strmap_entry){ key, (uint32_t)len, val, h };
  m->n++;
  return true;
}

void strmap_prefetch(const strmap *m, const char *key, size_t len) {
  if (m->cap) __builtin_prefetch(&m->e[(size_t)strmap_hash(key, len) & (m->cap - 1)], 1, 1);
}

int32_t strmap_get(const strmap *m, const char *key, size_t len) {
  if (!m->cap) return -1;
  const strmap_entry *e = &m->e[strmap_slot(m, key, len, strmap_hash(key, len))];
  return e->key ? e->val : -1;
}

void strmap_free(strmap *m) {
  if (m->e) table_free(m->e, m->cap);
  memset(m, 0, sizeof *m);
}
