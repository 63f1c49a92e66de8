/* fuzz_gguf_load.c: the tensors and the model of a GGUF file from untrusted
 * bytes. Loads every tensor (plain and quantized, whose dequantization graph
 * is built) onto the NULL device and realizes the small ones there
 * (scheduling and code generation, no kernel runs, no memory behind the
 * buffers), and loads the LLM the metadata describes (hyperparameters,
 * tensor names and shapes, tokenizer) with a tiny context. Slower per
 * input than fuzz_gguf.c, which covers the parsing. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  char path[64];
  if (!fuzz_file(data, size, &fd, path, sizeof path)) return 0;
  tg_scope_begin();
  tg_tensor_list l = { 0 };
  if (tg_gguf_load_tensors(path, "NULL", &l) == 0) {
    for (int i = 0; i < l.n; i++) {
      if (tg_device_of(l.t[i]) != tg_device_of(l.t[0]) || tg_realize(l.t[i]) < 0) {
        fprintf(stderr, "tensor %s: %s\n", l.names[i], tg_error());
        __builtin_trap();   /* a tensor that loaded must realize */
      }
      if (tg_numel(l.t[i]) > 1 << 16) break;   /* the rest costs code generation only */
    }
    tg_tensor_list_free(&l);
  }
  tg_scope_end();
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = 8, .device = "NULL" });
  tg_llm_free(m);
  close(fd);
  return 0;
}
