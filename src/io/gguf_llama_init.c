/* gguf_llama_init.c: writes a random-weight llama GGUF (see
 * gguf_llama_init.h). */
#include <math.h>
#include "io/gguf_llama_init.h"
#include "io/gguf_writer.h"
#include "quant/quantize.h"
#include "runtime/thread_pool.h"
#include "util/util.h"

llama_init_params llama_init_defaults(void) {
  return (llama_init_params){ 768, 12, 12, 4, 2048, 32000, 2048, quant_ftype_by_name("F32"), 0, 0.02f, 10000.f, 1e-5f,
                              "tg-random-llama", 0, 0 };
}

/* ---- deterministic normals: each row has its own generator (seeded from
 * the seed, tensor and row), so rows can be made on any core in any order */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* n normals times std (Box-Muller on two 24-bit uniforms in (0, 1]). */
static void normal_row(uint64_t seed, float std, float *out, int64_t n) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i += 2) {
    uint64_t r = splitmix64(&s);
    float u1 = ((float)(r >> 40) + 1.0f) * 0x1p-24f, u2 = (float)((r >> 16) & 0xFFFFFF) * 0x1p-24f;
    float rad = sqrtf(-2.0f * logf(u1)) * std, th = 6.2831853f * u2;
    out[i] = rad * cosf(th);
    if (i + 1 < n) out[i + 1] = rad * sinf(th);
  }
}

typedef struct {
  const llama_init_params *p;
  float *buf;
  int64_t n, row0, nrows;
  int tensor;
} gen_job;

static void gen_worker(void *arg, int core, int ncores) {
  const gen_job *j = arg;
  int64_t per = (j->nrows + ncores - 1) / ncores, r0 = core * per, r1 = r0 + per < j->nrows ? r0 + per : j->nrows;
  for (int64_t r = r0; r < r1; r++) {
    uint64_t s = j->p->seed * 0x100000001b3ULL ^ ((uint64_t)j->tensor << 40) ^ (uint64_t)(j->row0 + r);
    s = splitmix64(&s);
    normal_row(s, j->p->std, j->buf + r * j->n, j->n);
  }
}

/* ---- the tensor list */

typedef struct {
  char name[64];
  int64_t ne[3];
  int n_dims;
  uint32_t type;
} tensor_spec;
typedef VEC(tensor_spec) tensor_specs;

/* ggml's order: ne0 the row length; ne2 0 for a matrix, ne1 0 for a vector */
static void add_spec(tensor_specs *v, const char *name, int64_t ne0, int64_t ne1, int64_t ne2) {
  tensor_spec t = { { 0 }, { ne0, ne1, ne2 }, ne2 ? 3 : ne1 ? 2 : 1, GGML_TYPE_F32 };
  snprintf(t.name, sizeof t.name, "%s", name);
  VEC_PUSH(*v, t);
}

typedef struct {
  const llama_init_params *p;
  tensor_spec *t;
  FILE *log;
  int n;
} init_ctx;

static int init_fill(void *vctx, int i, gguf_w_sink *s) {
  init_ctx *c = vctx;
  const tensor_spec *t = &c->t[i];
  int64_t n = t->ne[0], nrows = (t->n_dims >= 2 ? t->ne[1] : 1) * (t->n_dims == 3 ? t->ne[2] : 1);
  uint64_t out_row;
  ggml_row_bytes(t->type, n, &out_row);
  int64_t chunk = (1 << 22) / n;
  if (chunk < 1) chunk = 1;
  if (chunk > nrows) chunk = nrows;
  float *f = malloc((size_t)(chunk * n) * 4);
  unsigned char *q = malloc((size_t)((uint64_t)chunk * out_row));
  int rc = f && q ? 0 : tg_seterr("llm-init: out of memory");
  bool norm = t->n_dims == 1;
  for (int64_t r = 0; r < nrows && rc == 0; r += chunk) {
    int64_t k = nrows - r < chunk ? nrows - r : chunk;
    if (norm) for (int64_t e = 0; e < k * n; e++) f[e] = 1.0f;
    else {
      gen_job j = { c->p, f, n, r, k, i };
      tg_pool_run(gen_worker, &j, (int)(k * n / 65536 + 1));
    }
    int64_t w = quant_rows(t->type, f, q, k, n);
    rc = w < 0 ? -1 : gguf_w_sink_write(s, q, (size_t)w);
  }
  free(f);
  free(q);
  if (rc == 0 && c->log && (t->n_dims >= 2 || i == c->n - 1)) {
    fprintf(c->log, "[%4d/%4d] %-28s %s\n", i + 1, c->n, t->name, ggml_type_info(t->type)->name);
    fflush(c->log);
  }
  return rc;
}

/* ---- the SentencePiece-style vocabulary: <unk> <s> </s>, the 256 byte
 * tokens, then distinct filler pieces "▁a", "▁b", ..., "▁ba", ... */

enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_BYTE = 6 };

static int set_vocab(gguf_writer *w, int vocab) {
  char **tok = tg_xmalloc((size_t)vocab * sizeof *tok);
  float *score = tg_xmalloc((size_t)vocab * sizeof *score);
  int32_t *type = tg_xmalloc((size_t)vocab * sizeof *type);
  for (int i = 0; i < vocab; i++) {
    char b[32];
    if (i < 3) { snprintf(b, sizeof b, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>"); type[i] = i ? TOK_CONTROL : TOK_UNKNOWN; score[i] = 0; }
    else if (i < 259) { snprintf(b, sizeof b, "<0x%02X>", i - 3); type[i] = TOK_BYTE; score[i] = 0; }
    else {
      int k = i - 259, at = 3;
      memcpy(b, "\xe2\x96\x81", 3);   /* U+2581, SentencePiece's word-start mark */
      char rev[16];
      int nr = 0;
      do { rev[nr++] = (char)('a' + k % 26); k = k / 26 - 1; } while (k >= 0);
      while (nr) b[at++] = rev[--nr];
      b[at] = 0;
      type[i] = TOK_NORMAL;
      score[i] = -(float)(i - 259);
    }
    tok[i] = tg_xstrdup(b);
  }
  int rc = gguf_w_set_str(w, "tokenizer.ggml.model", "llama");
  rc = rc ? rc : gguf_w_set_str_arr(w, "tokenizer.ggml.tokens", (const char *const *)tok, (uint64_t)vocab);
  rc = rc ? rc : gguf_w_set_arr(w, "tokenizer.ggml.scores", GGUF_F32, score, (uint64_t)vocab);
  rc = rc ? rc : gguf_w_set_arr(w, "tokenizer.ggml.token_type", GGUF_I32, type, (uint64_t)vocab);
  rc = rc ? rc : gguf_w_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
  rc = rc ? rc : gguf_w_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
  rc = rc ? rc : gguf_w_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
  rc = rc ? rc : gguf_w_set_bool(w, "tokenizer.ggml.add_bos_token", true);
  rc = rc ? rc : gguf_w_set_bool(w, "tokenizer.ggml.add_eos_token", false);
  for (int i = 0; i < vocab; i++) free(tok[i]);
  free(tok); free(score); free(type);
  return rc;
}

int64_t llama_init_write(const char *path, const llama_init_params *p, FILE *log) {
  if (p->dim <= 0 || p->layers <= 0 || p->heads <= 0 || p->kv_heads <= 0 || p->ffn <= 0 || p->ctx <= 0)
    return tg_seterr("llm-init: dim, layers, heads, kv-heads, ffn and ctx must be positive");
  if (p->dim % p->heads || p->heads % p->kv_heads)
    return tg_seterr("llm-init: dim (%d) must be a multiple of heads (%d), and heads of kv-heads (%d)", p->dim, p->heads, p->kv_heads);
  if (p->experts < 0 || p->experts_used < 0 || (p->experts && (p->experts_used < 1 || p->experts_used > p->experts)))
    return tg_seterr("llm-init: experts-used (%d) must be 1 to experts (%d)", p->experts_used, p->experts);
  if (p->vocab < 259) return tg_seterr("llm-init: vocab must be at least 259 (<unk> <s> </s> and 256 byte tokens)");
  if (!p->ft || !quant_can_write(p->ft->type)) return tg_seterr("llm-init: no file type, or one tg cannot write");
  int head_dim = p->dim / p->heads, kv_dim = head_dim * p->kv_heads;

  tensor_specs ts = { 0 };
  char nm[64];
  add_spec(&ts, "token_embd.weight", p->dim, p->vocab, 0);
  int64_t E = p->experts;
  for (int l = 0; l < p->layers; l++) {
    static const char *const names[] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
    static const char *const moe[] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate_inp",
                                       "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps" };
    const int64_t shape[][3] = { { p->dim, 0, 0 }, { p->dim, p->dim, 0 }, { p->dim, kv_dim, 0 }, { p->dim, kv_dim, 0 }, { p->dim, p->dim, 0 },
                                 { p->dim, 0, 0 }, { p->dim, p->ffn, 0 }, { p->dim, p->ffn, 0 }, { p->ffn, p->dim, 0 } };
    const int64_t moe_shape[][3] = { { p->dim, E, 0 }, { p->dim, p->ffn, E }, { p->dim, p->ffn, E }, { p->ffn, p->dim, E } };
    for (int k = 0; k < (E ? 10 : 9); k++) {
      snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, E ? moe[k] : names[k]);
      const int64_t *s = E && k >= 6 ? moe_shape[k - 6] : shape[k];
      add_spec(&ts, nm, s[0], s[1], s[2]);
    }
  }
  add_spec(&ts, "output_norm.weight", p->dim, 0, 0);
  add_spec(&ts, "output.weight", p->dim, p->vocab, 0);

  /* the types llama-quantize would give an F32 model of this shape */
  quant_plan plan = { .ft = p->ft, .has_output = true, .n_gqa = p->heads / p->kv_heads, .n_expert = p->experts, .n_layer = p->layers,
                      .n_attention_wv = p->layers, .is_70b = p->layers == 80 && p->heads != p->kv_heads };
  gguf_writer *w = gguf_writer_new();
  int rc = 0;
  int64_t nparams = 0;
  for (int i = 0; i < ts.n && rc == 0; i++) {
    tensor_spec *t = &ts.v[i];
    t->type = quant_plan_type(&plan, t->name, GGML_TYPE_F32, t->n_dims, t->ne);
    if (gguf_w_add_tensor(w, t->name, t->type, t->n_dims, t->ne, NULL) < 0) rc = -1;
    nparams += t->ne[0] * (t->n_dims >= 2 ? t->ne[1] : 1) * (t->n_dims == 3 ? t->ne[2] : 1);
  }
  rc = rc ? rc : gguf_w_set_str(w, "general.architecture", "llama");
  rc = rc ? rc : gguf_w_set_str(w, "general.type", "model");
  rc = rc ? rc : gguf_w_set_str(w, "general.name", p->name ? p->name : "tg-random-llama");
  rc = rc ? rc : gguf_w_set_u32(w, "llama.block_count", (uint32_t)p->layers);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.context_length", (uint32_t)p->ctx);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.embedding_length", (uint32_t)p->dim);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.feed_forward_length", (uint32_t)p->ffn);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.attention.head_count", (uint32_t)p->heads);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.attention.head_count_kv", (uint32_t)p->kv_heads);
  rc = rc ? rc : gguf_w_set_f32(w, "llama.rope.freq_base", p->rope_freq_base);
  rc = rc ? rc : gguf_w_set_f32(w, "llama.attention.layer_norm_rms_epsilon", p->rms_eps);
  rc = rc ? rc : gguf_w_set_u32(w, "general.file_type", (uint32_t)p->ft->ftype);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.vocab_size", (uint32_t)p->vocab);
  if (E) rc = rc ? rc : gguf_w_set_u32(w, "llama.expert_count", (uint32_t)E);
  if (E) rc = rc ? rc : gguf_w_set_u32(w, "llama.expert_used_count", (uint32_t)p->experts_used);
  rc = rc ? rc : gguf_w_set_u32(w, "llama.rope.dimension_count", (uint32_t)head_dim);
  rc = rc ? rc : set_vocab(w, p->vocab);
  rc = rc ? rc : gguf_w_set_u32(w, "general.quantization_version", 2);
  init_ctx c = { p, ts.v, log, ts.n };
  if (rc == 0) rc = gguf_writer_write(w, path, init_fill, &c);
  gguf_writer_free(w);
  VEC_FREE(ts);
  return rc < 0 ? -1 : nparams;
}
