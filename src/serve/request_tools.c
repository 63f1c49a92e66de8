/* request_tools.c: the chat request's tool and reasoning fields (see
 * request.h): tools, tool_choice, parallel_tool_calls, reasoning_format,
 * chat_template_kwargs, add_generation_prompt / continue_final_message, and
 * the tool fields of history messages. Shapes
 * follow OpenAI's API reference (chat/create) and llama-server. */
#include <stdio.h>
#include <string.h>
#include "serve/chat_msg.h"
#include "serve/request.h"
#include "util/util.h"

static int bad(serve_error *e, const char *param, const char *what) {
  return serve_error_set(e, 400, "invalid_value", param, "'%s' %s", param, what);
}

static const cJSON *field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* {"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}} */
static int check_tool(const cJSON *t, int i, serve_error *e) {
  char param[64];
  snprintf(param, sizeof param, "tools[%d]", i);
  const cJSON *type = field(t, "type"), *fn = field(t, "function");
  if (!cJSON_IsObject(t) || !cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsObject(fn))
    return bad(e, param, "must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
  const cJSON *name = field(fn, "name"), *params = field(fn, "parameters"), *desc = field(fn, "description");
  snprintf(param, sizeof param, "tools[%d].function.name", i);
  if (!cJSON_IsString(name) || !*name->valuestring) return bad(e, param, "must be a non-empty string");
  snprintf(param, sizeof param, "tools[%d].function.parameters", i);
  if (params && !cJSON_IsObject(params)) return bad(e, param, "must be a JSON Schema object");
  snprintf(param, sizeof param, "tools[%d].function.description", i);
  if (desc && !cJSON_IsString(desc)) return bad(e, param, "must be a string");
  return 0;
}

static bool has_tool(const cJSON *tools, const char *name) {
  const cJSON *t;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
    if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return true;
  }
  return false;
}

static int parse_tool_choice(serve_request *r, const cJSON *o, serve_error *e) {
  const cJSON *c = field(o, "tool_choice");
  r->tool_choice = SERVE_TOOL_AUTO;
  if (!c) return 0;
  if (cJSON_IsString(c)) {
    if (!strcmp(c->valuestring, "auto")) r->tool_choice = SERVE_TOOL_AUTO;
    else if (!strcmp(c->valuestring, "none")) r->tool_choice = SERVE_TOOL_NONE;
    else if (!strcmp(c->valuestring, "required")) r->tool_choice = SERVE_TOOL_REQUIRED;
    else return bad(e, "tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  } else {
    const cJSON *type = field(c, "type"), *name = field(field(c, "function"), "name");
    if (!cJSON_IsObject(c) || !cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
      return bad(e, "tool_choice", "must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    if (!r->tools || !has_tool(r->tools, name->valuestring))
      return serve_error_set(e, 400, "invalid_value", "tool_choice", "'tool_choice' names the function '%.100s', which is not in 'tools'",
                             name->valuestring);
    r->tool_choice = SERVE_TOOL_FUNCTION;
    r->tool_name = tg_xstrdup(name->valuestring);
  }
  if (r->tool_choice == SERVE_TOOL_REQUIRED && !r->tools)
    return bad(e, "tool_choice", "is \"required\", but the request has no 'tools'");
  return 0;
}

int serve_request_parse_tools(serve_request *r, const cJSON *o, serve_error *e) {
  const cJSON *tools = field(o, "tools");
  if (tools) {
    if (!cJSON_IsArray(tools)) return bad(e, "tools", "must be an array of tools");
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) if (check_tool(t, i++, e)) return -1;
    if (i) r->tools = cJSON_Duplicate(tools, true);
  }
  if (parse_tool_choice(r, o, e)) return -1;
  r->parallel_tool_calls = true;
  const cJSON *par = field(o, "parallel_tool_calls");
  if (par && !cJSON_IsBool(par)) return bad(e, "parallel_tool_calls", "must be true or false");
  if (par) r->parallel_tool_calls = cJSON_IsTrue(par);
  const cJSON *rf = field(o, "reasoning_format");
  r->reasoning_format = SERVE_REASONING_AUTO;
  if (rf && (!cJSON_IsString(rf) || (r->reasoning_format = serve_reasoning_format_parse(rf->valuestring)) < 0))
    return bad(e, "reasoning_format", "must be \"auto\", \"none\", \"deepseek\" or \"deepseek-legacy\"");
  const cJSON *kw = field(o, "chat_template_kwargs");
  if (kw && !cJSON_IsObject(kw)) return bad(e, "chat_template_kwargs", "must be an object");
  if (kw) r->template_kwargs = cJSON_Duplicate(kw, true);
  /* a last assistant turn is a prefill, unless it called tools (history)
   * or continue_final_message says otherwise (vLLM's and transformers'
   * apply_chat_template flags) */
  const cJSON *last = cJSON_GetArrayItem(r->messages, cJSON_GetArraySize(r->messages) - 1);
  if (r->continue_final && cJSON_GetObjectItemCaseSensitive(last, "tool_calls")) r->continue_final = false;
  const cJSON *cf = field(o, "continue_final_message"), *ag = field(o, "add_generation_prompt");
  if (cf && !cJSON_IsBool(cf)) return bad(e, "continue_final_message", "must be true or false");
  if (ag && !cJSON_IsBool(ag)) return bad(e, "add_generation_prompt", "must be true or false");
  if (cf && cJSON_IsTrue(cf) && !r->continue_final)
    return bad(e, "continue_final_message", "needs a last message from the assistant (without tool_calls)");
  if (cf) r->continue_final = cJSON_IsTrue(cf);
  r->add_generation_prompt = ag ? cJSON_IsTrue(ag) : !r->continue_final;
  if (r->add_generation_prompt && r->continue_final)
    return bad(e, "add_generation_prompt", "cannot be true when the final message is continued");
  return 0;
}

/* One of an assistant message's tool_calls: {"id"?, "type": "function",
 * "function": {"name", "arguments": JSON text (or an object)}}. */
static int check_call(const cJSON *c, int i, int k, serve_error *e) {
  char param[96];
  snprintf(param, sizeof param, "messages[%d].tool_calls[%d]", i, k);
  const cJSON *fn = field(c, "function"), *id = field(c, "id"), *type = field(c, "type");
  if (!cJSON_IsObject(c) || !cJSON_IsObject(fn) || (id && !cJSON_IsString(id)) ||
      (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0)))
    return bad(e, param, "must be {\"id\": ..., \"type\": \"function\", \"function\": {\"name\": ..., \"arguments\": ...}}");
  const cJSON *name = field(fn, "name"), *args = field(fn, "arguments");
  snprintf(param, sizeof param, "messages[%d].tool_calls[%d].function.name", i, k);
  if (!cJSON_IsString(name)) return bad(e, param, "must be a string");
  snprintf(param, sizeof param, "messages[%d].tool_calls[%d].function.arguments", i, k);
  if (args && !cJSON_IsString(args) && !cJSON_IsObject(args)) return bad(e, param, "must be a string of JSON");
  return 0;
}

int serve_message_tool_fields(const cJSON *m, int i, cJSON *flat, serve_error *e) {
  char param[96];
  const char *role = cJSON_GetObjectItemCaseSensitive(flat, "role")->valuestring;
  const cJSON *calls = field(m, "tool_calls");
  if (calls) {
    snprintf(param, sizeof param, "messages[%d].tool_calls", i);
    if (strcmp(role, "assistant") != 0) return bad(e, param, "is only for assistant messages");
    if (!cJSON_IsArray(calls)) return bad(e, param, "must be an array");
    int k = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, calls) if (check_call(c, i, k++, e)) return -1;
    if (k) cJSON_AddItemToObject(flat, "tool_calls", cJSON_Duplicate(calls, true));
  }
  static const char *const strings[] = { "tool_call_id", "name" };
  for (int s = 0; s < 2; s++) {
    const cJSON *v = field(m, strings[s]);
    if (!v) continue;
    snprintf(param, sizeof param, "messages[%d].%s", i, strings[s]);
    if (!cJSON_IsString(v)) return bad(e, param, "must be a string");
    cJSON_AddStringToObject(flat, strings[s], v->valuestring);
  }
  return 0;
}
