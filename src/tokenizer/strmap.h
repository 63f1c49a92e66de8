/* strmap.h: byte-string -> int32 hash map (open addressing, linear probing)
 * for the vocabulary (token text -> id) and the BPE merge ranks. Keys are
 * not copied: they must outlive the map. */
#ifndef TG_TOKENIZER_STRMAP_H
#define TG_TOKENIZER_STRMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct {
  const char *key;
  uint32_t len;
  int32_t val;
  uint64_t hash;
} strmap_entry;

typedef struct {
  strmap_entry *e;     /* cap slots; key NULL = empty */
  size_t cap, n;
} strmap;

/* Room for n keys without growing. */
void strmap_init(strmap *m, size_t n);
/* Adds key -> val. false (and the map unchanged) when key is present;
 * *old then gets its value when old is non-NULL. */
bool strmap_put(strmap *m, const char *key, size_t len, int32_t val, int32_t *old);
/* Starts loading the slot where key goes (a loop adding many keys asks
 * for one several keys ahead: the slots are spread over a table of
 * megabytes, and each would otherwise be a wait for memory). */
void strmap_prefetch(const strmap *m, const char *key, size_t len);
/* The value of key, or -1. */
int32_t strmap_get(const strmap *m, const char *key, size_t len);
void strmap_free(strmap *m);

#endif
