/* grammar.c: the public grammar calls of tg_llm.h: compile GBNF (or a JSON
 * schema through json_schema.c), feed text, ask whether it may end. */
#include <string.h>
#include "grammar/grammar.h"
#include "util/util.h"

tg_grammar *tg_grammar_new(const char *gbnf, size_t len) {
  if (!gbnf) TG_FAIL("tg_grammar_new: the grammar text is NULL");
  tg_grammar *g = tg_xcalloc(1, sizeof *g);
  if (gbnf_parse(g, gbnf, len, "root") || grammar_init_dfa(g)) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tg_error());
    tg_grammar_free(g);
    TG_FAIL("tg_grammar_new: %s", msg);
  }
  return g;
}

tg_grammar *tg_grammar_from_json_schema(const char *schema, size_t len) {
  char *gbnf = tg_json_schema_to_gbnf(schema, len);
  if (!gbnf) return NULL;
  tg_grammar *g = tg_grammar_new(gbnf, strlen(gbnf));
  free(gbnf);
  return g;
}

void tg_grammar_free(tg_grammar *g) {
  if (!g) return;
  grammar_free_masks(g);
  grammar_free_dfa(g);
  for (int i = 0; i < g->n_rules; i++) free(g->rule_names[i]);
  free(g->rule_names);
  free(g->rule_at);
  free(g->elems);
  free(g);
}

void tg_grammar_reset(tg_grammar *g) {
  if (g) g->cur = g->start;
}

int tg_grammar_accept(tg_grammar *g, const char *text, size_t len) {
  if (!g || (!text && len)) return tg_seterr("tg_grammar_accept: %s", !g ? "no grammar" : "text is NULL");
  if (g->failed) return tg_seterr("tg_grammar_accept: %s", g->fail_msg);
  int st = g->cur;
  for (size_t i = 0; i < len; i++) {
    st = grammar_step(g, st, (uint8_t)text[i]);
    if (g->failed) return tg_seterr("tg_grammar_accept: %s", g->fail_msg);
    if (st == GSTATE_DEAD) return tg_seterr("tg_grammar_accept: the grammar does not allow byte %zu (0x%02x) here", i, (uint8_t)text[i]);
  }
  g->cur = st;
  return 0;
}

bool tg_grammar_can_end(const tg_grammar *g) {
  return g && grammar_state_can_end(g, g->cur);
}
