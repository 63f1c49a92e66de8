/* fuzz_chat_msg.c: a model's reply from untrusted bytes, as tg serve reads
 * it for tool calls and reasoning (serve_chat_parse, src/serve/chat_msg.h).
 * The first byte picks the tool-call format (bits 0-1), whether tools are
 * parsed (bit 2), the reasoning format (bits 3-4) and whether the prompt
 * opened a reasoning block (bit 5); the rest is the text. Besides never
 * crashing, the streaming promise must hold: the parse of any prefix is a
 * prefix of the parse of the whole (reasoning, content, and the calls in
 * order: each whole but the last, whose name is whole and whose arguments
 * are a prefix of its final ones), but where a call broke after its
 * arguments began (the whole then has more content), and every call's
 * arguments in the whole are JSON. The prefixes also go through the
 * stream's differ (chat_stream.c). */
#include <cjson/cJSON.h>
#include "fuzz.h"
#include "serve/chat_msg.h"
#include "serve/reply.h"

static const char *const TOOLS = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                                 "\"properties\":{\"s\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"}}}}}]";

static bool is_prefix(const strbuf *p, const strbuf *s) {
  return p->n <= s->n && (p->n == 0 || memcmp(p->s, s->s, p->n) == 0);
}

/* a, of a prefix's parse, is b so far: its name, its arguments (all of
 * them unless open), its id (none yet when it comes after the arguments) */
static bool call_so_far(const serve_tool_call *a, const serve_tool_call *b, bool open) {
  size_t n = strlen(a->arguments);
  return !strcmp(a->name, b->name) && (open ? !strncmp(a->arguments, b->arguments, n) : !strcmp(a->arguments, b->arguments)) &&
         (a->id ? b->id && !strcmp(a->id, b->id) : (open || !b->id));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  static cJSON *tools;
  if (!tools) tools = cJSON_Parse(TOOLS);
  serve_chat_syntax syn = { .tool_format = (serve_tool_format)(data[0] & 3), .parse_tools = data[0] & 4, .tools = tools,
                            .reasoning = (serve_reasoning_format)(data[0] >> 3 & 3), .thinking_open = data[0] & 32 };
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  serve_chat_msg whole;
  serve_chat_parse(&syn, text, len, true, &whole);
  for (int i = 0; i < whole.n_calls; i++) {
    cJSON *a = cJSON_Parse(whole.calls[i].arguments);
    if (!a || !whole.calls[i].name || !*whole.calls[i].name) __builtin_trap();
    cJSON_Delete(a);
  }
  /* a few prefixes: the ends of the text, and every 37th byte */
  serve_chat_sent sent = { 0 };
  bool broke = false;
  for (size_t k = 0; k <= len; k += k + 40 < len ? 37 : 1) {
    serve_chat_msg p;
    serve_chat_parse(&syn, text, k, false, &p);
    bool ok = is_prefix(&p.reasoning, &whole.reasoning) && is_prefix(&p.content, &whole.content);
    bool calls_ok = p.n_calls <= whole.n_calls;
    for (int i = 0; calls_ok && i < p.n_calls; i++) calls_ok = call_so_far(&p.calls[i], &whole.calls[i], i == p.n_calls - 1);
    if (!calls_ok && whole.content.n <= p.content.n) ok = false;   /* not a broken call */
    broke = broke || !calls_ok;
    serve_chat_delta d;
    serve_chat_sent_next(&sent, &p, &d);
    free(d.calls);
    serve_chat_msg_free(&p);
    if (!ok) __builtin_trap();
  }
  /* the stream's end: what it sent joins to the whole parse exactly */
  serve_chat_delta d;
  serve_chat_sent_next(&sent, &whole, &d);
  free(d.calls);
  bool same = sent.reasoning == whole.reasoning.n && sent.content == whole.content.n && sent.calls.n_calls == whole.n_calls;
  for (int i = 0; same && i < whole.n_calls; i++)
    same = !strcmp(sent.calls.calls[i].name, whole.calls[i].name) && !strcmp(sent.calls.calls[i].arguments, whole.calls[i].arguments);
  if (!same && !broke) __builtin_trap();
  serve_chat_sent_free(&sent);
  serve_reply_meta m = { .chat = true, .id = "chatcmpl-0", .model = "m", .created = 0 };
  free(serve_reply_chat(&m, &whole, "stop", 1, 1));
  serve_chat_msg_free(&whole);
  return 0;
}
