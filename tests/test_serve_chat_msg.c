/* test_serve_chat_msg.c: the reply parser of tg serve (src/serve/chat_msg.h):
 * tool calls in each format and reasoning blocks, on the model outputs and
 * expected messages of llama.cpp's tests/test-chat.cpp (its Hermes 2 Pro,
 * Qwen3-Coder, Llama 3.x, Mistral Nemo, Magistral and Command R7B cases,
 * "special_function" with {"arg1": 1}), plus malformed outputs that must
 * come back as plain content. Every case is also streamed, byte by byte and
 * 3 bytes a token, through the stream's differ (chat_stream.c): what has
 * been sent after each prefix must be a prefix of the final parse (nothing
 * sent is taken back: reasoning, content, each call's name and the join of
 * its argument pieces), and at the end the join must equal it exactly; a
 * call's arguments must come in pieces (but for the forms whose calls are
 * decided whole). A call that breaks after its arguments began was sent
 * (its model-written part only): such cases say what the stream showed. */
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
/* A string and an integer parameter (x: not in the schema, read as JSON). */
#define SF_TOOL "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"," \
                "\"properties\":{\"s\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}}}}}]"

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

  /* streamed in pieces: escapes, surrogate pairs, raw UTF-8, numbers cJSON
   * prints its own way, nesting (the join must be cJSON's print exactly) */
  { H, true, NULL, 0, false, "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"s\": \"a \\\"q\\\" \\\\ \\u00e9\\ud83d\\ude00 "
    "\xc3\xa9\\n\\/\", \"n\" : [1.50, -2e3, 0.1, true, null, {\"k\": []}], \"o\": {}}}\n</tool_call>",
    "", "", "special_function|{\"s\":\"a \\\"q\\\" \\\\ \xc3\xa9\xf0\x9f\x98\x80 \xc3\xa9\\n/\",\"n\":[1.5,-2000,0.1,true,null,{\"k\":[]}],\"o\":{}}", NULL },
  { H, true, NULL, 0, false, "<tool_call>\n{\"name\": \"special_function\", \"arguments\": \"{\\\"arg1\\\": 1}\"}\n</tool_call>", "", "", CALL1, NULL },
  { H, true, NULL, SERVE_REASONING_AUTO, false, "<think>hm</think>Ok. {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}",
    "hm", "Ok. {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}", "", NULL },
  { H, true, NULL, SERVE_REASONING_AUTO, false, "<think>hm</think><tool_call>{\"id\": \"x1\", \"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}</tool_call>",
    "hm", "", CALL1, "x1" },
  /* both "parameters" and "arguments", "function" after "name": the first
   * counts, as a stream reads them */
  { H, true, NULL, 0, false, "<tool_call>{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}, \"arguments\": {\"arg1\": 2}, "
    "\"function\": {\"name\": \"g\"}}</tool_call>", "", "", CALL1, NULL },
  { QC, true, SF_TOOL, 0, false, "<tool_call>\n<function=f>\n<parameter=s>\nline \"one\"\t\\ </para <b>\xe2\x82\xac\n\n</parameter>\n<parameter=n>\n12\n</parameter>\n"
    "<parameter=x>\n[1, 2]\n</parameter>\n</function>\n</tool_call>",
    "", "", "f|{\"s\":\"line \\\"one\\\"\\t\\\\ </para <b>\xe2\x82\xac\\n\",\"n\":12,\"x\":[1,2]}", NULL },
  { MI, true, NULL, 0, false, "[TOOL_CALLS]special_function[ARGS]{\"arg1\": 1}[TOOL_CALLS]special_function[ARGS]{\"arg1\": [2]}", "", "",
    "special_function|{\"arg1\":1};special_function|{\"arg1\":[2]}", NULL },
  { MI, true, NULL, 0, false, "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}, "
    "{\"name\": \"special_function\", \"arguments\": {\"arg1\": 2}, \"id\": \"987654321\"}]", "", "",
    "special_function|{\"arg1\":1};special_function|{\"arg1\":2}", "123456789" },

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

/* How cases stream where that is not simply "as the final parse, the
 * arguments in pieces". */
static const struct {
  const char *text;
  const char *broken;   /* a call that broke after its arguments began: the calls the stream sent */
  bool whole;           /* the calls come whole (one piece of arguments): decided only at their end */
} stream_notes[] = {
  { "<tool_call>{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}</tool_call>", CALL1, false },
  { "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n</function>\n</tool_call>", "special_function|{\"arg1\":", false },
  { "{\"name\": \"special_function\", \"parameters\": {\"arg1\": 1}", CALL1, false },
  /* NAME.call(..) and code: the name is decided at the end; Mistral's
   * array writes each call's id after its arguments */
  { "<|python_tag|>python.call(code=\"print('hey')\")", NULL, true },
  { "<|python_tag|>code_interpreter.call(code=\"print('hey')\")", NULL, true },
  { "<|python_tag|>brave_search.call(query=\"weather\", count=3)", NULL, true },
  { "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}]", NULL, true },
  { "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}, \"id\": \"123456789\"}, "
    "{\"name\": \"special_function\", \"arguments\": {\"arg1\": 2}, \"id\": \"987654321\"}]", NULL, true },
  /* arguments as a string of JSON: read when whole */
  { "<tool_call>\n{\"name\": \"special_function\", \"arguments\": \"{\\\"arg1\\\": 1}\"}\n</tool_call>", NULL, true },
  { "Sure.[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}]", NULL, true },
};

/* "name|args;..." of a message's calls. */
static void calls_string(const serve_chat_msg *m, strbuf *b) {
  sb_puts(b, "");
  for (int i = 0; i < m->n_calls; i++)
    sb_printf(b, "%s%s|%s", i ? ";" : "", m->calls[i].name, m->calls[i].arguments);
}

static const char *str(const strbuf *b) { return b->s ? b->s : ""; }

static bool is_prefix(const char *p, const char *s) { return strncmp(p, s, strlen(p)) == 0; }

/* What a client has after a stream's chunks: the text and, by index, each
 * call's name and joined argument pieces. */
typedef struct {
  strbuf reasoning, content;
  serve_chat_msg calls;
  int pieces[8];            /* argument pieces per call */
} client_view;

static void client_take(client_view *v, const serve_chat_delta *d) {
  sb_append(&v->reasoning, d->reasoning, d->rlen);
  sb_append(&v->content, d->content, d->clen);
  for (int i = 0; i < d->n_calls; i++) {
    const serve_call_delta *e = &d->calls[i];
    if (e->head) serve_chat_msg_add_call(&v->calls, NULL, tg_xstrdup(e->call->name), tg_xstrdup(""));
    else {
      serve_tool_call *c = &v->calls.calls[e->index];
      size_t n = strlen(c->arguments);
      c->arguments = tg_xrealloc(c->arguments, n + e->args_len + 1);
      memcpy(c->arguments + n, e->args, e->args_len);
      c->arguments[n + e->args_len] = 0;
      if (e->index < 8) v->pieces[e->index]++;
    }
  }
}

/* Whether the calls a client has are a prefix of want ("name|args;..": the
 * '|' after each name keeps names whole, the ';' each call but the last). */
static bool calls_prefix(const serve_chat_msg *have, const char *want) {
  strbuf b = { 0 };
  calls_string(have, &b);
  bool ok = is_prefix(b.s, want);
  sb_free(&b);
  return ok;
}

/* Streams c's text `step` bytes at a time through the differ, checking
 * what was sent against the final parse m after each step. */
static void stream_case(size_t i, const serve_chat_syntax *syn, const parse_case *c, const serve_chat_msg *m, size_t step) {
  size_t len = strlen(c->text);
  const char *want = c->calls;
  bool whole = false;
  for (size_t n = 0; n < sizeof stream_notes / sizeof *stream_notes; n++)
    if (!strcmp(stream_notes[n].text, c->text)) {
      if (stream_notes[n].broken) want = stream_notes[n].broken;
      whole = stream_notes[n].whole;
    }
  serve_chat_sent sent = { 0 };
  client_view v = { 0 };
  bool ok = true;
  for (size_t k = 0; ok && k <= len + step; k += step) {
    bool final = k > len;
    serve_chat_msg p;
    serve_chat_parse(syn, c->text, final ? len : k, final, &p);
    serve_chat_delta d;
    serve_chat_sent_next(&sent, &p, &d);
    client_take(&v, &d);
    free(d.calls);
    serve_chat_msg_free(&p);
    ok = is_prefix(str(&v.reasoning), str(&m->reasoning)) && is_prefix(str(&v.content), str(&m->content)) &&
         calls_prefix(&v.calls, want);
    strbuf vc = { 0 };
    calls_string(&v.calls, &vc);
    CHECK_MSG(ok, "case %zu, %zu bytes a step, after %zu bytes: sent reasoning \"%s\", content \"%s\", calls \"%s\" are not "
              "prefixes of the final parse", i, step, k, str(&v.reasoning), str(&v.content), vc.s);
    sb_free(&vc);
  }
  if (ok) {
    strbuf vc = { 0 };
    calls_string(&v.calls, &vc);
    CHECK_MSG(!strcmp(str(&v.reasoning), str(&m->reasoning)) && !strcmp(str(&v.content), str(&m->content)) &&
              !strcmp(vc.s, want), "case %zu, %zu bytes a step: the stream joined to reasoning \"%s\", content \"%s\", "
              "calls \"%s\"; want calls \"%s\"", i, step, str(&v.reasoning), str(&v.content), vc.s, want);
    for (int k = 0; step == 1 && k < v.calls.n_calls && k < 8; k++)
      CHECK_MSG(whole ? v.pieces[k] == 1 : v.pieces[k] > 1, "case %zu: call %d's arguments came in %d pieces", i, k,
                v.pieces[k]);
    sb_free(&vc);
  }
  sb_free(&v.reasoning);
  sb_free(&v.content);
  serve_chat_msg_free(&v.calls);
  serve_chat_sent_free(&sent);
}

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
    stream_case(i, &syn, c, &m, 1);
    stream_case(i, &syn, c, &m, 3);
    sb_free(&calls);
    serve_chat_msg_free(&m);
    cJSON_Delete(tools);
  }
}

/* A stream that ends mid-call releases it whole only at the end. */
/* Random JSON arguments (nesting, cJSON's white space, escapes, surrogate
 * pairs, raw UTF-8 and control bytes, numbers cJSON prints its own way),
 * in each JSON form: streamed byte by byte, the pieces must join to
 * cJSON's compact print of the arguments exactly, and each step's must be
 * a prefix of it. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void gen_ws(uint64_t *r, strbuf *b) {
  static const char *const ws[] = { "", "", "", " ", "\n  ", "\t", "\r\n", "\x1f" };
  sb_puts(b, ws[rng_next(r) % 8]);
}

static void gen_json(uint64_t *r, int depth, bool object, strbuf *b) {
  static const char *const pieces[] = { "a", "Paris", " ", "\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\ud83d\\ude00",
                                        "\xc3\xa9", "\xf0\x9f\x98\x80", "\\u0041", "\x01", "<", "}", "]", ",", ":" };
  static const char *const scalars[] = { "0", "-1", "1.50", "2e3", "-0.001", "123456789012", "1E-2", "3.14159265358979",
                                         "0.1", "true", "false", "null", "10" };
  int kind = object ? 0 : (int)(rng_next(r) % (depth > 2 ? 3 : 5));
  if (kind >= 3) {   /* object or array */
    object = kind == 3;
    kind = 0;
  }
  if (kind == 0) {
    sb_puts(b, object ? "{" : "[");
    int n = (int)(rng_next(r) % 4);
    for (int i = 0; i < n; i++) {
      gen_ws(r, b);
      if (i) { sb_puts(b, ","); gen_ws(r, b); }
      if (object) {
        sb_printf(b, "\"k%d%s\"", i, rng_next(r) % 4 ? "" : "\\u00e9");
        gen_ws(r, b);
        sb_puts(b, ":");
        gen_ws(r, b);
      }
      gen_json(r, depth + 1, false, b);
    }
    gen_ws(r, b);
    sb_puts(b, object ? "}" : "]");
  } else if (kind == 1) {
    sb_puts(b, "\"");
    for (int n = (int)(rng_next(r) % 6); n > 0; n--) sb_puts(b, pieces[rng_next(r) % (sizeof pieces / sizeof *pieces)]);
    sb_puts(b, "\"");
  } else sb_puts(b, scalars[rng_next(r) % (sizeof scalars / sizeof *scalars)]);
}

TEST(serve_chat_msg_stream_random_json) {
  static const struct { serve_tool_format fmt; const char *before, *after; } forms[] = {
    { H, "<tool_call>\n{\"name\": \"f\", \"arguments\": ", "}\n</tool_call>" },
    { H, "Hi <function=f>", "</function> bye" },
    { H, "<function name=\"f\">\n", "\n</function>" },
    { H, "```json\n[{\"name\": \"f\", \"arguments\": ", "}]\n```" },
    { L3, "{\"name\": \"f\", \"parameters\": ", "}" },
    { L3, "<|python_tag|>{\"name\": \"f\", \"parameters\": ", "}" },
    { MI, "[TOOL_CALLS]f[ARGS]", "" },
  };
  uint64_t r = 0x9e3779b97f4a7c15ull;
  int failures = 0;
  for (int t = 0; t < 300 && failures < 3; t++) {
    strbuf args = { 0 }, text = { 0 };
    gen_json(&r, 0, true, &args);
    cJSON *v = cJSON_Parse(args.s);
    char *want_args = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    CHECK_MSG(want_args != NULL, "generated arguments do not parse: %s", args.s);
    if (!want_args) { failures++; sb_free(&args); continue; }
    size_t f = (size_t)t % (sizeof forms / sizeof *forms);
    sb_printf(&text, "%s%s%s", forms[f].before, args.s, forms[f].after);
    serve_chat_syntax syn = { .parse_tools = true, .tool_format = forms[f].fmt };
    serve_chat_msg m;
    serve_chat_parse(&syn, text.s, text.n, true, &m);
    bool whole_ok = m.n_calls == 1 && !strcmp(m.calls[0].arguments, want_args);
    CHECK_MSG(whole_ok, "form %zu: %s: %d calls, arguments %s, want %s", f, text.s, m.n_calls,
              m.n_calls ? m.calls[0].arguments : "-", want_args);
    serve_chat_sent sent = { 0 };
    bool ok = whole_ok;
    int pieces = 0;
    for (size_t k = 0; ok && k <= text.n + 1; k++) {
      serve_chat_msg p;
      serve_chat_parse(&syn, text.s, k > text.n ? text.n : k, k > text.n, &p);
      serve_chat_delta d;
      serve_chat_sent_next(&sent, &p, &d);
      for (int i = 0; i < d.n_calls; i++) pieces += !d.calls[i].head;
      free(d.calls);
      serve_chat_msg_free(&p);
      ok = sent.calls.n_calls <= 1 && (!sent.calls.n_calls || is_prefix(sent.calls.calls[0].arguments, want_args));
      CHECK_MSG(ok, "form %zu, %zu bytes of %s: sent %s, want a prefix of %s", f, k, text.s, sent.calls.calls[0].arguments,
                want_args);
    }
    if (ok) CHECK_MSG(sent.calls.n_calls == 1 && !strcmp(sent.calls.calls[0].arguments, want_args) && pieces > 1,
                      "form %zu: %s: the stream joined to %s in %d pieces, want %s", f, text.s,
                      sent.calls.n_calls ? sent.calls.calls[0].arguments : "-", pieces, want_args);
    if (!ok) failures++;
    serve_chat_sent_free(&sent);
    serve_chat_msg_free(&m);
    free(want_args);
    sb_free(&args);
    sb_free(&text);
  }
}

/* Random Qwen3-Coder calls: a string parameter's text (newlines, what
 * looks like the start of </parameter>, quotes, raw UTF-8) streams as it is
 * written, the others at their </parameter>; the join is exact. */
TEST(serve_chat_msg_stream_random_xml) {
  static const char *const pieces[] = { "a", " ", "\n", "\n\n", "<", "</para", "</parameter", "</function", "\"", "\\", "\t",
                                        "\xc3\xa9", "\xf0\x9f\x98\x80", "{", "1" };
  static const char *const numbers[] = { "12", "-3", "1.50", "[1, 2]", "{\"a\": null}", "x y" };
  cJSON *tools = cJSON_Parse(SF_TOOL);
  serve_chat_syntax syn = { .parse_tools = true, .tool_format = QC, .tools = tools };
  uint64_t r = 0x2545f4914f6cdd1dull;
  for (int t = 0; t < 200; t++) {
    strbuf val = { 0 }, text = { 0 };
    sb_puts(&val, "");
    for (int n = (int)(rng_next(&r) % 8); n > 0; n--) sb_puts(&val, pieces[rng_next(&r) % (sizeof pieces / sizeof *pieces)]);
    const char *num = numbers[rng_next(&r) % (sizeof numbers / sizeof *numbers)];
    bool s_first = rng_next(&r) % 2;
    cJSON *want = cJSON_CreateObject();
    strbuf sp = { 0 }, np = { 0 };
    sb_printf(&sp, "<parameter=s>\n%s\n</parameter>\n", val.s);
    sb_printf(&np, "<parameter=n>\n%s\n</parameter>\n", num);
    cJSON *nv = cJSON_Parse(num);
    if (s_first) cJSON_AddStringToObject(want, "s", val.s);
    cJSON_AddItemToObject(want, "n", nv ? nv : cJSON_CreateString(num));
    if (!s_first) cJSON_AddStringToObject(want, "s", val.s);
    char *want_args = cJSON_PrintUnformatted(want);
    cJSON_Delete(want);
    sb_printf(&text, "<tool_call>\n<function=f>\n%s%s</function>\n</tool_call>", s_first ? sp.s : np.s, s_first ? np.s : sp.s);
    serve_chat_msg m;
    serve_chat_parse(&syn, text.s, text.n, true, &m);
    bool ok = m.n_calls == 1 && !strcmp(m.calls[0].arguments, want_args);
    CHECK_MSG(ok, "%s: %d calls, arguments %s, want %s", text.s, m.n_calls, m.n_calls ? m.calls[0].arguments : "-", want_args);
    serve_chat_sent sent = { 0 };
    for (size_t k = 0; ok && k <= text.n + 1; k++) {
      serve_chat_msg p;
      serve_chat_parse(&syn, text.s, k > text.n ? text.n : k, k > text.n, &p);
      serve_chat_delta d;
      serve_chat_sent_next(&sent, &p, &d);
      free(d.calls);
      serve_chat_msg_free(&p);
      ok = sent.calls.n_calls <= 1 && (!sent.calls.n_calls || is_prefix(sent.calls.calls[0].arguments, want_args));
      CHECK_MSG(ok, "%zu bytes of %s: sent %s, want a prefix of %s", k, text.s, sent.calls.calls[0].arguments, want_args);
    }
    if (ok) CHECK_MSG(sent.calls.n_calls == 1 && !strcmp(sent.calls.calls[0].arguments, want_args),
                      "%s: the stream joined to %s, want %s", text.s, sent.calls.n_calls ? sent.calls.calls[0].arguments : "-",
                      want_args);
    serve_chat_sent_free(&sent);
    serve_chat_msg_free(&m);
    free(want_args);
    sb_free(&val);
    sb_free(&sp);
    sb_free(&np);
    sb_free(&text);
    if (!ok) break;
  }
  cJSON_Delete(tools);
}

TEST(serve_chat_msg_stream_holds_calls) {
  serve_chat_syntax syn = { .parse_tools = true, .tool_format = H };
  const char *t = "Hi <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, 2.50, \"x";
  serve_chat_msg m;
  serve_chat_parse(&syn, t, strlen(t), false, &m);   /* the call's name is known, its arguments begun */
  CHECK(!strcmp(str(&m.content), "Hi") && m.n_calls == 1 && !strcmp(m.calls[0].arguments, "{\"a\":[1,2.5,\"x"));
  serve_chat_msg_free(&m);
  t = "Hi <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1";   /* 1 may go on: 10, 1.5 */
  serve_chat_parse(&syn, t, strlen(t), false, &m);
  CHECK(m.n_calls == 1 && !strcmp(m.calls[0].arguments, "{\"a\":"));
  serve_chat_msg_free(&m);
  t = "Hi <tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f";   /* no name before the arguments: held */
  serve_chat_parse(&syn, t, strlen(t), false, &m);
  CHECK(m.n_calls == 0);
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
