/* pairmap.c: see pairmap.h. */
#include "tokenizer/pairmap.h"
#include <string.h>
#include "util/util.h"

static uint64_t pair_key(int32_t l, int32_t r) { return (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1; }

void pairmap_init(pairmap *m, size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;   /* load factor <= 1/2 */
  m->e = tg_xcalloc(cap, sizeof *m->e);
  m->cap = cap;
  m->n = 0;
}

static size_t pair_slot(const pairmap *m, uint64_t key) {
  size_t i = (size_t)tg_hash_mix(key, 0) & (m->cap - 1);
  while (m->e[i].key && m->e[i].key != key) i = (i + 1) & (m->cap - 1);
  return i;
}

static pairmap_entry *pair_insert(pairmap *m, int32_t left, int32_t right) {
  if (!m->cap) pairmap_init(m, 8);
  if ((m->n + 1) * 2 > m->cap) {
    pairmap old = *m;
    pairmap_init(m, old.cap);
    for (size_t i = 0; i < old.cap; i++)
      if (old.e[i].key) { m->e[pair_slot(m, old.e[i].key)] = old.e[i]; m->n++; }
    free(old.e);
  }
  uint64_t key = pair_key(left, right);
  pairmap_entry *e = &m->e[pair_slot(m, key)];
  if (!e->key) {
    *e = (pairmap_entry){ key, 0, -1 };
    m->n++;
    return e;
  }
  return NULL;
}

void pairmap_put(pairmap *m, int32_t left, int32_t right, int32_t rank, int32_t id) {
  pairmap_entry *e = pair_insert(m, left, right);
  if (e) { e->rank = rank; e->id = id; }
}

void pairmap_set(pairmap *m, int32_t left, int32_t right, int32_t rank, int32_t id) {
  pairmap_entry *e = pair_insert(m, left, right);
  if (!e) e = &m->e[pair_slot(m, pair_key(left, right))];
  e->rank = rank;
  e->id = id;
}

const pairmap_entry *pairmap_get(const pairmap *m, int32_t left, int32_t right) {
  if (!m->cap) return NULL;
  const pairmap_entry *e = &m->e[pair_slot(m, pair_key(left, right))];
  return e->key ? e : NULL;
}

void pairmap_free(pairmap *m) {
  free(m->e);
  memset(m, 0, sizeof *m);
}
