/* llm_eval_all.c: the logits of every position of a sequence
 * (tg_llm_eval_all), for scoring text (tg_llm_perplexity). The tokens run
 * in pieces of up to LLM_EVAL_ALL_MAX positions (a model with sliding
 * rings: LLM_MAX_CHUNK, what its rings hold), each a JIT over the position
 * variables (one per piece size and rows skipped, LLM_EVAL_JITS kept), so
 * after two calls a piece replays its kernels at any position; the decode
 * JITs of tg_llm_eval are separate and untouched. llm_eval_logits projects
 * only the rows wanted (tg_llm_perplexity: a chunk's second half), as
 * llama.cpp's batch output flags. */
#include <string.h>
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "util/util.h"

#define LLM_EVAL_ALL_MAX 512

/* A piece's step: the logits of rows skip.. of its T tokens (only the last
 * row when skip >= T, for the cache writes the graph carries). */
static int piece_step(void *ctx, tg_tensor *const *in, int nin, tg_tensor **out, int nout) {
  (void)nin; (void)nout;
  llm_eval_jit *e = ctx;
  tg_tensor *h = llm_hidden(e->m, in[0]);
  int lo = e->skip < e->T ? e->skip : e->T - 1;
  if (h && lo > 0) h = TG_GET(h, TG_FROM(lo));
  out[0] = h ? llm_logits(e->m, h) : NULL;                                                     /* (T - lo, n_vocab) */
  return out[0] ? 0 : -1;
}

/* The JIT for pieces of T tokens skipping skip rows: a kept one, else the
 * least recently used slot made over. */
static llm_eval_jit *piece_jit(tg_llm *m, int T, int skip) {
  llm_eval_jit *e = &m->eval_jit[0];
  for (int i = 0; i < LLM_EVAL_JITS; i++) {
    llm_eval_jit *s = &m->eval_jit[i];
    if (s->jit && s->T == T && s->skip == skip) { e = s; goto found; }
    if (s->used < e->used) e = s;
  }
  tg_jit_free(e->jit);
  *e = (llm_eval_jit){ .m = m, .T = T, .skip = skip };
  e->jit = tg_jit_new(piece_step, e);
found:
  e->used = ++m->eval_clock;
  return e->jit ? e : NULL;
}

void llm_eval_jits_free(tg_llm *m) {
  for (int i = 0; i < LLM_EVAL_JITS; i++) tg_jit_free(m->eval_jit[i].jit), m->eval_jit[i].jit = NULL;
}

/* Runs T tokens at m->n_past, writing the logits of rows skip..T-1 to out
 * (nothing when skip >= T). */
static int eval_piece(tg_llm *m, const int32_t *tokens, int T, int skip, float *out) {
  llm_eval_jit *e = piece_jit(m, T, skip < T ? skip : T);
  if (!e) return -1;
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  tg_tensor *in = tg_from_data(tokens, TG_SHAPE(T), TG_I32), *logits = NULL;
  int rc = in && llm_bind_chunk(m, T) == 0 && tg_jit_call(e->jit, &in, 1, &logits, 1) == 0 ? 0 : -1;
  if (rc == 0) rc = skip < T ? tg_data(logits, out, sizeof(float) * (size_t)(T - skip) * (size_t)m->cfg.n_vocab) : tg_realize(logits);
  tg_scope_end();
  tensor_device_end(prev);
  if (rc < 0) return -1;
  memcpy(m->history + m->n_past, tokens, sizeof(int32_t) * (size_t)T);
  m->n_past += T;
  if (m->n_past > m->ring_top) m->ring_top = m->n_past;
  return 0;
}

int llm_eval_logits(tg_llm *m, const int32_t *tokens, int n, int skip, float *logits) {
  if (!m) return tg_seterr("tg_llm_eval_all: no model");
  if (llm_pp_refuse(m, "tg_llm_eval_all") < 0) return -1;
  if (!tokens || (!logits && skip < n)) return tg_seterr("tg_llm_eval_all: tokens or logits is NULL");
  if (n <= 0) return tg_seterr("tg_llm_eval_all: no tokens (n %d)", n);
  if (n > m->cfg.n_ctx - m->n_past)
    return tg_seterr("tg_llm_eval_all: %d tokens do not fit: %d of the context's %d positions are used", n, m->n_past, m->cfg.n_ctx);
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab) return tg_seterr("tg_llm_eval_all: token %d is outside the vocabulary (%d)", tokens[i], m->cfg.n_vocab);
  int cap = m->ring || m->arch->recurrent ? LLM_MAX_CHUNK : LLM_EVAL_ALL_MAX, start = m->n_past;
  for (int done = 0; done < n;) {
    int T = n - done < cap ? n - done : cap, sk = skip - done < 0 ? 0 : skip - done;
    float *out = sk < T ? logits + (size_t)(done + sk - skip) * (size_t)m->cfg.n_vocab : NULL;
    if (eval_piece(m, tokens + done, T, sk, out) < 0) {
      m->n_past = m->arch->recurrent ? 0 : start;   /* a delta-net state took the earlier pieces: start over */
      return -1;
    }
    done += T;
  }
  return 0;
}

int tg_llm_eval_all(tg_llm *m, const int32_t *tokens, int n, float *logits) {
  if (m && !logits) return tg_seterr("tg_llm_eval_all: logits is NULL");
  return llm_eval_logits(m, tokens, n, 0, logits);
}
