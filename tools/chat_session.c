/* chat_session.c: see chat_session.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat_session.h"
#include "io/gguf_file.h"

/* The built-in format for a model without a template, by architecture. */
static const char *preset_for_arch(const char *arch) {
  static const char *const map[][2] = {
    { "olmo2", "olmo2" }, { "qwen2", "chatml" }, { "qwen3", "chatml" }, { "qwen2moe", "chatml" }, { "qwen3moe", "chatml" },
    { "deepseek2", "deepseek2" }, { "mistral", "mistral-v3" },
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) if (!strcmp(map[i][0], arch)) return map[i][1];
  return "chatml";
}

bool chat_session_open(chat_session *s, const llm_args *a, const char *cmd) {
  memset(s, 0, sizeof *s);
  if (!llm_args_load(a, cmd, &s->model, &s->tok)) return false;
  gguf_file *f = gguf_open(a->model);
  char *text = f ? gguf_get_str(f, "tokenizer.chat_template") : NULL;
  gguf_close(f);
  const char *bos = tg_tokenizer_token_text(s->tok, tg_tokenizer_bos(s->tok));
  const char *eos = tg_tokenizer_token_text(s->tok, tg_tokenizer_eos(s->tok));
  s->tmpl = text ? tg_chat_template_new(text, NULL, bos ? bos : "", eos ? eos : "")
                 : tg_chat_template_new(NULL, preset_for_arch(tg_llm_config_of(s->model)->arch), bos ? bos : "", eos ? eos : "");
  s->template_text = text;
  if (!s->tmpl) {
    fprintf(stderr, "%s: chat template: %s\n", cmd, tg_error());
    chat_session_close(s);
    return false;
  }
  /* the format's turn-end strings that are single tokens stop generation */
  const char *const *ends = tg_chat_end_strings(s->tmpl);
  for (int i = 0; ends && ends[i] && s->n_end < 8; i++) {
    int32_t id = tg_tokenizer_find(s->tok, ends[i]);
    if (id >= 0) s->end_ids[s->n_end++] = id;
  }
  return true;
}

void chat_session_close(chat_session *s) {
  tg_chat_template_free(s->tmpl);
  free(s->template_text);
  tg_llm_free(s->model);
  tg_tokenizer_free(s->tok);
  memset(s, 0, sizeof *s);
}

int chat_session_tokens(chat_session *s, const char *messages_json, bool continue_final, int32_t **ids) {
  char *prompt = tg_chat_apply_json(s->tmpl, messages_json, NULL, NULL, !continue_final, continue_final);
  if (!prompt) return -1;
  /* special tokens in the template's text (<|im_start|>) are tokens; BOS is
   * added as the model says (the template's own BOS was stripped) */
  int n = tg_tokenize(s->tok, prompt, strlen(prompt), true, true, ids);
  free(prompt);
  return n;
}
