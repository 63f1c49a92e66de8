/* grammar_mask.c: which tokens of a vocabulary keep the grammar alive.
 *
 * The vocabulary's token texts form a trie (built once per tokenizer and
 * kept in it); the mask of a state is a depth-first walk of the trie that
 * steps the state one byte per edge and skips a whole subtree where the
 * state dies. Steps are memoized by the DFA (grammar_match.c), and a few
 * recent masks are kept per state, so a state seen again (the inside of a
 * JSON string, token after token) costs a copy. Control tokens (whose text
 * is empty) are never allowed; end-of-generation tokens only where the
 * grammar may end. */
#include <pthread.h>
#include <string.h>
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"
#include "util/util.h"

typedef struct {
  int32_t first_child, next_sibling;
  int32_t tok;         /* the first token whose text ends here, or -1 */
  uint8_t byte;
} tnode;

struct token_trie {
  tnode *nodes;
  int n_nodes;
  int32_t *next_same;  /* per token: the next token with the same text, -1 */
  int n_vocab;
  int max_len;
};

void token_trie_free(struct token_trie *t) {
  if (!t) return;
  free(t->nodes);
  free(t->next_same);
  free(t);
}

typedef struct { const char *s; int len; int32_t id; } piece_ref;

static int cmp_piece(const void *a, const void *b) {
  const piece_ref *x = a, *y = b;
  int n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, (size_t)n);
  if (c) return c;
  if (x->len != y->len) return x->len - y->len;
  return x->id - y->id;
}

static struct token_trie *trie_build(const tg_tokenizer *tok) {
  int n = tok->n_vocab;
  struct token_trie *t = tg_xcalloc(1, sizeof *t);
  t->n_vocab = n;
  t->next_same = tg_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  piece_ref *p = tg_xmalloc(sizeof(piece_ref) * (size_t)(n ? n : 1));
  int k = 0;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    t->next_same[i] = -1;
    if (tok->piece_len[i] == 0 || (tok->attr[i] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) continue;
    p[k++] = (piece_ref){ tok->piece[i], (int)tok->piece_len[i], i };
    total += tok->piece_len[i];
  }
  qsort(p, (size_t)k, sizeof *p, cmp_piece);
  int cap = (int)(total + 1 < 1 << 30 ? total + 1 : 1 << 30);
  t->nodes = tg_xmalloc(sizeof(tnode) * (size_t)cap);
  t->nodes[0] = (tnode){ -1, -1, -1, 0 };
  t->n_nodes = 1;
  /* path[d]: the node of the previous piece's first d bytes; pieces come
   * sorted, so a new piece shares a prefix with the last one and branches
   * off after it: a child added to a node is always its last one */
  int32_t *path = tg_xmalloc(sizeof(int32_t) * (size_t)(tok->max_token_len + 2 > 1 ? tok->max_token_len + 2 : 2));
  int32_t *last_child = tg_xmalloc(sizeof(int32_t) * (size_t)cap);
  last_child[0] = -1;
  path[0] = 0;
  int prev_len = 0;
  const char *prev = "";
  for (int i = 0; i < k; i++) {
    int common = 0;
    while (common < prev_len && common < p[i].len && prev[common] == p[i].s[common]) common++;
    int32_t at = path[common];
    for (int d = common; d < p[i].len; d++) {
      int32_t c = t->n_nodes++;
      t->nodes[c] = (tnode){ -1, -1, -1, (uint8_t)p[i].s[d] };
      last_child[c] = -1;
      if (last_child[at] < 0) t->nodes[at].first_child = c;
      else t->nodes[last_child[at]].next_sibling = c;
      last_child[at] = c;
      at = c;
      path[d + 1] = c;
    }
    /* same text as a token before: chain it behind */
    if (t->nodes[at].tok < 0) t->nodes[at].tok = p[i].id;
    else { int32_t j = t->nodes[at].tok; while (t->next_same[j] >= 0) j = t->next_same[j]; t->next_same[j] = p[i].id; }
    prev = p[i].s;
    prev_len = p[i].len;
    if (p[i].len > t->max_len) t->max_len = p[i].len;
  }
  free(last_child);
  free(path);
  free(p);
  return t;
}

static pthread_mutex_t trie_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct token_trie *trie_of(const tg_tokenizer *tok) {
  pthread_mutex_lock(&trie_lock);
  tg_tokenizer *mut = (tg_tokenizer *)tok;   /* a cache; the tokenizer's meaning is unchanged */
  if (!mut->grammar_trie) mut->grammar_trie = trie_build(tok);
  pthread_mutex_unlock(&trie_lock);
  return tok->grammar_trie;
}

/* ---------------------------------------------------------------- masks */

#define MASK_CACHE 16
struct mask_cache {
  const tg_tokenizer *tok;
  int state[MASK_CACHE];
  uint8_t *bits[MASK_CACHE];   /* one bit per token */
  int next;                    /* the slot to replace */
};

void grammar_free_masks(tg_grammar *g) {
  if (!g->masks) return;
  for (int i = 0; i < MASK_CACHE; i++) free(g->masks->bits[i]);
  free(g->masks);
  g->masks = NULL;
}

typedef struct { int32_t node; int state; } walk_item;

/* The bits of the tokens (of trie t) whose text state st survives. */
static int walk(tg_grammar *g, const struct token_trie *t, int st, uint8_t *bits) {
  memset(bits, 0, ((size_t)t->n_vocab + 7) / 8);
  walk_item *stack = tg_xmalloc(sizeof(walk_item) * ((size_t)t->max_len + 2) * 2);
  int sp = 0;
  stack[sp++] = (walk_item){ t->nodes[0].first_child, st };
  while (sp > 0) {
    walk_item *top = &stack[sp - 1];
    int32_t c = top->node;
    if (c < 0) { sp--; continue; }
    top->node = t->nodes[c].next_sibling;   /* the next sibling, when we come back */
    int ns = grammar_step(g, top->state, t->nodes[c].byte);
    if (g->failed) { free(stack); return tg_seterr("%s", g->fail_msg); }
    if (ns == GSTATE_DEAD) continue;
    for (int32_t id = t->nodes[c].tok; id >= 0; id = t->next_same[id]) bits[id >> 3] |= (uint8_t)(1u << (id & 7));
    if (t->nodes[c].first_child >= 0) stack[sp++] = (walk_item){ t->nodes[c].first_child, ns };
  }
  free(stack);
  return 0;
}

int tg_grammar_mask(tg_grammar *g, const struct tg_tokenizer *tok, uint8_t *allowed) {
  if (!g || !tok || !allowed) return tg_seterr("tg_grammar_mask: %s", !g ? "no grammar" : !tok ? "no tokenizer" : "allowed is NULL");
  if (g->failed) return tg_seterr("tg_grammar_mask: %s", g->fail_msg);
  const struct token_trie *t = trie_of(tok);
  if (!g->masks || g->masks->tok != tok) {
    grammar_free_masks(g);
    g->masks = tg_xcalloc(1, sizeof *g->masks);
    g->masks->tok = tok;
    for (int i = 0; i < MASK_CACHE; i++) g->masks->state[i] = -1;
  }
  mask_cache *mc = g->masks;
  const uint8_t *bits = NULL;
  for (int i = 0; i < MASK_CACHE && !bits; i++) if (mc->state[i] == g->cur) bits = mc->bits[i];
  if (!bits) {
    int slot = mc->next;
    mc->next = (mc->next + 1) % MASK_CACHE;
    if (!mc->bits[slot]) mc->bits[slot] = tg_xmalloc(((size_t)t->n_vocab + 7) / 8);
    mc->state[slot] = -1;
    if (walk(g, t, g->cur, mc->bits[slot])) return tg_seterr("tg_grammar_mask: %s", g->fail_msg);
    mc->state[slot] = g->cur;
    bits = mc->bits[slot];
  }
  bool can_end = grammar_state_can_end(g, g->cur);
  int count = 0;
  for (int i = 0; i < t->n_vocab; i++) {
    bool ok = tok->eog[i] ? can_end : (bits[i >> 3] >> (i & 7)) & 1;
    allowed[i] = ok;
    count += ok;
  }
  return count;
}
