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

typedef struct {
  bool chat;                /* chat completion (messages) or text completion (prompt) */
  cJSON *messages;          /* chat: owned copy of {role, content: string} objects */
  bool continue_final;      /* chat: the last message is an assistant prefill */
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
} serve_request;

/* request_grammar.c: "grammar" and "response_format" into r->grammar,
 * compiled once to check it (a bad one is a 400). */
int serve_request_parse_grammar(serve_request *r, const cJSON *body, serve_error *e);

/* 0, or -1 with *e filled (and nothing left to free in r). */
int serve_request_parse(serve_request *r, bool chat, const char *body, size_t len, serve_error *e);
void serve_request_free(serve_request *r);

#endif
