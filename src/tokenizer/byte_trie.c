/* byte_trie.c: see byte_trie.h. */
#include "tokenizer/byte_trie.h"

void byte_trie_init(byte_trie *t) {
  *t = (byte_trie){ 0 };
  VEC_PUSH(t->value, -1);
}

void byte_trie_insert(byte_trie *t, const char *s, size_t n, int32_t value) {
  int node = 0;
  for (size_t i = 0; i < n; i++) {
    int next = byte_trie_child(t, node, (unsigned char)s[i]);
    if (next < 0) {
      next = t->value.n;
      VEC_PUSH(t->value, -1);
      pairmap_put(&t->edges, node, (unsigned char)s[i], next, -1);
    }
    node = next;
  }
  t->value.v[node] = value;
}

size_t byte_trie_walk(const byte_trie *t, const char *s, size_t n) {
  size_t i = 0;
  for (int node = 0; i < n && (node = byte_trie_child(t, node, (unsigned char)s[i])) >= 0;) i++;
  return i;
}

void byte_trie_free(byte_trie *t) {
  pairmap_free(&t->edges);
  VEC_FREE(t->value);
}
