/* perplexity.c: tg_llm_perplexity, llama.cpp's llama-perplexity method:
 * chunks of n_ctx tokens, each from an empty cache with BOS at its first
 * position (when the vocabulary adds one), the second half of each chunk
 * scored against the next token; the standard error from the variance of
 * the per-token negative log-likelihoods. */
#include <math.h>
#include <string.h>
#include "llm/llm.h"
#include "util/util.h"

/* -log softmax(row)[tok] as llama.cpp's log_softmax: float max, double sum
 * of expf. */
static double token_nll(const float *row, int n_vocab, int tok) {
  float mx = row[0];
  for (int i = 1; i < n_vocab; i++) mx = row[i] > mx ? row[i] : mx;
  double sum = 0;
  for (int i = 0; i < n_vocab; i++) sum += expf(row[i] - mx);
  return -((double)(row[tok] - mx) - log(sum));
}

int tg_llm_perplexity(tg_llm *m, const int32_t *tokens, int n, const tg_ppl_opts *opts, tg_ppl_result *out) {
  if (!m) return tg_seterr("tg_llm_perplexity: no model");
  if (!tokens || !out) return tg_seterr("tg_llm_perplexity: tokens or out is NULL");
  tg_ppl_opts o = opts ? *opts : (tg_ppl_opts){ 0 };
  int n_ctx = o.n_ctx ? o.n_ctx : m->cfg.n_ctx, n_vocab = m->cfg.n_vocab;
  if (n_ctx < 3 || n_ctx > m->cfg.n_ctx)
    return tg_seterr("tg_llm_perplexity: n_ctx %d is out of range (3 to the model's cache size %d)", n_ctx, m->cfg.n_ctx);
  if (n < 2 * n_ctx)
    return tg_seterr("tg_llm_perplexity: %d tokens: at least %d are needed (2 * n_ctx %d)", n, 2 * n_ctx, n_ctx);
  if (o.n_batch < 0) return tg_seterr("tg_llm_perplexity: n_batch %d is negative", o.n_batch);
  if (o.add_bos && (o.bos < 0 || o.bos >= n_vocab)) return tg_seterr("tg_llm_perplexity: BOS %d is outside the vocabulary (%d)", o.bos, n_vocab);
  int n_batch = o.n_batch == 0 || o.n_batch > n_ctx ? n_ctx : o.n_batch;
  int n_chunk = n / n_ctx;
  if (o.n_chunks > 0 && o.n_chunks < n_chunk) n_chunk = o.n_chunks;
  int first = n_ctx / 2;
  float *logits = tg_xmalloc(sizeof(float) * (size_t)(n_ctx - first) * (size_t)n_vocab);   /* rows first.. */
  int32_t *chunk = tg_xmalloc(sizeof(int32_t) * (size_t)n_ctx);
  double nll = 0, nll2 = 0, t0 = tg_now_seconds();
  int count = 0, rc = 0;
  for (int c = 0; c < n_chunk && rc == 0; c++) {
    memcpy(chunk, tokens + (size_t)c * n_ctx, sizeof(int32_t) * (size_t)n_ctx);
    if (o.add_bos) chunk[0] = o.bos;
    m->n_past = 0;   /* each chunk from an empty cache */
    m->ring_top = 0;
    for (int b = 0; b < n_ctx && rc == 0; b += n_batch) {
      int T = n_ctx - b < n_batch ? n_ctx - b : n_batch;
      int skip = first - b < 0 ? 0 : first - b;   /* only the scored half is projected */
      rc = llm_eval_logits(m, chunk + b, T, skip, skip < T ? logits + (size_t)(b + skip - first) * n_vocab : NULL);
    }
    if (rc < 0) break;
    for (int j = first; j < n_ctx - 1; j++) {
      double v = token_nll(logits + (size_t)(j - first) * n_vocab, n_vocab, chunk[j + 1]);
      nll += v;
      nll2 += v * v;
    }
    count += n_ctx - 1 - first;
    if (o.on_chunk) o.on_chunk(o.user, c, exp(nll / count));
  }
  free(logits);
  free(chunk);
  if (rc < 0) return -1;
  double mean = nll / count, var = nll2 / count - mean * mean;
  *out = (tg_ppl_result){ .ppl = exp(mean), .nll = mean, .n_chunks = n_chunk, .n_scored = count,
                          .n_tokens = n_chunk * n_ctx, .seconds = tg_now_seconds() - t0 };
  out->nll_err = var > 0 ? sqrt(var / (count - 1)) : NAN;
  out->ppl_err = out->nll_err * out->ppl;
  return 0;
}
