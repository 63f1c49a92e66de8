/* chat_presets.c: llama.cpp's built-in chat formats (src/llama-chat.cpp):
 * detection from a template's text by telltale substrings, and formatting
 * from roles and contents only. These are hand-written approximations of
 * the real templates, kept byte-compatible with llama.cpp. */
#include <ctype.h>
#include <pthread.h>
#include <string.h>
#include "chat/chat_internal.h"
#include "util/util.h"

typedef enum {
  P_CHATML, P_LLAMA2, P_LLAMA2_SYS, P_LLAMA2_SYS_BOS, P_LLAMA2_SYS_STRIP, P_MISTRAL_V1, P_MISTRAL_V3,
  P_MISTRAL_V3_TEKKEN, P_MISTRAL_V7, P_MISTRAL_V7_TEKKEN, P_PHI3, P_PHI4, P_FALCON3, P_ZEPHYR, P_MONARCH,
  P_GEMMA, P_ORION, P_OPENCHAT, P_VICUNA, P_VICUNA_ORCA, P_DEEPSEEK, P_DEEPSEEK2, P_DEEPSEEK3, P_COMMAND_R,
  P_LLAMA3, P_CHATGLM3, P_CHATGLM4, P_GLMEDGE, P_MINICPM, P_EXAONE3, P_EXAONE4, P_RWKV_WORLD, P_GRANITE,
  P_GIGACHAT, P_MEGREZ, P_YANDEX, P_BAILING, P_LLAMA4, P_SMOLVLM, P_DOTS1, P_OLMO2, P_COUNT
} preset_id;

typedef struct preset {
  const char *name;
  const char *end[4];   /* end-of-turn strings, NULL-terminated */
} preset;

static const preset PRESETS[P_COUNT] = {
  [P_CHATML] = { "chatml", { "<|im_end|>" } },
  [P_LLAMA2] = { "llama2", { "</s>" } },
  [P_LLAMA2_SYS] = { "llama2-sys", { "</s>" } },
  [P_LLAMA2_SYS_BOS] = { "llama2-sys-bos", { "</s>" } },
  [P_LLAMA2_SYS_STRIP] = { "llama2-sys-strip", { "</s>" } },
  [P_MISTRAL_V1] = { "mistral-v1", { "</s>" } },
  [P_MISTRAL_V3] = { "mistral-v3", { "</s>" } },
  [P_MISTRAL_V3_TEKKEN] = { "mistral-v3-tekken", { "</s>" } },
  [P_MISTRAL_V7] = { "mistral-v7", { "</s>" } },
  [P_MISTRAL_V7_TEKKEN] = { "mistral-v7-tekken", { "</s>" } },
  [P_PHI3] = { "phi3", { "<|end|>", "<|endoftext|>" } },
  [P_PHI4] = { "phi4", { "<|im_end|>" } },
  [P_FALCON3] = { "falcon3", { "<|endoftext|>", "\n<|user|>" } },
  [P_ZEPHYR] = { "zephyr", { "<|endoftext|>" } },
  [P_MONARCH] = { "monarch", { "</s>" } },
  [P_GEMMA] = { "gemma", { "<end_of_turn>" } },
  [P_ORION] = { "orion", { "</s>" } },
  [P_OPENCHAT] = { "openchat", { "<|end_of_turn|>" } },
  [P_VICUNA] = { "vicuna", { "</s>" } },
  [P_VICUNA_ORCA] = { "vicuna-orca", { "</s>" } },
  [P_DEEPSEEK] = { "deepseek", { "<|EOT|>" } },
  [P_DEEPSEEK2] = { "deepseek2", { "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>" } },
  [P_DEEPSEEK3] = { "deepseek3", { "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>" } },
  [P_COMMAND_R] = { "command-r", { "<|END_OF_TURN_TOKEN|>" } },
  [P_LLAMA3] = { "llama3", { "<|eot_id|>" } },
  [P_CHATGLM3] = { "chatglm3", { "<|user|>", "<|observation|>" } },
  [P_CHATGLM4] = { "chatglm4", { "<|user|>", "<|observation|>", "<|endoftext|>" } },
  [P_GLMEDGE] = { "glmedge", { "<|user|>", "<|endoftext|>" } },
  [P_MINICPM] = { "minicpm", { "</s>", "<\xe7\x94\xa8\xe6\x88\xb7>" } },
  [P_EXAONE3] = { "exaone3", { "[|endofturn|]" } },
  [P_EXAONE4] = { "exaone4", { "[|endofturn|]" } },
  [P_RWKV_WORLD] = { "rwkv-world", { "\n\n" } },
  [P_GRANITE] = { "granite", { "<|end_of_text|>" } },
  [P_GIGACHAT] = { "gigachat", { "<|message_sep|>" } },
  [P_MEGREZ] = { "megrez", { "<|turn_end|>" } },
  [P_YANDEX] = { "yandex", { "\n\n" } },
  [P_BAILING] = { "bailing", { "<|endoftext|>", "<role>" } },
  [P_LLAMA4] = { "llama4", { "<|eot|>" } },
  [P_SMOLVLM] = { "smolvlm", { "<end_of_utterance>" } },
  [P_DOTS1] = { "dots1", { "<|endofresponse|>" } },
  [P_OLMO2] = { "olmo2", { "<|im_end|>", "<|endoftext|>" } },
};

static const char *preset_names[P_COUNT + 1];
static void fill_preset_names(void) {
  for (int i = 0; i < P_COUNT; i++) preset_names[i] = PRESETS[i].name;
}

const char *const *tg_chat_preset_names(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, fill_preset_names);
  return preset_names;
}

int chat_preset_by_name(const char *name) {
  for (int i = 0; name && i < P_COUNT; i++)
    if (!strcmp(PRESETS[i].name, name)) return i;
  return -1;
}

const char *chat_preset_name(int id) { return id >= 0 && id < P_COUNT ? PRESETS[id].name : NULL; }
const char *const *chat_preset_end_strings(int id) { return PRESETS[id].end; }

/* llm_chat_detect_template: the first rule that matches wins */
int chat_preset_detect(const char *t) {
  int by_name = chat_preset_by_name(t);
  if (by_name >= 0) return by_name;
  #define HAS(s) (strstr(t, s) != NULL)
  if (HAS("<|im_start|>"))
    return HAS("<|im_sep|>") ? P_PHI4 : HAS("<end_of_utterance>") ? P_SMOLVLM : P_CHATML;
  if (!strncmp(t, "mistral", 7) || HAS("[INST]")) {
    if (HAS("[SYSTEM_PROMPT]")) return P_MISTRAL_V7;
    if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]")) {
      if (HAS(" [INST]")) return P_MISTRAL_V1;
      if (HAS("\"[INST]\"")) return P_MISTRAL_V3_TEKKEN;
      return P_MISTRAL_V3;
    }
    if (HAS("content.strip()")) return P_LLAMA2_SYS_STRIP;
    if (HAS("bos_token + '[INST]")) return P_LLAMA2_SYS_BOS;
    if (HAS("<<SYS>>")) return P_LLAMA2_SYS;
    return P_LLAMA2;
  }
  if (HAS("<|assistant|>") && HAS("<|end|>")) return P_PHI3;
  if (HAS("[gMASK]<sop>")) return P_CHATGLM4;
  if (HAS("<|assistant|>") && HAS("<|user|>")) return HAS("</s>") ? P_FALCON3 : P_GLMEDGE;
  if (HAS("<|{{ item['role'] }}|>") && HAS("<|begin_of_image|>")) return P_GLMEDGE;
  if (HAS("<|user|>") && HAS("<|endoftext|>")) return P_ZEPHYR;
  if (HAS("bos_token + message['role']")) return P_MONARCH;
  if (HAS("<start_of_turn>")) return P_GEMMA;
  if (HAS("'\\n\\nAssistant: ' + eos_token")) return P_ORION;
  if (HAS("GPT4 Correct ")) return P_OPENCHAT;
  if (HAS("USER: ") && HAS("ASSISTANT: ")) return HAS("SYSTEM: ") ? P_VICUNA_ORCA : P_VICUNA;
  if (HAS("### Instruction:") && HAS("<|EOT|>")) return P_DEEPSEEK;
  if (HAS("<|START_OF_TURN_TOKEN|>") && HAS("<|USER_TOKEN|>")) return P_COMMAND_R;
  if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>")) return P_LLAMA3;
  if (HAS("[gMASK]sop")) return P_CHATGLM3;
  if (HAS("<\xe7\x94\xa8\xe6\x88\xb7>")) return P_MINICPM;   /* <用户> */
  if (HAS("'Assistant: ' + message['content'] + eos_token")) return P_DEEPSEEK2;
  if (HAS("<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>") && HAS("<\xef\xbd\x9cUser\xef\xbd\x9c>") &&
      HAS("<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"))
    return P_DEEPSEEK3;
  if (HAS("[|system|]") && HAS("[|assistant|]") && HAS("[|endofturn|]")) return HAS("[|tool|]") ? P_EXAONE4 : P_EXAONE3;
  if (HAS("rwkv-world") || HAS("{{- 'User: ' + message['content']|trim + '\\n\\n' -}}")) return P_RWKV_WORLD;
  if (HAS("<|start_of_role|>")) return P_GRANITE;
  if (HAS("message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]")) return P_GIGACHAT;
  if (HAS("<|role_start|>")) return P_MEGREZ;
  if (HAS(" \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82:")) return P_YANDEX;   /* " Ассистент:" */
  if (HAS("<role>ASSISTANT</role>") && HAS("'HUMAN'")) return P_BAILING;
  if (HAS("<|header_start|>") && HAS("<|header_end|>")) return P_LLAMA4;
  if (HAS("<|endofuserprompt|>")) return P_DOTS1;
  #undef HAS
  return -1;
}

const char *tg_chat_detect_preset(const char *template_text) {
  if (!template_text) TG_FAIL("tg_chat_detect_preset: template_text is NULL");
  return chat_preset_name(chat_preset_detect(template_text));
}

/* ---- formatting ---- */

static void put(strbuf *b, const char *s) { sb_puts(b, s); }
static void put_trimmed(strbuf *b, const char *s) {
  size_t n = strlen(s);
  while (n && isspace((unsigned char)*s)) { s++; n--; }
  while (n && isspace((unsigned char)s[n - 1])) n--;
  sb_printf(b, "%.*s", (int)n, s);
}
static bool is_role(const tg_chat_message *m, const char *r) { return !strcmp(m->role, r); }

static void fmt_mistral_v1_v3(strbuf *b, const tg_chat_message *m, int n, preset_id id) {
  const char *lead = id == P_MISTRAL_V1 ? " " : "", *trail = id == P_MISTRAL_V3_TEKKEN ? "" : " ";
  bool inside = false;
  for (int i = 0; i < n; i++) {
    if (!inside) { sb_printf(b, "%s[INST]%s", lead, trail); inside = true; }
    if (is_role(&m[i], "system")) sb_printf(b, "%s\n\n", m[i].content);
    else if (is_role(&m[i], "user")) sb_printf(b, "%s%s[/INST]", m[i].content, lead);
    else {
      put(b, trail);
      if (id == P_MISTRAL_V3) put_trimmed(b, m[i].content);
      else put(b, m[i].content);
      put(b, "</s>");
      inside = false;
    }
  }
}

static void fmt_llama2(strbuf *b, const tg_chat_message *m, int n, preset_id id) {
  bool sys = id != P_LLAMA2, bos_inside = id == P_LLAMA2_SYS_BOS, strip = id == P_LLAMA2_SYS_STRIP;
  bool inside = true;
  put(b, "[INST] ");
  for (int i = 0; i < n; i++) {
    strbuf content = { 0 };
    if (strip) put_trimmed(&content, m[i].content);
    else put(&content, m[i].content);
    const char *c = content.s ? content.s : "";
    if (!inside) { inside = true; put(b, bos_inside ? "<s>[INST] " : "[INST] "); }
    if (is_role(&m[i], "system")) {
      if (sys) sb_printf(b, "<<SYS>>\n%s\n<</SYS>>\n\n", c);
      else sb_printf(b, "%s\n", c);
    } else if (is_role(&m[i], "user")) {
      sb_printf(b, "%s [/INST]", c);
    } else {
      sb_printf(b, "%s</s>", c);
      inside = false;
    }
    sb_free(&content);
  }
}

/* Appends the preset's rendering of the messages; -1 for an unknown id. */
int chat_preset_format(int id, const tg_chat_message *m, int n, bool add_ass, strbuf *b) {
  switch ((preset_id)id) {
  case P_CHATML: case P_OLMO2:
    for (int i = 0; i < n; i++) sb_printf(b, "<|im_start|>%s\n%s<|im_end|>\n", m[i].role, m[i].content);
    if (add_ass) put(b, "<|im_start|>assistant\n");
    break;
  case P_MISTRAL_V7: case P_MISTRAL_V7_TEKKEN: {
    const char *sp = id == P_MISTRAL_V7 ? " " : "";
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "[SYSTEM_PROMPT]%s%s[/SYSTEM_PROMPT]", sp, m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "[INST]%s%s[/INST]", sp, m[i].content);
      else sb_printf(b, "%s%s</s>", sp, m[i].content);
    }
    break;
  }
  case P_MISTRAL_V1: case P_MISTRAL_V3: case P_MISTRAL_V3_TEKKEN: fmt_mistral_v1_v3(b, m, n, (preset_id)id); break;
  case P_LLAMA2: case P_LLAMA2_SYS: case P_LLAMA2_SYS_BOS: case P_LLAMA2_SYS_STRIP: fmt_llama2(b, m, n, (preset_id)id); break;
  case P_PHI3:
    for (int i = 0; i < n; i++) sb_printf(b, "<|%s|>\n%s<|end|>\n", m[i].role, m[i].content);
    if (add_ass) put(b, "<|assistant|>\n");
    break;
  case P_PHI4:
    for (int i = 0; i < n; i++) sb_printf(b, "<|im_start|>%s<|im_sep|>%s<|im_end|>", m[i].role, m[i].content);
    if (add_ass) put(b, "<|im_start|>assistant<|im_sep|>");
    break;
  case P_FALCON3:
    for (int i = 0; i < n; i++) sb_printf(b, "<|%s|>\n%s\n", m[i].role, m[i].content);
    if (add_ass) put(b, "<|assistant|>\n");
    break;
  case P_ZEPHYR:
    for (int i = 0; i < n; i++) sb_printf(b, "<|%s|>\n%s<|endoftext|>\n", m[i].role, m[i].content);
    if (add_ass) put(b, "<|assistant|>\n");
    break;
  case P_MONARCH:
    for (int i = 0; i < n; i++) sb_printf(b, "%s%s\n%s</s>\n", i ? "<s>" : "", m[i].role, m[i].content);
    if (add_ass) put(b, "<s>assistant\n");
    break;
  case P_GEMMA: {
    strbuf sys = { 0 };
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) { put_trimmed(&sys, m[i].content); continue; }
      bool model = is_role(&m[i], "assistant");
      sb_printf(b, "<start_of_turn>%s\n", model ? "model" : m[i].role);
      if (sys.n && !model) { sb_printf(b, "%s\n\n", sys.s); sys.n = 0; sys.s[0] = 0; }
      put_trimmed(b, m[i].content);
      put(b, "<end_of_turn>\n");
    }
    sb_free(&sys);
    if (add_ass) put(b, "<start_of_turn>model\n");
    break;
  }
  case P_ORION: {
    strbuf sys = { 0 };
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) { put(&sys, m[i].content); continue; }
      if (is_role(&m[i], "user")) {
        put(b, "Human: ");
        if (sys.n) { sb_printf(b, "%s\n\n", sys.s); sys.n = 0; sys.s[0] = 0; }
        sb_printf(b, "%s\n\nAssistant: </s>", m[i].content);
      } else {
        sb_printf(b, "%s</s>", m[i].content);
      }
    }
    sb_free(&sys);
    break;
  }
  case P_OPENCHAT:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "%s<|end_of_turn|>", m[i].content);
      else sb_printf(b, "GPT4 Correct %c%s: %s<|end_of_turn|>", toupper((unsigned char)m[i].role[0]),
                     m[i].role[0] ? m[i].role + 1 : "", m[i].content);
    }
    if (add_ass) put(b, "GPT4 Correct Assistant:");
    break;
  case P_VICUNA: case P_VICUNA_ORCA:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, id == P_VICUNA_ORCA ? "SYSTEM: %s\n" : "%s\n\n", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "USER: %s\n", m[i].content);
      else if (is_role(&m[i], "assistant")) sb_printf(b, "ASSISTANT: %s</s>\n", m[i].content);
    }
    if (add_ass) put(b, "ASSISTANT:");
    break;
  case P_DEEPSEEK:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) put(b, m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "### Instruction:\n%s\n", m[i].content);
      else if (is_role(&m[i], "assistant")) sb_printf(b, "### Response:\n%s\n<|EOT|>\n", m[i].content);
    }
    if (add_ass) put(b, "### Response:\n");
    break;
  case P_COMMAND_R:
    for (int i = 0; i < n; i++) {
      const char *tok = is_role(&m[i], "system") ? "SYSTEM" : is_role(&m[i], "user") ? "USER" : is_role(&m[i], "assistant") ? "CHATBOT" : NULL;
      if (!tok) continue;
      sb_printf(b, "<|START_OF_TURN_TOKEN|><|%s_TOKEN|>", tok);
      put_trimmed(b, m[i].content);
      put(b, "<|END_OF_TURN_TOKEN|>");
    }
    if (add_ass) put(b, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    break;
  case P_LLAMA3: case P_LLAMA4: {
    const char *hs = id == P_LLAMA3 ? "<|start_header_id|>" : "<|header_start|>";
    const char *he = id == P_LLAMA3 ? "<|end_header_id|>" : "<|header_end|>";
    const char *eot = id == P_LLAMA3 ? "<|eot_id|>" : "<|eot|>";
    for (int i = 0; i < n; i++) {
      sb_printf(b, "%s%s%s\n\n", hs, m[i].role, he);
      put_trimmed(b, m[i].content);
      put(b, eot);
    }
    if (add_ass) sb_printf(b, "%sassistant%s\n\n", hs, he);
    break;
  }
  case P_CHATGLM3:
    put(b, "[gMASK]sop");
    for (int i = 0; i < n; i++) sb_printf(b, "<|%s|>\n %s", m[i].role, m[i].content);
    if (add_ass) put(b, "<|assistant|>");
    break;
  case P_CHATGLM4: case P_GLMEDGE:
    if (id == P_CHATGLM4) put(b, "[gMASK]<sop>");
    for (int i = 0; i < n; i++) sb_printf(b, "<|%s|>\n%s", m[i].role, m[i].content);
    if (add_ass) put(b, "<|assistant|>");
    break;
  case P_MINICPM:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "user")) { put(b, "<\xe7\x94\xa8\xe6\x88\xb7>"); put_trimmed(b, m[i].content); put(b, "<AI>"); }
      else put_trimmed(b, m[i].content);
    }
    break;
  case P_DEEPSEEK2:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "%s\n\n", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "User: %s\n\n", m[i].content);
      else if (is_role(&m[i], "assistant")) sb_printf(b, "Assistant: %s%s", m[i].content, PRESETS[P_DEEPSEEK2].end[0]);
    }
    if (add_ass) put(b, "Assistant:");
    break;
  case P_DEEPSEEK3:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "%s\n\n", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "<\xef\xbd\x9cUser\xef\xbd\x9c>%s", m[i].content);
      else if (is_role(&m[i], "assistant"))
        sb_printf(b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>%s%s", m[i].content, PRESETS[P_DEEPSEEK3].end[0]);
    }
    if (add_ass) put(b, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
    break;
  case P_EXAONE3: case P_EXAONE4:
    for (int i = 0; i < n; i++) {
      const char *r = m[i].role;
      bool known = !strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant") || (id == P_EXAONE4 && !strcmp(r, "tool"));
      if (!known) continue;
      sb_printf(b, "[|%s|]", r);
      put_trimmed(b, m[i].content);
      put(b, !strcmp(r, "user") ? "\n" : "[|endofturn|]\n");
    }
    if (add_ass) put(b, "[|assistant|]");
    break;
  case P_RWKV_WORLD:   /* the model ends its turns with "\n\n" */
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "%s\n\n", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "User: %s\n\nAssistant:", m[i].content);
      else sb_printf(b, "%s\n\n", m[i].content);
    }
    break;
  case P_GRANITE:
    for (int i = 0; i < n; i++) {
      sb_printf(b, "<|start_of_role|>%s<|end_of_role|>", m[i].role);
      if (is_role(&m[i], "assistant_tool_call")) put(b, "<|tool_call|>");
      sb_printf(b, "%s<|end_of_text|>\n", m[i].content);
    }
    if (add_ass) put(b, "<|start_of_role|>assistant<|end_of_role|>\n");
    break;
  case P_GIGACHAT: {
    bool has_sys = n > 0 && is_role(&m[0], "system");
    if (has_sys) sb_printf(b, "<s>%s<|message_sep|>", m[0].content);
    else put(b, "<s>");
    for (int i = has_sys ? 1 : 0; i < n; i++) {
      if (is_role(&m[i], "user"))
        sb_printf(b, "user<|role_sep|>%s<|message_sep|>available functions<|role_sep|>[]<|message_sep|>", m[i].content);
      else if (is_role(&m[i], "assistant")) sb_printf(b, "assistant<|role_sep|>%s<|message_sep|>", m[i].content);
    }
    if (add_ass) put(b, "assistant<|role_sep|>");
    break;
  }
  case P_MEGREZ:
    for (int i = 0; i < n; i++) sb_printf(b, "<|role_start|>%s<|role_end|>%s<|turn_end|>", m[i].role, m[i].content);
    if (add_ass) put(b, "<|role_start|>assistant<|role_end|>");
    break;
  case P_YANDEX:
    put(b, "<s>");
    for (int i = 0; i < n; i++) {
      /* " Пользователь: " / " Ассистент: " */
      if (is_role(&m[i], "user")) sb_printf(b, " \xd0\x9f\xd0\xbe\xd0\xbb\xd1\x8c\xd0\xb7\xd0\xbe\xd0\xb2\xd0\xb0\xd1\x82\xd0\xb5\xd0\xbb\xd1\x8c: %s\n\n", m[i].content);
      else if (is_role(&m[i], "assistant")) sb_printf(b, " \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82: %s\n\n", m[i].content);
    }
    if (add_ass) put(b, " \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82:[SEP]");
    break;
  case P_BAILING:
    for (int i = 0; i < n; i++) {
      put(b, "<role>");
      if (is_role(&m[i], "user")) put(b, "HUMAN");
      else for (const char *r = m[i].role; *r; r++) sb_printf(b, "%c", toupper((unsigned char)*r));
      sb_printf(b, "</role>%s", m[i].content);
    }
    if (add_ass) put(b, "<role>ASSISTANT</role>");
    break;
  case P_SMOLVLM:
    put(b, "<|im_start|>");
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "%s\n\n", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "User: %s<end_of_utterance>\n", m[i].content);
      else sb_printf(b, "Assistant: %s<end_of_utterance>\n", m[i].content);
    }
    if (add_ass) put(b, "Assistant:");
    break;
  case P_DOTS1:
    for (int i = 0; i < n; i++) {
      if (is_role(&m[i], "system")) sb_printf(b, "<|system|>%s<|endofsystem|>", m[i].content);
      else if (is_role(&m[i], "user")) sb_printf(b, "<|userprompt|>%s<|endofuserprompt|>", m[i].content);
      else sb_printf(b, "<|response|>%s<|endofresponse|>", m[i].content);
    }
    if (add_ass) put(b, "<|response|>");
    break;
  default:
    return -1;
  }
  return 0;
}
