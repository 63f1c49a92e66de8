/* chat_session.h: a model, its tokenizer and its chat format, as tg chat
 * and tg serve use them: conversation in, prompt tokens out, and the tokens
 * that end an assistant turn. */
#ifndef TG_TOOLS_CHAT_SESSION_H
#define TG_TOOLS_CHAT_SESSION_H

#include "llm_args.h"

typedef struct {
  tg_llm *model;
  tg_tokenizer *tok;
  tg_chat_template *tmpl;
  char *template_text;     /* the GGUF's tokenizer.chat_template, or NULL (a preset) */
  int32_t end_ids[8];      /* turn-end tokens beyond the tokenizer's end-of-generation ones */
  int n_end;
} chat_session;

/* Loads the model, tokenizer and chat format (the GGUF's
 * tokenizer.chat_template rendered as Jinja; without one, a preset chosen by
 * the architecture, else chatml). Prints an error and returns false. */
bool chat_session_open(chat_session *s, const llm_args *a, const char *cmd);
void chat_session_close(chat_session *s);

/* The prompt tokens of a conversation (OpenAI-style messages as JSON text),
 * with the assistant turn opened (or, with continue_final, the last
 * assistant message left open). Count, or -1 + tg_error. */
int chat_session_tokens(chat_session *s, const char *messages_json, bool continue_final, int32_t **ids);

#endif
