/* chat_internal.h: the built-in presets, as the chat API uses them. */
#ifndef TG_CHAT_INTERNAL_H
#define TG_CHAT_INTERNAL_H

#include <stdbool.h>
#include "tg_chat.h"
#include "util/util.h"

int chat_preset_by_name(const char *name);          /* -1 when unknown */
int chat_preset_detect(const char *template_text);  /* -1 when nothing matches */
const char *chat_preset_name(int id);
const char *const *chat_preset_end_strings(int id);
/* appends the preset's prompt for the messages to b; -1 for an unknown id */
int chat_preset_format(int id, const tg_chat_message *m, int n, bool add_ass, strbuf *b);

/* The polyfills a Jinja template needs (minja's probes), and the messages
 * (a cJSON array) rewritten with them: a new array the caller deletes. */
struct cJSON;
void chat_template_polyfills(const tg_chat_template *t, bool *system_role, bool *object_arguments);
struct cJSON *chat_polyfill_messages(const tg_chat_template *t, const struct cJSON *messages);

#endif
