/* bench_tokenizer.c: tokenizer throughput on 1 MB of text (llama.cpp's
 * vocab test strings repeated), per vocabulary from ../shared/testdata/vocab.
 *
 * Reference: the naive merge one would otherwise write, which rescans every
 * adjacent pair for the best merge after each merge (O(n^2) per word for BPE,
 * per text fragment for SPM), on the same pre-tokenized words. Both must give
 * the same ids. BPE: both on the whole 1 MB (tg also caches words); SPM
 * merges whole fragments, so the quadratic reference runs on a 4 KB slice and
 * ratio compares throughput there. */
#include "bench.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

#define VOCAB_DIR BENCH_DIR "/../../shared/testdata/vocab/"
#define DELIM "\n__ggml_vocab_test__\n"

static char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)sz + 1);
  *n = fread(b, 1, (size_t)sz, f);
  fclose(f);
  b[*n] = 0;
  return b;
}

/* The .inp strings, joined by newlines and repeated up to `bytes`. */
static char *make_text(size_t bytes, size_t *n) {
  size_t in;
  char *inp = read_all(VOCAB_DIR "ggml-vocab-gpt-2.gguf.inp", &in);
  if (!inp) return NULL;
  /* strings joined by "\n" instead of the delimiter */
  size_t dl = strlen(DELIM), w = 0;
  for (size_t r = 0; r < in;) {
    char *p = memmem(inp + r, in - r, DELIM, dl);
    size_t len = p ? (size_t)(p - (inp + r)) : in - r;
    memmove(inp + w, inp + r, len);
    w += len;
    if (p) inp[w++] = '\n';
    r += len + (p ? dl : 0);
  }
  in = w;
  char *text = malloc(bytes + in);
  size_t k = 0;
  while (k < bytes) { memcpy(text + k, inp, in); k += in; }
  /* cut at a character boundary */
  while (k > bytes && k > 0) k--;
  while (k > 0 && ((unsigned char)text[k] & 0xC0) == 0x80) k--;
  free(inp);
  *n = k;
  return text;
}

/* ---- the naive reference merges */
typedef VEC(int32_t) ivec;
typedef struct { size_t off, n; } sym;

/* Repeatedly merges the best adjacent pair of syms (best(): higher is better;
 * < -1e300 when the pair cannot merge) by scanning all of them. */
static int naive_merge(sym *s, int n, double (*best)(const tg_tokenizer *, const char *, const sym *, const sym *),
                       const tg_tokenizer *t, const char *w) {
  for (;;) {
    int bi = -1;
    double bv = -1e308;
    for (int i = 0; i + 1 < n; i++) {
      double v = best(t, w, &s[i], &s[i + 1]);
      if (v > bv) { bv = v; bi = i; }
    }
    if (bi < 0 || bv <= -1e300) return n;
    s[bi].n += s[bi + 1].n;
    memmove(&s[bi + 1], &s[bi + 2], (size_t)(n - bi - 2) * sizeof *s);
    n--;
  }
}

static double spm_pair(const tg_tokenizer *t, const char *w, const sym *a, const sym *b) {
  int32_t id = strmap_get(&t->ids, w + a->off, a->n + b->n);
  return id < 0 ? -1e308 : t->score[id];
}

static double bpe_pair(const tg_tokenizer *t, const char *w, const sym *a, const sym *b) {
  int32_t r = bpe_pair_rank(t, w + a->off, a->n, w + b->off, b->n);
  return r < 0 ? -1e308 : -(double)r;
}

static void emit(const tg_tokenizer *t, const char *w, const sym *s, int n, bool bpe, ivec *out) {
  for (int i = 0; i < n; i++) {
    int32_t id = strmap_get(&t->ids, w + s[i].off, s[i].n);
    if (id >= 0) { VEC_PUSH(*out, id); continue; }
    for (size_t j = 0; j < s[i].n; j++) {
      int32_t b = bpe ? strmap_get(&t->ids, w + s[i].off + j, 1) : t->byte_token[(unsigned char)w[s[i].off + j]];
      if (b >= 0) VEC_PUSH(*out, b);
    }
  }
}

static void naive_encode(const tg_tokenizer *t, const char *text, size_t n, ivec *out) {
  if (t->kind == TOK_SPM) {
    /* "▁" for spaces and the leading one, as tg_tokenize does for SPM */
    char *w = malloc(n * 3 + 4);
    size_t wn = 0;
    memcpy(w, "\xE2\x96\x81", 3); wn = 3;
    for (size_t i = 0; i < n; i++) {
      if (text[i] == ' ') { memcpy(w + wn, "\xE2\x96\x81", 3); wn += 3; }
      else w[wn++] = text[i];
    }
    sym *s = malloc(wn * sizeof *s);
    int ns = 0;
    for (size_t off = 0; off < wn;) {
      size_t l = (size_t)utf8_seq_len((unsigned char)w[off]);
      if (l > wn - off) l = wn - off;
      s[ns++] = (sym){ off, l };
      off += l;
    }
    ns = naive_merge(s, ns, spm_pair, t, w);
    emit(t, w, s, ns, false, out);
    free(s); free(w);
    return;
  }
  size_t cn;
  char *clean = utf8_sanitize(text, n, &cn);
  pretok_span *words;
  int nw = pretok_split(t->pre, clean, cn, &words);
  if (nw < 0) bench_fail("tokenize", "pre-tokenizer failed");
  char enc[4096];
  sym s[2048];
  for (int k = 0; k < nw; k++) {
    const char *word = clean + words[k].start;
    size_t wl = words[k].len, en = 0;
    if (wl > 2048) bench_fail("tokenize", "word of %zu bytes too long for the reference", wl);
    for (size_t i = 0; i < wl; i++) {
      int l = gpt2_byte_to_utf8((unsigned char)word[i], enc + en);
      s[i] = (sym){ en, (size_t)l };
      en += (size_t)l;
    }
    if (t->ignore_merges) {
      int32_t id = strmap_get(&t->ids, enc, en);
      if (id >= 0) { VEC_PUSH(*out, id); continue; }
    }
    int ns = naive_merge(s, (int)wl, bpe_pair, t, enc);
    emit(t, enc, s, ns, true, out);
  }
  free(words);
  free(clean);
}

static void bench_vocab(const char *vocab, const char *text, size_t n) {
  char name[128], path[512];
  snprintf(name, sizeof name, "tokenize_%s", vocab);
  for (char *p = name; *p; p++) if (*p == '-') *p = '_';
  snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf", vocab);
  FILE *f = fopen(path, "rb");
  if (!f) { bench_skip(name, "no %s (shared test data absent)", path); return; }
  fclose(f);
  tg_tokenizer *t = tg_tokenizer_load(path);
  if (!t) bench_fail(name, "load failed");

  int32_t *ids = NULL;
  int n_ids = 0;
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    free(ids);
    double t0 = bench_now();
    n_ids = tg_tokenize(t, text, n, false, false, &ids);
    double dt = bench_now() - t0;
    if (n_ids < 0) bench_fail(name, "tokenize failed");
    if (dt < best) best = dt;
  }

  if (t->kind == TOK_WPM) {
    printf("bench %s mb=%.2f seconds=%.3f mb_per_s=%.1f tokens=%d ref=none_for_wordpiece ratio=1.00\n", name,
           (double)n / 1e6, best, (double)n / 1e6 / best, n_ids);
    free(ids);
    tg_tokenizer_free(t);
    return;
  }
  /* the reference against tg's encoder on the same text, without the
   * special-token split (SPM: a 4 KB slice, the reference is quadratic) */
  bool spm = t->kind == TOK_SPM;
  size_t rn = n;
  if (spm) { rn = 4096; while (rn > 0 && ((unsigned char)text[rn] & 0xC0) == 0x80) rn--; }
  ids_vec enc = { 0 };
  double t0 = bench_now();
  if (spm) {   /* tg_tokenize's SPM input: "▁" for spaces, one in front */
    char *w = malloc(rn * 3 + 4);
    size_t wn = 3;
    memcpy(w, "\xE2\x96\x81", 3);
    for (size_t i = 0; i < rn; i++) {
      if (text[i] == ' ') { memcpy(w + wn, "\xE2\x96\x81", 3); wn += 3; }
      else w[wn++] = text[i];
    }
    t0 = bench_now();
    spm_encode(t, w, wn, &enc);
    free(w);
  } else {
    bpe_encode(t, text, rn, &enc);
  }
  double tg_rate = (double)rn / (bench_now() - t0);
  ivec ref = { 0 };
  t0 = bench_now();
  naive_encode(t, text, rn, &ref);
  double ref_rate = (double)rn / (bench_now() - t0);
  if (ref.n != enc.n) bench_fail(name, "reference gives %d ids, tg %d", ref.n, enc.n);
  for (int i = 0; i < enc.n; i++)
    if (ref.v[i] != enc.v[i]) bench_fail(name, "id %d differs from the reference", i);
  printf("bench %s mb=%.2f seconds=%.3f mb_per_s=%.1f tokens=%d ref=%s ratio=%.2f\n", name, (double)n / 1e6, best,
         (double)n / 1e6 / best, n_ids, spm ? "naive_quadratic_merge_on_4KB" : "naive_quadratic_merge_per_word",
         tg_rate / ref_rate);
  VEC_FREE(enc);
  fflush(stdout);
  VEC_FREE(ref);
  free(ids);
  tg_tokenizer_free(t);
}

int main(void) {
  size_t n;
  char *text = make_text(1 << 20, &n);
  if (!text) {
    bench_skip("tokenize", "no vocab test strings in %s (shared test data absent)", VOCAB_DIR);
    return 0;
  }
  const char *vocabs[] = { "llama-spm", "gpt-2", "deepseek-coder", "refact", "bert-bge" };
  for (size_t i = 0; i < sizeof vocabs / sizeof vocabs[0]; i++) bench_vocab(vocabs[i], text, n);
  free(text);
  return 0;
}
