/* reply.c: OpenAI-shaped JSON replies (see reply.h). */
#include "serve/reply.h"
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

int serve_error_set(serve_error *e, int status, const char *code, const char *param, const char *fmt, ...) {
  e->status = status;
  e->type = status == 404 ? "not_found_error" : status == 401 ? "authentication_error"
          : status >= 500 ? "server_error" : "invalid_request_error";
  e->code = code;
  snprintf(e->param, sizeof e->param, "%s", param ? param : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -1;
}

static char *print_free(cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) { fprintf(stderr, "tg serve: out of memory printing JSON\n"); abort(); }
  return s;
}

static void add_str_or_null(cJSON *o, const char *key, const char *v) {
  if (v && *v) cJSON_AddStringToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

char *serve_error_json(const serve_error *e) {
  cJSON *root = cJSON_CreateObject(), *err = cJSON_AddObjectToObject(root, "error");
  cJSON_AddStringToObject(err, "message", e->message);
  cJSON_AddStringToObject(err, "type", e->type);
  add_str_or_null(err, "param", e->param);
  add_str_or_null(err, "code", e->code);
  return print_free(root);
}

/* cJSON wants NUL-terminated strings; generated text arrives as (ptr, len). */
static cJSON *string_n(const char *s, size_t n) {
  char *tmp = tg_xmalloc(n + 1);
  memcpy(tmp, s, n);
  tmp[n] = 0;
  cJSON *o = cJSON_CreateString(tmp);
  free(tmp);
  return o;
}

static cJSON *header(const serve_reply_meta *m, bool chunk) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", m->id);
  cJSON_AddStringToObject(o, "object", m->chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
  cJSON_AddNumberToObject(o, "created", (double)m->created);
  cJSON_AddStringToObject(o, "model", m->model);
  cJSON_AddStringToObject(o, "system_fingerprint", "tg");
  return o;
}

/* OpenAI's usage, with the prompt tokens a slot's cache already held */
static void add_usage(cJSON *o, const serve_reply_meta *m, int n_prompt, int n_out) {
  cJSON *u = cJSON_AddObjectToObject(o, "usage");
  cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
  cJSON_AddNumberToObject(u, "completion_tokens", n_out);
  cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_out);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"), "cached_tokens", m->n_cached);
}

/* One choice; chat puts text under message/delta, completions under "text". */
static cJSON *choice(const serve_reply_meta *m, bool chunk, const char *role, const char *text, size_t len,
                     const char *finish) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddNumberToObject(c, "index", 0);
  if (m->chat) {
    cJSON *msg = cJSON_AddObjectToObject(c, chunk ? "delta" : "message");
    if (role) cJSON_AddStringToObject(msg, "role", role);
    if (len || role) cJSON_AddItemToObject(msg, "content", string_n(text, len));
  } else {
    cJSON_AddItemToObject(c, "text", string_n(text, len));
  }
  cJSON_AddNullToObject(c, "logprobs");
  add_str_or_null(c, "finish_reason", finish);
  return c;
}

char *serve_reply_full(const serve_reply_meta *m, const char *text, const char *finish, int n_prompt, int n_out) {
  cJSON *o = header(m, false);
  cJSON *choices = cJSON_AddArrayToObject(o, "choices");
  cJSON_AddItemToArray(choices, choice(m, false, m->chat ? "assistant" : NULL, text, strlen(text), finish));
  add_usage(o, m, n_prompt, n_out);
  return print_free(o);
}

/* A call's id: the model's own (Mistral writes them), else one made from
 * the reply's id and the call's index, unique per reply and stable
 * between a stream's chunks. */
static cJSON *tool_call_object(const serve_reply_meta *m, const serve_tool_call *c, int index, bool delta,
                               const char *arguments) {
  cJSON *o = cJSON_CreateObject();
  if (delta) cJSON_AddNumberToObject(o, "index", index);
  char id[64];
  const char *dash = strchr(m->id, '-');
  snprintf(id, sizeof id, "call_%s_%d", dash ? dash + 1 : m->id, index);
  cJSON_AddStringToObject(o, "id", c->id ? c->id : id);
  cJSON_AddStringToObject(o, "type", "function");
  cJSON *fn = cJSON_AddObjectToObject(o, "function");
  cJSON_AddStringToObject(fn, "name", c->name);
  cJSON_AddStringToObject(fn, "arguments", arguments);
  return o;
}

/* A streamed tool_calls entry: a call's head (its arguments "") or a piece
 * of its arguments. */
static cJSON *call_delta_object(const serve_reply_meta *m, const serve_call_delta *d) {
  if (d->head) return tool_call_object(m, d->call, d->index, true, "");
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "index", d->index);
  cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "function"), "arguments", string_n(d->args, d->args_len));
  return o;
}

char *serve_reply_chat(const serve_reply_meta *m, const serve_chat_msg *msg, const char *finish, int n_prompt, int n_out) {
  cJSON *o = header(m, false);
  cJSON *c = cJSON_CreateObject();
  cJSON_AddNumberToObject(c, "index", 0);
  cJSON *mm = cJSON_AddObjectToObject(c, "message");
  cJSON_AddStringToObject(mm, "role", "assistant");
  const char *content = msg->content.s ? msg->content.s : "";
  if (*content || !msg->n_calls) cJSON_AddStringToObject(mm, "content", content);
  else cJSON_AddNullToObject(mm, "content");   /* as OpenAI: a reply that only calls tools has no content */
  if (msg->reasoning.n) cJSON_AddStringToObject(mm, "reasoning_content", msg->reasoning.s);
  if (msg->n_calls) {
    cJSON *calls = cJSON_AddArrayToObject(mm, "tool_calls");
    for (int i = 0; i < msg->n_calls; i++) cJSON_AddItemToArray(calls, tool_call_object(m, &msg->calls[i], i, false, msg->calls[i].arguments));
  }
  cJSON_AddNullToObject(c, "logprobs");
  add_str_or_null(c, "finish_reason", finish);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
  add_usage(o, m, n_prompt, n_out);
  return print_free(o);
}

char *serve_reply_chat_delta(const serve_reply_meta *m, const char *reasoning, size_t rlen, const char *content,
                             size_t clen, const serve_call_delta *calls, int n_calls, bool with_usage) {
  cJSON *o = header(m, true);
  cJSON *c = cJSON_CreateObject();
  cJSON_AddNumberToObject(c, "index", 0);
  cJSON *d = cJSON_AddObjectToObject(c, "delta");
  if (rlen) cJSON_AddItemToObject(d, "reasoning_content", string_n(reasoning, rlen));
  if (clen) cJSON_AddItemToObject(d, "content", string_n(content, clen));
  if (n_calls) {
    cJSON *arr = cJSON_AddArrayToObject(d, "tool_calls");
    for (int i = 0; i < n_calls; i++) cJSON_AddItemToArray(arr, call_delta_object(m, &calls[i]));
  }
  cJSON_AddNullToObject(c, "logprobs");
  cJSON_AddNullToObject(c, "finish_reason");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
  if (with_usage) cJSON_AddNullToObject(o, "usage");
  return print_free(o);
}

char *serve_reply_chunk(const serve_reply_meta *m, const char *role, const char *text, size_t len,
                        const char *finish, bool with_usage) {
  cJSON *o = header(m, true);
  cJSON *choices = cJSON_AddArrayToObject(o, "choices");
  cJSON_AddItemToArray(choices, choice(m, true, role, text, len, finish));
  if (with_usage) cJSON_AddNullToObject(o, "usage");
  return print_free(o);
}

char *serve_reply_usage_chunk(const serve_reply_meta *m, int n_prompt, int n_out) {
  cJSON *o = header(m, true);
  cJSON_AddArrayToObject(o, "choices");
  add_usage(o, m, n_prompt, n_out);
  return print_free(o);
}

static cJSON *model_object(const char *model_id, long created, int n_ctx) {
  cJSON *mdl = cJSON_CreateObject();
  cJSON_AddStringToObject(mdl, "id", model_id);
  cJSON_AddStringToObject(mdl, "object", "model");
  cJSON_AddNumberToObject(mdl, "created", (double)created);
  cJSON_AddStringToObject(mdl, "owned_by", "tg");
  cJSON *meta = cJSON_AddObjectToObject(mdl, "meta");
  cJSON_AddNumberToObject(meta, "n_ctx", n_ctx);
  return mdl;
}

char *serve_reply_models(const char *model_id, long created, int n_ctx) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "object", "list");
  cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), model_object(model_id, created, n_ctx));
  return print_free(o);
}

char *serve_reply_model(const char *model_id, long created, int n_ctx) {
  return print_free(model_object(model_id, created, n_ctx));
}
