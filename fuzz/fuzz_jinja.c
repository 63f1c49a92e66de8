/* fuzz_jinja.c: a Jinja template from untrusted bytes (every GGUF carries
 * one). The first byte sets the whitespace options; the rest is the
 * template, rendered with variables of every JSON type (a conversation with
 * tool calls among them), then made a chat template and applied to that
 * conversation (the llama.cpp-style polyfills, BOS/EOS strip), and given to
 * the preset detection. Work, output, memory and recursion are bounded by
 * the renderer, so nothing here may hang either. */
#include "fuzz.h"
#include "tg_chat.h"

static const char vars[] =
  "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi <b>\"},"
  " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
  " \"function\": {\"name\": \"get\", \"arguments\": {\"x\": 1}}}]},"
  " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"name\": \"get\", \"content\": \"42\"}],"
  " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get\", \"description\": \"d\","
  " \"parameters\": {\"type\": \"object\", \"properties\": {\"x\": {\"type\": \"integer\"}}}}}],"
  " \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true,"
  " \"n\": 9223372036854775807, \"m\": -9223372036854775808, \"f\": 1e308, \"z\": 0, \"neg\": -1,"
  " \"s\": \"\\u00e9\\u4e2d\\ud83d\\ude00\", \"l\": [3, 1, 2, [], {}], \"d\": {\"b\": 2, \"a\": [1]},"
  " \"t\": true, \"u\": null}";

static const tg_chat_message msgs[] = {
  { "system", "Be brief." }, { "user", "Hi" }, { "assistant", "Hello." }, { "user", "Again" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  tg_jinja_options o = { .trim_blocks = data[0] & 1, .lstrip_blocks = data[0] & 2, .keep_trailing_newline = data[0] & 4 };
  char *text = fuzz_str(data + 1, size - 1);
  free(tg_jinja_render(text, data[0] & 8 ? NULL : vars, o));
  tg_chat_template *t = tg_chat_template_new(text, data[0] & 16 ? "auto" : NULL, "<s>", "</s>");
  if (t) {
    tg_chat_set_time(t, 1700000000);
    free(tg_chat_apply(t, msgs, 4, data[0] & 32, false));
    free(tg_chat_apply(t, msgs, 3, false, true));
    tg_chat_end_strings(t);
    tg_chat_preset_name(t);
    tg_chat_template_free(t);
  }
  tg_chat_detect_preset(text);
  free(text);
  return 0;
}
