/* cmd_chat.c: `tg chat -m MODEL.gguf [-s SYSTEM]`: an interactive chat.
 * Each line is a user message; the answer streams as it is generated; the
 * history is kept (the cache reuses the conversation so far). /reset starts
 * over; Ctrl-D (end of input) quits. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "chat_session.h"
#include "commands.h"

typedef struct { char *buf; size_t n, cap; } text_buf;

static bool stream_piece(void *u, const char *text, size_t len) {
  text_buf *t = u;
  if (t->n + len + 1 > t->cap) { t->cap = (t->n + len + 1) * 2; t->buf = realloc(t->buf, t->cap); }
  memcpy(t->buf + t->n, text, len);
  t->n += len;
  t->buf[t->n] = 0;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  return true;
}

static void add_message(cJSON *msgs, const char *role, const char *content) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", role);
  cJSON_AddStringToObject(m, "content", content);
  cJSON_AddItemToArray(msgs, m);
}

int cmd_chat(int argc, char **argv) {
  llm_args a;
  llm_args_init(&a);
  const char *system = NULL;
  for (int i = 1; i < argc; i++) {
    int r = llm_args_parse(&a, argc, argv, &i, "tg chat");
    if (r < 0) return 2;
    if (r > 0) continue;
    if (!strcmp(argv[i], "-s") && i + 1 < argc) system = argv[++i];
    else {
      fprintf(stderr, "tg chat: unknown argument '%s'\nusage: tg chat -m MODEL.gguf [-s SYSTEM_PROMPT] [options]\n%s", argv[i], llm_args_help);
      return 2;
    }
  }
  chat_session s;
  if (!chat_session_open(&s, &a, "tg chat")) return 1;
  bool tty = isatty(0);
  if (tty) fprintf(stderr, "tg chat: %s (%s format). /reset clears the history, Ctrl-D quits.\n", a.model,
                   tg_chat_preset_name(s.tmpl) ? tg_chat_preset_name(s.tmpl) : "jinja");
  cJSON *msgs = cJSON_CreateArray();
  if (system) add_message(msgs, "system", system);
  tg_sampler *smp = tg_sampler_new(&a.sampling);
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (;;) {
    if (tty) { printf("> "); fflush(stdout); }
    ssize_t len = getline(&line, &cap, stdin);
    if (len < 0) break;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (!len) continue;
    if (!strcmp(line, "/reset")) {
      cJSON_Delete(msgs);
      msgs = cJSON_CreateArray();
      if (system) add_message(msgs, "system", system);
      tg_llm_rewind(s.model, 0);
      if (tty) fprintf(stderr, "(history cleared)\n");
      continue;
    }
    add_message(msgs, "user", line);
    char *json = cJSON_PrintUnformatted(msgs);
    int32_t *ids = NULL;
    int n = chat_session_tokens(&s, json, false, &ids);
    free(json);
    text_buf answer = { 0 };
    tg_gen_stats st;
    int max = a.n_predict < 0 ? tg_llm_config_of(s.model)->n_ctx : a.n_predict;
    if (n < 0 || tg_llm_generate(s.model, s.tok, ids, n, max, smp, s.end_ids, s.n_end, stream_piece, &answer, &st) < 0) {
      fprintf(stderr, "\ntg chat: %s\n", tg_error());
      cJSON_DeleteItemFromArray(msgs, cJSON_GetArraySize(msgs) - 1);   /* forget the failed turn */
      rc = 1;
    } else {
      printf("\n");
      if (st.hit_ctx) fprintf(stderr, "(the context is full: /reset to start over)\n");
      add_message(msgs, "assistant", answer.buf ? answer.buf : "");
      rc = 0;
    }
    free(answer.buf);
    free(ids);
  }
  free(line);
  cJSON_Delete(msgs);
  tg_sampler_free(smp);
  chat_session_close(&s);
  return rc;
}
