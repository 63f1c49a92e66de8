/* request.h: one /v1/chat/completions or /v1/completions request body,
 * parsed and validated. Anything wrong (an unknown field too) becomes a 400
 * that names the field. A pure function of the body: no socket, no model
 * (fuzz/fuzz_request.c drives it). */
#ifndef TG_SERVE_REQUEST_H
#define TG_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include "serve/reply.h"
#include "serve/serve.h"

/* tool_choice: "auto" (the default), "none", "required", or one function */
typedef enum { SERVE_TOOL_AUTO, SERVE_TOOL_NONE, SERVE_TOOL_REQUIRED, SERVE_TOOL_FUNCTION } serve_tool_choice;

typedef struct {
  bool chat;                /* chat completion (messages) or text completion (prompt) */
  cJSON *messages;          /* chat: owned copy of {role, content: string} objects */
  bool continue_final;      /* chat: the last message is an assistant prefill */
  bool add_generation_prompt;   /* chat: the prompt opens an assistant turn (not with continue_final) */
  char *prompt;             /* text: the prompt string, or NULL when given as tokens */
  int *prompt_tokens;       /* text: a prompt given as token ids */
  int n_prompt_tokens;
  bool stream, include_usage;
  int max_tokens;           /* -1: until an end token or a full context */
  const char *max_tokens_param;   /* the field that set it (for errors) */
  serve_sampling sampling;
  char **stop;              /* non-empty stop strings */
  int n_stop;
  char *grammar;            /* GBNF from "grammar" or "response_format", or NULL (sampling.grammar points here) */
  /* chat: tool use, reasoning and template variables (request_tools.c) */
  cJSON *tools;             /* the tools array (owned), NULL when none */
  serve_tool_choice tool_choice;
  char *tool_name;          /* SERVE_TOOL_FUNCTION: the function's name */
  bool parallel_tool_calls; /* false: only the first call is returned */
  int reasoning_format;     /* a serve_reasoning_format (chat_msg.h) */
  cJSON *template_kwargs;   /* chat_template_kwargs (owned), or NULL */
} serve_request;

/* request_tools.c: the chat fields above, and a message's tool_calls,
 * tool_call_id and name copied (validated) into its flattened form. */
int serve_request_parse_tools(serve_request *r, const cJSON *body, serve_error *e);
int serve_message_tool_fields(const cJSON *m, int i, cJSON *flat, serve_error *e);

/* The body as a JSON object, strictly: nothing after the value, no NUL
 * byte, no key twice in an object. NULL with *e filled (a 400). */
cJSON *serve_json_parse_strict(const char *body, size_t len, serve_error *e);
/* The first member of o not in fields (two NULL-ended halves: fields read,
 * then fields accepted and ignored), or NULL. */
const char *serve_json_unknown_field(const cJSON *o, const char *const *fields);

/* request_grammar.c: "grammar" and "response_format" into r->grammar,
 * compiled once to check it (a bad one is a 400). */
int serve_request_parse_grammar(serve_request *r, const cJSON *body, serve_error *e);

/* 0, or -1 with *e filled (and nothing left to free in r). */
int serve_request_parse(serve_request *r, bool chat, const char *body, size_t len, serve_error *e);
void serve_request_free(serve_request *r);

#endif
