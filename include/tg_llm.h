/* tg_llm.h: transformer language models from GGUF files, and sampling.
 * Included by tg.h. See docs/llm.md.
 *
 * tg_llm_load builds the model from the file's metadata (llama, mistral,
 * qwen2, qwen3, olmo2 architectures): weights stay as the file stores them
 * (quantized types are dequantized inside the kernels that use them). A
 * model holds one sequence's KV cache of n_ctx positions; tg_llm_eval appends
 * tokens to it and returns the logits of the last one. Decoding one token at
 * a time runs under the JIT with the position as a symbolic variable, so it
 * compiles once for every position. */
#ifndef TG_LLM_H
#define TG_LLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tg_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_llm tg_llm;

typedef struct {
  int n_ctx;              /* KV cache positions; 0: the model's context length (at most 4096); at most 2^20 */
  const char *device;     /* NULL: the default device */
  const char *cache_type; /* the KV cache's type: "f16" (NULL: the default, as llama.cpp's),
                           * "bf16", "f32" or "q8_0" (blocks of 32 with an f16 scale, as
                           * llama.cpp's; head sizes must be multiples of 32); anything else
                           * is an error naming the known types */
  bool special;           /* tg_llm_generate emits the text of control tokens (those that end
                           * the generation excepted): tool-call markers such as Llama 3's
                           * <|python_tag|> and Mistral's [TOOL_CALLS] (tg serve) */
  int n_seq;              /* sequences the cache holds, each of n_ctx positions (0 or 1: one;
                           * at most 64): tg_llm_set_seq, tg_llm_decode_batch, tg_llm_eval_batch */
  const char *devices;    /* tensor parallel: "CPU:0,CPU:1" shards the model over these devices
                           * (attention heads and feed-forward columns split, the sums
                           * allreduced; docs/distributed.md); NULL: one device (then
                           * device says which). Heads, kv heads and the feed-forward size
                           * must divide by the count (an error says which does not) */
  bool split_layers;      /* pipeline parallel over the ranks of tg_dist's world (call
                           * tg_dist_init first; `mpirun -np 2 tg run --split layers`): rank
                           * r holds and runs layers [r L/n, (r + 1) L/n) only, the first
                           * the embedding, the last the output; tg_llm_eval passes each
                           * chunk's hidden rows from rank to rank and gives every rank the
                           * logits. Every rank makes the same calls. One sequence, one
                           * device per rank; tg_llm_eval_all, tg_llm_embed, the batch calls
                           * and tg_llm_export are refused */
} tg_llm_opts;

/* The hyperparameters read from the file. */
typedef struct {
  char arch[32];          /* general.architecture */
  int n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim;
  int head_dim_v;         /* value head size (attention.value_length) */
  /* DeepSeek's multi-head latent attention (kv_lora_rank > 0): keys and
   * values come from a compressed latent; q from a low-rank pair when
   * q_lora_rank > 0. The last rope_dim dims of each key head are RoPE'd and
   * shared by all heads. */
  int kv_lora_rank, q_lora_rank;
  int n_ctx_train;        /* <arch>.context_length */
  int n_ctx;              /* this model's cache size */
  float rms_eps;
  float rope_base;
  float rope_scale;       /* linear scaling: positions are divided by it (1: none) */
  int rope_dim;           /* dimensions of each head that RoPE rotates */
  bool rope_neox;         /* rotate (i, i + d/2) pairs instead of (2i, 2i+1) */
  /* mixture of experts (0 experts: a dense feed-forward) */
  int n_experts, n_experts_used, expert_ffn_dim, n_shared_experts, shared_ffn_dim;
  int n_dense_leading;    /* the first layers use a dense feed-forward */
  bool expert_weights_norm;    /* renormalize the chosen experts' weights */
  float expert_weights_scale;  /* 0: none */
  bool expert_gating_sigmoid;  /* sigmoid instead of softmax router */
} tg_llm_config;

/* Loads path; NULL + tg_error naming a missing tensor, an unsupported
 * architecture or a bad file. opts may be NULL. */
TG_API tg_llm *tg_llm_load(const char *path, const tg_llm_opts *opts);
TG_API void tg_llm_free(tg_llm *m);
TG_API const tg_llm_config *tg_llm_config_of(const tg_llm *m);

/* Runs tokens[0..n) at positions n_past.. (appending them to the cache) and
 * writes the logits of the last one (n_vocab floats) to logits (may be NULL).
 * Fails, changing nothing, when the cache has no room. 0 or -1. */
TG_API int tg_llm_eval(tg_llm *m, const int32_t *tokens, int n, float *logits);
/* Writes the one-token decode step as one dependency-free C file
 * (tg_jit_export; docs/llm.md "Export"): input the token (int32[1]), output
 * the logits (float32[n_vocab]), variables llm_pos_* (the token's position)
 * and llm_kv_* (position + 1), the weights and the KV cache in the side
 * file. Captures the step first if it has not run twice (the model's state
 * is left as it was). 0 or -1. */
TG_API int tg_llm_export(tg_llm *m, const char *path);
/* Positions in the cache. */
TG_API int tg_llm_n_past(const tg_llm *m);
/* Forgets positions from n_past on (to reuse a shared prefix). A model
 * whose sliding-window layers keep only a ring of recent positions forgets
 * everything (n_past 0) when the window before n_past was overwritten;
 * tg_llm_n_past says where the cache stands. A model with recurrent
 * (gated delta-net) layers empties their states and runs the first n_past
 * tokens of its history again (n_past 0 if that fails). */
TG_API void tg_llm_rewind(tg_llm *m, int n_past);

/* Runs tokens[0..n) at positions n_past.. like tg_llm_eval, but writes the
 * logits of every one of them: n * n_vocab floats to logits, row i for
 * tokens[i]. Batched: pieces of up to 512 positions (64 for a model with
 * sliding-window rings), each a JIT of its own (the decode JITs are
 * separate) that replays its kernels at any position. Fails,
 * changing nothing, when the cache has no room. 0 or -1 + tg_error. */
TG_API int tg_llm_eval_all(tg_llm *m, const int32_t *tokens, int n, float *logits);

/* ---------------------------------------------------------------- sequences
 * A model loaded with n_seq > 1 holds that many sequences, each with its
 * own cache of n_ctx positions and history (llama.cpp's parallel
 * sequences; tg serve's slots). The calls above (eval, eval_all, rewind,
 * n_past, history, generate, embed, perplexity) work on the current one;
 * it starts as 0. */
TG_API int tg_llm_n_seq(const tg_llm *m);
TG_API int tg_llm_seq(const tg_llm *m);
/* Makes seq (0 .. n_seq-1) the current sequence. 0 or -1 + tg_error. */
TG_API int tg_llm_set_seq(tg_llm *m, int seq);
/* Appends tokens[i] to sequence seqs[i] for i < n (distinct sequences,
 * each with room for one more position) in one forward pass, every weight
 * read once for all n rows, and writes the logits of each: n * n_vocab
 * floats, row i for seqs[i] (logits may be NULL). The same logits as
 * tg_llm_eval of each token on its own sequence, within float rounding.
 * Fails, changing nothing, on a bad row. 0 or -1 + tg_error. */
TG_API int tg_llm_decode_batch(tg_llm *m, const int *seqs, const int32_t *tokens, int n, float *logits);
/* llama.cpp's unified batch: n rows (1 to 128) in one forward pass, every
 * weight read once for all of them. Row i appends tokens[i] to sequence
 * seqs[i]; a sequence may have several rows (a piece of its prompt), at
 * consecutive positions from its n_past in row order, so prompt pieces of
 * some sequences and single decode tokens of others share a step. Each row
 * attends to its own sequence's cache up to its own position. positions
 * may be NULL; else positions[i] must be that next position (an error
 * otherwise). The logits of the rows with want[i] (want NULL: every row)
 * go to logits in row order, n_vocab floats each (logits may be NULL:
 * none are projected). The same logits as tg_llm_eval of each sequence's
 * tokens on their own, within float rounding. Fails, changing nothing, on
 * a bad row (a sequence out of range, a token outside the vocabulary, a
 * position not the next, a full sequence, more rows than
 * tg_llm_batch_seq_rows for one sequence). Works with n_seq 1 too.
 * 0 or -1 + tg_error. */
TG_API int tg_llm_eval_batch(tg_llm *m, const int *seqs, const int32_t *positions, const int32_t *tokens, int n, const bool *want,
                             float *logits);
/* The most rows one sequence may have in a tg_llm_eval_batch: 1 for
 * models with delta-net layers (their batched form steps each row's state
 * once: read prompts with tg_llm_eval), 64 with sliding-window rings (what
 * a ring holds beyond the window), else 128 (tensor-parallel models too).
 * -1 + tg_error for NULL. */
TG_API int tg_llm_batch_seq_rows(const tg_llm *m);

/* ---------------------------------------------------------------- perplexity
 * llama.cpp's llama-perplexity: tokens cut into chunks of n_ctx, each run
 * from an empty cache with its first token replaced by BOS (add_bos), and
 * the positions n_ctx/2 .. n_ctx-2 of each scored against the next token. */
typedef struct {
  int n_ctx;              /* tokens per chunk (0: the model's cache size); 3 .. the cache size */
  int n_chunks;           /* at most this many chunks (<= 0: all n / n_ctx) */
  int n_batch;            /* tokens per tg_llm_eval_all call (0 or more than n_ctx: n_ctx) */
  bool add_bos;           /* put bos at each chunk's first position (as llama.cpp when the
                           * vocabulary adds BOS: tg_tokenizer_add_bos, tg_tokenizer_bos) */
  int32_t bos;
  void (*on_chunk)(void *user, int chunk, double ppl);   /* after each chunk (from 0): the running estimate; may be NULL */
  void *user;
} tg_ppl_opts;

typedef struct {
  double ppl;             /* exp(mean negative log-likelihood) */
  double ppl_err;         /* its standard error, ppl * nll_err (llama.cpp's "+/-"); NaN when undefined */
  double nll, nll_err;    /* mean negative log-likelihood and the standard error of the mean */
  int n_chunks, n_scored; /* chunks run, tokens scored (n_chunks * (n_ctx - 1 - n_ctx/2)) */
  int n_tokens;           /* tokens evaluated (n_chunks * n_ctx) */
  double seconds;         /* wall time of the evaluation */
} tg_ppl_result;

/* The perplexity of tokens[0..n) by the method above (opts NULL: n_ctx the
 * cache size, no BOS). -1 + tg_error for fewer than 2 * n_ctx tokens (as
 * llama.cpp), an n_ctx out of range, a token outside the vocabulary. The
 * cache holds the last chunk afterwards. */
TG_API int tg_llm_perplexity(tg_llm *m, const int32_t *tokens, int n, const tg_ppl_opts *opts, tg_ppl_result *out);

/* The embedding of a sequence of n tokens (at most the context): run from
 * position 0 (the cache then holds them, as after tg_llm_eval from an
 * empty cache), the last hidden state of each token after the final norm,
 * averaged over the tokens (llama.cpp's mean pooling; not normalized).
 * Writes tg_llm_config.dim floats to out. 0 or -1 + tg_error. */
TG_API int tg_llm_embed(tg_llm *m, const int32_t *tokens, int n, float *out);

/* The tokens now in the cache (tg_llm_n_past of them), oldest first. */
TG_API const int32_t *tg_llm_history(const tg_llm *m);

/* ---------------------------------------------------------------- sampling */

typedef struct {
  float temperature;      /* <= 0: greedy (argmax) */
  int top_k;              /* 0: off */
  float top_p;            /* 1: off */
  float min_p;            /* 0: off */
  uint64_t seed;
} tg_sampling;
/* llama.cpp's defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05. */
TG_API tg_sampling tg_sampling_default(void);

typedef struct tg_sampler tg_sampler;
/* NULL (tg_error) for a temperature that is NaN or infinite, top_p or min_p
 * outside [0, 1], or a negative top_k. s NULL: the defaults. */
TG_API tg_sampler *tg_sampler_new(const tg_sampling *s);
TG_API void tg_sampler_free(tg_sampler *s);
/* A token drawn from logits (n floats) by the chain top-k, top-p, min-p,
 * temperature, then a draw from the sampler's seeded generator; -1 with
 * tg_error() for a NULL sampler or logits or n <= 0. With a grammar (below)
 * only the tokens it allows are candidates, and the grammar advances past
 * the token returned; -1 when it allows none. */
TG_API int32_t tg_sampler_sample(tg_sampler *s, const float *logits, int n);

/* ---------------------------------------------------------------- grammars
 * Structured output: a grammar restricts sampling to the tokens whose text
 * keeps the text generated so far a prefix of the grammar's language
 * (llama.cpp's GBNF; docs/llm.md). A JSON schema becomes such a grammar.
 * A grammar holds its position in the text: one grammar per generation
 * (tg_grammar_reset to start again). Not thread-safe: one thread at a time
 * per grammar (different grammars may run in parallel). */
struct tg_tokenizer;
typedef struct tg_grammar tg_grammar;
/* Compiles len bytes of GBNF text; the start rule is "root". NULL with
 * tg_error() saying what and where (line, column) for a syntax error, an
 * undefined rule, no root rule, left recursion, or a grammar over the
 * bounds (repetition counts over 2000, groups nested over 256 deep). */
TG_API tg_grammar *tg_grammar_new(const char *gbnf, size_t len);
/* The GBNF of a JSON schema (len bytes of JSON text; see docs/llm.md for
 * the keywords and the form of JSON it accepts), malloc'd and
 * NUL-terminated; NULL with tg_error() naming an unsupported keyword and
 * where it is, or a malformed schema. "{\"type\": \"object\"}" is any
 * JSON object (OpenAI's response_format json_object). */
TG_API char *tg_json_schema_to_gbnf(const char *schema, size_t len);
/* tg_json_schema_to_gbnf, then tg_grammar_new. */
TG_API tg_grammar *tg_grammar_from_json_schema(const char *schema, size_t len);
TG_API void tg_grammar_free(tg_grammar *g);
/* Back to the start (no text yet). */
TG_API void tg_grammar_reset(tg_grammar *g);
/* Advances by len bytes of text: 0, or -1 with tg_error() (and the
 * position unchanged) when the text cannot continue the grammar. Text may
 * end inside a UTF-8 character; the next call continues it. Parses nested
 * deeper than 2048 are dropped; a grammar so ambiguous that more than 4096
 * parses are alive at once fails (-1) from then on. */
TG_API int tg_grammar_accept(tg_grammar *g, const char *text, size_t len);
/* Whether the text so far is a whole sentence of the grammar. */
TG_API bool tg_grammar_can_end(const tg_grammar *g);
/* allowed[i] (tg_tokenizer_n_vocab(tok) bytes) gets 1 for each token whose
 * text the grammar accepts next, 0 for the others. Control tokens (empty
 * text) are never allowed, end-of-generation tokens exactly when
 * tg_grammar_can_end. Returns the count allowed, or -1 with tg_error().
 * The first call for a tokenizer builds its token trie (kept with the
 * tokenizer); masks of states seen recently are reused. */
TG_API int tg_grammar_mask(tg_grammar *g, const struct tg_tokenizer *tok, uint8_t *allowed);
/* Makes s sample only what g allows, with tok's token texts (both are
 * borrowed: they must outlive s's use of them); g NULL detaches. 0 or -1. */
TG_API int tg_sampler_set_grammar(tg_sampler *s, tg_grammar *g, const struct tg_tokenizer *tok);

/* ---------------------------------------------------------------- generation */

struct tg_tokenizer;
/* Called with each piece of generated text as soon as it is complete UTF-8;
 * return false to stop generating (a client went away, a stop string). */
typedef bool (*tg_llm_emit_fn)(void *user, const char *text, size_t len);

typedef struct {
  int n_prompt;           /* prompt tokens */
  int n_reused;           /* of those, already in the cache (a shared prefix) */
  int n_generated;
  bool hit_eog;           /* stopped at an end-of-generation token */
  bool hit_ctx;           /* stopped because the context is full */
  double prompt_seconds, gen_seconds;
} tg_gen_stats;

/* Feeds prompt (reusing the longest prefix already in the cache), then
 * samples up to max_tokens tokens with s, emitting their text, until an
 * end-of-generation token of tok, a full context, or emit returning false.
 * The generated tokens but the last stay in the cache (nothing needs the
 * last one's logits: a next turn's prompt, which holds it, feeds it with
 * its new text after the reused prefix, as llama.cpp's server does). end
 * tokens are not emitted. extra_stop (n_extra ids, may be NULL) also ends
 * generation. 0 or -1 + tg_error. */
TG_API int tg_llm_generate(tg_llm *m, const struct tg_tokenizer *tok, const int32_t *prompt, int n_prompt, int max_tokens,
                    tg_sampler *s, const int32_t *extra_stop, int n_extra, tg_llm_emit_fn emit, void *user, tg_gen_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
