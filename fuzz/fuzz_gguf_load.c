/* fuzz_gguf_load.c: the tensors and the model of a GGUF file from untrusted
 * bytes. Loads every tensor (plain and quantized, whose dequantization graph
 * is built) onto the NULL device and realizes the small ones there
 * (scheduling and code generation, no kernel runs, no memory behind the
 * buffers), and loads the LLM the metadata describes (hyperparameters,
 * tensor names and shapes, tokenizer) with a tiny context. Slower per
 * input than fuzz_gguf.c, which covers the parsing: the first tensors are
 * realized one by one (as tg_llm_load does), the rest together in one
 * schedule (a quarter less time per tensor, for files of every type). */
#include "fuzz.h"

/* A sanitizer report names the allocating function and its callers (5
 * frames, not 30) and freed memory waits in a 32 MB quarantine, not 256 MB:
 * both cost time on each of the many small allocations a graph makes. The
 * checks are the same; ASAN_OPTIONS overrides these. */
const char *__asan_default_options(void) { return "malloc_context_size=5:quarantine_size_mb=32"; }

/* Realizes t[0..n) together (single: one by one); each that loaded must
 * realize on its own, so when they fail together (an error, not a crash)
 * each is tried alone and the one that fails is named. */
static void realize(tg_tensor **t, char **names, int n, bool single) {
  if (!single && tg_realize_all(t, n) == 0) return;
  for (int i = 0; i < n; i++)
    if (tg_realize(t[i]) < 0) {
      fprintf(stderr, "tensor %s: %s\n", names[i], tg_error());
      __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  char path[64];
  if (!fuzz_file(data, size, &fd, path, sizeof path)) return 0;
  tg_scope_begin();
  tg_tensor_list l = { 0 };
  if (tg_gguf_load_tensors(path, "NULL", &l) == 0) {
    int n = 0;   /* up to and with the first big one: the rest costs code generation only */
    while (n < l.n && tg_numel(l.t[n++]) <= 1 << 16) {}
    for (int i = 0; i < n; i++) if (tg_device_of(l.t[i]) != tg_device_of(l.t[0])) __builtin_trap();
    int single = n < 4 ? n : 4;
    for (int i = 0; i < single; i++) realize(&l.t[i], &l.names[i], 1, true);
    if (n > single) realize(l.t + single, l.names + single, n - single, false);
    tg_tensor_list_free(&l);
  }
  tg_scope_end();
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = 8, .device = "NULL" });
  tg_llm_free(m);
  close(fd);
  return 0;
}
