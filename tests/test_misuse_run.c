/* test_misuse_run.c: runs the misuse table of test_misuse.c, each case in a
 * forked child (a crash, a hang or a sanitizer report there fails the case,
 * not the run), and the fixtures its calls use. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_misuse.h"

char fx_bytes[1 << 16];

tg_tensor *fx_tensor(void) {
  static tg_tensor *t;
  if (!t) t = tg_from_data((float[6]){ 1, 2, 3, 4, 5, 6 }, TG_SHAPE(2, 3), TG_F32);
  return t;
}
tg_tensor **fx_tensors(void) {
  static tg_tensor *ts[8];
  for (int i = 0; i < 3; i++) ts[i] = fx_tensor();
  return ts;
}
tg_tokenizer *fx_tokenizer(void) {
  static tg_tokenizer *t;
  if (!t) t = tg_tokenizer_load("goldens/llm_llama.gguf");
  return t;
}
tg_llm *fx_llm(void) {
  static tg_llm *m;
  if (!m) m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .n_ctx = 8 });
  return m;
}
tg_sampler *fx_sampler(void) {
  static tg_sampler *s;
  if (!s) s = tg_sampler_new(NULL);
  return s;
}
tg_chat_template *fx_template(void) {
  static tg_chat_template *t;
  if (!t) t = tg_chat_template_new(NULL, NULL, NULL, NULL);
  return t;
}
tg_token_stream *fx_stream(void) {
  static tg_token_stream *s;
  if (!s) s = tg_token_stream_new(fx_tokenizer(), false);
  return s;
}
int fx_jit_fn(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  if (nin < 1 || nout < 1) return -1;
  out[0] = tg_add(in[0], in[0]);
  return out[0] ? 0 : -1;
}
tg_jit *fx_jit(void) {
  static tg_jit *j;
  if (!j) j = tg_jit_new(fx_jit_fn, NULL);
  return j;
}
tg_schedule *fx_schedule(void) {
  static tg_schedule *s;
  if (!s) s = tg_schedule_new(fx_tensors(), 1);
  return s;
}
tg_optim *fx_optim(void) {
  static tg_optim *o;
  if (!o) o = tg_sgd_new(fx_tensors(), 1, 0.1, 0, 0, false);
  return o;
}

/* The child's exit status for a case's result. */
enum { X_ERROR = 40, X_ERROR_NO_MESSAGE, X_ACCEPTED, X_UNCHECKED };

TEST(errors_misuse_table) {
  int crashed = 0, accepted = 0, silent = 0, gaps = 0;
  for (int i = 0; i < misuse_ncases; i++) {
    const misuse_case *c = &misuse_cases[i];
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      alarm(30);
      if (!freopen("/dev/null", "w", stdout)) _exit(2);
      setenv("TG_VIZ_DIR", "/tmp/tg-misuse-viz", 1);   /* tg_viz_begin(NULL) records there, not in tests/ */
      tg_clear_error();
      int r = c->run();
      /* a value with the error set (tg_dtype_name's "?") reports the misuse too */
      int code = r == M_ERROR ? (tg_error()[0] ? X_ERROR : X_ERROR_NO_MESSAGE)
                 : r == M_ACCEPTED ? (tg_error()[0] ? X_ERROR : X_ACCEPTED) : X_UNCHECKED;
      _exit(code);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st)) {
      crashed++;
      printf("  misuse: %s: crashed (signal %d)\n", c->name, WTERMSIG(st));
    } else if (c->level == M_KNOWN_GAP && (WEXITSTATUS(st) == X_ERROR_NO_MESSAGE || WEXITSTATUS(st) == X_ACCEPTED)) {
      gaps++;
    } else if (WEXITSTATUS(st) == X_ERROR_NO_MESSAGE) {
      silent++;
      printf("  misuse: %s: failed without a message in tg_error()\n", c->name);
    } else if (WEXITSTATUS(st) == X_ACCEPTED && c->level == M_STRICT) {
      accepted++;
      printf("  misuse: %s: accepted (no error)\n", c->name);
    } else if (WEXITSTATUS(st) < X_ERROR || WEXITSTATUS(st) > X_UNCHECKED) {
      crashed++;
      printf("  misuse: %s: exit %d (a sanitizer report?)\n", c->name, WEXITSTATUS(st));
    }
  }
  printf("  %d misuse cases, %d known gaps (tests/gen/gen_misuse.py KNOWN)\n", misuse_ncases, gaps);
  CHECK_MSG(crashed + accepted + silent == 0, "%d misuse cases: %d crashed, %d accepted, %d errors without a message",
            misuse_ncases, crashed, accepted, silent);
}

/* tests/test_misuse.c is what gen_misuse.py makes from the headers now. */
TEST(errors_misuse_table_current) {
  int st = system("python3 gen/gen_misuse.py --check 2>/dev/null");
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) SKIP("python3 not found");
  CHECK_MSG(WEXITSTATUS(st) == 0, "tests/test_misuse.c is stale: run python3 tests/gen/gen_misuse.py");
}
