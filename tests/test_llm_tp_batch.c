/* test_llm_tp_batch.c: several sequences under tensor parallel (n_seq > 1
 * with tg_llm_opts.devices; `tg serve --devices ... -np N`). A model split
 * over CPU:0 and CPU:1 gives one device's logits for the same calls:
 * tg_llm_eval_batch's mixed steps (pieces of prompts and single tokens of
 * three sequences in one pass, the KV cache split by kv heads and each
 * row's block taken per part), tg_llm_decode_batch, and tg_llm_set_seq +
 * tg_llm_eval one sequence at a time; also DeepSeek's MLA and Qwen3.5's
 * delta-net layers (their states per sequence). One device is itself checked against
 * numpy's goldens and per-token evals (test_llm.c, test_llm_batch*.c).
 * The F32 file agrees within float rounding (1e-4); its Q8_0 form within
 * test_llm_tp.c's tolerance for the integer dot products (4e-2: an
 * activation 1 ulp apart may round to the neighbouring integer). */
#include "test.h"
#include <unistd.h>
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "quant/quantize.h"
#include "tg_dist.h"

#define TP2 "CPU:0,CPU:1"
#define NSEQ 3

static int32_t tok_of(int s, int i) { return (int32_t)((s * 13 + i * 5 + 2) % 50 + 1); }

static void load_pair(const char *path, int n_seq, tg_llm **one, tg_llm **tp) {
  *one = tg_llm_load(path, &(tg_llm_opts){ .cache_type = "f32", .n_seq = n_seq });
  *tp = tg_llm_load(path, &(tg_llm_opts){ .devices = TP2, .cache_type = "f32", .n_seq = n_seq });
  CHECK_MSG(*one && *tp, "%s: load: %s", path, tg_error());
}

/* Steps of rows from three sequences: step k gives sequence s take[k][s]
 * tokens (prompt pieces beside single tokens); every row's logits but
 * those at pos % 3 == 1 (not when !mixed: delta-net layers take one
 * token per sequence in a batch); then decode steps through
 * tg_llm_decode_batch. */
static void batch_same_as_one(const char *path, bool mixed, double atol, const char *what) {
  tg_llm *one, *tp;
  load_pair(path, NSEQ, &one, &tp);
  if (one && tp) {
    int att = 0;   /* the first attention layer (delta-net layers have states instead) */
    while (att + 1 < tp->cfg.n_layers && tp->layers[att].recurrent) att++;
    CHECK_MSG(tp->n_tp == 2 && tg_shard_axis(tp->layers[att].k_cache) == 1, "%s: the cache is not split by kv heads", what);
    if (tp->layers[0].recurrent) CHECK_MSG(tg_shard_axis(tp->layers[0].ssm_state) == 1, "%s: the states are not split by heads", what);
    CHECK_EQ_INT(tg_llm_batch_seq_rows(tp), tg_llm_batch_seq_rows(one));
    int V = one->cfg.n_vocab;
    static const int take[][NSEQ] = { { 7, 3, 1 }, { 1, 5, 2 }, { 0, 1, 9 }, { 4, 0, 1 } };
    int fed[NSEQ] = { 0 }, seqs[32];
    int32_t toks[32];
    bool ask[32];
    float *a = malloc(sizeof(float) * 32 * (size_t)V), *b = malloc(sizeof(float) * 32 * (size_t)V);
    for (size_t k = 0; mixed && k < sizeof take / sizeof take[0]; k++) {
      int n = 0, nl = 0;
      for (int s = 0; s < NSEQ; s++)
        for (int i = 0; i < take[k][s]; i++, n++) {
          seqs[n] = s, toks[n] = tok_of(s, fed[s]), ask[n] = fed[s] % 3 != 1;
          nl += ask[n];
          fed[s]++;
        }
      CHECK_OK(tg_llm_eval_batch(one, seqs, NULL, toks, n, ask, a) == 0);
      CHECK_MSG(tg_llm_eval_batch(tp, seqs, NULL, toks, n, ask, b) == 0, "%s step %zu: %s", what, k, tg_error());
      char step[96];
      snprintf(step, sizeof step, "%s: batched step %zu (%d rows, %d asked)", what, k, n, nl);
      test_close_f32(b, a, (size_t)nl * (size_t)V, 1e-4, atol, step);
    }
    for (int k = 0; k < 4; k++) {   /* decode: one row per sequence, in another order */
      for (int s = 0; s < NSEQ; s++) seqs[s] = (s + k) % NSEQ, toks[s] = tok_of(seqs[s], fed[seqs[s]]), fed[seqs[s]]++;
      CHECK_OK(tg_llm_decode_batch(one, seqs, toks, NSEQ, a) == 0);
      CHECK_MSG(tg_llm_decode_batch(tp, seqs, toks, NSEQ, b) == 0, "%s decode %d: %s", what, k, tg_error());
      char step[96];
      snprintf(step, sizeof step, "%s: decode step %d", what, k);
      test_close_f32(b, a, (size_t)NSEQ * (size_t)V, 1e-4, atol, step);
    }
    for (int s = 0; s < NSEQ; s++) {
      CHECK_OK(tg_llm_set_seq(tp, s) == 0);
      CHECK_EQ_INT(tg_llm_n_past(tp), fed[s]);
    }
    free(a); free(b);
  }
  tg_llm_free(one); tg_llm_free(tp);
}

/* Two sequences one at a time (tg_llm_set_seq + tg_llm_eval): a prompt
 * each, then greedy tokens (one device's) alternating between them. */
static void per_seq_same_as_one(const char *path, double atol, const char *what) {
  tg_llm *one, *tp;
  load_pair(path, 2, &one, &tp);
  if (one && tp) {
    int V = one->cfg.n_vocab;
    float *a = malloc(sizeof(float) * (size_t)V), *b = malloc(sizeof(float) * (size_t)V);
    int32_t next[2];
    for (int k = 0; k < 12; k++) {
      int s = k % 2, n = k < 2 ? 5 + 2 * s : 1;
      int32_t toks[8];
      for (int i = 0; i < n; i++) toks[i] = k < 2 ? tok_of(s, i) : next[s];
      CHECK_OK(tg_llm_set_seq(one, s) == 0 && tg_llm_set_seq(tp, s) == 0);
      CHECK_OK(tg_llm_eval(one, toks, n, a) == 0);
      CHECK_MSG(tg_llm_eval(tp, toks, n, b) == 0, "%s step %d: %s", what, k, tg_error());
      char step[96];
      snprintf(step, sizeof step, "%s: sequence %d, step %d", what, s, k);
      test_close_f32(b, a, (size_t)V, 1e-4, atol, step);
      int best = 0;
      for (int j = 1; j < V; j++) if (a[j] > a[best]) best = j;
      next[s] = best;
    }
    free(a); free(b);
  }
  tg_llm_free(one); tg_llm_free(tp);
}

/* A batched step of 4 rows of 2 sequences moves between the devices only
 * the allreduces' rows (4 x dim floats, counted read and written) and the
 * small inputs: each part reads its rows' cache blocks where they lie,
 * never a cache gathered. */
static void check_batch_copies(tg_llm *m) {
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  int32_t tok[4] = { 3, 4, 5, 6 }, pos[4] = { 0, 1, 0, 1 }, seq[4] = { 0, 0, 1, 1 }, last[4] = { 1, 1, 1, 1 }, rows[2] = { 1, 3 };
  m->batch_pos = llm_tp_input(m, tg_from_data(pos, TG_SHAPE(4), TG_I32));
  m->batch_seqs = llm_tp_input(m, tg_from_data(seq, TG_SHAPE(4), TG_I32));
  m->batch_last = llm_tp_input(m, tg_from_data(last, TG_SHAPE(4), TG_I32));
  CHECK_OK(tg_bind(m->kv_name, 2) == 0);
  tg_tensor *h = llm_hidden(m, tg_from_data(tok, TG_SHAPE(4), TG_I32));
  tg_tensor *out = h ? llm_logits(m, tg_take(h, llm_tp_input(m, tg_from_data(rows, TG_SHAPE(2), TG_I32)))) : NULL;
  m->batch_pos = m->batch_seqs = m->batch_last = NULL;
  static tg_schedule_entry e[2048];
  int n = out ? tg_schedule_list(&out, 1, e, 2048) : -1;
  int64_t biggest = 0;
  for (int i = 0; i < n && i < 2048; i++) if (e[i].copy && e[i].bytes > biggest) biggest = e[i].bytes;
  CHECK_MSG(n > 0 && biggest == 2 * 4 * (int64_t)sizeof(float) * m->cfg.dim, "%d entries (%s), a copy of %lld bytes", n, n > 0 ? "" : tg_error(),
            (long long)biggest);
  tg_scope_end();
  tensor_device_end(prev);
}

TEST(llm_tp_batch_copies) {
  tg_llm *m = tg_llm_load("goldens/llm_llama_tp.gguf", &(tg_llm_opts){ .devices = TP2, .cache_type = "f32", .n_seq = 2 });
  CHECK_MSG(m != NULL, "load: %s", tg_error());
  if (m) check_batch_copies(m);
  tg_llm_free(m);
}

TEST(llm_tp_batch_mixed_f32) { batch_same_as_one("goldens/llm_llama_tp.gguf", true, 1e-4, "F32"); }
TEST(llm_tp_set_seq_f32) { per_seq_same_as_one("goldens/llm_llama_tp.gguf", 1e-4, "F32"); }

/* MLA (its cache of each head's keys and values split by heads) and
 * delta-net layers (each sequence's conv and recurrent states split by
 * heads, the rows of a step's sequences taken per part). */
TEST(llm_tp_batch_mla_gdn) {
  batch_same_as_one("goldens/llm_deepseek2.gguf", true, 1e-4, "deepseek2");
  batch_same_as_one("goldens/llm_qwen35.gguf", false, 1e-4, "qwen35");
  per_seq_same_as_one("goldens/llm_qwen35.gguf", 1e-4, "qwen35");
}

TEST(llm_tp_batch_q8_0) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_llm_tp_batch_%d.gguf", (int)getpid());
  CHECK_OK(quant_model("goldens/llm_llama_tp.gguf", path, quant_ftype_by_name("Q8_0"), &(quant_model_opts){ .pure = true }) == 0);
  batch_same_as_one(path, true, 4e-2, "Q8_0");
  per_seq_same_as_one(path, 4e-2, "Q8_0");
  unlink(path);
}
