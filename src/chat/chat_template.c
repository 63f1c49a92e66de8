/* chat_template.c: the public chat API (tg_chat.h). Jinja mode does what
 * llama.cpp does with --jinja (common/chat.cpp with minja's chat_template):
 * probe the template's capabilities once, rewrite the messages for the ones
 * it lacks (polyfills), render, then strip one leading BOS and one trailing
 * EOS. Preset mode formats with a built-in preset. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "chat/chat_internal.h"
#include "chat/jinja.h"

struct tg_chat_template {
  jinja_template *jinja;      /* NULL in preset mode */
  int preset;                 /* preset mode: the one used; Jinja mode: the one the text matches, or -1 */
  char *bos, *eos;
  bool supports_system_role;  /* false: system messages are merged into the next user message */
  bool requires_object_arguments;   /* tool_calls[].function.arguments must be an object */
  const char *end[8];
  int64_t now;
};

static const jinja_options CHAT_JINJA_OPTIONS = { .trim_blocks = true, .lstrip_blocks = true, .keep_trailing_newline = false };

/* renders with the given messages; NULL (error set) on failure */
static char *render(const tg_chat_template *t, cJSON *messages, const cJSON *tools, const cJSON *extra, bool add_gen) {
  cJSON *vars = cJSON_CreateObject();
  if (extra)
    for (const cJSON *e = extra->child; e; e = e->next) cJSON_AddItemToObject(vars, e->string, cJSON_Duplicate(e, true));
  cJSON_AddItemReferenceToObject(vars, "messages", messages);
  cJSON_AddBoolToObject(vars, "add_generation_prompt", add_gen);
  cJSON_AddStringToObject(vars, "bos_token", t->bos);
  cJSON_AddStringToObject(vars, "eos_token", t->eos);
  if (tools) cJSON_AddItemReferenceToObject(vars, "tools", (cJSON *)tools);
  jinja_render_args args = { .vars = vars, .now = t->now, .limits = jinja_default_limits() };
  char *out = jinja_render(t->jinja, &args);
  cJSON_Delete(vars);
  return out;
}

static bool probe_renders(const tg_chat_template *t, const char *messages_json, const char *needle1, const char *needle2) {
  cJSON *m = cJSON_Parse(messages_json);
  char *out = render(t, m, NULL, NULL, false);
  bool found = out && (strstr(out, needle1) || (needle2 && strstr(out, needle2)));
  free(out);
  cJSON_Delete(m);
  return found;
}

/* minja's capability probes, the two that decide polyfills */
static void probe_capabilities(tg_chat_template *t) {
  t->supports_system_role = probe_renders(t,
      "[{\"role\":\"system\",\"content\":\"<System Needle>\"},{\"role\":\"user\",\"content\":\"Hey\"}]",
      "<System Needle>", NULL);
  const char *call_fmt =
      "[{\"role\":\"user\",\"content\":\"Hey\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
      "[{\"id\":\"call_1___\",\"type\":\"function\",\"function\":{\"name\":\"ipython\",\"arguments\":%s}}]}]";
  const char *obj = "{\"argument_needle\":\"print('Hello, World!')\"}";
  const char *str = "\"{\\\"argument_needle\\\": \\\"print('Hello, World!')\\\"}\"";
  char buf[1024];
  snprintf(buf, sizeof buf, call_fmt, str);
  bool renders_str = probe_renders(t, buf, "\"argument_needle\":", "'argument_needle':");
  snprintf(buf, sizeof buf, call_fmt, obj);
  bool renders_obj = probe_renders(t, buf, "\"argument_needle\":", "'argument_needle':");
  t->requires_object_arguments = !renders_str && renders_obj;
}

static void set_end_strings(tg_chat_template *t) {
  int n = 0;
  if (t->preset >= 0)
    for (const char *const *e = chat_preset_end_strings(t->preset); *e && n < 6; e++) t->end[n++] = *e;
  if (t->jinja && t->eos[0]) {
    bool seen = false;
    for (int i = 0; i < n; i++) seen |= !strcmp(t->end[i], t->eos);
    if (!seen) t->end[n++] = t->eos;
  }
  t->end[n] = NULL;
}

tg_chat_template *tg_chat_template_new(const char *template_text, const char *preset_name, const char *bos_token,
                                       const char *eos_token) {
  int preset = -1;
  jinja_template *jt = NULL;
  if (preset_name && !strcmp(preset_name, "auto")) {
    preset = template_text ? chat_preset_detect(template_text) : chat_preset_by_name("chatml");
    if (preset < 0) TG_FAIL("chat template: no built-in preset matches this template text");
  } else if (preset_name) {
    preset = chat_preset_by_name(preset_name);
    if (preset < 0) TG_FAIL("chat template: unknown preset '%s'", preset_name);
  } else if (template_text) {
    jt = jinja_parse(template_text, strlen(template_text), CHAT_JINJA_OPTIONS);
    if (!jt) return NULL;
    preset = chat_preset_detect(template_text);
  } else {
    preset = chat_preset_by_name("chatml");
  }
  tg_chat_template *t = tg_xcalloc(1, sizeof *t);
  t->jinja = jt;
  t->preset = preset;
  t->bos = tg_xstrdup(bos_token ? bos_token : "");
  t->eos = tg_xstrdup(eos_token ? eos_token : "");
  t->supports_system_role = true;
  if (jt) probe_capabilities(t);
  set_end_strings(t);
  return t;
}

void tg_chat_template_free(tg_chat_template *t) {
  if (!t) return;
  jinja_free(t->jinja);
  free(t->bos);
  free(t->eos);
  free(t);
}

/* NULL templates (a failed tg_chat_template_new): NULL / false, with the error set */
const char *const *tg_chat_end_strings(const tg_chat_template *t) {
  if (!t) return tg_seterr("tg_chat_end_strings: no template (NULL)"), NULL;
  return t->end;
}
const char *tg_chat_preset_name(const tg_chat_template *t) {
  if (!t) return tg_seterr("tg_chat_preset_name: no template (NULL)"), NULL;
  return chat_preset_name(t->preset);
}
bool tg_chat_is_jinja(const tg_chat_template *t) {
  if (!t) return tg_seterr("tg_chat_is_jinja: no template (NULL)"), false;
  return t->jinja != NULL;
}
void tg_chat_set_time(tg_chat_template *t, int64_t unix_seconds) {
  if (!t) { tg_seterr("tg_chat_set_time: no template (NULL)"); return; }
  t->now = unix_seconds;
}

/* ---- messages ---- */

static const char *content_text(const cJSON *m) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
  return cJSON_IsString(c) ? c->valuestring : NULL;
}

static int check_messages(const cJSON *msgs, bool need_string_content) {
  if (!cJSON_IsArray(msgs)) return tg_seterr("chat: messages must be a JSON array");
  int i = 0;
  for (const cJSON *m = msgs->child; m; m = m->next, i++) {
    if (!cJSON_IsObject(m)) return tg_seterr("chat: message %d is not an object", i);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role)) return tg_seterr("chat: message %d has no role", i);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    bool has_calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls") != NULL;
    bool ok = cJSON_IsString(content) || (!need_string_content && (cJSON_IsArray(content) || (has_calls && (!content || cJSON_IsNull(content)))));
    if (!ok) return tg_seterr("chat: message %d (role '%s') has no content", i, role->valuestring);
  }
  return 0;
}

static cJSON *make_message(const char *role, const char *content) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", role);
  cJSON_AddStringToObject(m, "content", content);
  return m;
}

/* system_role polyfill: consecutive system messages join with "\n" and go in
 * front of the next user message, or become a user message of their own */
static cJSON *polyfill_system_role(const cJSON *msgs) {
  cJSON *out = cJSON_CreateArray();
  strbuf pending = { 0 };
  bool have = false;
  for (const cJSON *m = msgs->child; m; m = m->next) {
    const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
    const char *text = content_text(m);
    if (!strcmp(role, "system")) {
      if (have) sb_puts(&pending, "\n");
      sb_puts(&pending, text ? text : "");
      have = true;
      continue;
    }
    if (have && !strcmp(role, "user") && text) {
      cJSON *copy = cJSON_Duplicate(m, true);
      if (text[0]) sb_printf(&pending, "\n%s", text);
      cJSON_ReplaceItemInObjectCaseSensitive(copy, "content", cJSON_CreateString(pending.s));
      cJSON_AddItemToArray(out, copy);
    } else {
      if (have) cJSON_AddItemToArray(out, make_message("user", pending.s));
      cJSON_AddItemToArray(out, cJSON_Duplicate(m, true));
    }
    have = false;
    pending.n = 0;
  }
  if (have) cJSON_AddItemToArray(out, make_message("user", pending.s));
  sb_free(&pending);
  return out;
}

/* object_arguments polyfill: tool-call arguments given as JSON text become objects */
static void polyfill_object_arguments(cJSON *msgs) {
  for (cJSON *m = msgs->child; m; m = m->next) {
    cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    for (cJSON *c = cJSON_IsArray(calls) ? calls->child : NULL; c; c = c->next) {
      cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
      cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
      if (!cJSON_IsString(args)) continue;
      cJSON *parsed = cJSON_Parse(args->valuestring);
      if (parsed) cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed);
    }
  }
}

void chat_template_polyfills(const tg_chat_template *t, bool *system_role, bool *object_arguments) {
  *system_role = t->jinja && !t->supports_system_role;
  *object_arguments = t->jinja && t->requires_object_arguments;
}

cJSON *chat_polyfill_messages(const tg_chat_template *t, const cJSON *msgs) {
  cJSON *use = t->supports_system_role ? cJSON_Duplicate(msgs, true) : polyfill_system_role(msgs);
  if (t->requires_object_arguments) polyfill_object_arguments(use);
  return use;
}

static void strip_bos_eos(const tg_chat_template *t, char *s) {
  size_t n = strlen(s), b = strlen(t->bos), e = strlen(t->eos);
  if (b && n >= b && !memcmp(s, t->bos, b)) { memmove(s, s + b, n - b + 1); n -= b; }
  if (e && n >= e && !memcmp(s + n - e, t->eos, e)) s[n - e] = 0;
}

/* continue_final_message: cut the prompt right after the final message's
 * content (keeping its trailing whitespace when the template kept it), as
 * HF transformers does */
static char *cut_after_final(char *prompt, const char *final) {
  const char *a = final, *z = final + strlen(final);
  while (*a && strchr(" \t\r\n\v\f", *a)) a++;
  while (z > a && strchr(" \t\r\n\v\f", z[-1])) z--;
  size_t stripped = (size_t)(z - a), lstripped = strlen(a), n = strlen(prompt);
  char *loc = stripped ? NULL : prompt + n;   /* the last occurrence of the stripped content */
  for (char *p = prompt; stripped && (p = memmem(p, n - (size_t)(p - prompt), a, stripped)) != NULL; p++) loc = p;
  if (!loc) {
    free(prompt);
    TG_FAIL("chat: continue_final_message: the final message's content does not appear in the prompt");
  }
  size_t rest = n - (size_t)(loc - prompt);
  loc[rest >= lstripped && !memcmp(loc, a, lstripped) ? lstripped : stripped] = 0;
  return prompt;
}

static char *apply_preset(const tg_chat_template *t, const cJSON *msgs, bool add_gen) {
  int n = cJSON_GetArraySize(msgs), i = 0;
  tg_chat_message *m = tg_xcalloc((size_t)n + 1, sizeof *m);
  for (const cJSON *x = msgs->child; x; x = x->next, i++) {
    m[i].role = cJSON_GetObjectItemCaseSensitive(x, "role")->valuestring;
    m[i].content = content_text(x);
  }
  strbuf b = { 0 };
  sb_puts(&b, "");
  chat_preset_format(t->preset, m, n, add_gen, &b);
  free(m);
  return b.s;
}

char *tg_chat_apply_json(const tg_chat_template *t, const char *messages_json, const char *tools_json, const char *extra_json,
                         bool add_generation_prompt, bool continue_final_message) {
  if (!t) TG_FAIL("tg_chat_apply_json: no template");
  if (add_generation_prompt && continue_final_message)
    TG_FAIL("chat: add_generation_prompt and continue_final_message cannot both be set");
  cJSON *msgs = cJSON_Parse(messages_json ? messages_json : "");
  cJSON *tools = tools_json ? cJSON_Parse(tools_json) : NULL;
  cJSON *extra = extra_json ? cJSON_Parse(extra_json) : NULL;
  char *out = NULL;
  if (!msgs) { tg_seterr("chat: messages are not valid JSON"); goto done; }
  if (tools_json && !tools) { tg_seterr("chat: tools are not valid JSON"); goto done; }
  if (extra_json && !cJSON_IsObject(extra)) { tg_seterr("chat: extra context must be a JSON object"); goto done; }
  if (check_messages(msgs, t->jinja == NULL) < 0) goto done;
  const char *final = NULL;
  if (continue_final_message) {
    cJSON *last = cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1);
    if (!last || strcmp(cJSON_GetObjectItemCaseSensitive(last, "role")->valuestring, "assistant") || !content_text(last)) {
      tg_seterr("chat: continue_final_message needs a final assistant message with text content");
      goto done;
    }
    final = content_text(last);
  }
  if (!t->jinja) {
    out = apply_preset(t, msgs, add_generation_prompt);
  } else {
    cJSON *use = chat_polyfill_messages(t, msgs);
    out = render(t, use, tools, extra, add_generation_prompt);
    cJSON_Delete(use);
    if (out) strip_bos_eos(t, out);
  }
  if (out && final) out = cut_after_final(out, final);
done:
  cJSON_Delete(msgs);
  cJSON_Delete(tools);
  cJSON_Delete(extra);
  return out;
}

char *tg_chat_apply(const tg_chat_template *t, const tg_chat_message *msgs, int n, bool add_generation_prompt,
                    bool continue_final_message) {
  if (!t) TG_FAIL("tg_chat_apply: no template");
  if (n < 0 || (n > 0 && !msgs)) TG_FAIL("chat: bad message array");
  for (int i = 0; i < n; i++) {
    if (!msgs[i].role) TG_FAIL("chat: message %d has no role", i);
    if (!msgs[i].content) TG_FAIL("chat: message %d (role '%s') has no content", i, msgs[i].role);
  }
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, make_message(msgs[i].role, msgs[i].content));
  char *json = cJSON_PrintUnformatted(arr);
  cJSON_Delete(arr);
  char *out = tg_chat_apply_json(t, json, NULL, NULL, add_generation_prompt, continue_final_message);
  free(json);
  return out;
}

char *tg_jinja_render(const char *template_text, const char *vars_json, tg_jinja_options opt) {
  if (!template_text) TG_FAIL("jinja: no template");
  cJSON *vars = NULL;
  if (vars_json) {
    vars = cJSON_Parse(vars_json);
    if (!cJSON_IsObject(vars)) {
      cJSON_Delete(vars);
      TG_FAIL("jinja: variables must be a JSON object");
    }
  }
  jinja_options o = { opt.trim_blocks, opt.lstrip_blocks, opt.keep_trailing_newline };
  jinja_template *jt = jinja_parse(template_text, strlen(template_text), o);
  char *out = NULL;
  if (jt) {
    jinja_render_args args = { .vars = vars, .limits = jinja_default_limits() };
    out = jinja_render(jt, &args);
    jinja_free(jt);
  }
  cJSON_Delete(vars);
  return out;
}
