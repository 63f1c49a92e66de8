/* grammar.h: the grammar engine's internals (the API is in tg_llm.h).
 *
 * A grammar is llama.cpp's GBNF compiled to flat rules: rule r is the
 * elements from rule_at[r] on, its alternatives separated by GE_ALT, the last
 * ending with GE_END. A character class is a GE_CHAR or GE_CHAR_NOT element
 * followed by GE_RNG_UPPER / GE_CHAR_ALT elements.
 *
 * Matching keeps llama.cpp's set of parse stacks, hash-consed so that the
 * engine is a DFA built on demand: a stack is a node (position, parent), one
 * id per distinct stack; a state is a sorted set of stacks plus a partly read
 * UTF-8 character, one id per distinct state. Stacks in a state always have a
 * character class on top, or are empty (the grammar may end there). A byte
 * moves a state to another (memoized), so a token's text is a few table
 * look-ups, and a vocabulary's mask is a walk of the token trie that stops
 * where the state dies (grammar_mask.c). Invariant: ids only grow during a
 * grammar's life; nothing is freed until tg_grammar_free. */
#ifndef TG_GRAMMAR_INTERNAL_H
#define TG_GRAMMAR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include "tg.h"
#include "util/util.h"

typedef enum { GE_END, GE_ALT, GE_RULE, GE_CHAR, GE_CHAR_NOT, GE_RNG_UPPER, GE_CHAR_ALT, GE_ANY } gelem_type;

typedef struct {
  uint32_t type;
  uint32_t value;    /* a code point, or a rule id for GE_RULE */
} gelem;

/* Bounds that keep any grammar, and any text matched against it, finite. */
#define GRAMMAR_MAX_ELEMS (1 << 22)      /* elements after repetitions are expanded */
#define GRAMMAR_MAX_REPEAT 2000          /* n in x{m,n} (llama.cpp's threshold) */
#define GRAMMAR_MAX_NEST 256             /* parentheses, and JSON schema depth */
#define GRAMMAR_MAX_CHAIN 20000          /* rules that start rules before a character (the check recurses) */
#define GRAMMAR_MAX_NAME 1000            /* bytes of a JSON schema property name */
#define GRAMMAR_MAX_STACKS 4096          /* parse stacks alive at once */
#define GRAMMAR_MAX_DEPTH 2048           /* one stack's depth (nesting of the text) */
#define GRAMMAR_MAX_NODES (1 << 23)      /* distinct stacks over a grammar's life */
#define GRAMMAR_MAX_STATES (1 << 21)     /* distinct states over a grammar's life */

typedef struct { uint32_t pos; int32_t parent; int32_t depth; } gnode;
typedef struct {
  int32_t set;        /* offset of its stacks in set_pool */
  int32_t n;          /* how many */
  uint32_t partial;   /* a multi-byte character begun: (its length << 24) | the bits read */
  int32_t rem;        /* its continuation bytes still to come (0: none) */
} gstate;

typedef struct mask_cache mask_cache;

struct tg_grammar {
  gelem *elems;
  int n_elems;
  int32_t *rule_at;    /* rule id -> its first element */
  char **rule_names;
  int n_rules;
  int root;
  /* the on-demand DFA */
  gnode *nodes; int n_nodes, cap_nodes;
  int32_t *node_ht; uint32_t node_ht_cap;   /* (pos, parent) -> node */
  int32_t *set_pool; int64_t n_pool, cap_pool;
  gstate *states; int n_states, cap_states;
  int32_t *state_ht; uint32_t state_ht_cap; /* (set, partial) -> state */
  uint64_t *trans_key; int32_t *trans_val; uint32_t trans_cap, n_trans;   /* (state, byte) -> state */
  int start;           /* the state before any text */
  int cur;             /* where the text so far has led */
  bool failed;         /* a bound was hit; the message is in fail_msg */
  char fail_msg[160];
  mask_cache *masks;   /* grammar_mask.c */
};

#define GSTATE_DEAD 0  /* the state with no stacks: the text cannot continue */
#define GNODE_EMPTY 0  /* the empty stack: the grammar is complete */

/* gbnf_parse.c: fills g's rules from GBNF text (start rule root_name);
 * -1 with tg_error naming line and column. */
int gbnf_parse(tg_grammar *g, const char *text, size_t len, const char *root_name);

/* grammar_match.c */
int grammar_init_dfa(tg_grammar *g);            /* the start state; -1 + tg_error */
void grammar_free_dfa(tg_grammar *g);
int grammar_step(tg_grammar *g, int state, uint8_t byte);   /* GSTATE_DEAD when rejected (also on a bound: g->failed) */
bool grammar_state_can_end(const tg_grammar *g, int state);
/* Whether the character class at elems[pos] holds cp; *after gets the
 * element after the class. */
bool grammar_class_has(const gelem *e, uint32_t cp, const gelem **after);

/* int_range.c: a GBNF group matching the decimal integers in [lo, hi]
 * (has_lo / has_hi false: unbounded that side); -1 when none fits. */
int gbnf_int_range(strbuf *b, bool has_lo, int64_t lo, bool has_hi, int64_t hi);

/* grammar_mask.c */
void grammar_free_masks(tg_grammar *g);
struct token_trie;
void token_trie_free(struct token_trie *t);   /* tokenizers keep theirs (tokenizer.h) */

#endif
