/* generate.c: prompt in, streamed text out (tg_llm_generate): prefix reuse,
 * sampling, end-of-generation tokens, UTF-8-safe streaming. */
#include <string.h>
#include <time.h>
#include "llm/llm.h"
#include "util/util.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool llm_is_stop(const tg_tokenizer *tok, int32_t id, const int32_t *extra, int n_extra) {
  if (tg_tokenizer_is_eog(tok, id)) return true;
  for (int i = 0; i < n_extra; i++) if (extra[i] == id) return true;
  return false;
}

int llm_reusable_prefix(const tg_llm *m, const int32_t *prompt, int n_prompt) {
  int keep = 0;
  while (keep < m->n_past && keep < n_prompt - 1 && m->history[keep] == prompt[keep]) keep++;
  return keep;
}

int tg_llm_generate(tg_llm *m, const struct tg_tokenizer *tok, const int32_t *prompt, int n_prompt, int max_tokens,
                    tg_sampler *s, const int32_t *extra_stop, int n_extra, tg_llm_emit_fn emit, void *user, tg_gen_stats *stats) {
  tg_gen_stats st = { .n_prompt = n_prompt };
  if (!m || !tok || !s) return tg_seterr("tg_llm_generate: no model, tokenizer or sampler");
  if (n_prompt <= 0) return tg_seterr("tg_llm_generate: empty prompt");
  if (n_prompt >= m->cfg.n_ctx)
    return tg_seterr("tg_llm_generate: the prompt has %d tokens; the context holds %d", n_prompt, m->cfg.n_ctx);
  int keep = llm_reusable_prefix(m, prompt, n_prompt);
  tg_llm_rewind(m, keep);
  keep = m->n_past;   /* less when a sliding layer's ring no longer holds the window before keep */
  st.n_reused = keep;
  float *logits = tg_xmalloc(sizeof(float) * (size_t)m->cfg.n_vocab);
  double t0 = now();
  int rc = tg_llm_eval(m, prompt + keep, n_prompt - keep, logits);
  st.prompt_seconds = now() - t0;
  tg_token_stream *ts = tg_token_stream_new(tok, m->special);   /* end tokens stop before they are rendered */
  t0 = now();
  while (rc == 0 && st.n_generated < max_tokens) {
    int32_t id = tg_sampler_sample(s, logits, m->cfg.n_vocab);
    if (id < 0) { rc = -1; break; }   /* e.g. a grammar that allows no token */
    if (llm_is_stop(tok, id, extra_stop, n_extra)) { st.hit_eog = true; break; }
    st.n_generated++;
    size_t len = 0;
    const char *piece = tg_token_stream_push(ts, id, &len);
    if (!piece) { rc = -1; break; }
    if (len && emit && !emit(user, piece, len)) break;
    if (m->n_past >= m->cfg.n_ctx) { st.hit_ctx = true; break; }
    /* the last token is not fed: nothing needs its logits, and a next
     * turn's prompt, which holds it, feeds it with the new text after the
     * reused prefix (one chunk, not a step of its own now) */
    if (st.n_generated < max_tokens) rc = tg_llm_eval(m, &id, 1, logits);
  }
  if (rc == 0) {
    size_t len = 0;
    const char *rest = tg_token_stream_flush(ts, &len);
    if (rest && len && emit) emit(user, rest, len);
  }
  st.gen_seconds = now() - t0;
  tg_token_stream_free(ts);
  free(logits);
  if (stats) *stats = st;
  return rc;
}
