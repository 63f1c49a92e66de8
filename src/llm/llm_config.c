/* llm_config.c: a model's hyperparameters from GGUF metadata
 * (<arch>.embedding_length and friends, as llama.cpp names them). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "llm/llm.h"
#include "util/util.h"
#include "util/settings.h"

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

/* YaRN's magnitude factor for scale s (llama.cpp's get_mscale). */
static double yarn_mscale(double s, double mscale) { return s <= 1 ? 1 : 0.1 * mscale * log(s) + 1; }

/* RoPE and its scaling, as llama.cpp's load_hparams and llama_context
 * set them up: rope.scaling.type none, linear (the default) or yarn, its
 * factor (freq_scale = 1 / factor); YaRN's original context, betas and
 * ext_factor (1 for yarn unless the file says); the magnitude of cos and
 * sin: rope.scaling.attn_factor (LongRoPE's), and for YaRN 1 + 0.1 ln
 * factor, or, with DeepSeek's yarn_log_multiplier, 1 here and mscale^2 in
 * the scores' scale (llama.cpp's kq_scale). */
static int llm_read_rope(tg_llm *m) {
  tg_llm_config *c = &m->cfg;
  llm_rope *r = &m->rope;
  char k[128];
  snprintf(k, sizeof k, "%s.rope.scaling.type", c->arch);
  char *type = gguf_get_str(m->file, k);
  bool none = type && !strcmp(type, "none"), yarn = type && !strcmp(type, "yarn");
  if (type && !none && !yarn && strcmp(type, "linear")) {
    tg_seterr("%s: %s '%s' is not supported (none, linear and yarn are)", m->file->path, k, type);
    free(type);
    return -1;
  }
  free(type);
  /* llama.cpp reads rope.scaling.yarn_{ext,attn}_factor and yarn_beta_{fast,slow}
   * only for grok and mistral3, families tg does not have: for these, a file
   * that carries them runs with the defaults, as there */
  float factor = 0, attn = 1, yarn_attn = 1, ext = -1, log_mul = 0;
  r->beta_fast = 32, r->beta_slow = 1;
  if (arch_float(m, "rope.scaling.factor", 0.0, &factor) < 0 ||
      (factor == 0 && arch_float(m, "rope.scale_linear", 0.0, &factor) < 0) ||
      arch_float(m, "rope.scaling.attn_factor", 1.0, &attn) < 0 ||
      (m->arch->yarn_log_mul && arch_float(m, "rope.scaling.yarn_log_multiplier", 0.0, &log_mul) < 0) ||
      arch_int(m, "rope.scaling.original_context_length", 0, &r->orig_ctx) < 0)
    return -1;
  if (factor < 0) return tg_seterr("%s: %s.rope.scaling.factor = %g must not be negative", m->file->path, c->arch, factor);
  if (!(attn > 0)) return tg_seterr("%s: %s.rope.scaling.attn_factor = %g must be positive", m->file->path, c->arch, attn);
  c->rope_scale = none || factor == 0 ? 1 : factor;
  if (!r->orig_ctx) r->orig_ctx = c->n_ctx_train;
  if (r->orig_ctx <= 0) return tg_seterr("%s: %s.rope.scaling.original_context_length must be positive", m->file->path, c->arch);
  r->base = c->rope_base;
  r->freq_scale = 1 / c->rope_scale;
  r->ext_factor = ext < 0 ? (yarn ? 1 : 0) : ext;
  log_mul /= 0.1f;   /* llama.cpp cancels the converter's 0.1 */
  double f = c->rope_scale, af = yarn_attn;
  if (r->ext_factor != 0) {
    /* llama.cpp's attn_factor (DeepSeek's: a ratio of two equal mscales), then
     * cancelled against the rope op's own 1 + 0.1 ln f */
    af = log_mul != 0 ? 1 : yarn_mscale(f, 1);
    af /= 1 + 0.1 * log(f);
  }
  r->mscale = (float)(af * attn);   /* the tables add 1 + 0.1 ln(1 / freq_scale) when ext_factor != 0 */
  m->kq_mscale = 1;
  if (m->arch->yarn_log_mul) m->kq_mscale = (float)(r->mscale * (1 + 0.1 * log(f)) * (1 + 0.1 * log_mul * log(f)));
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
  m->q_scale = (float)(1.0 / sqrt(by_dim ? (double)c->dim / c->n_heads : (double)c->head_dim)) * m->kq_mscale * m->kq_mscale;
  m->layers = tg_xcalloc((size_t)c->n_layers, sizeof *m->layers);
  m->swa_window = 0;
  m->rope_swa = m->rope;
  if (a->swa_period) {
    int window = 0, period = 0;
    if (arch_int(m, "attention.sliding_window", a->swa_window, &window) < 0 ||
        arch_int(m, "attention.sliding_window_pattern", a->swa_period, &period) < 0 ||
        arch_float(m, "rope.freq_base_swa", a->swa_rope_base > 0 ? a->swa_rope_base : c->rope_base, &m->rope_swa.base) < 0)
      return -1;
    if (!(m->rope_swa.base > 0)) return tg_seterr("%s: rope.freq_base_swa must be positive", m->file->path);
    if (a->swa_rope_unscaled) m->rope_swa.freq_scale = 1;
    m->swa_window = window;
    /* llama.cpp's set_swa_pattern: period p slides every layer but each p-th (0: all) */
    for (int i = 0; window > 0 && i < c->n_layers; i++) m->layers[i].swa = period == 0 || i % period < period - 1;
  }
  return 0;
}

/* Qwen3.5's delta-net hyperparameters (llama.cpp's ssm.* keys), which
 * layers are recurrent (all but each full_attention_interval-th, default
 * 4), and its rope.dimension_sections (required, as there). llama.cpp
 * takes head_v = state_size too and needs it to equal inner_size / v heads. */
static int llm_read_gdn(tg_llm *m) {
  tg_llm_config *c = &m->cfg;
  const char *p = m->file->path;
  if (m->arch->imrope) {
    char k[128];
    snprintf(k, sizeof k, "%s.rope.dimension_sections", c->arch);
    const gguf_kv *kv = gguf_find(m->file, k);
    if (!kv || kv->type != GGUF_ARRAY || kv->arr_n < 3 || kv->arr_n > 4 || kv->arr_type == GGUF_STRING || kv->arr_type == GGUF_ARRAY)
      return tg_seterr("%s: metadata %s (3 or 4 integers) is missing", p, k);
    int sum = 0;
    for (int i = 0; i < 4; i++) {
      int64_t v = i < (int)kv->arr_n ? gguf_arr_int(kv, (size_t)i) : 0;
      if (v < 0 || v > c->rope_dim) return tg_seterr("%s: %s[%d] = %lld is out of range", p, k, i, (long long)v);
      m->rope_sections[i] = (int)v, sum += (int)v;
    }
    if (sum == 0) return tg_seterr("%s: %s are all 0", p, k);
  }
  if (!m->arch->recurrent) return 0;
  int interval = 4, inner = 0;
  if (arch_int(m, "ssm.conv_kernel", -1, &m->gdn.conv_k) < 0 || arch_int(m, "ssm.state_size", -1, &m->gdn.head_k) < 0 ||
      arch_int(m, "ssm.group_count", -1, &m->gdn.k_heads) < 0 || arch_int(m, "ssm.time_step_rank", -1, &m->gdn.v_heads) < 0 ||
      arch_int(m, "ssm.inner_size", -1, &inner) < 0 || arch_int(m, "full_attention_interval", 4, &interval) < 0)
    return -1;
  if (m->gdn.conv_k < 2 || m->gdn.head_k <= 0 || m->gdn.k_heads <= 0 || m->gdn.v_heads <= 0 || m->gdn.v_heads % m->gdn.k_heads)
    return tg_seterr("%s: %s.ssm: conv_kernel %d, state_size %d, time_step_rank %d (v heads) a multiple of group_count %d (k heads) are needed",
                     p, c->arch, m->gdn.conv_k, m->gdn.head_k, m->gdn.v_heads, m->gdn.k_heads);
  if (inner != (int64_t)m->gdn.head_k * m->gdn.v_heads)   /* each up to 2^30: in int64 */
    return tg_seterr("%s: %s.ssm.inner_size %d is not state_size %d x time_step_rank %d", p, c->arch, inner, m->gdn.head_k, m->gdn.v_heads);
  m->gdn.head_v = m->gdn.head_k;
  if (interval < 1) return tg_seterr("%s: %s.full_attention_interval %d must be positive", p, c->arch, interval);
  for (int i = 0; i < c->n_layers; i++) m->layers[i].recurrent = (i + 1) % interval != 0;
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
  /* the converter's multi-token-prediction layers (GLM-4.5) come last and
   * are counted in block_count; llama.cpp does not run them, nor does tg */
  int nextn = 0;
  if (arch_int(m, "nextn_predict_layers", 0, &nextn) < 0) return -1;
  if (nextn >= c->n_layers) return tg_seterr("%s: %s.nextn_predict_layers %d leaves none of block_count %d", m->file->path, c->arch, nextn, c->n_layers);
  c->n_layers -= nextn;
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
    int gating = m->arch->moe_gating ? m->arch->moe_gating : LLM_GATING_SOFTMAX;
    snprintf(k, sizeof k, "%s.expert_weights_norm", c->arch);
    c->expert_weights_norm = m->arch->moe_weights_norm;
    gguf_get_bool(m->file, k, &c->expert_weights_norm);
    if (arch_float(m, "expert_weights_scale", 0.0, &c->expert_weights_scale) < 0) return -1;
    if (arch_int(m, "expert_gating_func", gating, &gating) < 0) return -1;
    if (gating < LLM_GATING_SOFTMAX || gating > LLM_GATING_SOFTMAX_WEIGHT)
      return tg_seterr("%s: %s.expert_gating_func = %d is not softmax (1), sigmoid (2) or softmax over the chosen (3)", m->file->path, c->arch, gating);
    c->expert_gating_sigmoid = gating == LLM_GATING_SIGMOID;
    m->gating = gating;
  }
  if (arch_float(m, "attention.layer_norm_rms_epsilon", 1e-5, &c->rms_eps) < 0 ||
      arch_float(m, "rope.freq_base", 10000.0, &c->rope_base) < 0)
    return -1;
  if (llm_read_rope(m) < 0) return -1;
  c->rope_neox = m->arch->rope_neox;
  if (llm_read_traits(m) < 0 || llm_read_gdn(m) < 0) return -1;
  c->n_ctx = n_ctx > 0 ? n_ctx : (c->n_ctx_train < 4096 ? c->n_ctx_train : 4096);
  /* sliding layers keep a ring of the window plus a chunk's positions (the
   * oldest key a chunk's first token sees to its last token) when that is
   * shorter than the context; TG_LLM_SWA_FULL=1 keeps every position */
  m->ring = 0;
  if (m->swa_window > 0 && m->swa_window < c->n_ctx - (LLM_MAX_CHUNK - 1) && !setting_int(SET_TG_LLM_SWA_FULL))
    m->ring = m->swa_window + LLM_MAX_CHUNK - 1;
  for (int i = 0; i < c->n_layers; i++) m->layers[i].ring = m->layers[i].swa ? m->ring : 0;
  return 0;
}
