/* cmd_gguf.c: `tg gguf FILE` prints a GGUF file's header, every metadata
 * entry (type and value) and the tensor table, like llama.cpp's gguf-dump. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tg.h"
#include "commands.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"

/* An array of arrays: the element type and count of the first few. */
static void format_nested(const gguf_kv *kv, char *buf, size_t n) {
  const unsigned char *p = kv->arr_data;
  size_t at = (size_t)snprintf(buf, n, "[");
  for (uint64_t k = 0; k < kv->arr_n && k < 6 && at < n; k++) {
    uint32_t et;
    uint64_t cnt;
    memcpy(&et, p, 4);
    memcpy(&cnt, p + 4, 8);
    at += (size_t)snprintf(buf + at, n - at, "%s[%" PRIu64 " x %s]", k ? ", " : "", cnt, gguf_type_name(et));
    p += 12 + gguf_arr_bytes(et, cnt, p + 12);
  }
  if (at < n) snprintf(buf + at, n - at, "%s] (%" PRIu64 " x array)", kv->arr_n > 6 ? ", ..." : "", kv->arr_n);
}

static void print_kv(int i, const gguf_kv *kv) {
  char type[24], val[512];
  if (kv->type == GGUF_ARRAY) snprintf(type, sizeof type, "[%s]", gguf_type_name(kv->arr_type));
  else snprintf(type, sizeof type, "%s", gguf_type_name(kv->type));
  if (kv->type == GGUF_ARRAY && kv->arr_type == GGUF_ARRAY) format_nested(kv, val, sizeof val);
  else gguf_kv_format(kv, val, sizeof val);
  printf("%6d: %-10s %s = %s\n", i + 1, type, kv->key, val);
}

static void print_tensor(int i, const gguf_tensor_info *t, bool parts) {
  char shape[96];
  int at = snprintf(shape, sizeof shape, "[");
  for (int d = 0; d < t->n_dims; d++) at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%" PRId64, d ? ", " : "", t->ne[d]);
  snprintf(shape + at, sizeof shape - (size_t)at, "]");
  const ggml_type_traits *tt = ggml_type_info(t->type);
  printf("%6d  %-8s %-26s %14" PRIu64 " %14" PRIu64 "  %s", i + 1, tt ? tt->name : "?", shape, t->offset, t->nbytes, t->name);
  if (parts) printf("  (part %d)", t->part + 1);
  printf("\n");
}

int cmd_gguf(int argc, char **argv) {
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "usage: tg gguf FILE.gguf\n  prints the header, every metadata entry and the tensor table\n");
    return 2;
  }
  gguf_file *f = gguf_open(argv[1]);
  if (!f) { fprintf(stderr, "tg gguf: %s\n", tg_error()); return 1; }
  uint64_t params = 0, bytes = 0;
  for (int i = 0; i < f->n_tensors; i++) {
    uint64_t n = 1;
    for (int d = 0; d < f->tensors[i].n_dims; d++) n *= (uint64_t)f->tensors[i].ne[d];
    params += n;
    bytes += f->tensors[i].nbytes;
  }
  printf("%s: GGUF v%u, %d tensors, %d metadata entries, alignment %" PRIu64, f->path, f->version, f->n_tensors, f->n_kv, f->alignment);
  if (f->n_parts > 1) printf(", %d parts", f->n_parts);
  printf("\n");
  if (f->n_tensors)
    printf("  data section at byte %zu of %zu; %" PRIu64 " parameters, %" PRIu64 " bytes of tensor data (%.2f bits per weight)\n",
           f->tensors[0].file_offset - (size_t)f->tensors[0].offset, f->parts[0]->size, params, bytes,
           params ? (double)bytes * 8 / (double)params : 0.0);
  printf("metadata:\n");
  for (int i = 0; i < f->n_kv; i++) print_kv(i, &f->kv[i]);
  printf("tensors:\n%6s  %-8s %-26s %14s %14s  %s\n", "#", "type", "ne", "offset", "bytes", "name");
  for (int i = 0; i < f->n_tensors; i++) print_tensor(i, &f->tensors[i], f->n_parts > 1);
  gguf_close(f);
  return 0;
}
