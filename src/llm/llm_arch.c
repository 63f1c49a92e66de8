/* llm_arch.c: the model families tg runs, as data (llama.cpp's LLM_ARCH and
 * LLM_TENSOR_NAMES, and the per-arch cases of its hparams and tensor
 * loading). Invariant: a family is exactly one row of llm_archs; everything
 * that differs between llama-like families (norm placement, activation,
 * rope style, q/k norms, softcaps, sliding windows, which tensors exist) is
 * a field of that row, read by llm_config.c, llm_weights.c and
 * llm_forward.c; no code tests an architecture's name. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "llm/llm.h"

#define F(x) offsetof(llm_layer, x)

/* Every per-layer tensor: blk.N.<name>, its field, its shape (outermost
 * first, as tg holds it: a (out, in) matrix), the layers that have it. */
const llm_tensor_info llm_tensors[LT_COUNT] = {
  [LT_ATTN_NORM]      = { "attn_norm.weight",          F(attn_norm),      { LD_DIM }, LW_ALL },
  [LT_Q]              = { "attn_q.weight",             F(wq),             { LD_Q, LD_DIM }, LW_NO_QLORA },
  [LT_K]              = { "attn_k.weight",             F(wk),             { LD_KV, LD_DIM }, LW_ALL },
  [LT_V]              = { "attn_v.weight",             F(wv),             { LD_VV, LD_DIM }, LW_ALL },
  [LT_O]              = { "attn_output.weight",        F(wo),             { LD_DIM, LD_O }, LW_ALL },
  [LT_BQ]             = { "attn_q.bias",               F(bq),             { LD_Q }, LW_ALL },
  [LT_BK]             = { "attn_k.bias",               F(bk),             { LD_KV }, LW_ALL },
  [LT_BV]             = { "attn_v.bias",               F(bv),             { LD_VV }, LW_ALL },
  [LT_Q_NORM]         = { "attn_q_norm.weight",        F(q_norm),         { LD_QN }, LW_ALL },
  [LT_K_NORM]         = { "attn_k_norm.weight",        F(k_norm),         { LD_KN }, LW_ALL },
  [LT_ATTN_POST_NORM] = { "post_attention_norm.weight", F(attn_post_norm), { LD_DIM }, LW_ALL },
  [LT_FFN_NORM]       = { "ffn_norm.weight",           F(ffn_norm),       { LD_DIM }, LW_ALL },
  [LT_GATE]           = { "ffn_gate.weight",           F(w_gate),         { LD_FFN, LD_DIM }, LW_DENSE },
  [LT_UP]             = { "ffn_up.weight",             F(w_up),           { LD_FFN, LD_DIM }, LW_DENSE },
  [LT_DOWN]           = { "ffn_down.weight",           F(w_down),         { LD_DIM, LD_FFN }, LW_DENSE },
  [LT_FFN_POST_NORM]  = { "post_ffw_norm.weight",      F(ffn_post_norm),  { LD_DIM }, LW_ALL },
  [LT_Q_A]            = { "attn_q_a.weight",           F(q_a),            { LD_QLORA, LD_DIM }, LW_QLORA },
  [LT_Q_A_NORM]       = { "attn_q_a_norm.weight",      F(q_a_norm),       { LD_QLORA }, LW_QLORA },
  [LT_Q_B]            = { "attn_q_b.weight",           F(q_b),            { LD_Q, LD_QLORA }, LW_QLORA },
  [LT_KV_A]           = { "attn_kv_a_mqa.weight",      F(kv_a),           { LD_KVA, LD_DIM }, LW_ALL },
  [LT_KV_A_NORM]      = { "attn_kv_a_norm.weight",     F(kv_a_norm),      { LD_KVLORA }, LW_ALL },
  [LT_KV_B]           = { "attn_kv_b.weight",          F(kv_b),           { LD_KVB, LD_KVLORA }, LW_ALL },
  [LT_ROUTER]         = { "ffn_gate_inp.weight",       F(router),         { LD_E, LD_DIM }, LW_MOE },
  [LT_EXP_BIAS]       = { "exp_probs_b.bias",          F(expert_bias),    { LD_E }, LW_MOE },
  [LT_GATE_EXPS]      = { "ffn_gate_exps.weight",      F(gate_exps),      { LD_E, LD_EFF, LD_DIM }, LW_MOE },
  [LT_UP_EXPS]        = { "ffn_up_exps.weight",        F(up_exps),        { LD_E, LD_EFF, LD_DIM }, LW_MOE },
  [LT_DOWN_EXPS]      = { "ffn_down_exps.weight",      F(down_exps),      { LD_E, LD_DIM, LD_EFF }, LW_MOE },
  [LT_GATE_SHEXP]     = { "ffn_gate_shexp.weight",     F(gate_shexp),     { LD_SH, LD_DIM }, LW_MOE },
  [LT_UP_SHEXP]       = { "ffn_up_shexp.weight",       F(up_shexp),       { LD_SH, LD_DIM }, LW_MOE },
  [LT_DOWN_SHEXP]     = { "ffn_down_shexp.weight",     F(down_shexp),     { LD_DIM, LD_SH }, LW_MOE },
  [LT_ROUTER_SHEXP]   = { "ffn_gate_inp_shexp.weight", F(router_shexp),   { LD_DIM }, LW_MOE },
  /* fused in the file (Phi-3: its ffn_up holds gate then up), else made
   * at load by stacking q, k, v and gate, up */
  [LT_QKV]            = { "attn_qkv.weight",           F(wqkv),           { LD_QKV, LD_DIM }, LW_ALL },
  [LT_GATE_UP]        = { "ffn_up.weight",             F(w_gate_up),      { LD_FFN2, LD_DIM }, LW_DENSE },
  /* gpt-oss: biases, sinks; its feed-forward's norm is called post_attention_norm */
  [LT_BO]             = { "attn_output.bias",          F(bo),             { LD_DIM }, LW_ALL },
  [LT_SINKS]          = { "attn_sinks.weight",         F(sinks),          { LD_H }, LW_ALL },
  [LT_FFN_NORM_PA]    = { "post_attention_norm.weight", F(ffn_norm),      { LD_DIM }, LW_ALL },
  [LT_ROUTER_B]       = { "ffn_gate_inp.bias",         F(router_b),       { LD_E }, LW_MOE },
  [LT_GATE_EXPS_B]    = { "ffn_gate_exps.bias",        F(gate_exps_b),    { LD_E, LD_EFF }, LW_MOE },
  [LT_UP_EXPS_B]      = { "ffn_up_exps.bias",          F(up_exps_b),      { LD_E, LD_EFF }, LW_MOE },
  [LT_DOWN_EXPS_B]    = { "ffn_down_exps.bias",        F(down_exps_b),    { LD_E, LD_DIM }, LW_MOE },
  /* Qwen3.5's gated delta-net layers (llama.cpp's names; its attn_qkv has the conv's channels) */
  [LT_SSM_QKV]        = { "attn_qkv.weight",           F(ssm_qkv),        { LD_CONV, LD_DIM }, LW_RECURRENT },
  [LT_SSM_Z]          = { "attn_gate.weight",          F(ssm_z),          { LD_VDIM, LD_DIM }, LW_RECURRENT },
  [LT_SSM_CONV1D]     = { "ssm_conv1d.weight",         F(ssm_conv1d),     { LD_CONV, LD_CONVK }, LW_RECURRENT },
  [LT_SSM_DT]         = { "ssm_dt.bias",               F(ssm_dt),         { LD_VH }, LW_RECURRENT },
  [LT_SSM_A]          = { "ssm_a",                     F(ssm_a),          { LD_VH }, LW_RECURRENT },
  [LT_SSM_BETA]       = { "ssm_beta.weight",           F(ssm_beta),       { LD_VH, LD_DIM }, LW_RECURRENT },
  [LT_SSM_ALPHA]      = { "ssm_alpha.weight",          F(ssm_alpha),      { LD_VH, LD_DIM }, LW_RECURRENT },
  [LT_SSM_NORM]       = { "ssm_norm.weight",           F(ssm_norm),       { LD_HV }, LW_RECURRENT },
  [LT_SSM_OUT]        = { "ssm_out.weight",            F(ssm_out),        { LD_DIM, LD_VDIM }, LW_RECURRENT },
  /* made at load: the KV cache, a delta-net layer's states */
  [LT_K_CACHE]        = { NULL, F(k_cache), { 0 }, LW_ALL },
  [LT_V_CACHE]        = { NULL, F(v_cache), { 0 }, LW_ALL },
  [LT_K_SCALES]       = { NULL, F(k_scales), { 0 }, LW_ALL },
  [LT_V_SCALES]       = { NULL, F(v_scales), { 0 }, LW_ALL },
  [LT_CONV_STATE]     = { NULL, F(conv_state), { 0 }, LW_ALL },
  [LT_SSM_STATE]      = { NULL, F(ssm_state), { 0 }, LW_ALL },
};

/* Tensor groups the rows are made of. */
#define PRE_NORMS  (LT(LT_ATTN_NORM) | LT(LT_FFN_NORM))
#define POST_NORMS (LT(LT_ATTN_POST_NORM) | LT(LT_FFN_POST_NORM))
#define MHA        (LT(LT_Q) | LT(LT_K) | LT(LT_V) | LT(LT_O))
#define QKV_BIAS   (LT(LT_BQ) | LT(LT_BK) | LT(LT_BV))
#define QK_NORMS   (LT(LT_Q_NORM) | LT(LT_K_NORM))
#define MLA        (LT(LT_Q) | LT(LT_Q_A) | LT(LT_Q_A_NORM) | LT(LT_Q_B) | LT(LT_KV_A) | LT(LT_KV_A_NORM) | LT(LT_KV_B) | LT(LT_O))
#define FFN        (LT(LT_GATE) | LT(LT_UP) | LT(LT_DOWN))
#define EXPERTS    (LT(LT_ROUTER) | LT(LT_GATE_EXPS) | LT(LT_UP_EXPS) | LT(LT_DOWN_EXPS))
#define SHEXP      (LT(LT_GATE_SHEXP) | LT(LT_UP_SHEXP) | LT(LT_DOWN_SHEXP))
#define FUSED_MHA  (LT(LT_QKV) | LT(LT_O))
#define FUSED_FFN  (LT(LT_GATE_UP) | LT(LT_DOWN))
#define EXPERT_BIASES (LT(LT_ROUTER_B) | LT(LT_GATE_EXPS_B) | LT(LT_UP_EXPS_B) | LT(LT_DOWN_EXPS_B))
#define GDN        (LT(LT_SSM_QKV) | LT(LT_SSM_Z) | LT(LT_SSM_CONV1D) | LT(LT_SSM_DT) | LT(LT_SSM_A) | LT(LT_SSM_BETA) | \
                    LT(LT_SSM_ALPHA) | LT(LT_SSM_NORM) | LT(LT_SSM_OUT))

/* The families. Experts are loaded in the layers past
 * leading_dense_block_count of a file with expert_count > 0; a llama row
 * with experts is Mixtral. Defaults and keys follow llama.cpp's
 * llama-model.cpp (load_hparams, load_tensors, the build_* graphs). */
static const llm_arch llm_archs[] = {
  { "llama",     .norms = LLM_NORM_PRE, .moe_weights_norm = true, .req = PRE_NORMS | MHA | FFN | EXPERTS, .opt = QKV_BIAS },
  { "mistral",   .norms = LLM_NORM_PRE, .req = PRE_NORMS | MHA | FFN, .opt = QKV_BIAS },
  { "qwen2",     .norms = LLM_NORM_PRE, .rope_neox = true, .req = PRE_NORMS | MHA | QKV_BIAS | FFN },
  { "qwen3",     .norms = LLM_NORM_PRE, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .req = PRE_NORMS | MHA | QK_NORMS | FFN },
  { "olmo2",     .norms = LLM_NORM_POST, .rope_neox = true, .qk_norm = LLM_QK_WHOLE, .req = POST_NORMS | MHA | QK_NORMS | FFN },
  { "qwen2moe",  .norms = LLM_NORM_PRE, .rope_neox = true, .req = PRE_NORMS | MHA | QKV_BIAS | EXPERTS,
                 .opt = SHEXP | LT(LT_ROUTER_SHEXP) },
  { "qwen3moe",  .norms = LLM_NORM_PRE, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .moe_weights_norm = true,
                 .req = PRE_NORMS | MHA | QK_NORMS | EXPERTS },
  { "deepseek2", .attn = LLM_ATTN_MLA, .norms = LLM_NORM_PRE, .yarn_log_mul = true, .req = PRE_NORMS | MLA | FFN | EXPERTS,
                 .opt = LT(LT_EXP_BIAS) | SHEXP },
  /* Gemma: norms before and after both halves, GeGLU, the embedding times
   * sqrt(dim) and tied to the output; sliding-window layers. Gemma 2 caps
   * scores and logits, and slides every other layer (window 4096); Gemma
   * 3 has per-head q/k norms, slides 5 layers of 6 with rope base 10000
   * there, no softcaps. */
  { "gemma2",    .norms = LLM_NORM_BOTH, .act = LLM_GEGLU, .rope_neox = true, .embd_scale = true, .tied = true,
                 .attn_softcap = 50, .final_softcap = 30, .swa_period = 2, .swa_window = 4096, .qscale_dim_layers = 46,
                 .req = PRE_NORMS | POST_NORMS | MHA | FFN },
  { "gemma3",    .norms = LLM_NORM_BOTH, .act = LLM_GEGLU, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .embd_scale = true,
                 .swa_period = 6, .swa_rope_base = 10000, .swa_rope_unscaled = true, .qscale_dim_layers = 62,
                 .req = PRE_NORMS | POST_NORMS | MHA | QK_NORMS | FFN },
  /* Phi-3 / Phi-4-mini: fused q|k|v and gate|up; LongRoPE's per-pair
   * factors (rope_factors_long / _short) and attention factor. llama.cpp
   * ignores its sliding_window (disabled since its PR 13676), so tg does. */
  { "phi3",      .norms = LLM_NORM_PRE, .rope_neox = true, .req = PRE_NORMS | FUSED_MHA | FUSED_FFN },
  /* gpt-oss: every layer MoE with biases everywhere, experts chosen by the
   * router's top k and weighted by a softmax over those k (llama.cpp's
   * SOFTMAX_WEIGHT), the clamped SwiGLU, a sink logit per head, every
   * other layer sliding (layers 0, 2, ...; the window from the file), YaRN
   * from the file. The feed-forward's norm is stored as post_attention_norm. */
  { "gpt-oss",   .norms = LLM_NORM_PRE, .act = LLM_SWIGLU_OAI, .rope_neox = true, .moe_gating = LLM_GATING_SOFTMAX_WEIGHT,
                 .swa_period = 2,
                 .req = LT(LT_ATTN_NORM) | LT(LT_FFN_NORM_PA) | MHA | QKV_BIAS | LT(LT_BO) | LT(LT_SINKS) | EXPERTS | EXPERT_BIASES },
  /* GLM-4.5 / 4.6 / 4.7 MoE: q/k/v biases, optional per-head q/k norms,
   * partial NEOX rope, leading dense layers, then sigmoid routing with an
   * expert bias and shared experts; the feed-forward's norm is stored as
   * post_attention_norm; MTP layers skipped (nextn_predict_layers). */
  { "glm4moe",   .norms = LLM_NORM_PRE, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .moe_gating = LLM_GATING_SIGMOID,
                 .req = LT(LT_ATTN_NORM) | LT(LT_FFN_NORM_PA) | MHA | QKV_BIAS | FFN | EXPERTS | LT(LT_EXP_BIAS),
                 .opt = QK_NORMS | SHEXP },
  /* Qwen3.5 / 3.6 (llama.cpp's llm_build_qwen35, _qwen35moe): gated delta-net
   * layers (llm_gdn.c) with full attention every full_attention_interval-th
   * layer; there q's projection holds q and a gate per head, per-head q/k
   * norms, partial rope (interleaved M-RoPE at text positions), the output
   * times sigmoid(gate). The feed-forward's norm is post_attention_norm;
   * the MoE one has a shared expert behind a sigmoid gate. MTP layers skipped. */
  { "qwen35",    .norms = LLM_NORM_PRE, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .attn_gate = true, .recurrent = true, .imrope = true,
                 .req = LT(LT_ATTN_NORM) | LT(LT_FFN_NORM_PA) | MHA | QK_NORMS | FFN | GDN },
  { "qwen35moe", .norms = LLM_NORM_PRE, .rope_neox = true, .qk_norm = LLM_QK_PER_HEAD, .attn_gate = true, .recurrent = true, .imrope = true,
                 .moe_weights_norm = true,
                 .req = LT(LT_ATTN_NORM) | LT(LT_FFN_NORM_PA) | MHA | QK_NORMS | EXPERTS | GDN, .opt = SHEXP | LT(LT_ROUTER_SHEXP) },
};
#define NARCHS (sizeof llm_archs / sizeof llm_archs[0])

const llm_arch *llm_arch_find(const char *name) {
  for (size_t i = 0; i < NARCHS; i++) if (!strcmp(llm_archs[i].name, name)) return &llm_archs[i];
  return NULL;
}

void llm_arch_names(char *buf, size_t n) {
  size_t used = 0;
  if (n) buf[0] = 0;
  for (size_t i = 0; i < NARCHS; i++) {
    int k = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", llm_archs[i].name);
    if (k < 0 || (size_t)k >= n - used) break;
    used += (size_t)k;
  }
}

static int64_t dim_of(const tg_llm *m, llm_dim d) {
  const tg_llm_config *c = &m->cfg;
  bool per_head = m->arch->qk_norm == LLM_QK_PER_HEAD;
  switch (d) {
    case LD_NONE: return 0;
    case LD_DIM: return c->dim;
    case LD_Q: return (int64_t)c->n_heads * c->head_dim * (m->arch->attn_gate ? 2 : 1);
    case LD_KV: return (int64_t)c->n_kv_heads * c->head_dim;
    case LD_VV: return (int64_t)c->n_kv_heads * c->head_dim_v;
    case LD_O: return (int64_t)c->n_heads * c->head_dim_v;
    case LD_QN: return per_head ? c->head_dim : (int64_t)c->n_heads * c->head_dim;
    case LD_KN: return per_head ? c->head_dim : (int64_t)c->n_kv_heads * c->head_dim;
    case LD_FFN: return c->ffn_dim;
    case LD_QLORA: return c->q_lora_rank;
    case LD_KVA: return (int64_t)c->kv_lora_rank + c->rope_dim;
    case LD_KVLORA: return c->kv_lora_rank;
    case LD_KVB: return (int64_t)c->n_heads * ((int64_t)c->head_dim - c->rope_dim + c->head_dim_v);
    case LD_E: return c->n_experts;
    case LD_EFF: return c->expert_ffn_dim;
    case LD_SH: return (int64_t)c->shared_ffn_dim * (c->n_shared_experts ? c->n_shared_experts : 1);
    case LD_QKV: return (int64_t)c->n_heads * c->head_dim + (int64_t)c->n_kv_heads * ((int64_t)c->head_dim + c->head_dim_v);
    case LD_FFN2: return 2 * (int64_t)c->ffn_dim;
    case LD_H: return c->n_heads;
    case LD_CONV: return 2 * (int64_t)m->gdn.k_heads * m->gdn.head_k + (int64_t)m->gdn.v_heads * m->gdn.head_v;
    case LD_CONVK: return m->gdn.conv_k;
    case LD_VH: return m->gdn.v_heads;
    case LD_VDIM: return (int64_t)m->gdn.v_heads * m->gdn.head_v;
    case LD_HV: return m->gdn.head_v;
  }
  return 0;
}

int llm_tensor_dims(const tg_llm *m, llm_tensor id, int64_t d[3]) {
  int n = 0;
  while (n < 3 && llm_tensors[id].d[n] != LD_NONE) { d[n] = dim_of(m, llm_tensors[id].d[n]); n++; }
  return n;
}

bool llm_tensor_in_layer(const tg_llm *m, int i, llm_tensor id) {
  const tg_llm_config *c = &m->cfg;
  bool moe = c->n_experts > 0 && i >= c->n_dense_leading, recurrent = m->layers && m->layers[i].recurrent;
  if (recurrent && (LLM_ATTN_TENSORS & LT(id))) return false;
  switch (llm_tensors[id].when) {
    case LW_RECURRENT: return recurrent;
    case LW_ALL: return true;
    case LW_DENSE: return !moe;
    case LW_MOE: return moe;
    case LW_QLORA: return c->q_lora_rank > 0;
    case LW_NO_QLORA: return c->q_lora_rank == 0;
  }
  return false;
}
