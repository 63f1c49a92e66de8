/* strmap.c: see strmap.h. */
#include "tokenizer/strmap.h"
#include <string.h>
#include "util/util.h"

static uint64_t strmap_hash(const char *key, size_t len) { return tg_hash_bytes(key, len, 0x7f4a7c15); }

void strmap_init(strmap *m, size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;   /* load factor <= 1/2 */
  m->e = tg_xcalloc(cap, sizeof *m->e);
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
  m->e = tg_xcalloc(m->cap, sizeof *m->e);
  for (size_t i = 0; i < old.cap; i++)
    if (old.e[i].key) m->e[strmap_slot(m, old.e[i].key, old.e[i].len, old.e[i].hash)] = old.e[i];
  free(old.e);
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

int32_t strmap_get(const strmap *m, const char *key, size_t len) {
  if (!m->cap) return -1;
  const strmap_entry *e = &m->e[strmap_slot(m, key, len, strmap_hash(key, len))];
  return e->key ? e->val : -1;
}

void strmap_free(strmap *m) {
  free(m->e);
  memset(m, 0, sizeof *m);
}
