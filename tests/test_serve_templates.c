/* test_serve_templates.c: a chat request with tools, as tg serve receives
 * it, through real chat templates. The 14 tool-use conversations of the
 * shared chat test data (minja's tool_use context: assistant tool_calls,
 * tool results, the tools list; expected prompts from llama.cpp/minja, see
 * /work/shared/testdata/chat/README.md) go through the server's request
 * parser and prompt builder (serve_request_parse, serve_chat_prompt: what
 * /apply-template and every chat completion run) with a backend that
 * renders with tg's chat layer, and must give the expected prompt exactly. */
#include "test.h"
#include "serve/jobs.h"
#include "serve/request.h"
#include "util/util.h"

#define CHAT_DIR "../../shared/testdata/chat"
#define CASES_NOW 1721952000   /* the clock of the expected prompts (as test_chat.c) */

static char *tmpl_render(void *ctx, const cJSON *messages, const cJSON *tools, const cJSON *kwargs, bool add_gen,
                         bool continue_final) {
  char *m = cJSON_PrintUnformatted(messages), *t = tools ? cJSON_PrintUnformatted(tools) : NULL;
  char *k = kwargs ? cJSON_PrintUnformatted(kwargs) : NULL;
  char *out = tg_chat_apply_json(ctx, m, t, k, add_gen, continue_final);
  free(m);
  free(t);
  free(k);
  return out;
}

static char *read_all(const char *path) {
  size_t n;
  char *raw = test_read_file(path, &n);
  if (!raw) return NULL;
  char *s = tg_xmalloc(n + 1);
  memcpy(s, raw, n);
  s[n] = 0;
  free(raw);
  return s;
}

TEST(serve_templates_tool_use) {
  char *all = read_all(CHAT_DIR "/cases.jsonl");
  if (!all) SKIP("no " CHAT_DIR " (shared test data)");
  int n = 0, pass = 0;
  for (char *line = all, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = 0;
    cJSON *c = cJSON_Parse(line);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(c, "tools");
    if (!tools || cJSON_GetObjectItemCaseSensitive(c, "expected_error")) { cJSON_Delete(c); continue; }
    const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
    char path[512];
    snprintf(path, sizeof path, CHAT_DIR "/%s", cJSON_GetObjectItemCaseSensitive(c, "template_file")->valuestring);
    char *text = read_all(path);
    tg_chat_template *t = text ? tg_chat_template_new(text, NULL, cJSON_GetObjectItemCaseSensitive(c, "bos_token")->valuestring,
                                                      cJSON_GetObjectItemCaseSensitive(c, "eos_token")->valuestring) : NULL;
    n++;
    CHECK_MSG(t != NULL, "%s: %s", name, tg_error());
    if (t) {
      tg_chat_set_time(t, CASES_NOW);
      /* the request a client would send */
      cJSON *body = cJSON_CreateObject();
      cJSON_AddItemToObject(body, "messages", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(c, "messages"), true));
      cJSON_AddItemToObject(body, "tools", cJSON_Duplicate(tools, true));
      const cJSON *extra = cJSON_GetObjectItemCaseSensitive(c, "extra_context");
      if (extra) cJSON_AddItemToObject(body, "chat_template_kwargs", cJSON_Duplicate(extra, true));
      cJSON_AddBoolToObject(body, "add_generation_prompt", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "add_generation_prompt")));
      cJSON_AddBoolToObject(body, "continue_final_message", false);
      char *json = cJSON_PrintUnformatted(body);
      cJSON_Delete(body);
      serve_request r;
      serve_error e;
      if (serve_request_parse(&r, true, json, strlen(json), &e)) {
        test_fail(__FILE__, __LINE__, "%s: the request is refused: %s", name, e.message);
      } else {
        serve_backend be = { .ctx = t, .model_id = "t", .n_ctx = 4096, .chat_template = text, .render_chat = tmpl_render };
        serve_chat_syntax syn;
        char *prefill = NULL;
        char *prompt = serve_chat_prompt(&be, serve_tool_format_detect(text), &r, &syn, &prefill);
        const char *want = cJSON_GetObjectItemCaseSensitive(c, "expected")->valuestring;
        bool ok = prompt && !strcmp(prompt, want);
        CHECK_MSG(ok, "%s: prompt differs:\n--- got\n%s\n--- want\n%s", name, prompt ? prompt : tg_error(), want);
        CHECK(syn.parse_tools && !prefill);
        pass += ok;
        free(prompt);
        serve_request_free(&r);
      }
      free(json);
      tg_chat_template_free(t);
    }
    free(text);
    cJSON_Delete(c);
  }
  free(all);
  printf("  %d/%d tool-use conversations render as expected\n", pass, n);
  CHECK_MSG(n >= 14, "only %d tool-use cases found", n);
}

/* tool_choice "required" / a named function on a real template: the prompt
 * is the template's, then the opening of a call in its format. */
TEST(serve_templates_forced_call) {
  char *text = read_all(CHAT_DIR "/templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  if (!text) SKIP("no " CHAT_DIR " (shared test data)");
  tg_chat_template *t = tg_chat_template_new(text, NULL, "", "<|im_end|>");
  CHECK_OK(t);
  serve_backend be = { .ctx = t, .model_id = "t", .n_ctx = 4096, .chat_template = text, .render_chat = tmpl_render };
  const char *body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}],\"tools\":[{\"type\":\"function\","
                     "\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}],"
                     "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}";
  serve_request r;
  serve_error e;
  CHECK_MSG(serve_request_parse(&r, true, body, strlen(body), &e) == 0, "%s", e.message);
  serve_chat_syntax syn;
  char *prefill = NULL;
  char *prompt = serve_chat_prompt(&be, serve_tool_format_detect(text), &r, &syn, &prefill);
  const char *tail = "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  CHECK_MSG(prompt && strlen(prompt) > strlen(tail) && !strcmp(prompt + strlen(prompt) - strlen(tail), tail), "%s", prompt ? prompt : tg_error());
  CHECK(prompt && strstr(prompt, "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""));
  CHECK(prefill && !strcmp(prefill, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "));
  /* the model's continuation completes the call */
  serve_chat_msg m;
  strbuf out = { 0 };
  sb_printf(&out, "%s{\"city\": \"Paris\"}}\n</tool_call>", prefill);
  serve_chat_parse(&syn, out.s, out.n, true, &m);
  CHECK(m.n_calls == 1 && !strcmp(m.calls[0].name, "get_weather") && !strcmp(m.calls[0].arguments, "{\"city\":\"Paris\"}"));
  serve_chat_msg_free(&m);
  sb_free(&out);
  free(prompt);
  free(prefill);
  serve_request_free(&r);
  tg_chat_template_free(t);
  free(text);
}
