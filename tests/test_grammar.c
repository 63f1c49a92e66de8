/* test_grammar.c: the grammar engine (src/grammar): GBNF parsing and
 * matching, errors for bad grammars and schemas, JSON schemas against the
 * jsonschema package's verdicts (goldens from tests/gen/gen_grammar.py),
 * token masks on real vocabularies (against a per-token walk, timed), and
 * constrained generation with a tiny model; tg serve's "response_format"
 * and "grammar" fields. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "test.h"
#include "grammar/grammar.h"
#include "serve/request.h"
#include "tokenizer/tokenizer.h"

/* 1: the grammar accepts text whole; 2: text is a live prefix only; 0: rejected. */
static int match(tg_grammar *g, const char *text) {
  tg_grammar_reset(g);
  if (tg_grammar_accept(g, text, strlen(text))) return 0;
  return tg_grammar_can_end(g) ? 1 : 2;
}

TEST(grammar_gbnf_match) {
  static const struct { const char *gbnf, *text; int want; } cases[] = {
    { "root ::= \"abc\"", "abc", 1 },
    { "root ::= \"abc\"", "ab", 2 },
    { "root ::= \"abc\"", "abd", 0 },
    { "root ::= \"abc\"", "abcd", 0 },
    { "root ::= \"a\" | \"b\" | \"\"", "", 1 },
    { "root ::= \"a\" | \"b\" | \"\"", "b", 1 },
    { "root ::= [a-z]+", "hello", 1 },
    { "root ::= [a-z]+", "", 2 },
    { "root ::= [a-z]+", "Hello", 0 },
    { "root ::= [^a-z\\n]*", "ABC 123", 1 },
    { "root ::= [^a-z\\n]*", "AbC", 0 },
    { "root ::= [^a-z\\n]*", "A\n", 0 },
    { "root ::= [a-cx-z_]{2,3}", "a_", 1 },
    { "root ::= [a-cx-z_]{2,3}", "a_z", 1 },
    { "root ::= [a-cx-z_]{2,3}", "a_za", 0 },
    { "root ::= [a-cx-z_]{2,3}", "a", 2 },
    { "root ::= \"x\"{3}", "xxx", 1 },
    { "root ::= \"x\"{3}", "xxxx", 0 },
    { "root ::= \"ab\"{2,}", "abababab", 1 },
    { "root ::= \"ab\"{2,}", "ab", 2 },
    { "root ::= (\"a\" | \"b\" \"c\")* \"d\"", "abcad", 1 },
    { "root ::= (\"a\" | \"b\" \"c\")* \"d\"", "abd", 0 },
    { "root ::= \"a\"? \"b\"", "b", 1 },
    { "root ::= \"a\"? \"b\"", "ab", 1 },
    { "root ::= \"a\"? \"b\"", "aab", 0 },
    { "root ::= x x\nx ::= \"1\" | \"22\"", "221", 1 },
    { "root ::= x x\nx ::= \"1\" | \"22\"", "2", 2 },
    /* recursion: balanced parentheses */
    { "root ::= p\np ::= \"(\" p* \")\"", "(()(()))", 1 },
    { "root ::= p\np ::= \"(\" p* \")\"", "(()", 2 },
    { "root ::= p\np ::= \"(\" p* \")\"", "())", 0 },
    /* escapes, UTF-8, any character */
    { "root ::= \"\\x41\\u00e9\\U0001F600\\t\\\"\\\\\"", "A\xc3\xa9\xf0\x9f\x98\x80\t\"\\", 1 },
    { "root ::= [\\u00e0-\\u00ff]+", "\xc3\xa9\xc3\xbf", 1 },
    { "root ::= [\\u00e0-\\u00ff]+", "\xc3\x80", 0 },          /* U+00C0, outside */
    { "root ::= [\\u00e0-\\u00ff]+", "\xc3", 2 },              /* half a character that could fit */
    { "root ::= [\\u00e0-\\u00ff]+", "\xe2", 0 },              /* a 3-byte lead: nothing in range */
    { "root ::= [^\"]", "\xe2\x82\xac", 1 },
    { "root ::= .+", "x\xe2\x82\xac\n", 1 },
    { "root ::= \"a\" \"\\xff\"", "a\xff", 0 },                /* not UTF-8 */
    { "root ::= .", "\xc1\xbb", 0 },                           /* overlong '{' */
    { "root ::= .", "\xe0\x81\xbb", 0 },                       /* overlong */
    { "root ::= .", "\xed\xa0\x80", 0 },                       /* a surrogate */
    { "root ::= .", "\xf4\x90\x80\x80", 0 },                   /* past U+10FFFF */
    { "root ::= .", "\xf0\x9f\x98\x80", 1 },
    { "root ::= \"a\" \"\\xff\"", "a\xc3\xbf", 1 },
    /* comments, newlines inside groups, alternatives over lines */
    { "# a comment\nroot ::= ( \"a\"   # one\n  | \"b\" )  # two\n\n", "b", 1 },
    { "root ::= \"a\" |\n \"b\"", "b", 1 },
    /* a nullable rule that is not left-recursive */
    { "root ::= e \"x\" e\ne ::= \"\" | \"e\"", "exe", 1 },
    { "root ::= e \"x\" e\ne ::= \"\" | \"e\"", "x", 1 },
    /* a rule defined twice keeps the last */
    { "root ::= a\na ::= \"1\"\na ::= \"2\"", "2", 1 },
    { "root ::= a\na ::= \"1\"\na ::= \"2\"", "1", 0 },
    /* dashes and digits in names, CRLF */
    { "root ::= my-rule2\r\nmy-rule2 ::= \"ok\"\r\n", "ok", 1 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tg_grammar *g = tg_grammar_new(cases[i].gbnf, strlen(cases[i].gbnf));
    CHECK_MSG(g != NULL, "case %zu: %s", i, tg_error());
    if (!g) continue;
    int got = match(g, cases[i].text);
    CHECK_MSG(got == cases[i].want, "case %zu: '%s' on '%s': got %d want %d", i, cases[i].gbnf, cases[i].text, got, cases[i].want);
    tg_grammar_free(g);
  }
}

/* The text accepted byte by byte, as the sampler feeds it, and as a whole:
 * both must agree, and a failed byte leaves the position alone. */
TEST(grammar_accept_bytewise) {
  const char *gbnf = "root ::= \"{\" [0-9]+ \"}\" | \"\\u20ac\"";
  tg_grammar *g = tg_grammar_new(gbnf, strlen(gbnf));
  CHECK_OK(g);
  if (!g) return;
  const char *euro = "\xe2\x82\xac";
  for (int i = 0; i < 3; i++) { CHECK(tg_grammar_accept(g, euro + i, 1) == 0); CHECK(tg_grammar_can_end(g) == (i == 2)); }
  tg_grammar_reset(g);
  CHECK(tg_grammar_accept(g, "{12", 3) == 0);
  CHECK(tg_grammar_accept(g, "x", 1) == -1);
  CHECK(strstr(tg_error(), "does not allow byte 0") != NULL);
  CHECK(tg_grammar_accept(g, "3}", 2) == 0);   /* the failed byte changed nothing */
  CHECK(tg_grammar_can_end(g));
  CHECK(tg_grammar_accept(NULL, "x", 1) == -1);
  CHECK(!tg_grammar_can_end(NULL));
  tg_grammar_free(g);
  tg_grammar_free(NULL);
}

TEST(grammar_gbnf_errors) {
  static const struct { const char *gbnf, *msg; } cases[] = {
    { "", "no rules" },
    { "root ::= foo", "undefined rule 'foo'" },
    { "a ::= \"x\"", "no 'root' rule" },
    { "root ::= \"abc", "unterminated string" },
    { "root ::= [abc", "unterminated character class" },
    { "root ::= []", "empty character class" },
    { "root ::= (\"a\"", "expecting ')'" },
    { "root ::= \"a\" )", "expecting a newline" },
    { "root = \"a\"", "expecting ::=" },
    { "::= \"a\"", "expecting a rule name" },
    { "root ::= \"a\"\n  | \"b\"", "expecting a rule name" },   /* a newline ends the rule (as in llama.cpp) */
    { "root ::= \"\\q\"", "unknown escape" },
    { "root ::= \"\\x4\"", "hex digits" },
    { "root ::= \"\\U00110000\"", "beyond U+10FFFF" },
    { "root ::= * \"a\"", "expecting an item" },
    { "root ::= \"a\"{x}", "expecting an int" },
    { "root ::= \"a\"{3,2}", "below its minimum" },
    { "root ::= \"a\"{2001}", "over 2000" },
    { "root ::= \"a\"{1,2", "expecting '}'" },
    { "root ::= root \"a\" | \"b\"", "left-recursive" },
    { "root ::= x\nx ::= e x \"a\" | \"b\"\ne ::= \"\" | \"c\"", "left-recursive" },
    { "root ::= (\"a\"?)*", "left-recursive" },
    { "root ::= <[42]>", "token references" },
    { "root ::= \"\xff\"", "invalid UTF-8" },
    { "root ::= x\nx ::= [a-z]{1000}{1000}{1000}", "too large" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tg_grammar *g = tg_grammar_new(cases[i].gbnf, strlen(cases[i].gbnf));
    CHECK_MSG(g == NULL, "case %zu ('%s') was accepted", i, cases[i].gbnf);
    CHECK_MSG(strstr(tg_error(), cases[i].msg) != NULL, "case %zu: '%s' not in '%s'", i, cases[i].msg, tg_error());
    CHECK_MSG(strncmp(tg_error(), "tg_grammar_new: grammar: ", 25) == 0, "case %zu: '%s'", i, tg_error());
    tg_grammar_free(g);
  }
  /* the position of an error */
  const char *bad = "root ::= \"a\"\nb ::= \"x\" ]\n";
  CHECK(tg_grammar_new(bad, strlen(bad)) == NULL);
  CHECK_MSG(strstr(tg_error(), "line 2, column 11") != NULL, "%s", tg_error());
  /* groups nested past the bound */
  char deep[2000] = "root ::= ";
  for (int i = 0; i < 300; i++) strcat(deep, "(");
  strcat(deep, "\"a\"");
  for (int i = 0; i < 300; i++) strcat(deep, ")");
  CHECK(tg_grammar_new(deep, strlen(deep)) == NULL);
  CHECK(strstr(tg_error(), "nested more than 256") != NULL);
  CHECK(tg_grammar_new(NULL, 0) == NULL);
  CHECK(tg_grammar_new("root ::= \"a\"\0", 13) == NULL);
  /* a chain of rules deeper than the checks recurse */
  strbuf chain = { 0 };
  sb_puts(&chain, "root ::= r0\n");
  for (int i = 0; i < 30000; i++) sb_printf(&chain, "r%d ::= r%d\n", i, i + 1);
  sb_puts(&chain, "r30000 ::= \"x\"\n");
  CHECK(tg_grammar_new(chain.s, chain.n) == NULL);
  CHECK_MSG(strstr(tg_error(), "more than 20000 rules"), "%s", tg_error());
  sb_free(&chain);
}

/* Parse stacks that would grow without bound fail with a message, never
 * by running out of memory. */
TEST(grammar_bounds) {
  const char *amb = "root ::= x*\nx ::= \"a\" | \"a\" \"a\" | \"a\" \"a\" \"a\" | \"a\" \"a\" \"a\" \"a\"";
  tg_grammar *g = tg_grammar_new(amb, strlen(amb));
  CHECK_OK(g);
  if (g) {
    char a[4096];
    memset(a, 'a', sizeof a);
    int rc = tg_grammar_accept(g, a, sizeof a);   /* the stacks stay few: they are deduplicated */
    CHECK_MSG(rc == 0, "%s", tg_error());
    CHECK(tg_grammar_can_end(g));
    tg_grammar_free(g);
  }
  /* text nested deeper than the bound: that parse is dropped, no crash */
  const char *nest = "root ::= \"[\" root \"]\" | \"x\"";
  g = tg_grammar_new(nest, strlen(nest));
  CHECK_OK(g);
  if (g) {
    char *open = malloc(5000);
    memset(open, '[', 5000);
    CHECK(tg_grammar_accept(g, open, 5000) == -1);
    tg_grammar_reset(g);
    CHECK(tg_grammar_accept(g, open, 1000) == 0);
    free(open);
    tg_grammar_free(g);
  }
}

/* ---------------------------------------------------------------- JSON schemas */

static char *read_text(const char *path) {
  size_t n;
  char *s = test_read_file(path, &n);
  if (!s) return NULL;
  s = realloc(s, n + 1);
  s[n] = 0;
  return s;
}

/* Feeds text byte by byte as sampling would: 1 accepted whole, 0 not. */
static int accepts_bytewise(tg_grammar *g, const char *text, size_t len) {
  tg_grammar_reset(g);
  for (size_t i = 0; i < len; i++) if (tg_grammar_accept(g, text + i, 1)) return 0;
  return tg_grammar_can_end(g);
}

TEST(grammar_schema_goldens) {
  char *js = read_text("goldens/grammar_schemas.json");
  if (!js) { CHECK_MSG(0, "goldens/grammar_schemas.json is missing (python3 tests/gen/gen_grammar.py)"); return; }
  cJSON *all = cJSON_Parse(js);
  free(js);
  CHECK(cJSON_IsArray(all));
  int n_texts = 0, n_valid = 0, bad = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, all) {
    char *schema = cJSON_PrintUnformatted(cJSON_GetObjectItem(item, "schema"));
    tg_grammar *g = tg_grammar_from_json_schema(schema, strlen(schema));
    CHECK_MSG(g != NULL, "schema %s: %s", schema, tg_error());
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(item, "cases")) {
      const cJSON *text = cJSON_GetObjectItem(c, "text");
      bool valid = cJSON_IsTrue(cJSON_GetObjectItem(c, "valid"));
      n_texts++;
      n_valid += valid;
      if (!g) continue;
      int got = accepts_bytewise(g, text->valuestring, strlen(text->valuestring));
      if (got != valid && bad++ < 10)
        CHECK_MSG(0, "schema %s: '%s' is %s per jsonschema, the grammar %s it", schema, text->valuestring,
                  valid ? "valid" : "invalid", got ? "accepts" : "rejects");
    }
    tg_grammar_free(g);
    free(schema);
  }
  CHECK(n_texts > 1000 && n_valid > 300 && n_texts - n_valid > 300);
  printf("  %d texts (%d valid) over %d schemas, %d disagreements\n", n_texts, n_valid, cJSON_GetArraySize(all), bad);
  cJSON_Delete(all);
}

static bool schema_accepts(const char *schema, const char *text) {
  tg_grammar *g = tg_grammar_from_json_schema(schema, strlen(schema));
  if (!g) { test_fail(__FILE__, __LINE__, "schema %s: %s", schema, tg_error()); return false; }
  bool ok = accepts_bytewise(g, text, strlen(text));
  tg_grammar_free(g);
  return ok;
}

/* Formats, $ref recursion and generic JSON (not in the generator's set). */
TEST(grammar_schema_features) {
  const char *obj = "{\"type\": \"object\"}";
  CHECK(schema_accepts(obj, "{\"a\": [1, {\"b\": null}], \"c\": \"\\u00e9\\n\", \"d\": -1.5e+3}"));
  CHECK(schema_accepts(obj, "{}"));
  CHECK(!schema_accepts(obj, "[1]"));
  CHECK(!schema_accepts(obj, "{\"a\": 01}"));
  CHECK(!schema_accepts(obj, "{\"a\": 1,}"));
  CHECK(schema_accepts("{}", "[true, \"x\"]"));
  CHECK(schema_accepts("true", "null"));
  const char *date = "{\"type\": \"string\", \"format\": \"date\"}";
  CHECK(schema_accepts(date, "\"2026-12-02\""));
  CHECK(!schema_accepts(date, "\"2026-13-02\""));
  const char *dt = "{\"type\": \"string\", \"format\": \"date-time\"}";
  CHECK(schema_accepts(dt, "\"2026-12-02T01:35:00Z\""));
  CHECK(schema_accepts(dt, "\"2026-12-02T01:35:00.123+02:00\""));
  CHECK(!schema_accepts(dt, "\"2026-12-02 01:35:00Z\""));
  const char *uuid = "{\"type\": \"string\", \"format\": \"uuid\"}";
  CHECK(schema_accepts(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  CHECK(!schema_accepts(uuid, "\"123e4567e89b12d3a456426614174000\""));
  CHECK(schema_accepts("{\"type\": \"string\", \"format\": \"email\"}", "\"anything\""));   /* an annotation */
  const char *tree = "{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"}, "
                     "\"kids\": {\"type\": \"array\", \"items\": {\"$ref\": \"#/$defs/node\"}}}, \"required\": [\"v\"]}}, "
                     "\"$ref\": \"#/$defs/node\"}";
  CHECK(schema_accepts(tree, "{\"v\": 1, \"kids\": [{\"v\": 2}, {\"v\": 3, \"kids\": []}]}"));
  CHECK(!schema_accepts(tree, "{\"v\": 1, \"kids\": [{\"kids\": []}]}"));
  const char *self = "{\"type\": \"array\", \"items\": {\"$ref\": \"#\"}, \"maxItems\": 2}";
  CHECK(schema_accepts(self, "[[], [[]]]"));
  CHECK(!schema_accepts(self, "[[], [], []]"));
  const char *defs = "{\"definitions\": {\"a~b/c\": {\"const\": 1}}, \"$ref\": \"#/definitions/a~0b~1c\"}";
  CHECK(schema_accepts(defs, "1"));
  CHECK(!schema_accepts(defs, "2"));
  /* integer ranges: every integer from -150 to 1100 against the bounds */
  static const struct { const char *schema; long lo, hi; } ranges[] = {
    { "{\"type\": \"integer\", \"minimum\": -13, \"maximum\": 127}", -13, 127 },
    { "{\"type\": \"integer\", \"exclusiveMinimum\": 95.5, \"maximum\": 1000}", 96, 1000 },
    { "{\"type\": \"integer\", \"maximum\": -98}", -100000, -98 },
    { "{\"type\": \"integer\", \"minimum\": 0, \"exclusiveMaximum\": 10}", 0, 9 },
    { "{\"type\": \"integer\", \"minimum\": 99}", 99, 100000 },
  };
  for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
    tg_grammar *g = tg_grammar_from_json_schema(ranges[i].schema, strlen(ranges[i].schema));
    CHECK_MSG(g != NULL, "%s: %s", ranges[i].schema, tg_error());
    for (long v = -150; g && v <= 1100; v++) {
      char t[32];
      snprintf(t, sizeof t, "%ld", v);
      bool want = v >= ranges[i].lo && v <= ranges[i].hi;
      if (accepts_bytewise(g, t, strlen(t)) != want) { CHECK_MSG(0, "%s: %ld %s", ranges[i].schema, v, want ? "rejected" : "accepted"); break; }
    }
    if (g) CHECK(!accepts_bytewise(g, "-0", 2) && !accepts_bytewise(g, "007", 3));
    tg_grammar_free(g);
  }
  /* enum values of another type than "type" are left out */
  CHECK(!schema_accepts("{\"type\": \"string\", \"enum\": [\"a\", 1]}", "1"));
  CHECK(schema_accepts("{\"type\": \"string\", \"enum\": [\"a\", 1]}", "\"a\""));
}

TEST(grammar_schema_errors) {
  static const struct { const char *schema, *msg; } cases[] = {
    { "{\"type\": \"string\", \"pattern\": \"^a\"}", "the keyword 'pattern' is not supported (at the root)" },
    { "{\"properties\": {\"x\": {\"type\": \"number\", \"minimum\": 0}}}", "on a \"number\" are not supported" },
    { "{\"type\": \"integer\", \"minimum\": 3, \"exclusiveMaximum\": 3}", "no integer lies between" },
    { "{\"type\": \"integer\", \"maximum\": \"7\"}", "'maximum' must be a number" },
    { "{\"type\": \"string\", \"minProperties\": 1}", "'minProperties' is not supported" },
    { "{\"minLength\": 2}", "'minLength' without a 'type' is not supported" },
    { "{\"anyOf\": [{\"maximum\": 2}]}", "'maximum' without a 'type'" },
    { "{\"allOf\": [{}]}", "'allOf' is not supported" },
    { "{\"type\": \"strin\"}", "unknown type 'strin'" },
    { "{\"type\": 3}", "'type' must be a string" },
    { "{\"$ref\": \"#/$defs/missing\"}", "names nothing" },
    { "{\"$ref\": \"http://example.com/s.json\"}", "not into this document" },
    { "{\"anyOf\": []}", "non-empty array" },
    { "{\"enum\": []}", "non-empty array" },
    { "{\"type\": \"string\", \"maxLength\": 5000}", "over 2000" },
    { "{\"type\": \"string\", \"minLength\": -1}", "non-negative integer" },
    { "{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 2}", "below minItems" },
    { "{\"type\": \"object\", \"properties\": {}, \"required\": [\"a\"]}", "not in 'properties'" },
    { "{\"type\": \"integer\", \"enum\": [\"a\"]}", "no value of 'enum'" },
    { "false", "allows no value" },
    { "[1]", "must be an object or a boolean" },
    { "{\"type\": \"string\"", "not valid JSON" },
    { "{} x", "bytes after" },
    { "{\"$defs\": {\"a\": {\"anyOf\": [{\"$ref\": \"#/$defs/a\"}, {\"type\": \"null\"}]}}, \"$ref\": \"#/$defs/a\"}", "left-recursive" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tg_grammar *g = tg_grammar_from_json_schema(cases[i].schema, strlen(cases[i].schema));
    CHECK_MSG(g == NULL, "case %zu accepted", i);
    CHECK_MSG(strstr(tg_error(), cases[i].msg) != NULL, "case %zu: '%s' not in '%s'", i, cases[i].msg, tg_error());
    tg_grammar_free(g);
  }
  /* schemas nested past the bound */
  strbuf b = { 0 };
  for (int i = 0; i < 300; i++) sb_puts(&b, "{\"type\": \"array\", \"items\": ");
  sb_puts(&b, "{}");
  for (int i = 0; i < 300; i++) sb_puts(&b, "}");
  CHECK(tg_json_schema_to_gbnf(b.s, b.n) == NULL);
  CHECK(strstr(tg_error(), "nested more than 256") != NULL);
  sb_free(&b);
  CHECK(tg_json_schema_to_gbnf(NULL, 0) == NULL);
  /* a property name too long for the key rules' recursion */
  strbuf big = { 0 };
  sb_puts(&big, "{\"type\": \"object\", \"properties\": {\"");
  for (int i = 0; i < 5000; i++) sb_puts(&big, "k");
  sb_puts(&big, "\": {}}, \"additionalProperties\": true}");
  CHECK(tg_json_schema_to_gbnf(big.s, big.n) == NULL && strstr(tg_error(), "longer than 1000 bytes"));
  sb_free(&big);
}

/* ---------------------------------------------------------------- masks */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The mask by walking each token's text from the current state on its
 * own: what the trie walk must equal. */
static void mask_bruteforce(tg_grammar *g, const tg_tokenizer *tok, uint8_t *allowed) {
  int n = tg_tokenizer_n_vocab(tok);
  bool end = tg_grammar_can_end(g);
  for (int i = 0; i < n; i++) {
    if (tg_tokenizer_is_eog(tok, i)) { allowed[i] = end; continue; }
    char buf[1024];
    int len = tg_token_to_piece(tok, i, false, buf, sizeof buf);
    int st = g->cur;
    for (int k = 0; k < len && st != GSTATE_DEAD; k++) st = grammar_step(g, st, (uint8_t)buf[k]);
    allowed[i] = len > 0 && st != GSTATE_DEAD;
  }
}

/* Walks a JSON text token by token with a schema's grammar on a real
 * vocabulary: each next token must be in the mask, the mask must equal the
 * per-token walk, and the time per step is printed (first time in each
 * state, and overall with the per-state cache). */
static void mask_on_vocab(const char *file) {
  char path[256];
  snprintf(path, sizeof path, "../../shared/testdata/vocab/%s", file);
  if (access(path, R_OK)) SKIP("%s is absent", path);
  tg_tokenizer *tok = tg_tokenizer_load(path);
  CHECK_OK(tok);
  if (!tok) return;
  const char *schema = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\"}, "
                       "\"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, \"extra\": {}}, "
                       "\"required\": [\"name\", \"age\", \"tags\"], \"additionalProperties\": false}";
  const char *text = "{\"name\": \"Ada Lovelace, née Byron\", \"age\": 36, \"tags\": [\"mathematician\", \"writer\", \"first programmer\"], "
                     "\"extra\": {\"born\": 1815, \"notes\": [true, null, -1.5e3, \"The Analytical Engine weaves algebraic patterns\"]}}";
  /* SPM tokenizers put a space before the text: the grammar takes one */
  char *gbnf = tg_json_schema_to_gbnf(schema, strlen(schema));
  CHECK_OK(gbnf);
  if (!gbnf) { tg_tokenizer_free(tok); return; }
  strbuf src = { 0 };
  sb_printf(&src, "root ::= \" \"? %s", gbnf + strlen("root ::= "));
  free(gbnf);
  tg_grammar *g = tg_grammar_new(src.s, src.n);
  CHECK_OK(g);
  int32_t *ids = NULL;
  int n = tg_tokenize(tok, text, strlen(text), false, false, &ids);
  int nv = tg_tokenizer_n_vocab(tok);
  uint8_t *m = malloc((size_t)nv), *want = malloc((size_t)nv);
  double t0 = now_s();
  tg_grammar_mask(g, tok, m);   /* builds the trie */
  double trie_s = now_s() - t0;
  tg_grammar_free(g);
  g = tg_grammar_new(src.s, src.n);
  sb_free(&src);
  double total = 0, worst = 0;
  int steps = 0, mismatches = 0;
  for (int i = 0; i < n && g; i++) {
    double a = now_s();
    int count = tg_grammar_mask(g, tok, m);
    double dt = now_s() - a;
    total += dt;
    if (dt > worst) worst = dt;
    steps++;
    CHECK_MSG(count > 0, "step %d: %s", i, tg_error());
    CHECK_MSG(m[ids[i]], "step %d: token %d ('%s') is not allowed", i, ids[i], tg_tokenizer_token_text(tok, ids[i]));
    int eos = tg_tokenizer_eos(tok);
    if (eos >= 0) CHECK_MSG(m[eos] == tg_grammar_can_end(g), "step %d: EOS %s", i, m[eos] ? "allowed mid-text" : "not allowed");
    if (i % 7 == 0) {
      mask_bruteforce(g, tok, want);
      for (int k = 0; k < nv; k++) if (m[k] != want[k] && mismatches++ < 5) CHECK_MSG(0, "step %d token %d: trie %d, walk %d", i, k, m[k], want[k]);
    }
    char buf[256];
    int len = tg_token_to_piece(tok, ids[i], false, buf, sizeof buf);
    CHECK_MSG(tg_grammar_accept(g, buf, (size_t)len) == 0, "step %d: %s", i, tg_error());
  }
  if (g) {
    CHECK(tg_grammar_can_end(g));
    tg_grammar_mask(g, tok, m);
    int eos = tg_tokenizer_eos(tok);
    if (eos >= 0) CHECK(m[eos]);   /* the text is complete: the model may end */
  }
  /* the same walk again: every state's mask is cached now */
  double t1 = now_s();
  tg_grammar_reset(g);
  for (int i = 0; i < n && g; i++) {
    tg_grammar_mask(g, tok, m);
    char buf[256];
    int len = tg_token_to_piece(tok, ids[i], false, buf, sizeof buf);
    tg_grammar_accept(g, buf, (size_t)len);
  }
  double again = now_s() - t1;
  printf("  %s (%d tokens): trie %.1f ms; mask per step %.3f ms mean, %.3f ms worst over %d steps; repeated states %.3f ms\n",
         file, nv, trie_s * 1e3, total / steps * 1e3, worst * 1e3, steps, again / n * 1e3);
  free(m);
  free(want);
  free(ids);
  tg_grammar_free(g);
  tg_tokenizer_free(tok);
}

TEST(grammar_mask_llama_spm) { mask_on_vocab("ggml-vocab-llama-spm.gguf"); }
TEST(grammar_mask_gpt2) { mask_on_vocab("ggml-vocab-gpt-2.gguf"); }
TEST(grammar_mask_deepseek_llm) { mask_on_vocab("ggml-vocab-deepseek-llm.gguf"); }

/* ---------------------------------------------------------------- generation */

typedef struct { char buf[8192]; size_t n; } text_out;

static bool collect(void *u, const char *text, size_t len) {
  text_out *o = u;
  if (o->n + len < sizeof o->buf) { memcpy(o->buf + o->n, text, len); o->n += len; o->buf[o->n] = 0; }
  return true;
}

/* A tiny model sampling at temperature 1 under schemas whose JSON is
 * bounded: every output parses (cJSON), the grammar ends there, and the
 * jsonschema package (when python3 has it) validates each against its
 * schema. */
TEST(grammar_generate_tiny_model) {
  const char *path = "../../shared/testdata/models/stories260K.gguf";
  if (access(path, R_OK)) SKIP("%s is absent", path);
  tg_tokenizer *tok = tg_tokenizer_load(path);
  tg_llm *m = tg_llm_load(path, NULL);
  CHECK_OK(tok); CHECK_OK(m);
  if (!tok || !m) { tg_tokenizer_free(tok); tg_llm_free(m); return; }
  static const char *schemas[] = {
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 12}, \"age\": {\"type\": \"integer\"}, "
    "\"ok\": {\"type\": \"boolean\"}}, \"required\": [\"name\", \"age\"], \"additionalProperties\": false}",
    "{\"type\": \"array\", \"items\": {\"enum\": [\"red\", \"green\", 3, null]}, \"minItems\": 1, \"maxItems\": 4}",
    "{\"type\": \"object\", \"properties\": {\"kind\": {\"const\": \"point\"}, \"xy\": {\"type\": \"array\", \"items\": {\"type\": \"number\"}, "
    "\"minItems\": 2, \"maxItems\": 2}}, \"required\": [\"kind\", \"xy\"], \"additionalProperties\": false}",
    "{\"anyOf\": [{\"type\": \"string\", \"minLength\": 1, \"maxLength\": 5}, {\"type\": \"null\"}, {\"type\": \"array\", "
    "\"items\": {\"type\": \"boolean\"}, \"maxItems\": 3}]}",
  };
  char outpath[] = "/tmp/tg_grammar_gen_XXXXXX";
  int fd = mkstemp(outpath);
  FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
  CHECK(out != NULL);
  int32_t *prompt;
  int np = tg_tokenize(tok, "Once upon a time", 16, true, false, &prompt);
  int runs = 0;
  for (size_t si = 0; si < sizeof schemas / sizeof *schemas; si++)
    for (uint64_t seed = 1; seed <= 4; seed++) {
      tg_grammar *g = tg_grammar_from_json_schema(schemas[si], strlen(schemas[si]));
      CHECK_OK(g);
      tg_sampler *s = tg_sampler_new(&(tg_sampling){ .temperature = 1, .seed = seed });
      CHECK_OK(tg_sampler_set_grammar(s, g, tok) == 0);
      text_out o = { .n = 0 };
      tg_gen_stats st;
      int rc = tg_llm_generate(m, tok, prompt, np, 400, s, NULL, 0, collect, &o, &st);
      CHECK_MSG(rc == 0, "schema %zu seed %d: %s", si, (int)seed, tg_error());
      CHECK_MSG(st.hit_eog, "schema %zu seed %d: no end after %d tokens: '%s'", si, (int)seed, st.n_generated, o.buf);
      CHECK_MSG(tg_grammar_can_end(g), "schema %zu seed %d: '%s' is not complete", si, (int)seed, o.buf);
      cJSON *v = cJSON_Parse(o.buf);
      CHECK_MSG(v != NULL, "schema %zu seed %d: '%s' is not JSON", si, (int)seed, o.buf);
      cJSON_Delete(v);
      if (out) {
        cJSON *line = cJSON_CreateObject();
        cJSON_AddItemToObject(line, "schema", cJSON_Parse(schemas[si]));
        cJSON_AddStringToObject(line, "text", o.buf);
        char *ls = cJSON_PrintUnformatted(line);
        fprintf(out, "%s\n", ls);
        free(ls);
        cJSON_Delete(line);
      }
      runs++;
      tg_sampler_free(s);
      tg_grammar_free(g);
    }
  free(prompt);
  if (out) fclose(out);
  if (system("python3 -c 'import jsonschema' >/dev/null 2>&1") != 0) printf("  (not validated: python3 has no jsonschema)\n");
  else {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "python3 grammar_validate.py %s", outpath);
    CHECK_MSG(system(cmd) == 0, "jsonschema rejected some output (%s)", outpath);
  }
  printf("  %d constrained generations\n", runs);
  unlink(outpath);
  tg_llm_free(m);
  tg_tokenizer_free(tok);
}

/* ---------------------------------------------------------------- tg serve's fields */

static int parse_body(const char *body, serve_request *r, serve_error *e) {
  return serve_request_parse(r, true, body, strlen(body), e);
}

#define CHAT "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]"

TEST(grammar_serve_request) {
  serve_request r;
  serve_error e;
  /* json_schema: the grammar reaches the sampling parameters */
  const char *js = "{" CHAT ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"p\", \"strict\": true, "
                   "\"schema\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}, \"required\": [\"n\"]}}}}";
  CHECK_MSG(parse_body(js, &r, &e) == 0, "%s", e.message);
  CHECK(r.grammar && r.sampling.grammar == r.grammar);
  tg_grammar *g = r.grammar ? tg_grammar_new(r.grammar, strlen(r.grammar)) : NULL;
  CHECK(g && match(g, "{\"n\": 3}") == 1 && match(g, "{\"n\": \"x\"}") == 0);
  tg_grammar_free(g);
  serve_request_free(&r);
  /* json_object: any object */
  CHECK(parse_body("{" CHAT ", \"response_format\": {\"type\": \"json_object\"}}", &r, &e) == 0);
  g = r.grammar ? tg_grammar_new(r.grammar, strlen(r.grammar)) : NULL;
  CHECK(g && match(g, "{\"a\": [1, 2]}") == 1 && match(g, "[1]") == 0);
  tg_grammar_free(g);
  serve_request_free(&r);
  /* text, null and an empty grammar: no constraint */
  CHECK(parse_body("{" CHAT ", \"response_format\": {\"type\": \"text\"}, \"grammar\": \"\"}", &r, &e) == 0 && !r.grammar && !r.sampling.grammar);
  serve_request_free(&r);
  CHECK(parse_body("{" CHAT ", \"response_format\": null}", &r, &e) == 0 && !r.grammar);
  serve_request_free(&r);
  /* GBNF, on both endpoints */
  CHECK(parse_body("{" CHAT ", \"grammar\": \"root ::= [a-z]+\"}", &r, &e) == 0 && r.grammar && !strcmp(r.grammar, "root ::= [a-z]+"));
  serve_request_free(&r);
  const char *text = "{\"prompt\": \"x\", \"grammar\": \"root ::= \\\"yes\\\" | \\\"no\\\"\"}";
  CHECK(serve_request_parse(&r, false, text, strlen(text), &e) == 0 && r.grammar);
  serve_request_free(&r);
  /* 400s that name the field and say why */
  static const struct { const char *body, *code, *param, *msg; } bad[] = {
    { "{" CHAT ", \"grammar\": \"root ::= foo\"}", "invalid_value", "grammar", "undefined rule 'foo'" },
    { "{" CHAT ", \"grammar\": 3}", "invalid_value", "grammar", "must be a string" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": {\"type\": \"string\", \"pattern\": \"a\"}}}}",
      "invalid_value", "response_format.json_schema.schema", "'pattern' is not supported" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"x\"}}}", "missing_field",
      "response_format.json_schema.schema", "is required" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_schema\"}}", "invalid_value", "response_format.json_schema", "must be an object" },
    { "{" CHAT ", \"response_format\": {\"type\": \"xml\"}}", "invalid_value", "response_format.type", "must be" },
    { "{" CHAT ", \"response_format\": \"json\"}", "invalid_value", "response_format", "must be an object" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_object\", \"shema\": {}}}", "unknown_parameter", "response_format.shema", "unknown field" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_object\"}, \"grammar\": \"root ::= \\\"a\\\"\"}", "invalid_value", "grammar", "not both" },
    { "{" CHAT ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"schema\": {\"$defs\": {\"a\": {\"anyOf\": "
      "[{\"$ref\": \"#/$defs/a\"}, {\"type\": \"null\"}]}}, \"$ref\": \"#/$defs/a\"}}}}", "invalid_value", "response_format", "left-recursive" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&e, 0, sizeof e);
    CHECK_MSG(parse_body(bad[i].body, &r, &e) == -1, "case %zu accepted", i);
    CHECK_MSG(e.status == 400 && e.code && !strcmp(e.code, bad[i].code) && !strcmp(e.param, bad[i].param) && strstr(e.message, bad[i].msg),
              "case %zu: %d %s '%s' '%s'", i, e.status, e.code ? e.code : "-", e.param, e.message);
  }
}

/* tg serve on stories260K (its own process, as test_serve_model.c starts
 * it) answering response_format and grammar requests from
 * grammar_serve_client.py (the openai client when installed). */
TEST(grammar_serve_model) {
  const char *bin = getenv("TG_BIN");
  const char *model = "../../shared/testdata/models/stories260K.gguf";
  if (!bin || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  if (system("python3 -c 'import json' >/dev/null 2>&1") != 0) SKIP("no python3");
  char log[] = "/tmp/tg_grammar_serve_XXXXXX";
  int fd = mkstemp(log);
  if (fd < 0) SKIP("no temporary file");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    execl(bin, bin, "serve", "-m", model, "--port", "0", (char *)NULL);
    _exit(127);
  }
  close(fd);
  int port = 0;
  /* up to 2 min: the server warms up its batched decode first (a fresh
   * kernel cache compiles it); a server that died stops the wait */
  for (int i = 0; i < 6000 && !port && waitpid(pid, NULL, WNOHANG) == 0; i++) {
    usleep(20000);
    char *s = read_text(log);
    const char *at = s ? strstr(s, "http://127.0.0.1:") : NULL;
    if (at) port = atoi(at + strlen("http://127.0.0.1:"));
    free(s);
  }
  CHECK_MSG(port > 0, "tg serve did not start");
  if (port > 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "python3 grammar_serve_client.py %d 2>&1", port);
    FILE *p = popen(cmd, "r");
    char out[8192] = "";
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = 0;
    if (p) pclose(p);
    CHECK_MSG(strstr(out, "grammar client: all ok") != NULL, "grammar_serve_client.py: %s", out);
    printf("  %s", out);
  }
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tg serve exited with status %d", status);
  unlink(log);
}

/* ---------------------------------------------------------------- what the fuzzers found */

/* fuzz_gbnf: a multi-byte character's partial state copied its stacks from
 * the pool while interning grew (moved) the pool: a use after free (ASan).
 * Many distinct states, each followed by a two-byte character, make the
 * pool grow at such a copy. */
TEST(grammar_fuzz_partial_state_pool_growth) {
  const char *gbnf = "root ::= ( [a-z] | [\\u00e0-\\u00ff] ){0,1500}";
  for (int shift = 0; shift < 24; shift++) {   /* where the pool grows moves with the shift */
    tg_grammar *g = tg_grammar_new(gbnf, strlen(gbnf));
    CHECK_OK(g);
    if (!g) return;
    strbuf text = { 0 };
    for (int i = 0; i < shift; i++) sb_puts(&text, "b");
    for (int i = 0; i < 700; i++) sb_puts(&text, "a\xc3\xa9");
    CHECK_MSG(accepts_bytewise(g, text.s, text.n) == 1, "%s", tg_error());
    sb_free(&text);
    tg_grammar_free(g);
  }
}

/* fuzz_json_schema: counts and integers past int64 were cast to it
 * (undefined behaviour UBSan reports); now they are checked as doubles. */
TEST(grammar_fuzz_schema_huge_numbers) {
  const char *s1 = "{\"type\": \"string\", \"maxLength\": 1.88889e+80}";
  CHECK(tg_json_schema_to_gbnf(s1, strlen(s1)) == NULL && strstr(tg_error(), "over 2000"));
  const char *s2 = "{\"type\": \"array\", \"minItems\": -1e300}";
  CHECK(tg_json_schema_to_gbnf(s2, strlen(s2)) == NULL && strstr(tg_error(), "non-negative integer"));
  const char *s3 = "{\"type\": \"integer\", \"enum\": [1e300, 2.5]}";
  char *gbnf = tg_json_schema_to_gbnf(s3, strlen(s3));
  CHECK_MSG(gbnf && strstr(gbnf, "1e+300") && !strstr(gbnf, "2.5"), "%s", gbnf ? gbnf : tg_error());
  free(gbnf);
}
