/* test_serve_model.c: `tg serve` on a real model (stories260K), started as
 * its own process by the test, queried with curl and the official openai
 * Python client. Needs TG_BIN (set by make test), curl, and the model file;
 * skips with a message otherwise. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
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

TEST(serve_model_stories260k) {
  const char *bin = getenv("TG_BIN");
  if (!bin || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(MODEL, R_OK) != 0) SKIP("%s is absent", MODEL);
  if (system("curl --version >/dev/null 2>&1") != 0) SKIP("curl is not installed");
  char log[] = "/tmp/tg_serve_model_XXXXXX";
  int fd = mkstemp(log);
  if (fd < 0) SKIP("no temporary file");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    execl(bin, bin, "serve", "-m", MODEL, "--port", "0", (char *)NULL);
    _exit(127);
  }
  close(fd);
  /* the server prints its address once it listens */
  int port = 0;
  for (int i = 0; i < 300 && !port; i++) {
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
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tg serve exited with status %d", status);
  unlink(log);
}
