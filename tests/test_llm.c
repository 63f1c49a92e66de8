/* test_llm.c: the model runner against independent references: tiny random
 * models (tests/gen/gen_llm.py: numpy forward passes in float64) for dense
 * llama, qwen3moe, qwen2moe, deepseek2 (also with YaRN), gemma2, gemma3,
 * phi3, gpt-oss, glm4moe and a YaRN llama, with greedy decoding (and past
 * the sliding window's ring); and stories260K's greedy continuation as
 * llama.cpp prints it (../shared/testdata/README.md). */
#include "test.h"
#include "llm_tp_test.h"
#include <unistd.h>
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "llm/llm.h"
#include "quant/quantize.h"
#include "tensor/tensor.h"
#include "tg_dist.h"

/* While set (the llm_tp_* tests), the helpers below load their models
 * sharded over these devices (tg_llm_opts.devices). */
static const char *tp_devices;

/* The model's logits against the goldens (gen_llm.py: numpy in float32),
 * with its KV cache in cache_type; f16 rounds cached keys and values (a
 * relative 2^-11), which the tolerance then allows. */
static void check_model_with(const char *name, const char *device, const char *cache_type, double tol) {
  char path[256], lpath[256];
  snprintf(path, sizeof path, "goldens/llm_%s.gguf", name);
  snprintf(lpath, sizeof lpath, "goldens/llm_%s.logits.bin", name);
  size_t n;
  float *want = test_read_file(lpath, &n);
  CHECK_MSG(want != NULL, "missing %s", lpath);
  if (!want) return;
  tg_llm_opts o = { 0 };
  o.device = device;
  o.cache_type = cache_type;
  o.devices = tp_devices;
  tg_llm *m = tg_llm_load(path, &o);
  CHECK_MSG(m != NULL, "load %s: %s", path, tg_error());
  if (!m) { free(want); return; }
  int V = tg_llm_config_of(m)->n_vocab;
  CHECK_EQ_INT(n, sizeof(float) * 4 * (size_t)V);
  float *got = malloc(sizeof(float) * (size_t)V);
  int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 }, next[] = { 30, 2, 41 };
  CHECK_OK(tg_llm_eval(m, prompt, 7, got) == 0);
  char what[64];
  snprintf(what, sizeof what, "%s prompt", name);
  test_close_f32(got, want, (size_t)V, tol, tol, what);
  for (int i = 0; i < 3; i++) {
    CHECK_OK(tg_llm_eval(m, &next[i], 1, got) == 0);
    snprintf(what, sizeof what, "%s token %d", name, i);
    test_close_f32(got, want + (size_t)(i + 1) * (size_t)V, (size_t)V, tol, tol, what);
  }
  /* rewinding and running the same tokens again gives the same logits */
  tg_llm_rewind(m, 7);
  CHECK_OK(tg_llm_eval(m, &next[0], 1, got) == 0);
  test_close_f32(got, want + V, (size_t)V, tol, tol, "after rewind");
  CHECK_EQ_INT(tg_llm_n_past(m), 8);
  free(got);
  free(want);
  tg_llm_free(m);
}

static void check_model_on(const char *name, const char *device) { check_model_with(name, device, "f32", 1e-4); }
static void check_model(const char *name) { check_model_on(name, NULL); }

TEST(llm_tiny_llama) { check_model("llama"); }
TEST(llm_tiny_llama_f16_and_bf16_cache) {
  check_model_with("llama", NULL, NULL, 2e-3);   /* the default: f16 */
  check_model_with("llama", NULL, "bf16", 2e-2);
  CHECK(!tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .cache_type = "q9" }));
  CHECK_MSG(strstr(tg_error(), "unknown cache type 'q9'"), "%s", tg_error());
}
/* a q8_0 cache against a reference whose keys and values went through
 * gguf-py's Q8_0 (bit-exact with ggml): the same blocks, so the float32
 * tolerance; the f32 reference is farther off than that, so the blocks are
 * really there. A model whose head size is not a multiple of 32 is refused. */
TEST(llm_tiny_llama_q8_0_cache) {
  check_model_with("llama_q8kv", NULL, "q8_0", 1e-4);
  CHECK(!tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .cache_type = "q8_0" }));
  CHECK_MSG(strstr(tg_error(), "multiples of 32 (this model's keys: 8, values: 8)"), "%s", tg_error());
}
/* a model on another device than the default one: every tensor the model
 * makes (rope tables, caches, positions, token ids) goes to its device */
static bool has_cl(void) {
  tg_device_info info[32];
  int n = tg_devices(info, 32, NULL);
  bool cl = false;
  for (int i = 0; i < n && i < 32; i++) cl |= !strcmp(info[i].name, "CL");
  return cl;
}
TEST(llm_tiny_llama_on_cl_while_default_is_cpu) {
  if (!has_cl()) SKIP("no OpenCL device");
  const char *prev = tg_default_device();
  CHECK(tg_set_default_device("CPU") == 0);
  check_model_on("llama", "CL");
  tg_set_default_device(prev);
}
TEST(llm_tiny_qwen3moe) { check_model("qwen3moe"); }
TEST(llm_tiny_qwen2moe) { check_model("qwen2moe"); }
TEST(llm_tiny_deepseek2_mla) { check_model("deepseek2"); }
/* DeepSeek with YaRN and yarn_log_multiplier: unit-magnitude rope, the
 * magnitude squared in the scores' scale (llama.cpp's kq_scale) */
TEST(llm_tiny_deepseek2_yarn) { check_model("deepseek2_yarn"); }
/* Gemma 2: pre and post norms, GeGLU, scaled and tied embedding, softcaps,
 * every other layer sliding over 4 positions (the prompt's 7 and each next
 * token see only the last 4 there); Gemma 3: per-head q/k norms, 5 sliding
 * layers of 6 with their own rope base, unscaled, against the global
 * layers' base 1e6 and linear scaling */
TEST(llm_tiny_gemma2) { check_model("gemma2"); }
TEST(llm_tiny_gemma3) { check_model("gemma3"); }
TEST(llm_tiny_gemma3_f16_cache) { check_model_with("gemma3", NULL, NULL, 2e-3); }

/* Greedy decoding against gen_llm.py's greedy(): goldens/<golden>.logits.bin
 * holds the logits after the prompt and after each chosen token but the
 * last, <golden>.greedy.bin the tokens. tg's best token must be the
 * golden's at every step (the golden token is fed on, so one near tie
 * cannot cascade), its logits within tol. */
static tg_llm *check_greedy_with(const char *model, const char *golden, int n_ctx, const char *cache_type, const int32_t *prompt, int n_prompt, double tol) {
  char path[256], lpath[256], gpath[256];
  snprintf(path, sizeof path, "goldens/llm_%s.gguf", model);
  snprintf(lpath, sizeof lpath, "goldens/llm_%s.logits.bin", golden);
  snprintf(gpath, sizeof gpath, "goldens/llm_%s.greedy.bin", golden);
  size_t nl, ng;
  float *want = test_read_file(lpath, &nl);
  int32_t *toks = test_read_file(gpath, &ng);
  CHECK_MSG(want && toks, "missing %s or %s", lpath, gpath);
  tg_llm *m = want && toks ? tg_llm_load(path, &(tg_llm_opts){ .n_ctx = n_ctx, .cache_type = cache_type, .devices = tp_devices }) : NULL;
  CHECK_MSG(!want || !toks || m, "load %s: %s", path, tg_error());
  if (m) {
    int V = tg_llm_config_of(m)->n_vocab, n = (int)(ng / sizeof(int32_t));
    CHECK_EQ_INT(nl, sizeof(float) * (size_t)n * (size_t)V);
    float *got = malloc(sizeof(float) * (size_t)V);
    CHECK_OK(tg_llm_eval(m, prompt, n_prompt, got) == 0);
    for (int i = 0; i < n && (size_t)(i + 1) * V * sizeof(float) <= nl; i++) {
      char what[64];
      snprintf(what, sizeof what, "%s step %d", golden, i);
      test_close_f32(got, want + (size_t)i * V, (size_t)V, tol, tol, what);
      int best = 0;
      for (int j = 1; j < V; j++) if (got[j] > got[best]) best = j;
      CHECK_MSG(best == toks[i], "%s step %d: greedy token %d, want %d", golden, i, best, toks[i]);
      if (i + 1 < n) CHECK_OK(tg_llm_eval(m, &toks[i], 1, got) == 0);
    }
    free(got);
  }
  free(want);
  free(toks);
  return m;
}

static tg_llm *check_greedy(const char *model, const char *golden, int n_ctx, const int32_t *prompt, int n_prompt, double tol) {
  return check_greedy_with(model, golden, n_ctx, "f32", prompt, n_prompt, tol);
}

static const int32_t tiny_prompt[] = { 1, 5, 9, 13, 17, 21, 25 };

/* Every family's tiny file against llama.cpp itself (gen_llm_llamacpp.py:
 * llama.cpp 0c1e570's float32 CPU forward pass, f32 cache, q8_0 for
 * llama_q8kv): the logits after the prompt and after each of 31 greedy
 * tokens, and the 32 tokens. 64 positions: the 38 used pass the files'
 * context length of 32, as llama.cpp's (padded to 256) does; phi3 takes its
 * long factors both ways. */
static void check_llamacpp(const char *model, const char *cache_type, double tol) {
  char golden[64];
  snprintf(golden, sizeof golden, "%s_llamacpp", model);
  tg_llm_free(check_greedy_with(model, golden, 64, cache_type, tiny_prompt, 7, tol));
}
TEST(llm_llamacpp_llama) { check_llamacpp("llama", "f32", 1e-4); }
TEST(llm_llamacpp_yarn) { check_llamacpp("yarn", "f32", 1e-4); }
TEST(llm_llamacpp_qwen3moe) { check_llamacpp("qwen3moe", "f32", 1e-4); }
TEST(llm_llamacpp_qwen2moe) { check_llamacpp("qwen2moe", "f32", 1e-4); }
TEST(llm_llamacpp_deepseek2) { check_llamacpp("deepseek2", "f32", 1e-4); }
TEST(llm_llamacpp_deepseek2_yarn) { check_llamacpp("deepseek2_yarn", "f32", 1e-4); }
/* ggml's CPU gelu reads a table of f16 results at x rounded to f16: with
 * that rounding numpy matches these llama.cpp logits to 2e-5; tg's exact
 * gelu is within 1.4e-3 of them (and of numpy's exact one to 1e-4) */
TEST(llm_llamacpp_gemma2) { check_llamacpp("gemma2", "f32", 5e-3); }
TEST(llm_llamacpp_gemma3) { check_llamacpp("gemma3", "f32", 5e-3); }
TEST(llm_llamacpp_phi3) { check_llamacpp("phi3", "f32", 1e-4); }
/* llama.cpp multiplies MXFP4 experts by activations quantized to q8_0 (its
 * vec_dot_type), and so does tg (tg_quant_matmul_rows_experts; numpy's
 * golden the same way): within the float32 tolerance (0.09 off while tg
 * kept the activations in f32) */
TEST(llm_llamacpp_gptoss) { check_llamacpp("gptoss", "f32", 1e-4); }
TEST(llm_llamacpp_glm4moe) { check_llamacpp("glm4moe", "f32", 1e-4); }
TEST(llm_llamacpp_qwen35) { check_llamacpp("qwen35", "f32", 1e-4); }
TEST(llm_llamacpp_qwen35moe) { check_llamacpp("qwen35moe", "f32", 1e-4); }

/* Phi-3: fused attn_qkv and ffn_up (gate|up), partial rotary, LongRoPE:
 * a context past the original one uses the long factors, else the short
 * ones, both with the file's attention factor */
TEST(llm_tiny_phi3) { check_model("phi3"); tg_llm_free(check_greedy("phi3", "phi3_greedy", 0, tiny_prompt, 7, 1e-4)); }
/* the 64-wide Phi-3 that tensor parallel splits quantized (llm_tp_fused) */
TEST(llm_tiny_phi3_tp) { check_model("phi3_tp"); tg_llm_free(check_greedy("phi3_tp", "phi3_tp_greedy", 0, tiny_prompt, 7, 1e-4)); }
TEST(llm_tiny_phi3_short_factors) { tg_llm_free(check_greedy("phi3", "phi3_short", 16, tiny_prompt, 7, 1e-4)); }
/* YaRN: factor 4 over an original context of 64, the file's betas */
TEST(llm_tiny_yarn) { check_model("yarn"); tg_llm_free(check_greedy("yarn", "yarn_greedy", 0, tiny_prompt, 7, 1e-4)); }

/* Sliding layers past their window: with 128 positions the sliding layers'
 * caches are rings of window + 63 = 67 rows, the global ones hold all 128;
 * a 70-token prompt and 40 greedy tokens (to position 109, the rings
 * wrapped) match numpy, which keeps every key. A rewind that keeps the
 * window stays; one past what the rings still hold starts over, and the
 * prompt then gives the same logits. */
static void swa_ring(const char *model, bool full) {
  int32_t prompt[70];
  for (int i = 0; i < 70; i++) prompt[i] = (i * 7 + 3) % 53;
  char golden[64];
  snprintf(golden, sizeof golden, "%s_long", model);
  if (full) setenv("TG_LLM_SWA_FULL", "1", 1);
  tg_llm *m = check_greedy(model, golden, 128, prompt, 70, 1e-4);
  unsetenv("TG_LLM_SWA_FULL");
  if (!m) return;
  for (int i = 0; i < m->cfg.n_layers; i++) {
    int64_t rows = tg_dim(m->layers[i].k_cache, 0), want = m->layers[i].swa && !full ? 67 : 128;
    CHECK_MSG(rows == want, "%s layer %d (%s): %lld cache rows, want %lld", model, i, m->layers[i].swa ? "sliding" : "global", (long long)rows, (long long)want);
  }
  int n = tg_llm_n_past(m);
  CHECK_EQ_INT(n, 109);
  tg_llm_rewind(m, n - 2);
  CHECK_EQ_INT(tg_llm_n_past(m), n - 2);   /* the window before 107 is still there */
  tg_llm_rewind(m, 20);
  CHECK_EQ_INT(tg_llm_n_past(m), full ? 20 : 0);         /* positions 17..19 were overwritten by 84..86 */
  size_t nl;
  char lpath[128];
  snprintf(lpath, sizeof lpath, "goldens/llm_%s.logits.bin", golden);
  float *want = test_read_file(lpath, &nl), *got = malloc(sizeof(float) * (size_t)m->cfg.n_vocab);
  tg_llm_rewind(m, 0);
  CHECK_OK(tg_llm_eval(m, prompt, 70, got) == 0);
  if (want) test_close_f32(got, want, (size_t)m->cfg.n_vocab, 1e-4, 1e-4, "the prompt again");
  free(want); free(got);
  tg_llm_free(m);
}
TEST(llm_swa_ring_gemma2) { swa_ring("gemma2", false); }
TEST(llm_swa_ring_gemma3) { swa_ring("gemma3", false); }
TEST(llm_swa_full_cache_gemma2) { swa_ring("gemma2", true); }
TEST(llm_swa_ring_gptoss) { swa_ring("gptoss", false); }

/* gpt-oss: MXFP4 experts with biases, softmax over the chosen experts'
 * logits, the clamped SwiGLU, attention sinks, alternating sliding
 * window, YaRN */
/* GLM-4.5 MoE: biases, per-head q/k norms, partial rope, a dense layer,
 * sigmoid routing with an expert bias by the family's default, a shared
 * expert; its MTP layer (NaN weights) is not run */
TEST(llm_tiny_glm4moe) { check_model("glm4moe"); tg_llm_free(check_greedy("glm4moe", "glm4moe_greedy", 0, tiny_prompt, 7, 1e-4)); }
/* the same on OpenCL (MXFP4 decoding, sinks and routing in its kernels) */
TEST(llm_tiny_gptoss_on_cl) {
  if (!has_cl()) SKIP("no OpenCL device");
  check_model_on("gptoss", "CL");
}
TEST(llm_tiny_gptoss) { check_model("gptoss"); tg_llm_free(check_greedy("gptoss", "gptoss_greedy", 0, tiny_prompt, 7, 1e-4)); }

/* Qwen3.5 / 3.6: gated delta-net layers (their conv and recurrent states
 * carried from chunk to chunk and token to token) between gated attention
 * layers; the dense one with full_attention_interval 2 and a pair of
 * interleaved M-RoPE that stays still, the MoE one with the default
 * interval 4 and a gated shared expert. A rewind starts the states over
 * and runs the kept tokens again (check_model's rewind to 7). */
TEST(llm_tiny_qwen35) {
  check_model("qwen35");
  check_model("qwen35_tp");   /* wider heads (32), the file test_llm_tp_arch.c splits in Q8_0 */
  tg_llm_free(check_greedy("qwen35", "qwen35_greedy", 0, tiny_prompt, 7, 1e-4));
}
TEST(llm_tiny_qwen35moe) { check_model("qwen35moe"); tg_llm_free(check_greedy("qwen35moe", "qwen35moe_greedy", 0, tiny_prompt, 7, 1e-4)); }
TEST(llm_tiny_qwen35_on_cl) {
  if (!has_cl()) SKIP("no OpenCL device");
  check_model_on("qwen35", "CL");
}
/* 70 prompt tokens (chunks 64, 4, 1, 1) and 40 greedy ones: the states
 * over 110 positions; then a rewind to 20 (replayed from 0) and the rest
 * of the prompt give the prompt's logits again, as does tg_llm_eval_all's
 * last row from an empty cache. */
static void qwen35_long(const char *model) {
  int32_t prompt[70];
  for (int i = 0; i < 70; i++) prompt[i] = (i * 7 + 3) % 53;
  char golden[64], lpath[128];
  snprintf(golden, sizeof golden, "%s_long", model);
  tg_llm *m = check_greedy(model, golden, 128, prompt, 70, 1e-4);
  if (!m) return;
  CHECK_EQ_INT(tg_llm_n_past(m), 109);
  CHECK(m->layers[0].recurrent && !m->layers[0].k_cache && m->layers[0].ssm_state && m->layers[3].k_cache && !m->layers[3].recurrent);
  snprintf(lpath, sizeof lpath, "goldens/llm_%s.logits.bin", golden);
  size_t nl;
  int V = m->cfg.n_vocab;
  float *want = test_read_file(lpath, &nl), *got = malloc(sizeof(float) * (size_t)V * 70);
  tg_llm_rewind(m, 20);
  CHECK_EQ_INT(tg_llm_n_past(m), 20);
  CHECK_OK(tg_llm_eval(m, prompt + 20, 50, got) == 0);
  if (want) test_close_f32(got, want, (size_t)V, 1e-4, 1e-4, "after a rewind to 20");
  tg_llm_rewind(m, 0);
  CHECK_OK(tg_llm_eval_all(m, prompt, 70, got) == 0);
  if (want) test_close_f32(got + (size_t)69 * V, want, (size_t)V, 1e-4, 1e-4, "eval_all's last row");
  free(want); free(got);
  tg_llm_free(m);
}
/* Prompt chunks run the chunked delta rule (WY form, a triangular inverse
 * as matmuls); TG_LLM_GDN_RECURRENT=1 runs them token by token. Both give
 * every row of a 70-token prompt (pieces of 64 and 6) within 1e-4 of each
 * other (1.2e-5 apart here), and not bit for bit (two computations ran).
 * Against numpy's float64 recurrence: chunked 1.4e-5 (dense) and 3.7e-5
 * (MoE), token by token 1.1e-5 and 4.5e-5. */
static void qwen35_chunked(const char *model) {
  char path[128];
  snprintf(path, sizeof path, "goldens/llm_%s.gguf", model);
  int32_t prompt[70];
  for (int i = 0; i < 70; i++) prompt[i] = (i * 7 + 3) % 53;
  float *rows[2] = { NULL, NULL };
  int V = 0;
  for (int r = 0; r < 2; r++) {
    if (r == 1) setenv("TG_LLM_GDN_RECURRENT", "1", 1);
    tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .n_ctx = 128, .cache_type = "f32" });
    CHECK_MSG(m != NULL, "load %s: %s", path, tg_error());
    if (m) {   /* the setting is read as the graphs are built */
      V = m->cfg.n_vocab;
      rows[r] = malloc(sizeof(float) * 70 * (size_t)V);
      CHECK_OK(tg_llm_eval_all(m, prompt, 70, rows[r]) == 0);
      tg_llm_free(m);
    }
    unsetenv("TG_LLM_GDN_RECURRENT");
  }
  if (rows[0] && rows[1]) {
    test_close_f32(rows[0], rows[1], 70 * (size_t)V, 1e-4, 1e-4, "chunked against token by token");
    CHECK_MSG(memcmp(rows[0], rows[1], sizeof(float) * 70 * (size_t)V) != 0, "%s: the chunked form did not run", model);
  }
  free(rows[0]); free(rows[1]);
}
TEST(llm_qwen35_chunked_prefill) { qwen35_chunked("qwen35"); qwen35_chunked("qwen35moe"); }
TEST(llm_long_qwen35) { qwen35_long("qwen35"); }
TEST(llm_long_qwen35moe) { qwen35_long("qwen35moe"); }

/* src copied to dst without tensor drop, with metadata key set to value
 * of GGUF type t (drop and key may be NULL). */
static int copy_gguf_kv(const char *src, const char *dst, const char *drop, const char *key, uint32_t t, const void *value) {
  gguf_file *f = gguf_open(src);
  if (!f) return -1;
  gguf_writer *w = gguf_writer_new();
  int rc = 0;
  for (int i = 0; i < f->n_kv && rc == 0; i++) rc = gguf_w_copy_kv(w, &f->kv[i]);
  if (key && rc == 0) rc = t == GGUF_STRING ? gguf_w_set_str(w, key, value) : gguf_w_set(w, key, t, value);
  for (int i = 0; i < f->n_tensors && rc == 0; i++) {
    const gguf_tensor_info *t = &f->tensors[i];
    if (drop && !strcmp(t->name, drop)) continue;
    rc = gguf_w_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->map->base + t->file_offset) < 0 ? -1 : 0;
  }
  if (rc == 0) rc = gguf_writer_write(w, dst, NULL, NULL);
  gguf_writer_free(w);
  gguf_close(f);
  return rc;
}
static int copy_gguf(const char *src, const char *dst, const char *drop, const char *arch) {
  return copy_gguf_kv(src, dst, drop, arch ? "general.architecture" : NULL, GGUF_STRING, arch);
}

/* A family's missing tensor, or a family tg does not know, is one error
 * naming the tensor and the architecture, or the architecture and the
 * ones tg knows. */
TEST(llm_arch_errors) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_arch_%d.gguf", (int)getpid());
  CHECK_OK(copy_gguf("goldens/llm_gemma3.gguf", path, "blk.5.post_ffw_norm.weight", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.5.post_ffw_norm.weight' is missing (architecture gemma3)"), "%s", tg_error());
  CHECK_OK(copy_gguf("goldens/llm_gemma3.gguf", path, "blk.2.attn_k_norm.weight", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.2.attn_k_norm.weight' is missing"), "%s", tg_error());
  CHECK_OK(copy_gguf("goldens/llm_gemma3.gguf", path, NULL, "gemma9") == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "architecture 'gemma9' is not supported") && strstr(tg_error(), "gemma2, gemma3, phi3"), "%s", tg_error());
  /* phi3's fused tensors, rope scaling keys */
  CHECK_OK(copy_gguf("goldens/llm_phi3.gguf", path, "blk.1.attn_qkv.weight", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.1.attn_qkv.weight' is missing (architecture phi3)"), "%s", tg_error());
  CHECK_OK(copy_gguf_kv("goldens/llm_yarn.gguf", path, NULL, "llama.rope.scaling.type", GGUF_STRING, "longrope9") == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "llama.rope.scaling.type 'longrope9' is not supported"), "%s", tg_error());
  float bad = -2;
  CHECK_OK(copy_gguf_kv("goldens/llm_phi3.gguf", path, NULL, "phi3.rope.scaling.attn_factor", GGUF_F32, &bad) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "phi3.rope.scaling.attn_factor = -2 must be positive"), "%s", tg_error());
  uint32_t four = 4, seven = 7;
  CHECK_OK(copy_gguf_kv("goldens/llm_glm4moe.gguf", path, NULL, "glm4moe.nextn_predict_layers", GGUF_U32, &four) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "glm4moe.nextn_predict_layers 4 leaves none of block_count 4"), "%s", tg_error());
  CHECK_OK(copy_gguf_kv("goldens/llm_glm4moe.gguf", path, NULL, "glm4moe.expert_gating_func", GGUF_U32, &seven) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "glm4moe.expert_gating_func = 7 is not"), "%s", tg_error());
  CHECK_OK(copy_gguf("goldens/llm_gptoss.gguf", path, "blk.1.attn_sinks.weight", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.1.attn_sinks.weight' is missing (architecture gpt-oss)"), "%s", tg_error());
  /* Qwen3.5: a delta-net layer's tensor, an attention layer's, its keys */
  CHECK_OK(copy_gguf("goldens/llm_qwen35.gguf", path, "blk.2.ssm_a", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.2.ssm_a' is missing (architecture qwen35)"), "%s", tg_error());
  CHECK_OK(copy_gguf("goldens/llm_qwen35moe.gguf", path, "blk.3.attn_q_norm.weight", NULL) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "'blk.3.attn_q_norm.weight' is missing (architecture qwen35moe)"), "%s", tg_error());
  uint32_t thirty = 30, three = 3;
  CHECK_OK(copy_gguf_kv("goldens/llm_qwen35.gguf", path, NULL, "qwen35.ssm.inner_size", GGUF_U32, &thirty) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "qwen35.ssm.inner_size 30 is not state_size 8 x time_step_rank 4"), "%s", tg_error());
  CHECK_OK(copy_gguf_kv("goldens/llm_qwen35.gguf", path, NULL, "qwen35.ssm.group_count", GGUF_U32, &three) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "a multiple of group_count 3"), "%s", tg_error());
  /* state_size 8 x time_step_rank 2^30 is 2^33: compared in 64 bits, not
   * wrapped in int (UBSan flags that in make test SAN=1) */
  uint32_t big = 1u << 30;
  CHECK_OK(copy_gguf_kv("goldens/llm_qwen35.gguf", path, NULL, "qwen35.ssm.time_step_rank", GGUF_U32, &big) == 0);
  CHECK(tg_llm_load(path, NULL) == NULL);
  CHECK_MSG(strstr(tg_error(), "qwen35.ssm.inner_size 32 is not state_size 8 x time_step_rank 1073741824"), "%s", tg_error());
  unlink(path);
}

/* Quantized weights decode through tg_quant_matmul (x quantized to 8-bit
 * blocks, integer block dot products, like llama.cpp), Q4_0 through its
 * row-packed copy (tg_quant_matmul_rows): the tiny llama quantized to Q8_0
 * and Q4_0 gives logits close to the same weights multiplied in float
 * (TG_LLM_FLOAT_MATVEC=1), with the same best token, and not identical
 * ones (the integer path ran). */
static void quant_decode_close(const char *type) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_%s_%d.gguf", type, (int)getpid());
  quant_model_opts qo = { .pure = true };
  CHECK_OK(quant_model("goldens/llm_llama.gguf", path, quant_ftype_by_name(type), &qo) == 0);
  tg_llm *q = tg_llm_load(path, NULL);
  int row_packed = 0;
  for (int i = 0; q && i < q->npacked; i++) row_packed += q->packed[i].row_quants != NULL;
  if (!strcmp(type, "Q4_0")) CHECK_MSG(row_packed > 0, "no Q4_0 weight was row-packed");
  setenv("TG_LLM_FLOAT_MATVEC", "1", 1);
  tg_llm *f = tg_llm_load(path, NULL);
  CHECK_MSG(q && f, "load %s: %s", path, tg_error());
  int32_t prompt[] = { 1, 5, 9, 13, 17, 21, 25 };
  if (q && f) {
    int V = tg_llm_config_of(q)->n_vocab;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    unsetenv("TG_LLM_FLOAT_MATVEC");
    CHECK_OK(tg_llm_eval(q, prompt, 7, a) == 0);
    setenv("TG_LLM_FLOAT_MATVEC", "1", 1);
    CHECK_OK(tg_llm_eval(f, prompt, 7, b) == 0);
    float amax = 0, dmax = 0;
    int ia = 0, ib = 0;
    for (int i = 0; i < V; i++) {
      amax = fmaxf(amax, fabsf(b[i]));
      dmax = fmaxf(dmax, fabsf(a[i] - b[i]));
      if (a[i] > a[ia]) ia = i;
      if (b[i] > b[ib]) ib = i;
    }
    CHECK_MSG(dmax <= 0.05f * amax, "%s: logits differ by %g (largest %g)", type, dmax, amax);
    CHECK_MSG(dmax > 0, "%s: logits identical: the integer path did not run", type);
    CHECK_MSG(ia == ib, "%s: best token %d vs %d", type, ia, ib);
    free(a); free(b);
  }
  unsetenv("TG_LLM_FLOAT_MATVEC");
  tg_llm_free(q); tg_llm_free(f);
  unlink(path);
}
TEST(llm_quant_decode_q8_0) { quant_decode_close("Q8_0"); }

/* Float weights (F32, F16, BF16) multiply from panels of 32 rows
 * (llm_weights.c keep_panels): the tiny llama's stacked q|k|v, gate|up,
 * output projection and down matrices are held as panels, and a prompt of
 * 20 tokens (a prefill chunk) then 3 decoded ones give the logits of the
 * same file multiplied from its rows (TG_LLM_NO_PANELS=1). */
static void float_panels_match_rows(const char *type) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_%s_%d.gguf", type, (int)getpid());
  quant_model_opts qo = { .pure = true };
  CHECK_OK(quant_model("goldens/llm_llama.gguf", path, quant_ftype_by_name(type), &qo) == 0);
  tg_llm *p = tg_llm_load(path, NULL);
  setenv("TG_LLM_NO_PANELS", "1", 1);
  tg_llm *r = tg_llm_load(path, NULL);
  unsetenv("TG_LLM_NO_PANELS");
  CHECK_MSG(p && r, "load %s: %s", path, tg_error());
  if (p && r) {
    llm_layer *l = &p->layers[0];
    tg_tensor *mats[] = { l->wqkv, l->wo, l->w_gate_up, l->w_down };
    for (int i = 0; i < 4; i++) {
      const llm_packed *pk = mats[i] ? llm_packed_of(p, mats[i]) : NULL;
      CHECK_MSG(pk && pk->panels, "%s: matrix %d of layer 0 is not held as panels", type, i);
      CHECK_MSG(!llm_packed_of(r, r->layers[0].w_down), "%s: TG_LLM_NO_PANELS=1 still made panels", type);
    }
    int V = tg_llm_config_of(p)->n_vocab;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    int32_t prompt[20], next[] = { 30, 2, 41 };
    for (int i = 0; i < 20; i++) prompt[i] = (i * 7 + 1) % V;
    CHECK_OK(tg_llm_eval(p, prompt, 20, a) == 0);
    CHECK_OK(tg_llm_eval(r, prompt, 20, b) == 0);
    test_close_f32(a, b, (size_t)V, 1e-4, 1e-4, "prompt of 20, panels against rows");
    for (int i = 0; i < 3; i++) {
      CHECK_OK(tg_llm_eval(p, &next[i], 1, a) == 0);
      CHECK_OK(tg_llm_eval(r, &next[i], 1, b) == 0);
      test_close_f32(a, b, (size_t)V, 1e-4, 1e-4, "decoded token, panels against rows");
    }
    free(a); free(b);
  }
  tg_llm_free(p); tg_llm_free(r);
  unlink(path);
}
TEST(llm_float_panels_f32) { float_panels_match_rows("F32"); }
TEST(llm_float_panels_f16_bf16) { float_panels_match_rows("F16"); float_panels_match_rows("BF16"); }
TEST(llm_quant_decode_q4_0) { quant_decode_close("Q4_0"); }

static int64_t compiles(void) {
  tg_counters c = tg_get_counters();
  return c.kernels_compiled + c.kernels_cached;
}

/* A prompt's tail padded into a chunk size that has run: 16 tokens, then
 * 5 more as one chunk of 16 (the padding's rows write cache rows past the
 * prompt, which the tokens after overwrite before reading): the logits at
 * each step are those of the same tokens fed one at a time, and the tail
 * compiles nothing. Also on a sliding-window model, whose rings take the
 * padding's rows too. */
static void padded_tail(const char *file) {
  enum { N = 21, MORE = 4 };
  tg_llm_opts o = { .n_ctx = 96, .cache_type = "f32" };
  tg_llm *m = tg_llm_load(file, &o), *ref = tg_llm_load(file, &o);
  CHECK_OK(m); CHECK_OK(ref);
  if (!m || !ref) { tg_llm_free(m); tg_llm_free(ref); return; }
  int V = tg_llm_config_of(m)->n_vocab;
  int32_t t[N + MORE];
  for (int i = 0; i < N + MORE; i++) t[i] = (i * 13 + 5) % V;
  float *got = malloc(sizeof(float) * (size_t)V), *want = malloc(sizeof(float) * (size_t)V);
  CHECK_OK(tg_llm_eval(m, t, 16, NULL) == 0);
  int64_t before = compiles();
  CHECK_OK(tg_llm_eval(m, t + 16, N - 16, got) == 0);
  CHECK_MSG(compiles() == before, "%s: %lld kernels compiled for the padded tail", file, (long long)(compiles() - before));
  CHECK_EQ_INT(tg_llm_n_past(m), N);
  for (int i = 0; i < N; i++) CHECK_OK(tg_llm_eval(ref, &t[i], 1, want) == 0);
  test_close_f32(got, want, (size_t)V, 1e-4, 1e-4, "padded tail vs token by token");
  for (int i = N; i < N + MORE; i++) {   /* the padding's cache rows are overwritten, not read */
    CHECK_OK(tg_llm_eval(m, &t[i], 1, got) == 0);
    CHECK_OK(tg_llm_eval(ref, &t[i], 1, want) == 0);
    test_close_f32(got, want, (size_t)V, 1e-4, 1e-4, "after the padded tail");
  }
  free(got); free(want);
  tg_llm_free(m); tg_llm_free(ref);
}
/* A prompt of 17 tokens after the 16-token pass has run: 16, then its
 * last token padded into a second 16 (the 1-token pass is not built for
 * it); the logits are those of the tokens fed one at a time. */
static void prompt_of_17(const char *file) {
  tg_llm_opts o = { .n_ctx = 64, .cache_type = "f32" };
  tg_llm *m = tg_llm_load(file, &o), *ref = tg_llm_load(file, &o);
  CHECK_OK(m); CHECK_OK(ref);
  if (!m || !ref) { tg_llm_free(m); tg_llm_free(ref); return; }
  int V = tg_llm_config_of(m)->n_vocab;
  int32_t t[33];
  for (int i = 0; i < 33; i++) t[i] = (i * 29 + 3) % V;
  float *got = malloc(sizeof(float) * (size_t)V), *want = malloc(sizeof(float) * (size_t)V);
  CHECK_OK(tg_llm_eval(m, t, 16, NULL) == 0);
  CHECK_OK(tg_llm_eval(m, t + 16, 17, got) == 0);
  for (int i = 0; i < 33; i++) CHECK_OK(tg_llm_eval(ref, &t[i], 1, want) == 0);
  test_close_f32(got, want, (size_t)V, 1e-4, 1e-4, "16 + 17 tokens (the last padded into a 16) vs token by token");
  CHECK_EQ_INT(m->chunk_runs[1], 3);   /* sizes 64, 16, 4, 1 */
  CHECK_EQ_INT(m->chunk_runs[3], 0);
  free(got); free(want);
  tg_llm_free(m); tg_llm_free(ref);
}
TEST(llm_padded_prompt_tail) {
  padded_tail("goldens/llm_llama.gguf");
  padded_tail("goldens/llm_gemma3.gguf");
  prompt_of_17("goldens/llm_llama.gguf");
}

/* Attention reads the cache's first pos + T rows (a symbolic length): each
 * chunk size compiles once for every position (here past 256, where the
 * length needs more than one block of rows), and a rewound cache's stale
 * rows are never read: decoding token by token after a rewind gives the
 * logits of one chunked prompt. */
TEST(llm_one_compile_per_chunk_size) {
  enum { N = 300, CTX = 320 };
  tg_llm_opts o = { .n_ctx = CTX, .cache_type = "f32" };   /* exact: f16 caches round differently per chunk size */
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &o), *ref = tg_llm_load("goldens/llm_llama.gguf", &o);
  CHECK_OK(m); CHECK_OK(ref);
  if (!m || !ref) { tg_llm_free(m); tg_llm_free(ref); return; }
  int V = tg_llm_config_of(m)->n_vocab;
  int32_t a[N], b[N];
  for (int i = 0; i < N; i++) { a[i] = (i * 7 + 3) % V; b[i] = (i * 11 + 5) % V; }
  float *got = malloc(sizeof(float) * (size_t)V), *want = malloc(sizeof(float) * (size_t)V);
  /* two calls of every chunk size (64, 16, 4, 1; one size each, so none is
   * padded): compiled and captured */
  static const int sizes[] = { 64, 16, 4, 1 };
  for (int r = 0, at = 0; r < 2; r++)
    for (int k = 0; k < 4; at += sizes[k++]) CHECK_OK(tg_llm_eval(m, a + at, sizes[k], NULL) == 0);
  int64_t before = compiles();
  CHECK_OK(tg_llm_eval(m, a + 170, N - 170, NULL) == 0);   /* replays up to position 299 */
  CHECK_MSG(compiles() == before, "%lld kernels compiled past the capture", (long long)(compiles() - before));
  tg_llm_rewind(m, 0);
  for (int i = 0; i < N; i++) CHECK_OK(tg_llm_eval(m, &b[i], 1, got) == 0);
  CHECK_MSG(compiles() == before, "%lld kernels compiled decoding", (long long)(compiles() - before));
  CHECK_OK(tg_llm_eval(ref, b, N, want) == 0);
  test_close_f32(got, want, (size_t)V, 1e-4, 1e-4, "token by token vs chunks");
  free(got); free(want);
  tg_llm_free(m); tg_llm_free(ref);
}

TEST(llm_errors) {
  CHECK(tg_llm_load("goldens/nope.gguf", NULL) == NULL);
  CHECK(strstr(tg_error(), "nope.gguf") != NULL);
  tg_llm_opts o = { .n_ctx = 8 };
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &o);
  CHECK_OK(m);
  if (!m) return;
  int32_t toks[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  CHECK(tg_llm_eval(m, toks, 9, NULL) < 0);
  CHECK(strstr(tg_error(), "do not fit") != NULL);
  int32_t bad = 1000;
  CHECK(tg_llm_eval(m, &bad, 1, NULL) < 0);
  CHECK(strstr(tg_error(), "vocabulary") != NULL);
  CHECK_EQ_INT(tg_llm_n_past(m), 0);
  tg_llm_free(m);
}

/* Greedy decoding of stories260K: the text llama.cpp prints. Tokens are
 * turned into text with the vocabulary directly (SPM pieces), so this test
 * does not depend on the tokenizer. */
static void stories(const char *file) {
  char path[256];
  snprintf(path, sizeof path, "../../shared/testdata/models/%s", file);
  FILE *f = fopen(path, "rb");
  if (!f) SKIP("%s is absent", path);
  fclose(f);
  tg_llm *m = tg_llm_load(path, &(tg_llm_opts){ .devices = tp_devices });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  gguf_file *g = gguf_open(path);
  const gguf_kv *vocab = gguf_get_arr(g, "tokenizer.ggml.tokens", GGUF_STRING);
  int V = tg_llm_config_of(m)->n_vocab;
  float *logits = malloc(sizeof(float) * (size_t)V);
  int32_t prompt[] = { 1, 403, 407, 261, 378 };   /* <s> Once upon a time */
  char text[1024] = "";
  size_t len = 0;
  CHECK_OK(tg_llm_eval(m, prompt, 5, logits) == 0);
  for (int i = 0; i < 64; i++) {
    int best = 0;
    for (int j = 1; j < V; j++) if (logits[j] > logits[best]) best = j;
    const char *s = vocab->strs[best];
    size_t n = (size_t)vocab->str_lens[best];
    if (n == 6 && !memcmp(s, "<0x", 3)) { text[len++] = (char)strtol(s + 3, NULL, 16); }
    else for (size_t k = 0; k < n && len < sizeof text - 2; k++) {
      if (k + 2 < n && !memcmp(s + k, "\xe2\x96\x81", 3)) { text[len++] = ' '; k += 2; }
      else text[len++] = s[k];
    }
    text[len] = 0;
    int32_t t = best;
    if (tg_llm_eval(m, &t, 1, logits) < 0) { CHECK_MSG(0, "eval: %s", tg_error()); break; }
  }
  const char *want = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
                     "ball. She wanted to play with it, but it was too high.\nLily's mom said";
  CHECK_MSG(!strcmp(text, want), "got '%s'", text);
  free(logits);
  gguf_close(g);
  tg_llm_free(m);
}

TEST(llm_stories260k_greedy) { stories("stories260K.gguf"); }
TEST(llm_stories260k_f16_greedy) { stories("stories260K-F16.gguf"); }

TEST(llm_sampler) {
  float logits[5] = { 1, 3, 2, 3, -1 };
  tg_sampler *s = tg_sampler_new(&(tg_sampling){ .temperature = 0 });
  CHECK_EQ_INT(tg_sampler_sample(s, logits, 5), 1);   /* the first maximum */
  tg_sampler_free(s);
  /* top_k 1 is greedy whatever the temperature */
  s = tg_sampler_new(&(tg_sampling){ .temperature = 5, .top_k = 1, .top_p = 1 });
  for (int i = 0; i < 10; i++) CHECK_EQ_INT(tg_sampler_sample(s, logits, 5), 1);
  tg_sampler_free(s);
  /* frequencies follow softmax(logits / T) */
  int counts[5] = { 0 };
  s = tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 42 });
  for (int i = 0; i < 20000; i++) counts[tg_sampler_sample(s, logits, 5)]++;
  tg_sampler_free(s);
  double z = 0, p[5];
  for (int i = 0; i < 5; i++) z += p[i] = exp(logits[i]);
  for (int i = 0; i < 5; i++) CHECK_NEAR(counts[i] / 20000.0, p[i] / z, 0.05);
  /* the same seed gives the same draws */
  tg_sampler *a = tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = 1, .seed = 7 });
  tg_sampler *b = tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = 1, .seed = 7 });
  for (int i = 0; i < 50; i++) CHECK_EQ_INT(tg_sampler_sample(a, logits, 5), tg_sampler_sample(b, logits, 5));
  tg_sampler_free(a);
  tg_sampler_free(b);
  /* top-k over a big vocabulary: every draw is one of the k largest (found
   * by a loop over sorted copies, independently of the sampler's heap) */
  enum { NV = 5000 };
  static float big[NV], sorted[NV];
  for (int i = 0; i < NV; i++) big[i] = sorted[i] = (float)((i * 7919) % 4999) / 100.0f;
  for (int i = 1; i < NV; i++) for (int j = i; j > 0 && sorted[j - 1] < sorted[j]; j--) { float t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t; }
  s = tg_sampler_new(&(tg_sampling){ .temperature = 2, .top_k = 7, .top_p = 1, .seed = 9 });
  bool seen_not_best = false;
  for (int i = 0; i < 300; i++) {
    int t = tg_sampler_sample(s, big, NV);
    CHECK_MSG(t >= 0 && big[t] >= sorted[6], "token %d (logit %g) is not in the top 7", t, t >= 0 ? big[t] : 0);
    seen_not_best |= t >= 0 && big[t] < sorted[0];
  }
  CHECK(seen_not_best);
  tg_sampler_free(s);
  /* min_p 0.5 keeps only tokens within half of the best's probability */
  s = tg_sampler_new(&(tg_sampling){ .temperature = 1, .top_p = 1, .min_p = 0.5f, .seed = 3 });
  for (int i = 0; i < 200; i++) { int t = tg_sampler_sample(s, logits, 5); CHECK(t == 1 || t == 3); }
  tg_sampler_free(s);
}

typedef struct { char buf[2048]; size_t n; int calls; int stop_after; } collect;
static bool collect_piece(void *u, const char *text, size_t len) {
  collect *c = u;
  if (c->n + len < sizeof c->buf) { memcpy(c->buf + c->n, text, len); c->n += len; c->buf[c->n] = 0; }
  return ++c->calls != c->stop_after;
}

/* tg run's path: tokenizer + generate, greedy, against llama.cpp's text;
 * a second prompt sharing the prefix reuses the cache. */
TEST(llm_generate_stories260k) {
  const char *path = "../../shared/testdata/models/stories260K.gguf";
  FILE *f = fopen(path, "rb");
  if (!f) SKIP("%s is absent", path);
  fclose(f);
  tg_tokenizer *tok = tg_tokenizer_load(path);
  tg_llm *m = tg_llm_load(path, NULL);
  CHECK_OK(tok); CHECK_OK(m);
  if (!tok || !m) { tg_tokenizer_free(tok); tg_llm_free(m); return; }
  tg_sampler *s = tg_sampler_new(&(tg_sampling){ .temperature = 0 });
  const char *prompts[2] = { "The little dog", "Once upon a time" };
  const char *want[2] = { " was a little girl named Lily. She loved to play with her toys and her toys. One day, she saw a big box with a big box. It was a big,",
                          ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play "
                          "with it, but it was too high.\nLily's mom said" };
  int ns[2] = { 48, 64 };
  for (int p = 0; p < 2; p++) {
    int32_t *ids;
    int n = tg_tokenize(tok, prompts[p], strlen(prompts[p]), true, false, &ids);
    CHECK(n > 1 && ids[0] == 1);
    collect c = { .n = 0 };
    tg_gen_stats st;
    CHECK_OK(tg_llm_generate(m, tok, ids, n, ns[p], s, NULL, 0, collect_piece, &c, &st) == 0);
    CHECK_MSG(!strcmp(c.buf, want[p]), "'%s' continues as '%s'", prompts[p], c.buf);
    CHECK_EQ_INT(st.n_generated, ns[p]);
    CHECK_EQ_INT(st.n_reused, p == 0 ? 0 : 1);   /* the second prompt shares only BOS with the first */
    /* the same prompt again reuses all but its last token, and stops when emit says so */
    collect c2 = { .n = 0, .stop_after = 3 };
    CHECK_OK(tg_llm_generate(m, tok, ids, n, ns[p], s, NULL, 0, collect_piece, &c2, &st) == 0);
    CHECK_EQ_INT(st.n_reused, n - 1);
    CHECK_EQ_INT(c2.calls, 3);
    CHECK(!strncmp(c2.buf, want[p], c2.n));
    free(ids);
  }
  tg_sampler_free(s);
  tg_llm_free(m);
  tg_tokenizer_free(tok);
}

/* The CLI's model errors: an unknown KV cache type (named by the library's
 * one list of types) and a cache longer than the model was made for each
 * exit 1 with one line, before any token is generated. */
TEST(llm_cli_cache_errors_exit_1) {
  const char *bin = getenv("TG_BIN"), *model = "../../shared/testdata/models/stories260K.gguf";
  if (!bin || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  char cmd[1024], out[2048];
  snprintf(cmd, sizeof cmd, "%s run -m %s --cache-type q4 -n 2 -p hi", bin, model);
  int st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 1 && strstr(out, "unknown cache type 'q4'") && strstr(out, "q8_0"), "status %d: %s", st, out);
  snprintf(cmd, sizeof cmd, "%s run -m %s -c 100000 -n 2 -p hi", bin, model);
  st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 1 && strstr(out, "longer than the model's context length"), "status %d: %s", st, out);
}

/* ------------------------------------------------------------ tensor parallel
 * Sharded over CPU:0 and CPU:1 (tg_llm_opts.devices: q/k/v and gate/up by
 * rows, wo and down by columns, the KV cache by kv heads, the sums
 * allreduced), the models give the independent references' logits within
 * float tolerance and the same greedy tokens as on one device: numpy's for
 * the tiny llama, a 64-wide llama (20 greedy tokens), gemma2 (softcaps,
 * post norms, sliding rings of 67 rows past 109 positions) and gemma3,
 * llama.cpp's text for stories260K. */
#define TP2 "CPU:0,CPU:1"
TEST(llm_tp_llama) {
  tp_devices = TP2;
  check_model("llama");
  tg_llm_free(check_greedy("llama_tp", "llama_tp_greedy", 0, tiny_prompt, 7, 1e-4));
  tp_devices = NULL;
}
TEST(llm_tp_gemma) {
  tp_devices = TP2;
  swa_ring("gemma2", false);
  check_model("gemma3");   /* per-head q/k norms, 5 sliding layers of 6 */
  tp_devices = NULL;
}

/* Mixture-of-experts layers sharded: the experts' gate and up by their
 * rows, down by its columns (the chosen experts' rows taken per part),
 * shared experts as a dense feed-forward, the router replicated; quantized
 * experts whose down does not split at whole blocks (gpt-oss's 32-wide
 * MXFP4 experts: down's 32 columns are one block) with down split by its
 * rows instead (test_llm_tp.c's llm_tp_moe_* split quantized ones
 * further). Against numpy's goldens:
 * qwen3moe, qwen2moe (shared experts behind a sigmoid gate), glm4moe
 * (sigmoid routing with a bias), gpt-oss (expert biases, sinks). */
TEST(llm_tp_moe) {
  tp_devices = TP2;
  check_model("qwen3moe");
  check_model("qwen2moe");
  check_model("glm4moe");
  check_model("gptoss");
  tp_devices = NULL;
  tg_llm *m = tg_llm_load("goldens/llm_qwen2moe.gguf", &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (m) {
    llm_layer *l = &m->layers[0];
    CHECK_EQ_INT(tg_shard_axis(l->gate_exps), 1); CHECK_EQ_INT(tg_shard_axis(l->up_exps), 1); CHECK_EQ_INT(tg_shard_axis(l->down_exps), 2);
    CHECK_EQ_INT(tg_shard_axis(l->gate_shexp), 0); CHECK_EQ_INT(tg_shard_axis(l->down_shexp), 1); CHECK_EQ_INT(tg_shard_axis(l->router), -1);
    /* a decode step copies the allreduces' rows (the chosen experts'
     * outputs and the shared expert's: (K + 1) x dim floats, counted read
     * and written; one expert's half is 12 x dim) and the chosen experts'
     * ids, never an expert */
    int n = 0;
    int64_t biggest = tp_decode_biggest_copy(m, &n), rows = 2 * (int64_t)sizeof(float) * m->cfg.dim;
    CHECK_MSG(n > 0 && biggest >= rows && biggest <= (m->cfg.n_experts_used + 1) * rows, "%d entries, a copy of %lld bytes", n, (long long)biggest);
  }
  tg_llm_free(m);
  m = tg_llm_load("goldens/llm_gptoss.gguf", &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (m) {
    CHECK_MSG(llm_packed_of(m, m->layers[0].gate_exps) != NULL, "gpt-oss's experts are not quantized");
    CHECK_EQ_INT(tg_shard_axis(m->layers[0].gate_exps), 1);
    CHECK_EQ_INT(tg_shard_axis(m->layers[0].down_exps), 1);
    CHECK_EQ_INT(tg_shard_axis(m->layers[0].gate_exps_b), 1);
  }
  tg_llm_free(m);
}

/* DeepSeek's multi-head latent attention sharded: q_b and kv_b by their
 * rows (whole heads), the output by columns, the latent projections and
 * their norms replicated, the cache (decompressed keys and values per
 * head) by heads; against numpy's goldens. */
TEST(llm_tp_deepseek2_mla) {
  tp_devices = TP2;
  check_model("deepseek2");
  check_model("deepseek2_yarn");
  tp_devices = NULL;
}

/* Gated delta-net layers sharded (Qwen3.5, 2 k heads and 4 v heads: one
 * k head and its 2 v heads per device): the in-projections, the conv and
 * the per-head gates by their rows in device order (llm_tp.c
 * reorder_gdn), the out-projection by columns, the states by heads; the
 * gated attention layers as dense attention. Against numpy's goldens: the
 * prompt and 3 tokens, 20 greedy tokens, and past 110 positions (a
 * 64-token chunk's chunked form, then the recurrence). */
TEST(llm_tp_qwen35_delta_net) {
  tp_devices = TP2;
  check_model("qwen35");
  check_model("qwen35_tp");
  tg_llm_free(check_greedy("qwen35", "qwen35_greedy", 0, tiny_prompt, 7, 1e-4));
  qwen35_long("qwen35");
  check_model("qwen35moe");
  tp_devices = NULL;
}

/* tg_llm_eval_all (prefill pieces under their own JITs) sharded: the
 * prompt's last row is numpy's; the decode step cannot be exported (it
 * copies between devices). */
TEST(llm_tp_eval_all_and_export) {
  size_t nl;
  float *want = test_read_file("goldens/llm_llama.logits.bin", &nl);
  tg_llm *m = tg_llm_load("goldens/llm_llama.gguf", &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(want && m, "load: %s", tg_error());
  if (want && m) {
    int V = m->cfg.n_vocab;
    float *got = malloc(sizeof(float) * 7 * (size_t)V);
    CHECK_OK(tg_llm_eval_all(m, tiny_prompt, 7, got) == 0);
    test_close_f32(got + 6 * (size_t)V, want, (size_t)V, 1e-4, 1e-4, "eval_all's last row");
    free(got);
    CHECK(tg_llm_export(m, "/tmp/tg_test_llm_tp_export.c") < 0);
    CHECK_MSG(strstr(tg_error(), "copies between devices"), "%s", tg_error());
  }
  free(want);
  tg_llm_free(m);
}
/* q|k|v and gate|up fused in the file (Phi-3): cut into q, k, v and gate,
 * up at load, each then split as on its own (each device its heads' q
 * rows, its kv heads' k and v rows, its half of gate and of up), against
 * numpy's goldens: the tiny phi3 and the 64-wide one (20 greedy tokens).
 * Quantized, the cut is of the row-packed groups: Q8_0 and Q4_1 (two
 * scales a block) give one device's greedy tokens and logits within the
 * rounding of a column split's two halves (one device itself against
 * numpy's goldens above and the quantized matmuls against ggml's in
 * test_quant*.c); a part of the fused rows that is not whole 16-row
 * groups is refused, naming the tensor. */
static void fused_same_as_one(const char *ftype) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_fused_%d.gguf", (int)getpid());
  CHECK_OK(quant_model("goldens/llm_phi3_tp.gguf", path, quant_ftype_by_name(ftype), &(quant_model_opts){ .pure = true }) == 0);
  tg_llm *one = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32" }), *tp = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(one && tp, "%s: load: %s", ftype, tg_error());
  if (one && tp) {
    CHECK_MSG(one->layers[0].wqkv && !tp->layers[0].wqkv && !tp->layers[0].w_gate_up, "%s: one device keeps q|k|v fused, two cut it", ftype);
    const tg_tensor *parts[] = { tp->layers[1].wq, tp->layers[1].wk, tp->layers[1].wv, tp->layers[1].w_gate, tp->layers[1].w_up };
    for (int i = 0; i < 5; i++) {
      const llm_packed *pk = llm_packed_of(tp, parts[i]);
      CHECK_MSG(pk && pk->row_quants && tg_shard_axis(pk->row_quants) == 0 && tg_dim(pk->row_quants, 0) == (i == 0 || i >= 3 ? 4 : 2),
                "%s: part %d of blk.1's fused matrices is not split on its 16-row groups", ftype, i);
    }
    char what[48];
    snprintf(what, sizeof what, "%s fused", ftype);
    int compared = tp_models_same(one, tp, tiny_prompt, 7, 20, 1e-4, 1e-4, what);
    CHECK_MSG(compared >= 18, "%s: only %d of 20 steps had a clear best token", what, compared);
  }
  tg_llm_free(one); tg_llm_free(tp);
  unlink(path);
}
TEST(llm_tp_fused) {
  tp_devices = TP2;
  check_model("phi3");
  check_model("phi3_tp");
  tg_llm_free(check_greedy("phi3_tp", "phi3_tp_greedy", 0, tiny_prompt, 7, 1e-4));
  tp_devices = NULL;
  tg_llm *m = tg_llm_load("goldens/llm_phi3.gguf", &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (m) {
    llm_layer *l = &m->layers[0];
    CHECK(!l->wqkv && !l->w_gate_up);
    CHECK_EQ_INT(tg_shard_axis(l->wq), 0); CHECK_EQ_INT(tg_shard_axis(l->wk), 0); CHECK_EQ_INT(tg_shard_axis(l->wv), 0);
    CHECK_EQ_INT(tg_shard_axis(l->w_gate), 0); CHECK_EQ_INT(tg_shard_axis(l->w_up), 0); CHECK_EQ_INT(tg_shard_axis(l->w_down), 1);
    CHECK_EQ_INT(tg_dim(l->wk, 0), 16); CHECK_EQ_INT(tg_dim(l->w_up, 0), 48);
  }
  tg_llm_free(m);
  fused_same_as_one("Q8_0");
  fused_same_as_one("Q4_1");
  /* the tiny phi3's k and v are 16 rows, its gate and up 48: groups of 16
   * rows that 2 devices cannot share, so each layer runs whole on each
   * device, its fused matrices kept and replicated with the KV cache */
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_fused_%d.gguf", (int)getpid());
  CHECK_OK(quant_model("goldens/llm_phi3.gguf", path, quant_ftype_by_name("Q8_0"), &(quant_model_opts){ .pure = true }) == 0);
  m = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  for (int i = 0; m && i < m->cfg.n_layers; i++) {
    llm_layer *l = &m->layers[i];
    CHECK_MSG(l->tp_whole == (LLM_TP_ATTN | LLM_TP_FFN), "layer %d: parts run whole %#x", i, l->tp_whole);
    CHECK_MSG(l->wqkv && l->w_gate_up && tg_shard_axis(l->wqkv) == -1 && tg_shard_axis(l->w_gate_up) == -1 && tg_shard_axis(l->w_down) == -1 &&
              tg_shard_axis(l->wo) == -1 && tg_shard_axis(l->k_cache) == -1 && tg_shard_axis(l->v_cache) == -1,
              "layer %d: a part that runs whole is not whole on each device", i);
  }
  tg_llm_free(m);
  /* the two sum in other kernels (no panels on several devices): within
   * the integer path's tolerance (test_llm_tp.c), 1e-5 in float */
  tp_same_as_one(path, 8, 4e-2, "phi3 Q8_0, whole layers");
  setenv("TG_LLM_FLOAT_MATVEC", "1", 1);
  int compared = tp_same_as_one(path, 8, 1e-5, "phi3 Q8_0 in float, whole layers");
  unsetenv("TG_LLM_FLOAT_MATVEC");
  CHECK_MSG(compared >= 6, "phi3 Q8_0 in float, whole layers: only %d of 8 steps had a clear best token", compared);
  unlink(path);
}
TEST(llm_tp_stories260k_greedy) { tp_devices = TP2; stories("stories260K.gguf"); tp_devices = NULL; }

/* The parts really run on their devices: the weights' layouts, and a
 * decode step's schedule has kernels on both devices and, between them,
 * only the token's id and the allreduces of one row (dim floats: 2 per
 * layer, each one copy each way, the last one's return unused: 4 per
 * layer in all), never a weight or a cache gathered. */
TEST(llm_tp_layout_and_copies) {
  tg_llm *m = tg_llm_load("goldens/llm_llama_tp.gguf", &(tg_llm_opts){ .devices = TP2, .cache_type = "f32" });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (!m) return;
  llm_layer *l = &m->layers[0];
  CHECK_EQ_INT(tg_shard_axis(l->wq), 0); CHECK_EQ_INT(tg_shard_axis(l->wk), 0); CHECK_EQ_INT(tg_shard_axis(l->w_up), 0);
  CHECK_EQ_INT(tg_shard_axis(l->wo), 1); CHECK_EQ_INT(tg_shard_axis(l->w_down), 1); CHECK_EQ_INT(tg_shard_axis(l->k_cache), 1);
  CHECK_EQ_INT(tg_shard_axis(m->tok_embd), -1); CHECK_EQ_INT(tg_shard_axis(l->attn_norm), -1);
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  int32_t tok = 3;
  CHECK_OK(llm_bind_chunk(m, 1) == 0);
  tg_tensor *out = llm_forward(m, tg_from_data(&tok, TG_SHAPE(1), TG_I32));
  static tg_schedule_entry e[1024];
  int n = out ? tg_schedule_list(&out, 1, e, 1024) : -1, k1 = 0, copies = 0;
  int64_t biggest = 0;
  for (int i = 0; i < n && i < 1024; i++) {
    if (e[i].copy) { copies++; if (e[i].bytes > biggest) biggest = e[i].bytes; }
    else k1 += !strcmp(e[i].device, "CPU:1");
  }
  int L = m->cfg.n_layers;
  CHECK_MSG(k1 > 4 * L, "%d kernels on CPU:1", k1);
  CHECK_MSG(copies == 4 * L, "%d copies, want %d", copies, 4 * L);
  CHECK_MSG(biggest == 2 * (int64_t)sizeof(float) * m->cfg.dim, "a copy of %lld bytes", (long long)biggest);   /* source and destination */
  tg_scope_end();
  tensor_device_end(prev);
  tg_llm_free(m);
}

/* Q8_0 weights split in their row-packed form (rows in groups of 16, columns
 * at whole blocks): 20 greedy tokens as on one device, logits within float
 * rounding (the block sums add in two halves). Where a split would cut a
 * group of rows (the tiny llama's 16 rows of k over 2 devices), the load
 * says so. */
TEST(llm_tp_q8_0) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_%d.gguf", (int)getpid());
  quant_model_opts qo = { .pure = true };
  CHECK_OK(quant_model("goldens/llm_llama_tp.gguf", path, quant_ftype_by_name("Q8_0"), &qo) == 0);
  tg_llm *one = tg_llm_load(path, NULL), *tp = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(one && tp, "load: %s", tg_error());
  if (one && tp) {
    const llm_packed *pk = llm_packed_of(tp, tp->layers[0].wo);
    CHECK_MSG(pk && pk->row_quants && tg_shard_axis(pk->row_quants) == 1, "wo's row-packed form is not split by columns");
    int compared = tp_models_same(one, tp, tiny_prompt, 7, 20, 1e-4, 1e-4, "Q8_0");
    CHECK_MSG(compared >= 18, "Q8_0: only %d of 20 steps had a clear best token", compared);
  }
  tg_llm_free(one); tg_llm_free(tp);
  /* the tiny llama's k and v are 16 rows, one group of 16 that 2 devices
   * cannot share, and its gate and up 48 rows: its layers run whole on
   * each device (q, k, v, o, the KV cache and the feed-forward replicated) */
  CHECK_OK(quant_model("goldens/llm_llama.gguf", path, quant_ftype_by_name("Q8_0"), &qo) == 0);
  tp = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 });
  CHECK_MSG(tp != NULL, "load: %s", tg_error());
  for (int i = 0; tp && i < tp->cfg.n_layers; i++) {
    llm_layer *l = &tp->layers[i];
    CHECK_MSG(l->tp_whole == (LLM_TP_ATTN | LLM_TP_FFN), "layer %d: parts run whole %#x", i, l->tp_whole);
    CHECK_MSG(tg_shard_axis(l->wq) == -1 && tg_shard_axis(l->wk) == -1 && tg_shard_axis(l->wo) == -1 && tg_shard_axis(l->k_cache) == -1 &&
              tg_shard_axis(l->w_gate) == -1 && tg_shard_axis(l->w_down) == -1, "layer %d: a part is not whole on each device", i);
  }
  tg_llm_free(tp);
  int compared = tp_same_as_one(path, 8, 4e-2, "Q8_0, whole attention");
  CHECK_MSG(compared >= 6, "Q8_0, whole attention: only %d of 8 steps had a clear best token", compared);
  unlink(path);
}

/* What tensor parallel does not cover, and sizes that do not divide, are
 * refused at load, naming them. */
TEST(llm_tp_errors) {
  static const struct { const char *model, *want; } cases[] = {
    { "yarn", "needs heads (2), kv heads (1) and the feed-forward size (48) to divide by 2" },
  };
  char path[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(path, sizeof path, "goldens/llm_%s.gguf", cases[i].model);
    CHECK(tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 }) == NULL);
    CHECK_MSG(strstr(tg_error(), cases[i].want), "%s: %s", cases[i].model, tg_error());
  }
  /* delta-net layers split by whole k heads: one k head (with its 4 v
   * heads) does not go over 2 devices (refused before any weight is read) */
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_gdn_%d.gguf", (int)getpid());
  uint32_t one_k = 1;
  CHECK_OK(copy_gguf_kv("goldens/llm_qwen35.gguf", path, NULL, "qwen35.ssm.group_count", GGUF_U32, &one_k) == 0);
  CHECK(tg_llm_load(path, &(tg_llm_opts){ .devices = TP2 }) == NULL);
  CHECK_MSG(strstr(tg_error(), "needs the delta-net's k heads (1; 4 v heads, 4 per k head) to divide by 2"), "%s", tg_error());
  unlink(path);
  const char *llama = "goldens/llm_llama.gguf";
  CHECK(tg_llm_load(llama, &(tg_llm_opts){ .devices = "CPU:0,CPU:0" }) == NULL);
  CHECK_MSG(strstr(tg_error(), "CPU is listed twice"), "%s", tg_error());
  CHECK(tg_llm_load(llama, &(tg_llm_opts){ .devices = "CPU:0,NOPE:3" }) == NULL);
  CHECK_MSG(strstr(tg_error(), "devices 'CPU:0,NOPE:3'"), "%s", tg_error());
  CHECK(tg_llm_load(llama, &(tg_llm_opts){ .devices = ",", }) == NULL);
  CHECK_MSG(strstr(tg_error(), "names no device"), "%s", tg_error());
  CHECK(tg_llm_load(llama, &(tg_llm_opts){ .devices = TP2, .device = "CPU" }) == NULL);
  CHECK_MSG(strstr(tg_error(), "give device or devices, not both"), "%s", tg_error());
}

/* tg run --devices: a device that is not there, or a split the model's
 * heads do not allow (stories260K's 8 heads over 3 devices), exits 1 with
 * the library's one line. */
TEST(llm_tp_cli_errors_exit_1) {
  const char *bin = getenv("TG_BIN"), *model = "../../shared/testdata/models/stories260K.gguf";
  if (!bin || access(bin, X_OK) != 0) SKIP("TG_BIN does not name the tg binary (make test sets it)");
  if (access(model, R_OK) != 0) SKIP("%s is absent", model);
  char cmd[1024], out[2048];
  snprintf(cmd, sizeof cmd, "%s run -m %s --devices CPU:0,CPU:9 -n 2 -p hi", bin, model);
  int st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 1 && strstr(out, "devices 'CPU:0,CPU:9'"), "status %d: %s", st, out);
  snprintf(cmd, sizeof cmd, "TG_CPU_DEVICES=3 %s run -m %s --devices CPU:0,CPU:1,CPU:2 -n 2 -p hi", bin, model);
  st = test_run_capture(cmd, out, sizeof out);
  CHECK_MSG(st == 1 && strstr(out, "to divide by 3"), "status %d: %s", st, out);
}
