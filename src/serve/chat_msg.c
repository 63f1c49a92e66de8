/* chat_msg.c: a reply's reasoning, tool calls and content together (see
 * chat_msg.h). Reasoning comes first (it only ever opens a reply), the rest
 * goes to the tool-call scanner when the request has tools. */
#include <string.h>
#include "serve/chat_msg.h"

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* White space at the ends of a content that had tool calls or reasoning
 * cut out is an artifact of the cut (and, while streaming, the trailing
 * part waits: it may come before a call). */
static void trim(strbuf *b, bool left, bool right) {
  if (!b->s) return;
  size_t a = 0, e = b->n;
  while (left && a < e && is_ws(b->s[a])) a++;
  while (right && e > a && is_ws(b->s[e - 1])) e--;
  memmove(b->s, b->s + a, e - a);
  b->n = e - a;
  b->s[b->n] = 0;
}

void serve_chat_parse(const serve_chat_syntax *syn, const char *text, size_t len, bool final, serve_chat_msg *out) {
  memset(out, 0, sizeof *out);
  size_t rest = 0;
  if (syn->reasoning != SERVE_REASONING_NONE) {
    rest = serve_reasoning_split(text, len, syn->thinking_open, final, &out->reasoning);
    if (syn->reasoning == SERVE_REASONING_DEEPSEEK_LEGACY) rest = 0;   /* the tags stay in content too */
    else if (rest == (size_t)-1) return;
  }
  if (syn->parse_tools) {
    serve_tool_calls_parse(syn->tool_format, syn->tools, text + rest, len - rest, final, out);
    trim(&out->content, true, true);
  } else {
    sb_append(&out->content, text + rest, len - rest);
    trim(&out->content, rest > 0, false);
  }
}

void serve_chat_msg_keep_calls(serve_chat_msg *m, int n) {
  while (m->n_calls > n) {
    serve_tool_call *c = &m->calls[--m->n_calls];
    free(c->id);
    free(c->name);
    free(c->arguments);
  }
}

void serve_chat_msg_free(serve_chat_msg *m) {
  sb_free(&m->reasoning);
  sb_free(&m->content);
  serve_chat_msg_keep_calls(m, 0);
  free(m->calls);
  memset(m, 0, sizeof *m);
}
