/* check_quantize.c: checks GGUF files tg wrote against ggml itself (not part
 * of the test suite: it links ggml's libggml-base, see run.sh).
 *
 *   check_quantize OUT.gguf [SRC.gguf]
 *
 * ggml's gguf reader must parse OUT.gguf; with SRC.gguf (the input of
 * `tg quantize`), every tensor whose type changed must equal
 * ggml_quantize_chunk(type, src, ..., NULL) of the source tensor (what
 * llama-quantize writes without an importance matrix), and every other
 * tensor must be a copy. Exit status 0 when all match. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "ggml.h"
#include "gguf.h"

static const unsigned char *map_file(const char *path) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) return NULL;
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

static const unsigned char *tensor_data(struct gguf_context *g, const unsigned char *base, int64_t i) {
  return base + gguf_get_data_offset(g) + gguf_get_tensor_offset(g, i);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: check_quantize OUT.gguf [SRC.gguf]\n"); return 2; }
  struct ggml_context *ctx = NULL;
  struct gguf_init_params ip = { .no_alloc = true, .ctx = &ctx };
  struct gguf_context *q = gguf_init_from_file(argv[1], ip);
  if (!q) { printf("%s: ggml's gguf reader refuses it\n", argv[1]); return 1; }
  printf("%s: ggml reads it: v%d, %lld metadata entries, %lld tensors, alignment %zu\n", argv[1], (int)gguf_get_version(q),
         (long long)gguf_get_n_kv(q), (long long)gguf_get_n_tensors(q), gguf_get_alignment(q));
  if (argc < 3) return 0;
  struct gguf_init_params sp = { .no_alloc = true, .ctx = NULL };
  struct gguf_context *s = gguf_init_from_file(argv[2], sp);
  const unsigned char *mq = map_file(argv[1]), *ms = map_file(argv[2]);
  if (!s || !mq || !ms) { printf("cannot read %s\n", argv[2]); return 1; }
  int bad = 0, converted = 0;
  for (int64_t i = 0; i < gguf_get_n_tensors(q); i++) {
    const char *name = gguf_get_tensor_name(q, i);
    int64_t j = gguf_find_tensor(s, name);
    if (j < 0) { printf("  %s: not in %s\n", name, argv[2]); bad++; continue; }
    enum ggml_type tq = gguf_get_tensor_type(q, i), ts = gguf_get_tensor_type(s, j);
    const unsigned char *dq = tensor_data(q, mq, i), *ds = tensor_data(s, ms, j);
    size_t bq = gguf_get_tensor_size(q, i), bs = gguf_get_tensor_size(s, j);
    if (tq == ts) {
      if (bq != bs || memcmp(dq, ds, bq)) { printf("  %s: copied wrong\n", name); bad++; }
      continue;
    }
    const struct ggml_tensor *t = ggml_get_tensor(ctx, name);
    int64_t n = ggml_nelements(t), ne0 = t->ne[0];
    float *f = malloc((size_t)n * 4);
    unsigned char *out = malloc(bq);
    if (ts == GGML_TYPE_F32) memcpy(f, ds, (size_t)n * 4);
    else if (ts == GGML_TYPE_F16) ggml_fp16_to_fp32_row((const ggml_fp16_t *)ds, f, n);
    else ggml_bf16_to_fp32_row((const ggml_bf16_t *)ds, f, n);
    size_t w = ggml_quantize_chunk(tq, f, out, 0, n / ne0, ne0, NULL);
    converted++;
    if (w != bq || memcmp(out, dq, bq)) {
      size_t k = 0;
      while (k < bq && out[k] == dq[k]) k++;
      printf("  %s (%s): differs from ggml at byte %zu of %zu\n", name, ggml_type_name(tq), k, bq);
      bad++;
    }
    free(f);
    free(out);
  }
  printf("  %d tensors converted, %d differ from ggml\n", converted, bad);
  return bad != 0;
}
