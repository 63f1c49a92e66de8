/* fuzz_gguf.c: a GGUF file from untrusted bytes. Parses it (gguf_open),
 * reads and formats every metadata value, prints it as `tg gguf` does, and
 * loads the tokenizer it may describe (vocab_load.c: tokens, scores, types,
 * merges, special ids), then tokenizes and detokenizes with it. Each step
 * may fail; none may crash. fuzz_gguf_load.c loads the tensors and models. */
#include "fuzz.h"
#include "io/gguf_file.h"
#include "commands.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  if (!freopen("/dev/null", "w", stdout)) return 0;   /* cmd_gguf's listing */
  return 0;
}

static void read_metadata(const gguf_file *f) {
  char buf[512];
  for (int i = 0; i < f->n_kv; i++) {
    const gguf_kv *kv = &f->kv[i];
    if (kv->type != GGUF_ARRAY || kv->arr_type != GGUF_ARRAY) gguf_kv_format(kv, buf, sizeof buf);
    if (kv->type == GGUF_STRING) free(gguf_get_str(f, kv->key));
    int64_t iv;
    double fv;
    bool bv;
    gguf_get_int(f, kv->key, &iv);
    gguf_get_f64(f, kv->key, &fv);
    gguf_get_bool(f, kv->key, &bv);
    if (kv->type == GGUF_ARRAY && kv->arr_type != GGUF_STRING && kv->arr_type != GGUF_ARRAY)
      for (uint64_t k = 0; k < kv->arr_n && k < 64; k++) fv += gguf_arr_f64(kv, k) + (double)gguf_arr_int(kv, k);
  }
  for (int i = 0; i < f->n_tensors; i++) gguf_find_tensor(f, f->tensors[i].name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  char path[64];
  if (!fuzz_file(data, size, &fd, path, sizeof path)) return 0;
  gguf_file *f = gguf_open(path);
  if (f) {
    read_metadata(f);
    gguf_close(f);
    char *argv[] = { "gguf", path, NULL };
    cmd_gguf(2, argv);
  }
  tg_tokenizer *tok = tg_tokenizer_load(path);
  if (tok) {
    int32_t *ids = NULL;
    int n = tg_tokenize(tok, "Hello world, <|im_end|> 123", 27, true, true, &ids);
    if (n >= 0) free(tg_detokenize(tok, ids, n, true, true, NULL));
    free(ids);
    tg_tokenizer_free(tok);
  }
  close(fd);
  return 0;
}
