/* reply.h: the OpenAI-shaped JSON the server sends: errors, model lists,
 * completions and their streamed chunks. Every builder returns a malloc'd
 * string (compact JSON). */
#ifndef TG_SERVE_REPLY_H
#define TG_SERVE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include "serve/chat_msg.h"

/* An error reply: HTTP status, OpenAI error type ("invalid_request_error",
 * "server_error", ...), an optional code ("context_length_exceeded", ...) and
 * the request field at fault (param), if any. */
typedef struct {
  int status;
  const char *type, *code;    /* static strings; code may be NULL */
  char param[96];             /* "" = none */
  char message[512];
} serve_error;

/* Fills e: a 4xx status is an "invalid_request_error" (or "not_found_error" for
 * 404, "authentication_error" for 401), 5xx a "server_error". Returns -1. */
int serve_error_set(serve_error *e, int status, const char *code, const char *param, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
/* {"error": {"message", "type", "param", "code"}} */
char *serve_error_json(const serve_error *e);

/* What every completion object repeats. */
typedef struct {
  bool chat;                  /* chat.completion(.chunk) vs text_completion */
  const char *id, *model;
  long created;
  int n_cached;               /* usage.prompt_tokens_details.cached_tokens (set once the job ran) */
} serve_reply_meta;

/* The whole non-streamed reply, with usage. */
char *serve_reply_full(const serve_reply_meta *m, const char *text, const char *finish, int n_prompt, int n_out);
/* One streamed chunk: role (chat's first chunk, else NULL), a piece of text
 * (may be empty) and finish (NULL until the last chunk). with_usage adds
 * "usage": null, as OpenAI does when stream_options.include_usage is set. */
char *serve_reply_chunk(const serve_reply_meta *m, const char *role, const char *text, size_t len,
                        const char *finish, bool with_usage);
/* A chat reply from its parsed message: content (null when the reply only
 * calls tools), reasoning_content when there is some, tool_calls (ids,
 * "type": "function", name, arguments as JSON text). */
char *serve_reply_chat(const serve_reply_meta *m, const serve_chat_msg *msg, const char *finish, int n_prompt, int n_out);
/* A streamed chat chunk with new reasoning, new content and tool_calls
 * entries (a call's head: index, id, "type", name and "arguments": "";
 * or a piece of its arguments: index and arguments only). */
char *serve_reply_chat_delta(const serve_reply_meta *m, const char *reasoning, size_t rlen, const char *content,
                             size_t clen, const serve_call_delta *calls, int n_calls, bool with_usage);
/* The usage chunk after the last one: no choices, just usage. */
char *serve_reply_usage_chunk(const serve_reply_meta *m, int n_prompt, int n_out);
/* GET /v1/models: the list; GET /v1/models/{id}: one model */
char *serve_reply_models(const char *model_id, long created, int n_ctx);
char *serve_reply_model(const char *model_id, long created, int n_ctx);

#endif
