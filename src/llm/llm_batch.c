/* llm_batch.c: several sequences in one model (tg_llm_opts.n_seq > 1), as
 * llama.cpp's parallel sequences: each has its own block of the KV caches,
 * its own positions and history. tg_llm_set_seq picks the one that the
 * single-sequence calls (tg_llm_eval, _eval_all, _generate, _rewind,
 * _embed ...) work on: their graphs read the sequence as a variable, so
 * the same compiled chunks serve every sequence. tg_llm_decode_batch
 * appends one token to each of several sequences in one forward pass: the
 * weights are read once for all the rows, and each row attends to its own
 * block with its own length (the longest row's, the others masked). A
 * batch of B rows replays the JIT of the next power of two, its extra rows
 * repeating the first (they write the same values to the same rows). */
#include <string.h>
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "util/util.h"

int tg_llm_n_seq(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_n_seq: model is NULL");
  return m->n_seq;
}

int tg_llm_seq(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_seq: model is NULL");
  return m->seq;
}

/* The current sequence's n_past and ring_top back to their arrays. */
static void save_current(tg_llm *m) {
  m->seq_n_past[m->seq] = m->n_past;
  m->seq_ring_top[m->seq] = m->ring_top;
}

static void load_current(tg_llm *m) {
  m->n_past = m->seq_n_past[m->seq];
  m->ring_top = m->seq_ring_top[m->seq];
  m->history = m->history_all + (size_t)m->seq * (size_t)m->cfg.n_ctx;
}

int tg_llm_set_seq(tg_llm *m, int seq) {
  if (!m) return tg_seterr("tg_llm_set_seq: model is NULL");
  if (seq < 0 || seq >= m->n_seq) return tg_seterr("tg_llm_set_seq: sequence %d is out of range (the model holds %d)", seq, m->n_seq);
  save_current(m);
  m->seq = seq;
  load_current(m);
  return 0;
}

static int batch_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  tg_llm *m = ctx;
  m->batch_pos = in[1];
  m->batch_seqs = in[2];
  tg_tensor *h = llm_hidden(m, in[0]);
  out[0] = h ? llm_logits(m, h) : NULL;
  m->batch_pos = m->batch_seqs = NULL;
  return out[0] ? 0 : -1;
}

/* Call after save_current: every sequence's n_past is in seq_n_past. */
static int check_batch(const tg_llm *m, const int *seqs, const int32_t *tokens, int n) {
  if (!seqs || !tokens) return tg_seterr("tg_llm_decode_batch: seqs or tokens is NULL");
  if (n <= 0 || n > m->n_seq) return tg_seterr("tg_llm_decode_batch: %d rows (1 to the model's %d sequences)", n, m->n_seq);
  for (int i = 0; i < n; i++) {
    int s = seqs[i];
    if (s < 0 || s >= m->n_seq) return tg_seterr("tg_llm_decode_batch: sequence %d is out of range (the model holds %d)", s, m->n_seq);
    for (int k = 0; k < i; k++)
      if (seqs[k] == s) return tg_seterr("tg_llm_decode_batch: sequence %d appears twice (rows %d and %d)", s, k, i);
    if (m->seq_n_past[s] >= m->cfg.n_ctx) return tg_seterr("tg_llm_decode_batch: sequence %d is full (%d positions)", s, m->cfg.n_ctx);
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab)
      return tg_seterr("tg_llm_decode_batch: token %d is outside the vocabulary (%d)", tokens[i], m->cfg.n_vocab);
  }
  return 0;
}

int tg_llm_decode_batch(tg_llm *m, const int *seqs, const int32_t *tokens, int n, float *logits) {
  if (!m) return tg_seterr("tg_llm_decode_batch: model is NULL");
  save_current(m);
  if (check_batch(m, seqs, tokens, n) < 0) return -1;
  int V = m->cfg.n_vocab;
  if (m->n_seq == 1) return tg_llm_eval(m, tokens, 1, logits);   /* one row of the one sequence */
  int which = 0;
  while ((1 << which) < n) which++;
  int B = 1 << which, kv = 0;
  int32_t tok[LLM_MAX_SEQ], pos[LLM_MAX_SEQ], sq[LLM_MAX_SEQ];
  for (int i = 0; i < B; i++) {
    int r = i < n ? i : 0;
    tok[i] = tokens[r];
    sq[i] = seqs[r];
    pos[i] = m->seq_n_past[seqs[r]];
    if (pos[i] + 1 > kv) kv = pos[i] + 1;
  }
  if (!m->batch_jit[which]) m->batch_jit[which] = tg_jit_new(batch_step, m);
  float *all = logits ? tg_xmalloc(sizeof(float) * (size_t)B * (size_t)V) : NULL;
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  tg_tensor *in[3] = { tg_from_data(tok, TG_SHAPE(B), TG_I32), tg_from_data(pos, TG_SHAPE(B), TG_I32),
                       tg_from_data(sq, TG_SHAPE(B), TG_I32) }, *out = NULL;
  int rc = -1;
  if (m->batch_jit[which] && in[0] && in[1] && in[2] && tg_bind(m->kv_name, kv) == 0 &&
      tg_jit_call(m->batch_jit[which], in, 3, &out, 1) == 0)
    rc = all ? tg_data(out, all, sizeof(float) * (size_t)B * (size_t)V) : tg_realize(out);
  tg_scope_end();
  tensor_device_end(prev);
  if (rc == 0) {
    if (logits) memcpy(logits, all, sizeof(float) * (size_t)n * (size_t)V);
    for (int i = 0; i < n; i++) {
      int s = seqs[i];
      m->history_all[(size_t)s * (size_t)m->cfg.n_ctx + (size_t)pos[i]] = tokens[i];
      m->seq_n_past[s] = pos[i] + 1;
      if (m->seq_n_past[s] > m->seq_ring_top[s]) m->seq_ring_top[s] = m->seq_n_past[s];
    }
  }
  load_current(m);
  free(all);
  return rc;
}
