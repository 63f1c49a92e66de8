/* fuzz_json_schema.c: a JSON schema from untrusted bytes (a request's
 * response_format.json_schema.schema, tg run --json-schema), converted to
 * GBNF and compiled, as tg serve does. Conversion fails with a message
 * (unsupported keyword, bad $ref, depth) or gives GBNF that the parser
 * either compiles or rejects with a message (a $ref cycle can be
 * left-recursive); a compiled grammar then matches a few JSON texts. */
#include "fuzz.h"

static const char *const texts[] = { "{}", "[]", "null", "true", "0", "-1.5e3", "\"x\"", "{\"a\": [1, {\"b\": null}]}", "[[[\"\\u00e9\"]]]" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *gbnf = tg_json_schema_to_gbnf((const char *)data, size);
  if (!gbnf) {
    if (!tg_error()[0]) __builtin_trap();
    return 0;
  }
  tg_grammar *g = tg_grammar_new(gbnf, strlen(gbnf));
  if (!g && !tg_error()[0]) __builtin_trap();
  for (size_t i = 0; g && i < sizeof texts / sizeof *texts; i++) {
    tg_grammar_reset(g);
    if (tg_grammar_accept(g, texts[i], strlen(texts[i])) == 0) tg_grammar_can_end(g);
  }
  tg_grammar_free(g);
  free(gbnf);
  return 0;
}
