/* quantize_plan.c: which ggml type each tensor of a model gets for a
 * llama.cpp file type, following llama.cpp's src/llama-quant.cpp (see
 * quantize.h): the file type table, the tensors never quantized, the
 * output / token embedding rule, the _S/_M/_L mixtures and the fallbacks
 * for row lengths a type cannot hold. Only the file types tg can write are
 * handled (no IQ1/IQ2/IQ3 mixtures, no MXFP4_MOE, no importance matrix). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "quant/quantize.h"
#include "io/ggml_types.h"

enum {
  FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10,
  FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17,
  FT_Q6_K = 18, FT_IQ4_NL = 25, FT_IQ4_XS = 30, FT_BF16 = 32, FT_TQ1_0 = 36, FT_TQ2_0 = 37
};

static const quant_ftype ftypes[] = {
  { "Q4_0", FT_Q4_0, GGML_TYPE_Q4_0 },     { "Q4_1", FT_Q4_1, GGML_TYPE_Q4_1 },
  { "Q5_0", FT_Q5_0, GGML_TYPE_Q5_0 },     { "Q5_1", FT_Q5_1, GGML_TYPE_Q5_1 },
  { "IQ4_NL", FT_IQ4_NL, GGML_TYPE_IQ4_NL }, { "IQ4_XS", FT_IQ4_XS, GGML_TYPE_IQ4_XS },
  { "TQ1_0", FT_TQ1_0, GGML_TYPE_TQ1_0 },   { "TQ2_0", FT_TQ2_0, GGML_TYPE_TQ2_0 },
  { "Q2_K", FT_Q2_K, GGML_TYPE_Q2_K },
  { "Q3_K_S", FT_Q3_K_S, GGML_TYPE_Q3_K }, { "Q3_K_M", FT_Q3_K_M, GGML_TYPE_Q3_K }, { "Q3_K_L", FT_Q3_K_L, GGML_TYPE_Q3_K },
  { "Q4_K_S", FT_Q4_K_S, GGML_TYPE_Q4_K }, { "Q4_K_M", FT_Q4_K_M, GGML_TYPE_Q4_K },
  { "Q5_K_S", FT_Q5_K_S, GGML_TYPE_Q5_K }, { "Q5_K_M", FT_Q5_K_M, GGML_TYPE_Q5_K },
  { "Q6_K", FT_Q6_K, GGML_TYPE_Q6_K },     { "Q8_0", FT_Q8_0, GGML_TYPE_Q8_0 },
  { "F16", FT_F16, GGML_TYPE_F16 },        { "BF16", FT_BF16, GGML_TYPE_BF16 },  { "F32", FT_F32, GGML_TYPE_F32 },
};
#define N_FTYPES ((int)(sizeof ftypes / sizeof *ftypes))

const quant_ftype *quant_ftypes(int *n) { *n = N_FTYPES; return ftypes; }

const quant_ftype *quant_ftype_by_name(const char *name) {
  static const char *const alias[][2] = { { "Q3_K", "Q3_K_M" }, { "Q4_K", "Q4_K_M" }, { "Q5_K", "Q5_K_M" } };
  for (int i = 0; i < 3; i++)
    if (!strcasecmp(name, alias[i][0])) name = alias[i][1];
  for (int i = 0; i < N_FTYPES; i++)
    if (!strcasecmp(name, ftypes[i].name)) return &ftypes[i];
  return NULL;
}

/* ---- tensor categories (llama.cpp's tensor_get_category) */

typedef enum { C_TOKEN_EMBD, C_ATTN_Q, C_ATTN_V, C_ATTN_K, C_ATTN_QKV, C_ATTN_KV_B, C_ATTN_OUTPUT, C_FFN_UP, C_FFN_GATE,
               C_FFN_DOWN, C_OUTPUT, C_OTHER } category;

static category category_of(const char *name) {
  if (!strcmp(name, "output.weight")) return C_OUTPUT;
  if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return C_TOKEN_EMBD;
  static const struct { const char *part; category c; } parts[] = {
    { "attn_qkv.weight", C_ATTN_QKV }, { "attn_kv_b.weight", C_ATTN_KV_B }, { "attn_v.weight", C_ATTN_V },
    { "attn_k.weight", C_ATTN_K }, { "attn_q.weight", C_ATTN_Q }, { "attn_output.weight", C_ATTN_OUTPUT },
    { "ffn_up", C_FFN_UP }, { "ffn_gate", C_FFN_GATE }, { "ffn_down", C_FFN_DOWN },
  };
  for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
    if (strstr(name, parts[i].part)) return parts[i].c;
  return C_OTHER;
}

static bool is_attn_v(category c) { return c == C_ATTN_V || c == C_ATTN_QKV || c == C_ATTN_KV_B; }

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* llama.cpp's tensor_allows_quantization, for 2+ dim tensors. */
static bool allows_quantization(const char *name) {
  static const char *const never[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
    "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight", "time_mix_first.weight",
    "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
    "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight",
    "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
    ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
  };
  if (!ends_with(name, "weight")) return false;
  for (size_t i = 0; i < sizeof never / sizeof *never; i++)
    if (strstr(name, never[i])) return false;
  return strcmp(name, "position_embd.weight") && strcmp(name, "token_types.weight");
}

static int layer_of(const char *name) {
  int l = -1;
  if (sscanf(name, "blk.%d.", &l) != 1) l = -1;
  return l;
}

int quant_tensor_cmp(const char *a, const char *b) {
  int la = layer_of(a), lb = layer_of(b);
  return la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
}

void quant_plan_for_file(quant_plan *p, const quant_ftype *ft, bool pure, const gguf_file *f) {
  memset(p, 0, sizeof *p);
  p->ft = ft;
  p->pure = pure;
  p->has_output = gguf_find_tensor(f, "output.weight") != NULL;
  char *arch = gguf_get_str(f, "general.architecture");
  char key[160];
  int64_t n_head = 0, n_head_kv = -1, v;
  snprintf(key, sizeof key, "%s.attention.head_count", arch ? arch : "");
  if (gguf_get_int(f, key, &v)) n_head = v;
  snprintf(key, sizeof key, "%s.attention.head_count_kv", arch ? arch : "");
  if (gguf_get_int(f, key, &v)) n_head_kv = v;
  if (n_head_kv < 0) n_head_kv = n_head;
  p->n_gqa = n_head_kv > 0 ? (int)(n_head / n_head_kv) : 0;
  snprintf(key, sizeof key, "%s.expert_count", arch ? arch : "");
  if (gguf_get_int(f, key, &v)) p->n_expert = (int)v;
  snprintf(key, sizeof key, "%s.block_count", arch ? arch : "");
  if (gguf_get_int(f, key, &v)) p->n_layer = (int)v;
  p->falcon = arch && !strcmp(arch, "falcon");
  /* llama.cpp's LLM_TYPE_70B for llama: 80 layers with grouped KV heads */
  p->is_70b = arch && !strcmp(arch, "llama") && p->n_layer == 80 && n_head != n_head_kv;
  free(arch);
  for (int i = 0; i < f->n_tensors; i++)
    if (is_attn_v(category_of(f->tensors[i].name))) p->n_attention_wv++;
}

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* llama.cpp's llama_tensor_get_type_impl for the file types tg writes. */
static uint32_t mixture_type(quant_plan *p, const char *name, category c, uint32_t t, const int64_t *ne) {
  const int ft = p->ft->ftype;
  if (c == C_OUTPUT || (!p->has_output && c == C_TOKEN_EMBD)) {
    if (p->falcon || ne[0] % ggml_type_info(t)->block_size) t = GGML_TYPE_Q8_0;
    else if (t != GGML_TYPE_Q8_0) t = GGML_TYPE_Q6_K;
  } else if (c == C_TOKEN_EMBD) {
    if (ft == FT_TQ1_0 || ft == FT_TQ2_0) t = GGML_TYPE_Q4_K;
  } else if (is_attn_v(c)) {
    int i = p->i_attention_wv, n = p->n_attention_wv;
    if (ft == FT_Q2_K) t = p->n_gqa >= 4 ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K;
    else if (ft == FT_Q3_K_M) t = i < 2 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
    else if (ft == FT_Q3_K_L) t = GGML_TYPE_Q5_K;
    else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && p->n_gqa >= 4) t = GGML_TYPE_Q5_K;
    else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && use_more_bits(i, n)) t = GGML_TYPE_Q6_K;
    else if (ft == FT_Q4_K_S && i < 4) t = GGML_TYPE_Q5_K;
    if (p->is_70b && (t == GGML_TYPE_Q3_K || t == GGML_TYPE_Q4_K)) t = GGML_TYPE_Q5_K;
    if (p->n_expert == 8) t = GGML_TYPE_Q8_0;
    p->i_attention_wv++;
  } else if (c == C_ATTN_K) {
    if (p->n_expert == 8) t = GGML_TYPE_Q8_0;
  } else if (c == C_FFN_DOWN) {
    int i = p->i_ffn_down, n = p->n_layer;
    if (p->n_expert > 1) i = layer_of(name);   /* experts are not one per layer in file order */
    if (ft == FT_Q2_K) t = GGML_TYPE_Q3_K;
    else if (ft == FT_Q3_K_M)
      t = i < n / 16 ? GGML_TYPE_Q5_K : !p->falcon || use_more_bits(i, n) ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K;
    else if (ft == FT_Q3_K_L) t = p->falcon ? GGML_TYPE_Q4_K : GGML_TYPE_Q5_K;
    else if (ft == FT_Q4_K_M) {
      if (p->falcon) t = i < n / 16 ? GGML_TYPE_Q6_K : use_more_bits(i, n) ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
      else if (use_more_bits(i, n)) t = GGML_TYPE_Q6_K;
    } else if (i < n / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS)) t = GGML_TYPE_Q5_K;
    else if (ft == FT_Q5_K_M && use_more_bits(i, n)) t = GGML_TYPE_Q6_K;
    else if (ft == FT_Q4_K_S && !p->falcon && i < n / 8) t = GGML_TYPE_Q5_K;
    p->i_ffn_down++;
  } else if (c == C_ATTN_OUTPUT) {
    if (!p->falcon) {
      if (p->n_expert == 8) {
        if (ft == FT_Q2_K || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL || ft == FT_Q4_K_S || ft == FT_Q4_K_M ||
            ft == FT_IQ4_XS)
          t = GGML_TYPE_Q5_K;
      } else if (ft == FT_Q2_K) t = GGML_TYPE_Q3_K;
      else if (ft == FT_Q3_K_M) t = GGML_TYPE_Q4_K;
      else if (ft == FT_Q3_K_L) t = GGML_TYPE_Q5_K;
    } else if (ft == FT_Q3_K_L) t = GGML_TYPE_Q4_K;
  } else if (c == C_FFN_GATE) {
    p->i_ffn_gate++;
  } else if (c == C_FFN_UP) {
    p->i_ffn_up++;
  }
  return t;
}

/* llama.cpp's tensor_type_fallback: a type whose block divides the rows. */
static uint32_t fallback_type(uint32_t t, int64_t ne0) {
  if (ne0 % ggml_type_info(t)->block_size == 0) return t;
  switch (t) {
    case GGML_TYPE_IQ4_XS: t = GGML_TYPE_IQ4_NL; break;
    case GGML_TYPE_Q2_K: case GGML_TYPE_Q3_K: case GGML_TYPE_TQ1_0: case GGML_TYPE_TQ2_0: t = GGML_TYPE_Q4_0; break;
    case GGML_TYPE_Q4_K: t = GGML_TYPE_Q5_0; break;
    case GGML_TYPE_Q5_K: t = GGML_TYPE_Q5_1; break;
    case GGML_TYPE_Q6_K: t = GGML_TYPE_Q8_0; break;
    default: break;   /* llama.cpp gives up here; F16 below */
  }
  return ne0 % ggml_type_info(t)->block_size ? GGML_TYPE_F16 : t;
}

static bool is_float_type(uint32_t t) { return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16; }

uint32_t quant_plan_type(quant_plan *p, const char *name, uint32_t type, int n_dims, const int64_t *ne) {
  if (!is_float_type(type) || n_dims < 2 || !allows_quantization(name)) return type;
  uint32_t t = p->ft->type;
  if (is_float_type(t)) return t;   /* llama.cpp's rules are for quantized types only */
  if (!p->pure) t = mixture_type(p, name, category_of(name), t, ne);
  return fallback_type(t, ne[0]);
}
