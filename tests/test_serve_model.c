/* test_serve_model.c: `tg serve` on a real model (stories260K), started as
 * its own process by the test, queried with curl and the official openai
 * Python client. Needs TG_BIN (set by make test), curl, and the model file;
 * skips with a message otherwise. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "test.h"

#define MODEL "../../shared/testdata/models/stories260K.gguf"

static char *run_capture(const char *cmd) {
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while ((r = fread(buf + n, 1, cap - 1 - n, p)) > 0) n += r;
  buf[n] = 0;
  pclose(p);
  return buf;
}

/* Starts `tg serve -m MODEL --port 0 EXTRA...` with its stderr in log;
 * returns its port once it listens (0 when it did not start). */
static int start_serve(const char *bin, char *log, pid_t *pid, const char *const *extra) {
  int fd = mkstemp(log);
  if (fd < 0) return 0;
  const char *argv[16] = { bin, "serve", "-m", MODEL, "--port", "0" };
  int argc = 6;
  for (int i = 0; extra && extra[i] && argc < 15; i++) argv[argc++] = extra[i];
  argv[argc] = NULL;
  *pid = fork();
  if (*pid == 0) {
    dup2(fd, 2);
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  close(fd);
  /* the server prints its address once it listens */
  int port = 0;
  /* up to 2 min: the server warms up its batched decode first (a fresh
   * kernel cache compiles it); a server that died stops the wait */
  for (int i = 0; i < 6000 && !port && waitpid(*pid, NULL, WNOHANG) == 0; i++) {
    usleep(20000);
    size_t n;
    char *s = test_read_file(log, &n);
    if (s) {
      s = realloc(s, n + 1);
      s[n] = 0;
      const char *at = strstr(s, "http://127.0.0.1:");
      if (at) port = atoi(at + strlen("http://127.0.0.1:"));
      free(s);
    }
  }
  return port;
}

/* SIGTERM: a clean stop, status 0. */
static void stop_serve(pid_t pid, const char *log) {
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tg serve exited with status %d", status);
  unlink(log);
}

#define NEED_SERVE_DEPS(bin) do { \
  if (!(bin) || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)"); \
  if (access(MODEL, R_OK) != 0) SKIP("%s is absent", MODEL); \
  if (system("curl --version >/dev/null 2>&1") != 0) SKIP("curl is not installed"); } while (0)

TEST(serve_model_stories260k) {
  const char *bin = getenv("TG_BIN");
  NEED_SERVE_DEPS(bin);
  char log[] = "/tmp/tg_serve_model_XXXXXX";
  pid_t pid;
  int port = start_serve(bin, log, &pid, NULL);
  CHECK_MSG(port > 0, "tg serve did not start");
  if (port > 0) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "curl -s http://127.0.0.1:%d/v1/completions -d '{\"prompt\":\"Once upon a time\",\"max_tokens\":12,\"temperature\":0}'", port);
    char *out = run_capture(cmd);
    CHECK_MSG(out && strstr(out, "\"text\":\", there was a little girl named Lily.") && strstr(out, "\"completion_tokens\":12"), "curl got: %s", out ? out : "(nothing)");
    free(out);
    snprintf(cmd, sizeof cmd, "curl -s -w ' %%{http_code}' http://127.0.0.1:%d/v1/chat/completions -d '{\"messages\":[{\"role\":\"user\"}]}'", port);
    out = run_capture(cmd);
    CHECK_MSG(out && strstr(out, " 400"), "a message without content: %s", out ? out : "(nothing)");
    free(out);
    if (system("python3 -c 'import openai' >/dev/null 2>&1") != 0) printf("  skip: the openai Python package is not installed (curl checks ran)\n");
    else {
      snprintf(cmd, sizeof cmd, "python3 serve_model_client.py %d 2>&1", port);
      out = run_capture(cmd);
      CHECK_MSG(out && strstr(out, "openai client: all ok"), "openai client: %s", out ? out : "(nothing)");
      free(out);
    }
  }
  stop_serve(pid, log);
}

/* Starts tg serve with extra options and runs the standard-library
 * Python script `script PORT PID args` against it, which must print ok. */
static void serve_with_script(const char *const *extra, const char *script, const char *args, const char *ok) {
  const char *bin = getenv("TG_BIN");
  NEED_SERVE_DEPS(bin);
  if (system("python3 --version >/dev/null 2>&1") != 0) SKIP("python3 is not installed");
  char log[] = "/tmp/tg_serve_script_XXXXXX";
  pid_t pid;
  int port = start_serve(bin, log, &pid, extra);
  CHECK_MSG(port > 0, "tg serve did not start");
  if (port > 0) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "python3 %s %d %d %s 2>&1", script, port, (int)pid, args);
    char *out = run_capture(cmd);
    CHECK_MSG(out && strstr(out, ok), "%s: %s", script, out ? out : "(nothing)");
    free(out);
  }
  stop_serve(pid, log);
}

/* --parallel 3: many clients at once (tests/serve_parallel_client.py):
 * llama.cpp's greedy text for each, no answer mixed up, the prompt cache
 * on a chat's second turn, a client that leaves frees its slot, a full
 * queue answers 503. */
TEST(serve_model_parallel_slots) {
  static const char *const extra[] = { "--parallel", "3", "-c", "384", "--max-queue", "4", NULL };
  serve_with_script(extra, "serve_parallel_client.py", "3 4", "parallel client: all ok");
}

/* --devices CPU:0,CPU:1 --parallel 2: the slots' batched steps under
 * tensor parallel (the model's heads and feed-forward split, each slot's
 * block of the KV cache split by kv heads): two completions at once, each
 * llama.cpp's greedy text (the one-device server's, checked above), in its
 * own slot. */
TEST(serve_model_tensor_parallel_slots) {
  const char *bin = getenv("TG_BIN");
  NEED_SERVE_DEPS(bin);
  char log[] = "/tmp/tg_serve_tp_XXXXXX";
  pid_t pid;
  static const char *const extra[] = { "--devices", "CPU:0,CPU:1", "--parallel", "2", NULL };
  int port = start_serve(bin, log, &pid, extra);
  CHECK_MSG(port > 0, "tg serve --devices did not start");
  if (port > 0) {
    char cmd[1024];
    const char *req = "curl -s http://127.0.0.1:%d/v1/completions -d '{\"prompt\":\"Once upon a time\",\"max_tokens\":%d,\"temperature\":0}'";
    char a[256], b[256];
    snprintf(a, sizeof a, req, port, 14);
    snprintf(b, sizeof b, req, port, 18);
    snprintf(cmd, sizeof cmd, "(%s > %s.a) & (%s > %s.b) & wait; cat %s.a; echo; echo ====; cat %s.b; rm -f %s.a %s.b", a, log, b, log, log, log,
             log, log);
    char *out = run_capture(cmd);
    char *sep = out ? strstr(out, "====") : NULL;
    if (sep) *sep = 0;
    CHECK_MSG(out && strstr(out, "\"text\":\", there was a little girl named Lily. She loved\"") && strstr(out, "\"completion_tokens\":14"),
              "first client got: %s", out ? out : "(nothing)");
    CHECK_MSG(sep && strstr(sep + 4, "\"text\":\", there was a little girl named Lily. She loved to play out\"") &&
              strstr(sep + 4, "\"completion_tokens\":18"), "second client got: %s", sep ? sep + 4 : "(nothing)");
    free(out);
  }
  stop_serve(pid, log);
}

/* A load with faults (tests/serve_load_client.py): 12 clients for 2 x 4 s
 * of completions checked against each prompt's text alone, whole streams,
 * streams dropped mid-way and malformed requests: no crash, no slot left
 * busy, memory flat; under SAN=1 the leak check at exit covers the rest.
 * (The full run is 64 clients for 60 s: docs/serve.md.) */
TEST(serve_model_load_with_faults) {
  static const char *const extra[] = { "--parallel", "4", "-c", "512", NULL };
#if defined(__SANITIZE_ADDRESS__)
  const char *args = "12 4 asan";   /* the leak check at exit, not the RSS */
#else
  const char *args = "12 4";
#endif
  serve_with_script(extra, "serve_load_client.py", args, "load client: all ok");
}

static cJSON *curl_json(const char *fmt, int port, const char *body, const char *key) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, fmt, key, port, body);
  char *out = run_capture(cmd);
  cJSON *j = out ? cJSON_Parse(out) : NULL;
  CHECK_MSG(j != NULL, "%s: %s", cmd, out ? out : "(nothing)");
  free(out);
  return j;
}
#define POST "curl -s -H 'Authorization: Bearer %s' http://127.0.0.1:%d%s"

/* The operations endpoints on the model, behind an API key: tokenize and
 * back, the embedding of token ids against gen_llm_embed.py's numpy
 * forward of stories260K, the metrics after them. */
TEST(serve_model_operations) {
  const char *bin = getenv("TG_BIN");
  NEED_SERVE_DEPS(bin);
  size_t gn;
  char *gtext = test_read_file("goldens/stories260k_embed.json", &gn);
  CHECK_MSG(gtext != NULL, "goldens/stories260k_embed.json is missing (python3 tests/gen/gen_llm_embed.py)");
  if (!gtext) return;
  gtext = realloc(gtext, gn + 1);
  gtext[gn] = 0;
  cJSON *golden = cJSON_Parse(gtext);
  free(gtext);
  char log[] = "/tmp/tg_serve_ops_XXXXXX";
  pid_t pid;
  static const char *const extra[] = { "--api-key", "k3y", "--cache-type", "f32", NULL };
  int port = start_serve(bin, log, &pid, extra);
  CHECK_MSG(port > 0, "tg serve did not start");
  if (port > 0) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/tokenize -d '{\"content\":\"a\"}'", port);
    char *out = run_capture(cmd);
    CHECK_MSG(out && !strcmp(out, "401"), "without the key: %s", out ? out : "(nothing)");
    free(out);
    cJSON *j = curl_json(POST " -d '{\"content\":\"Once upon a time\",\"add_special\":true}'", port, "/tokenize", "k3y");
    const cJSON *toks = cJSON_GetObjectItem(j, "tokens");
    CHECK_EQ_INT(cJSON_GetArraySize(toks), 5);   /* BOS and 4, as the completion's usage.prompt_tokens says */
    CHECK_EQ_INT(cJSON_GetArrayItem(toks, 0)->valueint, 1);
    char *ids = cJSON_PrintUnformatted(toks);
    char body[512];
    snprintf(body, sizeof body, "/detokenize -d '{\"tokens\":%s}'", ids);
    cJSON_Delete(j);
    free(ids);
    j = curl_json(POST, port, body, "k3y");
    const cJSON *content = cJSON_GetObjectItem(j, "content");
    CHECK_MSG(cJSON_IsString(content) && strstr(content->valuestring, "Once upon a time"), "detokenize: %s",
              cJSON_IsString(content) ? content->valuestring : "?");
    cJSON_Delete(j);
    char *gt = cJSON_PrintUnformatted(cJSON_GetObjectItem(golden, "tokens"));
    snprintf(body, sizeof body, "/v1/embeddings -d '{\"input\":[%s]}'", gt);
    free(gt);
    j = curl_json(POST, port, body, "k3y");
    const cJSON *emb = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "data"), 0), "embedding");
    const cJSON *want = cJSON_GetObjectItem(golden, "embedding");
    CHECK_EQ_INT(cJSON_GetArraySize(emb), 64);
    for (int k = 0; k < cJSON_GetArraySize(want) && k < cJSON_GetArraySize(emb); k++)
      CHECK_NEAR(cJSON_GetArrayItem(emb, k)->valuedouble, cJSON_GetArrayItem(want, k)->valuedouble, 1e-5);
    cJSON_Delete(j);
    /* a named tool_choice on a real model: the call is opened in the prompt
     * and its arguments sampled under the function's schema, so even this
     * tiny story model answers with a well-formed call */
    j = curl_json(POST " -d '{\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"}],\"max_tokens\":40,"
                  "\"temperature\":0,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                  "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"enum\":[\"Paris\",\"Rome\"]}},"
                  "\"required\":[\"city\"]}}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}}'",
                  port, "/v1/chat/completions", "k3y");
    const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
    const cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(choice, "message"), "tool_calls"), 0);
    const cJSON *fn = cJSON_GetObjectItem(call, "function");
    const char *args = cJSON_GetStringValue(cJSON_GetObjectItem(fn, "arguments"));
    char *dump = cJSON_PrintUnformatted(j);
    CHECK_MSG(args && (!strcmp(args, "{\"city\":\"Paris\"}") || !strcmp(args, "{\"city\":\"Rome\"}")) &&
              !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(fn, "name")), "get_weather") &&
              !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(choice, "finish_reason")), "tool_calls"), "%s", dump);
    free(dump);
    cJSON_Delete(j);
    snprintf(cmd, sizeof cmd, "curl -s -H 'X-Api-Key: k3y' http://127.0.0.1:%d/metrics", port);
    out = run_capture(cmd);
    CHECK_MSG(out && strstr(out, "tg:requests_total{endpoint=\"embedding\"} 1\n") && strstr(out, "tg:requests_total{endpoint=\"chat\"} 1\n"),
              "metrics: %s", out ? out : "(nothing)");
    free(out);
  }
  cJSON_Delete(golden);
  stop_serve(pid, log);
}
