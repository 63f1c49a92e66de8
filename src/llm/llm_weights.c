/* llm_weights.c: a model's tensors from its GGUF file, by llama.cpp's names
 * (token_embd, blk.N.attn_q, ...). Each is copied out of the mapping once
 * and stays in the file's type; missing required tensors are named in the
 * error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm/llm.h"
#include "io/gguf_loader.h"
#include "tensor/tensor.h"
#include "util/util.h"

/* Records quantized weight w (lazy floats over its packed bytes raw).
 * Types with a row-packed form (Q4_0, Q8_0; Q4_K, Q6_K below; tg_quant_pack_rows) are
 * packed once, here: matmuls read that copy, w's values come from it too
 * (tg_dequantize_rows: the same numbers), and raw is dropped, so the
 * weights are in memory once. Otherwise the model owns raw from now on.
 * Returns the weight to use (w or its replacement); NULL on failure. */
static tg_tensor *keep_packed(tg_llm *m, tg_tensor *raw, tg_tensor *w, int type) {
  if (!w) return NULL;
  tg_shape ws = tg_shape_of(w);
  /* K-quants only for the vocabulary matrix (the output, or the embedding
   * tied to it) unless TG_LLM_ROWS_K=1: their row-packed graphs are big,
   * and scheduling one per layer made a Q4_K_M model's first tokens take
   * seconds (docs/llm.md). tg_quant_pack_rows checks the shape. */
  bool kquant = type == TG_GGML_Q4_K || type == TG_GGML_Q6_K;
  bool rows = type == TG_GGML_Q4_0 || type == TG_GGML_Q8_0 ||
              (kquant && ((ws.ndim == 2 && ws.d[0] == m->cfg.n_vocab) || tg_getenv_int("TG_LLM_ROWS_K", 0)));
  tg_tensor *sc = NULL, *q = NULL;
  if (rows && !getenv("TG_LLM_NO_ROWS") && tg_quant_pack_rows(raw, type, ws, &sc, &q) == 0) {
    tg_tensor *wr = tg_realize(sc) == 0 && tg_realize(q) == 0 ? tg_dequantize_rows(sc, q, type, ws) : NULL;
    if (!wr) { tg_free(sc), tg_free(q); return NULL; }
    tensor_adopt(NULL, sc), tensor_adopt(NULL, q);
    w = wr, raw = NULL;   /* the caller's scope frees the old w and raw */
  } else {
    tg_clear_error();   /* no packed form: the packed bytes serve */
    tensor_adopt(NULL, raw);
  }
  m->packed = tg_xrealloc(m->packed, sizeof *m->packed * (size_t)(m->npacked + 1));
  m->packed[m->npacked++] = (llm_packed){ w, raw, type, sc, q };
  return w;
}

const llm_packed *llm_packed_of(const tg_llm *m, const tg_tensor *w) {
  for (int i = 0; i < m->npacked; i++) if (m->packed[i].w == w) return &m->packed[i];
  return NULL;
}

/* The tensor called name, realized on device and owned by the model; NULL
 * when absent (an error only when required). *err is set on failure. */
static tg_tensor *load(tg_llm *m, const char *device, const char *name, bool required, bool *err) {
  if (*err) return NULL;
  const gguf_tensor_info *g = gguf_find_tensor(m->file, name);
  if (!g) {
    if (required) { tg_seterr("%s: tensor '%s' is missing (architecture %s)", m->file->path, name, m->cfg.arch); *err = true; }
    return NULL;
  }
  tg_scope_begin();
  /* the stored form is copied out of the file once; quantized bytes stay
   * packed, their values a lazy graph that fuses into each matmul */
  tg_tensor *t = gguf_tensor_stored(g, device);
  if (t && tg_realize(t) < 0) t = NULL;
  if (t && gguf_tensor_quantized(g)) t = keep_packed(m, t, tg_dequantize(t, (int)g->type, gguf_tensor_shape(g)), (int)g->type);
  if (t) tensor_adopt(NULL, t);
  tg_scope_end();
  tg_release_cached_memory();   /* a copy that packing replaced goes back now, not at the end */
  if (!t) *err = true;
  return t;
}

static bool shaped3(tg_llm *m, tg_tensor *t, const char *name, int64_t d0, int64_t d1, int64_t d2) {
  tg_shape s = tg_shape_of(t);
  if (s.ndim == 3 && s.d[0] == d0 && s.d[1] == d1 && s.d[2] == d2) return true;
  tg_seterr("%s: tensor blk.N.%s.weight is %d-D (%lld, %lld, %lld), expected (%lld, %lld, %lld)", m->file->path, name, s.ndim, (long long)s.d[0],
            (long long)s.d[1], (long long)s.d[2], (long long)d0, (long long)d1, (long long)d2);
  return false;
}

/* Matrices that multiply the same input, stacked by rows into one weight
 * (q|k|v, gate|up), so one matvec kernel computes them all: their rows must
 * have the same type and length. Checks each one's shape (rows[i], cols).
 * NULL (no error) when they cannot be stacked; *err on failure. */
static tg_tensor *load_stacked(tg_llm *m, const char *device, const char *const *names, const int64_t *rows, int n, int64_t cols, bool *err) {
  const gguf_tensor_info *g[4];
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    g[i] = gguf_find_tensor(m->file, names[i]);
    if (!g[i] || g[i]->n_dims != 2 || g[i]->ne[0] != cols || g[i]->ne[1] != rows[i] || g[i]->type != g[0]->type) return NULL;
    total += rows[i];
  }
  bool quant = gguf_tensor_quantized(g[0]);
  if (!gguf_tensor_loadable(g[0])) return NULL;
  tg_scope_begin();
  tg_tensor *parts[4];
  for (int i = 0; i < n; i++) {
    parts[i] = gguf_tensor_stored(g[i], device);
  }
  tg_tensor *t = tg_contiguous(tg_cat(parts, n, 0));
  if (t && tg_realize(t) < 0) t = NULL;
  if (t && quant) t = keep_packed(m, t, tg_dequantize(t, (int)g[0]->type, TG_SHAPE(total, cols)), (int)g[0]->type);
  if (t) tensor_adopt(NULL, t);
  tg_scope_end();
  tg_release_cached_memory();   /* a copy that packing replaced goes back now, not at the end */
  if (!t) *err = true;
  return t;
}

/* Checks that t has the shape (d0, d1) (or (d0) when d1 < 0; any when d0 < -2). */
static bool shaped(tg_llm *m, tg_tensor *t, const char *name, int64_t d0, int64_t d1, bool *err) {
  if (!t || *err || d0 < -2) return !*err;
  tg_shape s = tg_shape_of(t);
  bool ok = d1 < 0 ? s.ndim == 1 && s.d[0] == d0 : s.ndim == 2 && s.d[0] == d0 && s.d[1] == d1;
  if (!ok) {
    tg_seterr("%s: tensor '%s' has shape (%lld%s%lld), expected (%lld%s%lld)", m->file->path, name, (long long)s.d[0], s.ndim > 1 ? ", " : "",
              s.ndim > 1 ? (long long)s.d[1] : 0LL, (long long)d0, d1 >= 0 ? ", " : "", d1 >= 0 ? (long long)d1 : 0LL);
    *err = true;
  }
  return ok;
}

int llm_load_weights(tg_llm *m, const char *device) {
  tg_llm_config *c = &m->cfg;
  bool err = false;
  char n[128];
  m->tok_embd = load(m, device, "token_embd.weight", true, &err);
  if (err) return -1;
  tg_shape es = tg_shape_of(m->tok_embd);
  if (es.ndim != 2 || es.d[1] != c->dim) return tg_seterr("%s: token_embd.weight is not (n_vocab, %d)", m->file->path, c->dim);
  c->n_vocab = (int)es.d[0];
  m->output_norm = load(m, device, "output_norm.weight", true, &err);
  shaped(m, m->output_norm, "output_norm.weight", c->dim, -1, &err);
  m->output = load(m, device, "output.weight", false, &err);
  if (!m->output && !err) m->output = m->tok_embd;   /* tied embeddings */
  shaped(m, m->output, "output.weight", c->n_vocab, c->dim, &err);
  int q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
  m->layers = tg_xcalloc((size_t)c->n_layers, sizeof *m->layers);
  for (int i = 0; i < c->n_layers && !err; i++) {
    llm_layer *l = &m->layers[i];
#define W(field, suffix, req, d0, d1) \
    do { snprintf(n, sizeof n, "blk.%d.%s", i, suffix); l->field = load(m, device, n, req, &err); shaped(m, l->field, n, d0, d1, &err); } while (0)
    W(attn_norm, "attn_norm.weight", !m->post_norms, c->dim, -1);
    bool mla = c->kv_lora_rank > 0;
    if (mla) {
      int nope = c->head_dim - c->rope_dim;
      if (c->q_lora_rank) {
        W(q_a, "attn_q_a.weight", true, c->q_lora_rank, c->dim);
        W(q_a_norm, "attn_q_a_norm.weight", true, c->q_lora_rank, -1);
        W(q_b, "attn_q_b.weight", true, q_dim, c->q_lora_rank);
      } else {
        W(wq, "attn_q.weight", true, q_dim, c->dim);
      }
      W(kv_a, "attn_kv_a_mqa.weight", true, c->kv_lora_rank + c->rope_dim, c->dim);
      W(kv_a_norm, "attn_kv_a_norm.weight", true, c->kv_lora_rank, -1);
      W(kv_b, "attn_kv_b.weight", true, c->n_heads * (nope + c->head_dim_v), c->kv_lora_rank);
    } else {
      char nq[128], nk[128], nv[128];
      snprintf(nq, sizeof nq, "blk.%d.attn_q.weight", i);
      snprintf(nk, sizeof nk, "blk.%d.attn_k.weight", i);
      snprintf(nv, sizeof nv, "blk.%d.attn_v.weight", i);
      l->wqkv = load_stacked(m, device, (const char *[]){ nq, nk, nv }, (int64_t[]){ q_dim, kv_dim, c->n_kv_heads * c->head_dim_v }, 3, c->dim, &err);
      if (!l->wqkv) {
        W(wq, "attn_q.weight", true, q_dim, c->dim);
        W(wk, "attn_k.weight", true, kv_dim, c->dim);
        W(wv, "attn_v.weight", true, c->n_kv_heads * c->head_dim_v, c->dim);
      }
    }
    W(wo, "attn_output.weight", true, c->dim, c->n_heads * c->head_dim_v);
    W(bq, "attn_q.bias", false, q_dim, -1);
    W(bk, "attn_k.bias", false, kv_dim, -1);
    W(bv, "attn_v.bias", false, kv_dim, -1);
    W(q_norm, "attn_q_norm.weight", false, m->qk_norm_per_head ? c->head_dim : q_dim, -1);
    W(k_norm, "attn_k_norm.weight", false, m->qk_norm_per_head ? c->head_dim : kv_dim, -1);
    W(attn_post_norm, "post_attention_norm.weight", m->post_norms, c->dim, -1);
    W(ffn_norm, "ffn_norm.weight", !m->post_norms, c->dim, -1);
    W(ffn_post_norm, "post_ffw_norm.weight", m->post_norms, c->dim, -1);
    bool moe = c->n_experts > 0 && i >= c->n_dense_leading;
    if (!moe) {
      char ng[128], nu[128];
      snprintf(ng, sizeof ng, "blk.%d.ffn_gate.weight", i);
      snprintf(nu, sizeof nu, "blk.%d.ffn_up.weight", i);
      l->w_gate_up = load_stacked(m, device, (const char *[]){ ng, nu }, (int64_t[]){ c->ffn_dim, c->ffn_dim }, 2, c->dim, &err);
    }
    if (!l->w_gate_up) {
      W(w_gate, "ffn_gate.weight", !moe, c->ffn_dim, c->dim);
      W(w_up, "ffn_up.weight", !moe, c->ffn_dim, c->dim);
    }
    W(w_down, "ffn_down.weight", !moe, c->dim, c->ffn_dim);
    if (moe) {
      int E = c->n_experts, F = c->expert_ffn_dim, S = c->shared_ffn_dim * (c->n_shared_experts ? c->n_shared_experts : 1);
      W(router, "ffn_gate_inp.weight", true, E, c->dim);
      W(expert_bias, "exp_probs_b.bias", false, E, -1);
      W(gate_exps, "ffn_gate_exps.weight", true, -3, 0);
      W(up_exps, "ffn_up_exps.weight", true, -3, 0);
      W(down_exps, "ffn_down_exps.weight", true, -3, 0);
      err = err || !shaped3(m, l->gate_exps, "ffn_gate_exps", E, F, c->dim) || !shaped3(m, l->up_exps, "ffn_up_exps", E, F, c->dim) ||
            !shaped3(m, l->down_exps, "ffn_down_exps", E, c->dim, F);
      W(gate_shexp, "ffn_gate_shexp.weight", false, S, c->dim);
      W(up_shexp, "ffn_up_shexp.weight", false, S, c->dim);
      W(down_shexp, "ffn_down_shexp.weight", false, c->dim, S);
      W(router_shexp, "ffn_gate_inp_shexp.weight", false, c->dim, -1);
    }
#undef W
    if (err) break;
    tg_scope_begin();
    l->k_cache = tg_zeros(TG_SHAPE(c->n_ctx, c->n_kv_heads, c->head_dim), m->cache_dtype);
    l->v_cache = tg_zeros(TG_SHAPE(c->n_ctx, c->n_kv_heads, c->head_dim_v), m->cache_dtype);
    l->k_cache = tg_contiguous(l->k_cache);
    l->v_cache = tg_contiguous(l->v_cache);
    if (tg_realize(l->k_cache) < 0 || tg_realize(l->v_cache) < 0) err = true;
    else { tensor_adopt(NULL, l->k_cache); tensor_adopt(NULL, l->v_cache); }
    tg_scope_end();
    if (err) l->k_cache = l->v_cache = NULL;
  }
  return err ? -1 : 0;
}
