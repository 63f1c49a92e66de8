/* test_llm_tp.c: tensor parallel over CPU:0 and CPU:1 for quantized files
 * (tg_llm_opts.devices; src/llm/llm_tp.c): the weights split in their
 * row-packed form (q/k/v and gate/up by rows in groups of 16, wo and down
 * by columns at whole blocks, the blocks' several scales of Q4_K, Q5_K,
 * Q2_K, Q4_1 and Q5_1 cut plane by plane) give one device's logits within
 * float rounding and its greedy tokens (see check_type for how close);
 * one device is itself checked
 * against numpy's and llama.cpp's goldens (test_llm.c, test_quant*.c).
 * The files are random llamas as llama-quantize types them
 * (llama_init_write: the mixtures users download) or pure types
 * (quant_model --pure), 512 wide so that a column half is whole 256-value
 * super-blocks. */
#include "test.h"
#include <unistd.h>
#include "io/gguf_llama_init.h"
#include "io/ggml_types.h"
#include "llm/llm.h"
#include "llm_tp_test.h"
#include "quant/quantize.h"
#include "runtime/buffer.h"
#include "tensor/tensor.h"
#include "tg_dist.h"

#define TP2 "CPU:0,CPU:1"
static const int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 };

/* A random llama of file type ftype at path (pure: every matrix of the
 * type, through an F32 file and quant_model); with experts > 0 a Mixtral
 * one (experts of ffn rows, the top 2 chosen). */
static bool write_llama_ffn(const char *path, const char *ftype, bool pure, int experts, int ffn) {
  llama_init_params p = llama_init_defaults();
  p.dim = 512; p.layers = 2; p.heads = 8; p.kv_heads = 4; p.ffn = ffn; p.vocab = 300; p.ctx = 128; p.seed = 11;
  p.experts = experts; p.experts_used = experts ? 2 : 0;
  p.ft = quant_ftype_by_name(pure ? "F32" : ftype);
  if (!p.ft || llama_init_write(path, &p, NULL) < 0) return false;
  if (!pure) return true;
  char f32[4096];
  if (snprintf(f32, sizeof f32, "%s.f32", path) >= (int)sizeof f32) return false;
  bool ok = rename(path, f32) == 0 && quant_model(f32, path, quant_ftype_by_name(ftype), &(quant_model_opts){ .pure = true }) == 0;
  unlink(f32);
  return ok;
}
static bool write_llama(const char *path, const char *ftype, bool pure, int experts) { return write_llama_ffn(path, ftype, pure, experts, 512); }

/* w's packed form split on W's rows (axis 0: scales and quants on their
 * 16-row groups) or columns (axis 1: the quants on their blocks, the
 * scales (g, S, nb, 16) on the blocks of each plane). */
static void check_split(const tg_llm *m, tg_tensor *w, int axis, const char *what) {
  const llm_packed *pk = llm_packed_of(m, w);
  CHECK_MSG(pk && pk->row_quants, "%s: no row-packed form", what);
  if (!pk || !pk->row_quants) return;
  int sa = tg_shard_axis(pk->row_scales), qa = tg_shard_axis(pk->row_quants);
  CHECK_MSG(qa == axis && sa == (axis ? 2 : 0) && tg_ndim(pk->row_scales) == 4, "%s (%s): quants split on %d, scales on %d of %d-D", what,
            ggml_type_info((uint32_t)pk->type)->name, qa, sa, tg_ndim(pk->row_scales));
}

int64_t tp_decode_biggest_copy(tg_llm *m, int *entries) {
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  int32_t tok = 3;
  tg_tensor *out = llm_bind_chunk(m, 1) == 0 ? llm_forward(m, tg_from_data(&tok, TG_SHAPE(1), TG_I32)) : NULL;
  static tg_schedule_entry e[2048];
  int n = out ? tg_schedule_list(&out, 1, e, 2048) : -1;
  int64_t biggest = n > 0 ? 0 : -1;
  for (int i = 0; i < n && i < 2048; i++) if (e[i].copy && e[i].bytes > biggest) biggest = e[i].bytes;
  tg_scope_end();
  tensor_device_end(prev);
  *entries = n;
  return biggest;
}

/* A decode step of m moves between the devices the allreduces' rows (dim
 * floats; the schedule counts the bytes read and written) and small
 * tables, never a weight. */
static void check_decode_copies(tg_llm *m, const char *what) {
  int n = 0;
  int64_t biggest = tp_decode_biggest_copy(m, &n);
  CHECK_MSG(n > 0 && biggest == 2 * (int64_t)sizeof(float) * m->cfg.dim, "%s: %d entries, a copy of %lld bytes", what, n, (long long)biggest);
}

int tp_models_same(tg_llm *one, tg_llm *tp, const int32_t *prompt, int n, int steps, double rtol, double atol, const char *what) {
  int V = one->cfg.n_vocab, compared = 0;
  float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
  CHECK_OK(tg_llm_eval(one, prompt, n, a) == 0);
  CHECK_OK(tg_llm_eval(tp, prompt, n, b) == 0);
  for (int i = 0; i < steps; i++) {
    int ba = 0, bb = 0;
    for (int j = 1; j < V; j++) { if (a[j] > a[ba]) ba = j; if (b[j] > b[bb]) bb = j; }
    int second = ba == 0 ? 1 : 0;
    for (int j = 0; j < V; j++) if (j != ba && a[j] > a[second]) second = j;
    char step[96];
    snprintf(step, sizeof step, "%s step %d", what, i);
    test_close_f32(b, a, (size_t)V, rtol, atol, step);
    if (a[ba] - a[second] > 2 * atol) {
      compared++;
      CHECK_MSG(ba == bb, "%s: token %d on two devices, %d on one", step, bb, ba);
    }
    int32_t t = ba;
    CHECK_OK(tg_llm_eval(one, &t, 1, a) == 0);
    CHECK_OK(tg_llm_eval(tp, &t, 1, b) == 0);
  }
  free(a); free(b);
  return compared;
}

int tp_same_as_one(const char *path, int steps, double atol, const char *what) {
  tg_llm *one = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32" });
  tg_llm *tp = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(one && tp, "%s: load: %s", what, tg_error());
  int compared = one && tp ? tp_models_same(one, tp, prompt, 7, steps, 0, atol, what) : 0;
  tg_llm_free(one); tg_llm_free(tp);
  return compared;
}

/* The file at path on two devices against one: its integer dot products
 * within 4e-2, and with float_too the float matvecs within 1e-5 (ties
 * aside, the same tokens); then the file goes. */
static void same_as_one_then_remove(const char *path, const char *ftype, bool float_too) {
  tp_same_as_one(path, 8, 4e-2, ftype);
  if (float_too) {
    setenv("TG_LLM_FLOAT_MATVEC", "1", 1);
    char what[64];
    snprintf(what, sizeof what, "%s in float", ftype);
    int compared = tp_same_as_one(path, 8, 1e-5, what);
    CHECK_MSG(compared >= 6, "%s: only %d of 8 steps had a clear best token", what, compared);
    unsetenv("TG_LLM_FLOAT_MATVEC");
  }
  unlink(path);
}

/* Each file type's mixture (as `tg llm-init --type` and llama-quantize
 * make it) on two devices: every matrix split, q by rows and wo and down
 * by columns, whatever type each got (Q4_K_M: Q4_K, and Q6_K for a layer's
 * down; Q3_K_M: Q3_K rows, Q4_K columns; Q2_K: Q2_K rows, Q3_K columns);
 * pure Q2_K and Q4_1 split their two-scale blocks by columns too.
 *
 * Decoding quantizes each activation to 8 bits (Q8_K, Q8_1: llama.cpp's
 * integer dot products). The column splits' block sums add in another
 * order on two devices, so an activation 1 ulp apart now and then rounds
 * to the neighbouring integer, and in these random models (weights and
 * embeddings of std 0.02, a residual stream as small) that one step moves
 * the logits by up to 2e-2 from there on (pure Q4_1 at the 9th position,
 * Q6_K at the 4th with an f32 cache); the same files with the weights
 * multiplied in float (TG_LLM_FLOAT_MATVEC, no activation rounding) agree
 * within 1e-6. So: the integer path within 4e-2 (a wrong split is off by
 * the logits' own size, ~0.5; greedy tokens compared where the margin is
 * over 8e-2), the float path within 1e-5 and the same token at every
 * step with a margin over 2e-5 (at least 6 of 8) for Q4_K_M,
 * and tg_quant_matmul_rows's split of every type within float rounding
 * (test_shard_quant.c). */
static void check_type(const char *ftype, bool pure, int want_wo_type, bool float_too) {
  char path[96];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_%s_%d.gguf", ftype, (int)getpid());
  CHECK_MSG(write_llama(path, ftype, pure, 0), "%s: %s", ftype, tg_error());
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "%s: load: %s", ftype, tg_error());
  if (m) {
    const llm_packed *wo = llm_packed_of(m, m->layers[0].wo);
    CHECK_MSG(wo && wo->type == want_wo_type, "%s: wo is %s", ftype, wo ? ggml_type_info((uint32_t)wo->type)->name : "not quantized");
    for (int l = 0; l < m->cfg.n_layers; l++) {
      llm_layer *y = &m->layers[l];
      char what[64];
      snprintf(what, sizeof what, "%s blk.%d q", ftype, l); check_split(m, y->wq, 0, what);
      snprintf(what, sizeof what, "%s blk.%d up", ftype, l); check_split(m, y->w_up, 0, what);
      snprintf(what, sizeof what, "%s blk.%d wo", ftype, l); check_split(m, y->wo, 1, what);
      snprintf(what, sizeof what, "%s blk.%d down", ftype, l); check_split(m, y->w_down, 1, what);
    }
    check_decode_copies(m, ftype);
    tg_llm_free(m);
  }
  same_as_one_then_remove(path, ftype, float_too);
}

TEST(llm_tp_q4_k_m) { check_type("Q4_K_M", false, GGML_TYPE_Q4_K, true); }
TEST(llm_tp_q5_k_m) { check_type("Q5_K_M", false, GGML_TYPE_Q5_K, false); }
TEST(llm_tp_q6_k) { check_type("Q6_K", false, GGML_TYPE_Q6_K, false); }
TEST(llm_tp_q3_k_m) { check_type("Q3_K_M", false, GGML_TYPE_Q4_K, false); }
TEST(llm_tp_q2_k) { check_type("Q2_K", false, GGML_TYPE_Q3_K, false); }
TEST(llm_tp_iq4_xs) { check_type("IQ4_XS", false, GGML_TYPE_IQ4_XS, false); }
TEST(llm_tp_q2_k_pure) { check_type("Q2_K", true, GGML_TYPE_Q2_K, false); }
TEST(llm_tp_q4_1_pure) { check_type("Q4_1", true, GGML_TYPE_Q4_1, false); }

/* The bytes of part i of sharded tensor t (its buffer), and its device. */
static int64_t part_bytes(const tg_tensor *t, int i, const char **dev) {
  const uop *u = t->u;
  if (u->op != OP_MULTI || i >= u->nsrc) return -1;
  for (u = u->src[i]; u->op != OP_BUFFER && u->nsrc; u = u->src[0]) {}
  if (u->op != OP_BUFFER) return -1;
  const tg_buffer *b = u->arg.p;
  *dev = b->dev->name;
  return (int64_t)b->nbytes;
}

/* Packed tensor t (row_scales or row_quants of an expert) sharded on
 * axis, each device holding half of its bytes. */
static void check_half(const tg_tensor *t, int axis, const char *what) {
  const char *d0 = NULL, *d1 = NULL;
  int64_t whole = tg_numel(t) * (int64_t)tg_dtype_size(tg_dtype_of(t)), b0 = part_bytes(t, 0, &d0), b1 = part_bytes(t, 1, &d1);
  CHECK_MSG(tg_shard_axis(t) == axis && b0 * 2 == whole && b1 * 2 == whole && d0 && d1 && strcmp(d0, d1),
            "%s: sharded on %d (want %d), parts of %lld and %lld bytes of %lld", what, tg_shard_axis(t), axis, (long long)b0, (long long)b1,
            (long long)whole);
}

/* Quantized experts split per expert (a Mixtral llama of `tg llm-init
 * --experts 4`, experts of 512 rows, the top 2 chosen): gate and up by
 * every expert's 16-row groups (the packed (E * F, K) matrix viewed as (E,
 * F/16, ...), on axis 1), down by its blocks (the packed matrix's columns,
 * the scales plane by plane), so each device holds half of every expert's
 * bytes, as one device would pack experts (E, F/2, K), and a decode step
 * moves only the allreduce of the chosen experts' outputs (2 x dim floats,
 * read and written: at most 2 rows' copies), never an expert. On one
 * device the experts are multiplied as before (the same kernels); the two
 * devices give its logits within the rounding of the column split's two
 * halves and its greedy tokens (as check_type), and in float
 * (TG_LLM_FLOAT_MATVEC: the experts' float values, taken per part) within
 * 1e-5. One device is itself checked against numpy's goldens for the MoE
 * families (test_llm.c: llm_tiny_qwen3moe ...) and its quantized expert
 * matmul against ggml's numbers (test_quant_matmul*.c); this compares the
 * split with it. Q4_K_M gives layer 1's down Q6_K (its experts split as
 * the others: every row-packed type has an expert matmul). */
static void check_moe_ffn(const char *ftype, bool pure, bool float_too, int ffn) {
  char path[96];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_moe_%s_%d.gguf", ftype, (int)getpid());
  CHECK_MSG(write_llama_ffn(path, ftype, pure, 4, ffn), "%s: %s", ftype, tg_error());
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "%s: load: %s", ftype, tg_error());
  if (m) {
    CHECK_EQ_INT(m->cfg.n_experts, 4);
    for (int l = 0; l < m->cfg.n_layers; l++) {
      tg_tensor *w[3] = { m->layers[l].gate_exps, m->layers[l].up_exps, m->layers[l].down_exps };
      for (int i = 0; i < 3; i++) {
        const llm_packed *pk = llm_packed_of(m, w[i]);
        char what[96];
        snprintf(what, sizeof what, "%s blk.%d %s", ftype, l, i == 0 ? "gate" : i == 1 ? "up" : "down");
        CHECK_MSG(pk && pk->row_quants, "%s: no row-packed form", what);
        if (l == 1 && i == 2 && pk && !strcmp(ftype, "Q4_K_M")) CHECK_EQ_INT(pk->type, TG_GGML_Q6_K);   /* Q4_K_M's mix */
        if (!pk || !pk->row_quants) continue;
        /* down by columns when each device's are whole blocks, else by rows */
        bool by_rows = i < 2 || (ffn / ggml_type_info((uint32_t)pk->type)->block_size) % 2;
        CHECK_EQ_INT(tg_shard_axis(w[i]), by_rows ? 1 : 2);
        check_half(pk->row_quants, 1, what);
        check_half(pk->row_scales, by_rows ? 1 : 2, what);
      }
    }
    /* a decode step copies the allreduce (or gathers) of the chosen
     * experts' outputs, never an expert */
    int n = 0;
    int64_t biggest = tp_decode_biggest_copy(m, &n), row = 2 * (int64_t)sizeof(float) * m->cfg.dim;
    CHECK_MSG(n > 0 && biggest >= row / 2 && biggest <= m->cfg.n_experts_used * row, "%s: %d entries, a copy of %lld bytes", ftype, n, (long long)biggest);
    tg_llm_free(m);
  }
  same_as_one_then_remove(path, ftype, float_too);
}
static void check_moe(const char *ftype, bool pure, bool float_too) { check_moe_ffn(ftype, pure, float_too, 512); }

TEST(llm_tp_moe_q8_0) { check_moe("Q8_0", true, true); }
TEST(llm_tp_moe_q4_k_m) { check_moe("Q4_K_M", false, false); }
/* Experts of 256 rows: down's 256 columns are one Q4_K block, which two
 * devices cannot share (Qwen3-30B-A3B's 768, three blocks, over 2): down
 * splits by its rows, each device reading all of the chosen experts'
 * activations (gathered) and computing half of their outputs (gathered
 * after the sum), the same numbers as one device's. */
TEST(llm_tp_moe_down_rows) { check_moe_ffn("Q4_K", true, true, 256); }
