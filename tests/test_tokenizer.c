/* test_tokenizer.c: tokenizers from GGUF metadata against llama.cpp's own
 * expected ids (../shared/testdata/vocab/NAME.gguf.inp/.out), round trips for
 * the vocabularies without expected ids, special-token parsing, the
 * streaming decoder, and malformed metadata. */
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"

#define VOCAB_DIR "../../shared/testdata/vocab/"
#define MODEL_DIR "../../shared/testdata/models/"
#define DELIM "\n__ggml_vocab_test__\n"

/* ---- llama.cpp's test files */
typedef struct { char **s; size_t *len; int n; } strings;

static void strings_free(strings *v) {
  for (int i = 0; i < v->n; i++) free(v->s[i]);
  free(v->s); free(v->len);
  memset(v, 0, sizeof *v);
}

/* The test strings of an .inp file (each is followed by DELIM). */
static bool read_inp(const char *path, strings *out) {
  size_t n;
  char *data = test_read_file(path, &n);
  if (!data) return false;
  memset(out, 0, sizeof *out);
  size_t pos = 0, dl = strlen(DELIM);
  for (;;) {
    char *m = memmem(data + pos, n - pos, DELIM, dl);
    if (!m) break;
    size_t len = (size_t)(m - (data + pos));
    out->s = realloc(out->s, (size_t)(out->n + 1) * sizeof *out->s);
    out->len = realloc(out->len, (size_t)(out->n + 1) * sizeof *out->len);
    out->s[out->n] = malloc(len + 1);
    memcpy(out->s[out->n], data + pos, len);
    out->s[out->n][len] = 0;
    out->len[out->n++] = len;
    pos = (size_t)(m - data) + dl;
  }
  free(data);
  return true;
}

/* Line i of an .out file as ids; returns the count. */
static int read_out_line(const char *data, int line, int32_t *ids, int cap) {
  const char *p = data;
  for (int l = 0; l < line && p; l++) { p = strchr(p, '\n'); if (p) p++; }
  if (!p) return -1;
  int n = 0;
  while (*p && *p != '\n') {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) { p++; continue; }
    if (n < cap) ids[n] = (int32_t)v;
    n++;
    p = end;
  }
  return n;
}

/* Where ggml-vocab-NAME.gguf is with its test strings (.inp): shared
 * testdata, else llama.cpp's own models/ directory when TG_LLAMA_VOCAB_DIR
 * names one (.ci/run unpacks it from the llama-cpp-python sdist). */
static void vocab_path(const char *name, char *path, size_t cap) {
  char inp[600];
  snprintf(path, cap, VOCAB_DIR "ggml-vocab-%s.gguf", name);
  snprintf(inp, sizeof inp, "%s.inp", path);
  const char *dir = getenv("TG_LLAMA_VOCAB_DIR");
  if (access(inp, R_OK) == 0 || !dir || !*dir) return;
  snprintf(inp, sizeof inp, "%s/ggml-vocab-%s.gguf.inp", dir, name);
  if (access(inp, R_OK) == 0) snprintf(path, cap, "%s/ggml-vocab-%s.gguf", dir, name);
}

/* Every string of NAME.gguf.inp must tokenize to its line of NAME.gguf.out. */
static void check_vocab(const char *name) {
  char path[512], inp[600], outp[600];
  vocab_path(name, path, sizeof path);
  snprintf(inp, sizeof inp, "%s.inp", path);
  snprintf(outp, sizeof outp, "%s.out", path);
  strings v;
  size_t on;
  char *out = test_read_file(outp, &on);
  if (!out || !read_inp(inp, &v)) { free(out); SKIP("no %s (shared test data absent; TG_LLAMA_VOCAB_DIR may name llama.cpp's models/)", inp); }
  char *o = realloc(out, on + 1);
  o[on] = 0;
  tg_tokenizer *tok = tg_tokenizer_load(path);
  CHECK_OK(tok);
  int ok = 0;
  for (int i = 0; tok && i < v.n; i++) {
    int32_t want[1024], *got;
    int nw = read_out_line(o, i, want, 1024);
    int ng = tg_tokenize(tok, v.s[i], v.len[i], false, false, &got);
    bool same = ng == nw;
    for (int k = 0; same && k < ng; k++) same = got[k] == want[k];
    if (same) ok++;
    else {
      CHECK_MSG(false, "%s string %d '%s': got %d ids, want %d", name, i, v.s[i], ng, nw);
      printf("    got:");
      for (int k = 0; k < ng && k < 40; k++) printf(" %d", got[k]);
      printf("\n    want:");
      for (int k = 0; k < nw && k < 40; k++) printf(" %d", want[k]);
      printf("\n");
    }
    free(got);
  }
  printf("  %s: %d/%d strings match llama.cpp\n", name, ok, v.n);
  tg_tokenizer_free(tok);
  strings_free(&v);
  free(o);
}

TEST(tok_match_llama_spm) { check_vocab("llama-spm"); }
TEST(tok_match_phi_3) { check_vocab("phi-3"); }
TEST(tok_match_gpt_2) { check_vocab("gpt-2"); }
TEST(tok_match_mpt) { check_vocab("mpt"); }
TEST(tok_match_refact) { check_vocab("refact"); }
TEST(tok_match_deepseek_coder) { check_vocab("deepseek-coder"); }
TEST(tok_match_bert_bge) { check_vocab("bert-bge"); }
/* llama.cpp's models/ has these too (with its tests); shared testdata may not */
TEST(tok_match_llama_bpe) { check_vocab("llama-bpe"); }
TEST(tok_match_qwen2) { check_vocab("qwen2"); }
TEST(tok_match_qwen35) { check_vocab("qwen35"); }
TEST(tok_match_command_r) { check_vocab("command-r"); }
TEST(tok_match_falcon) { check_vocab("falcon"); }
TEST(tok_match_deepseek_llm) { check_vocab("deepseek-llm"); }
TEST(tok_match_gemma_4) { check_vocab("gemma-4"); }

/* Vocabularies without expected ids: every test string's pieces join back to
 * the string. (Joined pieces, not tg_detokenize, for the gpt-2 style ones:
 * detokenize's clean-up of " ," etc. is meant to change such strings.) */
static void check_roundtrip(const char *name) {
  char path[512];
  snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf", name);
  strings v;
  if (!read_inp(VOCAB_DIR "ggml-vocab-gpt-2.gguf.inp", &v)) SKIP("no test strings (shared test data absent)");
  tg_tokenizer *tok = tg_tokenizer_load(path);
  if (!tok && strstr(tg_error(), "No such file")) { strings_free(&v); SKIP("no %s", path); }
  CHECK_OK(tok);
  int ok = 0;
  for (int i = 0; tok && i < v.n; i++) {
    int32_t *ids;
    int n = tg_tokenize(tok, v.s[i], v.len[i], false, false, &ids);
    CHECK(n >= 0);
    size_t dn;
    char *d = tg_detokenize(tok, ids, n, false, false, &dn);
    char *joined = malloc(v.len[i] * 4 + 16);
    size_t jn = 0;
    for (int k = 0; k < n; k++) {
      char buf[256];
      int pn = tg_token_to_piece(tok, ids[k], false, buf, sizeof buf);
      if (pn > 0) { memcpy(joined + jn, buf, (size_t)pn); jn += (size_t)pn; }
    }
    /* SPM: detokenize removes the space the tokenizer added in front */
    bool same = tg_tokenizer_add_bos(tok) && tg_tokenizer_bos(tok) == 1 ?
                (dn == v.len[i] && !memcmp(d, v.s[i], dn)) : (jn == v.len[i] && !memcmp(joined, v.s[i], jn));
    if (same) ok++;
    else CHECK_MSG(false, "%s: string %d '%s' comes back as '%.*s'", name, i, v.s[i], (int)dn, d);
    free(d); free(joined); free(ids);
  }
  printf("  %s: %d/%d strings round-trip\n", name, ok, v.n);
  tg_tokenizer_free(tok);
  strings_free(&v);
}

TEST(tok_roundtrip_baichuan) { check_roundtrip("baichuan"); }
TEST(tok_roundtrip_deepseek_llm) { check_roundtrip("deepseek-llm"); }
TEST(tok_roundtrip_falcon) { check_roundtrip("falcon"); }
TEST(tok_roundtrip_gpt_neox) { check_roundtrip("gpt-neox"); }
TEST(tok_roundtrip_starcoder) { check_roundtrip("starcoder"); }

static tg_tokenizer *load_or_skip(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fclose(f);
  tg_tokenizer *t = tg_tokenizer_load(path);
  CHECK_OK(t);
  return t;
}

TEST(tok_stories260k) {
  tg_tokenizer *t = load_or_skip(MODEL_DIR "stories260K.gguf");
  if (!t) SKIP("no stories260K.gguf (shared test data absent)");
  const char *s = "Once upon a time, there was a little girl named Lily.";
  static const int32_t want[] = { 1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426 };
  int32_t *ids;
  int n = tg_tokenize(t, s, strlen(s), true, false, &ids);
  CHECK_EQ_INT(n, 16);
  for (int i = 0; i < n && i < 16; i++) CHECK_EQ_INT(ids[i], want[i]);
  CHECK_EQ_INT(tg_tokenizer_bos(t), 1);
  CHECK_EQ_INT(tg_tokenizer_eos(t), 2);
  CHECK(tg_tokenizer_is_eog(t, 2));
  CHECK(!tg_tokenizer_is_eog(t, 403));
  size_t dn;
  char *d = tg_detokenize(t, ids, n, true, false, &dn);   /* BOS dropped: the leading space stays, as in llama.cpp */
  CHECK(d && !strcmp(d, " Once upon a time, there was a little girl named Lily."));
  free(d);
  d = tg_detokenize(t, ids + 1, n - 1, false, false, &dn);   /* no BOS: the added space is removed */
  CHECK(d && !strcmp(d, s));
  free(d);
  free(ids);
  tg_tokenizer_free(t);
}

TEST(tok_special_parsing) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-gpt-2.gguf");
  if (!t) SKIP("no gpt-2 vocab (shared test data absent)");
  int32_t eot = tg_tokenizer_find(t, "<|endoftext|>");
  CHECK(eot >= 0);
  CHECK(tg_tokenizer_is_eog(t, eot));
  CHECK_EQ_INT(tg_tokenizer_find(t, "no such token"), -1);
  const char *s = "Hello<|endoftext|>world";
  int32_t *a, *b;
  int na = tg_tokenize(t, s, strlen(s), false, true, &a);
  int nb = tg_tokenize(t, s, strlen(s), false, false, &b);
  CHECK_EQ_INT(na, 3);
  if (na == 3) CHECK_EQ_INT(a[1], eot);
  CHECK(nb > 3);
  for (int i = 0; i < nb; i++) CHECK(b[i] != eot);
  /* the control token renders only when asked */
  char buf[64];
  CHECK_EQ_INT(tg_token_to_piece(t, eot, false, buf, sizeof buf), 0);
  CHECK_EQ_INT(tg_token_to_piece(t, eot, true, buf, sizeof buf), 13);
  CHECK_EQ_INT(tg_token_to_piece(t, eot, true, buf, 4), -13);
  CHECK_EQ_INT(tg_token_to_piece(t, 1 << 30, true, buf, sizeof buf), 0);
  free(a); free(b);
  tg_tokenizer_free(t);

  /* SPM: "<s>" splits off; text after a special token gets the leading space */
  t = load_or_skip(VOCAB_DIR "ggml-vocab-llama-spm.gguf");
  if (!t) return;
  s = "<s>Hi";
  na = tg_tokenize(t, s, strlen(s), true, true, &a);
  int32_t *c;
  int nc = tg_tokenize(t, "Hi", 2, false, false, &c);
  CHECK_EQ_INT(na, 2 + nc);
  if (na >= 2) { CHECK_EQ_INT(a[0], 1); CHECK_EQ_INT(a[1], 1); }
  for (int i = 0; i < nc && 2 + i < na; i++) CHECK_EQ_INT(a[2 + i], c[i]);
  free(a); free(c);
  tg_tokenizer_free(t);
}

TEST(tok_bert_cls_sep) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-bert-bge.gguf");
  if (!t) SKIP("no bert-bge vocab (shared test data absent)");
  int32_t *a;
  int n = tg_tokenize(t, "Hello World", 11, true, false, &a);
  CHECK(n == 4);
  if (n == 4) { CHECK_EQ_INT(a[0], 101); CHECK_EQ_INT(a[3], 102); }
  /* lowercased: "HELLO" and "hello" are the same words */
  int32_t *b;
  int nb = tg_tokenize(t, "HELLO world", 11, true, false, &b);
  CHECK_EQ_INT(nb, n);
  for (int i = 0; i < n && i < nb; i++) CHECK_EQ_INT(a[i], b[i]);
  free(a); free(b);
  tg_tokenizer_free(t);
}

TEST(tok_stream_utf8) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-llama-spm.gguf");
  if (!t) SKIP("no llama-spm vocab (shared test data absent)");
  /* "✅" = E2 9C 85 as three byte tokens, then a normal token */
  int32_t ids[4] = { tg_tokenizer_find(t, "<0xE2>"), tg_tokenizer_find(t, "<0x9C>"), tg_tokenizer_find(t, "<0x85>"),
                     tg_tokenizer_find(t, "▁ok") };
  for (int i = 0; i < 4; i++) CHECK(ids[i] >= 0);
  tg_token_stream *s = tg_token_stream_new(t, false);
  size_t n;
  const char *p = tg_token_stream_push(s, ids[0], &n);
  CHECK(p && n == 0);
  p = tg_token_stream_push(s, ids[1], &n);
  CHECK(p && n == 0);
  p = tg_token_stream_push(s, ids[2], &n);
  CHECK(p && n == 3 && !memcmp(p, "\xE2\x9C\x85", 3));
  p = tg_token_stream_push(s, ids[3], &n);
  CHECK(p && n == 3 && !memcmp(p, " ok", 3));
  /* an incomplete character at the end comes out on flush */
  p = tg_token_stream_push(s, ids[0], &n);
  CHECK(n == 0);
  p = tg_token_stream_flush(s, &n);
  CHECK(n == 1 && (unsigned char)p[0] == 0xE2);
  /* a sequence that cannot complete is released, not held forever */
  tg_token_stream_push(s, ids[0], &n);
  p = tg_token_stream_push(s, ids[3], &n);
  CHECK(n == 4 && (unsigned char)p[0] == 0xE2 && !memcmp(p + 1, " ok", 3));
  CHECK(tg_token_stream_push(s, -5, &n) == NULL);
  tg_token_stream_free(s);
  tg_tokenizer_free(t);
}

/* [2.9] a token whose piece is empty (BOS with special=false) pushed onto a
 * fresh stream (nothing held yet: memmove(NULL, NULL, 0) under UBSan before),
 * and NULL arguments to the tokenizer calls: errors, not crashes */
TEST(tok_stream_empty_piece_null_args) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-llama-spm.gguf");
  if (!t) SKIP("no llama-spm vocab (shared test data absent)");
  int32_t bos = tg_tokenizer_bos(t);
  CHECK(bos >= 0);
  tg_token_stream *s = tg_token_stream_new(t, false);
  size_t n = 99;
  const char *p = tg_token_stream_push(s, bos, &n);
  CHECK(p && n == 0);
  p = tg_token_stream_push(s, bos, NULL);   /* len is optional */
  CHECK(p != NULL);
  p = tg_token_stream_flush(s, &n);
  CHECK(p && n == 0);
  tg_token_stream_free(s);
  CHECK(!tg_token_stream_push(NULL, bos, &n) && n == 0 && strstr(tg_error(), "no stream"));
  CHECK(!tg_token_stream_flush(NULL, &n) && strstr(tg_error(), "no stream"));
  CHECK(!tg_token_stream_new(NULL, false));
  /* an empty piece into a NULL buffer of capacity 0 is fine */
  CHECK_EQ_INT(tg_token_to_piece(t, bos, false, NULL, 0), 0);
  CHECK(tg_tokenize(t, "hi", 2, true, false, NULL) < 0 && strstr(tg_error(), "NULL ids"));
  int32_t *ids = (int32_t *)&n;
  CHECK(tg_tokenize(NULL, "hi", 2, true, false, &ids) < 0 && ids == NULL);
  CHECK(tg_tokenize(t, NULL, 5, true, false, &ids) < 0);
  CHECK(!tg_detokenize(t, NULL, 3, false, false, NULL) && strstr(tg_error(), "tg_detokenize"));
  CHECK(!tg_detokenize(t, &bos, -1, false, false, NULL) && strstr(tg_error(), "tg_detokenize"));
  CHECK(!tg_detokenize(NULL, &bos, 1, false, false, NULL));
  char *out = tg_detokenize(t, NULL, 0, false, false, &n);
  CHECK(out && n == 0);
  free(out);
  CHECK(!tg_tokenizer_load(NULL) && strstr(tg_error(), "NULL path"));
  tg_tokenizer_free(t);
}

/* ---- malformed metadata: a minimal GGUF writer */
typedef struct { unsigned char *b; size_t n, cap; } gbuf;
static void gput(gbuf *g, const void *p, size_t n) {
  if (g->n + n > g->cap) { g->cap = (g->n + n) * 2 + 64; g->b = realloc(g->b, g->cap); }
  memcpy(g->b + g->n, p, n);
  g->n += n;
}
static void gput_u32(gbuf *g, uint32_t v) { gput(g, &v, 4); }
static void gput_u64(gbuf *g, uint64_t v) { gput(g, &v, 8); }
static void gput_str(gbuf *g, const char *s) { gput_u64(g, strlen(s)); gput(g, s, strlen(s)); }
static void gkv_str(gbuf *g, const char *k, const char *v) { gput_str(g, k); gput_u32(g, 8); gput_str(g, v); }
static void gkv_strs(gbuf *g, const char *k, const char *const *v, int n) {
  gput_str(g, k); gput_u32(g, 9); gput_u32(g, 8); gput_u64(g, (uint64_t)n);
  for (int i = 0; i < n; i++) gput_str(g, v[i]);
}

/* Writes a gpt2 vocab with the given pre name (NULL: none), tokens (NULL:
 * no tokens array) and merges; returns the path. */
static const char *write_vocab(const char *pre, const char *const *toks, int nt, const char *const *merges, int nm) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/tg_tok_test_%d.gguf", (int)getpid());
  gbuf g = { 0 };
  gput(&g, "GGUF", 4);
  gput_u32(&g, 3);
  gput_u64(&g, 0);
  gput_u64(&g, (uint64_t)(1 + (pre != NULL) + 2 * (toks != NULL) + (merges != NULL)));
  gkv_str(&g, "tokenizer.ggml.model", "gpt2");
  if (pre) gkv_str(&g, "tokenizer.ggml.pre", pre);
  if (toks) {
    gkv_strs(&g, "tokenizer.ggml.tokens", toks, nt);
    gput_str(&g, "tokenizer.ggml.seperator_token_id");   /* for pre names that add SEP */
    gput_u32(&g, 4);
    gput_u32(&g, 0);
  }
  if (merges) gkv_strs(&g, "tokenizer.ggml.merges", merges, nm);
  while (g.n % 32) gput(&g, "", 1);
  FILE *f = fopen(path, "wb");
  fwrite(g.b, 1, g.n, f);
  fclose(f);
  free(g.b);
  return path;
}

TEST(tok_errors) {
  static const char *const toks[] = { "a", "b", "ab", "Ġ", "Ġa", "\xC4\x8A" };
  static const char *const merges[] = { "a b", "Ġ a" };
  static const char *const bad_merges[] = { "a b", "ab" };
  const char *p = write_vocab("gpt-2", toks, 6, merges, 2);
  tg_tokenizer *t = tg_tokenizer_load(p);
  CHECK_OK(t);
  int32_t *ids;
  int n = tg_tokenize(t, "ab a", 4, false, false, &ids);
  CHECK_EQ_INT(n, 2);
  if (n == 2) { CHECK_EQ_INT(ids[0], 2); CHECK_EQ_INT(ids[1], 4); }
  free(ids);
  tg_tokenizer_free(t);

  p = write_vocab("no-such-pre", toks, 6, merges, 2);
  CHECK(tg_tokenizer_load(p) == NULL);
  CHECK_MSG(strstr(tg_error(), "no-such-pre") != NULL, "error: %s", tg_error());
  p = write_vocab("gpt-2", NULL, 0, merges, 2);
  CHECK(tg_tokenizer_load(p) == NULL);
  CHECK_MSG(strstr(tg_error(), "tokenizer.ggml.tokens") != NULL, "error: %s", tg_error());
  p = write_vocab("gpt-2", toks, 6, bad_merges, 2);
  CHECK(tg_tokenizer_load(p) == NULL);
  CHECK_MSG(strstr(tg_error(), "merges[1]") != NULL, "error: %s", tg_error());
  p = write_vocab("gpt-2", toks, 6, NULL, 0);
  CHECK(tg_tokenizer_load(p) == NULL);
  CHECK_MSG(strstr(tg_error(), "merges") != NULL, "error: %s", tg_error());
  static const char *const dup[] = { "a", "a" };
  p = write_vocab("gpt-2", dup, 2, merges, 2);
  CHECK(tg_tokenizer_load(p) == NULL);
  CHECK(tg_tokenizer_load("/nonexistent/x.gguf") == NULL);
  remove(p);
}

/* Every pre-tokenizer name tg lists compiles its regexes and splits text. */
TEST(tok_all_pretokenizers) {
  /* 16 tokens: gpt2's default BOS id (11) must exist for names that add BOS */
  static const char *const toks[] = { "a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "a", "c", "d", "e", "f", "g", "h",
                                      "i", "j", "k", "l", "m" };
  static const char *const merges[] = { "a b", "\xC4\xA0 a" };
  const char *text = "Hello, y'all! 123 4567 \xE6\x88\x91 \n\n  x";
  int n = 0;
  for (const char *name; (name = pretok_name(n)) != NULL; n++) {
    const char *p = write_vocab(name, toks, 16, merges, 2);
    tg_tokenizer *t = tg_tokenizer_load(p);
    CHECK_MSG(t != NULL, "pre '%s': %s", name, tg_error());
    int32_t *ids;
    if (t) {
      CHECK(tg_tokenize(t, text, strlen(text), false, false, &ids) >= 0);
      free(ids);
    }
    tg_tokenizer_free(t);
    remove(p);
  }
  CHECK(n > 90);
  /* kimi-k2 files may come without merges; any other BPE file may not */
  const char *p = write_vocab("kimi-k2", toks, 16, NULL, 0);
  tg_tokenizer *t = tg_tokenizer_load(p);
  CHECK_OK(t);
  tg_tokenizer_free(t);
  p = write_vocab("afmoe", toks, 16, NULL, 0);
  CHECK(tg_tokenizer_load(p) == NULL && strstr(tg_error(), "merges"));
  remove(p);
}

/* Long words: the regexes with repeated groups (gpt-4o, tekken) outgrow
 * PCRE2's JIT stack; the interpreter takes over and the word stays whole. */
TEST(tok_long_word) {
  static const char *const toks[] = { "a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "a", "c", "d", "e", "f", "g", "h",
                                      "i", "j", "k", "l", "m" };
  static const char *const merges[] = { "a b", "\xC4\xA0 a" };
  size_t n = 200000;
  char *text = malloc(n + 1);
  memset(text, 'a', n);   /* one 200 KB word */
  text[n] = 0;
  const char *pres[] = { "gpt-4o", "tekken", "llama3" };
  for (int k = 0; k < 3; k++) {
    const char *p = write_vocab(pres[k], toks, 16, merges, 2);
    tg_tokenizer *t = tg_tokenizer_load(p);
    CHECK_OK(t);
    int32_t *ids;
    int c = t ? tg_tokenize(t, text, n, false, false, &ids) : -1;
    CHECK_MSG(c == (int)n, "%s: %d ids (%s)", pres[k], c, c < 0 ? tg_error() : "");   /* no "a a" merge */
    if (c >= 0) free(ids);
    tg_tokenizer_free(t);
    remove(p);
  }
  free(text);
}

/* SPM merges word by word when the vocabulary allows: the ids must be those
 * of merging the whole text at once (llama.cpp's way). */
TEST(tok_spm_word_split) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-llama-spm.gguf");
  if (!t) SKIP("no llama-spm vocab (shared test data absent)");
  strings v;
  CHECK(read_inp(VOCAB_DIR "ggml-vocab-llama-spm.gguf.inp", &v));
  char *text = malloc(1 << 17);
  size_t n = 0;
  for (int r = 0; n < 60000; r++)
    for (int i = 0; i < v.n; i++) { memcpy(text + n, v.s[i], v.len[i]); n += v.len[i]; text[n++] = ' '; }
  CHECK(t->spm_split_words);
  int32_t *a, *b;
  int na = tg_tokenize(t, text, n, true, false, &a);
  ((tg_tokenizer *)t)->spm_split_words = false;
  int nb = tg_tokenize(t, text, n, true, false, &b);
  CHECK_EQ_INT(na, nb);
  CHECK(na == nb && !memcmp(a, b, (size_t)na * sizeof *a));
  free(a); free(b); free(text);
  strings_free(&v);
  tg_tokenizer_free(t);
}

/* Tokens llama.cpp recognizes by their text: end of generation, and control
 * (so special parsing finds them) even when the metadata says normal. */
TEST(tok_eog_by_text) {
  static const char *const toks[] = { "a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "a", "c", "d", "e", "f", "g", "h",
                                      "i", "<|im_end|>", "<|eot_id|>", "<|fim_pad|>", "m" };
  static const char *const merges[] = { "a b", "\xC4\xA0 a" };
  const char *p = write_vocab("qwen2", toks, 16, merges, 2);
  tg_tokenizer *t = tg_tokenizer_load(p);
  CHECK_OK(t);
  if (t) {
    CHECK_EQ_INT(tg_tokenizer_find(t, "<|im_end|>"), 12);
    CHECK(tg_tokenizer_is_eog(t, 12));
    CHECK(tg_tokenizer_is_eog(t, 13));
    CHECK(tg_tokenizer_is_eog(t, 14));   /* FIM pad ends generation too */
    CHECK(!tg_tokenizer_is_eog(t, 0));
    CHECK_EQ_INT(tg_tokenizer_eot(t), 12);
    int32_t *ids;
    int n = tg_tokenize(t, "ab<|im_end|>", 12, false, true, &ids);
    CHECK_EQ_INT(n, 2);
    if (n == 2) { CHECK_EQ_INT(ids[0], 2); CHECK_EQ_INT(ids[1], 12); }
    size_t len;
    char *d = tg_detokenize(t, ids, n, false, false, &len);
    CHECK(d && !strcmp(d, "ab"));
    free(d);
    d = tg_detokenize(t, ids, n, false, true, &len);
    CHECK(d && !strcmp(d, "ab<|im_end|>"));
    free(d);
    free(ids);
  }
  tg_tokenizer_free(t);
  remove(p);
}

/* gpt-2 style detokenize cleans up spaces before punctuation, as llama.cpp. */
TEST(tok_detokenize_clean_spaces) {
  tg_tokenizer *t = load_or_skip(VOCAB_DIR "ggml-vocab-gpt-2.gguf");
  if (!t) SKIP("no gpt-2 vocab (shared test data absent)");
  const char *s = "Hello , world ! I 'm here .";
  int32_t *ids;
  int n = tg_tokenize(t, s, strlen(s), false, false, &ids);
  char *d = tg_detokenize(t, ids, n, false, false, NULL);
  CHECK_MSG(d && !strcmp(d, "Hello, world! I'm here."), "got '%s'", d ? d : "(null)");
  free(d);
  free(ids);
  tg_tokenizer_free(t);
}

/* Arbitrary bytes (invalid UTF-8, NULs, pieces of special tokens) never
 * crash and give ids in range that decode. */
TEST(tok_random_bytes) {
  const char *vocabs[] = { VOCAB_DIR "ggml-vocab-llama-spm.gguf", VOCAB_DIR "ggml-vocab-gpt-2.gguf",
                           VOCAB_DIR "ggml-vocab-deepseek-coder.gguf", VOCAB_DIR "ggml-vocab-bert-bge.gguf",
                           VOCAB_DIR "ggml-vocab-phi-3.gguf", "goldens/tok_gemma4.gguf", "goldens/tok_sarvam.gguf" };
  const char *alphabet[] = { "a", " ", "\n", "\xE2", "\x96", "\x81", "\xF0\x9F", "<", "|", ">", "<|endoftext|>", "<s>",
                             "\xC3\xBC", "\xFF", "'s", "1", "\t", "\0", "\xCC\x81" };
  uint64_t seed = 12345;
  int loaded = 0;
  for (int v = 0; v < (int)(sizeof vocabs / sizeof vocabs[0]); v++) {
    tg_tokenizer *t = load_or_skip(vocabs[v]);
    if (!t) continue;
    loaded++;
    for (int r = 0; r < 200; r++) {
      char text[512];
      size_t n = 0;
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      int parts = (int)(seed >> 58);
      for (int k = 0; k < parts; k++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *a = alphabet[(seed >> 33) % 19];
        size_t al = (seed >> 33) % 19 == 17 ? 1 : strlen(a);
        memcpy(text + n, a, al);
        n += al;
      }
      int32_t *ids;
      int c = tg_tokenize(t, text, n, r % 2, r % 3 == 0, &ids);
      CHECK(c >= 0);
      for (int i = 0; i < c; i++) CHECK(ids[i] >= 0 && ids[i] < tg_tokenizer_n_vocab(t));
      char *d = tg_detokenize(t, ids, c, r % 2, true, NULL);
      CHECK(d != NULL);
      free(d);
      free(ids);
    }
    tg_tokenizer_free(t);
  }
  if (!loaded) SKIP("no vocabs (shared test data absent)");
}

/* Pre-tokenizer splits: digit grouping by lookahead (tiny_aya) and by empty
 * matches (superbpe), llama3's contractions and whitespace rules. */
static void check_split(const char *pre, const char *text, const char *want) {
  unsigned fl;
  pretok *p = pretok_new(pre, &fl);
  CHECK_OK(p);
  if (!p) return;
  pretok_span *w;
  int n = pretok_split(p, text, strlen(text), &w);
  char got[512] = "";
  for (int i = 0; i < n; i++) {
    size_t l = strlen(got);
    snprintf(got + l, sizeof got - l, "%s%.*s", i ? "|" : "", (int)w[i].len, text + w[i].start);
  }
  CHECK_MSG(!strcmp(got, want), "%s: '%s' split as '%s', want '%s'", pre, text, got, want);
  free(w);
  pretok_free(p);
}

TEST(tok_pretokenizer_splits) {
  check_split("tiny_aya", "1234567 ab", "1|234|567| ab");
  check_split("superbpe", "x1234567", "x|1|234|567");
  check_split("llama3", "I'VE  been 12345\n\n x", "I|'VE| | been| |123|45|\n\n| x");
  check_split("gpt-2", "Hello  world's 42!", "Hello| | world|'s| 42|!");
  check_split("default", "a+b 1234", "a|+|b| |123|4");   /* its last regex, [0-9]{3}, splits digit runs */
}

/* A merge whose sides are not tokens (llama.cpp ranks merges by text) still
 * applies; a word without a token falls back to single-byte tokens. */
TEST(tok_bpe_non_token_merge) {
  static const char *const toks[] = { "xy", "xyz", "z", "q", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n" };
  static const char *const merges[] = { "x y", "xy z" };
  const char *p = write_vocab("gpt-2", toks, 16, merges, 2);
  tg_tokenizer *t = tg_tokenizer_load(p);
  CHECK_OK(t);
  if (t) {
    int32_t *ids;
    int n = tg_tokenize(t, "xyz", 3, false, false, &ids);
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_EQ_INT(ids[0], 1);
    free(ids);
    n = tg_tokenize(t, "xq", 2, false, false, &ids);   /* "x" has no token: dropped, as llama.cpp */
    CHECK_EQ_INT(n, 1);
    if (n == 1) CHECK_EQ_INT(ids[0], 3);
    free(ids);
  }
  tg_tokenizer_free(t);
  remove(p);
}
