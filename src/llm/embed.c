/* embed.c: a sequence's embedding (tg_llm_embed): its tokens run from
 * position 0 in the prompt's chunks, and the last hidden state (after the
 * final norm) of every token summed on the device, chunk by chunk, then
 * averaged: llama.cpp's mean pooling. Eager graphs (no JIT): an embedding
 * request is rare next to decode steps; the position variables keep the
 * kernels of each chunk size reusable. */
#include <string.h>
#include "llm/llm.h"
#include "tensor/tensor.h"
#include "util/util.h"

int tg_llm_embed(tg_llm *m, const int32_t *tokens, int n, float *out) {
  if (!m) return tg_seterr("tg_llm_embed: no model");
  if (llm_pp_refuse(m, "tg_llm_embed") < 0) return -1;
  if (!tokens || !out) return tg_seterr("tg_llm_embed: tokens or out is NULL");
  if (n <= 0 || n > m->cfg.n_ctx) return tg_seterr("tg_llm_embed: %d tokens (1 to the context's %d)", n, m->cfg.n_ctx);
  for (int i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.n_vocab) return tg_seterr("tg_llm_embed: token %d is outside the vocabulary (%d)", tokens[i], m->cfg.n_vocab);
  int dim = m->cfg.dim;
  double *sum = tg_xcalloc((size_t)dim, sizeof(double));
  float *part = tg_xmalloc((size_t)dim * sizeof(float));
  tg_llm_rewind(m, 0);   /* the sequence attends to itself only */
  m->n_past = 0;
  m->ring_top = 0;
  int rc = 0;
  for (int done = 0; done < n && rc == 0;) {
    int which = 0;
    while (m->chunk[which] > n - done) which++;
    int T = m->chunk[which];
    const char *prev = tensor_device_begin(m->device);
    tg_scope_begin();
    tg_tensor *in = tg_from_data(tokens + done, TG_SHAPE(T), TG_I32);
    rc = in && llm_bind_chunk(m, T) == 0 ? 0 : -1;
    tg_tensor *h = rc == 0 ? llm_hidden(m, in) : NULL;
    tg_tensor *s = h ? tg_sum(h, TG_AXES(0), false) : NULL;                                   /* (dim,) */
    rc = s ? tg_data(s, part, sizeof(float) * (size_t)dim) : -1;
    tg_scope_end();
    tensor_device_end(prev);
    if (rc < 0) break;
    for (int k = 0; k < dim; k++) sum[k] += part[k];
    memcpy(m->history + m->n_past, tokens + done, sizeof(int32_t) * (size_t)T);
    m->n_past += T;
    if (m->n_past > m->ring_top) m->ring_top = m->n_past;
    done += T;
  }
  if (rc < 0) m->n_past = 0;   /* the cache holds part of a sequence: nothing to reuse */
  for (int k = 0; k < dim && rc == 0; k++) out[k] = (float)(sum[k] / n);
  free(sum);
  free(part);
  return rc;
}
