/* llm_tp.c: tensor parallel over several devices (tg_llm_opts.devices,
 * `tg run --devices CPU:0,CPU:1`), as tinygrad's LLM shards its weights:
 * the model loads on the first device, then its matrices become sharded
 * tensors (tg_shard): q, k, v by output rows (whole heads, kv heads with
 * their query heads), the attention output by input columns, gate and up
 * by rows, down by columns; the KV cache by kv heads (each sequence's
 * block alike); mixture-of-experts layers as the feed-forward (float
 * experts' gate and up by rows, down by columns; quantized experts whole
 * on every device). DeepSeek's MLA: q_b (or q) and kv_b by rows (whole
 * heads), the latent down-projections q_a, kv_a and their norms
 * replicated (each device computes the latent, then its heads from it),
 * the cache (each head's decompressed keys and values) by heads.
 * Gated delta-net layers (Qwen3.5) by k heads with the v heads that read
 * them: q|k|v's and the conv's channels, z's rows and the out-projection's
 * columns reordered at load so that each device's are one block
 * (reorder_gdn), the states by channels and v heads, the gates' small
 * per-head weights replicated (llm_gdn.c splits their outputs,
 * llm_tp_split). Everything else (embedding, norms, router, output, rope
 * tables) replicated. The forward graph is the one-device graph (the
 * delta-net's reads its channels as n_tp groups, one group on one
 * device): the shard lowering runs each part on its device and sums the
 * column-sharded products with an allreduce (src/tensor/shard_lower.c). */
#include <stdio.h>
#include <string.h>
#include "llm/llm.h"
#include "io/ggml_types.h"
#include "runtime/device.h"
#include "tensor/shard.h"
#include "tensor/tensor.h"
#include "tg_dist.h"

int llm_tp_parse(tg_llm *m, const char *devices) {
  m->n_tp = 1;
  if (!devices || !*devices) return 0;
  char buf[512];
  if (strlen(devices) >= sizeof buf) return tg_seterr("tg_llm_load: devices '%.40s...' is too long", devices);
  snprintf(buf, sizeof buf, "%s", devices);
  int n = 0;
  for (char *save = NULL, *d = strtok_r(buf, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
    if (n == LLM_MAX_DEVICES) return tg_seterr("tg_llm_load: devices '%s': more than %d", devices, LLM_MAX_DEVICES);
    tg_device *dev = device_get(d);
    if (!dev) {
      char why[256];
      snprintf(why, sizeof why, "%s", tg_error());
      return tg_seterr("tg_llm_load: devices '%s': %s", devices, why);
    }
    for (int j = 0; j < n; j++)
      if (m->tp_devices[j] == dev->name) return tg_seterr("tg_llm_load: devices '%s': %s is listed twice", devices, dev->name);
    m->tp_devices[n++] = dev->name;
  }
  if (n == 0) return tg_seterr("tg_llm_load: devices '%s' names no device", devices);
  m->n_tp = n;
  m->device = m->tp_devices[0];
  return 0;
}

/* What tensor parallel does not cover; checked once the config is read. */
int llm_tp_check(const tg_llm *m) {
  if (m->n_tp <= 1) return 0;
  const tg_llm_config *c = &m->cfg;
  const char *path = m->file->path, *why = NULL;
  int n = m->n_tp;
  if (m->arch->req & (LT(LT_QKV) | LT(LT_GATE_UP))) why = "q|k|v or gate|up fused in the file";
  if (why)
    return tg_seterr("%s: tensor parallel over %d devices does not support %s (architecture %s); use one device", path, n, why, c->arch);
  if (c->n_heads % n || c->n_kv_heads % n || c->ffn_dim % n)
    return tg_seterr("%s: tensor parallel over %d devices needs heads (%d), kv heads (%d) and the feed-forward size (%d) to divide by %d", path, n,
                     c->n_heads, c->n_kv_heads, c->ffn_dim, n);
  if (m->arch->recurrent && m->gdn.k_heads % n)
    return tg_seterr("%s: tensor parallel over %d devices needs the delta-net's k heads (%d; %d v heads, %d per k head) to divide by %d: "
                     "each device takes whole k heads with the v heads that read them", path, n, m->gdn.k_heads, m->gdn.v_heads,
                     m->gdn.v_heads / m->gdn.k_heads, n);
  if (c->n_experts > 0 && (c->expert_ffn_dim % n || c->shared_ffn_dim % n))
    return tg_seterr("%s: tensor parallel over %d devices needs the experts' feed-forward size (%d) and the shared experts' (%d) to divide by %d",
                     path, n, c->expert_ffn_dim, c->shared_ffn_dim, n);
  return 0;
}

/* How a per-layer tensor is cut: -1 replicated, else the axis. Experts
 * (E, F, dim) and (E, dim, F) as the dense feed-forward: gate and up (and
 * their biases (E, F)) by their F rows, down by its F columns; the router
 * and down's bias replicated. */
static int layer_axis(llm_tensor id) {
  switch (id) {
    case LT_Q: case LT_K: case LT_V: case LT_BQ: case LT_BK: case LT_BV: case LT_GATE: case LT_UP: return 0;
    case LT_Q_B: case LT_KV_B: return 0;
    case LT_SSM_QKV: case LT_SSM_CONV1D: case LT_SSM_Z: return 0;
    case LT_SSM_OUT: case LT_SSM_STATE: return 1;
    case LT_CONV_STATE: return 2;
    case LT_GATE_SHEXP: case LT_UP_SHEXP: return 0;
    case LT_O: case LT_DOWN: case LT_K_CACHE: case LT_V_CACHE: case LT_K_SCALES: case LT_V_SCALES: return 1;
    case LT_DOWN_SHEXP: case LT_GATE_EXPS: case LT_UP_EXPS: case LT_GATE_EXPS_B: case LT_UP_EXPS_B: return 1;
    case LT_DOWN_EXPS: return 2;
    default: return -1;
  }
}

static tg_tensor *shard_realized(tg_llm *m, tg_tensor *t, int axis) {
  tg_tensor *s = tg_shard(t, m->tp_devices, m->n_tp, axis);
  if (s && tg_realize(s) < 0) s = NULL;
  if (s) tensor_adopt(NULL, s);
  return s;
}

/* A row-packed quantized weight: its scales and quants cut on the same
 * axis (rows: groups of 16 rows; columns: whole blocks), its float view
 * rebuilt from the parts. The scales are cut as (g, S, nb, 16), the planes
 * of tg_quant_pack_rows's (g, S * nb, 16) as an axis: a block's S scales
 * (Q4_K's d and dmin) lie nb apart, so a split of the blocks is a box of
 * that view on each plane (the same memory: one device's kernels read it
 * as before). */
static tg_tensor *shard_packed(tg_llm *m, llm_packed *pk, const char *name, int axis) {
  tg_shape ws = tg_shape_of(pk->w), ss = tg_shape_of(pk->row_scales), qs = tg_shape_of(pk->row_quants);
  const char *type = ggml_type_info((uint32_t)pk->type)->name;
  int n = m->n_tp;
  if (axis == 0 && qs.d[0] % n)
    return tg_seterr("%s: %s (%s, %lld rows) does not split over %d devices in its groups of 16 rows", m->file->path, name, type,
                     (long long)ws.d[0], n), NULL;
  if (axis == 1 && qs.d[1] % n)
    return tg_seterr("%s: %s (%s, %lld columns) does not split over %d devices at its %d-value blocks", m->file->path, name, type,
                     (long long)ws.d[1], n, ggml_type_info((uint32_t)pk->type)->block_size), NULL;
  int64_t g = qs.d[0], nb = qs.d[1];
  tg_tensor *planes = tg_reshape(pk->row_scales, TG_SHAPE(g, ss.d[1] / nb, nb, ss.d[2]));
  tg_tensor *sc = planes ? shard_realized(m, planes, axis == 1 ? 2 : axis) : NULL, *q = sc ? shard_realized(m, pk->row_quants, axis) : NULL;
  tg_tensor *w = q ? tg_dequantize_rows(sc, q, pk->type, ws) : NULL;
  if (!w) { tg_free(sc); tg_free(q); return NULL; }
  tensor_adopt(NULL, w);
  tg_free(pk->row_scales); tg_free(pk->row_quants);
  pk->row_scales = sc, pk->row_quants = q, pk->w = w;
  return w;
}

/* A quantized weight read from its packed bytes: the bytes on every
 * device, its float view rebuilt from them. */
static tg_tensor *replicate_raw(tg_llm *m, llm_packed *pk) {
  tg_tensor *raw = shard_realized(m, pk->raw, -1);
  tg_tensor *w = raw ? tg_dequantize(raw, pk->type, tg_shape_of(pk->w)) : NULL;
  if (!w) { tg_free(raw); return NULL; }
  tensor_adopt(NULL, w);
  tg_free(pk->raw);
  pk->raw = raw, pk->w = w;
  return w;
}

/* A row-packed quantized weight whole on every device, its float view
 * rebuilt from the copies. */
static tg_tensor *replicate_packed(tg_llm *m, llm_packed *pk) {
  tg_tensor *sc = shard_realized(m, pk->row_scales, -1), *q = sc ? shard_realized(m, pk->row_quants, -1) : NULL;
  tg_tensor *w = q ? tg_dequantize_rows(sc, q, pk->type, tg_shape_of(pk->w)) : NULL;
  if (!w) { tg_free(sc); tg_free(q); return NULL; }
  tensor_adopt(NULL, w);
  tg_free(pk->row_scales); tg_free(pk->row_quants);
  pk->row_scales = sc, pk->row_quants = q, pk->w = w;
  return w;
}

/* *slot sharded on axis (-1 replicated), the old tensor freed. */
static int shard_slot(tg_llm *m, tg_tensor **slot, int axis, const char *name) {
  tg_tensor *t = *slot;
  if (!t || shard_is_multi_name(t->device)) return 0;   /* absent, or a field two ids share */
  llm_packed *pk = (llm_packed *)llm_packed_of(m, t);
  /* quantized experts: replicated, each device computing the chosen
   * experts whole (their packed (E * N, K) form does not split by rows of
   * each expert yet) */
  if (pk && tg_ndim(t) == 3) {
    tg_tensor *s = pk->row_quants ? replicate_packed(m, pk) : replicate_raw(m, pk);
    if (!s) return -1;
    tg_free(t);
    *slot = s;
    return 0;
  }
  if (pk && !pk->row_quants && axis >= 0)
    return tg_seterr("%s: %s (%s) has no row-packed form to split over %d devices (rows not a multiple of 16, or TG_LLM_NO_ROWS / TG_LLM_ROWS_K=0 set)",
                     m->file->path, name, ggml_type_info((uint32_t)pk->type)->name, m->n_tp);
  tg_tensor *s = pk && pk->row_quants ? shard_packed(m, pk, name, axis) : pk ? replicate_raw(m, pk) : shard_realized(m, t, axis);
  if (!s) return -1;
  tg_free(t);
  *slot = s;
  return 0;
}

/* Spans (start, length) of axis `axis` of *slot (nsp of them, at most
 * LLM_GDN_SPANS), in units of `unit` elements, put side by side in their
 * order: the tensor that replaces it
 * (float: a realized copy; row-packed quantized: its scales and quants
 * reordered, rows by whole groups of 16, columns by whole blocks). */
typedef struct { int64_t start, len; } llm_span;
#define LLM_GDN_MAX_R 64                                   /* v heads per k head */
#define LLM_GDN_SPANS (LLM_MAX_DEVICES * (LLM_GDN_MAX_R + 2))   /* a device's q, k and v pieces */
static int reorder_slot(tg_llm *m, tg_tensor **slot, int axis, const llm_span *sp, int nsp, int64_t unit, const char *name) {
  tg_tensor *t = *slot;
  if (!t) return 0;
  llm_packed *pk = (llm_packed *)llm_packed_of(m, t);
  tg_tensor *parts[LLM_GDN_SPANS];   /* nsp <= LLM_GDN_SPANS (reorder_gdn) */
  if (!pk) {
    for (int i = 0; i < nsp; i++) {
      tg_index sl[2] = { TG_ALLIDX, TG_ALLIDX };
      sl[axis] = TG_SLICE(sp[i].start * unit, (sp[i].start + sp[i].len) * unit, 1);
      parts[i] = tg_getitem(t, sl, axis + 1);
    }
    tg_tensor *r = tg_contiguous(tg_cat(parts, nsp, axis));
    if (!r || tg_realize(r) < 0) return -1;
    tensor_adopt(NULL, r);
    tg_free(t);
    *slot = r;
    return 0;
  }
  const char *type = ggml_type_info((uint32_t)pk->type)->name;
  if (!pk->row_quants)
    return tg_seterr("%s: %s (%s) has no row-packed form to split over %d devices (rows not a multiple of 16, or TG_LLM_NO_ROWS / TG_LLM_ROWS_K=0 set)",
                     m->file->path, name, type, m->n_tp);
  tg_shape ss = tg_shape_of(pk->row_scales), qs = tg_shape_of(pk->row_quants);
  int64_t g = qs.d[0], nb = qs.d[1], step = axis == 0 ? TG_QUANT_PACK_ROWS : ggml_type_info((uint32_t)pk->type)->block_size;
  for (int i = 0; i < nsp; i++)
    if ((sp[i].start * unit) % step || (sp[i].len * unit) % step)
      return tg_seterr("%s: %s (%s) cannot be split by delta-net heads over %d devices: a device's %s come in pieces of %lld, not whole %s of %lld",
                       m->file->path, name, type, m->n_tp, axis ? "columns" : "rows", (long long)(sp[i].len * unit),
                       axis ? "blocks" : "groups", (long long)step), -1;
  tg_tensor *planes = tg_reshape(pk->row_scales, TG_SHAPE(g, ss.d[1] / nb, nb, ss.d[2]));   /* as shard_packed: a block's scales nb apart */
  tg_tensor *sparts[sizeof parts / sizeof parts[0]];
  for (int i = 0; i < nsp; i++) {
    int64_t lo = sp[i].start * unit / step, hi = (sp[i].start + sp[i].len) * unit / step;
    parts[i] = axis == 0 ? TG_GET(pk->row_quants, TG_SLICE(lo, hi, 1)) : TG_GET(pk->row_quants, TG_ALLIDX, TG_SLICE(lo, hi, 1));
    sparts[i] = axis == 0 ? TG_GET(planes, TG_SLICE(lo, hi, 1)) : TG_GET(planes, TG_ALLIDX, TG_ALLIDX, TG_SLICE(lo, hi, 1));
  }
  tg_tensor *q = tg_contiguous(tg_cat(parts, nsp, axis)), *sc = tg_cat(sparts, nsp, axis ? 2 : 0);
  sc = sc ? tg_contiguous(tg_reshape(sc, ss)) : NULL;
  if (!q || !sc || tg_realize(q) < 0 || tg_realize(sc) < 0) return -1;
  tg_tensor *w = tg_dequantize_rows(sc, q, pk->type, tg_shape_of(pk->w));
  if (!w) return -1;
  tensor_adopt(NULL, sc), tensor_adopt(NULL, q), tensor_adopt(NULL, w);
  tg_free(pk->row_scales); tg_free(pk->row_quants); tg_free(t);
  pk->row_scales = sc, pk->row_quants = q, pk->w = w;
  *slot = w;
  return 0;
}

/* A delta-net layer's channels and v heads in device order: device d
 * takes k heads J_d = [d Hk/n, (d + 1) Hk/n) and the v heads that read
 * them (v head h reads k head h % Hk: heads r Hk + j, r < Hv/Hk, j in
 * J_d), so that its rows are one block of each tensor: the conv channels
 * as q of J_d | k of J_d | v of its v heads, the v heads in the order
 * (d, r, j): q|k|v's and the conv's rows, z's rows, the out-projection's
 * columns. llm_gdn.c reads the channels as n such groups and each group's
 * v head r Hk/n + j' as reading its k head j'. The gates' small per-head
 * weights (beta, alpha: Hv rows each; dt, a) stay whole in the file's
 * order on every device (a device's heads are Hv/Hk pieces of Hk/n rows,
 * not whole groups of 16 rows of a quantized form); llm_gdn.c puts their
 * outputs in the device order and splits them (llm_tp_split). The states
 * start at zero and need no reordering. */
static int reorder_gdn(tg_llm *m, llm_layer *l, int layer) {
  int n = m->n_tp;
  int64_t Hk = m->gdn.k_heads, Hv = m->gdn.v_heads, Dk = m->gdn.head_k, Dv = m->gdn.head_v, R = Hv / Hk, J = Hk / n;
  llm_span heads[LLM_GDN_SPANS], chans[LLM_GDN_SPANS];
  if (R > LLM_GDN_MAX_R)
    return tg_seterr("%s: tensor parallel takes at most %d delta-net v heads per k head (this model: %lld)", m->file->path, LLM_GDN_MAX_R, (long long)R);
  int nh = 0, nc = 0;
  for (int d = 0; d < n; d++) {
    chans[nc++] = (llm_span){ d * J * Dk, J * Dk };
    chans[nc++] = (llm_span){ Hk * Dk + d * J * Dk, J * Dk };
    for (int64_t r = 0; r < R; r++) {
      heads[nh++] = (llm_span){ r * Hk + d * J, J };
      chans[nc++] = (llm_span){ 2 * Hk * Dk + (r * Hk + d * J) * Dv, J * Dv };
    }
  }
  static const struct { llm_tensor id; int axis; bool chan; } what[] = {
    { LT_SSM_QKV, 0, true }, { LT_SSM_CONV1D, 0, true }, { LT_SSM_Z, 0, false }, { LT_SSM_OUT, 1, false },
  };
  int rc = 0;
  for (size_t i = 0; i < sizeof what / sizeof what[0] && rc == 0; i++) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", layer, llm_tensors[what[i].id].name);
    tg_tensor **slot = llm_layer_slot(l, what[i].id);
    rc = what[i].chan ? reorder_slot(m, slot, what[i].axis, chans, nc, 1, name) : reorder_slot(m, slot, what[i].axis, heads, nh, Dv, name);
  }
  return rc;
}

int llm_tp_shard(tg_llm *m) {
  if (m->n_tp <= 1) return 0;
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  bool tied = m->output == m->tok_embd;
  int rc = shard_slot(m, &m->tok_embd, -1, "token_embd.weight");
  if (rc == 0 && tied) m->output = m->tok_embd;
  else if (rc == 0) rc = shard_slot(m, &m->output, -1, "output.weight");
  tg_tensor **global[] = { &m->output_norm, &m->rope_cos, &m->rope_sin, &m->rope_cos_swa, &m->rope_sin_swa };
  for (size_t i = 0; i < sizeof global / sizeof global[0] && rc == 0; i++) rc = shard_slot(m, global[i], -1, "a global tensor");
  for (int i = 0; i < m->cfg.n_layers && rc == 0; i++) {
    if (m->layers[i].recurrent) rc = reorder_gdn(m, &m->layers[i], i);
    for (int id = 0; id < LT_COUNT && rc == 0; id++) {
      char name[96];
      snprintf(name, sizeof name, "blk.%d.%s", i, llm_tensors[id].name ? llm_tensors[id].name : "cache");
      rc = shard_slot(m, llm_layer_slot(&m->layers[i], (llm_tensor)id), layer_axis((llm_tensor)id), name);
    }
  }
  tg_scope_end();
  tensor_device_end(prev);
  tg_release_cached_memory();
  return rc;
}

tg_tensor *llm_tp_input(const tg_llm *m, tg_tensor *t) {
  return m->n_tp > 1 && t && !shard_is_multi_name(t->device) ? tg_shard(t, m->tp_devices, m->n_tp, -1) : t;
}

tg_tensor *llm_tp_split(const tg_llm *m, tg_tensor *t, int axis) {
  return m->n_tp > 1 && t ? tg_shard(t, m->tp_devices, m->n_tp, axis) : t;
}

tg_tensor *llm_tp_output(const tg_llm *m, tg_tensor *t) {
  return m->n_tp > 1 && t ? tg_to(t, m->tp_devices[0]) : t;
}
