/* quantize_model.c: a GGUF model to a quantized GGUF model (`tg quantize`):
 * which tensors become which type (llama.cpp's rules, see quantize.h), and
 * the conversion, streamed tensor by tensor, a few million values at a
 * time, straight from the input's mapping into the writer. */
#include <inttypes.h>
#include "quant/quantize.h"
#include "dtype/fpconv.h"
#include "io/gguf_writer.h"
#include "util/util.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static bool is_float_type(uint32_t t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

/* Names llama.cpp never quantizes: norms, routers, positional tables and
 * other small or sensitive 2-D weights. */
static bool keep_float(const char *name) {
  static const char *const parts[] = {
    "_norm.weight", "ffn_gate_inp.weight", "altup", "laurel", "per_layer_model_proj", "ssm_conv1d",
    "shortconv.conv.weight", "attn_rel_b.weight", ".position_embd", ".rel_pos", ".patch_embd", ".patch_merger",
    "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight",
    "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
    "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
  };
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    if (strstr(name, parts[i])) return true;
  return !strcmp(name, "position_embd.weight") || !strcmp(name, "token_types.weight");
}

static int block_size(uint32_t t) { return ggml_type_info(t)->block_size; }

uint32_t quant_tensor_type(const char *name, uint32_t type, int n_dims, const int64_t *ne, uint32_t target, bool has_output,
                           bool pure) {
  if (!is_float_type(type) || n_dims < 2 || !ends_with(name, "weight") || keep_float(name)) return type;
  uint32_t t = target;
  if (is_float_type(target)) return t;
  bool token_embd = !strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight");
  if (!pure && (!strcmp(name, "output.weight") || (!has_output && token_embd))) {
    if (ne[0] % block_size(t)) t = GGML_TYPE_Q8_0;
    else if (t != GGML_TYPE_Q8_0) t = GGML_TYPE_Q6_K;
  } else if (!pure && token_embd && (target == GGML_TYPE_TQ1_0 || target == GGML_TYPE_TQ2_0)) {
    t = GGML_TYPE_Q4_K;
  }
  if (ne[0] % block_size(t)) {
    switch (t) {
      case GGML_TYPE_IQ4_XS: t = GGML_TYPE_IQ4_NL; break;
      case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_TQ1_0: case GGML_TYPE_TQ2_0: t = GGML_TYPE_Q4_0; break;
      case GGML_TYPE_Q4_K: t = GGML_TYPE_Q5_0; break;
      case GGML_TYPE_Q5_K: t = GGML_TYPE_Q5_1; break;
      case GGML_TYPE_Q6_K: t = GGML_TYPE_Q8_0; break;
      default: break;
    }
    if (ne[0] % block_size(t)) t = GGML_TYPE_F16;
  }
  return t;
}

int quant_llama_ftype(uint32_t t) {
  switch (t) {
    case GGML_TYPE_F32: return 0;
    case GGML_TYPE_F16: return 1;
    case GGML_TYPE_Q4_0: return 2;
    case GGML_TYPE_Q4_1: return 3;
    case GGML_TYPE_Q8_0: return 7;
    case GGML_TYPE_Q5_0: return 8;
    case GGML_TYPE_Q5_1: return 9;
    case GGML_TYPE_Q2_K: return 10;
    case GGML_TYPE_Q3_K: return 11;   /* Q3_K_S */
    case GGML_TYPE_Q4_K: return 14;   /* Q4_K_S */
    case GGML_TYPE_Q5_K: return 16;   /* Q5_K_S */
    case GGML_TYPE_Q6_K: return 18;
    case GGML_TYPE_IQ4_NL: return 25;
    case GGML_TYPE_IQ4_XS: return 30;
    case GGML_TYPE_BF16: return 32;
    case GGML_TYPE_TQ1_0: return 36;
    case GGML_TYPE_TQ2_0: return 37;
    default: return -1;
  }
}

typedef struct {
  const gguf_file *f;
  const uint32_t *types;     /* output type per tensor */
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
  const gguf_tensor_info *ti = &c->f->tensors[i];
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

int quant_model(const char *in, const char *out, uint32_t target, const quant_model_opts *opts) {
  int ftype = quant_llama_ftype(target);
  if (ftype < 0 || !quant_can_write(target)) {
    const ggml_type_traits *tt = ggml_type_info(target);
    return tg_seterr("quantize: tg cannot quantize to %s", tt && tt->name ? tt->name : "that type");
  }
  gguf_file *f = gguf_open(in);
  if (!f) return -1;
  gguf_writer *w = gguf_writer_new();
  uint32_t *types = tg_xcalloc((size_t)f->n_tensors + 1, sizeof *types);
  int rc = 0;
  for (int i = 0; i < f->n_kv && rc == 0; i++)
    if (strncmp(f->kv[i].key, "split.", 6)) rc = gguf_w_copy_kv(w, &f->kv[i]);
  rc = rc ? rc : gguf_w_set_u32(w, "general.quantization_version", 2);
  rc = rc ? rc : gguf_w_set_u32(w, "general.file_type", (uint32_t)ftype);
  bool has_output = gguf_find_tensor(f, "output.weight") != NULL;
  for (int i = 0; i < f->n_tensors && rc == 0; i++) {
    const gguf_tensor_info *ti = &f->tensors[i];
    types[i] = quant_tensor_type(ti->name, ti->type, ti->n_dims, ti->ne, target, has_output, opts && opts->pure);
    if (gguf_w_add_tensor(w, ti->name, types[i], ti->n_dims, ti->ne, NULL) < 0) rc = -1;
  }
  qm_ctx c = { f, types, opts ? opts->log : NULL, 0, 0, 0 };
  if (rc == 0) rc = gguf_writer_write(w, out, qm_fill, &c);
  if (rc == 0 && c.log)
    fprintf(c.log, "model size: %.2f MiB -> %.2f MiB (%.2f -> %.2f bits per weight)\n", mib(c.in_total), mib(c.out_total),
            c.n_elems ? (double)c.in_total * 8 / c.n_elems : 0.0, c.n_elems ? (double)c.out_total * 8 / c.n_elems : 0.0);
  free(types);
  gguf_writer_free(w);
  gguf_close(f);
  return rc;
}
