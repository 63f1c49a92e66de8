/* llm.h: the model runner's internals (see include/tg_llm.h): the model
 * struct, config from GGUF metadata, weights, and the forward graph. */
#ifndef TG_LLM_INTERNAL_H
#define TG_LLM_INTERNAL_H

#include "io/gguf_file.h"
#include "tg.h"

/* The chunk sizes a prompt is cut into; each has its own JIT, compiled
 * once for every position: attention reads the cache's first kv_len =
 * pos + T rows, kv_len a symbolic dimension (tg_shrink_var). */
#define LLM_MAX_CTX (1 << 20)   /* the most KV cache positions tg_llm_load takes (tg's -c too) */
#define LLM_CHUNKS { 64, 16, 4, 1 }
#define LLM_NCHUNKS 4

typedef struct {
  tg_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv;
  tg_tensor *wqkv, *w_gate_up;           /* q|k|v and gate|up stacked by rows (when their types match) */
  tg_tensor *q_norm, *k_norm;            /* qwen3: per head; olmo2: over all heads */
  tg_tensor *attn_post_norm, *ffn_post_norm;   /* olmo2 normalizes after, not before */
  tg_tensor *ffn_norm, *w_gate, *w_up, *w_down;
  tg_tensor *k_cache, *v_cache;          /* (n_ctx, n_kv_heads, head_dim / head_dim_v) */
  /* MLA: q_a (q_lora, dim), q_a_norm, q_b (H * hd, q_lora); kv_a (kv_lora + rope, dim), kv_a_norm, kv_b (H * (nope + hd_v), kv_lora) */
  tg_tensor *q_a, *q_a_norm, *q_b, *kv_a, *kv_a_norm, *kv_b;
  /* mixture of experts: router (E, dim), experts (E, ffn, dim) / (E, dim, ffn) */
  tg_tensor *router, *expert_bias, *gate_exps, *up_exps, *down_exps;
  tg_tensor *gate_shexp, *up_shexp, *down_shexp, *router_shexp;
} llm_layer;

/* A quantized weight's lazy float values w next to what matmuls read
 * instead: its row-packed copy (tg_quant_pack_rows; then raw is NULL and w
 * reads the copy), or its packed bytes raw (tg_quant_matmul for Q8_0/Q4_0
 * with few rows of x). */
typedef struct {
  tg_tensor *w, *raw;
  int type;
  tg_tensor *row_scales, *row_quants;   /* tg_quant_pack_rows's copy (NULL: none) */
} llm_packed;

struct tg_llm {
  tg_llm_config cfg;
  gguf_file *file;
  const char *device;                    /* where its tensors live (every tensor it makes goes there) */
  tg_dtype cache_dtype;                  /* of the KV cache */
  bool post_norms;                       /* olmo2 */
  bool qk_norm_per_head;                 /* qwen3 (else over the whole q/k) */
  tg_tensor *tok_embd, *output_norm, *output;
  llm_layer *layers;
  tg_tensor *rope_cos, *rope_sin;        /* (n_ctx, rope_dim / 2) */
  char pos_name[32];                     /* the symbolic position's variable */
  char kv_name[32];                      /* the attended length pos + T: a symbolic axis size */
  tg_tensor *pos;
  int n_past;
  int32_t *history;                      /* the n_past tokens in the cache */
  tg_jit *jit[LLM_NCHUNKS];              /* made on first use */
  int chunk[LLM_NCHUNKS];
  llm_packed *packed;                    /* quantized weights (owned raws) */
  int npacked;
};

/* The packed bytes behind weight w (NULL when it is not quantized). */
const llm_packed *llm_packed_of(const tg_llm *m, const tg_tensor *w);

/* Fills m->cfg from the file's metadata; -1 + tg_error. */
int llm_read_config(tg_llm *m, int n_ctx);
/* Loads every weight of m's architecture (NULL-safe for optional ones). */
int llm_load_weights(tg_llm *m, const char *device);
/* The logits (1, n_vocab) of the last of tokens (T,) int32 at positions
 * pos .. pos+T-1, writing their keys and values into the caches. */
tg_tensor *llm_forward(tg_llm *m, tg_tensor *tokens);

#endif
