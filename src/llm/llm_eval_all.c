/* llm_eval_all.c: the logits of every position of a sequence
 * (tg_llm_eval_all), for scoring text (tg_llm_perplexity). The tokens run
 * as eager graphs of up to LLM_EVAL_ALL_MAX positions (a model with sliding
 * rings: LLM_MAX_CHUNK, what its rings hold) at the position variables, as
 * tg_llm_embed does, so a piece size compiles once for every position; the
 * decode JITs of tg_llm_eval are not touched. llm_eval_logits projects
 * only the rows wanted (tg_llm_perplexity: a chunk's second half), as
 * llama.cpp's batch output flags. */
#include <string.h>
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "util/util.h"

#define LLM_EVAL_ALL_MAX 512

/* Runs T tokens at m->n_past, writing the logits of rows skip..T-1 to out
 * (nothing when skip >= T: only the last row is projected, for the cache
 * writes the graph carries). */
static int eval_piece(tg_llm *m, const int32_t *tokens, int T, int skip, float *out) {
  const char *prev = tensor_device_begin(m->device);
  tg_scope_begin();
  tg_tensor *in = tg_from_data(tokens, TG_SHAPE(T), TG_I32);
  int rc = in && tg_bind(m->pos_name, m->n_past) == 0 && tg_bind(m->kv_name, m->n_past + T) == 0 ? 0 : -1;
  tg_tensor *h = rc == 0 ? llm_hidden(m, in) : NULL;
  int lo = skip < T ? skip : T - 1;
  if (h && lo > 0) h = TG_GET(h, TG_FROM(lo));
  tg_tensor *logits = h ? llm_logits(m, h) : NULL;                                             /* (T - lo, n_vocab) */
  if (!logits) rc = -1;
  else if (skip < T) rc = tg_data(logits, out, sizeof(float) * (size_t)(T - skip) * (size_t)m->cfg.n_vocab);
  else rc = tg_realize(logits);
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
  if (!tokens || (!logits && skip < n)) return tg_seterr("tg_llm_eval_all: tokens or logits is NULL");
  if (n <= 0) return tg_seterr("tg_llm_eval_all: no tokens (n %d)", n);
  if (n > m->cfg.n_ctx - m->n_past)
    return tg_seterr("tg_llm_eval_all: %d tokens do not fit: %d of the context's %d positions are used", n, m->n_past, m->cfg.n_ctx);
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab) return tg_seterr("tg_llm_eval_all: token %d is outside the vocabulary (%d)", tokens[i], m->cfg.n_vocab);
  int cap = m->ring ? LLM_MAX_CHUNK : LLM_EVAL_ALL_MAX, start = m->n_past;
  for (int done = 0; done < n;) {
    int T = n - done < cap ? n - done : cap, sk = skip - done < 0 ? 0 : skip - done;
    float *out = sk < T ? logits + (size_t)(done + sk - skip) * (size_t)m->cfg.n_vocab : NULL;
    if (eval_piece(m, tokens + done, T, sk, out) < 0) {
      m->n_past = start;
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
