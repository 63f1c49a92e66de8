/* llm_tp.c: tensor parallel over several devices (tg_llm_opts.devices,
 * `tg run --devices CPU:0,CPU:1`), as tinygrad's LLM shards its weights:
 * the model loads on the first device, then its matrices become sharded
 * tensors (tg_shard): q, k, v by output rows (whole heads, kv heads with
 * their query heads), the attention output by input columns, gate and up
 * by rows, down by columns; q|k|v and gate|up fused in the file (Phi-3)
 * cut into their parts first, each split as its own; the KV cache by kv
 * heads (each sequence's block alike); mixture-of-experts layers as the
 * feed-forward, per expert (gate and up by every expert's rows, down by
 * its columns; quantized experts in their row-packed form, on the view
 * (E, F/16, ...) of the packed (E * F, K) matrix: each device holds 1/n of
 * every expert; a down whose columns per device are not whole blocks, as
 * Qwen3-30B-A3B's 768 over 2 devices, by its rows instead, the
 * activations gathered before it and its output after: llm_tp_gather). DeepSeek's MLA: q_b (or q) and kv_b by rows (whole
 * heads), the latent down-projections q_a, kv_a and their norms
 * replicated (each device computes the latent, then its heads from it),
 * the cache (each head's decompressed keys and values) by heads.
 * Gated delta-net layers (Qwen3.5) by k heads with the v heads that read
 * them: q|k|v's and the conv's channels, z's rows and the out-projection's
 * columns reordered at load so that each device's are one block
 * (reorder_gdn), the states by channels and v heads, the gates' small
 * per-head weights replicated (llm_gdn.c splits their outputs,
 * llm_tp_split). Everything else (embedding, norms, router, output, rope
 * tables) replicated. The forward graph is the one-device graph (a fused
 * matrix's parts take the forward's path for separate ones; the
 * delta-net's reads its channels as n_tp groups, one group on one
 * device): the shard lowering runs each part on its device and sums the
 * column-sharded products with an allreduce (src/tensor/shard_lower.c).
 * One device's weights, layouts and kernels are untouched. */
#include <stdio.h>
#include <string.h>
#include "llm/llm.h"
#include "io/ggml_types.h"
#include "runtime/device.h"
#include "tensor/shard.h"
#include "tensor/tensor.h"
#include "tg_dist.h"
#include "util/settings.h"

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
  const char *path = m->file->path;
  int n = m->n_tp;
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

/* The part of a layer a per-layer tensor belongs to (0: none, replicated
 * anyway): a part runs whole on every device when one of its tensors
 * cannot split (its caches and states then replicated too). */
static llm_tp_part layer_part(llm_tensor id) {
  switch (id) {
    case LT_Q: case LT_K: case LT_V: case LT_O: case LT_BQ: case LT_BK: case LT_BV: case LT_QKV: case LT_Q_B: case LT_KV_B:
    case LT_K_CACHE: case LT_V_CACHE: case LT_K_SCALES: case LT_V_SCALES: return LLM_TP_ATTN;
    case LT_GATE: case LT_UP: case LT_DOWN: case LT_GATE_UP: return LLM_TP_FFN;
    case LT_GATE_SHEXP: case LT_UP_SHEXP: case LT_DOWN_SHEXP: return LLM_TP_SHEXP;
    case LT_GATE_EXPS: case LT_UP_EXPS: case LT_DOWN_EXPS: case LT_GATE_EXPS_B: case LT_UP_EXPS_B: return LLM_TP_EXPERTS;
    case LT_SSM_QKV: case LT_SSM_CONV1D: case LT_SSM_Z: case LT_SSM_OUT: case LT_SSM_STATE: case LT_CONV_STATE: return LLM_TP_GDN;
    default: return (llm_tp_part)0;
  }
}

/* Said with DEBUG=1: a part of layer `layer` runs whole on every device. */
static void say_whole(const tg_llm *m, const char *name, const char *why) {
  if (setting_int(SET_DEBUG) >= 1)
    fprintf(stderr, "tg: %s: %s %s over %d devices: its part of the layer runs whole on each\n", m->file->path, name, why, m->n_tp);
}

/* Whether a matrix t (N, K) splits on axis over the devices: a float one
 * always (llm_tp_check saw its sizes divide), a quantized one when it has
 * a row-packed form whose 16-row groups (axis 0) or blocks (axis 1)
 * divide by the device count. */
static bool matrix_splits(const tg_llm *m, const tg_tensor *t, int axis, const char *name) {
  const llm_packed *pk = t && axis >= 0 && tg_ndim(t) == 2 ? llm_packed_of(m, t) : NULL;
  if (!pk) return true;
  char why[96];
  if (!pk->row_quants) snprintf(why, sizeof why, "(%s) has no row-packed form to split", ggml_type_info((uint32_t)pk->type)->name);
  else if (tg_dim(pk->row_quants, axis) % m->n_tp)
    snprintf(why, sizeof why, "(%s, %lld %s) does not split at its %s", ggml_type_info((uint32_t)pk->type)->name, (long long)tg_dim(t, axis),
             axis ? "columns" : "rows", axis ? "blocks" : "groups of 16 rows");
  else return true;
  say_whole(m, name, why);
  return false;
}

static tg_tensor *shard_realized(tg_llm *m, tg_tensor *t, int axis) {
  tg_tensor *s = tg_shard(t, m->tp_devices, m->n_tp, axis);
  if (s && tg_realize(s) < 0) s = NULL;
  if (s) tensor_adopt(NULL, s);
  return s;
}

/* pk's row-packed copy replaced by views of it (sv, qv: the same memory)
 * sharded on saxis and qaxis (-1 replicated), its float view rebuilt from
 * the parts. */
/* pk's row-packed copy replaced by sc and q (realized, held outside any
 * scope), its float view rebuilt from them; NULL (sc and q freed) on
 * failure. */
static tg_tensor *packed_replace(llm_packed *pk, tg_tensor *sc, tg_tensor *q) {
  tg_tensor *w = sc && q ? tg_dequantize_rows(sc, q, pk->type, tg_shape_of(pk->w)) : NULL;
  if (!w) { tg_free(sc); tg_free(q); return NULL; }
  tensor_adopt(NULL, w);
  tg_free(pk->row_scales); tg_free(pk->row_quants);
  pk->row_scales = sc, pk->row_quants = q, pk->w = w;
  return w;
}

static tg_tensor *shard_views(tg_llm *m, llm_packed *pk, tg_tensor *sv, int saxis, tg_tensor *qv, int qaxis) {
  tg_tensor *sc = sv ? shard_realized(m, sv, saxis) : NULL, *q = sc ? shard_realized(m, qv, qaxis) : NULL;
  return packed_replace(pk, sc, q);
}

/* A row-packed quantized weight W (N, K), or experts (E, N, K) packed as
 * the (E * N, K) matrix, cut by columns (axis 1; experts: their K, axis
 * 2): the quants on their blocks, the scales as (g, S, nb, 16), the
 * planes of tg_quant_pack_rows's (g, S * nb, 16) as an axis: a block's S
 * scales (Q4_K's d and dmin) lie nb apart, so a split of the blocks is a
 * box of that view on each plane (the same memory: one device's kernels
 * read it as before). A matrix's rows (axis 0): scales and quants on
 * their 16-row groups. */
static tg_tensor *shard_packed(tg_llm *m, llm_packed *pk, const char *name, int axis) {
  tg_shape ws = tg_shape_of(pk->w), ss = tg_shape_of(pk->row_scales), qs = tg_shape_of(pk->row_quants);
  const char *type = ggml_type_info((uint32_t)pk->type)->name;
  int n = m->n_tp;
  if (axis == 0 && qs.d[0] % n)
    return tg_seterr("%s: %s (%s, %lld rows) does not split over %d devices in its groups of 16 rows", m->file->path, name, type,
                     (long long)ws.d[0], n), NULL;
  if (axis == 1 && qs.d[1] % n)
    return tg_seterr("%s: %s (%s, %lld columns) does not split over %d devices at its %d-value blocks", m->file->path, name, type,
                     (long long)ws.d[ws.ndim - 1], n, ggml_type_info((uint32_t)pk->type)->block_size), NULL;
  int64_t g = qs.d[0], nb = qs.d[1];
  return shard_views(m, pk, tg_reshape(pk->row_scales, TG_SHAPE(g, ss.d[1] / nb, nb, ss.d[2])), axis == 1 ? 2 : axis, pk->row_quants, axis);
}

/* Quantized experts (E, F, K) cut by every expert's rows (gate and up):
 * the packed (E * F, K) matrix viewed per expert, (E, F/16, ...)
 * (tg_quant_matmul_rows_experts reads that view too), on its groups: each
 * device holds F/n rows of every expert, laid out as one device packs
 * experts (E, F/n, K), and computes the chosen experts' F/n outputs. */
static tg_tensor *shard_expert_rows(tg_llm *m, llm_packed *pk, const char *name) {
  tg_shape ws = tg_shape_of(pk->w), ss = tg_shape_of(pk->row_scales), qs = tg_shape_of(pk->row_quants);
  int64_t e = ws.d[0], g = ws.d[1] / TG_QUANT_PACK_ROWS;
  if (g % m->n_tp)
    return tg_seterr("%s: %s (%s, %lld rows per expert) does not split over %d devices in its groups of 16 rows", m->file->path, name,
                     ggml_type_info((uint32_t)pk->type)->name, (long long)ws.d[1], m->n_tp), NULL;
  return shard_views(m, pk, tg_reshape(pk->row_scales, TG_SHAPE(e, g, ss.d[1], ss.d[2])), 1,
                     tg_reshape(pk->row_quants, TG_SHAPE(e, g, qs.d[1], qs.d[2])), 1);
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

/* *slot sharded on axis (-1 replicated), the old tensor freed. Quantized
 * experts (E, F, K) with a row-packed copy: by every expert's rows (axis
 * 1) or by its columns (axis 2: the packed matrix's); in their packed
 * bytes only (rows not whole groups): replicated, each device computing
 * the chosen experts whole. */
static int shard_slot(tg_llm *m, tg_tensor **slot, int axis, const char *name) {
  tg_tensor *t = *slot;
  if (!t || shard_is_multi_name(t->device)) return 0;   /* absent, or a field two ids share */
  llm_packed *pk = (llm_packed *)llm_packed_of(m, t);
  bool experts = tg_ndim(t) == 3;
  if (pk && !pk->row_quants && axis >= 0 && !experts)
    return tg_seterr("%s: %s (%s) has no row-packed form to split over %d devices (rows not a multiple of 16, or TG_LLM_NO_ROWS / TG_LLM_ROWS_K=0 set)",
                     m->file->path, name, ggml_type_info((uint32_t)pk->type)->name, m->n_tp);
  tg_tensor *s;
  if (pk && pk->row_quants)
    s = axis < 0 ? shard_views(m, pk, pk->row_scales, -1, pk->row_quants, -1)
        : experts && axis == 1 ? shard_expert_rows(m, pk, name)
        : shard_packed(m, pk, name, experts ? axis - 1 : axis);
  else s = pk ? replicate_raw(m, pk) : shard_realized(m, t, axis);
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
/* A quantized tensor's pieces along axis come in whole 16-row groups
 * (rows) or whole blocks (columns) of its row-packed form. */
static int64_t cut_step(const llm_packed *pk, int axis) {
  return axis == 0 ? TG_QUANT_PACK_ROWS : ggml_type_info((uint32_t)pk->type)->block_size;
}

/* Whether t (NULL: absent) can be put in the spans' order: a float
 * tensor always, a quantized one when it has a row-packed form and every
 * span is whole groups or blocks of it (else, said with DEBUG=1, its
 * layer's delta-net runs whole on every device). */
static bool slot_cuts(const tg_llm *m, const tg_tensor *t, int axis, const llm_span *sp, int nsp, int64_t unit, const char *name) {
  const llm_packed *pk = t ? llm_packed_of(m, t) : NULL;
  if (!pk) return true;
  const char *type = ggml_type_info((uint32_t)pk->type)->name;
  char why[160];
  if (!pk->row_quants) {
    snprintf(why, sizeof why, "(%s) has no row-packed form to split by delta-net heads", type);
    say_whole(m, name, why);
    return false;
  }
  int64_t step = cut_step(pk, axis);
  for (int i = 0; i < nsp; i++)
    if ((sp[i].start * unit) % step || (sp[i].len * unit) % step) {
      snprintf(why, sizeof why, "(%s): a device's %s by delta-net heads come in pieces of %lld, not whole %s of %lld: it does not split", type,
               axis ? "columns" : "rows", (long long)(sp[i].len * unit), axis ? "blocks" : "groups", (long long)step);
      say_whole(m, name, why);
      return false;
    }
  return true;
}

/* (reorder_gdn checked a quantized slot's pieces with slot_cuts) */
static int reorder_slot(tg_llm *m, tg_tensor **slot, int axis, const llm_span *sp, int nsp, int64_t unit) {
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
  tg_shape ss = tg_shape_of(pk->row_scales), qs = tg_shape_of(pk->row_quants);
  int64_t g = qs.d[0], nb = qs.d[1], step = cut_step(pk, axis);
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
  tensor_adopt(NULL, sc), tensor_adopt(NULL, q);
  tg_tensor *w = packed_replace(pk, sc, q);
  if (!w) return -1;
  tg_free(t);
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
 * start at zero and need no reordering. A layer whose quantized pieces
 * would cut row groups or blocks (narrow heads) is left as it is and its
 * delta-net runs whole on every device (LLM_TP_GDN in l->tp_whole: its
 * tensors and states replicated). */
typedef struct { llm_span heads[LLM_GDN_SPANS], chans[LLM_GDN_SPANS]; int nh, nc; } gdn_order;
static const struct { llm_tensor id; int axis; bool chan; } gdn_reordered[] = {
  { LT_SSM_QKV, 0, true }, { LT_SSM_CONV1D, 0, true }, { LT_SSM_Z, 0, false }, { LT_SSM_OUT, 1, false },
};

static int reorder_gdn(tg_llm *m, llm_layer *l, int layer) {
  int n = m->n_tp;
  int64_t Hk = m->gdn.k_heads, Hv = m->gdn.v_heads, Dv = m->gdn.head_v, Dk = m->gdn.head_k, R = Hv / Hk, J = Hk / n;
  if (R > LLM_GDN_MAX_R)
    return tg_seterr("%s: tensor parallel takes at most %d delta-net v heads per k head (this model: %lld)", m->file->path, LLM_GDN_MAX_R, (long long)R);
  gdn_order o = { .nh = 0 };
  for (int d = 0; d < n; d++) {
    o.chans[o.nc++] = (llm_span){ d * J * Dk, J * Dk };
    o.chans[o.nc++] = (llm_span){ Hk * Dk + d * J * Dk, J * Dk };
    for (int64_t r = 0; r < R; r++) {
      o.heads[o.nh++] = (llm_span){ r * Hk + d * J, J };
      o.chans[o.nc++] = (llm_span){ 2 * Hk * Dk + (r * Hk + d * J) * Dv, J * Dv };
    }
  }
  for (size_t i = 0; i < sizeof gdn_reordered / sizeof gdn_reordered[0] && !(l->tp_whole & LLM_TP_GDN); i++) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", layer, llm_tensors[gdn_reordered[i].id].name);
    bool chan = gdn_reordered[i].chan;
    if (!slot_cuts(m, *llm_layer_slot(l, gdn_reordered[i].id), gdn_reordered[i].axis, chan ? o.chans : o.heads, chan ? o.nc : o.nh, chan ? 1 : Dv, name))
      l->tp_whole |= LLM_TP_GDN;
  }
  int rc = 0;
  for (size_t i = 0; i < sizeof gdn_reordered / sizeof gdn_reordered[0] && rc == 0 && !(l->tp_whole & LLM_TP_GDN); i++) {
    bool chan = gdn_reordered[i].chan;
    rc = reorder_slot(m, llm_layer_slot(l, gdn_reordered[i].id), gdn_reordered[i].axis, chan ? o.chans : o.heads, chan ? o.nc : o.nh, chan ? 1 : Dv);
  }
  return rc;
}

/* How layer l's experts split: float ones by the feed-forward size
 * (llm_tp_check saw it divide); quantized ones when they have a row-packed
 * copy and every expert's rows of gate and up are whole 16-row groups per
 * device, down by its columns when they are whole blocks per device, else
 * by its rows (Qwen3-30B-A3B: 768 columns, three 256-value blocks, over
 * 2 devices). Else the three stay whole on every device (gpt-oss's
 * 32-value MXFP4 blocks of a 32-wide expert). */
typedef enum { EXPERTS_WHOLE, EXPERTS_SPLIT, EXPERTS_DOWN_ROWS } experts_cut;
static experts_cut experts_split(const tg_llm *m, const llm_layer *l) {
  tg_tensor *const w[3] = { l->gate_exps, l->up_exps, l->down_exps };
  experts_cut cut = EXPERTS_SPLIT;
  for (int i = 0; i < 3; i++) {
    const llm_packed *pk = w[i] ? llm_packed_of(m, w[i]) : NULL;
    if (!pk) continue;
    if (!pk->row_quants) return EXPERTS_WHOLE;
    int64_t groups = tg_dim(w[i], 1) / TG_QUANT_PACK_ROWS;
    if (i < 2 && groups % m->n_tp) return EXPERTS_WHOLE;
    if (i == 2 && tg_dim(pk->row_quants, 1) % m->n_tp) {
      if (groups % m->n_tp) return EXPERTS_WHOLE;
      cut = EXPERTS_DOWN_ROWS;
    }
  }
  return cut;
}

/* Whether a fused matrix w's parts (n of rows[i] rows) split each over the
 * devices: a float w's always, a quantized one's when each part is whole
 * 16-row groups of its row-packed form on each device. */
static bool fused_splits(const tg_llm *m, const tg_tensor *w, const int64_t *rows, int n, const char *name) {
  const llm_packed *pk = llm_packed_of(m, w);
  if (!pk) return true;
  char why[160];
  const char *type = ggml_type_info((uint32_t)pk->type)->name;
  if (!pk->row_quants) snprintf(why, sizeof why, "(%s) has no row-packed form to split", type);
  int64_t lo = 0;
  for (int i = 0; i < n && pk->row_quants; lo += rows[i], i++)
    if (lo % TG_QUANT_PACK_ROWS || rows[i] % (TG_QUANT_PACK_ROWS * m->n_tp)) {
      snprintf(why, sizeof why, "(%s): its part of rows %lld to %lld does not split in its groups of 16 rows", type, (long long)lo,
               (long long)(lo + rows[i]));
      break;
    }
  if (pk->row_quants && lo == tg_dim(w, 0)) return true;
  say_whole(m, name, why);
  return false;
}

/* Rows [lo, lo + rows) of a fused matrix w (q|k|v, gate|up) as a matrix
 * of its own, recorded as packed when w is: a quantized w's row-packed
 * groups (lo and rows multiples of 16: fused_splits), a float w's rows. A
 * view of w's memory, until it is sharded. */
static tg_tensor *rows_of(tg_llm *m, tg_tensor *w, int64_t lo, int64_t rows) {
  const llm_packed *pk = llm_packed_of(m, w);
  tg_tensor *part;
  if (!pk) part = TG_GET(w, TG_SLICE(lo, lo + rows, 1));
  else {
    int64_t g0 = lo / TG_QUANT_PACK_ROWS, g1 = (lo + rows) / TG_QUANT_PACK_ROWS;
    tg_tensor *sc = TG_GET(pk->row_scales, TG_SLICE(g0, g1, 1)), *q = TG_GET(pk->row_quants, TG_SLICE(g0, g1, 1));
    int type_id = pk->type;
    part = sc && q ? tg_dequantize_rows(sc, q, type_id, TG_SHAPE(rows, tg_dim(w, 1))) : NULL;
    if (!part) return NULL;
    tensor_adopt(NULL, sc), tensor_adopt(NULL, q);
    llm_add_packed(m, (llm_packed){ .w = part, .type = type_id, .row_scales = sc, .row_quants = q }, NULL);   /* (pk moves) */
  }
  if (part) tensor_adopt(NULL, part);
  return part;
}

/* A fused matrix (*fused, n parts of rows[i] rows) replaced by its parts
 * in *parts[i], each then sharded as its own kind is: each device gets
 * its heads' q rows and its kv heads' k and v rows (its half of gate and
 * of up), and the forward takes the parts' path. The fused matrix (and
 * its packed record) goes. Where a part does not split (fused_splits) the
 * fused matrix stays, its part of the layer whole on every device. */
static int unfuse(tg_llm *m, llm_layer *l, llm_tp_part part, tg_tensor **fused, tg_tensor **const *parts, const int64_t *rows, int n,
                  const char *name) {
  if (!fused_splits(m, *fused, rows, n, name)) {
    l->tp_whole |= part;
    return 0;
  }
  int64_t lo = 0;
  for (int i = 0; i < n; lo += rows[i], i++)
    if (!(*parts[i] = rows_of(m, *fused, lo, rows[i]))) return -1;
  for (int i = 0; i < m->npacked; i++)
    if (m->packed[i].w == *fused) {
      llm_packed *pk = &m->packed[i];
      tg_free(pk->raw), tg_free(pk->row_scales), tg_free(pk->row_quants), tg_free(pk->panels);
      *pk = m->packed[--m->npacked];
      break;
    }
  tg_free(*fused);
  *fused = NULL;
  return 0;
}

/* Layer l's q|k|v and gate|up, when the file fuses them (Phi-3), as
 * separate matrices. */
static int unfuse_layer(tg_llm *m, int i) {
  const tg_llm_config *c = &m->cfg;
  llm_layer *l = &m->layers[i];
  char name[96];
  int rc = 0;
  if (l->wqkv) {
    int64_t rows[3] = { (int64_t)c->n_heads * c->head_dim, (int64_t)c->n_kv_heads * c->head_dim, (int64_t)c->n_kv_heads * c->head_dim_v };
    snprintf(name, sizeof name, "blk.%d.%s", i, llm_tensors[LT_QKV].name);
    rc = unfuse(m, l, LLM_TP_ATTN, &l->wqkv, (tg_tensor **const[]){ &l->wq, &l->wk, &l->wv }, rows, 3, name);
  }
  if (rc == 0 && l->w_gate_up) {
    snprintf(name, sizeof name, "blk.%d.%s", i, llm_tensors[LT_GATE_UP].name);
    rc = unfuse(m, l, LLM_TP_FFN, &l->w_gate_up, (tg_tensor **const[]){ &l->w_gate, &l->w_up }, (int64_t[]){ c->ffn_dim, c->ffn_dim }, 2, name);
  }
  return rc;
}

/* Layer i's parts that run whole on every device (l->tp_whole): those with
 * a matrix that does not split, a fused one (unfuse_layer), a delta-net's
 * (reorder_gdn), or experts that stay whole (experts_split). */
static int plan_layer(tg_llm *m, int i) {
  llm_layer *l = &m->layers[i];
  l->tp_whole = 0;
  int rc = unfuse_layer(m, i);
  for (int id = 0; id < LT_COUNT && rc == 0; id++) {
    llm_tp_part part = layer_part((llm_tensor)id);
    tg_tensor **slot = llm_layer_slot(l, (llm_tensor)id);
    if (!part || part == LLM_TP_EXPERTS || (l->tp_whole & part) || !slot || !*slot || shard_is_multi_name((*slot)->device)) continue;
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", i, llm_tensors[id].name ? llm_tensors[id].name : "cache");
    if (!matrix_splits(m, *slot, layer_axis((llm_tensor)id), name)) l->tp_whole |= part;
  }
  if (rc == 0 && l->recurrent) rc = reorder_gdn(m, l, i);
  if (experts_split(m, l) == EXPERTS_WHOLE) l->tp_whole |= LLM_TP_EXPERTS;
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
    rc = plan_layer(m, i);
    experts_cut cut = experts_split(m, &m->layers[i]);
    for (int id = 0; id < LT_COUNT && rc == 0; id++) {
      char name[96];
      snprintf(name, sizeof name, "blk.%d.%s", i, llm_tensors[id].name ? llm_tensors[id].name : "cache");
      bool whole = (m->layers[i].tp_whole & layer_part((llm_tensor)id)) != 0;
      int axis = whole ? -1 : id == LT_DOWN_EXPS && cut == EXPERTS_DOWN_ROWS ? 1 : layer_axis((llm_tensor)id);
      rc = shard_slot(m, llm_layer_slot(&m->layers[i], (llm_tensor)id), axis, name);
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

tg_tensor *llm_tp_gather(const tg_llm *m, tg_tensor *t) {
  return m->n_tp > 1 && t && tg_shard_axis(t) >= 0 ? tg_shard(t, m->tp_devices, m->n_tp, -1) : t;
}

tg_tensor *llm_tp_output(const tg_llm *m, tg_tensor *t) {
  return m->n_tp > 1 && t ? tg_to(t, m->tp_devices[0]) : t;
}
