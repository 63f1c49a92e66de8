/* tg_chat.h: chat prompts. Turns a conversation into the prompt text a model
 * expects, either by rendering the Jinja chat template a GGUF carries
 * (`tokenizer.chat_template`) or with one of llama.cpp's built-in presets
 * (chatml, llama3, gemma, ...). docs/chat.md has the details.
 *
 *   tg_chat_template *t = tg_chat_template_new(gguf_template_text, NULL, "<s>", "</s>");
 *   tg_chat_message msgs[] = { { "system", "Be brief." }, { "user", "Hi" } };
 *   char *prompt = tg_chat_apply(t, msgs, 2, true, false);   // NULL + tg_error() on failure
 *   ... stop generating on any of tg_chat_end_strings(t) ...
 *   free(prompt);
 *   tg_chat_template_free(t);
 *
 * All functions return NULL (or -1) on failure and set tg_error(). */
#ifndef TG_CHAT_H
#define TG_CHAT_H

#include <stdbool.h>
#include <stdint.h>

#include "tg_api.h"

typedef struct tg_chat_template tg_chat_template;

typedef struct tg_chat_message {
  const char *role;      /* "system", "user", "assistant", "tool", ... */
  const char *content;
} tg_chat_message;

/* Creates a chat formatter.
 * - template_text given, preset_name NULL: Jinja mode, renders the template
 *   (as llama.cpp does with --jinja: trim_blocks, lstrip_blocks, polyfills,
 *   BOS/EOS strip). A syntax error fails here, with line and column.
 * - preset_name given: a built-in preset by name ("chatml", "llama3", ...),
 *   or "auto" to detect the preset from template_text with llama.cpp's rules
 *   (llama_chat_apply_template's legacy path); NULL text with "auto" = chatml.
 * - both NULL: the chatml preset.
 * bos_token / eos_token (may be NULL) are the template variables of the same
 * names; in Jinja mode one leading bos_token and one trailing eos_token are
 * stripped from the output, because the tokenizer adds them itself. */
TG_API tg_chat_template *tg_chat_template_new(const char *template_text, const char *preset_name,
                                       const char *bos_token, const char *eos_token);
TG_API void tg_chat_template_free(tg_chat_template *t);

/* The prompt for n messages, malloc'd. add_generation_prompt appends the
 * assistant turn's opening; continue_final_message instead ends the prompt
 * right after the last message's content (which must be an assistant
 * message), so generation continues it. Both true is an error. */
TG_API char *tg_chat_apply(const tg_chat_template *t, const tg_chat_message *msgs, int n,
                    bool add_generation_prompt, bool continue_final_message);

/* The same with OpenAI-style JSON: messages_json is an array of message
 * objects (role, content, and tool_calls / tool_call_id / name for tool
 * use); tools_json (or NULL) becomes the `tools` variable; extra_json (or
 * NULL) is an object whose members become extra template variables.
 * Preset mode reads only role and content. */
TG_API char *tg_chat_apply_json(const tg_chat_template *t, const char *messages_json, const char *tools_json,
                         const char *extra_json, bool add_generation_prompt, bool continue_final_message);

/* Strings that end an assistant turn (e.g. "<|im_end|>", "<|eot_id|>"), so a
 * runner can stop on them; NULL-terminated. In Jinja mode they come from the
 * preset the template text matches, else from eos_token. */
TG_API const char *const *tg_chat_end_strings(const tg_chat_template *t);
/* Does token id end the assistant's turn? The tokenizer's end-of-generation
 * tokens (EOS, EOT, EOM, <|im_end|>-like tokens) and the tokens whose text is
 * one of tg_chat_end_strings(t). */
struct tg_tokenizer;
TG_API bool tg_chat_is_end(const tg_chat_template *t, const struct tg_tokenizer *tok, int32_t id);
/* The preset in use (preset mode), or the one the template text matches
 * (Jinja mode); NULL when none matches. */
TG_API const char *tg_chat_preset_name(const tg_chat_template *t);
/* Whether the template renders Jinja (false: a built-in preset). */
TG_API bool tg_chat_is_jinja(const tg_chat_template *t);
/* Fixes the clock strftime_now() reads (unix seconds; 0 = the real time). */
TG_API void tg_chat_set_time(tg_chat_template *t, int64_t unix_seconds);

/* Built-in preset names, NULL-terminated. */
TG_API const char *const *tg_chat_preset_names(void);
/* The preset llama.cpp's detection picks for a template text (an exact
 * preset name is itself), or NULL when none (no error set; a NULL
 * template_text is an error). */
TG_API const char *tg_chat_detect_preset(const char *template_text);

/* ---- Jinja, directly ---- */
typedef struct tg_jinja_options {
  bool trim_blocks, lstrip_blocks, keep_trailing_newline;
} tg_jinja_options;
/* Renders a Jinja template with the variables of a JSON object (or NULL);
 * malloc'd output, or NULL + tg_error() (syntax errors give line and column;
 * raise_exception's message is the error text). Loops, output size, memory
 * and macro recursion are bounded. */
TG_API char *tg_jinja_render(const char *template_text, const char *vars_json, tg_jinja_options opt);

#endif
