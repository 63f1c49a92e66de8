/* pairmap.h: (left id, right id) -> (merge rank, merged id) hash map for
 * BPE merges between two vocabulary tokens: a merge step then costs one
 * integer lookup instead of hashing and comparing strings. */
#ifndef TG_TOKENIZER_PAIRMAP_H
#define TG_TOKENIZER_PAIRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t key;        /* ((left << 32) | right) + 1; 0 = empty slot */
  int32_t rank;
  int32_t id;          /* the token of left + right, or -1 */
} pairmap_entry;

typedef struct {
  pairmap_entry *e;
  size_t cap, n;
} pairmap;

void pairmap_init(pairmap *m, size_t n);
/* Adds the pair unless present (the first rank of a repeated merge wins). */
void pairmap_put(pairmap *m, int32_t left, int32_t right, int32_t rank, int32_t id);
/* Adds the pair or replaces its values. */
void pairmap_set(pairmap *m, int32_t left, int32_t right, int32_t rank, int32_t id);
/* The entry of the pair, or NULL. */
const pairmap_entry *pairmap_get(const pairmap *m, int32_t left, int32_t right);
void pairmap_free(pairmap *m);

#endif
