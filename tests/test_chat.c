/* test_chat.c: the chat layer (tg_chat.h) against llama.cpp's and minja's
 * expectations in ../shared/testdata/chat (see its README): real templates
 * rendered in Jinja mode, the built-in presets, minja's syntax cases, and a
 * template read from a GGUF. Plus the error paths. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include "test.h"
#include "chat/chat_internal.h"

#define CHAT_DIR "../../shared/testdata/chat"
#define VOCAB_DIR "../../shared/testdata/vocab"
/* strftime_now's clock in the cases: 2024-07-26 00:00:00 UTC */
#define CASES_NOW 1721952000

static char *read_text(const char *path) {
  size_t n;
  char *p = test_read_file(path, &n);
  if (!p) return NULL;
  char *s = malloc(n + 1);
  memcpy(s, p, n);
  s[n] = 0;
  free(p);
  return s;
}

/* calls fn for each JSON line of a file; returns the number of lines, -1 when missing */
static int each_line(const char *path, void (*fn)(const cJSON *, void *), void *ctx) {
  char *text = read_text(path);
  if (!text) return -1;
  int n = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = 0;
    if (!*line) continue;
    cJSON *j = cJSON_Parse(line);
    if (!j) { test_fail(__FILE__, __LINE__, "%s: bad JSON line %d", path, n + 1); continue; }
    fn(j, ctx);
    cJSON_Delete(j);
    n++;
  }
  free(text);
  return n;
}

static const char *str_of(const cJSON *j, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_of(const cJSON *j, const char *key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, key)); }

static char *json_of(const cJSON *j, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return v ? cJSON_PrintUnformatted(v) : NULL;
}

/* first differing byte, for readable failures */
static void report_diff(const char *name, const char *got, const char *want) {
  size_t i = 0;
  while (got[i] && got[i] == want[i]) i++;
  size_t from = i > 30 ? i - 30 : 0;
  test_fail(__FILE__, __LINE__, "%s: differs at byte %zu:\n    got  %.80s\n    want %.80s", name, i, got + from, want + from);
}

typedef struct tally { int pass, total; } tally;

static void check_output(tally *t, const char *name, char *got, const char *want, const char *want_error) {
  t->total++;
  if (want) {
    if (!got) test_fail(__FILE__, __LINE__, "%s: failed: %s", name, tg_error());
    else if (strcmp(got, want)) report_diff(name, got, want);
    else t->pass++;
  } else {
    if (got) test_fail(__FILE__, __LINE__, "%s: rendered, but should fail with '%s'", name, want_error);
    else if (want_error && !strstr(tg_error(), want_error))
      test_fail(__FILE__, __LINE__, "%s: error '%s' lacks '%s'", name, tg_error(), want_error);
    else t->pass++;
  }
  free(got);
}

/* ---- syntax_cases.jsonl: minja's syntax tests ---- */

static void run_syntax_case(const cJSON *c, void *ctx) {
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "options");
  tg_jinja_options opt = { bool_of(o, "trim_blocks"), bool_of(o, "lstrip_blocks"), bool_of(o, "keep_trailing_newline") };
  char *vars = json_of(c, "bindings");
  char *got = tg_jinja_render(str_of(c, "template"), vars, opt);
  free(vars);
  check_output(ctx, str_of(c, "name"), got, str_of(c, "expected"), str_of(c, "expected_error_substr"));
}

TEST(chat_syntax_cases) {
  tally t = { 0 };
  if (each_line(CHAT_DIR "/syntax_cases.jsonl", run_syntax_case, &t) < 0) SKIP("no " CHAT_DIR " (shared test data)");
  printf("  syntax_cases.jsonl: %d/%d pass\n", t.pass, t.total);
  CHECK_EQ_INT(t.pass, t.total);
}

/* ---- cases.jsonl: real templates, Jinja and preset mode ---- */

static void run_case(const cJSON *c, void *ctx) {
  tally *t = ctx;
  const char *name = str_of(c, "name"), *mode = str_of(c, "mode");
  char path[512];
  snprintf(path, sizeof path, CHAT_DIR "/%s", str_of(c, "template_file"));
  char *text = read_text(path);
  if (!text) { t->total++; test_fail(__FILE__, __LINE__, "%s: missing %s", name, path); return; }
  bool jinja = !strcmp(mode, "jinja");
  tg_chat_template *tmpl = tg_chat_template_new(text, jinja ? NULL : "auto", str_of(c, "bos_token"), str_of(c, "eos_token"));
  free(text);
  if (!tmpl) { t->total++; test_fail(__FILE__, __LINE__, "%s: template: %s", name, tg_error()); return; }
  tg_chat_set_time(tmpl, CASES_NOW);
  if (jinja) {   /* the case lists the polyfills that changed its messages; ours must give render_messages */
    bool sys, args;
    chat_template_polyfills(tmpl, &sys, &args);
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "polyfills");
    bool want_sys = false, want_args = false;
    for (const cJSON *p = want ? want->child : NULL; p; p = p->next) {
      want_sys |= !strcmp(p->valuestring, "system_role");
      want_args |= !strcmp(p->valuestring, "object_arguments");
    }
    CHECK_MSG((sys || !want_sys) && (args || !want_args), "%s: polyfills system_role=%d object_arguments=%d, want %d %d",
              name, sys, args, want_sys, want_args);
    const cJSON *rm = cJSON_GetObjectItemCaseSensitive(c, "render_messages");
    cJSON *mine = chat_polyfill_messages(tmpl, cJSON_GetObjectItemCaseSensitive(c, "messages"));
    CHECK_MSG(cJSON_Compare(mine, rm ? rm : cJSON_GetObjectItemCaseSensitive(c, "messages"), true),
              "%s: polyfilled messages differ from render_messages", name);
    cJSON_Delete(mine);
  }
  if (!jinja && strcmp(tg_chat_preset_name(tmpl) ? tg_chat_preset_name(tmpl) : "(none)", str_of(c, "preset")))
    test_fail(__FILE__, __LINE__, "%s: detected %s, want %s", name, tg_chat_preset_name(tmpl), str_of(c, "preset"));
  /* the original messages: the polyfills must turn them into render_messages */
  char *msgs = json_of(c, "messages"), *tools = json_of(c, "tools"), *extra = json_of(c, "extra_context");
  char *got = tg_chat_apply_json(tmpl, msgs, tools, extra, bool_of(c, "add_generation_prompt"), false);
  check_output(t, name, got, str_of(c, "expected"), str_of(c, "expected_error"));
  free(msgs);
  free(tools);
  free(extra);
  tg_chat_template_free(tmpl);
}

TEST(chat_cases) {
  tally t = { 0 };
  if (each_line(CHAT_DIR "/cases.jsonl", run_case, &t) < 0) SKIP("no " CHAT_DIR " (shared test data)");
  printf("  cases.jsonl: %d/%d pass\n", t.pass, t.total);
  CHECK_EQ_INT(t.pass, t.total);
}

/* ---- presets.jsonl: built-in presets by name ---- */

static char *apply_preset(const char *preset_or_text, const cJSON *messages, bool add_gen) {
  tg_chat_template *t = tg_chat_template_new(preset_or_text, "auto", NULL, NULL);
  if (!t) return NULL;
  char *m = cJSON_PrintUnformatted(messages);
  char *out = tg_chat_apply_json(t, m, NULL, NULL, add_gen, false);
  free(m);
  tg_chat_template_free(t);
  return out;
}

/* llama.cpp's common_chat_format_single: the text one new message adds */
static char *format_single(const cJSON *c) {
  const char *tmpl = str_of(c, "template");
  const cJSON *past = cJSON_GetObjectItemCaseSensitive(c, "past_messages");
  bool add_gen = bool_of(c, "add_generation_prompt");
  char *before = cJSON_GetArraySize(past) ? apply_preset(tmpl, past, false) : strdup("");
  cJSON *all = cJSON_Duplicate(past, true);
  cJSON_AddItemToArray(all, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "new_message"), true));
  char *after = apply_preset(tmpl, all, add_gen);
  cJSON_Delete(all);
  char *out = NULL;
  if (before && after) {
    size_t n = strlen(before);
    bool nl = add_gen && n && before[n - 1] == '\n';
    out = malloc(strlen(after) - n + 2);
    sprintf(out, "%s%s", nl ? "\n" : "", after + n);
  }
  free(before);
  free(after);
  return out;
}

static void run_preset(const cJSON *c, void *ctx) {
  tally *t = ctx;
  const char *name = str_of(c, "name");
  char *got;
  if (!strcmp(str_of(c, "kind"), "format_single")) {
    const char *want = str_of(c, "preset");
    const char *detected = tg_chat_detect_preset(str_of(c, "template"));
    if (!detected || strcmp(detected, want)) test_fail(__FILE__, __LINE__, "%s: detected %s, want %s", name, detected, want);
    got = format_single(c);
  } else {
    got = apply_preset(str_of(c, "preset"), cJSON_GetObjectItemCaseSensitive(c, "messages"), bool_of(c, "add_generation_prompt"));
  }
  check_output(t, name, got, str_of(c, "expected"), NULL);
}

TEST(chat_presets) {
  tally t = { 0 };
  if (each_line(CHAT_DIR "/presets.jsonl", run_preset, &t) < 0) SKIP("no " CHAT_DIR " (shared test data)");
  printf("  presets.jsonl: %d/%d pass\n", t.pass, t.total);
  CHECK_EQ_INT(t.pass, t.total);
  /* every preset llama.cpp knows is here, plus olmo2 */
  const char *const *names = tg_chat_preset_names();
  int n = 0;
  bool olmo2 = false;
  for (; names[n]; n++) olmo2 |= !strcmp(names[n], "olmo2");
  CHECK(n >= 33 && olmo2);
}

static void run_detect(const cJSON *c, void *ctx) {
  tally *t = ctx;
  char path[512];
  snprintf(path, sizeof path, CHAT_DIR "/%s", str_of(c, "file"));
  char *text = read_text(path);
  const char *want = str_of(c, "llama_cpp_detected_preset");
  const char *got = text ? tg_chat_detect_preset(text) : NULL;
  t->total++;
  if ((want && (!got || strcmp(got, want))) || (!want && got)) test_fail(__FILE__, __LINE__, "%s: detected %s, want %s", path, got, want);
  else t->pass++;
  /* minja's capability probes, which decide the polyfills */
  tg_chat_template *tmpl = text ? tg_chat_template_new(text, NULL, str_of(c, "bos_token"), str_of(c, "eos_token")) : NULL;
  CHECK_OK(tmpl);
  if (tmpl) {
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(c, "minja_caps");
    bool sys, args;
    chat_template_polyfills(tmpl, &sys, &args);
    CHECK_MSG(sys == !bool_of(caps, "supports_system_role"), "%s: system_role polyfill %d", path, sys);
    CHECK_MSG(args == bool_of(caps, "requires_object_arguments"), "%s: object_arguments polyfill %d", path, args);
    tg_chat_template_free(tmpl);
  }
  free(text);
}

TEST(chat_detect_templates) {
  tally t = { 0 };
  if (each_line(CHAT_DIR "/templates.jsonl", run_detect, &t) < 0) SKIP("no " CHAT_DIR " (shared test data)");
  printf("  templates.jsonl detection: %d/%d pass\n", t.pass, t.total);
  CHECK_EQ_INT(t.pass, t.total);
}

/* ---- end to end: the template inside a GGUF ---- */

/* The value of a string key in a GGUF's metadata (a minimal reader: walks
 * the key/value section and skips values of other types). */
static char *gguf_string(const char *path, const char *want) {
  size_t n;
  unsigned char *p = test_read_file(path, &n), *end = p + n, *q = p + 4 + 4 + 8;
  if (!p || n < 24 || memcmp(p, "GGUF", 4)) { free(p); return NULL; }
  uint64_t nkv;
  memcpy(&nkv, p + 16, 8);
  q = p + 24;
  static const int scalar_size[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
  char *found = NULL;
  for (uint64_t k = 0; k < nkv && !found && q + 12 <= end; k++) {
    uint64_t klen;
    memcpy(&klen, q, 8);
    q += 8;
    if (klen > (uint64_t)(end - q)) break;
    const unsigned char *key = q;
    q += klen;
    uint32_t type;
    memcpy(&type, q, 4);
    q += 4;
    uint64_t count = 1;
    uint32_t item = type;
    if (type == 9) {
      memcpy(&item, q, 4);
      memcpy(&count, q + 4, 8);
      q += 12;
    }
    for (uint64_t i = 0; i < count && q <= end; i++) {
      if (item == 8) {
        uint64_t slen;
        memcpy(&slen, q, 8);
        q += 8;
        if (slen > (uint64_t)(end - q)) { q = end + 1; break; }
        if (type == 8 && klen == strlen(want) && !memcmp(key, want, klen)) {
          found = malloc(slen + 1);
          memcpy(found, q, slen);
          found[slen] = 0;
        }
        q += slen;
      } else if (item < 13 && scalar_size[item]) {
        q += scalar_size[item];
      } else {
        q = end + 1;
      }
    }
    if (q > end) break;
  }
  free(p);
  return found;
}

typedef struct gguf_ctx { tally t; const char *tmpl; } gguf_ctx;

static void run_phi3_case(const cJSON *c, void *ctx) {
  gguf_ctx *g = ctx;
  if (strncmp(str_of(c, "name"), "test/Phi-3-mini/", 16)) return;
  tg_chat_template *t = tg_chat_template_new(g->tmpl, strcmp(str_of(c, "mode"), "preset") ? NULL : "auto",
                                             str_of(c, "bos_token"), str_of(c, "eos_token"));
  CHECK_OK(t);
  if (!t) return;
  char *msgs = json_of(c, "messages");
  check_output(&g->t, str_of(c, "name"), tg_chat_apply_json(t, msgs, NULL, NULL, bool_of(c, "add_generation_prompt"), false),
               str_of(c, "expected"), NULL);
  free(msgs);
  tg_chat_template_free(t);
}

TEST(chat_gguf_phi3) {
  char *tmpl = gguf_string(VOCAB_DIR "/ggml-vocab-phi-3.gguf", "tokenizer.chat_template");
  if (!tmpl) SKIP("no " VOCAB_DIR "/ggml-vocab-phi-3.gguf (shared test data)");
  char *file = read_text(CHAT_DIR "/templates/Phi-3-mini.jinja");
  CHECK(file && !strcmp(file, tmpl));
  free(file);
  gguf_ctx g = { { 0 }, tmpl };
  each_line(CHAT_DIR "/cases.jsonl", run_phi3_case, &g);
  printf("  Phi-3-mini from GGUF: %d/%d pass\n", g.t.pass, g.t.total);
  CHECK(g.t.total >= 2);
  CHECK_EQ_INT(g.t.pass, g.t.total);
  tg_chat_template *t = tg_chat_template_new(tmpl, NULL, "<s>", "<|endoftext|>");
  CHECK_OK(t);
  if (t) {
    CHECK(!strcmp(tg_chat_preset_name(t), "phi3"));
    CHECK(!strcmp(tg_chat_end_strings(t)[0], "<|end|>"));
    tg_chat_template_free(t);
  }
  free(tmpl);
}

/* ---- API behaviour and errors ---- */

static char *render(const char *tmpl, const char *vars) {
  return tg_jinja_render(tmpl, vars, (tg_jinja_options){ .trim_blocks = true, .lstrip_blocks = true });
}

#define CHECK_RENDER_FAILS(tmpl, vars, substr) do { \
  char *out_ = render(tmpl, vars); \
  CHECK_MSG(!out_, "%s: rendered '%.60s'", tmpl, out_ ? out_ : ""); \
  CHECK_MSG(out_ || strstr(tg_error(), substr), "%s: error '%s' lacks '%s'", tmpl, tg_error(), substr); \
  free(out_); } while (0)

TEST(chat_errors) {
  /* syntax errors name the line and column */
  CHECK_RENDER_FAILS("a\nb {{ x + }}", NULL, "line 2, column");
  CHECK_RENDER_FAILS("{% if x %}\nno end", NULL, "Unterminated if");
  CHECK_RENDER_FAILS("{% for x in y %}{% endif %}", NULL, "Unterminated for");
  CHECK_RENDER_FAILS("{{ 'unterminated }}", NULL, "unterminated string");
  CHECK(!tg_chat_template_new("{% if %}", NULL, NULL, NULL));
  CHECK(strstr(tg_error(), "line 1"));
  /* runaway templates are bounded */
  CHECK_RENDER_FAILS("{% for i in range(10**9) %}x{% endfor %}", NULL, "range()");
  CHECK_RENDER_FAILS("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}", NULL, "work limit");
  CHECK_RENDER_FAILS("{% set r = range(1000000) %}{% for i in r %}{% if i in r %}{% endif %}{% endfor %}", NULL, "work limit");
  CHECK_RENDER_FAILS("{% set x = [] %}{% set _ = x.append(x) %}{{ x | tojson }}", NULL, "nested too deeply");
  CHECK_RENDER_FAILS("{% set x = [] %}{% set _ = x.append(x) %}{{ x }}", NULL, "nested too deeply");
  CHECK_RENDER_FAILS("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", NULL, "memory limit");
  CHECK_RENDER_FAILS("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, "recursion");
  CHECK_RENDER_FAILS("{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{{ s }}{% endfor %}", NULL, "output exceeds");
  char deep[1024] = "{{ ";
  for (int i = 0; i < 300; i++) strcat(deep, "(");
  strcat(deep, "1");
  for (int i = 0; i < 300; i++) strcat(deep, ")");
  strcat(deep, " }}");
  CHECK_RENDER_FAILS(deep, NULL, "nested too deeply");
  CHECK_RENDER_FAILS("{{ raise_exception('Bad role') }}", NULL, "Bad role");
  /* a message without role or content */
  tg_chat_template *t = tg_chat_template_new(NULL, "chatml", NULL, NULL);
  tg_chat_message bad[] = { { NULL, "hi" } };
  CHECK(!tg_chat_apply(t, bad, 1, true, false));
  CHECK(strstr(tg_error(), "no role"));
  tg_chat_message bad2[] = { { "user", NULL } };
  CHECK(!tg_chat_apply(t, bad2, 1, true, false));
  CHECK(strstr(tg_error(), "no content"));
  CHECK(!tg_chat_apply_json(t, "[{\"content\": \"x\"}]", NULL, NULL, true, false));
  CHECK(strstr(tg_error(), "message 0 has no role"));
  CHECK(!tg_chat_apply_json(t, "not json", NULL, NULL, true, false));
  tg_chat_template_free(t);
  CHECK(!tg_chat_template_new(NULL, "no-such-preset", NULL, NULL));
  CHECK(!tg_chat_template_new("{{ plain }}", "auto", NULL, NULL));
}

TEST(chat_api) {
  tg_chat_message msgs[] = { { "system", "Be brief." }, { "user", "Hi" }, { "assistant", "Hello there" } };
  /* presets */
  tg_chat_template *t = tg_chat_template_new(NULL, "chatml", NULL, NULL);
  char *out = tg_chat_apply(t, msgs, 2, true, false);
  CHECK(out && !strcmp(out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
  free(out);
  out = tg_chat_apply(t, msgs, 3, false, true);
  CHECK(out && !strcmp(out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello there"));
  free(out);
  CHECK(!tg_chat_apply(t, msgs, 3, true, true));
  CHECK(!tg_chat_apply(t, msgs, 2, false, true));   /* the final message is no assistant one */
  CHECK(!strcmp(tg_chat_end_strings(t)[0], "<|im_end|>") && !tg_chat_end_strings(t)[1]);
  CHECK(!tg_chat_is_jinja(t));
  tg_chat_template_free(t);
  t = tg_chat_template_new(NULL, "olmo2", NULL, NULL);
  out = tg_chat_apply(t, msgs + 1, 1, true, false);
  CHECK(out && !strcmp(out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
  CHECK(!strcmp(tg_chat_end_strings(t)[0], "<|im_end|>"));
  free(out);
  tg_chat_template_free(t);
  /* Jinja mode: BOS strip, end strings from the detected preset, continue_final_message */
  const char *llama3 =
      "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
      "{{ m.content | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
      "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";
  t = tg_chat_template_new(llama3, NULL, "<|begin_of_text|>", "<|eot_id|>");
  CHECK_OK(t);
  CHECK(tg_chat_is_jinja(t) && !strcmp(tg_chat_preset_name(t), "llama3"));
  CHECK(!strcmp(tg_chat_end_strings(t)[0], "<|eot_id|>") && !tg_chat_end_strings(t)[1]);
  out = tg_chat_apply(t, msgs + 1, 2, false, true);
  CHECK(out && !strcmp(out, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                            "<|start_header_id|>assistant<|end_header_id|>\n\nHello there"));
  free(out);
  tg_chat_template_free(t);
  /* the system_role polyfill for a template that drops system messages */
  const char *no_sys = "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}"
                       "{% endif %}[{{ m.role }}: {{ m.content }}]{% endfor %}";
  t = tg_chat_template_new(no_sys, NULL, NULL, NULL);
  out = tg_chat_apply(t, msgs, 3, false, false);
  CHECK(out && !strcmp(out, "[user: Be brief.\nHi][assistant: Hello there]"));
  free(out);
  tg_chat_template_free(t);
}

/* features the shared cases do not reach */
TEST(chat_jinja_features) {
  static const struct { const char *tmpl, *want; } cases[] = {
    { "{{ '%s-%d-%5.2f|%r%%' % ('a', 3, 2.5, 'x') }}", "a-3- 2.50|'x'%" },
    { "{{ 'n=%s' % 5 }}", "n=5" },
    { "{{ '{} and {1} {name} {{x}}'.format('A', 'B', name='N') }}", "A and B N {x}" },
    { "{% raw %}{{ not rendered }}{% endraw %}", "{{ not rendered }}" },
    { "{% macro m(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(y) m(4) %}{{ y }}{% endcall %}", "[8]" },
    { "{{ [{'n': 'b', 'v': 2}, {'n': 'a', 'v': 1}] | sort(attribute='n') | map(attribute='v') | join(',') }}", "1,2" },
    { "{{ [3, 1, 2] | sort(reverse=true) }}", "[3, 2, 1]" },
    { "{% for k, v in {'b': 1, 'a': 2} | dictsort %}{{ k }}={{ v }};{% endfor %}", "a=2;b=1;" },
    { "{% filter upper %}abc{% endfilter %}", "ABC" },
    { "{% for x in [1, 2, 3] %}{{ loop.previtem | default('-') }}{{ loop.nextitem | default('-') }} {% endfor %}", "-2 13 2- " },
    { "{{ 'a\\tb\\u00e9\\x41' }}", "a\tb\xc3\xa9" "A" },
    { "{{ 4 is divisibleby 2 }},{{ 3 is odd }},{{ 'x' is in 'xyz' }},{{ none is none }},{{ 1.5 is float }}", "True,True,True,True,True" },
    { "{{ 7 // 2 }},{{ -7 // 2 }},{{ -7 % 3 }},{{ 7 / 2 }},{{ 2 ** 10 }},{{ 1e3 }}", "3,-4,2,3.5,1024,1000.0" },
    { "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "12" },
    { "{% set d = {'x': 1} %}{% set _ = d.update({'y': 2}) %}{{ d | tojson(indent=2) }}", "{\n  \"x\": 1,\n  \"y\": 2\n}" },
    { "{{ 'x' if false }}|{{ 'é' | length }}|{{ 'abc'[::-1] }}|{{ [1, 2][5] is defined }}", "|1|cba|False" },
    { "{{ {'a': [1, {'b': none}], 'c': true} | tojson }}", "{\"a\": [1, {\"b\": null}], \"c\": true}" },
    { "{{ '\"<tag>\\n' | tojson }}", "\"\\\"<tag>\\n\"" },
    { "{% for m in messages %}{{ m.role }}{% endfor %}", "" },
    { "  {%+ if true %}x{% endif %}", "  x" },
    { "{{ strftime_now('%Y') | length }}", "4" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out = render(cases[i].tmpl, NULL);
    CHECK_MSG(out && !strcmp(out, cases[i].want), "%s: got '%s', want '%s'", cases[i].tmpl, out ? out : tg_error(), cases[i].want);
    free(out);
  }
}

/* [2.9] integer edges a template (every GGUF carries one) can reach: no
 * SIGFPE, no undefined overflow; Python's results where they fit in 64 bits,
 * a template error where Python's would not */
TEST(chat_jinja_integer_edges) {
  static const struct { const char *tmpl, *want; } ok[] = {
    { "{{ (-9223372036854775807 - 1) % -1 }},{{ 7 % -1 }},{{ -7 // -1 }}", "0,0,7" },
    { "{{ (-9223372036854775807 - 1) // 2 }},{{ (-9223372036854775807 - 1) // 1 }}", "-4611686018427387904,-9223372036854775808" },
    { "{{ (-9223372036854775807 - 1) is divisibleby(-1) }}", "True" },
    { "{{ (-1) ** 65 }},{{ 2 ** 62 }},{{ 0 ** 0 }},{{ 1 ** 9223372036854775807 }}", "-1,4611686018427387904,1,1" },
    { "{{ range(9223372036854775805, 9223372036854775807) | list }}", "[9223372036854775805, 9223372036854775806]" },
    { "{{ range(0, 9223372036854775807, 4611686018427387904) | list }}", "[0, 4611686018427387904]" },
    { "{{ range(9223372036854775806, -9223372036854775807 - 1, -9223372036854775807 - 1) | list }}", "[9223372036854775806, -2]" },
    { "{{ range(0, 10, 9223372036854775807) | list }},{{ range(5, 0, -2) | list }}", "[0],[5, 3, 1]" },
    { "{{ 'abc'[1::9223372036854775807] }}|{{ [1, 2, 3][2::9223372036854775807] }}", "b|[3]" },
    { "{{ 'nan' | int(5) }},{{ 1e18 | int }},{{ -2.5 | int }}", "5,1000000000000000000,-2" },
    { "{{ '%d' % 3.9 }},{{ '%d' % 9223372036854775807 }}", "3,9223372036854775807" },
    { "{{ [9223372036854775806, 1] | sum }}", "9223372036854775807" },
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    char *out = render(ok[i].tmpl, NULL);
    CHECK_MSG(out && !strcmp(out, ok[i].want), "%s: got '%s', want '%s'", ok[i].tmpl, out ? out : tg_error(), ok[i].want);
    free(out);
  }
  CHECK_RENDER_FAILS("{{ (-9223372036854775807 - 1) // -1 }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ -(-9223372036854775807 - 1) }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ 9223372036854775807 + 1 }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ -9223372036854775807 - 2 }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ 4294967296 * 4294967296 }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ 2 ** 64 }}", NULL, "integer overflow");
  CHECK_RENDER_FAILS("{{ 9223372036854775808 }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ (-9223372036854775807 - 1) | abs }}", NULL, "abs(");
  CHECK_RENDER_FAILS("{{ 1e300 | int }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ (1e300 * 1e300) | int }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ '99999999999999999999' | int }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ '1e300' | int }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ '%d' % 1e300 }}", NULL, "does not fit in 64 bits");
  CHECK_RENDER_FAILS("{{ '%99999d' % 1 }}", NULL, "too large");
  CHECK_RENDER_FAILS("{{ [9223372036854775807, 1] | sum }}", NULL, "overflow");
  CHECK_RENDER_FAILS("{{ range(-9223372036854775807 - 1, 9223372036854775807) | list }}", NULL, "range()");
  CHECK_RENDER_FAILS("{{ range(9223372036854775807, -9223372036854775807 - 1, -1) | list }}", NULL, "range()");
  CHECK_RENDER_FAILS("{{ [1, 2] | batch(9223372036854775807) | list }} {{ 1 // 0 }}", NULL, "division by zero");
}

/* is_end: phi-3's template and tokenizer from its GGUF: <|end|> and the
 * tokenizer's EOS end a turn, an ordinary word does not. */
TEST(chat_is_end_phi3) {
  const char *path = VOCAB_DIR "/ggml-vocab-phi-3.gguf";
  char *tmpl = gguf_string(path, "tokenizer.chat_template");
  if (!tmpl) SKIP("no %s (shared test data)", path);
  tg_tokenizer *tok = tg_tokenizer_load(path);
  CHECK_MSG(tok != NULL, "%s", tg_error());
  tg_chat_template *t = tg_chat_template_new(tmpl, NULL, "<s>", "</s>");
  CHECK_MSG(t != NULL, "%s", tg_error());
  if (tok && t) {
    int32_t end = tg_tokenizer_find(tok, "<|end|>"), word = tg_tokenizer_find(tok, "▁Hello");
    CHECK(end >= 0 && word >= 0);
    CHECK(tg_chat_is_end(t, tok, end));
    CHECK(tg_chat_is_end(t, tok, tg_tokenizer_eos(tok)));
    CHECK(!tg_chat_is_end(t, tok, word));
    CHECK(!tg_chat_is_end(t, tok, -1));
  }
  tg_chat_template_free(t);
  tg_tokenizer_free(tok);
  free(tmpl);
}
