/* llm_forward.c: the transformer's forward graph for T tokens at the
 * symbolic position m->pos (llama.cpp's llm_build_llama / qwen2 / qwen3 /
 * olmo2 / deepseek2 / gemma2 / gemma3 in tensor ops): one straight loop
 * over the layers, the family's traits (m->arch, llm_arch.c) choosing the
 * norms, the activation and the q/k/v builder. Everything is lazy; llm_eval realizes it (under the
 * JIT). Attention reads the cache's first kv_len = pos + T rows, a symbolic
 * dimension, with a causal mask within the chunk, so one compiled step
 * serves every position. */
#include <math.h>
#include <stdlib.h>
#include "llm/llm.h"
#include "io/ggml_types.h"
#include "tg_dist.h"
#include "tensor/tensor.h"
#include "util/util.h"
#include "util/settings.h"

static tg_tensor *rms_norm(tg_tensor *x, tg_tensor *w, float eps) {
  tg_tensor *ms = tg_mean(tg_mul(x, x), TG_AXES(-1), true);
  tg_tensor *y = tg_mul(x, tg_rsqrt(tg_add(ms, tg_scalar(eps, TG_F32))));
  return w ? tg_mul(y, tg_cast(w, TG_F32)) : y;
}

/* x (T, in) @ w.T. A quantized w multiplies like ggml (x quantized to
 * 8-bit blocks, integer dot products per block): from its row-packed copy
 * (byte dot products over 16 rows at once, tg_quant_matmul_rows) at every
 * chunk size for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, Q2_K ... Q6_K and
 * IQ4_XS (TG_LLM_ROWS_K_PREFILL=0: prefill chunks of the 256-value types
 * take the float matmul instead: half the speed, a few seconds less of
 * first compile); else, with few rows of x, from the packed bytes for Q8_0
 * and Q4_0 (tg_quant_matmul). A float matrix held as panels of 32 rows
 * (llm_weights.c keep_panels) multiplies from them at every chunk size
 * (tensor_matmul_panels). The rest is a float matmul: with many rows
 * (a prefill chunk), the weights decode inside it, each decoded vector
 * serving 8 rows of x (the heuristic's tile); a float32 w is made
 * contiguous (a realized one already is, so this costs it nothing).
 * A row-packed product is a buffer of its own: fused into the store of a
 * reshaped view (K and V written into the cache as heads x head_dim), its
 * rows stop lining up with the 16-row groups and the kernel unrolls into
 * scalar code (a Q4_0 model decoded 3.8x slower). */
#define LINEAR_DECODE_ONCE_ROWS 16
static tg_tensor *linear(tg_llm *m, tg_tensor *x, tg_tensor *w, tg_tensor *b) {
  const llm_packed *pk = llm_packed_of(m, w);
  bool int_fast = pk && (pk->type == TG_GGML_Q8_0 || pk->type == TG_GGML_Q4_0);
  /* 256-value super-blocks (the K-quants, IQ4_XS): their integer form over a chunk is a big kernel to compile */
  bool kquant = pk && ggml_type_info((uint32_t)pk->type) && ggml_type_info((uint32_t)pk->type)->block_size == 256;
  bool chunk = tg_dim(x, 0) >= LINEAR_DECODE_ONCE_ROWS;
  tg_tensor *y = NULL;
  /* a chunk's x as a buffer: its math (a softmax's division, a norm) would
   * run again for every panel */
  if (pk && pk->panels) y = tensor_matmul_panels(chunk ? tg_contiguous(x) : x, pk->panels);
  else if (pk && !setting_on(SET_TG_LLM_FLOAT_MATVEC)) {
    if (pk->row_quants && !(kquant && chunk && !setting_int(SET_TG_LLM_ROWS_K_PREFILL)))
      y = tg_contiguous(tg_quant_matmul_rows(x, pk->row_scales, pk->row_quants, pk->type, tg_shape_of(w)));
    else if (int_fast && !chunk) y = tg_quant_matmul(x, pk->raw, pk->type, tg_shape_of(w));
  }
  if (!y) {
    if (chunk && tg_dtype_of(w) == TG_F32 && !int_fast) w = tg_contiguous(w);
    y = tg_matmul(x, tg_T(w));
    if (tg_dtype_of(y) != TG_F32) y = tg_cast(y, TG_F32);
  }
  return b ? tg_add(y, tg_cast(b, TG_F32)) : y;
}

/* Rotates x (T, H, head_dim): the first rope_dim dims of each head, by the
 * angles of cos/sin (T, 1, rope_dim/2). */
static tg_tensor *rope(tg_llm *m, tg_tensor *x, tg_tensor *cos, tg_tensor *sin) {
  const tg_llm_config *c = &m->cfg;
  int64_t T = tg_dim(x, 0), H = tg_dim(x, 1), half = c->rope_dim / 2;
  tg_tensor *rot = x, *pass = NULL;
  if (c->rope_dim < tg_dim(x, 2)) {
    rot = TG_GET(x, TG_ALLIDX, TG_ALLIDX, TG_UPTO(c->rope_dim));
    pass = TG_GET(x, TG_ALLIDX, TG_ALLIDX, TG_FROM(c->rope_dim));
  }
  tg_tensor *x0, *x1;
  if (c->rope_neox) {
    x0 = TG_GET(rot, TG_ALLIDX, TG_ALLIDX, TG_UPTO(half));
    x1 = TG_GET(rot, TG_ALLIDX, TG_ALLIDX, TG_FROM(half));
  } else {
    tg_tensor *pairs = tg_reshape(rot, TG_SHAPE(T, H, half, 2));
    x0 = TG_GET(pairs, TG_ALLIDX, TG_ALLIDX, TG_ALLIDX, TG_I(0));
    x1 = TG_GET(pairs, TG_ALLIDX, TG_ALLIDX, TG_ALLIDX, TG_I(1));
  }
  tg_tensor *y0 = tg_sub(tg_mul(x0, cos), tg_mul(x1, sin));
  tg_tensor *y1 = tg_add(tg_mul(x0, sin), tg_mul(x1, cos));
  tg_tensor *y;
  if (c->rope_neox) y = tg_cat((tg_tensor *[]){ y0, y1 }, 2, -1);
  else y = tg_reshape(tg_stack((tg_tensor *[]){ y0, y1 }, 2, -1), TG_SHAPE(T, H, c->rope_dim));
  return pass ? tg_cat((tg_tensor *[]){ y, pass }, 2, -1) : y;
}

/* cap * tanh(x / cap) (Gemma 2's scores and logits). */
static tg_tensor *softcap(tg_tensor *x, float cap) {
  return tg_mul(tg_tanh(tg_mul(x, tg_scalar(1.0 / cap, TG_F32))), tg_scalar(cap, TG_F32));
}

/* The rows of layer l's cache that belong to the graph's sequences: all
 * of them with one sequence; else the current sequence's block (its
 * variable picks it), or, in a batched step, each row's own block
 * (B, S, ...), also with one sequence. */
static tg_tensor *cache_block(tg_llm *m, const llm_layer *l, tg_tensor *cache) {
  if (m->n_seq <= 1 && !m->batch_seqs) return cache;
  tg_shape s = tg_shape_of(cache);
  int64_t S = l->ring ? l->ring : m->cfg.n_ctx;
  tg_tensor *blocks = tg_reshape(cache, TG_SHAPE(m->n_seq, S, s.d[1], s.d[2]));
  if (!m->batch_seqs) return tg_take(blocks, m->seq_var);
  /* rows' blocks widened before the take (as moe's experts): taken first,
   * a float16 block is masked in float16 and each value converted thrice */
  return tg_take(tg_cast(blocks, TG_F32), m->batch_seqs);
}

/* The cache rows that tokens at positions (T,) are written to: a ring's
 * rows go by position mod ring; with several sequences, in their blocks. */
static tg_tensor *cache_rows(tg_llm *m, const llm_layer *l, tg_tensor *positions) {
  tg_tensor *rows = l->ring ? tg_mod(positions, tg_scalar(l->ring, TG_I32)) : positions;
  if (m->n_seq <= 1) return rows;
  int64_t S = l->ring ? l->ring : m->cfg.n_ctx;
  tg_tensor *seq = m->batch_seqs ? m->batch_seqs : m->seq_var;
  return tg_add(rows, tg_mul(seq, tg_scalar((double)S, TG_I32)));
}

/* The parts of softmax(scores) over axis: the exponentials of the scores
 * less their max, stored once (the sum and the product with v both read
 * them; each would call exp for every score again), and their sum in
 * *denom. A head's sink (gpt-oss, shaped to broadcast against the scores'
 * max) is one more logit in the max and the sum, with no value. */
static tg_tensor *softmax_parts(tg_tensor *scores, tg_tensor *sink, int axis, tg_tensor **denom) {
  tg_tensor *mx = tg_max(scores, TG_AXES(axis), true);
  if (sink) mx = tg_maximum(mx, sink);
  tg_tensor *e = tg_contiguous(tg_exp(tg_sub(scores, mx)));
  *denom = tg_sum(e, TG_AXES(axis), true);
  if (sink) *denom = tg_add(*denom, tg_exp(tg_sub(sink, mx)));
  return e;
}

/* softmax(scores) @ v over the last axis, divided by the sum after the
 * product (once per output, not once per score inside its loop) */
static tg_tensor *softmax_values(tg_tensor *scores, tg_tensor *sink, tg_tensor *v) {
  tg_tensor *denom, *e = softmax_parts(scores, sink, -1, &denom);
  return tg_div(tg_matmul(e, v), denom);
}

/* Attention of q (T, H, hd) over the first kv_len = pos + T cache positions
 * (a symbolic axis of size S = n_ctx), keys at positions j <= pos + t; or,
 * for a layer with a ring, over all its S = ring rows. mask is (T, S)
 * bool, NULL for one token without a ring (it sees every key). In a
 * batched step each of the T rows is one token of some sequence (several
 * rows may share one, at consecutive positions), with its own keys (the
 * first kv_len of its sequence's block, the longest row's length; the
 * step's keys of its sequence written before they are read) and a mask
 * (T, S) always: its own causal limit. */
static tg_tensor *attention(tg_llm *m, llm_layer *l, tg_tensor *q, tg_tensor *mask) {
  const tg_llm_config *c = &m->cfg;
  int64_t T = tg_dim(q, 0), KV = c->n_kv_heads, G = c->n_heads / c->n_kv_heads, hd = c->head_dim, hv = c->head_dim_v;
  int64_t S = l->ring ? l->ring : c->n_ctx;
  bool batched = m->batch_seqs != NULL;
  /* the cache's values (f16 by default; q8_0 blocks times their scales) in
   * float32, converted as they are read */
  tg_tensor *kc = cache_block(m, l, l->k_cache), *vc = cache_block(m, l, l->v_cache);
  if (llm_cache_q8(m)) kc = llm_kv_q8_values(kc, cache_block(m, l, l->k_scales)), vc = llm_kv_q8_values(vc, cache_block(m, l, l->v_scales));
  if (!l->ring) kc = tg_shrink_var(kc, batched ? 1 : 0, m->kv_name), vc = tg_shrink_var(vc, batched ? 1 : 0, m->kv_name);
  kc = tg_cast(kc, TG_F32), vc = tg_cast(vc, TG_F32);
  tg_tensor *sink = NULL, *o;
  if (batched) {
    tg_tensor *qg = tg_reshape(tg_contiguous(q), TG_SHAPE(T, KV, G, hd));                                       /* (T, KV, G, hd) */
    tg_tensor *kt = tg_permute(kc, TG_AXES(0, 2, 3, 1));                                         /* (T, KV, hd, S) */
    tg_tensor *v = tg_permute(vc, TG_AXES(0, 2, 1, 3));                                          /* (T, KV, S, hv) */
    tg_tensor *scores = tg_mul(tg_matmul(qg, kt), tg_scalar(m->q_scale, TG_F32));               /* (T, KV, G, S) */
    if (m->attn_softcap > 0) scores = softcap(scores, m->attn_softcap);
    scores = tg_where(tg_reshape(mask, TG_SHAPE(T, 1, 1, tg_dim(mask, 1))), scores, tg_scalar(-INFINITY, TG_F32));
    if (l->sinks) sink = tg_reshape(tg_cast(l->sinks, TG_F32), TG_SHAPE(1, KV, G, 1));
    o = softmax_values(scores, sink, v);                                                         /* (T, KV, G, hv) */
    return tg_reshape(o, TG_SHAPE(T, c->n_heads * hv));
  }
  tg_tensor *qg = tg_permute(tg_reshape(q, TG_SHAPE(T, KV, G, hd)), TG_AXES(1, 2, 0, 3));        /* (KV, G, T, hd) */
  tg_tensor *v = tg_reshape(tg_permute(vc, TG_AXES(1, 0, 2)), TG_SHAPE(KV, 1, S, hv));           /* (KV, 1, S, hv) */
  if (T >= 16 && !l->sinks) {
    /* a prompt chunk: the scores as (KV, G, S, T), the chunk's tokens the
     * last axis, so the mask, the exponentials and the softmax's sums run
     * in vector lanes over tokens (the key axis has a symbolic length,
     * which gets none) */
    tg_tensor *k = tg_reshape(tg_permute(tg_contiguous(kc), TG_AXES(1, 0, 2)), TG_SHAPE(KV, 1, S, hd));        /* (KV, 1, S, hd) */
    tg_tensor *qt = tg_contiguous(tg_permute(qg, TG_AXES(0, 1, 3, 2)));                          /* (KV, G, hd, T) */
    tg_tensor *sc = tg_mul(tg_matmul(k, qt), tg_scalar(m->q_scale, TG_F32));                     /* (KV, G, S, T) */
    if (m->attn_softcap > 0) sc = softcap(sc, m->attn_softcap);
    if (mask) sc = tg_where(tg_permute(mask, TG_AXES(1, 0)), sc, tg_scalar(-INFINITY, TG_F32));
    tg_tensor *denom, *e = softmax_parts(sc, NULL, -2, &denom);                                 /* (KV, G, S, T), (KV, G, 1, T) */
    o = tg_div(tg_matmul(tg_permute(e, TG_AXES(0, 1, 3, 2)), v), tg_permute(denom, TG_AXES(0, 1, 3, 2)));   /* (KV, G, T, hv) */
    return tg_reshape(tg_permute(o, TG_AXES(2, 0, 1, 3)), TG_SHAPE(T, c->n_heads * hv));
  }
  tg_tensor *kt = tg_reshape(tg_permute(kc, TG_AXES(1, 2, 0)), TG_SHAPE(KV, 1, hd, S));          /* (KV, 1, hd, S) */
  tg_tensor *scores = tg_mul(tg_matmul(qg, kt), tg_scalar(m->q_scale, TG_F32));
  if (m->attn_softcap > 0) scores = softcap(scores, m->attn_softcap);
  if (mask) scores = tg_where(mask, scores, tg_scalar(-INFINITY, TG_F32));
  if (l->sinks) sink = tg_reshape(tg_cast(l->sinks, TG_F32), TG_SHAPE(KV, G, 1, 1));
  o = softmax_values(scores, sink, v);                                                           /* (KV, G, T, hv) */
  return tg_reshape(tg_permute(o, TG_AXES(2, 0, 1, 3)), TG_SHAPE(T, c->n_heads * hv));
}

/* act(g) * u (silu: SwiGLU; gelu, tanh approximation: GeGLU), stored: the
 * down projection reads it more than once (x's block maxima, its
 * quantization, or a prefill's row tiles), and the activation's
 * exponential is costly. The caller stores the matmul that g and u come
 * from; else the scheduler fuses it into this elementwise kernel, without
 * its tiling. */
static tg_tensor *act_glu(tg_llm *m, tg_tensor *g, tg_tensor *u) {
  switch (m->arch->act) {
    case LLM_GEGLU: return tg_mul(tg_gelu(g), u);
    case LLM_SWIGLU_OAI: {   /* ggml's swiglu_oai, alpha 1.702, limit 7 (llama.cpp's constants) */
      g = tg_minimum(g, tg_scalar(7, TG_F32));
      tg_tensor *lin = tg_add(tg_clamp(u, -7, 7), tg_scalar(1, TG_F32));
      return tg_mul(tg_mul(g, tg_sigmoid(tg_mul(g, tg_scalar(1.702, TG_F32)))), lin);
    }
    case LLM_SWIGLU: break;
  }
  return tg_mul(tg_silu(g), u);
}
static tg_tensor *glu(tg_llm *m, tg_tensor *g, tg_tensor *u) { return tg_contiguous(act_glu(m, g, u)); }

static tg_tensor *dense_ffn(tg_llm *m, tg_tensor *h, tg_tensor *gate, tg_tensor *up, tg_tensor *down) {
  return linear(m, glu(m, tg_contiguous(linear(m, h, gate, NULL)), tg_contiguous(linear(m, h, up, NULL))), down, NULL);
}

/* x (T, 1 or K, cols) times the chosen experts (T, K) of w (E, rows,
 * cols): (T, K, rows) F32. Quantized experts with a row-packed copy
 * (llm_weights.c) multiply like llama.cpp's mul_mat_id: x quantized to
 * 8-bit blocks, byte dot products over the chosen experts' 16-row groups
 * (tg_quant_matmul_rows_experts), a buffer of its own as linear()'s.
 * Otherwise a float matmul over the chosen experts' matrices, cast to
 * float32 before the take: a float16 w taken first is masked (a take's
 * out-of-range rows read zero) in float16 and widened after, and that
 * kernel stays scalar (an F16 MoE decoded at 0.6x llama.cpp; the experts'
 * two kernels 2.9 -> 0.5 ms a layer). For quantized experts (their float
 * values already) the cast is nothing. */
static tg_tensor *experts_matmul(tg_llm *m, tg_tensor *w, tg_tensor *chosen, tg_tensor *x) {
  const llm_packed *pk = llm_packed_of(m, w);
  if (pk && pk->row_quants && !setting_on(SET_TG_LLM_FLOAT_MATVEC)) {
    tg_tensor *y = tg_quant_matmul_rows_experts(x, pk->row_scales, pk->row_quants, pk->type, tg_shape_of(w), chosen);
    if (y) return tg_contiguous(y);
    tg_clear_error();   /* a type without an expert form: the float path */
  }
  return tg_squeeze(tg_cast(tg_matmul(tg_take(tg_cast(w, TG_F32), chosen), tg_unsqueeze(x, -1)), TG_F32), -1);
}

/* llama.cpp's build_moe_ffn: route each token to its top-k experts and add
 * their outputs by the router's weights. The chosen experts' matrices are
 * read through tg_take, so a token's kernels read only those experts. */
static tg_tensor *moe_ffn(tg_llm *m, llm_layer *l, tg_tensor *h) {
  const tg_llm_config *c = &m->cfg;
  int64_t T = tg_dim(h, 0), K = c->n_experts_used;
  tg_tensor *logits = linear(m, h, l->router, l->router_b);                                        /* (T, E) */
  tg_tensor *chosen = NULL, *w;
  if (m->gating == LLM_GATING_SOFTMAX_WEIGHT) {   /* the top k logits, weighted by their own softmax */
    tg_topk(logits, K, -1, true, true, &chosen);                                               /* (T, K) */
    w = tg_softmax(tg_gather(logits, -1, chosen), -1);
  } else {
    tg_tensor *probs = c->expert_gating_sigmoid ? tg_sigmoid(logits) : tg_softmax(logits, -1);
    tg_tensor *select = l->expert_bias ? tg_add(probs, tg_cast(l->expert_bias, TG_F32)) : probs;
    tg_topk(select, K, -1, true, true, &chosen);                                               /* (T, K) */
    w = tg_gather(probs, -1, chosen);                                                           /* (T, K) */
  }
  if (c->expert_weights_norm) w = tg_div(w, tg_sum(w, TG_AXES(-1), true));
  if (c->expert_weights_scale > 0) w = tg_mul(w, tg_scalar(c->expert_weights_scale, TG_F32));
  tg_tensor *x = tg_reshape(h, TG_SHAPE(T, 1, c->dim));
  tg_tensor *g = experts_matmul(m, l->gate_exps, chosen, x);                                     /* (T, K, F) */
  tg_tensor *u = experts_matmul(m, l->up_exps, chosen, x);
  if (l->gate_exps_b) g = tg_add(g, tg_cast(tg_take(l->gate_exps_b, chosen), TG_F32));
  if (l->up_exps_b) u = tg_add(u, tg_cast(tg_take(l->up_exps_b, chosen), TG_F32));
  tg_tensor *a = act_glu(m, g, u);
  /* tensor parallel with down split by its rows (llm_tp.c): each device
   * reads all of a, and its dim/n outputs are gathered after the sum */
  bool down_rows = tg_shard_axis(l->down_exps) == 1;
  if (down_rows) a = llm_tp_gather(m, a);
  tg_tensor *d = experts_matmul(m, l->down_exps, chosen, a);                                     /* (T, K, dim) */
  if (l->down_exps_b) d = tg_add(d, tg_cast(tg_take(l->down_exps_b, chosen), TG_F32));
  tg_tensor *out = tg_sum(tg_mul(d, tg_reshape(w, TG_SHAPE(T, K, 1))), TG_AXES(1), false);       /* (T, dim) */
  if (down_rows) out = llm_tp_gather(m, out);
  if (l->gate_shexp) {
    tg_tensor *s = dense_ffn(m, h, l->gate_shexp, l->up_shexp, l->down_shexp);
    if (l->router_shexp) s = tg_mul(s, tg_sigmoid(linear(m, h, tg_unsqueeze(l->router_shexp, 0), NULL)));
    out = tg_add(out, s);
  }
  return out;
}

static tg_tensor *norm_heads(tg_tensor *x, tg_tensor *w, float eps, llm_qk_norm how, int64_t T, int64_t H, int64_t hd) {
  if (!w || how == LLM_QK_NONE) return x;
  if (how == LLM_QK_PER_HEAD) return rms_norm(x, w, eps);
  return tg_reshape(rms_norm(tg_reshape(x, TG_SHAPE(T, H * hd)), w, eps), TG_SHAPE(T, H, hd));
}

/* q, k, v (T, heads, head size) of the usual attention: projections,
 * optional q/k norms, RoPE on q and k. A gated family's q projection holds
 * each head's q then its gate (T, heads * head size to *gate). */
static void qkv_mha(tg_llm *m, llm_layer *l, tg_tensor *h, tg_tensor *cos, tg_tensor *sin, tg_tensor **q, tg_tensor **k, tg_tensor **v,
                    tg_tensor **gate) {
  const tg_llm_config *c = &m->cfg;
  int64_t T = tg_dim(h, 0), hd = c->head_dim;
  int64_t qd = c->n_heads * hd * (m->arch->attn_gate ? 2 : 1), kd = c->n_kv_heads * hd;
  tg_tensor *qf, *kf, *vf;
  if (l->wqkv) {
    tg_tensor *qkv = linear(m, h, l->wqkv, NULL);
    qf = TG_GET(qkv, TG_ALLIDX, TG_UPTO(qd));
    kf = TG_GET(qkv, TG_ALLIDX, TG_SLICE(qd, qd + kd, 1));
    vf = TG_GET(qkv, TG_ALLIDX, TG_FROM(qd + kd));
    if (l->bq) { qf = tg_add(qf, tg_cast(l->bq, TG_F32)); kf = tg_add(kf, tg_cast(l->bk, TG_F32)); vf = tg_add(vf, tg_cast(l->bv, TG_F32)); }
  } else {
    qf = linear(m, h, l->wq, l->bq); kf = linear(m, h, l->wk, l->bk); vf = linear(m, h, l->wv, l->bv);
  }
  if (m->arch->attn_gate) {
    tg_tensor *qg = tg_reshape(qf, TG_SHAPE(T, c->n_heads, 2 * hd));
    *gate = tg_reshape(TG_GET(qg, TG_ALLIDX, TG_ALLIDX, TG_FROM(hd)), TG_SHAPE(T, c->n_heads * hd));
    qf = TG_GET(qg, TG_ALLIDX, TG_ALLIDX, TG_UPTO(hd));
  }
  *q = tg_reshape(qf, TG_SHAPE(T, c->n_heads, hd));
  *k = tg_reshape(kf, TG_SHAPE(T, c->n_kv_heads, hd));
  *v = tg_reshape(vf, TG_SHAPE(T, c->n_kv_heads, c->head_dim_v));
  *q = rope(m, norm_heads(*q, l->q_norm, c->rms_eps, m->arch->qk_norm, T, c->n_heads, hd), cos, sin);
  *k = rope(m, norm_heads(*k, l->k_norm, c->rms_eps, m->arch->qk_norm, T, c->n_kv_heads, hd), cos, sin);
}

/* DeepSeek's multi-head latent attention (llama.cpp's llm_build_deepseek2):
 * q from a low-rank pair (or one matrix); keys and values decompressed from
 * a normalized latent; the RoPE'd part of the key is one head shared by all.
 * The cache holds the decompressed keys and values. */
static void qkv_mla(tg_llm *m, llm_layer *l, tg_tensor *h, tg_tensor *cos, tg_tensor *sin, tg_tensor **q, tg_tensor **k, tg_tensor **v,
                    tg_tensor **gate) {
  (void)gate;
  const tg_llm_config *c = &m->cfg;
  int64_t T = tg_dim(h, 0), H = c->n_heads, hd = c->head_dim, rd = c->rope_dim, nope = hd - rd, R = c->kv_lora_rank;
  tg_tensor *qf = l->q_a ? linear(m, rms_norm(linear(m, h, l->q_a, NULL), l->q_a_norm, c->rms_eps), l->q_b, NULL) : linear(m, h, l->wq, NULL);
  qf = tg_reshape(qf, TG_SHAPE(T, H, hd));
  tg_tensor *q_nope = TG_GET(qf, TG_ALLIDX, TG_ALLIDX, TG_UPTO(nope));
  tg_tensor *q_pe = rope(m, TG_GET(qf, TG_ALLIDX, TG_ALLIDX, TG_FROM(nope)), cos, sin);
  tg_tensor *kv_a = linear(m, h, l->kv_a, NULL);                                                     /* (T, R + rd) */
  tg_tensor *latent = rms_norm(TG_GET(kv_a, TG_ALLIDX, TG_UPTO(R)), l->kv_a_norm, c->rms_eps);
  tg_tensor *k_pe = rope(m, tg_reshape(TG_GET(kv_a, TG_ALLIDX, TG_FROM(R)), TG_SHAPE(T, 1, rd)), cos, sin);
  tg_tensor *kv = tg_reshape(linear(m, latent, l->kv_b, NULL), TG_SHAPE(T, H, nope + c->head_dim_v));
  tg_tensor *k_nope = TG_GET(kv, TG_ALLIDX, TG_ALLIDX, TG_UPTO(nope));
  *v = TG_GET(kv, TG_ALLIDX, TG_ALLIDX, TG_FROM(nope));
  *q = tg_cat((tg_tensor *[]){ q_nope, q_pe }, 2, -1);
  *k = tg_cat((tg_tensor *[]){ k_nope, tg_expand(k_pe, TG_SHAPE(T, H, rd)) }, 2, -1);
}

/* The q/k/v builders, by the row's attention kind. */
typedef void qkv_fn(tg_llm *, llm_layer *, tg_tensor *, tg_tensor *, tg_tensor *, tg_tensor **, tg_tensor **, tg_tensor **, tg_tensor **);
static qkv_fn *const qkv_builders[] = { [LLM_ATTN_MHA] = qkv_mha, [LLM_ATTN_MLA] = qkv_mla };

/* The mask (T, ring) of a sliding layer's ring: row s holds position
 * P(s) = last - ((last - s) mod ring), last = pos + T - 1, the latest
 * position written there (the chunk's own keys included); query pos + t
 * sees it when 0 <= P(s) <= pos + t and pos + t - P(s) < window. The ring
 * holds window + T - 1 positions at least, so every key in a window is
 * there (tg_llm_rewind keeps that true after a rewind). */
static tg_tensor *ring_mask(tg_llm *m, tg_tensor *positions, int64_t T) {
  tg_tensor *R = tg_scalar(m->ring, TG_I32);
  /* a batched step's rows: the last position of their sequence in the step */
  tg_tensor *last = m->batch_seqs ? tg_unsqueeze(m->batch_last, 1) : tg_add(m->pos, tg_scalar((double)(T - 1), TG_I32));
  tg_tensor *slots = tg_unsqueeze(tg_arange(0, m->ring, 1, TG_I32), 0);                              /* (1, ring) */
  tg_tensor *held = tg_sub(last, tg_mod(tg_add(tg_sub(last, slots), R), R));                          /* P(s) */
  tg_tensor *q = tg_unsqueeze(positions, 1);                                                          /* (T, 1) */
  tg_tensor *seen = tg_logical_and(tg_ge(held, tg_scalar(0, TG_I32)), tg_le(held, q));
  return tg_logical_and(seen, tg_gt(held, tg_sub(q, tg_scalar(m->swa_window, TG_I32))));
}

/* The mask (T, kv_len) of layer l's attention for a chunk at positions
 * (T,), or NULL when it masks nothing: causal within a prompt chunk; a
 * sliding layer sees keys within the last swa_window positions (llama.cpp:
 * masked when pos - key >= window; a window as long as the cache masks
 * nothing), or its ring's rows. */
static tg_tensor *layer_mask(tg_llm *m, const llm_layer *l, tg_tensor *positions, int64_t T) {
  const tg_llm_config *c = &m->cfg;
  if (l->swa && m->ring) return ring_mask(m, positions, T);
  bool near = l->swa && m->swa_window > 0 && m->swa_window < c->n_ctx;
  bool causal = T > 1 || m->batch_seqs;   /* a batched step's rows have their own lengths */
  if (!causal && !near) return NULL;
  tg_tensor *keys = tg_unsqueeze(tg_shrink_var(tg_arange(0, c->n_ctx, 1, TG_I32), 0, m->kv_name), 0);   /* (1, kv_len) */
  tg_tensor *mask = causal ? tg_le(keys, tg_unsqueeze(positions, 1)) : NULL;                        /* (T, kv_len) */
  if (near) {
    tg_tensor *seen = tg_gt(keys, tg_unsqueeze(tg_sub(positions, tg_scalar(m->swa_window, TG_I32)), 1));
    mask = mask ? tg_logical_and(mask, seen) : seen;
  }
  return mask;
}

/* The attention half of layer l on its normed input h (T, dim): q, k, v,
 * their writes into the cache, attention (times sigmoid of the gate in a
 * gated family), the output projection. */
static tg_tensor *attention_block(tg_llm *m, llm_layer *l, tg_tensor *h, tg_tensor *cos_table, tg_tensor *sin_table) {
  int64_t T = tg_dim(h, 0);
  tg_tensor *positions = m->batch_pos ? m->batch_pos : tg_add(m->pos, tg_arange(0, (double)T, 1, TG_I32));   /* (T,) */
  tg_tensor *cos = tg_unsqueeze(tg_take(cos_table, positions), 1);                             /* (T, 1, rope/2) */
  tg_tensor *sin = tg_unsqueeze(tg_take(sin_table, positions), 1);
  tg_tensor *mask = layer_mask(m, l, positions, T);
  tg_tensor *rows = cache_rows(m, l, positions);
  tg_tensor *q, *k, *v, *gate = NULL;
  qkv_builders[m->arch->attn](m, l, h, cos, sin, &q, &k, &v, &gate);
  if (llm_cache_q8(m)) {
    tg_tensor *kq, *kd, *vq, *vd;
    llm_kv_q8_quantize(k, &kq, &kd);
    llm_kv_q8_quantize(v, &vq, &vd);
    tg_assign(tg_take(l->k_cache, rows), kq), tg_assign(tg_take(l->k_scales, rows), kd);
    tg_assign(tg_take(l->v_cache, rows), vq), tg_assign(tg_take(l->v_scales, rows), vd);
  } else {
    tg_assign(tg_take(l->k_cache, rows), tg_cast(k, m->cache_dtype));
    tg_assign(tg_take(l->v_cache, rows), tg_cast(v, m->cache_dtype));
  }
  tg_tensor *o = attention(m, l, q, mask);                                                     /* (T, H * hv) */
  if (gate) o = tg_mul(o, tg_sigmoid(gate));
  return linear(m, o, l->wo, l->bo);
}

tg_tensor *llm_layer_forward(tg_llm *m, llm_layer *l, tg_tensor *x, tg_tensor *cos_table, tg_tensor *sin_table) {
  const tg_llm_config *c = &m->cfg;
  const llm_arch *A = m->arch;
  tg_tensor *h = A->norms & LLM_NORM_PRE ? rms_norm(x, l->attn_norm, c->rms_eps) : x;
  /* a delta-net layer mixes tokens through its recurrent state instead */
  tg_tensor *a = l->recurrent ? llm_gdn(m, l, h) : attention_block(m, l, h, cos_table, sin_table);
  if (A->norms & LLM_NORM_POST) a = rms_norm(a, l->attn_post_norm, c->rms_eps);
  x = tg_add(x, a);
  h = A->norms & LLM_NORM_PRE ? rms_norm(x, l->ffn_norm, c->rms_eps) : x;
  tg_tensor *f;
  if (l->router) f = moe_ffn(m, l, h);
  else if (l->w_gate_up) {
    tg_tensor *gu = tg_contiguous(linear(m, h, l->w_gate_up, NULL));
    f = linear(m, glu(m, TG_GET(gu, TG_ALLIDX, TG_UPTO(c->ffn_dim)), TG_GET(gu, TG_ALLIDX, TG_FROM(c->ffn_dim))), l->w_down, NULL);
  } else f = dense_ffn(m, h, l->w_gate, l->w_up, l->w_down);
  if (A->norms & LLM_NORM_POST) f = rms_norm(f, l->ffn_post_norm, c->rms_eps);
  return tg_add(x, f);
}

/* The residual stream after the last layer (T, dim), before the final norm:
 * each layer a call of its kind's function (llm_layer_fn.c), or inline
 * with TG_LLM_FUNCTIONS=0. Layers split over ranks (llm_pp.c): this rank's
 * layers, from the embedding on the first rank, else from the rank
 * before's rows (in, (T, dim) float32). */
static tg_tensor *residual(tg_llm *m, tg_tensor *in) {
  const tg_llm_config *c = &m->cfg;
  tg_tensor *x = in;
  if (llm_pp_first(m)) {
    x = tg_cast(tg_take(m->tok_embd, llm_tp_input(m, in)), TG_F32);                           /* (T, dim) */
    if (m->arch->embd_scale) x = tg_mul(x, tg_scalar(sqrtf((float)c->dim), TG_F32));
  }
  /* a batched step builds its layers inline: their rows' positions and
   * sequences are tensors of the step, not a call's inputs */
  bool calls = setting_int(SET_TG_LLM_FUNCTIONS) != 0 && !m->batch_seqs && m->n_tp <= 1;   /* a call's body runs on one device */
  for (int i = m->layer_lo; i < m->layer_hi && x; i++) {
    llm_layer *l = &m->layers[i];
    tg_tensor *ct = l->swa && m->rope_cos_swa ? m->rope_cos_swa : m->rope_cos;
    tg_tensor *st = l->swa && m->rope_sin_swa ? m->rope_sin_swa : m->rope_sin;
    x = calls ? llm_layer_call(m, i, x, ct, st) : llm_layer_forward(m, l, x, ct, st);
  }
  return x;
}

tg_tensor *llm_linear(tg_llm *m, tg_tensor *x, tg_tensor *w, tg_tensor *b) { return linear(m, x, w, b); }
tg_tensor *llm_rms_norm(tg_tensor *x, tg_tensor *w, float eps) { return rms_norm(x, w, eps); }

tg_tensor *llm_hidden(tg_llm *m, tg_tensor *tokens) {
  tg_tensor *x = residual(m, tokens);
  return x ? rms_norm(x, m->output_norm, m->cfg.rms_eps) : NULL;
}

tg_tensor *llm_logits(tg_llm *m, tg_tensor *h) {
  tg_tensor *logits = linear(m, h, m->output, NULL);
  return llm_tp_output(m, m->final_softcap > 0 ? softcap(logits, m->final_softcap) : logits);
}

tg_tensor *llm_forward(tg_llm *m, tg_tensor *tokens) {
  int64_t T = tg_dim(tokens, 0);
  tg_tensor *x = residual(m, tokens);
  if (!x || !llm_pp_last(m)) return x;   /* (split layers) every row, for the next rank */
  /* the chunk's last token's row, which a padded chunk has before its end */
  tg_tensor *last = T > 1 ? tg_take(x, tg_reshape(m->last_row, TG_SHAPE(1))) : x;                 /* (1, dim) */
  return llm_logits(m, rms_norm(last, m->output_norm, m->cfg.rms_eps));
}
