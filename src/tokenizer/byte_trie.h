/* byte_trie.h: a trie over byte strings (llama.cpp's naive_trie) for the
 * tokenizers that match vocabulary entries by walking the text byte by byte
 * (UGM's pieces and user-defined tokens, RWKV's byte strings). Nodes are
 * ints (0 the root); the edges live in one hash map keyed (node, byte). */
#ifndef TG_TOKENIZER_BYTE_TRIE_H
#define TG_TOKENIZER_BYTE_TRIE_H

#include <stddef.h>
#include <stdint.h>
#include "tokenizer/pairmap.h"
#include "util/util.h"

typedef struct {
  pairmap edges;            /* (node, byte) -> child in .rank */
  VEC(int32_t) value;       /* per node: the value ending there, or -1 */
} byte_trie;

void byte_trie_init(byte_trie *t);
/* Adds s -> value; a string already present takes the new value. */
void byte_trie_insert(byte_trie *t, const char *s, size_t n, int32_t value);
void byte_trie_free(byte_trie *t);

/* The child of node along byte c, or -1. */
static inline int byte_trie_child(const byte_trie *t, int node, unsigned char c) {
  const pairmap_entry *e = pairmap_get(&t->edges, node, c);
  return e ? e->rank : -1;
}
static inline int32_t byte_trie_value(const byte_trie *t, int node) { return t->value.v[node]; }

/* How far s[0..n) can be walked from the root (whether or not a value ends
 * there: naive_trie::get_longest_prefix). */
size_t byte_trie_walk(const byte_trie *t, const char *s, size_t n);

#endif
