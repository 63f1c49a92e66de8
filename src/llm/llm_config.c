/* llm_config.c: a model's hyperparameters from GGUF metadata
 * (<arch>.embedding_length and friends, as llama.cpp names them). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "llm/llm.h"
#include "util/util.h"

/* Integer <arch>.<key>; def when absent (def < 0: required). */
static int arch_int(tg_llm *m, const char *key, int64_t def, int *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", m->cfg.arch, key);
  int64_t v = def;
  const gguf_kv *kv = gguf_find(m->file, k);
  if (kv && kv->type == GGUF_ARRAY) {   /* per-layer arrays: take the first */
    if (!kv->arr_n || kv->arr_type == GGUF_STRING || kv->arr_type == GGUF_ARRAY) return tg_seterr("%s: %s is not a number", m->file->path, k);
    if ((kv->arr_type == GGUF_F32 || kv->arr_type == GGUF_F64) && !isfinite(gguf_arr_f64(kv, 0)))
      return tg_seterr("%s: %s = %g is not a finite number", m->file->path, k, gguf_arr_f64(kv, 0));
    v = gguf_arr_int(kv, 0);   /* saturated, so a huge float fails the range check below */
  } else if (!gguf_get_int(m->file, k, &v) && def < 0) {
    return tg_seterr("%s: metadata %s is missing", m->file->path, k);
  }
  if (v < 0 || v > (1 << 30)) return tg_seterr("%s: %s = %lld is out of range", m->file->path, k, (long long)v);
  *out = (int)v;
  return 0;
}

/* Float <arch>.<key> (def when absent); NaN, infinities and values past
 * float's range are errors naming the key, not a model that computes NaN. */
static int arch_float(tg_llm *m, const char *key, double def, float *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", m->cfg.arch, key);
  double v = def;
  gguf_get_f64(m->file, k, &v);
  if (!isfinite(v) || fabs(v) > FLT_MAX) return tg_seterr("%s: %s = %g is not a finite float", m->file->path, k, v);
  *out = (float)v;
  return 0;
}

/* The family's traits that the file may override (llama.cpp's keys):
 * softcaps, the sliding window and its layers and rope, q's scale. */
static int llm_read_traits(tg_llm *m) {
  const llm_arch *a = m->arch;
  tg_llm_config *c = &m->cfg;
  if (arch_float(m, "attn_logit_softcapping", a->attn_softcap, &m->attn_softcap) < 0 ||
      arch_float(m, "final_logit_softcapping", a->final_softcap, &m->final_softcap) < 0)
    return -1;
  if (m->attn_softcap < 0 || m->final_softcap < 0) return tg_seterr("%s: softcaps must not be negative", m->file->path);
  /* q . k * head_dim^-1/2; Gemma's query_pre_attn_scalar is dim / heads for 27B, which llama.cpp knows by the layer count */
  bool by_dim = a->qscale_dim_layers && c->n_layers == a->qscale_dim_layers;
  m->q_scale = (float)(1.0 / sqrt(by_dim ? (double)c->dim / c->n_heads : (double)c->head_dim));
  m->layers = tg_xcalloc((size_t)c->n_layers, sizeof *m->layers);
  m->swa_window = 0;
  m->rope_base_swa = c->rope_base, m->rope_scale_swa = c->rope_scale;
  if (a->swa_period) {
    int window = 0, period = 0;
    if (arch_int(m, "attention.sliding_window", a->swa_window, &window) < 0 ||
        arch_int(m, "attention.sliding_window_pattern", a->swa_period, &period) < 0 ||
        arch_float(m, "rope.freq_base_swa", a->swa_rope_base > 0 ? a->swa_rope_base : c->rope_base, &m->rope_base_swa) < 0)
      return -1;
    if (!(m->rope_base_swa > 0)) return tg_seterr("%s: rope.freq_base_swa must be positive", m->file->path);
    if (a->swa_rope_unscaled) m->rope_scale_swa = 1;
    m->swa_window = window;
    /* llama.cpp's set_swa_pattern: period p slides every layer but each p-th (0: all) */
    for (int i = 0; window > 0 && i < c->n_layers; i++) m->layers[i].swa = period == 0 || i % period < period - 1;
  }
  return 0;
}

int llm_read_config(tg_llm *m, int n_ctx) {
  tg_llm_config *c = &m->cfg;
  char *arch = gguf_get_str(m->file, "general.architecture");
  if (!arch) return tg_seterr("%s: metadata general.architecture is missing", m->file->path);
  m->arch = llm_arch_find(arch);
  if (!m->arch) {
    char names[512];
    llm_arch_names(names, sizeof names);
    tg_seterr("%s: architecture '%s' is not supported (supported: %s; llama with experts is Mixtral)", m->file->path, arch, names);
    free(arch);
    return -1;
  }
  snprintf(c->arch, sizeof c->arch, "%s", arch);
  free(arch);
  if (arch_int(m, "embedding_length", -1, &c->dim) < 0 || arch_int(m, "block_count", -1, &c->n_layers) < 0 ||
      arch_int(m, "attention.head_count", -1, &c->n_heads) < 0 || arch_int(m, "feed_forward_length", -1, &c->ffn_dim) < 0 ||
      arch_int(m, "context_length", 2048, &c->n_ctx_train) < 0 || arch_int(m, "attention.head_count_kv", c->n_heads, &c->n_kv_heads) < 0)
    return -1;
  if (c->n_heads <= 0 || c->dim <= 0 || c->n_layers <= 0) return tg_seterr("%s: embedding_length, block_count and head_count must be positive", m->file->path);
  if (arch_int(m, "attention.key_length", c->dim / c->n_heads, &c->head_dim) < 0) return -1;
  if (arch_int(m, "rope.dimension_count", c->head_dim, &c->rope_dim) < 0 || arch_int(m, "attention.value_length", c->head_dim, &c->head_dim_v) < 0 ||
      arch_int(m, "attention.kv_lora_rank", 0, &c->kv_lora_rank) < 0 || arch_int(m, "attention.q_lora_rank", 0, &c->q_lora_rank) < 0)
    return -1;
  if (c->kv_lora_rank) c->n_kv_heads = c->n_heads;   /* MLA expands the latent to every head */
  if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads)
    return tg_seterr("%s: head_count %d is not a multiple of head_count_kv %d", m->file->path, c->n_heads, c->n_kv_heads);
  if (c->rope_dim > c->head_dim || c->rope_dim % 2) return tg_seterr("%s: rope.dimension_count %d does not fit head size %d", m->file->path, c->rope_dim, c->head_dim);
  if (arch_int(m, "expert_count", 0, &c->n_experts) < 0 || arch_int(m, "expert_used_count", 0, &c->n_experts_used) < 0 ||
      arch_int(m, "expert_feed_forward_length", c->ffn_dim, &c->expert_ffn_dim) < 0 ||
      arch_int(m, "expert_shared_count", 0, &c->n_shared_experts) < 0 ||
      arch_int(m, "expert_shared_feed_forward_length", c->expert_ffn_dim, &c->shared_ffn_dim) < 0 ||
      arch_int(m, "leading_dense_block_count", 0, &c->n_dense_leading) < 0)
    return -1;
  if (c->n_experts && !(m->arch->req & LT(LT_ROUTER)))
    return tg_seterr("%s: expert_count %d, but architecture %s has no experts", m->file->path, c->n_experts, c->arch);
  if (c->n_experts && (c->n_experts_used <= 0 || c->n_experts_used > c->n_experts))
    return tg_seterr("%s: expert_used_count %d does not fit expert_count %d", m->file->path, c->n_experts_used, c->n_experts);
  {
    char k[128];
    int gating = 1;
    snprintf(k, sizeof k, "%s.expert_weights_norm", c->arch);
    c->expert_weights_norm = m->arch->moe_weights_norm;
    gguf_get_bool(m->file, k, &c->expert_weights_norm);
    if (arch_float(m, "expert_weights_scale", 0.0, &c->expert_weights_scale) < 0) return -1;
    if (arch_int(m, "expert_gating_func", 1, &gating) < 0) return -1;
    c->expert_gating_sigmoid = gating == 2;
  }
  if (arch_float(m, "attention.layer_norm_rms_epsilon", 1e-5, &c->rms_eps) < 0 ||
      arch_float(m, "rope.freq_base", 10000.0, &c->rope_base) < 0)
    return -1;
  {
    char k[128], *type;
    snprintf(k, sizeof k, "%s.rope.scaling.type", c->arch);
    type = gguf_get_str(m->file, k);
    c->rope_scale = 1;
    if (type && !strcmp(type, "linear")) {
      if (arch_float(m, "rope.scaling.factor", 1.0, &c->rope_scale) < 0) { free(type); return -1; }
    } else if (type && strcmp(type, "none")) { tg_seterr("%s: rope scaling '%s' is not supported (none and linear are)", m->file->path, type); free(type); return -1; }
    free(type);
    if (!(c->rope_scale > 0)) return tg_seterr("%s: rope.scaling.factor must be positive", m->file->path);
  }
  c->rope_neox = m->arch->rope_neox;
  if (llm_read_traits(m) < 0) return -1;
  c->n_ctx = n_ctx > 0 ? n_ctx : (c->n_ctx_train < 4096 ? c->n_ctx_train : 4096);
  return 0;
}
