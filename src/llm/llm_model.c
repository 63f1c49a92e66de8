/* llm_model.c: loading a model (tg_llm_load) and running tokens through it
 * (tg_llm_eval): prompts in chunks of 64/16/4/1 tokens; each chunk size is a
 * JIT whose position and attended length are symbolic variables, so after
 * two calls a chunk replays its kernels at any position without scheduling
 * or compiling. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm/llm.h"
#include "runtime/device.h"
#include "runtime/thread_pool.h"
#include "tensor/tensor.h"
#include "util/util.h"

/* The per-pair rope factors (rope_dim / 2 float32 values): llama 3.1's
 * rope_freqs, else Phi-3's LongRoPE factors, the long ones when the
 * context is longer than the original one (llama.cpp's
 * get_rope_factors); NULL when the file has none. */
static int rope_factors(tg_llm *m, const float **out) {
  const tg_llm_config *c = &m->cfg;
  *out = NULL;
  const char *names[] = { "rope_freqs.weight", c->n_ctx > m->rope.orig_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight" };
  for (int k = 0; k < 2 && !*out; k++) {
    const gguf_tensor_info *ff = gguf_find_tensor(m->file, names[k]);
    if (!ff) continue;
    if (ff->type != GGML_TYPE_F32 || ff->ne[0] != c->rope_dim / 2 || ff->n_dims != 1)
      return tg_seterr("%s: %s must be %d float32 values", m->file->path, names[k], c->rope_dim / 2);
    *out = (const float *)(ff->map->base + ff->file_offset);
  }
  return 0;
}

/* YaRN's correction dimension for beta rotations over orig_ctx positions
 * (ggml_rope_yarn_corr_dim). */
static double yarn_corr_dim(int n_dims, int orig_ctx, double beta, double base) {
  return n_dims * log(orig_ctx / (beta * 2 * M_PI)) / (2 * log(base));
}

/* Whether rope pair i of an interleaved M-RoPE (ggml's IMROPE, Qwen3.5)
 * takes the 4th position: llama.cpp gives text tokens positions (p, p, p,
 * 0), so those pairs do not turn; the first three sections interleave
 * (t, h, w, t, h, w, ...) within their sizes. */
static bool imrope_still(const tg_llm *m, int i) {
  const int *s = m->rope_sections;
  int sector = i % (s[0] + s[1] + s[2] + s[3]);
  if (sector % 3 == 1 && sector < 3 * s[1]) return false;
  if (sector % 3 == 2 && sector < 3 * s[2]) return false;
  return !(sector % 3 == 0 && sector < 3 * s[0]);
}

/* cos/sin (n_ctx, rope_dim / 2) as ggml's rope computes them (rope_yarn):
 * theta = p * base^(-2i/rope_dim) / factor_i, interpolated by freq_scale;
 * with YaRN mixed back toward the unscaled angle by a ramp over pairs i
 * between the corrections of beta_fast and beta_slow, and its magnitude
 * 1 + 0.1 ln(1 / freq_scale); times r->mscale. In double (ggml uses
 * float: the angles agree to within an ulp). */
static int rope_table(tg_llm *m, const llm_rope *r, tg_tensor **cos_out, tg_tensor **sin_out) {
  const tg_llm_config *c = &m->cfg;
  int half = c->rope_dim / 2;
  const float *factors;
  if (rope_factors(m, &factors) < 0) return -1;
  double lo = 0, hi = 0, mscale = r->mscale;
  if (r->ext_factor != 0) {
    lo = fmax(0, floor(yarn_corr_dim(c->rope_dim, r->orig_ctx, r->beta_fast, r->base)));
    hi = fmin(c->rope_dim - 1, ceil(yarn_corr_dim(c->rope_dim, r->orig_ctx, r->beta_slow, r->base)));
    mscale *= 1 + 0.1 * log(1.0 / r->freq_scale);
  }
  /* n_ctx * half floats: a context the file allows (up to 2^30) can be more
   * than the host has, which is an error, not an abort */
  size_t bytes = sizeof(float) * (size_t)c->n_ctx * (size_t)(half > 0 ? half : 1);
  float *cs = malloc(bytes), *sn = malloc(bytes);
  if (!cs || !sn) {
    free(cs), free(sn);
    return tg_seterr("%s: a context of %d positions needs %zu MB for its RoPE tables, more than there is", m->file->path, c->n_ctx, 2 * bytes >> 20);
  }
  for (int p = 0; p < c->n_ctx; p++)
    for (int i = 0; i < half; i++) {
      double extrap = p * pow(r->base, -2.0 * i / c->rope_dim) / (factors ? factors[i] : 1);
      if (m->arch->imrope && imrope_still(m, i)) extrap = 0;
      double theta = r->freq_scale * extrap;
      if (r->ext_factor != 0) {
        double mix = (1 - fmin(1, fmax(0, (i - lo) / fmax(0.001, hi - lo)))) * r->ext_factor;
        theta = theta * (1 - mix) + extrap * mix;
      }
      cs[(size_t)p * half + i] = (float)(cos(theta) * mscale);
      sn[(size_t)p * half + i] = (float)(sin(theta) * mscale);
    }
  tg_scope_begin();
  tg_tensor *tc = tg_from_data(cs, TG_SHAPE(c->n_ctx, half), TG_F32);
  tg_tensor *ts = tg_from_data(sn, TG_SHAPE(c->n_ctx, half), TG_F32);
  int rc = tc && ts && tg_realize(tc) == 0 && tg_realize(ts) == 0 ? 0 : -1;
  if (rc == 0) { tensor_adopt(NULL, tc); tensor_adopt(NULL, ts); *cos_out = tc, *sin_out = ts; }
  tg_scope_end();
  free(cs); free(sn);
  return rc;
}

/* The rope tables: one pair, and the sliding layers' own when their
 * parameters differ (Gemma 3: base 10000 and no scaling there, 1e6 in
 * the global layers). */
static int rope_tables(tg_llm *m) {
  if (rope_table(m, &m->rope, &m->rope_cos, &m->rope_sin) < 0) return -1;
  if (m->swa_window > 0 && memcmp(&m->rope_swa, &m->rope, sizeof m->rope))
    return rope_table(m, &m->rope_swa, &m->rope_cos_swa, &m->rope_sin_swa);
  return 0;
}

/* About what one token costs: 2 flops per element of every matrix it
 * multiplies (the embedding is looked up, not multiplied, unless the
 * output shares it; every expert counted, an overestimate). */
static double flops_per_token(const tg_llm *m) {
  double n = 0;
  for (int i = 0; i < m->file->n_tensors; i++) {
    const gguf_tensor_info *t = &m->file->tensors[i];
    if (t->n_dims < 2 || (!strcmp(t->name, "token_embd.weight") && m->output != m->tok_embd)) continue;
    double e = 1;
    for (int d = 0; d < t->n_dims; d++) e *= (double)t->ne[d];
    n += e;
  }
  return 2 * n;
}

static int step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  out[0] = llm_forward(ctx, in[0]);
  return out[0] ? 0 : -1;
}

tg_llm *tg_llm_load(const char *path, const tg_llm_opts *opts) {
  tg_llm_opts o = opts ? *opts : (tg_llm_opts){ 0 };
  if (!path) TG_FAIL("tg_llm_load: NULL path");
  if (o.n_ctx < 0 || o.n_ctx > LLM_MAX_CTX) TG_FAIL("tg_llm_load: n_ctx %d is out of range (0 for the model's, at most %d)", o.n_ctx, LLM_MAX_CTX);
  if (o.n_seq < 0 || o.n_seq > LLM_MAX_SEQ) TG_FAIL("tg_llm_load: n_seq %d is out of range (0 or 1 for one sequence, at most %d)", o.n_seq, LLM_MAX_SEQ);
  static const struct { const char *name; tg_dtype dt; } caches[] = { { "f16", TG_F16 }, { "bf16", TG_BF16 }, { "f32", TG_F32 }, { "q8_0", TG_I8 } };
  int cache = -1;
  for (int i = 0; i < 4; i++) if (!strcmp(o.cache_type ? o.cache_type : "f16", caches[i].name)) cache = i;
  if (cache < 0) TG_FAIL("tg_llm_load: unknown cache type '%s' (f16, bf16, f32 or q8_0)", o.cache_type);
  if (o.device && o.devices) TG_FAIL("tg_llm_load: give device or devices, not both");
  tg_device *dev = device_get(o.device ? o.device : tg_default_device());
  if (!dev) return NULL;
  tg_llm *m = tg_xcalloc(1, sizeof *m);
  m->device = dev->name;
  if (llm_tp_parse(m, o.devices) < 0) { free(m); return NULL; }
  m->cache_dtype = caches[cache].dt;
  m->special = o.special;
  m->n_seq = o.n_seq > 1 ? o.n_seq : 1;
  /* the model's own tensors (rope tables, caches, positions) on its device,
   * whatever the caller's default device is */
  const char *prev = tensor_device_begin(m->device);
  m->file = gguf_open(path);
  if (!m->file || llm_read_config(m, o.n_ctx) < 0 || llm_tp_check(m) < 0 || llm_pp_setup(m, &o) < 0 || llm_load_weights(m, m->device) < 0 || rope_tables(m) < 0 ||
      llm_tp_shard(m) < 0) {
    tensor_device_end(prev);
    tg_llm_free(m);
    return NULL;
  }
  /* each model gets its own variables: the position and the attended length */
  static atomic_int next_id;
  int id = atomic_fetch_add(&next_id, 1);
  snprintf(m->pos_name, sizeof m->pos_name, "llm_pos_%d", id);
  snprintf(m->kv_name, sizeof m->kv_name, "llm_kv_%d", id);
  snprintf(m->last_name, sizeof m->last_name, "llm_last_%d", id);
  tg_scope_begin();
  m->pos = tg_variable(m->pos_name, 0, m->cfg.n_ctx - 1);
  if (m->pos) tensor_adopt(NULL, m->pos);
  if ((m->last_row = tg_variable(m->last_name, 0, LLM_MAX_CHUNK - 1))) tensor_adopt(NULL, m->last_row);
  bool kv_declared = tg_variable(m->kv_name, 1, m->cfg.n_ctx) != NULL;   /* used by name (tg_shrink_var) */
  if (m->n_seq > 1) {
    snprintf(m->seq_name, sizeof m->seq_name, "llm_seq_%d", id);
    if ((m->seq_var = tg_variable(m->seq_name, 0, m->n_seq - 1))) tensor_adopt(NULL, m->seq_var);
  }
  tg_scope_end();
  tensor_device_end(prev);
  if (!m->pos || !m->last_row || !kv_declared || (m->n_seq > 1 && !m->seq_var)) { tg_llm_free(m); return NULL; }
  m->history_all = calloc((size_t)m->n_seq * (size_t)m->cfg.n_ctx, sizeof(int32_t));
  if (!m->history_all) {
    tg_seterr("tg_llm: %d sequences of %d positions: no memory for their token history", m->n_seq, m->cfg.n_ctx);
    tg_llm_free(m);
    return NULL;
  }
  m->history = m->history_all;
  m->seq_n_past = tg_xcalloc((size_t)m->n_seq, sizeof(int));
  m->seq_ring_top = tg_xcalloc((size_t)m->n_seq, sizeof(int));
  int sizes[LLM_NCHUNKS] = LLM_CHUNKS;
  for (int i = 0; i < LLM_NCHUNKS; i++) m->chunk[i] = sizes[i];
  m->flops_per_token = flops_per_token(m);
  return m;
}

void tg_llm_free(tg_llm *m) {
  if (!m) return;
  for (int i = 0; i < LLM_NCHUNKS; i++) tg_jit_free(m->jit[i]);
  for (int i = 0; i < LLM_BATCH_JITS; i++) tg_jit_free(m->batch_jit[i].jit);
  llm_eval_jits_free(m);
  llm_layer_fns_free(m);
  tg_tensor **own[] = { &m->tok_embd, &m->output_norm, &m->rope_cos, &m->rope_sin, &m->rope_cos_swa, &m->rope_sin_swa, &m->pos, &m->last_row, &m->seq_var };
  if (m->output != m->tok_embd) tg_free(m->output);
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) tg_free(*own[i]);
  for (int i = 0; m->layers && i < m->cfg.n_layers; i++)
    for (int id = 0; id < LT_COUNT; id++) {   /* the tensor table names them all (two ids may share a field) */
      tg_tensor **slot = llm_layer_slot(&m->layers[i], (llm_tensor)id);
      tg_free(*slot);
      *slot = NULL;
    }
  for (int i = 0; i < m->npacked; i++) tg_free(m->packed[i].raw), tg_free(m->packed[i].row_scales), tg_free(m->packed[i].row_quants), tg_free(m->packed[i].panels);
  free(m->packed);
  llm_pack_cache_close(m);
  free(m->layers);
  free(m->history_all);
  free(m->seq_n_past);
  free(m->seq_ring_top);
  gguf_close(m->file);
  free(m);
}

const tg_llm_config *tg_llm_config_of(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_config_of: model is NULL"), NULL;
  return &m->cfg;
}
/* A NULL model (a failed tg_llm_load): NULL / -1 / nothing, with the error set */
const int32_t *tg_llm_history(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_history: model is NULL"), NULL;
  return m->history;
}
int tg_llm_n_past(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_n_past: model is NULL");
  return m->n_past;
}
/* A ring keeps position p while no later position with p's row was
 * written: p >= ring_top - ring. The next token at n_past needs the window
 * before it; when that is gone, the cache starts over (n_past 0). */
void tg_llm_rewind(tg_llm *m, int n_past) {
  if (!m) { tg_seterr("tg_llm_rewind: model is NULL"); return; }
  if (n_past < 0 || n_past >= m->n_past) return;
  if (m->arch->recurrent) {
    /* a delta-net layer's state cannot drop tokens: start over from
     * position 0 (the states read as zero there) and run the kept ones again */
    int32_t *keep = tg_xmalloc(sizeof(int32_t) * (size_t)(n_past > 0 ? n_past : 1));
    memcpy(keep, m->history, sizeof(int32_t) * (size_t)n_past);
    m->n_past = 0;
    if (n_past > 0 && tg_llm_eval(m, keep, n_past, NULL) < 0) m->n_past = 0;
    free(keep);
    return;
  }
  int oldest_needed = n_past - m->swa_window + 1 > 0 ? n_past - m->swa_window + 1 : 0;
  if (m->ring && n_past > 0 && oldest_needed < m->ring_top - m->ring) n_past = 0;
  m->n_past = n_past;
  if (n_past == 0) m->ring_top = 0;
}

int llm_bind_chunk(tg_llm *m, int T) {
  if (tg_bind(m->pos_name, m->n_past) < 0 || tg_bind(m->kv_name, m->n_past + T) < 0) return -1;
  return m->n_seq > 1 ? tg_bind(m->seq_name, m->seq) : 0;
}

/* Runs n tokens (n <= the chunk's size T) as one chunk of chunk `which`
 * at m->n_past; past n, the chunk is padded with the last token. Its
 * padding rows write cache rows past the n new positions, which no row
 * attends to (the causal mask) and which the next tokens overwrite
 * before reading them; logits are row n - 1's. */
static int eval_chunk(tg_llm *m, int which, const int32_t *tokens, int n, float *logits) {
  int T = m->chunk[which];
  if (!m->jit[which]) {
    /* the model's weights and caches are realized at load: its first call
     * can be the capture (one build of the chunk's pass, not two) */
    if ((m->jit[which] = tg_jit_new(step, m))) tg_jit_set_capture_first(m->jit[which], true);
  }
  int32_t padded[LLM_MAX_CHUNK];
  if (n < T) {
    memcpy(padded, tokens, sizeof(int32_t) * (size_t)n);
    for (int i = n; i < T; i++) padded[i] = tokens[n - 1];
    tokens = padded;
  }
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  int rc = -1;
  tg_tensor *in = llm_pp_input(m, tokens, T), *out = NULL;   /* the tokens, or (split layers) the rank before's rows */
  if (in && llm_bind_chunk(m, T) == 0 && tg_bind(m->last_name, n - 1) == 0 && tg_jit_call(m->jit[which], &in, 1, &out, 1) == 0)
    rc = llm_pp_output(m, out, T, logits);
  tg_scope_end();
  tensor_device_end(prev);
  m->chunk_runs[which]++;
  if (rc == 0) {
    memcpy(m->history + m->n_past, tokens, sizeof(int32_t) * (size_t)n);
    if (m->n_past + T > m->ring_top) m->ring_top = m->n_past + T;   /* the padding's rows were written too */
    m->n_past += n;
  }
  return rc;
}

/* What a padded chunk may waste: rows worth about this many flops per
 * thread (a few ms of int8 dot products), against building and
 * scheduling the forward pass for another chunk size (tens of ms) */
#define LLM_PAD_FLOPS_PER_THREAD 4e9

/* The chunk for the next n tokens of a call of `total` tokens: the
 * largest size that fits them (no padding), unless one chunk padded past
 * them can take them all in place of building another chunk size's pass:
 * one whose JIT has run already, or, when none has, the smallest that
 * holds them; only where the padding's cost is small next to building a
 * pass. A size that fits exactly is taken when it has run, or when the
 * call is one token (a decoding step, which would otherwise pad every
 * time): a prompt's last token after a chunk of 16 rides in a padded 16.
 * Padding needs the rows after the tokens to be writable: not past the
 * context, and not a delta-net layer's state, which would take it in. */
static int next_chunk(const tg_llm *m, int n, int total) {
  int which = 0;
  while (m->chunk[which] > n) which++;
  if (m->arch->recurrent || (m->chunk[which] == n && (m->chunk_runs[which] > 0 || total == 1))) return which;
  /* (layers split over ranks: every rank must choose the same sizes, whatever its cores) */
  double budget = LLM_PAD_FLOPS_PER_THREAD * (m->pp_size > 1 ? 1 : tg_pool_threads());
  int fresh = -1;
  for (int i = which; i >= 0; i--) {   /* from the smallest size that holds n */
    int T = m->chunk[i];
    if (T < n) continue;
    if (m->n_past + T > m->cfg.n_ctx || (double)(T - n) * m->flops_per_token > budget) break;
    if (m->chunk_runs[i] > 0) return i;
    if (fresh < 0) fresh = i;
  }
  bool any_run = false;
  for (int i = 0; i < LLM_NCHUNKS; i++) any_run |= m->chunk_runs[i] > 0;
  return fresh >= 0 && !any_run ? fresh : which;
}

int tg_llm_eval(tg_llm *m, const int32_t *tokens, int n, float *logits) {
  if (!m) return tg_seterr("tg_llm_eval: no model");
  if (n <= 0) return tg_seterr("tg_llm_eval: no tokens");
  if (!tokens) return tg_seterr("tg_llm_eval: tokens is NULL (n %d)", n);
  if (n > m->cfg.n_ctx - m->n_past)
    return tg_seterr("tg_llm_eval: %d tokens do not fit: %d of the context's %d positions are used", n, m->n_past, m->cfg.n_ctx);
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab) return tg_seterr("tg_llm_eval: token %d is outside the vocabulary (%d)", tokens[i], m->cfg.n_vocab);
  int start = m->n_past, done = 0;
  while (done < n) {
    int which = next_chunk(m, n - done, n), take = m->chunk[which] < n - done ? m->chunk[which] : n - done;
    bool last = done + take == n;
    if (eval_chunk(m, which, tokens + done, take, last ? logits : NULL) < 0) {
      /* a delta-net state already took the earlier chunks: start over */
      m->n_past = m->arch->recurrent ? 0 : start;
      return -1;
    }
    done += take;
  }
  return 0;
}
