/* llm_batch.c: several sequences in one model (tg_llm_opts.n_seq > 1), as
 * llama.cpp's parallel sequences: each has its own block of the KV caches,
 * its own positions and history. tg_llm_set_seq picks the one that the
 * single-sequence calls (tg_llm_eval, _eval_all, _generate, _rewind,
 * _embed ...) work on: their graphs read the sequence as a variable, so
 * the same compiled chunks serve every sequence.
 *
 * tg_llm_eval_batch is llama.cpp's unified batch: rows of tokens, each of
 * some sequence at its next position (a sequence's rows consecutive, so
 * pieces of prompts and single decode tokens mix), in one forward pass:
 * the weights are read once for all the rows, and each row attends to its
 * own sequence's block up to its own position (the longest row's length,
 * the rest masked). Only the rows asked for are projected to logits. A
 * step of B rows replays the JIT of the next power of two, its extra rows
 * repeating the first (they write the same values to the same rows); its
 * logits rows are rounded up to a power of two too, at least min(B,
 * n_seq), the extra ones repeating the first asked for.
 * tg_llm_decode_batch is its one row per sequence, every row's logits. */
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

int tg_llm_batch_seq_rows(const tg_llm *m) {
  if (!m) return tg_seterr("tg_llm_batch_seq_rows: model is NULL");
  if (m->arch->recurrent) return 1;   /* a delta-net layer's batched form steps each row's state once */
  return m->ring ? LLM_MAX_CHUNK : LLM_MAX_BATCH;   /* a ring holds the window + LLM_MAX_CHUNK - 1 */
}

static int batch_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nout;
  tg_llm *m = ctx;
  /* under tensor parallel the rows' positions, sequences and last rows
   * replicated onto the model's devices (each part reads its own copy) */
  m->batch_pos = llm_tp_input(m, in[1]);
  m->batch_seqs = llm_tp_input(m, in[2]);
  m->batch_last = llm_tp_input(m, in[3]);
  tg_tensor *h = llm_hidden(m, in[0]);
  out[0] = h && nin > 4 ? llm_logits(m, tg_take(h, llm_tp_input(m, in[4]))) : h;
  m->batch_pos = m->batch_seqs = m->batch_last = NULL;
  return out[0] ? 0 : -1;
}

static int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

/* The step JIT of B rows and L logits rows: made on first use, replacing
 * the least recently used when all are taken. */
static tg_jit *batch_jit(tg_llm *m, int B, int L) {
  llm_batch_jit *slot = &m->batch_jit[0];
  for (int i = 0; i < LLM_BATCH_JITS; i++) {
    llm_batch_jit *j = &m->batch_jit[i];
    if (j->jit && j->B == B && j->L == L) { slot = j; goto found; }
    if (slot->jit && (!j->jit || j->used < slot->used)) slot = j;   /* an empty one, else the least recently used */
  }
  tg_jit_free(slot->jit);
  *slot = (llm_batch_jit){ .B = B, .L = L, .jit = tg_jit_new(batch_step, m) };
found:
  slot->used = ++m->batch_clock;
  return slot->jit;
}

/* Row i's position into pos[i] (given, or its sequence's next), checking
 * every row: its sequence, its token, its position (each sequence's rows
 * at consecutive positions from its n_past), the room left, how many rows
 * one sequence may have. Call after save_current. */
static int check_batch(const tg_llm *m, const int *seqs, const int32_t *given, const int32_t *tokens, int n, int32_t *pos) {
  static const char *fn = "tg_llm_eval_batch";
  if (!seqs || !tokens) return tg_seterr("%s: seqs or tokens is NULL", fn);
  if (n <= 0 || n > LLM_MAX_BATCH) return tg_seterr("%s: %d rows (1 to %d)", fn, n, LLM_MAX_BATCH);
  int next[LLM_MAX_SEQ], rows[LLM_MAX_SEQ], per = tg_llm_batch_seq_rows(m);
  for (int s = 0; s < m->n_seq; s++) next[s] = m->seq_n_past[s], rows[s] = 0;
  for (int i = 0; i < n; i++) {
    int s = seqs[i];
    if (s < 0 || s >= m->n_seq) return tg_seterr("%s: row %d: sequence %d is out of range (the model holds %d)", fn, i, s, m->n_seq);
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab)
      return tg_seterr("%s: row %d: token %d is outside the vocabulary (%d)", fn, i, tokens[i], m->cfg.n_vocab);
    if (given && given[i] != next[s])
      return tg_seterr("%s: row %d: position %d of sequence %d is not its next (%d): a sequence's rows continue its cache in order",
                       fn, i, given[i], s, next[s]);
    if (next[s] >= m->cfg.n_ctx) return tg_seterr("%s: row %d: sequence %d is full (%d positions)", fn, i, s, m->cfg.n_ctx);
    if (++rows[s] > per)
      return tg_seterr("%s: sequence %d has more than %d rows (%s)", fn, s, per,
                       per == 1 ? "delta-net layers take one token per sequence in a batch" : "what its sliding-window rings hold");
    pos[i] = next[s]++;
  }
  return 0;
}

int tg_llm_eval_batch(tg_llm *m, const int *seqs, const int32_t *positions, const int32_t *tokens, int n, const bool *want, float *logits) {
  if (!m) return tg_seterr("tg_llm_eval_batch: model is NULL");
  if (llm_pp_refuse(m, "tg_llm_eval_batch") < 0) return -1;
  save_current(m);
  int32_t pos[LLM_MAX_BATCH];
  if (check_batch(m, seqs, positions, tokens, n, pos) < 0) return -1;
  int V = m->cfg.n_vocab, B = pow2_at_least(n), nl = 0, kv = 0;
  int32_t tok[LLM_MAX_BATCH], ps[LLM_MAX_BATCH], sq[LLM_MAX_BATCH], last[LLM_MAX_BATCH], out[LLM_MAX_BATCH];
  int last_of[LLM_MAX_SEQ];
  for (int i = 0; i < n; i++) last_of[seqs[i]] = pos[i];   /* rows in order: the last one stays */
  for (int i = 0; i < n; i++)
    if (!want || want[i]) out[nl++] = i;
  if (!logits) nl = 0;
  /* logits rows: at least min(rows, sequences), so the steps of a server
   * (a few decode rows, prompt pieces) share few compiled graphs; their
   * weights are read once whatever the count */
  int least = B < m->n_seq ? B : m->n_seq;
  int L = logits ? pow2_at_least(nl > least ? nl : least) : 0;
  if (!nl) out[0] = 0;
  for (int i = 0; i < B; i++) {
    int r = i < n ? i : 0;
    tok[i] = tokens[r], sq[i] = seqs[r], ps[i] = pos[r], last[i] = last_of[seqs[r]];
    if (ps[i] + 1 > kv) kv = ps[i] + 1;
  }
  for (int i = nl; i < L; i++) out[i] = out[0];
  tg_jit *jit = batch_jit(m, B, L);
  float *all = L ? tg_xmalloc(sizeof(float) * (size_t)L * (size_t)V) : NULL;
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  tg_tensor *in[5] = { tg_from_data(tok, TG_SHAPE(B), TG_I32), tg_from_data(ps, TG_SHAPE(B), TG_I32),
                       tg_from_data(sq, TG_SHAPE(B), TG_I32), tg_from_data(last, TG_SHAPE(B), TG_I32),
                       L ? tg_from_data(out, TG_SHAPE(L), TG_I32) : NULL }, *res = NULL;
  int nin = L ? 5 : 4, rc = -1;
  bool inputs = in[0] && in[1] && in[2] && in[3] && (!L || in[4]);
  if (jit && inputs && tg_bind(m->kv_name, kv) == 0 && tg_jit_call(jit, in, nin, &res, 1) == 0)
    rc = all ? tg_data(res, all, sizeof(float) * (size_t)L * (size_t)V) : tg_realize(res);
  tg_scope_end();
  tensor_device_end(prev);
  if (rc == 0) {
    if (all) memcpy(logits, all, sizeof(float) * (size_t)nl * (size_t)V);
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

int tg_llm_decode_batch(tg_llm *m, const int *seqs, const int32_t *tokens, int n, float *logits) {
  if (!m) return tg_seterr("tg_llm_decode_batch: model is NULL");
  if (llm_pp_refuse(m, "tg_llm_decode_batch") < 0) return -1;
  if (!seqs) return tg_seterr("tg_llm_decode_batch: seqs or tokens is NULL");
  if (n <= 0 || n > m->n_seq) return tg_seterr("tg_llm_decode_batch: %d rows (1 to the model's %d sequences)", n, m->n_seq);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < i; k++)
      if (seqs[k] == seqs[i] && seqs[i] >= 0 && seqs[i] < m->n_seq)
        return tg_seterr("tg_llm_decode_batch: sequence %d appears twice (rows %d and %d)", seqs[i], k, i);
  return tg_llm_eval_batch(m, seqs, NULL, tokens, n, NULL, logits);
}
