/* test_tokenizer_models.c: the tokenizer models t5 (UGM), rwkv and plamo2
 * against llama.cpp's own output, from the goldens tests/gen/gen_tok_models.py
 * writes (tok_check_golden compares them: ids, pieces, detokenize, the
 * stream); their round trip; and the clear errors of vocabularies they
 * cannot use (a malformed charsmap, no normal piece, no byte tokens,
 * scores of the wrong type). */
#include <stdint.h>
#include <unistd.h>
#include "test.h"
#include "tok_golden.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "tokenizer/tokenizer.h"

TEST(tok_ugm_llamacpp) { tok_check_golden("tok_ugm"); }
TEST(tok_ugm_raw_llamacpp) { tok_check_golden("tok_ugm_raw"); }
TEST(tok_rwkv_llamacpp) { tok_check_golden("tok_rwkv"); }
TEST(tok_plamo2_llamacpp) { tok_check_golden("tok_plamo2"); }

/* Without specials, RWKV and PLaMo-2 give back any valid UTF-8 exactly
 * (byte tokens cover everything, no normalization; PLaMo-2 reads invalid
 * bytes as U+FFFD, as llama.cpp does); UGM's raw vocabulary gives
 * back text without spaces, "▁" or characters it lacks. */
TEST(tok_models_roundtrip) {
  static const char *const alphabet[] = { "ka", "the", " ", "  ", "\n", "\n\n", "\t", "\xC3\xA9", "\xE4\xB8\xAD",
                                          "\xF0\x9F\xA6\x99", "<", "|", ">", "\\x41", "1", "\r", "~", "o" };
  const char *const files[] = { "goldens/tok_rwkv.gguf", "goldens/tok_plamo2.gguf" };
  tok_check_roundtrip(files, 2, alphabet, (int)(sizeof alphabet / sizeof alphabet[0]), 777);
  tg_tokenizer *t = tg_tokenizer_load("goldens/tok_ugm_raw.gguf");
  CHECK_OK(t);
  const char *words[] = { "hello", "kakita", "thequick", "0123", "café" };
  for (int i = 0; t && i < 5; i++) {
    int32_t *ids;
    int c = tg_tokenize(t, words[i], strlen(words[i]), false, false, &ids);
    size_t dn;
    char *d = tg_detokenize(t, ids, c, false, false, &dn);
    CHECK_MSG(d && !strcmp(d, words[i]), "'%s' came back as '%s'", words[i], d ? d : "(null)");
    free(d);
    free(ids);
  }
  tg_tokenizer_free(t);
}

/* base's metadata with key replaced by an array of n elements of type ty
 * (data NULL: the key removed; ty -1: a string), written to a temporary
 * file and loaded. */
static tg_tokenizer *load_edited(const char *base, const char *key, int ty, const void *data, uint64_t n) {
  char path[256], tmp[64];
  snprintf(path, sizeof path, "goldens/%s.gguf", base);
  gguf_file *f = gguf_open(path);
  CHECK_OK(f);
  if (!f) return NULL;
  gguf_writer *w = gguf_writer_new();
  for (int i = 0; i < f->n_kv; i++)
    if (strcmp(f->kv[i].key, key)) gguf_w_copy_kv(w, &f->kv[i]);
  if (data && ty < 0) gguf_w_set_str(w, key, data);
  else if (data) gguf_w_set_arr(w, key, (uint32_t)ty, data, n);
  snprintf(tmp, sizeof tmp, "/tmp/tg_tok_models_%d.gguf", (int)getpid());
  tg_tokenizer *t = NULL;
  tg_clear_error();
  if (gguf_writer_write(w, tmp, NULL, NULL) == 0) t = tg_tokenizer_load(tmp);
  remove(tmp);
  gguf_writer_free(w);
  gguf_close(f);
  return t;
}

static void check_refused(tg_tokenizer *t, const char *what, const char *want) {
  CHECK_MSG(!t, "%s: loaded", what);
  CHECK_MSG(strstr(tg_error(), want), "%s: error '%s' lacks '%s'", what, tg_error(), want);
  tg_tokenizer_free(t);
}

/* A charsmap whose size header exceeds it, or whose array leads out of
 * itself, or whose replacement is unterminated: a clear error at load or
 * when a text reaches the bad part, never a crash. */
TEST(tok_ugm_bad_charsmap) {
  const char *K = "tokenizer.ggml.precompiled_charsmap";
  uint8_t tiny[3] = { 1, 0, 0 };
  check_refused(load_edited("tok_ugm", K, GGUF_U8, tiny, 3), "3-byte charsmap", "no size header");
  uint8_t big[8] = { 200, 0, 0, 0, 1, 2, 3, 4 };
  check_refused(load_edited("tok_ugm", K, GGUF_U8, big, 8), "oversized header", "does not fit");
  float wrong[2] = { 1, 2 };
  check_refused(load_edited("tok_ugm", K, GGUF_F32, wrong, 2), "f32 charsmap", "not an array of bytes");
  /* root BASE 0; entry 'a' (97) points out of the 2-entry array */
  uint8_t oob[4 + 8 + 2] = { 8, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x01, 0xF0, 0x7F, 'x', 0 };
  tg_tokenizer *t = load_edited("tok_ugm", K, GGUF_U8, oob, sizeof oob);
  CHECK_OK(t);
  int32_t *ids = NULL;
  if (t) {
    CHECK_FAILS(tg_tokenize(t, "zzz", 3, false, false, &ids), "");   /* the root's children are out of range too */
    CHECK_MSG(strstr(tg_error(), "malformed"), "error '%s'", tg_error());
    free(ids);
  }
  tg_tokenizer_free(t);
  /* a leaf whose replacement has no NUL */
  uint32_t arr[256] = { 0 };
  arr[0] = 1u << 10;                     /* root BASE 1 */
  arr[1 ^ 'a'] = 'a' | (1u << 8) | (2u << 10);   /* 'a', a leaf, BASE 2 -> entry (1^'a')^2 */
  arr[(1 ^ 'a') ^ 2] = 0;                /* value 0: replacement at offset 0 */
  uint8_t unterminated[4 + sizeof arr + 2];
  uint32_t blob = sizeof arr;
  memcpy(unterminated, &blob, 4);
  memcpy(unterminated + 4, arr, sizeof arr);
  unterminated[4 + sizeof arr] = 'x';
  unterminated[5 + sizeof arr] = 'y';
  t = load_edited("tok_ugm", K, GGUF_U8, unterminated, sizeof unterminated);
  CHECK_OK(t);
  if (t) {
    ids = NULL;
    CHECK_FAILS(tg_tokenize(t, "a", 1, false, false, &ids), "unterminated");
    free(ids);
    int n = tg_tokenize(t, "b", 1, false, false, &ids);   /* texts that never reach it still work */
    CHECK(n > 0);
    free(ids);
  }
  tg_tokenizer_free(t);
}

/* A vocabulary of the given tokens (types: NULL all normal; scores unless
 * !scores; the unknown id when unk >= 0) loaded from a temporary file. */
static tg_tokenizer *load_tiny(const char *model, const char *const *toks, int n, const int32_t *types, bool scores,
                               int unk) {
  char tmp[64];
  gguf_writer *w = gguf_writer_new();
  gguf_w_set_str(w, "tokenizer.ggml.model", model);
  gguf_w_set_str_arr(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
  float sc[16];
  int32_t ty[16];
  for (int i = 0; i < n; i++) { sc[i] = -1.0f - (float)i; ty[i] = types ? types[i] : 1; }
  if (scores) gguf_w_set_arr(w, "tokenizer.ggml.scores", GGUF_F32, sc, (uint64_t)n);
  gguf_w_set_arr(w, "tokenizer.ggml.token_type", GGUF_I32, ty, (uint64_t)n);
  if (unk >= 0) gguf_w_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)unk);
  snprintf(tmp, sizeof tmp, "/tmp/tg_tok_tiny_%d.gguf", (int)getpid());
  tg_tokenizer *t = NULL;
  tg_clear_error();
  if (gguf_writer_write(w, tmp, NULL, NULL) == 0) t = tg_tokenizer_load(tmp);
  remove(tmp);
  gguf_writer_free(w);
  return t;
}

TEST(tok_models_bad_vocab) {
  const char *ab[] = { "a", "b", "<unk>" };
  int32_t ctl[3] = { 3, 3, 2 };
  check_refused(load_tiny("t5", ab, 0, NULL, true, -1), "t5 of no tokens", "tokenizer.ggml.tokens has 0 entries");
  check_refused(load_tiny("plamo2", ab, 0, NULL, true, -1), "plamo2 of no tokens", "tokenizer.ggml.tokens has 0 entries");
  check_refused(load_tiny("t5", ab, 3, ctl, true, 2), "t5 of control tokens", "has no normal piece");
  check_refused(load_tiny("t5", ab, 2, NULL, true, -1), "t5 without <unk>", "without an unknown token");
  check_refused(load_tiny("t5", ab, 3, NULL, false, 2), "t5 without scores", "without tokenizer.ggml.scores");
  check_refused(load_tiny("plamo2", ab, 3, NULL, false, -1), "plamo2 without scores", "without tokenizer.ggml.scores");
  check_refused(load_tiny("plamo2", ab, 3, NULL, true, -1), "plamo2 without bytes", "no byte token <0x00>");
  check_refused(load_tiny("rwkv", ab, 2, NULL, false, -1), "rwkv missing bytes", "no token for byte 0x00");
  const char *abx[] = { "\\x61b", "x" };
  check_refused(load_tiny("rwkv", abx, 2, NULL, false, 1), "rwkv 'ab' without 'a'",
                "tokens starting with byte 0x61 but not that byte alone");
  /* the smallest that works: "?" is no piece, so the unknown token */
  tg_tokenizer *t = load_tiny("t5", ab, 3, (const int32_t[]){ 1, 1, 2 }, true, 2);
  CHECK_OK(t);
  int32_t *ids = NULL;
  int n = t ? tg_tokenize(t, "ab?a", 4, false, false, &ids) : 0;
  CHECK_MSG(n == 4 && ids[0] == 0 && ids[1] == 1 && ids[2] == 2 && ids[3] == 0, "tiny t5: %d ids", n);
  free(ids);
  tg_tokenizer_free(t);
  check_refused(load_edited("tok_plamo2", "tokenizer.ggml.scores", -1, "not scores", 0), "string scores",
                "tokenizer.ggml.scores is not an array");
}
