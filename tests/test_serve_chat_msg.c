/* test_serve_chat_msg.c: the reply parser of tg serve (src/serve/chat_msg.h):
 * tool calls in each format and reasoning blocks, on the model outputs and
 * expected messages of llama.cpp's tests/test-chat.cpp (its Hermes 2 Pro,
 * Qwen3-Coder, Llama 3.x, Mistral Nemo, Magistral and Command R7B cases,
 * "special_function" with {"arg1": 1}), plus malformed outputs that must
 * come back as plain content. Every case is also streamed: the parse of each
 * prefix of the output must be a prefix of the final parse (what a stream
 * has sent can never be taken back). */
#include "test.h"
#include "serve/chat_msg.h"

#define H SERVE_TOOLS_HERMES
#define QC SERVE_TOOLS_QWEN3_CODER
#define L3 SERVE_TOOLS_LLAMA3
#define MI SERVE_TOOLS_MISTRAL

/* The tool of llama.cpp's tests, and one whose arg1 is a string. */
#define SPECIAL_TOOL "[{\"type\":\"function\",\"function\":{\"name\":\"special_function\",\"parameters\":{\"type\":\"object\"," \
                     "\"properties\":{\"arg1\":{\"type\":\"integer\"}},\"required\":[\"arg1\"]}}}]"
#define STRING_TOOL "[{\"type\":\"function\",\"function\":{\"name\":\"special_function\",\"parameters\":{\"type\":\"object\"," \
                    "\"properties\":{\"arg1\":{\"type\":\"string\"}}}}}]"
#define CALL1 "special_function|{\"arg1\":1}"

typedef struct {
  serve_tool_format fmt;
  bool tools;                  /* parse tool calls */
  const char *tools_json;      /* NULL: SPECIAL_TOOL */
  serve_reasoning_format rf;
  bool open;                   /* the prompt opened <think> */
  const char *text;
  const char *reasoning, *content;
  const char *calls;           /* "name|args;name|args" ("" = none) */
  const char *id;              /* the first call's id, or NULL */
} parse_case;

static const parse_case cases[] = {
  /* Hermes 2 Pro / Qwen 2.5 */
  { H, true, NULL, 0, false, "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<function=special_function>{\"arg1\": 1}</function>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<function name=\"special_function\">\n{\"arg1\": 1}\n</function>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<tool>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<tools>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tools>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<response>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</response>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "```xml\n<response>\n    {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</response>\n```", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "```json\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n```", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<json>\n  {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</json>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<xml>\n  {\n    \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}\n  }\n</xml>", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "{\n  \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  { H, true, NULL, 0, false, "<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": \"# This is a program:\\nprint('hey')\"}}\n</tool_call>",
    "", "", "python|{\"code\":\"# This is a program:\\nprint('hey')\"}", NULL },
  { H, true, NULL, 0, false, "Hello, world!\nWhat's up?", "", "Hello, world!\nWhat's up?", "", NULL },
  /* QwQ-32B: its template opens <think> for the model */
  { H, true, NULL, SERVE_REASONING_DEEPSEEK, true,
    "I'm\nthinking</think>\n<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>", "I'm\nthinking", "", CALL1, NULL },
  /* content, then two calls (parallel_tool_calls) */
  { H, true, NULL, 0, false,
    "Let me check.\n<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 2}}\n</tool_call>",
    "", "Let me check.", "special_function|{\"arg1\":1};special_function|{\"arg1\":2}", NULL },
  /* malformed: plain content, never an error */
  { H, true, NULL, 0, false, "<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}</tool_call>", "",
    "<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}</tool_call>", "", NULL },
  { H, true, NULL, 0, false, "<tool_call>{\"name\": \"special_fu", "", "<tool_call>{\"name\": \"special_fu", "", NULL },
  { H, true, NULL, 0, false, "<tool_call>{\"arguments\": {\"arg1\": 1}}</tool_call> ok", "", "<tool_call>{\"arguments\": {\"arg1\": 1}}</tool_call> ok", "", NULL },
  { H, true, NULL, 0, false, "{\"name\": \"Bob\", \"age\": 3}", "", "{\"name\": \"Bob\", \"age\": 3}", "", NULL },
  { H, true, NULL, 0, false, "{\"answer\": 42} and <b>bold</b> <tools> no", "", "{\"answer\": 42} and <b>bold</b> <tools> no", "", NULL },
  /* a bare object that is not a call is scanned inside, as its prefixes were
   * while it was incomplete (found by fuzz_chat_msg) */
  { H, true, NULL, 0, false, "{\"nime\": \"<function=f></function>\", \"x\": 1}", "", "{\"nime\": \"\", \"x\": 1}", "f|{}", NULL },
  { L3, true, NULL, 0, false, "{\"name\x01\": \"f\", \"parameters\":\x0e {\"n\": 1}}", "", "{\"name\x01\": \"f\", \"parameters\":\x0e {\"n\": 1}}", "", NULL },
  /* a call the model left unclosed at its end token is still a call */
  { H, true, NULL, 0, false, "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  /* tools off (no tools, or tool_choice none): the tags are content */
  { H, false, NULL, 0, false, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>", "", NULL },

  /* Qwen3-Coder XML */
  { QC, true, NULL, 0, false, "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>", "", "", CALL1, NULL },
  { QC, true, NULL, 0, false, "<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>", "", "", CALL1, NULL },
  { QC, true, NULL, 0, false, "Let me call it.\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
    "", "Let me call it.", CALL1, NULL },
  { QC, true, STRING_TOOL, 0, false, "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
    "", "", "special_function|{\"arg1\":\"1\"}", NULL },
  { QC, true, "[]", 0, false, "<tool_call>\n<function=html>\n<parameter=markup>\n<html>\n <head>\n  <title>Hello!</title>\n </head>\n</html>\n</parameter>\n"
    "<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>",
    "", "", "html|{\"markup\":\"<html>\\n <head>\\n  <title>Hello!</title>\\n </head>\\n</html>\",\"n\":2}", NULL },
  { QC, true, NULL, 0, false, "<tool_call>\n<function=now>\n</function>\n</tool_call>", "", "", "now|{}", NULL },
  { QC, true, NULL, 0, false, "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</function>\n</tool_call>", "",
    "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</function>\n</tool_call>", "", NULL },
  { QC, true, NULL, 0, false, "Hello, world!\nWhat's up?", "", "Hello, world!\nWhat's up?", "", NULL },

  /* Llama 3.1 / 3.2 / 3.3 */
  { L3, true, NULL, 0, false, "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  { L3, true, NULL, 0, false, "{\"type\": \"function\", \"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  { L3, true, NULL, 0, false, "<|python_tag|>python.call(code=\"print('hey')\")", "", "", "python|{\"code\":\"print('hey')\"}", NULL },
  { L3, true, NULL, 0, false, "<|python_tag|>code_interpreter.call(code=\"print('hey')\")", "", "", "code_interpreter|{\"code\":\"print('hey')\"}", NULL },
  { L3, true, NULL, 0, false, "<|python_tag|>brave_search.call(query=\"weather\", count=3)", "", "", "brave_search|{\"query\":\"weather\",\"count\":3}", NULL },
  { L3, true, NULL, 0, false, "<|python_tag|>{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}}", "", "", CALL1, NULL },
  { L3, true, NULL, 0, false, "Hello, world!\nWhat's up?", "", "Hello, world!\nWhat's up?", "", NULL },
  { L3, true, NULL, 0, false, "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}", "", "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}", "", NULL },

  /* Mistral Nemo, and the newer [ARGS] form */
  { MI, true, NULL, 0, false, "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}]", "", "", CALL1, "123456789" },
  { MI, true, NULL, 0, false, "[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}", "", "", CALL1, NULL },
  { MI, true, NULL, 0, false, "Sure.[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]", "", "Sure.", CALL1, NULL },
  { MI, true, NULL, 0, false, "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"a", "", "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"a", "", NULL },
  { MI, true, NULL, 0, false, "[TOOL_CALLS][{\"nom\": 1}] then", "", "[TOOL_CALLS][{\"nom\": 1}] then", "", NULL },

  /* reasoning (DeepSeek R1 and the families' tags) */
  { H, false, NULL, SERVE_REASONING_DEEPSEEK, false, "<think>I'm thinking</think>Hello, world!\nWhat's up?", "I'm thinking", "Hello, world!\nWhat's up?", "", NULL },
  { H, false, NULL, SERVE_REASONING_AUTO, false, "<think>\nI'm thinking\n</think>\n\nHello, world!\nWhat's up?", "I'm thinking", "Hello, world!\nWhat's up?", "", NULL },
  { H, false, NULL, SERVE_REASONING_NONE, false, "<think>I'm thinking</think>Hello, world!\nWhat's up?", "", "<think>I'm thinking</think>Hello, world!\nWhat's up?", "", NULL },
  { H, false, NULL, SERVE_REASONING_DEEPSEEK, false, "I'm thinking</think>Hello, world!\nWhat's up?", "", "I'm thinking</think>Hello, world!\nWhat's up?", "", NULL },
  { H, false, NULL, SERVE_REASONING_DEEPSEEK, true, "I'm thinking</think>Hello, world!\nWhat's up?", "I'm thinking", "Hello, world!\nWhat's up?", "", NULL },
  { H, false, NULL, SERVE_REASONING_DEEPSEEK, false, "<think>I'm thinking", "I'm thinking", "", "", NULL },
  { H, false, NULL, SERVE_REASONING_DEEPSEEK_LEGACY, false, "<think>I'm thinking</think>Hello", "I'm thinking", "<think>I'm thinking</think>Hello", "", NULL },
  { H, false, NULL, SERVE_REASONING_AUTO, false, "[THINK]raisonnement[/THINK]Réponse", "raisonnement", "Réponse", "", NULL },
  { H, false, NULL, SERVE_REASONING_AUTO, false, "<|START_THINKING|>I'm thinking<|END_THINKING|>Hello, world!", "I'm thinking", "Hello, world!", "", NULL },
  { H, false, NULL, SERVE_REASONING_AUTO, false, "<seed:think>I'm thinking</seed:think>Hello", "I'm thinking", "Hello", "", NULL },
  { H, false, NULL, SERVE_REASONING_AUTO, false, "<b>not</b> thinking", "", "<b>not</b> thinking", "", NULL },
  /* reasoning, then content, then a call */
  { QC, true, NULL, SERVE_REASONING_AUTO, false,
    "<think>\nI should call it.\n</think>\n\nCalling.\n<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</parameter>\n</function>\n</tool_call>",
    "I should call it.", "Calling.", CALL1, NULL },
};

/* "name|args;..." of a message's calls. */
static void calls_string(const serve_chat_msg *m, strbuf *b) {
  sb_puts(b, "");
  for (int i = 0; i < m->n_calls; i++)
    sb_printf(b, "%s%s|%s", i ? ";" : "", m->calls[i].name, m->calls[i].arguments);
}

static const char *str(const strbuf *b) { return b->s ? b->s : ""; }

static bool is_prefix(const char *p, const char *s) { return strncmp(p, s, strlen(p)) == 0; }

TEST(serve_chat_msg_parse) {
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const parse_case *c = &cases[i];
    cJSON *tools = cJSON_Parse(c->tools_json ? c->tools_json : SPECIAL_TOOL);
    serve_chat_syntax syn = { .parse_tools = c->tools, .tool_format = c->fmt, .tools = tools, .reasoning = c->rf,
                              .thinking_open = c->open };
    serve_chat_msg m;
    size_t len = strlen(c->text);
    serve_chat_parse(&syn, c->text, len, true, &m);
    strbuf calls = { 0 };
    calls_string(&m, &calls);
    CHECK_MSG(!strcmp(str(&m.reasoning), c->reasoning), "case %zu: reasoning \"%s\", want \"%s\"", i, str(&m.reasoning), c->reasoning);
    CHECK_MSG(!strcmp(str(&m.content), c->content), "case %zu: content \"%s\", want \"%s\"", i, str(&m.content), c->content);
    CHECK_MSG(!strcmp(calls.s, c->calls), "case %zu: calls \"%s\", want \"%s\"", i, calls.s, c->calls);
    if (c->id) CHECK_MSG(m.n_calls && m.calls[0].id && !strcmp(m.calls[0].id, c->id), "case %zu: the call's id", i);
    else CHECK_MSG(!m.n_calls || !m.calls[0].id, "case %zu: an id from nowhere", i);
    /* streamed: every prefix's parse is a prefix of the final one */
    for (size_t k = 0; k <= len; k++) {
      serve_chat_msg p;
      serve_chat_parse(&syn, c->text, k, false, &p);
      strbuf pc = { 0 };
      calls_string(&p, &pc);
      bool ok = is_prefix(str(&p.reasoning), str(&m.reasoning)) && is_prefix(str(&p.content), str(&m.content)) &&
                p.n_calls <= m.n_calls && is_prefix(pc.s, calls.s);
      CHECK_MSG(ok, "case %zu, prefix of %zu bytes: reasoning \"%s\", content \"%s\", calls \"%s\" are not prefixes of the final parse",
                i, k, str(&p.reasoning), str(&p.content), pc.s);
      sb_free(&pc);
      serve_chat_msg_free(&p);
      if (!ok) break;
    }
    sb_free(&calls);
    serve_chat_msg_free(&m);
    cJSON_Delete(tools);
  }
}

/* A stream that ends mid-call releases it whole only at the end. */
TEST(serve_chat_msg_stream_holds_calls) {
  serve_chat_syntax syn = { .parse_tools = true, .tool_format = H };
  const char *t = "Hi <tool_call>{\"name\": \"f\", \"arguments\": {}}";
  serve_chat_msg m;
  serve_chat_parse(&syn, t, strlen(t), false, &m);
  CHECK(!strcmp(str(&m.content), "Hi") && m.n_calls == 0);
  serve_chat_msg_free(&m);
  serve_chat_parse(&syn, t, 6, false, &m);   /* "Hi <to": may become <tool_call> */
  CHECK(!strcmp(str(&m.content), "Hi"));
  serve_chat_msg_free(&m);
  serve_chat_parse(&syn, "a < b", 5, false, &m);
  CHECK(!strcmp(str(&m.content), "a < b"));
  serve_chat_msg_free(&m);
}

TEST(serve_chat_msg_formats) {
  static const struct { const char *file; serve_tool_format fmt; } t[] = {
    { "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", H },
    { "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", H },
    { "Qwen-Qwen2.5-7B-Instruct.jinja", H },
    { "meta-llama-Llama-3.1-8B-Instruct.jinja", L3 },
    { "meta-llama-Llama-3.2-3B-Instruct.jinja", L3 },
    { "meta-llama-Llama-3.3-70B-Instruct.jinja", L3 },
    { "mistralai-Mistral-Nemo-Instruct-2407.jinja", MI },
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char path[256];
    snprintf(path, sizeof path, "/work/shared/testdata/chat/templates/%s", t[i].file);
    size_t n;
    char *src = test_read_file(path, &n);
    if (!src) SKIP("%s is missing", path);
    char *z = tg_xmalloc(n + 1);
    memcpy(z, src, n);
    z[n] = 0;
    CHECK_MSG(serve_tool_format_detect(z) == t[i].fmt, "%s: %s", t[i].file, serve_tool_format_name(serve_tool_format_detect(z)));
    free(z);
    free(src);
  }
  CHECK(serve_tool_format_detect("{{ '<tool_call>' }}<function=x><parameter=y>") == QC);
  CHECK(serve_tool_format_detect(NULL) == H);
  /* the prefixes that force a call parse as the start of one */
  char *p = serve_tool_call_prefix(H, "special_function");
  strbuf b = { 0 };
  sb_printf(&b, "%s{\"arg1\": 1}}\n</tool_call>", p);
  serve_chat_syntax syn = { .parse_tools = true, .tool_format = H };
  serve_chat_msg m;
  serve_chat_parse(&syn, b.s, b.n, true, &m);
  CHECK(m.n_calls == 1 && !strcmp(m.calls[0].arguments, "{\"arg1\":1}"));
  serve_chat_msg_free(&m);
  sb_free(&b);
  free(p);
  CHECK(serve_reasoning_opened("<|im_start|>assistant\n<think>\n"));
  CHECK(!serve_reasoning_opened("<|im_start|>assistant\n"));
  CHECK(serve_reasoning_format_parse("deepseek") == SERVE_REASONING_DEEPSEEK);
  CHECK(serve_reasoning_format_parse("bogus") == -1);
}
