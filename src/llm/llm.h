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
#define LLM_MAX_CHUNK 64          /* the largest of LLM_CHUNKS: a sliding layer's ring holds window + LLM_MAX_CHUNK - 1 rows */
#define LLM_EVAL_JITS 4           /* tg_llm_eval_all keeps this many piece JITs (size, rows skipped) */
typedef struct { tg_llm *m; int T, skip; unsigned used; tg_jit *jit; } llm_eval_jit;
#define LLM_NCHUNKS 4
#define LLM_MAX_SEQ 64            /* the most sequences a model's caches hold */
#define LLM_MAX_DEVICES 16        /* the most devices a model is sharded over (tensor parallel) */
#define LLM_PACK_KEY 96           /* a packed weight's name in the packed-weights cache, NUL included */
#define LLM_MAX_BATCH 128         /* the most rows of one tg_llm_eval_batch */
#define LLM_BATCH_JITS 16         /* tg_llm_eval_batch keeps this many step JITs (rows, logits rows), replacing the oldest */
/* One compiled batched step: B rows (a power of two), L rows' logits (0 or
 * a power of two up to B). */
typedef struct { int B, L; unsigned used; tg_jit *jit; } llm_batch_jit;

typedef struct {
  tg_tensor *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv;
  tg_tensor *wqkv, *w_gate_up;           /* q|k|v and gate|up stacked by rows (when their types match) */
  tg_tensor *q_norm, *k_norm;            /* per head or over all heads (llm_arch.qk_norm) */
  tg_tensor *attn_post_norm, *ffn_post_norm;   /* norms of the attention's and the feed-forward's outputs */
  tg_tensor *ffn_norm, *w_gate, *w_up, *w_down;
  tg_tensor *k_cache, *v_cache;          /* (n_ctx or the ring's size, n_kv_heads, head_dim / head_dim_v) */
  tg_tensor *k_scales, *v_scales;        /* a q8_0 cache's float16 scales: (rows, n_kv_heads, head_dim / 32); else NULL */
  /* MLA: q_a (q_lora, dim), q_a_norm, q_b (H * hd, q_lora); kv_a (kv_lora + rope, dim), kv_a_norm, kv_b (H * (nope + hd_v), kv_lora) */
  tg_tensor *q_a, *q_a_norm, *q_b, *kv_a, *kv_a_norm, *kv_b;
  /* mixture of experts: router (E, dim), experts (E, ffn, dim) / (E, dim, ffn) */
  tg_tensor *router, *expert_bias, *gate_exps, *up_exps, *down_exps;
  tg_tensor *gate_shexp, *up_shexp, *down_shexp, *router_shexp;
  /* gpt-oss: the output's bias, a sink logit per head, the router's and the experts' biases (E, ...) */
  tg_tensor *bo, *sinks, *router_b, *gate_exps_b, *up_exps_b, *down_exps_b;
  /* gated delta-net (llm_gdn.c): the in-projections q|k|v (conv channels) and z, the
   * depthwise conv (channels, kernel), dt bias, a (-exp(A_log)), beta and alpha
   * (v heads, dim), the gated norm (head_v), the out-projection; the states
   * per sequence: conv (n_seq, kernel - 1, channels), recurrent (n_seq, v heads, head_v, head_k) */
  tg_tensor *ssm_qkv, *ssm_z, *ssm_conv1d, *ssm_dt, *ssm_a, *ssm_beta, *ssm_alpha, *ssm_norm, *ssm_out;
  tg_tensor *conv_state, *ssm_state;
  bool recurrent;                        /* a delta-net layer (no attention, no KV cache) */
  unsigned tp_whole;                     /* tensor parallel: the llm_tp_part parts that run whole on every device (llm_tp.c) */
  bool swa;                              /* a sliding-window layer (its own rope tables) */
  int ring;                              /* > 0: its cache is a ring of this many positions (position p in row p % ring) */
} llm_layer;

/* The parts of a layer that tensor parallel splits or, when a quantized
 * tensor's pieces per device would not be whole 16-row groups or blocks
 * of its row-packed form, runs whole on every device (llm_layer.tp_whole). */
typedef enum { LLM_TP_ATTN = 1, LLM_TP_FFN = 2, LLM_TP_SHEXP = 4, LLM_TP_EXPERTS = 8, LLM_TP_GDN = 16 } llm_tp_part;

/* ------------------------------------------------ architectures (llm_arch.c)
 * A family is one row of llm_archs: its traits, and the per-layer tensors
 * it must and may have (bits of the llm_tensor ids below). The tensor
 * table llm_tensors names every per-layer tensor tg knows (its file name,
 * its field in llm_layer, its shape in config terms, the layers that have
 * it); the loader, its shape checks and tg_llm_free all walk it. */

typedef enum {
  LT_ATTN_NORM, LT_Q, LT_K, LT_V, LT_O, LT_BQ, LT_BK, LT_BV, LT_Q_NORM, LT_K_NORM, LT_ATTN_POST_NORM,
  LT_FFN_NORM, LT_GATE, LT_UP, LT_DOWN, LT_FFN_POST_NORM,
  LT_Q_A, LT_Q_A_NORM, LT_Q_B, LT_KV_A, LT_KV_A_NORM, LT_KV_B,
  LT_ROUTER, LT_EXP_BIAS, LT_GATE_EXPS, LT_UP_EXPS, LT_DOWN_EXPS, LT_GATE_SHEXP, LT_UP_SHEXP, LT_DOWN_SHEXP, LT_ROUTER_SHEXP,
  LT_QKV, LT_GATE_UP,                    /* fused in the file (Phi-3), else stacked at load from q, k, v / gate, up */
  LT_BO, LT_SINKS, LT_FFN_NORM_PA, LT_ROUTER_B, LT_GATE_EXPS_B, LT_UP_EXPS_B, LT_DOWN_EXPS_B,
  LT_SSM_QKV, LT_SSM_Z, LT_SSM_CONV1D, LT_SSM_DT, LT_SSM_A, LT_SSM_BETA, LT_SSM_ALPHA, LT_SSM_NORM, LT_SSM_OUT,
  LT_FILE_COUNT,                         /* the rest are made at load, not read by name */
  LT_K_CACHE = LT_FILE_COUNT, LT_V_CACHE, LT_K_SCALES, LT_V_SCALES, LT_CONV_STATE, LT_SSM_STATE,
  LT_COUNT
} llm_tensor;
#define LT(id) (1ull << (id))

/* A size in config terms (resolved by llm_tensor_dims). */
typedef enum {
  LD_NONE, LD_DIM, LD_Q, LD_KV, LD_VV, LD_O, LD_QN, LD_KN, LD_FFN,
  LD_QLORA, LD_KVA, LD_KVLORA, LD_KVB, LD_E, LD_EFF, LD_SH,
  LD_QKV, LD_FFN2,                       /* q + k + v rows; gate + up rows */
  LD_H,                                  /* head_count */
  /* delta-net: conv channels (2 k heads x head_k + v heads x head_v), the
   * kernel, v heads, v heads x head_v, head_v */
  LD_CONV, LD_CONVK, LD_VH, LD_VDIM, LD_HV
} llm_dim;

/* The layers that have a tensor. */
typedef enum { LW_ALL, LW_DENSE, LW_MOE, LW_QLORA, LW_NO_QLORA, LW_RECURRENT } llm_when;
/* the tensors only attention layers have (a model with delta-net layers) */
#define LLM_ATTN_TENSORS (LT(LT_Q) | LT(LT_K) | LT(LT_V) | LT(LT_O) | LT(LT_BQ) | LT(LT_BK) | LT(LT_BV) | LT(LT_Q_NORM) | LT(LT_K_NORM) | LT(LT_QKV))

typedef struct {
  const char *name;                      /* blk.N.<name> (NULL: made at load) */
  size_t field;                          /* offsetof(llm_layer, ...) */
  llm_dim d[3];                          /* its shape, outermost first (LD_NONE ends it) */
  llm_when when;
} llm_tensor_info;
extern const llm_tensor_info llm_tensors[LT_COUNT];

enum { LLM_NORM_PRE = 1, LLM_NORM_POST = 2, LLM_NORM_BOTH = 3 };   /* where a block's RMS norms sit */
/* silu(gate) * up; gelu_tanh(gate) * up; gpt-oss's clamped form (ggml's
 * swiglu_oai: g = min(gate, 7), g * sigmoid(1.702 g) * (clamp(up, -7, 7) + 1)) */
typedef enum { LLM_SWIGLU, LLM_GEGLU, LLM_SWIGLU_OAI } llm_act;
/* expert_gating_func: softmax over all experts, sigmoid, or softmax over the chosen experts' logits */
enum { LLM_GATING_SOFTMAX = 1, LLM_GATING_SIGMOID = 2, LLM_GATING_SOFTMAX_WEIGHT = 3 };
typedef enum { LLM_QK_NONE, LLM_QK_PER_HEAD, LLM_QK_WHOLE } llm_qk_norm;
typedef enum { LLM_ATTN_MHA, LLM_ATTN_MLA } llm_attn_kind;        /* which q/k/v builder (llm_forward.c) */

typedef struct {
  const char *name;                      /* general.architecture */
  llm_attn_kind attn;
  int norms;                             /* LLM_NORM_PRE | LLM_NORM_POST */
  llm_act act;
  bool rope_neox;                        /* rotate (i, i + d/2) pairs, else (2i, 2i+1) */
  llm_qk_norm qk_norm;
  bool embd_scale;                       /* the input embedding times sqrt(dim) */
  bool tied;                             /* the output matrix is always the embedding (output.weight unread) */
  bool moe_weights_norm;                 /* expert_weights_norm when the file does not say */
  int moe_gating;                        /* expert_gating_func when the file does not say (0: softmax) */
  float attn_softcap, final_softcap;     /* cap * tanh(x / cap) of the scores / logits when the file does not say (0: none) */
  int swa_period;                        /* sliding_window_pattern's default: layer i slides unless i % p == p - 1 (0: never) */
  int swa_window;                        /* attention.sliding_window's default (0: none unless the file says) */
  float swa_rope_base;                   /* sliding layers' rope base without rope.freq_base_swa (0: the global one) */
  bool swa_rope_unscaled;                /* sliding layers ignore rope scaling */
  int qscale_dim_layers;                 /* with this many layers q is scaled by (dim/heads)^-1/2 (Gemma 27B), not head_dim^-1/2 */
  bool yarn_log_mul;                     /* reads rope.scaling.yarn_log_multiplier (DeepSeek): YaRN's magnitude goes into the scores' scale */
  bool attn_gate;                        /* q's projection holds q and a gate per head; the attention times sigmoid(gate) (Qwen3.5) */
  bool recurrent;                        /* gated delta-net layers, attention every full_attention_interval-th (Qwen3.5; llm_gdn.c) */
  bool imrope;                           /* rope.dimension_sections (interleaved M-RoPE, text positions): pairs of the 4th section do not turn */
  uint64_t req, opt;                     /* per-layer tensors it must / may have (LT bits) */
} llm_arch;

/* The row of general.architecture name; NULL when tg does not know it. */
const llm_arch *llm_arch_find(const char *name);
/* "llama, mistral, ..." (every row's name) into buf, for errors. */
void llm_arch_names(char *buf, size_t n);
/* Tensor id's shape in m's config: its rank, sizes in d. */
int llm_tensor_dims(const tg_llm *m, llm_tensor id, int64_t d[3]);
/* Whether layer i of m can have tensor id (its llm_when); the row says
 * whether it must. */
bool llm_tensor_in_layer(const tg_llm *m, int i, llm_tensor id);
static inline tg_tensor **llm_layer_slot(llm_layer *l, llm_tensor id) { return (tg_tensor **)((char *)l + llm_tensors[id].field); }

/* One rope table's parameters (llama.cpp's ggml_rope_ext arguments): the
 * angle of pair i at position p is p * base^(-2i/rope_dim) / factor_i
 * (rope_factors), times freq_scale, or with YaRN (ext_factor 1) mixed with
 * the unscaled angle by a ramp over the pairs between the corrections of
 * beta_fast and beta_slow rotations in orig_ctx positions; cos and sin
 * are then times mscale. */
typedef struct {
  float base, freq_scale, ext_factor, mscale, beta_fast, beta_slow;
  int orig_ctx;
} llm_rope;

/* A quantized weight's lazy float values w next to what matmuls read
 * instead: its row-packed copy (tg_quant_pack_rows; then raw is NULL and w
 * reads the copy), or its packed bytes raw (tg_quant_matmul for Q8_0/Q4_0
 * with few rows of x). A float matrix (type F32, F16 or BF16) held as
 * panels of 32 rows (tensor_panels_of_rows; w is a view of them). */
typedef struct {
  tg_tensor *w, *raw;
  int type;
  tg_tensor *row_scales, *row_quants;   /* tg_quant_pack_rows's copy (NULL: none) */
  tg_tensor *panels;                    /* a float matrix's panels (NULL: none) */
  char key[LLM_PACK_KEY];               /* its name in the packed-weights cache ("": not cached) */
} llm_packed;

struct tg_llm {
  tg_llm_config cfg;
  gguf_file *file;
  const char *device;                    /* where its tensors live (every tensor it makes goes there); the first of tp_devices */
  int n_tp;                              /* > 1: its weights and caches are sharded over tp_devices (llm_tp.c) */
  /* pipeline parallel over MPI ranks (llm_pp.c): this rank's layers
   * [layer_lo, layer_hi) of pp_size ranks' (1: every layer, one process) */
  int pp_rank, pp_size, layer_lo, layer_hi;
  const char *tp_devices[LLM_MAX_DEVICES];
  tg_dtype cache_dtype;                  /* of the KV cache (I8: q8_0 blocks with scales, llm_cache_q8) */
  bool special;                          /* tg_llm_opts.special: generation emits control tokens' text */
  const llm_arch *arch;                  /* the family's row */
  float q_scale;                         /* attention scores are (q . k) * q_scale */
  float kq_mscale;                       /* DeepSeek's YaRN magnitude: q_scale holds its square (1: none) */
  int gating;                            /* LLM_GATING_*: how the router's logits choose and weigh experts */
  float attn_softcap, final_softcap;     /* 0: none */
  int swa_window;                        /* sliding layers see the last swa_window positions (0: none slide) */
  llm_rope rope, rope_swa;               /* the tables' parameters: the global layers', the sliding ones' */
  char rope_factors[32];                 /* the per-pair factors' tensor ("": none): rope_freqs, or Phi-3's long/short */
  int ring;                              /* the sliding layers' cache size when it is a ring (0: they hold every position) */
  int ring_top;                          /* 1 + the last position written to the rings since they were empty (tg_llm_rewind) */
  /* delta-net layers (arch->recurrent): ssm.conv_kernel, heads of q/k
   * (ssm.group_count) and of v (ssm.time_step_rank), head sizes
   * (ssm.state_size; ssm.inner_size / v heads) */
  struct { int conv_k, k_heads, v_heads, head_k, head_v; } gdn;
  int rope_sections[4];                  /* rope.dimension_sections (arch->imrope) */
  tg_tensor *tok_embd, *output_norm, *output;
  llm_layer *layers;
  tg_tensor *rope_cos, *rope_sin;        /* (n_ctx, rope_dim / 2) */
  tg_tensor *rope_cos_swa, *rope_sin_swa;   /* the sliding layers' (NULL: the same as the others') */
  char pos_name[32];                     /* the symbolic position's variable */
  char kv_name[32];                      /* the attended length pos + T: a symbolic axis size */
  char last_name[32];                    /* the row of a chunk whose logits are wanted (a padded chunk's last token) */
  tg_tensor *pos, *last_row;
  int n_past;
  int32_t *history;                      /* the n_past tokens in the cache (the current sequence's) */
  /* several sequences (tg_llm_opts.n_seq > 1): the caches hold n_seq
   * blocks of their rows, sequence s's at s * rows; the current one
   * (tg_llm_set_seq) is the variable seq_name in the graph, its n_past,
   * ring_top and history in the fields above (the others' saved here) */
  int n_seq, seq;
  char seq_name[32];
  tg_tensor *seq_var;
  int *seq_n_past, *seq_ring_top;
  int32_t *history_all;                  /* n_seq * n_ctx tokens */
  /* while a batched step is built (tg_llm_eval_batch): each row's
   * position, sequence and its sequence's last position in the step (T,)
   * int32, else NULL */
  tg_tensor *batch_pos, *batch_seqs, *batch_last;
  llm_batch_jit batch_jit[LLM_BATCH_JITS];
  unsigned batch_clock;                  /* their last use, for replacing the oldest */
  tg_jit *jit[LLM_NCHUNKS];              /* made on first use */
  int chunk[LLM_NCHUNKS];
  int chunk_runs[LLM_NCHUNKS];           /* calls of each chunk's JIT (one that ran is built: padding into it is cheap) */
  double flops_per_token;                /* about 2 x the matrices' elements: what a padded row costs */
  llm_eval_jit eval_jit[LLM_EVAL_JITS];  /* tg_llm_eval_all's pieces (llm_eval_all.c) */
  unsigned eval_clock;                   /* their last use, for replacing the oldest */
  llm_packed *packed;                    /* quantized weights (owned raws) */
  int npacked;
  gguf_file *pack_cache;                 /* the packed weights of an earlier load (llm_pack_cache.c), or NULL */
  bool pack_cache_write;                 /* none served this load: write one after it */
  struct llm_layer_fn **layer_fns;       /* one tg_function per kind of layer (llm_layer_fn.c) */
  int nlayer_fns;
};

/* Layer l applied to the residual stream x (T, dim), its rope angles read
 * from the tables at the chunk's positions (llm_forward.c). */
tg_tensor *llm_layer_forward(tg_llm *m, llm_layer *l, tg_tensor *x, tg_tensor *cos_table, tg_tensor *sin_table);

/* Shared builders of llm_forward.c: x (T, in) @ w.T (+ b) as the matmul
 * paths choose; an RMS norm over the last axis (w may be NULL). */
tg_tensor *llm_linear(tg_llm *m, tg_tensor *x, tg_tensor *w, tg_tensor *b);
tg_tensor *llm_rms_norm(tg_tensor *x, tg_tensor *w, float eps);
/* A delta-net layer's mixer (llm_gdn.c): (T, dim) normed input to its
 * output (T, dim), carrying the layer's conv and recurrent states. */
tg_tensor *llm_gdn(tg_llm *m, llm_layer *l, tg_tensor *h);

/* The q8_0 KV cache (llm_kv_q8.c): x (..., n), n a multiple of
 * LLM_KV_Q8_BLOCK, as int8 values *q (..., n) and float16 scales *d
 * (..., n / 32), bit for bit as ggml quantizes a row to Q8_0; and back. */
#define LLM_KV_Q8_BLOCK 32
static inline bool llm_cache_q8(const tg_llm *m) { return m->cache_dtype == TG_I8; }
void llm_kv_q8_quantize(tg_tensor *x, tg_tensor **q, tg_tensor **d);
tg_tensor *llm_kv_q8_values(tg_tensor *q, tg_tensor *d);
/* The same for layer i, as a call of its kind's function; NULL + tg_error. */
tg_tensor *llm_layer_call(tg_llm *m, int i, tg_tensor *x, tg_tensor *cos_table, tg_tensor *sin_table);
void llm_layer_fns_free(tg_llm *m);

/* Tensor parallel (llm_tp.c): the device list of tg_llm_opts.devices
 * ("CPU:0,CPU:1"; NULL: one device) into n_tp and tp_devices, device the
 * first; whether the model's config allows it (an error naming what does
 * not); its loaded tensors sharded over the devices. The forward graph's
 * input replicated on them, its output gathered on the first. */
int llm_tp_parse(tg_llm *m, const char *devices);
int llm_tp_check(const tg_llm *m);
int llm_tp_shard(tg_llm *m);
tg_tensor *llm_tp_input(const tg_llm *m, tg_tensor *t);
/* A value every device holds whole (replicated) cut into the devices'
 * parts on axis (t itself on one device). */
tg_tensor *llm_tp_split(const tg_llm *m, tg_tensor *t, int axis);

/* ------------------------------------------------ pipeline parallel (llm_pp.c)
 * Layers split over the ranks of tg_dist's world (tg_llm_opts.split_layers). */
/* This rank's layers (every layer without split_layers); checks what the
 * split does not cover. 0 or -1. */
int llm_pp_setup(tg_llm *m, const tg_llm_opts *o);
static inline bool llm_pp_first(const tg_llm *m) { return m->pp_rank == 0; }
static inline bool llm_pp_last(const tg_llm *m) { return m->pp_rank == m->pp_size - 1; }
/* -1 naming fn when the model's layers are split over ranks, else 0. */
int llm_pp_refuse(const tg_llm *m, const char *fn);
/* A chunk of T tokens' input to this rank's step: the tokens (T,) on the
 * first rank, the rank before's hidden rows (T, dim) on the others. */
tg_tensor *llm_pp_input(tg_llm *m, const int32_t *tokens, int T);
/* The step's output: to the next rank (its hidden rows), or on the last
 * the logits, which every rank then gets when logits is not NULL. 0 or -1. */
int llm_pp_output(tg_llm *m, tg_tensor *out, int T, float *logits);
/* A value split over the devices gathered whole onto each of them (an
 * all-gather; t itself when it is not split). */
tg_tensor *llm_tp_gather(const tg_llm *m, tg_tensor *t);
tg_tensor *llm_tp_output(const tg_llm *m, tg_tensor *t);

/* The packed bytes behind weight w (NULL when it is not quantized). */
/* Records p as the model's packed weight (m->packed moves), named key in
 * the packed-weights cache (NULL, or a name longer than a key holds: not
 * cached). */
void llm_add_packed(tg_llm *m, llm_packed p, const char *key);
const llm_packed *llm_packed_of(const tg_llm *m, const tg_tensor *w);

/* The packed-weights cache (llm_pack_cache.c). Open before the weights
 * load (m->pack_cache when one serves this file, else m->pack_cache_write
 * when one may be written); has/tensor: a weight's packed part by its key
 * ('s' row scales, 'q' row quants, 'p' panels), read in place (NULL: pack
 * it); save after the load when none served (errors only with DEBUG >= 1:
 * the cache is for later loads); close once the weights are loaded (they
 * hold its mapping) or when the model is freed. */
void llm_pack_cache_open(tg_llm *m);
bool llm_pack_cache_has(const tg_llm *m, const char *key, char part);
tg_tensor *llm_pack_cache_tensor(const tg_llm *m, const char *key, char part);
void llm_pack_cache_save(tg_llm *m);
void llm_pack_cache_close(tg_llm *m);
/* $TG_CACHE_DIR/packed/<sha256 of the model's real path>.gguf, the
 * directory made; NULL when there is none (malloc'd). */
char *llm_pack_cache_path(const char *model_path);

/* Binds the graph's variables for T tokens of the current sequence at
 * m->n_past: the position, the attended length, the sequence. 0 or -1. */
int llm_bind_chunk(tg_llm *m, int T);

/* Fills m->cfg from the file's metadata; -1 + tg_error. */
int llm_read_config(tg_llm *m, int n_ctx);
/* Loads every weight of m's architecture (NULL-safe for optional ones). */
int llm_load_weights(tg_llm *m, const char *device);
/* The logits (1, n_vocab) of the last of tokens (T,) int32 at positions
 * pos .. pos+T-1, writing their keys and values into the caches. */
tg_tensor *llm_forward(tg_llm *m, tg_tensor *tokens);
/* The last hidden state of every token, after the final norm (T, dim):
 * what llm_forward projects to logits, and embeddings pool. Writes the
 * tokens' keys and values to the cache like llm_forward. */
tg_tensor *llm_hidden(tg_llm *m, tg_tensor *tokens);
/* The logits (T, n_vocab) of normed hidden states h (T, dim): the output
 * projection and the final softcap (llm_forward's last step). */
tg_tensor *llm_logits(tg_llm *m, tg_tensor *h);
/* generate.c, shared with tg serve's slots: how many leading prompt tokens
 * the current sequence's cache already holds and can be reused, at most
 * n_prompt - 1 (the cache keeps no logits, so the last prompt token always
 * runs again); whether id ends a generation (the tokenizer's end tokens,
 * or one of extra). */
int llm_reusable_prefix(const tg_llm *m, const int32_t *prompt, int n_prompt);
bool llm_is_stop(const struct tg_tokenizer *tok, int32_t id, const int32_t *extra, int n_extra);

/* tg_llm_eval_all writing only the logits of tokens skip..n-1 ((n - skip)
 * rows; none, and logits may be NULL, when skip >= n): the others are not
 * projected. llm_eval_all.c. */
int llm_eval_logits(tg_llm *m, const int32_t *tokens, int n, int skip, float *logits);
/* Frees the JITs of llm_eval_logits (tg_llm_free). */
void llm_eval_jits_free(tg_llm *m);

#endif
