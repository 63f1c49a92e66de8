/* llm_weights.c: a model's tensors from its GGUF file, by llama.cpp's names
 * (token_embd, blk.N.attn_q, ...). Each stays in the file's type; missing
 * required tensors are named in the error. On the CPU a weight is read in
 * place from the file's read-only mapping (the page cache's pages, shared
 * with every process that maps the file); one that must be rearranged (a
 * row-packed type, matrices stacked into one) is copied once and the
 * mapping's pages under it are given back, so each weight is in memory
 * once. A device with its own memory gets a copy of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llm/llm.h"
#include "io/gguf_loader.h"
#include "tensor/tensor.h"
#include "util/util.h"
#include "util/settings.h"

/* A stacked matrix's parts (q|k|v, gate|up): each one's blocks, where
 * they lie, and its rows. */
typedef struct { tg_tensor *const *raw; const int64_t *rows; int n; } stacked_parts;

void llm_add_packed(tg_llm *m, llm_packed p, const char *key) {
  if (key && strlen(key) < sizeof p.key) strcpy(p.key, key);
  m->packed = tg_xrealloc(m->packed, sizeof *m->packed * (size_t)(m->npacked + 1));
  m->packed[m->npacked++] = p;
}

/* Records quantized weight w (lazy floats over its packed bytes raw).
 * Types with a row-packed form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, IQ4_XS; Q2_K ... Q6_K below;
 * tg_quant_pack_rows), and experts (E, N, K) of those types and MXFP4, are
 * packed once, here: matmuls read that copy, w's values come from it too
 * (tg_dequantize_rows: the same numbers), and raw is dropped, so the
 * weights are in memory once. Otherwise the model owns raw from now on.
 * pack false: kept as stored (rows only looked up, never multiplied).
 * key names the packed form in the packed-weights cache (llm_pack_cache.c:
 * read from there when an earlier load left it). Returns the weight to use
 * (w or its replacement); NULL on failure. */
static tg_tensor *keep_packed(tg_llm *m, tg_tensor *raw, tg_tensor *w, int type, const stacked_parts *sp, bool pack, const char *key) {
  if (!w) return NULL;
  tg_shape ws = tg_shape_of(w);
  /* K-quants only for the vocabulary matrix (the output, or the embedding
   * tied to it) when TG_LLM_ROWS_K=0. tg_quant_pack_rows checks the shape. */
  bool kquant = type == TG_GGML_Q2_K || type == TG_GGML_Q3_K || type == TG_GGML_Q4_K || type == TG_GGML_Q5_K || type == TG_GGML_Q6_K;
  bool rows = type == TG_GGML_Q4_0 || type == TG_GGML_Q4_1 || type == TG_GGML_Q5_0 || type == TG_GGML_Q5_1 || type == TG_GGML_Q8_0 ||
              type == TG_GGML_IQ4_NL || type == TG_GGML_IQ4_XS ||
              (kquant && ((ws.ndim == 2 && ws.d[0] == m->cfg.n_vocab) || setting_int(SET_TG_LLM_ROWS_K)));
  /* experts: every type with a row-packed form (tg_quant_matmul_rows_experts) */
  bool experts = ws.ndim == 3 && (rows || kquant || type == TG_GGML_MXFP4) && ws.d[1] % TG_QUANT_PACK_ROWS == 0;
  tg_shape ps = experts ? TG_SHAPE(ws.d[0] * ws.d[1], ws.d[2]) : ws;   /* experts: packed as one matrix */
  rows = (rows && ws.ndim == 2) || experts;
  tg_tensor *sc = NULL, *q = NULL;
  bool by_parts = sp && ws.ndim == 2;   /* a stacked matrix: each part packed where it lies */
  for (int i = 0; by_parts && i < sp->n; i++) by_parts = sp->rows[i] % TG_QUANT_PACK_ROWS == 0;
  bool packable = pack && rows && !setting_on(SET_TG_LLM_NO_ROWS);
  tg_tensor *wr = NULL;
  if (packable && (sc = llm_pack_cache_tensor(m, key, 's')) && (q = llm_pack_cache_tensor(m, key, 'q')))
    wr = tg_dequantize_rows(sc, q, type, ws);   /* (checks the cached shapes) */
  if (!wr && sc) { tg_free(sc), tg_free(q); sc = q = NULL; tg_clear_error(); }
  if (!wr && packable &&
      (by_parts ? tg_quant_pack_rows_stacked(sp->raw, sp->rows, sp->n, type, ws.d[1], &sc, &q) : tg_quant_pack_rows(raw, type, ps, &sc, &q)) == 0) {
    wr = tg_realize(sc) == 0 && tg_realize(q) == 0 ? tg_dequantize_rows(sc, q, type, ws) : NULL;
    if (!wr) { tg_free(sc), tg_free(q); return NULL; }
  }
  if (wr) {
    tensor_adopt(NULL, sc), tensor_adopt(NULL, q);
    w = wr, raw = NULL;   /* the caller's scope frees the old w and raw */
  } else {
    tg_clear_error();   /* no packed form: the packed bytes serve */
    if (tg_realize(raw) < 0) return NULL;   /* (stacked matrices come lazy) */
    tensor_adopt(NULL, raw);
  }
  llm_add_packed(m, (llm_packed){ .w = w, .raw = raw, .type = type, .row_scales = sc, .row_quants = q }, sc ? key : NULL);
  return w;
}

/* A float matrix (F32, F16, BF16) that only matmuls read (a layer's
 * projections, an untied output matrix) held as panels of 32 rows
 * (tensor_panels_of_rows), on devices with wide layouts: a prefill chunk's
 * matmul reads them as tg_matmul reads its packed b (1.3-1.7x the tiles of
 * dot products over rows, 64 rows of x), and a decoding step's matvec
 * streams them with no horizontal sums. w (may be lazy: a stacked
 * concatenation) is replaced by a view of the panels, recorded as packed,
 * so the matrix is in memory once. Returns the tensor to use: w when it
 * stays as it is; NULL on failure. */
static tg_tensor *keep_panels(tg_llm *m, tg_tensor *w, const char *key) {
  tg_dtype dt = tg_dtype_of(w);
  tg_shape s = tg_shape_of(w);
  int type = dt == TG_F32 ? TG_GGML_F32 : dt == TG_F16 ? TG_GGML_F16 : dt == TG_BF16 ? TG_GGML_BF16 : -1;
  if (type < 0 || s.ndim != 2 || s.d[0] % TENSOR_PANEL || s.d[1] < TENSOR_PANEL || m->n_tp > 1 || !tensor_wide_layouts(w) || setting_on(SET_TG_LLM_NO_PANELS))
    return w;
  /* an earlier load's panels (the same shape and type: else packed again) */
  tg_tensor *p = llm_pack_cache_tensor(m, key, 'p'), *v = p ? tensor_rows_of_panels(p) : NULL;
  if (v && (tg_dtype_of(v) != dt || tg_ndim(v) != 2 || tg_dim(v, 0) != s.d[0] || tg_dim(v, 1) != s.d[1])) tg_free(v), v = NULL;
  if (!v) {
    tg_free(p);
    tg_clear_error();
    p = tensor_panels_of_rows(w);
    if (!p || tg_realize(p) < 0) return NULL;
    v = tensor_rows_of_panels(p);
    if (!v) return NULL;
  }
  tensor_adopt(NULL, p);
  llm_add_packed(m, (llm_packed){ .w = v, .type = type, .panels = p }, key);
  return v;
}

/* The layer tensors read only by linear(): held as panels when float. */
static bool only_multiplied(llm_tensor id) {
  static const llm_tensor ids[] = { LT_Q, LT_K, LT_V, LT_QKV, LT_O, LT_GATE, LT_UP, LT_GATE_UP, LT_DOWN, LT_Q_A, LT_Q_B, LT_KV_A, LT_KV_B,
                                    LT_GATE_SHEXP, LT_UP_SHEXP, LT_DOWN_SHEXP, LT_SSM_QKV, LT_SSM_Z, LT_SSM_OUT };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) if (ids[i] == id) return true;
  return false;
}

const llm_packed *llm_packed_of(const tg_llm *m, const tg_tensor *w) {
  for (int i = 0; i < m->npacked; i++) if (m->packed[i].w == w) return &m->packed[i];
  return NULL;
}

/* How the model reads a tensor, which decides the form it is kept in. */
typedef enum {
  READ_ANY,          /* as stored; quantized matrices row-packed */
  READ_MULTIPLIED,   /* only by matmuls: float matrices as panels too */
  READ_LOOKUP,       /* only rows taken (an embedding not tied to the output): stays as the file has it */
} weight_use;

/* The tensor called name, realized on device and owned by the model; NULL
 * when absent (an error only when required), kept in the form its use
 * wants. *err is set on failure. */
static tg_tensor *load(tg_llm *m, const char *device, const char *name, bool required, weight_use use, bool *err) {
  if (*err) return NULL;
  const gguf_tensor_info *g = gguf_find_tensor(m->file, name);
  if (!g) {
    if (required) { tg_seterr("%s: tensor '%s' is missing (architecture %s)", m->file->path, name, m->cfg.arch); *err = true; }
    return NULL;
  }
  tg_scope_begin();
  /* the stored form is read where the file's mapping has it (a device
   * with its own memory: copied once); quantized bytes stay packed, their
   * values a lazy graph that fuses into each matmul */
  tg_tensor *t = gguf_tensor_stored_in_place(g, device);
  if (t && tg_realize(t) < 0) t = NULL;
  if (t && gguf_tensor_quantized(g) && use != READ_LOOKUP && !llm_pack_cache_has(m, name, 's')) gguf_tensor_prefault(g);   /* all of it is read to pack it */
  if (t && gguf_tensor_quantized(g))
    t = keep_packed(m, t, tg_dequantize(t, (int)g->type, gguf_tensor_shape(g)), (int)g->type, NULL, use != READ_LOOKUP, name);
  else if (t && use == READ_MULTIPLIED) t = keep_panels(m, t, name);
  if (t) tensor_adopt(NULL, t);
  const llm_packed *pk = t ? llm_packed_of(m, t) : NULL;
  if (pk && !pk->raw) gguf_tensor_drop_pages(g);   /* repacked: the file's bytes are not read again */
  tg_scope_end();
  tg_release_cached_memory();   /* a copy that packing replaced goes back now, not at the end */
  if (!t) *err = true;
  return t;
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
  char key[LLM_PACK_KEY];
  snprintf(key, sizeof key, "%s+%d", names[0], n);
  bool cached = llm_pack_cache_has(m, key, quant ? 's' : 'p');
  tg_scope_begin();
  tg_tensor *parts[4];
  for (int i = 0; i < n; i++) {
    parts[i] = gguf_tensor_stored_in_place(g[i], device);
    if (!cached) gguf_tensor_prefault(g[i]);   /* all of it is read to pack or stack it */
  }
  /* the parts stay a lazy concatenation: the row-packing and panel
   * kernels read them where they lie (no stacked copy to write first; one
   * without a packed form is realized in keep_packed) */
  tg_tensor *t = tg_cat(parts, n, 0);
  if (t && quant) t = keep_packed(m, t, tg_dequantize(t, (int)g[0]->type, TG_SHAPE(total, cols)), (int)g[0]->type, &(stacked_parts){ parts, rows, n }, true, key);
  else if (t) {   /* float: panels from the parts where they lie, else one stacked copy */
    tg_tensor *p = keep_panels(m, t, key);
    if (p != t) t = p;
    else if ((t = tg_contiguous(t)) && tg_realize(t) < 0) t = NULL;
  }
  if (t) tensor_adopt(NULL, t);
  for (int i = 0; t && i < n; i++) gguf_tensor_drop_pages(g[i]);   /* stacked into a copy */
  tg_scope_end();
  tg_release_cached_memory();   /* a copy that packing replaced goes back now, not at the end */
  if (!t) *err = true;
  return t;
}

/* Checks that t has the shape d (n sizes); names it in the error. */
static bool shaped(tg_llm *m, tg_tensor *t, const char *name, const int64_t *d, int n, bool *err) {
  if (!t || *err) return !*err;
  tg_shape s = tg_shape_of(t);
  bool ok = s.ndim == n;
  for (int i = 0; ok && i < n; i++) ok = s.d[i] == d[i];
  if (!ok) {
    char got[96] = "", want[96] = "";
    for (int i = 0; i < s.ndim; i++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "", (long long)s.d[i]);
    for (int i = 0; i < n; i++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? ", " : "", (long long)d[i]);
    tg_seterr("%s: tensor '%s' has shape (%s), expected (%s)", m->file->path, name, got, want);
    *err = true;
  }
  return ok;
}

/* Tensors ids (n of them) stacked into one, when layer i has them all and
 * their types match (load_stacked). */
static tg_tensor *stack_layer(tg_llm *m, const char *device, int i, const llm_tensor *ids, int n, bool *err) {
  char names[4][128];
  const char *np[4];
  int64_t rows[4], d[3] = { 0, 0, 0 }, cols = 0;
  for (int k = 0; k < n; k++) {
    if (!(m->arch->req & LT(ids[k])) || !llm_tensor_in_layer(m, i, ids[k])) return NULL;
    llm_tensor_dims(m, ids[k], d);
    snprintf(names[k], sizeof names[k], "blk.%d.%s", i, llm_tensors[ids[k]].name);
    np[k] = names[k], rows[k] = d[0], cols = d[1];
  }
  return load_stacked(m, device, np, rows, n, cols, err);
}

/* A delta-net layer's states, float32 and zero, one per sequence (as
 * llama.cpp's recurrent memory): the conv's last kernel - 1 inputs
 * (n_seq, kernel - 1, channels) and the recurrent state (n_seq, v heads,
 * head_v, head_k). */
static int make_states(tg_llm *m, llm_layer *l) {
  int64_t S = m->n_seq > 1 ? m->n_seq : 1, C = 2 * (int64_t)m->gdn.k_heads * m->gdn.head_k + (int64_t)m->gdn.v_heads * m->gdn.head_v;
  tg_scope_begin();
  l->conv_state = tg_contiguous(tg_zeros(TG_SHAPE(S, m->gdn.conv_k - 1 > 0 ? m->gdn.conv_k - 1 : 1, C), TG_F32));
  l->ssm_state = tg_contiguous(tg_zeros(TG_SHAPE(S, m->gdn.v_heads, m->gdn.head_v, m->gdn.head_k), TG_F32));
  bool err = tg_realize(l->conv_state) < 0 || tg_realize(l->ssm_state) < 0;
  if (!err) tensor_adopt(NULL, l->conv_state), tensor_adopt(NULL, l->ssm_state);
  tg_scope_end();
  if (err) l->conv_state = l->ssm_state = NULL;
  return err ? -1 : 0;
}

/* Layer i's tensors, as m's architecture row and the tensor table say:
 * required ones must be there, optional ones may; every one is checked
 * against its shape. q|k|v and gate|up are stacked when they can be. */
static int load_layer(tg_llm *m, const char *device, int i) {
  const tg_llm_config *c = &m->cfg;
  llm_layer *l = &m->layers[i];
  bool err = false;
  uint64_t done = 0;
  static const llm_tensor qkv[] = { LT_Q, LT_K, LT_V }, gate_up[] = { LT_GATE, LT_UP };
  /* sharded over devices (llm_tp.c), each matrix is cut by its own rows */
  bool stack = m->n_tp <= 1;
  if (stack && (l->wqkv = stack_layer(m, device, i, qkv, 3, &err))) done |= LT(LT_Q) | LT(LT_K) | LT(LT_V);
  if (stack && !err && (l->w_gate_up = stack_layer(m, device, i, gate_up, 2, &err))) done |= LT(LT_GATE) | LT(LT_UP);
  for (int id = 0; id < LT_FILE_COUNT && !err; id++) {
    uint64_t bit = LT(id);
    if ((done & bit) || !((m->arch->req | m->arch->opt) & bit) || !llm_tensor_in_layer(m, i, (llm_tensor)id)) continue;
    char n[128];
    int64_t d[3];
    int nd = llm_tensor_dims(m, (llm_tensor)id, d);
    snprintf(n, sizeof n, "blk.%d.%s", i, llm_tensors[id].name);
    tg_tensor **slot = llm_layer_slot(l, (llm_tensor)id);
    *slot = load(m, device, n, (m->arch->req & bit) != 0, only_multiplied((llm_tensor)id) ? READ_MULTIPLIED : READ_ANY, &err);
    shaped(m, *slot, n, d, nd, &err);
  }
  if (err) return -1;
  if (l->recurrent) return make_states(m, l);
  tg_scope_begin();
  /* a sliding layer's ring, or every position; a block of them per sequence */
  int64_t rows = (int64_t)(l->ring ? l->ring : c->n_ctx) * (m->n_seq > 1 ? m->n_seq : 1);
  tg_tensor **caches[] = { &l->k_cache, &l->v_cache, &l->k_scales, &l->v_scales };
  int ncaches = llm_cache_q8(m) ? 4 : 2;
  l->k_cache = tg_contiguous(tg_zeros(TG_SHAPE(rows, c->n_kv_heads, c->head_dim), m->cache_dtype));
  l->v_cache = tg_contiguous(tg_zeros(TG_SHAPE(rows, c->n_kv_heads, c->head_dim_v), m->cache_dtype));
  if (llm_cache_q8(m)) {   /* a float16 scale per block of values */
    l->k_scales = tg_contiguous(tg_zeros(TG_SHAPE(rows, c->n_kv_heads, c->head_dim / LLM_KV_Q8_BLOCK), TG_F16));
    l->v_scales = tg_contiguous(tg_zeros(TG_SHAPE(rows, c->n_kv_heads, c->head_dim_v / LLM_KV_Q8_BLOCK), TG_F16));
  }
  for (int k = 0; k < ncaches && !err; k++) err = tg_realize(*caches[k]) < 0;
  for (int k = 0; k < ncaches && !err; k++) tensor_adopt(NULL, *caches[k]);
  tg_scope_end();
  if (err) for (int k = 0; k < ncaches; k++) *caches[k] = NULL;
  return err ? -1 : 0;
}

int llm_load_weights(tg_llm *m, const char *device) {
  tg_llm_config *c = &m->cfg;
  bool err = false;
  llm_pack_cache_open(m);
  if (llm_cache_q8(m) && (c->head_dim % LLM_KV_Q8_BLOCK || c->head_dim_v % LLM_KV_Q8_BLOCK))
    return tg_seterr("%s: a q8_0 KV cache needs head sizes that are multiples of %d (this model's keys: %d, values: %d)", m->file->path,
                     LLM_KV_Q8_BLOCK, c->head_dim, c->head_dim_v);
  /* an embedding the output does not share is only looked up a few rows a
   * step: packing all of it would cost a pass over the vocabulary at load */
  bool tied = m->arch->tied || !gguf_find_tensor(m->file, "output.weight");
  /* layers split over ranks (llm_pp.c): the embedding on the first (and on
   * the last when the output is the embedding), the output on the last */
  tg_shape es;
  if (llm_pp_first(m) || (llm_pp_last(m) && tied)) {
    m->tok_embd = load(m, device, "token_embd.weight", true, (tied && llm_pp_last(m)) || m->n_tp > 1 ? READ_ANY : READ_LOOKUP, &err);
    if (err) return -1;
    es = tg_shape_of(m->tok_embd);
  } else {
    const gguf_tensor_info *g = gguf_find_tensor(m->file, "token_embd.weight");
    if (!g) return tg_seterr("%s: tensor 'token_embd.weight' is missing (architecture %s)", m->file->path, m->cfg.arch);
    es = gguf_tensor_shape(g);
  }
  if (es.ndim != 2 || es.d[1] != c->dim) return tg_seterr("%s: token_embd.weight is not (n_vocab, %d)", m->file->path, c->dim);
  if (es.d[0] > INT32_MAX) return tg_seterr("%s: token_embd.weight has %lld rows, more than a token id can name", m->file->path, (long long)es.d[0]);
  c->n_vocab = (int)es.d[0];
  if (llm_pp_last(m)) {
    m->output_norm = load(m, device, "output_norm.weight", true, READ_ANY, &err);
    shaped(m, m->output_norm, "output_norm.weight", (int64_t[]){ c->dim }, 1, &err);
    if (!m->arch->tied) m->output = load(m, device, "output.weight", false, READ_MULTIPLIED, &err);
    if (!m->output && !err) m->output = m->tok_embd;   /* tied embeddings */
    shaped(m, m->output, "output.weight", (int64_t[]){ c->n_vocab, c->dim }, 2, &err);
  }
  for (int i = m->layer_lo; i < m->layer_hi && !err; i++) err = load_layer(m, device, i) < 0;
  if (!err) llm_pack_cache_save(m);
  llm_pack_cache_close(m);   /* the weights read from it hold its mapping */
  return err ? -1 : 0;
}
