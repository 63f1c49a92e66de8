/* test_llm_tp_arch.c: tensor parallel (CPU:0,CPU:1) for DeepSeek's
 * multi-head latent attention and Qwen3.5's gated delta-net layers
 * (src/llm/llm_tp.c): the logits of a prompt and of 8 greedy steps as one
 * device's within float rounding, the same greedy tokens, each device
 * holding its slice of the split weights, and a decode step that moves
 * only the allreduces' rows between the devices. One device is itself
 * checked against numpy's and llama.cpp's goldens (test_llm.c: llm_tiny_*,
 * llm_llamacpp_*), as are these files sharded (test_llm.c: llm_tp_*). */
#include "test.h"
#include "llm/llm.h"
#include "llm_tp_test.h"
#include "runtime/buffer.h"
#include <unistd.h>
#include "io/ggml_types.h"
#include "quant/quantize.h"
#include "tensor/tensor.h"
#include "tg_dist.h"

#define TP2 "CPU:0,CPU:1"

/* t is split on axis over CPU and CPU:1, each part (a realized buffer,
 * maybe under views) full / 2 long there and living on its device. */
static void check_parts(tg_tensor *t, int axis, const char *what) {
  CHECK_MSG(t && tg_shard_axis(t) == axis, "%s: sharded on %d, want %d", what, t ? tg_shard_axis(t) : -3, axis);
  if (!t || t->u->op != OP_MULTI) { CHECK_MSG(false, "%s: not a MULTI of parts", what); return; }
  CHECK_EQ_INT(t->u->nsrc, 2);
  static const char *const devs[] = { "CPU", "CPU:1" };
  for (int i = 0; i < t->u->nsrc && i < 2; i++) {
    uop *p = t->u->src[i];
    CHECK_MSG(p->shape[axis] * 2 == t->u->shape[axis], "%s part %d: %lld of %lld", what, i, (long long)p->shape[axis], (long long)t->u->shape[axis]);
    while (uop_is_movement(p->op)) p = p->src[0];
    CHECK_MSG(p->op == OP_BUFFER && !strcmp(((tg_buffer *)p->arg.p)->dev->name, devs[i]), "%s part %d: not a buffer on %s", what, i, devs[i]);
  }
}

/* A decode step copies between the devices the allreduces' rows (dim
 * floats; with experts, the chosen ones' and the shared expert's outputs:
 * at most K + 1 rows), never a weight, a cache or a state. */
static void check_decode_copies(tg_llm *m, const char *what) {
  int n = 0;
  int64_t biggest = tp_decode_biggest_copy(m, &n), row = 2 * (int64_t)sizeof(float) * m->cfg.dim;
  int64_t most = (m->cfg.n_experts > 0 ? m->cfg.n_experts_used + 1 : 1) * row;
  CHECK_MSG(n > 0 && biggest >= row && biggest <= most, "%s: %d entries, a copy of %lld bytes (rows of %lld)", what, n, (long long)biggest,
            (long long)row);
}

/* MLA: q_b and kv_b by rows (whole heads), the output by columns, the
 * latent down-projections and their norms replicated, the cache (tg
 * keeps each head's decompressed keys and values) by heads. */
TEST(llm_tp_mla_same_as_one) {
  const char *path = "goldens/llm_deepseek2.gguf";
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (m) {
    llm_layer *l = &m->layers[1];
    check_parts(l->q_b, 0, "q_b"); check_parts(l->kv_b, 0, "kv_b"); check_parts(l->wo, 1, "wo");
    check_parts(l->k_cache, 1, "k cache"); check_parts(l->v_cache, 1, "v cache");
    CHECK_EQ_INT(tg_shard_axis(l->q_a), -1); CHECK_EQ_INT(tg_shard_axis(l->kv_a), -1);
    CHECK_EQ_INT(tg_shard_axis(l->q_a_norm), -1); CHECK_EQ_INT(tg_shard_axis(l->kv_a_norm), -1);
    check_decode_copies(m, "deepseek2");
  }
  tg_llm_free(m);
  int compared = tp_same_as_one(path, 8, 1e-5, "deepseek2");
  CHECK_MSG(compared >= 6, "deepseek2: only %d of 8 steps had a clear best token", compared);
  tp_same_as_one("goldens/llm_deepseek2_yarn.gguf", 8, 1e-5, "deepseek2 with YaRN");
}

/* The rows (axis 0) or columns of `one`'s w that device d of n gets
 * under the delta-net's device order: for each piece (start, len) in
 * units of `unit`, in order. */
typedef struct { int64_t start, len; } span;
static void expect_order(const float *one, float *want, int64_t rows, int64_t cols, int axis, const span *sp, int nsp, int64_t unit) {
  int64_t at = 0;
  for (int i = 0; i < nsp; i++)
    for (int64_t k = sp[i].start * unit; k < (sp[i].start + sp[i].len) * unit; k++, at++)
      for (int64_t j = 0; j < (axis ? rows : cols); j++) {
        if (axis == 0) want[at * cols + j] = one[k * cols + j];
        else want[j * cols + at] = one[j * cols + k];
      }
}

/* The parts of weight w: its own (a float matrix), or its row-packed
 * form's quants (a quantized one: split on the same axis). */
static void check_weight_parts(const tg_llm *m, tg_tensor *w, int axis, const char *what) {
  const llm_packed *pk = llm_packed_of(m, w);
  CHECK_MSG(!pk || pk->row_quants, "%s: quantized without a row-packed form", what);
  check_parts(pk && pk->row_quants ? pk->row_quants : w, axis, what);
}

/* Gated delta-net with 2 k heads and 4 v heads (v head h reads k head
 * h % 2): each device takes k head d and v heads d and d + 2, so
 * ssm_qkv's rows are q_d | k_d | v_d | v_(d+2) per device, z's rows and
 * the out-projection's columns heads d, d + 2; the conv by the same
 * channels, the states by heads; the gates' small weights (beta, alpha,
 * dt, a) whole on each. The weights' values against the file's one-device
 * rows in that order (exact: whole rows, or whole blocks of a quantized
 * form, move); a decode step's copies. */
static void check_gdn_layout(const char *path, const char *what) {
  tg_llm *one = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32" });
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(one && m, "%s: load: %s", what, tg_error());
  if (one && m) {
    llm_layer *l = &m->layers[0], *o = &one->layers[0];
    CHECK(l->recurrent && m->gdn.k_heads == 2 && m->gdn.v_heads == 4);
    check_weight_parts(m, l->ssm_qkv, 0, "ssm_qkv"); check_weight_parts(m, l->ssm_z, 0, "ssm_z");
    check_weight_parts(m, l->ssm_conv1d, 0, "ssm_conv1d"); check_weight_parts(m, l->ssm_out, 1, "ssm_out");
    tg_tensor *whole[] = { l->ssm_beta, l->ssm_alpha, l->ssm_dt, l->ssm_a, l->ssm_norm };
    for (int i = 0; i < 5; i++) CHECK_MSG(tg_shard_axis(whole[i]) == -1, "%s: gate tensor %d is not whole on each device", what, i);
    check_parts(l->conv_state, 2, "conv state"); check_parts(l->ssm_state, 1, "recurrent state");
    check_weight_parts(m, m->layers[1].wq, 0, "attention layer's q");
    int64_t D = m->gdn.head_k;   /* head_v too */
    /* channels: q (2 D), k (2 D), v (4 D); heads: v heads */
    const span chans[] = { { 0, D }, { 2 * D, D }, { 4 * D, D }, { 6 * D, D },   /* device 0: q0 k0 v0 v2 */
                           { D, D }, { 3 * D, D }, { 5 * D, D }, { 7 * D, D } }; /* device 1: q1 k1 v1 v3 */
    const span heads[] = { { 0, 1 }, { 2, 1 }, { 1, 1 }, { 3, 1 } };
    struct { tg_tensor *tp, *one; int axis; const span *sp; int nsp; int64_t unit; const char *what; } w[] = {
      { l->ssm_qkv, o->ssm_qkv, 0, chans, 8, 1, "ssm_qkv" }, { l->ssm_conv1d, o->ssm_conv1d, 0, chans, 8, 1, "ssm_conv1d" },
      { l->ssm_z, o->ssm_z, 0, heads, 4, D, "ssm_z" }, { l->ssm_out, o->ssm_out, 1, heads, 4, D, "ssm_out" },
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
      tg_shape s = tg_shape_of(w[i].one);
      int64_t rows = s.d[0], cols = s.ndim > 1 ? s.d[1] : 1, numel = rows * cols;
      float *a = malloc(sizeof(float) * (size_t)numel), *b = malloc(sizeof(float) * (size_t)numel), *want = malloc(sizeof(float) * (size_t)numel);
      CHECK_OK(tg_data(tg_cast(w[i].one, TG_F32), a, sizeof(float) * (size_t)numel) == 0);
      CHECK_OK(tg_data(tg_cast(w[i].tp, TG_F32), b, sizeof(float) * (size_t)numel) == 0);
      expect_order(a, want, rows, cols, w[i].axis, w[i].sp, w[i].nsp, w[i].unit);
      char name[96];
      snprintf(name, sizeof name, "%s %s", what, w[i].what);
      test_close_f32(b, want, (size_t)numel, 0, 0, name);
      free(a); free(b); free(want);
    }
    check_decode_copies(m, what);
  }
  tg_llm_free(one); tg_llm_free(m);
}

/* The logits as one device's (the full-attention layers, gated with
 * per-head norms, as dense attention): Qwen3.5 (head size 8) and a wider
 * one (head size 32); Qwen3.5 MoE against numpy's goldens in test_llm.c
 * (llm_tp_qwen35_delta_net). */
TEST(llm_tp_gdn_same_as_one) {
  check_gdn_layout("goldens/llm_qwen35.gguf", "qwen35");
  check_gdn_layout("goldens/llm_qwen35_tp.gguf", "qwen35_tp");
  int compared = tp_same_as_one("goldens/llm_qwen35.gguf", 8, 1e-5, "qwen35");
  CHECK_MSG(compared >= 6, "qwen35: only %d of 8 steps had a clear best token", compared);
  compared = tp_same_as_one("goldens/llm_qwen35_tp.gguf", 8, 1e-5, "qwen35_tp");
  CHECK_MSG(compared >= 6, "qwen35_tp: only %d of 8 steps had a clear best token", compared);
}

/* Its Q8_0 form: q|k|v's, z's and the attention's rows reordered and split
 * by whole groups of 16 rows, the out-projection's columns by whole
 * blocks, beta and alpha (4 rows: no row-packed form) whole on each
 * device (their values exact, check_gdn_layout). The logits within
 * test_llm_tp.c's tolerance for integer dot products (4e-2: a column
 * split's block sums add in another order, and an activation 1 ulp apart
 * may round to the neighbouring 8-bit integer). Where a head split would
 * cut a row group (the head-size-8 file) the delta-net layers run whole on
 * each device, the same logits. */
TEST(llm_tp_gdn_q8_0) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_gdn_%d.gguf", (int)getpid());
  CHECK_OK(quant_model("goldens/llm_qwen35_tp.gguf", path, quant_ftype_by_name("Q8_0"), &(quant_model_opts){ .pure = true }) == 0);
  check_gdn_layout(path, "qwen35_tp Q8_0");
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  if (m) {
    const llm_packed *pk = llm_packed_of(m, m->layers[0].ssm_qkv), *pb = llm_packed_of(m, m->layers[0].ssm_beta);
    CHECK_MSG(pk && pk->type == GGML_TYPE_Q8_0 && pb && pb->type == GGML_TYPE_Q8_0, "ssm_qkv and ssm_beta are not Q8_0");
  }
  tg_llm_free(m);
  tp_same_as_one(path, 4, 4e-2, "qwen35_tp Q8_0");
  /* head size 8: a device's q|k|v rows come in pieces of 8, not whole
   * groups of 16, so its delta-net layers run whole on each device (every
   * tensor and state replicated) and its attention layers split */
  CHECK_OK(quant_model("goldens/llm_qwen35.gguf", path, quant_ftype_by_name("Q8_0"), &(quant_model_opts){ .pure = true }) == 0);
  m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m, "qwen35 Q8_0 on 2 devices: %s", tg_error());
  for (int i = 0; m && i < m->cfg.n_layers; i++) {
    llm_layer *l = &m->layers[i];
    if (!l->recurrent) {
      check_weight_parts(m, l->wq, 0, "qwen35 Q8_0 attention layer's q");
      continue;
    }
    CHECK_MSG(l->tp_whole, "layer %d: a delta-net layer that cannot split is not whole", i);
    tg_tensor *all[] = { l->ssm_qkv, l->ssm_z, l->ssm_conv1d, l->ssm_out, l->ssm_beta, l->ssm_alpha, l->conv_state, l->ssm_state };
    for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
      CHECK_MSG(tg_shard_axis(all[j]) == -1, "layer %d: delta-net tensor %zu is not whole on each device", i, j);
  }
  tg_llm_free(m);
  int compared = tp_same_as_one(path, 8, 4e-2, "qwen35 Q8_0, whole delta-net layers");
  CHECK_MSG(compared >= 4, "qwen35 Q8_0: only %d of 8 steps had a clear best token", compared);
  unlink(path);
}
