/* bigram_heap.h: the priority queue of candidate merges shared by the SPM
 * and BPE encoders: the best priority first (SPM: highest score; BPE: lowest
 * rank, given as -rank), ties to the leftmost pair, as llama.cpp orders
 * them. A merge whose symbols changed since it was queued is recognized by
 * its size and skipped by the caller. */
#ifndef TG_TOKENIZER_BIGRAM_HEAP_H
#define TG_TOKENIZER_BIGRAM_HEAP_H

#include <stddef.h>
#include "util/util.h"

typedef struct {
  double prio;
  int left, right;
  size_t size;       /* bytes of left + right when queued */
  int32_t id;        /* the token left + right make (SYM_ID_UNKNOWN: look it up) */
} bigram;

typedef VEC(bigram) bigram_heap;

static inline bool bigram_before(const bigram *a, const bigram *b) {
  return a->prio > b->prio || (a->prio == b->prio && a->left < b->left);
}

static inline void bigram_push(bigram_heap *h, bigram b) {
  VEC_PUSH(*h, b);
  int i = h->n - 1;
  while (i > 0) {
    int p = (i - 1) / 2;
    if (!bigram_before(&h->v[i], &h->v[p])) break;
    bigram tmp = h->v[i]; h->v[i] = h->v[p]; h->v[p] = tmp;
    i = p;
  }
}

static inline bigram bigram_pop(bigram_heap *h) {
  bigram top = h->v[0];
  h->v[0] = h->v[--h->n];
  int i = 0;
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && bigram_before(&h->v[l], &h->v[m])) m = l;
    if (r < h->n && bigram_before(&h->v[r], &h->v[m])) m = r;
    if (m == i) break;
    bigram tmp = h->v[i]; h->v[i] = h->v[m]; h->v[m] = tmp;
    i = m;
  }
  return top;
}

/* A symbol of the text being merged: bytes [off, off+n) of the word, linked
 * to its live neighbours; n == 0 once merged into its left neighbour. id is
 * its token, -1 when its text is none, SYM_ID_UNKNOWN when not looked up. */
#define SYM_ID_UNKNOWN (-2)
typedef struct {
  int prev, next;
  size_t off, n;
  int32_t id;
} merge_symbol;
typedef VEC(merge_symbol) symbol_vec;

/* Merges the best queued pair of syms until none is left (the caller queued
 * every initial neighbour pair); add_pair(ctx, left, right) queues a new
 * candidate. */
static inline void bigram_merge_all(bigram_heap *h, merge_symbol *syms, void (*add_pair)(void *, int, int),
                                    void *ctx) {
  while (h->n) {
    bigram b = bigram_pop(h);
    merge_symbol *l = &syms[b.left], *r = &syms[b.right];
    if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;   /* stale */
    l->n += r->n;
    l->id = b.id;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) syms[r->next].prev = b.left;
    add_pair(ctx, l->prev, b.left);
    add_pair(ctx, b.left, l->next);
  }
}

#endif
