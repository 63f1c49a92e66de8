/* grammar_match.c: the parse stacks as an on-demand DFA over bytes (see
 * grammar.h). A character is matched once it is whole: the bytes of a
 * multi-byte character lead to partial states that carry the bits read so
 * far, and live only while some stack's class holds a character with that
 * prefix. Advancing by a character pops each stack whose class holds it and
 * expands what remains down to classes again (llama.cpp's
 * llama_grammar_advance_stack), deduplicating stacks by their ids. */
#include <stdlib.h>
#include <string.h>
#include "grammar/grammar.h"
#include "util/util.h"

static bool is_end(const gelem *e) { return e->type == GE_END || e->type == GE_ALT; }

bool grammar_class_has(const gelem *e, uint32_t cp, const gelem **after) {
  bool positive = e->type != GE_CHAR_NOT, found = false;
  do {
    if (e[1].type == GE_RNG_UPPER) { found = found || (e->value <= cp && cp <= e[1].value); e += 2; }
    else if (e->type == GE_ANY) { found = true; e++; }
    else { found = found || e->value == cp; e++; }
  } while (e->type == GE_CHAR_ALT);
  if (after) *after = e;
  return found == positive;
}

/* Whether the class at e holds some character in [lo, hi]. */
static bool class_meets(const gelem *e, uint32_t lo, uint32_t hi) {
  bool positive = e->type != GE_CHAR_NOT;
  if (e->type == GE_ANY) return true;
  if (positive) {
    do {
      uint32_t a = e->value, b = e[1].type == GE_RNG_UPPER ? e[1].value : a;
      if (a <= hi && b >= lo) return true;
      e += e[1].type == GE_RNG_UPPER ? 2 : 1;
    } while (e->type == GE_CHAR_ALT);
    return false;
  }
  /* negated: some character of [lo, hi] is outside every range */
  for (uint32_t c = lo;;) {
    const gelem *r = e;
    bool moved = false;
    do {
      uint32_t a = r->value, b = r[1].type == GE_RNG_UPPER ? r[1].value : a;
      if (a <= c && c <= b) { if (b >= hi) return false; c = b + 1; moved = true; }
      r += r[1].type == GE_RNG_UPPER ? 2 : 1;
    } while (r->type == GE_CHAR_ALT);
    if (!moved) return true;
  }
}

static void fail(tg_grammar *g, const char *msg) {
  if (!g->failed) snprintf(g->fail_msg, sizeof g->fail_msg, "grammar: %s", msg);
  g->failed = true;
}

/* ------------------------------------------------------------------ stacks */

static uint64_t node_hash(uint32_t pos, int32_t parent) { return tg_hash_mix((uint64_t)pos * 0x9E3779B1u, (uint64_t)(uint32_t)parent); }

static void node_rehash(tg_grammar *g) {
  uint32_t cap = g->node_ht_cap ? g->node_ht_cap * 2 : 1024;
  free(g->node_ht);
  g->node_ht = tg_xmalloc(sizeof(int32_t) * cap);
  memset(g->node_ht, 0xff, sizeof(int32_t) * cap);
  g->node_ht_cap = cap;
  for (int i = 1; i < g->n_nodes; i++) {
    uint32_t h = (uint32_t)node_hash(g->nodes[i].pos, g->nodes[i].parent) & (cap - 1);
    while (g->node_ht[h] >= 0) h = (h + 1) & (cap - 1);
    g->node_ht[h] = i;
  }
}

/* The stack (pos on top of parent), -1 when a bound is hit. */
static int32_t push(tg_grammar *g, uint32_t pos, int32_t parent) {
  if ((uint32_t)g->n_nodes * 2 >= g->node_ht_cap) node_rehash(g);
  uint32_t mask = g->node_ht_cap - 1, h = (uint32_t)node_hash(pos, parent) & mask;
  for (int32_t i; (i = g->node_ht[h]) >= 0; h = (h + 1) & mask)
    if (g->nodes[i].pos == pos && g->nodes[i].parent == parent) return i;
  int depth = g->nodes[parent].depth + 1;
  if (depth > GRAMMAR_MAX_DEPTH) return -1;   /* text nested deeper than the bound: that parse is dropped */
  if (g->n_nodes >= GRAMMAR_MAX_NODES) { fail(g, "the text needs more than 8M distinct parse stacks"); return -1; }
  if (g->n_nodes == g->cap_nodes) {
    g->cap_nodes = g->cap_nodes ? g->cap_nodes * 2 : 1024;
    g->nodes = tg_xrealloc(g->nodes, sizeof(gnode) * (size_t)g->cap_nodes);
  }
  g->nodes[g->n_nodes] = (gnode){ pos, parent, depth };
  g->node_ht[h] = g->n_nodes;
  return g->n_nodes++;
}

typedef VEC(int32_t) id_vec;

/* Adds to out the stacks node n expands to: itself when a class is on top
 * (or it is empty); for a rule on top, each alternative pushed in its place. */
static void expand(tg_grammar *g, int32_t n, id_vec *out, int depth) {
  if (g->failed) return;
  if (depth > GRAMMAR_MAX_DEPTH) { fail(g, "rules nest more than 2048 deep without matching a character"); return; }
  if (n == GNODE_EMPTY || g->elems[g->nodes[n].pos].type != GE_RULE) {
    if (out->n >= GRAMMAR_MAX_STACKS * 4) { fail(g, "the grammar is too ambiguous (more than 4096 parse stacks at once)"); return; }
    VEC_PUSH(*out, n);
    return;
  }
  const gnode nd = g->nodes[n];
  const gelem *e = &g->elems[nd.pos];
  int32_t base = is_end(e + 1) ? nd.parent : push(g, nd.pos + 1, nd.parent);
  if (base < 0) return;
  for (uint32_t a = (uint32_t)g->rule_at[e->value];; ) {
    if (is_end(&g->elems[a])) expand(g, base, out, depth + 1);
    else {
      int32_t s = push(g, a, base);
      if (s >= 0) expand(g, s, out, depth + 1);
    }
    while (!is_end(&g->elems[a])) a++;
    if (g->elems[a].type == GE_END) break;
    a++;
  }
}

/* ------------------------------------------------------------------ states */

static int cmp_id(const void *a, const void *b) { int32_t x = *(const int32_t *)a, y = *(const int32_t *)b; return (x > y) - (x < y); }

static uint64_t state_hash(const int32_t *set, int n, uint32_t partial, int rem) {
  return tg_hash_mix(tg_hash_bytes(set, sizeof(int32_t) * (size_t)n, 0x5bd1e995), ((uint64_t)partial << 3) | (uint64_t)rem);
}

static void state_rehash(tg_grammar *g) {
  uint32_t cap = g->state_ht_cap ? g->state_ht_cap * 2 : 256;
  free(g->state_ht);
  g->state_ht = tg_xmalloc(sizeof(int32_t) * cap);
  memset(g->state_ht, 0xff, sizeof(int32_t) * cap);
  g->state_ht_cap = cap;
  for (int i = 0; i < g->n_states; i++) {
    const gstate *s = &g->states[i];
    uint32_t h = (uint32_t)state_hash(g->set_pool + s->set, s->n, s->partial, s->rem) & (cap - 1);
    while (g->state_ht[h] >= 0) h = (h + 1) & (cap - 1);
    g->state_ht[h] = i;
  }
}

/* The state of the stacks set[0..n) (sorted, unique) and a partial
 * character; a set with no stacks is GSTATE_DEAD. */
static int intern_state(tg_grammar *g, const int32_t *set, int n, uint32_t partial, int rem) {
  if (n == 0) return GSTATE_DEAD;
  if ((uint32_t)g->n_states * 2 >= g->state_ht_cap) state_rehash(g);
  uint32_t mask = g->state_ht_cap - 1, h = (uint32_t)state_hash(set, n, partial, rem) & mask;
  for (int32_t i; (i = g->state_ht[h]) >= 0; h = (h + 1) & mask) {
    const gstate *s = &g->states[i];
    if (s->n == n && s->partial == partial && s->rem == rem && !memcmp(g->set_pool + s->set, set, sizeof(int32_t) * (size_t)n)) return i;
  }
  if (g->n_states >= GRAMMAR_MAX_STATES) { fail(g, "the text needs more than 2M distinct parse states"); return GSTATE_DEAD; }
  if (g->n_pool + n > (int64_t)1 << 28) { fail(g, "the parse states need more than 1 GiB"); return GSTATE_DEAD; }
  if (g->n_pool + n > g->cap_pool) {
    /* set may point into the pool (a state's stacks again, with a partial character) */
    int64_t off = g->set_pool && set >= g->set_pool && set < g->set_pool + g->n_pool ? set - g->set_pool : -1;
    while (g->n_pool + n > g->cap_pool) g->cap_pool = g->cap_pool ? g->cap_pool * 2 : 4096;
    g->set_pool = tg_xrealloc(g->set_pool, sizeof(int32_t) * (size_t)g->cap_pool);
    if (off >= 0) set = g->set_pool + off;
  }
  memcpy(g->set_pool + g->n_pool, set, sizeof(int32_t) * (size_t)n);
  if (g->n_states == g->cap_states) {
    g->cap_states = g->cap_states ? g->cap_states * 2 : 256;
    g->states = tg_xrealloc(g->states, sizeof(gstate) * (size_t)g->cap_states);
  }
  g->states[g->n_states] = (gstate){ (int32_t)g->n_pool, n, partial, rem };
  g->n_pool += n;
  g->state_ht[h] = g->n_states;
  return g->n_states++;
}

static int finish_set(tg_grammar *g, id_vec *v, uint32_t partial, int rem) {
  if (v->n > 1) {
    qsort(v->v, (size_t)v->n, sizeof(int32_t), cmp_id);
    int k = 1;
    for (int i = 1; i < v->n; i++) if (v->v[i] != v->v[k - 1]) v->v[k++] = v->v[i];
    v->n = k;
  }
  if (v->n > GRAMMAR_MAX_STACKS) fail(g, "the grammar is too ambiguous (more than 4096 parse stacks at once)");
  int s = g->failed ? GSTATE_DEAD : intern_state(g, v->v, v->n, partial, rem);
  VEC_FREE(*v);
  return s;
}

/* The state after matching character cp from the stacks of state st. */
static int advance(tg_grammar *g, int st, uint32_t cp) {
  id_vec out = { 0 };
  for (int i = 0; i < g->states[st].n && !g->failed; i++) {
    int32_t n = g->set_pool[g->states[st].set + i];
    if (n == GNODE_EMPTY) continue;
    const gelem *after;
    if (!grammar_class_has(&g->elems[g->nodes[n].pos], cp, &after)) continue;
    int32_t parent = g->nodes[n].parent;
    int32_t next = is_end(after) ? parent : push(g, (uint32_t)(after - g->elems), parent);
    if (next >= 0) expand(g, next, &out, 0);
  }
  return finish_set(g, &out, 0, 0);
}

/* A partial character is kept as (its length << 24) | the bits read so far. */
#define PARTIAL(len, bits) ((uint32_t)(len) << 24 | (bits))
#define PARTIAL_LEN(p) ((int)((p) >> 24))
#define PARTIAL_BITS(p) ((p) & 0xFFFFFFu)

/* The state of st's stacks with a partial character whose possible code
 * points are [lo, hi], or dead when no class on top meets that range. */
static int partial_state(tg_grammar *g, int st, int len, uint32_t bits, int rem) {
  static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };   /* below: an overlong form */
  uint32_t lo = bits << (6 * rem), hi = lo | ((1u << (6 * rem)) - 1);
  if (lo < min_cp[len]) lo = min_cp[len];
  if (hi > 0x10FFFF) hi = 0x10FFFF;
  if (lo <= 0xDFFF && hi >= 0xD800) {   /* surrogates are no characters */
    if (lo >= 0xD800) lo = 0xE000;
    else if (hi <= 0xDFFF) hi = 0xD7FF;
  }
  if (lo > hi) return GSTATE_DEAD;
  const gstate *s = &g->states[st];
  bool viable = false;
  for (int i = 0; i < s->n && !viable; i++) {
    int32_t n = g->set_pool[s->set + i];
    viable = n != GNODE_EMPTY && class_meets(&g->elems[g->nodes[n].pos], lo, hi);
  }
  if (!viable) return GSTATE_DEAD;
  return intern_state(g, g->set_pool + s->set, s->n, PARTIAL(len, bits), rem);
}

/* Well-formed UTF-8 only (RFC 3629): no overlong forms, no surrogates,
 * nothing past U+10FFFF. Leads C0, C1 and F5.. never start a character;
 * after E0, ED, F0 and F4 the second byte has a narrower range. */
static int step_uncached(tg_grammar *g, int st, uint8_t b) {
  const gstate *s = &g->states[st];
  if (s->rem == 0) {
    if (b < 0x80) return advance(g, st, b);
    if (b >= 0xC2 && b <= 0xDF) return partial_state(g, st, 2, b & 0x1F, 1);
    if ((b & 0xF0) == 0xE0) return partial_state(g, st, 3, b & 0x0F, 2);
    if (b >= 0xF0 && b <= 0xF4) return partial_state(g, st, 4, b & 0x07, 3);
    return GSTATE_DEAD;
  }
  if ((b & 0xC0) != 0x80) return GSTATE_DEAD;
  int len = PARTIAL_LEN(s->partial);
  uint32_t lead = PARTIAL_BITS(s->partial);
  if (s->rem == len - 1) {   /* the second byte */
    if (len == 3 && ((lead == 0x0 && b < 0xA0) || (lead == 0xD && b > 0x9F))) return GSTATE_DEAD;
    if (len == 4 && ((lead == 0x0 && b < 0x90) || (lead == 0x4 && b > 0x8F))) return GSTATE_DEAD;
  }
  uint32_t bits = lead << 6 | (b & 0x3F);
  if (s->rem == 1) return advance(g, st, bits);   /* whole: advance reads only st's stacks */
  return partial_state(g, st, len, bits, s->rem - 1);
}

static void trans_grow(tg_grammar *g) {
  uint32_t old = g->trans_cap, cap = old ? old * 2 : 4096;
  uint64_t *k = g->trans_key;
  int32_t *v = g->trans_val;
  g->trans_key = tg_xmalloc(sizeof(uint64_t) * cap);
  g->trans_val = tg_xmalloc(sizeof(int32_t) * cap);
  memset(g->trans_key, 0xff, sizeof(uint64_t) * cap);
  g->trans_cap = cap;
  for (uint32_t i = 0; i < old; i++)
    if (k[i] != UINT64_MAX) {
      uint32_t h = (uint32_t)tg_hash_mix(k[i], 0) & (cap - 1);
      while (g->trans_key[h] != UINT64_MAX) h = (h + 1) & (cap - 1);
      g->trans_key[h] = k[i];
      g->trans_val[h] = v[i];
    }
  free(k);
  free(v);
}

int grammar_step(tg_grammar *g, int st, uint8_t b) {
  if (st == GSTATE_DEAD || g->failed) return GSTATE_DEAD;
  uint64_t key = (uint64_t)(uint32_t)st << 8 | b;
  if ((g->n_trans + 1) * 2 > g->trans_cap) trans_grow(g);
  uint32_t mask = g->trans_cap - 1, h = (uint32_t)tg_hash_mix(key, 0) & mask;
  for (; g->trans_key[h] != UINT64_MAX; h = (h + 1) & mask)
    if (g->trans_key[h] == key) return g->trans_val[h];
  int next = step_uncached(g, st, b);
  if (g->failed) return GSTATE_DEAD;   /* not memoized: the grammar is unusable now */
  /* slot h is still free: step_uncached never touches the transition table */
  g->trans_key[h] = key;
  g->trans_val[h] = next;
  g->n_trans++;
  return next;
}

bool grammar_state_can_end(const tg_grammar *g, int st) {
  if (st == GSTATE_DEAD) return false;
  const gstate *s = &g->states[st];
  return s->rem == 0 && s->n > 0 && g->set_pool[s->set] == GNODE_EMPTY;   /* sorted: the empty stack (id 0) comes first */
}

int grammar_init_dfa(tg_grammar *g) {
  g->nodes = tg_xmalloc(sizeof(gnode) * 1024);
  g->cap_nodes = 1024;
  g->nodes[0] = (gnode){ 0, -1, 0 };   /* GNODE_EMPTY */
  g->n_nodes = 1;
  node_rehash(g);
  state_rehash(g);
  /* GSTATE_DEAD: no stacks */
  g->states = tg_xmalloc(sizeof(gstate) * 256);
  g->cap_states = 256;
  g->states[0] = (gstate){ 0, 0, 0, 0 };
  g->n_states = 1;
  id_vec out = { 0 };
  for (uint32_t a = (uint32_t)g->rule_at[g->root];; ) {
    if (is_end(&g->elems[a])) expand(g, GNODE_EMPTY, &out, 0);
    else { int32_t s = push(g, a, GNODE_EMPTY); if (s >= 0) expand(g, s, &out, 0); }
    while (!is_end(&g->elems[a])) a++;
    if (g->elems[a].type == GE_END) break;
    a++;
  }
  g->start = finish_set(g, &out, 0, 0);
  if (g->failed) return tg_seterr("%s", g->fail_msg);
  if (g->start == GSTATE_DEAD) return tg_seterr("grammar: the root rule matches nothing");
  g->cur = g->start;
  return 0;
}

void grammar_free_dfa(tg_grammar *g) {
  free(g->nodes);
  free(g->node_ht);
  free(g->set_pool);
  free(g->states);
  free(g->state_ht);
  free(g->trans_key);
  free(g->trans_val);
}
