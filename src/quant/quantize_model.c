/* quantize_model.c: a GGUF model to a quantized GGUF model (`tg quantize`),
 * laid out as llama-quantize lays it out (tensor order, metadata order),
 * each tensor typed by quantize_plan.c and converted a few million values
 * at a time, straight from the input's mapping into the writer. */
#include <inttypes.h>
#include "quant/quantize.h"
#include "dtype/fpconv.h"
#include "io/gguf_writer.h"
#include "util/util.h"

typedef struct {
  const gguf_file *f;
  const int *order;          /* output tensor i is input tensor order[i] */
  const uint32_t *types;     /* output type per output tensor */
  FILE *log;
  uint64_t in_total, out_total;
  double n_elems;
} qm_ctx;

/* Rows of n floats from ggml float type t at p. */
static void rows_to_f32(uint32_t t, const unsigned char *p, float *out, int64_t n) {
  if (t == GGML_TYPE_F32) { memcpy(out, p, (size_t)n * 4); return; }
  for (int64_t i = 0; i < n; i++) {
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    out[i] = t == GGML_TYPE_F16 ? tg_cvt_f16_f32(h) : tg_cvt_bf16_f32(h);
  }
}

static double mib(uint64_t n) { return (double)n / (1 << 20); }

static int qm_fill(void *vctx, int i, gguf_w_sink *s) {
  qm_ctx *c = vctx;
  const gguf_tensor_info *ti = &c->f->tensors[c->order[i]];
  const unsigned char *src = ti->map->base + ti->file_offset;
  uint32_t t = c->types[i];
  uint64_t out_bytes = ti->nbytes;
  if (t == ti->type || ti->nbytes == 0) {   /* kept, or empty */
    if (gguf_w_sink_write(s, src, (size_t)ti->nbytes) < 0) return -1;
  } else {
    int64_t n = ti->ne[0], nrows = (int64_t)(ti->nbytes / ((uint64_t)n * (ti->type == GGML_TYPE_F32 ? 4 : 2)));
    uint64_t in_row = (uint64_t)n * (ti->type == GGML_TYPE_F32 ? 4 : 2), out_row;
    ggml_row_bytes(t, n, &out_row);
    int64_t chunk = n ? (1 << 22) / n : 1;
    if (chunk < 1) chunk = 1;
    if (chunk > nrows) chunk = nrows;
    float *f = malloc((size_t)(chunk * n) * 4 + 1);
    unsigned char *q = malloc((size_t)((uint64_t)chunk * out_row) + 1);
    int rc = f && q ? 0 : tg_seterr("quantize: out of memory for tensor '%s'", ti->name);
    for (int64_t r = 0; r < nrows && rc == 0; r += chunk) {
      int64_t k = nrows - r < chunk ? nrows - r : chunk;
      rows_to_f32(ti->type, src + (uint64_t)r * in_row, f, k * n);
      int64_t w = quant_rows(t, f, q, k, n);
      rc = w < 0 ? -1 : gguf_w_sink_write(s, q, (size_t)w);
    }
    free(f);
    free(q);
    if (rc < 0) return -1;
    out_bytes = (uint64_t)nrows * out_row;
  }
  c->in_total += ti->nbytes;
  double ne = 1;
  for (int d = 0; d < ti->n_dims; d++) ne *= (double)ti->ne[d];
  c->n_elems += ne;
  c->out_total += out_bytes;
  if (c->log) {
    char shape[96];
    int at = snprintf(shape, sizeof shape, "[");
    for (int d = 0; d < ti->n_dims; d++) at += snprintf(shape + at, sizeof shape - (size_t)at, "%s%" PRId64, d ? ", " : "", ti->ne[d]);
    snprintf(shape + at, sizeof shape - (size_t)at, "]");
    fprintf(c->log, "[%4d/%4d] %-40s %-18s %6s -> %-6s %9.2f MiB -> %9.2f MiB\n", i + 1, c->f->n_tensors, ti->name, shape,
            ggml_type_info(ti->type)->name, ggml_type_info(t)->name, mib(ti->nbytes), mib(out_bytes));
    fflush(c->log);
  }
  return 0;
}

/* qsort over tensor indices in llama.cpp's order */
static const gguf_file *sort_file;
static int by_llama_order(const void *a, const void *b) {
  return quant_tensor_cmp(sort_file->tensors[*(const int *)a].name, sort_file->tensors[*(const int *)b].name);
}

int quant_model(const char *in, const char *out, const quant_ftype *ft, const quant_model_opts *opts) {
  if (!quant_can_write(ft->type)) return tg_seterr("quantize: tg cannot write %s", ft->name);
  gguf_file *f = gguf_open(in);
  if (!f) return -1;
  gguf_writer *w = gguf_writer_new();
  int *order = tg_xcalloc((size_t)f->n_tensors + 1, sizeof *order);
  uint32_t *types = tg_xcalloc((size_t)f->n_tensors + 1, sizeof *types);
  int rc = 0;
  /* metadata as llama-quantize writes it: copied in order without the
   * split keys, then these two removed and appended */
  for (int i = 0; i < f->n_kv && rc == 0; i++)
    if (strncmp(f->kv[i].key, "split.", 6)) rc = gguf_w_copy_kv(w, &f->kv[i]);
  gguf_w_remove(w, "general.quantization_version");
  gguf_w_remove(w, "general.file_type");
  rc = rc ? rc : gguf_w_set_u32(w, "general.quantization_version", 2);
  rc = rc ? rc : gguf_w_set_u32(w, "general.file_type", (uint32_t)ft->ftype);
  /* tensors in llama.cpp's order, typed in that order (the plan counts
   * layers as it goes) */
  for (int i = 0; i < f->n_tensors; i++) order[i] = i;
  sort_file = f;
  qsort(order, (size_t)f->n_tensors, sizeof *order, by_llama_order);
  quant_plan plan;
  quant_plan_for_file(&plan, ft, opts && opts->pure, f);
  for (int i = 0; i < f->n_tensors && rc == 0; i++) {
    const gguf_tensor_info *ti = &f->tensors[order[i]];
    types[i] = quant_plan_type(&plan, ti->name, ti->type, ti->n_dims, ti->ne);
    if (!quant_can_write(types[i]) && types[i] != ti->type)
      rc = tg_seterr("quantize: tensor '%s' would need type %s, which tg cannot write", ti->name, ggml_type_info(types[i])->name);
    else if (gguf_w_add_tensor(w, ti->name, types[i], ti->n_dims, ti->ne, NULL) < 0) rc = -1;
  }
  qm_ctx c = { f, order, types, opts ? opts->log : NULL, 0, 0, 0 };
  if (rc == 0) rc = gguf_writer_write(w, out, qm_fill, &c);
  if (rc == 0 && c.log)
    fprintf(c.log, "model size: %.2f MiB -> %.2f MiB (%.2f -> %.2f bits per weight)\n", mib(c.in_total), mib(c.out_total),
            c.n_elems ? (double)c.in_total * 8 / c.n_elems : 0.0, c.n_elems ? (double)c.out_total * 8 / c.n_elems : 0.0);
  free(order);
  free(types);
  gguf_writer_free(w);
  gguf_close(f);
  return rc;
}
