/* chat_stream.c: a streamed chat reply as differences between successive
 * parses (see chat_msg.h). The parse of a longer text extends the parse of
 * a shorter one, so what is new is a tail: of the reasoning, of the
 * content, of the last call's arguments, and whole calls (sent as a head,
 * then their arguments). What was sent is kept, and only text that extends
 * it goes out: nothing is sent twice or taken back. */
#include <string.h>
#include "serve/chat_msg.h"

/* The tail of now beyond the n bytes sent (none when now does not extend them). */
static size_t tail(const strbuf *now, size_t n) { return now->n > n ? now->n - n : 0; }

void serve_chat_sent_next(serve_chat_sent *sent, const serve_chat_msg *msg, serve_chat_delta *d) {
  memset(d, 0, sizeof *d);
  d->rlen = tail(&msg->reasoning, sent->reasoning);
  d->reasoning = d->rlen ? msg->reasoning.s + sent->reasoning : NULL;
  sent->reasoning += d->rlen;
  d->clen = tail(&msg->content, sent->content);
  d->content = d->clen ? msg->content.s + sent->content : NULL;
  sent->content += d->clen;
  if (!msg->n_calls) return;
  d->calls = tg_xmalloc(2 * (size_t)msg->n_calls * sizeof *d->calls);
  for (int i = 0; i < msg->n_calls; i++) {
    const serve_tool_call *c = &msg->calls[i];
    if (i == sent->calls.n_calls) {
      serve_chat_msg_add_call(&sent->calls, NULL, tg_xstrdup(c->name), tg_xstrdup(""));
      d->calls[d->n_calls++] = (serve_call_delta){ .index = i, .call = c, .head = true };
    }
    serve_tool_call *s = &sent->calls.calls[i];
    size_t have = strlen(s->arguments), now = strlen(c->arguments);
    if (strcmp(s->name, c->name) || now <= have || memcmp(s->arguments, c->arguments, have)) continue;
    d->calls[d->n_calls++] = (serve_call_delta){ .index = i, .args = c->arguments + have, .args_len = now - have };
    free(s->arguments);
    s->arguments = tg_xstrdup(c->arguments);
  }
}

void serve_chat_sent_free(serve_chat_sent *sent) {
  serve_chat_msg_free(&sent->calls);
  memset(sent, 0, sizeof *sent);
}
