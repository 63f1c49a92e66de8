/* test_serve.c: the OpenAI-compatible server (src/serve) over a fake backend,
 * driven by curl and by the official openai Python client. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test.h"
#include "serve/request.h"
#include "serve/serve.h"
#include "serve/text_filter.h"
#include "util/util.h"

/* ---------------------------------------------------------------- the fake backend
 * Tokens are the prompt's bytes. Generation emits one word per token, then an
 * end token after the tenth word: "Hello world one two ... eight". A prompt
 * holding "forever" never ends (words " w"); "slow" makes each token take
 * 20 ms instead of 2 (a scripted reply's, below, instead of none); "emoji" emits a 4-byte character split over two tokens. */
#define FAKE_N_CTX 512
static const char *fake_words[] = { "Hello", " world", " one", " two", " three",
                                    " four", " five", " six", " seven", " eight" };
#define FAKE_N_WORDS 10
#define FAKE_TEXT "Hello world one two three four five six seven eight"

typedef struct {
  atomic_int running, max_running;   /* generations in flight, at most */
  atomic_int generations, last_n_out;
  atomic_bool last_stopped_by_emit;
  pthread_mutex_t mu;
  char last_prompt[FAKE_N_CTX * 2];
  char last_grammar[4096];           /* the last generation's serve_sampling.grammar ("" for none) */
} fake_ctx;

static int bytes_to_tokens(const char *s, int **tokens) {
  int n = (int)strlen(s);
  *tokens = malloc((size_t)(n ? n : 1) * sizeof(int));
  for (int i = 0; i < n; i++) (*tokens)[i] = (unsigned char)s[i];
  return n;
}

static int fake_tokenize_text(void *ctx, const char *prompt, bool add_special, bool parse_special, int **tokens) {
  fake_ctx *f = ctx;
  pthread_mutex_lock(&f->mu);
  snprintf(f->last_prompt, sizeof f->last_prompt, "%s", prompt);
  pthread_mutex_unlock(&f->mu);
  return bytes_to_tokens(prompt, tokens);
}

/* The "template": "[tools: N]\n" when there are tools, "role: content\n"
 * per message (a tool call as "call NAME ARGS", a tool result as
 * "tool[ID]: content"), then "assistant:" unless the last (assistant)
 * message is continued; "think" in the last message opens "<think>". */
static char *fake_render_chat(void *ctx, const cJSON *messages, const cJSON *tools, const cJSON *kwargs, bool add_gen,
                              bool continue_final) {
  strbuf b = { 0 };
  sb_puts(&b, "");
  if (tools) sb_printf(&b, "[tools: %d]\n", cJSON_GetArraySize(tools));
  const cJSON *m;
  int i = 0, n = cJSON_GetArraySize(messages);
  const char *last = "";
  cJSON_ArrayForEach(m, messages) {
    const char *role = cJSON_GetObjectItem(m, "role")->valuestring, *content = cJSON_GetObjectItem(m, "content")->valuestring;
    if (strstr(content, "BADTEMPLATE")) { sb_free(&b); tg_seterr("fake template: cannot render"); return NULL; }
    const cJSON *id = cJSON_GetObjectItem(m, "tool_call_id"), *calls = cJSON_GetObjectItem(m, "tool_calls"), *c;
    if (id) sb_printf(&b, "%s[%s]", role, id->valuestring);
    else sb_puts(&b, role);
    sb_printf(&b, continue_final && ++i == n ? ": %s" : ": %s\n", content);
    cJSON_ArrayForEach(c, calls) {
      const cJSON *fn = cJSON_GetObjectItem(c, "function"), *args = cJSON_GetObjectItem(fn, "arguments");
      sb_printf(&b, "call %s %s\n", cJSON_GetObjectItem(fn, "name")->valuestring, cJSON_IsString(args) ? args->valuestring : "{}");
    }
    last = content;
  }
  if (add_gen) sb_puts(&b, strstr(last, "think") ? "assistant:<think>" : "assistant:");
  return b.s;
}

static char *fake_detokenize(void *ctx, const int *tokens, int n) {
  char *s = malloc((size_t)n + 1);
  for (int i = 0; i < n; i++) {
    if (tokens[i] < 1 || tokens[i] > 255) { free(s); tg_seterr("token %d is not a byte", tokens[i]); return NULL; }
    s[i] = (char)tokens[i];
  }
  s[n] = 0;
  return s;
}

/* The embedding of a prompt: (count of bytes < 'n', count of the others,
 * bytes, 3), unnormalized. */
#define FAKE_N_EMBD 4
static int fake_embed(void *ctx, const int *tokens, int n, float *out) {
  out[0] = out[1] = 0;
  for (int i = 0; i < n; i++) out[tokens[i] < 'n' ? 0 : 1] += 1;
  out[2] = (float)n;
  out[3] = 3;
  return 0;
}

/* Scripted replies for tool calls and reasoning (emitted 3 bytes a token):
 * after a forced call's opening (tool_choice required / named), the rest of
 * the call; "calltool": content then a Hermes call; "badtool": a malformed
 * call; an opened <think>: reasoning, then the answer. */
static const char *fake_script(const char *prompt) {
  size_t n = strlen(prompt);
  static const char *const ends[][2] = {
    { "{\"name\": ", "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>" },
    { "\"arguments\": ", "{\"city\": \"Paris\"}}\n</tool_call>" },
  };
  for (int i = 0; i < 2; i++)
    if (n >= strlen(ends[i][0]) && !strcmp(prompt + n - strlen(ends[i][0]), ends[i][0])) return ends[i][1];
  if (strstr(prompt, "calltool"))
    return "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
  if (strstr(prompt, "badtool")) return "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>";
  if (strstr(prompt, "<think>")) return "I am thinking</think>The answer.";
  return NULL;
}

static int fake_generate(void *ctx, const int *prompt, int n_prompt, const serve_sampling *s, int max_tokens,
                         serve_emit_fn emit, void *u, int *n_out, bool *hit_eos) {
  fake_ctx *f = ctx;
  int now = atomic_fetch_add(&f->running, 1) + 1;
  if (now > atomic_load(&f->max_running)) atomic_store(&f->max_running, now);
  char text[FAKE_N_CTX + 1];
  for (int i = 0; i < n_prompt && i < FAKE_N_CTX; i++) text[i] = (char)prompt[i];
  text[n_prompt < FAKE_N_CTX ? n_prompt : FAKE_N_CTX] = 0;
  bool forever = strstr(text, "forever"), slow = strstr(text, "slow"), emoji = strstr(text, "emoji");
  *n_out = 0;
  *hit_eos = false;
  bool stopped = false;
  pthread_mutex_lock(&f->mu);
  snprintf(f->last_grammar, sizeof f->last_grammar, "%s", s->grammar ? s->grammar : "");
  pthread_mutex_unlock(&f->mu);
  const char *script = fake_script(text);
  for (size_t at = 0, len = script ? strlen(script) : 0; script && !stopped; at += 3) {
    if (*n_out == max_tokens) break;
    ++*n_out;
    if (at >= len) { *hit_eos = true; break; }
    if (slow) usleep(20000);
    stopped = !emit(u, script + at, len - at < 3 ? len - at : 3);
  }
  if (script) max_tokens = 0;
  for (int i = 0; i < max_tokens; i++) {
    usleep(slow || forever ? 20000 : 2000);
    ++*n_out;
    if (!forever && i == FAKE_N_WORDS) { *hit_eos = true; break; }
    const char *w = forever ? " w" : fake_words[i];
    if (emoji && i == 2) w = " \xF0\x9F";
    if (emoji && i == 3) w = "\x98\x80";
    if (!emit(u, w, strlen(w))) { stopped = true; break; }
  }
  atomic_store(&f->last_stopped_by_emit, stopped);
  atomic_store(&f->last_n_out, *n_out);
  atomic_fetch_add(&f->generations, 1);
  atomic_fetch_sub(&f->running, 1);
  return 0;
}

static fake_ctx fake;
static serve_backend fake_backend = { .ctx = &fake, .model_id = "fake-model", .n_ctx = FAKE_N_CTX,
                                      .render_chat = fake_render_chat, .tokenize_text = fake_tokenize_text,
                                      .generate = fake_generate, .detokenize = fake_detokenize, .embed = fake_embed,
                                      .n_embd = FAKE_N_EMBD };

static serve_server *start_server(void) {
  atomic_store(&fake.running, 0);
  atomic_store(&fake.max_running, 0);
  atomic_store(&fake.generations, 0);
  static bool init;
  if (!init) { pthread_mutex_init(&fake.mu, NULL); init = true; }
  serve_options opt = { .host = "127.0.0.1", .port = 0, .max_body = 1 << 20, .quiet = true };
  serve_server *s = serve_start(&opt, &fake_backend);
  CHECK_MSG(s != NULL, "serve_start: %s", tg_error());
  return s;
}

/* ---------------------------------------------------------------- clients */

static bool have_curl(void) { return system("curl --version >/dev/null 2>&1") == 0; }
#define NEED_CURL() do { if (!have_curl()) SKIP("curl is not installed (apt-get install curl)"); } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Starts curl (method, path, JSON body or NULL, extra options); the reply
 * comes back from curl_finish. The body travels through a temporary file. */
typedef struct { FILE *p; char file[64]; } curl_call;

static curl_call curl_start(int port, const char *method, const char *path, const char *body, const char *extra) {
  curl_call c = { 0 };
  char data[128] = "";
  if (body) {
    snprintf(c.file, sizeof c.file, "/tmp/tg_serve_test_XXXXXX");
    int fd = mkstemp(c.file);
    if (fd >= 0) {
      if (write(fd, body, strlen(body)) != (ssize_t)strlen(body)) perror("write");
      close(fd);
    }
    snprintf(data, sizeof data, "-H 'Content-Type: application/json' --data-binary @%s", c.file);
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "curl -sS -N --max-time 20 -w '\\n%%{http_code}' -X %s %s %s 'http://127.0.0.1:%d%s' 2>/dev/null",
           method, data, extra ? extra : "", port, path);
  c.p = popen(cmd, "r");
  return c;
}

/* The reply body (malloc'd); *status: the HTTP status, 0 when none came. */
static char *curl_finish(curl_call c, int *status) {
  strbuf b = { 0 };
  sb_puts(&b, "");
  char buf[4096];
  size_t n;
  while (c.p && (n = fread(buf, 1, sizeof buf, c.p)) > 0) sb_append(&b, buf, n);
  if (c.p) pclose(c.p);
  if (c.file[0]) unlink(c.file);
  char *nl = strrchr(b.s, '\n');
  *status = nl ? atoi(nl + 1) : 0;
  if (nl) *nl = 0;
  return b.s;
}

static char *http(int port, const char *method, const char *path, const char *body, int *status) {
  return curl_finish(curl_start(port, method, path, body, NULL), status);
}

/* Looks up a dotted path such as "choices.0.message.content" ("" = root). */
static const cJSON *jget(const cJSON *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); o && k; k = strtok_r(NULL, ".", &save))
    o = *k >= '0' && *k <= '9' ? cJSON_GetArrayItem(o, atoi(k)) : cJSON_GetObjectItemCaseSensitive(o, k);
  return o;
}
static const char *jstr(const cJSON *o, const char *path) {
  const cJSON *v = jget(o, path);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}
static double jnum(const cJSON *o, const char *path) {
  const cJSON *v = jget(o, path);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}
#define CHECK_STR(got, want) do { const char *g_ = (got), *w_ = (want); \
  CHECK_MSG(g_ && strcmp(g_, w_) == 0, "%s: got \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_); } while (0)

/* A streamed reply, checked and summarized: SSE framing ("data: ...\n\n"
 * events ending with [DONE]), the text of all deltas joined, the finish
 * reason, and the usage chunk's total (or -1). */
typedef struct { strbuf text; char finish[16]; int n_events, total_tokens; bool first_has_role, framing_ok, done; } sse_summary;

static sse_summary parse_sse(const char *body, bool chat) {
  sse_summary r = { .total_tokens = -1, .framing_ok = true };
  sb_puts(&r.text, "");
  const char *p = body;
  while (*p) {
    const char *end = strstr(p, "\n\n");
    if (strncmp(p, "data: ", 6) != 0 || !end || r.done) { r.framing_ok = false; break; }
    char *ev = strndup(p + 6, (size_t)(end - p - 6));
    p = end + 2;
    if (strcmp(ev, "[DONE]") == 0) { r.done = true; free(ev); continue; }
    cJSON *j = cJSON_Parse(ev);
    free(ev);
    if (!j) { r.framing_ok = false; break; }
    if (r.n_events++ == 0 && chat) r.first_has_role = jstr(j, "choices.0.delta.role") != NULL;
    const char *t = jstr(j, chat ? "choices.0.delta.content" : "choices.0.text");
    if (t) sb_puts(&r.text, t);
    const char *f = jstr(j, "choices.0.finish_reason");
    if (f) snprintf(r.finish, sizeof r.finish, "%s", f);
    if (jget(j, "usage.total_tokens")) r.total_tokens = (int)jnum(j, "usage.total_tokens");
    cJSON_Delete(j);
  }
  return r;
}

/* ---------------------------------------------------------------- tests */

/* The stop-string and UTF-8 hold-back logic on its own. */
TEST(serve_text_filter) {
  char *stops[] = { "abc", "bd" };
  serve_text t = { .stop = stops, .n_stop = 2 };
  CHECK(serve_text_push(&t, "xa", 2));
  CHECK_EQ_INT(t.safe, 1);                 /* "a" may start "abc" */
  CHECK(serve_text_push(&t, "b", 1));
  CHECK_EQ_INT(t.safe, 1);                 /* "ab" still may, and "b" may start "bd" */
  CHECK(!serve_text_push(&t, "d!", 2));    /* "bd" matched */
  CHECK(t.stopped);
  CHECK_STR(t.text.s, "xa");
  CHECK(!serve_text_push(&t, "more", 4));
  serve_text_finish(&t);
  CHECK_STR(t.text.s, "xa");
  CHECK_EQ_INT(t.safe, 2);
  serve_text_free(&t);

  t = (serve_text){ .stop = stops, .n_stop = 2 };
  CHECK(serve_text_push(&t, "xab", 3));
  CHECK(serve_text_push(&t, "x", 1));
  CHECK_EQ_INT(t.safe, 4);                 /* the prefix did not grow into a stop string */
  serve_text_free(&t);

  t = (serve_text){ 0 };
  CHECK(serve_text_push(&t, "a\xC3", 2));
  CHECK_EQ_INT(t.safe, 1);                 /* half of "é" waits */
  CHECK(serve_text_push(&t, "\xA9\xE2\x82", 3));
  CHECK_EQ_INT(t.safe, 3);
  serve_text_finish(&t);                   /* a character never finished becomes U+FFFD */
  CHECK_STR(t.text.s, "a\xC3\xA9\xEF\xBF\xBD");
  CHECK_EQ_INT(t.safe, t.text.n);
  serve_text_free(&t);
}

TEST(serve_models) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "GET", "/v1/models", NULL, &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "object"), "list");
  CHECK_STR(jstr(j, "data.0.id"), "fake-model");
  CHECK_STR(jstr(j, "data.0.object"), "model");
  cJSON_Delete(j);
  free(body);
  body = http(serve_port(s), "GET", "/models", NULL, &st);
  CHECK_EQ_INT(st, 200);
  free(body);
  body = http(serve_port(s), "GET", "/v1/models/fake-model", NULL, &st);
  j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "id"), "fake-model");
  cJSON_Delete(j);
  free(body);
  body = http(serve_port(s), "GET", "/v1/models/other", NULL, &st);
  CHECK_EQ_INT(st, 404);
  free(body);
  body = http(serve_port(s), "GET", "/health", NULL, &st);
  CHECK_EQ_INT(st, 200);
  free(body);
  serve_stop(s);
}

TEST(serve_chat) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/chat/completions",
                    "{\"model\":\"x\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}],\"temperature\":0}", &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(j != NULL, "not JSON: %s", body);
  CHECK_STR(jstr(j, "object"), "chat.completion");
  CHECK_STR(jstr(j, "model"), "fake-model");
  CHECK_MSG(jstr(j, "id") && strncmp(jstr(j, "id"), "chatcmpl-", 9) == 0, "id: %s", body);
  CHECK_STR(jstr(j, "choices.0.message.role"), "assistant");
  CHECK_STR(jstr(j, "choices.0.message.content"), FAKE_TEXT);
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "stop");
  const char *prompt = "system: be brief\nuser: hi\nassistant:";
  CHECK_STR(fake.last_prompt, prompt);
  CHECK_EQ_INT(jnum(j, "usage.prompt_tokens"), strlen(prompt));
  CHECK_EQ_INT(jnum(j, "usage.completion_tokens"), FAKE_N_WORDS + 1);   /* the end token counts */
  CHECK_EQ_INT(jnum(j, "usage.total_tokens"), strlen(prompt) + FAKE_N_WORDS + 1);
  cJSON_Delete(j);
  free(body);
  serve_stop(s);
}

TEST(serve_chat_prefill) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"Sure:\"}]}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(fake.last_prompt, "user: hi\nassistant: Sure:");   /* no new assistant turn: continued */
  free(body);
  serve_stop(s);
}

TEST(serve_chat_stream) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true,"
                    "\"stream_options\":{\"include_usage\":true}}", &st);
  CHECK_EQ_INT(st, 200);
  sse_summary r = parse_sse(body, true);
  CHECK_MSG(r.framing_ok && r.done, "bad SSE framing or no [DONE]:\n%s", body);
  CHECK(r.first_has_role);
  CHECK_STR(r.text.s, FAKE_TEXT);
  CHECK_STR(r.finish, "stop");
  CHECK_EQ_INT(r.total_tokens, (int)strlen("user: hi\nassistant:") + FAKE_N_WORDS + 1);
  CHECK_MSG(r.n_events >= FAKE_N_WORDS + 2, "%d events: the text should arrive piece by piece", r.n_events);
  sb_free(&r.text);
  free(body);
  serve_stop(s);
}

TEST(serve_completions) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":3,\"seed\":7}", &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "object"), "text_completion");
  CHECK_STR(jstr(j, "choices.0.text"), "Hello world one");
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "length");
  CHECK_EQ_INT(jnum(j, "usage.prompt_tokens"), 4);
  CHECK_EQ_INT(jnum(j, "usage.completion_tokens"), 3);
  CHECK_STR(fake.last_prompt, "Once");
  cJSON_Delete(j);
  free(body);
  body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"Once\",\"stream\":true}", &st);
  CHECK_EQ_INT(st, 200);
  sse_summary r = parse_sse(body, false);
  CHECK_MSG(r.framing_ok && r.done, "bad SSE framing or no [DONE]:\n%s", body);
  CHECK_STR(r.text.s, FAKE_TEXT);
  CHECK_STR(r.finish, "stop");
  CHECK_EQ_INT(r.total_tokens, -1);   /* no usage chunk unless asked for */
  sb_free(&r.text);
  free(body);
  serve_stop(s);
}

TEST(serve_max_tokens_length) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":4}", &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "choices.0.message.content"), "Hello world one two");
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "length");
  CHECK_EQ_INT(jnum(j, "usage.completion_tokens"), 4);
  cJSON_Delete(j);
  free(body);
  serve_stop(s);
}

TEST(serve_stop_strings) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  /* "thr" arrives in " three": the text ends before it, finish_reason "stop" */
  char *body = http(serve_port(s), "POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stop\":[\"zzz\",\"o thr\"]}", &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "choices.0.message.content"), "Hello world one tw");
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "stop");
  CHECK_MSG(jnum(j, "usage.completion_tokens") == 5, "generation should stop at the stop string: %s", body);
  cJSON_Delete(j);
  free(body);
  /* streamed: the held-back "o" (which could start "o thr") must never be sent */
  body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"x\",\"stream\":true,\"stop\":\"o thr\"}", &st);
  sse_summary r = parse_sse(body, false);
  CHECK_MSG(r.framing_ok && r.done, "bad SSE:\n%s", body);
  CHECK_STR(r.text.s, "Hello world one tw");
  CHECK_STR(r.finish, "stop");
  sb_free(&r.text);
  free(body);
  /* a prefix of a stop string that never completes is released at the end */
  body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"x\",\"stream\":true,\"stop\":\"eight!\"}", &st);
  r = parse_sse(body, false);
  CHECK_STR(r.text.s, FAKE_TEXT);
  sb_free(&r.text);
  free(body);
  serve_stop(s);
}

TEST(serve_utf8_split) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/completions",
                    "{\"prompt\":\"emoji\",\"stream\":true,\"max_tokens\":5}", &st);
  sse_summary r = parse_sse(body, false);
  CHECK_MSG(r.framing_ok && r.done, "bad SSE:\n%s", body);
  CHECK_STR(r.text.s, "Hello world \xF0\x9F\x98\x80 three");   /* never half a character per chunk */
  sb_free(&r.text);
  free(body);
  serve_stop(s);
}

TEST(serve_errors) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int port = serve_port(s), st;
  struct { const char *method, *path, *body; int status; const char *code, *param; } cases[] = {
    { "POST", "/v1/chat/completions", "{\"messages\": [", 400, "invalid_json", NULL },
    { "POST", "/v1/chat/completions", "{}", 400, "missing_field", "messages" },
    { "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}", 400, "invalid_value", "messages[0].role" },
    { "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":\"hot\"}", 400, "invalid_value", "temperature" },
    { "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}", 400, "invalid_value", "max_tokens" },
    { "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"BADTEMPLATE\"}]}", 400, "invalid_prompt", "messages" },
    { "POST", "/v1/completions", "{\"prompt\":7}", 400, "invalid_value", "prompt" },
    { "POST", "/v1/completions", "{\"prompt\":\"x\",\"stop\":[1]}", 400, "invalid_value", "stop" },
    { "GET", "/v1/nothing", NULL, 404, "not_found", NULL },
    { "GET", "/v1/chat/completions", NULL, 405, "method_not_allowed", NULL },
    { "POST", "/v1/models", "{}", 405, "method_not_allowed", NULL },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *body = http(port, cases[i].method, cases[i].path, cases[i].body, &st);
    cJSON *j = cJSON_Parse(body);
    CHECK_MSG(st == cases[i].status, "case %zu: status %d, want %d: %s", i, st, cases[i].status, body);
    CHECK_MSG(jstr(j, "error.message") && jstr(j, "error.type"), "case %zu: not an OpenAI error: %s", i, body);
    CHECK_MSG(jstr(j, "error.code") && strcmp(jstr(j, "error.code"), cases[i].code) == 0, "case %zu: code: %s", i, body);
    if (cases[i].param) CHECK_MSG(jstr(j, "error.param") && strcmp(jstr(j, "error.param"), cases[i].param) == 0,
                                  "case %zu: param: %s", i, body);
    cJSON_Delete(j);
    free(body);
  }
  /* over the body cap (1 MiB in these tests): 413 */
  char *big = malloc((2 << 20) + 64);
  strcpy(big, "{\"prompt\":\"");
  memset(big + 11, 'a', 2 << 20);
  strcpy(big + 11 + (2 << 20), "\"}");
  char *body = http(port, "POST", "/v1/completions", big, &st);
  CHECK_EQ_INT(st, 413);
  free(body);
  body = curl_finish(curl_start(port, "POST", "/v1/completions", big, "-H 'Transfer-Encoding: chunked'"), &st);
  CHECK_EQ_INT(st, 413);   /* no Content-Length: found out while reading */
  free(body);
  free(big);
  /* CORS preflight */
  body = curl_finish(curl_start(port, "OPTIONS", "/v1/chat/completions", NULL, "-i"), &st);
  CHECK_EQ_INT(st, 204);
  CHECK_MSG(strcasestr(body, "access-control-allow-origin: *") != NULL, "no CORS header:\n%s", body);
  free(body);
  serve_stop(s);
}

TEST(serve_start_errors) {
  serve_server *s = start_server();
  if (!s) return;
  serve_options opt = { .port = serve_port(s), .quiet = true };
  CHECK(serve_start(&opt, &fake_backend) == NULL);   /* the port is taken */
  CHECK_MSG(strstr(tg_error(), "cannot listen") != NULL, "error: %s", tg_error());
  opt = (serve_options){ .host = "no.such.host.invalid", .quiet = true };
  CHECK(serve_start(&opt, &fake_backend) == NULL);
  CHECK_MSG(strstr(tg_error(), "cannot resolve") != NULL, "error: %s", tg_error());
  serve_backend incomplete = fake_backend;
  incomplete.generate = NULL;
  CHECK(serve_start(&opt, &incomplete) == NULL);
  serve_stop(s);
  /* IPv6, where the machine has it */
  opt = (serve_options){ .host = "::1", .quiet = true };
  s = serve_start(&opt, &fake_backend);
  if (s && have_curl()) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "curl -sS -g --max-time 10 -o /dev/null 'http://[::1]:%d/health'", serve_port(s));
    CHECK_MSG(system(cmd) == 0, "GET /health over IPv6 failed");
  }
  serve_stop(s);
}

TEST(serve_context_length_exceeded) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char json[FAKE_N_CTX + 64];
  /* exactly n_ctx prompt tokens: no room for one generated token */
  snprintf(json, sizeof json, "{\"prompt\":\"%0*d\",\"stream\":true}", FAKE_N_CTX, 0);
  char *body = http(serve_port(s), "POST", "/v1/completions", json, &st);
  cJSON *j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.code"), "context_length_exceeded");
  CHECK_STR(jstr(j, "error.type"), "invalid_request_error");
  cJSON_Delete(j);
  free(body);
  /* one token less fits, generates exactly one token, and says "length" */
  snprintf(json, sizeof json, "{\"prompt\":\"%0*d\"}", FAKE_N_CTX - 1, 0);
  body = http(serve_port(s), "POST", "/v1/completions", json, &st);
  j = cJSON_Parse(body);
  CHECK_EQ_INT(st, 200);
  CHECK_EQ_INT(jnum(j, "usage.completion_tokens"), 1);
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "length");
  cJSON_Delete(j);
  free(body);
  serve_stop(s);
}

TEST(serve_queue_concurrent) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  const char *req = "{\"messages\":[{\"role\":\"user\",\"content\":\"slow\"}]}";
  double t0 = now_s();
  curl_call a = curl_start(serve_port(s), "POST", "/v1/chat/completions", req, NULL);
  curl_call b = curl_start(serve_port(s), "POST", "/v1/chat/completions", req, "-N");
  int sa, sb;
  char *ba = curl_finish(a, &sa), *bb = curl_finish(b, &sb);
  double dt = now_s() - t0;
  CHECK_EQ_INT(sa, 200);
  CHECK_EQ_INT(sb, 200);
  CHECK_MSG(strstr(ba, FAKE_TEXT) && strstr(bb, FAKE_TEXT), "replies:\n%s\n%s", ba, bb);
  CHECK_EQ_INT(atomic_load(&fake.max_running), 1);   /* one generation at a time */
  CHECK_EQ_INT(atomic_load(&fake.generations), 2);
  CHECK_MSG(dt >= 2 * 0.2, "two 11-token generations at 20 ms a token took only %.2f s", dt);
  free(ba);
  free(bb);
  serve_stop(s);
}

TEST(serve_client_disconnect) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  /* ~500 tokens at 20 ms would take 10 s; curl gives up after 1 s */
  curl_call c = curl_start(serve_port(s), "POST", "/v1/chat/completions",
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"forever\"}],\"stream\":true}", "--max-time 1");
  char *body = curl_finish(c, &st);
  CHECK_MSG(strstr(body, "data: ") != NULL, "the stream should have started: %s", body);
  free(body);
  double t0 = now_s();
  body = http(serve_port(s), "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &st);
  double dt = now_s() - t0;
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(strstr(body, FAKE_TEXT) != NULL, "reply: %s", body);
  CHECK_MSG(dt < 3.0, "the next request waited %.2f s: the abandoned generation kept running", dt);
  CHECK_EQ_INT(atomic_load(&fake.generations), 2);
  free(body);
  /* a client that leaves a non-streamed request also frees the worker */
  c = curl_start(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"forever\"}", "--max-time 1");
  free(curl_finish(c, &st));
  t0 = now_s();
  body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"hi\"}", &st);
  dt = now_s() - t0;
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(dt < 3.0, "the next request waited %.2f s after a non-streamed client left", dt);
  free(body);
  serve_stop(s);
}

TEST(serve_stop_with_requests_in_flight) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  curl_call a = curl_start(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"forever\",\"stream\":true}", NULL);
  curl_call b = curl_start(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"forever\"}", NULL);
  usleep(300000);
  double t0 = now_s();
  serve_stop(s);
  double dt = now_s() - t0;
  CHECK_MSG(dt < 2.0, "serve_stop took %.2f s", dt);
  int sa, sb;
  free(curl_finish(a, &sa));
  free(curl_finish(b, &sb));
}

/* What `tg serve` calls: it reports its address and stops on SIGTERM. */
TEST(serve_run_until_signal) {
  NEED_CURL();
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    serve_options opt = { .port = 0, .quiet = true };
    _exit(serve_run(&opt, &fake_backend) == 0 ? 0 : 1);
  }
  close(fds[1]);
  char line[512] = "";
  FILE *f = fdopen(fds[0], "r");
  CHECK(fgets(line, sizeof line, f) != NULL);
  const char *at = strstr(line, "http://127.0.0.1:");
  CHECK_MSG(at && strstr(line, "fake-model"), "no address line: %s", line);
  int port = at ? atoi(at + strlen("http://127.0.0.1:")) : 0, st = 0;
  free(http(port, "GET", "/health", NULL, &st));
  CHECK_EQ_INT(st, 200);
  kill(pid, SIGTERM);
  int status = 0;
  double t0 = now_s();
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (now_s() - t0 > 5) { kill(pid, SIGKILL); waitpid(pid, &status, 0); break; }
    usleep(10000);
  }
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "serve_run did not return 0 after SIGTERM (status %d)", status);
  fclose(f);
}

TEST(serve_openai_client) {
  if (system("python3 -c 'import openai' >/dev/null 2>&1") != 0)
    SKIP("the openai Python package is not installed (python3 -m pip install openai)");
  serve_server *s = start_server();
  if (!s) return;
  char cmd[256];
  snprintf(cmd, sizeof cmd, "python3 serve_openai_client.py %d 2>&1", serve_port(s));
  FILE *p = popen(cmd, "r");
  strbuf out = { 0 };
  sb_puts(&out, "");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) sb_append(&out, buf, n);
  int rc = pclose(p);
  CHECK_MSG(rc == 0 && strstr(out.s, "openai client: all ok"), "serve_openai_client.py failed (%d):\n%s", rc, out.s);
  sb_free(&out);
  serve_stop(s);
}

/* ---------------------------------------------------------------- [2.9] attacks */

/* Strict JSON, on the parser alone (bodies curl cannot send: NUL bytes) and
 * over HTTP: trailing bytes, NUL, duplicate keys are 400 with a message. */
TEST(serve_strict_json) {
  static const struct { const char *body; size_t len; bool chat; const char *err; } bad[] = {
    { "{\"prompt\":\"a\"}xyz", 0, false, "after its JSON value" },
    { "{\"prompt\":\"a\"} {}", 0, false, "after its JSON value" },
    { "{\"prompt\":\"a\"}\0", 15, false, "NUL byte (at byte 14)" },
    { "\0{\"prompt\":\"a\"}", 15, false, "NUL byte (at byte 0)" },
    { "{\"prompt\":\"a\0b\"}", 16, false, "NUL byte" },
    { "{\"prompt\":\"a\",\"prompt\":\"b\"}", 0, false, "'prompt' twice" },
    { "{\"prompt\":\"a\",\"stop\":[{\"x\":1,\"y\":2,\"x\":3}]}", 0, false, "'x' twice" },
    { "{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"role\":\"system\"}]}", 0, true, "'role' twice" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    serve_request r;
    serve_error e;
    size_t len = bad[i].len ? bad[i].len : strlen(bad[i].body);
    CHECK_MSG(serve_request_parse(&r, bad[i].chat, bad[i].body, len, &e) < 0, "case %zu parsed", i);
    CHECK_MSG(e.status == 400 && strstr(e.message, bad[i].err), "case %zu: %d %s", i, e.status, e.message);
  }
  /* still fine: white space after the value, many distinct keys, the same key in two objects */
  static const char *const good[] = {
    "{\"prompt\":\"a\"}\r\n \t",
    "{\"prompt\":\"a\",\"seed\":1,\"stream\":false,\"top_p\":1,\"stop\":[\"x\"],\"n\":1}",
    "{\"prompt\":\"a\",\"logit_bias\":{\"k\":1,\"j\":{\"k\":2}}}",
  };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    serve_request r;
    serve_error e;
    CHECK_MSG(serve_request_parse(&r, false, good[i], strlen(good[i]), &e) == 0, "good %zu: %s", i, e.message);
    serve_request_free(&r);
  }
  /* a body of 50,000 distinct keys is checked quickly */
  strbuf big = { 0 };
  sb_puts(&big, "{\"prompt\":\"a\",\"logit_bias\":{\"k\":0");   /* an object tg ignores */
  for (int i = 0; i < 50000; i++) sb_printf(&big, ",\"k%d\":%d", i, i);
  sb_puts(&big, "}}");
  double t0 = now_s();
  serve_request r;
  serve_error e;
  CHECK_MSG(serve_request_parse(&r, false, big.s, big.n, &e) == 0, "%s", e.message);
  serve_request_free(&r);
  CHECK_MSG(now_s() - t0 < 1.0, "50,000 keys took %.2f s", now_s() - t0);
  sb_free(&big);
  if (!have_curl()) return;
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char *body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"a\"}xyz", &st);
  CHECK_MSG(st == 400 && strstr(body, "after its JSON value"), "%d %s", st, body);
  free(body);
  body = http(serve_port(s), "POST", "/v1/completions", "{\"prompt\":\"a\",\"prompt\":\"b\"}", &st);
  CHECK_MSG(st == 400 && strstr(body, "twice"), "%d %s", st, body);
  free(body);
  serve_stop(s);
}

/* A TCP connection to 127.0.0.1:port from source address src (NULL: any);
 * -1 on failure, -2 when src cannot be bound. */
static int tcp_from(const char *src, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (src) {
    struct sockaddr_in a = { .sin_family = AF_INET };
    inet_pton(AF_INET, src, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) { close(fd); return -2; }
  }
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0) { close(fd); return -1; }
  return fd;
}

/* Seconds GET /health took over a fresh connection (the reply read to its
 * end), or -1 when no 200 came within 3 s. */
static double health_seconds(int port) {
  double t0 = now_s();
  int fd = tcp_from(NULL, port);
  if (fd < 0) return -1;
  const char *req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) { close(fd); return -1; }
  char buf[1024];
  size_t n = 0;
  while (n < sizeof buf - 1) {
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int ms = (int)((t0 + 3 - now_s()) * 1000);
    if (ms <= 0 || poll(&p, 1, ms) <= 0) break;
    ssize_t k = recv(fd, buf + n, sizeof buf - 1 - n, 0);
    if (k <= 0) break;
    n += (size_t)k;
  }
  buf[n] = 0;
  close(fd);
  return strstr(buf, " 200 ") && strstr(buf, "\"ok\"") ? now_s() - t0 : -1;
}

/* Opens n partial requests (headers never finished) from src; returns how
 * many connected (fds in fds). */
static int open_partial(const char *src, int port, int n, int *fds) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    int fd = tcp_from(src, port);
    if (fd == -2) return -2;
    if (fd < 0) continue;
    send(fd, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow:", 38, MSG_NOSIGNAL);
    fds[k++] = fd;
  }
  return k;
}

/* Slowloris: 300 idle partial connections must not starve /health. From one
 * address they run into the per-address limit; from 30 addresses (10 each,
 * under it) they fit in the connection limit; and the idle timeout closes
 * them all. Bounded to a few seconds. */
/* Unknown fields: OpenAI's own fields are accepted (its clients send them:
 * frequency_penalty, tools, user, ...), anything else is a 400 naming the
 * field, at the top level, in a message and in stream_options. */
TEST(serve_unknown_fields) {
  static const struct { bool chat; const char *body, *param; } cases[] = {
    { false, "{\"prompt\":\"a\",\"temprature\":1}", "temprature" },
    { false, "{\"prompt\":\"a\",\"messages\":[]}", "messages" },   /* a chat field in a text completion */
    { true, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"prompt\":\"a\"}", "prompt" },
    { true, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"echo\":true}", "echo" },
    { true, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"contnet\":\"b\"}]}", "messages[0].contnet" },
    { true, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"stream\":true,\"stream_options\":{\"usage\":true}}",
      "stream_options.usage" },
    { false, "{\"prompt\":\"a\",\"\":1}", "" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    serve_request r;
    serve_error e;
    CHECK_MSG(serve_request_parse(&r, cases[i].chat, cases[i].body, strlen(cases[i].body), &e) < 0, "case %zu parsed", i);
    CHECK_MSG(e.status == 400 && !strcmp(e.code, "unknown_parameter") && !strcmp(e.param, cases[i].param) &&
              strstr(e.message, "unknown field"), "case %zu: %d %s %s: %s", i, e.status, e.code, e.param, e.message);
  }
  /* every field of OpenAI's chat and completions requests, with values of the documented types */
  static const char *const good_chat =
    "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\",\"name\":\"n\"},"
    "{\"role\":\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
    "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"content\":\"1\",\"tool_call_id\":\"c\"},"
    "{\"role\":\"user\",\"content\":\"u\"}],"
    "\"audio\":null,\"frequency_penalty\":0,\"function_call\":\"auto\",\"functions\":[],\"logit_bias\":{},\"logprobs\":false,"
    "\"max_completion_tokens\":4,\"max_tokens\":4,\"metadata\":{},\"modalities\":[\"text\"],\"n\":1,\"parallel_tool_calls\":true,"
    "\"prediction\":null,\"presence_penalty\":0,\"prompt_cache_key\":\"k\",\"reasoning_effort\":\"low\","
    "\"response_format\":{\"type\":\"text\"},\"safety_identifier\":\"s\",\"seed\":1,\"service_tier\":\"auto\",\"stop\":null,"
    "\"store\":false,\"stream\":true,\"stream_options\":{\"include_usage\":true,\"include_obfuscation\":false},"
    "\"temperature\":1,\"tool_choice\":\"none\",\"tools\":[],\"top_logprobs\":0,\"top_p\":1,\"user\":\"u\","
    "\"verbosity\":\"low\",\"web_search_options\":{},\"top_k\":5,\"min_p\":0.1}";
  static const char *const good_text =
    "{\"model\":\"m\",\"prompt\":\"p\",\"best_of\":1,\"echo\":false,\"frequency_penalty\":0,\"logit_bias\":{},"
    "\"logprobs\":null,\"max_tokens\":4,\"n\":1,\"presence_penalty\":0,\"seed\":1,\"stop\":\"x\",\"stream\":false,"
    "\"stream_options\":null,\"suffix\":null,\"temperature\":1,\"top_p\":1,\"user\":\"u\"}";
  serve_request r;
  serve_error e;
  CHECK_MSG(serve_request_parse(&r, true, good_chat, strlen(good_chat), &e) == 0, "chat: %s", e.message);
  CHECK(r.max_tokens == 4 && !strcmp(r.max_tokens_param, "max_completion_tokens") && r.sampling.top_k == 5);
  serve_request_free(&r);
  CHECK_MSG(serve_request_parse(&r, false, good_text, strlen(good_text), &e) == 0, "text: %s", e.message);
  CHECK(r.max_tokens == 4 && !strcmp(r.max_tokens_param, "max_tokens"));
  serve_request_free(&r);
}

/* max_tokens past the context is a 400 that names the field and the bound
 * (as OpenAI's "max_tokens is too large"); up to the context it is held to
 * what fits after the prompt ("length"). */
TEST(serve_max_tokens_bound) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  char json[256], want[128];
  static const char *const fields[] = { "max_tokens", "max_completion_tokens" };
  for (int k = 0; k < 2; k++) {
    snprintf(json, sizeof json, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"%s\":%d}", fields[k], FAKE_N_CTX + 1);
    char *body = http(serve_port(s), "POST", "/v1/chat/completions", json, &st);
    cJSON *j = cJSON_Parse(body);
    snprintf(want, sizeof want, "context of %d tokens", FAKE_N_CTX);
    CHECK_MSG(st == 400 && jstr(j, "error.message") && strstr(jstr(j, "error.message"), want), "%d %s", st, body);
    CHECK_STR(jstr(j, "error.param"), fields[k]);
    CHECK_STR(jstr(j, "error.code"), "invalid_value");
    cJSON_Delete(j);
    free(body);
  }
  snprintf(json, sizeof json, "{\"prompt\":\"Once\",\"max_tokens\":%d,\"stream\":true}", FAKE_N_CTX + 1);
  char *body = http(serve_port(s), "POST", "/v1/completions", json, &st);
  CHECK_MSG(st == 400 && strstr(body, "max_tokens"), "%d %s", st, body);   /* before any stream starts */
  free(body);
  snprintf(json, sizeof json, "{\"prompt\":\"Once\",\"max_tokens\":%d}", FAKE_N_CTX);
  body = http(serve_port(s), "POST", "/v1/completions", json, &st);
  CHECK_MSG(st == 200, "%d %s", st, body);   /* the whole context: allowed, then held to what fits */
  free(body);
  serve_stop(s);
}

TEST(serve_slowloris) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2048 && rl.rlim_max > rl.rlim_cur) {
    rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1400) SKIP("only %llu file descriptors", (unsigned long long)rl.rlim_cur);
  atomic_store(&fake.generations, 0);
  static bool init;
  if (!init) { pthread_mutex_init(&fake.mu, NULL); init = true; }
  serve_options opt = { .host = "127.0.0.1", .quiet = true, .timeout_s = 2, .max_conns_per_ip = 16 };
  serve_server *s = serve_start(&opt, &fake_backend);
  CHECK_OK(s);
  if (!s) return;
  int port = serve_port(s);
  static int fds[600];
  int n = 0;
  double t0 = now_s();
  /* one address, 300 partial connections: all but 16 are refused */
  int k = open_partial("127.0.0.2", port, 300, fds);
  if (k == -2) { serve_stop(s); SKIP("cannot bind 127.0.0.2 (no 127/8 loopback)"); }
  n += k;
  double dt = health_seconds(port);
  CHECK_MSG(dt >= 0 && dt < 1.0, "/health with 300 partial connections from one address: %.2f s", dt);
  /* 30 addresses, 10 each: 300 partial connections the server holds */
  for (int a = 0; a < 30; a++) {
    char src[32];
    snprintf(src, sizeof src, "127.0.1.%d", a + 1);
    k = open_partial(src, port, 10, fds + n);
    if (k > 0) n += k;
  }
  dt = health_seconds(port);
  CHECK_MSG(dt >= 0 && dt < 1.0, "/health with 300 more partial connections from 30 addresses: %.2f s", dt);
  /* the idle timeout (2 s here) closes them: each reads EOF (or a reset) */
  int closed = 0;
  for (int i = 0; i < n; i++) {
    struct pollfd p = { .fd = fds[i], .events = POLLIN };
    int ms = (int)((t0 + 5 - now_s()) * 1000);
    char b[256];
    while (ms > 0 && poll(&p, 1, ms) > 0) {
      ssize_t r = recv(fds[i], b, sizeof b, 0);
      if (r <= 0) { closed++; break; }   /* EOF or a reset: closed by the server */
      ms = (int)((t0 + 5 - now_s()) * 1000);
    }
    close(fds[i]);
  }
  CHECK_MSG(closed == n, "%d of %d idle connections still open %.1f s after they opened", n - closed, n, now_s() - t0);
  CHECK_MSG(now_s() - t0 < 6, "took %.1f s", now_s() - t0);
  dt = health_seconds(port);
  CHECK_MSG(dt >= 0 && dt < 1.0, "/health afterwards: %.2f s", dt);
  serve_stop(s);
}

/* ---------------------------------------------------------------- tools, reasoning, operations */

#define WEATHER_TOOLS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"," \
                      "\"properties\":{\"city\":{\"type\":\"string\"}}}}},{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}]"

static cJSON *post_json(int port, const char *path, const char *body, int *st) {
  char *r = http(port, "POST", path, body, st);
  cJSON *j = cJSON_Parse(r);
  CHECK_MSG(j != NULL, "%s: not JSON: %s", path, r);
  free(r);
  return j;
}

/* A streamed chat reply's deltas joined: reasoning, content, and the calls
 * as "index:id:name:arguments;" by index, accumulated as clients do (a
 * call's head brings index, id, type, name and "arguments": "", then pieces
 * bring index and arguments only: ok is false otherwise); pieces counts
 * each call's argument pieces. */
#define STREAM_CALLS 8
typedef struct {
  strbuf reasoning, content, calls;
  char finish[16];
  bool ok;
  int n_calls, pieces[STREAM_CALLS];
} chat_stream;

typedef struct { char *id, *name; strbuf args; } stream_call;

static void stream_call_take(chat_stream *r, stream_call *calls, const cJSON *tc) {
  int i = (int)jnum(tc, "index");
  const char *id = jstr(tc, "id"), *name = jstr(tc, "function.name"), *args = jstr(tc, "function.arguments");
  if (i < 0 || i >= STREAM_CALLS || !args) { r->ok = false; return; }
  if (id) {   /* a head: the next call, its arguments still to come */
    if (i != r->n_calls || !name || *args || strcmp(jstr(tc, "type") ? jstr(tc, "type") : "", "function")) r->ok = false;
    else {
      calls[i].id = strdup(id);
      calls[i].name = strdup(name);
      sb_puts(&calls[i].args, "");
      r->n_calls++;
    }
    return;
  }
  if (i >= r->n_calls || name || jget(tc, "type")) { r->ok = false; return; }
  sb_puts(&calls[i].args, args);
  r->pieces[i]++;
}

static chat_stream parse_chat_stream(const char *body) {
  chat_stream r = { .ok = true };
  stream_call calls[STREAM_CALLS] = { 0 };
  sb_puts(&r.reasoning, "");
  sb_puts(&r.content, "");
  sb_puts(&r.calls, "");
  for (const char *p = body; *p;) {
    const char *end = strstr(p, "\n\n");
    if (strncmp(p, "data: ", 6) != 0 || !end) { r.ok = false; break; }
    char *ev = strndup(p + 6, (size_t)(end - p - 6));
    p = end + 2;
    cJSON *j = strcmp(ev, "[DONE]") ? cJSON_Parse(ev) : NULL;
    free(ev);
    if (!j) continue;
    const char *t = jstr(j, "choices.0.delta.reasoning_content"), *c = jstr(j, "choices.0.delta.content"),
               *f = jstr(j, "choices.0.finish_reason");
    if (t) sb_puts(&r.reasoning, t);
    if (c) sb_puts(&r.content, c);
    if (f) snprintf(r.finish, sizeof r.finish, "%s", f);
    const cJSON *tc;
    cJSON_ArrayForEach(tc, jget(j, "choices.0.delta.tool_calls")) stream_call_take(&r, calls, tc);
    cJSON_Delete(j);
  }
  for (int i = 0; i < r.n_calls; i++) {
    sb_printf(&r.calls, "%d:%s:%s:%s;", i, calls[i].id, calls[i].name, calls[i].args.s);
    free(calls[i].id);
    free(calls[i].name);
    sb_free(&calls[i].args);
  }
  return r;
}

static void chat_stream_free(chat_stream *r) {
  sb_free(&r->reasoning);
  sb_free(&r->content);
  sb_free(&r->calls);
}

TEST(serve_tool_calls) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  /* the model calls two tools after some text */
  cJSON *j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool\"}]," WEATHER_TOOLS "}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK(strstr(fake.last_prompt, "[tools: 2]") != NULL);
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "tool_calls");
  CHECK_STR(jstr(j, "choices.0.message.content"), "Let me look.");
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.0.type"), "function");
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.0.function.name"), "get_weather");
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.0.function.arguments"), "{\"city\":\"Paris\"}");
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.1.function.name"), "get_time");
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.1.function.arguments"), "{}");
  const char *id0 = jstr(j, "choices.0.message.tool_calls.0.id"), *id1 = jstr(j, "choices.0.message.tool_calls.1.id");
  CHECK(id0 && id1 && strncmp(id0, "call_", 5) == 0 && strcmp(id0, id1) != 0);
  cJSON_Delete(j);

  /* streamed: the same, as deltas; each call's head (index, id, name), then
   * its arguments in pieces as the model writes them (slow: 20 ms a token,
   * so that the stream sees them come) */
  char *body = http(port, "POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool slow\"}]," WEATHER_TOOLS ",\"stream\":true}", &st);
  chat_stream r = parse_chat_stream(body);
  CHECK_MSG(r.ok && st == 200, "%s", body);
  CHECK_STR(r.content.s, "Let me look.");
  CHECK_STR(r.finish, "tool_calls");
  CHECK_MSG(strstr(r.calls.s, ":get_weather:{\"city\":\"Paris\"};") && strstr(r.calls.s, ":get_time:{};") &&
            !strncmp(r.calls.s, "0:call_", 7) && strstr(r.calls.s, ";1:call_"), "calls: %s", r.calls.s);
  CHECK_MSG(r.n_calls == 2 && r.pieces[0] > 2, "%d calls, the first's arguments in %d pieces", r.n_calls, r.pieces[0]);
  chat_stream_free(&r);
  free(body);

  /* parallel_tool_calls false: the first call only */
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool\"}]," WEATHER_TOOLS
                ",\"parallel_tool_calls\":false}", &st);
  CHECK(jget(j, "choices.0.message.tool_calls.0") && !jget(j, "choices.0.message.tool_calls.1"));
  cJSON_Delete(j);

  /* tool_choice none: no tools in the prompt, the reply is text */
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool\"}]," WEATHER_TOOLS
                ",\"tool_choice\":\"none\"}", &st);
  CHECK(strstr(fake.last_prompt, "[tools:") == NULL);
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "stop");
  CHECK(!jget(j, "choices.0.message.tool_calls") && strstr(jstr(j, "choices.0.message.content"), "<tool_call>"));
  cJSON_Delete(j);

  /* without tools the same output is text too */
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool\"}]}", &st);
  CHECK(!jget(j, "choices.0.message.tool_calls"));
  cJSON_Delete(j);

  /* a malformed call is content, never an error */
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"badtool\"}]," WEATHER_TOOLS "}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "stop");
  CHECK_STR(jstr(j, "choices.0.message.content"), "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>");
  cJSON_Delete(j);
  /* streamed, the call was shown as the model wrote it until it broke; the
   * content and finish_reason are then the non-streamed reply's */
  body = http(port, "POST", "/v1/chat/completions",
              "{\"messages\":[{\"role\":\"user\",\"content\":\"badtool slow\"}]," WEATHER_TOOLS ",\"stream\":true}", &st);
  r = parse_chat_stream(body);
  CHECK_MSG(r.ok && st == 200, "%s", body);
  CHECK_MSG(strstr(r.calls.s, ":get_weather:{\"city\":;") != NULL, "calls: %s", r.calls.s);
  CHECK_STR(r.content.s, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>");
  CHECK_STR(r.finish, "stop");
  chat_stream_free(&r);
  free(body);

  /* parallel_tool_calls false, streamed: the first call only */
  body = http(port, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"calltool\"}]," WEATHER_TOOLS
              ",\"parallel_tool_calls\":false,\"stream\":true}", &st);
  r = parse_chat_stream(body);
  CHECK_MSG(r.ok && r.n_calls == 1 && strstr(r.calls.s, ":get_weather:{\"city\":\"Paris\"};") && !strcmp(r.finish, "tool_calls"),
            "%s", body);
  chat_stream_free(&r);
  free(body);
  serve_stop(s);
}

TEST(serve_tool_choice) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  /* required: the prompt opens a call, the model finishes it */
  cJSON *j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS
                       ",\"tool_choice\":\"required\"}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(strstr(fake.last_prompt, "assistant:<tool_call>\n{\"name\": ") != NULL, "prompt: %s", fake.last_prompt);
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.0.function.name"), "get_weather");
  CHECK_STR(jstr(j, "choices.0.finish_reason"), "tool_calls");
  CHECK(cJSON_IsNull(jget(j, "choices.0.message.content")));
  cJSON_Delete(j);
  /* a named function: the prompt names it */
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},\"stream\":false}", &st);
  CHECK_MSG(strstr(fake.last_prompt, "{\"name\": \"get_weather\", \"arguments\": ") != NULL, "prompt: %s", fake.last_prompt);
  CHECK_STR(jstr(j, "choices.0.message.tool_calls.0.function.arguments"), "{\"city\":\"Paris\"}");
  cJSON_Delete(j);
  /* ... and its arguments are held to the function's schema: the grammar
   * takes the fake's continuation, and not one that breaks the schema */
  tg_grammar *g = tg_grammar_new(fake.last_grammar, strlen(fake.last_grammar));
  CHECK_MSG(g != NULL, "grammar: %s\n%s", tg_error(), fake.last_grammar);
  if (g) {
    const char *ok = "{\"city\": \"Paris\"}}\n</tool_call>";
    CHECK(tg_grammar_accept(g, ok, strlen(ok)) == 0 && tg_grammar_can_end(g));
    tg_grammar_reset(g);
    CHECK(tg_grammar_accept(g, "{\"city\": 3", 11) < 0);
    tg_grammar_free(g);
  }
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS
                ",\"tool_choice\":\"required\"}", &st);
  CHECK_STR(fake.last_grammar, "");   /* required: the call is opened, the function left to the model */
  cJSON_Delete(j);
  /* streamed, the forced call arrives as a tool_calls delta */
  char *body = http(port, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS
                    ",\"tool_choice\":\"required\",\"stream\":true}", &st);
  chat_stream r = parse_chat_stream(body);
  CHECK_MSG(strstr(r.calls.s, ":get_weather:{\"city\":\"Paris\"};") && !strcmp(r.content.s, "") && !strcmp(r.finish, "tool_calls"),
            "%s", body);
  chat_stream_free(&r);
  free(body);
  /* bad choices are 400s naming tool_choice */
  static const char *const bad[] = {
    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tool_choice\":\"required\"}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS ",\"tool_choice\":\"sometimes\"}",
  };
  for (int i = 0; i < 3; i++) {
    j = post_json(port, "/v1/chat/completions", bad[i], &st);
    CHECK_EQ_INT(st, 400);
    CHECK_STR(jstr(j, "error.param"), "tool_choice");
    cJSON_Delete(j);
  }
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\"}]}", &st);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.param"), "tools[0]");
  cJSON_Delete(j);
  serve_stop(s);
}

/* An assistant turn's tool_calls and the tool's answer reach the template. */
TEST(serve_tool_history) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st;
  cJSON *j = post_json(serve_port(s), "/v1/chat/completions",
                       "{\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"},"
                       "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\","
                       "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]},"
                       "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"22C\"}]," WEATHER_TOOLS "}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(strstr(fake.last_prompt, "assistant: \ncall get_weather {\"city\": \"Paris\"}\ntool[call_1]: 22C\nassistant:") != NULL,
            "prompt: %s", fake.last_prompt);
  cJSON_Delete(j);
  j = post_json(serve_port(s), "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[]}]}", &st);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.param"), "messages[0].tool_calls");
  cJSON_Delete(j);
  serve_stop(s);
}

TEST(serve_reasoning) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  /* the fake template opens <think> when the user says "think" */
  cJSON *j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"think\"}]}", &st);
  CHECK_STR(jstr(j, "choices.0.message.reasoning_content"), "I am thinking");
  CHECK_STR(jstr(j, "choices.0.message.content"), "The answer.");
  cJSON_Delete(j);
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"think\"}],\"reasoning_format\":\"none\"}", &st);
  CHECK(!jget(j, "choices.0.message.reasoning_content"));
  CHECK_STR(jstr(j, "choices.0.message.content"), "I am thinking</think>The answer.");
  cJSON_Delete(j);
  char *body = http(port, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"think\"}],\"stream\":true}", &st);
  chat_stream r = parse_chat_stream(body);
  CHECK_MSG(r.ok && !strcmp(r.reasoning.s, "I am thinking") && !strcmp(r.content.s, "The answer.") && !strcmp(r.finish, "stop"),
            "%s", body);
  chat_stream_free(&r);
  free(body);
  j = post_json(port, "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"think\"}],\"reasoning_format\":\"x\"}", &st);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.param"), "reasoning_format");
  cJSON_Delete(j);
  serve_stop(s);
}

TEST(serve_tokenize_endpoints) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  cJSON *j = post_json(port, "/tokenize", "{\"content\":\"hi\"}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK(jnum(j, "tokens.0") == 'h' && jnum(j, "tokens.1") == 'i' && !jget(j, "tokens.2"));
  cJSON_Delete(j);
  j = post_json(port, "/tokenize", "{\"content\":\"hi\",\"with_pieces\":true}", &st);
  CHECK(jnum(j, "tokens.1.id") == 'i');
  CHECK_STR(jstr(j, "tokens.1.piece"), "i");
  cJSON_Delete(j);
  j = post_json(port, "/detokenize", "{\"tokens\":[104,105]}", &st);
  CHECK_STR(jstr(j, "content"), "hi");
  cJSON_Delete(j);
  j = post_json(port, "/detokenize", "{\"tokens\":[104,1000]}", &st);
  CHECK_EQ_INT(st, 400);
  cJSON_Delete(j);
  j = post_json(port, "/tokenize", "{\"text\":\"hi\"}", &st);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.code"), "unknown_parameter");
  cJSON_Delete(j);
  j = post_json(port, "/apply-template", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," WEATHER_TOOLS "}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "prompt"), "[tools: 2]\nuser: hi\nassistant:");
  cJSON_Delete(j);
  j = post_json(port, "/apply-template", "{\"messages\":[{\"role\":\"user\",\"content\":\"BADTEMPLATE\"}]}", &st);
  CHECK_EQ_INT(st, 400);
  CHECK_STR(jstr(j, "error.code"), "invalid_prompt");
  cJSON_Delete(j);
  serve_stop(s);
}

/* The fake's vector of "abc" is (3, 0, 3, 3) (see fake_embed); L2-normalized
 * by the server: each nonzero entry is 3 / sqrt(27). */
TEST(serve_embeddings) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  cJSON *j = post_json(port, "/v1/embeddings", "{\"input\":\"abc\",\"model\":\"x\"}", &st);
  CHECK_EQ_INT(st, 200);
  CHECK_STR(jstr(j, "object"), "list");
  CHECK_STR(jstr(j, "data.0.object"), "embedding");
  double want[4] = { 3 / sqrt(27), 0, 3 / sqrt(27), 3 / sqrt(27) };
  for (int k = 0; k < 4; k++) {
    char path[40];
    snprintf(path, sizeof path, "data.0.embedding.%d", k);
    CHECK_NEAR(jnum(j, path), want[k], 1e-6);
  }
  CHECK_EQ_INT(jnum(j, "usage.prompt_tokens"), 3);
  cJSON_Delete(j);
  /* several inputs, token ids, base64 (float32) */
  j = post_json(port, "/v1/embeddings", "{\"input\":[\"abc\",\"zz\"],\"encoding_format\":\"base64\"}", &st);
  CHECK_EQ_INT(jnum(j, "data.1.index"), 1);
  /* "zz" is (0, 2, 2, 3) / sqrt(17); the string is Python's
   * base64.b64encode(struct.pack('<4f', *v)) of it */
  CHECK_STR(jstr(j, "data.1.embedding"), "AAAAAEJb+D5CW/g+ckQ6Pw==");
  cJSON_Delete(j);
  j = post_json(port, "/v1/embeddings", "{\"input\":[[97,98,99]]}", &st);
  CHECK_NEAR(jnum(j, "data.0.embedding.0"), want[0], 1e-6);
  cJSON_Delete(j);
  static const char *const bad[][2] = {
    { "{\"input\":\"\"}", "input" }, { "{\"input\":[]}", "input" }, { "{}", "input" },
    { "{\"input\":\"a\",\"dimensions\":3}", "dimensions" }, { "{\"input\":\"a\",\"encoding_format\":\"hex\"}", "encoding_format" },
    { "{\"input\":[[97],[-1]]}", "input[1]" },
  };
  for (int i = 0; i < 6; i++) {
    j = post_json(port, "/v1/embeddings", bad[i][0], &st);
    CHECK_MSG(st == 400, "%s: %d", bad[i][0], st);
    CHECK_STR(jstr(j, "error.param"), bad[i][1]);
    cJSON_Delete(j);
  }
  serve_stop(s);
}

TEST(serve_metrics_health) {
  NEED_CURL();
  serve_server *s = start_server();
  if (!s) return;
  int st, port = serve_port(s);
  free(http(port, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &st));
  free(http(port, "POST", "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":3}", &st));
  char *m = http(port, "GET", "/metrics", NULL, &st);
  CHECK_EQ_INT(st, 200);
  CHECK_MSG(strstr(m, "tg:requests_total{endpoint=\"chat\"} 1\n") && strstr(m, "tg:requests_total{endpoint=\"completion\"} 1\n"), "%s", m);
  char want[64];
  snprintf(want, sizeof want, "tg:prompt_tokens_total %d\n", (int)strlen("user: hi\nassistant:") + 4);
  CHECK_MSG(strstr(m, want), "want %s in\n%s", want, m);
  snprintf(want, sizeof want, "tg:tokens_predicted_total %d\n", FAKE_N_WORDS + 1 + 3);
  CHECK_MSG(strstr(m, want), "want %s in\n%s", want, m);
  CHECK(strstr(m, "# TYPE tg:slots_busy gauge\ntg:slots_busy 0\n") && strstr(m, "tg:requests_deferred 0\n"));
  free(m);
  cJSON *j = cJSON_Parse(m = http(port, "GET", "/health", NULL, &st));
  CHECK_STR(jstr(j, "status"), "ok");
  CHECK_STR(jstr(j, "slots.0.state"), "idle");
  CHECK_EQ_INT(jnum(j, "slots_idle"), 1);
  cJSON_Delete(j);
  free(m);
  /* while a generation runs, its slot is busy */
  curl_call c = curl_start(port, "POST", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"forever\"}],\"max_tokens\":100}", NULL);
  bool busy = false;
  for (int i = 0; i < 100 && !busy; i++) {
    usleep(20000);
    j = cJSON_Parse(m = http(port, "GET", "/health", NULL, &st));
    busy = jstr(j, "slots.0.state") && !strcmp(jstr(j, "slots.0.state"), "processing");
    cJSON_Delete(j);
    free(m);
  }
  CHECK(busy);
  free(curl_finish(c, &st));
  serve_stop(s);
}

TEST(serve_api_key) {
  NEED_CURL();
  serve_options opt = { .host = "127.0.0.1", .port = 0, .quiet = true, .api_key = "sekret" };
  serve_server *s = serve_start(&opt, &fake_backend);
  CHECK_MSG(s != NULL, "serve_start: %s", tg_error());
  if (!s) return;
  int st, port = serve_port(s);
  const char *chat = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}";
  char *b = http(port, "POST", "/v1/chat/completions", chat, &st);
  cJSON *j = cJSON_Parse(b);
  CHECK_EQ_INT(st, 401);
  CHECK_STR(jstr(j, "error.type"), "authentication_error");
  CHECK_STR(jstr(j, "error.code"), "invalid_api_key");
  cJSON_Delete(j);
  free(b);
  free(curl_finish(curl_start(port, "POST", "/v1/chat/completions", chat, "-H 'Authorization: Bearer sekret'"), &st));
  CHECK_EQ_INT(st, 200);
  free(curl_finish(curl_start(port, "POST", "/v1/chat/completions", chat, "-H 'X-Api-Key: sekret'"), &st));
  CHECK_EQ_INT(st, 200);
  free(curl_finish(curl_start(port, "POST", "/v1/chat/completions", chat, "-H 'Authorization: Bearer sekreT'"), &st));
  CHECK_EQ_INT(st, 401);
  free(curl_finish(curl_start(port, "POST", "/v1/chat/completions", chat, "-H 'Authorization: Bearer sekret2'"), &st));
  CHECK_EQ_INT(st, 401);
  free(http(port, "GET", "/metrics", NULL, &st));
  CHECK_EQ_INT(st, 401);
  free(http(port, "GET", "/health", NULL, &st));
  CHECK_EQ_INT(st, 200);
  free(http(port, "GET", "/v1/models", NULL, &st));
  CHECK_EQ_INT(st, 200);
  free(http(port, "OPTIONS", "/v1/chat/completions", NULL, &st));
  CHECK_EQ_INT(st, 204);
  serve_stop(s);
}
