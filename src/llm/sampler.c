/* sampler.c: picking the next token from logits: greedy, or top-k, top-p,
 * min-p and temperature (llama.cpp's default order) and a seeded draw;
 * with a grammar, over the tokens its mask allows (src/grammar). */
#include <math.h>
#include <stdlib.h>
#include "tg.h"
#include "util/util.h"

struct tg_sampler {
  tg_sampling p;
  uint64_t state;
  int *idx;          /* candidates, sorted by logit */
  float *prob;
  int cap;
  tg_grammar *grammar;         /* NULL: none */
  const tg_tokenizer *tok;     /* the grammar's token texts */
  uint8_t *allowed;            /* the grammar's mask (tokenizer's vocabulary) */
  float *masked;               /* the logits with disallowed ones at -inf */
  int masked_cap;
};

tg_sampling tg_sampling_default(void) {
  return (tg_sampling){ .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .seed = 0 };
}

tg_sampler *tg_sampler_new(const tg_sampling *s) {
  if (s && !isfinite(s->temperature)) TG_FAIL("tg_sampler_new: temperature %g is not a finite number", s->temperature);
  if (s && !(s->top_p >= 0 && s->top_p <= 1)) TG_FAIL("tg_sampler_new: top_p %g is not in [0, 1]", s->top_p);
  if (s && !(s->min_p >= 0 && s->min_p <= 1)) TG_FAIL("tg_sampler_new: min_p %g is not in [0, 1]", s->min_p);
  if (s && s->top_k < 0) TG_FAIL("tg_sampler_new: top_k %d is negative", s->top_k);
  tg_sampler *r = tg_xcalloc(1, sizeof *r);
  r->p = s ? *s : tg_sampling_default();
  r->state = r->p.seed ^ 0x9e3779b97f4a7c15ull;
  return r;
}

void tg_sampler_free(tg_sampler *s) {
  if (!s) return;
  free(s->allowed);
  free(s->masked);
  free(s->idx);
  free(s->prob);
  free(s);
}

/* splitmix64: a uniform double in [0, 1) */
static double next_uniform(tg_sampler *s) {
  uint64_t z = (s->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

static int by_logit(const void *a, const void *b, void *ctx) {
  const float *l = ctx;
  float x = l[*(const int *)a], y = l[*(const int *)b];
  return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

int tg_sampler_set_grammar(tg_sampler *s, tg_grammar *g, const tg_tokenizer *tok) {
  if (!s) return tg_seterr("tg_sampler_set_grammar: no sampler");
  if (g && !tok) return tg_seterr("tg_sampler_set_grammar: a grammar needs the tokenizer");
  free(s->allowed);
  s->allowed = NULL;
  s->grammar = g;
  s->tok = g ? tok : NULL;
  if (g) s->allowed = tg_xmalloc((size_t)tg_tokenizer_n_vocab(tok));
  return 0;
}

static int32_t sample_free(tg_sampler *s, const float *logits, int n);

/* The grammar's mask over logits, a draw from what is left, and the
 * grammar advanced past the token (not past an end-of-generation one). */
static int32_t sample_grammar(tg_sampler *s, const float *logits, int n) {
  int nv = tg_tokenizer_n_vocab(s->tok);
  int count = tg_grammar_mask(s->grammar, s->tok, s->allowed);
  if (count < 0) return -1;
  if (s->masked_cap < n) {
    s->masked = tg_xrealloc(s->masked, sizeof(float) * (size_t)n);
    s->masked_cap = n;
  }
  int best = -1;
  for (int i = 0; i < n; i++) {
    bool ok = i < nv && s->allowed[i] && !isnan(logits[i]);
    s->masked[i] = ok ? logits[i] : -INFINITY;
    if (ok && (best < 0 || logits[i] > logits[best])) best = i;
  }
  if (best < 0) return tg_seterr("tg_sampler_sample: the grammar allows no token here");
  int32_t id = sample_free(s, s->masked, n);
  if (id < 0 || id >= nv || !s->allowed[id]) id = best;   /* only rounding could get here */
  if (tg_tokenizer_is_eog(s->tok, id)) return id;
  char buf[256];
  int len = tg_token_to_piece(s->tok, id, false, buf, sizeof buf);
  char *big = NULL;
  if (len < 0) {
    big = tg_xmalloc((size_t)-len);
    len = tg_token_to_piece(s->tok, id, false, big, -len);
  }
  int rc = tg_grammar_accept(s->grammar, big ? big : buf, (size_t)len);
  free(big);
  return rc ? -1 : id;
}

int32_t tg_sampler_sample(tg_sampler *s, const float *logits, int n) {
  if (!s || !logits || n <= 0) return tg_seterr("tg_sampler_sample: %s", !s ? "no sampler" : !logits ? "logits is NULL" : "no logits (n <= 0)");
  return s->grammar ? sample_grammar(s, logits, n) : sample_free(s, logits, n);
}

static int32_t sample_free(tg_sampler *s, const float *logits, int n) {
  int best = 0;
  for (int i = 1; i < n; i++) if (logits[i] > logits[best]) best = i;
  if (s->p.temperature <= 0) return best;
  if (s->cap < n) {
    s->idx = tg_xrealloc(s->idx, sizeof(int) * (size_t)n);
    s->prob = tg_xrealloc(s->prob, sizeof(float) * (size_t)n);
    s->cap = n;
  }
  /* candidates, without sorting the whole vocabulary: the k largest logits
   * (a min-heap), or without top-k every logit min-p could keep
   * (p_i >= min_p * p_max, i.e. l_i >= l_max + ln(min_p)) */
  double max = logits[best];
  int k = 0;
  if (s->p.top_k > 0 && s->p.top_k < n) {
    int K = s->p.top_k;
    for (int i = 0; i < n; i++) {
      if (k < K) {   /* sift up */
        int c = k++;
        s->idx[c] = i;
        while (c > 0 && logits[s->idx[(c - 1) / 2]] > logits[s->idx[c]]) { int t = s->idx[c]; s->idx[c] = s->idx[(c - 1) / 2]; s->idx[(c - 1) / 2] = t; c = (c - 1) / 2; }
      } else if (logits[i] > logits[s->idx[0]]) {   /* replace the smallest, sift down */
        s->idx[0] = i;
        for (int c = 0;;) {
          int l = 2 * c + 1, r = l + 1, m = c;
          if (l < K && logits[s->idx[l]] < logits[s->idx[m]]) m = l;
          if (r < K && logits[s->idx[r]] < logits[s->idx[m]]) m = r;
          if (m == c) break;
          int t = s->idx[c]; s->idx[c] = s->idx[m]; s->idx[m] = t; c = m;
        }
      }
    }
  } else {
    double floor_l = s->p.min_p > 0 ? max + log((double)s->p.min_p) : -INFINITY;
    for (int i = 0; i < n; i++) if (logits[i] >= floor_l) s->idx[k++] = i;
  }
  if (k == 0) return best;   /* NaN logits */
  qsort_r(s->idx, (size_t)k, sizeof(int), by_logit, (void *)logits);
  /* the distribution top-p and min-p see (before temperature, as in
   * llama.cpp): over the k after top-k, else over the whole vocabulary */
  double sum = 0;
  for (int i = 0; i < k; i++) sum += s->prob[i] = (float)exp(logits[s->idx[i]] - max);
  if (!(s->p.top_k > 0 && s->p.top_k < n)) { sum = 0; for (int i = 0; i < n; i++) sum += exp(logits[i] - max); }
  for (int i = 0; i < k; i++) s->prob[i] = (float)(s->prob[i] / sum);
  if (s->p.top_p > 0 && s->p.top_p < 1) {
    double cum = 0;
    int keep = k;
    for (int i = 0; i < k; i++) { cum += s->prob[i]; if (cum >= s->p.top_p) { keep = i + 1; break; } }
    k = keep;
  }
  if (s->p.min_p > 0) {
    float floor_p = s->prob[0] * s->p.min_p;
    int keep = 1;
    while (keep < k && s->prob[keep] >= floor_p) keep++;
    k = keep;
  }
  /* temperature, then draw */
  sum = 0;
  for (int i = 0; i < k; i++) sum += s->prob[i] = (float)exp((logits[s->idx[i]] - max) / s->p.temperature);
  double u = next_uniform(s) * sum, acc = 0;
  for (int i = 0; i < k; i++) {
    acc += s->prob[i];
    if (u < acc) return s->idx[i];
  }
  return s->idx[k - 1];
}
