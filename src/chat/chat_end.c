/* chat_end.c: whether a token ends the assistant's turn (tg_chat_is_end):
 * the tokenizer's end-of-generation tokens plus the chat format's turn-end
 * strings that are single tokens. */
#include <string.h>
#include "tg_chat.h"
#include "tg_tokenizer.h"

bool tg_chat_is_end(const tg_chat_template *t, const tg_tokenizer *tok, int32_t id) {
  if (!tok || id < 0) return false;
  if (tg_tokenizer_is_eog(tok, id)) return true;
  const char *const *ends = t ? tg_chat_end_strings(t) : NULL;
  const char *text = tg_tokenizer_token_text(tok, id);
  for (int i = 0; ends && ends[i] && text; i++) if (!strcmp(ends[i], text)) return true;
  return false;
}
